"""The built-in `agnhost` image (`registry.k8s.io/e2e-test-images/agnhost`), with the subcommands upstream's
tutorials and e2e tests use most, and upstream's flags (`agnhost netexec --http-port=8080`):

- `netexec [--http-port=8080] [--udp-port=8081] [--delay-shutdown=0]`: HTTP with `/` (`NOW: <time>`), `/clientip`
  (`ip:port`), `/echo?msg=…[&code=…]`, `/hostname` and `/hostName`, `/header[?key=…]`, `/healthz` (200 once the
  UDP server listens, else 412, as upstream), `/readyz`, `/dial?host=&port=&request=&protocol=http|udp&tries=`,
  `/shell?cmd=…`, `/exit?code=…`, `/shutdown`; UDP answering `hostname`, `echo <msg>`, `clientip`
  (`--udp-port=-1` turns it off). SIGTERM: exit 0, after `--delay-shutdown` seconds with `/readyz` at 503.
- `serve-hostname [--port=9376] [--http=true] [--tcp] [--udp] [--close]`: the pod's hostname over HTTP (any path),
  or raw over TCP / UDP. SIGTERM: exit 0 (upstream lingers 60 s awaiting deletion; here it would only delay it).
- `pause`: wait for SIGTERM or SIGINT.

Flags follow pflag: `--name=value`, `--name value`, a bare `--bool`. Logs go to stderr in Go's `log` format.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

from tinykube.node.images._serve import Handler, exit_now, hostname, sigterm_event, start_http

Flags = dict[str, int | str | bool]
TRUE, FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")
STARTED = time.monotonic()


class UsageError(Exception):
    """Bad command line: printed as cobra prints it, exit code 1."""


def log(message: str) -> None:
    print(f"{datetime.now():%Y/%m/%d %H:%M:%S} {message}", file=sys.stderr, flush=True)


def _convert(default: int | str | bool, name: str, value: str) -> int | str | bool:
    if isinstance(default, bool):
        if value not in TRUE + FALSE:
            raise UsageError(f'invalid argument "{value}" for "--{name}" flag: strconv.ParseBool: parsing '
                             f'"{value}": invalid syntax')  # fmt: skip
        return value in TRUE
    if isinstance(default, int):
        try:
            return int(value)
        except ValueError:
            raise UsageError(f'invalid argument "{value}" for "--{name}" flag: strconv.ParseInt: parsing '
                             f'"{value}": invalid syntax') from None  # fmt: skip
    return value


def parse_flags(argv: list[str], defaults: Flags) -> Flags:
    """pflag's long flags; no positional arguments (the subcommands take none)."""
    values, rest = dict(defaults), list(argv)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--") or arg == "--":
            raise UsageError(f"accepts at most 0 arg(s), received {len(rest) + 1}")
        name, eq, value = arg[2:].partition("=")
        if name not in defaults:
            raise UsageError(f"unknown flag: --{name}")
        if not eq and isinstance(defaults[name], bool):
            value = "true"
        elif not eq:
            if not rest:
                raise UsageError(f"flag needs an argument: --{name}")
            value = rest.pop(0)
        values[name] = _convert(defaults[name], name, value)
    return values


# netexec


class NetexecState:
    def __init__(self) -> None:
        self.udp_ready = threading.Event()
        self.terminating = threading.Event()


def go_now() -> str:
    """`time.Now()` as Go's `%v` prints it."""
    now = datetime.now().astimezone()
    zone = now.strftime("%Z") or now.strftime("%z")
    return f"{now:%Y-%m-%d %H:%M:%S.%f}000 {now:%z} {zone} m=+{time.monotonic() - STARTED:.9f}"


def dial_http(host: str, port: str, request: str) -> str:
    with urllib.request.urlopen(f"http://{host}:{port}/{request}", timeout=5) as response:
        body: bytes = response.read()
        return body.decode(errors="replace")


def dial_udp(host: str, port: str, request: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.connect((host, int(port)))
        sock.send(request.encode())
        try:
            return sock.recv(2048).decode(errors="replace")
        except OSError as err:
            raise OSError(f"reading from udp connection failed. err:'{err}'") from None


def dial(params: dict[str, str]) -> tuple[int, str]:
    """`/dial`: the request sent `tries` times; JSON of the responses and errors."""
    protocol = (params.get("protocol") or "http").lower()
    dialer: Callable[[str, str, str], str] | None = {"http": dial_http, "udp": dial_udp}.get(protocol)
    if dialer is None:
        return 400, f"unsupported protocol. {protocol}\n"
    if not params.get("request"):
        return 400, "request parameter not specified. <nil>\n"
    try:
        tries = int(params.get("tries") or 1)
    except ValueError as err:
        return 400, f"tries parameter is invalid. {err}\n"
    responses, errors, last = [], [], ""
    for _ in range(tries):
        try:
            last = dialer(params.get("host", ""), params.get("port", ""), params["request"])
            responses.append(last)
        except (OSError, ValueError, urllib.error.URLError) as err:
            last = ""
            errors.append(str(err))
    output: dict[str, list[str]] = {}
    if last:  # upstream reports the responses only when the last try answered
        output["responses"] = responses
    if errors:
        output["errors"] = errors
    return 200, json.dumps(output, separators=(",", ":"))


def shell(command: str) -> str:
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=False)
    output: dict[str, str] = {}
    if done.stdout or done.stderr:
        output["output"] = done.stdout + done.stderr
    if done.returncode:
        output["error"] = f"exit status {done.returncode}"
    return json.dumps(output, separators=(",", ":"))


def canonical(name: str) -> str:
    """Go's canonical header key: `x-forwarded-for` is `X-Forwarded-For`."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def netexec_handler(state: NetexecState) -> type[Handler]:
    class Netexec(Handler):
        def params(self) -> dict[str, str]:
            """Go's `FormValue`: the query, and a urlencoded POST body."""
            query = urlsplit(self.path).query
            if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
                query += "&" + self.read_body().decode(errors="replace")
            return {key: values[0] for key, values in parse_qs(query, keep_blank_values=True).items()}

        def text(self, body: str, status: int = 200) -> None:
            self.reply(status, body.encode(), "text/plain; charset=utf-8")

        def do_GET(self) -> None:
            path, params = urlsplit(self.path).path, self.params()
            log(f"{self.command} {path}")
            route = ROUTES.get(path)
            if route is None:
                self.text(f"NOW: {go_now()}")
            else:
                route(self, params)

        do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

        def clientip(self, params: dict[str, str]) -> None:
            self.text(f"{self.client_address[0]}:{self.client_address[1]}")

        def echo(self, params: dict[str, str]) -> None:
            code = params.get("code", "")
            if code and not code.lstrip("-").isdigit():
                self.text(f"argument 'code' must be an integer or empty, got \"{code}\"\n")
                return
            self.text(params.get("msg", ""), int(code) if code else 200)

        def hostname(self, params: dict[str, str]) -> None:
            self.text(hostname())

        def header(self, params: dict[str, str]) -> None:
            key = params.get("key", "")
            if key:
                self.text(self.headers.get(key) or "")
                return
            found: dict[str, list[str]] = {}
            for name, value in self.headers.items():
                if name.lower() != "host":  # Go keeps Host out of the header map
                    found.setdefault(canonical(name), []).append(value)
            self.text(json.dumps(found, sort_keys=True, separators=(",", ":")))

        def healthz(self, params: dict[str, str]) -> None:
            self.text("", 200 if state.udp_ready.is_set() else 412)

        def readyz(self, params: dict[str, str]) -> None:
            if state.terminating.is_set():
                self.text("shutting down", 503)
            else:
                self.text("ok" if state.udp_ready.is_set() else "", 200 if state.udp_ready.is_set() else 412)

        def dial(self, params: dict[str, str]) -> None:
            status, body = dial(params)
            self.text(body, status)

        def shell(self, params: dict[str, str]) -> None:
            self.text(shell(params.get("shellCommand") or params.get("cmd") or ""))

        def exit(self, params: dict[str, str]) -> None:
            code = params.get("code", "")
            if code and not code.isdigit():
                self.text(f"argument 'code' must be an integer [0-127] or empty, got \"{code}\"\n")
                return
            os._exit(int(code or 0))

    ROUTES: dict[str, Callable[[Netexec, dict[str, str]], None]] = {
        "/clientip": Netexec.clientip,
        "/echo": Netexec.echo,
        "/hostname": Netexec.hostname,
        "/hostName": Netexec.hostname,
        "/header": Netexec.header,
        "/healthz": Netexec.healthz,
        "/readyz": Netexec.readyz,
        "/dial": Netexec.dial,
        "/shell": Netexec.shell,
        "/exit": Netexec.exit,
        "/shutdown": lambda handler, params: os._exit(0),
    }
    return Netexec


def udp_answer(text: str, client: tuple[str, int]) -> str | None:
    """netexec's UDP commands (matched lowercased, as upstream does); None for anything else."""
    received = text.strip().lower()
    if received == "hostname":
        return hostname()
    if received.startswith("echo "):
        return received.split(" ", 1)[1]
    if received == "clientip":
        return f"{client[0]}:{client[1]}"
    return None


def serve_udp(port: int, answer: Callable[[str, tuple[str, int]], str | None], ready: threading.Event) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("0.0.0.0", port))
        log(f"Started UDP server on port  {port}")
        ready.set()
        while True:
            data, client = sock.recvfrom(2048)
            reply = answer(data.decode(errors="replace"), client)
            if reply is not None:
                sock.sendto(reply.encode(), client)


def netexec(argv: list[str]) -> int:
    flags = parse_flags(argv, {"http-port": 8080, "udp-port": 8081, "sctp-port": -1, "delay-shutdown": 0,
                               "udp-listen-addresses": "", "http-override": ""})  # fmt: skip
    state = NetexecState()
    stop = sigterm_event()
    if flags["udp-port"] != -1:
        threading.Thread(target=serve_udp, args=(flags["udp-port"], udp_answer, state.udp_ready), daemon=True).start()
    start_http(int(flags["http-port"]), netexec_handler(state))
    log(f"Started HTTP server on port {flags['http-port']}")
    stop.wait()
    state.terminating.set()
    delay = int(flags["delay-shutdown"])
    if delay > 0:
        log(f"Sleeping {delay} seconds before terminating...")
        time.sleep(delay)
    return 0


# serve-hostname


def hostname_handler(close: bool) -> type[Handler]:
    class ServeHostname(Handler):
        def do_GET(self) -> None:
            log(f"HTTP request from {self.client_address[0]}:{self.client_address[1]}")
            headers = [("Connection", "close")] if close else []
            self.reply(200, hostname().encode(), "text/plain; charset=utf-8", headers)
            self.close_connection = self.close_connection or close

        do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

    return ServeHostname


def serve_tcp(port: int) -> None:
    with socket.create_server(("0.0.0.0", port)) as listener:
        while True:
            conn, client = listener.accept()
            log(f"TCP request from {client[0]}:{client[1]}")
            with conn:
                conn.sendall(hostname().encode())


def serve_hostname(argv: list[str]) -> int:
    flags = parse_flags(argv, {"tcp": False, "udp": False, "http": True, "close": False, "port": 9376})
    if flags["http"] and (flags["tcp"] or flags["udp"]):
        log("Can't serve TCP/UDP mode and HTTP mode at the same time")
        return 1
    port, stop = int(flags["port"]), sigterm_event()
    if flags["tcp"]:
        threading.Thread(target=serve_tcp, args=(port,), daemon=True).start()
    if flags["udp"]:
        answer: Callable[[str, tuple[str, int]], str] = lambda text, client: hostname()  # noqa: E731
        threading.Thread(target=serve_udp, args=(port, answer, threading.Event()), daemon=True).start()
    if flags["http"]:
        start_http(port, hostname_handler(bool(flags["close"])))
    log(f"Serving on port {port}.")
    stop.wait()
    log("Shutting down after receiving signal: terminated.")
    return 0


def pause(argv: list[str]) -> int:
    parse_flags(argv, {})
    stop = sigterm_event()
    log("Paused")
    stop.wait()
    log("Shutting down, got signal")
    return 0


COMMANDS: dict[str, Callable[[list[str]], int]] = {"netexec": netexec, "serve-hostname": serve_hostname, "pause": pause}
USAGE = "agnhost: tinykube's built-in stand-in for the e2e test image.\n\nUsage:\n  agnhost [command]\n\n" + (
    "Available Commands:\n" + "".join(f"  {name}\n" for name in COMMANDS)
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f'Error: unknown command "{argv[0]}" for "agnhost"\nRun \'agnhost --help\' for usage.', file=sys.stderr)
        return 1
    try:
        return command(argv[1:])
    except UsageError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
