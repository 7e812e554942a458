"""An object as a Go client writes it back after decoding it into its typed struct (JSON in, `json.Marshal` out).

Why this exists: some upstream clients compare bytes they marshal from a typed object with bytes the server
stored. The one that matters here is a ControllerRevision's `data` (the DaemonSet and StatefulSet controllers'
`getPatch`, `kubectl rollout undo`, the conformance suite's `daemon.Match`): the pod template, decoded into
`v1.PodTemplateSpec` and marshalled again. The round trip drops what the struct cannot hold or its `omitempty`
tags leave out (unknown fields, `false`, `0`, `""`, empty lists and maps, null pointers) and writes quantities
in their canonical form (`1000m` is `1`); what it keeps it keeps as it came.

The struct knowledge is the protobuf schema's (`tinykube.api.protobuf_messages`): JSON names, inlined structs, and
`!` on the fields Go writes even when zero (pointers, and tags without `omitempty`). The one zero a non-pointer
struct adds that JSON lacks, ObjectMeta's `creationTimestamp: null`, is kept where it is present; tinykube's
apiserver writes it in templates as upstream's does.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.protobuf_messages import MESSAGES
from tinykube.api.quantity import QuantityError, parse_quantity

_ZEROS: tuple[Any, ...] = ("", 0, False)
_STRUCTS = frozenset({"IntOrString", "Time", "MicroTime", "FieldsV1", "RawExtension"})
_KEEP_NULL = {("ObjectMeta", "creationTimestamp")}  # a non-pointer metav1.Time: Go writes its zero as null


def round_trip(value: dict[str, Any], message: str) -> dict[str, Any]:
    """`value`, a JSON object of the Go type `message` (a name of the schema, such as `PodTemplateSpec`), as Go
    writes it after decoding it."""
    out: dict[str, Any] = {}
    for name, spec in MESSAGES[message].values():
        if not name:  # an embedded struct: its fields are the parent's
            out |= round_trip(value, spec.removesuffix("!"))
            continue
        if name not in value:
            continue
        kept = _field(value[name], spec, (message, name))
        if kept is not _DROPPED:
            out[name] = kept
    return out


class _Dropped:
    pass


_DROPPED: Any = _Dropped()


def _field(value: Any, spec: str, where: tuple[str, str]) -> Any:
    keep_zero = spec.endswith("!")
    kind = spec.removesuffix("!")
    if value is None:
        return None if where in _KEEP_NULL else _DROPPED
    if kind.startswith("[]") or kind.startswith("{}"):
        if not value and not keep_zero:
            return _DROPPED
        if kind.startswith("[]") and isinstance(value, list):
            return [_element(item, kind[2:], where) for item in value]
        if isinstance(value, dict):
            return {key: _element(item, kind[2:], where) for key, item in value.items()}
        return value
    if kind in MESSAGES:
        return round_trip(value, kind) if isinstance(value, dict) else value
    if kind == "Quantity":
        return _quantity(value)
    if kind in _STRUCTS:  # omitempty leaves no struct out
        return value
    if not keep_zero and any(value is zero or (type(value) is type(zero) and value == zero) for zero in _ZEROS):
        return _DROPPED
    return value


def _element(value: Any, kind: str, where: tuple[str, str]) -> Any:
    if kind in MESSAGES and isinstance(value, dict):
        return round_trip(value, kind)
    if kind == "Quantity":
        return _quantity(value)
    return value


def _quantity(value: Any) -> Any:
    try:
        return str(parse_quantity(value))
    except (QuantityError, ValueError):
        return value  # not a quantity: the apiserver would not have stored it; left as it is
