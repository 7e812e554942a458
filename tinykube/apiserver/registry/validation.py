"""Validation helpers shared by every API group's strategies (`kinds/<group>`): apimachinery's rules for label
selectors, path segment names, `metav1.Condition` lists, base64 `[]byte` fields and lists of named items, plus the
small checks (immutable, non-negative, Go's nil-pointer defaulting, semantic equality) that upstream's validation
packages share, with upstream's field paths and messages.

Generic: none of it knows a kind. The checks read decoded JSON through `tinykube.api.jsonshape`, so that a value of
the wrong JSON type reads as empty and they can walk any decoded object.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable
from typing import Any

from tinykube.api import errors, golang
from tinykube.api.errors import ErrorType, FieldError, duplicate, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, indexed_dicts
from tinykube.api.meta import label_value, qualified_name, regex_error, validate_labels

IMMUTABLE = "field is immutable"
NONNEGATIVE = "must be greater than or equal to 0"


# ---- small accessors and shared checks ---------------------------------------------------------------------------


def invalid_each(field: str, value: str, messages: list[str]) -> list[FieldError]:
    return [invalid(field, value, message) for message in messages]


def immutable(new: Any, old: Any, field: str) -> list[FieldError]:
    return [] if new == old else [invalid(field, new, IMMUTABLE)]


def default_if_nil(obj: dict[str, Any], key: str, value: Any) -> None:
    """Go's defaulting of a nil pointer: a missing or null field takes the default."""
    if obj.get(key) is None:
        obj[key] = value


def semantic(value: Any) -> Any:
    """A value as `apiequality.Semantic.DeepEqual` compares it: nil and empty maps and lists are the same."""
    if isinstance(value, dict):
        items = ((key, semantic(item)) for key, item in value.items())
        return {key: item for key, item in items if item is not None and item != [] and item != {}}
    if isinstance(value, list):
        return [semantic(item) for item in value]
    return value


def nonnegative(value: Any, field: str) -> list[FieldError]:
    number = as_int(value)
    return [invalid(field, number, NONNEGATIVE)] if number is not None and number < 0 else []


def validate_requirement(expr: dict[str, Any], field: str) -> list[FieldError]:
    """A selector requirement as the workload kinds and volumes check it: the operator and its values, and the key
    (values themselves are not checked here, unlike `label_selector_errors`)."""
    operator, values = expr.get("operator", ""), expr.get("values") or []
    errs: list[FieldError] = []
    if operator in ("In", "NotIn") and not values:
        errs.append(required(f"{field}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errs.append(forbidden(f"{field}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
        errs.append(invalid(f"{field}.operator", operator, "not a valid selector operator"))
    key = str(expr.get("key", ""))
    return errs + [invalid(f"{field}.key", key, m) for m in qualified_name(key)]


_KEY = object()  # NamedItems.repeat shows the key itself


class NamedItems:
    """The "list of named items" rule that upstream's validation writes out again for every list keyed by a name, a
    type, a key or an audience: each item's key is required, valid by the list's rule and unique, with upstream's
    messages (`Required value`, the rule's `Invalid value`s, `Duplicate value: "x"`).

    One instance per list (or per set of lists that share their names, as a pod's init and app containers do).
    `check` takes one item at a time, inside the loop that checks the rest of the item, so that errors keep
    upstream's order (the order of `details.causes` is part of the API). A key is recorded whether it is valid or
    not, so that a misspelt repeat is still reported as one."""

    def __init__(
        self,
        rule: Callable[[str], list[str]] | None = None,
        *,
        allow_empty: bool = False,
        required_detail: str = "",
        taken: Iterable[Any] = (),
    ) -> None:
        """`taken`: keys already in use elsewhere (a pod's containers, for its ephemeral ones)."""
        self._rule, self._allow_empty, self._required_detail = rule, allow_empty, required_detail
        self._seen: list[Any] = list(taken)  # a list, not a set: keys are compared as decoded, hashable or not

    def check(self, name: str, field: str) -> list[FieldError]:
        """The errors of one item's key at `field`: missing (when required; an empty key is not recorded), invalid
        by the rule, or a repeat."""
        if not name:
            return [] if self._allow_empty else [required(field, self._required_detail)]
        errs = invalid_each(field, name, self._rule(name)) if self._rule else []
        return errs + self.repeat(name, field)

    def repeat(self, key: Any, field: str, *, shown: Any = _KEY) -> list[FieldError]:
        """Only the uniqueness rule: `Duplicate value` (of `shown`, by default the key) when `key` was seen before
        in this list; records it."""
        if key in self._seen:
            return [duplicate(field, key if shown is _KEY else shown)]
        self._seen.append(key)
        return []

    def __contains__(self, key: object) -> bool:
        return key in self._seen

    def names(self) -> set[str]:
        """The string keys seen (for checks that refer to them, such as a mount naming a volume)."""
        return {key for key in self._seen if isinstance(key, str)}


def path_segment_name(name: str) -> list[str]:
    """apimachinery's IsValidPathSegmentName: the name must be usable as one segment of a URL path."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{char}'" for char in ("/", "%") if char in name]


def qualified_name_errors(value: str, field: str) -> list[FieldError]:
    return invalid_each(field, value, qualified_name(value))


def has_wildcard(values: list[str]) -> bool:
    return "*" in values


def _requirement_errors(expr: dict[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    operator, values = expr.get("operator", ""), as_list(expr.get("values"))
    errs: list[FieldError] = []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
    else:
        errs.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    errs += qualified_name_errors(as_str(expr.get("key")), f"{path}.key")
    if not allow_invalid_values:
        for j, value in enumerate(values):
            errs += invalid_each(f"{path}.values[{j}]", value, label_value(as_str(value)))
    return errs


def label_selector_errors(selector: Any, path: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """metav1 ValidateLabelSelector: well-formed labels and requirements (an absent selector is valid)."""
    selector = as_dict(selector)
    errs = validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for i, expr in indexed_dicts(selector.get("matchExpressions")):
        errs += _requirement_errors(expr, f"{path}.matchExpressions[{i}]", allow_invalid_values=allow_invalid_values)
    return errs


def has_invalid_selector(selectors: list[Any]) -> bool:
    return any(label_selector_errors(s, "") for s in selectors if s is not None)


# ---- metav1.Condition (status of admission policies) -------------------------------------------------------------

CONDITION_STATUSES = ["False", "True", "Unknown"]
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'"
)
_REASON_EXAMPLES = ("my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def _reason_errors(reason: str, field: str) -> list[FieldError]:
    if not reason:
        return [required(field, "must be set")]
    errs: list[FieldError] = []
    if not re.fullmatch(_REASON_FMT, reason):
        errs.append(invalid(field, reason, regex_error(_REASON_MSG, _REASON_FMT, *_REASON_EXAMPLES)))
    if len(reason) > 1024:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 1024 bytes"))
    return errs


def _condition_errors(condition: dict[str, Any], path: str) -> list[FieldError]:
    """metav1 ValidateCondition."""
    errs = qualified_name_errors(as_str(condition.get("type")), f"{path}.type")
    status = condition.get("status", "")
    if status not in CONDITION_STATUSES:
        errs.append(not_supported(f"{path}.status", status, CONDITION_STATUSES))
    generation = as_int(condition.get("observedGeneration"))
    if generation is not None and generation < 0:
        errs.append(invalid(f"{path}.observedGeneration", generation, "must be greater than or equal to zero"))
    if not condition.get("lastTransitionTime"):
        errs.append(required(f"{path}.lastTransitionTime", "must be set"))
    errs += _reason_errors(as_str(condition.get("reason")), f"{path}.reason")
    if len(as_str(condition.get("message"))) > 32768:
        errs.append(FieldError(ErrorType.TOO_LONG, f"{path}.message", detail="must have at most 32768 bytes"))
    return errs


def conditions_errors(conditions: Any, path: str) -> list[FieldError]:
    """metav1 ValidateConditions: each condition valid, each type once."""
    errs: list[FieldError] = []
    types = NamedItems()
    for i, condition in indexed_dicts(conditions):
        errs += types.repeat(as_str(condition.get("type")), f"{path}[{i}].type")
        errs += _condition_errors(condition, f"{path}[{i}]")
    return errs


# ---- JSON []byte fields ----------------------------------------------------------------------------------------------


def decode_bytes(value: Any, kind: str) -> bytes:
    """A JSON []byte field's bytes. `decodetypes` has refused what Go's decoder refuses (text that is not base64, a
    value of another type) before a strategy runs; should such a value get this far, it is refused in the same
    words (400, not 422)."""
    if value is None:
        return b""
    offset = golang.base64_error(value) if isinstance(value, str) else 0
    if offset is not None:
        raise errors.BadRequest(
            f'{kind} in version "v1" cannot be handled as a {kind}: illegal base64 data at input byte {offset}'
        )
    return base64.b64decode(value.replace("\r", "").replace("\n", ""))
