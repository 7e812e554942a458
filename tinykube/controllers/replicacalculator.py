"""How many replicas a resource metric asks for: upstream's ReplicaCalculator (pkg/controller/podautoscaler/
replica_calculator.go) over the PodMetrics of `metrics.k8s.io`, without I/O.

The pods are grouped first: deleted and failed pods are ignored; pending pods, and for CPU pods not yet ready (or
whose sample predates their readiness), are unready; pods without a sample are missing. The ratio of the ready pods'
usage to the target decides; a ratio within the tolerance of 1 keeps the replicas. Missing and unready pods then
count conservatively — as using their whole request when scaling down, as idle when scaling up — and a change that
this flips or undoes keeps the current count too.

Values are in milli-units (a CPU core is 1000, a byte of memory 1000), as upstream's `MilliValue`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tinykube.api.meta import parse_time
from tinykube.api.quantity import QuantityError, parse_quantity

Object = dict[str, Any]


class MetricError(Exception):
    """The metric cannot give a replica count (the message is upstream's)."""


@dataclass(frozen=True, slots=True)
class PodMetric:
    value: int  # milli-units
    timestamp: datetime | None = None
    window: float = 0.0  # seconds


@dataclass(frozen=True, slots=True)
class Timing:
    tolerance: float = 0.1
    cpu_initialization_period: float = 300.0
    initial_readiness_delay: float = 30.0


def milli(raw: Any) -> int:
    """A quantity's MilliValue (rounded up, as upstream's)."""
    return math.ceil(parse_quantity(raw).value * 1000)


def pod_metrics(items: list[Object], resource: str, container: str = "") -> dict[str, PodMetric]:
    """A PodMetricsList's samples per pod: the sum over its containers, or the one named `container` (upstream's
    getPodMetrics and getContainerMetrics). A pod missing the resource in any container has no sample."""
    found: dict[str, PodMetric] = {}
    for item in items:
        meta = item.get("metadata") or {}
        containers = item.get("containers") or []
        stamp = parse_time(item.get("timestamp"))
        window = _seconds(item.get("window"))
        if container:
            match = next((c for c in containers if c.get("name") == container), None)
            if match is None:
                raise MetricError(
                    f"container {container} not present in metrics for pod {meta.get('namespace')}/{meta.get('name')}"
                )
            usage = (match.get("usage") or {}).get(resource)
            if usage is not None:
                found[meta["name"]] = PodMetric(milli(usage), stamp, window)
            continue
        usages = [(c.get("usage") or {}).get(resource) for c in containers]
        if usages and None not in usages:
            found[meta["name"]] = PodMetric(sum(milli(u) for u in usages), stamp, window)
    return found


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(text: Any) -> float:
    """A Go duration as metrics-server writes its window ("15.012s", "500ms", "1m0s"); 0 if it is not one."""
    parts = _DURATION_PART.findall(text) if isinstance(text, str) else []
    if not parts or "".join(n + u for n, u in parts) != text:
        return 0.0
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _condition(pod: Object, kind: str) -> Object | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def group_pods(
    pods: list[Object], metrics: dict[str, PodMetric], resource: str, timing: Timing, now: datetime
) -> tuple[int, set[str], set[str], set[str]]:
    """(ready count, unready, missing, ignored) as upstream's groupPods."""
    ready, unready, missing, ignored = 0, set(), set(), set()
    for pod in pods:
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = _condition(pod, "Ready")
            started = parse_time((pod.get("status") or {}).get("startTime"))
            changed = parse_time((condition or {}).get("lastTransitionTime"))
            if condition is None or started is None or changed is None:
                is_unready = True
            elif (now - started).total_seconds() < timing.cpu_initialization_period:
                # still starting: skip the sample if unready, or if it was taken before a window of readiness
                sampled = metric.timestamp or now
                is_unready = condition.get("status") == "False" or (sampled - changed).total_seconds() < metric.window
            else:  # skip it only if the pod has never been ready
                never_ready = (changed - started).total_seconds() < timing.initial_readiness_delay
                is_unready = condition.get("status") == "False" and never_ready
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def pod_requests(pods: list[Object], resource: str, container: str = "") -> dict[str, int]:
    """Each pod's request of `resource` (of `container` only, if given), sidecars included; MetricError for a
    container without one."""
    found = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        total = 0
        for c in [*(spec.get("containers") or []), *sidecars]:
            if container and c.get("name") != container:
                continue
            request = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if request is None:
                raise MetricError(
                    f"missing request for {resource} in container {c.get('name')} of Pod {pod['metadata']['name']}"
                )
            try:
                total += milli(request)
            except QuantityError:
                raise MetricError(f"invalid request for {resource} in container {c.get('name')}") from None
        found[pod["metadata"]["name"]] = total
    return found


def utilization_ratio(metrics: dict[str, PodMetric], requests: dict[str, int], target: int) -> tuple[float, int, int]:
    """(usage ratio, utilization %, average raw usage) over the pods that have both (GetResourceUtilizationRatio)."""
    used = [(metric.value, requests[name]) for name, metric in metrics.items() if name in requests]
    requested = sum(request for _, request in used)
    if requested == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = sum(value for value, _ in used) * 100 // requested
    return utilization / target, utilization, sum(value for value, _ in used) // len(used)


def _usage_ratio(metrics: dict[str, PodMetric], target: int) -> tuple[float, int]:
    average = sum(m.value for m in metrics.values()) // len(metrics)
    return average / target, average


def _usable(
    pods: list[Object], metrics: dict[str, PodMetric], resource: str, timing: Timing, now: datetime
) -> tuple[int, set[str], set[str]]:
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, timing, now)
    for name in ignored | unready:
        metrics.pop(name, None)
    if not metrics:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    return ready, unready, missing


def _decide(
    current: int, ratio: float, new_ratio: float, counted: int, ready: int, direct: bool, tolerance: float
) -> int:
    """The shared ending: `direct` when nothing was missing or held back (the ready pods decide alone)."""
    if direct:
        return current if abs(1.0 - ratio) <= tolerance else math.ceil(ratio * ready)
    if abs(1.0 - new_ratio) <= tolerance or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    proposed = math.ceil(new_ratio * counted)
    if (new_ratio < 1.0 and proposed > current) or (new_ratio > 1.0 and proposed < current):
        return current
    return proposed


def utilization_replicas(
    current: int,
    target_utilization: int,
    resource: str,
    pods: list[Object],
    metrics: dict[str, PodMetric],
    timing: Timing,
    now: datetime,
    container: str = "",
) -> tuple[int, int, int]:
    """(replicas, utilization %, average raw usage) for an `averageUtilization` target (GetResourceReplicas)."""
    metrics = dict(metrics)
    ready, unready, missing = _usable(pods, metrics, resource, timing, now)
    requests = pod_requests(pods, resource, container)
    ratio, utilization, raw = utilization_ratio(metrics, requests, target_utilization)
    with_unready = bool(unready) and ratio > 1.0
    if with_unready or missing:
        for name in missing:  # scaling down: as using their request (or the target, above 100 %); up: idle
            if ratio < 1.0:
                metrics[name] = PodMetric(requests.get(name, 0) * max(100, target_utilization) // 100)
            elif ratio > 1.0:
                metrics[name] = PodMetric(0)
        if with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio = utilization_ratio(metrics, requests, target_utilization)[0]
    else:
        new_ratio = ratio
    direct = not with_unready and not missing
    replicas = _decide(current, ratio, new_ratio, len(metrics), ready, direct, timing.tolerance)
    return replicas, utilization, raw


def average_value_replicas(
    current: int,
    target_average: int,
    resource: str,
    pods: list[Object],
    metrics: dict[str, PodMetric],
    timing: Timing,
    now: datetime,
) -> tuple[int, int]:
    """(replicas, average usage) for an `averageValue` target (GetRawResourceReplicas: calcPlainMetricReplicas)."""
    metrics = dict(metrics)
    ready, unready, missing = _usable(pods, metrics, resource, timing, now)
    ratio, usage = _usage_ratio(metrics, target_average)
    with_unready = bool(unready) and ratio > 1.0
    if with_unready or missing:
        for name in missing:
            metrics[name] = PodMetric(target_average if ratio < 1.0 else 0)
        if with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio = _usage_ratio(metrics, target_average)[0]
    else:
        new_ratio = ratio
    direct = not with_unready and not missing
    return _decide(current, ratio, new_ratio, len(metrics), ready, direct, timing.tolerance), usage
