"""Checks shared by the registry's strategy modules (cluster, certificates, networking, admissionregistration,
flowcontrol, rbac): lenient accessors for decoded JSON, and apimachinery's rules for label selectors, path segment
names, `metav1.Condition` lists and base64 `[]byte` fields, with upstream's field paths and messages.

The accessors read a value of the wrong JSON type as empty, so that the checks can walk any decoded object.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from tinykube.api import errors, golang
from tinykube.api.errors import ErrorType, FieldError, duplicate, forbidden, invalid, not_supported, required
from tinykube.api.meta import label_value, qualified_name, regex_error, validate_labels
from tinykube.apiserver.registry.service_validation import GoSyntaxError

_IMMUTABLE = "field is immutable"


# ---- small accessors and shared checks ---------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The dicts of a list with their indexes (for field paths); other entries are skipped."""
    return [(i, item) for i, item in enumerate(_list(value)) if isinstance(item, dict)]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    return [item for item in _list(value) if isinstance(item, str)]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _go_invalid(field: str, go_text: str, detail: str) -> FieldError:
    return GoSyntaxError(ErrorType.INVALID, field, go_text, detail)


def _each(field: str, value: str, messages: list[str]) -> list[FieldError]:
    return [invalid(field, value, message) for message in messages]


def _immutable(new: Any, old: Any, field: str) -> list[FieldError]:
    return [] if new == old else [invalid(field, new, _IMMUTABLE)]


def _default(obj: dict[str, Any], key: str, value: Any) -> None:
    """Go's defaulting of a nil pointer: a missing or null field takes the default."""
    if obj.get(key) is None:
        obj[key] = value


def path_segment_name(name: str) -> list[str]:
    """apimachinery's IsValidPathSegmentName: the name must be usable as one segment of a URL path."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{char}'" for char in ("/", "%") if char in name]


def _qualified_name_errors(value: str, field: str) -> list[FieldError]:
    return _each(field, value, qualified_name(value))


def _has_wildcard(values: list[str]) -> bool:
    return "*" in values


def _requirement_errors(expr: dict[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    operator, values = expr.get("operator", ""), _list(expr.get("values"))
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
    errs += _qualified_name_errors(_str(expr.get("key")), f"{path}.key")
    if not allow_invalid_values:
        for j, value in enumerate(values):
            errs += _each(f"{path}.values[{j}]", value, label_value(_str(value)))
    return errs


def label_selector_errors(selector: Any, path: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """metav1 ValidateLabelSelector: well-formed labels and requirements (an absent selector is valid)."""
    selector = _dict(selector)
    errs = validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for i, expr in _items(selector.get("matchExpressions")):
        errs += _requirement_errors(expr, f"{path}.matchExpressions[{i}]", allow_invalid_values=allow_invalid_values)
    return errs


def _has_invalid_selector(selectors: list[Any]) -> bool:
    return any(label_selector_errors(s, "") for s in selectors if s is not None)


# ---- metav1.Condition (status of admission policies) -------------------------------------------------------------

_CONDITION_STATUSES = ["False", "True", "Unknown"]
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
    errs = _qualified_name_errors(_str(condition.get("type")), f"{path}.type")
    status = condition.get("status", "")
    if status not in _CONDITION_STATUSES:
        errs.append(not_supported(f"{path}.status", status, _CONDITION_STATUSES))
    generation = _int(condition.get("observedGeneration"))
    if generation is not None and generation < 0:
        errs.append(invalid(f"{path}.observedGeneration", generation, "must be greater than or equal to zero"))
    if not condition.get("lastTransitionTime"):
        errs.append(required(f"{path}.lastTransitionTime", "must be set"))
    errs += _reason_errors(_str(condition.get("reason")), f"{path}.reason")
    if len(_str(condition.get("message"))) > 32768:
        errs.append(FieldError(ErrorType.TOO_LONG, f"{path}.message", detail="must have at most 32768 bytes"))
    return errs


def conditions_errors(conditions: Any, path: str) -> list[FieldError]:
    """metav1 ValidateConditions: each condition valid, each type once."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in _items(conditions):
        kind = _str(condition.get("type"))
        if kind in seen:
            errs.append(duplicate(f"{path}[{i}].type", kind))
        seen.add(kind)
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
