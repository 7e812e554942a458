"""The machine's kubectl (v1.32) and the `kubernetes` Python client with apps/v1 Deployments and ReplicaSets: the
commands of a user's workflow (create, get, scale, expose, set image, delete, explain, apply) and what they print.

The workload controllers may run in the cluster, so status-derived cells are matched loosely; the API surface
(spec, defaults, printed columns, scale) is asserted exactly.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import httpx
from kubernetes import client as k8s

if TYPE_CHECKING:
    from tests.e2e.conftest import Kubectl

DEPLOY_HEADER = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
RS_HEADER = ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
WIDE = ["CONTAINERS", "IMAGES", "SELECTOR"]

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: applied
spec:
  replicas: 0
  selector:
    matchLabels: {app: applied}
  template:
    metadata:
      labels: {app: applied}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        resources:
          requests: {cpu: 10m}
"""


def columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if line.strip()]
    return columns(lines[0]), [columns(line) for line in lines[1:]]


def replica_set(api: httpx.Client, namespace: str, name: str) -> None:
    body = {
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"rs": name}},
            "template": {
                "metadata": {"labels": {"rs": name}},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]},
            },
        },
    }
    response = api.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", json=body)
    assert response.status_code == 201, response.text


# ---- create and get ----------------------------------------------------------------------------------------------


def test_create_deployment_sends_protobuf_and_gets_defaults(kubectl: Kubectl) -> None:
    result = kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    assert result.stdout.strip() == "deployment.apps/web created"
    deployment = kubectl.json("get", "deployment", "web")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["metadata"]["labels"] == {"app": "web"}
    assert spec["template"]["spec"]["containers"][0]["name"] == "nginx"
    assert spec["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    assert deployment["metadata"]["labels"] == {"app": "web"}


def test_get_deployments_prints_upstream_columns(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    header, rows = table(kubectl("get", "deploy").stdout)
    assert header == DEPLOY_HEADER
    assert rows[0][0] == "web"
    assert re.fullmatch(r"[0-2]/2", rows[0][1])
    header, rows = table(kubectl("get", "deployments.apps", "web", "-o", "wide").stdout)
    assert header == DEPLOY_HEADER + WIDE
    assert rows[0][5:] == ["nginx", "nginx:1.27", "app=web"]


def test_get_replicasets_prints_upstream_columns(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    replica_set(api, namespace, "cache")
    header, rows = table(kubectl("get", "rs", "cache").stdout)
    assert header == RS_HEADER
    assert rows[0][:4] == ["cache", "0", "0", "0"]
    header, rows = table(kubectl("get", "replicaset", "cache", "-o", "wide").stdout)
    assert header == RS_HEADER + WIDE
    assert rows[0][5:] == ["app", "busybox:1.36", "rs=cache"]


def test_get_several_kinds_by_label(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=0")
    kubectl("create", "deployment", "other", "--image=nginx:1.27", "--replicas=0")
    named = kubectl("get", "deploy,rs,pods", "-l", "app=web", "-o", "name").stdout.split()
    assert "deployment.apps/web" in named
    assert "deployment.apps/other" not in named
    assert all(n.startswith(("deployment.apps/web", "replicaset.apps/web-", "pod/web-")) for n in named)


def test_get_all_includes_deployments(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=0")
    assert "deployment.apps/web" in kubectl("get", "all", "-o", "name").stdout.split()


# ---- scale, expose, set image, delete ----------------------------------------------------------------------------


def test_scale_deployment_and_replicaset(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    assert kubectl("scale", "deployment", "web", "--replicas=3").stdout.strip() == "deployment.apps/web scaled"
    assert kubectl.json("get", "deploy", "web")["spec"]["replicas"] == 3
    header, rows = table(kubectl("get", "deploy", "web", "--subresource=scale").stdout)
    assert header == ["NAME", "DESIRED", "AVAILABLE"]
    assert rows[0][:2] == ["web", "3"]
    replica_set(api, namespace, "cache")
    assert kubectl("scale", "rs/cache", "--replicas=0", "--current-replicas=0").stdout.strip() == (
        "replicaset.apps/cache scaled"
    )
    failed = kubectl.fail("scale", "rs/cache", "--replicas=2", "--current-replicas=5")
    assert failed.stderr.strip() == "error: Expected replicas to be 5, was 0"


def test_expose_deployment_uses_its_selector(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27")
    result = kubectl("expose", "deployment", "web", "--port=80", "--target-port=8080", "--type=NodePort")
    assert result.stdout.strip() == "service/web exposed"
    service = kubectl.json("get", "service", "web")
    assert service["spec"]["selector"] == {"app": "web"}
    assert service["spec"]["type"] == "NodePort"
    [port] = service["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 8080, "TCP")
    assert 30000 <= port["nodePort"] <= 32767


def test_set_image_patches_the_named_container(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--image=busybox:1.36")
    containers = kubectl.json("get", "deploy", "web")["spec"]["template"]["spec"]["containers"]
    names = [c["name"] for c in containers]
    assert names == ["nginx", "busybox"]
    result = kubectl("set", "image", "deployment/web", "busybox=busybox:1.37")
    assert result.stdout.strip() == "deployment.apps/web image updated"
    deployment = kubectl.json("get", "deploy", "web")
    images = [(c["name"], c["image"]) for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert images == [("nginx", "nginx:1.27"), ("busybox", "busybox:1.37")]


def test_delete_deployment(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=0")
    assert kubectl("delete", "deployment", "web").stdout.strip() == 'deployment.apps "web" deleted'
    failed = kubectl.fail("get", "deployment", "web")
    assert 'deployments.apps "web" not found' in failed.stderr


def test_invalid_deployment_reports_upstream_message(kubectl: Kubectl) -> None:
    failed = kubectl.fail("create", "deployment", "web", "--image=nginx:1.27", "--replicas=-1")
    assert failed.stderr.strip() == (
        'error: failed to create deployment: Deployment.apps "web" is invalid: '
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    )


# ---- OpenAPI: apply with validation, explain ---------------------------------------------------------------------


def test_apply_with_default_validation(kubectl: Kubectl) -> None:
    assert kubectl.apply(MANIFEST).stdout.strip() == "deployment.apps/applied created"
    assert kubectl.apply(MANIFEST.replace("nginx:1.27", "nginx:1.28")).stdout.strip() == (
        "deployment.apps/applied configured"
    )
    container = kubectl.json("get", "deploy", "applied")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.28"
    assert container["resources"] == {"requests": {"cpu": "10m"}}
    failed = kubectl.fail("apply", "-f", str(kubectl.manifest("bad.yaml", MANIFEST.replace("replicas:", "replicaz:"))))
    assert 'unknown field "spec.replicaz"' in failed.stderr


def test_explain_deployment_spec(kubectl: Kubectl) -> None:
    text = kubectl("explain", "deployment.spec").stdout
    assert re.search(r"^GROUP:\s+apps$", text, re.M)
    assert re.search(r"^KIND:\s+Deployment$", text, re.M)
    assert re.search(r"^VERSION:\s+v1$", text, re.M)
    for field in ("replicas", "selector", "strategy", "template", "revisionHistoryLimit"):
        assert re.search(rf"^  {field}\s", text, re.M), field
    strategy = kubectl("explain", "deployment.spec.strategy.rollingUpdate.maxSurge").stdout
    assert "FIELD: maxSurge <IntOrString>" in strategy


# ---- the Python client -------------------------------------------------------------------------------------------


def _client_deployment(name: str) -> k8s.V1Deployment:
    labels = {"app": name}
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1DeploymentSpec(
            replicas=0,
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="app", image="nginx:1.27")]),
            ),
        ),
    )


def test_python_client_deployment_and_scale(k8s_client: k8s.ApiClient, namespace: str) -> None:
    apps = k8s.AppsV1Api(k8s_client)
    created: Any = apps.create_namespaced_deployment(namespace, _client_deployment("web"))
    assert created.spec.strategy.rolling_update.max_surge == "25%"
    scale: Any = apps.read_namespaced_deployment_scale("web", namespace)
    assert scale.kind == "Scale"
    assert scale.status.selector == "app=web"
    patched: Any = apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 2}})
    assert patched.spec.replicas == 2
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 2
    listed: Any = apps.list_namespaced_replica_set(namespace, label_selector="app=nobody")
    assert listed.items == []
