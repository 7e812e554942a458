"""Strategy (upstream v1 validation) for scheduling.k8s.io/v1 PriorityClass: the system classes' fixed values, at
most one global default, and what may not change after creation, with kube-apiserver 1.32's field paths and messages.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, forbidden, not_supported, required
from tinykube.api.jsonshape import as_int, as_str
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.validation import default_if_nil, immutable

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
_PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    """Why a `system-` name is refused ("" when it is one of the built-in classes, as built in)."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known:
        return f"value of {name} PriorityClass must be {known}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def _preemption_policy_errors(policy: Any) -> list[FieldError]:
    if policy is None or policy in _PREEMPTION_POLICIES:
        return []
    return (
        [required("preemptionPolicy")]
        if policy == ""
        else [not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES)]
    )


def priority_class_errors(obj: dict[str, Any]) -> list[FieldError]:
    name, value = as_str(obj["metadata"].get("name")), as_int(obj.get("value")) or 0
    errs: list[FieldError] = []
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, bool(obj.get("globalDefault")))
        if problem:
            reserved = f"priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
            errs.append(forbidden("metadata.name", reserved))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(forbidden("value", detail))
    return errs + _preemption_policy_errors(obj.get("preemptionPolicy"))


class PriorityClassStrategy(Strategy):
    """Value and preemption policy are fixed once created: pods copied them at admission."""

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("value", 0)  # `value` is written even when zero (no omitempty)
        default_if_nil(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = priority_class_errors(obj)
        if old is not None:
            if obj.get("value") != old.get("value"):
                errs.append(forbidden("value", "may not be changed in an update."))
            errs += immutable(obj.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")
        return errs


STRATEGIES: dict[str, type[Strategy]] = {"priorityclasses": PriorityClassStrategy}
