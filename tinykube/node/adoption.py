"""How the netns runtime outlives its agent: an agent started again adopts the pods an earlier one left running.

Each pod's log directory keeps a `state.json` of its containers (restart count, current run with its process's pid
and start time, the last finished runs), written on every change. A container's pipes outlive the agent: the
container holds the read ends of its own stdout/stderr pipes (unread) besides the write ends, so its writes never
fail with EPIPE while no agent reads (they block once the 1 MiB pipe is full). An agent started again over the same
sandbox and log directory *adopts* each pod whose namespace is still there (with its address, and its veth on the
node): the containers' processes are followed through a pidfd (their exit status read from /proc while they are
zombies; a status the kernel no longer has is `ContainerStatusUnknown`, exit code 137), their pipes reopened through
/proc; whatever else runs in the pod's namespace is killed. Resuming the containers' logs and probes, and
restarting those found gone, is their supervisor's (`tinykube.node.supervisor`). What is left of pods gone meanwhile
is removed (`prune_logs`, and `PodSandboxes.prune` for their namespaces).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import stat
from pathlib import Path
from typing import Any

from tinykube.node.podvolumes import remove_memory
from tinykube.sandbox import netns, topology

log = logging.getLogger(__name__)

Object = dict[str, Any]
STATE = "state.json"  # per pod log directory: its containers, for the next agent
UNKNOWN_EXIT = {  # upstream's report of a container whose exit status is lost (kubelet's ContainerStatusUnknown)
    "exitCode": 137,
    "reason": "ContainerStatusUnknown",
    "message": "The container could not be located when the pod was terminated",
}


def log_dir_name(pod: Object) -> str:
    """The name of the pod's directory under its node's log directory (its logs, volumes and `state.json`)."""
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}_{meta['name']}_{meta.get('uid', '')}"


def load_state(directory: Path, ip: str) -> Object:
    """The pod's `state.json` if an earlier agent left one for this IP, else {}."""
    try:
        state = json.loads((directory / STATE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) and state.get("ip") == ip else {}


def save_state(directory: Path, state: Object) -> None:
    """The pod's `state.json`, replaced whole (a reader never sees it half-written). Raises OSError."""
    partial = directory / f"{STATE}.tmp"
    partial.write_text(json.dumps(state))
    partial.replace(directory / STATE)


def save(directory: Path, key: str, state: Object) -> None:
    """`save_state`, a failure logged: the pod runs on, only a later agent could not adopt it."""
    try:
        save_state(directory, state)
    except OSError as err:
        log.warning("pod %s: cannot save its state: %s", key, err)


def prune_logs(log_dir: Path, keep: set[str]) -> None:
    """Remove the pod directories under `log_dir` but those named `keep` (`log_dir_name`), with the memory-backed
    volumes of their pods."""
    if not log_dir.is_dir():
        return
    for directory in log_dir.iterdir():
        if directory.is_dir() and directory.name not in keep:
            shutil.rmtree(directory, ignore_errors=True)
            uid = directory.name.rsplit("_", 1)[-1]
            if uid:
                remove_memory({"metadata": {"name": "", "uid": uid}})


def plumbed(node: topology.NodeNet, net: topology.PodNet) -> bool:
    """Whether the pod's namespace is there with its address, and its veth on the node."""
    if not netns.exists(net.netns) or not netns.exists(node.netns):
        return False
    shown = netns.ip("-o", "addr", "show", "dev", "eth0", netns=net.netns, check=False)
    veth = netns.ip("-o", "link", "show", "dev", net.veth, netns=node.netns, check=False)
    return f" {net.ip}/32 " in shown and bool(veth)


def adopt(pod_netns: str, runs: dict[str, tuple[int, int]]) -> dict[str, Adopted]:
    """The containers whose processes still run (`runs`: the pid and start time of each container that was running,
    each checked by both, and to be in `pod_netns`); whatever else runs there (a gone container's leftovers) is
    killed."""
    inside = set(netns.pids(pod_netns))
    found: dict[str, Adopted] = {}
    for name, (pid, started) in runs.items():
        if pid in inside and started:
            adopted = Adopted.attach(pid, started)
            if adopted is not None:
                found[name] = adopted
    groups = {adopted.pid for adopted in found.values()}
    for pid in inside:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) not in groups:
                os.kill(pid, signal.SIGKILL)
    return found


class Adopted:
    """A container's process that an earlier agent started, so no child of this one: its end is seen through a
    pidfd and its exit status read from /proc while it is a zombie (its new parent may reap it first: the status is
    then unknown). Quacks like the `asyncio.subprocess.Process` it stands in for (pid, returncode, wait)."""

    def __init__(self, pid: int, started: int, pidfd: int) -> None:
        self.pid, self.started, self._pidfd = pid, started, pidfd
        self.returncode: int | None = None  # once ended: as Popen's (-N: killed by signal N)
        self.known = True  # whether returncode is the real exit status
        self._ended = asyncio.Event()
        self._watched = False

    @classmethod
    def attach(cls, pid: int, started: int) -> Adopted | None:
        """The process `pid` if it is the one that started at `started` (checked once a pidfd holds it)."""
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None
        if start_time(pid) != started:
            os.close(pidfd)
            return None
        return cls(pid, started, pidfd)

    async def wait(self) -> int:
        if not self._watched:
            self._watched = True
            asyncio.get_running_loop().add_reader(self._pidfd, self._exit)
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def _exit(self) -> None:
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        status = _zombie_status(self.pid, self.started)
        if status is None:
            self.known, self.returncode = False, -signal.SIGKILL
        else:
            self.returncode = os.waitstatus_to_exitcode(status)
        self._ended.set()


def reopen(pid: int, pipes: list[tuple[int, int]]) -> list[int]:
    """The container's output pipes, reopened for reading through the read ends it holds (each checked to be the
    pipe it was); [] when they cannot be (then its output is not logged)."""
    opened = []
    for number, inode in pipes:
        try:
            fd = os.open(f"/proc/{pid}/fd/{number}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            break
        found = os.fstat(fd)
        opened.append(fd)
        if not stat.S_ISFIFO(found.st_mode) or found.st_ino != inode:
            break
    else:
        if len(opened) == 2:
            return opened
    for fd in opened:
        os.close(fd)
    return []


def start_time(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if len(fields) > 19 else 0


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the command (state first); [] if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _zombie_status(pid: int, started: int) -> int | None:
    """The wait status of `pid` while it is a zombie (the one that started at `started`), else None."""
    fields = _stat(pid)
    if len(fields) > 49 and fields[0] == "Z" and int(fields[19]) == started:
        return int(fields[49])
    return None
