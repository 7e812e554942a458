"""`pods/proxy`, `services/proxy` and `nodes/proxy` against `tinykube up` with the simulated dataplane.

`nodes/proxy` reaches the node agent's kubelet endpoint (loopback) and, for a Node whose annotation names a fake
backend in this process (plain HTTP on 127.0.0.1), relays every method, the query, the body and the headers. Pod
IPs are fictitious here, so pod and service proxying end in a 503 saying so — after upstream's own checks (missing
objects, bad ports, no endpoints), which answer first. Nothing is ever sent anywhere but loopback.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.conftest import RunningCluster, eventually, running_cluster

NS = "default"


class Backend:
    """Echoes each request as JSON (method, path, query, headers, body); `/redirect` answers 302 to `/target`,
    `/cors` with CORS headers, `/status/<code>` with that code."""

    def __init__(self) -> None:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Transfer-Encoding") == "chunked":
                    while size := int(self.rfile.readline().strip(), 16):
                        body += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                path, _, query = self.path.partition("?")
                if path == "/redirect":
                    return self._reply(302, b"", [("Location", "/target/")])
                if path == "/cors":
                    return self._reply(200, b"ok", [("Access-Control-Allow-Origin", "*"), ("X-Kept", "yes")])
                code = int(path.removeprefix("/status/")) if path.startswith("/status/") else 200
                echo = {
                    "method": self.command,
                    "path": path,
                    "query": query,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode(),
                }
                backend.seen.append(echo)
                return self._reply(code, json.dumps(echo).encode(), [("Content-Type", "application/json")])

            def _reply(self, code: int, body: bytes, headers: list[tuple[str, str]]) -> None:
                self.send_response(code)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any

        self.seen: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("proxysub") / "proxysub", "--nodes", "1") as running:
        yield running


@pytest.fixture(scope="module")
def api(cluster: RunningCluster) -> Iterator[httpx.Client]:
    with cluster.http() as http:
        yield http


@pytest.fixture(scope="module")
def backend() -> Iterator[Backend]:
    fake = Backend()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


@pytest.fixture(scope="module")
def fake_node(api: httpx.Client, backend: Backend) -> Iterator[str]:
    """A Node no agent runs, whose kubelet endpoint is the fake backend."""
    name = f"fake-{secrets.token_hex(3)}"
    annotations = {"tinykube.io/kubelet-endpoint": backend.endpoint}
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations}}
    response = api.post("/api/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    yield name
    api.delete(f"/api/v1/nodes/{name}")


def headers_of(echo: dict[str, Any]) -> dict[str, str]:
    return dict(echo["headers"])


def status(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert body["kind"] == "Status" and body["code"] == response.status_code, body
    return response.status_code, body.get("reason", ""), body["message"]


def running_pod(api: httpx.Client, name: str, labels: dict[str, str], port: int = 8080) -> dict[str, Any]:
    container = {"name": "web", "image": "nginx", "ports": [{"containerPort": port}]}
    pod = {"metadata": {"name": name, "labels": labels}, "spec": {"nodeName": "node-1", "containers": [container]}}
    response = api.post(f"/api/v1/namespaces/{NS}/pods", json=pod)
    assert response.status_code == 201, response.text
    found: dict[str, Any] = eventually(
        lambda: (p := api.get(f"/api/v1/namespaces/{NS}/pods/{name}").json())["status"].get("podIP") and p,
        what=f"{name} has an IP",
    )
    return found


# ---- nodes/proxy --------------------------------------------------------------------------------------------


def test_node_proxy_reaches_the_node_agent(cluster: RunningCluster, api: httpx.Client) -> None:
    eventually(lambda: api.get("/api/v1/nodes/node-1").status_code == 200, what="node-1 registered")
    response = api.get("/api/v1/nodes/node-1/proxy/healthz")
    assert (response.status_code, response.text) == (200, "ok")
    assert cluster.kubectl("get", "--raw", "/api/v1/nodes/node-1/proxy/healthz").stdout == "ok"
    metrics = api.get("/api/v1/nodes/node-1/proxy/metrics/resource")
    assert metrics.status_code == 200 and "node_cpu_usage_seconds_total" in metrics.text
    # the kubelet's port named explicitly is the kubelet too
    endpoint = api.get("/api/v1/nodes/node-1").json()["metadata"]["annotations"]["tinykube.io/kubelet-endpoint"]
    port = endpoint.rsplit(":", 1)[1]
    assert api.get(f"/api/v1/nodes/node-1:{port}/proxy/healthz").text == "ok"
    missing = api.get("/api/v1/nodes/node-1/proxy/no/such/path")
    assert missing.status_code == 404  # the kubelet's own answer, relayed


def test_node_proxy_with_the_python_client(cluster: RunningCluster) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        core = k8s.CoreV1Api(api_client)
        assert core.connect_get_node_proxy_with_path("node-1", "healthz") == "ok"
    finally:
        api_client.close()


def test_every_method_query_body_and_header_is_relayed(api: httpx.Client, fake_node: str) -> None:
    base = f"/api/v1/nodes/{fake_node}/proxy"
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        body = f"payload for {method}" if method in ("POST", "PUT", "PATCH") else None
        response = api.request(
            method,
            f"{base}/some/where/?a=1&b=x%20y",
            content=body,
            headers={"X-Custom": "kept", "Connection": "keep-alive, X-Hop", "X-Hop": "1"},
        )
        assert response.status_code == 200, response.text
        echo = response.json()
        assert (echo["method"], echo["path"], echo["query"]) == (method, "/some/where/", "a=1&b=x%20y")
        assert echo["body"] == (body or "")
        assert headers_of(echo).get("content-length", "0") == str(len(body or ""))
        headers = echo["headers"]
        assert headers["x-custom"] == "kept"
        assert "authorization" not in headers  # the client's credentials stay behind
        assert "x-hop" not in headers  # named in Connection: hop-by-hop
        assert headers["x-forwarded-uri"] == f"{base}/some/where/"
        assert headers["x-forwarded-for"] == "127.0.0.1"
    head = api.head(f"{base}/anything")
    assert head.status_code == 200 and head.content == b""


def test_a_streamed_body_arrives_whole(api: httpx.Client, fake_node: str) -> None:
    chunks = [b"x" * 10000, b"y" * 20000, b"z"]
    response = api.post(f"/api/v1/nodes/{fake_node}/proxy/upload", content=iter(chunks))  # chunked
    assert response.status_code == 200
    echo = response.json()
    assert echo["body"] == b"".join(chunks).decode() and echo["headers"]["transfer-encoding"] == "chunked"


def test_status_redirects_and_cors_as_upstream_relays_them(api: httpx.Client, fake_node: str) -> None:
    base = f"/api/v1/nodes/{fake_node}/proxy"
    teapot = api.get(f"{base}/status/418")
    assert teapot.status_code == 418 and teapot.json()["path"] == "/status/418"
    redirect = api.get(f"{base}/redirect")
    assert redirect.status_code == 302
    assert redirect.headers["location"] == f"{base}/target/"  # under the proxy path, as upstream rewrites it
    cors = api.get(f"{base}/cors")
    assert cors.headers["x-kept"] == "yes" and "access-control-allow-origin" not in cors.headers


def test_the_proxy_root_redirects_to_its_slash(api: httpx.Client, fake_node: str) -> None:
    response = api.get(f"/api/v1/nodes/{fake_node}/proxy?x=1")
    assert response.status_code == 301
    assert response.headers["location"] == f"/api/v1/nodes/{fake_node}/proxy/?x=1"
    assert api.get(f"/api/v1/nodes/{fake_node}/proxy/").json()["path"] == "/"
    # `.../proxy` with the path as a query parameter (PodProxyOptions.path), as upstream takes it
    assert api.get(f"/api/v1/nodes/{fake_node}/proxy?path=/from/query").json()["path"] == "/from/query"
    # dot segments are cleaned: the path cannot climb out of the backend's root
    assert api.get(f"/api/v1/nodes/{fake_node}/proxy/a/%2E%2E/%2E%2E/b").json()["path"] == "/b"


def test_node_errors(api: httpx.Client, fake_node: str, tmp_path: Path) -> None:
    assert status(api.get("/api/v1/nodes/no-such-node/proxy/healthz")) == (
        404,
        "NotFound",
        'nodes "no-such-node" not found',
    )
    assert status(api.get("/api/v1/nodes/a:b:c:d/proxy/")) == (400, "BadRequest", 'invalid node request "a:b:c:d"')
    assert status(api.get("/api/v1/nodes/ftp:node-1:21/proxy/"))[:2] == (400, "BadRequest")
    # another port of a node is its IP's, which only the netns dataplane has
    code, reason, message = status(api.get("/api/v1/nodes/node-1:9999/proxy/"))
    assert (code, reason) == (503, "ServiceUnavailable") and "simulated dataplane has no pod network" in message
    code, reason, message = status(api.get("/api/v1/nodes/node-1:nonsense/proxy/"))
    assert (code, reason) == (400, "BadRequest") and 'port "nonsense"' in message
    # the kubelet endpoint refusing the connection: upstream's 503 wording
    closed = api.post(
        "/api/v1/nodes",
        json={"metadata": {"name": "closed-node", "annotations": {"tinykube.io/kubelet-endpoint": "127.0.0.1:1"}}},
    )
    assert closed.status_code == 201
    try:
        assert status(api.get("/api/v1/nodes/closed-node/proxy/healthz")) == (
            503,
            "ServiceUnavailable",
            "error trying to reach service: dial tcp 127.0.0.1:1: connect: connection refused",
        )
    finally:
        api.delete("/api/v1/nodes/closed-node")


# ---- pods/proxy and services/proxy: no pod network in the simulated dataplane -------------------------------


def test_pod_proxy_errors(api: httpx.Client) -> None:
    running_pod(api, "proxied", {"app": "proxied"})
    assert status(api.get(f"/api/v1/namespaces/{NS}/pods/nope/proxy/")) == (404, "NotFound", 'pods "nope" not found')
    assert status(api.get(f"/api/v1/namespaces/{NS}/pods/gopher:proxied:70/proxy/")) == (
        400,
        "BadRequest",
        'invalid pod request "gopher:proxied:70"',
    )
    code, reason, message = status(api.get(f"/api/v1/namespaces/{NS}/pods/proxied:http-ish/proxy/"))
    assert (code, reason) == (400, "BadRequest") and 'port "http-ish"' in message
    assert status(api.get(f"/api/v1/namespaces/{NS}/pods/proxied:70000/proxy/"))[:2] == (400, "BadRequest")
    for path in ("proxied", "proxied:8080", "https:proxied:8443"):
        code, reason, message = status(api.get(f"/api/v1/namespaces/{NS}/pods/{path}/proxy/index.html"))
        assert (code, reason) == (503, "ServiceUnavailable")
        assert message.startswith("the simulated dataplane has no pod network"), message
    # a pod without an IP is no address to proxy to (upstream's IsProxyableIP)
    unscheduled = {
        "metadata": {"name": "nowhere"},
        "spec": {"schedulerName": "none-such", "containers": [{"name": "c", "image": "x"}]},
    }
    assert api.post(f"/api/v1/namespaces/{NS}/pods", json=unscheduled).status_code == 201
    assert status(api.get(f"/api/v1/namespaces/{NS}/pods/nowhere/proxy/")) == (400, "BadRequest", "address not allowed")


def test_service_proxy_errors(api: httpx.Client) -> None:
    def create_service(name: str, ports: list[dict[str, Any]], selector: dict[str, str] | None = None) -> None:
        spec: dict[str, Any] = {"ports": ports}
        if selector:
            spec["selector"] = selector
        response = api.post(f"/api/v1/namespaces/{NS}/services", json={"metadata": {"name": name}, "spec": spec})
        assert response.status_code == 201, response.text

    svc = f"/api/v1/namespaces/{NS}/services"
    assert status(api.get(f"{svc}/nope/proxy/")) == (404, "NotFound", 'services "nope" not found')
    assert status(api.get(f"{svc}/a:b:c:d/proxy/")) == (400, "BadRequest", 'invalid service request "a:b:c:d"')
    create_service("lonely", [{"name": "http", "port": 80, "targetPort": 8080}], {"app": "nobody"})
    assert status(api.get(f"{svc}/lonely:http/proxy/")) == (
        503,
        "ServiceUnavailable",
        'no endpoints available for service "lonely"',
    )
    assert status(api.get(f"{svc}/lonely:81/proxy/")) == (
        503,
        "ServiceUnavailable",
        'no service port 81 found for service "lonely"',
    )
    running_pod(api, "backend-1", {"app": "served"})
    create_service("served", [{"name": "http", "port": 80, "targetPort": 8080}], {"app": "served"})
    eventually(
        lambda: any(
            s.get("endpoints")
            for s in api.get(
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                params={"labelSelector": "kubernetes.io/service-name=served"},
            ).json()["items"]
        ),
        what="served's endpoints",
    )
    # a port name the slices lack (or none, for a named port): no endpoints for that id
    assert status(api.get(f"{svc}/served:metrics/proxy/")) == (
        503,
        "ServiceUnavailable",
        'no endpoints available for service "served:metrics"',
    )
    assert status(api.get(f"{svc}/served/proxy/"))[2] == 'no endpoints available for service "served"'
    for id_ in ("served:http", "served:80", "https:served:http"):
        code, reason, message = status(api.get(f"{svc}/{id_}/proxy/"))
        assert (code, reason) == (503, "ServiceUnavailable")
        assert message.startswith("the simulated dataplane has no pod network"), message
    # a selectorless Service's endpoints are no pods: never proxied to (upstream's isValidAddress)
    create_service("outside", [{"port": 80}])
    endpoints = {
        "metadata": {"name": "outside"},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 80}]}],
    }
    assert api.post(f"/api/v1/namespaces/{NS}/endpoints", json=endpoints).status_code == 201
    eventually(
        lambda: api.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            params={"labelSelector": "kubernetes.io/service-name=outside"},
        ).json()["items"],
        what="the mirrored slice",
    )
    assert status(api.get(f"{svc}/outside/proxy/")) == (
        503,
        "ServiceUnavailable",
        'no endpoints available for service "outside"',
    )


def test_kubectl_reaches_the_proxy_errors_too(cluster: RunningCluster) -> None:
    result = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/services/nope/proxy/", check=False)
    assert result.returncode != 0 and 'services "nope" not found' in result.stderr


def test_the_simulated_dataplane_never_dials_the_kubernetes_endpoints(api: httpx.Client) -> None:
    """`default/kubernetes` has its endpoints (the control-plane node's address, as upstream keeps them); the
    apiserver proxies only to pods' addresses (upstream's isValidAddress), so nothing is dialled."""
    endpoints = api.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert endpoints.status_code == 200, endpoints.text
    response = api.get("/api/v1/namespaces/default/services/https:kubernetes:443/proxy/")
    assert response.status_code == 503, response.text
    assert response.json()["reason"] == "ServiceUnavailable"
