"""Strategy (upstream v1 validation) for node.k8s.io/v1 RuntimeClass: its handler, its scheduling (node selector
and tolerations) and what may not change after creation.

The validation keeps kube-apiserver 1.32's field paths and messages, because users search for the exact text kubectl
prints. A RuntimeClass is stored and validated, not acted on.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, go_value, invalid, not_supported
from tinykube.api.jsonshape import as_str, indexed_dicts
from tinykube.api.meta import dns1123_label, label_value, validate_labels
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import go_invalid
from tinykube.apiserver.registry.validation import immutable, invalid_each, qualified_name_errors

_TOLERATION_OPERATORS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]


def _go_toleration(toleration: dict[str, Any]) -> str:
    seconds = "nil" if toleration.get("tolerationSeconds") is None else "0xc000000000"  # Go prints the address
    fields = ", ".join(
        f"{name}:{go_value(as_str(toleration.get(key)))}"
        for name, key in (("Key", "key"), ("Operator", "operator"), ("Value", "value"), ("Effect", "effect"))
    )
    return f"core.Toleration{{{fields}, TolerationSeconds:(*int64)({seconds})}}"


def _toleration_errors(toleration: dict[str, Any], path: str) -> list[FieldError]:
    """The checks of core's ValidateTolerations a RuntimeClass's scheduling tolerations meet most often."""
    key, operator, effect = as_str(toleration.get("key")), toleration.get("operator", ""), toleration.get("effect", "")
    errs = qualified_name_errors(key, f"{path}.key") if key else []
    if not key and operator != "Exists":
        detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
        errs.append(invalid(f"{path}.operator", operator, detail))
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        errs.append(invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        messages = label_value(as_str(toleration.get("value")))
        if messages:
            errs.append(invalid(f"{path}.operator", toleration.get("value", ""), ";".join(messages)))
    elif operator == "Exists":
        if as_str(toleration.get("value")):
            detail = "value must be empty when `operator` is 'Exists'"
            errs.append(go_invalid(f"{path}.operator", _go_toleration(toleration), detail))
    else:
        errs.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        errs.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return errs


def _runtime_class_scheduling_errors(scheduling: Any) -> list[FieldError]:
    if not isinstance(scheduling, dict):
        return []
    errs = validate_labels(scheduling.get("nodeSelector") or {}, "scheduling.nodeSelector")
    for i, toleration in indexed_dicts(scheduling.get("tolerations")):
        errs += _toleration_errors(toleration, f"scheduling.tolerations[{i}]")
    return errs


class RuntimeClassStrategy(Strategy):
    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        handler = as_str(obj.get("handler"))  # required: an empty handler fails the label rule, as upstream
        errs = invalid_each("handler", handler, dns1123_label(handler))
        errs += _runtime_class_scheduling_errors(obj.get("scheduling"))
        if old is not None:
            errs += immutable(obj.get("handler"), old.get("handler"), "handler")
        return errs


STRATEGIES: dict[str, type[Strategy]] = {"runtimeclasses": RuntimeClassStrategy}
