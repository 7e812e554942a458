"""HorizontalPodAutoscaler autoscaling/v2 (stored) <-> autoscaling/v1, as upstream converts them
(`pkg/apis/autoscaling/v1/conversion.go`).

autoscaling/v1 has one metric, `targetCPUUtilizationPercentage`. Everything else v2 can say travels in v1
annotations so that a v1 client's read-modify-write keeps it: the other metrics (`.../metrics`) and the current
metrics (`.../current-metrics`) in autoscaling/v1's own metric types (the v2beta1 shapes: `targetAverageValue`,
`metricName`), the conditions (`.../conditions`), and the behavior (`.../behavior`, which upstream marshals from
its internal type, so with Go field names: `{"ScaleUp":{"StabilizationWindowSeconds":...}}`). A v1 object
converted back drops those annotations and restores the fields, with the CPU target last.

Upstream's conversion is lossless on the objects its v2 API produces (one CPU utilization target at most, each
metric target of the type its fields say, status values as the controller writes them); `tests/api/
test_conversion_autoscaling.py` states those shapes. One upstream fix is taken from after 1.32: an Object metric
with only an average value no longer comes back with a `value: "0"` that v2 validation refuses.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from tinykube.api import errors
from tinykube.api.jsonshape import as_dict, dicts

V1, V2 = "autoscaling/v1", "autoscaling/v2"
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP_ANNOTATIONS = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
DEFAULT_CPU_UTILIZATION = 80
_ZERO = "0"  # a required Quantity Go marshals when it is unset
_QUANTITY_NUMBER = re.compile(r"\s*[+-]?(\d*\.?\d*)")


def _compact(pairs: dict[str, Any]) -> dict[str, Any]:
    """Go's `omitempty` for the optional fields of a JSON object: unset (None) fields are left out."""
    return {k: v for k, v in pairs.items() if v is not None}


def _go_json(value: Any) -> str:
    """json.Marshal's text: compact, UTF-8, with <, > and & escaped as Go escapes them for HTML."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _is_zero(quantity: Any) -> bool:
    match = _QUANTITY_NUMBER.match(str(quantity))
    digits = match.group(1) if match else ""
    return not digits.strip(".") or float(digits) == 0


def _is_cpu_utilization(metric: dict[str, Any]) -> bool:
    resource = as_dict(metric.get("resource"))
    utilization = as_dict(resource.get("target")).get("averageUtilization")
    return metric.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None


# ---- v2 -> v1 ---------------------------------------------------------------------------------------------------


def _reference_to_v1(ref: Any) -> dict[str, Any]:
    ref = as_dict(ref)
    return _compact({"kind": ref.get("kind", ""), "name": ref.get("name", ""), "apiVersion": ref.get("apiVersion")})


def _metric_source_to_v1(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    """One v2 metric source in autoscaling/v1's (v2beta1-shaped) metric types."""
    target, metric = as_dict(source.get("target")), as_dict(source.get("metric"))
    name, selector = metric.get("name", ""), metric.get("selector")
    if kind == "Object":
        return _compact(
            {
                "target": _reference_to_v1(source.get("describedObject")),
                "metricName": name,
                "targetValue": target.get("value", _ZERO),
                "selector": selector,
                "averageValue": target.get("averageValue"),
            }
        )
    if kind == "Pods":
        return _compact(
            {"metricName": name, "targetAverageValue": target.get("averageValue", _ZERO), "selector": selector}
        )
    if kind == "External":
        return _compact(
            {
                "metricName": name,
                "metricSelector": selector,
                "targetValue": target.get("value"),
                "targetAverageValue": target.get("averageValue"),
            }
        )
    return _compact(
        {
            "name": source.get("name", ""),
            "targetAverageUtilization": target.get("averageUtilization"),
            "targetAverageValue": target.get("averageValue"),
            "container": source.get("container") if kind == "ContainerResource" else None,
        }
    )


def _metric_status_to_v1(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    current, metric = as_dict(source.get("current")), as_dict(source.get("metric"))
    name, selector = metric.get("name", ""), metric.get("selector")
    if kind == "Object":
        return _compact(
            {
                "target": _reference_to_v1(source.get("describedObject")),
                "metricName": name,
                "currentValue": current.get("value", _ZERO),
                "selector": selector,
                "averageValue": current.get("averageValue"),
            }
        )
    if kind == "Pods":
        return _compact(
            {"metricName": name, "currentAverageValue": current.get("averageValue", _ZERO), "selector": selector}
        )
    if kind == "External":
        return _compact(
            {
                "metricName": name,
                "metricSelector": selector,
                "currentValue": current.get("value", _ZERO),
                "currentAverageValue": current.get("averageValue"),
            }
        )
    return _compact(
        {
            "name": source.get("name", ""),
            "currentAverageUtilization": current.get("averageUtilization"),
            "currentAverageValue": current.get("averageValue", _ZERO),
            "container": source.get("container") if kind == "ContainerResource" else None,
        }
    )


SourceConverter = Callable[[str, dict[str, Any]], dict[str, Any]]
_SOURCES = (
    ("Object", "object"),
    ("Pods", "pods"),
    ("Resource", "resource"),
    ("ContainerResource", "containerResource"),
    ("External", "external"),
)


def _convert_metric(metric: dict[str, Any], convert: SourceConverter) -> dict[str, Any]:
    """A MetricSpec or MetricStatus, either way: its type, and each source it carries converted."""
    out: dict[str, Any] = {"type": metric.get("type", "")}
    for kind, key in _SOURCES:
        if isinstance(metric.get(key), dict):
            out[key] = convert(kind, metric[key])
    return out


def _behavior_to_go(behavior: dict[str, Any]) -> dict[str, Any]:
    """The internal HorizontalPodAutoscalerBehavior as Go marshals it: field names, nil as null."""

    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        policies = value.get("policies")
        return {
            "StabilizationWindowSeconds": value.get("stabilizationWindowSeconds"),
            "SelectPolicy": value.get("selectPolicy"),
            "Policies": None
            if policies is None
            else [
                {"Type": p.get("type", ""), "Value": p.get("value", 0), "PeriodSeconds": p.get("periodSeconds", 0)}
                for p in dicts(policies)
            ],
        }

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _condition_to_v1(condition: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": condition.get("type", ""),
        "status": condition.get("status", ""),
        "lastTransitionTime": condition.get("lastTransitionTime"),  # a struct: Go writes null, not nothing
        **_compact({"reason": condition.get("reason") or None, "message": condition.get("message") or None}),
    }


def _spec_to_v1(spec: dict[str, Any]) -> dict[str, Any]:
    out = _compact(
        {"scaleTargetRef": _reference_to_v1(spec.get("scaleTargetRef")), "minReplicas": spec.get("minReplicas")}
    )
    out["maxReplicas"] = spec.get("maxReplicas", 0)
    for metric in dicts(spec.get("metrics")):
        resource = as_dict(metric.get("resource"))
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":  # the first CPU metric decides
            utilization = as_dict(resource.get("target")).get("averageUtilization")
            if utilization is not None:
                out["targetCPUUtilizationPercentage"] = utilization
            break
    return out


def _status_to_v1(status: dict[str, Any]) -> dict[str, Any]:
    out = _compact(
        {"observedGeneration": status.get("observedGeneration"), "lastScaleTime": status.get("lastScaleTime")}
    )
    out["currentReplicas"] = status.get("currentReplicas", 0)
    out["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in dicts(status.get("currentMetrics")):  # the last CPU utilization wins, as upstream's loop
        resource = as_dict(metric.get("resource"))
        utilization = as_dict(resource.get("current")).get("averageUtilization")
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None:
            out["currentCPUUtilizationPercentage"] = utilization
    return out


def _round_trip_annotations(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    others = [
        _convert_metric(m, _metric_source_to_v1) for m in dicts(spec.get("metrics")) if not _is_cpu_utilization(m)
    ]
    if others:
        found[METRICS] = _go_json(others)
    current = dicts(status.get("currentMetrics"))
    if current:
        found[CURRENT_METRICS] = _go_json([_convert_metric(m, _metric_status_to_v1) for m in current])
    if isinstance(spec.get("behavior"), dict):
        found[BEHAVIOR] = _go_json(_behavior_to_go(spec["behavior"]))
    conditions = dicts(status.get("conditions"))
    if conditions:
        found[CONDITIONS] = _go_json([_condition_to_v1(c) for c in conditions])
    return found


def v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 view of a stored autoscaling/v2 HorizontalPodAutoscaler."""
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    meta = copy.deepcopy(as_dict(obj.get("metadata")))
    # round-trip annotations a client wrote itself are replaced by the ones this conversion makes
    annotations = {k: v for k, v in as_dict(meta.get("annotations")).items() if k not in ROUND_TRIP_ANNOTATIONS}
    annotations |= _round_trip_annotations(spec, status)
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    out: dict[str, Any] = {"apiVersion": V1, "kind": obj.get("kind", "HorizontalPodAutoscaler"), "metadata": meta}
    out["spec"] = _spec_to_v1(spec)
    if "status" in obj:
        out["status"] = _status_to_v1(status)
    return out


# ---- v1 -> v2 ---------------------------------------------------------------------------------------------------


def _reference_to_v2(ref: Any) -> dict[str, Any]:
    ref = as_dict(ref)
    return _compact({"kind": ref.get("kind", ""), "name": ref.get("name", ""), "apiVersion": ref.get("apiVersion")})


def _identifier(name: Any, selector: Any) -> dict[str, Any]:
    return _compact({"name": name or "", "selector": selector})


def _metric_source_to_v2(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    if kind == "Object":
        average, value = source.get("averageValue"), source.get("targetValue", _ZERO)
        if average is not None and _is_zero(value):
            value = None  # v1 cannot leave targetValue out: a zero there meant "no value"
        target = _compact(
            {"type": "Value" if average is None else "AverageValue", "value": value, "averageValue": average}
        )
        return {
            "describedObject": _reference_to_v2(source.get("target")),
            "metric": _identifier(source.get("metricName"), source.get("selector")),
            "target": target,
        }
    if kind == "Pods":
        target = {"type": "AverageValue", "averageValue": source.get("targetAverageValue", _ZERO)}
        return {"metric": _identifier(source.get("metricName"), source.get("selector")), "target": target}
    if kind == "External":
        value, average = source.get("targetValue"), source.get("targetAverageValue")
        target = _compact(
            {"type": "AverageValue" if value is None else "Value", "value": value, "averageValue": average}
        )
        return {"metric": _identifier(source.get("metricName"), source.get("metricSelector")), "target": target}
    utilization = source.get("targetAverageUtilization")
    target = _compact(
        {
            "type": "AverageValue" if utilization is None else "Utilization",
            "averageValue": source.get("targetAverageValue"),
            "averageUtilization": utilization,
        }
    )
    out = {"name": source.get("name", ""), "target": target}
    return {**out, "container": source.get("container", "")} if kind == "ContainerResource" else out


def _metric_status_to_v2(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    if kind == "Object":
        current = _compact({"value": source.get("currentValue", _ZERO), "averageValue": source.get("averageValue")})
        return {
            "metric": _identifier(source.get("metricName"), source.get("selector")),
            "current": current,
            "describedObject": _reference_to_v2(source.get("target")),
        }
    if kind == "Pods":
        current = {"averageValue": source.get("currentAverageValue", _ZERO)}
        return {"metric": _identifier(source.get("metricName"), source.get("selector")), "current": current}
    if kind == "External":
        current = _compact(
            {"value": source.get("currentValue", _ZERO), "averageValue": source.get("currentAverageValue")}
        )
        return {"metric": _identifier(source.get("metricName"), source.get("metricSelector")), "current": current}
    current = _compact(
        {
            "averageValue": source.get("currentAverageValue", _ZERO),
            "averageUtilization": source.get("currentAverageUtilization"),
        }
    )
    out = {"name": source.get("name", ""), "current": current}
    return {**out, "container": source.get("container", "")} if kind == "ContainerResource" else out


def _go_field(value: dict[str, Any], name: str) -> Any:
    """Go's json.Unmarshal matches field names case-insensitively."""
    for key, item in value.items():
        if key.lower() == name.lower():
            return item
    return None


def _behavior_from_go(behavior: Any) -> dict[str, Any]:
    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        policies = _go_field(value, "Policies")
        out = _compact(
            {
                "stabilizationWindowSeconds": _go_field(value, "StabilizationWindowSeconds"),
                "selectPolicy": _go_field(value, "SelectPolicy"),
            }
        )
        if isinstance(policies, list) and policies:  # omitempty in v2
            out["policies"] = [
                {
                    "type": _go_field(p, "Type") or "",
                    "value": _go_field(p, "Value") or 0,
                    "periodSeconds": _go_field(p, "PeriodSeconds") or 0,
                }
                for p in dicts(policies)
            ]
        return out

    behavior = as_dict(behavior)
    return _compact(
        {"scaleUp": rules(_go_field(behavior, "ScaleUp")), "scaleDown": rules(_go_field(behavior, "ScaleDown"))}
    )


def _load(annotations: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(annotations.pop(key))
    except (TypeError, ValueError) as err:
        raise errors.BadRequest(f"annotation {key}: {err}") from None


def _cpu_metric(utilization: Any) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _spec_to_v2(spec: dict[str, Any], annotations: dict[str, Any]) -> dict[str, Any]:
    out = _compact(
        {"scaleTargetRef": _reference_to_v2(spec.get("scaleTargetRef")), "minReplicas": spec.get("minReplicas")}
    )
    out["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = spec.get("targetCPUUtilizationPercentage")
    metrics = [_cpu_metric(cpu)] if cpu is not None else []
    if METRICS in annotations:
        others = [_convert_metric(m, _metric_source_to_v2) for m in dicts(_load(annotations, METRICS))]
        metrics = others + metrics  # the CPU target goes last
    # v1 had an implicit CPU target, applied by the controller; v2 says it
    out["metrics"] = metrics or [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    if BEHAVIOR in annotations:
        out["behavior"] = _behavior_from_go(_load(annotations, BEHAVIOR))
    return out


def _status_to_v2(status: dict[str, Any], annotations: dict[str, Any]) -> dict[str, Any]:
    out = _compact(
        {
            "observedGeneration": status.get("observedGeneration"),
            "lastScaleTime": status.get("lastScaleTime"),
            "currentReplicas": status.get("currentReplicas") or None,  # omitempty in v2
        }
    )
    out["desiredReplicas"] = status.get("desiredReplicas", 0)
    cpu = status.get("currentCPUUtilizationPercentage")
    if cpu is not None:
        out["currentMetrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}
        ]
    if CURRENT_METRICS in annotations:  # more than the CPU percentage: it wins
        current = dicts(_load(annotations, CURRENT_METRICS))
        out["currentMetrics"] = [_convert_metric(m, _metric_status_to_v2) for m in current]
    if CONDITIONS in annotations:
        out["conditions"] = [_compact(c) for c in dicts(_load(annotations, CONDITIONS))]
    return out


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v2 (stored) form of an autoscaling/v1 HorizontalPodAutoscaler."""
    meta = copy.deepcopy(as_dict(obj.get("metadata")))
    annotations = dict(as_dict(meta.get("annotations")))
    out: dict[str, Any] = {"apiVersion": V2, "kind": obj.get("kind", "HorizontalPodAutoscaler"), "metadata": meta}
    out["spec"] = _spec_to_v2(as_dict(obj.get("spec")), annotations)
    if "status" in obj or CURRENT_METRICS in annotations or CONDITIONS in annotations:
        out["status"] = _status_to_v2(as_dict(obj.get("status")), annotations)
    for key in ROUND_TRIP_ANNOTATIONS:
        annotations.pop(key, None)
    meta.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    return out
