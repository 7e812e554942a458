"""`python -m tinykube.testing.server up --data-dir D [flags of tinykube up]`: `tinykube up` for a test session.

It is `tinykube up` with one difference that matters for a fixture's start-up time: its etcd boots *while* Python
imports the cluster's modules (about half a second) instead of after. This
process owns that etcd (passed to `up` as `--etcd-servers`), stops it on the way out, and writes its URL to
`<data-dir>/etcd-url` for `Cluster.reset()`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import os
import signal
import sys
from pathlib import Path

from tinykube.store.launcher import EtcdProcess, find_etcd

# What `tinykube up` imports before it can serve (see cli._up).
HEAVY_MODULES = ("uvloop", "tinykube.up", "tinykube.controllers.nodeipam")
PARENT_ENV = "TINYKUBE_TEST_PARENT"  # the pid this server must not outlive (unset: it may, as for --tinykube-keep)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """SIGTERM this server when the test process dies, even by SIGKILL (and its etcd follows it the same way).
    Asked for here rather than in a preexec_fn: the test process may have threads, and forking with a preexec_fn
    is not safe in a threaded process."""
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):  # it died before the prctl
        sys.exit(1)


def _import_heavy_modules() -> None:
    for name in HEAVY_MODULES:
        importlib.import_module(name)


class _SessionEtcd(EtcdProcess):
    """The session's etcd, whose boot overlaps with the imports."""

    def _wait_healthy(self, timeout: float) -> bool:
        _import_heavy_modules()  # in this thread: the fork is done, and imports and etcd's boot overlap
        return super()._wait_healthy(timeout)


def main(argv: list[str]) -> int:
    """argv: `up` and its flags (`--data-dir` required; `--etcd-servers` is added here)."""
    _die_with_parent()
    known = argparse.ArgumentParser(add_help=False)
    known.add_argument("--data-dir", type=Path, required=True)
    data_dir = known.parse_known_args(argv)[0].data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    # Started from the main thread: etcd's parent-death signal follows the thread that forked it.
    etcd = _SessionEtcd(find_etcd(), data_dir / "etcd")
    etcd.start()
    try:
        (data_dir / "etcd-url").write_text(etcd.url)
        from tinykube.cli import main as cli_main

        return cli_main([*argv, "--etcd-servers", etcd.url])
    finally:
        etcd.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
