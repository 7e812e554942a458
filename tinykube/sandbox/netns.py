"""Network-namespace helpers: `ip` commands, work done inside a named namespace, listing and removing namespaces.

Sockets (probes, listeners) are made inside a namespace by a short-lived thread that calls setns(2) on
`/run/netns/<name>` and exits: setns changes only the calling thread's namespace, so the rest of the process (its
API connections) stays in the root namespace, and a socket keeps the namespace it was created in. Python 3.11 has
no `os.setns`; libc's is called through ctypes. Processes run in a namespace through `ip netns exec`, which also
bind-mounts `/etc/netns/<name>/resolv.conf` over `/etc/resolv.conf` for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

NETNS_RUN = Path("/run/netns")  # where `ip netns add` pins namespaces
NETNS_ETC = Path("/etc/netns")  # per-namespace files `ip netns exec` bind-mounts over /etc
CLONE_NEWNET = 0x40000000
IP = shutil.which("ip") or "/usr/sbin/ip"  # absolute: a container's PATH must not decide which `ip` runs


class NetnsError(Exception):
    """An `ip` command or setns(2) failed."""


def ip(*args: str, netns: str | None = None, stdin: str | None = None, check: bool = True) -> str:
    """Run `ip [-n netns] args…` and return its output; a failure raises NetnsError with ip's message."""
    argv = [IP, *(["-n", netns] if netns else []), *args]
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.stdout


def ip_batch(netns: str | None, commands: Sequence[str]) -> None:
    """Several `ip` commands in one process (`ip -batch -`), in order, stopping at the first failure."""
    ip("-batch", "-", netns=netns, stdin="\n".join(commands) + "\n")


def exec_argv(netns: str, argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` inside `netns` (with the namespace's /etc/netns files mounted)."""
    return [IP, "netns", "exec", netns, *argv]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def enter(netns: str) -> None:
    """Move the calling thread into `netns`."""
    fd = os.open(NETNS_RUN / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc().setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NetnsError(f"setns {netns}: {os.strerror(err)}")
    finally:
        os.close(fd)


def run_in(netns: str, fn: Callable[[], T]) -> T:
    """Call `fn` in a fresh thread that has entered `netns`, and return its result (or raise its exception)."""
    future: Future[T] = Future()

    def target() -> None:
        try:
            enter(netns)
            future.set_result(fn())
        except BaseException as err:
            future.set_exception(err)

    threading.Thread(target=target, name=f"netns {netns}", daemon=True).start()
    return future.result()


def socket_in(netns: str, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A non-blocking socket that lives in `netns` (whatever thread uses it later)."""

    def make() -> socket.socket:
        sock = socket.socket(family, kind)
        sock.setblocking(False)
        return sock

    return run_in(netns, make)


def write_sysctl(netns: str, key: str, value: str) -> None:
    """Set a `net.*` sysctl of `netns` (/proc/sys/net follows the opening thread's namespace)."""
    path = Path("/proc/sys") / key.replace(".", "/")
    run_in(netns, lambda: path.write_text(value))


def exists(netns: str) -> bool:
    return (NETNS_RUN / netns).exists()


def list_netns(prefix: str) -> list[str]:
    """Named namespaces (and leftover /etc/netns entries) whose name starts with `prefix`."""
    found: set[str] = set()
    for directory in (NETNS_RUN, NETNS_ETC):
        if directory.is_dir():
            found.update(name for name in os.listdir(directory) if name.startswith(prefix))
    return sorted(found)


def pids(netns: str) -> list[int]:
    """Processes whose network namespace is `netns`."""
    if not exists(netns):
        return []
    return [int(pid) for pid in ip("netns", "pids", netns, check=False).split()]


def kill_all(netns: str, sig: signal.Signals) -> int:
    """Send `sig` to every process in `netns`; returns how many there were."""
    found = pids(netns)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return len(found)


def delete(netns: str) -> bool:
    """Kill whatever still runs in `netns` (a process would keep it and its links alive), delete it and its
    /etc/netns entry; returns whether anything was there. Idempotent."""
    found = exists(netns)
    if found:
        kill_all(netns, signal.SIGKILL)
        ip("netns", "delete", netns, check=False)
    etc = NETNS_ETC / netns
    if etc.exists():
        shutil.rmtree(etc, ignore_errors=True)
        found = True
    return found
