"""Strategy for policy/v1 PodDisruptionBudgets, with upstream 1.32's defaulting (the status counts, which are not
omitempty) and validation field paths and messages (`pkg/apis/policy/validation`). A whole PDB spec inside a field
error is abbreviated as `policy.PodDisruptionBudgetSpec{...}`. The disruption controller is elsewhere; evictions
consult budgets in `kinds/core/eviction.py`.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, not_supported
from tinykube.api.jsonshape import as_dict
from tinykube.apiserver.kinds.workloads import (
    nonnegative_fields,
    positive_int_or_percent,
    setdefault_dict,
    spec_to_default,
    workload_label_selector_errors,
)
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import go_invalid

# ---- PodDisruptionBudget ----------------------------------------------------------------------------------------

_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]
_PDB_STATUS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def _pdb_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        rendered = "policy.PodDisruptionBudgetSpec{...}"
        errs.append(go_invalid("spec", rendered, "minAvailable and maxUnavailable cannot be both set"))
    for name in ("minAvailable", "maxUnavailable"):
        if spec.get(name) is not None:
            errs += positive_int_or_percent(spec[name], f"spec.{name}")
    selector = spec.get("selector")
    if selector is not None:
        errs += workload_label_selector_errors(selector, "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        errs.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES))
    return errs


class PodDisruptionBudgetStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec_to_default(obj)
        status = setdefault_dict(obj, "status")
        for name in _PDB_STATUS:
            status.setdefault(name, 0)  # not omitempty in PodDisruptionBudgetStatus

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = _pdb_spec_errors(as_dict(obj.get("spec")))
        return errs + nonnegative_fields(as_dict(obj.get("status")), _PDB_STATUS, "status")


STRATEGIES: dict[str, type[Strategy]] = {"poddisruptionbudgets": PodDisruptionBudgetStrategy}
