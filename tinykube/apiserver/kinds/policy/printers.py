"""Table columns (`kubectl get`) of the policy kinds, PodDisruptionBudgets, as upstream's printers
(`pkg/printers/internalversion/printers.go`, 1.32).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict
from tinykube.apiserver.printing.cells import age, int_or_zero, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

# ---- PodDisruptionBudget ----------------------------------------------------------------------------------------

POD_DISRUPTION_BUDGET_COLUMNS = (
    NAME_COLUMN,
    Column("Min Available", "string", "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE_COLUMN,
)


def _int_or_string(value: Any) -> str:
    """IntOrString.String(), or N/A when unset."""
    if value is None:
        return "N/A"
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else "N/A"


def _pod_disruption_budget_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    return [
        name_of(obj),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        int_or_zero(status.get("disruptionsAllowed")),
        age(obj, now),
    ]


PRINTERS: dict[str, Printer] = {
    "poddisruptionbudgets": Printer(POD_DISRUPTION_BUDGET_COLUMNS, _pod_disruption_budget_cells),
}
