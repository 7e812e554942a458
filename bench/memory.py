"""Memory per object: the RSS of `tinykube up` at rest, empty and then with 10,000 two-port Services, against a
reference tree in the same run.

    python memory.py [SERVICES, default 10000] [REFERENCE_TREE]

Each tree gets a fresh `tinykube up --nodes 2` (the default simulated dataplane: the controllers, DNS and the two
nodes' proxies see every Service). The RSS of the `up` process is read once it is at rest after start-up (under
5 % of a core for 2 s), then 16 connections create the Services (ClusterIP, ports 80 and 443, a selector that
matches no pod), and the RSS is read again once the cluster is at rest. etcd's RSS is reported beside it, not in
it. With REFERENCE_TREE (`git worktree add /tmp/old <commit>`) the reference runs the same steps (on PYTHONPATH)
after this tree. Target (the scale issue): `up` with 10,000 Services at most 200 MB.
"""

from __future__ import annotations

import asyncio
import compileall
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import uvloop
from common import Connection, start

HERE = Path(__file__).resolve().parent.parent
CONCURRENCY = 16
TARGET_MB = 200


def service(i: int) -> bytes:
    ports = [
        {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
        {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"},
    ]
    return orjson.dumps({"metadata": {"name": f"s{i}"}, "spec": {"selector": {"app": f"a{i}"}, "ports": ports}})


async def send(conn: Connection, jobs: Iterator[int]) -> None:
    for i in jobs:
        await conn.request("POST", "/api/v1/namespaces/bench/services", service(i))


def at_rest(process: psutil.Process, quiet_seconds: float = 2.0, timeout: float = 300.0) -> None:
    """Wait until `process` has used under 5 % of a core for `quiet_seconds` (the components have caught up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = sum(process.cpu_times()[:2])
        time.sleep(quiet_seconds)
        if sum(process.cpu_times()[:2]) - before < 0.05 * quiet_seconds:
            return
    raise RuntimeError("the cluster did not come to rest")


def rss_mb(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


async def measure(services: int) -> tuple[float, float, float, float]:
    """(idle RSS, RSS with the Services, etcd's RSS with them, creates/s)."""
    bench = start("--nodes", "2")
    try:
        up = psutil.Process(bench.proc.pid)
        etcd = up.children(recursive=True)
        at_rest(up)
        idle = rss_mb(up)
        admin = Connection(bench)
        await admin.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": "bench"}}))
        conns = [Connection(bench) for _ in range(CONCURRENCY)]
        jobs = iter(range(services))
        began = time.monotonic()
        await asyncio.gather(*(send(c, jobs) for c in conns))
        rate = services / (time.monotonic() - began)
        await asyncio.gather(*(c.close() for c in [admin, *conns]))
        at_rest(up)
        return idle, rss_mb(up), sum(rss_mb(p) for p in etcd), rate
    finally:
        bench.stop()


def main(services: int, reference: Path | None) -> int:
    trees = {"this tree": HERE, "reference": reference} if reference else {"this tree": HERE}
    missed = False
    for label, tree in trees.items():
        compileall.compile_dir(tree / "tinykube", quiet=1)
        os.environ["PYTHONPATH"] = str(tree)
        idle, full, etcd, rate = uvloop.run(measure(services))
        per = 1024 * (full - idle) / services
        print(
            f"{label} ({tree}): up {idle:.0f} MB at rest, {full:.0f} MB with {services} two-port Services "
            f"({per:.1f} KB each); etcd {etcd:.0f} MB; {rate:.0f} creates/s"
        )
        if label == "this tree" and services >= 10000 and full > TARGET_MB:
            missed = True
    print(f"target: up with 10,000 Services <= {TARGET_MB} MB — {'NOT met' if missed else 'met'}")
    return 1 if missed else 0


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    sys.exit(main(count, Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None))
