"""Table columns (`kubectl get`) of the apiregistration.k8s.io kinds, APIServices, as kube-aggregator's REST
storage prints them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

API_SERVICE_COLUMNS = (
    NAME_COLUMN,
    Column("Service", "string", "The reference to the service that hosts this API endpoint."),
    Column("Available", "string", "Whether this service is available."),
    AGE_COLUMN,
)


def api_service_available(status: Any) -> str:
    """The Available condition: `True`, or its status with the reason (`False (MissingEndpoints)`), or `Unknown`."""
    for condition in dicts(as_dict(status).get("conditions")):
        if condition.get("type") == "Available":
            value, reason = as_str(condition.get("status")), as_str(condition.get("reason"))
            return f"{value} ({reason})" if value != "True" and reason else value
    return "Unknown"


def _api_service_cells(obj: dict[str, Any], now: datetime) -> Cells:
    service = as_dict(obj.get("spec")).get("service")
    shown = (
        f"{as_str(service.get('namespace'))}/{as_str(service.get('name'))}" if isinstance(service, dict) else "Local"
    )
    return [name_of(obj), shown, api_service_available(obj.get("status")), age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "apiservices": Printer(API_SERVICE_COLUMNS, _api_service_cells),
}
