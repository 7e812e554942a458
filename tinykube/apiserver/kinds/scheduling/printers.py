"""Table columns (`kubectl get`) of the scheduling.k8s.io kinds, PriorityClasses, as upstream's printers
(pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_str
from tinykube.apiserver.printing.cells import age, int_or_zero, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

PRIORITY_CLASS_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Value",
        "integer",
        "value represents the integer value of this priority class. This is the actual priority that pods receive "
        "when they have the name of this class in their pod spec.",
    ),
    Column(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods "
        "that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if "
        "more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of "
        "such global default PriorityClasses will be used as the default priority.",
    ),
    AGE_COLUMN,
    Column(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. "
        "Defaults to PreemptLowerPriority if unset.",
    ),
)


def _priority_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        name_of(obj),
        int_or_zero(obj.get("value")),
        obj.get("globalDefault") is True,
        age(obj, now),
        as_str(obj.get("preemptionPolicy")),
    ]


PRINTERS: dict[str, Printer] = {
    "priorityclasses": Printer(PRIORITY_CLASS_COLUMNS, _priority_class_cells),
}
