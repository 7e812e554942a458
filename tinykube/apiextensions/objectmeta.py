"""`metadata` as the apiserver reads it into a Go `ObjectMeta`, for custom resources and their embedded objects.

Upstream decodes a custom resource's `metadata` (and the `metadata` of every `x-kubernetes-embedded-resource`
object) into `metav1.ObjectMeta` and writes it back: fields ObjectMeta does not have are dropped (and reported
as unknown fields under fieldValidation=Strict/Warn), fields of the wrong JSON type fail the request — or, when
reading old objects from storage, are dropped one by one. For embedded objects the write-back also drops empty
fields (`omitempty`) and a zero `creationTimestamp`.

`coerce` reproduces that on the JSON value; `decode_error` gives the `encoding/json` error upstream reports for
the first field of the wrong type (embedded-resource validation quotes it).
"""

from __future__ import annotations

import re
from typing import Any

from tinykube.api.golang import json_type, time_parse_error

_STR, _INT, _BOOL, _TIME, _RAW = "string", "int64", "bool", "time", "raw"
_OWNER_REF = {
    "apiVersion": _STR,
    "kind": _STR,
    "name": _STR,
    "uid": _STR,
    "controller": _BOOL,
    "blockOwnerDeletion": _BOOL,
}
_MANAGED_FIELD = {
    "manager": _STR,
    "operation": _STR,
    "apiVersion": _STR,
    "time": _TIME,
    "fieldsType": _STR,
    "fieldsV1": _RAW,
    "subresource": _STR,
}
_GO_NAMES = {"ownerReferences": "OwnerReference", "managedFields": "ManagedFieldsEntry"}
FIELDS: dict[str, Any] = {
    "name": _STR,
    "generateName": _STR,
    "namespace": _STR,
    "selfLink": _STR,
    "uid": _STR,
    "resourceVersion": _STR,
    "generation": _INT,
    "creationTimestamp": _TIME,
    "deletionTimestamp": _TIME,
    "deletionGracePeriodSeconds": _INT,
    "labels": ("map", _STR),
    "annotations": ("map", _STR),
    "ownerReferences": ("list", _OWNER_REF),
    "finalizers": ("list", _STR),
    "managedFields": ("list", _MANAGED_FIELD),
}
_GO_TYPES = {_STR: "string", _INT: "int64", _BOOL: "bool"}


_RFC3339 = re.compile(
    r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _scalar_ok(kind: str, value: Any) -> bool:
    if value is None or kind == _RAW:
        return True
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if not isinstance(value, str):
        return False
    return _RFC3339.fullmatch(value) is not None or time_parse_error(value) is None  # metav1.Time: RFC 3339


def _clean(meta: dict[str, Any]) -> bool:
    """True when `meta` has only ObjectMeta's fields, each of the right type (the common case: nothing to do)."""
    for key, value in meta.items():
        kind = FIELDS.get(key)
        if kind is None:
            return False
        if isinstance(kind, str):
            if not _scalar_ok(kind, value):
                return False
        elif value is not None:
            shape, inner = kind
            if shape == "map":
                if type(value) is not dict or not all(type(v) is str for v in value.values()):
                    return False
            elif type(value) is not list:
                return False
            elif inner == _STR:
                if not all(type(v) is str for v in value):
                    return False
            elif not all(type(v) is dict and _clean_struct(v, inner) for v in value):
                return False
    return True


def _clean_struct(value: dict[str, Any], spec: dict[str, Any]) -> bool:
    return all(key in spec and _scalar_ok(spec[key], item) for key, item in value.items())


def _go_type(spec: Any) -> str:
    if isinstance(spec, str):
        return _GO_TYPES.get(spec, "v1.Time")
    if spec[0] == "map":
        return "map[string]string"
    inner = spec[1]
    return (
        "[]string" if inner == _STR else "[]v1." + ("OwnerReference" if "controller" in inner else "ManagedFieldsEntry")
    )


def _field_error(field: str, spec: Any, value: Any, struct: str = "ObjectMeta") -> str:
    if isinstance(spec, str) and spec == _TIME and isinstance(value, str):
        return time_parse_error(value) or ""
    return f"json: cannot unmarshal {json_type(value)} into Go struct field {struct}.{field} of type {_go_type(spec)}"


def _coerce_struct(
    value: dict[str, Any], spec: dict[str, Any], path: str, unknown: list[str], drop: bool, struct: str
) -> str | None:
    """Drop unknown fields of one Go struct (recording `path.field`); check the known ones' types."""
    for key in list(value):
        kind = spec.get(key)
        if kind is None:
            unknown.append(f"{path}.{key}")
            del value[key]
            continue
        err = _coerce_field(value, key, kind, path, unknown, drop, struct)
        if err is not None:
            return err
    return None


def _coerce_field(
    value: dict[str, Any], key: str, kind: Any, path: str, unknown: list[str], drop: bool, struct: str
) -> str | None:
    item = value[key]
    if isinstance(kind, str):
        if _scalar_ok(kind, item):
            return None
        return _malformed(value, key, drop, _field_error(key, kind, item, struct))
    shape, inner = kind
    if item is None:
        return None
    if shape == "map":
        if isinstance(item, dict) and all(v is None or isinstance(v, str) for v in item.values()):
            return None
        return _malformed(value, key, drop, _field_error(key, kind, item, struct))
    if not isinstance(item, list):
        return _malformed(value, key, drop, _field_error(key, kind, item, struct))
    for i, element in enumerate(item):
        if isinstance(inner, str):
            if not _scalar_ok(inner, element):
                return _malformed(value, key, drop, _field_error(key, kind, element, struct))
        elif element is not None:
            if not isinstance(element, dict):
                return _malformed(value, key, drop, _field_error(key, kind, element, struct))
            err = _coerce_struct(element, inner, f"{path}.{key}[{i}]", unknown, drop, _GO_NAMES[key])
            if err is not None:
                return _malformed(value, key, drop, err)
    return None


def _malformed(value: dict[str, Any], key: str, drop: bool, message: str) -> str | None:
    if drop:
        del value[key]
        return None
    return message


def coerce(meta: Any, *, path: str, drop_invalid: bool, normalize: bool) -> tuple[list[str], str | None]:
    """Coerce `meta` (a `metadata` value, changed in place) to what ObjectMeta keeps.

    Returns the unknown fields' paths (`<path>.<field>`) and, when a known field has the wrong type and
    `drop_invalid` is false, the decoding error (the value is then left as it was)."""
    if not isinstance(meta, dict):
        if meta is None:
            return [], None
        return [], f"json: cannot unmarshal {json_type(meta)} into Go value of type v1.ObjectMeta"
    if _clean(meta):
        if normalize:
            _omit_empty(meta)
        return [], None
    unknown: list[str] = []
    work = meta if drop_invalid else _copy(meta)
    err = _coerce_struct(work, FIELDS, path, unknown, drop_invalid, "ObjectMeta")
    if err is not None:
        return [], err
    if not drop_invalid:
        meta.clear()
        meta.update(work)
    if normalize:
        _omit_empty(meta)
    return unknown, None


def decode_error(meta: Any) -> str | None:
    """The error upstream's `GetObjectMeta` reports for `meta`, or None if it decodes."""
    _, err = coerce(_copy(meta), path="metadata", drop_invalid=False, normalize=False)
    return err


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _omit_empty(meta: dict[str, Any]) -> None:
    """What writing ObjectMeta back leaves out: empty values (`omitempty`) and a zero creationTimestamp."""
    for key in list(meta):
        value = meta[key]
        if value is None or value == "" or (value == 0 and not isinstance(value, bool)) or value in ({}, []):
            del meta[key]
