"""The official `kubernetes` Python client's error messages against a real `tinykube up`: they are built from the
server's bodies, so they read as upstream's only if the bodies are shaped as upstream's.

- `utils.create_from_yaml` joins the bodies of several failed creates in one message, relying on each body's final
  newline (the client's own e2e test `test_create_from_multi_resource_yaml_with_conflict`, whose expected message
  is kept here verbatim but for the namespace).
- `stream()` reports a refused WebSocket handshake with its status and body: it must carry the Kubernetes `Status`,
  not uvicorn's bare 403, which the client words as "Handshake status 403 Forbidden" (an authorization failure).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import utils
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

FIRST = """
apiVersion: v1
kind: Service
metadata: {name: mock-2, labels: {app: mock-2}}
spec:
  ports: [{port: 99, protocol: TCP, targetPort: 9949}]
  selector: {app: mock-2}
"""

CONFLICTING = (
    FIRST
    + """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: mock-2}
spec:
  replicas: 0
  selector: {matchLabels: {app: mock-2}}
  template:
    metadata: {labels: {app: mock-2}}
    spec: {containers: [{name: mock-2, image: nginx}]}
"""
)

TRIPLE = "---\n".join(
    [
        """apiVersion: apps/v1
kind: Deployment
metadata: {name: triple-nginx}
spec:
  replicas: 0
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec: {containers: [{name: nginx, image: nginx}]}
"""
    ]
    * 3
)


def test_create_from_yaml_reports_each_conflict_on_a_line(
    k8s_client: k8s.ApiClient, namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "first.yaml").write_text(FIRST)
    (tmp_path / "multi.yaml").write_text(CONFLICTING)
    utils.create_from_yaml(k8s_client, str(tmp_path / "first.yaml"), namespace=namespace)
    with pytest.raises(utils.FailToCreateError) as failed:
        utils.create_from_yaml(k8s_client, str(tmp_path / "multi.yaml"), namespace=namespace)
    assert str(failed.value) == (
        'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"services \\"mock-2\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"mock-2","kind":"services"},"code":409}\n'
    )
    # the rest of the file was still created
    assert k8s.AppsV1Api(k8s_client).read_namespaced_deployment("mock-2", namespace).metadata.name == "mock-2"


def test_create_from_yaml_joins_several_conflicts(k8s_client: k8s.ApiClient, namespace: str, tmp_path: Path) -> None:
    """The client's `test_create_from_multi_resource_yaml_with_multi_conflicts`: two bodies, one per line."""
    (tmp_path / "triple.yaml").write_text(TRIPLE)
    with pytest.raises(utils.FailToCreateError) as failed:
        utils.create_from_yaml(k8s_client, str(tmp_path / "triple.yaml"), namespace=namespace)
    one = (
        'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"deployments.apps \\"triple-nginx\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"triple-nginx","group":"apps","kind":"deployments"},"code":409}\n'
    )
    assert str(failed.value) == one + one


def test_stream_to_exec_reads_as_the_status(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """exec into a pod no node runs: the client's error carries the Status the apiserver answers the handshake with
    (upstream's 400), not an empty 403."""
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="web"),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="web", image="nginx")]),
    )
    core_v1.create_namespaced_pod(namespace, pod)
    with pytest.raises(ApiException) as failed:
        stream(
            core_v1.connect_get_namespaced_pod_exec,
            "web",
            namespace,
            command=["ls"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
    message = str(failed.value)
    assert "Handshake status 400 Bad Request" in message, message
    assert '"message":"pod web does not have a host assigned","reason":"BadRequest"' in message
    assert "403" not in message


def test_stream_without_a_valid_token_reads_as_unauthorized(k8s_client: k8s.ApiClient, namespace: str) -> None:
    configuration = k8s.Configuration()
    configuration.host = k8s_client.configuration.host
    configuration.ssl_ca_cert = k8s_client.configuration.ssl_ca_cert
    configuration.api_key = {"BearerToken": "Bearer wrong"}
    with k8s.ApiClient(configuration) as wrong, pytest.raises(ApiException) as failed:
        core = k8s.CoreV1Api(wrong)
        stream(core.connect_get_namespaced_pod_exec, "web", namespace, command=["ls"], stdout=True)
    message = str(failed.value)
    assert "Handshake status 401 Unauthorized" in message and '"reason":"Unauthorized"' in message, message
