"""The built-in printers, merged: each API group's Table columns (`tinykube.apiserver.kinds.<group>.printers`) in
one table keyed by plural (one printer for every version of a resource, as upstream registers one per internal
type), and the Table of a resource printed with its printer.

A group's own printer is keyed `<plural>.<group>` where its plural is also a core one's (the metrics API's
`nodes` and `pods`). A CRD prints with its additionalPrinterColumns; a resource with no printer gets the generic
NAME / CREATED AT table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.resources import ResourceInfo
from tinykube.apiserver import componentstatus
from tinykube.apiserver.connect import metricsserver
from tinykube.apiserver.kinds.admissionregistration import printers as admissionregistration
from tinykube.apiserver.kinds.apiregistration import printers as apiregistration
from tinykube.apiserver.kinds.apps import printers as apps
from tinykube.apiserver.kinds.autoscaling import printers as autoscaling
from tinykube.apiserver.kinds.batch import printers as batch
from tinykube.apiserver.kinds.certificates import printers as certificates
from tinykube.apiserver.kinds.coordination import printers as coordination
from tinykube.apiserver.kinds.core import printers as core
from tinykube.apiserver.kinds.discovery import printers as discovery
from tinykube.apiserver.kinds.flowcontrol import printers as flowcontrol
from tinykube.apiserver.kinds.networking import printers as networking
from tinykube.apiserver.kinds.node import printers as node
from tinykube.apiserver.kinds.policy import printers as policy
from tinykube.apiserver.kinds.rbac import printers as rbac
from tinykube.apiserver.kinds.scheduling import printers as scheduling
from tinykube.apiserver.kinds.storage import printers as storage
from tinykube.apiserver.printing.table import DEFAULT_PRINTER, Printer, render

PRINTERS: dict[str, Printer] = {
    **core.PRINTERS,
    **discovery.PRINTERS,
    **apps.PRINTERS,
    **autoscaling.PRINTERS,
    **batch.PRINTERS,
    **policy.PRINTERS,
    **storage.PRINTERS,
    **coordination.PRINTERS,
    **scheduling.PRINTERS,
    **node.PRINTERS,
    **certificates.PRINTERS,
    **networking.PRINTERS,
    **admissionregistration.PRINTERS,
    **apiregistration.PRINTERS,
    **flowcontrol.PRINTERS,
    **rbac.PRINTERS,
    "componentstatuses": componentstatus.PRINTER,  # answered per request, printed like the rest
    "nodes.metrics.k8s.io": metricsserver.PRINTER,
    "pods.metrics.k8s.io": metricsserver.PRINTER,
}


def printer_for(resource: ResourceInfo) -> Printer:
    """A CRD's additionalPrinterColumns; else the group's own printer, where its plural is also a core one's; else
    the plural's; else the generic table."""
    if resource.custom is not None:
        custom: Printer = resource.custom.versions[resource.version].printer
        return custom
    return PRINTERS.get(f"{resource.plural}.{resource.group}") or PRINTERS.get(resource.plural, DEFAULT_PRINTER)


def table(
    resource: ResourceInfo,
    objects: list[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    resource_version: str = "",
    continue_token: str = "",
    remaining: int | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The Table of ``objects`` of ``resource``, printed with its printer (see `printing.table.render`)."""
    return render(
        printer_for(resource),
        resource,
        objects,
        include_object=include_object,
        resource_version=resource_version,
        continue_token=continue_token,
        remaining=remaining,
        now=now,
    )
