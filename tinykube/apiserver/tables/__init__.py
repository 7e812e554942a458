"""Table columns of the kinds beyond the first nine, one module per family; printers.py merges them into PRINTERS
(keyed by plural: one printer for every version of a resource, as upstream registers one per internal type)."""

from __future__ import annotations

from tinykube.apiserver import componentstatus
from tinykube.apiserver.connect import metricsserver
from tinykube.apiserver.printers import Printer
from tinykube.apiserver.tables import cluster, config, rbac, storage, workloads

FAMILY_PRINTERS: dict[str, Printer] = {
    **config.PRINTERS,
    **storage.PRINTERS,
    **workloads.PRINTERS,
    **cluster.PRINTERS,
    **rbac.PRINTERS,
    "componentstatuses": componentstatus.PRINTER,  # answered per request, printed like the rest
    "nodes.metrics.k8s.io": metricsserver.PRINTER,
    "pods.metrics.k8s.io": metricsserver.PRINTER,
}
