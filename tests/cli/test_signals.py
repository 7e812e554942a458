"""Ctrl-C (SIGINT) stops every long-running tinykube command, whatever the process inherited (issue 30).

A shell script's `cmd &` and many job runners start their children with SIGINT ignored; Python leaves it ignored,
and asyncio's Runner only takes a SIGINT that has Python's default handler. So `tinykube node` and `tinykube
controllers` started by the test suite under such a runner went on running after their test sent SIGINT (and
after the suite ended), while SIGTERM stopped them. Each command here is started with SIGINT ignored, as such a
runner starts it, and must end by SIGINT alone with Ctrl-C's status: while it is still trying to reach an apiserver
that is not there, and (for `up`) while it is starting and once it runs.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import RunningCluster, interrupt


def ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tinykube.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=ignoring_sigint,
        )


def interrupted(proc: subprocess.Popen[bytes], log: Path) -> int:
    """SIGINT; the status it ended with. One that did not end is killed, and the test fails."""
    assert proc.poll() is None, f"ended before SIGINT ({proc.returncode}):\n{log.read_text()[-3000:]}"
    code = interrupt(proc)
    assert code is not None, f"still running 30 s after SIGINT:\n{log.read_text()[-3000:]}"
    return code


def waited_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, f"ended ({proc.returncode}) before {text!r}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {text!r} in {timeout} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


@pytest.fixture
def unreachable(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig whose apiserver's port nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": 1}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "unreachable.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    yield path


IPAM = ["controllers", "--controllers", "nodeipam"]
# (the command, what its log says while it tries again)
COMMANDS = [
    pytest.param(["node", "--name", "sig", "--node-ip", "172.20.0.98"], "unable to register node", id="node"),
    pytest.param([*IPAM, "--leader-elect=false"], "list/watch failed", id="controllers"),
    pytest.param(IPAM, "error retrieving resource lock", id="controllers-elected"),
    pytest.param(["dns", "--port", "0"], "list/watch failed", id="dns"),
]


@pytest.mark.parametrize(("args", "retrying"), COMMANDS)
def test_sigint_stops_a_component_still_reaching_its_apiserver(
    unreachable: Path, tmp_path: Path, args: list[str], retrying: str
) -> None:
    log = tmp_path / "component.log"
    proc = start([*args, "--kubeconfig", str(unreachable)], log)
    try:
        waited_for(log, retrying, proc)
        assert interrupted(proc, log) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("args", "_"), COMMANDS[1:])
def test_sigint_stops_a_component_at_work(cluster: RunningCluster, tmp_path: Path, args: list[str], _: str) -> None:
    log = tmp_path / "component.log"
    proc = start([*args, "--kubeconfig", str(cluster.kubeconfig)], log)
    try:
        time.sleep(3)  # connected and serving (a SIGINT before its loop runs is Python's KeyboardInterrupt)
        assert interrupted(proc, log) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("after", ["starting", "ready"])
def test_sigint_stops_up(tmp_path: Path, after: str) -> None:
    """`up --nodes 2` stops cleanly by SIGINT (status 0, as it always has), while it waits for its nodes too."""
    data_dir = tmp_path / "sig"
    log = tmp_path / "up.log"
    proc = start(["up", "--api-port", "0", "--dns-port", "0", "--nodes", "2", "--data-dir", str(data_dir)], log)
    try:
        waited_for(log, "is ready" if after == "ready" else "etcd", proc)
        assert interrupted(proc, log) == 0
        assert not (data_dir / "cluster.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
