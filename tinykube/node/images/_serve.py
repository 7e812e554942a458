"""What the built-in images share: a threaded HTTP server on the pod's IPv4 addresses, the pod's hostname, and the
way the servers they stand in for end on SIGTERM (at once, exit code 0). Standard library only.

They end by `exit_now`, never through the interpreter's finalization: that stops the daemon threads serving requests
wherever they are, and one stopped while it held stdout's or stderr's lock (an access log line, a request's
traceback) makes the final flush a fatal error, so the process aborts with 134 instead of exiting 0 (seen under
load, where a probe's connection was being logged or reset as SIGTERM came)."""

from __future__ import annotations

import contextlib
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


class Sigterm:
    """Whether SIGTERM came (instead of dying of it, so the exit code is the server's own). `wait()` wakes whichever
    thread the kernel gave the signal to: Python runs its handler in the main thread only, and a main thread asleep
    in a lock (`threading.Event.wait()`) is not woken by a signal that a serving thread took, so it would sleep
    through it (until the SIGKILL: 137). The C-level handler writes to the wakeup fd from any thread."""

    def __init__(self) -> None:
        self.got = False
        self._wakeups, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.got = True

    def wait(self) -> None:
        while not self.got:
            os.read(self._wakeups, 64)  # returns once a signal came; its handler runs before the next check


def sigterm_event() -> Sigterm:
    """SIGTERM's `Sigterm`: made in the main thread before any other starts."""
    return Sigterm()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away (a TCP probe's reset, a closed keep-alive) is no error, as servers log none for
        it; anything else is reported as socketserver does."""
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def start_http(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> Server:
    """Listen on `port` of every IPv4 address (a pod has one) and serve in a daemon thread."""
    server = Server(("0.0.0.0", port), handler)
    threading.Thread(target=server.serve_forever, name=f"http {port}", daemon=True).start()
    return server


def serve_until_sigterm(port: int, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
    stop = sigterm_event()
    server = start_http(port, handler)
    stop.wait()
    server.shutdown()  # no new requests; those being served are ended with the process
    exit_now(0)


def exit_now(code: int) -> None:
    """End the process with `code` once what it wrote is flushed, without finalizing the interpreter under threads
    that may still be writing (see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # its reader is gone: nothing more can be said there
            stream.flush()
    os._exit(code)


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
