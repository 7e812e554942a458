"""A container's processes, as a container runtime (runc under containerd) keeps them for the kubelet: start one in
its pod's sandbox, signal it and wait for its end, run a command beside it, measure it, and find it again after the
agent restarted. `ContainerProcesses` is that seam, all the netns runtime's supervision asks of processes, so that an
OCI runtime can take the place of `HostProcesses`.

`HostProcesses` runs each container as a host process in its pod's network namespace (`ip netns exec`), in a process
group of its own (which dies with it, as a container's processes die with its PID 1); `containerinit` gives it its
own mount namespace with its filesystem and volumes, `_own_hostname` its UTS namespace. Its stdout and stderr are
pipes whose read ends the container holds too (never reading them): a pipe with a reader never fails a write, so the
container outlives this agent's death unharmed, and the next agent reopens the pipes through /proc (`reattach`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tinykube.node import adoption, container_io, container_logs
from tinykube.node.adoption import Adopted
from tinykube.node.container_io import ContainerConsole
from tinykube.node.container_logs import Pipe
from tinykube.sandbox import netns
from tinykube.streams.remotecommand import CommandError, CommandStreams

Object = dict[str, Any]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PIPE_SIZE = 1 << 20  # a container's output pipes: what it may write while no agent reads (fs.pipe-max-size default)
CLONE_NEWUTS = 0x04000000
CONTAINER_INIT = [sys.executable, "-I", "-m", "tinykube.node.containerinit"]  # builds the container's filesystem
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


class StartFailure(Exception):
    """A container that cannot be started; `waiting` failures (bad config) keep it waiting, the others end its
    run with StartError."""

    def __init__(self, reason: str, message: str, *, waiting: bool = False) -> None:
        super().__init__(message)
        self.reason, self.message, self.waiting = reason, message, waiting


class Process(Protocol):
    """A container's running process (its group's leader), as `asyncio.subprocess.Process` and `Adopted` are."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """What to run, as an OCI runtime's `config.json` says it: the process, its filesystem, its console."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    mounts: list[Object]  # what `containerinit` binds: {"source", "target", "readOnly"}
    hostname: str
    tty: bool = False
    stdin: bool = False  # kept open for `attach`
    stdin_once: bool = False


@dataclass(slots=True)
class Started:
    """A container process just started: the process, its start time (clock ticks after boot: tells it from a later
    one with its pid), its output pipes' read ends as it holds them (fd in it, inode), its console and its output."""

    process: Process
    started: int
    pipes: list[tuple[int, int]]
    console: ContainerConsole
    output: list[Pipe]


class ContainerProcesses(Protocol):
    """What the netns runtime asks of a container's processes."""

    async def start(self, pod_netns: str, bundle: Path, spec: ProcessSpec) -> Started:
        """Start the container in the pod's network namespace (`bundle`: its directory); StartFailure."""
        ...

    async def stop(self, process: Process, grace: float) -> None:
        """SIGTERM the container's processes, SIGKILL them if it outlives `grace`."""

    def end_leftovers(self, process: Process) -> None:
        """Once its process ended: kill what it left behind."""

    def record(self, process: Process) -> Object:
        """How the run ended: its exit code and reason."""
        ...

    def enter(self, pod_netns: str, pid: int) -> list[str]:
        """The argv prefix that runs a command in the running container (`pid`), else in its pod's namespace."""
        ...

    async def exec(self, pid: int, argv: list[str], env: dict[str, str], tty: bool, streams: CommandStreams) -> int:
        """Run a command in the running container (`kubectl exec`); its exit code, or CommandError."""
        ...

    def usage(self) -> dict[int, tuple[float, int]]:
        """Per container process (its pid): the CPU seconds and resident bytes of its processes."""
        ...

    async def adopt(self, pod_netns: str, runs: dict[str, tuple[int, int]]) -> dict[str, Process]:
        """The containers (by name) whose processes an earlier agent left running (`runs`: pid and start time)."""
        ...

    async def reattach(self, process: Process, pipes: list[tuple[int, int]]) -> tuple[ContainerConsole, list[Pipe]]:
        """An adopted container's console and output, as far as they can be had again."""
        ...


def exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N: 128+N, as runc reports


def missing_executable(argv0: str, path: str, cwd: str) -> str:
    """Upstream's message when `argv0` cannot be executed, or ""."""
    if "/" in argv0:
        full = os.path.join(cwd, argv0)
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return ""
        return f'exec: "{argv0}": stat {argv0}: no such file or directory'
    if shutil.which(argv0, path=path):
        return ""
    return f'exec: "{argv0}": executable file not found in $PATH'


class HostProcesses:
    """Containers as host processes in their pods' network namespaces (see the module docstring)."""

    async def start(self, pod_netns: str, bundle: Path, spec: ProcessSpec) -> Started:
        """A container with `stdin: true` gets a stdin pipe kept open for `attach`, or with `tty: true` a
        pseudo-terminal for all three (the agent holds its master; such a run's console does not survive the
        agent)."""
        console_fd = stdin = -1
        if spec.tty:
            console_fd, stdin = container_io.open_terminal()
            out_read, out_write, err_read, err_write = os.dup(console_fd), os.dup(stdin), -1, os.dup(stdin)
        else:
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            for fd in (out_write, err_write):
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
            if spec.stdin:
                stdin, console_fd = os.pipe()
                os.set_blocking(console_fd, False)
        config = bundle / "container.json"
        config.write_text(json.dumps({"mounts": spec.mounts, "workingDir": spec.cwd, "terminal": spec.tty}))
        held = tuple(fd for fd in (out_read, err_read) if fd >= 0 and not spec.tty)
        try:
            process = await asyncio.create_subprocess_exec(
                *netns.exec_argv(pod_netns, [*CONTAINER_INIT, str(config), "--", *spec.argv]),
                env=spec.env,
                cwd="/",
                stdin=stdin if stdin >= 0 else asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=err_write,
                pass_fds=held,  # the same numbers in the container
                start_new_session=True,  # its own process group, signalled as a whole
                preexec_fn=_own_hostname(spec.hostname),
            )
        except OSError as err:
            for fd in (out_read, err_read, console_fd):
                if fd >= 0:
                    os.close(fd)
            raise StartFailure("StartError", str(err)) from None
        finally:
            for fd in (out_write, err_write, stdin):
                if fd >= 0:
                    os.close(fd)
        started = adoption.start_time(process.pid)
        pipes = [(fd, os.fstat(fd).st_ino) for fd in held]
        console = ContainerConsole(console_fd if console_fd >= 0 else None, spec.tty, spec.stdin, spec.stdin_once)
        output = [await container_logs.open_pipe(fd) for fd in (out_read, err_read) if fd >= 0]
        return Started(process, started, pipes, console, output)

    async def stop(self, process: Process, grace: float) -> None:
        """SIGTERM the process group, SIGKILL it if the leader outlives `grace`."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace)
            grace = 5.0  # after SIGKILL: only a wedged kernel call keeps it

    def end_leftovers(self, process: Process) -> None:
        """Kill what a finished run left in its process group, as a container's processes die with its PID 1: else
        a restarted container would find its predecessor's children (and the ports they hold) still there."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    def record(self, process: Process) -> Object:
        """Its exit code and reason (`ContainerStatusUnknown` when an adopted one's status is lost)."""
        if process.returncode is None or (isinstance(process, Adopted) and not process.known):
            return dict(adoption.UNKNOWN_EXIT)
        code = exit_code(process.returncode)
        return {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}

    def enter(self, pod_netns: str, pid: int) -> list[str]:
        """Into the container's namespaces (network, mount, UTS; its root and working directory)."""
        return ["nsenter", "-t", str(pid), "-m", "-u", "-n", "-r", "-w"] if pid else netns.exec_argv(pod_netns, [])

    async def exec(self, pid: int, argv: list[str], env: dict[str, str], tty: bool, streams: CommandStreams) -> int:
        problem = missing_executable(argv[0], env.get("PATH", DEFAULT_PATH), "/")
        if problem:  # as runc words it, before anything starts
            raise CommandError(f"failed to exec in container: unable to start container process: {problem}: unknown")
        return await container_io.run_command([*self.enter("", pid), *argv], env, tty, streams)

    def usage(self) -> dict[int, tuple[float, int]]:
        return group_usage()

    async def adopt(self, pod_netns: str, runs: dict[str, tuple[int, int]]) -> dict[str, Process]:
        """Whatever else runs in the pod's namespace (a gone container's leftovers) is killed (`adoption.adopt`)."""
        return dict(await asyncio.to_thread(adoption.adopt, pod_netns, runs))

    async def reattach(self, process: Process, pipes: list[tuple[int, int]]) -> tuple[ContainerConsole, list[Pipe]]:
        """Its output, through the pipes' read ends it holds; its stdin stayed behind with the earlier agent."""
        output = [await container_logs.open_pipe(fd) for fd in adoption.reopen(process.pid, pipes)]
        return ContainerConsole(None, False, False, False), output


def _own_hostname(name: str) -> Callable[[], None]:
    """Run in the container's process before it execs: a UTS namespace of its own, named as the pod."""
    encoded = name.encode()

    def enter() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUTS) != 0 or libc.sethostname(encoded, len(encoded)) != 0:
            raise OSError(ctypes.get_errno(), "cannot give the container its hostname")

    return enter


def group_usage() -> dict[int, tuple[float, int]]:
    """Per process group: the CPU seconds of its processes (their reaped children's included) and their resident
    bytes, from one pass over /proc."""
    groups: dict[int, tuple[float, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:  # the fields after the command, state first: pgrp, utime..cstime and rss at 2, 11-14 and 21
            fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            pgid, ticks, pages = int(fields[2]), sum(int(f) for f in fields[11:15]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        cpu, memory = groups.get(pgid, (0.0, 0))
        groups[pgid] = (cpu + ticks / _TICKS, memory + pages * _PAGE)
    return groups
