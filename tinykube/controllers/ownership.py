"""Owner references, as the workload controllers and the garbage collector read and write them (upstream's
`metav1.GetControllerOf`, `NewControllerRef` and the controller-ref manager's claim: adopt and release)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.api.selectors import LabelSelector
from tinykube.client.informer import Store
from tinykube.client.rest import RestClient

Object = dict[str, Any]

CONTROLLER_INDEX = "controller-uid"  # an informer index: objects by the uid of their controller, orphans apart
ORPHANS = "orphans:"  # + namespace: the CONTROLLER_INDEX value of the objects no controller owns (never a uid)


def controller_of(obj: Object) -> Object | None:
    """The owner reference marked `controller: true`, if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def controller_uid(obj: Object) -> list[str]:
    """Index function: the uid of the object's controller; for an orphan, ORPHANS + its namespace, so that adoption
    looks at a namespace's orphans, not at every object of the namespace."""
    ref = controller_of(obj)
    if ref is None:
        return [ORPHANS + obj["metadata"].get("namespace", "")]
    return [str(ref["uid"])] if ref.get("uid") else []


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


async def patch_quietly(client: RestClient, resource: ResourceInfo, obj: Object, patch: Object) -> Object | None:
    """A merge patch; None when the object is gone or was replaced (a guarded uid): the next sync sees the truth."""
    meta = obj["metadata"]
    try:
        return await client.patch(resource, meta.get("namespace", ""), meta["name"], patch, patch_type="merge")
    except (errors.NotFound, errors.Invalid, errors.Conflict):
        return None


async def claim(
    client: RestClient,
    owner: tuple[Object, ResourceInfo],
    dependents: tuple[Store, ResourceInfo],
    selector: LabelSelector,
    eligible: Callable[[Object], bool] = lambda _obj: True,
) -> list[Object]:
    """The eligible dependents `owner` controls, after releasing the ones its selector no longer matches and
    adopting matching orphans (not while the owner is being deleted). `dependents` is an informer's store with
    the CONTROLLER_INDEX."""
    (obj, owner_resource), (store, resource) = owner, dependents
    meta = obj["metadata"]
    claimed = []
    for dependent in store.by_index(CONTROLLER_INDEX, meta["uid"]):
        if not eligible(dependent):
            continue
        if selector.matches(dependent["metadata"].get("labels") or {}):
            claimed.append(dependent)
        else:
            await patch_quietly(client, resource, dependent, release_patch(obj, dependent))
    if meta.get("deletionTimestamp"):
        return claimed
    orphans = [
        dependent
        for dependent in store.by_index(CONTROLLER_INDEX, ORPHANS + meta["namespace"])
        if eligible(dependent) and selector.matches(dependent["metadata"].get("labels") or {})
    ]
    for dependent in orphans:
        if await patch_quietly(client, resource, dependent, adoption_patch(obj, owner_resource, dependent)):
            claimed.append(dependent)
    return claimed
