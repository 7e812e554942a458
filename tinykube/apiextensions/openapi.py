"""OpenAPI v3 value validation of a custom resource, with kube-openapi's checks, order, paths and messages.

kube-openapi's `SchemaValidator` runs, for each value, the type, allOf/anyOf/oneOf/not, string, format, number,
array, enum and object validators, each only where it applies to the value's JSON kind; errors carry a path like
`spec.items[2].name` (additionalProperties keys joined with a dot) and a message like
`spec.replicas in body must be of type integer: "string"`. The apiextensions apiserver then turns each into a
field error (`kubeOpenAPIResultToFieldErrors`): required → Required, enum → NotSupported, maxLength → TooLong,
maxItems/maxProperties → TooMany, type and format → TypeInvalid, everything else → Invalid; errors that are not
kube-openapi validation errors (anyOf/oneOf/allOf/not summaries, numeric range checks of a constraint) land on the
validated root (`<nil>` for a whole object).

Here each node is compiled once into, per Python value type, the tuple of checks that apply to it, so a
well-formed 30-field object costs a few dozen small calls.

Updates ratchet (CRDValidationRatcheting, on by default upstream): an error found in a part of the new object
that can be correlated with the old object — same property, same key of an additionalProperties map, same
element of a `x-kubernetes-list-type: map` list by its keys — and is unchanged from it is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from tinykube.api.errors import ErrorType, FieldError
from tinykube.api.golang import format_float, json_float
from tinykube.apiextensions import formats
from tinykube.apiextensions.node import Node

MISSING: Any = object()  # no correlated old value
_IN = "body"
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_MAX_FLOAT32 = 3.4028234663852886e38


@dataclass(frozen=True, slots=True)
class TypeInvalid(FieldError):
    """upstream's `field.TypeInvalid`: rendered as "Invalid value", with reason FieldValueTypeInvalid."""

    def cause(self) -> dict[str, str]:
        return {"reason": "FieldValueTypeInvalid", "message": self.body, "field": self.field}


class Run:
    """One validation call: where errors go and the field path prefix (`status` for status updates)."""

    __slots__ = ("errs", "prefix")

    def __init__(self, prefix: str | None = None) -> None:
        self.errs: list[FieldError] = []
        self.prefix = prefix

    def field(self, name: str) -> str:
        """The field path of a kube-openapi validation error named `name`."""
        if name and name != ".":
            name = name[1:] if name[0] == "." else name
            return f"{self.prefix}.{name}" if self.prefix else name
        return self.prefix or "<nil>"

    def plain(self, message: str) -> None:
        """A non-validation error: it lands on the validated root."""
        self.errs.append(FieldError(ErrorType.INVALID, self.prefix or "<nil>", "", message))

    def invalid(self, name: str, value: Any, message: str) -> None:
        self.errs.append(FieldError(ErrorType.INVALID, self.field(name), value, message))

    def type_invalid(self, name: str, value: Any, message: str) -> None:
        self.errs.append(TypeInvalid(ErrorType.INVALID, self.field(name), value, message))


Check = Callable[[Any, str, Run, Any], None]


def go_quote(text: str) -> str:
    """Go's `%q` / strconv.Quote for the strings that appear in messages."""
    return orjson.dumps(text).decode()


def go_v(value: Any) -> str:
    """Go's `%v` of a number."""
    if isinstance(value, float):
        return format_float(value)
    return str(value)


def _invalid_type(name: str, type_name: str, value: str) -> str:
    return f"{name} in {_IN} must be of type {type_name}: {go_quote(value)}"


# ---- the walk -----------------------------------------------------------------------------------------------------


def validate(node: Node, value: Any, name: str, run: Run, old: Any = MISSING) -> None:
    """Validate `value` at kube-openapi path `name` against `node`, appending to `run.errs`."""
    errs = run.errs
    mark = len(errs)
    if value is None:
        _validate_null(node, name, run)
    else:
        checks = node.validator.get(type(value))
        if checks:
            for check in checks:
                check(value, name, run, old)
    if old is not MISSING and len(errs) > mark and ratchet_equal(node, value, old):
        del errs[mark:]


def _validate_null(node: Node, name: str, run: Run) -> None:
    if node.types and not node.nullable:
        run.type_invalid(name, "null", _invalid_type(name, ",".join(node.types), "null"))
    if node.enum is not None:
        _enum_error(node, None, name, run)


def ratchet_equal(node: Node | None, new: Any, old: Any) -> bool:
    """upstream's CorrelatedObject.CachedDeepEqual: equal, following the schema's correlation rules."""
    if type(new) is dict:
        if type(old) is not dict or len(old) != len(new) or node is None:
            return False
        for key, item in new.items():
            child = node.child(key)
            if child is None or key not in old or not ratchet_equal(child, item, old[key]):
                return False
        return True
    if type(new) is list:
        if type(old) is not list or len(old) != len(new):
            return False
        if node is not None and node.list_type == "map" and node.items is not None:
            index = map_list_index(node, old)
            for item in new:
                prior = index.get(map_key(node, item), MISSING)
                if prior is MISSING or not ratchet_equal(node.items, item, prior):
                    return False
            return True
        return strict_equal(new, old)
    return strict_equal(new, old)


def strict_equal(a: Any, b: Any) -> bool:
    """Go's reflect.DeepEqual on decoded JSON: `1` (int64) is not `1.0` (float64), `true` is not `1`."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        return len(a) == len(b) and all(k in b and strict_equal(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def map_key(node: Node, item: Any) -> Any:
    if type(item) is not dict:
        return MISSING
    return tuple((type(item[k]), _hashable(item[k])) if k in item else MISSING for k in node.map_keys)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return value


def map_list_index(node: Node, old: list[Any]) -> dict[Any, Any]:
    index: dict[Any, Any] = {}
    for item in old:
        key = map_key(node, item)
        if key is not MISSING:
            index.setdefault(key, item)
    return index


# ---- compiling a node's checks ------------------------------------------------------------------------------------

_KINDS = (str, int, float, bool, list, dict)


def attach(node: Node) -> None:
    """Compile `node` and everything below it (properties, items, allOf members ...)."""
    for child in (
        *(node.properties or {}).values(),
        *([node.additional] if node.additional else []),
        *([node.items] if node.items else []),
        *node.all_of,
        *node.any_of,
        *node.one_of,
        *([node.not_] if node.not_ else []),
    ):
        attach(child)
    node.validator = {kind: tuple(_checks(node, kind)) for kind in _KINDS}


def _checks(node: Node, kind: type) -> list[Check]:
    out: list[Check] = []
    if node.types or node.format:
        type_check = _type_check(node, kind)
        if type_check is not None:
            out.append(type_check)
    if node.all_of or node.any_of or node.one_of or node.not_ is not None:
        out.append(_junctors(node))
    if kind is str:
        if node.max_length is not None or node.min_length is not None or node.pattern is not None:
            out.append(_string_check(node))
        if node.format and formats.is_known(node.format):
            out.append(_format_check(node))
    if kind is int or kind is float:
        number = _number_check(node, kind)
        if number is not None:
            out.append(number)
    if kind is list:
        out.append(_slice_check(node))
    if node.enum is not None:
        out.append(_enum_check(node))
    if kind is dict:
        out.append(_object_check(node))
    return out


# ---- type ---------------------------------------------------------------------------------------------------------

_SCHEMA_INFO = {
    bool: ("boolean", ""),
    str: ("string", ""),
    int: ("integer", "int64"),
    float: ("number", "float64"),
    list: ("array", ""),
    dict: ("object", ""),
}


def is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger."""
    if math.isnan(f) or math.isinf(f) or abs(f) > 2**53:
        return False
    g = float(math.trunc(f))
    if f == g:
        return True
    diff = abs(f - g)
    if g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _type_check(node: Node, kind: type) -> Check | None:
    """The typeValidator for values of Python type `kind`; None where it can never fail."""
    types, fmt = node.types, node.format
    sch_type, data_format = _SCHEMA_INFO[kind]
    string_or_slice = kind is str or kind is list
    if kind is float and "integer" in types and sch_type not in types:
        joined = ",".join(types)

        def float_int(value: Any, name: str, run: Run, old: Any) -> None:
            if fmt and not is_json_integer(value) and data_format != fmt:
                run.type_invalid(name, data_format, _invalid_type(name, fmt, data_format))
            elif not is_json_integer(value):
                run.type_invalid(name, sch_type, _invalid_type(name, joined, sch_type))

        return float_int
    is_int_float = sch_type == "integer" and "number" in types
    if not string_or_slice and fmt and not (sch_type in types or data_format == fmt or is_int_float):
        message_type, message_value = fmt, data_format
    elif not ("number" in types or "integer" in types) and fmt and string_or_slice:
        return None
    elif not (sch_type in types or is_int_float):
        message_type, message_value = ",".join(types), sch_type
    else:
        return None

    def wrong_type(value: Any, name: str, run: Run, old: Any) -> None:
        run.type_invalid(name, message_value, _invalid_type(name, message_type, message_value))

    return wrong_type


# ---- allOf / anyOf / oneOf / not -----------------------------------------------------------------------------------


def _sub(member: Node, value: Any, name: str, prefix: str | None, old: Any) -> list[FieldError]:
    run = Run(prefix)
    validate(member, value, name, run, old)
    return run.errs


def _best(members: tuple[Node, ...], results: list[list[FieldError]], value: Any) -> list[FieldError]:
    """The failing alternative whose errors are reported: kube-openapi's highest MatchCount (how many validators
    applied), approximated by how many checks apply to the value's type; the first one on a tie."""
    kind = type(value)
    scores = [len(m.validator.get(kind, ())) if value is not None else 0 for m in members]
    best = max(range(len(members)), key=lambda i: (scores[i], -i))
    return results[best]


def _junctors(node: Node) -> Check:
    def junctors(value: Any, name: str, run: Run, old: Any) -> None:
        if node.any_of:
            results = [_sub(m, value, name, run.prefix, old) for m in node.any_of]
            if all(results):
                run.plain(f"{go_quote(name)} must validate at least one schema (anyOf)")
                run.errs.extend(_best(node.any_of, results, value))
        if node.one_of:
            results = [_sub(m, value, name, run.prefix, old) for m in node.one_of]
            valid = sum(1 for r in results if not r)
            if valid != 1:
                found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                run.plain(f"{go_quote(name)} must validate one and only one schema (oneOf). {found}")
                if valid == 0:
                    run.errs.extend(_best(node.one_of, results, value))
        if node.all_of:
            results = [_sub(m, value, name, run.prefix, old) for m in node.all_of]
            for r in results:
                run.errs.extend(r)
            valid = sum(1 for r in results if not r)
            if valid != len(results):
                suffix = ". None validated" if valid == 0 else ""
                run.plain(f"{go_quote(name)} must validate all the schemas (allOf){suffix}")
        if node.not_ is not None and not _sub(node.not_, value, name, run.prefix, old):
            run.plain(f"{go_quote(name)} must not validate the schema (not)")

    return junctors


# ---- strings and formats ------------------------------------------------------------------------------------------


def _string_check(node: Node) -> Check:
    max_length, min_length, pattern = node.max_length, node.min_length, node.pattern

    def string(value: Any, name: str, run: Run, old: Any) -> None:
        if max_length is not None and len(value) > max_length:
            detail = f"may not be more than {max_length} {'byte' if max_length == 1 else 'bytes'}"
            run.errs.append(FieldError(ErrorType.TOO_LONG, run.field(name), detail=detail))
            return
        if min_length is not None and len(value) < min_length:
            run.invalid(name, value, f"{name} in {_IN} should be at least {min_length} chars long")
            return
        if pattern is not None:
            try:
                matched = formats.go_match(pattern, value)
            except Exception as e:  # an invalid pattern: the CRD validator refuses it, but be safe
                run.invalid(name, value, f"{name} in {_IN} should match '{pattern}, but pattern is invalid: {e}'")
                return
            if not matched:
                run.invalid(name, value, f"{name} in {_IN} should match '{pattern}'")

    return string


def _format_check(node: Node) -> Check:
    fmt, ok = node.format, formats.checker(node.format)

    def format_(value: Any, name: str, run: Run, old: Any) -> None:
        if not ok(value):
            run.type_invalid(name, value, _invalid_type(name, fmt, value))

    return format_


# ---- numbers ------------------------------------------------------------------------------------------------------


def _range_error(value: Any, type_name: str, fmt: str, prefix: str, name: str) -> str | None:
    """IsValueValidAgainstRange: can `value` be read as `type_name`/`fmt` without loss? (an error text if not)"""
    if not _range_bad(value, type_name, fmt):
        return None
    if fmt:
        return f"{prefix} value must be of type {type_name} with format {fmt} in {name}"
    return f"{prefix} value must be of type {type_name} (default format) in {name}"


def _range_bad(value: Any, type_name: str, fmt: str) -> bool:
    if type_name == "integer":
        if isinstance(value, float):
            if not (math.isfinite(value) and value == math.trunc(value)):
                return True
            value = int(value)
        low, high = _INT32 if fmt == "int32" else _INT64
        return not (low <= value <= high)
    if fmt == "float":
        return math.isfinite(float(value)) and abs(float(value)) > _MAX_FLOAT32
    return False


def _number_check(node: Node, kind: type) -> Check | None:
    """The numberValidator for ints or floats, with the constraints' own range checks done once, here."""
    type_name = node.types[0] if len(node.types) == 1 and node.types[0] in ("integer", "number") else ""
    fmt = node.format if type_name else ""
    checks_range = type_name == "integer" or (fmt == "float" and kind is float)
    constraints = []
    for prefix, limit, exclusive in (
        ("MultipleOf", node.multiple_of, False),
        ("Minimum boundary", node.minimum, node.excl_min),
        ("Maximum boundary", node.maximum, node.excl_max),
    ):
        if limit is not None:
            constraints.append((prefix, limit, _range_bad(limit, type_name, fmt), exclusive))
    if not constraints and not checks_range:
        return None
    low, high = (_INT32 if fmt == "int32" else _INT64) if type_name == "integer" else (None, None)
    native = kind is int
    number = _number(constraints, checks_range, native, low, high, type_name, fmt)
    if not native or node.multiple_of is not None or any(bad for _, _, bad, _ in constraints):
        return number
    # the common case, an int within plain bounds: one comparison
    lowest = low if low is not None else -math.inf
    highest = high if high is not None else math.inf
    if node.minimum is not None:
        lowest = max(lowest, int(node.minimum) + (1 if node.excl_min else 0))
    if node.maximum is not None:
        highest = min(highest, int(node.maximum) - (1 if node.excl_max else 0))

    def int_in_bounds(value: Any, name: str, run: Run, old: Any) -> None:
        if not lowest <= value <= highest:
            number(value, name, run, old)

    return int_in_bounds


def _number(
    constraints: list[tuple[str, float, bool, bool]],
    checks_range: bool,
    native: bool,
    low: int | None,
    high: int | None,
    type_name: str,
    fmt: str,
) -> Check:
    def number(value: Any, name: str, run: Run, old: Any) -> None:
        if checks_range:
            if native and low is not None:
                if not (low <= value <= high):
                    run.plain(_range_error(value, type_name, fmt, "Checked", name) or "")
            elif _range_bad(value, type_name, fmt):
                run.plain(_range_error(value, type_name, fmt, "Checked", name) or "")
        for prefix, limit, bad, exclusive in constraints:
            if bad:
                run.plain(_range_error(limit, type_name, fmt, prefix, name) or "")
            if prefix == "MultipleOf":
                _multiple_of(value, limit, native and not bad, name, run)
            else:
                _bound(value, limit, exclusive, prefix == "Minimum boundary", native and not bad, name, run)

    return number


def _multiple_of(value: Any, factor: float, native: bool, name: str, run: Run) -> None:
    if native:
        whole = int(factor)
        if whole <= 0:
            run.invalid(name, whole, f"factor MultipleOf declared for {name} must be positive: {whole}")
        elif value % whole:
            run.invalid(name, value, f"{name} in {_IN} should be a multiple of {whole}")
        return
    if factor <= 0:
        run.invalid(name, factor, f"factor MultipleOf declared for {name} must be positive: {go_v(factor)}")
        return
    data = float(value)
    mult = (1 / factor) * data if factor < 1 else data / factor
    if not is_json_integer(mult):
        run.invalid(name, value, f"{name} in {_IN} should be a multiple of {go_v(factor)}")


def _bound(value: Any, limit: float, exclusive: bool, lower: bool, native: bool, name: str, run: Run) -> None:
    shown: Any = int(limit) if native else limit
    data: Any = value if native else float(value)
    if lower:
        failed = data <= shown if exclusive else data < shown
        word = "greater than" if exclusive else "greater than or equal to"
    else:
        failed = data >= shown if exclusive else data > shown
        word = "less than" if exclusive else "less than or equal to"
    if failed:
        run.invalid(name, value, f"{name} in {_IN} should be {word} {go_v(shown)}")


# ---- arrays -------------------------------------------------------------------------------------------------------


def _slice_check(node: Node) -> Check:
    items, min_items, max_items, unique = node.items, node.min_items, node.max_items, node.unique_items
    correlate = node.list_type == "map" and items is not None and bool(node.map_keys)

    def slice_(value: Any, name: str, run: Run, old: Any) -> None:
        if items is not None:
            index = map_list_index(node, old) if correlate and type(old) is list else None
            checks = items.validator
            for i, item in enumerate(value):
                if item is not None and not checks.get(type(item)):
                    continue
                prior = index.get(map_key(node, item), MISSING) if index is not None else MISSING
                validate(items, item, f"{name}[{i}]", run, prior)
        size = len(value)
        if min_items is not None and size < min_items:
            run.invalid(name, size, f"{name} in {_IN} should have at least {min_items} items")
        if max_items is not None and size > max_items:
            detail = f"must have at most {max_items} {'item' if max_items == 1 else 'items'}"
            run.errs.append(FieldError(ErrorType.TOO_MANY, run.field(name), size, detail))
        if unique and _has_duplicates(value):
            run.invalid(name, "", f"{name} in {_IN} shouldn't contain duplicates")

    return slice_


def _has_duplicates(value: list[Any]) -> bool:
    seen: list[Any] = []
    for item in value:
        if any(strict_equal(item, s) for s in seen):
            return True
        seen.append(item)
    return False


# ---- enum ---------------------------------------------------------------------------------------------------------


def _enum_match(data: Any, candidate: Any) -> bool:
    """basicCommonValidator: DeepEqual after converting the value to the enum value's Go type."""
    if strict_equal(data, candidate):
        return True
    if isinstance(data, bool) or isinstance(candidate, bool):
        return False
    if isinstance(candidate, float) and isinstance(data, int):
        return float(data) == candidate
    if isinstance(candidate, int) and isinstance(data, float) and math.isfinite(data):
        return int(data) == candidate
    return False


def _enum_text(candidate: Any) -> str:
    if isinstance(candidate, str):
        return candidate
    if isinstance(candidate, float):
        return json_float(candidate)
    return orjson.dumps(candidate, option=orjson.OPT_SORT_KEYS).decode()


def _enum_error(node: Node, value: Any, name: str, run: Run) -> None:
    assert node.enum is not None
    detail = "supported values: " + ", ".join(go_quote(_enum_text(e)) for e in node.enum)
    run.errs.append(FieldError(ErrorType.NOT_SUPPORTED, run.field(name), value, detail))


def _enum_check(node: Node) -> Check:
    enum = node.enum
    assert enum is not None
    strings = frozenset(e for e in enum if isinstance(e, str))

    def enum_(value: Any, name: str, run: Run, old: Any) -> None:
        if type(value) is str and value in strings:
            return
        if not any(_enum_match(value, e) for e in enum):
            _enum_error(node, value, name, run)

    return enum_


# ---- objects ------------------------------------------------------------------------------------------------------


def _object_check(node: Node) -> Check:
    props, additional = node.properties, node.additional
    min_props, max_props, required = node.min_props, node.max_props, node.required
    forbid_others = node.additional_false

    def object_(value: Any, name: str, run: Run, old: Any) -> None:
        size = len(value)
        if min_props is not None and size < min_props:
            run.invalid(name, size, f"{name} in {_IN} should have at least {min_props} properties")
        if max_props is not None and size > max_props:
            detail = f"must have at most {max_props} {'item' if max_props == 1 else 'items'}"
            run.errs.append(FieldError(ErrorType.TOO_MANY, run.field(name), size, detail))
        if forbid_others:
            for key in value:
                if props is None or key not in props:
                    run.invalid(name, key, f"{name}.{key} in {_IN} is a forbidden property")
        correlated = old if type(old) is dict else None
        for key, item in value.items():
            child = props.get(key) if props is not None else None
            if child is None:
                if additional is None:
                    continue
                child = additional
            checks = child.validator.get(type(item)) if item is not None else None
            if item is not None and not checks:
                continue  # nothing applies to a value of this type here: no error is possible
            child_name = f"{name}.{key}" if name or child is additional else key
            if correlated is not None and key in correlated and not (name == "" and key in ("apiVersion", "kind")):
                validate(child, item, child_name, run, correlated[key])
            elif checks is None:
                _validate_null(child, child_name, run)
            else:
                for check in checks:
                    check(item, child_name, run, MISSING)
        for key in required:
            if key not in value:
                run.errs.append(FieldError(ErrorType.REQUIRED, run.field(f"{name}.{key}")))

    return object_
