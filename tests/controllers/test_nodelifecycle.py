"""Node lifecycle (issue 20): the node lifecycle controller marks a node whose Lease and status went stale Unknown,
taints it, makes its pods not ready; the taint eviction controller deletes pods from nodes whose NoExecute taints
they do not tolerate (or no longer); the DefaultTolerationSeconds admission plugin gives every pod 300 s.

The cluster has no node agents: nodes are made through the API with a Lease, and a thread renews the Leases of the
nodes meant to stay alive (`renewer`), so a node goes silent simply by not being renewed. The grace period is 3 s.
Upstream's reasons, messages and event texts: pkg/controller/nodelifecycle, pkg/controller/tainteviction,
plugin/pkg/admission/defaulttolerationseconds.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, running_cluster
from tests.controllers.conftest import controllers_cluster
from tinykube.api.meta import micro_now, now
from tinykube.api.resources import builtin
from tinykube.apiserver.admission.defaulttolerations import DefaultTolerationSeconds
from tinykube.apiserver.registry.generic import Request
from tinykube.cli_flags import controller_settings, parser
from tinykube.controllers.nodelifecycle import (
    FULL,
    NORMAL,
    PARTIAL,
    Tainter,
    marked_unknown,
    no_schedule_changes,
    pod_status_not_ready,
    swapped,
    zone_key,
    zone_state,
)
from tinykube.controllers.tainteviction import eviction_deadline

Object = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
PODS = builtin("", "v1", "pods")
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
GRACE = "3s"
SLOW = 60.0  # a NoExecute taint waits for a monitor period (5 s) and its zone's rate (one node per 10 s)


def toleration(key: str, seconds: int | None = None, effect: str = "NoExecute") -> Object:
    found: Object = {"key": key, "operator": "Exists", "effect": effect}
    if seconds is not None:
        found["tolerationSeconds"] = seconds
    return found


DEFAULTS = [toleration(NOT_READY, 300), toleration(UNREACHABLE, 300)]


# ---- pure parts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(None, DEFAULTS, id="none"),
        pytest.param([toleration("k")], [toleration("k"), *DEFAULTS], id="others-kept-first"),
        pytest.param([toleration(NOT_READY, 10)], [toleration(NOT_READY, 10), DEFAULTS[1]], id="one-own"),
        pytest.param([toleration(UNREACHABLE)], [toleration(UNREACHABLE), DEFAULTS[0]], id="own-forever"),
        pytest.param([{"operator": "Exists"}], [{"operator": "Exists"}], id="tolerates-everything"),
        pytest.param(
            [{"operator": "Exists", "effect": "NoExecute"}],
            [{"operator": "Exists", "effect": "NoExecute"}],
            id="any-key",
        ),
        pytest.param(
            [toleration(NOT_READY, effect="NoSchedule")],
            [toleration(NOT_READY, effect="NoSchedule"), *DEFAULTS],
            id="other-effect",
        ),
    ],
)
def test_default_toleration_seconds(given: list[Object] | None, expected: list[Object]) -> None:
    spec: Object = {"containers": [{"name": "c", "image": "nginx"}]}
    if given is not None:
        spec["tolerations"] = given
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    asyncio.run(DefaultTolerationSeconds().admit(Request(PODS, "ns"), pod, None))
    assert pod["spec"]["tolerations"] == expected
    asyncio.run(DefaultTolerationSeconds().admit(Request(PODS, "ns", "p"), pod, pod))  # an update: nothing more
    assert pod["spec"]["tolerations"] == expected


def test_default_toleration_seconds_leave_subresources_alone() -> None:
    pod: Object = {"metadata": {"name": "p"}, "spec": {"tolerations": []}}
    asyncio.run(DefaultTolerationSeconds().admit(Request(PODS, "ns", "p", "status"), pod, pod))
    assert pod["spec"]["tolerations"] == []


def stamp(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_tolerations(*tolerations: Object) -> Object:
    return {"spec": {"tolerations": list(tolerations)}}


@pytest.mark.parametrize(
    ("pod", "taints", "expected"),
    [
        pytest.param(with_tolerations(), [{"key": "a", "effect": "NoExecute"}], 0.0, id="untolerated-now"),
        pytest.param(with_tolerations(toleration("a")), [{"key": "a", "effect": "NoExecute"}], None, id="forever"),
        pytest.param(
            with_tolerations({"key": "a", "operator": "Equal", "value": "x", "effect": "NoExecute"}),
            [{"key": "a", "value": "y", "effect": "NoExecute"}],
            0.0,
            id="other-value",
        ),
        pytest.param(
            with_tolerations(toleration("a", 30)),
            [{"key": "a", "effect": "NoExecute", "timeAdded": "2024-05-01T10:00:00Z"}],
            datetime(2024, 5, 1, 10, 0, 30, tzinfo=UTC).timestamp(),
            id="from-time-added",
        ),
        pytest.param(
            with_tolerations(toleration("a", 30)), [{"key": "a", "effect": "NoExecute"}], 1030.0, id="from-first-seen"
        ),
        pytest.param(
            with_tolerations(toleration("a", 30), toleration("b", 10), toleration("c")),
            [
                {"key": "a", "effect": "NoExecute", "timeAdded": "2024-05-01T10:00:00Z"},
                {"key": "b", "effect": "NoExecute", "timeAdded": "2024-05-01T10:00:25Z"},
                {"key": "c", "effect": "NoExecute", "timeAdded": "2024-05-01T09:00:00Z"},
            ],
            datetime(2024, 5, 1, 10, 0, 30, tzinfo=UTC).timestamp(),
            id="earliest-of-several",
        ),
        pytest.param(
            with_tolerations(toleration("a", -5)), [{"key": "a", "effect": "NoExecute"}], 1000.0, id="negative-is-zero"
        ),
    ],
)
def test_eviction_deadline(pod: Object, taints: list[Object], expected: float | None) -> None:
    assert eviction_deadline(pod, taints, first_seen=1000.0) == expected


def test_a_silent_node_s_conditions_go_unknown() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
             "lastHeartbeatTime": "T0", "lastTransitionTime": "T0"}  # fmt: skip
    network = {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}
    node = {"metadata": {"name": "n", "creationTimestamp": "C"}, "status": {"conditions": [ready, network]}}
    conditions = {c["type"]: c for c in marked_unknown(node, "T9")}
    assert conditions["Ready"] == {
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": "T0", "lastTransitionTime": "T9",
    }  # fmt: skip
    assert conditions["MemoryPressure"] == {
        "type": "MemoryPressure", "status": "Unknown", "reason": "NodeStatusNeverUpdated",
        "message": "Kubelet never posted node status.", "lastHeartbeatTime": "C", "lastTransitionTime": "T9",
    }  # fmt: skip
    assert conditions["NetworkUnavailable"] == network  # the network's own, left alone
    already = {"metadata": {"name": "n"}, "status": {"conditions": [conditions["Ready"]]}}
    assert marked_unknown(already, "T10")[0] == conditions["Ready"]  # Unknown already: its transition time kept


def node_with(conditions: dict[str, str], taints: list[Object] | None = None, **spec: Any) -> Object:
    status = {"conditions": [{"type": kind, "status": value} for kind, value in conditions.items()]}
    return {"metadata": {"name": "n"}, "spec": {"taints": taints or [], **spec}, "status": status}


@pytest.mark.parametrize(
    ("node", "add", "remove"),
    [
        pytest.param(node_with({"Ready": "True"}), [], [], id="healthy"),
        pytest.param(node_with({"Ready": "Unknown"}), [UNREACHABLE], [], id="unknown"),
        pytest.param(
            node_with({"Ready": "False", "DiskPressure": "True"}),
            ["node.kubernetes.io/disk-pressure", NOT_READY],
            [],
            id="not-ready-and-pressure",
        ),
        pytest.param(
            node_with({"Ready": "True"}, [{"key": NOT_READY, "effect": "NoSchedule"}]), [], [NOT_READY], id="recovered"
        ),
        pytest.param(
            node_with(
                {"Ready": "True"}, [{"key": NOT_READY, "effect": "NoExecute"}, {"key": "mine", "effect": "NoSchedule"}]
            ),
            [],
            [],
            id="not-ours-to-touch",
        ),
        pytest.param(
            node_with({"Ready": "True"}, unschedulable=True), ["node.kubernetes.io/unschedulable"], [], id="cordoned"
        ),
    ],
)
def test_no_schedule_taints_mirror_conditions(node: Object, add: list[str], remove: list[str]) -> None:
    added, removed = no_schedule_changes(node)
    assert [t["key"] for t in added] == add and [t["key"] for t in removed] == remove
    assert all(t["effect"] == "NoSchedule" for t in added + removed)


def test_a_taint_already_there_keeps_its_time() -> None:
    old = {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": "T0"}
    other = {"key": NOT_READY, "effect": "NoExecute", "timeAdded": "T0"}
    mine = {"key": "mine", "value": "v", "effect": "NoSchedule"}
    assert swapped([old, mine], add=[{"key": UNREACHABLE, "effect": "NoExecute"}], remove=[], stamp="T1") == [old, mine]
    assert swapped([other, mine], add=[{"key": UNREACHABLE, "effect": "NoExecute"}], remove=[other], stamp="T1") == [
        mine,
        {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": "T1"},
    ]


def ready(status: str) -> Object:
    return {"type": "Ready", "status": status}


@pytest.mark.parametrize(
    ("conditions", "state"),
    [
        pytest.param([ready("True"), ready("Unknown")], NORMAL, id="one-of-two"),
        pytest.param([ready("Unknown"), None], FULL, id="none-ready"),
        pytest.param([ready("True"), ready("False"), ready("False")], NORMAL, id="two-unhealthy-is-few"),
        pytest.param([ready("True"), ready("False"), ready("False"), ready("Unknown")], PARTIAL, id="three-of-four"),
        pytest.param([ready("True")] * 3 + [ready("False")] * 3, NORMAL, id="half"),
    ],
)
def test_zone_states(conditions: list[Object | None], state: str) -> None:
    assert zone_state(conditions) == state


def test_zones_are_region_and_zone() -> None:
    labels = {"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}
    assert zone_key({"metadata": {"labels": labels}}) == "r:\x00:z"
    assert zone_key({"metadata": {}}) == ""


def test_the_tainter_takes_one_node_per_token() -> None:
    tainter = Tainter(rate=0.5)
    assert tainter.add("a") and tainter.add("b") and not tainter.add("a")
    clock = tainter.filled + 0.1  # (monotonic) time, once both are queued
    first, _ = tainter.next_due(clock)
    second, wait = tainter.next_due(clock + 0.001)
    assert first == "a" and second is None and wait == pytest.approx(2.0, abs=0.01)
    tainter.done("a", ok=True, clock=clock)
    assert not tainter.add("a")  # done, still known: not queued again until removed
    assert tainter.next_due(clock + 2.1)[0] == "b"
    tainter.done("b", ok=True, clock=clock + 2.1)
    tainter.set_rate(0.0)
    tainter.remove("a")
    tainter.add("a")
    assert tainter.next_due(tainter.filled + 100) == (None, None)  # rate 0: never
    tainter.set_rate(0.01)
    assert tainter.next_due(tainter.filled)[0] == "a"  # a new limiter starts full


def test_a_pod_marked_not_ready_keeps_its_other_conditions() -> None:
    scheduled = {"type": "PodScheduled", "status": "True"}
    pod = {"status": {"phase": "Running", "conditions": [scheduled, {"type": "Ready", "status": "True"}]}}
    status = pod_status_not_ready(pod, "T1")
    assert status == {"phase": "Running", "conditions": [scheduled, {"type": "Ready", "status": "False",
                                                                       "lastTransitionTime": "T1"}]}  # fmt: skip
    assert pod_status_not_ready({"status": status}, "T2") is None
    assert pod_status_not_ready({"status": {"conditions": [scheduled]}}, "T2") is None


def test_the_grace_period_flag() -> None:
    args = parser().parse_args(["controllers", "--kubeconfig", "k", "--node-monitor-grace-period", "1m30s"])
    assert controller_settings(args)["node_monitor_grace_period"] == 90.0
    assert controller_settings(parser().parse_args(["up"]))["node_monitor_grace_period"] == 40.0
    with pytest.raises(ValueError, match="--node-monitor-grace-period must be positive"):
        controller_settings(parser().parse_args(["up", "--node-monitor-grace-period", "0s"]))


# ---- a cluster of nodes made through the API ----------------------------------------------------------------------

cluster = controllers_cluster("--nodes", "0", "--node-monitor-grace-period", GRACE)


class Renewer:
    """Renews the Leases of `names` every half second, as their node agents would."""

    def __init__(self, cluster: RunningCluster) -> None:
        self.cluster = cluster
        self.names: set[str] = set()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with self.cluster.http() as http:
            while not self.stopped.wait(0.5):
                for name in list(self.names):
                    http.patch(f"{LEASES}/{name}", json={"spec": {"renewTime": micro_now()}}, headers=MERGE)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def node_conditions(ready: str) -> list[Object]:
    reasons = {"True": ("KubeletReady", "kubelet is posting ready status"), "False": ("KubeletNotReady", "PLEG")}
    conditions = [
        {"type": kind, "status": "False", "reason": f"KubeletHasNo{kind}", "message": "fine"}
        for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
    ]
    reason, message = reasons[ready]
    conditions.append({"type": "Ready", "status": ready, "reason": reason, "message": message})
    return [{**c, "lastHeartbeatTime": now(), "lastTransitionTime": now()} for c in conditions]


def make_node(client: httpx.Client, prefix: str, ready: str = "True") -> str:
    """A Node with its status posted and its Lease renewed once."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    assert client.post("/api/v1/nodes", json={"metadata": {"name": name}}).status_code == 201
    response = client.patch(
        f"/api/v1/nodes/{name}/status", json={"status": {"conditions": node_conditions(ready)}}, headers=MERGE
    )
    assert response.status_code == 200, response.text
    lease = {"metadata": {"name": name}, "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}
    lease["spec"]["renewTime"] = micro_now()
    assert client.post(LEASES, json=lease).status_code == 201
    return name


def post_status(client: httpx.Client, name: str, ready: str) -> None:
    response = client.patch(
        f"/api/v1/nodes/{name}/status", json={"status": {"conditions": node_conditions(ready)}}, headers=MERGE
    )
    assert response.status_code == 200, response.text


def remove_node(client: httpx.Client, name: str) -> None:
    client.delete(f"/api/v1/nodes/{name}")
    client.delete(f"{LEASES}/{name}")


@pytest.fixture(scope="module")
def renewer(cluster: RunningCluster) -> Iterator[Renewer]:
    """The Lease renewals, and one node that stays Ready all along: with every node lost, no node is tainted
    NoExecute at all (a test of its own below)."""
    running = Renewer(cluster)
    with cluster.http() as http:
        steady = make_node(http, "steady")
        running.names.add(steady)
        try:
            yield running
        finally:
            running.stop()
            remove_node(http, steady)


def get(client: httpx.Client, path: str) -> Object:
    response = client.get(path)
    assert response.status_code == 200, response.text
    found: Object = response.json()
    return found


def run_pod(client: httpx.Client, ns: str, name: str, node: str, ip: str, *tolerations: Object) -> None:
    spec: Object = {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    body = {"metadata": {"name": name, "labels": {"app": name}}, "spec": spec}
    response = client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert response.status_code == 201, response.text
    conditions = [{"type": kind, "status": "True", "lastTransitionTime": now()}
                  for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]  # fmt: skip
    status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "conditions": conditions}
    response = client.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", json={"status": status}, headers=MERGE)
    assert response.status_code == 200, response.text


def pod_condition(client: httpx.Client, ns: str, name: str, kind: str = "Ready") -> Object:
    pod = get(client, f"/api/v1/namespaces/{ns}/pods/{name}")
    return next((c for c in pod["status"].get("conditions") or [] if c["type"] == kind), {})


def gone(client: httpx.Client, ns: str, name: str) -> bool:
    """Deleted: on a node whose agent is silent a pod stays terminating, as upstream's, until its node returns."""
    response = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return response.status_code == 404 or bool(response.json()["metadata"].get("deletionTimestamp"))


def node_taints(client: httpx.Client, name: str) -> list[Object]:
    return list(get(client, f"/api/v1/nodes/{name}")["spec"].get("taints") or [])


def taint_keys(client: httpx.Client, name: str) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node_taints(client, name)}


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str, str, str]]:
    items = get(client, f"/api/v1/namespaces/{ns}/events")["items"]
    return [
        (e["type"], e["reason"], e["message"], e["source"]["component"])
        for e in items
        if e["involvedObject"]["name"] == name
    ]


def slice_ready(client: httpx.Client, ns: str, service: str) -> list[bool]:
    path = (
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector=kubernetes.io/service-name%3D{service}"
    )
    return [e["conditions"].get("ready") for s in get(client, path)["items"] for e in s.get("endpoints") or []]


def test_every_pod_gets_the_default_tolerations(client: httpx.Client, ns: str) -> None:
    plain = {"metadata": {"name": "plain"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=plain).status_code == 201
    assert get(client, f"/api/v1/namespaces/{ns}/pods/plain")["spec"]["tolerations"] == DEFAULTS
    own = {**plain, "metadata": {"name": "own"}}
    own["spec"] = {**plain["spec"], "tolerations": [toleration(UNREACHABLE, 10)]}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=own).status_code == 201
    found = get(client, f"/api/v1/namespaces/{ns}/pods/own")["spec"]["tolerations"]
    assert found == [toleration(UNREACHABLE, 10), toleration(NOT_READY, 300)]


def test_a_silent_node_goes_unknown_tainted_and_its_pods_not_ready(
    client: httpx.Client, ns: str, renewer: Renewer
) -> None:
    node = make_node(client, "lost")
    try:
        run_pod(client, ns, "web", node, "10.244.200.2")
        run_pod(client, ns, "brief", node, "10.244.200.3", toleration(UNREACHABLE, 1))
        service = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
        assert client.post(f"/api/v1/namespaces/{ns}/services", json=service).status_code == 201
        eventually(lambda: slice_ready(client, ns, "web") == [True], what="web's endpoint ready")

        # no renewal, no status: Unknown after the grace period
        found = eventually(
            lambda: (
                (n := get(client, f"/api/v1/nodes/{node}"))
                and any(c["type"] == "Ready" and c["status"] == "Unknown" for c in n["status"]["conditions"])
                and n
            ),
            what="node Unknown",
        )
        conditions = {c["type"]: c for c in found["status"]["conditions"]}
        for kind in MONITORED:
            assert (conditions[kind]["status"], conditions[kind]["reason"], conditions[kind]["message"]) == (
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            )
        # its pods not ready at once, and so their endpoints
        assert eventually(lambda: pod_condition(client, ns, "web")["status"] == "False", what="web not ready")
        assert pod_condition(client, ns, "web", "ContainersReady")["status"] == "True"  # only Ready is touched
        eventually(lambda: slice_ready(client, ns, "web") == [False], what="web's endpoint not ready")
        warned = ("Warning", "NodeNotReady", "Node is not ready", "node-controller")
        eventually(lambda: warned in events(client, ns, "web"), what="NodeNotReady event on web")
        message = f"Node {node} status is now: NodeNotReady"
        assert ("Normal", "NodeNotReady", message, "node-controller") in events(client, "default", node)

        wanted = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
        eventually(lambda: taint_keys(client, node) == wanted, timeout=SLOW, what="unreachable taints")
        assert all(TIME.fullmatch(t["timeAdded"]) for t in node_taints(client, node))

        # the pod that tolerates it for 1 s goes; the one with the default 300 s stays
        eventually(lambda: gone(client, ns, "brief"), what="brief evicted")
        evicted = (
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {ns}/brief",
            "taint-eviction-controller",
        )
        assert evicted in events(client, ns, "brief")
        assert not gone(client, ns, "web")

        # back: Lease renewed and Ready posted again, the taints go
        renewer.names.add(node)
        post_status(client, node, "True")
        eventually(lambda: not taint_keys(client, node), timeout=SLOW, what="taints removed")
        assert not gone(client, ns, "web")
        cancelled = (
            "Normal",
            "TaintManagerEviction",
            f"Cancelling deletion of Pod {ns}/web",
            "taint-eviction-controller",
        )
        eventually(lambda: cancelled in events(client, ns, "web"), what="web's eviction cancelled")
    finally:
        renewer.names.discard(node)
        remove_node(client, node)


def test_a_node_reporting_not_ready_gets_the_not_ready_taints(client: httpx.Client, ns: str, renewer: Renewer) -> None:
    node = make_node(client, "sick", ready="False")
    renewer.names.add(node)  # alive, and saying it is not ready
    try:
        wanted = {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
        eventually(lambda: taint_keys(client, node) == wanted, timeout=SLOW, what="not-ready taints")
        ready = next(c for c in get(client, f"/api/v1/nodes/{node}")["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")  # the agent's word stands
        post_status(client, node, "True")
        eventually(lambda: not taint_keys(client, node), timeout=SLOW, what="taints removed")
    finally:
        renewer.names.discard(node)
        remove_node(client, node)


def test_pods_leave_a_node_whose_noexecute_taint_they_do_not_tolerate_or_no_longer(
    client: httpx.Client, ns: str, renewer: Renewer
) -> None:
    node = make_node(client, "tainted")
    renewer.names.add(node)
    key = "example.com/maintenance"
    try:
        run_pod(client, ns, "intolerant", node, "10.244.201.2")
        run_pod(client, ns, "overdue", node, "10.244.201.3", toleration(key, 60))
        run_pod(client, ns, "countdown", node, "10.244.201.4", toleration(key, 124))
        run_pod(client, ns, "patient", node, "10.244.201.5", toleration(key, 3600))
        run_pod(client, ns, "forever", node, "10.244.201.6", toleration(key))
        # the taint was added two minutes ago: the tolerations count from then
        taints = [{"key": key, "value": "x", "effect": "NoExecute", "timeAdded": stamp(120)}]
        response = client.patch(f"/api/v1/nodes/{node}", json={"spec": {"taints": taints}}, headers=MERGE)
        assert response.status_code == 200, response.text

        eventually(lambda: gone(client, ns, "intolerant") and gone(client, ns, "overdue"), what="two evicted")
        component = "taint-eviction-controller"
        marking = ("Normal", "TaintManagerEviction", f"Marking for deletion Pod {ns}/intolerant", component)
        assert marking in events(client, ns, "intolerant")
        eventually(lambda: gone(client, ns, "countdown"), what="countdown evicted once its 124 s are up")
        assert not any(gone(client, ns, name) for name in ("patient", "forever"))

        # the taint removed, the patient pod's countdown is cancelled
        response = client.patch(f"/api/v1/nodes/{node}", json={"spec": {"taints": None}}, headers=MERGE)
        assert response.status_code == 200, response.text
        cancelled = ("Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {ns}/patient", component)
        eventually(lambda: cancelled in events(client, ns, "patient"), what="eviction cancelled")
        assert not any(gone(client, ns, name) for name in ("patient", "forever"))
    finally:
        renewer.names.discard(node)
        remove_node(client, node)


def test_with_no_node_ready_no_node_is_tainted_noexecute_until_one_is(tmp_path: Path) -> None:
    """Upstream's "master disruption mode": every node lost looks more like the control plane cut off than the
    nodes dead, so nothing is evicted; once a node is Ready again the lost ones are tainted and their pods go."""
    flags = ("--nodes", "0", "--controllers", "*", "--node-monitor-grace-period", GRACE)
    with running_cluster(tmp_path / "alone", *flags) as running, running.http() as http:
        renewer = Renewer(running)
        try:
            lost = make_node(http, "lost")
            run_pod(http, "default", "brief", lost, "10.244.202.2", toleration(UNREACHABLE, 1))
            eventually(lambda: pod_condition(http, "default", "brief")["status"] == "False", what="brief not ready")
            eventually(lambda: taint_keys(http, lost) == {(UNREACHABLE, "NoSchedule")}, what="NoSchedule taint")
            # Absence cannot be waited for; two more health checks (5 s apart) would have tainted it by now.
            threading.Event().wait(11)
            assert taint_keys(http, lost) == {(UNREACHABLE, "NoSchedule")}
            assert not gone(http, "default", "brief")

            renewer.names.add(make_node(http, "steady"))
            wanted = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
            eventually(lambda: taint_keys(http, lost) == wanted, timeout=SLOW, what="unreachable NoExecute taint")
            eventually(lambda: gone(http, "default", "brief"), what="brief evicted")
        finally:
            renewer.stop()
