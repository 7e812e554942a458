"""Simulated nodes: N pods created through the API until every one is Running and Ready.

`tinykube up --nodes K` (scheduler, node IPAM and K node agents with the simulated runtime in the same process);
one watch on pods from the list's resourceVersion, then N pods created by 32 connections. Time from the first create
being sent to the watch event that shows the last pod Running with `Ready=True`; also when the last create returned.

`python nodes.py [pods, default 1000] [nodes, default 10: 110 pods each, as the kubelet's max-pods]`.
Exits 1 if the target (all Ready within 10 s) is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

import orjson
import uvloop
from common import Connection, start

NS = "bench"
TARGET_SECONDS = 10.0
CONCURRENCY = 32


def ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


async def run(pods: int, nodes: int) -> int:
    bench = start("--nodes", str(nodes))
    try:
        admin = Connection(bench)
        await admin.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
        listing = await admin.request("GET", f"/api/v1/namespaces/{NS}/pods")
        version = listing["metadata"]["resourceVersion"]
        seen_ready: dict[str, float] = {}
        all_ready = asyncio.Event()

        def on_event(event: dict[str, Any], at: float) -> None:
            obj = event["object"]
            if event["type"] in ("ADDED", "MODIFIED") and ready(obj):
                seen_ready.setdefault(obj["metadata"]["name"], at)
                if len(seen_ready) == pods:
                    all_ready.set()

        watcher = Connection(bench)
        watch = asyncio.create_task(
            watcher.watch(f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={version}", on_event)
        )
        conns = [Connection(bench) for _ in range(CONCURRENCY)]
        jobs = iter(range(pods))

        async def creator(conn: Connection) -> None:
            for i in jobs:
                body = {"metadata": {"name": f"p{i:05d}"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
                await conn.request("POST", f"/api/v1/namespaces/{NS}/pods", orjson.dumps(body))

        began = time.monotonic()
        await asyncio.gather(*(creator(c) for c in conns))
        created = time.monotonic() - began
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_ready.wait(), 120)
        done = max(seen_ready.values()) - began if len(seen_ready) == pods else float("inf")
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in [admin, watcher, *conns]))
        print(f"{pods} pods on {nodes} simulated nodes: all created after {created:.2f} s,", end=" ")
        print(f"all Running and Ready after {done:.2f} s")
        met = done <= TARGET_SECONDS
        print(f"target: all Ready within {TARGET_SECONDS:.0f} s — {'met' if met else 'NOT met'}")
        return 0 if met else 1
    finally:
        bench.stop()


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    node_count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    sys.exit(uvloop.run(run(count, node_count)))
