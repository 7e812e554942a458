"""The components of a `tinykube up` process shown as mirror pods in kube-system (issue 38, defect 24), as a
kubelet shows its static pods and kubeadm clusters show their control plane, DNS and proxies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, running_cluster

CONTROL_PLANE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("mirror") / "c"
    extra = ("--nodes", "2", "--controllers", "*", "--proxy-mode", "userspace")
    with running_cluster(data_dir, *extra) as running:
        yield running


@pytest.fixture
def client(mirrored: RunningCluster) -> Iterator[httpx.Client]:
    with mirrored.http() as http:
        yield http


def system_pods(client: httpx.Client, selector: str = "") -> dict[str, Any]:
    params = {"labelSelector": selector} if selector else {}
    found = client.get("/api/v1/namespaces/kube-system/pods", params=params).json()["items"]
    return {p["metadata"]["name"]: p for p in found}


def running_and_ready(pod: dict[str, Any]) -> bool:
    ready = next((c for c in pod["status"].get("conditions") or [] if c["type"] == "Ready"), {})
    return pod["status"].get("phase") == "Running" and ready.get("status") == "True"


def test_kube_system_lists_the_control_plane_dns_and_proxy_as_running_ready_pods(mirrored: RunningCluster) -> None:
    listed = mirrored.kubectl("get", "pods", "-n", "kube-system", "--no-headers").stdout.splitlines()
    rows = {line.split()[0]: line.split()[1:3] for line in listed}
    wanted = {f"{name}-node-1" for name in (*CONTROL_PLANE, "coredns", "kube-proxy")}
    assert set(rows) == wanted  # one loopback proxy for the simulated nodes, on node-1
    assert all(ready_status == ["1/1", "Running"] for ready_status in rows.values()), rows


def test_control_plane_pods_are_mirror_pods_as_kubeadm_static_pods_appear(client: httpx.Client) -> None:
    nodes = {n["metadata"]["name"]: n for n in client.get("/api/v1/nodes").json()["items"]}
    version = client.get("/version").json()["gitVersion"].split("+")[0]
    for name in CONTROL_PLANE:
        pod = system_pods(client, f"component={name},tier=control-plane")[f"{name}-node-1"]
        meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
        assert meta["annotations"]["kubernetes.io/config.mirror"] == meta["annotations"]["kubernetes.io/config.hash"]
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", "node-1", nodes["node-1"]["metadata"]["uid"])
        assert spec["nodeName"] == "node-1" and spec["hostNetwork"] is True
        assert spec["priorityClassName"] == "system-node-critical" and spec["priority"] == 2_000_001_000
        assert "serviceAccountName" not in spec  # a mirror pod names no ServiceAccount
        (container,) = spec["containers"]
        assert container["name"] == name
        if name != "etcd":
            assert container["image"] == f"registry.k8s.io/{name}:{version}"
        assert running_and_ready(pod) and status["podIP"] == status["hostIP"] == "172.20.0.2"
        (state,) = status["containerStatuses"]
        assert state["name"] == name and state["ready"] and "running" in state["state"]


def test_kube_dns_selects_the_dns_servers_pod_and_its_endpoints_list_it(client: httpx.Client) -> None:
    (pod,) = system_pods(client, "k8s-app=kube-dns").values()
    assert pod["metadata"]["name"] == "coredns-node-1" and running_and_ready(pod)
    assert pod["spec"]["priorityClassName"] == "system-cluster-critical"
    assert not pod["spec"].get("hostNetwork")
    service = client.get("/api/v1/namespaces/kube-system/services/kube-dns").json()
    assert service["spec"]["selector"] == {"k8s-app": "kube-dns"}
    endpoints = client.get("/api/v1/namespaces/kube-system/endpoints/kube-dns").json()
    (address,) = [a for s in endpoints["subsets"] for a in s["addresses"]]
    assert address["ip"] == pod["status"]["podIP"] and address["nodeName"] == "node-1"
    assert address["targetRef"]["name"] == "coredns-node-1" and address["targetRef"]["uid"] == pod["metadata"]["uid"]
    slices = client.get(
        "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
        params={"labelSelector": "kubernetes.io/service-name=kube-dns"},
    ).json()["items"]
    (endpoint,) = [e for s in slices for e in s["endpoints"]]
    assert endpoint["addresses"] == [pod["status"]["podIP"]] and endpoint["conditions"]["ready"] is True


def test_kubectl_logs_of_the_dns_pod_is_the_dns_servers_log(mirrored: RunningCluster) -> None:
    selected = mirrored.kubectl("logs", "-n", "kube-system", "-l", "k8s-app=kube-dns").stdout
    assert "dns: serving cluster.local on 127.0.0.1:" in selected
    line = next(line for line in selected.splitlines() if "dns: serving" in line)
    assert line.startswith("I") and "run.py:" in line  # klog's header: level, time, pid, file:line
    stamped = mirrored.kubectl("logs", "-n", "kube-system", "coredns-node-1", "--timestamps").stdout
    assert any(s.endswith(line) and s[:4].isdigit() and "Z " in s for s in stamped.splitlines())
    limited = mirrored.kubectl("logs", "-n", "kube-system", "coredns-node-1", "--limit-bytes", "5").stdout
    assert limited == selected[:5]
    assert mirrored.kubectl("logs", "-n", "kube-system", "coredns-node-1", "--tail", "0").stdout == ""
    previous = mirrored.kubectl("logs", "-n", "kube-system", "coredns-node-1", "--previous", check=False)
    assert 'previous terminated container "coredns" in pod "coredns-node-1" not found' in previous.stderr


def test_kubectl_logs_of_the_controller_manager_and_etcd_are_theirs(mirrored: RunningCluster) -> None:
    manager = mirrored.kubectl("logs", "-n", "kube-system", "kube-controller-manager-node-1").stdout
    assert "leads: starting controllers" in manager
    etcd = mirrored.kubectl("logs", "-n", "kube-system", "etcd-node-1", "--tail", "1").stdout
    assert etcd.count("\n") == 1 and '"ts":' in etcd  # etcd's own JSON log lines, from its log file


def test_a_deleted_mirror_pod_is_made_again(client: httpx.Client) -> None:
    before = system_pods(client)["kube-scheduler-node-1"]
    assert client.delete("/api/v1/namespaces/kube-system/pods/kube-scheduler-node-1").status_code == 200

    def made_again() -> dict[str, Any] | None:
        found = system_pods(client).get("kube-scheduler-node-1")
        fresh = found is not None and found["metadata"]["uid"] != before["metadata"]["uid"]
        return found if fresh and running_and_ready(found) else None

    again = eventually(made_again, what="kube-scheduler-node-1 made again")
    assert not again["metadata"].get("deletionTimestamp")


def test_an_api_only_cluster_has_no_system_pods(cluster: RunningCluster) -> None:
    """`--nodes 0`: no kubelet to show static pods, as envtest's apiserver has none."""
    with cluster.http() as http:
        assert http.get("/api/v1/namespaces/kube-system/pods").json()["items"] == []
