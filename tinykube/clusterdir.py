"""Which cluster a data dir holds, and whether it runs: what `tinykube kubeconfig`, `status` and `down` act on.

`tinykube up` records itself in its data dir's cluster.json once ready (name, pid and its start time, addresses) and
removes it when it stops. That record, not --name, says whose a data dir is: a --name that disagrees is refused, so
that `down` never stops another cluster or removes its namespaces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinykube.api.defaults import default_data_dir

DEFAULT_NAME = "tinykube"


class Refused(Exception):
    """Why not to act on the cluster that --name and --data-dir designate (one line)."""


@dataclass(frozen=True)
class Located:
    """The cluster that --name and --data-dir designate, as its data dir records it."""

    name: str | None  # None: a data dir without cluster.json and no --name, so whose it is is unknown
    directory: Path
    state: dict[str, Any] | None  # cluster.json: `up` writes it once ready and removes it when it stops

    @property
    def record(self) -> Path:
        return self.directory / "cluster.json"

    @property
    def label(self) -> str:
        return repr(self.name) if self.name is not None else f"in {self.directory}"

    @property
    def pid(self) -> int | None:
        pid = (self.state or {}).get("pid")
        return pid if isinstance(pid, int) else None

    def running(self) -> bool:
        started = (self.state or {}).get("pid_start")
        return self.pid is not None and _running_up(self.pid, started if isinstance(started, int) else None)


def locate(name: str | None, data_dir: Path | None) -> Located:
    """The cluster is the one its data dir's cluster.json names; --name only finds the default data dir when no
    --data-dir is given, and a --name that disagrees with the record is refused (never a cluster of that name)."""
    directory = data_dir or default_data_dir(name or DEFAULT_NAME)
    record = directory / "cluster.json"
    try:
        state = json.loads(record.read_text())
    except FileNotFoundError:
        return Located(name or (None if data_dir else DEFAULT_NAME), directory, None)
    except (OSError, ValueError) as err:
        raise Refused(f"cannot read {record}: {err}") from err
    if not isinstance(state, dict) or not isinstance(state.get("name"), str):
        raise Refused(f"{record} is not what `tinykube up` writes: it names no cluster")
    if name is not None and name != state["name"]:
        given = f"--data-dir {directory}" if data_dir else "the default data dir of that name"
        raise Refused(
            f"--name {name} and {given} disagree: {record} records cluster {state['name']!r}; nothing was done"
        )
    return Located(state["name"], directory, state)


def _running_up(pid: int, started: int | None = None) -> bool:
    """Whether `pid` is a live (not zombie) `tinykube up` and, when `started` (its start time in clock ticks after
    boot, as cluster.json records it) is given, the very one that recorded itself: after a crash the recorded pid
    may be anyone's now, even another cluster's `up`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    if fields[0] == "Z":
        return False  # killed, not yet reaped by its parent
    if started is not None and fields[19] != str(started):
        return False  # the pid was reused
    return b"up" in cmdline and any(b"tinykube" in part for part in cmdline)
