"""PATCH bodies applied to stored objects: JSON patch, JSON merge patch and strategic merge patch.

(The fourth patch type, server-side apply's `application/apply-patch+yaml`, is not a patch of the stored object
but a configuration merged by schema with field ownership: `tinykube.apiserver.schema.fieldmanager`.)

kubectl speaks all three: ``kubectl patch --type json`` sends RFC 6902 operations, ``kubectl
label``/``annotate`` and ``--type merge`` send RFC 7386 merge patches, and ``kubectl apply``,
``edit``, ``scale`` and plain ``kubectl patch`` send *strategic* merge patches.  The last is
Kubernetes' own dialect: a merge patch whose lists are merged element-wise by a per-field "merge
key" (containers by ``name``, ports by ``containerPort``...), plus ``$``-directives that kubectl
computes client-side (``$patch``, ``$setElementOrder/…``, ``$deleteFromPrimitiveList/…``,
``$retainKeys``).  Getting it wrong silently drops containers or env vars on re-apply, so the
server-side half of ``k8s.io/apimachinery/pkg/util/strategicpatch`` is ported here: same merge
order (including upstream's habit of putting new list items *before* untouched server items),
same directive semantics, same error strings where a client can see them.

Upstream derives list strategies from Go struct tags.  Here they live in one declarative table,
:data:`SCHEMA`, keyed by type name: each type lists only the fields that need patch metadata
(a nested type to descend into, or a list strategy).  Kinds are types too, so navigating from a
kind's root to ``spec.template.spec.containers`` is a walk through the table
(:func:`field_metadata`).  Unknown kinds and unlisted fields get JSON-merge semantics (lists are
replaced) while ``$patch`` directives are still honoured.

JSON patch is a small port of evanphx/json-patch v4 rather than a textbook RFC 6902 applier,
because that is what the apiserver runs: ``replace`` of a missing member adds it, a missing
``value`` is null, negative indices count from the end, and failures are a 422 whose cause carries
the library's message.  JSON merge patch likewise prunes nulls from replacing values as evanphx does.

Deliberate differences from upstream are noted where they happen; the main ones:

* Strategic-merge values that land where the original has nothing are merged into an empty value
  instead of being stored verbatim, so directives and nulls never leak into stored objects (and a
  ``$deleteFromPrimitiveList`` for an absent list deletes nothing rather than creating the list).
* A nested ``$patch: delete`` map removes the field (upstream leaves ``{}``); ``$patch: merge`` is
  accepted as the explicit default in maps and list elements instead of being rejected.
* Malformed directives (missing merge key, unknown ``$patch`` value) are 400 ``BadRequest`` with
  upstream's message; upstream lets them surface as a 500.  ``$setElementOrder`` lists are not
  cross-checked against the patch list's order.
* Malformed JSON is reported with Python's decoder message, not Go's.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from tinykube.api.depth import check_depth
from tinykube.api.errors import BadRequest, Invalid, RequestEntityTooLarge, UnsupportedMediaType
from tinykube.api.golang import json_type
from tinykube.api.jsoncopy import json_copy

JSONMap = dict[str, Any]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
# what a PATCH may send, in upstream's order (its 415 lists them so)
PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

MAX_JSON_PATCH_OPERATIONS: Final = 10000
# upstream's JSONPatchMaxCopyBytes (the fix for CVE-2019-1002100): how much `copy` operations may grow a document
JSON_PATCH_MAX_COPY_BYTES: Final = 3 * 1024 * 1024


def apply_patch(original: JSONMap, patch: bytes, content_type: str, *, kind: str) -> JSONMap:
    """Apply a PATCH body of the given ``Content-Type`` to a copy of ``original``.

    Raises ``UnsupportedMediaType`` for other types (server-side apply is not applied here: see the
    module docstring), ``BadRequest`` for bodies that do not decode or directives that make no
    sense, and ``Invalid`` (422) when a JSON patch operation cannot be applied, as upstream does.
    """
    media_type = content_type.split(";", 1)[0].strip().lower()
    applier = _APPLIERS.get(media_type)
    if applier is None:
        raise unsupported_patch_type()
    patched = applier(json_copy(original), patch, kind)
    if media_type == JSON_PATCH:  # a merge nests no deeper than the stored object or the (checked) patch
        check_depth(patched)
    return patched


# custom resources have no strategic-merge metadata, so upstream does not take that patch type for them
CUSTOM_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)


def unsupported_patch_type(accepted: tuple[str, ...] = PATCH_TYPES) -> UnsupportedMediaType:
    return UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted)
    )


# --------------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def _decode(body: bytes, prefix: str) -> Any:
    try:
        decoded = json.loads(body, parse_constant=_reject_constant)
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise BadRequest(f"{prefix}{err}") from None
    except RecursionError:
        raise BadRequest(f"{prefix}exceeded max depth") from None
    check_depth(decoded)
    return decoded


def _wrong_shape(prefix: str, value: Any, go_type: str) -> BadRequest:
    found = json_type(value)
    return BadRequest(f"{prefix}json: cannot unmarshal {found} into Go value of type {go_type}")


# --------------------------------------------------------------------------------------------------
# RFC 6902 JSON patch, with the semantics and messages of evanphx/json-patch v4 (what the apiserver
# uses): ``replace`` of a missing object member adds it, a missing ``value`` means null, negative
# array indices count from the end, and ``test`` treats a missing member as null.
# --------------------------------------------------------------------------------------------------

_MISSING_VALUE: Final = "missing value"
_POINTER_ESCAPE: Final = re.compile("~[01]")
_ATOI: Final = re.compile(r"[+-]?[0-9]+")
_Container = dict[str, Any] | list[Any]


class _OperationFailed(Exception):
    """One operation could not be applied; the message is the library's."""


def _rejected(cause: str) -> Invalid:
    """Upstream answers a failed operation with a generic 422 whose only cause holds the detail."""
    return Invalid(
        "the server rejected our request due to an error in our request",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": cause}]},
    )


def _pointer_key(token: str) -> str:
    return _POINTER_ESCAPE.sub(lambda m: "/" if m.group() == "~1" else "~", token)


def _atoi(key: str) -> int:
    if not _ATOI.fullmatch(key):
        raise _OperationFailed(f'strconv.Atoi: parsing "{key}": invalid syntax')
    return int(key)


def _index(key: str, size: int) -> int:
    """An array index valid for ``size`` slots; negative indices count from the end."""
    index = _atoi(key)
    if index >= size or index < -size:
        raise _OperationFailed(f"Unable to access invalid index: {index}: invalid index referenced")
    return index + size if index < 0 else index


def _get(container: _Container, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)  # missing and null are the same thing here
    return container[_index(key, len(container))]


def _set(container: _Container, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container[_index(key, len(container))] = value


def _add(container: _Container, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    elif key == "-":
        container.append(value)
    else:
        try:
            _atoi(key)
        except _OperationFailed as err:
            raise _OperationFailed(f"value was not a proper array index: '{key}': {err}") from None
        container.insert(_index(key, len(container) + 1), value)


def _remove(container: _Container, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _OperationFailed(f"Unable to remove nonexistent key: {key}: {_MISSING_VALUE}")
        del container[key]
    else:
        del container[_index(key, len(container))]


def _find(doc: Any, path: str) -> tuple[_Container, str] | None:
    """The container holding the last token of ``path``, and that token (upstream ``findObject``)."""
    tokens = path.split("/")
    if len(tokens) < 2:
        return None
    current = doc
    for token in tokens[1:-1]:
        try:
            current = _get(current, _pointer_key(token))
        except _OperationFailed:
            return None
        if not isinstance(current, dict | list):
            return None
    return current, _pointer_key(tokens[-1])


def _target(doc: Any, path: str, missing: str) -> tuple[_Container, str]:
    found = _find(doc, path)
    if found is None:
        raise _OperationFailed(f"{missing}: {_MISSING_VALUE}")
    return found


def _wrapped(prefix: str, action: Callable[..., Any], *args: Any) -> Any:
    try:
        return action(*args)
    except _OperationFailed as err:
        raise _OperationFailed(f"{prefix}: {err}") from None


# add, remove and copy report a bad path tersely; the other operations wrap the decoding error.
_TERSE_PATH_ERRORS: Final = frozenset({"add", "remove", "copy"})


def _member(op: JSONMap, kind: str, member: str) -> str:
    value = op.get(member)
    if isinstance(value, str):
        return value
    if member == "path" and kind in _TERSE_PATH_ERRORS:
        raise _OperationFailed(f"{kind} operation failed to decode path: {_MISSING_VALUE}")
    missing = "operation missing path field" if member == "path" else "operation, missing from field"
    cause = (
        f"{missing}: {_MISSING_VALUE}"
        if value is None
        else (f"json: cannot unmarshal {json_type(value)} into Go value of type string")
    )
    raise _OperationFailed(f"{kind} operation failed to decode {member}: {cause}")


def _op_add(doc: Any, op: JSONMap) -> Any:
    path = _member(op, "add", "path")
    container, key = _target(doc, path, f'add operation does not apply: doc is missing path: "{path}"')
    _wrapped(f"error in add for path: '{path}'", _add, container, key, op.get("value"))
    return doc


def _op_remove(doc: Any, op: JSONMap) -> Any:
    path = _member(op, "remove", "path")
    container, key = _target(doc, path, f'remove operation does not apply: doc is missing path: "{path}"')
    _wrapped(f"error in remove for path: '{path}'", _remove, container, key)
    return doc


def _op_replace(doc: Any, op: JSONMap) -> Any:
    path, value = _member(op, "replace", "path"), op.get("value")
    if path == "":  # the whole document; upstream silently ignores a scalar here
        return value if isinstance(value, dict | list) else doc
    container, key = _target(doc, path, f"replace operation does not apply: doc is missing path: {path}")
    try:
        _get(container, key)  # only arrays can fail here: a missing object member is simply added
    except _OperationFailed:
        missing = f"replace operation does not apply: doc is missing key: {path}"
        raise _OperationFailed(f"{missing}: {_MISSING_VALUE}") from None
    _set(container, key, value)
    return doc


def _source(doc: Any, op: JSONMap, kind: str) -> tuple[_Container, str]:
    source = _member(op, kind, "from")
    return _target(doc, source, f"{kind} operation does not apply: doc is missing from path: {source}")


def _destination(doc: Any, op: JSONMap, kind: str) -> tuple[str, _Container, str]:
    path = _member(op, kind, "path")
    missing = f"{kind} operation does not apply: doc is missing destination path: {path}"
    return (path, *_target(doc, path, missing))


def _op_move(doc: Any, op: JSONMap) -> Any:
    container, key = _source(doc, op, "move")
    value = _wrapped(f"error in move for path: '{key}'", _get, container, key)
    _wrapped(f"error in move for path: '{key}'", _remove, container, key)
    path, target, target_key = _destination(doc, op, "move")
    _wrapped(f"error in move for path: '{path}'", _add, target, target_key, value)
    return doc


def _op_copy(doc: Any, op: JSONMap) -> Any:
    container, key = _source(doc, op, "copy")
    value = _wrapped(f"error in copy for from: '{op['from']}'", _get, container, key)
    _, target, target_key = _destination(doc, op, "copy")
    _wrapped("error while adding value during copy", _add, target, target_key, copy.deepcopy(value))
    return doc


def _json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values as written: 1 and 1.0, or true and 1, differ."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def _op_test(doc: Any, op: JSONMap) -> Any:
    path = _member(op, "test", "path")
    actual = doc
    if path != "":
        container, key = _target(doc, path, f"test operation does not apply: is missing path: {path}")
        actual = _wrapped(f"error in test for path: '{path}'", _get, container, key)
    if not _json_equal(actual, op.get("value")):
        raise _OperationFailed(f"testing value {path} failed: test failed")
    return doc


_OPERATIONS: Final[dict[str, Callable[[Any, JSONMap], Any]]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def _apply_operation(doc: Any, op: JSONMap) -> Any:
    kind = op.get("op")
    handler = _OPERATIONS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        raise _rejected(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
    try:
        return handler(doc, op)
    except _OperationFailed as err:
        raise _rejected(str(err)) from None


def _decode_operations(body: bytes) -> list[JSONMap]:
    prefix = "error decoding patch: "
    operations = _decode(body, prefix)
    if not isinstance(operations, list):
        raise _wrong_shape(prefix, operations, "[]handlers.jsonPatchOp")
    for op in operations:
        if not isinstance(op, dict):
            raise _wrong_shape(prefix, op, "handlers.jsonPatchOp")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        limit, got = MAX_JSON_PATCH_OPERATIONS, len(operations)
        raise RequestEntityTooLarge(f"The allowed maximum operations in a JSON patch is {limit}, got {got}")
    return operations


def _copy_size(doc: Any, op: JSONMap) -> int:
    """The size of the value a `copy` would duplicate, as JSON (0 when the copy fails anyway)."""
    source = op.get("from")
    found = _find(doc, source) if isinstance(source, str) else None
    if found is None:
        return 0
    try:
        return len(orjson.dumps(_get(*found)))
    except (_OperationFailed, IndexError, TypeError, orjson.JSONEncodeError):
        return 0


def _json_patch(original: JSONMap, body: bytes, _kind: str) -> JSONMap:
    doc: Any = original
    copied = 0
    for op in _decode_operations(body):
        if op.get("op") == "copy":  # evanphx/json-patch's AccumulatedCopySizeLimit, checked before the copy
            copied += _copy_size(doc, op)
            if copied > JSON_PATCH_MAX_COPY_BYTES:
                raise _rejected(
                    f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                    f"exceeding the limit {JSON_PATCH_MAX_COPY_BYTES}"
                )
        doc = _apply_operation(doc, op)
    if not isinstance(doc, dict):
        raise _rejected(f"the patched document is a JSON {json_type(doc)}, not an object")
    return doc


# --------------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch
# --------------------------------------------------------------------------------------------------


def _prune_nulls(value: Any) -> Any:
    """Drop null members of objects at any depth; null array elements stay (evanphx ``pruneNulls``)."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(item) for item in value]
    return value


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces.

    As in evanphx/json-patch, a replacing value has nulls pruned from the objects inside it, except
    when it replaces an object; a literal RFC 7386 reading would keep them.
    """
    if not isinstance(patch, dict):
        return patch if isinstance(target, dict) else _prune_nulls(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _merge_patch(original: JSONMap, body: bytes, _kind: str) -> JSONMap:
    prefix = "error decoding patch: "
    patch = _decode(body, prefix)
    if patch is None:
        raise BadRequest("Invalid JSON Patch")  # evanphx/json-patch's ErrBadJSONPatch
    if not isinstance(patch, dict):
        raise _wrong_shape(prefix, patch, "map[string]interface {}")
    merged: JSONMap = json_merge_patch(original, patch)
    return merged


# --------------------------------------------------------------------------------------------------
# Strategic merge patch: schema
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """Patch metadata of one field (upstream's ``patchStrategy``/``patchMergeKey`` struct tags).

    ``type`` names the SCHEMA entry describing the value, or each list element; ``merge`` is
    ``patchStrategy:"merge"``; ``merge_key`` is set for lists of objects merged element-wise.
    A ``merge`` list without a key is a list of scalars merged as an ordered set.
    """

    type: str = ""
    merge: bool = False
    merge_key: str = ""


def _obj(type_name: str) -> Field:
    return Field(type_name)


def _keyed(merge_key: str, type_name: str = "") -> Field:
    return Field(type_name, merge=True, merge_key=merge_key)


_SET: Final = Field(merge=True)
_META: Final = _obj("ObjectMeta")
_CONDITIONS: Final = _keyed("type")
_NO_METADATA: Final = Field()

# Only fields that need metadata are listed; everything else merges as JSON merge patch does.
SCHEMA: Final[dict[str, dict[str, Field]]] = {
    # kinds (roots)
    "Namespace": {"metadata": _META, "status": _obj("NamespaceStatus")},
    "Service": {"metadata": _META, "spec": _obj("ServiceSpec"), "status": _obj("ServiceStatus")},
    "Endpoints": {"metadata": _META},
    "Pod": {"metadata": _META, "spec": _obj("PodSpec"), "status": _obj("PodStatus")},
    "Node": {"metadata": _META, "spec": _obj("NodeSpec"), "status": _obj("NodeStatus")},
    "Event": {"metadata": _META},
    "EndpointSlice": {"metadata": _META},
    "Deployment": {"metadata": _META, "spec": _obj("WorkloadSpec"), "status": _obj("WorkloadStatus")},
    "ReplicaSet": {"metadata": _META, "spec": _obj("WorkloadSpec"), "status": _obj("WorkloadStatus")},
    # shared types
    "ObjectMeta": {"finalizers": _SET, "ownerReferences": _keyed("uid")},
    "NamespaceStatus": {"conditions": _CONDITIONS},
    "ServiceSpec": {"ports": _keyed("port")},
    "ServiceStatus": {"conditions": _CONDITIONS},
    "NodeSpec": {"podCIDRs": _SET},
    "NodeStatus": {"conditions": _CONDITIONS, "addresses": _keyed("type")},
    "PodTemplateSpec": {"metadata": _META, "spec": _obj("PodSpec")},
    "WorkloadSpec": {"template": _obj("PodTemplateSpec")},  # DeploymentSpec, ReplicaSetSpec
    "WorkloadStatus": {"conditions": _CONDITIONS},
    "PodSpec": {
        "containers": _keyed("name", "Container"),
        "initContainers": _keyed("name", "Container"),
        "ephemeralContainers": _keyed("name", "Container"),
        "volumes": _keyed("name"),  # also retainKeys, which only matters when computing patches
        "imagePullSecrets": _keyed("name"),
        "hostAliases": _keyed("ip"),
        "topologySpreadConstraints": _keyed("topologyKey"),
        "resourceClaims": _keyed("name"),
        "schedulingGates": _keyed("name"),
        # tolerations, readinessGates: no strategy, replaced whole
    },
    "Container": {  # also EphemeralContainer
        "ports": _keyed("containerPort"),
        "env": _keyed("name"),
        "volumeMounts": _keyed("mountPath"),
        "volumeDevices": _keyed("devicePath"),
    },
    "PodStatus": {
        "conditions": _CONDITIONS,
        "podIPs": _keyed("ip"),
        "hostIPs": _keyed("ip"),
        "resourceClaimStatuses": _keyed("name"),
    },
}


def _field(type_name: str, name: str) -> Field:
    return SCHEMA.get(type_name, {}).get(name, _NO_METADATA)


def field_metadata(kind: str, path: str) -> Field:
    """Walk SCHEMA from a kind along a dotted path (list fields step into their element type)."""
    found = Field(kind)
    for name in path.split("."):
        found = _field(found.type, name)
    return found


# --------------------------------------------------------------------------------------------------
# Strategic merge patch: merging
# --------------------------------------------------------------------------------------------------

DIRECTIVE: Final = "$patch"
REPLACE, DELETE, MERGE = "replace", "delete", "merge"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER: Final = "$setElementOrder"

_BAD_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
_BAD_SET_ELEMENT_ORDER: Final = "invalid patch format of setElementOrder list"
_BAD_RETAIN_KEYS: Final = "invalid patch format of retainKeys"


class PatchError(Exception):
    """A strategic merge patch that cannot be applied; surfaces as ``BadRequest``."""


def _go_fmt(value: Any) -> str:
    """Go's ``%v`` of decoded JSON, for error messages that echo patch content."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_fmt(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_fmt(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _go_type(value: Any) -> str:
    names = {dict: "map[string]interface {}", list: "[]interface {}", str: "string", bool: "bool"}
    names |= {int: "int64", float: "float64"}
    return names.get(type(value), "<nil>")


def _bad_arg_type(expected: str, value: Any) -> PatchError:
    return PatchError(f"expected a {expected}, but received a {_go_type(value)}")


def _unknown_directive(directive: Any, element: JSONMap) -> PatchError:
    return PatchError(f"unknown patch type: {_go_fmt(directive)} in map: {_go_fmt(element)}")


def _no_merge_key(element: JSONMap, merge_key: str) -> PatchError:
    return PatchError(f"map: {_go_fmt(element)} does not contain declared merge key: {merge_key}")


def strategic_merge_patch(original: JSONMap, patch: JSONMap, kind: str) -> JSONMap:
    """Apply a decoded strategic merge patch to ``original`` (which is not modified)."""
    if patch.get(DIRECTIVE) == DELETE:
        return {}
    try:
        return _merge_map(original, patch, kind)
    except PatchError as err:
        raise BadRequest(str(err)) from None


def _strategic_merge_patch(original: JSONMap, body: bytes, kind: str) -> JSONMap:
    patch = _decode(body, "")
    if patch is None:  # Go decodes null into an empty map: a no-op patch
        return original
    if not isinstance(patch, dict):
        raise _wrong_shape("", patch, "map[string]interface {}")
    return strategic_merge_patch(original, patch, kind)


def _merge_map(original: JSONMap, patch: JSONMap, type_name: str) -> JSONMap:
    directive = patch.get(DIRECTIVE, MERGE)
    if directive == REPLACE:  # the patch, minus the marker, replaces the whole map
        return _merge_map({}, {k: v for k, v in patch.items() if k != DIRECTIVE}, type_name)
    if directive != MERGE:
        raise _unknown_directive(directive, patch)
    body = {k: v for k, v in patch.items() if k not in (DIRECTIVE, RETAIN_KEYS)}
    result = _retain_keys(original, patch[RETAIN_KEYS], body) if RETAIN_KEYS in patch else dict(original)
    orders = {k: v for k, v in body.items() if k.startswith(SET_ELEMENT_ORDER)}
    handled = {_apply_order(result, key, order, body, type_name) for key, order in orders.items()}
    for key, value in body.items():
        if key not in handled and key not in orders:
            _apply_key(result, key, value, type_name)
    return result


def _retain_keys(original: JSONMap, retain: Any, body: JSONMap) -> JSONMap:
    """``$retainKeys``: drop every original field not listed; the patch may only set listed ones."""
    if not isinstance(retain, list):
        raise PatchError(_BAD_RETAIN_KEYS)
    for key, value in body.items():
        directive = key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER))
        if value is not None and not directive and key not in retain:
            raise PatchError(_BAD_RETAIN_KEYS)
    return {k: v for k, v in original.items() if k in retain}


def _directive_target(key: str, prefix: str, error: str) -> str:
    """``$setElementOrder/ports`` → ``ports``."""
    head, slash, target = key.partition("/")
    if not slash or head != prefix:
        raise PatchError(error)
    return target


def _apply_key(result: JSONMap, key: str, value: Any, type_name: str) -> None:
    if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
        name = _directive_target(key, DELETE_FROM_PRIMITIVE_LIST, _BAD_PRIMITIVE_LIST)
        _delete_from_primitive_list(result, name, value)
    elif value is None or (isinstance(value, dict) and value.get(DIRECTIVE) == DELETE):
        result.pop(key, None)
    else:
        result[key] = _merge_value(result.get(key), value, _field(type_name, key))


def _merge_value(original: Any, patch: Any, field: Field) -> Any:
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, field.type)
    if isinstance(patch, list):
        return _merge_list(original if isinstance(original, list) else [], patch, field)
    return patch


def _delete_from_primitive_list(result: JSONMap, name: str, values: Any) -> None:
    # Upstream stores the deletion list as the field when the original lacks it; we leave it absent.
    if not isinstance(values, list):
        raise _bad_arg_type("[]interface {}", values)
    current = result.get(name)
    if isinstance(current, list):
        result[name] = [item for item in current if item not in values]


# --- lists ----------------------------------------------------------------------------------------


def _merge_list(original: list[Any], patch: list[Any], field: Field) -> list[Any]:
    if field.merge_key:
        return _merge_keyed_list(original, patch, field)
    if field.merge:
        return _normalize_order(_unique(original + patch), patch, original, "")
    return [_clean(item, field) for item in patch if _element_directive(item) in (None, MERGE)]


def _clean(item: Any, field: Field) -> Any:
    """A patch value with no original counterpart, stripped of directives and nulls."""
    return _merge_value(None, item, field)


def _unique(items: list[Any]) -> list[Any]:
    found: list[Any] = []
    for item in items:
        if item not in found:
            found.append(item)
    return found


def _element_directive(item: Any) -> Any:
    return item.get(DIRECTIVE) if isinstance(item, dict) else None


def _merge_keyed_list(original: list[Any], patch: list[Any], field: Field) -> list[Any]:
    base, items, replace = _split_special_elements(original, patch, field.merge_key)
    if replace:  # `{"$patch": "replace"}` in the list: the other patch elements are the new list
        return [_clean(item, field) for item in items]
    merged = list(base)
    for item in items:
        _upsert(merged, item, field)
    return _normalize_order(merged, items, base, field.merge_key)


def _split_special_elements(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[JSONMap], bool]:
    """Apply ``$patch: delete`` elements to the original; return (original, plain elements, replace?)."""
    base, items, replace = list(original), [], False
    for item in patch:
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        directive = item.get(DIRECTIVE, MERGE)
        if directive == MERGE:
            items.append(item)
        elif directive == DELETE:
            base = [x for x in base if not _same_key(x, _require_key(item, merge_key), merge_key)]
        elif directive == REPLACE:
            replace = True
        else:
            raise _unknown_directive(directive, item)
    return base, items, replace


def _require_key(item: JSONMap, merge_key: str) -> JSONMap:
    if merge_key not in item:
        raise _no_merge_key(item, merge_key)
    return item


def _same_key(existing: Any, item: JSONMap, merge_key: str) -> bool:
    return isinstance(existing, dict) and merge_key in existing and existing[merge_key] == item[merge_key]


def _upsert(merged: list[Any], item: JSONMap, field: Field) -> None:
    _require_key(item, field.merge_key)
    for index, existing in enumerate(merged):
        if _same_key(existing, item, field.merge_key):
            merged[index] = _merge_map(existing, item, field.type)
            return
    merged.append(_clean(item, field))


# --- ordering (upstream normalizeElementOrder / mergeSortedSlice) -----------------------------------


def _identity(merge_key: str) -> Callable[[Any], Any]:
    """What identifies a list element: its merge key value, or the scalar itself."""
    if not merge_key:
        return lambda item: item
    return lambda item: item.get(merge_key) if isinstance(item, dict) else None


def _position(ids: Sequence[Any], value: Any) -> int:
    return ids.index(value) if value in ids else len(ids)


def _normalize_order(merged: list[Any], order: list[Any], server: list[Any], merge_key: str) -> list[Any]:
    """Items named in ``order`` take that order, the rest keep the server's, then the two interleave.

    Interleaving follows upstream: a server-only item goes first only when the server list shows it
    before the competing patch item, so items new to the server come before untouched ones.
    """
    ident = _identity(merge_key)
    order_ids = [ident(item) for item in order]
    server_ids = [ident(item) for item in server]
    ordered = [x for x in merged if ident(x) in order_ids]
    ordered.sort(key=lambda x: order_ids.index(ident(x)))
    server_only = [x for x in merged if ident(x) not in order_ids]
    server_only.sort(key=lambda x: _position(server_ids, ident(x)))
    return _interleave(server_only, ordered, server_ids, ident)


def _interleave(
    server_only: list[Any], ordered: list[Any], server_ids: list[Any], ident: Callable[[Any], Any]
) -> list[Any]:
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) and j < len(ordered):
        left, right = ident(server_only[i]), ident(ordered[j])
        if left in server_ids and right in server_ids and server_ids.index(left) < server_ids.index(right):
            result.append(server_only[i])
            i += 1
        else:
            result.append(ordered[j])
            j += 1
    return result + server_only[i:] + ordered[j:]


def _apply_order(result: JSONMap, key: str, order: Any, body: JSONMap, type_name: str) -> str | None:
    """``$setElementOrder/<field>``: merge ``<field>`` from the patch, then impose the given order.

    Returns the field name when its patch value was consumed here.
    """
    name = _directive_target(key, SET_ELEMENT_ORDER, _BAD_SET_ELEMENT_ORDER)
    if not isinstance(order, list):
        raise PatchError(_BAD_SET_ELEMENT_ORDER)
    current, patch = result.get(name), body.get(name)
    if not isinstance(current, list) and not isinstance(patch, list):
        return None
    field = _field(type_name, name)
    server = current if isinstance(current, list) else []
    merged = _merge_list(server, patch, field) if isinstance(patch, list) else server
    result[name] = _normalize_order(merged, order, server, field.merge_key)
    return name if isinstance(patch, list) else None


_APPLIERS: Final[dict[str, Callable[[JSONMap, bytes, str], JSONMap]]] = {
    JSON_PATCH: _json_patch,
    MERGE_PATCH: _merge_patch,
    STRATEGIC_MERGE_PATCH: _strategic_merge_patch,
}
