"""Apiserver throughput and latency against a real `tinykube up` (HTTPS, bearer token, real etcd).

Load generators: `wrk` (C, from Debian's package) for GET and create, so the client is not the bottleneck;
httpx for LIST; for the 100 watchers, the minimal asyncio client of common.py (httpx's CPU per streamed event
made the watchers' processes, not the apiserver, the slow part). Watch latency is measured from just before the
write is sent to each watcher's receipt, so it includes the write itself: an upper bound on delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import re
import shutil
import ssl
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import uvloop
from common import Bench, Connection, env_with, percentile, start

HERE = Path(__file__).parent


def wrk(
    bench: Bench, path: str, *, connections: int, seconds: int, script: str | None = None, **env: str
) -> tuple[float, str]:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-H", f"Authorization: Bearer {bench.token}"]
    if script:
        cmd += ["-s", str(HERE / script)]
    out = subprocess.run([*cmd, bench.server + path], capture_output=True, text=True, env=env_with(**env)).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"wrk saw {errors.group(1)} failed requests")
    return rate, p99


def bench_get(bench: Bench) -> str:
    with bench.client() as c:
        c.post("/api/v1/namespaces/default/endpoints", json={"metadata": {"name": "bench-get"}})
    rate, p99 = wrk(bench, "/api/v1/namespaces/default/endpoints/bench-get", connections=8, seconds=10)
    return f"| single-object GET, 8 connections | {rate:,.0f}/s | p99 {p99} | >= 5,000/s, p99 <= 5 ms |"


def bench_create(bench: Bench) -> str:
    with bench.client() as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": "bench-create"}})
    rate, p99 = wrk(bench, "/", connections=16, seconds=10, script="create.lua", WRK_NS="bench-create")
    return f"| create Endpoints, 16 concurrent clients | {rate:,.0f}/s | p99 {p99} | >= 1,500/s |"


async def _fill(bench: Bench, namespace: str, count: int) -> None:
    ctx = ssl.create_default_context(cafile=str(bench.ca))
    headers = {"Authorization": f"Bearer {bench.token}"}
    async with httpx.AsyncClient(base_url=bench.server, verify=ctx, headers=headers, timeout=60) as c:
        await c.post("/api/v1/namespaces", json={"metadata": {"name": namespace}})
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with sem:
                body = {
                    "metadata": {"name": f"svc-{i:05d}", "labels": {"app": f"a{i % 10}"}},
                    "subsets": [
                        {
                            "addresses": [{"ip": f"10.244.{i // 250}.{i % 250 + 1}"}],
                            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                        }
                    ],
                }
                r = await c.post(f"/api/v1/namespaces/{namespace}/endpoints", json=body)
                r.raise_for_status()

        await asyncio.gather(*(one(i) for i in range(count)))


def bench_list(bench: Bench, count: int = 10_000) -> str:
    asyncio.run(_fill(bench, "bench-list", count))
    times = []
    with bench.client() as c:
        for _ in range(20):
            began = time.perf_counter()
            r = c.get("/api/v1/namespaces/bench-list/endpoints")
            times.append(time.perf_counter() - began)
            assert len(r.json()["items"]) == count
    return (
        f"| LIST of {count:,} Endpoints (~{len(r.content) / 1e6:.1f} MB) | median "
        f"{statistics.median(times) * 1000:.0f} ms | max {max(times) * 1000:.0f} ms | <= 200 ms |"
    )


class _AllSeen(Exception):
    """Ends a watcher's stream once it has seen every write."""


async def _watchers(bench: Bench, count: int, writes: int, rv: str, ready: Any, out: Any) -> None:
    """`count` watch streams in this process; each reports (seq, receipt time) for every MODIFIED event."""
    path = f"/api/v1/namespaces/default/endpoints?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3Dfanout"

    async def watch() -> list[tuple[int, float]]:
        seen: list[tuple[int, float]] = []
        connection = Connection(bench)

        def on_event(event: dict[str, Any], received: float) -> None:
            if event["type"] == "MODIFIED":
                seen.append((int(event["object"]["metadata"]["annotations"]["seq"]), received))
                if len(seen) == writes:
                    raise _AllSeen

        with contextlib.suppress(_AllSeen):
            await connection.watch(path, on_event, started=ready.release)
        await connection.close()
        return seen

    for result in await asyncio.gather(*(watch() for _ in range(count))):
        out.put(result)


def _watcher_process(bench: Bench, count: int, writes: int, rv: str, ready: Any, out: Any) -> None:
    uvloop.run(_watchers(bench, count, writes, rv, ready, out))


def bench_watch(bench: Bench, watchers: int = 100, writes: int = 50, processes: int = 4) -> str:
    """Watchers spread over client processes so the clients are not the bottleneck; times are CLOCK_MONOTONIC,
    shared by all processes. Latency = watcher receipt - moment the write was sent (includes the write itself)."""
    url = "/api/v1/namespaces/default/endpoints"
    with bench.client() as c:
        rv = c.post(url, json={"metadata": {"name": "fanout"}}).json()["metadata"]["resourceVersion"]
        ready, out = multiprocessing.Semaphore(0), multiprocessing.Queue()
        per = watchers // processes
        procs = [
            multiprocessing.Process(target=_watcher_process, args=(bench, per, writes, rv, ready, out))
            for _ in range(processes)
        ]
        for proc in procs:
            proc.start()
        for _ in range(per * processes):
            ready.acquire(timeout=60)
        time.sleep(0.5)
        sent, write_times = {}, []
        for i in range(writes):
            sent[i] = time.monotonic()
            patch = {"metadata": {"annotations": {"seq": str(i)}}}
            c.patch(f"{url}/fanout", json=patch, headers={"Content-Type": "application/merge-patch+json"})
            write_times.append(time.monotonic() - sent[i])
            time.sleep(0.05)
        latencies = []
        for _ in range(per * processes):
            latencies += [received - sent[seq] for seq, received in out.get(timeout=120)]
        for proc in procs:
            proc.join(30)
    p50, p99 = percentile(latencies, 50) * 1000, percentile(latencies, 99) * 1000
    write_p50 = percentile(write_times, 50) * 1000
    return (
        f"| one write to {per * processes} watchers ({writes} writes; the write itself p50 {write_p50:.1f} ms) "
        f"| p50 {p50:.1f} ms | p99 {p99:.1f} ms | p99 <= 10 ms |"
    )


def main() -> None:
    if not shutil.which("wrk"):
        raise SystemExit("bench/api.py needs wrk (apt-get install wrk)")
    bench = start()
    try:
        rows = [bench_get(bench), bench_create(bench), bench_list(bench), bench_watch(bench)]
    finally:
        bench.stop()
    print("| benchmark | result | tail | target |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
