"""`pods/binding` and `pods/log` against a real `tinykube up`: the REST API, kubectl and the Python client.

Logs come from a fake kubelet in this process (plain HTTP on 127.0.0.1, the `/containerLogs/...` path), which a
Node advertises in its `tinykube.io/kubelet-endpoint` annotation, as tinykube's node agent does.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.conftest import RunningCluster, readline

PODS = "/api/v1/namespaces/{ns}/pods"
NO_SCHEDULER = "tinykube-test-none"  # keeps any scheduler in the cluster away from these pods
TIMESTAMP = "2024-05-01T10:00:00.000000000Z"


# ---- a fake kubelet ------------------------------------------------------------------------------------------


class FakeKubelet:
    """`GET /containerLogs/{ns}/{pod}/{container}`; what it answers depends on the container's name:
    `broken-<code>` fails with that code, `endless` writes until the reader goes away, anything else writes
    three lines (honouring tailLines and timestamps) and, when following, holds the last one back until
    `release` is set."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (path, raw query)
        self.release = threading.Event()
        self.reader_gone = threading.Event()
        kubelet = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                kubelet.requests.append((url.path, url.query))
                parts = url.path.split("/")
                if len(parts) != 5 or parts[1] != "containerLogs":
                    return self._answer(404, "404 page not found")
                container = parts[4]
                if container.startswith("broken-"):
                    return self._answer(int(container.removeprefix("broken-")), f"kubelet says no to {container}")
                query = parse_qs(url.query)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                if container == "endless":
                    return self._endless()
                lines = [f"{container} line {i}\n" for i in (1, 2, 3)]
                if "tailLines" in query:
                    lines = lines[len(lines) - int(query["tailLines"][0]) :]
                if "timestamps" in query:
                    lines = [f"{TIMESTAMP} {line}" for line in lines]
                if "follow" in query:
                    self.wfile.write("".join(lines[:-1]).encode())
                    self.wfile.flush()
                    kubelet.release.wait(20)
                    lines = lines[-1:]
                self.wfile.write("".join(lines).encode())

            def _endless(self) -> None:
                try:
                    for i in range(2000):
                        self.wfile.write(f"tick {i}\n".encode())
                        self.wfile.flush()
                        time.sleep(0.02)
                except OSError:
                    kubelet.reader_gone.set()

            def _answer(self, code: int, text: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(text.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"127.0.0.1:{self.server.server_address[1]}"

    def queries(self, namespace: str) -> list[tuple[str, dict[str, list[str]]]]:
        """(path, parsed query) of every request for pods of `namespace`."""
        return [(p, parse_qs(q, keep_blank_values=True)) for p, q in self.requests if f"/{namespace}/" in p]


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


def make_node(api: httpx.Client, annotations: dict[str, str] | None = None) -> str:
    name = f"node-{secrets.token_hex(4)}"
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations or {}}}
    response = api.post("/api/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    return name


@pytest.fixture
def nodes(api: httpx.Client) -> Iterator[list[str]]:
    """Names of the nodes a test made (deleted afterwards)."""
    made: list[str] = []
    yield made
    for name in made:
        api.delete(f"/api/v1/nodes/{name}")


@pytest.fixture
def node(api: httpx.Client, kubelet: FakeKubelet, nodes: list[str]) -> str:
    """A Node whose kubelet endpoint is the fake kubelet."""
    nodes.append(make_node(api, {"tinykube.io/kubelet-endpoint": kubelet.endpoint}))
    return nodes[-1]


def make_pod(
    api: httpx.Client, ns: str, name: str, containers: tuple[str, ...] = ("app",), node: str = "", **spec: Any
) -> dict[str, Any]:
    spec = {"schedulerName": NO_SCHEDULER, "containers": [{"name": c, "image": "busybox"} for c in containers], **spec}
    if node:
        spec["nodeName"] = node
    response = api.post(
        PODS.format(ns=ns), json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )
    assert response.status_code == 201, response.text
    pod: dict[str, Any] = response.json()
    return pod


def binding(name: str, node: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}}
    body["target"] = {"apiVersion": "v1", "kind": "Node", "name": node}
    for key, value in extra.items():
        body[key] = value
    return body


def failure(response: httpx.Response, code: int, reason: str | None, message: str) -> dict[str, Any]:
    """A Failure Status with exactly this code, reason (None: no reason, as upstream's unknown errors) and message."""
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    assert body.get("reason") == reason
    assert body["message"] == message
    return body


# ---- pods/binding --------------------------------------------------------------------------------------------


def test_binding_assigns_the_pod_in_one_write(api: httpx.Client, namespace: str) -> None:
    created = make_pod(api, namespace, "web")
    events: list[dict[str, Any]] = []

    def watch() -> None:
        params = {
            "watch": "true",
            "resourceVersion": created["metadata"]["resourceVersion"],
            "fieldSelector": "metadata.name=web",
            "timeoutSeconds": "3",
        }
        with api.stream("GET", PODS.format(ns=namespace), params=params) as stream:
            events.extend(json.loads(line) for line in stream.iter_lines() if line)

    watcher = threading.Thread(target=watch)
    watcher.start()
    time.sleep(0.3)  # let the watch open (it starts from the create's revision, so nothing is missed anyway)
    response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=binding("web", "node-1"))
    assert response.status_code == 201, response.text
    assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    pod = api.get(f"{PODS.format(ns=namespace)}/web").json()
    assert pod["spec"]["nodeName"] == "node-1"
    [condition] = pod["status"]["conditions"]
    assert condition["type"] == "PodScheduled" and condition["status"] == "True"
    assert condition["lastProbeTime"] is None and condition["lastTransitionTime"].endswith("Z")
    assert pod["status"]["phase"] == "Pending"  # the rest of the status is untouched

    watcher.join(10)
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert events[0]["object"]["spec"]["nodeName"] == "node-1"
    assert events[0]["object"]["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


def test_binding_replaces_an_unschedulable_condition_and_merges_annotations(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no nodes"}
    response = api.patch(
        f"{PODS.format(ns=namespace)}/web/status",
        json={"status": {"conditions": [unschedulable]}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    body = binding("web", "node-2", metadata={"name": "web", "annotations": {"scheduled-by": "test"}})
    assert api.post(f"{PODS.format(ns=namespace)}/web/binding", json=body).status_code == 201
    pod = api.get(f"{PODS.format(ns=namespace)}/web").json()
    assert pod["metadata"]["annotations"] == {"scheduled-by": "test"}
    [condition] = pod["status"]["conditions"]
    assert condition["status"] == "True" and "reason" not in condition and "message" not in condition


def test_legacy_bindings_collection(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    response = api.post(f"/api/v1/namespaces/{namespace}/bindings", json=binding("web", "node-3"))
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "Success"
    assert api.get(f"{PODS.format(ns=namespace)}/web").json()["spec"]["nodeName"] == "node-3"
    nameless = binding("", "node-3", metadata={})
    failure(
        api.post(f"/api/v1/namespaces/{namespace}/bindings", json=nameless),
        400,
        "BadRequest",
        "Name parameter required.",
    )


def test_binding_a_bound_pod_conflicts(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web", node="node-1")
    response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=binding("web", "node-2"))
    body = failure(
        response,
        409,
        "Conflict",
        'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-1"',
    )
    assert body["details"] == {"name": "web", "kind": "pods/binding"}
    assert api.get(f"{PODS.format(ns=namespace)}/web").json()["spec"]["nodeName"] == "node-1"


def test_binding_a_pod_being_deleted_conflicts(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    merge = {"Content-Type": "application/merge-patch+json"}
    api.patch(f"{PODS.format(ns=namespace)}/web", json={"metadata": {"finalizers": ["test/hold"]}}, headers=merge)
    assert api.delete(f"{PODS.format(ns=namespace)}/web").status_code == 200
    try:
        response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=binding("web", "node-1"))
        failure(
            response,
            409,
            "Conflict",
            'Operation cannot be fulfilled on pods/binding "web": '
            "pod web is being deleted, cannot be assigned to a host",
        )
    finally:
        api.patch(f"{PODS.format(ns=namespace)}/web", json={"metadata": {"finalizers": None}}, headers=merge)


def test_binding_a_missing_pod_is_not_found(api: httpx.Client, namespace: str) -> None:
    response = api.post(f"{PODS.format(ns=namespace)}/ghost/binding", json=binding("ghost", "node-1"))
    body = failure(response, 404, "NotFound", 'pods "ghost" not found')
    assert body["details"] == {"name": "ghost", "kind": "pods"}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        pytest.param(
            {"kind": "Pod", "name": "node-1"},
            'target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
            id="kind",
        ),
        pytest.param({"kind": "Node", "name": ""}, "target.name: Required value", id="no-name"),
        pytest.param(
            {"kind": "Service"},
            '[target.kind: Unsupported value: "Service": supported values: "Node", "<empty>", '
            "target.name: Required value]",
            id="both",
        ),
    ],
)
def test_binding_target_is_validated(api: httpx.Client, namespace: str, target: dict[str, str], message: str) -> None:
    # upstream's BindingREST returns ValidatePodBinding's errors as a plain aggregate, which the apiserver turns
    # into a 500 Status without a reason (ErrorToAPIStatus)
    make_pod(api, namespace, "web")
    response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=binding("web", "x", target=target))
    failure(response, 500, None, message)
    assert "nodeName" not in api.get(f"{PODS.format(ns=namespace)}/web").json()["spec"]


def test_binding_target_without_kind_is_accepted(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    body = binding("web", "x", target={"name": "node-9"})
    assert api.post(f"{PODS.format(ns=namespace)}/web/binding", json=body).status_code == 201


def test_binding_name_must_match_the_url(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=binding("other", "node-1"))
    failure(response, 400, "BadRequest", "name in URL does not match name in Binding object")


def test_binding_uid_precondition(api: httpx.Client, namespace: str) -> None:
    pod = make_pod(api, namespace, "web")
    uid = pod["metadata"]["uid"]
    wrong = binding("web", "node-1", metadata={"name": "web", "uid": "00000000-0000-0000-0000-000000000000"})
    response = api.post(f"{PODS.format(ns=namespace)}/web/binding", json=wrong)
    failure(
        response,
        409,
        "Conflict",
        'Operation cannot be fulfilled on pods "web": Precondition failed: UID in precondition: '
        f"00000000-0000-0000-0000-000000000000, UID in object meta: {uid}",
    )
    right = binding("web", "node-1", metadata={"name": "web", "uid": uid})
    assert api.post(f"{PODS.format(ns=namespace)}/web/binding", json=right).status_code == 201


def test_binding_dry_run_and_other_verbs(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    url = f"{PODS.format(ns=namespace)}/web/binding"
    assert api.post(url, params={"dryRun": "All"}, json=binding("web", "node-1")).status_code == 201
    assert "nodeName" not in api.get(f"{PODS.format(ns=namespace)}/web").json()["spec"]
    message = "the server does not allow this method on the requested resource"
    failure(api.get(url), 405, "MethodNotAllowed", message)
    failure(api.put(url, json=binding("web", "node-1")), 405, "MethodNotAllowed", message)


def test_binding_with_the_python_client(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web")
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    with k8s.ApiClient(configuration) as api_client:
        core = k8s.CoreV1Api(api_client)
        body = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name="web"), target=k8s.V1ObjectReference(kind="Node", name="node-7")
        )
        # the client cannot deserialize the Status it gets back into a V1Binding (a known client issue)
        response = core.create_namespaced_pod_binding("web", namespace, body, _preload_content=False)
        assert response.status == 201
        assert json.loads(response.data)["status"] == "Success"
        assert core.read_namespaced_pod("web", namespace).spec.node_name == "node-7"
        api_client.rest_client.pool_manager.clear()  # an idle TLS connection would stall the cluster's shutdown


# ---- pods/log: kubectl -------------------------------------------------------------------------------------


def test_kubectl_logs(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str, kubelet: FakeKubelet
) -> None:
    make_pod(api, namespace, "web", node=node)
    result = cluster.kubectl("-n", namespace, "logs", "web")
    assert result.stdout == "app line 1\napp line 2\napp line 3\n"
    assert kubelet.queries(namespace) == [(f"/containerLogs/{namespace}/web/app", {})]


def test_kubectl_logs_of_a_named_container(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str, kubelet: FakeKubelet
) -> None:
    make_pod(api, namespace, "web", ("app", "sidecar"), node=node)
    result = cluster.kubectl("-n", namespace, "logs", "web", "-c", "sidecar")
    assert result.stdout == "sidecar line 1\nsidecar line 2\nsidecar line 3\n"
    assert kubelet.queries(namespace) == [(f"/containerLogs/{namespace}/web/sidecar", {})]


def test_kubectl_logs_tail_timestamps_previous(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str, kubelet: FakeKubelet
) -> None:
    make_pod(api, namespace, "web", node=node)
    result = cluster.kubectl("-n", namespace, "logs", "web", "--tail", "2", "--timestamps", "--previous")
    assert result.stdout == f"{TIMESTAMP} app line 2\n{TIMESTAMP} app line 3\n"
    [(_, query)] = kubelet.queries(namespace)
    assert query == {"tailLines": ["2"], "timestamps": ["true"], "previous": ["true"]}


def test_kubectl_logs_follow_is_live(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str, kubelet: FakeKubelet
) -> None:
    make_pod(api, namespace, "web", node=node)
    kubelet.release.clear()
    proc = _kubectl_background(cluster, "-n", namespace, "logs", "-f", "web")
    try:
        assert proc.stdout is not None
        got = [readline(proc, 20), readline(proc, 20)]
        assert got == ["app line 1\n", "app line 2\n"]
        assert proc.poll() is None  # the kubelet holds the last line back: kubectl is still following
        kubelet.release.set()
        assert readline(proc, 20) == "app line 3\n"
        assert proc.wait(20) == 0  # the kubelet ended the stream: so does kubectl
    finally:
        kubelet.release.set()
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
    [(_, query)] = kubelet.queries(namespace)
    assert query == {"follow": ["true"]}


def test_following_ends_when_the_client_goes_away(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str, kubelet: FakeKubelet
) -> None:
    make_pod(api, namespace, "web", ("endless",), node=node)
    kubelet.reader_gone.clear()
    proc = _kubectl_background(cluster, "-n", namespace, "logs", "-f", "web")
    try:
        assert readline(proc, 20) == "tick 0\n"
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    assert kubelet.reader_gone.wait(20), "the apiserver kept reading from the kubelet after kubectl went away"


def _kubectl_background(cluster: RunningCluster, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "KUBECACHEDIR": str(cluster.cache_dir)}
    return subprocess.Popen(["kubectl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_kubectl_shows_the_kubelets_error(
    cluster: RunningCluster, namespace: str, api: httpx.Client, node: str
) -> None:
    make_pod(api, namespace, "web", ("broken-400",), node=node)
    result = cluster.kubectl("-n", namespace, "logs", "web", check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == "Error from server (BadRequest): kubelet says no to broken-400"


# ---- pods/log: the REST API ----------------------------------------------------------------------------------


def test_log_query_parameters_are_forwarded(api: httpx.Client, namespace: str, node: str, kubelet: FakeKubelet) -> None:
    make_pod(api, namespace, "web", ("app", "sidecar"), node=node)
    url = f"{PODS.format(ns=namespace)}/web/log"
    params = {
        "container": "app",
        "sinceSeconds": "30",
        "limitBytes": "1000",
        "insecureSkipTLSVerifyBackend": "true",
        "follow": "false",
        "previous": "0",
        "timestamps": "",  # any value but false/0 is true, as upstream's parameter codec reads it
    }
    response = api.get(url, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "".join(f"{TIMESTAMP} app line {i}\n" for i in (1, 2, 3))
    response = api.get(url, params={"container": "app", "sinceTime": "2024-05-01T12:00:00+02:00"})
    assert response.status_code == 200, response.text
    paths_and_queries = [(p, q) for p, q in kubelet.requests if f"/{namespace}/" in p]
    # as upstream: Go's url.Values encoding (keys sorted); insecureSkipTLSVerifyBackend and false flags not sent
    assert paths_and_queries == [
        (f"/containerLogs/{namespace}/web/app", "limitBytes=1000&sinceSeconds=30&timestamps=true"),
        (f"/containerLogs/{namespace}/web/app", "sinceTime=2024-05-01T12%3A00%3A00%2B02%3A00"),
    ]


def test_log_container_errors(api: httpx.Client, namespace: str, node: str) -> None:
    make_pod(
        api, namespace, "web", ("app", "sidecar"), node=node, initContainers=[{"name": "setup", "image": "busybox"}]
    )
    url = f"{PODS.format(ns=namespace)}/web/log"
    failure(
        api.get(url),
        400,
        "BadRequest",
        "a container name must be specified for pod web, choose one of: [setup app sidecar]",
    )
    failure(api.get(url, params={"container": "nope"}), 400, "BadRequest", "container nope is not valid for pod web")
    assert api.get(url, params={"container": "setup"}).text == "setup line 1\nsetup line 2\nsetup line 3\n"


def test_log_of_an_unscheduled_pod_is_empty(api: httpx.Client, namespace: str) -> None:
    # upstream's LogLocation has no location for a pod without a node, and the streamer answers 204 No Content
    make_pod(api, namespace, "web")
    response = api.get(f"{PODS.format(ns=namespace)}/web/log")
    assert response.status_code == 204 and response.content == b""


def test_log_of_missing_pod_or_node(api: httpx.Client, namespace: str) -> None:
    failure(api.get(f"{PODS.format(ns=namespace)}/ghost/log"), 404, "NotFound", 'pods "ghost" not found')
    make_pod(api, namespace, "web", node="node-that-is-not-there")
    response = api.get(f"{PODS.format(ns=namespace)}/web/log")
    failure(response, 404, "NotFound", 'nodes "node-that-is-not-there" not found')


def test_log_of_a_node_without_kubelet_endpoint(api: httpx.Client, namespace: str, nodes: list[str]) -> None:
    nodes.append(make_node(api))
    nodes.append(make_node(api, {"tinykube.io/kubelet-endpoint": "http://127.0.0.1:1/x"}))
    make_pod(api, namespace, "bare", node=nodes[0])
    make_pod(api, namespace, "odd", node=nodes[1])
    failure(
        api.get(f"{PODS.format(ns=namespace)}/bare/log"),
        500,
        None,
        f'node "{nodes[0]}" has no kubelet endpoint: its tinykube.io/kubelet-endpoint annotation is not set',
    )
    failure(
        api.get(f"{PODS.format(ns=namespace)}/odd/log"),
        500,
        None,
        f'node "{nodes[1]}" has an invalid tinykube.io/kubelet-endpoint annotation "http://127.0.0.1:1/x": '
        "want <host>:<port>",
    )


def test_log_when_the_kubelet_is_unreachable(api: httpx.Client, namespace: str, nodes: list[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nodes.append(make_node(api, {"tinykube.io/kubelet-endpoint": f"127.0.0.1:{port}"}))
    make_pod(api, namespace, "web", node=nodes[0])
    failure(
        api.get(f"{PODS.format(ns=namespace)}/web/log", params={"tailLines": "5"}),
        500,
        None,
        f'Get "http://127.0.0.1:{port}/containerLogs/{namespace}/web/app?tailLines=5": '
        f"dial tcp 127.0.0.1:{port}: connect: connection refused",
    )


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        pytest.param(400, "BadRequest", "kubelet says no to broken-400", id="400"),
        pytest.param(500, "InternalError", "Internal error occurred: kubelet says no to broken-500", id="500"),
        pytest.param(404, "NotFound", "the server could not find the requested resource ( pods/log web)", id="404"),
        pytest.param(403, "Forbidden", "kubelet says no to broken-403 ( pods/log web)", id="403"),
        pytest.param(
            502,
            "InternalError",
            'an error on the server ("kubelet says no to broken-502") has prevented the request from succeeding '
            "( pods/log web)",
            id="502",
        ),
        pytest.param(
            418,
            None,
            "the server responded with the status code 418 but did not return more information ( pods/log web)",
            id="418",
        ),
    ],
)
def test_log_kubelet_errors(
    api: httpx.Client, namespace: str, node: str, code: int, reason: str | None, message: str
) -> None:
    make_pod(api, namespace, "web", (f"broken-{code}",), node=node)
    body = failure(api.get(f"{PODS.format(ns=namespace)}/web/log"), code, reason, message)
    if code == 500:
        assert body["details"] == {"causes": [{"message": "kubelet says no to broken-500"}]}
    elif code != 400:
        assert body["details"] == {"name": "web", "kind": "pods/log"}


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        pytest.param(
            {"tailLines": "-1"},
            422,
            'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0',
            id="tail",
        ),
        pytest.param(
            {"limitBytes": "0", "sinceSeconds": "0"},
            422,
            'PodLogOptions "web" is invalid: [limitBytes: Invalid value: 0: must be greater than 0, '
            "sinceSeconds: Invalid value: 0: must be greater than 0]",
            id="limit-and-since",
        ),
        pytest.param(
            {"sinceSeconds": "5", "sinceTime": "2024-05-01T10:00:00Z"},
            422,
            'PodLogOptions "web" is invalid: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified',
            id="both-since",
        ),
        pytest.param({"tailLines": "ten"}, 400, 'strconv.ParseInt: parsing "ten": invalid syntax', id="not-a-number"),
    ],
)
def test_log_options_are_validated(
    api: httpx.Client, namespace: str, node: str, kubelet: FakeKubelet, params: dict[str, str], code: int, message: str
) -> None:
    make_pod(api, namespace, "web", node=node)
    failure(
        api.get(f"{PODS.format(ns=namespace)}/web/log", params=params),
        code,
        "Invalid" if code == 422 else "BadRequest",
        message,
    )
    assert kubelet.queries(namespace) == []


def test_log_allows_only_get(api: httpx.Client, namespace: str, node: str) -> None:
    make_pod(api, namespace, "web", node=node)
    response = api.post(f"{PODS.format(ns=namespace)}/web/log", json={})
    failure(response, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


# ---- discovery -----------------------------------------------------------------------------------------------


def test_discovery_lists_the_subresources(cluster: RunningCluster, api: httpx.Client) -> None:
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert resources["pods/binding"] == {
        "name": "pods/binding",
        "singularName": "",
        "namespaced": True,
        "kind": "Binding",
        "verbs": ["create"],
    }
    assert resources["pods/log"] == {
        "name": "pods/log",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get"],
    }
    assert resources["pods/eviction"] == {  # as upstream lists it: another group's kind
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    }
    assert resources["bindings"] == {
        "name": "bindings",
        "singularName": "binding",
        "namespaced": True,
        "kind": "Binding",
        "verbs": ["create"],
    }
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    [core] = api.get("/api", headers={"Accept": accept}).json()["items"]
    pods = next(r for r in core["versions"][0]["resources"] if r["resource"] == "pods")
    subresources = {s["subresource"]: (s["responseKind"]["kind"], s["verbs"]) for s in pods["subresources"]}
    assert subresources == {
        "status": ("Pod", ["get", "patch", "update"]),
        "binding": ("Binding", ["create"]),
        "eviction": ("Eviction", ["create"]),
        "log": ("Pod", ["get"]),
        "exec": ("PodExecOptions", ["create", "get"]),
        "attach": ("PodAttachOptions", ["create", "get"]),
        "portforward": ("PodPortForwardOptions", ["create", "get"]),
        "proxy": ("PodProxyOptions", ["create", "delete", "get", "patch", "update"]),
        "ephemeralcontainers": ("Pod", ["get", "patch", "update"]),
    }
    # kubectl lists top-level resources only (it hides subresources): the older `bindings` collection shows
    listed = cluster.kubectl("api-resources", "--api-group=", "-o", "name").stdout.split()
    assert "bindings" in listed and "pods" in listed
