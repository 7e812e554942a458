"""The scheduler's default profile (issue 38, defect 19): NodeResourcesFit and NodePorts against what the bound
pods take, upstream's FitError messages, DefaultPreemption, and the node agent keeping extended resources."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.api.noderesources import (
    Footprint,
    NodeTotals,
    NodeUsage,
    allocatable,
    compared,
    fit_reasons,
    port_conflict,
    scalar_resource,
)
from tinykube.api.podresources import pod_requests
from tinykube.controllers.preemption import Candidate, pick_candidate, select_victims
from tinykube.controllers.scheduler import (
    NodeView,
    backoff,
    feasible_nodes_to_find,
    fit_error,
    node_changed,
    plain,
    spec_changed,
    why_not,
)
from tinykube.node.agent import node_resources, status_patch

cluster = controllers_cluster("--nodes", "2")

Object = dict[str, Any]
FOO = "scheduling.k8s.io/foo"
STATUS_MERGE = {"Content-Type": "application/strategic-merge-patch+json"}
MERGE = {"Content-Type": "application/merge-patch+json"}


# ---- pure parts ---------------------------------------------------------------------------------------------


def container(name: str = "c", **requests: str) -> Object:
    return {"name": name, "image": "pause", "resources": {"requests": requests}}


def footprint(key: str = "d/p", priority: int = 0, started: str = "", **requests: int) -> Footprint:
    return Footprint(key, "n", requests, (), priority, started)


def test_effective_requests_take_the_larger_of_app_containers_and_an_init_container_plus_overhead() -> None:
    spec = {
        "containers": [container("a", cpu="500m", memory="1Gi"), container("b", cpu="250m")],
        "initContainers": [container("init", cpu="1", memory="512Mi")],
        "overhead": {"cpu": "100m"},
    }
    assert compared(pod_requests(spec)) == {"cpu": 1100, "memory": 2**30}


def test_scalar_resources_are_extended_hugepages_and_prefixed_native_names() -> None:
    assert scalar_resource(FOO) and scalar_resource("hugepages-2Mi") and scalar_resource("example.com/gpu")
    assert scalar_resource("kubernetes.io/batteries")
    assert not scalar_resource("cpu") and not scalar_resource("storage") and not scalar_resource("requests.a/b")
    node = {"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", FOO: "3", "storage": "1"}}}
    assert allocatable(node) == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110, FOO: 3}


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        pytest.param([("127.0.0.1", "TCP", 80)], ("10.0.0.1", "TCP", 80), False, id="other-ip"),
        pytest.param([("127.0.0.1", "TCP", 80)], ("127.0.0.1", "UDP", 80), False, id="other-protocol"),
        pytest.param([("127.0.0.1", "TCP", 80)], ("127.0.0.1", "TCP", 80), True, id="same"),
        pytest.param([("0.0.0.0", "TCP", 80)], ("10.0.0.1", "TCP", 80), True, id="all-addresses-taken"),
        pytest.param([("10.0.0.1", "TCP", 80)], ("0.0.0.0", "TCP", 80), True, id="all-addresses-wanted"),
        pytest.param([("10.0.0.1", "TCP", 81)], ("0.0.0.0", "TCP", 80), False, id="other-port"),
    ],
)
def test_host_port_conflicts_as_upstream_checks_them(
    used: list[tuple[str, str, int]], wanted: tuple[str, str, int], conflict: bool
) -> None:
    assert port_conflict([wanted], {port: 1 for port in used}) is conflict


def test_fit_reasons_name_each_resource_short_and_the_pod_count() -> None:
    alloc = {"cpu": 4000, "memory": 1000, "pods": 2, FOO: 1}
    totals = NodeTotals()
    totals.add(footprint("d/a", cpu=3000, **{FOO: 1}))
    assert fit_reasons(footprint(cpu=1000), alloc, totals) == []
    assert fit_reasons(footprint(cpu=1001, memory=1001, **{FOO: 1}), alloc, totals) == [
        "Insufficient cpu",
        "Insufficient memory",
        f"Insufficient {FOO}",
    ]
    totals.add(footprint("d/b"))
    assert fit_reasons(footprint(), alloc, totals) == ["Too many pods"]
    assert fit_reasons(footprint(), {}, NodeTotals()) == ["Too many pods"]  # no allocatable pods: none fit


def test_node_usage_follows_each_pods_latest_footprint() -> None:
    usage = NodeUsage()
    usage.set(Footprint("d/a", "n1", {"cpu": 100}))
    usage.set(Footprint("d/b", "n1", {"cpu": 50}))
    usage.set(Footprint("d/a", "n2", {"cpu": 300}))  # the same pod seen again (here: elsewhere)
    assert usage.on("n1").requested["cpu"] == 50 and list(usage.on("n1").pods) == ["d/b"]
    assert usage.on("n2").requested["cpu"] == 300
    usage.clear("d/b")
    assert not usage.on("n1").pods and usage.on("n1").requested["cpu"] == 0


def test_victims_are_the_fewest_least_important_pods() -> None:
    """The ReplicaSets preemption spec: 200 + 300 + 450 of 1000 taken, a pod of 500 evicts the 200 and the 300."""
    alloc = {"pods": 110, FOO: 1000}
    totals = NodeTotals()
    for key, prio, amount in (("d/p1", 1, 200), ("d/p2", 2, 300), ("d/p3", 3, 450)):
        totals.add(footprint(key, prio, **{FOO: amount}))
    preemptor = footprint("d/p4", 4, **{FOO: 500})
    victims, reasons = select_victims(preemptor, totals, lambda t: fit_reasons(preemptor, alloc, t))
    assert [v.key for v in victims] == ["d/p2", "d/p1"] and reasons == []
    too_big = footprint("d/huge", 4, **{FOO: 2000})
    assert select_victims(too_big, totals, lambda t: fit_reasons(too_big, alloc, t)) == ([], [f"Insufficient {FOO}"])
    low = footprint("d/low", 1, **{FOO: 500})
    assert select_victims(low, totals, lambda t: fit_reasons(low, alloc, t)) == (
        [],
        ["No preemption victims found for incoming pod"],
    )


def test_the_candidate_with_the_least_important_victims_wins() -> None:
    low, medium = footprint("d/low", 1), footprint("d/medium", 100)
    candidates = [Candidate("node-1", (medium,)), Candidate("node-2", (low,))]
    assert pick_candidate(candidates) == candidates[1]
    two = Candidate("node-3", (footprint("d/a", 1), footprint("d/b", 1)))
    assert pick_candidate([two, Candidate("node-4", (footprint("d/c", 1),))]).node == "node-4"  # type: ignore[union-attr]
    assert pick_candidate([]) is None


LABELS = st.dictionaries(st.sampled_from(["zone", "disk"]), st.sampled_from(["a", "b"]), max_size=2)
TAINTS = st.lists(
    st.fixed_dictionaries(
        {"key": st.sampled_from(["dedicated", "gpu"]), "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule"])}
    ),
    max_size=2,
)
AFFINITY = st.one_of(
    st.none(),
    st.builds(
        lambda key, values: {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": values}]}]
                }
            }
        },
        st.sampled_from(["zone", "disk"]),
        st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2),
    ),
)


@given(
    selector=LABELS,
    affinity=AFFINITY,
    cpu=st.sampled_from(["", "0", "100m", "64"]),
    host_port=st.sampled_from([0, 8080]),
    labels=LABELS,
    taints=TAINTS,
    unschedulable=st.booleans(),
    ready=st.booleans(),
    max_pods=st.integers(0, 3),
    bound=st.integers(0, 3),
    plain_pod=st.booleans(),
    open_node=st.booleans(),
)
def test_the_plain_pod_shortcut_admits_exactly_where_every_filter_passes(
    selector: dict[str, str],
    affinity: Object | None,
    cpu: str,
    host_port: int,
    labels: dict[str, str],
    taints: list[Object],
    unschedulable: bool,
    ready: bool,
    max_pods: int,
    bound: int,
    plain_pod: bool,
    open_node: bool,
) -> None:
    if plain_pod:  # half the pods made plain and half the nodes open, so that the shortcut is held often
        selector, affinity, cpu, host_port = {}, None, "", 0
    if open_node:
        taints, unschedulable, ready = [], False, True
    one = container(**({"cpu": cpu} if cpu else {}))
    if host_port:
        one["ports"] = [{"containerPort": 80, "hostPort": host_port, "protocol": "TCP"}]
    spec: Object = {"containers": [one], "nodeSelector": selector}
    if affinity:
        spec["affinity"] = affinity
    pod: Object = {"metadata": {"name": "p", "namespace": "d"}, "spec": spec}
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    node: Object = {
        "metadata": {"name": "n", "labels": labels},
        "spec": {"taints": taints, "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": str(max_pods)}, "conditions": conditions},
    }
    want = Footprint.of(pod, "d/p", "")
    totals = NodeTotals()
    for i in range(bound):
        totals.add(Footprint(f"d/q{i}", "n", {}, ((8080, "TCP", "0.0.0.0"),)))
    view = NodeView.of(node)
    if plain(pod, want, []) and view.open:
        room = len(totals.pods) < view.allocatable.get("pods", 0)
        assert room == (why_not(pod, node, view) is None and fit_reasons(want, view.allocatable, totals) == [])
    assert not plain_pod or plain(pod, want, [])


def test_fit_error_messages_count_sorted_reasons() -> None:
    reasons = {"a": ["Insufficient cpu"], "b": ["Insufficient cpu", "Insufficient memory"]}
    assert fit_error(2, reasons) == "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."
    assert fit_error(3, {}, absent="Preemption is not helpful for scheduling") == (
        "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_unschedulable_pods_back_off_from_one_to_ten_seconds() -> None:
    assert [backoff(n) for n in (1, 2, 3, 4, 5, 9)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_heartbeats_and_status_writes_retry_nothing() -> None:
    node = {"metadata": {"labels": {"a": "b"}}, "spec": {}, "status": {"conditions": [], "allocatable": {"cpu": "4"}}}
    beat = {**node, "status": {**node["status"], "conditions": [{"type": "Ready", "status": "False"}]}}
    assert not node_changed(node, beat)
    assert node_changed(node, {**node, "status": {"allocatable": {"cpu": "4", FOO: "1"}}})
    assert node_changed(node, {**node, "spec": {"unschedulable": True}})
    pod = {"metadata": {"labels": {}}, "spec": {"containers": []}, "status": {}}
    assert not spec_changed(pod, {**pod, "status": {"conditions": [{"type": "PodScheduled"}]}})
    assert spec_changed(pod, {**pod, "spec": {"containers": [], "tolerations": [{"operator": "Exists"}]}})


def test_the_node_agent_keeps_extended_resources_and_copies_them_to_allocatable() -> None:
    capacity, alloc = node_resources({"capacity": {"cpu": "4", FOO: "3"}, "allocatable": {"cpu": "4"}})
    assert capacity[FOO] == "3" and alloc[FOO] == "3" and alloc["cpu"] == "4"
    found = {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4", FOO: "3"}}  # removed from capacity
    status = {"allocatable": node_resources(found)[1], "capacity": node_resources(found)[0]}
    patch = status_patch(found, status)
    assert patch["allocatable"][FOO] is None and FOO not in patch["capacity"]


# ---- on a cluster -------------------------------------------------------------------------------------------


def pod_body(name: str, *, requests: dict[str, str] | None = None, **spec: Any) -> Object:
    resources = {"requests": requests, "limits": requests} if requests else {}
    containers = [{"name": "c", "image": "pause", "resources": resources}]
    return {"metadata": {"name": name}, "spec": {"containers": containers, **spec}}


def create(client: httpx.Client, ns: str, body: Object) -> Object:
    response = client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert response.status_code == 201, response.text
    found: Object = response.json()
    return found


def get_pod(client: httpx.Client, ns: str, name: str) -> Object | None:
    response = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return response.json() if response.status_code == 200 else None


def scheduled_condition(client: httpx.Client, ns: str, name: str) -> Object | None:
    pod = get_pod(client, ns, name) or {}
    found = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
    return found[0] if found and found[0].get("status") == "False" else None


def events_of(client: httpx.Client, ns: str, name: str, reason: str) -> list[Object]:
    selector = f"involvedObject.name={name},reason={reason}"
    items: list[Object] = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": selector}).json()[
        "items"
    ]
    return items


def bound_to(client: httpx.Client, ns: str, name: str) -> str | None:
    pod = get_pod(client, ns, name) or {}
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


@pytest.fixture
def foo_on_node_1(client: httpx.Client) -> Iterator[None]:
    """node-1 advertises one `scheduling.k8s.io/foo` in its capacity only: its agent copies it to allocatable."""
    body = {"status": {"capacity": {FOO: "1"}}}
    assert client.patch("/api/v1/nodes/node-1/status", json=body, headers=STATUS_MERGE).status_code == 200
    eventually(
        lambda: client.get("/api/v1/nodes/node-1").json()["status"]["allocatable"].get(FOO) == "1",
        what="the agent to copy the extended resource to allocatable",
    )
    yield
    removed = {"status": {"capacity": {FOO: None}, "allocatable": {FOO: None}}}
    assert client.patch("/api/v1/nodes/node-1/status", json=removed, headers=STATUS_MERGE).status_code == 200


@pytest.fixture
def priority_classes(client: httpx.Client) -> Iterator[dict[str, str]]:
    token = secrets.token_hex(3)
    names = {"low": f"low-{token}", "high": f"high-{token}", "never": f"never-{token}"}
    bodies = [
        {"metadata": {"name": names["low"]}, "value": 1},
        {"metadata": {"name": names["high"]}, "value": 1000},
        {"metadata": {"name": names["never"]}, "value": 1000, "preemptionPolicy": "Never"},
    ]
    for body in bodies:
        response = client.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=body)
        assert response.status_code == 201, response.text
    yield names
    for name in names.values():
        client.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_a_pod_requesting_more_cpu_than_any_node_has_stays_pending_with_upstreams_message(
    client: httpx.Client, ns: str
) -> None:
    create(client, ns, pod_body("big", requests={"cpu": "100"}))
    expected = (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    condition = eventually(lambda: scheduled_condition(client, ns, "big"), what="PodScheduled False")
    assert condition["reason"] == "Unschedulable" and condition["message"] == expected
    event = eventually(lambda: events_of(client, ns, "big", "FailedScheduling"), what="a FailedScheduling event")[0]
    assert event["type"] == "Warning" and event["message"] == expected
    assert event["source"]["component"] == "default-scheduler"
    assert bound_to(client, ns, "big") is None


def test_two_pods_of_one_extended_resource_on_a_node_of_one_leave_one_pending_until_the_other_goes(
    client: httpx.Client, ns: str, foo_on_node_1: None
) -> None:
    create(client, ns, pod_body("first", requests={FOO: "1"}))
    assert eventually(lambda: bound_to(client, ns, "first"), what="first bound") == "node-1"
    create(client, ns, pod_body("second", requests={FOO: "1"}))
    condition = eventually(lambda: scheduled_condition(client, ns, "second"), what="second unschedulable")
    assert condition["message"] == (
        f"0/2 nodes are available: 2 Insufficient {FOO}. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    assert client.delete(f"/api/v1/namespaces/{ns}/pods/first").status_code == 200
    # tried again because a pod went, not by a timer (the leftover flush is minutes away)
    assert eventually(lambda: bound_to(client, ns, "second"), what="second bound once first is gone") == "node-1"


def test_a_high_priority_pod_preempts_a_low_priority_one(
    client: httpx.Client, ns: str, foo_on_node_1: None, priority_classes: dict[str, str]
) -> None:
    finalizer = "tinykube.test/hold"
    victim = pod_body("victim", requests={FOO: "1"}, priorityClassName=priority_classes["low"])
    victim["metadata"]["finalizers"] = [finalizer]
    create(client, ns, victim)
    assert eventually(lambda: bound_to(client, ns, "victim"), what="victim bound") == "node-1"
    preemptor = create(
        client, ns, pod_body("preemptor", requests={FOO: "1"}, priorityClassName=priority_classes["high"])
    )

    def marked() -> Object | None:
        pod = get_pod(client, ns, "victim") or {}
        found = [c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == "DisruptionTarget"]
        return found[0] if found and pod["metadata"].get("deletionTimestamp") else None

    condition = eventually(marked, what="the victim being deleted with a DisruptionTarget condition")
    assert condition["reason"] == "PreemptionByScheduler" and condition["status"] == "True"
    assert condition["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
    event = eventually(lambda: events_of(client, ns, "victim", "Preempted"), what="a Preempted event")[0]
    assert event["message"] == f"Preempted by pod {preemptor['metadata']['uid']} on node node-1"
    nominated = eventually(
        lambda: (get_pod(client, ns, "preemptor") or {}).get("status", {}).get("nominatedNodeName"),
        what="the preemptor nominated",
    )
    assert nominated == "node-1" and bound_to(client, ns, "preemptor") is None  # the victim still holds its place
    patch = {"metadata": {"finalizers": None}}
    assert client.patch(f"/api/v1/namespaces/{ns}/pods/victim", json=patch, headers=MERGE).status_code == 200
    assert eventually(lambda: bound_to(client, ns, "preemptor"), what="the preemptor bound") == "node-1"


def test_a_pod_that_may_not_preempt_waits(
    client: httpx.Client, ns: str, foo_on_node_1: None, priority_classes: dict[str, str]
) -> None:
    create(client, ns, pod_body("holder", requests={FOO: "1"}, priorityClassName=priority_classes["low"]))
    assert eventually(lambda: bound_to(client, ns, "holder"), what="holder bound") == "node-1"
    create(client, ns, pod_body("polite", requests={FOO: "1"}, priorityClassName=priority_classes["never"]))
    condition = eventually(lambda: scheduled_condition(client, ns, "polite"), what="polite unschedulable")
    assert condition["message"] == (
        f"0/2 nodes are available: 2 Insufficient {FOO}. preemption: not eligible due to preemptionPolicy=Never."
    )
    holder = get_pod(client, ns, "holder") or {}
    assert not holder["metadata"].get("deletionTimestamp")


def test_pods_with_the_same_host_port_share_a_node_only_on_other_addresses_or_protocols(
    client: httpx.Client, ns: str
) -> None:
    def with_port(name: str, host_ip: str, protocol: str = "TCP") -> Object:
        body = pod_body(name, nodeSelector={"kubernetes.io/hostname": "node-1"})
        port: Object = {"containerPort": 8080, "hostPort": 54321, "protocol": protocol}
        if host_ip:
            port["hostIP"] = host_ip
        body["spec"]["containers"][0]["ports"] = [port]
        return body

    create(client, ns, with_port("local", "127.0.0.1"))
    create(client, ns, with_port("node-ip", "172.20.0.2"))
    create(client, ns, with_port("udp", "172.20.0.2", "UDP"))
    for name in ("local", "node-ip", "udp"):
        assert eventually(lambda name=name: bound_to(client, ns, name), what=f"{name} bound") == "node-1"
    create(client, ns, with_port("everywhere", ""))
    condition = eventually(lambda: scheduled_condition(client, ns, "everywhere"), what="a port conflict")
    assert condition["message"] == (
        "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("nodes", "feasible"),
    [(1, 1), (99, 99), (100, 100), (250, 120), (1000, 420), (5000, 500), (6000, 300), (100_000, 5000)],
)
def test_a_big_cluster_is_searched_until_upstreams_share_of_its_nodes_fits(nodes: int, feasible: int) -> None:
    """numFeasibleNodesToFind with the default percentageOfNodesToScore: 50 % less 1 % per 125 nodes, at least
    5 % and at least 100 nodes; a cluster under 100 nodes is searched whole."""
    assert feasible_nodes_to_find(nodes) == feasible
