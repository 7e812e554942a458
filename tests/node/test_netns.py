"""The netns runtime and probes: pure parts (back-off, phase, probe thresholds), probes on loopback, and pods as
real namespaces and processes on a two-node sandbox (root only). Probes and checks run from inside namespaces the
tests create, never from the root namespace to a pod or node address."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tinykube.api import errors
from tinykube.node.containers import Backoff, back_off_message, go_duration, pod_phase, should_restart
from tinykube.node.netns_runtime import NetnsRuntime
from tinykube.node.probes import Outcome, ProbeResults, ProbeSpec, Target, probe_once
from tinykube.node.runtime import DetachedHost
from tinykube.node.status import ContainerState
from tinykube.sandbox import netns
from tinykube.sandbox.topology import Sandbox

T = TypeVar("T")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
PY = sys.executable

# Pure parts


def test_probe_spec_defaults_are_upstreams() -> None:
    spec = ProbeSpec.parse({"httpGet": {"port": 80}})
    assert (spec.action, spec.initial_delay, spec.period, spec.timeout) == ("httpGet", 0, 10, 1)
    assert (spec.success_threshold, spec.failure_threshold, spec.grace) == (1, 3, None)
    assert ProbeSpec.parse({"exec": {"command": ["true"]}, "periodSeconds": 2}).period == 2


@pytest.mark.parametrize(
    ("initial", "success", "failure", "outcomes", "results"),
    [
        pytest.param(False, 1, 3, [True], [True], id="readiness-first-success"),
        pytest.param(True, 1, 3, [False, False, True, False, False, False], [True] * 5 + [False], id="failure-3"),
        pytest.param(False, 2, 3, [True, False, True, True], [False, False, False, True], id="success-2"),
        pytest.param(True, 1, 1, [False, True], [False, True], id="liveness-failure-1"),
    ],
)
def test_probe_thresholds(initial: bool, success: int, failure: int, outcomes: list[bool], results: list[bool]) -> None:
    spec = ProbeSpec("exec", {}, success_threshold=success, failure_threshold=failure)
    state = ProbeResults(initial)
    seen = []
    for ok in outcomes:
        before = state.result
        assert state.record(ok, spec) == (state.result != before)
        seen.append(state.result)
    assert seen == results


def test_backoff_is_upstreams() -> None:
    backoff = Backoff()
    delays = [backoff.next_delay(clock) for clock in (0, 1, 12, 33, 74, 155, 316, 617, 918)]
    assert delays == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    assert backoff.next_delay(918 + 300 + 601) == 0  # forgotten after twice the cap without a restart


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.3, "300ms"), (1.2, "1.2s"), (10, "10s"), (80, "1m20s"), (160, "2m40s"), (300, "5m0s"), (3600, "1h0m0s")],
)
def test_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_back_off_message_is_upstreams() -> None:
    pod = {"metadata": {"name": "web", "namespace": "prod", "uid": "6f1c"}}
    assert back_off_message(80, "app", pod) == "back-off 1m20s restarting failed container=app pod=web_prod(6f1c)"


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [("Always", 0, True), ("Always", 1, True), ("OnFailure", 0, False), ("OnFailure", 137, True),
     ("Never", 0, False), ("Never", 1, False)],
)  # fmt: skip
def test_restart_policies(policy: str, code: int, restart: bool) -> None:
    assert should_restart(policy, code) is restart


def state(**kwargs: Any) -> ContainerState:
    return ContainerState(name="c", **kwargs)


@pytest.mark.parametrize(
    ("containers", "policy", "phase"),
    [
        pytest.param([state()], "Always", "Pending", id="creating"),
        pytest.param([state(running_since="t"), state()], "Always", "Pending", id="one-creating"),
        pytest.param([state(running_since="t")], "Never", "Running", id="running"),
        pytest.param([state(last_terminated={"exitCode": 1})], "Always", "Running", id="crash-loop"),
        pytest.param([state(terminated={"exitCode": 0})], "Never", "Succeeded", id="completed"),
        pytest.param([state(terminated={"exitCode": 0})], "OnFailure", "Succeeded", id="completed-onfailure"),
        pytest.param([state(terminated={"exitCode": 0}), state(terminated={"exitCode": 2})], "Never", "Failed", id="f"),
        pytest.param([state(terminated={"exitCode": 0}), state(running_since="t")], "Never", "Running", id="one-on"),
        pytest.param([state(last_terminated={"exitCode": 1})], "OnFailure", "Running", id="restarting"),
    ],
)
def test_pod_phase(containers: list[ContainerState], policy: str, phase: str) -> None:
    assert pod_phase(containers, policy) == phase


# Probes on loopback (no namespace)


@pytest.fixture
def http_server() -> Iterator[tuple[int, dict[str, int]]]:
    """A loopback server answering every path with the status held in the returned dict."""
    answer = {"status": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            assert self.headers["User-Agent"].startswith("kube-probe/") and self.headers["X-Probe"] == "yes"
            self.send_response(answer["status"])
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], answer
    finally:
        server.shutdown()
        server.server_close()


def probe(action: str, handler: dict[str, Any]) -> Outcome:
    target = Target("127.0.0.1", None, env={"PATH": os.environ["PATH"]}, ports={"web": 1})
    return asyncio.run(probe_once(ProbeSpec(action, handler, timeout=1), target))


def test_probes_on_loopback(http_server: tuple[int, dict[str, int]]) -> None:
    port, answer = http_server
    get = {"port": port, "path": "/healthz", "httpHeaders": [{"name": "X-Probe", "value": "yes"}]}
    assert probe("httpGet", get).ok
    answer["status"] = 302
    assert probe("httpGet", get).ok
    answer["status"] = 500
    assert probe("httpGet", get) == Outcome(False, "HTTP probe failed with statuscode: 500")
    assert probe("tcpSocket", {"port": port}).ok
    with socket_closed_port() as closed:
        assert not probe("tcpSocket", {"port": closed}).ok
    assert not probe("tcpSocket", {"port": "web"}).ok  # a named port resolves (nothing listens on 1)
    assert not probe("tcpSocket", {"port": "nope"}).ok
    assert probe("exec", {"command": ["true"]}).ok
    assert probe("exec", {"command": ["sh", "-c", "echo bad; exit 3"]}) == Outcome(False, "bad")
    assert probe("exec", {"command": ["sleep", "5"]}) == Outcome(False, "exec probe timed out after 1s")
    assert not probe("grpc", {"port": port}).ok


@contextlib.contextmanager
def socket_closed_port() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]  # bound, not listening: connections are refused


# Pods on a sandbox


SERVICES = [
    {"metadata": {"namespace": "default", "name": "kubernetes"}, "spec": {"clusterIP": "10.96.0.1", "ports": [
        {"name": "https", "port": 443, "protocol": "TCP"}]}},
    {"metadata": {"namespace": "d", "name": "web"}, "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 80}]}},
]  # fmt: skip


class Host(DetachedHost):
    """The runtimes' host in these tests: no API behind it; `changed(pod key)` hears of each change."""

    def __init__(self, changed: Callable[[str], None]) -> None:
        self.changed = changed

    def on_change(self, key: str) -> None:
        self.changed(key)


@contextlib.asynccontextmanager
async def runtimes(
    box: Sandbox, logs: Path, on_change: Callable[[str], None] = lambda _key: None
) -> AsyncIterator[dict[str, NetnsRuntime]]:
    """A runtime per node of the sandbox; `on_change(pod key)` hears of their pods' changes."""
    made = {
        name: NetnsRuntime(node, logs / name, lambda _namespace: SERVICES, host=Host(on_change), backoff=(0.3, 1.2))
        for name, node in box.nodes.items()
    }
    try:
        yield made
    finally:
        for runtime in made.values():
            await runtime.close(grace_seconds=0.5)


def run(scenario: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario, 40)

    return asyncio.run(bounded())


async def eventually(check: Callable[[], T | None], what: str, timeout: float = 15) -> T:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (found := check()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return found


def pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "d", "uid": f"uid-{name}"}
    return {"metadata": meta, "spec": {"containers": list(containers), **spec}}


def tcp_check(port: int) -> dict[str, Any]:
    return {"tcpSocket": {"port": port}, "periodSeconds": 1, "failureThreshold": 1}


HTTP_WHILE = """
import http.server, os, sys
flag = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/healthz' and os.path.exists(flag) else 500)
        self.end_headers()
ThreadingHTTPServer = http.server.ThreadingHTTPServer
ThreadingHTTPServer(('0.0.0.0', 8080), H).serve_forever()
"""
LISTEN_WHILE = """
import os, socket, sys, time
flag, port = sys.argv[1], int(sys.argv[2])
listener = socket.create_server(('0.0.0.0', port))
print('listening', flush=True)
while os.path.exists(flag):
    time.sleep(0.05)
listener.close()
print('closed', flush=True)
time.sleep(600)
"""
LISTEN_UNTIL = """
import os, socket, sys, time
stop, port = sys.argv[1], int(sys.argv[2])
listener = socket.create_server(('0.0.0.0', port))
print('run', os.getpid(), flush=True)
while not os.path.exists(stop):
    time.sleep(0.05)
os.remove(stop)
listener.close()
time.sleep(600)
"""


async def in_netns(name: str, *argv: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *netns.exec_argv(name, list(argv)), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def read_logs(runtime: NetnsRuntime, key: str, container: str, **options: Any) -> str:
    return b"".join([chunk async for chunk in runtime.logs(key, container, **options)]).decode()


def when(state: ContainerState, condition: Callable[[ContainerState], bool]) -> ContainerState | None:
    return state if condition(state) else None


def one(runtime: NetnsRuntime, key: str, spec: dict[str, Any], name: str = "c") -> ContainerState:
    return next(c for c in runtime.containers(key, spec) if c.name == name)


@root_only
def test_pods_serve_each_other_across_nodes(sandbox: Sandbox, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            server = {"name": "c", "command": [PY, "-m", "http.server", "8000"], "workingDir": str(tmp_path)}
            ready = {**server, "readinessProbe": {**tcp_check(8000), "initialDelaySeconds": 0}}
            a, b = pod("a", ready), pod("b", ready)
            await rt["node-1"].start("d/a", a, "10.244.1.10")
            await rt["node-2"].start("d/b", b, "10.244.2.10")
            await eventually(lambda: one(rt["node-1"], "d/a", a).ready and one(rt["node-2"], "d/b", b).ready, "ready")
            a_ns, b_ns = sandbox.nodes["node-1"].pod("d/a", "").netns, sandbox.nodes["node-2"].pod("d/b", "").netns
            fetch = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=3).status)"
            assert await in_netns(a_ns, PY, "-c", fetch, "http://10.244.2.10:8000/") == (0, "200\n")
            assert await in_netns(b_ns, PY, "-c", fetch, "http://10.244.1.10:8000/") == (0, "200\n")
            _, resolv = await in_netns(a_ns, "cat", "/etc/resolv.conf")
            assert resolv.splitlines() == [
                "nameserver 10.96.0.10",
                "search d.svc.cluster.local svc.cluster.local cluster.local",
                "options ndots:5",
            ]
            assert rt["node-1"].phase("d/a", a) == "Running"

    run(scenario())


@root_only
def test_readiness_follows_probes(sandbox: Sandbox, tmp_path: Path) -> None:
    flag = tmp_path / "healthy"
    flag.touch()
    http = {"httpGet": {"path": "/healthz", "port": "web"}, "periodSeconds": 1, "failureThreshold": 1}
    spec = pod(
        "probed",
        {"name": "http", "command": [PY, "-c", HTTP_WHILE, str(flag)], "readinessProbe": http,
         "ports": [{"name": "web", "containerPort": 8080}]},
        {"name": "tcp", "command": [PY, "-c", LISTEN_WHILE, str(flag), "8081"], "readinessProbe": tcp_check(8081)},
        {"name": "exec", "command": ["sleep", "600"],
         "readinessProbe": {"exec": {"command": ["test", "-f", str(flag)]}, "periodSeconds": 1, "failureThreshold": 1}},
        {"name": "plain", "command": ["sleep", "600"]},
    )  # fmt: skip

    async def scenario() -> None:
        changes: list[str] = []
        async with runtimes(sandbox, tmp_path, on_change=changes.append) as rt:
            node = rt["node-1"]

            def readiness() -> dict[str, bool]:
                return {c.name: c.ready for c in node.containers("d/probed", spec)}

            await node.start("d/probed", spec, "10.244.1.11")
            assert readiness()["plain"]  # no readiness probe: ready once running
            await eventually(lambda: all(readiness().values()), "all ready")
            flag.unlink()
            await eventually(
                lambda: readiness() == {"http": False, "tcp": False, "exec": False, "plain": True}, "unready"
            )
            flag.touch()
            await eventually(lambda: readiness()["http"] and readiness()["exec"], "ready again")
            assert set(changes) == {"d/probed"} and len(changes) >= 7

    run(scenario())


@root_only
def test_environment_and_logs(sandbox: Sandbox, tmp_path: Path) -> None:
    container = {
        "name": "c",
        "command": ["sh", "-c", "env | sort; echo from-$(MY_IP) >&2"],
        "env": [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
    }
    spec = pod("env", container, restartPolicy="Never")

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-2"]
            await node.start("d/env", spec, "10.244.2.12")
            await eventually(lambda: node.phase("d/env", spec) == "Succeeded", "Succeeded")
            done = one(node, "d/env", spec)
            assert done.terminated is not None and done.terminated["reason"] == "Completed"
            assert (done.terminated["exitCode"], done.restart_count, done.ready) == (0, 0, False)
            text = await read_logs(node, "d/env", "c")
            for line in ("WEB_SERVICE_HOST=10.96.0.20", "WEB_PORT_80_TCP=tcp://10.96.0.20:80", "HOSTNAME=env",
                         "KUBERNETES_SERVICE_PORT_HTTPS=443", "MY_IP=10.244.2.12", "from-10.244.2.12"):  # fmt: skip
                assert line in text.splitlines()
            assert await read_logs(node, "d/env", "c", tail_lines=1) == "from-10.244.2.12\n"
            stamped = await read_logs(node, "d/env", "c", tail_lines=1, timestamps=True)
            assert stamped.startswith("20") and stamped.endswith("Z from-10.244.2.12\n")
            assert await read_logs(node, "d/env", "c", follow=True, limit_bytes=4) == text[:4]
            with pytest.raises(errors.BadRequest, match='previous terminated container "c" in pod "env" not found'):
                node.logs("d/env", "c", previous=True)

    run(scenario())


@root_only
def test_missing_command_crash_loops_without_harm(sandbox: Sandbox, tmp_path: Path) -> None:
    spec = pod("crash", {"name": "c", "command": ["no-such-command-tk"]}, {"name": "ok", "command": ["sleep", "600"]})
    never = pod("never", {"name": "c", "command": ["/no/such/binary"]}, restartPolicy="Never")

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-1"]
            await node.start("d/crash", spec, "10.244.1.13")
            await node.start("d/never", never, "10.244.1.14")
            looping = await eventually(
                lambda: when(
                    one(node, "d/crash", spec),
                    lambda c: c.restart_count >= 3 and c.waiting_reason == "CrashLoopBackOff",
                ),
                "CrashLoopBackOff",
            )
            # back-off 0.3 s doubling to its cap of 1.2 s by the third restart
            assert looping.waiting_message == "back-off 1.2s restarting failed container=c pod=crash_d(uid-crash)"
            assert looping.last_terminated is not None
            assert (looping.last_terminated["exitCode"], looping.last_terminated["reason"]) == (128, "StartError")
            # the dead container's ID, in its lastState as in the status (it is replaced when it runs again)
            assert looping.container_id.startswith("tinykube://")
            assert looping.last_terminated["containerID"] == looping.container_id
            assert (
                'exec: "no-such-command-tk": executable file not found in $PATH' in looping.last_terminated["message"]
            )
            assert one(node, "d/crash", spec, "ok").running_since and node.phase("d/crash", spec) == "Running"
            await eventually(lambda: node.phase("d/never", never) == "Failed", "Failed")
            failed = one(node, "d/never", never)
            assert failed.terminated is not None and failed.terminated["reason"] == "StartError"

    run(scenario())


@root_only
def test_liveness_failure_restarts_the_container(sandbox: Sandbox, tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    live = {"tcpSocket": {"port": 8090}, "initialDelaySeconds": 1, "periodSeconds": 1, "failureThreshold": 1}
    live["terminationGracePeriodSeconds"] = 1
    spec = pod("live", {"name": "c", "command": [PY, "-c", LISTEN_UNTIL, str(stop), "8090"], "livenessProbe": live})

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-2"]
            await node.start("d/live", spec, "10.244.2.15")
            first = await eventually(lambda: logs_now(node), "first run's output")
            stop.touch()
            again = await eventually(
                lambda: when(one(node, "d/live", spec), lambda c: c.restart_count == 1 and bool(c.running_since)),
                "restart",
            )
            assert again.last_terminated is not None
            assert (again.last_terminated["reason"], again.last_terminated["exitCode"]) == ("Error", 143)  # SIGTERM
            assert await read_logs(node, "d/live", "c", previous=True) == first
            await eventually(lambda: logs_now(node) and logs_now(node) != first, "second run's output")
            assert one(node, "d/live", spec).restart_count == 1  # alive again: no further restarts

    def logs_now(node: NetnsRuntime) -> str:
        path = node.pods["d/live"].containers["c"].log_path
        return "".join(line.split(" ", 3)[3] for line in path.read_text().splitlines(keepends=True)) if path else ""

    run(scenario())


@root_only
def test_a_runs_leftover_processes_end_with_it(sandbox: Sandbox, tmp_path: Path) -> None:
    # as in a container, whose processes die with its PID 1: a restart must not find the last run's children
    # (the child lets go of the output pipes: asyncio's own loop, unlike uvloop, waits for them to close)
    spec = pod("leaves", {"name": "c", "command": ["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!; exit 1"]})

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-2"]
            await node.start("d/leaves", spec, "10.244.2.17")
            await eventually(lambda: one(node, "d/leaves", spec).restart_count >= 1, "a restart")
            first_child = int((await read_logs(node, "d/leaves", "c", previous=True)).strip())
            assert await eventually(lambda: gone(first_child), "the first run's child killed", timeout=5)

    run(scenario())


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


@root_only
def test_stop_leaves_nothing_behind(sandbox: Sandbox, tmp_path: Path) -> None:
    escape = "setsid sleep 600 & echo $!; trap '' TERM; while true; do sleep 0.1; done"
    spec = pod("stubborn", {"name": "c", "command": ["sh", "-c", escape]})
    node_net = sandbox.nodes["node-1"]
    net = node_net.pod("d/stubborn", "10.244.1.16")

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-1"]
            await node.start("d/stubborn", spec, net.ip)
            escaped = int((await eventually(lambda: first_line(node), "the escaped child's pid")).strip())
            leader = node.pods["d/stubborn"].containers["c"].process
            assert leader is not None and netns.pids(net.netns)
            began = asyncio.get_running_loop().time()
            await node.stop("d/stubborn", grace_seconds=0.5)
            assert leader.returncode == -9  # it ignored SIGTERM
            assert asyncio.get_running_loop().time() - began >= 0.5  # SIGKILL only once the grace period is over
            assert await eventually(lambda: gone(escaped), "the escaped child killed", timeout=5)
            assert not netns.exists(net.netns) and not (netns.NETNS_ETC / net.netns).exists()
            assert net.veth not in netns.ip("link", "show", netns=node_net.netns)
            assert net.ip not in netns.ip("route", "show", netns=node_net.netns)
            assert not (tmp_path / "node-1" / "d_stubborn_uid-stubborn").exists()
            assert node.containers("d/stubborn", spec)[0].waiting_reason == ""  # unknown again: ContainerCreating

    def first_line(node: NetnsRuntime) -> str | None:
        path = node.pods["d/stubborn"].containers["c"].log_path
        text = path.read_text() if path else ""
        return text.split(" ", 3)[3] if text.endswith("\n") else None

    run(scenario())
    assert netns.list_netns(f"{node_net.netns}.") == []


@root_only
def test_init_containers_run_in_order_before_the_containers_and_keep_their_logs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    first = {"name": "first", "command": ["sh", "-c", "echo first; sleep 0.3"]}
    second = {"name": "second", "command": ["sh", "-c", "echo second"]}
    spec = pod("init", {"name": "c", "command": ["sleep", "600"]}, initContainers=[first, second])
    doomed = [{"name": "i", "command": ["false"]}]
    failing = pod("doomed", {"name": "c", "command": ["sleep", "600"]}, initContainers=doomed, restartPolicy="Never")

    async def scenario() -> None:
        async with runtimes(sandbox, tmp_path) as rt:
            node = rt["node-1"]
            await node.start("d/init", spec, "10.244.1.17")
            await node.start("d/doomed", failing, "10.244.1.18")
            await eventually(lambda: one(node, "d/init", spec).running_since, "the container runs")
            ran = {s.name: s for s in node.init_containers("d/init", spec)}
            assert [ran[n].terminated["reason"] for n in ("first", "second") if ran[n].terminated] == ["Completed"] * 2
            assert ran["first"].terminated["finishedAt"] <= ran["second"].terminated["startedAt"]  # type: ignore[index]
            assert node.phase("d/init", spec) == "Running"
            assert await read_logs(node, "d/init", "first") == "first\n"
            assert await read_logs(node, "d/init", "second") == "second\n"
            await eventually(lambda: node.phase("d/doomed", failing) == "Failed", "the pod failed")
            assert one(node, "d/doomed", failing).waiting_reason == "PodInitializing"  # never started
            stopped = await node.stop("d/init", grace_seconds=0.5, pod=spec)
            [c] = stopped.containers
            assert c.terminated is not None and c.terminated["exitCode"] in (137, 143)  # as its process ended
            assert [s.name for s in stopped.init_containers] == ["first", "second"]

    run(scenario())
