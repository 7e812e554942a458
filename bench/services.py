"""Service creates with ClusterIP/NodePort allocation against real `tinykube up` processes (HTTPS, real etcd).

(a) Sustained creates: `wrk` (16 connections, 2 threads) POSTs Services with unique names to one apiserver with a
    /12 service range, alternating with rounds of Endpoints creates (no allocation; the same `create.lua` as
    `api.py`) so the allocation overhead can be read off the same run on a noisy machine.
(b) Two apiservers on one etcd: 64 creators (32 per apiserver, in two client processes) make 5,000 Services, half of
    them NodePort. Then every Service is listed and checked: no clusterIP or nodePort held twice, and the
    allocations — as each apiserver's `/debug/allocations` reports them and as the keys in etcd hold them — are
    exactly the values the Services use, held by those Services (none leaked, none missing).

Exits non-zero when a check fails or a create failed. `python services.py [seconds per wrk run] [rounds of (a)]
[alone]` (`alone`: (a) against the apiserver without the controllers, DNS and node agent `tinykube up` runs beside it).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, Connection, env_with, percentile, start, stop, temporary_dir

from tinykube.store.etcd import EtcdStore
from tinykube.store.launcher import EtcdProcess, find_etcd

HERE = Path(__file__).parent
CLUSTER_IP_RANGE = "10.96.0.0/12"
NODE_PORT_RANGE = "20000-32767"
NAMES = ("a", "b")  # the two apiservers of (b)
KINDS = {"clusterips": "ClusterIP", "nodeports": "NodePort", "loadbalancerips": "LoadBalancerIP"}

# what create.lua adds to each body to make it a Service
SERVICE_SPEC = '"spec":{"ports":[{"port":80}]}'


# ---- (a) sustained creates with wrk ----------------------------------------------------------------------------


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def wrk_creates(bench: Bench, namespace: str, seconds: int, **env: str) -> dict[str, float]:
    """Creates/s, p50/p99 in ms and the number of responses that were not 2xx, for one wrk run."""
    with bench.client() as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).raise_for_status()
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-H", f"Authorization: Bearer {bench.token}"]
    out = subprocess.run(
        [*cmd, "-s", str(HERE / "create.lua"), bench.server + "/"],
        capture_output=True,
        text=True,
        env=env_with(WRK_NS=namespace, **env),
    ).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rate": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        # anchored: a stdev column such as "72.50%" must not be read as the 50th percentile
        "p50": _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),  # type: ignore[union-attr]
        "p99": _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),  # type: ignore[union-attr]
        "errors": float(errors.group(1)) if errors else 0.0,
    }


def sustained(seconds: int, rounds: int, workdir: Path, *extra: str) -> tuple[list[str], list[str]]:
    """Rounds of Endpoints then Services creates on one apiserver; returns table rows and failed checks."""
    bench = start("--service-cluster-ip-range", CLUSTER_IP_RANGE, *extra, data_dir=workdir / "alloc")
    runs: dict[str, list[dict[str, float]]] = {"Endpoints": [], "Services": []}
    try:
        for r in range(rounds):
            runs["Endpoints"].append(wrk_creates(bench, f"bench-ep-{r}", seconds))
            services_env = {"WRK_RESOURCE": "services", "WRK_SPEC": SERVICE_SPEC}
            runs["Services"].append(wrk_creates(bench, f"bench-svc-{r}", seconds, **services_env))
        services, reports = _settled([bench], None, time.monotonic() + 30)
    finally:
        stop(bench.proc)
    failed = [
        f"(a) {kind}: {run['errors']:.0f} failed creates" for kind, rs in runs.items() for run in rs if run["errors"]
    ]
    problems = _check(services, reports)
    failed += [f"(a) {p}" for p in problems]
    rows = []
    for i in range(rounds):
        for kind in ("Endpoints", "Services"):
            run = runs[kind][i]
            rows.append(
                f"| create {kind}, 16 connections, {seconds} s (round {i + 1}) | {run['rate']:,.0f}/s "
                f"| p50 {run['p50']:.1f} ms, p99 {run['p99']:.1f} ms |"
            )
    svc, ep = (statistics.median(run["rate"] for run in runs[k]) for k in ("Services", "Endpoints"))
    rows.append(
        f"| Services / Endpoints (median rates) | {svc / ep:.0%} | {len(services):,} Services, "
        f"{'checks passed' if not problems else '; '.join(problems)} |"
    )
    return rows, failed


# ---- (b) two apiservers, one etcd ----------------------------------------------------------------------------


def service(name: str, node_port: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    if node_port:
        spec["type"] = "NodePort"
    return {"metadata": {"name": name}, "spec": spec}


async def _creators(bench: Bench, prefix: str, count: int, concurrency: int, ready: Any, go: Any) -> dict[str, Any]:
    """`concurrency` creators on their own connections, opened (TLS handshake and all) before the start signal."""
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    todo = iter(range(count))
    url = "/api/v1/namespaces/bench-alloc/services"
    connections = [Connection(bench) for _ in range(concurrency)]

    async def creator(connection: Connection) -> None:
        for i in todo:
            body = orjson.dumps(service(f"{prefix}-{i:05d}", node_port=i % 2 == 1))
            began = time.monotonic()
            status, _ = await connection.exchange("POST", url, body)
            latencies.append(time.monotonic() - began)
            codes[status] += 1

    try:
        await asyncio.gather(*(c.exchange("GET", "/readyz") for c in connections))
        ready.release()
        await asyncio.to_thread(go.wait)
        began = time.monotonic()
        await asyncio.gather(*(creator(c) for c in connections))
        ended = time.monotonic()
    finally:
        await asyncio.gather(*(c.close() for c in connections))
    return {"latencies": latencies, "codes": dict(codes), "began": began, "ended": ended}


def _creator_process(bench: Bench, prefix: str, count: int, concurrency: int, sync: tuple[Any, Any, Any]) -> None:
    ready, go, out = sync
    out.put(uvloop.run(_creators(bench, prefix, count, concurrency, ready, go)))


def _values(svc: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, value) of every allocation a Service holds: its clusterIPs and nodePorts (each port number once)."""
    spec = svc.get("spec") or {}
    ips = [("ClusterIP", ip) for ip in spec.get("clusterIPs") or [] if ip and ip != "None"]
    ports = {p["nodePort"] for p in spec.get("ports") or [] if p.get("nodePort")}
    if spec.get("healthCheckNodePort"):
        ports.add(spec["healthCheckNodePort"])
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    lbs = [("LoadBalancerIP", i["ip"]) for i in ingress if i.get("ip")]
    return [*ips, *(("NodePort", str(p)) for p in sorted(ports)), *lbs]


def expected_allocations(services: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[str, str, str]]:
    held = {}
    for svc in services:
        meta = svc["metadata"]
        for kind_value in _values(svc):
            held[kind_value] = (meta["namespace"], meta["name"], meta["uid"])
    return held


def reported_allocations(report: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {
        (r["kind"], str(a["value"])): (a["namespace"], a["name"], a["uid"])
        for r in report["ranges"]
        for a in r["allocations"]
    }


def etcd_allocations(url: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    async def scan() -> dict[tuple[str, str], tuple[str, str, str]]:
        store = EtcdStore([url])
        try:
            listed = await store.scan("allocations/")
        finally:
            await store.close()
        found = {}
        for kv in listed.items:
            pool, _, value = kv.key.removeprefix("allocations/").partition("/")
            holder = orjson.loads(kv.value)
            found[(KINDS.get(pool, pool), value)] = (holder["namespace"], holder["name"], holder["uid"])
        return found

    return asyncio.run(scan())


def duplicates(services: list[dict[str, Any]]) -> dict[str, int]:
    """Values held by more than one Service, per kind."""
    counts = Counter(kind_value for svc in services for kind_value in _values(svc))
    held_twice = Counter(kind for (kind, _), n in counts.items() if n > 1)
    return {kind: held_twice[kind] for kind in ("ClusterIP", "NodePort")}


def compare(
    label: str, actual: dict[tuple[str, str], tuple[str, str, str]], wanted: dict[tuple[str, str], tuple[str, str, str]]
) -> list[str]:
    leaked = actual.keys() - wanted.keys()
    missing = wanted.keys() - actual.keys()
    wrong = [k for k in actual.keys() & wanted.keys() if actual[k] != wanted[k]]
    return [
        f"{label}: {n} {what}"
        for n, what in ((len(leaked), "leaked"), (len(missing), "missing"), (len(wrong), "held by another object"))
        if n
    ]


def _check(services: list[dict[str, Any]], reports: list[dict[str, Any]]) -> list[str]:
    problems = [f"{n} {kind}s held by two Services" for kind, n in duplicates(services).items() if n]
    wanted = expected_allocations(services)
    for i, report in enumerate(reports):
        problems += compare(f"/debug/allocations of apiserver {i + 1}", reported_allocations(report), wanted)
    return problems


def _settled(
    benches: list[Bench], total: int | None, deadline: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All Services (from the first apiserver) and each apiserver's allocation report, once they agree: creates
    still in flight when the load stopped have committed, and every apiserver's watch-fed cache and allocation
    index has caught up. At the deadline, whatever was seen last (and the checks say what differs)."""
    while True:
        lists, reports = [], []
        for bench in benches:
            with bench.client() as c:
                lists.append(c.get("/api/v1/services").json()["items"])
                reports.append(c.get("/debug/allocations").json())
        wanted = expected_allocations(lists[0])
        caught_up = all(total is None or len(items) == total for items in lists) and all(
            reported_allocations(r) == wanted for r in reports
        )
        if caught_up or time.monotonic() > deadline:
            return lists[0], reports
        time.sleep(0.2)


def shared_etcd(total: int, concurrency: int, workdir: Path) -> tuple[list[str], list[str]]:
    etcd = EtcdProcess(find_etcd(), workdir / "etcd" / "data")
    etcd.start()
    benches: list[Bench] = []
    procs: list[multiprocessing.Process] = []
    try:
        ranges = ["--service-cluster-ip-range", CLUSTER_IP_RANGE, "--service-node-port-range", NODE_PORT_RANGE]
        for name in NAMES:
            benches.append(start("--etcd-servers", etcd.url, *ranges, data_dir=workdir / name))
        with benches[0].client() as c:
            c.post("/api/v1/namespaces", json={"metadata": {"name": "bench-alloc"}}).raise_for_status()
        with benches[1].client() as c:
            while c.get("/api/v1/namespaces/bench-alloc").status_code != 200:
                time.sleep(0.01)
        for bench, name in zip(benches, NAMES, strict=True):
            with bench.client() as c:  # an apiserver's first write loads its OpenAPI schemas: not part of the run
                body = service(f"warm-up-{name}", node_port=True)
                c.post("/api/v1/namespaces/bench-alloc/services", json=body).raise_for_status()
        ready, go, out = multiprocessing.Semaphore(0), multiprocessing.Event(), multiprocessing.Queue()
        share = total // len(benches)
        procs = [
            multiprocessing.Process(
                target=_creator_process, args=(bench, name, share, concurrency // len(benches), (ready, go, out))
            )
            for bench, name in zip(benches, NAMES, strict=True)
        ]
        for proc in procs:
            proc.start()
        for _ in procs:
            if not ready.acquire(timeout=120):
                raise RuntimeError("the creators did not connect")
        go.set()
        results = [out.get(timeout=600) for _ in procs]
        for proc in procs:
            proc.join(30)
        others = 2 + len(benches)  # default/kubernetes, kube-system/kube-dns and the warm-up Services
        services, reports = _settled(benches, share * len(benches) + others, time.monotonic() + 30)
        found = etcd_allocations(etcd.url)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
        for bench in benches:
            stop(bench.proc)
        etcd.stop()
    latencies = [t for r in results for t in r["latencies"]]
    codes: Counter[int] = Counter()
    for r in results:
        codes.update({int(k): v for k, v in r["codes"].items()})
    wall = max(r["ended"] for r in results) - min(r["began"] for r in results)
    created = codes.get(201, 0)
    failed = [f"(b) {n} creates answered {code}" for code, n in sorted(codes.items()) if code != 201]
    problems = _check(services, reports) + compare("allocation keys in etcd", found, expected_allocations(services))
    failed += [f"(b) {p}" for p in problems]
    node_ports = sum(1 for s in services if (s["spec"].get("type") == "NodePort"))
    dupes = duplicates(services)
    rows = [
        f"| {created:,} Service creates, {concurrency} creators over 2 apiservers on one etcd | "
        f"{created / wall:,.0f}/s ({wall:.1f} s) | p50 {percentile(latencies, 50) * 1000:.1f} ms, "
        f"p99 {percentile(latencies, 99) * 1000:.1f} ms |",
        f"| after the storm: {len(services):,} Services ({node_ports:,} NodePort) | "
        f"duplicate clusterIPs {dupes['ClusterIP']}, duplicate nodePorts {dupes['NodePort']} | "
        f"allocations (both apiservers' reports, etcd keys) = values in use: "
        f"{'yes, 0 leaked, 0 missing' if not problems else 'NO'} ({len(found):,} keys) |",
    ]
    return rows, failed


# `alone`: the apiserver without the components `tinykube up` runs beside it (controllers but the namespace one,
# DNS, node agent), as they run in processes of their own upstream.
ALONE = ("--controllers", "namespace", "--dns-port", "-1", "--nodes", "0")


def main(seconds: int = 10, rounds: int = 2, alone: bool = False) -> int:
    if not shutil.which("wrk"):
        raise SystemExit("bench/services.py needs wrk (apt-get install wrk)")
    with temporary_dir("tinykube-bench-services-") as workdir:
        rows_a, failed_a = sustained(seconds, rounds, workdir, *(ALONE if alone else ()))
        rows_b, failed_b = shared_etcd(5_000, 64, workdir)
    print("| benchmark | result | tail / checks |\n|---|---|---|")
    print("\n".join(rows_a + rows_b))
    for problem in failed_a + failed_b:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if failed_a or failed_b else 0


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*numbers, alone="alone" in sys.argv[3:]))
