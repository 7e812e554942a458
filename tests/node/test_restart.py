"""Restarts change nothing: `tinykube up` stopped (SIGTERM) or killed (SIGKILL) and started again on the same data
dir leaves every pod's status and the Nodes' conditions as they were — the same `startedAt`, `restartCount`,
conditions' `lastTransitionTime`, and no status write at all (each pod's resourceVersion stays) — as upstream's
kubelet, restarted, adopts the containers its runtime still runs.

In the netns dataplane a killed `up` leaves the sandbox and the containers' processes behind: the new one adopts
them (the same processes keep serving). A clean stop removes the sandbox (and so ends every container), as a node
that reboots: on the next `up` the containers start again as upstream's kubelet restarts containers it finds gone —
`restartCount` + 1, the ended run in `lastState`, the pod's `startTime` and IP kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster
from tinykube.sandbox.topology import Sandbox, SandboxError, remove_sandbox, short_hash

Object = dict[str, Any]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")


def up(data_dir: Path, *extra: str) -> RunningCluster:
    return start_cluster(data_dir, "--nodes", "1", "--controllers", "*", *extra)


def restart(cluster: RunningCluster, how: str, *extra: str) -> RunningCluster:
    """Stop `up` (SIGTERM: a clean stop; SIGKILL: nothing cleaned up) and start it again on its data dir."""
    if how == "SIGTERM":
        stop_cluster(cluster)
        assert cluster.proc.returncode == 0
    else:
        cluster.proc.send_signal(signal.SIGKILL)
        cluster.proc.wait(30)
        (cluster.data_dir / "cluster.json").unlink()  # the killed process's record (the harness waits for a new one)
    return up(cluster.data_dir, *extra)


def pods(api: httpx.Client, namespace: str) -> dict[str, Object]:
    listed = api.get(f"/api/v1/namespaces/{namespace}/pods")
    assert listed.status_code == 200, listed.text
    return {pod["metadata"]["name"]: pod for pod in listed.json()["items"]}


def running_ready(pod: Object) -> bool:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    return status.get("phase") == "Running" and bool(statuses) and all(c.get("started") for c in statuses)


def node_conditions(api: httpx.Client) -> dict[str, Object]:
    node = api.get("/api/v1/nodes/node-1").json()
    return {c["type"]: c for c in node["status"]["conditions"]}


def transitions(conditions: dict[str, Object]) -> dict[str, tuple[str, str]]:
    return {kind: (c["status"], c["lastTransitionTime"]) for kind, c in conditions.items()}


def create(api: httpx.Client, namespace: str, pod: Object) -> None:
    made = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    assert made.status_code == 201, made.text


def simulated_pod(name: str, *containers: str, ready: bool = True) -> Object:
    annotations = {} if ready else {"tinykube.io/ready": "false"}
    spec = {"nodeName": "node-1", "containers": [{"name": c, "image": "busybox"} for c in containers]}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": spec}


def settle(api: httpx.Client, namespace: str, canary: Object) -> None:
    """Wait until the restarted agent has synced every pod: a pod created after the restart runs once the agent's
    first sync of the pods it found is under way; a little more time lets any status write of those land."""
    create(api, namespace, canary)
    eventually(lambda: running_ready(pods(api, namespace)[canary["metadata"]["name"]]), what="the canary running")

    def heartbeat() -> bool:
        return all(c["lastHeartbeatTime"] for c in node_conditions(api).values())

    eventually(heartbeat, what="a heartbeat")
    time.sleep(1.5)


def assert_unchanged(before: dict[str, Object], after: dict[str, Object]) -> None:
    for name, pod in before.items():
        now = after[name]
        assert now["status"] == pod["status"], name
        assert now["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"], f"{name}'s status rewritten"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_restart_leaves_simulated_pods_and_the_node_as_they_were(tmp_path: Path, how: str) -> None:
    data_dir = tmp_path / f"rs{how[3:].lower()}"
    cluster = up(data_dir)
    try:
        with cluster.http() as api:
            api.post("/api/v1/namespaces", json={"metadata": {"name": "r"}})
            create(api, "r", simulated_pod("one", "c"))
            create(api, "r", simulated_pod("two", "a", "b"))
            create(api, "r", simulated_pod("unready", "c", ready=False))
            eventually(lambda: len([p for p in pods(api, "r").values() if running_ready(p)]) == 3, what="3 pods")
            time.sleep(1.1)  # times have one second's resolution: a rewrite now would show
            before, conditions = pods(api, "r"), node_conditions(api)
        cluster = restart(cluster, how)
        with cluster.http() as api:
            settle(api, "r", simulated_pod("canary", "c"))
            after = pods(api, "r")
            assert_unchanged(before, after)
            assert transitions(node_conditions(api)) == transitions(conditions)
            assert all(c["lastHeartbeatTime"] for c in node_conditions(api).values())
    finally:
        stop_cluster(cluster)


# The netns dataplane


def web_pod(name: str, port: int, **extra: Any) -> Object:
    container = {"name": "web", "image": "python", "command": ["python3", "-m", "http.server", str(port)], **extra}
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"nodeName": "node-1", "containers": [container]},
    }


def sleeper(name: str, policy: str = "Always") -> Object:
    container = {"name": "main", "image": "busybox", "command": ["sleep", "3600"]}
    spec = {"nodeName": "node-1", "restartPolicy": policy, "containers": [container]}
    return {"metadata": {"name": name}, "spec": spec}


def namespaces(prefix: str) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(prefix)]


def pod_pids(cluster_name: str, key: str) -> set[int]:
    listed = subprocess.run(
        ["ip", "netns", "pids", f"tk-{cluster_name}.node-1.{short_hash(key)}"], capture_output=True, text=True
    )
    return {int(pid) for pid in listed.stdout.split()}


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def fetch(cluster_name: str, ip: str, port: int) -> str:
    """GET / of a pod from the node's namespace (inside the sandbox: nothing is sent from the root namespace)."""
    code = f"import urllib.request; print(urllib.request.urlopen('http://{ip}:{port}/', timeout=5).status)"
    done = subprocess.run(
        ["ip", "netns", "exec", f"tk-{cluster_name}.node-1", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip() or done.stderr


@contextlib.contextmanager
def netns_up(tmp_path: Path, name: str) -> Iterator[list[RunningCluster]]:
    """A netns `up` named `name` (unique to this test run), its latest incarnation in the list; afterwards it is
    stopped and every namespace and /etc/netns entry of its name is removed (and must be), whatever happened."""
    running = [up(tmp_path / name, "--dataplane", "netns")]
    try:
        yield running
    finally:
        with contextlib.suppress(Exception):
            stop_cluster(running[-1])
        left = namespaces(f"tk-{name}.")
        remove_sandbox(name)
        assert not namespaces(f"tk-{name}.")
        assert not list(Path("/etc/netns").glob(f"tk-{name}.*"))
        assert not left, f"namespaces left behind: {left}"


ADOPTED = textwrap.dedent(
    """
    import subprocess, sys, time
    from tinykube.sandbox import netns
    from tinykube.sandbox.topology import Sandbox, attach_pod, node_address
    box = Sandbox(sys.argv[1])
    box.create(adopt=sys.argv[2] == "adopt")
    node = box.add_node("node-1", node_address(1), "10.244.1.0/24")
    if sys.argv[2] == "create":
        pod = node.pod("d/p", "10.244.1.7")
        attach_pod(node, pod, "nameserver 10.96.0.10\\n", "")
        subprocess.Popen(netns.exec_argv(pod.netns, ["sleep", "600"]), start_new_session=True)
        netns.ip("route", "add", "172.20.255.7/32", "via", node.ip, netns=box.external)  # as the load balancer
    print("ready", flush=True)
    time.sleep(600)
    """
)


def links(namespace: str) -> list[tuple[int, str]]:
    shown = subprocess.run(["ip", "-n", namespace, "-j", "link", "show"], capture_output=True, text=True, check=True)
    return sorted((link["ifindex"], link["ifname"]) for link in json.loads(shown.stdout))


@needs_root
def test_a_sandbox_nobody_holds_is_adopted_as_it_is(tmp_path: Path) -> None:
    """A sandbox whose owner was killed: refused without `adopt`, taken over with it (nodes and pods kept, with
    what runs in them; load balancer routes dropped); one whose owner lives is refused either way."""
    name = f"ra{os.getpid()}"
    prefix = f"tk-{name}."
    owners: list[subprocess.Popen[str]] = []

    def owner(mode: str) -> subprocess.Popen[str]:
        started = subprocess.Popen([sys.executable, "-c", ADOPTED, name, mode], stdout=subprocess.PIPE, text=True)
        owners.append(started)
        assert started.stdout is not None and started.stdout.readline() == "ready\n"
        return started

    try:
        first = owner("create")
        made = {namespace: links(namespace) for namespace in namespaces(prefix)}
        pod = f"{prefix}node-1.{short_hash('d/p')}"
        assert len(made) == 4 and pod in made
        sleeping = subprocess.run(["ip", "netns", "pids", pod], capture_output=True, text=True).stdout.split()
        with pytest.raises(SandboxError, match="in use by a running process"):
            Sandbox(name).create(adopt=True)
        first.send_signal(signal.SIGKILL)
        first.wait()
        with pytest.raises(SandboxError, match="left behind"):
            Sandbox(name).create()  # without adopt: refused, as before
        owner("adopt")
        assert {namespace: links(namespace) for namespace in namespaces(prefix)} == made  # the very same links
        assert subprocess.run(["ip", "netns", "pids", pod], capture_output=True, text=True).stdout.split() == sleeping
        routes = subprocess.run(["ip", "-n", f"{prefix}ext", "route"], capture_output=True, text=True).stdout
        assert "172.20.255.7" not in routes and "default via 172.20.0.1" in routes
        with pytest.raises(SandboxError, match="in use by a running process"):
            Sandbox(name).create(adopt=True)
    finally:
        for started in owners:
            started.kill()
            started.wait()
        remove_sandbox(name)
        assert not namespaces(prefix) and not list(Path("/etc/netns").glob(f"{prefix}*"))


@needs_root
def test_a_killed_netns_up_adopts_its_running_pods(tmp_path: Path) -> None:
    name = f"rk{os.getpid()}"
    with netns_up(tmp_path, name) as running:
        with running[-1].http() as api:
            api.post("/api/v1/namespaces", json={"metadata": {"name": "r"}})
            create(api, "r", web_pod("web", 8080))
            probe = {"tcpSocket": {"port": 8081}, "periodSeconds": 1}
            create(api, "r", web_pod("probed", 8081, readinessProbe=probe))
            create(api, "r", sleeper("sleeper"))
            flag = tmp_path / "quit"
            code = f"import os, sys, time\nprint('started', flush=True)\nwhile not os.path.exists({str(flag)!r}):\n"
            code += "    time.sleep(0.1)\nprint('bye', flush=True)\nsys.exit(3)"
            quits = ["python3", "-c", code]
            quitter = sleeper("quitter", "Never")
            quitter["spec"]["containers"][0]["command"] = quits
            create(api, "r", quitter)
            eventually(lambda: len([p for p in pods(api, "r").values() if running_ready(p)]) == 4, what="4 pods")
            eventually(lambda: all(p["status"]["containerStatuses"][0]["ready"] for p in pods(api, "r").values()))
            time.sleep(1.1)  # times have one second's resolution: a rewrite now would show
            before, conditions = pods(api, "r"), node_conditions(api)
        processes = {key: pod_pids(name, f"r/{key}") for key in before}
        assert all(processes.values()), processes

        killed = running[-1]
        killed.proc.send_signal(signal.SIGKILL)
        killed.proc.wait(30)
        web_ip = before["web"]["status"]["podIP"]
        assert fetch(name, web_ip, 8080) == "200"  # served with no agent: its log line waits in the pipe, unread
        (killed.data_dir / "cluster.json").unlink()  # the killed process's record (the harness waits for a new one)
        running.append(up(killed.data_dir, "--dataplane", "netns"))
        with running[-1].http() as api:
            settle(api, "r", sleeper("canary"))
            after = pods(api, "r")
            assert_unchanged(before, after)
            assert transitions(node_conditions(api)) == transitions(conditions)
        assert {key: pod_pids(name, f"r/{key}") for key in before} == processes  # the very same processes
        assert fetch(name, web_ip, 8080) == "200"  # and they still serve
        requests = "GET / HTTP/1.1"
        logs = eventually(
            lambda: (out := running[-1].kubectl("logs", "-n", "r", "web").stdout).count(requests) == 2 and out
        )
        assert logs.count(requests) == 2  # the one served while no agent ran too

        # An adopted container that ends is seen to end (its exit status read while it is a zombie, if it can be).
        flag.touch()
        with running[-1].http() as api:
            ended = eventually(lambda: (p := pods(api, "r")["quitter"])["status"]["phase"] == "Failed" and p)
        terminated = ended["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["exitCode"] == 3 or terminated["reason"] == "ContainerStatusUnknown", terminated
        assert (
            terminated["startedAt"]
            == before["quitter"]["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        )
        assert running[-1].kubectl("logs", "-n", "r", "quitter").stdout == "started\nbye\n"

        # A pod deleted while `up` was away is removed with its namespace when `up` comes back.
        running[-1].proc.send_signal(signal.SIGKILL)
        running[-1].proc.wait(30)
        gone = pod_pids(name, "r/sleeper")
        (running[-1].data_dir / "cluster.json").unlink()
        running.append(up(running[-1].data_dir, "--dataplane", "netns", "--nodes", "0"))  # no agent: the pod stays
        with running[-1].http() as api:
            deleted = api.delete("/api/v1/namespaces/r/pods/sleeper")
            assert deleted.status_code == 200, deleted.text
        assert pod_pids(name, "r/sleeper") == gone
        running.append(restart(running[-1], "SIGKILL", "--dataplane", "netns"))
        with running[-1].http() as api:
            settle(api, "r", sleeper("canary2"))
            assert_unchanged({key: before[key] for key in ("web", "probed")}, pods(api, "r"))
        assert f"tk-{name}.node-1.{short_hash('r/sleeper')}" not in namespaces(f"tk-{name}.")
        assert not any(alive(pid) for pid in gone)
        assert pod_pids(name, "r/web") == processes["web"]


@needs_root
def test_a_cleanly_stopped_netns_up_restarts_its_containers_as_after_a_reboot(tmp_path: Path) -> None:
    name = f"rt{os.getpid()}"
    with netns_up(tmp_path, name) as running:
        with running[-1].http() as api:
            api.post("/api/v1/namespaces", json={"metadata": {"name": "r"}})
            create(api, "r", web_pod("web", 8080))
            create(api, "r", sleeper("never", "Never"))
            eventually(lambda: len([p for p in pods(api, "r").values() if running_ready(p)]) == 2, what="2 pods")
            time.sleep(1.1)
            before = pods(api, "r")
        running.append(restart(running[-1], "SIGTERM", "--dataplane", "netns"))
        with running[-1].http() as api:

            def restarted() -> Object | None:
                web = pods(api, "r")["web"]
                statuses = web["status"].get("containerStatuses") or [{}]
                return web if statuses[0].get("restartCount") == 1 and running_ready(web) else None

            web = eventually(restarted, what="web restarted")
            old = before["web"]["status"]
            assert web["status"]["startTime"] == old["startTime"] and web["status"]["podIP"] == old["podIP"]
            container, was = web["status"]["containerStatuses"][0], old["containerStatuses"][0]
            ended = container["lastState"]["terminated"]
            assert ended["startedAt"] == was["state"]["running"]["startedAt"]
            assert ended["exitCode"] == 143 and ended["reason"] == "Error"  # SIGTERM, when `up` stopped
            assert container["containerID"] != was["containerID"]
            # without a readiness probe it is ready once it runs, a moment before it listens
            eventually(lambda: fetch(name, web["status"]["podIP"], 8080) == "200", what="web serving again")
            assert running[-1].kubectl("logs", "-n", "r", "web", "--previous").returncode == 0  # the ended run's log

            def ended_for_good() -> Object | None:
                never = pods(api, "r")["never"]
                return never if never["status"]["phase"] == "Failed" else None

            never = eventually(ended_for_good, what="the Never pod failed")  # its container is gone for good
            terminated = never["status"]["containerStatuses"][0]["state"]["terminated"]
            assert terminated["exitCode"] == 143 and never["status"]["containerStatuses"][0]["restartCount"] == 0
