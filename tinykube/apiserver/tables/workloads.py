"""Table columns (`kubectl get`) of the workload kinds beyond Deployments and ReplicaSets, as upstream's printers
(`pkg/printers/internalversion/printers.go`, 1.32): StatefulSets, DaemonSets, ControllerRevisions,
ReplicationControllers, Jobs, CronJobs, HorizontalPodAutoscalers (printed from the stored autoscaling/v2 form, as
upstream prints the internal type whichever version is asked for) and PodDisruptionBudgets.

Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tinykube.api.meta import parse_time
from tinykube.apiserver.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Printer,
    age,
    as_dict,
    as_int,
    as_list,
    as_str,
    container_cells,
    dicts_in,
    format_label_selector,
    format_labels,
    human_duration,
    meta_of,
    name_of,
    replicated_cells,
    since,
)

Cells = list[Any]

_CONTAINERS = Column("Containers", "string", "Names of each container in the template.", priority=1)
_IMAGES = Column("Images", "string", "Images referenced by each container in the template.", priority=1)
_LABELS_URL = "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
_RC_URL = (
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)
_DS_URL = "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"


# ---- StatefulSet ------------------------------------------------------------------------------------------------

STATEFUL_SET_COLUMNS = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
)


def _stateful_set_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(spec.get("template"))
    ready = f"{as_int(status.get('readyReplicas'))}/{as_int(spec.get('replicas'))}"
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
    _CONTAINERS,
    _IMAGES,
    Column(
        "Selector",
        "string",
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must "
        f"match the pod template's labels. More info: {_LABELS_URL}",
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
        *(as_int(status.get(name)) for name in counts),
        as_int(status.get("numberAvailable")),
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
    for ref in dicts_in(meta_of(obj).get("ownerReferences")):
        if ref.get("controller") is True:
            api_version = as_str(ref.get("apiVersion"))
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            kind = as_str(ref.get("kind"))
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified.lower()}/{as_str(ref.get('name'))}" if qualified else as_str(ref.get("name"))
    return "<none>"


def _controller_revision_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), _controller_of(obj), as_int(obj.get("revision")), age(obj, now)]


# ---- ReplicationController --------------------------------------------------------------------------------------

REPLICATION_CONTROLLER_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and "
        f"unspecified. Defaults to 1. More info: {_RC_URL}",
    ),
    Column("Current", "integer", f"Replicas is the most recently observed number of replicas. More info: {_RC_URL}"),
    Column("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    Column(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is "
        "defaulted to the labels present on the Pod template. Label keys and values that must match in order to be "
        f"controlled by this replication controller, if empty defaulted to labels on Pod template. More info: "
        f"{_LABELS_URL}",
        priority=1,
    ),
)


def _replication_controller_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return replicated_cells(obj, now, format_labels)


# ---- Job --------------------------------------------------------------------------------------------------------

_JOB_SELECTOR = Column(
    "Selector",
    "string",
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. "
    f"More info: {_LABELS_URL}",
    priority=1,
)

JOB_COLUMNS = (
    NAME_COLUMN,
    Column("Status", "string", "Status of the job."),
    Column(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. "
        "However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    Column("Duration", "string", "Time required to complete the job."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _JOB_SELECTOR,
)

# The first condition that is True decides, in this order; Terminating sits between Failed and Suspended.
_JOB_STATES = ("Complete", "Failed", "Terminating", "Suspended", "FailureTarget", "SuccessCriteriaMet")


def job_status(obj: Mapping[str, Any]) -> str:
    true = {c.get("type") for c in dicts_in(as_dict(obj.get("status")).get("conditions")) if c.get("status") == "True"}
    for state in _JOB_STATES:
        if state == "Terminating" and meta_of(obj).get("deletionTimestamp"):
            return state
        if state in true:
            return state
    return "Running"


def job_completions(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    succeeded = as_int(status.get("succeeded"))
    if isinstance(spec.get("completions"), int):
        return f"{succeeded}/{as_int(spec.get('completions'))}"
    parallelism = spec.get("parallelism")
    if isinstance(parallelism, int) and parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration(status: Mapping[str, Any], now: datetime) -> str:
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    if start is None:
        return ""
    if end is None:
        return since(status.get("startTime"), now)
    return human_duration((end - start).total_seconds())


def _job_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    names, images = container_cells(spec.get("template"))
    return [
        name_of(obj),
        job_status(obj),
        job_completions(spec, status),
        job_duration(status, now),
        age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


# ---- CronJob ----------------------------------------------------------------------------------------------------

CRON_JOB_COLUMNS = (
    NAME_COLUMN,
    Column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    Column(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. "
        "If not specified, this will default to the time zone of the kube-controller-manager process. The set of "
        "valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API "
        "server during CronJob validation and the controller manager during execution. If no system-wide time zone "
        "database can be found a bundled version of the database is used instead. If the time zone name becomes "
        "invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop "
        "creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can "
        "be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
    ),
    Column(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started "
        "executions.  Defaults to false.",
    ),
    Column("Active", "integer", "A list of pointers to currently running jobs."),
    Column("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _JOB_SELECTOR,
)


def _bool_pointer(value: Any) -> str:
    """printBoolPtr."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def _cron_job_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    names, images = container_cells(job_spec.get("template"))
    last = status.get("lastScheduleTime")
    zone = spec.get("timeZone")
    return [
        name_of(obj),
        as_str(spec.get("schedule")),
        zone if isinstance(zone, str) else "<none>",
        _bool_pointer(spec.get("suspend")),
        len(as_list(status.get("active"))),
        since(last, now) if last else "<none>",
        age(obj, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


# ---- HorizontalPodAutoscaler ------------------------------------------------------------------------------------

HORIZONTAL_POD_AUTOSCALER_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Reference",
        "string",
        "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be "
        "collected, as well as to actually change the replica count.",
    ),
    Column(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum "
        "replica count across all metrics will be used).  The desired replica count is calculated multiplying the "
        "ratio between the target value and the current value by the current number of pods.  Ergo, metrics used "
        "must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for "
        "more information about how each type of metric must respond. If not set, the default metric will be set to "
        "80% average CPU utilization.",
    ),
    Column(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It "
        "defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and "
        "at least one Object or External metric is configured.  Scaling is active as long as at least one metric "
        "value is available.",
    ),
    Column(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot "
        "be less that minReplicas.",
    ),
    Column(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the "
        "autoscaler.",
    ),
    AGE_COLUMN,
)

_MAX_SHOWN_METRICS = 2


def _quantity(value: Any) -> str:
    """A Quantity as its string (numbers as Go prints integral quantities)."""
    if isinstance(value, bool) or value is None:
        return "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _current(statuses: list[dict[str, Any]], i: int, source: str) -> dict[str, Any] | None:
    """The status at the same place in the list, if it carries the same source."""
    if i < len(statuses) and isinstance(statuses[i].get(source), dict):
        current: dict[str, Any] = as_dict(statuses[i][source].get("current"))
        return current
    return None


def _value_metric(target: dict[str, Any], current: dict[str, Any] | None) -> str:
    """Object and External metrics: an average value per pod, or a total value."""
    if target.get("averageValue") is not None:
        shown = "<unknown>"
        if current is not None and current.get("averageValue") is not None:
            shown = _quantity(current["averageValue"])
        return f"{shown}/{_quantity(target['averageValue'])} (avg)"
    shown = _quantity(current.get("value")) if current is not None else "<unknown>"
    return f"{shown}/{_quantity(target.get('value'))}"


def _resource_metric(name: str, target: dict[str, Any], current: dict[str, Any] | None) -> str:
    if target.get("averageValue") is not None:
        shown = _quantity(current.get("averageValue")) if current is not None else "<unknown>"
        return f"{name}: {shown}/{_quantity(target['averageValue'])}"
    shown = "<unknown>"
    if current is not None and isinstance(current.get("averageUtilization"), int):
        shown = f"{current['averageUtilization']}%"
    utilization = target.get("averageUtilization")
    return f"{name}: {shown}/{f'{utilization}%' if isinstance(utilization, int) else '<auto>'}"


def _metric_text(metric: dict[str, Any], statuses: list[dict[str, Any]], i: int) -> str:
    kind = metric.get("type")
    source_name = {
        "External": "external",
        "Pods": "pods",
        "Object": "object",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(str(kind))
    if source_name is None:
        return "<unknown type>"
    source = as_dict(metric.get(source_name))
    target, current = as_dict(source.get("target")), _current(statuses, i, source_name)
    if kind == "Pods":
        shown = _quantity(current.get("averageValue")) if current is not None else "<unknown>"
        return f"{shown}/{_quantity(target.get('averageValue'))}"
    if kind in ("External", "Object"):
        return _value_metric(target, current)
    return _resource_metric(as_str(source.get("name")), target, current)


def format_hpa_metrics(specs: Any, statuses: Any) -> str:
    """formatHPAMetrics: `current/target` per metric, the first two, then `+ N more...`."""
    metrics, current = dicts_in(specs), dicts_in(statuses)
    if not metrics:
        return "<none>"
    shown = [_metric_text(metric, current, i) for i, metric in enumerate(metrics)]
    text = ", ".join(shown[:_MAX_SHOWN_METRICS])
    if len(shown) > _MAX_SHOWN_METRICS:
        return f"{text} + {len(shown) - _MAX_SHOWN_METRICS} more..."
    return text


def _horizontal_pod_autoscaler_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ref = as_dict(spec.get("scaleTargetRef"))
    low = spec.get("minReplicas")
    return [
        name_of(obj),
        f"{as_str(ref.get('kind'))}/{as_str(ref.get('name'))}",
        format_hpa_metrics(spec.get("metrics"), status.get("currentMetrics")),
        str(low) if isinstance(low, int) and not isinstance(low, bool) else "<unset>",
        as_int(spec.get("maxReplicas")),
        as_int(status.get("currentReplicas")),
        age(obj, now),
    ]


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
        as_int(status.get("disruptionsAllowed")),
        age(obj, now),
    ]


PRINTERS: dict[str, Printer] = {
    "statefulsets": Printer(STATEFUL_SET_COLUMNS, _stateful_set_cells),
    "daemonsets": Printer(DAEMON_SET_COLUMNS, _daemon_set_cells),
    "controllerrevisions": Printer(CONTROLLER_REVISION_COLUMNS, _controller_revision_cells),
    "replicationcontrollers": Printer(REPLICATION_CONTROLLER_COLUMNS, _replication_controller_cells),
    "jobs": Printer(JOB_COLUMNS, _job_cells),
    "cronjobs": Printer(CRON_JOB_COLUMNS, _cron_job_cells),
    "horizontalpodautoscalers": Printer(HORIZONTAL_POD_AUTOSCALER_COLUMNS, _horizontal_pod_autoscaler_cells),
    "poddisruptionbudgets": Printer(POD_DISRUPTION_BUDGET_COLUMNS, _pod_disruption_budget_cells),
}
