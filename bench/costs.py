"""The apiserver's CPU per request, by kind of request, against a reference tree in the same run: where the
time per pod of `nodes.py` goes, one request type at a time.

    python costs.py [N, default 2000] [REFERENCE_TREE]

Each tree gets a fresh `tinykube up --nodes 0`; 16 connections then send N of each request in turn — Event
creates, ConfigMap creates, Pod creates (bound to a node that does not exist, so nothing schedules or runs them)
and Pod status patches (strategic merge, as the kubelet writes them) — and the CPU time of tinykube's process and
of its etcd over each phase is divided by N. With REFERENCE_TREE (`git worktree add /tmp/old <commit>`), the
reference tree runs the same phases (on PYTHONPATH) after this one; a kind the reference does not serve is left out.
"""

from __future__ import annotations

import asyncio
import compileall
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import psutil
import uvloop
from common import Connection, start

HERE = Path(__file__).resolve().parent.parent
CONCURRENCY = 16
NS = "/api/v1/namespaces/bench"
Request = tuple[str, str, bytes, str]


def event(i: int) -> Request:
    body = {
        "metadata": {"name": f"e{i}"},
        "involvedObject": {"kind": "Pod", "namespace": "bench", "name": f"p{i}", "apiVersion": "v1"},
        "reason": "Pulled",
        "message": 'Container image "nginx" already present on machine',
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "count": 1,
        "firstTimestamp": "2026-12-03T00:00:00Z",
        "lastTimestamp": "2026-12-03T00:00:00Z",
    }
    return "POST", f"{NS}/events", orjson.dumps(body), "application/json"


def configmap(i: int) -> Request:
    return (
        "POST",
        f"{NS}/configmaps",
        orjson.dumps({"metadata": {"name": f"c{i}"}, "data": {"a": "b"}}),
        "application/json",
    )


def pod(i: int) -> Request:
    spec = {"nodeName": "ghost", "containers": [{"name": "c", "image": "nginx"}]}
    return "POST", f"{NS}/pods", orjson.dumps({"metadata": {"name": f"p{i}"}, "spec": spec}), "application/json"


def pod_status(i: int) -> Request:
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}],
        "podIP": "10.244.0.9",
        "startTime": "2026-12-03T00:00:00Z",
        "containerStatuses": [
            {
                "name": "c",
                "ready": True,
                "restartCount": 0,
                "image": "nginx",
                "imageID": "docker-pullable://nginx",
                "state": {"running": {"startedAt": "2026-12-03T00:00:00Z"}},
            }
        ],
    }
    body = orjson.dumps({"status": status})
    return "PATCH", f"{NS}/pods/p{i}/status", body, "application/strategic-merge-patch+json"


PHASES: dict[str, Callable[[int], Request]] = {
    "create Event": event,
    "create ConfigMap": configmap,
    "create Pod": pod,
    "patch Pod status": pod_status,
}


async def measure(n: int) -> dict[str, tuple[float, float, float]]:
    """phase -> (requests/s, tinykube µs per request, etcd µs per request)."""
    bench = start("--nodes", "0")
    results: dict[str, tuple[float, float, float]] = {}
    try:
        apiserver = psutil.Process(bench.proc.pid)
        etcd = apiserver.children(recursive=True)
        admin = Connection(bench)
        await admin.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": "bench"}}))
        conns = [Connection(bench) for _ in range(CONCURRENCY)]
        for name, make in PHASES.items():
            jobs = iter(range(n))
            await asyncio.sleep(1)  # what the last phase set off settles
            cpu0, etcd0, began = _cpu([apiserver]), _cpu(etcd), time.monotonic()
            try:
                await asyncio.gather(*(send(c, make, jobs) for c in conns))
            except RuntimeError as err:  # a kind this tree does not serve
                print(f"  {name}: {str(err)[:100]}")
                continue
            took = time.monotonic() - began
            results[name] = (n / took, 1e6 * (_cpu([apiserver]) - cpu0) / n, 1e6 * (_cpu(etcd) - etcd0) / n)
        await asyncio.gather(*(c.close() for c in [admin, *conns]))
    finally:
        bench.stop()
    return results


async def send(conn: Connection, make: Callable[[int], Request], jobs: Iterator[int]) -> None:
    """Send the requests `make` makes, for the numbers the senders share in `jobs`."""
    for i in jobs:
        method, path, body, ctype = make(i)
        await conn.request(method, path, body, ctype)


def _cpu(processes: list[psutil.Process]) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in processes)


def main(n: int, reference: Path | None) -> None:
    trees = {"this tree": HERE, "reference": reference} if reference else {"this tree": HERE}
    for label, tree in trees.items():
        compileall.compile_dir(tree / "tinykube", quiet=1)
        os.environ["PYTHONPATH"] = str(tree)
        print(f"{label} ({tree}), {n} requests of each kind, {CONCURRENCY} connections:")
        for name, (rate, cpu, etcd_cpu) in uvloop.run(measure(n)).items():
            print(f"  {name:18s} {rate:7.0f}/s   tinykube {cpu:6.0f} µs/request   etcd {etcd_cpu:5.0f} µs/request")


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    main(count, Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None)
