"""Strategies for the core/v1 configuration kinds — ConfigMaps, Secrets, ServiceAccounts and PodTemplates (LimitRanges
and ResourceQuotas are in `quotas.py`) — with upstream's v1 defaulting and validation (`pkg/apis/core/validation`):
its field paths, messages and Go renderings of values.

Some of what upstream refuses is refused while it *decodes* the request, before any validation: a Secret's or a
ConfigMap's bytes that are not base64, a quantity that does not parse, a map of the wrong JSON type. Those answer 400
(`Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4`); `decodetypes` refuses
them for every kind before a strategy runs. Decoding also normalizes what is stored, and `default` does that here:
bytes are re-encoded as canonical base64, a Secret's `stringData` is merged into `data` and never stored, and
quantities take their canonical form ("1000m" is stored as "1"), as upstream's round trip through its Go types does
(a value that does not decode is still refused with the decoder's words, should one get this far).

Quantities are parsed by `tinykube.api.quantity` (a port of apimachinery's `resource.Quantity`).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any

from tinykube.api.errors import (
    ErrorType,
    FieldError,
    forbidden,
    go_value,
    invalid,
    required,
)
from tinykube.api.golang import base64_error, json_type
from tinykube.api.jsonshape import as_dict
from tinykube.api.meta import validate_labels
from tinykube.api.quantity import QuantityError, parse_quantity
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.kinds.core.pod_validation import validate_pod_spec
from tinykube.apiserver.kinds.core.pods import default_pod_spec
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.validation import IMMUTABLE
from tinykube.apiserver.schema.decodetypes import undecodable

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize, which bounds ConfigMaps too
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


# ---- Quantity (the port lives in tinykube.api.quantity, shared with admission and the quota controller) ----


def go_resource_list(quantities: Any) -> str:
    """Go's `%#v` of a `core.ResourceList` (keys sorted, as fmt prints maps)."""
    if quantities is None:
        return "core.ResourceList(nil)"
    entries = []
    for name in sorted(quantities):
        try:
            rendered = parse_quantity(quantities[name]).go
        except QuantityError:
            rendered = go_value(quantities[name])
        entries.append(f"{go_value(name)}:{rendered}")
    return "core.ResourceList{" + ", ".join(entries) + "}"


# ---- decoding -----------------------------------------------------------------------------------------------------


def canonical_quantities(resource: ResourceInfo, quantities: Any) -> None:
    """Store each quantity of a `ResourceList` in canonical form; one that does not parse is a decode error."""
    if not isinstance(quantities, dict):
        return
    for name, raw in quantities.items():
        try:
            quantities[name] = str(parse_quantity(raw))
        except QuantityError as err:
            raise undecodable(resource, str(err)) from None


def _string_map(obj: dict[str, Any], field: str) -> dict[str, Any]:
    """A `map[string]string` or `map[string][]byte` field as decoding leaves it (its types were checked as the body
    was decoded, `decodetypes`): null is no map, a null value is empty."""
    value = obj.get(field)
    if not isinstance(value, dict):
        return {}
    for key, item in value.items():
        if item is None:
            value[key] = ""
    return value


def _decode_bytes(resource: ResourceInfo, values: dict[str, Any]) -> dict[str, bytes]:
    """Base64 values decoded as Go decodes them, and re-encoded in place in canonical form."""
    decoded: dict[str, bytes] = {}
    for key, text in values.items():
        offset = base64_error(text)
        if offset is not None:
            raise undecodable(resource, f"illegal base64 data at input byte {offset}")
        decoded[key] = base64.b64decode(text.encode("ascii"))  # like Go, ignores newlines and stray padding bits
        values[key] = base64.b64encode(decoded[key]).decode("ascii")
    return decoded


# ---- ConfigMap and Secret -----------------------------------------------------------------------------------------

_CONFIG_KEY = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def config_key_errors(key: str) -> list[str]:
    """apimachinery's `IsConfigMapKey`, for ConfigMap and Secret keys."""
    errs = [] if len(key) <= 253 else ["must be no more than 253 characters"]
    if not re.fullmatch(_CONFIG_KEY, key):
        examples = "'key.name',  or 'KEY_NAME',  or 'key-name'"
        errs.append(f"{_CONFIG_KEY_MSG} (e.g. {examples}, regex used for validation is '{_CONFIG_KEY}')")
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _key_errors(keys: Iterable[str], field: str) -> list[FieldError]:
    return [invalid(f"{field}[{key}]", key, msg) for key in keys for msg in config_key_errors(key)]


def _too_long(field: str, most: int) -> FieldError:
    # 1.32's `field.TooLong`; the field is "[]" for the whole object (Go renders an empty path element so)
    return FieldError(ErrorType.TOO_LONG, field, detail=f"may not be more than {most} bytes")


def _same_map(new: Any, old: Any) -> bool:
    """`reflect.DeepEqual` of a map in the request and the stored one, which comes back from storage as nil when
    empty (so a request's `{}` differs from it, as upstream's)."""
    return bool(new == (old or None))


def _immutable_changes(new: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...]) -> list[FieldError]:
    """Once `immutable` is true it stays true and the data fields stay as they are."""
    if old.get("immutable") is not True:
        return []
    errs = [] if new.get("immutable") is True else [forbidden("immutable", IMMUTABLE_WHEN_SET)]
    return errs + [
        forbidden(field, IMMUTABLE_WHEN_SET) for field in fields if not _same_map(new.get(field), old.get(field))
    ]


class ConfigMapStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        _string_map(obj, "data")
        _decode_bytes(self.resource, _string_map(obj, "binaryData"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
        errs = _immutable_changes(obj, old, ("data", "binaryData")) if old is not None else []
        for key in data:
            errs += _key_errors([key], "data")
            if key in binary:
                errs.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        errs += _key_errors(binary, "binaryData")
        size = sum(len(value.encode("utf-8", "surrogatepass")) for value in data.values())
        size += sum(len(base64.b64decode(value)) for value in binary.values())
        return errs + ([_too_long("[]", MAX_SECRET_SIZE)] if size > MAX_SECRET_SIZE else [])


SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
DOCKER_CONFIG_KEY, DOCKER_CONFIG_JSON_KEY = ".dockercfg", ".dockerconfigjson"
_REDACTED = "<secret contents redacted>"


class SecretStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        """Decoding: `data` is base64, `stringData` overwrites it (as bytes) and is not kept; the type defaults to
        Opaque."""
        data = _string_map(obj, "data")
        _decode_bytes(self.resource, data)
        for key, text in _string_map(obj, "stringData").items():
            data[key] = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
        obj.pop("stringData", None)
        if data:
            obj["data"] = data
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs: list[FieldError] = []
        if old is not None:
            if obj.get("type") != old.get("type"):
                errs.append(invalid("type", obj.get("type"), IMMUTABLE))
            errs += _immutable_changes(obj, old, ("data",))
        data = {key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()}
        errs += _key_errors(data, "data")
        if sum(len(value) for value in data.values()) > MAX_SECRET_SIZE:
            errs.append(_too_long("data", MAX_SECRET_SIZE))
        return errs + _secret_type_errors(obj, data)


def _secret_type_errors(obj: dict[str, Any], data: dict[str, bytes]) -> list[FieldError]:
    """The keys each built-in Secret type requires."""
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        if not as_dict(obj["metadata"].get("annotations")).get(SERVICE_ACCOUNT_NAME_KEY):
            return [required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]")]
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = DOCKER_CONFIG_KEY if kind == "kubernetes.io/dockercfg" else DOCKER_CONFIG_JSON_KEY
        if key not in data:
            return [required(f"data[{key}]")]
        problem = go_json_error(data[key])
        return [invalid(f"data[{key}]", _REDACTED, problem)] if problem else []
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:  # either may be empty, but one must be there
            return [required("data[username]"), required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            return [required("data[ssh-privatekey]")]
    elif kind == "kubernetes.io/tls":
        return [required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]
    return []


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\\": "\\\\"}


def _go_char(text: str) -> str:
    """Go's `quoteChar` of the byte encoding/json stumbled on (the first byte of a multi-byte character)."""
    char = chr(text.encode("utf-8", "surrogatepass")[0])
    if char in ("'", '"'):
        return "'\\''" if char == "'" else "'\"'"
    if char in _GO_ESCAPES:
        return f"'{_GO_ESCAPES[char]}'"
    if char.isprintable():
        return f"'{char}'"
    return f"'\\x{ord(char):02x}'" if ord(char) < 0x80 else f"'\\u{ord(char):04x}'"


class _GoRejects(ValueError):
    """A JavaScript constant (NaN, Infinity) Python's parser takes and Go's does not."""


def _reject_constant(name: str) -> Any:
    raise _GoRejects(name)


def go_json_error(raw: bytes) -> str:
    """What Go's `json.Unmarshal(raw, &map[string]interface{}{})` says about `raw`, or "" when it accepts it (a
    docker config must be a JSON object). Python's parser stops where Go's does; the wording is Go's."""
    text = raw.decode("utf-8", "replace")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        return _go_syntax_error(text, err)
    except _GoRejects as err:  # Go reads "-" as the start of a number, then stops at the letter
        name = str(err)
        return f"invalid character {_go_char(name.lstrip('-')[0])} " + (
            "in numeric literal" if name.startswith("-") else "looking for beginning of value"
        )
    if value is None or isinstance(value, dict):
        return ""
    return f"json: cannot unmarshal {json_type(value)} into Go value of type map[string]interface {{}}"


_GO_CONTEXTS = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
}


_LITERALS = {"t": "true", "f": "false", "n": "null"}


def _go_syntax_error(text: str, err: json.JSONDecodeError) -> str:
    position = err.pos if err.msg != "Expecting value" or text.strip() else len(text)
    if position >= len(text.rstrip()) or err.msg.startswith("Unterminated"):
        return "unexpected end of JSON input"
    if err.msg == "Expecting value" and text[position] in _LITERALS:
        return _go_literal_error(text[position:], _LITERALS[text[position]])
    if err.msg.startswith("Invalid \\escape"):
        return f"invalid character {_go_char(text[position + 1])} in string escape code"
    if err.msg == "Expecting ',' delimiter":
        opener = _innermost_open(text[:position])
        context = "after object key:value pair" if opener == "{" else "after array element"
    else:
        context = _GO_CONTEXTS.get(err.msg, "in string literal")
    return f"invalid character {_go_char(text[position])} {context}"


def _go_literal_error(text: str, literal: str) -> str:
    """Go reads a literal letter by letter and names the first letter that does not belong."""
    for have, want in zip(text, literal, strict=False):
        if have != want:
            return f"invalid character {_go_char(have)} in literal {literal} (expecting {_go_char(want)})"
    return "unexpected end of JSON input"


def _innermost_open(prefix: str) -> str:
    """The bracket of the innermost container still open in a JSON prefix (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in prefix:
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else ""


# ---- ServiceAccount and PodTemplate -------------------------------------------------------------------------------


class ServiceAccountStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        """Secret references keep only their names, on every write (`cleanSecretReferences`)."""
        secrets = obj.get("secrets")
        if isinstance(secrets, list):
            obj["secrets"] = [_name_only(ref) for ref in secrets]


def _name_only(ref: Any) -> Any:
    if not isinstance(ref, dict):
        return ref  # validation's business
    return {"name": ref["name"]} if ref.get("name") else {}


class PodTemplateStrategy(Strategy):
    tracks_generation = True  # a change of the template is a new generation

    def default(self, obj: dict[str, Any]) -> None:
        template = obj.setdefault("template", {})
        if not isinstance(template, dict):
            return
        meta = template.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta.setdefault("creationTimestamp", None)  # Go's zero Time, as upstream stores it
        spec = template.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec)

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return new.get("template") != old.get("template")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """`ValidatePodTemplateSpec`: the template's labels (at `template.labels`: the embedded ObjectMeta adds no
        path element) and its pod spec."""
        template = obj.get("template")
        if not isinstance(template, dict):
            return [invalid("template", template, "must be an object")]
        meta = as_dict(template.get("metadata"))
        return validate_labels(meta.get("labels") or {}, "template.labels") + validate_pod_spec(
            template.get("spec"), "template.spec"
        )


STRATEGIES: dict[str, type[Strategy]] = {
    "configmaps": ConfigMapStrategy,
    "secrets": SecretStrategy,
    "serviceaccounts": ServiceAccountStrategy,
    "podtemplates": PodTemplateStrategy,
}
