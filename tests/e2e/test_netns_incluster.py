"""The API from inside a pod (netns dataplane): the apiserver listens on the sandbox's LAN address, the
`default/kubernetes` Service's endpoints point there, and a pod with its projected ServiceAccount token uses the
Python client's `load_incluster_config()` and `kubectl` unchanged, through the kubernetes ClusterIP and
`kubernetes.default.svc`. What the token may do is what RBAC grants its ServiceAccount."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import netns_cluster
from tinykube.sandbox.topology import LAN_GATEWAY

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

NS = "incluster"

# Lists pods in its own namespace with the in-cluster config (the ClusterIP from KUBERNETES_SERVICE_HOST), again
# by the Service's DNS name, then tries another namespace and Secrets (which its Role does not grant).
CLIENT = """\
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_incluster_config()
core = client.CoreV1Api()
print("LIST", ",".join(sorted(p.metadata.name for p in core.list_namespaced_pod("incluster").items)))
conf = client.Configuration.get_default_copy()
conf.host = "https://kubernetes.default.svc"
by_name = client.CoreV1Api(client.ApiClient(conf))
print("BYNAME", len(by_name.list_namespaced_pod("incluster").items))
for what, call in (("OTHER", lambda: core.list_namespaced_pod("default")),
                   ("SECRETS", lambda: core.list_namespaced_secret("incluster"))):
    try:
        call()
        print(what, "allowed")
    except ApiException as err:
        print(what, err.status, err.reason)
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"ic{os.getpid()}", "--nodes", "1", "--controllers", "*") as running:
        yield running


@pytest.fixture(scope="module")
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def post(client: httpx.Client, path: str, obj: dict[str, Any]) -> None:
    response = client.post(path, json=obj)
    assert response.status_code == 201, response.text


@pytest.fixture(scope="module")
def reader(client: httpx.Client) -> str:
    """Namespace `incluster` with a ServiceAccount `reader` that a Role lets list pods there (and nothing else)."""
    post(client, "/api/v1/namespaces", {"metadata": {"name": NS}})
    post(client, f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "reader"}})
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}"
    role = {
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    post(client, f"{rbac}/roles", role)
    binding = {
        "metadata": {"name": "reader-reads-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": NS}],
    }
    post(client, f"{rbac}/rolebindings", binding)
    return "reader"


def run_to_completion(sandbox: RunningCluster, client: httpx.Client, name: str, command: list[str]) -> str:
    # kubectl's discovery cache goes to an emptyDir (the host's $HOME is the container's: nothing is left there)
    container = {
        "name": "main",
        "image": "python",
        "command": command,
        "env": [{"name": "KUBECACHEDIR", "value": "/kube-cache"}],
        "volumeMounts": [{"name": "cache", "mountPath": "/kube-cache"}],
    }
    pod = {
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": "reader",
            "restartPolicy": "Never",
            "nodeName": "node-1",
            "containers": [container],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        },
    }
    post(client, f"/api/v1/namespaces/{NS}/pods", pod)

    def done() -> str | None:
        phase = client.get(f"/api/v1/namespaces/{NS}/pods/{name}").json()["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = eventually(done, timeout=60, what=f"{name} done")
    logs = sandbox.kubectl("logs", "-n", NS, name).stdout
    assert phase == "Succeeded", logs
    return logs


def test_the_kubernetes_service_points_into_the_sandbox(client: httpx.Client) -> None:
    endpoints = client.get("/api/v1/namespaces/default/endpoints/kubernetes").json()
    assert endpoints["subsets"] == [
        {"addresses": [{"ip": LAN_GATEWAY}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}
    ]
    assert endpoints["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"] == "true"
    slices = client.get(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        params={"labelSelector": "kubernetes.io/service-name=kubernetes"},
    ).json()["items"]
    assert [(s["endpoints"][0]["addresses"], s["ports"][0]["port"]) for s in slices] == [([LAN_GATEWAY], 6443)]
    # put back when deleted (the reconciler's pass: every 10 s)
    assert client.delete("/api/v1/namespaces/default/endpoints/kubernetes").status_code == 200
    eventually(
        lambda: client.get("/api/v1/namespaces/default/endpoints/kubernetes").status_code == 200,
        timeout=20,
        what="the endpoints put back",
    )


def test_a_pod_lists_pods_with_the_incluster_config(sandbox: RunningCluster, client: httpx.Client, reader: str) -> None:
    logs = run_to_completion(sandbox, client, "lister", [sys.executable, "-c", CLIENT])
    lines = dict(line.split(" ", 1) for line in logs.splitlines() if " " in line)
    assert lines["LIST"] == "lister", logs  # the Role grants `list pods` in its namespace
    assert lines["BYNAME"] == "1", logs  # the serving certificate names kubernetes.default.svc
    # RBAC: nothing else is granted to the ServiceAccount
    assert lines["OTHER"] == "403 Forbidden", logs
    assert lines["SECRETS"] == "403 Forbidden", logs


def test_kubectl_in_a_pod(sandbox: RunningCluster, client: httpx.Client, reader: str) -> None:
    kubectl = shutil.which("kubectl") or "/usr/local/bin/kubectl"
    # (no --request-timeout: kubectl ignores the in-cluster config once such an override is given)
    logs = run_to_completion(sandbox, client, "kubectl-user", [kubectl, "get", "pods", "-o", "name"])
    assert "pod/kubectl-user" in logs.splitlines(), logs
