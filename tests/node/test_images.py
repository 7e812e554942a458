"""The image table of the netns runtime (pure), and each built-in image run by the runtime as a pod of a sandbox the
test creates, probed from another pod's namespace (never from the root namespace)."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import itertools
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.node.test_netns import eventually, in_netns, one, pod, read_logs, root_only, run, runtimes, when
from tinykube.api import errors
from tinykube.node import images
from tinykube.node.images import agnhost, echoserver
from tinykube.node.images.nginx import WELCOME
from tinykube.node.netns_runtime import NetnsRuntime
from tinykube.node.status import PodState, pod_status
from tinykube.sandbox import netns
from tinykube.sandbox.topology import Sandbox

PY = "PY"
ECHO = [PY, "-m", "tinykube.node.images.echoserver"]
NGINX = [PY, "-m", "tinykube.node.images.nginx"]
AGNHOST = [PY, "-m", "tinykube.node.images.agnhost"]

# The mapping (pure)


@pytest.mark.parametrize(
    ("image", "command", "args", "argv"),
    [
        pytest.param("k8s.gcr.io/echoserver:1.4", [], [], [*ECHO, "-g", "daemon off;"], id="echoserver-seed"),
        pytest.param("registry.k8s.io/echoserver:1.10", [], [], [*ECHO, "-g", "daemon off;"], id="echoserver-new"),
        pytest.param("nginx", [], [], [*NGINX, "-g", "daemon off;"], id="nginx"),
        pytest.param("docker.io/library/nginx:1.27@sha256:0ab", [], [], [*NGINX, "-g", "daemon off;"], id="nginx-fq"),
        pytest.param("nginx:1.27", ["nginx"], [], NGINX, id="nginx-command"),
        pytest.param("nginx", ["sh", "-c", "echo hi"], [], ["sh", "-c", "echo hi"], id="nginx-shell"),
        pytest.param("busybox", [], [], ["sh"], id="busybox-default-cmd"),
        pytest.param("busybox:1.36", [], ["sleep", "3600"], ["sleep", "3600"], id="busybox-kubectl-run-args"),
        pytest.param("busybox", ["sh", "-c"], ["sleep 1"], ["sh", "-c", "sleep 1"], id="busybox-command-args"),
        pytest.param(
            "registry.k8s.io/e2e-test-images/agnhost:2.53",
            [],
            ["netexec", "--http-port=8080"],
            [*AGNHOST, "netexec", "--http-port=8080"],
            id="agnhost-args",
        ),
        pytest.param(
            "registry.k8s.io/e2e-test-images/agnhost:2.53",
            ["/agnhost", "serve-hostname"],
            [],
            [*AGNHOST, "serve-hostname"],
            id="agnhost-command",
        ),
        pytest.param("registry.k8s.io/e2e-test-images/agnhost:2.53", [], [], AGNHOST, id="agnhost-usage"),
        pytest.param("python:3.11", ["python3", "-V"], ["-q"], ["python3", "-V", "-q"], id="python3"),
        pytest.param("python", ["python", "-c", "pass"], [], ["python3", "-c", "pass"], id="python-is-python3"),
        pytest.param("python:3.11", [], ["-m", "http.server"], ["-m", "http.server"], id="python-args-only"),
        pytest.param("python", [], [], ["python3"], id="python-cmd"),
        pytest.param("redis", ["redis-server"], [], ["redis-server"], id="unknown-with-command"),
        pytest.param("", ["sleep", "1"], [], ["sleep", "1"], id="no-image-with-command"),
        pytest.param("bitnami/nginx", ["nginx"], [], ["nginx"], id="other-repository-not-builtin"),
    ],
)
def test_resolve(image: str, command: list[str], args: list[str], argv: list[str]) -> None:
    process = images.resolve(image, command, args, python=PY)
    assert process.argv == argv
    builtin = argv[:2] == [PY, "-m"]
    assert process.env == ({"PYTHONPATH": str(Path(images.__file__).parents[3])} if builtin else {})


@pytest.mark.parametrize(
    ("image", "args"),
    [
        pytest.param("redis", [], id="unknown"),
        pytest.param("redis:7", ["--port", "7000"], id="unknown-args-only"),
    ],
)
def test_unknown_image_without_command_is_a_failed_pull(image: str, args: list[str]) -> None:
    with pytest.raises(images.ImagePullError) as raised:
        images.resolve(image, [], args)
    ref = images.qualified(image)
    assert str(raised.value).startswith(
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": failed to resolve reference '
        f'"{ref}": {ref}: not found'
    )


@pytest.mark.parametrize(
    ("image", "repository", "qualified"),
    [
        pytest.param("nginx", "docker.io/library/nginx", "docker.io/library/nginx:latest", id="familiar"),
        pytest.param("nginx:1.27", "docker.io/library/nginx", "docker.io/library/nginx:1.27", id="tag"),
        pytest.param("docker.io/nginx", "docker.io/library/nginx", "docker.io/library/nginx:latest", id="hub"),
        pytest.param(
            "index.docker.io/library/busybox",
            "docker.io/library/busybox",
            "docker.io/library/busybox:latest",
            id="index",
        ),
        pytest.param("busybox@sha256:ab", "docker.io/library/busybox", "docker.io/library/busybox@sha256:ab", id="dig"),
        pytest.param("bitnami/nginx:1", "docker.io/bitnami/nginx", "docker.io/bitnami/nginx:1", id="hub-user"),
        pytest.param("localhost:5000/app", "localhost:5000/app", "localhost:5000/app:latest", id="registry-port"),
        pytest.param("k8s.gcr.io/echoserver:1.4", "k8s.gcr.io/echoserver", "k8s.gcr.io/echoserver:1.4", id="gcr"),
    ],
)
def test_references_are_qualified_as_containerd_does(image: str, repository: str, qualified: str) -> None:
    assert (images.repository(image), images.qualified(image)) == (repository, qualified)


def test_every_table_entry_runs_a_module_that_exists() -> None:
    for image in images.IMAGES.values():
        for module in image.programs.values():
            assert (Path(images.__file__).parent / f"{module}.py").is_file()


# The echoserver's answer (pure): the seed tutorial's echoserver:1.4 shape, field by field

SEED_SHAPE = """CLIENT VALUES:
client_address=10.244.2.7
command=GET
real path=/
query=nil
request_version=1.1
request_uri=http://10.96.0.20:8080/

SERVER VALUES:
server_version=nginx: 1.10.0 - lua: 10001

HEADERS RECEIVED:
accept=*/*
host=10.96.0.20
user-agent=Wget
BODY:
-no body in request-"""


def test_echoserver_answers_like_echoserver_1_4() -> None:
    headers = [("Host", "10.96.0.20"), ("User-Agent", "Wget"), ("Accept", "*/*")]
    body = echoserver.describe(client="10.244.2.7", method="GET", target="/", version="HTTP/1.1", host="10.96.0.20",
                               port=8080, headers=headers, body=b"")  # fmt: skip
    assert body.decode() == SEED_SHAPE


def test_echoserver_query_version_and_body() -> None:
    text = echoserver.describe(client="1.2.3.4", method="POST", target="/p?a=1&b", version="HTTP/1.0", host="h",
                               port=8080, headers=[("X-A", "1"), ("x-a", "2")], body=b"payload").decode()  # fmt: skip
    lines = text.split("\n")
    assert lines[2:7] == ["command=POST", "real path=/p?a=1&b", "query=a=1&b", "request_version=1",
                          "request_uri=http://h:8080/p?a=1&b"]  # fmt: skip
    assert lines[-3:] == ["x-a=12", "BODY:", "payload"]  # a repeated header's values run together, as ngx.say does


@pytest.mark.parametrize(
    ("header", "host"),
    [("10.96.0.20:80", "10.96.0.20"), ("Example.COM", "example.com"), ("[fd00::1]:80", "[fd00::1]"), ("", "10.0.0.1")],
)
def test_echoserver_host_is_nginx_host_variable(header: str, host: str) -> None:
    assert echoserver.host_name(header, "10.0.0.1") == host


# agnhost's command line and UDP commands (pure)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], {"port": 9376, "http": True, "tcp": False}, id="defaults"),
        pytest.param(["--port=80", "--tcp", "--http=false"], {"port": 80, "http": False, "tcp": True}, id="eq"),
        pytest.param(["--port", "81"], {"port": 81, "http": True, "tcp": False}, id="space"),
    ],
)
def test_agnhost_flags(argv: list[str], expected: dict[str, Any]) -> None:
    assert agnhost.parse_flags(argv, {"port": 9376, "http": True, "tcp": False}) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nope"], "unknown flag: --nope"),
        (["--port"], "flag needs an argument: --port"),
        (["--port=x"], 'invalid argument "x" for "--port" flag'),
        (["extra"], "accepts at most 0 arg(s), received 1"),
    ],
)
def test_agnhost_flag_errors(argv: list[str], message: str) -> None:
    with pytest.raises(agnhost.UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        agnhost.parse_flags(argv, {"port": 9376})


def test_agnhost_udp_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTNAME", "pod-a")
    client = ("10.244.1.5", 40000)
    assert agnhost.udp_answer("hostname\n", client) == "pod-a"
    assert agnhost.udp_answer("echo Hello World", client) == "hello world"  # lowercased, as upstream
    assert agnhost.udp_answer("clientip", client) == "10.244.1.5:40000"
    assert agnhost.udp_answer("what", client) is None


def test_agnhost_unknown_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert agnhost.main(["nope"]) == 1
    assert 'Error: unknown command "nope" for "agnhost"' in capsys.readouterr().err
    assert agnhost.main([]) == 0 and "netexec" in capsys.readouterr().out


# Built-ins run by the runtime in a sandbox of the test's own


SERVER_IP, CLIENT_IP = "10.244.1.30", "10.244.2.30"
CLIENT = pod("client", {"name": "c", "image": "busybox:1.36", "args": ["sleep", "600"]})


def tcp_ready(port: int) -> dict[str, Any]:
    return {"tcpSocket": {"port": port}, "periodSeconds": 1}


def netns_of(box: Sandbox, node: str, name: str) -> str:
    return box.nodes[node].pod(f"d/{name}", "").netns


def fetch(ns: str, url: tuple[str, int, str], *, method: str = "GET", body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, bytes]:  # fmt: skip
    """An HTTP request sent from inside `ns` with exactly the given headers (a thread that entered it)."""
    host, port, path = url

    def request() -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(host, port, timeout=5)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in (headers or {}).items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    return netns.run_in(ns, request)


def udp(ns: str, host: str, port: int, message: str) -> str:
    def exchange() -> str:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(5)
            sock.sendto(message.encode(), (host, port))
            return sock.recv(2048).decode()

    return netns.run_in(ns, exchange)


def transitions(reasons: list[str]) -> list[str]:
    """The waiting reasons seen, each run of one reason once (other containers' changes repeat them)."""
    return [reason for reason, _ in itertools.groupby(r for r in reasons if r)]


async def serve(rt: dict[str, NetnsRuntime], name: str, container: dict[str, Any]) -> dict[str, Any]:
    """Start pod `name` on node-1 (at SERVER_IP) and the client pod on node-2; wait until the server is ready."""
    server = pod(name, container)
    await rt["node-1"].start(f"d/{name}", server, SERVER_IP)
    await rt["node-2"].start("d/client", CLIENT, CLIENT_IP)
    await eventually(lambda: one(rt["node-1"], f"d/{name}", server).ready, f"{name} ready")
    assert one(rt["node-2"], "d/client", CLIENT).running_since  # busybox's `sleep` runs on the host
    return server


EXPECTED_ECHO = f"""CLIENT VALUES:
client_address={CLIENT_IP}
command=GET
real path=/?a=1
query=a=1
request_version=1.1
request_uri=http://{SERVER_IP}:8080/?a=1

SERVER VALUES:
server_version=nginx: 1.10.0 - lua: 10001

HEADERS RECEIVED:
accept=*/*
host={SERVER_IP}:8080
user-agent=curl/7.88.1
BODY:
-no body in request-"""


@root_only
def test_echoserver_reports_the_client_pod(sandbox: Sandbox, tmp_path: Path) -> None:
    container = {"name": "c", "image": "k8s.gcr.io/echoserver:1.4", "readinessProbe": tcp_ready(8080)}

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            await serve(rt, "echo", container)
            client = netns_of(sandbox, "node-2", "client")
            headers = {"Host": f"{SERVER_IP}:8080", "User-Agent": "curl/7.88.1", "Accept": "*/*"}
            status, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 8080, "/?a=1"), headers=headers)
            assert status == 200
            assert body.decode() == EXPECTED_ECHO
            # The seed's own client: `wget -qO - <ip>` from a pod.
            code, out = await in_netns(client, "wget", "-qO", "-", f"http://{SERVER_IP}:8080/")
            assert code == 0
            assert out.split("\n")[:3] == ["CLIENT VALUES:", f"client_address={CLIENT_IP}", "command=GET"]
            assert out.endswith("BODY:\n-no body in request-")
            posted = {**headers, "Content-Length": "5"}
            _, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 8080, "/x"), method="POST", body=b"hello",
                                              headers=posted)  # fmt: skip
            assert body.decode().endswith(
                "content-length=5\nhost=10.244.1.30:8080\nuser-agent=curl/7.88.1\nBODY:\nhello"
            )
            assert f"{CLIENT_IP} - - [" in await read_logs(rt["node-1"], "d/echo", "c")  # the access log: kubectl logs

    run(scenario())


@root_only
def test_nginx_serves_its_welcome_page(sandbox: Sandbox, tmp_path: Path) -> None:
    container = {"name": "c", "image": "nginx:1.27", "readinessProbe": tcp_ready(80)}

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            web = await serve(rt, "web", container)
            client = netns_of(sandbox, "node-2", "client")
            headers = {"Host": SERVER_IP, "User-Agent": "curl/7.88.1"}
            status, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 80, "/"), headers=headers)
            assert status == 200 and b"<title>Welcome to nginx!</title>" in body
            status, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 80, "/nope"), headers=headers)
            assert status == 404 and b"404 Not Found" in body
            logs = (await read_logs(rt["node-1"], "d/web", "c")).splitlines()
            assert logs[0].startswith(f"{CLIENT_IP} - - [") and logs[0].endswith('"GET / HTTP/1.1" 200 ' +
                f'{len(WELCOME)} "-" "curl/7.88.1" "-"')  # fmt: skip
            process = rt["node-1"].pods["d/web"].containers["c"].process
            assert process is not None
            os.killpg(process.pid, signal.SIGTERM)  # nginx's fast shutdown: exit code 0
            again = await eventually(lambda: when(one(rt["node-1"], "d/web", web), lambda c: c.restart_count == 1),
                                     "restarted after SIGTERM")  # fmt: skip
            assert again.last_terminated is not None
            assert (again.last_terminated["exitCode"], again.last_terminated["reason"]) == (0, "Completed")

    run(scenario())


@root_only
def test_agnhost_netexec(sandbox: Sandbox, tmp_path: Path) -> None:
    healthz = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1}
    container = {"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                 "args": ["netexec", "--http-port=8080", "--udp-port=8081"], "readinessProbe": healthz}  # fmt: skip

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            await serve(rt, "netexec", container)  # ready: /healthz answered 200 (the UDP server listens)
            client = netns_of(sandbox, "node-2", "client")

            async def get(path: str) -> tuple[int, str]:
                status, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 8080, path), headers={"Host": "x"})
                return status, body.decode()

            assert await get("/hostname") == (200, "netexec")  # the pod's name, not the machine's
            status, ip = await get("/clientip")
            assert status == 200 and ip.startswith(f"{CLIENT_IP}:")
            assert await get("/echo?msg=hello%20there") == (200, "hello there")
            assert await get("/echo?msg=teapot&code=418") == (418, "teapot")
            assert await get("/healthz") == (200, "")
            assert (await get("/"))[1].startswith("NOW: 20")
            dialled = await get(f"/dial?request=hostname&protocol=udp&host={SERVER_IP}&port=8081&tries=2")
            assert dialled == (200, '{"responses":["netexec","netexec"]}')
            assert await asyncio.to_thread(udp, client, SERVER_IP, 8081, "hostname") == "netexec"
            assert await asyncio.to_thread(udp, client, SERVER_IP, 8081, "echo Hi") == "hi"

    run(scenario())


@root_only
def test_agnhost_serve_hostname(sandbox: Sandbox, tmp_path: Path) -> None:
    container = {"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                 "command": ["/agnhost", "serve-hostname"], "readinessProbe": tcp_ready(9376)}  # fmt: skip

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            await serve(rt, "hostnames-1", container)
            client = netns_of(sandbox, "node-2", "client")
            status, body = await asyncio.to_thread(fetch, client, (SERVER_IP, 9376, "/any"), headers={"Host": "x"})
            assert (status, body) == (200, b"hostnames-1")
            assert "Serving on port 9376." in await read_logs(rt["node-1"], "d/hostnames-1", "c")

    run(scenario())


@root_only
def test_busybox_runs_its_command_on_the_host(sandbox: Sandbox, tmp_path: Path) -> None:
    shell = pod("shell", {"name": "c", "image": "busybox", "command": ["sh", "-c", "echo $((6 * 7)) from $(HOSTNAME)"]},
                restartPolicy="Never")  # fmt: skip
    bare = pod("bare", {"name": "c", "image": "busybox"}, restartPolicy="Never")

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-2"]
            await node.start("d/shell", shell, "10.244.2.31")
            await node.start("d/bare", bare, "10.244.2.32")
            await eventually(lambda: node.phase("d/shell", shell) == "Succeeded", "shell Succeeded")
            assert await read_logs(node, "d/shell", "c") == "42 from shell\n"
            await eventually(lambda: node.phase("d/bare", bare) == "Succeeded", "bare Succeeded")  # `sh`, no stdin
            done = one(node, "d/bare", bare).terminated
            assert done is not None and (done["exitCode"], done["reason"]) == (0, "Completed")

    run(scenario())


@root_only
def test_unknown_image_without_command_fails_to_pull(sandbox: Sandbox, tmp_path: Path) -> None:
    spec = pod("pull", {"name": "c", "image": "example.com/no/such:1.0"}, {"name": "ok", "image": "busybox",
               "command": ["sleep", "600"]})  # fmt: skip

    async def scenario() -> None:
        seen: list[str] = []

        def changed(key: str) -> None:
            seen.append(one(rt["node-1"], key, spec).waiting_reason)

        async with runtimes(sandbox, tmp_path, on_change=changed) as rt:
            node = rt["node-1"]
            await node.start("d/pull", spec, "10.244.1.33")
            waiting = one(node, "d/pull", spec)
            assert waiting.waiting_reason == "ErrImagePull"
            assert '"example.com/no/such:1.0"' in waiting.waiting_message
            with pytest.raises(errors.BadRequest, match="is waiting to start: image can't be pulled"):
                node.logs("d/pull", "c")
            alternating = ["ErrImagePull", "ImagePullBackOff"] * 2
            await eventually(lambda: transitions(seen)[:4] == alternating, "ErrImagePull, ImagePullBackOff, …")
            backing = await eventually(
                lambda: when(one(node, "d/pull", spec), lambda c: c.waiting_reason == "ImagePullBackOff"), "back-off"
            )
            assert backing.waiting_message == 'Back-off pulling image "example.com/no/such:1.0"'
            assert not backing.ready and backing.restart_count == 0 and node.phase("d/pull", spec) == "Pending"
            containers = node.containers("d/pull", spec)
            state = PodState("10.244.1.33", "172.20.0.2", "t", containers, node.phase("d/pull", spec))
            status = pod_status(spec, state, "now")
            assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ImagePullBackOff",
                   "message": 'Back-off pulling image "example.com/no/such:1.0"'}}  # fmt: skip
            assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "False"

    run(scenario())


STAND_IN_UNDER_LOAD = textwrap.dedent("""
    import sys, threading
    from tinykube.node.images._serve import Server, exit_now, sigterm_event
    from tinykube.node.images.nginx import Nginx

    stop = sigterm_event()
    server = Server(("127.0.0.1", 0), Nginx)  # as `serve_until_sigterm` serves, on loopback only
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stderr.write(f"{server.server_address[1]}\\n")
    sys.stderr.flush()
    stop.wait()
    server.shutdown()
    exit_now(0)
""")


def test_a_stand_in_ends_0_on_sigterm_while_it_serves_and_logs(tmp_path: Path) -> None:
    """The nginx stand-in exited 134 under load (a fatal error in the interpreter's finalization: a daemon thread
    held stdout's lock, logging a request or a reset connection's traceback) or slept through SIGTERM (Python runs
    its handler in the main thread only, and a main thread asleep in `Event.wait()` is not woken by a signal that a
    serving thread took)."""
    for _ in range(5):
        child = subprocess.Popen(
            [sys.executable, "-c", STAND_IN_UNDER_LOAD], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert child.stdout is not None and child.stderr is not None
        port, done = int(child.stderr.readline()), threading.Event()

        def hammer(port: int = port, done: threading.Event = done) -> None:
            while not done.is_set():
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as conn:
                    conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    conn.recv(64)  # and gone before the rest: a reset, as a probe's

        clients = [threading.Thread(target=hammer) for _ in range(4)]
        for client in clients:
            client.start()
        while b"GET / HTTP/1.1" not in child.stdout.readline():
            pass  # serving and logging
        child.send_signal(signal.SIGTERM)
        relay = threading.Thread(target=child.stdout.read)  # its log read to the end, as the node's relay reads it
        relay.start()
        try:
            assert child.wait(timeout=30) == 0
        finally:
            done.set()
            child.kill()
            for thread in [*clients, relay]:
                thread.join()
