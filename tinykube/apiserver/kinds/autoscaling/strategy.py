"""Strategy for HorizontalPodAutoscalers, stored as autoscaling/v2, with upstream 1.32's defaulting
(`pkg/apis/autoscaling/v2/defaults.go`: the default CPU target, the scaling rules' defaults) and validation field paths
and messages (`pkg/apis/autoscaling/validation`) for the scale target, metric sources and scaling rules.
"""

from __future__ import annotations

import re
from typing import Any

from tinykube.api.errors import FieldError, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.meta import dns1123_label
from tinykube.apiserver.kinds.workloads import nonnegative_fields, setdefault_dict, spec_to_default
from tinykube.apiserver.registry.generic import Strategy

_METRIC_SOURCES = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
_METRIC_TYPES = sorted(_METRIC_SOURCES)
_PRESENCE_ORDER = ("object", "external", "pods", "resource", "containerResource")  # the order upstream checks them
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
_SCALING_POLICIES = ["Percent", "Pods"]
_MAX_PERIOD_SECONDS = 1800
_MAX_STABILIZATION_SECONDS = 3600
_DEFAULT_CPU_UTILIZATION = 80
_QUANTITY_NUMBER = re.compile(r"\s*([+-]?)(\d*\.?\d*)")


def _default_scale_up() -> dict[str, Any]:
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def _default_scale_down() -> dict[str, Any]:
    # no stabilization window: the controller's --horizontal-pod-autoscaler-downscale-stabilization applies
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _fill_rules(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """copyHPAScalingRules: the fields a rule set gives replace the defaults' (explicit nulls do not)."""
    given = {k: v for k, v in as_dict(rules).items() if v is not None}
    return {**defaults, **given}


def _default_hpa_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": _DEFAULT_CPU_UTILIZATION}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _fill_rules(behavior.get("scaleUp"), _default_scale_up())
        behavior["scaleDown"] = _fill_rules(behavior.get("scaleDown"), _default_scale_down())


def quantity_sign(value: Any) -> int:
    """The sign of a resource.Quantity given as JSON (a string such as "500m" or a number); 0 when unparseable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (value > 0) - (value < 0)
    match = _QUANTITY_NUMBER.match(str(value))
    digits = match.group(2) if match else ""
    if not digits.strip(".") or float(digits) == 0:
        return 0
    return -1 if match and match.group(1) == "-" else 1


def _path_segment_errors(name: Any, field: str) -> list[FieldError]:
    """IsValidPathSegmentName: the name ends up in a URL path."""
    text = str(name)
    errs = [invalid(field, name, f"may not be '{text}'")] if text in (".", "..") else []
    return errs + [invalid(field, name, f"may not contain '{c}'") for c in ("/", "%") if c in text]


def _object_reference_errors(ref: Any, path: str) -> list[FieldError]:
    ref, errs = as_dict(ref), []
    for name in ("kind", "name"):
        if not ref.get(name):
            errs.append(required(f"{path}.{name}"))
        else:
            errs += _path_segment_errors(ref[name], f"{path}.{name}")
    return errs


def _metric_target_errors(target: dict[str, Any], path: str) -> list[FieldError]:
    kind = target.get("type")
    errs = [required(f"{path}.type", "must specify a metric target type")] if not kind else []
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(invalid(f"{path}.type", kind or "", "must be either Utilization, Value, or AverageValue"))
    for name in ("value", "averageValue"):
        if target.get(name) is not None and quantity_sign(target[name]) != 1:
            errs.append(invalid(f"{path}.{name}", target[name], "must be positive"))
    utilization = as_int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errs


def _metric_identifier_errors(metric: Any, path: str) -> list[FieldError]:
    name = as_dict(metric).get("name")
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return _path_segment_errors(name, f"{path}.name")


def _utilization_or_value(target: dict[str, Any], path: str) -> list[FieldError]:
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        return [required(f"{path}.averageUtilization", "must set either a target raw value or a target utilization")]
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        return [forbidden(f"{path}.averageValue", "may not set both a target raw value and a target utilization")]
    return []


def _resource_source_errors(source: dict[str, Any], path: str, *, container: bool) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = [] if source.get("name") else [required(f"{path}.name", "must specify a resource name")]
    if container:
        name = source.get("container")
        if not name:
            errs.append(required(f"{path}.container", "must specify a container"))
        else:
            errs += [invalid(f"{path}.container", name, m) for m in dns1123_label(str(name))]
    errs += _metric_target_errors(target, f"{path}.target")
    return errs + _utilization_or_value(target, f"{path}.target")


def _object_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _object_reference_errors(source.get("describedObject"), f"{path}.describedObject")
    errs += _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return errs


def _external_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        message = "must set either a target value for metric or a per-pod target"
        errs.append(required(f"{path}.target.averageValue", message))
    if target.get("value") is not None and target.get("averageValue") is not None:
        message = "may not set both a target value for metric and a per-pod target"
        errs.append(forbidden(f"{path}.target.value", message))
    return errs


def _pods_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = as_dict(source.get("target"))
    errs = _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return errs


def _source_errors(field: str, source: dict[str, Any], path: str) -> list[FieldError]:
    if field == "object":
        return _object_source_errors(source, path)
    if field == "external":
        return _external_source_errors(source, path)
    if field == "pods":
        return _pods_source_errors(source, path)
    return _resource_source_errors(source, path, container=field == "containerResource")


def _metric_spec_errors(metric: dict[str, Any], path: str) -> list[FieldError]:
    """validateMetricSpec: a known type, its source filled in, and no other source."""
    kind = metric.get("type")
    errs = [required(f"{path}.type", "must specify a metric source type")] if not kind else []
    if kind not in _METRIC_SOURCES:
        errs.append(not_supported(f"{path}.type", kind or "", _METRIC_TYPES))
    present = [name for name in _PRESENCE_ORDER if metric.get(name) is not None]
    if present:  # only the first source present is checked in depth
        errs += _source_errors(present[0], as_dict(metric[present[0]]), f"{path}.{present[0]}")
    expected = _METRIC_SOURCES.get(str(kind), "")
    if expected and metric.get(expected) is None:
        errs.append(required(f"{path}.{expected}", "must populate information for the given metric source"))
    if not expected:
        errs.append(not_supported(f"{path}.type", kind or "", _METRIC_TYPES))
    if len(present) != 1:
        errs += [
            forbidden(f"{path}.{name}", "must populate the given metric source only")
            for name in sorted(present)
            if name != expected
        ]
    return errs


def _metrics_errors(metrics: Any, min_replicas: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    items = metrics if isinstance(metrics, list) else []
    for i, metric in enumerate(items):
        errs += _metric_spec_errors(as_dict(metric), f"spec.metrics[{i}]")
    kinds = {as_dict(m).get("type") for m in items}
    if min_replicas == 0 and not kinds & {"Object", "External"}:
        message = "must specify at least one Object or External metric to support scaling to zero replicas"
        errs.append(forbidden("spec.metrics", message))
    return errs


def _scaling_rules_errors(rules: Any, path: str) -> list[FieldError]:
    if rules is None:
        return []
    rules, errs = as_dict(rules), []
    window = as_int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if window is not None and window > _MAX_STABILIZATION_SECONDS:
        message = f"must be less than or equal to {_MAX_STABILIZATION_SECONDS}"
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, message))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        errs.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies if isinstance(policies, list) else []):
        errs += _scaling_policy_errors(as_dict(policy), f"{path}.policies[{i}]")
    return errs


def _scaling_policy_errors(policy: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if policy.get("type") not in _SCALING_POLICIES:
        errs.append(not_supported(f"{path}.type", policy.get("type", ""), _SCALING_POLICIES))
    value, period = as_int(policy.get("value")) or 0, as_int(policy.get("periodSeconds")) or 0
    if value <= 0:
        errs.append(invalid(f"{path}.value", value, "must be greater than zero"))
    if period <= 0:
        errs.append(invalid(f"{path}.periodSeconds", period, "must be greater than zero"))
    if period > _MAX_PERIOD_SECONDS:
        errs.append(invalid(f"{path}.periodSeconds", period, f"must be less than or equal to {_MAX_PERIOD_SECONDS}"))
    return errs


def _hpa_spec_errors(spec: dict[str, Any], min_lower_bound: int) -> list[FieldError]:
    errs: list[FieldError] = []
    low, high = as_int(spec.get("minReplicas")), as_int(spec.get("maxReplicas")) or 0
    if low is not None and low < min_lower_bound:
        message = f"must be greater than or equal to {min_lower_bound}"
        errs.append(invalid("spec.minReplicas", low, message))
    if high < 1:
        errs.append(invalid("spec.maxReplicas", high, "must be greater than 0"))
    if low is not None and high < low:
        errs.append(invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    errs += _object_reference_errors(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    errs += _metrics_errors(spec.get("metrics"), low)
    behavior = as_dict(spec.get("behavior"))
    errs += _scaling_rules_errors(behavior.get("scaleUp"), "spec.behavior.scaleUp")
    return errs + _scaling_rules_errors(behavior.get("scaleDown"), "spec.behavior.scaleDown")


class HorizontalPodAutoscalerStrategy(Strategy):
    """Works on the stored autoscaling/v2 form; autoscaling/v1 requests are converted before and after."""

    status_keeps_sent_metadata = True

    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_hpa_spec(spec_to_default(obj))
        setdefault_dict(obj, "status").setdefault("desiredReplicas", 0)  # not omitempty in v2

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        # minReplicas 0 needs the HPAScaleToZero gate (alpha, off), unless the object already has it
        lower = 0 if old is not None and as_dict(old.get("spec")).get("minReplicas") == 0 else 1
        errs = _hpa_spec_errors(as_dict(obj.get("spec")), lower)
        status = as_dict(obj.get("status"))
        return errs + nonnegative_fields(status, ("currentReplicas", "desiredReplicas"), "status")


STRATEGIES: dict[str, type[Strategy]] = {
    "horizontalpodautoscalers": HorizontalPodAutoscalerStrategy,
}
