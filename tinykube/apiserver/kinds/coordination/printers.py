"""Table columns (`kubectl get`) of the coordination.k8s.io kinds, Leases, as upstream's printers
(pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str
from tinykube.apiserver.printing.cells import age, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

LEASE_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is "
        "used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
    ),
    AGE_COLUMN,
)


def _lease_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), as_str(as_dict(obj.get("spec")).get("holderIdentity")), age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "leases": Printer(LEASE_COLUMNS, _lease_cells),
}
