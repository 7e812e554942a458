"""The netns dataplane end to end: `tinykube up --dataplane netns --nodes 2`, pods that are namespaces running
`python3 -m http.server`, probed from inside the sandbox only (nothing is sent from the root namespace)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, readline, start_cluster, stop_cluster
from tinykube.sandbox.topology import short_hash

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")


def namespaces(prefix: str) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]


@contextlib.contextmanager
def netns_cluster(tmp_path_factory: pytest.TempPathFactory, name: str, *extra: str) -> Iterator[RunningCluster]:
    """`tinykube up --dataplane netns` named `name` (unique per xdist worker: namespaces are machine-wide); on the
    way out, every namespace of it must be gone (a failed run is cleaned up with `tinykube down`, and fails)."""
    data_dir = tmp_path_factory.mktemp(name) / name
    running = start_cluster(data_dir, "--dataplane", "netns", *extra)
    try:
        yield running
    finally:
        stop_cluster(running)
        left = namespaces(f"tk-{name}.")
        if left:
            subprocess.run([sys.executable, "-m", "tinykube.cli", "down", "--name", name, "--data-dir", str(data_dir)])
        assert not left, f"namespaces left behind: {left}"
        assert not list(Path("/etc/netns").glob(f"tk-{name}.*"))


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"e2e{os.getpid()}", "--nodes", "2", "--controllers", "*") as running:
        yield running


@pytest.fixture
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def web_pod(name: str, node: str, port: int, **extra: Any) -> dict[str, Any]:
    container = {"name": "web", "image": "python", "command": ["python3", "-m", "http.server", str(port)], **extra}
    return {"metadata": {"name": name, "labels": {"app": "web"}}, "spec": {"nodeName": node, "containers": [container]}}


def create(client: httpx.Client, obj: dict[str, Any], plural: str = "pods") -> None:
    response = client.post(f"/api/v1/namespaces/default/{plural}", json=obj)
    assert response.status_code == 201, response.text


def pod(client: httpx.Client, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get(f"/api/v1/namespaces/default/pods/{name}").json()
    return found


def ready(client: httpx.Client, name: str) -> dict[str, Any] | None:
    found = pod(client, name)
    conditions = found.get("status", {}).get("conditions") or []
    return found if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None


def pod_netns(sandbox: RunningCluster, name: str, node: str) -> str:
    return f"tk-{sandbox.data_dir.name}.{node}.{short_hash(f'default/{name}')}"


def inside(netns: str, code: str) -> subprocess.CompletedProcess[str]:
    """Python run inside a namespace of the sandbox (how the tests reach pod IPs)."""
    return subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )


def test_pods_on_two_nodes_reach_each_other(sandbox: RunningCluster, client: httpx.Client) -> None:
    create(client, web_pod("a", "node-1", 8080))
    create(client, web_pod("b", "node-2", 8081, readinessProbe={"tcpSocket": {"port": 8081}, "periodSeconds": 1}))
    a = eventually(lambda: ready(client, "a"), what="a ready")
    b = eventually(lambda: ready(client, "b"), what="b ready")
    assert a["status"]["hostIP"] == "172.20.0.2" and b["status"]["hostIP"] == "172.20.0.3"
    fetch = (
        f"import urllib.request; print(urllib.request.urlopen('http://{b['status']['podIP']}:8081/', timeout=5).status)"
    )
    result = inside(pod_netns(sandbox, "a", "node-1"), fetch)
    assert result.stdout.strip() == "200", result.stderr
    logs = eventually(lambda: "GET / HTTP/1.1" in (out := sandbox.kubectl("logs", "b").stdout) and out, what="b's log")
    assert a["status"]["podIP"] in logs  # the request came from a's own address, across the nodes


def test_readiness_follows_a_failing_probe_and_the_slice_follows(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    service = {
        "metadata": {"name": "flaky"},
        "spec": {"selector": {"app": "flaky"}, "ports": [{"port": 80, "targetPort": 8090}]},
    }
    create(client, service, "services")
    probe = {"httpGet": {"path": "/healthy", "port": 8090}, "periodSeconds": 1, "failureThreshold": 1}
    root = tmp_path  # http.server serves it: /healthy answers 200 while the file exists
    (root / "healthy").write_text("ok")
    container = {"name": "web", "image": "python", "command": ["python3", "-m", "http.server", "8090"]}
    container.update(workingDir=str(root), readinessProbe=probe)
    flaky = {
        "metadata": {"name": "flaky", "labels": {"app": "flaky"}},
        "spec": {"nodeName": "node-1", "containers": [container]},
    }
    create(client, flaky)
    eventually(lambda: ready(client, "flaky"), what="flaky ready")

    def endpoint_ready() -> bool | None:
        slices = client.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name%3Dflaky"
        ).json()["items"]
        endpoints = [e for s in slices for e in s.get("endpoints") or []]
        return endpoints[0]["conditions"]["ready"] if endpoints else None

    assert eventually(endpoint_ready, what="ready endpoint") is True
    (root / "healthy").unlink()
    eventually(lambda: ready(client, "flaky") is None, what="flaky not ready")
    eventually(lambda: endpoint_ready() is False, what="endpoint not ready")
    (root / "healthy").write_text("ok")
    eventually(lambda: endpoint_ready() is True, what="endpoint ready again")


def test_a_pod_sees_service_variables_and_the_cluster_resolver(sandbox: RunningCluster, client: httpx.Client) -> None:
    service = {"metadata": {"name": "redis-master"}, "spec": {"ports": [{"port": 6379}]}}
    create(client, service, "services")
    ip = client.get("/api/v1/namespaces/default/services/redis-master").json()["spec"]["clusterIP"]
    printer = {
        "metadata": {"name": "printer"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "env; cat /etc/resolv.conf"]}],
        },
    }
    create(client, printer)
    eventually(lambda: pod(client, "printer")["status"].get("phase") == "Succeeded", what="printer done")
    lines = sandbox.kubectl("logs", "printer").stdout.splitlines()
    expected = [
        f"REDIS_MASTER_SERVICE_HOST={ip}",
        "REDIS_MASTER_SERVICE_PORT=6379",
        f"REDIS_MASTER_PORT=tcp://{ip}:6379",
        f"REDIS_MASTER_PORT_6379_TCP=tcp://{ip}:6379",
        "REDIS_MASTER_PORT_6379_TCP_PROTO=tcp",
        "REDIS_MASTER_PORT_6379_TCP_PORT=6379",
        f"REDIS_MASTER_PORT_6379_TCP_ADDR={ip}",
    ]
    assert set(expected) <= set(lines)
    assert "nameserver 10.96.0.10" in lines
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in lines and "options ndots:5" in lines


def test_the_dns_server_answers_pods_on_the_lan(sandbox: RunningCluster, client: httpx.Client) -> None:
    create(client, web_pod("asker", "node-2", 8082))
    eventually(lambda: ready(client, "asker"), what="asker ready")
    endpoints = client.get("/api/v1/namespaces/kube-system/endpoints/kube-dns").json()
    (address,) = [a["ip"] for s in endpoints["subsets"] for a in s["addresses"]]
    question = "DNSRecord.question('kubernetes.default.svc.cluster.local')"
    ask = f"from dnslib import DNSRecord; print(DNSRecord.parse({question}.send('{address}', 53, timeout=5)).a.rdata)"
    result = inside(pod_netns(sandbox, "asker", "node-2"), ask)
    assert result.stdout.strip() == "10.96.0.1", result.stderr


def test_a_missing_command_crash_loops_without_harm(sandbox: RunningCluster, client: httpx.Client) -> None:
    broken = {
        "metadata": {"name": "broken"},
        "spec": {"containers": [{"name": "c", "image": "x", "command": ["no-such-binary"]}]},
    }
    create(client, broken)

    def waiting() -> dict[str, Any] | None:
        statuses = pod(client, "broken").get("status", {}).get("containerStatuses") or []
        state = statuses[0]["state"].get("waiting", {}) if statuses else {}
        return statuses[0] if state.get("reason") == "CrashLoopBackOff" else None

    status = eventually(waiting, what="CrashLoopBackOff")
    uid = pod(client, "broken")["metadata"]["uid"]
    # the first back-off (upstream's 10 s) follows the second failure: the first restart is immediate
    assert status["restartCount"] == 1
    message = f"back-off 10s restarting failed container=c pod=broken_default({uid})"
    assert status["state"]["waiting"]["message"] == message
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"], last["startedAt"]) == (128, "StartError", "1970-01-01T00:00:00Z")
    assert last["containerID"] == status["containerID"]  # the dead container's, until the next one is made
    assert json.loads(sandbox.kubectl("get", "nodes", "-o", "json").stdout)["items"]  # the node agent is still there


def test_kubectl_logs_follows_a_running_container(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    flag = tmp_path / "go-on"
    script = f"echo one; while [ ! -e {flag} ]; do sleep 0.05; done; echo two"
    talker = {
        "metadata": {"name": "talker"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", script]}],
        },
    }
    create(client, talker)
    eventually(lambda: pod(client, "talker")["status"].get("phase") == "Running", what="talker running")
    env = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir)}
    follower = subprocess.Popen(["kubectl", "logs", "-f", "talker"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert readline(follower) == "one\n"
        assert follower.poll() is None  # still following: the container runs on
        flag.touch()
        assert readline(follower) == "two\n"
        assert follower.wait(30) == 0  # the container ended, and with it the stream
    finally:
        if follower.poll() is None:
            follower.kill()
        follower.communicate(timeout=10)


def test_deleting_a_pod_removes_its_namespace_and_processes(sandbox: RunningCluster, client: httpx.Client) -> None:
    create(client, web_pod("gone", "node-1", 8083))
    eventually(lambda: ready(client, "gone"), what="gone ready")
    netns = pod_netns(sandbox, "gone", "node-1")
    assert netns in namespaces(netns)
    assert client.delete("/api/v1/namespaces/default/pods/gone").status_code == 200
    eventually(lambda: not namespaces(netns), what="pod namespace removed")
    assert not Path(f"/etc/netns/{netns}").exists()
    left = subprocess.run(["pgrep", "-f", "http.server 8083"], capture_output=True, text=True).stdout
    assert not left.strip()


def test_down_cleans_up_after_a_crashed_up(tmp_path: Path) -> None:
    name = f"crash{os.getpid()}"
    data_dir = tmp_path / name
    crashed = start_cluster(data_dir, "--dataplane", "netns", "--nodes", "1", "--controllers", "*")
    try:
        with crashed.http() as http:
            create(http, web_pod("w", "node-1", 8084))
            eventually(lambda: ready(http, "w"), what="w ready")
        crashed.proc.send_signal(signal.SIGKILL)  # no clean-up of its own: namespaces and the pod process stay
        crashed.proc.wait(10)
        assert namespaces(f"tk-{name}.")
    finally:
        down = [sys.executable, "-m", "tinykube.cli", "down", "--name", name, "--data-dir", str(data_dir)]
        result = subprocess.run(down, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "removed 4 network namespace(s)" in result.stdout  # the LAN, the external client, node-1 and w
    assert not namespaces(f"tk-{name}.") and not list(Path("/etc/netns").glob(f"tk-{name}.*"))
    assert not subprocess.run(["pgrep", "-f", "http.server 8084"], capture_output=True).stdout


def ctrl_c(pid: int) -> None:
    """What Ctrl-C in a terminal does: SIGINT to the foreground process group, here `up` and what it started.
    (`up` shares pytest's group, so the group itself cannot be signalled.)"""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = (int(fields[1]), int(fields[2]))  # ppid, pgid
    group = parents[pid][1]
    family, grown = {pid}, True
    while grown:
        below = {p for p, (ppid, pgid) in parents.items() if ppid in family and pgid == group} - family
        family |= below
        grown = bool(below)
    for member in family:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGINT)


@pytest.mark.parametrize("how", ["ctrl-c", "tinykube-down"])
def test_stopping_up_removes_everything(tmp_path: Path, how: str) -> None:
    name = f"stop{os.getpid()}{how[0]}"
    data_dir = tmp_path / name
    port = {"ctrl-c": 8070, "tinykube-down": 8071}[how]
    running = start_cluster(data_dir, "--dataplane", "netns", "--nodes", "1", "--controllers", "*")
    down = [sys.executable, "-m", "tinykube.cli", "down", "--name", name, "--data-dir", str(data_dir)]
    try:
        with running.http() as http:
            create(http, web_pod("w", "node-1", port))
            eventually(lambda: ready(http, "w"), what="w ready")
        assert len(namespaces(f"tk-{name}.")) == 4  # the LAN, the external client, node-1 and w
        if how == "ctrl-c":
            ctrl_c(running.proc.pid)
            assert running.proc.wait(60) == 0
            log = (data_dir.parent / f"{name}.log").read_text()
            assert "Traceback" not in log, log  # the helpers it started (nft sessions) took the Ctrl-C quietly
        else:
            result = subprocess.run(down, capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, result.stderr
            assert f"stopped tinykube up (pid {running.proc.pid})" in result.stdout
            assert "removed" not in result.stdout  # `up` removed its namespaces itself
            assert running.proc.wait(10) == 0
    finally:
        stop_cluster(running)
        left = namespaces(f"tk-{name}.")
        if left:
            subprocess.run(down, capture_output=True, timeout=60)
    assert not left, f"namespaces left behind: {left}"
    assert not list(Path("/etc/netns").glob(f"tk-{name}.*"))
    assert not subprocess.run(["pgrep", "-f", f"http.server {port}"], capture_output=True).stdout


# ---- helpers of the node proxy's tests (test_proxy_*.py) ------------------------------------------------------------


def node_netns(sandbox: RunningCluster, node: str) -> str:
    return f"tk-{sandbox.data_dir.name}.{node}"


def service(client: httpx.Client, name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name}, "spec": {"selector": selector, **spec}}
    create(client, body, "services")
    found: dict[str, Any] = client.get(f"/api/v1/namespaces/default/services/{name}").json()
    return found
