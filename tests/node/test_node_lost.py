"""A `tinykube node` process that dies (issue 20): after `--node-monitor-grace-period` its Node is Unknown and
tainted unreachable, its pods are not ready at once, and a pod that tolerates the taint for two seconds is evicted
then — what `kubectl get nodes,pods -w` shows when a node agent is stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunningCluster, eventually, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    # node-1 stays Ready: with every node lost, upstream's controller evicts nothing (a disruption, not a node down)
    flags = ("--nodes", "1", "--controllers", "*", "--node-monitor-grace-period", "15s")
    with running_cluster(tmp_path_factory.mktemp("lost") / "c", *flags) as running:
        yield running


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    status = obj.get("status")  # a Status answer (not found yet) has a string there
    conditions = status.get("conditions") or [] if isinstance(status, dict) else []
    return next((c for c in conditions if c["type"] == kind), {})


def test_a_dead_node_agent_is_noticed_and_its_pods_evicted(cluster: RunningCluster, tmp_path: Path) -> None:
    log = (tmp_path / "node.log").open("wb")
    command = [sys.executable, "-m", "tinykube.cli", "node", "--kubeconfig", str(cluster.kubeconfig)]
    agent = subprocess.Popen([*command, "--name", "lost", "--node-ip", "172.20.0.98"], stdout=log, stderr=log)
    with cluster.http() as client:
        try:
            eventually(lambda: condition(client.get("/api/v1/nodes/lost").json(), "Ready").get("status") == "True")
            tolerate = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 2}  # fmt: skip
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "stranded"},
                "spec": {"nodeName": "lost", "tolerations": [tolerate], "containers": [{"name": "c", "image": "x"}]},
            }
            assert client.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
            path = "/api/v1/namespaces/default/pods/stranded"
            eventually(lambda: condition(client.get(path).json(), "Ready").get("status") == "True")
        finally:
            agent.send_signal(signal.SIGKILL)
            agent.wait(30)
        try:
            node = eventually(
                lambda: (
                    condition(n := client.get("/api/v1/nodes/lost").json(), "Ready").get("status") == "Unknown" and n
                ),
                timeout=60,
                what="the node Unknown",
            )
            ready = condition(node, "Ready")
            assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")

            def taints() -> set[tuple[str, str]]:
                found = client.get("/api/v1/nodes/lost").json()["spec"].get("taints") or []
                return {(t["key"], t["effect"]) for t in found}

            unreachable = {
                ("node.kubernetes.io/unreachable", "NoSchedule"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
            }
            assert eventually(lambda: unreachable <= taints(), what="the unreachable taints")
            assert condition(client.get(path).json(), "Ready").get("status") == "False"
            evicted = eventually(
                lambda: (p := client.get(path).json())["metadata"].get("deletionTimestamp") and p,
                timeout=40,
                what="the pod evicted once its two seconds are over",
            )
            assert evicted
            events = client.get(
                "/api/v1/namespaces/default/events", params={"fieldSelector": "involvedObject.name=stranded"}
            )
            reasons = {e["reason"] for e in events.json()["items"]}
            assert "TaintManagerEviction" in reasons
        finally:
            client.delete(path, params={"gracePeriodSeconds": "0"})
            client.delete("/api/v1/nodes/lost")
