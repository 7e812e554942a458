"""The kubelet's admission of pods bound to it and its active deadline (issue 38: the conformance specs "Should
recreate evicted statefulset" and "should allow activeDeadlineSeconds to be updated"): the pure rules, and both on
a real `tinykube up --nodes 1`."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from tests.conftest import eventually
from tests.node.conftest import phase_is, simulated_cluster
from tinykube.api.noderesources import Footprint, NodeTotals
from tinykube.node.admission import Rejection, admit

Object = dict[str, Any]
NODE: Object = {
    "metadata": {"name": "n1", "labels": {"kubernetes.io/os": "linux", "disk": "ssd"}},
    "spec": {},
    "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "3", "example.com/gpu": "1"}},
}


def running(*pods: Object) -> NodeTotals:
    """What the node already runs, summed as the agent keeps it."""
    totals = NodeTotals()
    for p in pods:
        totals.add(Footprint.of(p, f"ns/{p['metadata']['name']}", "n1"))
    return totals


def pod(name: str, *, cpu: str = "", port: int = 0, **spec: Any) -> Object:
    c: Object = {"name": "c", "image": "busybox"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    if port:
        c["ports"] = [{"containerPort": port, "hostPort": port}]
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [c], **spec}}


def test_a_pod_that_fits_is_admitted() -> None:
    beside = running(pod("b", cpu="1", port=81))
    assert admit(pod("a", cpu="1", port=80, nodeSelector={"disk": "ssd"}), NODE, beside) is None


def test_the_first_failure_in_upstreams_order_is_the_reason() -> None:
    full = running(pod("b", cpu="1500m", port=80))
    assert admit(pod("a", cpu="1", port=80), NODE, full) == Rejection(
        "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"
    )
    ports = admit(pod("a", port=80), NODE, full)
    assert ports is not None and ports.reason == "NodePorts"
    assert ports.status_message == (
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    )
    many = running(*(pod(str(i)) for i in range(3)))
    assert admit(pod("a"), NODE, many) == Rejection(
        "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"
    )


def test_affinity_taints_and_the_os_are_checked_again() -> None:
    wrong = admit(pod("a", nodeSelector={"disk": "hdd"}), NODE, running())
    assert wrong == Rejection(
        "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
    )
    tainted = {**NODE, "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}}
    refused = admit(pod("a"), tainted, running())
    assert refused is not None and refused.reason == "TaintToleration"
    tolerating = pod("a", tolerations=[{"key": "k", "operator": "Exists"}])
    assert admit(tolerating, tainted, running()) is None
    no_schedule = {**NODE, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    assert admit(pod("a"), no_schedule, running()) is None  # the kubelet looks at NoExecute only
    windows = admit(pod("a", os={"name": "windows"}), NODE, running())
    assert windows is not None and windows.reason == "PodOSNotSupported"


def test_an_extended_resource_the_node_lacks_is_not_checked_but_one_it_has_is() -> None:
    def wanting(resource: str, amount: str) -> Object:
        found = pod("a")
        found["spec"]["containers"][0]["resources"] = {"requests": {resource: amount}, "limits": {resource: amount}}
        return found

    assert admit(wanting("other.com/fpga", "5"), NODE, running()) is None
    short = admit(wanting("example.com/gpu", "2"), NODE, running())
    assert short is not None and short.reason == "OutOfexample.com/gpu"


# On a cluster


sim = simulated_cluster("admission")


def first_failed(client: httpx.Client, ns: str, name: str, version: str) -> Object:
    """The pod as the first watch event that shows it Failed reports it."""
    params = {"watch": "true", "resourceVersion": version, "fieldSelector": f"metadata.name={name}"}
    with client.stream("GET", f"/api/v1/namespaces/{ns}/pods", params={**params, "timeoutSeconds": "60"}) as stream:
        for line in stream.iter_lines():
            found = orjson.loads(line)["object"]
            if (found.get("status") or {}).get("phase") == "Failed":
                return dict(found)
    raise AssertionError(f"{name} was never Failed")


def node_name(client: httpx.Client) -> str:
    return str(client.get("/api/v1/nodes").json()["items"][0]["metadata"]["name"])


def test_a_pod_bound_beside_one_holding_its_host_port_is_rejected_and_its_statefulset_makes_another(
    client: httpx.Client, ns: str
) -> None:
    node = node_name(client)
    holder = pod("holder", port=21017, nodeName=node)
    del holder["metadata"]["namespace"]
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=holder).status_code == 201
    eventually(lambda: phase_is(client, ns, "holder", "Running"), what="the port holder runs")
    template = pod("", port=21017, nodeName=node)
    template["metadata"] = {"labels": {"app": "ss"}}
    ss = {
        "metadata": {"name": "ss"},
        "spec": {"replicas": 1, "serviceName": "ss", "selector": {"matchLabels": {"app": "ss"}}, "template": template},
    }
    listed = client.get(f"/api/v1/namespaces/{ns}/pods").json()["metadata"]["resourceVersion"]
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/statefulsets", json=ss).status_code == 201
    rejected = first_failed(client, ns, "ss-0", listed)  # its StatefulSet deletes it soon after: watched, not read
    assert rejected["status"]["reason"] == "NodePorts"
    assert rejected["status"]["message"].startswith("Pod was rejected: Predicate NodePorts failed")
    assert "containerStatuses" not in rejected["status"]  # nothing of it ran
    events = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": "reason=NodePorts"}).json()
    assert any(e["type"] == "Warning" and e["source"]["component"] == "kubelet" for e in events["items"])
    first_uid = rejected["metadata"]["uid"]
    gone = client.delete(f"/api/v1/namespaces/{ns}/pods/holder", params={"gracePeriodSeconds": "0"})
    assert gone.status_code == 200

    def replaced_and_running() -> Object | None:
        found = client.get(f"/api/v1/namespaces/{ns}/pods/ss-0")
        if found.status_code != 200 or found.json()["metadata"]["uid"] == first_uid:
            return None
        return found.json() if found.json()["status"].get("phase") == "Running" else None

    eventually(replaced_and_running, what="ss-0 made again and running once the port is free")


def test_a_pod_past_its_active_deadline_is_stopped_and_fails_and_the_deadline_may_be_shortened(
    client: httpx.Client, ns: str
) -> None:
    body = pod("deadline", activeDeadlineSeconds=3600)
    del body["metadata"]["namespace"]
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    eventually(lambda: phase_is(client, ns, "deadline", "Running"), what="the pod runs")
    patch = [{"op": "replace", "path": "/spec/activeDeadlineSeconds", "value": 2}]
    headers = {"Content-Type": "application/json-patch+json"}
    assert client.patch(f"/api/v1/namespaces/{ns}/pods/deadline", json=patch, headers=headers).status_code == 200
    failed = eventually(lambda: phase_is(client, ns, "deadline", "Failed"), what="the pod failed at its deadline")
    status = failed["status"]
    assert (status["reason"], status["message"]) == (
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    )
    [container] = status["containerStatuses"]
    assert "terminated" in container["state"] and not container["ready"]
    gone = client.delete(f"/api/v1/namespaces/{ns}/pods/deadline")
    assert gone.status_code == 200
    eventually(
        lambda: client.get(f"/api/v1/namespaces/{ns}/pods/deadline").status_code == 404, what="the ended pod deleted"
    )
