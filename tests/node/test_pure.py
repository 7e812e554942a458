"""Pure parts of scheduling and the node agent: node filters and messages, CIDR and address allocation, pod status."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.controllers.nodeipam import CidrAllocator
from tinykube.controllers.scheduler import needs_scheduling, unschedulable_message, why_not
from tinykube.node.runtime import PodAddresses
from tinykube.node.status import ContainerState, PodState, pod_status


def node(name: str = "n", ready: bool = True, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": {"conditions": conditions}}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c"}], **spec}}


def test_filters() -> None:
    def reason(p: dict[str, Any], n: dict[str, Any]) -> str | None:
        return why_not(p, n)

    assert reason(pod(), node()) is None
    assert reason(pod(), node(ready=False)) == "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    assert reason(pod(), node(unschedulable=True)) == "node(s) were unschedulable"
    assert reason(pod(nodeSelector={"a": "b"}), node()) == "node(s) didn't match Pod's node affinity/selector"
    assert reason(pod(nodeSelector={"a": "b"}), node(labels={"a": "b"})) is None
    tainted = node(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    assert reason(pod(), tainted) == "node(s) had untolerated taint {k: v}"
    assert reason(pod(tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]), tainted) is None
    assert reason(pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]), tainted) is None
    assert reason(pod(tolerations=[{"operator": "Exists"}]), tainted) is None
    assert reason(pod(tolerations=[{"key": "k", "value": "w"}]), tainted) is not None
    assert reason(pod(), node(taints=[{"key": "k", "effect": "PreferNoSchedule"}])) is None
    # upstream's order: TaintToleration before NodeAffinity
    assert reason(pod(nodeSelector={"a": "b"}), tainted) == "node(s) had untolerated taint {k: v}"


def test_unschedulable_messages() -> None:
    assert unschedulable_message([], 0) == "no nodes available to schedule pods"
    reasons = [
        "node(s) were unschedulable",
        "node(s) didn't match Pod's node affinity/selector",
        "node(s) didn't match Pod's node affinity/selector",
        "Too many pods",
    ]
    assert unschedulable_message(reasons, 4) == (
        "0/4 nodes are available: 1 Too many pods, 1 node(s) were unschedulable, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )


def test_which_pods_need_scheduling() -> None:
    assert needs_scheduling(pod())
    assert not needs_scheduling(pod(nodeName="n"))
    assert not needs_scheduling(pod(schedulerName="other"))
    done = pod()
    done["status"] = {"phase": "Succeeded"}
    assert not needs_scheduling(done)


def test_cidr_allocator() -> None:
    cidrs = CidrAllocator("10.244.0.0/23")
    cidrs.occupy("10.244.0.0/24", "old")
    assert cidrs.allocate("a") == "10.244.1.0/24"
    assert cidrs.allocate("a") == "10.244.1.0/24"  # synced again before its patch is seen: the same one
    assert cidrs.allocate("b") is None
    cidrs.release("old")
    assert cidrs.allocate("b") == "10.244.0.0/24"
    with pytest.raises(ValueError, match="smaller than one node"):
        CidrAllocator("10.0.0.0/25")


def test_pod_addresses() -> None:
    addresses = PodAddresses("10.244.1.0/30")  # hosts .1 (the node's) and .2
    assert addresses.allocate("a") == "10.244.1.2"
    assert addresses.allocate("a") == "10.244.1.2"  # the same pod keeps its address
    with pytest.raises(RuntimeError, match="no free address"):
        addresses.allocate("b")
    addresses.release("a")
    assert addresses.allocate("b") == "10.244.1.2"


def state(*containers: ContainerState, phase: str = "Running") -> PodState:
    return PodState("10.244.0.2", "172.20.0.2", "2026-01-01T00:00:00Z", list(containers), phase)


def test_pod_status_ready_and_transitions_kept() -> None:
    running = ContainerState("c", image="busybox", running_since="2026-01-01T00:00:01Z", ready=True)
    first = pod_status(pod(), state(running), "T1")
    assert first["phase"] == "Running" and first["podIP"] == "10.244.0.2" and first["hostIPs"] == [{"ip": "172.20.0.2"}]
    assert {c["type"]: c["status"] for c in first["conditions"]} == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    again = pod_status({**pod(), "status": first}, state(running), "T2")
    assert again == first  # nothing changed: same transition times, nothing to write
    running.ready = False
    flipped = pod_status({**pod(), "status": first}, state(running), "T3")
    ready = next(c for c in flipped["conditions"] if c["type"] == "Ready")
    assert ready == {
        "type": "Ready",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": "T3",
        "reason": "ContainersNotReady",
        "message": "containers with unready status: [c]",
    }
    scheduled = next(c for c in flipped["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["lastTransitionTime"] == "T1"


def test_pod_status_keeps_conditions_of_others_and_waiting_containers() -> None:
    gated = pod(readinessGates=[{"conditionType": "x"}])
    gated["status"] = {"conditions": [{"type": "x", "status": "False"}]}
    waiting = ContainerState("c", waiting_reason="CrashLoopBackOff", waiting_message="back-off 10s", restart_count=3)
    status = pod_status(gated, state(waiting), "T")
    assert {"type": "x", "status": "False"} in status["conditions"]
    (container,) = status["containerStatuses"]
    assert container["state"] == {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}
    assert container["restartCount"] == 3 and not container["started"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "ContainersNotReady"
    running = ContainerState("c", running_since="S", ready=True)
    gated_ready = next(c for c in pod_status(gated, state(running), "T")["conditions"] if c["type"] == "Ready")
    assert gated_ready["reason"] == "ReadinessGatesNotReady"
    assert gated_ready["message"] == 'the status of pod readiness gate "x" is not "True", but False'


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in status["conditions"]}


@pytest.mark.parametrize(
    ("phase", "container", "sandbox", "ready"),
    [
        pytest.param(
            "Pending",
            ContainerState("c", waiting_reason="ImagePullBackOff"),
            "True",  # the sandbox is made before the image is pulled
            ("False", "ContainersNotReady", "containers with unready status: [c]"),
            id="pending",
        ),
        pytest.param(
            "Succeeded",
            ContainerState("c", terminated={"exitCode": 0, "reason": "Completed"}),
            "False",  # upstream removes an ended pod's sandbox
            ("False", "PodCompleted", ""),
            id="succeeded",
        ),
        pytest.param(
            "Failed",
            ContainerState("c", terminated={"exitCode": 1, "reason": "Error"}),
            "False",
            ("False", "PodFailed", ""),
            id="failed",
        ),
    ],
)
def test_conditions_of_pods_not_running(
    phase: str, container: ContainerState, sandbox: str, ready: tuple[str, str, str]
) -> None:
    found = conditions(pod_status(pod(), state(container, phase=phase), "T"))
    assert found["PodReadyToStartContainers"][0] == sandbox
    assert found["ContainersReady"] == found["Ready"] == ready


def test_every_unready_readiness_gate_is_named() -> None:
    gated = pod(readinessGates=[{"conditionType": "a"}, {"conditionType": "b"}, {"conditionType": "c"}])
    gated["status"] = {"conditions": [{"type": "b", "status": "False"}, {"type": "c", "status": "True"}]}
    running = ContainerState("c", running_since="S", ready=True)
    assert conditions(pod_status(gated, state(running), "T"))["Ready"] == (
        "False",
        "ReadinessGatesNotReady",
        'corresponding condition of pod readiness gate "a" does not exist., '
        'the status of pod readiness gate "b" is not "True", but False',
    )


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["allocate", "release", "occupy"]), st.integers(0, 9), st.integers(0, 7))))
def test_cidr_allocation_is_the_lowest_free_range_as_a_full_scan_finds_it(
    steps: list[tuple[str, int, int]],
) -> None:
    """The allocator (indexes, a resumed search) against the plain rule: every range in order, the first free."""
    cidrs = CidrAllocator("10.244.0.0/21")  # 8 ranges, 10 nodes: it runs out
    ranges = [f"10.244.{i}.0/24" for i in range(8)]
    held: dict[str, str] = {}
    for action, n, r in steps:
        node = f"n{n}"
        if action == "allocate":
            free = [c for c in ranges if c not in held.values()]
            expected = held.get(node) or (free[0] if free else None)
            assert cidrs.allocate(node) == expected
            if expected is not None:
                held[node] = expected
        elif action == "release":
            cidrs.release(node)
            held.pop(node, None)
        elif ranges[r] not in held.values():  # the informer shows a node holding a free range
            cidrs.occupy(ranges[r], node)
            held[node] = ranges[r]
