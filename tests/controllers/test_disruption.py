"""PodDisruptionBudgets, the eviction subresource and `kubectl drain` (issue 19) on two simulated nodes."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.controllers.intstr import scaled

Object = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}


def test_counts_scale_percentages_up_or_down() -> None:
    assert [scaled("50%", 3, round_up=True), scaled("10%", 3, round_up=True), scaled(2, 3, round_up=True)] == [2, 1, 2]
    assert [scaled("50%", 3, round_up=False), scaled("10%", 3, round_up=False)] == [1, 0]


cluster = controllers_cluster("--nodes", "2")


def deploy(cluster: RunningCluster, ns: str, name: str, replicas: int) -> None:
    cluster.kubectl("-n", ns, "create", "deployment", name, "--image=nginx", f"--replicas={replicas}")
    cluster.kubectl("-n", ns, "rollout", "status", f"deployment/{name}", "--timeout=30s")


def budget_status(client: httpx.Client, ns: str, name: str) -> Object:
    return dict(client.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}").json().get("status") or {})


def pods(client: httpx.Client, ns: str, app: str) -> list[Object]:
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def evict(client: httpx.Client, ns: str, pod: str, name: str | None = None) -> httpx.Response:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name or pod, "namespace": ns}}
    return client.post(f"/api/v1/namespaces/{ns}/pods/{pod}/eviction", json=body)


def test_a_budget_counts_healthy_pods_against_the_expected(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    deploy(cluster, ns, "web", 3)
    cluster.kubectl("-n", ns, "create", "pdb", "by-count", "--selector=app=web", "--min-available=2")
    cluster.kubectl("-n", ns, "create", "pdb", "by-share", "--selector=app=web", "--max-unavailable=34%")
    counted = eventually(
        lambda: (
            budget_status(client, ns, "by-count").get("currentHealthy") == 3 and budget_status(client, ns, "by-count")
        )
    )
    assert (counted["desiredHealthy"], counted["expectedPods"], counted["disruptionsAllowed"]) == (2, 3, 1)
    [condition] = counted["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
    )
    shared = eventually(
        lambda: budget_status(client, ns, "by-share").get("expectedPods") == 3 and budget_status(client, ns, "by-share")
    )
    assert (shared["desiredHealthy"], shared["disruptionsAllowed"]) == (1, 2)  # 34 % of 3 rounds up to 2


def test_an_eviction_the_budget_forbids_is_a_429(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    deploy(cluster, ns, "tight", 2)
    cluster.kubectl("-n", ns, "create", "pdb", "tight", "--selector=app=tight", "--min-available=2")
    eventually(lambda: budget_status(client, ns, "tight").get("currentHealthy") == 2, what="two healthy counted")
    first = sorted(p["metadata"]["name"] for p in pods(client, ns, "tight"))[0]
    assert evict(client, ns, first, name="other").status_code == 400

    refused = evict(client, ns, first)
    assert refused.status_code == 429, refused.text
    status = refused.json()
    assert (status["reason"], status["message"]) == (
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    assert status["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget tight needs 2 healthy pods and has 2 currently",
        }
    ]
    assert first in {p["metadata"]["name"] for p in pods(client, ns, "tight")}

    patch = {"spec": {"minAvailable": 1}}
    client.patch(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/tight", json=patch, headers=MERGE)
    eventually(lambda: budget_status(client, ns, "tight").get("disruptionsAllowed") == 1, what="one allowed")
    allowed = evict(client, ns, first)
    assert allowed.status_code == 201, allowed.text
    assert allowed.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    eventually(lambda: first not in {p["metadata"]["name"] for p in pods(client, ns, "tight")}, what="first gone")


def test_kubectl_drain_evicts_within_the_budget(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    deploy(cluster, ns, "moved", 2)
    cluster.kubectl("-n", ns, "create", "pdb", "moved", "--selector=app=moved", "--min-available=1")
    eventually(lambda: budget_status(client, ns, "moved").get("disruptionsAllowed") == 1, what="a disruption allowed")
    try:
        out = cluster.kubectl(
            "drain", "node-1", "--ignore-daemonsets", "--pod-selector=app=moved", "--timeout=60s"
        ).stdout
        assert "node/node-1 drained" in out
        assert client.get("/api/v1/nodes/node-1").json()["spec"]["unschedulable"] is True
        eventually(lambda: len(pods(client, ns, "moved")) == 2, what="the evicted pod replaced")
        assert {p["spec"]["nodeName"] for p in pods(client, ns, "moved")} == {"node-2"}
    finally:
        cluster.kubectl("uncordon", "node-1")
