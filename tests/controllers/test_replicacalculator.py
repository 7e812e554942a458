"""The HPA's replica calculation and its stabilization and rate limits, as pure functions, on upstream's cases
(pkg/controller/podautoscaler/replica_calculator_test.go and horizontal_test.go) and the documented algorithm."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tinykube.controllers import scalinglimits as limits
from tinykube.controllers.replicacalculator import (
    MetricError,
    PodMetric,
    Timing,
    average_value_replicas,
    pod_metrics,
    utilization_replicas,
)

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=1)  # past the CPU initialization period: only never-ready pods are held back


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, cpu: str = "1", *, ready: bool = True, phase: str = "Running", started: datetime = LONG_AGO,
        ready_since: datetime | None = None, deleted: bool = False) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if deleted:
        meta["deletionTimestamp"] = stamp(NOW)
    condition = {"type": "Ready", "status": "True" if ready else "False",
                 "lastTransitionTime": stamp(ready_since or started + timedelta(seconds=5))}  # fmt: skip
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": phase, "startTime": stamp(started), "conditions": [condition]},
    }


def samples(**milli: int) -> dict[str, PodMetric]:
    return {name: PodMetric(value, NOW - timedelta(seconds=1), 15.0) for name, value in milli.items()}


def replicas(pods: list[dict[str, Any]], metrics: dict[str, PodMetric], target: int, current: int) -> tuple[int, int]:
    found, utilization, _raw = utilization_replicas(current, target, "cpu", pods, metrics, Timing(), NOW)
    return found, utilization


def test_scale_up() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    assert replicas(pods, samples(a=300, b=500, c=700), 30, 3) == (5, 50)


def test_scale_down() -> None:
    pods = [pod(n) for n in "abcde"]
    assert replicas(pods, samples(a=100, b=300, c=500, d=250, e=250), 50, 5) == (3, 28)


def test_within_tolerance_nothing_changes() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    assert replicas(pods, samples(a=1050, b=1050, c=1050), 100, 3) == (3, 105)


def test_an_unready_pod_counts_as_idle_when_scaling_up() -> None:
    pods = [pod("a", ready=False), pod("b"), pod("c")]
    assert replicas(pods, samples(a=300, b=500, c=700), 30, 3) == (4, 60)


def test_failed_and_deleted_pods_are_ignored() -> None:
    pods = [pod("a"), pod("b"), pod("c", phase="Failed"), pod("d", deleted=True)]
    assert replicas(pods, samples(a=500, b=700, c=100, d=300), 30, 4) == (4, 60)


def test_missing_pods_use_their_request_when_scaling_down() -> None:
    pods = [pod(n) for n in "abcd"]
    # the three sampled pods ask for 2 (10 %/50 %), but the missing one counts as 100 %: 130/400 => 3
    assert replicas(pods, samples(a=100, b=100, c=100), 50, 4) == (3, 10)


def test_a_pending_pod_neither_scales_up_nor_down_alone() -> None:
    pods = [pod("a"), pod("b", phase="Pending")]
    assert replicas(pods, samples(a=600), 50, 2) == (2, 60)  # 600/(1000+1000) once b counts as idle: in tolerance


def test_a_sample_taken_before_a_window_of_readiness_is_skipped() -> None:
    young = pod("a", started=NOW - timedelta(seconds=20), ready_since=NOW - timedelta(seconds=5))
    pods = [young, pod("b")]
    # a's sample (taken within a window of its readiness) is skipped and a counts as idle: 1500/2000 = 75 %
    assert replicas(pods, samples(a=5000, b=1500), 50, 2) == (3, 150)


def test_a_missing_request_is_an_error_with_upstreams_message() -> None:
    bare = pod("a")
    bare["spec"]["containers"][0]["resources"] = {}
    with pytest.raises(MetricError, match=r"^missing request for cpu in container c of Pod a$"):
        replicas([bare], samples(a=100), 50, 1)


def test_no_pods_and_no_usable_samples_are_errors() -> None:
    with pytest.raises(MetricError, match="no pods returned by selector while calculating replica count"):
        replicas([], samples(a=1), 50, 1)
    with pytest.raises(MetricError, match=r"did not receive metrics for targeted pods \(pods might be unready\)"):
        replicas([pod("a", phase="Pending")], samples(a=1), 50, 1)


def test_an_average_value_target() -> None:
    pods = [pod("a"), pod("b")]
    found = average_value_replicas(2, 200, "cpu", pods, samples(a=500, b=300), Timing(), NOW)
    assert found == (4, 400)


def test_pod_metrics_sum_containers_or_pick_one() -> None:
    containers = [{"name": "c", "usage": {"cpu": "250m"}}, {"name": "s", "usage": {"cpu": "1500000n"}}]
    items = [{"metadata": {"name": "a", "namespace": "ns"}, "timestamp": stamp(NOW), "window": "15.012s",
              "containers": containers}]  # fmt: skip
    assert pod_metrics(items, "cpu") == {"a": PodMetric(252, NOW, 15.012)}
    assert pod_metrics(items, "cpu", "s")["a"].value == 2  # MilliValue rounds up
    with pytest.raises(MetricError, match=r"^container x not present in metrics for pod ns/a$"):
        pod_metrics(items, "cpu", "x")


# ---- stabilization and rate limits ------------------------------------------------------------------------------


def test_without_behavior_a_scale_up_at_most_doubles_or_reaches_four() -> None:
    history = limits.History()
    history.start(1)
    outcome = limits.normalize_legacy(history, 1, 10, 1, 10, 300)
    assert outcome == limits.Outcome(4, limits.READY, True, limits.UP_LIMIT)
    assert limits.normalize_legacy(limits.History(), 5, 20, 1, 8, 300).limit == limits.TOO_MANY


def test_without_behavior_a_scale_down_waits_out_the_window() -> None:
    history = limits.History()
    history.start(5)
    held = limits.normalize_legacy(history, 5, 2, 1, 10, 300)
    assert (held.replicas, held.stabilized) == (5, limits.SCALE_DOWN_STABILIZED)
    assert limits.normalize_legacy(history, 5, 2, 1, 10, 0).replicas == 2  # a window of zero: at once


def behavior(up: dict[str, Any] | None = None, down: dict[str, Any] | None = None) -> dict[str, Any]:
    default_up = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                  "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                               {"type": "Percent", "value": 100, "periodSeconds": 15}]}  # fmt: skip
    default_down = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}  # fmt: skip
    return {"scaleUp": {**default_up, **(up or {})}, "scaleDown": {**default_down, **(down or {})}}


def test_policies_limit_the_change_per_period() -> None:
    one_pod = behavior(up={"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]})
    history = limits.History()
    first = limits.normalize(history, one_pod, 2, 6, 1, 10, 300)
    assert (first.replicas, first.limit) == (3, limits.UP_LIMIT)
    history.scaled(one_pod, 2, 3)
    again = limits.normalize(history, one_pod, 3, 6, 1, 10, 300)
    assert again.replicas == 3  # the period's one pod is spent


def test_select_policy_min_and_disabled() -> None:
    rules = {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]}  # fmt: skip
    assert limits.normalize(limits.History(), behavior(up=rules), 10, 40, 1, 100, 300).replicas == 14
    disabled = behavior(down={"selectPolicy": "Disabled"})
    assert limits.normalize(limits.History(), disabled, 10, 2, 1, 100, 300).replicas == 10


def test_a_scale_up_window_holds_the_lowest_recent_recommendation() -> None:
    slow = behavior(up={"stabilizationWindowSeconds": 60})
    history = limits.History()
    history.recommendations.append((3, time.monotonic()))
    outcome = limits.normalize(history, slow, 3, 8, 1, 10, 300)
    assert (outcome.replicas, outcome.stabilized) == (3, limits.SCALE_UP_STABILIZED)


def test_a_scale_down_window_left_unset_is_the_controllers() -> None:
    history = limits.History()
    history.start(6)
    unset = behavior()
    del unset["scaleDown"]["stabilizationWindowSeconds"]
    assert limits.normalize(history, unset, 6, 2, 1, 10, 300).replicas == 6
    assert limits.normalize(history, unset, 6, 2, 1, 10, 0).replicas == 2
