"""Go `%#v` renderings of values inside field errors, shared by every kind's validation.

Upstream's field errors print the offending value with Go's `%#v`; for values `go_value` cannot express (nil
slices, selectors, label maps, int-or-strings, struct dumps), a `GoSyntaxError` carries the rendered text as it is.
Generic: the renderings are of apimachinery's and core's shared types, not of any one kind's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, go_value
from tinykube.api.jsonshape import as_dict

_POINTER = "0xc000000000"  # Go prints a pointer's address; any will do


@dataclass(frozen=True, slots=True)
class GoSyntaxError(FieldError):
    """A field error whose value is already Go `%#v` text, for values `go_value` cannot express (nil slices,
    `[]core.IPFamily{...}`, struct dumps)."""

    @property
    def body(self) -> str:
        text = f"{self.type.value[1]}: {self.value}"
        return f"{text}: {self.detail}" if self.detail else text


def go_invalid(field: str, go_text: str, detail: str) -> FieldError:
    return GoSyntaxError(ErrorType.INVALID, field, go_text, detail)


def go_slice(values: list[str] | None, elem_type: str) -> str:
    if values is None:
        return f"[]{elem_type}(nil)"
    return f"[]{elem_type}{{" + ", ".join(go_value(v) for v in values) + "}"


def go_string_map(value: Any) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_value(k)}:{go_value(value[k])}" for k in sorted(value)) + "}"


def _go_requirement(expr: dict[str, Any]) -> str:
    values = expr.get("values")
    return (
        f"v1.LabelSelectorRequirement{{Key:{go_value(expr.get('key', ''))}, "
        f"Operator:{go_value(expr.get('operator', ''))}, "
        f"Values:{go_slice(values if isinstance(values, list) else None, 'string')}}}"
    )


def go_selector(selector: Any) -> str:
    selector = selector if isinstance(selector, dict) else {}
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(_go_requirement(as_dict(e)) for e in exprs) + "}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, MatchExpressions:{rendered}}}"


def go_int_or_string(value: Any) -> str:
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_value(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def go_pointer(value: Any, type_name: str) -> str:
    """Go's `%#v` of a pointer field inside a struct."""
    return f"(*{type_name})(nil)" if value is None else f"(*{type_name})({_POINTER})"


def go_string(value: Any) -> str:
    return go_value(value if isinstance(value, str) else "")
