"""Pod readiness flip -> rule change in the kernel (issue 7: p99 <= 100 ms end to end).

`tinykube up --dataplane netns --nodes 1 --proxy-mode nftables --name rb<pid>` (as root). A Service `web` (port 80
-> the pods' port) selects PODS pods bound to node-1, each a real `python3 -m http.server <port>` in its network
namespace, each with a readiness gate `GATE` and no probe: the node agent reports Ready = containers ready AND the
gate's condition True (`tinykube/node/status.py`), as the kubelet does.

A flip is a strategic merge patch of the gate's condition on `pods/status` (True <-> False). The clock starts when
that PATCH is *sent* (the write that flips readiness) and stops when the kernel has committed the change: `nft
monitor`, running in the node's namespace (`ip netns exec tk-<name>.node-1 nft monitor`), is read line by line by a
thread (CLOCK_MONOTONIC taken as each line is read) that replays the `add element` / `delete element` lines of the
`endpoint-addresses` map (the DNAT map: destination . index -> pod address . port) and notes, at each `# new
generation` line (the end of a committed transaction), which pod addresses the map holds. The flip's end is the
first transaction after which the pod's address is in the map (Ready) or no longer in it (not Ready). Stages on the
way, from watches opened by the bench:

    PATCH sent -> PATCH answered
               -> pod watch event whose Ready condition shows the flip (the node agent saw the gate and wrote Ready)
               -> EndpointSlice watch event whose endpoint for the pod IP shows the new `ready`
               -> `nft monitor` line (the proxy saw the slice, waited its debounce, and committed the transaction)

Flips go round the pods: each pod is turned not-Ready, then Ready again, then the next pod; the next flip is sent
SPACING (+ random jitter, so that no periodic job of `up` phase-locks with the flips) after the kernel showed the
last one. The other pods stay Ready, so the Service always has endpoints and each flip renumbers the map.

Nothing is configured in or sent from the root network namespace: the bench talks to the apiserver on loopback,
runs `nft monitor` (read-only) inside the node's namespace and reads `ip netns list` and the process table.
Whatever happens (errors, SIGTERM, the SIGALRM deadline), `up` gets SIGTERM, `tinykube down` runs if any
`tk-<name>.*` namespace is left, and the pods' processes (found by the run's unique port) and `nft monitor` are
ended by pid.

`python readiness.py [flips, default 100]` from `bench/`. Root only. Exits 1 if p99 > 100 ms or a flip is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
from common import Bench, Connection, percentile, start, stop, temporary_dir

NS = "bench"
NODE = "node-1"
SERVICE = "web"
PODS = 3
GATE = "bench.tinykube.io/serving"  # the readiness gate's condition type
PORT = 20000 + os.getpid() % 20000  # unique to this run: the pods' processes are found by it
MARKER = f"http.server {PORT}"
TARGET_P99 = 0.100  # seconds, PATCH sent -> kernel
FLIP_TIMEOUT = 5.0  # seconds for one flip to reach the kernel (a miss counts as lost)
SETUP_TIMEOUT = 60.0  # cluster namespaces, pods Ready, first rules in the kernel
SPACING = 0.25  # seconds after one flip reached the kernel before the next, plus up to JITTER
JITTER = 0.25
DEADLINE = 300  # seconds for the whole run (SIGALRM); clean-up runs after it
SMP = "application/strategic-merge-patch+json"
DOWN = [sys.executable, "-m", "tinykube.cli", "down"]
TABLE, PICK_MAP = "ip kube-proxy", "endpoint-addresses"  # tinykube/proxy/nftables.py: the map DNAT reads


class Deadline(Exception):
    """SIGALRM: the run took longer than DEADLINE."""


# The kernel side: `nft monitor` in the node's namespace, read by a thread


class Monitor:
    """`nft monitor` inside `netns`, read by a thread that replays the notifications on a model of the
    `endpoint-addresses` map and keeps, for each committed transaction (`# new generation` line), the monotonic time
    it was read and the pod addresses the map holds from then on."""

    def __init__(self, netns: str) -> None:
        self.entries: dict[str, str] = {}  # the map's key (destination . index) -> endpoint address
        self.commits: list[tuple[float, frozenset[str]]] = []
        self.lines = 0
        self.lock = threading.Lock()
        self.wake: Callable[[], None] = lambda: None  # set by the asyncio side
        # stdbuf: nft's stdout is a pipe here, and must not sit in a stdio buffer.
        argv = ["ip", "netns", "exec", netns, "stdbuf", "-oL", "nft", "monitor"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        self.thread = threading.Thread(target=self._read, name="nft monitor", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:  # a BufferedReader yields each line as soon as it is complete
            at = time.monotonic()
            line = raw.decode(errors="replace").strip()
            with self.lock:
                self.lines += 1
                if self._apply(line):
                    self.commits.append((at, frozenset(self.entries.values())))
            with contextlib.suppress(RuntimeError):  # the event loop has just closed
                self.wake()

    def _apply(self, line: str) -> bool:
        """Replay one notification on the model; whether it ends a transaction."""
        if line.startswith("# new generation"):
            return True
        if line.startswith(("add element ", "delete element ")) and f" {PICK_MAP} {{" in line:
            body = line[line.index("{") + 1 : line.rindex("}")]
            for element in body.split(","):
                key, _, value = element.partition(" : ")
                if line.startswith("add"):
                    self.entries[key.strip()] = value.split(" . ")[0].strip()
                else:
                    self.entries.pop(key.strip(), None)
        elif line.startswith((f"delete table {TABLE}", f"flush table {TABLE}", f"flush map {TABLE} {PICK_MAP}")):
            self.entries.clear()
        return False

    def mark(self) -> int:
        with self.lock:
            return len(self.commits)

    def holds(self, ip: str, present: bool, mark: int) -> float | None:
        """The time of the first transaction from commit number `mark` on after which the map holds `ip` (or,
        with `present` false, no longer holds it)."""
        with self.lock:
            return next((at for at, ips in self.commits[mark:] if (ip in ips) == present), None)

    def close(self) -> None:
        stop(self.proc)
        self.thread.join(5)


# The API side: pod and EndpointSlice watches


@dataclass
class Seen:
    """Transitions seen by the watches, (monotonic receipt time, new value), per pod name / pod IP."""

    ready: dict[str, list[tuple[float, bool]]] = field(default_factory=dict)  # pod -> Ready condition
    ip: dict[str, str] = field(default_factory=dict)  # pod -> podIP
    serving: dict[str, list[tuple[float, bool]]] = field(default_factory=dict)  # pod IP -> slice endpoint ready
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @staticmethod
    def _record(history: dict[str, list[tuple[float, bool]]], key: str, value: bool, at: float) -> None:
        events = history.setdefault(key, [])
        if not events or events[-1][1] != value:
            events.append((at, value))

    def on_pod(self, event: dict[str, Any], at: float) -> None:
        if event.get("type") not in ("ADDED", "MODIFIED"):
            return
        pod = event["object"]
        status = pod.get("status") or {}
        name = pod["metadata"]["name"]
        if status.get("podIP"):
            self.ip[name] = status["podIP"]
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        self._record(self.ready, name, ready, at)
        self.changed.set()

    def on_slice(self, event: dict[str, Any], at: float) -> None:
        if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
            return
        endpoints = event["object"].get("endpoints") or []
        for endpoint in endpoints:
            ready = bool((endpoint.get("conditions") or {}).get("ready"))
            for address in endpoint.get("addresses") or []:
                self._record(self.serving, address, ready and event["type"] != "DELETED", at)
        self.changed.set()

    def first(self, history: dict[str, list[tuple[float, bool]]], key: str, value: bool, after: float) -> float | None:
        return next((t for t, v in history.get(key, []) if v == value and t >= after), None)

    def now_ready(self, name: str) -> bool:
        events = self.ready.get(name)
        return bool(events and events[-1][1])


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_body(name: str) -> bytes:
    container = {
        "name": "web",
        "image": "python:3",
        "command": ["python3", "-m", "http.server", str(PORT), "--bind", "0.0.0.0"],
        "ports": [{"containerPort": PORT}],
    }
    body = {
        "metadata": {"name": name, "labels": {"app": SERVICE}},
        "spec": {"nodeName": NODE, "containers": [container], "readinessGates": [{"conditionType": GATE}]},
    }
    return orjson.dumps(body)


def service_body() -> bytes:
    spec = {"selector": {"app": SERVICE}, "ports": [{"name": "http", "port": 80, "targetPort": PORT}]}
    return orjson.dumps({"metadata": {"name": SERVICE}, "spec": spec})


def gate_patch(ready: bool) -> bytes:
    condition = {"type": GATE, "status": "True" if ready else "False", "lastTransitionTime": now_rfc3339()}
    return orjson.dumps({"status": {"conditions": [condition]}})


@dataclass
class Flip:
    pod: str
    ready: bool
    sent: float
    answered: float = 0.0
    pod_event: float | None = None
    slice_event: float | None = None
    kernel: float | None = None


class Run:
    """The cluster's API connections, the watches and the monitor, for one measurement."""

    def __init__(self, bench: Bench, monitor: Monitor) -> None:
        self.conn, self.pod_watch, self.slice_watch = Connection(bench), Connection(bench), Connection(bench)
        self.monitor = monitor
        self.seen = Seen()
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        loop = asyncio.get_running_loop()

        def wake() -> None:
            loop.call_soon_threadsafe(self.seen.changed.set)

        self.monitor.wake = wake
        await self.conn.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
        for path, handler, watcher in (
            (f"/api/v1/namespaces/{NS}/pods", self.seen.on_pod, self.pod_watch),
            (f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices", self.seen.on_slice, self.slice_watch),
        ):
            version = (await self.conn.request("GET", path))["metadata"]["resourceVersion"]
            watch = f"{path}?watch=true&allowWatchBookmarks=false&resourceVersion={version}"
            self.tasks.append(asyncio.create_task(watcher.watch(watch, handler)))

    async def wait(self, check: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not check():
            self.seen.changed.clear()
            if check():
                break
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.seen.changed.wait(), left)
        return True

    async def set_gate(self, pod: str, ready: bool) -> float:
        """PATCH the gate's condition; returns the monotonic time the request was sent."""
        path = f"/api/v1/namespaces/{NS}/pods/{pod}/status"
        sent = time.monotonic()
        await self.conn.request("PATCH", path, gate_patch(ready), SMP)
        return sent

    async def set_up(self, names: list[str]) -> None:
        """The Service and the pods, all Ready, every address in the kernel's map."""
        await self.conn.request("POST", f"/api/v1/namespaces/{NS}/services", service_body())
        for name in names:
            await self.conn.request("POST", f"/api/v1/namespaces/{NS}/pods", pod_body(name))
        if not await self.wait(lambda: all(n in self.seen.ip for n in names), SETUP_TIMEOUT):
            raise RuntimeError(f"pods did not get addresses within {SETUP_TIMEOUT:.0f} s")
        mark = self.monitor.mark()
        for name in names:
            await self.set_gate(name, True)

        def programmed() -> bool:
            ready = all(self.seen.now_ready(n) for n in names)
            return ready and all(self.monitor.holds(self.seen.ip[n], True, mark) for n in names)

        if not await self.wait(programmed, SETUP_TIMEOUT):
            raise RuntimeError(f"pods not Ready with their addresses in the kernel within {SETUP_TIMEOUT:.0f} s")

    async def flip(self, pod: str, ready: bool) -> Flip:
        ip = self.seen.ip[pod]
        mark = self.monitor.mark()
        sent = await self.set_gate(pod, ready)
        flip = Flip(pod, ready, sent, answered=time.monotonic())

        def arrived() -> bool:
            flip.pod_event = self.seen.first(self.seen.ready, pod, ready, flip.sent)
            flip.slice_event = self.seen.first(self.seen.serving, ip, ready, flip.sent)
            flip.kernel = self.monitor.holds(ip, ready, mark)
            return None not in (flip.pod_event, flip.slice_event, flip.kernel)

        await self.wait(arrived, FLIP_TIMEOUT)
        return flip

    async def close(self) -> None:
        self.monitor.wake = lambda: None  # the loop is about to go
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await asyncio.gather(self.conn.close(), self.pod_watch.close(), self.slice_watch.close())


async def measure(bench: Bench, monitor: Monitor, flips: int) -> list[Flip]:
    run = Run(bench, monitor)
    names = [f"{SERVICE}-{i}" for i in range(PODS)]
    try:
        await run.open()
        began = time.monotonic()
        await run.set_up(names)
        print(f"{PODS} pods Ready and in the kernel's map {time.monotonic() - began:.2f} s after the first create")
        await asyncio.sleep(1.0)  # the start-up's writes are over
        results = []
        for i in range(flips):
            pod, ready = names[(i // 2) % PODS], i % 2 == 1  # not Ready, Ready again, next pod
            results.append(await run.flip(pod, ready))
            await asyncio.sleep(SPACING + random.uniform(0, JITTER))
        return results
    finally:
        await run.close()


# Reporting


def stats(label: str, values: list[float]) -> str:
    if not values:
        return f"{label:38} n=0"
    ms = [v * 1000 for v in values]
    return (
        f"{label:38} n={len(ms):3}  p50 {percentile(ms, 50):6.1f}  p95 {percentile(ms, 95):6.1f}  "
        f"p99 {percentile(ms, 99):6.1f}  max {max(ms):6.1f} ms"
    )


def report(results: list[Flip]) -> bool:
    """Print the figures; whether the target is met (no flip lost, p99 within TARGET_P99)."""
    done = [f for f in results if f.kernel is not None and f.pod_event is not None and f.slice_event is not None]
    lost = [f for f in results if f.kernel is None]
    end_to_end = [f.kernel - f.sent for f in done if f.kernel is not None]
    print(f"flips: {len(results)} ({sum(f.ready for f in results)} to Ready), reached the kernel: {len(done)}")
    print(stats("PATCH sent -> kernel (end to end)", end_to_end))
    for ready in (False, True):
        part = [f.kernel - f.sent for f in done if f.ready == ready and f.kernel is not None]
        print(stats(f"  of which to {'Ready' if ready else 'not Ready'}", part))
    stages: list[tuple[str, Callable[[Flip], float]]] = [
        ("PATCH sent -> answered", lambda f: f.answered - f.sent),
        ("PATCH sent -> pod Ready event", lambda f: (f.pod_event or 0) - f.sent),
        ("pod Ready event -> slice event", lambda f: (f.slice_event or 0) - (f.pod_event or 0)),
        ("slice event -> kernel", lambda f: (f.kernel or 0) - (f.slice_event or 0)),
        ("pod Ready event -> kernel", lambda f: (f.kernel or 0) - (f.pod_event or 0)),
    ]
    for label, stage in stages:
        print(stats(label, [stage(f) for f in done]))
    for f in lost:
        print(f"LOST: {f.pod} -> {'Ready' if f.ready else 'not Ready'}: pod event {f.pod_event is not None}, "
              f"slice event {f.slice_event is not None}, kernel {f.kernel is not None}")  # fmt: skip
    if not end_to_end:
        return False
    p99 = percentile(end_to_end, 99)
    met = not lost and p99 <= TARGET_P99
    print(f"target: PATCH sent -> kernel p99 <= {TARGET_P99 * 1000:.0f} ms — {'met' if met else 'MISSED'} "
          f"(p99 {p99 * 1000:.1f} ms, {len(lost)} lost)")  # fmt: skip
    return met


# Running it, and always cleaning up


def namespaces(cluster: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return sorted(n for line in out.splitlines() if (n := line.split(" ")[0]).startswith(f"tk-{cluster}."))


def pod_processes() -> list[int]:
    out = subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def wait_for_namespace(name: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SETUP_TIMEOUT
    while not Path(f"/run/netns/{name}").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"namespace {name} did not appear")
        time.sleep(0.05)


def clean_up(name: str, data_dir: Path, proc: subprocess.Popen[bytes] | None) -> list[str]:
    """SIGTERM to `up`; `tinykube down` if namespaces are left; our pod processes killed by pid. Returns what
    is still there."""
    if proc is not None:
        stop(proc)
    if namespaces(name):
        down = [*DOWN, "--name", name, "--data-dir", str(data_dir)]
        result = subprocess.run(down, capture_output=True, text=True, timeout=120, check=False)
        print(f"namespaces left after SIGTERM; tinykube down: exit {result.returncode} {result.stdout.strip()[:200]}")
    for pid in pod_processes():  # ours: the run's unique port
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    left = [f"namespace {n}" for n in namespaces(name)]
    left += [f"pod process {pid}" for pid in pod_processes()]
    return left


def _deadline(signum: int, frame: FrameType | None) -> None:
    raise Deadline(f"deadline of {DEADLINE} s reached")


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM (e.g. `timeout`) still runs the clean-up


def main(flips: int) -> int:
    if os.geteuid() != 0:
        print("readiness.py needs root (tinykube up --dataplane netns creates network namespaces)")
        return 1
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGALRM, _deadline)
    signal.alarm(DEADLINE)
    name = f"rb{os.getpid()}"
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; cluster {name}, "
          f"pod port {PORT}, {flips} flips over {PODS} pods")  # fmt: skip
    met = False
    with temporary_dir("tinykube-bench-readiness-") as tmp:
        data_dir = tmp / "c"
        bench: Bench | None = None
        monitor: Monitor | None = None
        try:
            args = ("--dataplane", "netns", "--nodes", "1", "--proxy-mode", "nftables", "--name", name)
            bench = start(*args, data_dir=data_dir)
            node_netns = f"tk-{name}.{NODE}"
            wait_for_namespace(node_netns, bench.proc)
            monitor = Monitor(node_netns)
            print(f"`tinykube up --dataplane netns --nodes 1`: ready after {bench.startup:.2f} s")
            results = asyncio.run(measure(bench, monitor, flips))
            met = report(results)
        except (Exception, KeyboardInterrupt) as err:  # report, then clean up below
            print(f"FAILED: {type(err).__name__}: {err}")
        finally:
            signal.alarm(0)
            if monitor is not None:
                monitor.close()
            left = clean_up(name, data_dir, bench.proc if bench is not None else None)
            if left:
                met = False
                print(f"FAILED: still there after clean-up: {left}")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; namespaces of {name} at exit: "
          f"{namespaces(name) or 'none'}")  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
