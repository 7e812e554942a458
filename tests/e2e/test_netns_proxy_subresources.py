"""`pods/proxy` and `services/proxy` on the netns dataplane: the apiserver dials a real echo server in a pod from
inside the sandbox (its LAN namespace), reached through the REST API, `kubectl get --raw`, `kubectl proxy` (run on
a loopback port) and the Python client. Nothing is sent from the root namespace but to loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.conftest import RunningCluster, eventually, readline
from tests.e2e.test_netns_dataplane import create, netns_cluster, ready
from tinykube.sandbox.topology import LAN_GATEWAY

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

# An echo server: each request as JSON (method, path, query, body, the client's address, some headers).
ECHO = """\
import http.server, json, os
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *args): pass
    def answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length).decode() if length else ''
        path, _, query = self.path.partition('?')
        echo = {'pod': os.environ['POD'], 'method': self.command, 'path': path, 'query': query, 'body': body,
                'client': self.client_address[0], 'headers': {k.lower(): v for k, v in self.headers.items()}}
        out = json.dumps(echo).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(out))); self.end_headers(); self.wfile.write(out)
    do_GET = do_POST = do_PUT = do_DELETE = answer
http.server.ThreadingHTTPServer(('', 8080), H).serve_forever()
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"px{os.getpid()}", "--nodes", "2", "--controllers", "*") as running:
        yield running


@pytest.fixture(scope="module")
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


@pytest.fixture(scope="module")
def echo(client: httpx.Client) -> dict[str, Any]:
    """The `echo` pod (on node-2) behind the `echo` Service (port 80 named http → 8080)."""
    container = {
        "name": "echo",
        "image": "echoserver",
        "command": [sys.executable, "-c", ECHO],
        "env": [{"name": "POD", "value": "echo"}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    pod = {
        "metadata": {"name": "echo", "labels": {"app": "echo"}},
        "spec": {"nodeName": "node-2", "containers": [container]},
    }
    create(client, pod)
    service = {
        "metadata": {"name": "echo"},
        "spec": {"selector": {"app": "echo"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }
    create(client, service, "services")
    found = eventually(lambda: ready(client, "echo"), what="echo ready")

    def served() -> bool:
        slices = client.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            params={"labelSelector": "kubernetes.io/service-name=echo"},
        ).json()["items"]
        return any((e.get("conditions") or {}).get("ready") for s in slices for e in s.get("endpoints") or [])

    eventually(served, what="echo's ready endpoint")
    return found


def test_pod_proxy_reaches_the_pod_from_inside_the_sandbox(client: httpx.Client, echo: dict[str, Any]) -> None:
    response = client.get("/api/v1/namespaces/default/pods/echo/proxy/hello/world", params={"x": "1"})
    assert response.status_code == 200, response.text
    seen = response.json()
    assert (seen["pod"], seen["method"], seen["path"], seen["query"]) == ("echo", "GET", "/hello/world", "x=1")
    assert seen["client"] == LAN_GATEWAY  # dialled from the LAN namespace, the apiserver's address in the sandbox
    assert "authorization" not in seen["headers"]
    assert seen["headers"]["x-forwarded-uri"] == "/api/v1/namespaces/default/pods/echo/proxy/hello/world"
    # the port named explicitly, and a body relayed
    posted = client.post("/api/v1/namespaces/default/pods/echo:8080/proxy/submit", content=b"some data")
    assert (posted.json()["method"], posted.json()["body"]) == ("POST", "some data")


def test_service_proxy_picks_a_ready_endpoint(client: httpx.Client, echo: dict[str, Any]) -> None:
    for id_ in ("echo:http", "echo:80", "http:echo:http"):
        response = client.put(f"/api/v1/namespaces/default/services/{id_}/proxy/things/", content=b"x")
        assert response.status_code == 200, (id_, response.text)
        seen = response.json()
        assert (seen["pod"], seen["method"], seen["path"], seen["body"]) == ("echo", "PUT", "/things/", "x")


def test_a_refused_connection_is_upstreams_503(client: httpx.Client, echo: dict[str, Any]) -> None:
    ip = echo["status"]["podIP"]
    response = client.get("/api/v1/namespaces/default/pods/echo:9/proxy/")
    assert response.status_code == 503
    body = response.json()
    assert (body["reason"], body["message"]) == (
        "ServiceUnavailable",
        f"error trying to reach service: dial tcp {ip}:9: connect: connection refused",
    )


def test_kubectl_get_raw(sandbox: RunningCluster, echo: dict[str, Any]) -> None:
    out = sandbox.kubectl("get", "--raw", "/api/v1/namespaces/default/services/echo:http/proxy/raw?y=2").stdout
    seen = json.loads(out)
    assert (seen["path"], seen["query"]) == ("/raw", "y=2")
    out = sandbox.kubectl("get", "--raw", "/api/v1/namespaces/default/pods/echo/proxy/").stdout
    assert json.loads(out)["path"] == "/"


def test_kubectl_proxy_reaches_a_service(sandbox: RunningCluster, echo: dict[str, Any]) -> None:
    """As the Kubernetes docs show: `kubectl proxy`, then the Service's proxy URL on 127.0.0.1."""
    env = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir)}
    proc = subprocess.Popen(
        ["kubectl", "proxy", "--port=0", "--address=127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        line = readline(proc)
        assert line.startswith("Starting to serve on 127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as local:
            response = local.get("/api/v1/namespaces/default/services/echo:http/proxy/")
            assert response.status_code == 200, response.text
            assert (response.json()["pod"], response.json()["path"]) == ("echo", "/")
            posted = local.post("/api/v1/namespaces/default/services/echo:http/proxy/form", content=b"a=b")
            assert posted.json()["body"] == "a=b"
            pod = local.get("/api/v1/namespaces/default/pods/echo:8080/proxy/via-pod")
            assert pod.json()["path"] == "/via-pod"
    finally:
        proc.terminate()
        proc.wait(10)


def test_python_client_connect_proxy_calls(sandbox: RunningCluster, echo: dict[str, Any]) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(sandbox.kubeconfig))
    try:
        core = k8s.CoreV1Api(api_client)
        # the client decodes a JSON body and returns its repr as the `str` it promises: the raw body is read here
        through_service = core.connect_get_namespaced_service_proxy_with_path(
            "echo:http", "default", "svc/path", _preload_content=False
        )
        assert json.loads(through_service.data)["path"] == "/svc/path"
        through_pod = core.connect_get_namespaced_pod_proxy_with_path(
            "echo:8080", "default", "pod/path", _preload_content=False
        )
        assert json.loads(through_pod.data)["path"] == "/pod/path"
        assert "'path': '/plain'" in core.connect_get_namespaced_pod_proxy_with_path("echo", "default", "plain")
    finally:
        api_client.close()
