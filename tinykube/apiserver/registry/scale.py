"""The `scale` subresource (an autoscaling/v1 Scale) of every scalable kind: Deployments, ReplicaSets,
StatefulSets, ReplicationControllers and custom resources whose CRD declares one.

It is generic machinery, not one kind's strategy: it is stored nowhere, and works through the registry on whatever
parent it is asked about. A GET shows the parent's replicas and selector as a Scale; a write changes the parent's
`spec.replicas` through the parent's own update (so its validation and generation bump apply), as upstream's
ScaleREST does.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from tinykube.api import errors
from tinykube.api.errors import FieldError, invalid
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.resources import SCALE
from tinykube.apiserver.printing.cells import label_selector_text
from tinykube.apiserver.registry.generic import Registry, Request
from tinykube.apiserver.registry.validation import nonnegative

_SCALE_ATTEMPTS = 16


# ---- scale ------------------------------------------------------------------------------------------------------


def to_scale(obj: dict[str, Any], custom: CustomScale | None = None) -> dict[str, Any]:
    """The autoscaling/v1 Scale of a Deployment, ReplicaSet, StatefulSet or ReplicationController, or of a custom
    resource by its CRD's scale paths (`spec.replicas` is omitted when 0, as in Go)."""
    meta, spec, status = obj["metadata"], as_dict(obj.get("spec")), as_dict(obj.get("status"))
    fields = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    if custom is not None:
        replicas = as_int(_nested(obj, custom.spec_replicas)) or 0
        scale_status: dict[str, Any] = {"replicas": as_int(_nested(obj, custom.status_replicas)) or 0}
        found = _nested(obj, custom.label_selector) if custom.label_selector else None
        selector = found if isinstance(found, str) else ""  # the CRD's path holds the selector as text
    else:
        replicas = as_int(spec.get("replicas")) or 0
        scale_status = {"replicas": as_int(status.get("replicas")) or 0}
        label_selector: Any = spec.get("selector")
        if obj.get("kind") == "ReplicationController":  # a plain label map, not a LabelSelector
            label_selector = {"matchLabels": label_selector} if isinstance(label_selector, dict) else None
        selector = label_selector_text(label_selector)
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": SCALE.kind,
        "apiVersion": SCALE.api_version,
        "metadata": {k: meta[k] for k in fields if k in meta},
        "spec": {"replicas": replicas} if replicas else {},
        "status": scale_status,
    }


def _validate_scale(scale: dict[str, Any]) -> list[FieldError]:
    replicas = as_dict(scale.get("spec")).get("replicas", 0)
    if as_int(replicas) is None:
        return [invalid("spec.replicas", replicas, "must be an integer")]
    return nonnegative(replicas, "spec.replicas")


ScaleChange = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class CustomScale(Protocol):
    """A CRD version's scale subresource: where replicas and the selector are (each path as its keys)."""

    spec_replicas: tuple[str, ...]
    status_replicas: tuple[str, ...]
    label_selector: tuple[str, ...] | None


def _nested(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _set_nested(obj: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[keys[-1]] = value


async def update_scale(
    registry: Registry, req: Request, change: ScaleChange, *, patch: bool, custom: CustomScale | None = None
) -> dict[str, Any]:
    """Write a Scale: `change` turns the current Scale into the wanted one (a PUT's body, or the PATCH applied).

    The wanted Scale's resourceVersion is a precondition on the parent; without one (or, for a PATCH, with the one
    it was given) a concurrent write is retried, as upstream's patcher does."""
    parent = Request(
        req.resource, req.namespace, req.name, dry_run=req.dry_run, manager=req.manager, recorded_as="scale"
    )
    for _attempt in range(_SCALE_ATTEMPTS):
        current = await registry.latest(parent)
        current_rv = current["metadata"]["resourceVersion"]
        wanted = await change(to_scale(current, custom))
        _check_scale(req, wanted)
        rv = as_dict(wanted.get("metadata")).get("resourceVersion") or ""
        new = copy.deepcopy(current)
        _set_nested(
            new,
            custom.spec_replicas if custom else ("spec", "replicas"),
            as_dict(wanted.get("spec")).get("replicas", 0),
        )
        new["metadata"]["resourceVersion"] = rv or current_rv
        try:
            updated, _ = await registry.update(parent, new)
        except errors.Conflict:
            if rv and not (patch and rv == current_rv):
                raise
            continue
        return to_scale(updated, custom)
    raise errors.conflict(req.resource.plural, req.name, req.resource.group)


def _check_scale(req: Request, scale: dict[str, Any]) -> None:
    name = as_dict(scale.get("metadata")).get("name")
    if name and name != req.name:
        raise errors.BadRequest(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
    errs = _validate_scale(scale)
    if errs:
        raise errors.invalid_object(SCALE.kind, req.name, errs, SCALE.group)
