"""Zero values Go's JSON drops: a built-in object as kube-apiserver stores it after decoding into its typed struct.

A client may send `unschedulable: false` or `taints: []` (a merge patch that clears a list, an apply of a zero);
upstream decodes into the typed object and encodes it again, and every `omitempty` field that holds its zero —
false, 0, "", an empty list or map — is gone. tinykube keeps objects as JSON-shaped dicts, so the same fields are
dropped here, by the schema `tinykube.api.protobuf_messages` already holds: its generator marks with `!` exactly
the fields JSON shows at their zero (pointers, and tags without `omitempty`), which are kept. Structs, and the
apimachinery types with their own JSON form (Quantity, Time, IntOrString, RawExtension, ...), are left as they are.
A kind the table does not know (a custom resource) is left alone: its zero values are its own.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.protobuf_messages import KINDS, MESSAGES

_SCALAR_ZEROS: dict[str, tuple[Any, ...]] = {"str": ("",), "int": (0,), "bool": (False,), "bytes": ("",)}

# message -> {json name: type}, with inlined structs' fields lifted into their parent, as JSON has them
_Fields = dict[str, str]
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


def drop_omitted_zeros(obj: dict[str, Any]) -> None:
    """Remove, in place, the zero values of `omitempty` fields from a built-in object."""
    message = KINDS.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
    if message is not None:
        _walk(obj, message)


def _walk(obj: dict[str, Any], message: str) -> None:
    fields = _fields(message)
    for name in [n for n in obj if n in fields]:
        kind = fields[name]
        value = obj[name]
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
                _walk(value, kind)
        elif not keep_zero and kind in _SCALAR_ZEROS and _is_zero(value, _SCALAR_ZEROS[kind]):
            del obj[name]


def _is_zero(value: Any, zeros: tuple[Any, ...]) -> bool:
    # `0 == False` in Python: a zero counts only in its own JSON type
    return any(type(value) is type(zero) and value == zero for zero in zeros)
