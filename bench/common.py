"""Shared by the benchmarks: start a real `tinykube up` in a temporary data dir and talk to it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson


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
    log = os.environ.get("BENCH_UP_LOG")  # a file for `up`'s log, to see what a slow run was doing
    proc = subprocess.Popen(
        [*UP, "--data-dir", str(data_dir), *extra],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "ab") if log else subprocess.DEVNULL,  # noqa: SIM115 (the child holds it)
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


class Connection:
    """One keep-alive HTTP/1.1 connection: a few lines of asyncio instead of httpx, whose CPU per request is of the
    order of the apiserver's (on this 2-core machine, httpx creators took about a core and ran at a third of the
    rate this client reaches)."""

    def __init__(self, bench: Bench) -> None:
        self.url = urlsplit(bench.server)
        self.ssl = ssl.create_default_context(cafile=str(bench.ca)) if self.url.scheme == "https" else None
        self.headers = f"Host: {self.url.netloc}\r\nAuthorization: Bearer {bench.token}\r\n"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.url.hostname, self.url.port, ssl=self.ssl)
        return self.reader, self.writer

    async def send(self, method: str, path: str, body: bytes = b"", ctype: str = "application/json") -> None:
        _, writer = await self.open()
        head = f"{method} {path} HTTP/1.1\r\n{self.headers}Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body)

    async def response(self) -> tuple[int, bytes]:
        reader, _ = await self.open()
        reply = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", reply)
        if length:
            payload = await reader.readexactly(int(length.group(1)))
        elif re.search(rb"(?i)\r\ntransfer-encoding: *chunked", reply):
            parts = []
            while n := int((await reader.readline()).strip(), 16):
                parts.append((await reader.readexactly(n + 2))[:-2])
            await reader.readline()
            payload = b"".join(parts)
        else:
            payload = b""
        return int(reply[9:12]), payload

    async def exchange(
        self, method: str, path: str, body: bytes = b"", ctype: str = "application/json"
    ) -> tuple[int, bytes]:
        await self.send(method, path, body, ctype)
        return await self.response()

    async def request(self, method: str, path: str, body: bytes = b"", ctype: str = "application/json") -> Any:
        """The decoded reply; an error status raises."""
        status, payload = await self.exchange(method, path, body, ctype)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {payload[:300]!r}")
        return orjson.loads(payload) if payload.startswith(b"{") else payload

    async def watch(
        self, path: str, on_event: Callable[[dict[str, Any], float], None], started: Callable[[], None] = lambda: None
    ) -> None:
        """Stream `path` (a watch), calling on_event(event, monotonic receipt time) for each line, and started()
        once the apiserver has accepted the watch."""
        await self.send("GET", path)
        reader, _ = await self.open()
        head = await reader.readuntil(b"\r\n\r\n")
        if head[9:12] != b"200":
            raise RuntimeError(f"watch {path}: {head[:200]!r}")
        started()
        chunked = re.search(rb"(?i)\r\ntransfer-encoding: *chunked", head) is not None
        buf = b""
        while True:
            if chunked:
                n = int((await reader.readline()).strip(), 16)
                if n == 0:
                    return
                buf += (await reader.readexactly(n + 2))[:-2]
            else:
                data = await reader.read(65536)
                if not data:
                    return
                buf += data
            now = time.monotonic()
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    on_event(orjson.loads(line), now)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await self.writer.wait_closed()
