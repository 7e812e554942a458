"""Table columns (`kubectl get`) of the apps kinds, as upstream's printers
(`pkg/printers/internalversion/printers.go`, 1.32): Deployments, ReplicaSets, StatefulSets, DaemonSets and
ControllerRevisions.

Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.kinds.core.template_cells import (
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    container_cells,
    replicated_cells,
)
from tinykube.apiserver.printing.cells import (
    age,
    format_label_selector,
    format_labels,
    int_or_zero,
    label_selector_text,
    meta_of,
    name_of,
)
from tinykube.apiserver.printing.table import AGE_COLUMN, LABEL_SELECTORS_URL, NAME_COLUMN, Cells, Column, Printer

_DS_URL = "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"


# ---- Deployment, ReplicaSet --------------------------------------------------------------------------------------

DEPLOYMENT_COLUMNS = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    Column(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    Column(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    Column(
        "Selector",
        "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected "
        "by this deployment. It must match the pod template's labels.",
        priority=1,
    ),
)

REPLICA_SET_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and "
        "unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller",
    ),
    Column(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller",
    ),
    Column(
        "Ready", "integer", "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition."
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    Column(
        "Selector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
        priority=1,
    ),
)


def _deployment_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    containers, images = container_cells(spec.get("template"))
    return [
        name_of(obj),
        f"{int_or_zero(status.get('readyReplicas'))}/{int_or_zero(spec.get('replicas'))}",
        int_or_zero(status.get("updatedReplicas")),
        int_or_zero(status.get("availableReplicas")),
        age(obj, now),
        containers,
        images,
        label_selector_text(spec.get("selector")),
    ]


def _replica_set_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return replicated_cells(obj, now, label_selector_text)


# ---- StatefulSet ------------------------------------------------------------------------------------------------

STATEFUL_SET_COLUMNS = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
)


def _stateful_set_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(spec.get("template"))
    ready = f"{int_or_zero(status.get('readyReplicas'))}/{int_or_zero(spec.get('replicas'))}"
    return [name_of(obj), ready, age(obj, now), names, images]


# ---- DaemonSet --------------------------------------------------------------------------------------------------

DAEMON_SET_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the "
        f"daemon pod). More info: {_DS_URL}",
    ),
    Column(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. "
        f"More info: {_DS_URL}",
    ),
    Column(
        "Ready",
        "integer",
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the "
        "daemon pod running with a Ready Condition.",
    ),
    Column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    Column(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running "
        "and available (ready for at least spec.minReadySeconds)",
    ),
    Column(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a "
        "node's labels for the pod to be scheduled on that node. More info: "
        "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    Column(
        "Selector",
        "string",
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must "
        f"match the pod template's labels. More info: {LABEL_SELECTORS_URL}",
        priority=1,
    ),
)


def _daemon_set_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    template = as_dict(spec.get("template"))
    names, images = container_cells(template)
    counts = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled")
    return [
        name_of(obj),
        *(int_or_zero(status.get(name)) for name in counts),
        int_or_zero(status.get("numberAvailable")),
        format_labels(as_dict(template.get("spec")).get("nodeSelector")),
        age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


# ---- ControllerRevision -----------------------------------------------------------------------------------------

CONTROLLER_REVISION_COLUMNS = (
    NAME_COLUMN,
    Column("Controller", "string", "Controller of the object"),
    Column("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    AGE_COLUMN,
)


def _controller_of(obj: Mapping[str, Any]) -> str:
    """The controlling owner as `kind.group/name` (lower-cased kind and group), or `<none>`."""
    for ref in dicts(meta_of(obj).get("ownerReferences")):
        if ref.get("controller") is True:
            api_version = as_str(ref.get("apiVersion"))
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            kind = as_str(ref.get("kind"))
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified.lower()}/{as_str(ref.get('name'))}" if qualified else as_str(ref.get("name"))
    return "<none>"


def _controller_revision_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), _controller_of(obj), int_or_zero(obj.get("revision")), age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "deployments": Printer(DEPLOYMENT_COLUMNS, _deployment_cells),
    "replicasets": Printer(REPLICA_SET_COLUMNS, _replica_set_cells),
    "statefulsets": Printer(STATEFUL_SET_COLUMNS, _stateful_set_cells),
    "daemonsets": Printer(DAEMON_SET_COLUMNS, _daemon_set_cells),
    "controllerrevisions": Printer(CONTROLLER_REVISION_COLUMNS, _controller_revision_cells),
}
