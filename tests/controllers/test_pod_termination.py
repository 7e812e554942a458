"""Pod termination on simulated nodes (issue 20): a deleted pod is Terminating until its node agent has stopped
its containers (a `Killing` event each) and deleted it with a grace period of 0, as a kubelet does."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster

cluster = controllers_cluster("--nodes", "1")


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str, str]]:
    selector = f"involvedObject.kind=Pod,involvedObject.name={name}"
    items = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": selector}).json()["items"]
    return [(e["reason"], e["message"], e["source"].get("component", "")) for e in items]


def test_kubectl_delete_waits_for_the_node_to_finish(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    cluster.kubectl("-n", ns, "run", "web", "--image=nginx")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/web", "--timeout=30s")
    since = client.get(f"/api/v1/namespaces/{ns}/pods/web").json()["metadata"]["resourceVersion"]
    deleted = cluster.kubectl("-n", ns, "delete", "pod", "web", "--timeout=30s")
    assert 'pod "web" deleted' in deleted.stdout
    assert client.get(f"/api/v1/namespaces/{ns}/pods/web").status_code == 404
    replay = client.get(
        f"/api/v1/namespaces/{ns}/pods",
        params={"watch": "1", "resourceVersion": since, "fieldSelector": "metadata.name=web", "timeoutSeconds": "1"},
    )
    seen = [json.loads(line) for line in replay.text.splitlines()]
    assert seen[0]["type"] == "MODIFIED" and seen[0]["object"]["metadata"]["deletionGracePeriodSeconds"] == 30
    assert seen[-1]["type"] == "DELETED"  # Terminating first, gone once the node agent is done with it
    killing = eventually(lambda: [e for e in events(client, ns, "web") if e[0] == "Killing"])
    assert killing == [("Killing", "Stopping container web", "kubelet")]


def test_a_scaled_down_replica_set_ends_its_pods(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=nginx", "--replicas=3")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=30s")
    cluster.kubectl("-n", ns, "scale", "deployment", "web", "--replicas=1")

    def pods() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]
        return items

    eventually(lambda: len(pods()) == 1, what="the two pods scaled away to be gone")
    assert not pods()[0]["metadata"].get("deletionTimestamp")
