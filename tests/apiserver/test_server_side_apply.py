"""Server-side apply and managedFields against the real apiserver: over HTTP, with kubectl 1.32's
`apply --server-side`, and with the official Python client (`create_from_yaml(apply=True)`, DynamicClient)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import utils
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from tests.conftest import RunningCluster

APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}


def cm_url(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def deploy_url(namespace: str, name: str = "", sub: str = "") -> str:
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    return url + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> str:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}
    if data is not None:
        body["data"] = data
    return yaml.safe_dump(body)


def deployment(name: str, replicas: int = 2, image: str = "nginx", **extra: Any) -> dict[str, Any]:
    container = {"name": "web", "image": image, "ports": [{"containerPort": 80}], **extra}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def apply(api: httpx.Client, url: str, body: str | dict[str, Any], manager: str, **params: str) -> httpx.Response:
    content = body if isinstance(body, str) else json.dumps(body)
    return api.patch(url, content=content, headers=APPLY, params={"fieldManager": manager, **params})


def managers(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"].get("managedFields", [])]


def entry(obj: dict[str, Any], manager: str, operation: str = "Apply", subresource: str = "") -> dict[str, Any]:
    for found in obj["metadata"].get("managedFields", []):
        if (found["manager"], found["operation"], found.get("subresource", "")) == (manager, operation, subresource):
            return dict(found)
    raise AssertionError(f"no {operation} entry of {manager}: {managers(obj)}")


def status(response: httpx.Response, code: int, reason: str, message: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert (body["kind"], body["reason"], body["message"]) == ("Status", reason, message), body
    return body


# ---- applying over HTTP ----------------------------------------------------------------------------------------


def test_apply_creates_then_merges_and_a_second_identical_apply_writes_nothing(
    api: httpx.Client, namespace: str
) -> None:
    created = apply(api, cm_url(namespace, "a"), configmap("a", {"x": "1"}, labels={"l": "1"}), "m1")
    assert created.status_code == 201, created.text
    obj = created.json()
    assert managers(obj) == [("m1", "Apply", "")]
    found = entry(obj, "m1")
    assert found["apiVersion"] == "v1" and found["fieldsType"] == "FieldsV1" and found["time"].endswith("Z")
    assert found["fieldsV1"] == {"f:data": {"f:x": {}}, "f:metadata": {"f:labels": {"f:l": {}}}}
    again = apply(api, cm_url(namespace, "a"), configmap("a", {"x": "1"}, labels={"l": "1"}), "m1")
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert again.json()["metadata"]["managedFields"] == obj["metadata"]["managedFields"]
    changed = apply(api, cm_url(namespace, "a"), configmap("a", {"y": "2"}), "m1").json()
    assert changed["data"] == {"y": "2"} and "labels" not in changed["metadata"]  # no longer applied: removed


def test_apply_requires_a_field_manager_and_only_apply_may_be_forced(api: httpx.Client, namespace: str) -> None:
    url = cm_url(namespace, "req")
    body = status(
        api.patch(url, content=configmap("req", {}), headers=APPLY),
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    )
    assert body["details"] == {
        "name": "",
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
        ],
    }
    api.post(cm_url(namespace), json={"metadata": {"name": "req"}}).raise_for_status()
    status(
        api.patch(url, json={"data": {"a": "b"}}, headers=MERGE, params={"force": "false"}),
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
    )
    status(
        api.patch(url, json={}, headers=MERGE, params={"fieldManager": "x" * 129}),
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
    )
    status(
        api.post(cm_url(namespace), json={"metadata": {"name": "n"}}, params={"fieldManager": "a\tb"}),
        422,
        "Invalid",
        'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\tb": invalid character U+0009 '
        "(at position 1)",
    )


def test_apply_with_dry_run_stores_nothing(api: httpx.Client, namespace: str) -> None:
    response = apply(api, cm_url(namespace, "dry"), configmap("dry", {"a": "1"}), "m", dryRun="All")
    assert response.status_code == 201 and response.json()["data"] == {"a": "1"}
    assert api.get(cm_url(namespace, "dry")).status_code == 404
    apply(api, cm_url(namespace, "dry"), configmap("dry", {"a": "1"}), "m").raise_for_status()
    response = apply(api, cm_url(namespace, "dry"), configmap("dry", {"a": "2"}), "m", dryRun="All")
    assert response.json()["data"] == {"a": "2"}
    assert api.get(cm_url(namespace, "dry")).json()["data"] == {"a": "1"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: bad}\n", "invalid object type: /v1, Kind=Secret", id="kind"
        ),
        pytest.param(
            "apiVersion: apps/v1\nkind: ConfigMap\nmetadata: {name: bad}\n",
            "invalid object type: apps/v1, Kind=ConfigMap",
            id="version",
        ),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
            "the name of the object (other) does not match the name on the URL (bad)",
            id="name",
        ),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: elsewhere}\n",
            "the namespace of the provided object does not match the namespace sent on the request",
            id="namespace",
        ),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, managedFields: []}\n",
            "metadata.managedFields must be nil",
            id="managed-fields",
        ),
        pytest.param("- a\n", None, id="not-an-object"),
        pytest.param("a: [", None, id="not-yaml"),
    ],
)
def test_configurations_that_are_refused(api: httpx.Client, namespace: str, body: str, message: str | None) -> None:
    response = apply(api, cm_url(namespace, "bad"), body, "m")
    assert response.status_code == 400, response.text
    assert response.json()["reason"] == "BadRequest"
    if message is not None:
        assert response.json()["message"] == message
    else:
        assert response.json()["message"].startswith("error decoding YAML: ")
    assert api.get(cm_url(namespace, "bad")).status_code == 404


def test_an_unknown_field_is_refused_as_the_typed_conversion_refuses_it(api: httpx.Client, namespace: str) -> None:
    body = deployment("typo")
    body["spec"]["replica"] = 3
    status(
        apply(api, deploy_url(namespace, "typo"), body, "m"),
        400,
        "BadRequest",
        # (the namespace is the configuration's, which has none here)
        "failed to create typed patch object (/typo; apps/v1, Kind=Deployment): .spec.replica: field not declared in "
        "schema",
    )


def test_conflicts_force_and_shared_ownership(api: httpx.Client, namespace: str) -> None:
    url = deploy_url(namespace, "web")
    assert apply(api, url, deployment("web", replicas=2), "one").status_code == 201
    # another manager applying the same values shares them: no conflict
    shared = deployment("web", replicas=2)
    assert apply(api, url, shared, "two").status_code == 200
    body = status(
        apply(api, url, deployment("web", replicas=5, image="nginx:2"), "two"),
        409,
        "Conflict",
        'Apply failed with 2 conflicts: conflicts with "one":\n- .spec.replicas\n'
        '- .spec.template.spec.containers[name="web"].image',
    )
    assert body["details"] == {
        "causes": [
            {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".spec.replicas"},
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "one"',
                "field": '.spec.template.spec.containers[name="web"].image',
            },
        ]
    }
    forced = apply(api, url, deployment("web", replicas=5, image="nginx:2"), "two", force="true").json()
    assert forced["spec"]["replicas"] == 5
    assert "f:replicas" not in entry(forced, "one")["fieldsV1"]["f:spec"]
    assert "f:replicas" in entry(forced, "two")["fieldsV1"]["f:spec"]


def test_list_types_merge_by_their_keys(api: httpx.Client, namespace: str) -> None:
    url = deploy_url(namespace, "lists")
    mine = deployment("lists", args=["--a"])
    mine["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    mine["metadata"]["finalizers"] = ["example.com/mine"]
    apply(api, url, mine, "mine").raise_for_status()
    theirs = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "lists", "finalizers": ["example.com/theirs"]},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "web", "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 8080}]},
                        {"name": "sidecar", "image": "busybox"},
                    ]
                }
            }
        },
    }
    obj = apply(api, url, theirs, "theirs").json()
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["web", "sidecar"]
    assert [e["name"] for e in containers[0]["env"]] == ["A", "B"]  # merged by name
    assert [p["containerPort"] for p in containers[0]["ports"]] == [80, 8080]  # by containerPort and protocol
    assert containers[0]["args"] == ["--a"]  # atomic, untouched
    assert obj["metadata"]["finalizers"] == ["example.com/mine", "example.com/theirs"]  # a set
    assert entry(obj, "theirs")["fieldsV1"]["f:metadata"] == {"f:finalizers": {'v:"example.com/theirs"': {}}}
    ports = entry(obj, "theirs")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert ports["f:ports"] == {'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}
    # an atomic list is replaced whole, and then owned by the applier alone
    mine["spec"]["template"]["spec"]["containers"][0]["args"] = ["--b"]
    obj = apply(api, url, mine, "mine").json()
    assert obj["spec"]["template"]["spec"]["containers"][0]["args"] == ["--b"]


# ---- managedFields on ordinary writes ----------------------------------------------------------------------------


def test_every_write_records_its_manager(api: httpx.Client, namespace: str) -> None:
    made = api.post(cm_url(namespace), json={"metadata": {"name": "w"}, "data": {"a": "1"}}).json()
    user_agent = api.headers["user-agent"].split("/")[0]  # httpx's: `python-httpx/<version>`
    assert managers(made) == [(user_agent, "Update", "")]
    assert entry(made, user_agent, "Update")["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    made["data"]["a"] = "2"
    put = api.put(cm_url(namespace, "w"), json=made, params={"fieldManager": "editor"}).json()
    assert sorted(managers(put)) == [("editor", "Update", ""), (user_agent, "Update", "")]
    assert entry(put, "editor", "Update")["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert entry(put, user_agent, "Update")["fieldsV1"] == {"f:data": {}}  # the map itself, still
    # an apply of a field someone updated is a conflict naming the updater and its version
    status(
        apply(api, cm_url(namespace, "w"), configmap("w", {"a": "3"}), "applier"),
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a',
    )


def test_clients_may_reset_managed_fields_and_invalid_ones_are_ignored(api: httpx.Client, namespace: str) -> None:
    url = cm_url(namespace, "r")
    apply(api, url, configmap("r", {"a": "1"}), "m1").raise_for_status()
    bogus = [{"manager": "x", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]
    kept = api.patch(url, json={"metadata": {"managedFields": bogus}, "data": {"b": "2"}}, headers=MERGE).json()
    assert ("m1", "Apply", "") in managers(kept)
    reset = api.patch(url, json={"metadata": {"managedFields": []}}, headers=MERGE).json()
    assert "managedFields" not in reset["metadata"]
    untracked = api.patch(url, json={"data": {"c": "3"}}, headers=MERGE).json()
    assert "managedFields" not in untracked["metadata"]  # updates do not start tracking again
    # the first apply to an untracked object finds everything owned by `before-first-apply`
    status(
        apply(api, url, configmap("r", {"a": "9"}), "m2"),
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a',
    )


def test_status_and_scale_writes_are_recorded_as_their_subresource(api: httpx.Client, namespace: str) -> None:
    apply(api, deploy_url(namespace, "sub"), deployment("sub"), "applier").raise_for_status()
    scaled = api.patch(
        deploy_url(namespace, "sub", "scale"),
        json={"spec": {"replicas": 4}},
        headers=MERGE,
        params={"fieldManager": "hpa"},
    )
    assert scaled.status_code == 200 and scaled.json()["spec"]["replicas"] == 4
    obj = api.get(deploy_url(namespace, "sub")).json()
    found = entry(obj, "hpa", "Update", "scale")
    assert (found["apiVersion"], found["fieldsV1"]) == ("apps/v1", {"f:spec": {"f:replicas": {}}})
    assert "f:replicas" not in entry(obj, "applier")["fieldsV1"]["f:spec"]
    status(
        apply(api, deploy_url(namespace, "sub"), deployment("sub", replicas=2), "applier"),
        409,
        "Conflict",
        'Apply failed with 1 conflict: conflict with "hpa" with subresource "scale" using apps/v1: .spec.replicas',
    )
    # a Scale applied through the subresource: an Apply entry with subresource scale
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "sub"}, "spec": {"replicas": 6}}
    applied = apply(api, deploy_url(namespace, "sub", "scale"), scale, "autoscaler", force="true")
    assert applied.status_code == 200 and applied.json()["spec"]["replicas"] == 6
    obj = api.get(deploy_url(namespace, "sub")).json()
    assert entry(obj, "autoscaler", "Apply", "scale")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    # status: written by the status subresource's manager, never owned by the main resource's writers
    patched = api.patch(
        deploy_url(namespace, "sub", "status"),
        json={"status": {"observedGeneration": 99}},
        headers=MERGE,
        params={"fieldManager": "controller"},
    ).json()
    assert entry(patched, "controller", "Update", "status")["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}


# ---- kubectl -----------------------------------------------------------------------------------------------------


def kubectl_apply(cluster: RunningCluster, path: Path, *args: str, check: bool = True) -> Any:
    return cluster.kubectl("apply", "--server-side", "-f", str(path), *args, check=check)


def test_kubectl_server_side_apply_conflicts_and_force(cluster: RunningCluster, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump({**deployment("web"), "metadata": {"name": "web", "namespace": namespace}}))
    assert kubectl_apply(cluster, manifest).stdout.strip() == "deployment.apps/web serverside-applied"
    shown = cluster.kubectl_json("-n", namespace, "get", "deployment", "web", "--show-managed-fields")
    assert ("kubectl", "Apply", "") in managers(shown)
    # kubectl scale takes .spec.replicas (an Update through the scale subresource); re-applying conflicts
    cluster.kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=3")
    refused = kubectl_apply(cluster, manifest, check=False)
    assert refused.returncode != 0
    assert (
        'error: Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
        ".spec.replicas" in refused.stderr
    )
    assert "--force-conflicts" in refused.stderr  # kubectl's own advice follows the server's message
    kubectl_apply(cluster, manifest, "--force-conflicts")
    shown = cluster.kubectl_json("-n", namespace, "get", "deployment", "web", "--show-managed-fields")
    assert shown["spec"]["replicas"] == 2
    assert ("kubectl", "Update", "scale") not in managers(shown)  # it owned nothing else


def test_kubectl_conflict_with_client_side_apply(cluster: RunningCluster, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "web.yaml"
    body = {**deployment("csa", replicas=2), "metadata": {"name": "csa", "namespace": namespace}}
    manifest.write_text(yaml.safe_dump(body))
    cluster.kubectl("apply", "-f", str(manifest))  # client-side: an Update by kubectl-client-side-apply
    shown = cluster.kubectl_json("-n", namespace, "get", "deployment", "csa", "--show-managed-fields")
    assert ("kubectl-client-side-apply", "Update", "") in managers(shown)
    body["spec"]["replicas"] = 3
    manifest.write_text(yaml.safe_dump(body))
    refused = kubectl_apply(cluster, manifest, "--field-manager=ops", check=False)
    assert (
        'error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
        in refused.stderr
    )
    # kubectl's own manager takes over from client-side apply where the last-applied configuration still holds
    kubectl_apply(cluster, manifest)
    shown = cluster.kubectl_json("-n", namespace, "get", "deployment", "csa", "--show-managed-fields")
    assert shown["spec"]["replicas"] == 3
    last = json.loads(shown["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"]["replicas"] == 3  # kept in step with what was applied


def test_kubectl_server_side_dry_run_and_unchanged_apply_write_nothing(
    cluster: RunningCluster, namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "dry.yaml"
    manifest.write_text(configmap("dry", {"a": "1"}, namespace=namespace))
    out = kubectl_apply(cluster, manifest, "--dry-run=server").stdout
    assert out.strip() == "configmap/dry serverside-applied (server dry run)"
    assert cluster.kubectl("-n", namespace, "get", "configmap", "dry", check=False).returncode != 0
    kubectl_apply(cluster, manifest)
    before = cluster.kubectl_json("-n", namespace, "get", "configmap", "dry")["metadata"]["resourceVersion"]
    kubectl_apply(cluster, manifest)  # the same again: no write, no new resourceVersion
    assert cluster.kubectl_json("-n", namespace, "get", "configmap", "dry")["metadata"]["resourceVersion"] == before


# ---- the Python client -------------------------------------------------------------------------------------------


@pytest.fixture
def k8s_client(cluster: RunningCluster) -> Iterator[k8s.ApiClient]:
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    api_client = k8s.ApiClient(configuration)
    try:
        yield api_client
    finally:
        api_client.close()
        api_client.rest_client.pool_manager.clear()


def test_python_client_create_from_yaml_with_apply(k8s_client: k8s.ApiClient, namespace: str) -> None:
    objects = [
        {**deployment("py"), "metadata": {"name": "py"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "py"}, "spec": {"ports": [{"port": 80}]}},
    ]
    utils.create_from_yaml(k8s_client, yaml_objects=objects, namespace=namespace, apply=True)
    utils.create_from_yaml(k8s_client, yaml_objects=objects, namespace=namespace, apply=True)  # idempotent
    dep = k8s.AppsV1Api(k8s_client).read_namespaced_deployment("py", namespace)
    assert dep.spec.replicas == 2
    assert [(m.manager, m.operation) for m in dep.metadata.managed_fields if m.manager == "python-client"] == [
        ("python-client", "Apply")
    ]
    svc = k8s.CoreV1Api(k8s_client).read_namespaced_service("py", namespace)
    assert svc.spec.ports[0].protocol == "TCP" and svc.spec.cluster_ip


def test_python_client_dynamic_server_side_apply(k8s_client: k8s.ApiClient, namespace: str) -> None:
    configmaps = DynamicClient(k8s_client).resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"a": "1"}}
    made = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="one")
    assert made.data.a == "1"
    with pytest.raises(ApiException) as raised:
        configmaps.server_side_apply(body={**body, "data": {"a": "2"}}, namespace=namespace, field_manager="two")
    assert raised.value.status == 409
    assert json.loads(raised.value.body)["details"]["causes"][0]["field"] == ".data.a"
    forced = configmaps.server_side_apply(
        body={**body, "data": {"a": "2"}}, namespace=namespace, field_manager="two", force_conflicts=True
    )
    assert forced.data.a == "2"
