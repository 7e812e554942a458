"""Responses shaped as kube-apiserver's, against a real `tinykube up`, over raw HTTPS and raw WebSocket handshakes.

- Every API response body (object, list, Table, PartialObjectMetadata, Status, discovery) ends in a newline, as Go's
  `json.Encoder` writes it; `/version` (upstream's `WriteRawJSON`: indented) and the OpenAPI documents (kube-openapi:
  `json.Marshal`) do not; the protobuf OpenAPI document is untouched.
- A request to upgrade the connection gets upstream's answer: a path that streams (watch, log) is served over a
  WebSocket; any other path answers as a plain GET does — the object or list, or the `Status` of the error (404 for
  a path that is not served; for `pods/exec` of a pod no node runs, upstream's 400) — never uvicorn's bare 403 with
  an empty body.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websocket import ABNF, WebSocket, WebSocketBadStatusException, create_connection

from tests.apiserver.test_pod_subresources import FakeKubelet, make_node, make_pod
from tests.conftest import RunningCluster
from tinykube.apiserver.schema import openapiv2

SERVICES = "/api/v1/namespaces/{ns}/services"
NOT_FOUND = "the server could not find the requested resource"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
MERGE = {"Content-Type": "application/merge-patch+json"}


def service(name: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def deployment(name: str) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    spec = {"replicas": 0, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def assert_api_body(response: httpx.Response) -> Any:
    """One JSON document ending in exactly one newline, with a Content-Length that counts it."""
    body = response.content
    assert body.endswith(b"}\n") and not body.endswith(b"\n\n"), (response.request.url, body[-40:])
    assert response.headers["content-length"] == str(len(body))
    assert response.headers["content-type"].startswith("application/json")
    return json.loads(body)


# ---- every API response ends in a newline ------------------------------------------------------------------


def test_objects_lists_tables_and_metadata_end_in_a_newline(api: httpx.Client, namespace: str) -> None:
    url = SERVICES.format(ns=namespace)
    for name in ("a", "b", "c"):
        assert_api_body(api.post(url, json=service(name)))
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert_api_body(api.post(deployments, json=deployment("web")))
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = [
        (f"{url}/a", {}, {}),
        (url, {}, {}),
        (url, {"limit": "1"}, {}),
        ("/api/v1/namespaces", {"labelSelector": "kubernetes.io/metadata.name=default"}, {}),
        (f"{url}/a", {}, {"Accept": TABLE}),
        (url, {}, {"Accept": TABLE}),
        (url, {"includeObject": "Object"}, {"Accept": TABLE}),
        (f"{url}/a", {}, {"Accept": PARTIAL}),
        (url, {}, {"Accept": PARTIAL_LIST}),
        (f"{deployments}/web", {}, {}),
        (f"{deployments}/web/scale", {}, {}),
        (f"{deployments}/web/scale", {}, {"Accept": TABLE}),
        ("/apis/apps/v1/deployments", {}, {}),
        ("/api/v1/nodes", {}, {"Accept": TABLE}),
        ("/debug/allocations", {}, {}),
    ]
    for path, params, headers in requests:
        response = api.get(path, params=params, headers=headers)
        assert response.status_code == 200, (path, response.text)
        assert_api_body(response)
    limited = api.get(url, params={"limit": "1"}).json()
    assert_api_body(api.get(url, params={"limit": "1", "continue": limited["metadata"]["continue"]}))


def test_writes_end_in_a_newline(api: httpx.Client, namespace: str) -> None:
    url = SERVICES.format(ns=namespace)
    created = assert_api_body(api.post(url, json=service("w")))
    assert created["metadata"]["name"] == "w"
    assert_api_body(api.post(url, params={"dryRun": "All"}, json=service("dry")))
    created["metadata"]["labels"] = {"x": "1"}
    assert assert_api_body(api.put(f"{url}/w", json=created))["metadata"]["labels"] == {"x": "1"}
    patched = assert_api_body(api.patch(f"{url}/w", json={"metadata": {"labels": {"x": "2"}}}, headers=MERGE))
    assert patched["metadata"]["labels"] == {"x": "2"}
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert_api_body(api.post(deployments, json=deployment("web")))
    scaled = api.patch(f"{deployments}/web/scale", json={"spec": {"replicas": 0}}, headers=MERGE)
    assert assert_api_body(scaled)["kind"] == "Scale"
    pod = make_pod(api, namespace, "p")
    bound = api.post(
        f"/api/v1/namespaces/{namespace}/pods/p/binding",
        json={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": "node-x"}},
    )
    assert assert_api_body(bound) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    assert pod["metadata"]["name"] == "p"
    # a Service's delete answers the object; a Deployment's the Status of a success; a collection the List
    assert assert_api_body(api.delete(f"{url}/w"))["kind"] == "Service"
    assert assert_api_body(api.delete(f"{deployments}/web"))["status"] == "Success"
    api.post(url, json=service("x"))
    assert assert_api_body(api.delete(url))["kind"] == "ServiceList"


def test_status_errors_end_in_a_newline(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    url = SERVICES.format(ns=namespace)
    api.post(url, json=service("taken"))
    failures = [
        (api.get(f"{url}/missing"), 404, 'services "missing" not found'),
        (api.post(url, json=service("taken")), 409, 'services "taken" already exists'),
        (api.post(url, json=service("bad", type="Sideways")), 422, None),
        (api.post(url, content=b"{not json", headers={"Content-Type": "application/json"}), 400, None),
        (api.put(url, json=service("x")), 405, None),
        (api.get("/api/v1/namespaces/default/frobs"), 404, NOT_FOUND),
        (api.get("/apis/no.such.group"), 404, NOT_FOUND),
        (api.get(url, params={"watch": "true", "resourceVersion": "abc"}), 400, "invalid resource version: abc"),
    ]
    for response, code, message in failures:
        body = assert_api_body(response)
        assert response.status_code == code and body["kind"] == "Status" and body["code"] == code, response.text
        if message is not None:
            assert body["message"] == message
    with cluster.http(headers={"Authorization": "Bearer wrong"}) as wrong:
        assert assert_api_body(wrong.get("/api/v1/namespaces"))["reason"] == "Unauthorized"


def test_discovery_ends_in_a_newline(api: httpx.Client) -> None:
    for path in ("/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/apis/discovery.k8s.io/v1"):
        assert_api_body(api.get(path))
    for path in ("/api", "/apis"):
        response = api.get(path, headers={"Accept": AGGREGATED})
        assert assert_api_body(response)["kind"] == "APIGroupDiscoveryList"


def test_every_watch_event_ends_in_a_newline(api: httpx.Client, namespace: str) -> None:
    url = SERVICES.format(ns=namespace)
    api.post(url, json=service("a"))
    for headers in ({}, {"Accept": TABLE}):
        params = {"watch": "true", "timeoutSeconds": "1", "allowWatchBookmarks": "true"}
        response = api.get(url, params=params, headers=headers)
        lines = response.content.split(b"\n")
        assert lines[-1] == b"" and len(lines) >= 3, response.content  # ADDED, the final BOOKMARK, then nothing
        assert [json.loads(line)["type"] for line in lines[:-1]][:1] == ["ADDED"]


def test_documents_upstream_writes_without_a_newline(api: httpx.Client) -> None:
    """kube-apiserver's `/version` is `WriteRawJSON` (json.MarshalIndent) and kube-openapi serves `json.Marshal`
    output: neither ends in a newline."""
    version = api.get("/version")
    assert version.content.startswith(b'{\n  "major": "1",\n') and version.content.endswith(b'"\n}')
    for path in ("/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1"):
        response = api.get(path, headers={"Accept": "application/json"})
        assert response.status_code == 200 and response.content.endswith(b"}"), path
        assert response.headers["content-length"] == str(len(response.content))
        json.loads(response.content)


def test_the_protobuf_openapi_document_is_unchanged(api: httpx.Client) -> None:
    response = api.get("/openapi/v2", headers={"Accept": openapiv2.V2_PROTOBUF_MEDIA_TYPE})
    assert response.headers["content-type"] == openapiv2.V2_PROTOBUF_MEDIA_TYPE
    assert response.content == openapiv2.openapi_v2_protobuf()
    assert response.headers["content-length"] == str(len(response.content))


# ---- requests to upgrade the connection --------------------------------------------------------------------


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def status_body(self) -> dict[str, Any]:
        """The body as a Kubernetes Status, checked as `assert_api_body` checks an HTTP one."""
        assert self.body.endswith(b"}\n") and self.headers["content-length"] == str(len(self.body)), self
        assert self.headers["content-type"] == "application/json"
        status: dict[str, Any] = json.loads(self.body)
        assert status["kind"] == "Status" and status["status"] == "Failure" and status["code"] == self.status
        return status


def raw_request(cluster: RunningCluster, head: str, token: str | None = None) -> RawResponse:
    """Send a request head as-is over TLS (with the cluster's token) and read the whole answer."""
    url = urlsplit(cluster.server)
    assert url.hostname in ("127.0.0.1", "localhost", "::1")
    auth = f"Authorization: Bearer {token if token is not None else cluster.token}\r\n" if token != "" else ""
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    with (
        socket.create_connection((url.hostname, url.port), timeout=10) as plain,
        context.wrap_socket(plain, server_hostname=url.hostname) as tls,
    ):
        tls.sendall(f"{head}Host: {url.netloc}\r\n{auth}\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += tls.recv(65536) or b"EOF"
            assert not data.endswith(b"EOF"), data
        raw_head, _, body = data.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = tls.recv(65536)
            if not chunk:
                break
            body += chunk
    return RawResponse(int(lines[0].split()[1]), headers, body)


def websocket_head(path: str, protocol: str = "v4.channel.k8s.io") -> str:
    """A WebSocket handshake as the Python client and kubectl send it."""
    return (
        f"GET {path} HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: {protocol}\r\n"
    )


def spdy_head(path: str) -> str:
    """kubectl's SPDY/3.1 upgrade request (its fallback for exec, attach and port-forward)."""
    return (
        f"POST {path} HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n"
        "Content-Length: 0\r\n"
    )


STREAMS = [
    "pods/p/exec?command=ls&stdout=true&stderr=true",
    "pods/p/attach?stdout=true",
    "pods/p/portforward?ports=80",
    "pods/p/proxy/",
    "services/s/proxy/",
]


@pytest.mark.parametrize("stream", STREAMS[:3])
def test_upgrade_to_a_pod_no_node_runs_is_upstreams_bad_request(
    cluster: RunningCluster, api: httpx.Client, namespace: str, stream: str
) -> None:
    """exec, attach and portforward are checked before anything is relayed: the WebSocket handshake and the SPDY
    upgrade get the Status of what is wrong as their answer."""
    make_pod(api, namespace, "p")
    path = f"/api/v1/namespaces/{namespace}/{stream}"
    for head in (websocket_head(path), spdy_head(path)):
        answer = raw_request(cluster, head)
        assert answer.status == 400, answer
        status = answer.status_body()
        assert (status["reason"], status["message"]) == ("BadRequest", "pod p does not have a host assigned")


@pytest.mark.parametrize("stream", STREAMS[3:])
def test_websocket_to_a_proxy_path_is_answered_as_a_plain_get(
    cluster: RunningCluster, api: httpx.Client, namespace: str, stream: str
) -> None:
    make_pod(api, namespace, "p")
    api.post(SERVICES.format(ns=namespace), json=service("s"))
    path = f"/api/v1/namespaces/{namespace}/{stream}"
    plain = api.get(path)
    answer = raw_request(cluster, websocket_head(path))
    assert answer.status == plain.status_code >= 400, answer
    assert answer.status_body()["message"] == plain.json()["message"]


def test_websocket_to_an_ordinary_path_is_answered_as_a_plain_get(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    """kube-apiserver's list and get handlers ignore `Upgrade`: no 101, the list itself, or the error's Status."""
    url = SERVICES.format(ns=namespace)
    api.post(url, json=service("s"))
    answer = raw_request(cluster, websocket_head(url))
    assert answer.status == 200 and answer.body.endswith(b"}\n"), answer
    assert answer.headers["content-length"] == str(len(answer.body))
    assert [s["metadata"]["name"] for s in json.loads(answer.body)["items"]] == ["s"]
    missing = raw_request(cluster, websocket_head(f"{url}/nope"))
    assert missing.status == 404 and missing.status_body()["message"] == 'services "nope" not found'
    not_served = raw_request(cluster, websocket_head("/api/v1/namespaces/default/frobs"))
    assert not_served.status == 404 and not_served.status_body()["message"] == NOT_FOUND


def test_websocket_needs_the_token(cluster: RunningCluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods/p/exec?command=ls"
    for token, code, reason in (("", 403, "Forbidden"), ("wrong", 401, "Unauthorized")):  # no token: anonymous
        answer = raw_request(cluster, websocket_head(path), token=token)
        assert answer.status == code, answer
        assert answer.status_body()["reason"] == reason


def test_upgrade_requests_raise_no_alarm_in_the_log(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    """Answered as they should be, they are nothing to warn about (uvicorn would log "Unsupported upgrade request."
    for SPDY and, after answering a WebSocket handshake with a Status, an ERROR about an incomplete handshake)."""
    make_pod(api, namespace, "p")
    path = f"/api/v1/namespaces/{namespace}/pods/p/exec?command=ls&stdout=true"
    assert raw_request(cluster, websocket_head(path)).status == 400
    assert raw_request(cluster, spdy_head(path)).status == 400
    assert api.get("/readyz").status_code == 200  # the log is written by now
    log = (cluster.data_dir.parent / f"{cluster.data_dir.name}.log").read_text()
    assert "handshake" not in log and "upgrade" not in log.lower(), log


# ---- streams over a WebSocket, as upstream serves them -------------------------------------------------------


@pytest.fixture
def websocket(cluster: RunningCluster) -> Iterator[Callable[..., WebSocket]]:
    """Open WebSocket connections to the cluster with websocket-client, as the Python client does (closed
    afterwards); every read and the handshake time out after 30 s."""
    opened: list[WebSocket] = []

    def open_(path: str, subprotocols: list[str] | None = None) -> WebSocket:
        conn = create_connection(
            cluster.server.replace("https://", "wss://") + path,
            header=[f"Authorization: Bearer {cluster.token}"],
            sslopt={"ca_certs": str(cluster.ca_file)},
            subprotocols=subprotocols,
            timeout=30,
        )
        opened.append(conn)
        return conn

    yield open_
    for conn in opened:
        conn.close(timeout=5)


def read_until_close(conn: WebSocket) -> tuple[list[tuple[int, bytes]], int]:
    """The data messages (opcode, payload) up to the server's close, and the close code."""
    messages: list[tuple[int, bytes]] = []
    while True:
        opcode, data = conn.recv_data(control_frame=True)
        if opcode == ABNF.OPCODE_CLOSE:
            return messages, int.from_bytes(data[:2], "big")
        if opcode in (ABNF.OPCODE_TEXT, ABNF.OPCODE_BINARY):
            messages.append((opcode, data))


def next_text(conn: WebSocket) -> str:
    opcode, data = conn.recv_data()
    assert opcode == ABNF.OPCODE_TEXT, (opcode, data)
    return data.decode()


def test_watch_over_a_websocket_sends_one_message_per_event(
    api: httpx.Client, namespace: str, websocket: Callable[..., WebSocket]
) -> None:
    url = SERVICES.format(ns=namespace)
    api.post(url, json=service("first"))
    conn = websocket(f"{url}?watch=true&timeoutSeconds=5")
    assert conn.getstatus() == 101
    first = next_text(conn)
    assert first.endswith("}\n") and first.count("\n") == 1
    assert (json.loads(first)["type"], json.loads(first)["object"]["metadata"]["name"]) == ("ADDED", "first")
    api.post(url, json=service("second"))
    api.delete(f"{url}/first")
    events = [json.loads(next_text(conn)) for _ in range(2)]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "second"), ("DELETED", "first")]


def test_watch_over_a_websocket_ends_at_its_timeout(
    api: httpx.Client, namespace: str, websocket: Callable[..., WebSocket]
) -> None:
    conn = websocket(f"{SERVICES.format(ns=namespace)}?watch=true&timeoutSeconds=1&resourceVersion=0")
    started = time.monotonic()
    messages, code = read_until_close(conn)
    assert (messages, code) == ([], 1000)  # a normal close once the watch times out
    assert time.monotonic() - started < 10


def test_watch_errors_over_a_websocket_are_the_handshakes_answer(
    namespace: str, websocket: Callable[..., WebSocket]
) -> None:
    with pytest.raises(WebSocketBadStatusException) as failed:
        websocket(f"{SERVICES.format(ns=namespace)}?watch=true&resourceVersion=abc")
    assert failed.value.status_code == 400
    body = failed.value.resp_body
    assert body is not None and body.endswith(b"}\n")
    assert json.loads(body)["message"] == "invalid resource version: abc"


@pytest.fixture(scope="module")
def kubelet() -> Iterator[FakeKubelet]:
    fake = FakeKubelet()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        fake.server.shutdown()
        fake.server.server_close()


@pytest.fixture
def logged_pod(api: httpx.Client, namespace: str, kubelet: FakeKubelet) -> Iterator[str]:
    node = make_node(api, {"tinykube.io/kubelet-endpoint": kubelet.endpoint})
    make_pod(api, namespace, "web", node=node)
    yield f"/api/v1/namespaces/{namespace}/pods/web/log"
    api.delete(f"/api/v1/nodes/{node}")


def test_log_over_a_websocket(logged_pod: str, websocket: Callable[..., WebSocket]) -> None:
    """wsstream's protocols: binary messages by default, base64 text for `base64.binary.k8s.io`."""
    expected = b"app line 1\napp line 2\napp line 3\n"
    binary, code = read_until_close(websocket(logged_pod))
    assert code == 1000 and {op for op, _ in binary} == {ABNF.OPCODE_BINARY}
    assert b"".join(data for _, data in binary) == expected
    conn = websocket(logged_pod, subprotocols=["base64.binary.k8s.io"])
    assert conn.getsubprotocol() == "base64.binary.k8s.io"
    text, code = read_until_close(conn)
    assert code == 1000 and {op for op, _ in text} == {ABNF.OPCODE_TEXT}
    assert b"".join(base64.b64decode(data) for _, data in text) == expected
