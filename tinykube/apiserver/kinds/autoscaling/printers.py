"""Table columns (`kubectl get`) of the autoscaling kinds, as upstream's printers
(`pkg/printers/internalversion/printers.go`, 1.32): HorizontalPodAutoscalers (printed from the stored
autoscaling/v2 form, as upstream prints the internal type whichever version is asked for) and the Scale of the
`scale` subresources (`kubectl get deploy NAME --subresource=scale`).

Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, int_or_zero, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

SCALE_COLUMNS = (
    NAME_COLUMN,
    Column("Desired", "integer", "replicas is the desired number of instances for the scaled object."),
    Column("Available", "integer", "replicas is the actual number of observed instances of the scaled object."),
)


def _scale_cells(obj: dict[str, Any], now: datetime) -> Cells:
    """An autoscaling/v1 Scale (`kubectl get deploy NAME --subresource=scale`)."""
    return [
        name_of(obj),
        int_or_zero(as_dict(obj.get("spec")).get("replicas")),
        int_or_zero(as_dict(obj.get("status")).get("replicas")),
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
    metrics, current = dicts(specs), dicts(statuses)
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
        int_or_zero(spec.get("maxReplicas")),
        int_or_zero(status.get("currentReplicas")),
        age(obj, now),
    ]


PRINTERS: dict[str, Printer] = {
    "horizontalpodautoscalers": Printer(HORIZONTAL_POD_AUTOSCALER_COLUMNS, _horizontal_pod_autoscaler_cells),
    "scale": Printer(SCALE_COLUMNS, _scale_cells),  # the Scale of deployments/scale and replicasets/scale,
}
