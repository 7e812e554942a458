"""ResourceQuota, LimitRange and PriorityClass against the real apiserver and controllers with kubectl v1.32: what a
user types, the messages upstream gives (`exceeded quota: ...`, `maximum cpu usage per Container ...`), and
`status.used` kept by the quota controller — charged at admission so concurrent creates cannot exceed a quota.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx

from tests.conftest import eventually

if TYPE_CHECKING:
    from tests.conftest import RunningCluster
    from tests.e2e.conftest import Kubectl


def quota_used(kubectl: Kubectl, name: str) -> dict[str, str]:
    used: dict[str, str] = kubectl.json("get", "quota", name).get("status", {}).get("used") or {}
    return used


def counted(kubectl: Kubectl, name: str, expected: dict[str, str]) -> None:
    """Wait until the quota controller has counted the quota as `expected`."""
    eventually(lambda: quota_used(kubectl, name) == expected, what=f"quota {name} counted as {expected}")


def run(name: str, spec: dict[str, Any] | None = None) -> list[str]:
    """`kubectl run`'s arguments for a pod, with `spec` merged into the one kubectl makes."""
    overrides = ["--overrides=" + json.dumps({"spec": spec})] if spec else []
    return ["run", name, "--image=nginx", *overrides]


def sized(name: str, limits: dict[str, str]) -> dict[str, Any]:
    return {"containers": [{"name": name, "image": "nginx", "resources": {"limits": limits}}]}


def test_object_count_quota_refuses_the_next_object_and_describe_shows_it(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "q", "--hard=pods=2,count/configmaps=2")
    counted(kubectl, "q", {"pods": "0", "count/configmaps": "1"})  # the namespace's kube-root-ca.crt
    kubectl(*run("one"))
    kubectl(*run("two"))
    refused = kubectl.fail(*run("three"))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "three" is forbidden: '
        "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    )
    kubectl("create", "configmap", "first", "--from-literal=a=b")
    refused = kubectl.fail("create", "configmap", "second", "--from-literal=a=b")
    assert refused.stderr.strip() == (
        'error: failed to create configmap: configmaps "second" is forbidden: exceeded quota: q, '
        "requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"
    )
    described = kubectl("describe", "quota", "q").stdout
    rows = {line.split()[0]: line.split()[1:] for line in described.splitlines()[3:] if line.strip()}
    assert re.search(r"Resource\s+Used\s+Hard", described), described
    assert rows["pods"] == ["2", "2"] and rows["count/configmaps"] == ["2", "2"]
    assert kubectl.json("get", "quota", "q")["status"]["hard"] == {"pods": "2", "count/configmaps": "2"}


def test_a_deleted_pod_gives_its_quota_back(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "q", "--hard=pods=1")
    counted(kubectl, "q", {"pods": "0"})
    kubectl(*run("one"))
    kubectl("delete", "pod", "one", "--wait=false")
    counted(kubectl, "q", {"pods": "0"})  # the controller recounted after the deletion
    kubectl(*run("two"))


def test_dry_run_is_admitted_but_charges_nothing(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "q", "--hard=pods=1")
    counted(kubectl, "q", {"pods": "0"})
    kubectl(*run("dry"), "--dry-run=server")
    assert quota_used(kubectl, "q") == {"pods": "0"}


def test_compute_quota_wants_resources_and_counts_them(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "compute", "--hard=requests.cpu=1,limits.memory=1Gi")
    counted(kubectl, "compute", {"requests.cpu": "0", "limits.memory": "0"})
    refused = kubectl.fail(*run("bare"))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "bare" is forbidden: failed quota: compute: '
        "must specify limits.memory for: bare; requests.cpu for: bare"
    )
    kubectl(*run("first", sized("c", {"cpu": "600m", "memory": "512Mi"})))  # requests default to the limits
    assert quota_used(kubectl, "compute") == {"requests.cpu": "600m", "limits.memory": "512Mi"}
    refused = kubectl.fail(*run("second", sized("c", {"cpu": "600m", "memory": "512Mi"})))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "second" is forbidden: exceeded quota: compute, '
        "requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    )


def test_node_ports_are_counted_on_create_and_on_a_change_of_type(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "q", "--hard=services.nodeports=1,services=5")
    counted(kubectl, "q", {"services.nodeports": "0", "services": "0"})
    kubectl("create", "service", "nodeport", "first", "--tcp=80:8080")
    kubectl("create", "service", "clusterip", "second", "--tcp=80:8080")
    refused = kubectl.fail("patch", "service", "second", "-p", '{"spec":{"type":"NodePort"}}')
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): services "second" is forbidden: exceeded quota: q, '
        "requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"
    )
    assert quota_used(kubectl, "q") == {"services.nodeports": "1", "services": "2"}


def test_limit_range_defaults_a_pods_containers(kubectl: Kubectl) -> None:
    kubectl.apply(
        """\
apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 250m, memory: 64Mi}
    max: {cpu: "1"}
"""
    )
    kubectl(*run("web"))
    created = kubectl.json("get", "pod", "web")
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "250m", "memory": "64Mi"},
    }
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web"
    )
    assert created["status"]["qosClass"] == "Burstable"
    refused = kubectl.fail(*run("big", sized("big", {"cpu": "2"})))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )


def test_priority_class_resolves_to_priority(kubectl: Kubectl) -> None:
    classes = {c["metadata"]["name"]: c["value"] for c in kubectl.json("get", "priorityclasses")["items"]}
    assert classes["system-cluster-critical"] == 2_000_000_000
    assert classes["system-node-critical"] == 2_000_001_000
    kubectl(*run("critical", {"priorityClassName": "system-cluster-critical"}))
    spec = kubectl.json("get", "pod", "critical")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (2_000_000_000, "PreemptLowerPriority")
    kubectl(*run("plain"))
    assert kubectl.json("get", "pod", "plain")["spec"]["priority"] == 0
    refused = kubectl.fail(*run("lost", {"priorityClassName": "missing"}))
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "lost" is forbidden: no PriorityClass with name missing was found'
    )


def test_concurrent_creates_never_exceed_a_quota(kubectl: Kubectl, cluster: RunningCluster, namespace: str) -> None:
    kubectl("create", "quota", "q", "--hard=pods=3")
    counted(kubectl, "q", {"pods": "0"})

    def create(i: int) -> httpx.Response:
        body = {"metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        with cluster.http() as client:
            return client.post(f"/api/v1/namespaces/{namespace}/pods", json=body)

    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(create, range(10)))
    assert sorted(r.status_code for r in responses) == [201] * 3 + [403] * 7
    assert all("exceeded quota: q" in r.json()["message"] for r in responses if r.status_code == 403)
    assert len(kubectl.json("get", "pods")["items"]) == 3
    assert quota_used(kubectl, "q") == {"pods": "3"}
