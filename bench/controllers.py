"""Endpoints / EndpointSlice controllers against real `tinykube up` processes (HTTPS, real etcd).

(1) Readiness flips: `tinykube up` (controllers in-process), S Services each selecting 10 pods (pods created through
    the API, status — Running, podIP, Ready — set with merge patches to `pods/status`). Once every Endpoints object
    lists its 10 addresses, watches are opened on endpoints and endpointslices and F random pods have their Ready
    condition flipped one at a time, 50 ms apart. Latency: from the status PATCH being *sent* to the watch event
    that shows the pod's address moved (Endpoints: addresses <-> notReadyAddresses; slice: conditions.ready).
(2) Cold start: `tinykube up --controllers namespace` (no endpoint controllers), N Services x 10 pods created, then
    `tinykube controllers --kubeconfig ...` started as a process of its own; time from its exec until the watches
    show every Service with correct Endpoints (10 ready addresses) and slices (10 ready endpoints, no duplicates).
    Then it is stopped and started again: once its CPU goes quiet, the write requests to endpoints/endpointslices
    (apiserver `/metrics`, any code) and the watch events in the namespace must both be 0.
(3) RSS (VmRSS, VmHWM) of the controllers process at that scale.

`python controllers.py [S for (1), default 1000] [N for (2), comma-separated, default 1000,2000] [flips, 200]`.
Exits 1 if a check fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, Connection, percentile, start, stop, temporary_dir

NS = "bench"
PODS_PER_SERVICE = 10
MERGE = "application/merge-patch+json"
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")
TICK = os.sysconf("SC_CLK_TCK")


def pod_ip(i: int) -> str:
    return f"10.{100 + i // 65536}.{(i // 256) % 256}.{i % 256}"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_patch(ip: str, ready: bool) -> bytes:
    cond = {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now_rfc3339()}
    return orjson.dumps({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "conditions": [cond]}})


async def populate(bench: Bench, services: int, concurrency: int = 32) -> float:
    """Namespace, `services` Services and 10 running, ready pods for each; returns the wall time."""
    began = time.monotonic()
    conns = [Connection(bench) for _ in range(concurrency)]
    try:
        await conns[0].request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
        for _ in range(200):  # the namespace must be visible before creating in it
            with contextlib.suppress(RuntimeError):
                await conns[0].request("GET", f"/api/v1/namespaces/{NS}")
                break
            await asyncio.sleep(0.05)

        async def worker(conn: Connection, jobs: Iterator[int], make: Callable[[Connection, int], Any]) -> None:
            for i in jobs:
                await make(conn, i)

        async def svc(conn: Connection, s: int) -> None:
            body = {
                "metadata": {"name": f"s{s:05d}"},
                "spec": {"selector": {"app": f"s{s:05d}"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
            }
            await conn.request("POST", f"/api/v1/namespaces/{NS}/services", orjson.dumps(body))

        async def pod(conn: Connection, i: int) -> None:
            name, app = f"p{i:06d}", f"s{i // PODS_PER_SERVICE:05d}"
            body = {
                "metadata": {"name": name, "labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 8080}]}]},
            }
            await conn.request("POST", f"/api/v1/namespaces/{NS}/pods", orjson.dumps(body))
            await conn.request(
                "PATCH", f"/api/v1/namespaces/{NS}/pods/{name}/status", status_patch(pod_ip(i), True), MERGE
            )

        jobs = iter(range(services))
        await asyncio.gather(*(worker(c, jobs, svc) for c in conns))
        jobs = iter(range(services * PODS_PER_SERVICE))
        await asyncio.gather(*(worker(c, jobs, pod) for c in conns))
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return time.monotonic() - began


class State:
    """What the watches have shown: per Endpoints object its ready/not-ready IPs, per slice its service and
    endpoints (ip -> ready), resourceVersions, and the number of events. Which Services are correct is kept up
    to date per event: re-checking 10,000 Services every 50 ms took most of a core from the cluster under test."""

    def __init__(self, services: int) -> None:
        self.want = {
            f"s{s:05d}": {pod_ip(s * PODS_PER_SERVICE + k) for k in range(PODS_PER_SERVICE)} for s in range(services)
        }
        self.endpoints: dict[str, tuple[set[str], set[str]]] = {}
        self.slices: dict[str, tuple[str, dict[str, bool]]] = {}
        self.slices_of: dict[str, set[str]] = {}  # service -> its slices' names
        self.endpoints_ok: set[str] = set()
        self.slices_ok: set[str] = set()
        self.versions: dict[tuple[str, str], str] = {}
        self.events = 0
        self.hooks: list[Callable[[str, Any, float], None]] = []

    def on_endpoints(self, event: dict[str, Any], t: float) -> None:
        obj = event["object"]
        if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
            return
        self.events += 1
        name = obj["metadata"]["name"]
        self.versions[("ep", name)] = obj["metadata"]["resourceVersion"]
        if event["type"] == "DELETED":
            self.endpoints.pop(name, None)
            self.endpoints_ok.discard(name)
            return
        ready, not_ready = set(), set()
        for subset in obj.get("subsets") or []:
            ready.update(a["ip"] for a in subset.get("addresses") or [])
            not_ready.update(a["ip"] for a in subset.get("notReadyAddresses") or [])
        self.endpoints[name] = (ready, not_ready)
        if name in self.want and (ready, not_ready) == (self.want[name], set()):
            self.endpoints_ok.add(name)
        else:
            self.endpoints_ok.discard(name)
        for hook in self.hooks:
            hook("ep", (name, ready, not_ready), t)

    def on_slice(self, event: dict[str, Any], t: float) -> None:
        obj = event["object"]
        if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
            return
        self.events += 1
        name = obj["metadata"]["name"]
        self.versions[("slice", name)] = obj["metadata"]["resourceVersion"]
        old = self.slices.pop(name, None)
        if old:
            self.slices_of[old[0]].discard(name)
            self._check_slices(old[0])
        if event["type"] == "DELETED":
            return
        svc = (obj["metadata"].get("labels") or {}).get("kubernetes.io/service-name", "")
        eps = {
            e["addresses"][0]: bool((e.get("conditions") or {}).get("ready"))
            for e in obj.get("endpoints") or []
            if e.get("addresses")
        }
        self.slices[name] = (svc, eps)
        self.slices_of.setdefault(svc, set()).add(name)
        self._check_slices(svc)
        for hook in self.hooks:
            hook("slice", (svc, eps), t)

    def _check_slices(self, svc: str) -> None:
        endpoints = [item for name in self.slices_of.get(svc, ()) for item in self.slices[name][1].items()]
        ips = self.want.get(svc)
        if ips is not None and len(endpoints) == len(ips) and {ip for ip, ready in endpoints if ready} == ips:
            self.slices_ok.add(svc)
        else:
            self.slices_ok.discard(svc)

    def correct(self) -> tuple[int, int]:
        """(Services whose Endpoints are right, Services whose slices are right)."""
        return len(self.endpoints_ok), len(self.slices_ok)


async def open_watches(bench: Bench, state: State) -> tuple[list[Connection], list[asyncio.Task[None]]]:
    conns = [Connection(bench) for _ in range(3)]
    paths = [f"/api/v1/namespaces/{NS}/endpoints", f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"]
    handlers = [state.on_endpoints, state.on_slice]
    tasks = []
    for conn, path, handler in zip(conns, paths, handlers, strict=False):
        listed = await conns[2].request("GET", path)
        for item in listed["items"]:
            handler({"type": "ADDED", "object": item}, time.monotonic())
        rv = listed["metadata"]["resourceVersion"]
        tasks.append(asyncio.create_task(conn.watch(f"{path}?watch=true&resourceVersion={rv}", handler)))
    return conns, tasks


async def close_watches(conns: list[Connection], tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(c.close() for c in conns))


async def wait_correct(state: State, services: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if state.correct() == (services, services):
            return True
        await asyncio.sleep(0.05)
    return False


# ---- (1) readiness flips ---------------------------------------------------------------------------------------


async def flips(bench: Bench, services: int, count: int) -> dict[str, Any]:
    setup = await populate(bench, services)
    state = State(services)
    conns, tasks = await open_watches(bench, state)
    try:
        converged = await wait_correct(state, services, 120)
        # pending flips: ip -> (sent, wanted ready)
        pending: dict[str, dict[str, tuple[float, bool]]] = {"ep": {}, "slice": {}}
        lat: dict[str, list[float]] = {"ep": [], "slice": []}

        def hook(kind: str, data: Any, t: float) -> None:
            waiting = pending[kind]
            if not waiting:
                return
            if kind == "ep":
                _, ready, not_ready = data
                seen = {ip: True for ip in ready} | {ip: False for ip in not_ready}
            else:
                seen = data[1]
            for ip in [ip for ip in waiting if ip in seen and seen[ip] == waiting[ip][1]]:
                lat[kind].append(t - waiting.pop(ip)[0])

        state.hooks.append(hook)
        ready = [True] * (services * PODS_PER_SERVICE)
        rng = random.Random(4)
        writer = Connection(bench)
        try:
            for _ in range(count):
                i = rng.randrange(len(ready))
                ready[i] = not ready[i]
                ip, path = pod_ip(i), f"/api/v1/namespaces/{NS}/pods/p{i:06d}/status"
                body = status_patch(ip, ready[i])
                sent = time.monotonic()
                pending["ep"][ip] = pending["slice"][ip] = (sent, ready[i])
                await writer.request("PATCH", path, body, MERGE)
                await asyncio.sleep(max(0.0, 0.05 - (time.monotonic() - sent)))
            deadline = time.monotonic() + 10
            while (pending["ep"] or pending["slice"]) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await writer.close()
    finally:
        await close_watches(conns, tasks)
    return {"setup": setup, "converged": converged, "lat": lat, "lost": {k: len(v) for k, v in pending.items()}}


# ---- (2) cold start and restart ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> tuple[float, float]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            values[line[:5]] = int(line.split()[1]) / 1024
    return values["VmRSS"], values["VmHWM"]


async def writes(bench: Bench) -> int:
    conn = Connection(bench)
    try:
        text = (await conn.request("GET", "/metrics")).decode()
    finally:
        await conn.close()
    pattern = r'apiserver_request_total\{verb="(\w+)",resource="(endpoints|endpointslices)",code="\d+"\} (\d+)'
    return sum(int(n) for verb, _, n in re.findall(pattern, text) if verb in WRITE_VERBS)


def start_controllers(bench: Bench, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tinykube.cli", "controllers", "--kubeconfig", str(bench.data_dir / "kubeconfig")]
    with log.open("ab") as out:
        # Beside `up`'s namespace controller, not a replica of it: no leader election between them.
        flags = ["--controllers", "endpoints,endpointslice", "--leader-elect=false"]
        return subprocess.Popen([*command, *flags], stdout=out, stderr=out)


async def quiet(pid: int, at_least: float, timeout: float) -> float:
    """Seconds until the process used < 0.05 s CPU in the last 2 s (and at least `at_least` s have passed)."""
    began = time.monotonic()
    samples = [(began, cpu_seconds(pid))]
    while time.monotonic() - began < timeout:
        await asyncio.sleep(0.25)
        now = time.monotonic()
        samples.append((now, cpu_seconds(pid)))
        old = [s for s in samples if s[0] <= now - 2]
        if now - began >= at_least and old and samples[-1][1] - old[-1][1] < 0.05:
            return now - began
    return float("nan")


async def cold_start(bench: Bench, services: int, log: Path) -> dict[str, Any]:
    setup = await populate(bench, services)
    state = State(services)
    conns, tasks = await open_watches(bench, state)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        before = await writes(bench)
        servers = bench.pids()  # the apiserver and etcd
        cpu_before = [cpu_seconds(pid) for pid in servers] + [time.process_time()]
        began = time.monotonic()
        procs.append(start_controllers(bench, log))
        converged = await wait_correct(state, services, 120)
        elapsed = time.monotonic() - began
        cpu = [cpu_seconds(procs[0].pid)] + [
            now - then
            for now, then in zip([cpu_seconds(pid) for pid in servers] + [time.process_time()], cpu_before, strict=True)
        ]
        first_writes = await writes(bench) - before
        await quiet(procs[0].pid, 0, 30)
        rss1 = rss_mb(procs[0].pid)
        stop(procs[0])
        versions, events, before = dict(state.versions), state.events, await writes(bench)
        began = time.monotonic()
        procs.append(start_controllers(bench, log))
        settled = await quiet(procs[1].pid, 5, 60)
        await asyncio.sleep(1)
        rss2 = rss_mb(procs[1].pid)
        rewrites = await writes(bench) - before
        changed = sum(1 for k, v in state.versions.items() if versions.get(k) != v)
        still = await wait_correct(state, services, 1)
        return {
            "setup": setup, "converged": converged, "elapsed": elapsed, "first_writes": first_writes, "cpu": cpu,
            "rss1": rss1, "rss2": rss2, "settled": settled, "rewrites": rewrites, "changed": changed,
            "events": state.events - events, "still": still,
        }  # fmt: skip
    finally:
        for proc in procs:
            stop(proc)
        await close_watches(conns, tasks)


def main(flip_services: int = 1000, cold: str = "1000,2000", count: int = 200) -> int:
    rows, failed = [], []
    with temporary_dir("tinykube-bench-controllers-") as workdir:
        if flip_services:
            # The pods' status is the bench's to set: no node agent, no scheduler binding them to one.
            bench = start("--nodes", "0", "--controllers", "*,-scheduler", data_dir=workdir / "flips")
            try:
                r = uvloop.run(flips(bench, flip_services, count))
            finally:
                stop(bench.proc)
            if not r["converged"]:
                failed.append("(1) Endpoints/slices never all correct before the flips")
            for kind, label in (("ep", "Endpoints"), ("slice", "EndpointSlice")):
                lat = [x * 1000 for x in r["lat"][kind]]
                if r["lost"][kind] or not lat:
                    failed.append(f"(1) {r['lost'][kind]} flips never seen in {label}")
                rows.append(
                    f"| readiness flip -> {label} watch event, {flip_services:,} Services x 10 pods, {len(lat)} flips "
                    f"| p50 {percentile(lat, 50):.1f} ms | p99 {percentile(lat, 99):.1f} ms, max {max(lat):.1f} ms "
                    f"(set-up {r['setup']:.0f} s) |"
                )
        for n in (int(x) for x in cold.split(",") if x):
            bench = start("--controllers", "namespace", "--nodes", "0", data_dir=workdir / f"cold{n}")
            try:
                r = uvloop.run(cold_start(bench, n, workdir / f"controllers-{n}.log"))
            finally:
                stop(bench.proc)
            if not r["converged"] or not r["still"]:
                failed.append(f"(2) {n} Services: not all correct")
            if r["rewrites"] or r["changed"] or r["events"]:
                failed.append(f"(2) {n} Services: restart wrote {r['rewrites']} / changed {r['changed']}")
            rows += [
                f"| cold start, {n:,} Services x 10 pods: exec to all Endpoints+slices correct | {r['elapsed']:.1f} s "
                f"| {r['first_writes']:,} writes (set-up {r['setup']:.0f} s); CPU s: controllers {r['cpu'][0]:.1f}, "
                f"apiserver {r['cpu'][1]:.1f}, etcd {r['cpu'][2]:.1f}, these watches {r['cpu'][3]:.1f} |",
                f"| restart, {n:,} Services: writes to endpoints/endpointslices | {r['rewrites']} "
                f"| {r['changed']} resourceVersions changed, {r['events']} watch events; "
                f"quiet after {r['settled']:.1f} s |",
                f"| controllers RSS, {n:,} Services x 10 pods | {r['rss1'][0]:.0f} MB (peak {r['rss1'][1]:.0f} MB) "
                f"| after restart {r['rss2'][0]:.0f} MB (peak {r['rss2'][1]:.0f} MB) |",
            ]
            print(rows[-3:], file=sys.stderr, flush=True)
    print("| benchmark | result | tail / checks |\n|---|---|---|")
    print("\n".join(rows))
    for problem in failed:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:4]
    sys.exit(main(*(int(a) if i != 1 else a for i, a in enumerate(args))))  # type: ignore[arg-type]
