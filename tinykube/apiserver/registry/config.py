"""Strategies for the core/v1 configuration kinds — ConfigMaps, Secrets, ServiceAccounts, PodTemplates, LimitRanges
and ResourceQuotas — with upstream's v1 defaulting and validation (`pkg/apis/core/validation`): its field paths,
messages and Go renderings of values.

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
import math
import re
from collections.abc import Iterable
from typing import Any

from tinykube.api.errors import (
    ErrorType,
    FieldError,
    duplicate,
    forbidden,
    go_value,
    invalid,
    required,
)
from tinykube.api.golang import base64_error, json_type
from tinykube.api.meta import qualified_name, validate_labels
from tinykube.api.quantity import MAX_MILLI_VALUE, Quantity, QuantityError, parse_quantity
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.registry.core import default_pod_spec
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.podvalidation import validate_pod_spec
from tinykube.apiserver.registry.service_validation import GoSyntaxError, go_slice
from tinykube.apiserver.schema.decodetypes import undecodable

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize, which bounds ConfigMaps too
IMMUTABLE = "field is immutable"
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
NONNEGATIVE = "must be greater than or equal to 0"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


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
        if not _dict(obj["metadata"].get("annotations")).get(SERVICE_ACCOUNT_NAME_KEY):
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
        meta = _dict(template.get("metadata"))
        return validate_labels(meta.get("labels") or {}, "template.labels") + validate_pod_spec(
            template.get("spec"), "template.spec"
        )


# ---- resource names, shared by LimitRange and ResourceQuota --------------------------------------------------------

_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_QUOTA_COUNTS = (
    "pods",
    "quotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
)
_INTEGER_RESOURCES = frozenset({*_QUOTA_COUNTS, "services.nodeports", "services.loadbalancers"})
_STANDARD_QUOTA_RESOURCES = frozenset(
    {
        *_STANDARD_CONTAINER_RESOURCES,
        *_INTEGER_RESOURCES,
        *(f"{kind}.{name}" for kind in ("requests", "limits") for name in _STANDARD_CONTAINER_RESOURCES),
        "requests.storage",
    }
)
_STANDARD_RESOURCES = _STANDARD_QUOTA_RESOURCES | {"storage"}
_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    """Unprefixed names and names in the kubernetes.io/ domain."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """A resource outside kubernetes.io, and a valid name once quota prefixes it with "requests."."""
    return not _is_native(name) and not name.startswith("requests.") and not qualified_name("requests." + name)


def _is_standard_quota(name: str) -> bool:
    return name in _STANDARD_QUOTA_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name_errors(name: str, field: str) -> list[FieldError]:
    """`validateResourceName`: a qualified name; an unprefixed one must be a standard resource."""
    errs = [invalid(field, name, msg) for msg in qualified_name(name)]
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not _is_standard_quota(name):
        errs.append(invalid(field, name, "must be a standard resource type or fully qualified"))
    return errs


def _container_resource_name_errors(name: str, field: str) -> list[FieldError]:
    errs = _resource_name_errors(name, field)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(invalid(field, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(invalid(field, name, "doesn't follow extended resource name standard"))
    return errs


def _quota_resource_name_errors(name: str, field: str) -> list[FieldError]:
    errs = _resource_name_errors(name, field)
    if "/" not in name and not _is_standard_quota(name):
        errs.append(invalid(field, name, "must be a standard resource for quota"))
    return errs


def _quantity_or_error(raw: Any, field: str) -> Quantity | FieldError:
    """A stored quantity (canonical already, unless written through a status update) or the field error for it."""
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        return invalid(field, raw, str(err))


def quantity_value_errors(name: str, quantity: Quantity, field: str) -> list[FieldError]:
    """`ValidateResourceQuantityValue`: not negative, and whole for the resources counted in units."""
    errs = [invalid(field, str(quantity), NONNEGATIVE)] if quantity.value < 0 else []
    if (name in _INTEGER_RESOURCES or _is_extended(name)) and quantity.milli() % 1000:
        errs.append(GoSyntaxError(ErrorType.INVALID, field, quantity.go, "must be an integer"))
    return errs


# ---- LimitRange ---------------------------------------------------------------------------------------------------


class LimitRangeStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        """Quantities in canonical form; a Container limit defaults its limit to max and its request to the limit
        or min (`SetDefaults_LimitRangeItem`)."""
        for item in _dicts(_dict(obj.get("spec")).get("limits")):
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                canonical_quantities(self.resource, item.get(field))
            if item.get("type") == "Container":
                _default_container_limits(item)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        limits = _dict(obj.get("spec")).get("limits") or []
        if not isinstance(limits, list):
            return [invalid("spec.limits", limits, "must be a list")]
        errs: list[FieldError] = []
        seen: set[str] = set()
        for i, item in enumerate(limits):
            errs += _limit_item_errors(_dict(item), f"spec.limits[{i}]", seen)
        return errs


def _default_container_limits(item: dict[str, Any]) -> None:
    default, request = dict(_dict(item.get("default"))), dict(_dict(item.get("defaultRequest")))
    for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
        for name, quantity in _dict(source).items():
            target.setdefault(name, quantity)
    for field, values in (("default", default), ("defaultRequest", request)):
        if values:
            item[field] = values


def _limit_type_errors(kind: Any, field: str) -> list[FieldError]:
    errs = [invalid(field, kind, msg) for msg in qualified_name(str(kind or ""))]
    if not errs and "/" not in str(kind) and kind not in _LIMIT_TYPES:
        errs.append(invalid(field, kind, "must be a standard limit type or fully qualified"))
    return errs


def _limit_item_errors(item: dict[str, Any], path: str, seen: set[str]) -> list[FieldError]:
    kind = str(item.get("type") or "")
    errs = _limit_type_errors(item.get("type"), f"{path}.type")
    if kind in seen:
        errs.append(duplicate(f"{path}.type", kind))
    seen.add(kind)
    if kind == "Pod":  # a pod has no default limits of its own: its containers do
        pod_only = "may not be specified when `type` is 'Pod'"
        errs += [forbidden(f"{path}.{field}", pod_only) for field in ("default", "defaultRequest") if item.get(field)]
    if kind == "PersistentVolumeClaim" and "storage" not in _dict(item.get("min")) | _dict(item.get("max")):
        detail = "either minimum or maximum storage value is required, but neither was provided"
        errs.append(required(f"{path}.limits", detail))
    quantities: dict[str, dict[str, Quantity]] = {}
    for field in _LIMIT_FIELDS:
        if kind == "Pod" and field in ("default", "defaultRequest"):
            continue
        quantities[field] = {}
        for name, raw in _dict(item.get(field)).items():
            errs += _limit_resource_name_errors(kind, name, f"{path}.{field}[{name}]")
            parsed = _quantity_or_error(raw, f"{path}.{field}[{name}]")
            if isinstance(parsed, FieldError):
                errs.append(parsed)
            else:
                quantities[field][name] = parsed
    for name in dict.fromkeys(name for values in quantities.values() for name in values):
        errs += _limit_order_errors({field: values.get(name) for field, values in quantities.items()}, name, path)
    return errs


_LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")

# min <= defaultRequest <= default <= max, per resource: (lower, higher, field reported, value shown, message)
_LIMIT_ORDER = (
    ("min", "max", "min", "min", "min value {min} is greater than max value {max}"),
    (
        "min",
        "defaultRequest",
        "defaultRequest",
        "defaultRequest",
        "min value {min} is greater than default request value {defaultRequest}",
    ),
    (
        "defaultRequest",
        "max",
        "defaultRequest",
        "defaultRequest",
        "default request value {defaultRequest} is greater than max value {max}",
    ),
    (
        "defaultRequest",
        "default",
        "defaultRequest",
        "defaultRequest",
        "default request value {defaultRequest} is greater than default limit value {default}",
    ),
    ("min", "default", "default", "min", "min value {min} is greater than default value {default}"),
    ("default", "max", "default", "max", "default value {default} is greater than max value {max}"),
)


def _limit_resource_name_errors(kind: str, name: str, field: str) -> list[FieldError]:
    if kind in ("Pod", "Container"):
        return _container_resource_name_errors(name, field)
    return _resource_name_errors(name, field)


def _limit_order_errors(values: dict[str, Quantity | None], name: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for lower, higher, at, shown, message in _LIMIT_ORDER:
        low, high, value = values.get(lower), values.get(higher), values.get(shown)
        if low is not None and high is not None and value is not None and low.value > high.value:
            text = message.format(**{lower: low, higher: high})
            errs.append(GoSyntaxError(ErrorType.INVALID, f"{path}.{at}[{name}]", value.go, text))
    ratio_field = f"{path}.maxLimitRequestRatio[{name}]"
    errs += _ratio_errors(values.get("maxLimitRequestRatio"), values.get("min"), values.get("max"), ratio_field)
    default, request = values.get("default"), values.get("defaultRequest")
    overcommit = _is_native(name) and not _is_hugepages(name)  # GPUs and hugepages: a request is the limit
    if default is not None and request is not None and default.value != request.value and not overcommit:
        message = f"default value {default} must equal to defaultRequest value {request} in {name}"
        errs.append(GoSyntaxError(ErrorType.INVALID, f"{path}.defaultRequest[{name}]", request.go, message))
    return errs


def _ratio_errors(ratio: Quantity | None, low: Quantity | None, high: Quantity | None, field: str) -> list[FieldError]:
    """A limit may exceed the request by `ratio` at most: at least 1, and no more than max/min allows (compared
    in thousandths unless that would overflow, then in whole units, as upstream)."""
    if ratio is None:
        return []
    errs: list[FieldError] = []
    if ratio.value < 1:
        errs.append(GoSyntaxError(ErrorType.INVALID, field, ratio.go, f"ratio {ratio} is less than 1"))
    if low is not None and high is not None:
        most, lo, hi = float(ratio.whole()), low.whole(), high.whole()
        if ratio.whole() < MAX_MILLI_VALUE and lo < MAX_MILLI_VALUE and hi < MAX_MILLI_VALUE:
            most, lo, hi = ratio.milli() / 1000, low.milli(), high.milli()
        limit = _go_divide(hi, lo)
        if most > limit:
            detail = f"ratio {ratio} is greater than max/min = {_go_float(limit)}"
            errs.append(GoSyntaxError(ErrorType.INVALID, field, ratio.go, detail))
    return errs


def _go_divide(dividend: int, divisor: int) -> float:
    """Go's float64 division, which gives infinities and NaN where Python raises."""
    if divisor:
        return dividend / divisor
    return math.nan if dividend == 0 else math.copysign(math.inf, dividend)


def _go_float(number: float) -> str:
    """Go's `%f`."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return f"{number:f}"


# ---- ResourceQuota ------------------------------------------------------------------------------------------------

_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass")
_SCOPES = (*_QUOTA_SCOPES, "CrossNamespacePodAffinity")
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "CrossNamespacePodAffinity")
_EXISTS_ONLY = (
    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
    "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
)


def _scope_allows(scope: str, resource: str) -> bool:
    """`IsResourceQuotaScopeValidForResource`: pod scopes apply to pod counts and pod compute resources only."""
    if scope == "BestEffort":
        return resource == "pods"
    if scope in _SCOPES:
        return resource == "pods" or resource in _POD_COMPUTE
    return True


class ResourceQuotaStrategy(Strategy):
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        canonical_quantities(self.resource, _dict(obj.get("spec")).get("hard"))
        self._canonical_status(obj)

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_status_update(new, old)
        self._canonical_status(new)  # a status write is decoded too

    def _canonical_status(self, obj: dict[str, Any]) -> None:
        status = _dict(obj.get("status"))
        for field in ("hard", "used"):
            canonical_quantities(self.resource, status.get(field))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = _quota_list_errors(spec.get("hard"), "spec.hard")
        errs += _scope_errors(spec) + _scope_selector_errors(spec)
        status = _dict(obj.get("status"))
        for field in ("hard", "used"):
            errs += _quota_list_errors(status.get(field), f"status.{field}")
        if old is not None and set(_strings(spec.get("scopes"))) != set(_strings(_dict(old.get("spec")).get("scopes"))):
            errs.append(GoSyntaxError(ErrorType.INVALID, "spec.scopes", _go_scopes(spec.get("scopes")), IMMUTABLE))
        return errs


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _quota_list_errors(quantities: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, raw in _dict(quantities).items():
        field = f"{path}[{name}]"
        errs += _quota_resource_name_errors(name, field)
        parsed = _quantity_or_error(raw, field)
        errs += [parsed] if isinstance(parsed, FieldError) else quantity_value_errors(name, parsed, field)
    return errs


def _go_scopes(scopes: Any) -> str:
    return go_slice(_strings(scopes) if isinstance(scopes, list) else None, "core.ResourceQuotaScope")


def _scope_errors(spec: dict[str, Any]) -> list[FieldError]:
    scopes = _strings(spec.get("scopes"))
    rendered = _go_scopes(spec.get("scopes"))
    errs: list[FieldError] = []
    for scope in scopes:
        if scope not in _SCOPES:
            errs.append(GoSyntaxError(ErrorType.INVALID, "spec.scopes", rendered, "unsupported scope"))
        for name in sorted(_dict(spec.get("hard"))):
            if _is_standard_quota(name) and not _scope_allows(scope, name):
                errs.append(
                    GoSyntaxError(ErrorType.INVALID, "spec.scopes", rendered, "unsupported scope applied to resource")
                )
    return errs + _conflicts(set(scopes), "spec.scopes", rendered)


def _conflicts(scopes: set[str], field: str, rendered: str) -> list[FieldError]:
    return [
        GoSyntaxError(ErrorType.INVALID, field, rendered, "conflicting scopes")
        for pair in _CONFLICTING_SCOPES
        if scopes.issuperset(pair)
    ]


def _scope_selector_errors(spec: dict[str, Any]) -> list[FieldError]:
    selector = spec.get("scopeSelector")
    if not isinstance(selector, dict):
        return []
    path = "spec.scopeSelector.matchExpressions"
    errs: list[FieldError] = []
    scopes: set[str] = set()
    for expr in _dicts(selector.get("matchExpressions")):
        scope, operator, values = str(expr.get("scopeName", "")), expr.get("operator", ""), expr.get("values") or []
        if scope not in _SCOPES:
            errs.append(invalid(f"{path}.scopeName", scope, "unsupported scope"))
        for name in sorted(_dict(spec.get("hard"))):
            if _is_standard_quota(name) and not _scope_allows(scope, name):
                errs.append(
                    GoSyntaxError(
                        ErrorType.INVALID, path, _go_scope_selector(selector), "unsupported scope applied to resource"
                    )
                )
        if scope in _EXISTS_SCOPES and operator != "Exists":
            errs.append(invalid(f"{path}.operator", operator, _EXISTS_ONLY))
        errs += _selector_operator_errors(operator, values, path)
        scopes.add(scope)
    # upstream reports the `scopes` list here, not the selector
    return errs + _conflicts(scopes, path, _go_scopes(spec.get("scopes")))


def _selector_operator_errors(operator: Any, values: Any, path: str) -> list[FieldError]:
    if operator in ("In", "NotIn"):
        detail = "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"
        return [] if values else [required(f"{path}.values", detail)]
    if operator in ("Exists", "DoesNotExist"):
        detail = "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
        rendered = go_slice([str(v) for v in values], "string") if isinstance(values, list) else go_value(values)
        return [GoSyntaxError(ErrorType.INVALID, f"{path}.values", rendered, detail)] if values else []
    return [invalid(f"{path}.operator", operator, "not a valid selector operator")]


def _go_scope_selector(selector: dict[str, Any]) -> str:
    exprs = _dicts(selector.get("matchExpressions"))
    rendered = ", ".join(
        "core.ScopedResourceSelectorRequirement{"
        f"ScopeName:{go_value(str(e.get('scopeName', '')))}, Operator:{go_value(str(e.get('operator', '')))}, "
        f"Values:{go_slice(e['values'] if isinstance(e.get('values'), list) else None, 'string')}}}"
        for e in exprs
    )
    return f"core.ScopeSelector{{MatchExpressions:[]core.ScopedResourceSelectorRequirement{{{rendered}}}}}"


STRATEGIES: dict[str, type[Strategy]] = {
    "configmaps": ConfigMapStrategy,
    "secrets": SecretStrategy,
    "serviceaccounts": ServiceAccountStrategy,
    "podtemplates": PodTemplateStrategy,
    "limitranges": LimitRangeStrategy,
    "resourcequotas": ResourceQuotaStrategy,
}
