"""Pod termination on simulated nodes (issue 20): a deleted pod is Terminating until its node agent has stopped
its containers (a `Killing` event each) and deleted it with a grace period of 0, as a kubelet does."""

from __future__ import annotations

import json
import subprocess
import sys
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


def test_describe_shows_why_a_pod_runs_or_not(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    cluster.kubectl("-n", ns, "run", "fine", "--image=nginx:1.27")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/fine", "--timeout=30s")
    described = eventually(
        lambda: "Started" in (out := cluster.kubectl("-n", ns, "describe", "pod", "fine").stdout) and out
    )
    events = described.split("Events:", 1)[1]
    for reason, source, message in (
        ("Scheduled", "default-scheduler", f"Successfully assigned {ns}/fine to node-1"),
        ("Pulled", "kubelet", 'Container image "nginx:1.27" already present on machine'),
        ("Created", "kubelet", "Created container fine"),
        ("Started", "kubelet", "Started container fine"),
    ):
        assert any(reason in line and source in line and message in line for line in events.splitlines()), (
            reason,
            events,
        )

    cluster.kubectl(
        "-n", ns, "run", "nowhere", "--image=nginx", "--overrides", '{"spec":{"nodeSelector":{"disk":"ssd"}}}'
    )
    failed = eventually(lambda: [e for e in events_of(client, ns, "nowhere") if e[0] == "FailedScheduling"])
    assert failed[0][1] == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )

    crash = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "crash", "annotations": {"tinykube.io/exit-code": "1", "tinykube.io/run-seconds": "0"}},
        "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]},
    }
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=crash).status_code == 201
    back_off = eventually(lambda: [e for e in events_of(client, ns, "crash") if e[0] == "BackOff"], timeout=30)
    uid = client.get(f"/api/v1/namespaces/{ns}/pods/crash").json()["metadata"]["uid"]
    assert back_off[0][1] == f"Back-off restarting failed container c in pod crash_{ns}({uid})"


def events_of(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str]]:
    return [(reason, message) for reason, message, _ in events(client, ns, name)]


def test_a_pod_waits_for_the_config_map_its_environment_names(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "configured"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}],
                }
            ]
        },
    }
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=manifest).status_code == 201

    def waiting() -> dict[str, Any] | None:
        statuses = client.get(f"/api/v1/namespaces/{ns}/pods/configured").json()["status"].get("containerStatuses")
        return (statuses or [{}])[0].get("state", {}).get("waiting")

    assert eventually(waiting) == {"reason": "CreateContainerConfigError", "message": 'configmap "settings" not found'}
    assert client.get(f"/api/v1/namespaces/{ns}/pods/configured").json()["status"]["phase"] == "Pending"
    failed = eventually(lambda: [m for r, m in events_of(client, ns, "configured") if r == "Failed"])
    assert failed == ['Error: configmap "settings" not found']
    cluster.kubectl("-n", ns, "create", "configmap", "settings", "--from-literal=mode=fast")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/configured", "--timeout=30s")
    env = subprocess.run(
        [sys.executable, "-m", "tinykube.cli", "env", "configured", "-n", ns, "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "MODE=fast" in env.stdout.splitlines(), env.stderr


def test_a_pod_waits_for_its_volumes_sources(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mounting"},
        "spec": {
            "volumes": [{"name": "site", "configMap": {"name": "site"}}],
            "containers": [
                {"name": "c", "image": "nginx", "volumeMounts": [{"name": "site", "mountPath": "/etc/site"}]}
            ],
        },
    }
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=manifest).status_code == 201
    failed = eventually(lambda: [m for r, m in events_of(client, ns, "mounting") if r == "FailedMount"])
    assert failed == ['MountVolume.SetUp failed for volume "site" : configmap "site" not found']
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/mounting").json()
    assert pod["status"]["phase"] == "Pending"
    assert pod["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    cluster.kubectl("-n", ns, "create", "configmap", "site", "--from-literal=index.html=hi")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/mounting", "--timeout=30s")
