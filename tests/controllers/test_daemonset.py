"""DaemonSets (issue 19) on a cluster of three simulated nodes: one pod per node that should run it, placed by the
scheduler through a node affinity on the node's name; nodes labelled, tainted and cordoned; rolling updates,
history and undo, OnDelete."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.controllers.daemonset import daemon_pod_spec, node_of

Object = dict[str, Any]
APPS = "/apis/apps/v1/namespaces"
MERGE = {"Content-Type": "application/merge-patch+json"}
NODES = ["node-1", "node-2", "node-3"]


def test_a_daemon_pod_names_its_node_and_tolerates_what_upstream_adds() -> None:
    template = {"spec": {"containers": [{"name": "c"}], "tolerations": [{"key": "a", "operator": "Exists"}]}}
    spec = daemon_pod_spec({}, template, "node-2")
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]
    keys = [t["key"] for t in spec["tolerations"]]
    assert keys[0] == "a" and "node.kubernetes.io/unschedulable" in keys and "node.kubernetes.io/not-ready" in keys
    assert node_of({"spec": spec}) == "node-2"


cluster = controllers_cluster("--nodes", "3")


def daemon_set(name: str, image: str = "busybox:1.36", **spec: Any) -> Object:
    pod_spec = {"containers": [{"name": "c", "image": image}]} | spec.pop("pod", {})
    template = {"metadata": {"labels": {"app": name}}, "spec": pod_spec}
    body = {"selector": {"matchLabels": {"app": name}}, "template": template} | spec
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name}, "spec": body}


def placed(client: httpx.Client, ns: str, app: str) -> dict[str, str]:
    """node -> image of the set's pods that are not being deleted."""
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return {p["spec"].get("nodeName", "?"): p["spec"]["containers"][0]["image"] for p in live}


def status(client: httpx.Client, ns: str, name: str) -> Object:
    return dict(client.get(f"{APPS}/{ns}/daemonsets/{name}").json().get("status") or {})


def patch_node(client: httpx.Client, node: str, body: Object) -> None:
    response = client.patch(f"/api/v1/nodes/{node}", json=body, headers=MERGE)
    assert response.status_code == 200, response.text


def test_one_pod_on_every_node(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    assert client.post(f"{APPS}/{ns}/daemonsets", json=daemon_set("agent")).status_code == 201
    out = cluster.kubectl("-n", ns, "rollout", "status", "daemonset/agent", "--timeout=30s").stdout
    assert 'daemon set "agent" successfully rolled out' in out
    assert placed(client, ns, "agent") == dict.fromkeys(NODES, "busybox:1.36")
    s = status(client, ns, "agent")
    counts = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled")
    assert [s[k] for k in counts] == [3, 3, 3, 3] and s["numberAvailable"] == 3
    assert s["numberMisscheduled"] == 0 and "numberUnavailable" not in s
    printed = cluster.kubectl("-n", ns, "get", "daemonset", "agent").stdout.split()
    assert printed[:7] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE"]


def test_nodes_that_match_get_a_pod_and_those_that_stop_matching_lose_it(client: httpx.Client, ns: str) -> None:
    label = f"{ns}-runs"
    body = daemon_set("picky", pod={"nodeSelector": {label: "yes"}})
    assert client.post(f"{APPS}/{ns}/daemonsets", json=body).status_code == 201
    try:
        eventually(lambda: status(client, ns, "picky").get("observedGeneration") == 1, what="a status")
        assert placed(client, ns, "picky") == {}
        patch_node(client, "node-2", {"metadata": {"labels": {label: "yes"}}})
        eventually(lambda: list(placed(client, ns, "picky")) == ["node-2"], what="a pod on the labelled node")
        patch_node(client, "node-2", {"metadata": {"labels": {label: None}}})
        eventually(lambda: placed(client, ns, "picky") == {}, what="the pod gone with the label")
    finally:
        patch_node(client, "node-2", {"metadata": {"labels": {label: None}}})


def test_taints_keep_pods_off_unless_tolerated_and_cordoned_nodes_keep_theirs(client: httpx.Client, ns: str) -> None:
    taint = {"key": f"{ns}-dedicated", "value": "x", "effect": "NoSchedule"}
    patch_node(client, "node-3", {"spec": {"taints": [taint], "unschedulable": True}})
    try:
        plain = daemon_set("plain")
        tolerant = daemon_set("tolerant", pod={"tolerations": [{"key": taint["key"], "operator": "Exists"}]})
        for body in (plain, tolerant):
            assert client.post(f"{APPS}/{ns}/daemonsets", json=body).status_code == 201
        eventually(lambda: sorted(placed(client, ns, "plain")) == ["node-1", "node-2"], what="two untainted nodes")
        eventually(lambda: sorted(placed(client, ns, "tolerant")) == NODES, what="all three, cordoned or not")
    finally:
        patch_node(client, "node-3", {"spec": {"taints": None, "unschedulable": None}})


def test_a_rolling_update_keeps_all_but_max_unavailable_and_can_be_undone(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    assert client.post(f"{APPS}/{ns}/daemonsets", json=daemon_set("roll")).status_code == 201
    eventually(lambda: status(client, ns, "roll").get("numberAvailable") == 3, what="three available")
    seen = []

    def rolled() -> bool:
        now = placed(client, ns, "roll")
        seen.append(len(now))
        return now == dict.fromkeys(NODES, "busybox:1.37")

    cluster.kubectl("-n", ns, "set", "image", "daemonset/roll", "c=busybox:1.37")
    eventually(rolled, what="every node at the new image")
    assert min(seen) >= 2  # maxUnavailable 1: never two nodes without a pod at once
    history = cluster.kubectl("-n", ns, "rollout", "history", "daemonset/roll").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    cluster.kubectl("-n", ns, "rollout", "undo", "daemonset/roll")
    eventually(lambda: placed(client, ns, "roll") == dict.fromkeys(NODES, "busybox:1.36"), what="undone")


def test_kubectl_finds_the_current_revision_by_its_bytes(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    """kubectl's rollout undo compares its own getPatch of the set with each revision's `data`, byte for byte: the
    revision of the template now matches, so undoing to it is skipped. Revisions and pods carry the hash alone
    in `controller-revision-hash`, and the set's annotations (the change cause `rollout history` shows)."""
    body = daemon_set("bytes", pod={"hostNetwork": False, "tolerations": []})
    body["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
    assert client.post(f"{APPS}/{ns}/daemonsets", json=body).status_code == 201
    revision = eventually(lambda: client.get(f"{APPS}/{ns}/controllerrevisions").json()["items"], what="a revision")[0]
    digest = revision["metadata"]["labels"]["controller-revision-hash"]
    assert revision["metadata"]["name"] == f"bytes-{digest}"
    assert revision["metadata"]["annotations"] == {"kubernetes.io/change-cause": "first"}
    undo = cluster.kubectl("-n", ns, "rollout", "undo", "daemonset/bytes", "--to-revision=1").stdout
    assert "skipped rollback (current template already matches revision 1)" in undo
    history = cluster.kubectl("-n", ns, "rollout", "history", "daemonset/bytes").stdout
    assert history.splitlines()[2].split() == ["1", "first"]
    eventually(lambda: len(placed(client, ns, "bytes")) == 3, what="three pods")
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=bytes"}).json()["items"]
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in items} == {digest}


def test_on_delete_replaces_only_deleted_pods(client: httpx.Client, ns: str) -> None:
    body = daemon_set("od", updateStrategy={"type": "OnDelete"})
    assert client.post(f"{APPS}/{ns}/daemonsets", json=body).status_code == 201
    eventually(lambda: len(placed(client, ns, "od")) == 3, what="three pods")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}}}
    client.patch(f"{APPS}/{ns}/daemonsets/od", json=patch, headers=MERGE)
    eventually(lambda: status(client, ns, "od").get("observedGeneration") == 2, what="the change seen")
    assert set(placed(client, ns, "od").values()) == {"busybox:1.36"}
    params = {"labelSelector": "app=od", "fieldSelector": "spec.nodeName=node-1"}
    [pod] = client.get(f"/api/v1/namespaces/{ns}/pods", params=params).json()["items"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}")
    eventually(lambda: placed(client, ns, "od").get("node-1") == "busybox:1.37", what="node-1's pod replaced")
    assert placed(client, ns, "od")["node-2"] == "busybox:1.36"
