"""tinykube on a 3-member etcd cluster, through the API: `tinykube up --etcd-members 3` loses its first member or its
leader in the middle of a create storm and goes on (every create acknowledged, none lost, no pause near etcd's
6-7 s request timeout, /readyz green), `tinykube down` stops every member, and two apiservers sharing one etcd
cluster both keep working through the death of the member their `--etcd-servers` lists first.

Every etcd and `tinykube up` here is a real process on 127.0.0.1 and free ports, killed at the end whatever
happens. Set-up waits are generous; the assertions on behaviour are tight.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tinykube.store.launcher import EtcdCluster, etcd_leader, find_etcd

NS = "storm"
GAP_BOUND = 3.0  # seconds without a successful create; etcd's own request timeout is 6 s here (7 s by default)


@dataclass
class Storm:
    """What the creators of one apiserver saw: (time acknowledged, name) of each 201, and every other outcome."""

    acknowledged: list[tuple[float, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0  # the longest one create took: a creator stuck on a lost write shows here, not in the gaps

    ended: float = 0.0

    def longest_gap_after(self, moment: float) -> float:
        """The longest time from `moment` on without a successful create (until the end of the storm)."""
        times = sorted(t for t, _ in self.acknowledged)
        return max(b - max(a, moment) for a, b in itertools.pairwise([*times, self.ended]) if b > moment)


async def _creators(cluster: RunningCluster, prefix: str, count: int, until: float, storm: Storm) -> None:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(
        base_url=cluster.server, headers=headers, verify=verify, limits=limits, timeout=60
    ) as client:
        await asyncio.gather(*(client.get("/readyz") for _ in range(count)))  # connections (TLS) made before

        async def creator(c: int) -> None:
            i = 0
            while time.monotonic() < until:
                i += 1
                name = f"{prefix}-{c}-{i}"
                body = {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
                sent = time.monotonic()
                try:
                    response = await client.post(f"/api/v1/namespaces/{NS}/services", json=body)
                except httpx.TransportError as err:
                    storm.failures.append(f"{name}: {err!r}")
                    continue
                finally:
                    storm.slowest = max(storm.slowest, time.monotonic() - sent)
                if response.status_code == 201:
                    storm.acknowledged.append((time.monotonic(), name))
                else:
                    storm.failures.append(f"{name}: {response.status_code} {response.text[:200]}")

        await asyncio.gather(*(creator(c) for c in range(count)))
    storm.ended = time.monotonic()


def storm(clusters: list[RunningCluster], kill: Callable[[], None], seconds: float = 5.0) -> tuple[list[Storm], float]:
    """Creators on every apiserver for `seconds`, `kill()` after the first 1.5; returns what each saw and when the
    kill was done."""
    storms = [Storm() for _ in clusters]
    killed = 0.0

    async def run() -> None:
        nonlocal killed
        until = time.monotonic() + seconds
        creating = [
            asyncio.create_task(_creators(cluster, f"s{n}", 6, until, storms[n])) for n, cluster in enumerate(clusters)
        ]
        await asyncio.sleep(1.5)
        await asyncio.to_thread(kill)
        killed = time.monotonic()
        await asyncio.gather(*creating)

    asyncio.run(run())
    return storms, killed


def create_namespace(*clusters: RunningCluster) -> None:
    with clusters[0].http() as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).status_code == 201
    for cluster in clusters[1:]:  # their namespace caches must know it too
        with cluster.http() as api:
            deadline = time.monotonic() + 30
            while api.get(f"/api/v1/namespaces/{NS}").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.02)


def names_listed(cluster: RunningCluster) -> Counter[str]:
    with cluster.http() as api:
        listed = api.get(f"/api/v1/namespaces/{NS}/services")
        assert listed.status_code == 200, listed.text
        return Counter(svc["metadata"]["name"] for svc in listed.json()["items"])


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.fixture
def three_members(tmp_path: Path) -> Iterator[tuple[RunningCluster, dict[str, Any]]]:
    """`tinykube up --etcd-members 3` and its cluster.json; every process of it killed afterwards."""
    cluster = start_cluster(tmp_path / "c", "--etcd-members", "3")
    state = json.loads((cluster.data_dir / "cluster.json").read_text())
    try:
        yield cluster, state
    finally:
        stop_cluster(cluster)
        for pid, _started in state.get("etcd_pids", []):
            kill_pid(pid)


@pytest.mark.parametrize("victim", ["first", "leader"])
def test_up_with_three_members_loses_one_and_goes_on(
    three_members: tuple[RunningCluster, dict[str, Any]], victim: str
) -> None:
    cluster, state = three_members
    urls, pids = state["etcd"], [pid for pid, _ in state["etcd_pids"]]
    assert len(urls) == len(pids) == 3
    create_namespace(cluster)
    index = 0 if victim == "first" else urls.index(etcd_leader(urls))

    (seen,), killed = storm([cluster], lambda: kill_pid(pids[index]))

    assert seen.failures == []
    gap = seen.longest_gap_after(killed)
    print(f"longest gap after the kill: {gap:.2f} s, slowest create {seen.slowest:.2f} s")
    assert gap < GAP_BOUND, f"creates stopped for {gap:.2f} s"
    assert seen.slowest < GAP_BOUND, f"a create took {seen.slowest:.2f} s"
    assert names_listed(cluster) == Counter(name for _, name in seen.acknowledged)  # none lost, none twice
    with cluster.http() as api:
        ready = api.get("/readyz", params={"verbose": ""})
    assert ready.status_code == 200 and "[+]etcd ok" in ready.text, ready.text

    # `tinykube down` stops `up`, and `up` the members left.
    down = subprocess.run(
        [sys.executable, "-m", "tinykube.cli", "down", "--data-dir", str(cluster.data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert down.returncode == 0, down.stderr
    assert cluster.proc.wait(30) == 0
    assert [pid for pid in pids if alive(pid)] == []


def test_two_apiservers_on_one_etcd_cluster_go_on_through_a_member_kill(tmp_path: Path) -> None:
    etcd = EtcdCluster(find_etcd(), tmp_path / "etcd", 3)
    running: list[RunningCluster] = []
    try:
        etcd.start(timeout=60)
        servers = ",".join(etcd.urls)
        for name in ("a", "b"):
            running.append(start_cluster(tmp_path / name, "--etcd-servers", servers))
        create_namespace(*running)
        first = etcd.members[0]
        assert first.proc is not None

        storms, killed = storm(running, lambda: kill_pid(first.proc.pid) if first.proc else None)

        acknowledged: Counter[str] = Counter()
        for seen in storms:
            assert seen.failures == []
            gap = seen.longest_gap_after(killed)
            print(f"longest gap after the kill: {gap:.2f} s, slowest create {seen.slowest:.2f} s")
            assert gap < GAP_BOUND, f"creates stopped for {gap:.2f} s"
            assert seen.slowest < GAP_BOUND, f"a create took {seen.slowest:.2f} s"
            acknowledged.update(name for _, name in seen.acknowledged)
        for cluster in running:  # each apiserver's cache has every Service, once (its watches moved too)
            deadline = time.monotonic() + 15
            while (listed := names_listed(cluster)) != acknowledged and time.monotonic() < deadline:
                time.sleep(0.1)
            assert listed == acknowledged
        with running[0].http() as api:
            services = api.get("/api/v1/services").json()["items"]
        ips = Counter(svc["spec"]["clusterIP"] for svc in services)
        assert [ip for ip, n in ips.items() if n > 1] == []
    finally:
        for cluster in running:
            stop_cluster(cluster)
        etcd.stop()
