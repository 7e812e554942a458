"""Shared by the benchmarks: start a real `tinykube up` in a temporary data dir and talk to it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass
class Bench:
    server: str
    token: str
    ca: Path
    proc: subprocess.Popen[bytes]
    data_dir: Path
    startup: float

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.server,
            verify=ssl.create_default_context(cafile=str(self.ca)),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
        )

    def pids(self) -> list[int]:
        out = subprocess.run(["pgrep", "-f", f"data-dir={self.data_dir}/etcd"], capture_output=True, text=True)
        return [self.proc.pid] + [int(p) for p in out.stdout.split()]

    def rss_mb(self) -> float:
        total = 0
        for pid in self.pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total / 1024

    def stop(self) -> None:
        stop(self.proc)


UP = [sys.executable, "-m", "tinykube.cli", "up", "--api-port", "0", "--dns-port", "0"]  # free ports: runs may overlap


def start(*extra: str, data_dir: Path | None = None) -> Bench:
    """Start a cluster (in `data_dir`, else a fresh temporary one) and return once /readyz is green; `startup` is
    the wall time from exec to green. The process is ended if it does not come up."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="tinykube-bench-")) / "c"
    began = time.perf_counter()
    proc = subprocess.Popen(
        [*UP, "--data-dir", str(data_dir), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        state = data_dir / "cluster.json"  # written atomically by `tinykube up`
        deadline = time.monotonic() + 60
        while not state.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("tinykube up did not start")
            time.sleep(0.005)
        server = json.loads(state.read_text())["server"]
        bench = Bench(server, (data_dir / "token").read_text().strip(), data_dir / "pki" / "ca.crt", proc, data_dir, 0)
        with bench.client() as c:
            while c.get("/readyz").status_code != 200:
                time.sleep(0.005)
    except BaseException:
        stop(proc)
        raise
    bench.startup = time.perf_counter() - began
    return bench


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def temporary_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory for a benchmark's clusters, removed afterwards whatever happens."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def env_with(**kw: str) -> dict[str, str]:
    return {**os.environ, **kw}
