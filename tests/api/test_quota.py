"""Quota accounting (tinykube/api/quota.py and podresources.py): what objects use, which quotas they count against,
upstream's constraint message, and a pod's effective requests and limits."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tinykube.api.podresources import pod_limits, pod_requests
from tinykube.api.quantity import parse_quantity, rendered, resource_list
from tinykube.api.quota import (
    CREATE,
    UPDATE,
    PersistentVolumeClaimEvaluator,
    PodEvaluator,
    ScopeRequirement,
    ServiceEvaluator,
    evaluator_for,
    evaluator_of_name,
    exceeding,
    pretty,
    quota_v1_pod,
    scope_requirements,
    subtract_floored,
    usage_in,
)

NOW = time.time()


def container(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "nginx", "resources": resources}


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": list(containers), **spec}}


# ---- a pod's requests and limits ------------------------------------------------------------------------------------


def test_pod_requests_add_app_containers_and_take_the_larger_init_container() -> None:
    spec = pod(
        container("a", {"cpu": "100m", "memory": "64Mi"}),
        container("b", {"cpu": "200m"}),
        initContainers=[container("init", {"cpu": "1", "memory": "32Mi"})],
    )["spec"]
    assert rendered(pod_requests(spec)) == {"cpu": "1", "memory": "64Mi"}


def test_sidecars_run_beside_the_app_and_the_later_init_containers() -> None:
    sidecar = {**container("log", {"cpu": "100m"}), "restartPolicy": "Always"}
    spec = pod(
        container("app", {"cpu": "200m"}),
        initContainers=[sidecar, container("migrate", {"cpu": "250m"})],
    )["spec"]
    # app + sidecar = 300m; the init container needs 250m beside the sidecar = 350m
    assert rendered(pod_requests(spec)) == {"cpu": "350m"}


def test_overhead_adds_to_requests_and_to_the_limits_the_pod_has() -> None:
    spec = pod(container("a", {"cpu": "100m"}, {"cpu": "200m"}), overhead={"cpu": "50m", "memory": "10Mi"})["spec"]
    assert rendered(pod_requests(spec)) == {"cpu": "150m", "memory": "10Mi"}
    assert rendered(pod_limits(spec)) == {"cpu": "250m"}
    assert rendered(pod_requests(spec, overhead=False)) == {"cpu": "100m"}


# ---- evaluators ---------------------------------------------------------------------------------------------------


def test_pod_usage_counts_compute_while_the_pod_is_charged() -> None:
    running = pod(container("a", {"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m", "memory": "64Mi"}))
    usage = rendered(PodEvaluator().usage(running, NOW))
    assert usage == {
        "count/pods": "1",
        "pods": "1",
        "cpu": "250m",
        "requests.cpu": "250m",
        "limits.cpu": "500m",
        "memory": "64Mi",
        "requests.memory": "64Mi",
        "limits.memory": "64Mi",
    }
    finished = {**running, "status": {"phase": "Succeeded"}}
    assert rendered(PodEvaluator().usage(finished, NOW)) == {"count/pods": "1"}


def test_a_pod_stuck_terminating_past_its_grace_period_is_not_charged() -> None:
    stuck = pod(container("a"))
    stuck["metadata"] |= {"deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}
    assert not quota_v1_pod(stuck, NOW)
    stuck["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW + 60))
    assert quota_v1_pod(stuck, NOW)


def test_compute_quota_requires_every_container_to_state_it() -> None:
    obj = pod(container("b", {"memory": "1Gi"}), container("a"), initContainers=[container("init", {"cpu": "1"})])
    required = ["limits.cpu", "requests.memory", "pods"]
    assert PodEvaluator().constraints(required, obj) == (
        "must specify limits.cpu for: a,b,init; requests.memory for: a,init"
    )
    assert PodEvaluator().constraints(["pods", "count/pods"], obj) == ""


@pytest.mark.parametrize(
    ("requirement", "spec", "matches"),
    [
        pytest.param(ScopeRequirement("Terminating"), {"activeDeadlineSeconds": 30}, True, id="terminating"),
        pytest.param(ScopeRequirement("Terminating"), {}, False, id="not-terminating"),
        pytest.param(ScopeRequirement("NotTerminating"), {}, True, id="not-terminating-scope"),
        pytest.param(ScopeRequirement("BestEffort"), {}, True, id="best-effort"),
        pytest.param(ScopeRequirement("NotBestEffort"), {}, False, id="best-effort-not-matched"),
        pytest.param(ScopeRequirement("PriorityClass"), {"priorityClassName": "high"}, True, id="priority-exists"),
        pytest.param(ScopeRequirement("PriorityClass"), {}, False, id="priority-none"),
        pytest.param(
            ScopeRequirement("PriorityClass", "In", ("high", "low")), {"priorityClassName": "low"}, True, id="in"
        ),
        pytest.param(ScopeRequirement("PriorityClass", "NotIn", ("high",)), {}, True, id="not-in-unset"),
        pytest.param(ScopeRequirement("PriorityClass", "DoesNotExist"), {}, False, id="does-not-exist"),
        pytest.param(
            ScopeRequirement("CrossNamespacePodAffinity"),
            {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"namespaces": ["x"]}]}}},
            True,
            id="cross-namespace",
        ),
    ],
)
def test_pod_scopes(requirement: ScopeRequirement, spec: dict[str, Any], matches: bool) -> None:
    assert PodEvaluator().matches_scope(requirement, pod(container("a"), **spec)) is matches


def test_best_effort_is_about_cpu_and_memory() -> None:
    storage_only = pod(container("a", {"ephemeral-storage": "1Gi"}))
    assert PodEvaluator().matches_scope(ScopeRequirement("BestEffort"), storage_only)
    assert not PodEvaluator().matches_scope(ScopeRequirement("BestEffort"), pod(container("a", {"cpu": "1m"})))


def test_scopes_of_a_quota() -> None:
    quota = {
        "spec": {
            "scopes": ["NotTerminating"],
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["a"]}]},
        }
    }
    assert scope_requirements(quota) == [
        ScopeRequirement("NotTerminating"),
        ScopeRequirement("PriorityClass", "In", ("a",)),
    ]


def test_object_counts_never_match_a_scoped_quota() -> None:
    configmaps = evaluator_for("", "configmaps")
    assert configmaps.matches(["configmaps"], [], {})
    assert not configmaps.matches(["configmaps"], [ScopeRequirement("BestEffort")], {})
    assert rendered(configmaps.usage({}, NOW)) == {"count/configmaps": "1", "configmaps": "1"}
    deployments = evaluator_for("apps", "deployments")
    assert rendered(deployments.usage({}, NOW)) == {"count/deployments.apps": "1"}
    assert deployments.handles(CREATE) and not deployments.handles(UPDATE)


@pytest.mark.parametrize(
    ("spec", "usage"),
    [
        pytest.param({"ports": [{"port": 80}]}, {"nodeports": "0", "loadbalancers": "0"}, id="cluster-ip"),
        pytest.param(
            {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]},
            {"nodeports": "2", "loadbalancers": "0"},
            id="node-port",
        ),
        pytest.param(
            {"type": "LoadBalancer", "ports": [{"port": 80}]}, {"nodeports": "1", "loadbalancers": "1"}, id="lb"
        ),
        pytest.param(
            {
                "type": "LoadBalancer",
                "allocateLoadBalancerNodePorts": False,
                "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}],
            },
            {"nodeports": "1", "loadbalancers": "1"},
            id="lb-without-node-ports",
        ),
    ],
)
def test_service_usage(spec: dict[str, Any], usage: dict[str, str]) -> None:
    got = rendered(ServiceEvaluator().usage({"spec": spec}, NOW))
    assert got == {
        "count/services": "1",
        "services": "1",
        "services.nodeports": usage["nodeports"],
        "services.loadbalancers": usage["loadbalancers"],
    }


def test_claim_usage_per_storage_class_in_whole_bytes() -> None:
    claim = {"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1500m"}}}}
    assert rendered(PersistentVolumeClaimEvaluator().usage(claim, NOW)) == {
        "count/persistentvolumeclaims": "1",
        "persistentvolumeclaims": "1",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "requests.storage": "2",
        "fast.storageclass.storage.k8s.io/requests.storage": "2",
    }


@pytest.mark.parametrize(
    ("name", "measured_by"),
    [
        pytest.param("pods", "count/pods", id="pods"),
        pytest.param("requests.cpu", "count/pods", id="requests-cpu"),
        pytest.param("requests.example.com/gpu", "count/pods", id="extended"),
        pytest.param("hugepages-2Mi", "count/pods", id="hugepages"),
        pytest.param("services.nodeports", "count/services", id="nodeports"),
        pytest.param("requests.storage", "count/persistentvolumeclaims", id="storage"),
        pytest.param("gold.storageclass.storage.k8s.io/requests.storage", "count/persistentvolumeclaims", id="class"),
        pytest.param("secrets", "count/secrets", id="legacy-secrets"),
        pytest.param("count/configmaps", "count/configmaps", id="count-configmaps"),
        pytest.param("count/deployments.apps", "count/deployments.apps", id="count-group"),
        pytest.param("count/widgets.example.com", "count/widgets.example.com", id="count-custom"),
    ],
)
def test_the_evaluator_of_a_resource_name(name: str, measured_by: str) -> None:
    evaluator = evaluator_of_name(name)
    assert evaluator is not None and evaluator.count_name == measured_by


def test_usage_in_a_namespace_counts_only_what_is_in_scope() -> None:
    pods = [
        pod(container("a", {"cpu": "1"})),
        pod(container("b")),
        {**pod(container("c", {"cpu": "1"})), "status": {"phase": "Failed"}},
    ]
    used = usage_in(PodEvaluator(), ["pods", "requests.cpu", "count/pods"], [ScopeRequirement("NotBestEffort")], pods)
    assert rendered(used) == {"pods": "1", "requests.cpu": "1", "count/pods": "2"}


def test_list_arithmetic() -> None:
    a, b = resource_list({"pods": "3", "cpu": "1"}), resource_list({"pods": "5", "memory": "1Gi"})
    assert rendered(subtract_floored(a, b)) == {"pods": "0", "cpu": "1", "memory": "0"}
    assert exceeding(b, {"pods": parse_quantity("4"), "memory": parse_quantity("2Gi")}) == ["pods"]
    assert pretty({"requests.cpu": parse_quantity("500m"), "pods": parse_quantity("1")}) == "pods=1,requests.cpu=500m"
