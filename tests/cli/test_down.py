"""`tinykube down` removes its own cluster and nothing else: the cluster is the one its data dir's cluster.json
names, a `--name` that disagrees is refused before anything is touched, and with two netns clusters on the
machine, `down` of one leaves every namespace, link, /etc/netns entry and process of the other as it was."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster
from tests.e2e.test_netns_dataplane import create, namespaces, ready, web_pod
from tinykube.sandbox.topology import remove_sandbox

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")


def tinykube(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tinykube.cli", *args], capture_output=True, text=True, timeout=90)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """`pid`'s children, theirs, and so on (etcd, the nft sessions, pod processes of an `up`)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    family, grown = {pid}, True
    while grown:
        below = {child for child, parent in parents.items() if parent in family} - family
        family |= below
        grown = bool(below)
    return family - {pid}


@dataclass(frozen=True)
class Snapshot:
    """What a netns cluster has on the machine: per namespace its links (index, name, MAC) and the processes in it,
    the /etc/netns entries, and the processes its `up` runs (itself and its descendants)."""

    namespaces: dict[str, tuple[frozenset[tuple[int, str, str]], frozenset[int]]]
    etc: frozenset[str]
    processes: frozenset[int]

    @classmethod
    def of(cls, cluster: RunningCluster) -> Snapshot:
        name = cluster.data_dir.name
        found = {}
        for netns in namespaces(f"tk-{name}."):
            shown = subprocess.run(["ip", "-n", netns, "-j", "link", "show"], capture_output=True, text=True).stdout
            links = frozenset((link["ifindex"], link["ifname"], link.get("address", "")) for link in json.loads(shown))
            listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
            found[netns] = (links, frozenset(int(pid) for pid in listed.split()))
        etc = frozenset(path.name for path in Path("/etc/netns").glob(f"tk-{name}.*"))
        up = cluster.proc.pid
        return cls(found, etc, frozenset({up} | descendants(up) if alive(up) else set()))

    def pids(self) -> set[int]:
        return set(self.processes).union(*(pids for _, pids in self.namespaces.values()))


def assert_untouched(cluster: RunningCluster, before: Snapshot) -> None:
    after = Snapshot.of(cluster)
    assert after.namespaces == before.namespaces
    assert after.etc == before.etc
    assert all(alive(pid) for pid in before.pids()), {pid for pid in before.pids() if not alive(pid)}
    with cluster.http() as api:
        assert api.get("/readyz").status_code == 200
        assert ready(api, "w")


def assert_all_gone(cluster: RunningCluster, before: Snapshot) -> None:
    name = cluster.data_dir.name
    assert not namespaces(f"tk-{name}."), namespaces(f"tk-{name}.")
    assert not list(Path("/etc/netns").glob(f"tk-{name}.*"))
    survivors = {pid for pid in before.pids() if alive(pid)}
    assert not survivors, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in survivors]
    assert not (cluster.data_dir / "cluster.json").exists()


@contextlib.contextmanager
def netns_clusters(tmp_path: Path, *names: str) -> Iterator[list[RunningCluster]]:
    """Netns clusters with one running pod each; afterwards each is stopped and its own sandbox (by its own name,
    unique to this test) removed, whatever happened."""
    started: list[RunningCluster] = []
    try:
        for name in names:
            cluster = start_cluster(tmp_path / name, "--dataplane", "netns", "--nodes", "1", "--controllers", "*")
            started.append(cluster)
            with cluster.http() as api:
                create(api, web_pod("w", "node-1", 8090))
        for cluster in started:
            with cluster.http() as api:
                eventually(lambda api=api: ready(api, "w"), what="pod w ready")
        yield started
    finally:
        for cluster in started:
            stop_cluster(cluster)
        for name in names:
            remove_sandbox(name)


def test_down_refuses_a_name_that_disagrees_with_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "dis"
    running = start_cluster(data_dir)
    try:
        refused = tinykube("down", "--data-dir", str(data_dir), "--name", "someone-else")
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert refused.stderr.startswith("tinykube: --name someone-else and --data-dir ")
        assert "records cluster 'dis'" in refused.stderr and "nothing was done" in refused.stderr
        assert running.proc.poll() is None and (data_dir / "cluster.json").exists()
        with running.http() as api:
            assert api.get("/readyz").status_code == 200
        stopped = tinykube("down", "--data-dir", str(data_dir), "--name", "dis")  # agreeing flags are fine
        assert stopped.returncode == 0, stopped.stderr
        assert running.proc.wait(30) == 0
    finally:
        stop_cluster(running)


def test_down_of_a_data_dir_without_a_record_removes_nothing(tmp_path: Path) -> None:
    """Whose sandbox it would be is unknown: not the default cluster's ('tinykube'), nor anyone's."""
    empty = tmp_path / "empty"
    done = tinykube("down", "--data-dir", str(empty))
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"nothing to stop: no cluster.json in {empty}" in done.stderr


@needs_root
@pytest.mark.parametrize("how", ["running", "crashed"])
def test_down_of_one_netns_cluster_leaves_the_other_alone(tmp_path: Path, how: str) -> None:
    ours, theirs = f"dn{os.getpid()}{how[0]}-a", f"dn{os.getpid()}{how[0]}-b"
    with netns_clusters(tmp_path, ours, theirs) as (mine, other):
        mine_before, other_before = Snapshot.of(mine), Snapshot.of(other)
        assert len(mine_before.namespaces) == 4 and len(other_before.namespaces) == 4  # LAN, ext, node-1, w
        assert any(pids for _, pids in mine_before.namespaces.values())  # the pod's process

        # A --name of another cluster with this one's data dir: refused, and neither cluster is touched.
        refused = tinykube("down", "--data-dir", str(mine.data_dir), "--name", theirs)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"records cluster '{ours}'" in refused.stderr
        assert_untouched(mine, mine_before)
        assert_untouched(other, other_before)

        if how == "crashed":  # nothing cleaned up: the namespaces and the pod's process stay, cluster.json too
            mine.proc.send_signal(signal.SIGKILL)
            mine.proc.wait(10)
            assert namespaces(f"tk-{ours}.") and (mine.data_dir / "cluster.json").exists()
        done = tinykube("down", "--data-dir", str(mine.data_dir))  # no --name: the data dir says whose it is
        assert done.returncode == 0, done.stderr
        if how == "running":
            assert done.stdout.strip() == f"stopped tinykube up (pid {mine.proc.pid})"
            assert mine.proc.wait(10) == 0
        else:
            assert done.stdout.startswith(f"removed 4 network namespace(s): tk-{ours}."), done.stdout
        assert_all_gone(mine, mine_before)
        assert_untouched(other, other_before)
