"""Writes through the death of an etcd member: `tinykube up --etcd-members 3` (real etcd processes, HTTPS), 16
creators making Services as fast as the apiserver takes them, and one member SIGKILLed 3 s into a 9 s run.

Three scenarios, each on a fresh cluster, with the leadership placed first (etcd's MoveLeader) so that each is what
it says:
- "first URL, a follower": the member the apiserver is connected to (the first of `--etcd-servers`) dies; the
  leader lives on. The client must fail over.
- "leader, not the first URL": the apiserver's member lives, the leader dies. The writes that member had forwarded
  to the leader are lost, and etcd would answer them only at its request timeout (5 s + 2 election timeouts).
- "leader, the first URL": both at once: the connection breaks and an election follows.

Reported per run: the longest gap between two successful creates from the kill on (target <= 2 s), the longest gap
before it (what the loaded machine does anyway), the longest any one create took (a creator stuck on a lost write
while the others go on does not show in the gap), every error a creator saw, and the checks after the run: every
acknowledged create is stored (read from etcd through the surviving members, and listed by the apiserver), none
twice, no clusterIP held twice, and how many creates answered with an error were stored all the same.

`python etcd_failover.py [ROUNDS] [--election-timeout MS] [--external]` (`--external`: the bench starts the etcd
cluster and passes it as `--etcd-servers`, which also works against a tinykube without `--etcd-members`).
Exits non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, Connection, start, stop, temporary_dir

from tinykube.store.etcd import EtcdStore
from tinykube.store.launcher import EtcdCluster, etcd_leader, find_etcd

CREATORS = 16
SECONDS = 9.0
KILL_AT = 3.0
NS = "bench-failover"
# name: (index of the member made leader first, index of the member killed)
SCENARIOS = {
    "first URL, a follower": (1, 0),
    "leader, not the first URL": (1, 1),
    "leader, the first URL": (0, 0),
}


@dataclass
class Run:
    scenario: str
    acknowledged: list[tuple[float, str]] = field(default_factory=list)
    errors: list[tuple[float, str]] = field(default_factory=list)
    began: float = 0.0
    killed: float = 0.0
    ended: float = 0.0
    checks: list[str] = field(default_factory=list)
    stored_unacknowledged: int = 0
    slowest: float = 0.0  # the longest any one create took (answered or not)

    def gaps(self) -> tuple[float, float]:
        """The longest gap between successful creates before the kill (from 0.5 s into the run), and from it on
        (the time from the last success to the end of the run counts: a stall that outlasts the run is no gap of
        zero)."""
        times = sorted(t for t, _ in self.acknowledged if t > self.began)
        before = [b - a for a, b in itertools.pairwise(times) if a > self.began + 0.5 and b < self.killed]
        after = [b - max(a, self.killed) for a, b in itertools.pairwise([*times, self.ended]) if b > self.killed]
        return max(before, default=0.0), max(after)


def _post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=5) as reply:
        return dict(json.loads(reply.read()))


def move_leader(urls: list[str], target: str) -> None:
    """Make `target` the leader (etcd's MoveLeader, asked of the current leader) and wait until it is."""
    deadline = time.monotonic() + 30
    while (leader := etcd_leader(urls)) != target:
        if time.monotonic() > deadline:
            raise RuntimeError(f"could not make {target} the leader (leader: {leader})")
        if leader is not None:
            target_id = _post(target, "/v3/maintenance/status", {})["header"]["member_id"]
            _post(leader, "/v3/maintenance/transfer-leadership", {"targetID": target_id})
        time.sleep(0.2)


async def _storm(bench: Bench, victim: int, run: Run) -> None:
    path = f"/api/v1/namespaces/{NS}/services"
    connections = [Connection(bench) for _ in range(CREATORS)]
    await asyncio.gather(*(c.exchange("GET", "/readyz") for c in connections))  # TLS handshakes before the run
    run.began = time.monotonic()
    until = run.began + SECONDS

    async def creator(n: int, connection: Connection) -> None:
        i = 0
        while time.monotonic() < until:
            i += 1
            name = f"c{n:02d}-{i:05d}"
            body = orjson.dumps({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}})
            sent = time.monotonic()
            try:
                status, payload = await connection.exchange("POST", path, body)
            except (OSError, asyncio.IncompleteReadError) as err:
                run.errors.append((time.monotonic(), f"{name}: {err!r}"))
                connection.reader = connection.writer = None
                continue
            finally:
                run.slowest = max(run.slowest, time.monotonic() - sent)
            if status == 201:
                run.acknowledged.append((time.monotonic(), name))
            else:
                message = orjson.loads(payload).get("message", "") if payload.startswith(b"{") else payload[:100]
                run.errors.append((time.monotonic(), f"{name}: {status} {message}"))

    async def kill() -> None:
        await asyncio.sleep(KILL_AT)
        os.kill(victim, signal.SIGKILL)
        run.killed = time.monotonic()

    try:
        await asyncio.gather(kill(), *(creator(n, c) for n, c in enumerate(connections)))
    finally:
        run.ended = time.monotonic()
        await asyncio.gather(*(c.close() for c in connections))


def _stored(urls: list[str]) -> list[dict[str, Any]]:
    """The Services of the run as etcd holds them (read through the surviving members)."""

    async def scan() -> list[dict[str, Any]]:
        store = EtcdStore(urls)
        try:
            listed = await store.scan(f"services/specs/{NS}/")
        finally:
            await store.close()
        return [orjson.loads(kv.value) for kv in listed.items]

    return asyncio.run(scan())


def _check(run: Run, bench: Bench, survivors: list[str]) -> None:
    acknowledged = Counter(name for _, name in run.acknowledged)
    stored = _stored(survivors)
    names = Counter(svc["metadata"]["name"] for svc in stored)
    lost = acknowledged.keys() - names.keys()
    if lost:
        run.checks.append(f"{len(lost)} acknowledged creates are not in etcd")
    if [n for n, c in names.items() if c > 1] or [n for n, c in acknowledged.items() if c > 1]:
        run.checks.append("a name stored or acknowledged twice")
    ips = Counter(svc["spec"]["clusterIP"] for svc in stored)
    if [ip for ip, c in ips.items() if c > 1]:
        run.checks.append("a clusterIP held twice")
    run.stored_unacknowledged = len(names.keys() - acknowledged.keys())
    deadline = time.monotonic() + 30
    with bench.client() as c:  # the apiserver's cache (fed by watches that moved to another member) agrees
        while True:
            listed = {s["metadata"]["name"] for s in c.get(f"/api/v1/namespaces/{NS}/services").json()["items"]}
            if listed == names.keys() or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    if listed != names.keys():
        run.checks.append(f"the apiserver lists {len(listed)} Services, etcd holds {len(names)}")


def one_run(scenario: str, workdir: Path, election: int, external: bool) -> Run:
    lead, kill = SCENARIOS[scenario]
    cluster: EtcdCluster | None = None
    bench: Bench | None = None
    run = Run(scenario)
    try:
        if external:
            cluster = EtcdCluster(find_etcd(), workdir / "etcd", 3, election or None)
            cluster.start()
            extra: tuple[str, ...] = ("--etcd-servers", ",".join(cluster.urls))
        else:
            extra = ("--etcd-members", "3", *(("--etcd-election-timeout", str(election)) if election else ()))
        bench = start(*extra, data_dir=workdir / "up")
        if cluster is not None:
            urls, pids = cluster.urls, [m.proc.pid for m in cluster.members if m.proc is not None]
        else:
            state = json.loads((bench.data_dir / "cluster.json").read_text())
            urls, pids = state["etcd"], [pid for pid, _ in state["etcd_pids"]]
        with bench.client() as c:
            c.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).raise_for_status()
            body = {"metadata": {"name": "warm-up"}, "spec": {"ports": [{"port": 80}]}}
            c.post(f"/api/v1/namespaces/{NS}/services", json=body).raise_for_status()  # loads the OpenAPI schemas
        move_leader(urls, urls[lead])
        uvloop.run(_storm(bench, pids[kill], run))
        run.acknowledged.append((0.0, "warm-up"))
        _check(run, bench, [u for i, u in enumerate(urls) if i != kill])
    finally:
        if bench is not None:
            stop(bench.proc)
        if cluster is not None:
            cluster.stop()
    return run


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="?", type=int, default=1)
    parser.add_argument("--election-timeout", type=int, default=0, help="ms (default: tinykube's, 500)")
    parser.add_argument("--external", action="store_true", help="start etcd here and pass it as --etcd-servers")
    args = parser.parse_args()
    election = args.election_timeout or 500
    print(f"load average at the start: {load()}", flush=True)
    print(
        "| scenario | election timeout | creates | longest gap from the kill | before the kill | slowest create "
        "| errors | checks |"
    )
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    for _ in range(args.rounds):
        for scenario in SCENARIOS:
            with temporary_dir("tinykube-bench-failover-") as workdir:
                run = one_run(scenario, workdir, args.election_timeout, args.external)
            before, after = run.gaps()
            rate = (len(run.acknowledged) - 1) / (run.ended - run.began)
            errors = f"{len(run.errors)}" + (f" ({run.errors[0][1][:120]})" if run.errors else "")
            checks = "; ".join(run.checks) or (
                f"0 acknowledged lost, 0 duplicates, {run.stored_unacknowledged} failed creates stored"
            )
            failed |= bool(run.checks) or after > 2.0
            print(
                f"| {scenario} | {election} ms | {len(run.acknowledged) - 1:,} ({rate:,.0f}/s) | **{after:.2f} s** "
                f"| {before:.2f} s | {run.slowest:.2f} s | {errors} | {checks} |",
                flush=True,
            )
    print(f"load average at the end: {load()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
