"""ReplicationControllers (issue 19): the ReplicaSet controller run on them, as upstream's, with their equality
selector; `kubectl scale rc` on a cluster with a simulated node."""

from __future__ import annotations

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster

RC = """\
apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 2
  selector: {app: nginx}
  template:
    metadata:
      labels: {app: nginx, tier: web}
    spec:
      containers: [{name: nginx, image: nginx, ports: [{containerPort: 80}]}]
"""


cluster = controllers_cluster("--nodes", "1")


def pod_names(client: httpx.Client, ns: str) -> list[str]:
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=nginx"}).json()["items"]
    return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))


def ready(client: httpx.Client, ns: str, replicas: int) -> bool:
    status = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/nginx").json().get("status") or {}
    return [status.get(k) for k in ("replicas", "readyReplicas", "availableReplicas")] == [replicas] * 3


def test_a_replication_controller_keeps_its_replicas_and_scales(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=RC)
    eventually(lambda: ready(client, ns, 2), what="two ready replicas")
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=nginx"}).json()["items"]
    [owner] = {
        (p["metadata"]["ownerReferences"][0]["kind"], p["metadata"]["ownerReferences"][0]["name"]) for p in items
    }
    assert owner == ("ReplicationController", "nginx")
    assert all(p["metadata"]["generateName"] == "nginx-" for p in items)

    cluster.kubectl("-n", ns, "scale", "rc", "nginx", "--replicas=3")
    eventually(lambda: ready(client, ns, 3), what="three ready replicas")
    victim = pod_names(client, ns)[0]
    client.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    eventually(lambda: len(pod_names(client, ns)) == 3 and victim not in pod_names(client, ns), what="a replacement")
    printed = cluster.kubectl("-n", ns, "get", "rc", "nginx").stdout.split()
    assert printed[:5] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"] and printed[5:9] == ["nginx", "3", "3", "3"]


def replica_failure(client: httpx.Client, ns: str, name: str) -> dict[str, str] | None:
    rc = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/{name}").json()
    conditions = (rc.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "ReplicaFailure"), None)


def test_a_quota_refusing_pods_sets_replica_failure_until_scaled_within_it(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    """upstream's calculateStatus: a refused create sets ReplicaFailure (FailedCreate, the API's error as the
    message); a sync without a failure removes it."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "two"}, "spec": {"hard": {"pods": "2"}}}
    assert client.post(f"/api/v1/namespaces/{ns}/resourcequotas", json=quota).status_code == 201
    eventually(
        lambda: (client.get(f"/api/v1/namespaces/{ns}/resourcequotas/two").json().get("status") or {}).get("hard"),
        what="the quota's status",
    )
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=RC.replace("replicas: 2", "replicas: 3"))
    failure = eventually(lambda: replica_failure(client, ns, "nginx"), what="a ReplicaFailure condition")
    assert failure["status"] == "True" and failure["reason"] == "FailedCreate"
    assert "is forbidden: exceeded quota: two" in failure["message"] and failure["lastTransitionTime"]

    cluster.kubectl("-n", ns, "scale", "rc", "nginx", "--replicas=2")

    def cleared() -> bool:
        rc = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/nginx").json()
        observed = (rc.get("status") or {}).get("observedGeneration") == rc["metadata"]["generation"]
        return observed and replica_failure(client, ns, "nginx") is None

    eventually(cleared, what="the condition gone")
