"""Table columns (`kubectl get`) of the node.k8s.io kinds, RuntimeClasses, as upstream's printers
(pkg/printers/internalversion printers.go).

Upstream's HANDLER column points at a field that does not exist (ObjectMeta's `handler`), hence its empty
description; it is kept so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_str
from tinykube.apiserver.printing.cells import age, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

RUNTIME_CLASS_COLUMNS = (NAME_COLUMN, Column("Handler", "string", ""), AGE_COLUMN)


def _runtime_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), as_str(obj.get("handler")), age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "runtimeclasses": Printer(RUNTIME_CLASS_COLUMNS, _runtime_class_cells),
}
