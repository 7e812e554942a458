"""HorizontalPodAutoscaler autoscaling/v2 <-> autoscaling/v1 (`tinykube/api/conversion/autoscaling.py`), as
upstream's `pkg/apis/autoscaling/v1/conversion.go`: the CPU target as `targetCPUUtilizationPercentage`, everything
else in the round-trip annotations, and a v1 read-modify-write that loses nothing.

The property test draws v2 objects of the shapes the v2 API stores (what upstream's round-trip fuzzer draws too):
metric targets of the type their fields say, one CPU utilization target at most and last (v1 puts it back last),
status values as the controller writes them, non-empty lists or none.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.api.conversion import CONVERSIONS
from tinykube.api.conversion.autoscaling import BEHAVIOR, CONDITIONS, CURRENT_METRICS, METRICS, v1_to_v2, v2_to_v1

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def v2(**spec: Any) -> dict[str, Any]:
    body = {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, **spec}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": body,
    }


def cpu(utilization: int) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def test_cpu_target_is_v1s_own_field() -> None:
    view = v2_to_v1(v2(metrics=[cpu(50)]))
    assert view == {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
    }
    assert v1_to_v2(view) == v2(metrics=[cpu(50)])


def test_v1_without_a_target_gets_the_implicit_80_percent() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"}}
    v1["spec"] = {"scaleTargetRef": REF, "maxReplicas": 3}
    assert v1_to_v2(v1)["spec"]["metrics"] == [cpu(80)]


def test_other_metrics_travel_in_v1_shapes_in_an_annotation() -> None:
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    obj = {"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"kind": "Ingress", "name": "i"},
                                        "target": {"type": "AverageValue", "averageValue": "3"}}}  # fmt: skip
    view = v2_to_v1(v2(metrics=[pods, obj, cpu(60)]))
    annotation = view["metadata"]["annotations"][METRICS]
    assert annotation == (
        '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},'
        '{"type":"Object","object":{"target":{"kind":"Ingress","name":"i"},"metricName":"rps","targetValue":"0",'
        '"averageValue":"3"}}]'
    )
    assert view["spec"]["targetCPUUtilizationPercentage"] == 60
    # the Object metric with an average value only comes back without v1's zero targetValue
    assert v1_to_v2(view) == v2(metrics=[pods, obj, cpu(60)])


def test_cpu_target_comes_back_last() -> None:
    memory = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    assert v1_to_v2(v2_to_v1(v2(metrics=[cpu(50), memory])))["spec"]["metrics"] == [memory, cpu(50)]


def test_status_conditions_and_behavior_annotations() -> None:
    obj = v2(metrics=[cpu(50)], behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    condition = {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z", "reason": "Ok"}
    current = {
        "type": "Resource",
        "resource": {"name": "cpu", "current": {"averageUtilization": 30, "averageValue": "100m"}},
    }
    obj["status"] = {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [current], "conditions": [condition]}
    view = v2_to_v1(obj)
    annotations = view["metadata"]["annotations"]
    assert view["status"] == {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 30}
    assert json.loads(annotations[BEHAVIOR]) == {
        "ScaleUp": None,
        "ScaleDown": {"StabilizationWindowSeconds": 60, "SelectPolicy": None, "Policies": None},
    }
    assert json.loads(annotations[CURRENT_METRICS]) == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "currentAverageUtilization": 30, "currentAverageValue": "100m"},
        }
    ]
    assert json.loads(annotations[CONDITIONS]) == [{**condition}]
    assert v1_to_v2(view) == obj


def test_stale_round_trip_annotations_are_replaced() -> None:
    obj = v2(metrics=[cpu(50)])
    obj["metadata"]["annotations"] = {METRICS: "[garbage", "keep": "me"}
    assert v2_to_v1(obj)["metadata"]["annotations"] == {"keep": "me"}


def test_behavior_annotation_is_read_case_insensitively_as_go_does() -> None:
    v1 = v2_to_v1(v2(metrics=[cpu(50)]))
    v1["metadata"]["annotations"] = {BEHAVIOR: '{"scaleup":{"selectpolicy":"Min"}}'}
    assert v1_to_v2(v1)["spec"]["behavior"] == {"scaleUp": {"selectPolicy": "Min"}}


def test_registered_as_the_autoscaling_v1_view() -> None:
    view = CONVERSIONS[("autoscaling/v1", "HorizontalPodAutoscaler")]
    assert (view.to_view, view.to_storage) == (v2_to_v1, v1_to_v2)


# ---- property: v2 -> v1 -> v2 is the identity ---------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
quantities = st.builds(lambda n, s: f"{n}{s}", st.integers(1, 10_000), st.sampled_from(["", "m", "k", "Mi", "Gi"]))
percents = st.integers(1, 200)
selectors = st.none() | st.builds(lambda k, v: {"matchLabels": {k: v}}, names, names)


def _identifier(name: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name} if selector is None else {"name": name, "selector": selector}


identifiers = st.builds(_identifier, names, selectors)
references = st.builds(
    lambda kind, name, api: {"kind": kind, "name": name, **({"apiVersion": api} if api else {})},
    st.sampled_from(["Deployment", "Ingress", "Service"]),
    names,
    st.sampled_from(["", "apps/v1", "v1"]),
)
average_value = st.builds(lambda q: {"type": "AverageValue", "averageValue": q}, quantities)
value = st.builds(lambda q: {"type": "Value", "value": q}, quantities)
both_values = st.builds(lambda a, b: {"type": "AverageValue", "value": a, "averageValue": b}, quantities, quantities)
utilization = st.builds(lambda p: {"type": "Utilization", "averageUtilization": p}, percents)
resource_names = st.sampled_from(["memory", "ephemeral-storage", "nvidia.com/gpu"])


def _metric(kind: str, key: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, key: source}


other_metrics = st.one_of(
    st.builds(lambda m, t: _metric("Pods", "pods", {"metric": m, "target": t}), identifiers, average_value),
    st.builds(
        lambda m, o, t: _metric("Object", "object", {"metric": m, "describedObject": o, "target": t}),
        identifiers,
        references,
        value | average_value | both_values,
    ),
    st.builds(
        lambda m, t: _metric("External", "external", {"metric": m, "target": t}), identifiers, value | average_value
    ),
    st.builds(
        lambda n, t: _metric("Resource", "resource", {"name": n, "target": t}),
        resource_names,
        average_value | utilization,
    ),
    st.builds(lambda t: _metric("Resource", "resource", {"name": "cpu", "target": t}), average_value),
    st.builds(
        lambda n, c, t: _metric("ContainerResource", "containerResource", {"name": n, "container": c, "target": t}),
        st.sampled_from(["cpu", "memory"]),
        names,
        average_value | utilization,
    ),
)


def _metrics(others: list[dict[str, Any]], cpu_target: int | None) -> list[dict[str, Any]]:
    # one CPU metric at most: a CPU utilization target is v1's own field, and comes back last
    has_cpu = any(m.get("resource", {}).get("name") == "cpu" for m in others)
    tail = [] if cpu_target is None or has_cpu else [cpu(cpu_target)]
    return others + tail or [cpu(80)]


metric_lists = st.builds(_metrics, st.lists(other_metrics, max_size=4), st.none() | percents)

current_values = st.builds(
    lambda v, a: {"value": v, **({"averageValue": a} if a else {})}, quantities, st.none() | quantities
)
current_metrics = st.one_of(
    st.builds(
        lambda m, a: _metric("Pods", "pods", {"metric": m, "current": {"averageValue": a}}), identifiers, quantities
    ),
    st.builds(
        lambda m, o, c: _metric("Object", "object", {"metric": m, "describedObject": o, "current": c}),
        identifiers,
        references,
        current_values,
    ),
    st.builds(lambda m, c: _metric("External", "external", {"metric": m, "current": c}), identifiers, current_values),
    st.builds(
        lambda n, a, u: _metric(
            "Resource",
            "resource",
            {"name": n, "current": {"averageValue": a, **({"averageUtilization": u} if u else {})}},
        ),
        st.sampled_from(["cpu", "memory"]),
        quantities,
        st.none() | percents,
    ),
)
conditions = st.builds(
    lambda t, s, time, reason: {
        "type": t,
        "status": s,
        **({"lastTransitionTime": time} if time else {}),
        **({"reason": reason, "message": f"because {reason}"} if reason else {}),
    },
    st.sampled_from(["AbleToScale", "ScalingActive", "ScalingLimited"]),
    st.sampled_from(["True", "False", "Unknown"]),
    st.none() | st.just("2024-05-01T11:00:00Z"),
    st.none() | names,
)
policies = st.lists(
    st.builds(lambda t, v, p: {"type": t, "value": v, "periodSeconds": p}, st.sampled_from(["Pods", "Percent"]),
              st.integers(1, 100), st.integers(1, 1800)),
    min_size=1,
    max_size=3,
)  # fmt: skip
rules = st.builds(
    lambda w, s, p: {
        k: v for k, v in {"stabilizationWindowSeconds": w, "selectPolicy": s, "policies": p}.items() if v is not None
    },
    st.none() | st.integers(0, 3600),
    st.none() | st.sampled_from(["Max", "Min", "Disabled"]),
    st.none() | policies,
)
behaviors = st.none() | st.builds(
    lambda up, down: {k: v for k, v in {"scaleUp": up, "scaleDown": down}.items() if v is not None},
    st.none() | rules,
    st.none() | rules,
)
annotations = st.none() | st.dictionaries(names, names, min_size=1, max_size=2)


def _status(current: list[Any], conds: list[Any], replicas: int) -> dict[str, Any]:
    status: dict[str, Any] = {"desiredReplicas": replicas}
    if replicas:
        status["currentReplicas"] = replicas
    if current:
        status["currentMetrics"] = current
    if conds:
        status["conditions"] = conds
    return status


statuses = st.none() | st.builds(
    _status, st.lists(current_metrics, max_size=3), st.lists(conditions, max_size=3), st.integers(0, 10)
)


def _hpa(metrics: list[Any], behavior: Any, status: Any, notes: Any, low: int | None, high: int) -> dict[str, Any]:
    obj = v2(metrics=metrics, maxReplicas=high)
    if low is None:
        del obj["spec"]["minReplicas"]
    else:
        obj["spec"]["minReplicas"] = low
    if behavior is not None:
        obj["spec"]["behavior"] = behavior
    if status is not None:
        obj["status"] = status
    if notes is not None:
        obj["metadata"]["annotations"] = notes
    return obj


hpas = st.builds(
    _hpa, metric_lists, behaviors, statuses, annotations, st.none() | st.integers(1, 5), st.integers(1, 20)
)


@settings(max_examples=200, deadline=None)
@given(hpas)
def test_v2_to_v1_to_v2_is_the_identity(obj: dict[str, Any]) -> None:
    view = v2_to_v1(obj)
    assert view["apiVersion"] == "autoscaling/v1"
    assert set(view["spec"]) <= {"scaleTargetRef", "minReplicas", "maxReplicas", "targetCPUUtilizationPercentage"}
    assert v1_to_v2(view) == obj


@settings(max_examples=50, deadline=None)
@given(hpas)
def test_v1_view_is_stable(obj: dict[str, Any]) -> None:
    """A v1 client that writes back what it read changes nothing, however often it does."""
    view = v2_to_v1(obj)
    assert v2_to_v1(v1_to_v2(view)) == view
