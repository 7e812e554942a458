"""Owner references, as the workload controllers and the garbage collector read and write them (upstream's
`metav1.GetControllerOf`, `NewControllerRef` and the controller-ref manager's adopt/release)."""

from __future__ import annotations

from typing import Any

from tinykube.api.resources import ResourceInfo

Object = dict[str, Any]

CONTROLLER_INDEX = "controller-uid"  # an informer index: objects by the uid of their controller


def controller_of(obj: Object) -> Object | None:
    """The owner reference marked `controller: true`, if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def controller_uid(obj: Object) -> list[str]:
    """Index function: the uid of the object's controller (none for orphans)."""
    ref = controller_of(obj)
    return [str(ref["uid"])] if ref and ref.get("uid") else []


def controller_ref(owner: Object, resource: ResourceInfo) -> Object:
    """A reference making `owner` the controller of a dependent; it blocks the owner's foreground deletion."""
    meta = owner["metadata"]
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adoption_patch(owner: Object, resource: ResourceInfo, dependent: Object) -> Object:
    """A merge patch adding `owner` as the orphan `dependent`'s controller, guarded by the dependent's uid (so a
    namesake created since is not adopted by mistake)."""
    refs = [*(dependent["metadata"].get("ownerReferences") or []), controller_ref(owner, resource)]
    return {"metadata": {"ownerReferences": refs, "uid": dependent["metadata"]["uid"]}}


def release_patch(owner: Object, dependent: Object) -> Object:
    """A merge patch removing `owner`'s references from `dependent` (it stopped matching the selector)."""
    uid = owner["metadata"]["uid"]
    refs = [ref for ref in dependent["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
    return {"metadata": {"ownerReferences": refs or None, "uid": dependent["metadata"]["uid"]}}
