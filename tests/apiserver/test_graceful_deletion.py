"""Graceful deletion of pods (issue 20), as upstream's BeforeDelete and the pod strategy's CheckGracefulDelete: a
DELETE of a pod a node runs sets `deletionTimestamp` to the end of its grace period and keeps it (Terminating) until
its node deletes it with a period of 0; a later DELETE may only shorten the period; unscheduled and ended pods go
at once; `kubectl delete --grace-period=0 --force` removes it. On the session cluster: no node agent runs, so a
Terminating pod stays until the test finishes it as a kubelet would."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tinykube.api.meta import parse_time

PODS = "/api/v1/namespaces/{ns}/pods"


def pod(name: str, node: str = "", grace: int | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}], "schedulerName": "none"}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def create(api: httpx.Client, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    created = api.post(PODS.format(ns=ns), json=body)
    assert created.status_code == 201, created.text
    found: dict[str, Any] = created.json()
    return found


def delete(api: httpx.Client, ns: str, name: str, **options: Any) -> httpx.Response:
    return api.request("DELETE", f"{PODS.format(ns=ns)}/{name}", json=options or None)


def test_a_running_pod_is_terminating_for_its_grace_period(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, pod("web", node="node-9"))
    first = delete(api, namespace, "web")
    assert first.status_code == 200, first.text
    meta = first.json()["metadata"]
    created = parse_time(meta["creationTimestamp"])
    ends = parse_time(meta["deletionTimestamp"])
    assert meta["deletionGracePeriodSeconds"] == 30 and created is not None and ends is not None
    assert timedelta(seconds=29) <= ends - created <= timedelta(seconds=32)  # now + the default 30 s
    assert (
        api.get(f"{PODS.format(ns=namespace)}/web").json()["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    )

    again = delete(api, namespace, "web")  # pending and not shortened: nothing changes
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == first.json()["metadata"]["resourceVersion"]
    longer = delete(api, namespace, "web", gracePeriodSeconds=60)
    assert longer.json()["metadata"]["deletionGracePeriodSeconds"] == 30

    shorter = delete(api, namespace, "web", gracePeriodSeconds=10).json()["metadata"]
    assert shorter["deletionGracePeriodSeconds"] == 10
    moved = parse_time(shorter["deletionTimestamp"])
    assert moved is not None and ends - moved == timedelta(seconds=20)

    # its status may still change (the node reports containers stopping) without ending the deletion
    status = {"status": {"phase": "Running"}}
    patched = api.patch(
        f"{PODS.format(ns=namespace)}/web/status",
        json=status,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert api.get(f"{PODS.format(ns=namespace)}/web").status_code == 200

    uid = shorter["uid"]
    wrong = delete(api, namespace, "web", gracePeriodSeconds=0, preconditions={"uid": "not-" + uid})
    assert wrong.status_code == 409
    gone = delete(api, namespace, "web", gracePeriodSeconds=0, preconditions={"uid": uid})  # the kubelet's last word
    assert gone.status_code == 200, gone.text
    assert api.get(f"{PODS.format(ns=namespace)}/web").status_code == 404


def test_pods_no_node_runs_go_at_once(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, pod("pending"))  # not scheduled
    assert delete(api, namespace, "pending").status_code == 200
    assert api.get(f"{PODS.format(ns=namespace)}/pending").status_code == 404

    create(api, namespace, pod("done", node="node-9"))
    ended = {"status": {"phase": "Succeeded"}}
    api.patch(
        f"{PODS.format(ns=namespace)}/done/status", json=ended, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert delete(api, namespace, "done").status_code == 200
    assert api.get(f"{PODS.format(ns=namespace)}/done").status_code == 404

    create(api, namespace, pod("quick", node="node-9", grace=0))  # terminationGracePeriodSeconds: 0
    assert delete(api, namespace, "quick").status_code == 200
    assert api.get(f"{PODS.format(ns=namespace)}/quick").status_code == 404


def test_a_negative_or_bad_grace_period(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, pod("neg", node="node-9"))
    answer = api.delete(f"{PODS.format(ns=namespace)}/neg", params={"gracePeriodSeconds": "-5"})
    assert answer.json()["metadata"]["deletionGracePeriodSeconds"] == 1  # as upstream: a negative period is 1 s
    bad = api.delete(f"{PODS.format(ns=namespace)}/neg", params={"gracePeriodSeconds": "soon"})
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"
    assert api.delete(f"{PODS.format(ns=namespace)}/neg", params={"gracePeriodSeconds": "0"}).status_code == 200


def test_kubectl_force_deletes_and_terminating_shows(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    create(api, namespace, pod("stuck", node="node-9"))
    cluster.kubectl("-n", namespace, "delete", "pod", "stuck", "--wait=false")
    listed = cluster.kubectl("-n", namespace, "get", "pod", "stuck").stdout
    assert "Terminating" in listed
    forced = cluster.kubectl("-n", namespace, "delete", "pod", "stuck", "--grace-period=0", "--force")
    assert 'pod "stuck" force deleted' in forced.stdout
    assert "Immediate deletion does not wait for confirmation" in forced.stderr
    assert api.get(f"{PODS.format(ns=namespace)}/stuck").status_code == 404


def test_a_terminating_pod_leaves_endpoints_and_is_terminating_in_slices(api: httpx.Client, namespace: str) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    assert api.post(f"/api/v1/namespaces/{namespace}/services", json=service).status_code == 201
    create(api, namespace, pod("web-1", node="node-9", labels={"app": "web"}))
    running = {
        "status": {
            "phase": "Running",
            "podIP": "10.244.9.7",
            "podIPs": [{"ip": "10.244.9.7"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        }
    }
    api.patch(
        f"{PODS.format(ns=namespace)}/web-1/status",
        json=running,
        headers={"Content-Type": "application/merge-patch+json"},
    )

    def slice_conditions() -> dict[str, Any] | None:
        items = api.get(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices").json()["items"]
        endpoints = [e for s in items for e in s.get("endpoints") or []]
        return endpoints[0]["conditions"] if endpoints else None

    assert eventually(slice_conditions) == {"ready": True, "serving": True, "terminating": False}
    delete(api, namespace, "web-1")
    assert eventually(lambda: (c := slice_conditions()) and c["terminating"] and c) == {
        "ready": False,
        "serving": True,
        "terminating": True,
    }
    endpoints = api.get(f"/api/v1/namespaces/{namespace}/endpoints/web").json()
    assert eventually(lambda: not api.get(f"/api/v1/namespaces/{namespace}/endpoints/web").json().get("subsets")), (
        endpoints
    )
    delete(api, namespace, "web-1", gracePeriodSeconds=0)
