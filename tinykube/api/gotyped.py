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

from tinykube.api.protobuf_messages import KINDS, MESSAGES
from tinykube.api.quantity import QuantityError, parse_quantity

_ZEROS: tuple[Any, ...] = ("", 0, False)
_SCALARS = frozenset({"str", "int", "bool", "bytes"})
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
    if not keep_zero and _is_zero(value):
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


def _is_zero(value: Any) -> bool:
    # `0 == False` in Python: a zero counts only in its own JSON type
    return any(type(value) is type(zero) and value == zero for zero in _ZEROS)


# ---- zeros dropped on every write ------------------------------------------------------------------------------

_Fields = dict[str, str]
_ABSENT: Any = object()
_FIELDS: dict[str, _Fields] = {}


def _fields(message: str) -> _Fields:
    known = _FIELDS.get(message)
    if known is not None:
        return known
    fields: _Fields = {}
    _FIELDS[message] = fields  # before recursing: a message may (indirectly) contain itself
    for name, kind in MESSAGES.get(message, {}).values():
        if name == "":
            fields.update(_fields(kind.rstrip("!")))
        else:
            fields[name] = kind
    return fields


def drop_omitted_zeros(obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
    """Remove, in place, the zero values of `omitempty` fields from a built-in object, as kube-apiserver stores
    it after decoding into its typed struct (a client's `unschedulable: false` or `taints: []` is gone). Unlike
    `round_trip` it keeps unknown fields and the values' forms (validation judges those), and is cheap enough for
    every write. A kind the schema does not know (a custom resource) is left alone: its zeros are its own.

    `old`: the stored object an update replaces, whose zeros went when it was written: a part of `obj` equal to
    the same part of `old` has none to drop and is not walked (a status write leaves the spec as it was; comparing
    is C, walking is Python)."""
    message = KINDS.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
    if message is None:
        return
    meta = obj.get("metadata")
    # `managedFields: []` is a client's reset of field ownership, which the field manager reads after this
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    _walk(obj, message, old)
    if entries is not None and isinstance(meta, dict):
        meta["managedFields"] = entries


def _walk(obj: dict[str, Any], message: str, old: dict[str, Any] | None = None) -> None:
    fields = _fields(message)
    for name in [n for n in obj if n in fields]:
        kind = fields[name]
        value = obj[name]
        before = old.get(name, _ABSENT) if old is not None else _ABSENT
        if before is not _ABSENT and before == value:
            continue
        keep_zero = kind.endswith("!")
        kind = kind.rstrip("!")
        if kind.startswith("[]"):
            if isinstance(value, list):
                if not value and not keep_zero:
                    del obj[name]
                elif kind[2:] in MESSAGES:
                    for item in value:
                        if isinstance(item, dict):
                            _walk(item, kind[2:])
        elif kind.startswith("{}"):
            if isinstance(value, dict):
                if not value and not keep_zero:
                    del obj[name]
                elif kind[2:] in MESSAGES:
                    for item in value.values():
                        if isinstance(item, dict):
                            _walk(item, kind[2:])
        elif kind in MESSAGES:
            if isinstance(value, dict):
                _walk(value, kind, before if isinstance(before, dict) else None)
        elif not keep_zero and kind in _SCALARS and _is_zero(value):
            del obj[name]
