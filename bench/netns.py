"""netns dataplane: pod create -> Ready latency, and teardowns that must leave nothing behind.

`tinykube up --dataplane netns --nodes 2 --name bnetns-<pid>` (as root): every pod is a network namespace
`tk-<name>.node-N.<hash>` with a veth to its node's namespace, running its container `command` as a process.

(1) Latency: pods created one at a time (the next once the last is Ready, and at least 1 s after the last create,
    so that no group overlaps a pod's start with the previous server's start-up), alternating node-1 / node-2
    (`spec.nodeName`, so the scheduler is not in the figure), each `python3 -m http.server <port>`. From the create
    request being *sent* to the watch event that shows the pod `Running` (namespace, veth, addresses, process
    spawned) and the one that shows `Ready=True`.
    Four groups: readiness probe `tcpSocket` (periodSeconds 1, initialDelaySeconds 0); the same with `httpGet /`;
    an `exec` probe `true` (passes at once: the pipeline without the server's own start-up); no probe (Ready as
    soon as the process runs). Each group is deleted afterwards.
(2) Teardown: 50 pods with the tcpSocket probe on the 2 nodes; the pod processes (pgrep on the run's unique port),
    the cluster's namespaces and each node's veths are counted; then all pods are deleted through the API
    (deletecollection) and the bench waits until the API, the namespaces, the veths and the processes show none;
    then `up` is stopped with SIGTERM. Afterwards: zero `tk-<name>.*` namespaces, zero `/etc/netns/tk-<name>.*`,
    zero pod processes, no etcd of the cluster, no pod log directories.
(3) Crash: a second cluster with 50 Ready pods, `up` SIGKILLed, then `tinykube down --name N --data-dir D` must
    leave nothing (its output lists what it removed).

Nothing is configured in or sent from the root network namespace: the bench only talks to the apiserver on
loopback and reads `ip netns list`, `ip -n <ns> link`, `/etc/netns` and the process table. Whatever happens, each
cluster is stopped and `tinykube down` run for it, then the namespaces are checked once more.

`python netns.py [tcpSocket / no-probe / teardown pods, default 50] [httpGet / exec pods, default 20]`. Root
only. Exits 1 if a target or a check fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, percentile, start, stop, temporary_dir
from controllers import Connection
from nodes import ready

from tinykube.sandbox.topology import short_hash

NS = "bench"
NODES = ("node-1", "node-2")
TARGET_P50 = 0.200  # seconds, pod created -> Ready with a probe
READY_TIMEOUT = 30.0  # per pod
SPACING = 1.0  # seconds between the creates of (1), at least: every group sees the same quiet machine
GONE_TIMEOUT = 90.0  # all pods gone after the delete
PORT = 20000 + os.getpid() % 20000  # unique to this run: the pods' processes are found by it
MARKER = f"http.server {PORT}"
DOWN = [sys.executable, "-m", "tinykube.cli", "down"]
CREATORS = 8  # connections creating the crash test's pods


# What exists on the machine (read-only looks; nothing here touches a namespace's configuration)


def namespaces(cluster: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return sorted(n for line in out.splitlines() if (n := line.split(" ")[0]).startswith(f"tk-{cluster}."))


def etc_entries(cluster: str) -> list[str]:
    return sorted(p.name for p in Path("/etc/netns").glob(f"tk-{cluster}.*"))


def veths(cluster: str, node: str) -> int:
    netns = f"tk-{cluster}.{node}"
    if netns not in namespaces(cluster):
        return 0
    out = subprocess.run(["ip", "-n", netns, "-o", "link"], capture_output=True, text=True, check=False).stdout
    return sum(1 for line in out.splitlines() if line.split(": ")[1].startswith("veth"))


def processes() -> list[int]:
    out = subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def etcd_pids(data_dir: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"data-dir={data_dir}/etcd"], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def root_links(hashes: set[str]) -> list[str]:
    """Links of the root namespace named after one of our pods (there must never be any)."""
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False).stdout
    names = [line.split(": ")[1].split("@")[0] for line in out.splitlines()]
    return [n for n in names if n.startswith("veth") and n[4:] in hashes]


def pod_log_dirs(data_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(data_dir)) for p in (data_dir / "pods").glob("*/*") if p.is_dir())


@dataclass
class Snapshot:
    namespaces: list[str]
    etc: list[str]
    veths: dict[str, int]
    processes: list[int]

    @classmethod
    def take(cls, cluster: str) -> Snapshot:
        return cls(namespaces(cluster), etc_entries(cluster), {n: veths(cluster, n) for n in NODES}, processes())

    def pods(self) -> list[str]:
        return [n for n in self.namespaces if n.count(".") == 2]

    def describe(self) -> str:
        v = ", ".join(f"{n} {c}" for n, c in self.veths.items())
        return (
            f"{len(self.namespaces)} namespaces ({len(self.pods())} pods), {len(self.etc)} /etc/netns entries, "
            f"veths {v}, {len(self.processes)} pod processes"
        )


# Pods and the watch


def pod_body(name: str, node: str, probe: str) -> bytes:
    container: dict[str, Any] = {
        "name": "web",
        "image": "python:3",
        "command": ["python3", "-m", "http.server", str(PORT), "--bind", "0.0.0.0"],
        "ports": [{"containerPort": PORT}],
    }
    timing = {"periodSeconds": 1, "initialDelaySeconds": 0}
    if probe == "tcpSocket":
        container["readinessProbe"] = {"tcpSocket": {"port": PORT}, **timing}
    elif probe == "httpGet":
        container["readinessProbe"] = {"httpGet": {"path": "/", "port": PORT}, **timing}
    elif probe == "exec":  # passes at once, whether or not the server listens yet
        container["readinessProbe"] = {"exec": {"command": ["true"]}, **timing}
    body = {"metadata": {"name": name, "labels": {"group": name.rsplit("-", 1)[0]}},
            "spec": {"nodeName": node, "containers": [container]}}  # fmt: skip
    return orjson.dumps(body)


@dataclass
class Tracked:
    running: float | None = None
    ready: float | None = None
    deleted: float | None = None
    became_ready: asyncio.Event = field(default_factory=asyncio.Event)


class Pods:
    """What the pod watch showed, per pod name, with receipt times (CLOCK_MONOTONIC)."""

    def __init__(self) -> None:
        self.seen: dict[str, Tracked] = {}
        self.changed = asyncio.Event()

    def get(self, name: str) -> Tracked:
        return self.seen.setdefault(name, Tracked())

    def on_event(self, event: dict[str, Any], at: float) -> None:
        obj = event.get("object") or {}
        if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
            return
        t = self.get(obj["metadata"]["name"])
        if event["type"] == "DELETED":
            t.deleted = t.deleted or at
        else:
            if (obj.get("status") or {}).get("phase") == "Running" and t.running is None:
                t.running = at
            if ready(obj) and t.ready is None:
                t.ready = at
                t.became_ready.set()
        self.changed.set()

    async def wait(self, check: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not check():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        return True


class Cluster:
    """A `tinykube up --dataplane netns` with a pod watch; `close()` ends the watch and connections."""

    def __init__(self, bench: Bench, name: str) -> None:
        self.bench, self.name = bench, name
        self.conn = Connection(bench)
        self.watcher = Connection(bench)
        self.pods = Pods()
        self.watch: asyncio.Task[None] | None = None

    async def open(self) -> None:
        await self.conn.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
        listing = await self.conn.request("GET", f"/api/v1/namespaces/{NS}/pods")
        version = listing["metadata"]["resourceVersion"]
        path = f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={version}"
        self.watch = asyncio.create_task(self.watcher.watch(path, self.pods.on_event))

    async def create(self, name: str, node: str, probe: str, conn: Connection | None = None) -> None:
        await (conn or self.conn).request("POST", f"/api/v1/namespaces/{NS}/pods", pod_body(name, node, probe))

    async def delete_group(self, group: str) -> None:
        await self.conn.request("DELETE", f"/api/v1/namespaces/{NS}/pods?labelSelector=group%3D{group}")

    async def close(self) -> None:
        if self.watch is not None:
            self.watch.cancel()
            await asyncio.gather(self.watch, return_exceptions=True)
        await asyncio.gather(self.conn.close(), self.watcher.close())


# Phases


def summary(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{label}: n={len(ms)} p50 {percentile(ms, 50):.0f} ms, p90 {percentile(ms, 90):.0f} ms, "
        f"p99 {percentile(ms, 99):.0f} ms, max {max(ms):.0f} ms"
    )


async def latency(cluster: Cluster, group: str, count: int, probe: str) -> tuple[list[float], list[float]]:
    """Create `count` pods one at a time; (create -> Running, create -> Ready) per pod. Deletes them after."""
    to_running, to_ready = [], []
    for i in range(count):
        name = f"{group}-{i:03d}"
        tracked = cluster.pods.get(name)
        began = time.monotonic()
        await cluster.create(name, NODES[i % len(NODES)], probe)
        try:
            await asyncio.wait_for(tracked.became_ready.wait(), READY_TIMEOUT)
        except TimeoutError:
            raise RuntimeError(f"pod {name} not Ready within {READY_TIMEOUT:.0f} s") from None
        assert tracked.running is not None and tracked.ready is not None
        to_running.append(tracked.running - began)
        to_ready.append(tracked.ready - began)
        await asyncio.sleep(began + SPACING - time.monotonic())  # the previous server's start-up is over
    await cluster.delete_group(group)
    names = [f"{group}-{i:03d}" for i in range(count)]
    if not await cluster.pods.wait(lambda: all(cluster.pods.get(n).deleted for n in names), GONE_TIMEOUT):
        raise RuntimeError(f"group {group}: pods not deleted within {GONE_TIMEOUT:.0f} s")
    return to_running, to_ready


async def until(check: Any, timeout: float, step: float = 0.05) -> float | None:
    """Seconds until `check()` (run in a thread) holds, or None after `timeout`."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if await asyncio.to_thread(check):
            return time.monotonic() - began
        await asyncio.sleep(step)
    return None


def leftovers(cluster: str, data_dir: Path, logs: bool = True) -> list[str]:
    """Everything of `cluster` still on the machine (with `logs`, pod log dirs in its data dir too), described;
    empty when clean."""
    found = []
    if ns := namespaces(cluster):
        found.append(f"namespaces {ns}")
    if etc := etc_entries(cluster):
        found.append(f"/etc/netns entries {etc}")
    if procs := processes():
        found.append(f"pod processes {procs}")
    if etcd := etcd_pids(data_dir):
        found.append(f"etcd processes {etcd}")
    if logs and (dirs := pod_log_dirs(data_dir)):
        found.append(f"pod log dirs {dirs[:5]}")
    return found


async def teardown(cluster: Cluster, count: int, failures: list[str]) -> None:
    name, bench = cluster.name, cluster.bench
    names = [f"down-{i:03d}" for i in range(count)]
    for i, pod in enumerate(names):  # one at a time, as in (1): no start-up storm
        await cluster.create(pod, NODES[i % len(NODES)], "tcpSocket")
    if not await cluster.pods.wait(lambda: all(cluster.pods.get(n).ready for n in names), 120):
        raise RuntimeError("teardown: pods not all Ready within 120 s")
    before = await asyncio.to_thread(Snapshot.take, name)
    print(f"(2) before: {before.describe()}")
    expected = {f"tk-{name}.{NODES[i % len(NODES)]}.{short_hash(f'{NS}/{n}')}" for i, n in enumerate(names)}
    if set(before.pods()) != expected or len(before.processes) != count or sum(before.veths.values()) != count:
        failures.append(f"teardown: expected {count} pod namespaces/veths/processes before, saw {before.describe()}")
    hashes = {short_hash(f"{NS}/{n}") for n in names}
    if links := root_links(hashes):
        failures.append(f"root namespace has pod links: {links}")

    began = time.monotonic()
    await cluster.delete_group("down")
    gone_api = await cluster.pods.wait(lambda: all(cluster.pods.get(n).deleted for n in names), GONE_TIMEOUT)
    api_s = time.monotonic() - began

    def clean() -> bool:
        s = Snapshot.take(name)
        return not s.pods() and not s.processes and not any(s.veths.values())

    rest = await until(clean, GONE_TIMEOUT)
    total_s = time.monotonic() - began
    after = await asyncio.to_thread(Snapshot.take, name)
    print(f"(2) delete all {count} pods (deletecollection): gone from the API after {api_s:.2f} s, namespaces/veths/"
          f"processes gone after {total_s:.2f} s; now {after.describe()}")  # fmt: skip
    if not gone_api or rest is None:
        failures.append(f"teardown: pods not gone within {GONE_TIMEOUT:.0f} s ({after.describe()})")
    if logs := pod_log_dirs(bench.data_dir):
        failures.append(f"teardown: pod log dirs left after the delete: {logs[:5]}")

    await cluster.close()
    began = time.monotonic()
    bench.stop()
    stop_s = time.monotonic() - began
    left = await asyncio.to_thread(leftovers, name, bench.data_dir)
    print(f"(2) SIGTERM to `up`: exited after {stop_s:.2f} s (code {bench.proc.returncode}); "
          f"left behind: {'; '.join(left) or 'nothing'}")  # fmt: skip
    failures.extend(f"teardown: left after SIGTERM: {item}" for item in left)


async def crash(bench: Bench, name: str, count: int, failures: list[str]) -> None:
    cluster = Cluster(bench, name)
    await cluster.open()
    names = [f"crash-{i:03d}" for i in range(count)]
    conns = [Connection(bench) for _ in range(CREATORS)]
    jobs = iter(enumerate(names))

    async def creator(conn: Connection) -> None:
        for i, pod in jobs:
            await cluster.create(pod, NODES[i % len(NODES)], "tcpSocket", conn)

    began = time.monotonic()
    await asyncio.gather(*(creator(c) for c in conns))
    await asyncio.gather(*(c.close() for c in conns))
    all_ready = await cluster.pods.wait(lambda: all(cluster.pods.get(n).ready for n in names), 120)
    ready_s = time.monotonic() - began
    await cluster.close()
    if not all_ready:
        raise RuntimeError("crash: pods not all Ready within 120 s")
    before = await asyncio.to_thread(Snapshot.take, name)
    print(f"(3) {count} pods created by {CREATORS} connections, all Ready after {ready_s:.2f} s; "
          f"{before.describe()}")  # fmt: skip
    bench.proc.send_signal(signal.SIGKILL)
    bench.proc.wait()  # reaped: `down` must see the pid gone, not a zombie
    await asyncio.sleep(0.5)
    killed = await asyncio.to_thread(Snapshot.take, name)
    etcd = etcd_pids(bench.data_dir)
    print(f"(3) after SIGKILL of `up`: {killed.describe()}; etcd processes {etcd or 'none'}")
    began = time.monotonic()
    down = await asyncio.to_thread(
        subprocess.run,
        [*DOWN, "--name", name, "--data-dir", str(bench.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    down_s = time.monotonic() - began
    report = down.stdout.strip()
    removed = report.split(": ", 1)[0] if report else "(no output)"
    print(f"(3) tinykube down: exit {down.returncode} after {down_s:.2f} s: {removed}")
    if down.stderr.strip():
        print(f"    stderr: {down.stderr.strip()[-500:]}")
    left = await asyncio.to_thread(leftovers, name, bench.data_dir, False)
    # The pods still exist in etcd, so their log dirs stay in the data dir (as /var/log/pods after a kubelet crash);
    # not a leak of the machine's: the bench removes the data dir.
    print(f"    pod log dirs kept in the data dir: {len(pod_log_dirs(bench.data_dir))}")
    if etcd and not etcd_pids(bench.data_dir):
        print("    (etcd had outlived `up`; gone now)")
    print(f"(3) left behind: {'; '.join(left) or 'nothing'}")
    failures.extend(f"crash: left after down: {item}" for item in left)
    if down.returncode != 0:
        failures.append(f"crash: tinykube down exited {down.returncode}")


# Running it, and always cleaning up


def clean_up(name: str, data_dir: Path, proc: Any) -> list[str]:
    """Stop `up` if it runs, `tinykube down` it; return what is still there (and end our processes by pid)."""
    stop(proc)
    subprocess.run([*DOWN, "--name", name, "--data-dir", str(data_dir)], capture_output=True, timeout=120, check=False)
    left = leftovers(name, data_dir, False)
    for pid in processes() + etcd_pids(data_dir):  # ours: the run's unique port / data dir
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


async def run(count: int, http_count: int) -> int:
    if os.geteuid() != 0:
        print("netns.py needs root (tinykube up --dataplane netns creates network namespaces)")
        return 1
    failures: list[str] = []
    base = f"bnetns-{os.getpid()}"
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; pod port {PORT}")
    with temporary_dir("tinykube-bench-netns-") as tmp:
        clusters: list[tuple[str, Path, Any]] = []
        try:
            name = base
            bench = start("--dataplane", "netns", "--nodes", "2", "--name", name, data_dir=tmp / "a")
            clusters.append((name, bench.data_dir, bench.proc))
            print(f"`tinykube up --dataplane netns --nodes 2`: ready after {bench.startup:.2f} s; "
                  f"{Snapshot.take(name).describe()}")  # fmt: skip
            cluster = Cluster(bench, name)
            await cluster.open()
            results = {}
            for group, probe, n in (("tcp", "tcpSocket", count), ("http", "httpGet", http_count),
                                    ("exec", "exec", http_count), ("noprobe", "", count)):  # fmt: skip
                if n:
                    results[probe or "none"] = await latency(cluster, group, n, probe)
            for probe, (to_running, to_ready) in results.items():
                print(summary(f"(1) probe {probe:9} created -> Running", to_running))
                print(summary(f"(1) probe {probe:9} created -> Ready  ", to_ready))
                if probe != "none":  # Ready within half a period of Running: the first probe passed
                    gaps = [d - r for r, d in zip(to_running, to_ready, strict=True)]
                    first = sum(1 for gap in gaps if gap < 0.5)
                    print(f"    {summary('Running -> Ready', gaps)}; first probe passed for {first}/{len(gaps)}")
            p50 = percentile(results["tcpSocket"][1], 50)
            met = p50 <= TARGET_P50
            print(f"(1) target: created -> Ready (tcpSocket probe) p50 <= {TARGET_P50 * 1000:.0f} ms — "
                  f"{'met' if met else 'NOT met'} ({p50 * 1000:.0f} ms)")  # fmt: skip
            if not met:
                failures.append(f"latency: p50 {p50 * 1000:.0f} ms > {TARGET_P50 * 1000:.0f} ms")
            await teardown(cluster, count, failures)

            name = f"{base}-k"
            bench = start("--dataplane", "netns", "--nodes", "2", "--name", name, data_dir=tmp / "k")
            clusters.append((name, bench.data_dir, bench.proc))
            await crash(bench, name, count, failures)
        except Exception as err:  # report, then clean up below
            failures.append(f"error: {type(err).__name__}: {err}")
        finally:
            for name, data_dir, proc in clusters:
                left = await asyncio.to_thread(clean_up, name, data_dir, proc)
                failures.extend(f"{name}: still there after cleanup: {item}" for item in left)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    remaining = namespaces(base) + namespaces(f"{base}-k")
    print(f"`ip netns list` entries of this run at exit: {remaining or 'none'}")
    for failure in failures:
        print(f"FAILED: {failure}")
    print(
        "teardown checks: " + ("all passed" if not [f for f in failures if not f.startswith("latency")] else "FAILED")
    )
    return 1 if failures else 0


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM (e.g. `timeout`) still runs the clean-up


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupted)
    pods = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    http_pods = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    sys.exit(uvloop.run(run(pods, http_pods)))
