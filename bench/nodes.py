"""Simulated nodes: N pods created through the API until every one is Running and Ready.

`tinykube up --nodes K` (scheduler, node IPAM and K node agents with the simulated runtime in the same process);
one watch on pods from the list's resourceVersion, then N pods created by 32 connections. Time from the first create
being sent to the watch event that shows the last pod Running with `Ready=True`; also when the last create returned.

Before the first create, the bench waits for every node to be Ready and reports how long after `up` was started
that was (kwok's CI asks 5,000 nodes Ready within 60 s; issue 30 asks 30 s), and the RSS then.

`python nodes.py [pods, default 1000] [nodes, default 10: 110 pods each, as the kubelet's max-pods]
[REFERENCE_TREE [ROUNDS, default 2]]`. With REFERENCE_TREE (`git worktree add /tmp/old <commit>`), this tree and the
reference (on PYTHONPATH) alternate, ROUNDS times each: the reference measured in the same run.
Exits 1 if a target is missed: all pods Ready within 10 s (up to 1,000 pods) or 30 s (more), and with 1,000 nodes
or more, all nodes Ready within 30 s of `up`.
"""

from __future__ import annotations

import asyncio
import compileall
import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, Connection, start

NS = "bench"
HERE = Path(__file__).resolve().parent.parent
NODES_TARGET_SECONDS = 30.0  # from `up` to every node Ready, for 1,000 nodes or more
CONCURRENCY = 32


def condition_ready(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def ready(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition_ready(pod)


async def created_events(bench: Bench) -> int:
    """Events created so far, by the apiserver's request counter (a LIST of every event would load the cluster).
    A connection of its own each time: one left idle while the pods started may have been closed by the server."""
    conn = Connection(bench)
    try:
        text = (await conn.exchange("GET", "/metrics"))[1]
    finally:
        await conn.close()
    pattern = re.compile(r'^apiserver_request_total\{(?=[^}]*verb="POST")(?=[^}]*resource="events")(?=[^}]*code="201")')
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.decode().splitlines() if pattern.match(line))


async def kubelet_events_written(bench: Bench, pods: int, last_ready: float) -> float | None:
    """Seconds from the last pod Ready until at least the kubelets' three events per pod (Pulled, Created, Started)
    were created; None if no more came for 10 s (a tree that writes fewer, as the reference may)."""
    seen, progress = -1, time.monotonic()
    while time.monotonic() - progress < 10:
        created = await created_events(bench)
        if created >= 3 * pods:
            return max(0.0, time.monotonic() - last_ready)
        if created > seen:
            seen, progress = created, time.monotonic()
        await asyncio.sleep(0.5)
    return None


async def all_nodes_ready(bench: Bench, count: int) -> None:
    """Return once `count` nodes are Ready: one list, then a watch from its resourceVersion."""
    admin = Connection(bench)
    listing = await admin.request("GET", "/api/v1/nodes")
    await admin.close()
    ready = {n["metadata"]["name"] for n in listing["items"] if condition_ready(n)}
    if len(ready) >= count:
        return
    done = asyncio.Event()

    def on_event(event: dict[str, Any], _at: float) -> None:
        if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
            return
        node = event["object"]
        if event["type"] != "DELETED" and condition_ready(node):
            ready.add(node["metadata"]["name"])
        else:
            ready.discard(node["metadata"]["name"])
        if len(ready) >= count:
            done.set()

    watcher = Connection(bench)
    version = listing["metadata"]["resourceVersion"]
    watch = asyncio.create_task(watcher.watch(f"/api/v1/nodes?watch=true&resourceVersion={version}", on_event))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 180)
    watch.cancel()
    await asyncio.gather(watch, return_exceptions=True)
    await watcher.close()
    if len(ready) < count:
        raise RuntimeError(f"only {len(ready)} of {count} nodes Ready 180 s after /readyz")


async def run(pods: int, nodes: int) -> int:
    wide = ["--cluster-cidr", "10.128.0.0/11"] if nodes > 256 else []  # a /24 of pod IPs for each node
    launched = time.monotonic()
    bench = start("--nodes", str(nodes), *wide)
    try:
        await all_nodes_ready(bench, nodes)
        nodes_after = time.monotonic() - launched
        nodes_met = nodes < 1000 or nodes_after <= NODES_TARGET_SECONDS
        print(f"{nodes} nodes Ready {nodes_after:.2f} s after `up` was started", end=" ")
        print(f"(/readyz after {bench.startup:.2f} s), RSS then (tinykube + etcd) {bench.rss_mb():.0f} MB")
        admin = Connection(bench)
        await admin.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
        served = {r["name"] for r in (await admin.request("GET", "/api/v1"))["resources"]}
        while "serviceaccounts" in served:  # pods are refused until the namespace's default ServiceAccount exists
            # (as upstream's e2e waits); an older reference tree serves no ServiceAccounts
            try:
                await admin.request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default")
                break
            except RuntimeError:
                await asyncio.sleep(0.05)
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
        events_after = await kubelet_events_written(bench, pods, began + done) if done < float("inf") else None
        await asyncio.gather(*(c.close() for c in [admin, watcher, *conns]))
        print(f"{pods} pods on {nodes} simulated nodes: all created after {created:.2f} s,", end=" ")
        print(f"all Running and Ready after {done:.2f} s; RSS then (tinykube + etcd) {bench.rss_mb():.0f} MB")
        if len(seen_ready) < pods:
            print(f"only {len(seen_ready)} Ready 120 s after the last create")
        if events_after is not None:  # events are written behind the pods' own writes: when they were all there
            print(f"the kubelets' events (3 per pod) all written {events_after:.1f} s after the last pod was Ready")
        times = sorted(seen_ready.values())
        if len(times) == pods >= 2000:  # flat: the last thousand take no longer each than the first thousand
            first, last = times[999] - times[0], times[-1] - times[-1000]
            print(f"first 1,000 Ready in {first:.2f} s, last 1,000 in {last:.2f} s ({last / first:.2f}x)")
        target = 10.0 if pods <= 1000 else 30.0
        met = done <= target
        print(f"target: all pods Ready within {target:.0f} s — {'met' if met else 'NOT met'}", end="")
        if nodes >= 1000:
            verdict = "met" if nodes_met else "NOT met"
            print(f"; all nodes Ready within {NODES_TARGET_SECONDS:.0f} s — {verdict}", end="")
        print()
        return 0 if met and nodes_met else 1
    finally:
        bench.stop()


def main(pods: int, nodes: int, reference: Path | None, rounds: int) -> int:
    if reference is None:
        return uvloop.run(run(pods, nodes))
    missed = 0
    for tree in (HERE, reference):
        compileall.compile_dir(tree / "tinykube", quiet=1)
    for _ in range(rounds):
        for label, tree in (("this tree", HERE), ("reference", reference)):
            os.environ["PYTHONPATH"] = str(tree)
            print(f"{label} ({tree}):", end=" ")
            code = uvloop.run(run(pods, nodes))
            if tree == HERE:  # the target is this tree's; the reference's result is only reported
                missed |= code
    return missed


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    node_count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    ref = Path(sys.argv[3]).resolve() if len(sys.argv) > 3 else None
    sys.exit(main(count, node_count, ref, int(sys.argv[4]) if len(sys.argv) > 4 else 2))
