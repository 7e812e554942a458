"""Flat cost per change: create 10,000 Services with kubectl in batches of 500 and time every batch.

    python scale.py                       # up --dataplane netns --nodes 2 (root), then the simulated dataplane
    python scale.py --dataplane none      # one of the two
    python scale.py --total 3000          # a shorter run

Each batch is one `kubectl create -f` of a List of 500 Services (ClusterIP, one port, a selector). Every 10th
Service has 10 ready endpoints behind it, given as an EndpointSlice of its own (the Service then has no selector):
10,000 pods would not fit two nodes (110 pods and a /24 of pod IPs each, as upstream's defaults), and a netns pod
is a namespace and a process. The proxies, DNS, the sandbox's load balancer and the garbage collector see every
one of those endpoints; the endpoint controllers see every Service.

Reported per batch: the wall time of `kubectl create` and the time after it until the cluster is idle again
(every process of the cluster under 5 % of a core for 0.5 s: the controllers, proxies and DNS have caught up).
Target: the last batch's create takes <= 1.25 x the first's, in the same run. CPU seconds per process over the run
come from /proc (the `up` process, etcd, and every kubectl together).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import Bench, start, temporary_dir

BACKED_EVERY = 10
ENDPOINTS = 10
IDLE_CPU = 0.05  # of a core
IDLE_WINDOW = 0.5  # seconds
SETTLE_LIMIT = 300.0


def cluster_pids(bench: Bench) -> dict[str, list[int]]:
    """The cluster's processes by role: `up` and its descendants (proxies' helpers, pod processes), and etcd."""
    etcd = set(bench.pids()[1:])
    tree = [bench.proc.pid]
    children = subprocess.run(["pgrep", "-d", " ", "-P", str(bench.proc.pid)], capture_output=True, text=True)
    tree += [int(p) for p in children.stdout.split() if int(p) not in etcd]
    return {"up": tree, "etcd": sorted(etcd)}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of the processes (those that have exited count no more)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def wait_idle(bench: Bench) -> float:
    """Seconds until every process of the cluster is idle (see the module docstring)."""
    began = time.monotonic()
    pids = [p for group in cluster_pids(bench).values() for p in group]
    before = cpu_seconds(pids)
    while time.monotonic() - began < SETTLE_LIMIT:
        time.sleep(IDLE_WINDOW)
        now = cpu_seconds(pids)
        if now - before < IDLE_CPU * IDLE_WINDOW:
            return time.monotonic() - began - IDLE_WINDOW
        before = now
    raise RuntimeError(f"the cluster did not become idle within {SETTLE_LIMIT:.0f} s")


def service(index: int, selector: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if selector:
        spec["selector"] = {"app": f"svc-{index}"}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{index}"}, "spec": spec}


def endpoint_slice(index: int, nodes: int) -> dict[str, Any]:
    endpoints = [
        {
            "addresses": [f"10.244.{(index * ENDPOINTS + i) // 250 % 250}.{(index * ENDPOINTS + i) % 250 + 2}"],
            "conditions": {"ready": True},
            "nodeName": f"node-{i % nodes + 1}",
        }
        for i in range(ENDPOINTS)
    ]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"svc-{index}-manual", "labels": {"kubernetes.io/service-name": f"svc-{index}"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    }


def batch(first: int, size: int, nodes: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for index in range(first, first + size):
        backed = index % BACKED_EVERY == 0
        items.append(service(index, selector=not backed))
        if backed:
            items.append(endpoint_slice(index, nodes))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run(dataplane: str, nodes: int, total: int, size: int, workdir: Path) -> dict[str, Any]:
    bench = start(
        "--dataplane",
        dataplane,
        "--nodes",
        str(nodes),
        "--name",
        f"scale{os.getpid() % 10000}",
        data_dir=workdir / dataplane,
    )
    kubeconfig = str(bench.data_dir / "kubeconfig")
    rows: list[tuple[int, float, float, float]] = []
    try:
        wait_idle(bench)
        pids = cluster_pids(bench)
        cpu_before = {role: cpu_seconds(group) for role, group in pids.items()}
        up_cpu = cpu_before["up"]
        kubectl_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for first in range(0, total, size):
            manifest = workdir / f"batch-{first}.json"
            manifest.write_text(json.dumps(batch(first, size, nodes)))
            began = time.perf_counter()
            subprocess.run(
                ["kubectl", "--kubeconfig", kubeconfig, "create", "-f", str(manifest), "-o", "name"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            created = time.perf_counter() - began
            settle = wait_idle(bench)
            # CPU of the `up` process for the batch: the cost of the changes themselves, whatever else the machine
            # is doing (wall time on a shared machine is not)
            now = cpu_seconds(cluster_pids(bench)["up"])
            spent, up_cpu = now - up_cpu, now
            rows.append((first + size, created, settle, spent))
            print(
                f"  {dataplane}: {first + size:>6} Services  create {created:6.2f} s  settle {settle:6.2f} s  "
                f"up CPU {spent:6.2f} s",
                flush=True,
            )
        pids = cluster_pids(bench)  # pod processes may have come since
        cpu = {role: cpu_seconds(group) - cpu_before.get(role, 0.0) for role, group in pids.items()}
        kubectl_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu["kubectl"] = (kubectl_after.ru_utime + kubectl_after.ru_stime) - (
            kubectl_before.ru_utime + kubectl_before.ru_stime
        )
        with bench.client() as client:
            served = len(client.get("/api/v1/namespaces/default/services").json()["items"])
    finally:
        bench.stop()
    return {"rows": rows, "cpu": cpu, "served": served}


def report(dataplane: str, result: dict[str, Any], total: int) -> bool:
    rows = result["rows"]
    first, last = rows[0][1], rows[-1][1]
    ratio = last / first
    creates = [row[1] for row in rows]
    steady = statistics.median(creates[-3:]) / statistics.median(creates[:3])  # less at the mercy of one noisy batch
    spent = [row[3] for row in rows]
    print(f"\n{dataplane}: batch | Services after | create s | settle s | up CPU s")
    for i, (count, created, settle, cpu) in enumerate(rows, 1):
        print(f"  {i:>3} | {count:>6} | {created:6.2f} | {settle:6.2f} | {cpu:6.2f}")
    print(
        f"  last / first create: {ratio:.2f} (target <= 1.25); median of the last 3 / first 3: {steady:.2f}\n"
        f"  up CPU per batch, median of the last 3 / first 3: "
        f"{statistics.median(spent[-3:]) / statistics.median(spent[:3]):.2f}\n"
        f"  total create {sum(r[1] for r in rows):.1f} s, settle {sum(r[2] for r in rows):.1f} s"
    )
    print("  CPU seconds over the run: " + ", ".join(f"{k} {v:.1f}" for k, v in result["cpu"].items()))
    served = result["served"]
    print(f"  Services in default at the end: {served} (expected {total + 1}, with `kubernetes`)")
    return ratio <= 1.25


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataplane", choices=["netns", "none", "both"], default="both")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--total", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    planes = ["netns", "none"] if args.dataplane == "both" else [args.dataplane]
    met = True
    with temporary_dir("tinykube-scale-") as workdir:
        for dataplane in planes:
            result = run(dataplane, args.nodes, args.total, args.batch, workdir)
            met = report(dataplane, result, args.total) and met
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
