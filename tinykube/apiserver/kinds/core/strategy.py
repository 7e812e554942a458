"""Strategies for the core/v1 kinds of the cluster's running state — Namespaces, Nodes, Endpoints and Events:
upstream v1 defaulting and the validation that keeps stored objects well-formed. The other core/v1 kinds have
modules of their own beside this one (Pods in `pods.py`; Services in `services.py`: they allocate; configuration in
`config.py`, quotas in `quotas.py`, volumes in `volumes.py`, ReplicationControllers in `replicationcontrollers.py`)."""

from __future__ import annotations

import copy
from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError, invalid
from tinykube.api.jsonshape import dicts
from tinykube.api.meta import dns1123_label, now
from tinykube.apiserver.registry.generic import GC_UNSUPPORTED, Strategy

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")  # upstream's NamespaceLifecycle admission


class NamespaceStrategy(Strategy):
    status_keeps_sent_metadata = True
    name_rule = staticmethod(dns1123_label)
    has_status = True
    return_deleted_object = True

    def check_delete(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"].get("name", "")
        if name in IMMORTAL_NAMESPACES:
            raise errors.forbidden_request("namespaces", name, "this namespace may not be deleted")

    def default(self, obj: dict[str, Any]) -> None:
        spec = default_object(obj, "spec")
        if isinstance(spec, dict):
            spec.setdefault("finalizers", ["kubernetes"])
        status = default_object(obj, "status")
        if isinstance(status, dict):
            status.setdefault("phase", "Active")
        labels = default_object(obj["metadata"], "labels")
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return _objects(obj, "spec", "status")

    def finalizing(self, obj: dict[str, Any]) -> bool:
        return bool(obj["metadata"].get("finalizers") or (obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: dict[str, Any]) -> None:
        super().mark_deleting(obj)
        obj.setdefault("status", {})["phase"] = "Terminating"

    def prepare_subresource_update(self, subresource: str, new: dict[str, Any], old: dict[str, Any]) -> None:
        """`finalize` writes spec.finalizers alone."""
        if subresource != "finalize":
            raise errors.resource_not_found()
        finalizers = (new.get("spec") or {}).get("finalizers") or []
        new.clear()
        new.update(copy.deepcopy(old))
        new.setdefault("spec", {})["finalizers"] = finalizers


def default_object(obj: dict[str, Any], field: str) -> Any:
    """`obj[field]` to default into: a missing or null field (JSON null into a Go struct is no value) as `{}`."""
    if obj.get(field) is None:
        obj[field] = {}
    return obj[field]


def _objects(obj: dict[str, Any], *fields: str) -> list[FieldError]:
    """Those of `fields` that hold something other than a JSON object."""
    return [invalid(f, obj[f], "must be an object") for f in fields if f in obj and not isinstance(obj[f], dict)]


class NodeStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True
    clears_status_on_create = False  # nodes register with their status, as upstream allows

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("spec", {})  # a Go struct: upstream always shows it, empty or not


# The JSON shapes of what the endpoint controllers, DNS and the proxy read from Endpoints and EndpointSlices, checked
# before anything else (upstream's decoder refuses other types; a null is no value): a map is an object with fields
# of those shapes, [shape] a list of them, a type a scalar of it.
ENDPOINT_PORT_SHAPE = {"name": str, "port": int, "protocol": str, "appProtocol": str}
_ENDPOINT_ADDRESS = {"ip": str, "hostname": str, "nodeName": str, "targetRef": {}}
_ENDPOINTS_SHAPE = {
    "subsets": [
        {"addresses": [_ENDPOINT_ADDRESS], "notReadyAddresses": [_ENDPOINT_ADDRESS], "ports": [ENDPOINT_PORT_SHAPE]}
    ]
}
_SHAPE_NAMES = {str: "a string", int: "an integer", bool: "a boolean"}


def shape_errors(value: Any, shape: Any, path: str = "") -> list[FieldError]:
    """Where `value` is not of `shape` (see above), as "must be a list" field errors."""
    if value is None:
        return []
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [invalid(path or "<root>", value, "must be an object")]
        return [e for k, s in shape.items() for e in shape_errors(value.get(k), s, f"{path}.{k}" if path else k)]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [invalid(path, value, "must be a list")]
        return [e for i, item in enumerate(value) for e in shape_errors(item, shape[0], f"{path}[{i}]")]
    if not isinstance(value, shape) or (shape is int and isinstance(value, bool)):
        return [invalid(path, value, f"must be {_SHAPE_NAMES[shape]}")]
    return []


class EndpointsStrategy(Strategy):
    allow_create_on_update = True

    def default(self, obj: dict[str, Any]) -> None:
        for subset in dicts(obj.get("subsets")):
            default_protocols(subset.get("ports"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return shape_errors(obj, _ENDPOINTS_SHAPE)


def default_protocols(ports: Any) -> None:
    for port in dicts(ports):
        port.setdefault("protocol", "TCP")


class EventStrategy(Strategy):
    allow_create_on_update = True
    gc_policy = GC_UNSUPPORTED  # Events are never owners: a propagation policy adds no finalizer

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("firstTimestamp", None)
        obj.setdefault("lastTimestamp", None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
        obj.setdefault("source", {})
        if not obj.get("eventTime") and not obj.get("firstTimestamp"):
            obj["firstTimestamp"] = obj["lastTimestamp"] = now()


STRATEGIES: dict[str, type[Strategy]] = {
    "namespaces": NamespaceStrategy,
    "nodes": NodeStrategy,
    "endpoints": EndpointsStrategy,
    "events": EventStrategy,
}
