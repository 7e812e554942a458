"""apps/v1 Deployments and ReplicaSets over HTTP against a real `tinykube up`: discovery, defaulting, validation with
upstream's messages, generation, the status and scale subresources, and server-side printing.

The cluster runs the workload controllers, so a test that reads `status` uses a dry-run create (nothing stored,
nothing for a controller to fill in), and a test of printed rows asks for zero replicas.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from tests.api.test_protobuf import envelope, meta, msg, num, text

APPS = "/apis/apps/v1"
MERGE = {"Content-Type": "application/merge-patch+json"}
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
AGGREGATED = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}


def url(ns: str, plural: str, name: str = "", sub: str = "") -> str:
    return "/".join(p for p in (f"{APPS}/namespaces/{ns}/{plural}", name, sub) if p)


def workload(kind: str, name: str = "web", *, replicas: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
            **spec,
        },
    }
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    return body


def create(api: httpx.Client, ns: str, body: dict[str, Any], **params: str) -> dict[str, Any]:
    plural = body["kind"].lower() + "s"
    response = api.post(url(ns, plural), json=body, params=params)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def invalid(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    assert body["reason"] == "Invalid"
    return body


# ---- discovery ---------------------------------------------------------------------------------------------------


def test_legacy_discovery_lists_apps_with_scale(api: httpx.Client) -> None:
    groups = api.get("/apis").json()["groups"]
    apps = next(g for g in groups if g["name"] == "apps")
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    resources = {r["name"]: r for r in api.get(APPS).json()["resources"]}
    assert resources["deployments"]["shortNames"] == ["deploy"]
    assert resources["deployments"]["categories"] == ["all"]
    assert resources["replicasets"]["shortNames"] == ["rs"]
    for plural in ("deployments", "replicasets"):
        scale = resources[f"{plural}/scale"]
        assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
        assert scale["verbs"] == ["get", "patch", "update"]
        assert "group" not in resources[f"{plural}/status"]
        assert resources[f"{plural}/status"]["kind"] == resources[plural]["kind"]


def test_aggregated_discovery_names_scale_response_kind(api: httpx.Client) -> None:
    items = api.get("/apis", headers=AGGREGATED).json()["items"]
    apps = next(i for i in items if i["metadata"]["name"] == "apps")
    resources = {r["resource"]: r for r in apps["versions"][0]["resources"]}
    deployments = resources["deployments"]
    assert deployments["responseKind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    subresources = {s["subresource"]: s for s in deployments["subresources"]}
    assert subresources["scale"]["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert subresources["scale"]["verbs"] == ["get", "patch", "update"]
    assert subresources["status"]["responseKind"]["kind"] == "Deployment"


# ---- defaulting --------------------------------------------------------------------------------------------------


def test_deployment_gets_upstream_v1_defaults(api: httpx.Client, namespace: str) -> None:
    created = create(api, namespace, workload("Deployment"), dryRun="All")
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Always"
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["terminationGracePeriodSeconds"] == 30
    assert pod_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod_spec["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert spec["template"]["metadata"]["creationTimestamp"] is None
    assert created["metadata"]["generation"] == 1
    assert created["status"] == {}


def test_deployment_defaults_keep_what_was_given(api: httpx.Client, namespace: str) -> None:
    given = workload("Deployment", replicas=0, strategy={"type": "Recreate"}, revisionHistoryLimit=2)
    spec = create(api, namespace, given, dryRun="All")["spec"]
    assert spec["replicas"] == 0
    assert spec["strategy"] == {"type": "Recreate"}  # no rollingUpdate for Recreate
    assert spec["revisionHistoryLimit"] == 2


def test_replicaset_gets_upstream_v1_defaults(api: httpx.Client, namespace: str) -> None:
    created = create(api, namespace, workload("ReplicaSet"), dryRun="All")
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert created["status"] == {"replicas": 0}
    assert created["metadata"]["generation"] == 1


def test_status_in_a_create_is_dropped(api: httpx.Client, namespace: str) -> None:
    body = workload("Deployment")
    body["status"] = {"replicas": 5, "readyReplicas": 5}
    assert create(api, namespace, body, dryRun="All")["status"] == {}


# ---- validation --------------------------------------------------------------------------------------------------


def _without_selector(body: dict[str, Any]) -> None:
    del body["spec"]["selector"]


def _set(path: str, value: Any) -> Any:
    def mutate(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = body["spec"]
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


LABELS = 'map[string]string{"app":"web"}'
VALIDATION_CASES = [
    pytest.param(
        _without_selector,
        "[spec.selector: Required value, spec.template.metadata.labels: Invalid value: "
        f"{LABELS}: `selector` does not match template `labels`]",
        id="no-selector",
    ),
    pytest.param(
        _set("selector", {"matchLabels": {"app": "other"}}),
        f"spec.template.metadata.labels: Invalid value: {LABELS}: `selector` does not match template `labels`",
        id="selector-does-not-match",
    ),
    pytest.param(
        _set("selector", {}),
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
        id="empty-selector",
    ),
    pytest.param(
        _set("replicas", -1),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        id="negative-replicas",
    ),
    pytest.param(
        _set("template.spec.restartPolicy", "Never"),
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        id="restart-policy",
    ),
    pytest.param(
        _set("template.spec.containers", []),
        "spec.template.spec.containers: Required value",
        id="no-containers",
    ),
    pytest.param(
        _set("strategy", {"type": "BlueGreen"}),
        'spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"BlueGreen", '
        'RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", "RollingUpdate"',
        id="strategy-type",
    ),
    pytest.param(
        _set("strategy", {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        id="recreate-with-rolling-update",
    ),
    pytest.param(
        _set("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
        'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: '
        "may not be 0 when `maxSurge` is 0",
        id="surge-and-unavailable-zero",
    ),
    pytest.param(
        _set("strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "lots"}}),
        'spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"lots"}: '
        "a valid percent string must be a numeric string followed by an ending '%' "
        "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        id="surge-not-a-percent",
    ),
    pytest.param(
        _set("progressDeadlineSeconds", 5),
        "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
        id="deadline-below-min-ready",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), VALIDATION_CASES)
def test_deployment_validation_messages(api: httpx.Client, namespace: str, mutate: Any, message: str) -> None:
    body = workload("Deployment", minReadySeconds=10)
    mutate(body)
    status = invalid(api.post(url(namespace, "deployments"), json=body))
    assert status["message"] == f'Deployment.apps "web" is invalid: {message}'
    assert status["details"]["group"] == "apps"
    assert status["details"]["kind"] == "Deployment"


def test_replicaset_validation_shares_the_workload_checks(api: httpx.Client, namespace: str) -> None:
    body = workload("ReplicaSet", replicas=-2)
    body["spec"]["template"]["metadata"]["labels"] = {"app": "nope"}
    status = invalid(api.post(url(namespace, "replicasets"), json=body))
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert fields == ["spec.replicas", "spec.template.metadata.labels"]
    assert status["message"].startswith('ReplicaSet.apps "web" is invalid: [spec.replicas: Invalid value: -2')


@pytest.mark.parametrize("plural", ["deployments", "replicasets"])
def test_selector_is_immutable(api: httpx.Client, namespace: str, plural: str) -> None:
    create(api, namespace, workload("Deployment" if plural == "deployments" else "ReplicaSet", replicas=0))
    other = {"app": "other"}
    patch = {"spec": {"selector": {"matchLabels": other}, "template": {"metadata": {"labels": other}}}}
    status = invalid(api.patch(url(namespace, plural, "web"), json=patch, headers=MERGE))
    assert status["message"].endswith(
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    )


# ---- generation and status ---------------------------------------------------------------------------------------


def _patch(api: httpx.Client, path: str, patch: dict[str, Any]) -> dict[str, Any]:
    response = api.patch(path, json=patch, headers=MERGE)
    assert response.status_code == 200, response.text
    patched: dict[str, Any] = response.json()
    return patched


def _generation_step(api: httpx.Client, path: str, patch: dict[str, Any]) -> int:
    """How much a patch would raise the generation: a dry run against the object just read (the controllers may
    write meanwhile, so the two are paired by resourceVersion)."""
    for _attempt in range(20):
        before = api.get(path).json()["metadata"]
        response = api.patch(path, json=patch, headers=MERGE, params={"dryRun": "All"})
        assert response.status_code == 200, response.text
        after = response.json()["metadata"]
        if after["resourceVersion"] == before["resourceVersion"]:
            return int(after["generation"]) - int(before["generation"])
    raise AssertionError("the object kept changing")


IMAGE_PATCH = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}}


@pytest.mark.parametrize(
    ("kind", "patch", "step"),
    [
        pytest.param("Deployment", {"metadata": {"labels": {"tier": "web"}}}, 0, id="deployment-labels"),
        pytest.param("Deployment", IMAGE_PATCH, 1, id="deployment-template"),
        pytest.param("Deployment", {"spec": {"replicas": 3}}, 1, id="deployment-replicas"),
        # annotations too: the deployment controller copies them onto its ReplicaSets
        pytest.param("Deployment", {"metadata": {"annotations": {"x": "1"}}}, 1, id="deployment-annotations"),
        pytest.param("ReplicaSet", {"metadata": {"annotations": {"x": "1"}}}, 0, id="replicaset-annotations"),
        pytest.param("ReplicaSet", {"spec": {"minReadySeconds": 3}}, 1, id="replicaset-spec"),
    ],
)
def test_generation_follows_upstream(
    api: httpx.Client, namespace: str, kind: str, patch: dict[str, Any], step: int
) -> None:
    created = create(api, namespace, workload(kind, replicas=0))
    assert created["metadata"]["generation"] == 1
    assert _generation_step(api, url(namespace, kind.lower() + "s", "web"), patch) == step


def test_status_subresource_writes_status_and_annotations_only(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("Deployment", replicas=0))
    path = url(namespace, "deployments", "web")
    patch = {
        "metadata": {"annotations": {"deployment.kubernetes.io/revision": "7"}, "labels": {"sneaky": "yes"}},
        "spec": {"replicas": 9},
        "status": {"observedGeneration": 1, "replicas": 0},
    }
    for _attempt in range(20):  # dry runs paired with the object read just before (the controllers write too)
        before = api.get(path).json()
        written = api.patch(f"{path}/status", json=patch, headers=MERGE, params={"dryRun": "All"}).json()
        if written["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]:
            break
    assert written["spec"] == before["spec"]
    assert written["metadata"]["generation"] == before["metadata"]["generation"]
    assert written["metadata"].get("labels") == before["metadata"].get("labels")
    assert written["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "7"
    assert written["status"]["observedGeneration"] == 1


def test_status_counts_are_validated(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("ReplicaSet", replicas=0))
    status = {"status": {"replicas": 1, "readyReplicas": 2}}
    response = api.patch(url(namespace, "replicasets", "web", "status"), json=status, headers=MERGE)
    assert invalid(response)["message"] == (
        'ReplicaSet.apps "web" is invalid: status.readyReplicas: Invalid value: 2: '
        "cannot be greater than the number of replicas"
    )


# ---- scale -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet"])
def test_scale_reads_the_parent(api: httpx.Client, namespace: str, kind: str) -> None:
    plural = kind.lower() + "s"
    body = workload(kind, replicas=0)
    body["spec"]["selector"]["matchExpressions"] = [{"key": "tier", "operator": "NotIn", "values": ["db", "cache"]}]
    created = create(api, namespace, body)
    scale = api.get(url(namespace, plural, "web", "scale")).json()
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["metadata"]["name"] == "web"
    assert scale["metadata"]["namespace"] == namespace
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    assert scale["spec"] == {}  # zero replicas: omitted, as Go's omitempty does
    assert scale["status"]["selector"] == "app=web,tier notin (cache,db)"


def test_scale_put_and_patch_change_spec_replicas(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("Deployment", replicas=0))
    scale_url = url(namespace, "deployments", "web", "scale")
    scale = api.get(scale_url).json()
    scale["spec"] = {"replicas": 0}
    del scale["metadata"]["resourceVersion"]  # unconditional: the controllers may write meanwhile
    put = api.put(scale_url, json=scale)
    assert put.status_code == 200, put.text
    assert put.json()["spec"] == {}
    patched = api.patch(scale_url, json={"spec": {"replicas": 3}}, headers=MERGE)
    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"] == {"replicas": 3}
    assert api.get(url(namespace, "deployments", "web")).json()["spec"]["replicas"] == 3


def test_scale_put_accepts_a_protobuf_body(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("ReplicaSet", replicas=0))
    body = envelope("autoscaling/v1", "Scale", meta(text(1, "web"), text(3, namespace)), msg(2, num(1, 2)), msg(3))
    response = api.put(
        url(namespace, "replicasets", "web", "scale"),
        content=body,
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["spec"] == {"replicas": 2}


def test_scale_dry_run_changes_nothing(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("ReplicaSet", replicas=0))
    scale_url = url(namespace, "replicasets", "web", "scale")
    response = api.patch(scale_url, json={"spec": {"replicas": 4}}, headers=MERGE, params={"dryRun": "All"})
    assert response.json()["spec"] == {"replicas": 4}
    assert api.get(url(namespace, "replicasets", "web")).json()["spec"]["replicas"] == 0


def test_scale_rejects_negative_replicas(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("Deployment", replicas=0))
    response = api.patch(url(namespace, "deployments", "web", "scale"), json={"spec": {"replicas": -1}}, headers=MERGE)
    status = invalid(response)
    assert status["message"] == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    )


def test_scale_with_a_stale_resource_version_conflicts(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("Deployment", replicas=0))
    scale_url = url(namespace, "deployments", "web", "scale")
    stale = api.get(scale_url).json()
    _patch(api, url(namespace, "deployments", "web"), {"metadata": {"labels": {"touched": "yes"}}})
    stale["spec"] = {"replicas": 2}
    response = api.put(scale_url, json=stale)
    assert response.status_code == 409, response.text
    assert response.json()["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )


def test_scale_of_a_missing_deployment_is_not_found(api: httpx.Client, namespace: str) -> None:
    response = api.get(url(namespace, "deployments", "ghost", "scale"))
    assert response.status_code == 404
    assert response.json()["message"] == 'deployments.apps "ghost" not found'


def test_scale_is_not_offered_for_other_resources(api: httpx.Client, namespace: str) -> None:
    response = api.get(f"/api/v1/namespaces/{namespace}/pods/x/scale")
    assert response.status_code == 404


# ---- printing ----------------------------------------------------------------------------------------------------


def test_deployment_table(api: httpx.Client, namespace: str) -> None:
    body = workload("Deployment", replicas=0)
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    create(api, namespace, body)
    table = api.get(url(namespace, "deployments"), headers=TABLE).json()
    columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [
        ("Name", "string", 0),
        ("Ready", "string", 0),
        ("Up-to-date", "string", 0),
        ("Available", "string", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", "0/0", 0, 0]
    assert cells[5:] == ["app,side", "nginx:1.27,busybox", "app=web"]


def test_replicaset_table(api: httpx.Client, namespace: str) -> None:
    create(api, namespace, workload("ReplicaSet", replicas=0))
    table = api.get(url(namespace, "replicasets", "web"), headers=TABLE).json()
    columns = [(c["name"], c["type"]) for c in table["columnDefinitions"]]
    assert columns[:5] == [
        ("Name", "string"),
        ("Desired", "integer"),
        ("Current", "integer"),
        ("Ready", "integer"),
        ("Age", "string"),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", 0, 0, 0]
    assert cells[5:] == ["app", "nginx:1.27", "app=web"]


def test_strategic_merge_patch_merges_template_containers_by_name(api: httpx.Client, namespace: str) -> None:
    body = workload("Deployment", replicas=0)
    body["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    create(api, namespace, body)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox:1.36"}]}}}}
    response = api.patch(
        url(namespace, "deployments", "web"),
        json=patch,
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    containers = response.json()["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:1.27"), ("side", "busybox:1.36")]


def test_field_validation_knows_the_apps_schemas(api: httpx.Client, namespace: str) -> None:
    body = copy.deepcopy(workload("Deployment", replicas=0))
    body["spec"]["replicaz"] = 2
    response = api.post(url(namespace, "deployments"), json=body, params={"fieldValidation": "Strict"})
    assert response.status_code == 400
    assert response.json()["message"] == 'strict decoding error: unknown field "spec.replicaz"'
