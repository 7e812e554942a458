"""What the built-in images share: a threaded HTTP server on the pod's IPv4 addresses, the pod's hostname, and the
way the servers they stand in for end on SIGTERM (at once, exit code 0). Standard library only."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterable
from datetime import datetime
from types import FrameType


def hostname() -> str:
    """The pod's hostname. These processes share the machine's UTS namespace, so `gethostname()` would be the
    machine's; the runtime sets HOSTNAME to the pod's, as a container's hostname is."""
    return os.environ.get("HOSTNAME") or socket.gethostname()


def sigterm_event() -> threading.Event:
    """An event set by SIGTERM (instead of dying of it, so the exit code is the server's own)."""
    event = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        event.set()

    signal.signal(signal.SIGTERM, handler)
    return event


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_http(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> Server:
    """Listen on `port` of every IPv4 address (a pod has one) and serve in a daemon thread."""
    server = Server(("0.0.0.0", port), handler)
    threading.Thread(target=server.serve_forever, name=f"http {port}", daemon=True).start()
    return server


def serve_until_sigterm(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
    stop = sigterm_event()
    start_http(port, handler)
    stop.wait()
    sys.exit(0)


class Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, each response sent whole by `reply`; `access` logs it as the stood-in server does."""

    protocol_version = "HTTP/1.1"
    server_version = ""  # no Server header (Go's servers send none)

    def reply(self, status: int, body: bytes, content_type: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.send_response_only(status)
        if self.server_version:
            self.send_header("Server", self.server_version)
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.access(status, len(body))

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def access(self, status: int, size: int) -> None:
        """Log a finished request (nothing by default)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # `access` logs instead, once the size is known


class NginxHandler(Handler):
    """A stand-in for an nginx-based image: its access log in nginx's `main` format on stdout, as the official
    image sends it."""

    def access(self, status: int, size: int) -> None:
        when = datetime.now().astimezone().strftime("%d/%b/%Y:%H:%M:%S %z")
        referer, agent = self.headers.get("Referer") or "-", self.headers.get("User-Agent") or "-"
        forwarded = self.headers.get("X-Forwarded-For") or "-"
        line = f'{self.client_address[0]} - - [{when}] "{self.requestline}" {status} {size} "{referer}" "{agent}"'
        print(f'{line} "{forwarded}"', flush=True)
