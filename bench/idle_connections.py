"""An authenticated client among many idle connections (issue 30: "after 1,000 idle TLS sockets an authenticated
client is served in < 5 s").

The idle sockets are opened first, all at once, then one authenticated client makes a fresh connection (TLS
handshake, GET /api/v1/namespaces with its token): the figure is that client's time from connect to answer, and
how many of the idle sockets the apiserver closed meanwhile. Three kinds of idle socket:

- `tcp`: connected, nothing sent (no TLS handshake begun);
- `hello`: a ClientHello sent, the handshake never finished;
- `tls`: the handshake done, no request.

Each kind is run with the connection cap reached (`--max-connections`, below the number of sockets) and with the
default cap (the open-file limit less 128). `python idle_connections.py [--sockets 1000] [--cap 256]`
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import select
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import RunningCluster, running_cluster


def address(cluster: RunningCluster) -> tuple[str, int]:
    url = urlsplit(cluster.server)
    assert url.hostname in ("127.0.0.1", "localhost", "::1")  # loopback only
    return url.hostname, url.port or 443


def raw(cluster: RunningCluster) -> socket.socket:
    return socket.create_connection(address(cluster), timeout=60)


def hello(cluster: RunningCluster) -> socket.socket:
    """A ClientHello written by a memory-BIO TLS client, and nothing after it."""
    sock = raw(cluster)
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=address(cluster)[0])
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the ServerHello, which is never read
        tls.do_handshake()
    sock.sendall(outgoing.read())
    return sock


def handshaken(cluster: RunningCluster) -> socket.socket:
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    return context.wrap_socket(raw(cluster), server_hostname=address(cluster)[0])


KINDS: dict[str, Callable[[RunningCluster], socket.socket]] = {"tcp": raw, "hello": hello, "tls": handshaken}


def open_idle(cluster: RunningCluster, kind: str, count: int) -> list[socket.socket]:
    with ThreadPoolExecutor(32) as pool:
        found = list(pool.map(lambda _: _try(KINDS[kind], cluster), range(count)))
    for sock in found:
        if sock is not None:
            sock.settimeout(None)
    return [s for s in found if s is not None]


def _try(make: Callable[[RunningCluster], socket.socket], cluster: RunningCluster) -> socket.socket | None:
    try:
        return make(cluster)
    except OSError:
        return None  # refused or reset: the apiserver shed it at once


def served(cluster: RunningCluster) -> tuple[float, int]:
    """Seconds from a fresh connection to the answer of an authenticated GET, and its status."""
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    headers = {"Authorization": f"Bearer {cluster.token}"}
    start = time.monotonic()
    with httpx.Client(base_url=cluster.server, verify=verify, headers=headers, timeout=120) as http:
        try:
            status = http.get("/api/v1/namespaces").status_code
        except httpx.HTTPError as err:
            print(f"  the client's request failed: {err!r}", flush=True)
            status = 0
    return time.monotonic() - start, status


def closed(sockets: list[socket.socket]) -> int:
    """How many the apiserver has closed: readable, and what they read is the end (TLS records before it, the
    session tickets a TLS 1.3 server sends after its handshake, are read through)."""
    poller = select.poll()
    for sock in sockets:
        poller.register(sock, select.POLLIN)
    ready = {fd for fd, _ in poller.poll(200)}
    gone = 0
    for sock in (s for s in sockets if s.fileno() in ready):
        sock.settimeout(0.05)
        try:
            gone += sock.recv(1) == b""
        except TimeoutError:
            pass
        except OSError:
            gone += 1
    return gone


def measure(cluster: RunningCluster, kind: str, count: int, *, during: bool) -> tuple[object, ...]:
    """Idle sockets opened, then (or, in a burst, while they are being opened) one authenticated client served."""
    with ThreadPoolExecutor(1) as background:
        start = time.monotonic()
        opening = background.submit(open_idle, cluster, kind, count)
        if not during:
            opening.result()
            time.sleep(0.5)
        else:
            time.sleep(0.05)  # the flood under way
        took, status = served(cluster)
        idle = opening.result()
        opened_in = time.monotonic() - start
    try:
        return len(idle), f"{opened_in:.2f}", f"{took:.2f}", status, closed(idle)
    finally:
        for sock in idle:
            sock.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=256)
    parser.add_argument("--nofile", type=int, default=0, help="open-file limit (soft and hard) for the cluster")
    args = parser.parse_args()
    if args.nofile:  # the cluster inherits it; this process needs about --sockets of its own
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))
    print(f"load average: {os.getloadavg()}")
    print(f"{'cap':>14} {'idle':6} " + " ".join(f"{h:>9}" for h in ("opened", "open s", "served s", "status", "shed")))
    for cap in (args.cap, 0) if args.cap else (0,):
        flags = ("--max-connections", str(cap)) if cap else ()
        with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp) / "idle", *flags) as cluster:
            time.sleep(1)
            for kind in KINDS:
                for during in (False, True):
                    label = f"{cap or 'default'}{' burst' if during else ''}"
                    row = measure(cluster, kind, args.sockets, during=during)
                    print(f"{label:>14} {kind:6} " + " ".join(f"{v:>9}" for v in row), flush=True)
                    time.sleep(1)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
