"""Node agents (simulated runtime), the scheduler and node IPAM in a real `tinykube up --nodes 2`."""

from __future__ import annotations

import contextlib
import ipaddress
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, fresh_namespace, interrupt, running_cluster


@pytest.fixture(scope="module")
def nodes_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("nodes") / "c", "--nodes", "2", "--controllers", "*") as running:
        with running.http() as http:  # `up` waits for its nodes, but only so long: a loaded machine may take longer

            def registered() -> bool:
                nodes = http.get("/api/v1/nodes").json()["items"]
                ready = [n for n in nodes if condition(n, "Ready").get("status") == "True" and n["spec"].get("podCIDR")]
                return len(ready) == 2

            eventually(registered, what="two Ready nodes with pod CIDRs")
        yield running


@pytest.fixture
def client(nodes_cluster: RunningCluster) -> Iterator[httpx.Client]:
    with nodes_cluster.http() as http:
        yield http


@pytest.fixture
def ns(client: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(client, request) as name:
        yield name


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def get(client: httpx.Client, path: str) -> dict[str, Any]:
    response = client.get(path)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def running_and_ready(client: httpx.Client, ns: str, name: str) -> dict[str, Any] | None:
    found = get(client, f"/api/v1/namespaces/{ns}/pods/{name}")
    ok = found["status"].get("phase") == "Running" and condition(found, "Ready").get("status") == "True"
    return found if ok else None


@contextlib.contextmanager
def component(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `tinykube <args>` process, stopped by SIGINT (Ctrl-C) afterwards and killed if that did not end it, whatever
    the test did: a failing test must leave nothing running. It must have ended by SIGINT alone, with Ctrl-C's
    status (a SIGINT ignored, or a stop that hangs, fails the test once the process is gone)."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tinykube.cli", *args], stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        code = interrupt(proc)
    assert code == 130, f"tinykube {args[0]} did not end by SIGINT ({code}):\n{log.read_text()[-3000:]}"


def test_nodes_register_ready_with_pod_cidrs(client: httpx.Client) -> None:
    nodes = {n["metadata"]["name"]: n for n in get(client, "/api/v1/nodes")["items"]}
    assert set(nodes) == {"node-1", "node-2"}
    cidrs = {n["spec"]["podCIDR"] for n in nodes.values()}
    assert cidrs == {"10.244.0.0/24", "10.244.1.0/24"}
    for name, node in nodes.items():
        assert node["spec"]["podCIDRs"] == [node["spec"]["podCIDR"]]
        assert condition(node, "Ready")["status"] == "True" and condition(node, "Ready")["reason"] == "KubeletReady"
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["Hostname"] == name and addresses["InternalIP"].startswith("172.20.0.")
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name


def test_kubectl_shows_ready_nodes(nodes_cluster: RunningCluster) -> None:
    lines = nodes_cluster.kubectl("get", "nodes", "--no-headers").stdout.splitlines()
    assert sorted(line.split()[:2] for line in lines) == [["node-1", "Ready"], ["node-2", "Ready"]]


USER_PODS = "/api/v1/pods?fieldSelector=metadata.namespace!%3Dkube-system"  # kube-system: node-1's mirror pods


def pods_per_node(client: httpx.Client) -> dict[str, int]:
    """Every pod bound to each node, the mirror pods of kube-system among them (they count, as upstream's)."""
    counts = {"node-1": 0, "node-2": 0}
    for found in get(client, "/api/v1/pods")["items"]:
        counts[found["spec"]["nodeName"]] += 1
    return counts


def test_pods_are_spread_run_and_get_addresses_from_their_node(client: httpx.Client, ns: str) -> None:
    eventually(lambda: not get(client, USER_PODS)["items"], what="no pods of earlier tests left")
    expected = pods_per_node(client)
    for i in range(4):
        assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(f"p{i}")).status_code == 201
        expected[min(expected, key=lambda name: (expected[name], name))] += 1  # least pods first
    pods = [eventually(lambda i=i: running_and_ready(client, ns, f"p{i}"), what=f"p{i} running") for i in range(4)]
    nodes = {n["metadata"]["name"]: n for n in get(client, "/api/v1/nodes")["items"]}
    assert pods_per_node(client) == expected
    assert len({p["status"]["podIP"] for p in pods}) == 4
    for found in pods:
        node = nodes[found["spec"]["nodeName"]]
        status = found["status"]
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
        assert status["podIPs"] == [{"ip": status["podIP"]}]
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert status["hostIP"] == internal
        assert condition(found, "PodScheduled")["status"] == "True"
        assert [c["type"] for c in status["conditions"]][:5] == [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        (container,) = status["containerStatuses"]
        assert container["ready"] and container["started"] and container["restartCount"] == 0
        assert "running" in container["state"]


def test_ready_annotation_flips_readiness_and_endpoints_follow(client: httpx.Client, ns: str) -> None:
    service = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "flip"}, "ports": [{"port": 80}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/services", json=service).status_code == 201
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("f", {"app": "flip"})).status_code == 201
    eventually(lambda: running_and_ready(client, ns, "f"), what="pod ready")

    def slice_ready() -> bool | None:
        slices = get(client, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")["items"]
        endpoints = [e for s in slices for e in s.get("endpoints") or []]
        return endpoints[0]["conditions"]["ready"] if len(endpoints) == 1 else None

    assert eventually(slice_ready, what="ready endpoint") is True
    patch = {"metadata": {"annotations": {"tinykube.io/ready": "false"}}}
    headers = {"Content-Type": "application/merge-patch+json"}
    assert client.patch(f"/api/v1/namespaces/{ns}/pods/f", json=patch, headers=headers).status_code == 200

    def not_ready() -> dict[str, Any] | None:
        ready = condition(get(client, f"/api/v1/namespaces/{ns}/pods/f"), "Ready")
        return ready if ready.get("status") == "False" else None

    ready = eventually(not_ready, what="pod not ready")
    assert ready["reason"] == "ContainersNotReady" and ready["message"] == "containers with unready status: [c]"
    eventually(lambda: slice_ready() is False, what="endpoint not ready")


def test_readiness_gates_hold_ready_until_their_condition_is_true(client: httpx.Client, ns: str) -> None:
    gated = pod("g", readinessGates=[{"conditionType": "example.com/lb"}])
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=gated).status_code == 201

    def gate_message() -> str | None:
        ready = condition(get(client, f"/api/v1/namespaces/{ns}/pods/g"), "Ready")
        return ready.get("message") if ready.get("reason") == "ReadinessGatesNotReady" else None

    message = eventually(gate_message, what="readiness gate reported")
    assert message == 'corresponding condition of pod readiness gate "example.com/lb" does not exist.'
    status = {"status": {"conditions": [{"type": "example.com/lb", "status": "True"}]}}
    headers = {"Content-Type": "application/strategic-merge-patch+json"}
    assert client.patch(f"/api/v1/namespaces/{ns}/pods/g/status", json=status, headers=headers).status_code == 200
    found = eventually(lambda: running_and_ready(client, ns, "g"), what="ready once the gate is true")
    assert condition(found, "example.com/lb")["status"] == "True"


def test_a_pod_no_node_fits_is_unschedulable(client: httpx.Client, ns: str) -> None:
    picky = pod("picky", nodeSelector={"disk": "ssd"})
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=picky).status_code == 201

    def unschedulable() -> dict[str, Any] | None:
        scheduled = condition(get(client, f"/api/v1/namespaces/{ns}/pods/picky"), "PodScheduled")
        return scheduled if scheduled.get("status") == "False" else None

    scheduled = eventually(unschedulable, what="PodScheduled False")
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert not get(client, f"/api/v1/namespaces/{ns}/pods/picky")["spec"].get("nodeName")


def test_deleted_pods_give_their_address_back(client: httpx.Client, ns: str) -> None:
    on_node = "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1"
    users = f"{on_node},metadata.namespace!%3Dkube-system"  # kube-system: node-1's mirror pods, which stay
    eventually(lambda: not get(client, users)["items"], what="node-1 without pods of earlier tests")
    cidr = ipaddress.ip_network(get(client, "/api/v1/nodes/node-1")["spec"]["podCIDR"])
    held = {p["status"].get("podIP") for p in get(client, on_node)["items"]}  # the DNS server's pod holds one
    first_free = next(str(ip) for ip in list(cidr.hosts())[1:] if str(ip) not in held)  # .1 is the node's own
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("a", nodeName="node-1")).status_code == 201
    assert eventually(lambda: running_and_ready(client, ns, "a"))["status"]["podIP"] == first_free
    assert client.delete(f"/api/v1/namespaces/{ns}/pods/a").status_code == 200
    # a Terminating pod keeps its address until its node has stopped it and removed it
    eventually(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/a").status_code == 404, what="a gone")
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("b", nodeName="node-1")).status_code == 201
    assert eventually(lambda: running_and_ready(client, ns, "b"))["status"]["podIP"] == first_free


def test_tinykube_node_joins_a_cluster(nodes_cluster: RunningCluster, client: httpx.Client, tmp_path: Path) -> None:
    args = ["node", "--kubeconfig", str(nodes_cluster.kubeconfig), "--name", "extra", "--node-ip", "172.20.0.99"]
    try:
        with component(args, tmp_path / "node.log"):
            node = eventually(
                lambda: (
                    client.get("/api/v1/nodes/extra").json()
                    if client.get("/api/v1/nodes/extra").status_code == 200
                    else None
                ),
                what="node extra",
            )
            ready = eventually(
                lambda: condition(get(client, "/api/v1/nodes/extra"), "Ready").get("status") == "True",
                what="extra ready",
            )
            assert ready and node["metadata"]["name"] == "extra"
            assert eventually(lambda: get(client, "/api/v1/nodes/extra")["spec"].get("podCIDR"), what="pod CIDR")
    finally:
        client.delete("/api/v1/nodes/extra")


def test_logs_of_a_simulated_pod_are_empty(nodes_cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod("quiet")).status_code == 201
    eventually(lambda: running_and_ready(client, ns, "quiet"), what="quiet running")
    node = get(client, f"/api/v1/nodes/{get(client, f'/api/v1/namespaces/{ns}/pods/quiet')['spec']['nodeName']}")
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert node["metadata"]["annotations"]["tinykube.io/kubelet-endpoint"] == f"127.0.0.1:{port}"
    result = nodes_cluster.kubectl("-n", ns, "logs", "quiet")
    assert result.stdout == ""


def test_node_cidrs_are_cut_from_the_cluster_cidr(tmp_path: Path) -> None:
    flags = ("--nodes", "2", "--controllers", "*", "--cluster-cidr", "10.250.0.0/16")
    with running_cluster(tmp_path / "cidr", *flags) as running, running.http() as http:

        def cidrs() -> set[str] | None:
            found = {n["spec"].get("podCIDR") for n in get(http, "/api/v1/nodes")["items"]}
            return found if len(found) == 2 and None not in found else None

        assert eventually(cidrs, what="two pod CIDRs") == {"10.250.0.0/24", "10.250.1.0/24"}
        assert http.post("/api/v1/namespaces/default/pods", json=pod("p")).status_code == 201
        found = eventually(lambda: running_and_ready(http, "default", "p"), what="p running")
        assert ipaddress.ip_address(found["status"]["podIP"]) in ipaddress.ip_network("10.250.0.0/16")


def test_standalone_controllers_cut_node_cidrs_from_their_cluster_cidr(tmp_path: Path) -> None:
    """`tinykube controllers --cluster-cidr`: the node IPAM of a control plane run in pieces."""
    flags = ("--nodes", "0", "--controllers", "*,-nodeipam")
    with running_cluster(tmp_path / "pieces", *flags) as running, running.http() as http:
        assert http.post("/api/v1/nodes", json={"metadata": {"name": "n1"}}).status_code == 201
        command = ["controllers", "--kubeconfig", str(running.kubeconfig)]
        # A piece of the control plane beside `up`'s controllers, not a replica of them: no election.
        flags = ["--controllers", "nodeipam", "--cluster-cidr", "10.251.0.0/16", "--leader-elect=false"]
        with component([*command, *flags], tmp_path / "controllers.log"):
            cidr = eventually(lambda: get(http, "/api/v1/nodes/n1")["spec"].get("podCIDR"), 60, "pod CIDR")
            assert cidr == "10.251.0.0/24"
