"""The streaming half of the official `kubernetes` Python client's e2e suite (kubernetes/e2e_test/test_client.py in
kubernetes-client/python), reimplemented against `tinykube up --dataplane netns`: what needs real processes in a
pod. exec (upstream's `test_pod_apis` once its pod runs: text and binary output, GET and POST, an interactive shell
on stdin/stdout/stderr and the status on the error channel; `test_exit_code`; `test_pod_exec_close_channel`, the v5
protocol's close of stdin), and port-forward (`test_portforward_raw`: two echoing ports and one that nobody listens
on, over one connection, several times; `test_portforward_http`: urllib fetching nginx's page through a forwarded
socket).

Upstream's raw port-forward pod runs its echo server with the `python` image's `python`; here the server is this
module's own, run with `python3` (what the host has). Each test works in a namespace of its own instead of
`default`. The rest of the suite is in test_python_client_suite.py.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import select
import socket
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from kubernetes.stream import portforward, stream
from kubernetes.stream.ws_client import ERROR_CHANNEL, V5_CHANNEL_PROTOCOL

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import netns_cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

# An echo server on every port named on its command line: each connection gets back what it sends.
ECHO_SERVER = """\
import asyncio, sys

async def echo(reader, writer):
    while data := await reader.read(4096):
        writer.write(data)
        await writer.drain()
    writer.close()

async def main():
    servers = [await asyncio.start_server(echo, "0.0.0.0", int(port)) for port in sys.argv[1:]]
    await asyncio.gather(*(server.serve_forever() for server in servers))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"pcs{os.getpid()}", "--nodes", "1", "--controllers", "*") as running:
        yield running


@pytest.fixture(scope="module")
def core_v1(sandbox: RunningCluster) -> Iterator[k8s.CoreV1Api]:
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(sandbox.kubeconfig), client_configuration=configuration)
    api_client = k8s.ApiClient(configuration)
    try:
        yield k8s.CoreV1Api(api_client)
    finally:
        api_client.close()
        api_client.rest_client.pool_manager.clear()  # an idle keep-alive connection would stall the shutdown


@pytest.fixture
def namespace(core_v1: k8s.CoreV1Api, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, once its `default` ServiceAccount is there (pods need it)."""
    readable = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"t-{readable}-{secrets.token_hex(3)}"  # the namespace of an earlier test of the same name may remain
    core_v1.create_namespace({"metadata": {"name": name}})

    def has_account() -> bool:
        try:
            return core_v1.read_namespaced_service_account("default", name).metadata.name == "default"
        except ApiException as err:
            assert err.status == 404, err
            return False

    eventually(has_account, what="the default service account")
    try:
        yield name
    finally:
        core_v1.delete_namespace(name)


def _busybox(name: str) -> dict[str, Any]:
    """Upstream's exec target: a shell printing the date every 5 s."""
    command = ["/bin/sh", "-c", "while true; do date; sleep 5; done"]
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "sleep", "image": "busybox", "args": command}]},
    }


def _running(core_v1: k8s.CoreV1Api, namespace: str, name: str, ready: bool = False) -> k8s.V1Pod:
    def check() -> k8s.V1Pod | None:
        pod = core_v1.read_namespaced_pod(name, namespace)
        assert pod.status.phase in ("Pending", "Running"), pod.status
        statuses = pod.status.container_statuses or []
        if pod.status.phase != "Running" or (ready and not all(s.ready for s in statuses)):
            return None
        return pod

    return eventually(check, timeout=60, what=f"pod {name} running")


def _exec(core_v1: k8s.CoreV1Api, namespace: str, command: list[str], post: bool = False, **options: Any) -> Any:
    connect = core_v1.connect_post_namespaced_pod_exec if post else core_v1.connect_get_namespaced_pod_exec
    settings = {"stderr": False, "stdin": False, "stdout": True, "tty": False, **options}
    return stream(connect, "busybox-test", namespace, command=command, **settings)


# ---- exec ---------------------------------------------------------------------------------------------------


@pytest.fixture
def busybox(core_v1: k8s.CoreV1Api, namespace: str) -> str:
    created = core_v1.create_namespaced_pod(namespace, _busybox("busybox-test"))
    assert created.metadata.name == "busybox-test" and created.status.phase
    _running(core_v1, namespace, "busybox-test")
    return namespace


def test_exec_output_as_text_and_as_bytes(core_v1: k8s.CoreV1Api, busybox: str) -> None:
    """Upstream's `test_pod_apis`, its one-shot execs: the output is a str, or bytes with `binary=True` (gzip's
    output survives the trip unchanged); GET and POST both connect."""
    dates = _exec(core_v1, busybox, ["/bin/sh", "-c", "for i in $(seq 1 3); do date; done"])
    assert isinstance(dates, str) and len(dates.splitlines()) == 3
    packed = _exec(core_v1, busybox, ["/bin/sh", "-c", 'echo -n "This is a test string" | gzip'], binary=True)
    assert isinstance(packed, bytes) and gzip.decompress(packed) == b"This is a test string"
    assert len(_exec(core_v1, busybox, ["uptime"], post=True).splitlines()) == 1


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_exec_interactive_shell_ends_with_a_success_status(core_v1: k8s.CoreV1Api, busybox: str, binary: bool) -> None:
    """Upstream's `test_pod_apis`, its shell on stdin: a line on stdout, then one on stderr (and nothing on the
    other stream each time); `exit` closes the connection after a `Success` status on the error channel."""

    def data(text: str) -> str | bytes:
        return text.encode() if binary else text

    shell = _exec(core_v1, busybox, ["/bin/sh"], post=True, stdin=True, stderr=True, binary=binary,
                  _preload_content=False)  # fmt: skip
    try:
        shell.write_stdin(data("echo test string 1\n"))
        assert shell.readline_stdout(timeout=5) == data("test string 1")
        assert not shell.peek_stderr()
        shell.write_stdin(data("echo test string 2 >&2\n"))
        assert shell.readline_stderr(timeout=5) == data("test string 2")
        assert not shell.peek_stdout()
        shell.write_stdin(data("exit\n"))

        def status() -> Any:
            shell.update(timeout=1)
            return shell.read_channel(ERROR_CHANNEL)

        assert json.loads(eventually(status, what="the exec's status"))["status"] == "Success"
        shell.update(timeout=5)
        assert not shell.is_open()
    finally:
        shell.close()
    assert core_v1.list_pod_for_all_namespaces().items
    deleted = core_v1.delete_namespaced_pod("busybox-test", busybox, body={})
    assert deleted.metadata.name == "busybox-test"


def test_exec_exit_code(core_v1: k8s.CoreV1Api, busybox: str) -> None:
    """Upstream's `test_exit_code`: `returncode` is None while the command runs, then its exit code (read twice:
    it stays)."""
    for command, code in (
        (["false"], 1),
        (["/bin/sh", "-c", "sleep 1; exit 3"], 3),
        (["true"], 0),
        (["/bin/sh", "-c", "ls /"], 0),
    ):
        running = _exec(core_v1, busybox, command, stderr=True, _preload_content=False)
        assert running.returncode is None
        running.run_forever(timeout=10)
        assert running.returncode == code, command
        assert running.returncode == code


def test_exec_close_channel_ends_stdin(core_v1: k8s.CoreV1Api, busybox: str) -> None:
    """Upstream's `test_pod_exec_close_channel`: over v5.channel.k8s.io (tinykube speaks it, so it is required
    here, not skipped), closing channel 0 is EOF on `cat`'s stdin; cat exits 0 and the connection closes."""
    cat = _exec(core_v1, busybox, ["/bin/sh", "-c", "cat"], post=True, stdin=True, stderr=True,
                _preload_content=False)  # fmt: skip
    try:
        assert cat.subprotocol == V5_CHANNEL_PROTOCOL
        cat.write_stdin("test-close\n")
        assert cat.readline_stdout(timeout=5) == "test-close"
        cat.close_channel(0)
        cat.run_forever(timeout=15)
        assert not cat.is_open()
        assert cat.returncode == 0
    finally:
        if cat.is_open():
            cat.close()


# ---- port-forward -------------------------------------------------------------------------------------------


def _echoed(sock: socket.socket, expected: bytes, deadline: float) -> None:
    """Read from `sock` until it has given back `expected`, each chunk a prefix of it."""
    got = b""
    while got != expected:
        assert time.monotonic() < deadline, f"echo of {expected!r}: {got!r} so far"
        readable, _, _ = select.select([sock], [], [], 1)
        if readable:
            chunk = sock.recv(1024)
            assert chunk, "the forwarded connection closed"
            got += chunk
            assert expected.startswith(got), got


def test_portforward_raw(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_portforward_raw`: one port-forward connection for three ports of an echo server that
    listens on two of them (its script from a ConfigMap volume, a TCP startup probe to wait on). Each listening
    port echoes, interleaved; the third gives EOF and an error; closing the sockets closes the connection, with
    no error recorded for the good ports. Several times over, as upstream does."""
    name = "portforward-raw"
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": name}, "data": {"echo.py": ECHO_SERVER}})
    container = {
        "name": "echo",
        "image": "python",
        "command": ["python3", "-u", "/opt/echo.py", "1234", "1235"],
        "volumeMounts": [{"name": "script", "mountPath": "/opt", "readOnly": True}],
        "startupProbe": {"tcpSocket": {"port": 1235}, "periodSeconds": 1, "failureThreshold": 30},
    }
    volume = {"name": "script", "configMap": {"name": name}}
    spec = {"containers": [container], "restartPolicy": "Never", "volumes": [volume]}
    core_v1.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})
    _running(core_v1, namespace, name, ready=True)

    for attempt in range(1, 4):
        forward = portforward(core_v1.connect_get_namespaced_pod_portforward, name, namespace, ports="1234,1235,1236")
        try:
            assert forward.connected
            first, second = forward.socket(1234), forward.socket(1235)
            for sock in (first, second):
                sock.setblocking(True)
            messages = {
                sock: f"round {attempt} to port {port}".encode() for sock, port in ((first, 1234), (second, 1235))
            }
            for sock, message in messages.items():
                sock.sendall(message)
            deadline = time.monotonic() + 60
            for sock, message in messages.items():
                _echoed(sock, message, deadline)
            assert forward.connected

            nobody = forward.socket(1236)
            nobody.setblocking(True)
            assert nobody.recv(1024) == b""
            assert forward.error(1236) is not None
            nobody.close()

            for sock in (first, second):
                again = f"round {attempt} again on fd {sock.fileno()}".encode()
                sock.sendall(again)
                _echoed(sock, again, time.monotonic() + 60)
                sock.close()
            eventually(lambda f=forward: not f.connected, what="the connection to close with its sockets")
            assert forward.error(1234) is None and forward.error(1235) is None
        finally:
            forward.close()

    core_v1.delete_namespaced_pod(name, namespace)
    core_v1.delete_namespaced_config_map(name, namespace)


def test_portforward_http(core_v1: k8s.CoreV1Api, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's `test_portforward_http`: `socket.create_connection` replaced so that a host named
    `<pod>.<namespace>.kubernetes` is a port-forwarded socket, and urllib fetches nginx's page through it.
    (A readiness probe here, so the page is fetched once nginx listens.)"""
    name = "portforward-http"
    container = {"name": "nginx", "image": "nginx", "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}
    core_v1.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": {"containers": [container]}})
    _running(core_v1, namespace, name, ready=True)

    plain: Callable[..., socket.socket] = socket.create_connection
    forwarded: list[Any] = []

    def create_connection(address: tuple[str | bytes, int], *args: Any, **kwargs: Any) -> Any:
        host = address[0].decode() if isinstance(address[0], bytes) else address[0]
        labels = host.split(".")
        if len(labels) != 3 or labels[2] != "kubernetes":
            return plain(address, *args, **kwargs)
        forward = portforward(core_v1.connect_get_namespaced_pod_portforward, labels[0], labels[1],
                              ports=str(address[1]))  # fmt: skip
        forwarded.append(forward)
        return forward.socket(address[1])

    monkeypatch.setattr(socket, "create_connection", create_connection)
    with urllib.request.urlopen(f"http://{name}.{namespace}.kubernetes/", timeout=30) as response:
        page = response.read().decode()
        assert response.status == 200
    monkeypatch.undo()
    assert "<h1>Welcome to nginx!</h1>" in page
    assert len(forwarded) == 1
    for forward in forwarded:
        forward.close()
    core_v1.delete_namespaced_pod(name, namespace, body={})
