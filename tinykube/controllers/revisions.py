"""ControllerRevisions, the template history of StatefulSets and DaemonSets (upstream's controller history).

Each distinct pod template is one revision `<owner>-<hash>` whose `data` is a strategic merge patch replacing the
template (what `kubectl rollout undo` applies) and whose `revision` number orders them; going back to an older
template renumbers its revision as the newest. Pods carry their revision's name in `controller-revision-hash`.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from tinykube.api import errors
from tinykube.api.gotyped import round_trip
from tinykube.api.resources import ResourceInfo, builtin
from tinykube.client.rest import RestClient
from tinykube.controllers.deployment import template_hash
from tinykube.controllers.ownership import controller_of, controller_ref

Object = dict[str, Any]
REVISIONS = builtin("apps", "v1", "controllerrevisions")
REVISION_LABEL = "controller-revision-hash"


def revision_data(owner: Object) -> Object:
    """What a ControllerRevision records of its owner: the pod template as a strategic merge patch replacing it,
    its keys sorted at every level. Upstream's getPatch marshals a Go map, whose keys encoding/json sorts, and
    its clients (`kubectl rollout undo`, the conformance suite's `daemon.Match`) find the current revision by
    comparing those bytes with `data` as the apiserver writes it, so the stored order is the one Go writes, and
    the template is the one Go writes back after decoding the owner (no zero values, canonical quantities)."""
    template = round_trip(copy.deepcopy((owner.get("spec") or {}).get("template") or {}), "PodTemplateSpec")
    template["$patch"] = "replace"
    return {"spec": {"template": sorted_keys(template)}}


def sorted_keys(value: Any) -> Any:
    """`value` with the keys of every object in sorted order (Go's for a map: by bytes, which for UTF-8 text is
    the order of code points)."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value


def revision_label(revision: Object) -> str:
    """What the pods made from `revision` carry in `controller-revision-hash`: a DaemonSet's the hash alone, a
    StatefulSet's the revision's name (as upstream's, which label each so)."""
    return str((revision["metadata"].get("labels") or {}).get(REVISION_LABEL) or revision["metadata"]["name"])


def template_of(data: Object) -> Object:
    """The pod template a ControllerRevision's data holds."""
    template = copy.deepcopy(((data.get("spec") or {}).get("template")) or {})
    template.pop("$patch", None)
    return template


def revision_of(pod: Object) -> str:
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL, ""))


async def update_revision(
    client: RestClient,
    owner: Object,
    resource: ResourceInfo,
    revisions: list[Object],
    collisions: int,
    *,
    daemon: bool = False,
) -> tuple[Object, list[Object], int]:
    """The revision of the owner's template now (made if the template is new, renumbered as the newest if it is
    an older one again), the revisions oldest first, and the collision count. A DaemonSet's (`daemon`) is labelled
    with its hash alone and carries the set's annotations (`kubernetes.io/change-cause` is what `kubectl rollout
    history` shows), as upstream's DaemonSet controller writes them."""
    data = revision_data(owner)
    by_age = sorted(revisions, key=lambda r: int(r.get("revision") or 0))
    latest = int(by_age[-1].get("revision") or 0) if by_age else 0
    found = next((r for r in reversed(by_age) if r.get("data") == data), None)
    if found is None:
        found, collisions = await _create(client, owner, resource, data, (latest + 1, collisions), daemon=daemon)
        by_age.append(found)
    elif int(found.get("revision") or 0) < latest:
        meta = found["metadata"]
        patch = {"revision": latest + 1}
        renumbered = await client.patch(REVISIONS, meta["namespace"], meta["name"], patch, patch_type="merge")
        by_age = [r for r in by_age if r is not found] + [renumbered]
        found = renumbered
    return found, by_age, collisions


async def _create(
    client: RestClient, owner: Object, resource: ResourceInfo, data: Object, at: tuple[int, int], *, daemon: bool
) -> tuple[Object, int]:
    meta = owner["metadata"]
    number, collisions = at
    labels = dict(((owner["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {})
    while True:
        digest = template_hash(data, collisions)
        name = f"{meta['name']}-{digest}"
        labels[REVISION_LABEL] = digest if daemon else name
        metadata: Object = {"name": name, "namespace": meta["namespace"], "labels": labels}
        if daemon and meta.get("annotations"):
            metadata["annotations"] = dict(meta["annotations"])
        metadata["ownerReferences"] = [controller_ref(owner, resource)]
        revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": metadata, "data": data,
                    "revision": number}  # fmt: skip
        try:
            return await client.create(REVISIONS, meta["namespace"], revision), collisions
        except errors.AlreadyExists:
            existing = await client.get(REVISIONS, meta["namespace"], name)
            if existing.get("data") == data and (controller_of(existing) or {}).get("uid") == meta["uid"]:
                return existing, collisions
            collisions += 1  # a namesake of other content: upstream's hash collision


async def trim_history(client: RestClient, owner: Object, by_age: list[Object], in_use: set[str]) -> None:
    """The oldest revisions beyond `revisionHistoryLimit` (10) go, but never one in `in_use` (by name or label:
    the status names it, or a pod was made from it)."""
    limit = int((owner.get("spec") or {}).get("revisionHistoryLimit", 10))
    history = [r for r in by_age if r["metadata"]["name"] not in in_use and revision_label(r) not in in_use]
    for revision in history[: max(len(history) - limit, 0)]:
        with contextlib.suppress(errors.NotFound):
            await client.delete(REVISIONS, revision["metadata"]["namespace"], revision["metadata"]["name"])
