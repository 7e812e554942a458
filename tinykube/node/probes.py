"""Container probes as the kubelet runs them: the spec with upstream's defaults, the threshold bookkeeping of
upstream's prober worker (pure), and the three actions (`httpGet`, `tcpSocket`, `exec`).

Network probes connect from the *node's* namespace to the pod IP, as the kubelet does from its host: the socket is
created in that namespace (`netns.socket_in`) and used from the event loop. `netns=None` probes from the current
namespace, which tests use against loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tinykube.sandbox import netns as nsutil

Object = dict[str, Any]
USER_AGENT = "kube-probe/1.32"
ACTIONS = ("httpGet", "tcpSocket", "exec", "grpc")


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    action: str  # one of ACTIONS
    handler: Object  # that action's fields
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3
    grace: float | None = None  # the probe's terminationGracePeriodSeconds (liveness), else the pod's

    @classmethod
    def parse(cls, probe: Object) -> ProbeSpec:
        action = next((name for name in ACTIONS if probe.get(name) is not None), "")
        grace = probe.get("terminationGracePeriodSeconds")
        return cls(
            action=action,
            handler=dict(probe.get(action) or {}),
            initial_delay=float(probe.get("initialDelaySeconds") or 0),
            period=float(probe.get("periodSeconds") or 10),
            timeout=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
            grace=None if grace is None else float(grace),
        )


@dataclass(slots=True)
class ProbeResults:
    """Upstream's worker bookkeeping: the result flips only after `successThreshold` consecutive successes or
    `failureThreshold` consecutive failures. Readiness starts failed, liveness starts successful."""

    result: bool
    last: bool | None = None
    run: int = 0

    def record(self, ok: bool, spec: ProbeSpec) -> bool:
        """Count one probe; returns whether the result changed."""
        self.run = self.run + 1 if ok == self.last else 1
        self.last = ok
        needed = spec.success_threshold if ok else spec.failure_threshold
        if ok == self.result or self.run < needed:
            return False
        self.result = ok
        return True


@dataclass(frozen=True, slots=True)
class Target:
    """Where a container's probes go."""

    pod_ip: str
    node_netns: str | None  # where network probes connect from (None: here)
    exec_prefix: Sequence[str] = ()  # prepended to exec probes' commands (`ip netns exec <pod netns>`)
    env: dict[str, str] = field(default_factory=dict)  # exec probes run with the container's environment
    ports: dict[str, int] = field(default_factory=dict)  # the container's named ports


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    message: str = ""


def resolve_port(port: Any, target: Target) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    if port in target.ports:
        return target.ports[port]
    raise ValueError(f"unknown port {port!r}")


async def _connect(host: str, port: int, target: Target) -> socket.socket:
    """A connected non-blocking socket to host:port from the target's node namespace."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if target.node_netns is None:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
    else:
        sock = nsutil.socket_in(target.node_netns, family)
    try:
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
    except BaseException:
        sock.close()
        raise
    return sock


async def tcp_socket(handler: Object, target: Target) -> Outcome:
    sock = await _connect(handler.get("host") or target.pod_ip, resolve_port(handler.get("port"), target), target)
    sock.close()
    return Outcome(True)


def _request(handler: Object, host: str, port: int) -> bytes:
    path = handler.get("path") or "/"
    headers = {"Host": f"{host}:{port}", "User-Agent": USER_AGENT, "Accept": "*/*", "Connection": "close"}
    for header in handler.get("httpHeaders") or []:
        headers[header["name"]] = header["value"]
    lines = [f"GET {path if path.startswith('/') else '/' + path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def http_get(handler: Object, target: Target) -> Outcome:
    """Success is a 2xx or 3xx status (redirects are not followed; upstream counts them as success as well,
    unless a same-host redirect leads to a failing page). HTTPS is not verified, as upstream."""
    host, port = handler.get("host") or target.pod_ip, resolve_port(handler.get("port"), target)
    sock = await _connect(host, port, target)
    tls = None
    if str(handler.get("scheme") or "HTTP").upper() == "HTTPS":
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(sock=sock, ssl=tls, server_hostname=host if tls else None)
    try:
        writer.write(_request(handler, host, port))
        status_line = await reader.readline()
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    parts = status_line.decode("latin-1").split()
    code = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0
    if 200 <= code < 400:
        return Outcome(True)
    return Outcome(False, f"HTTP probe failed with statuscode: {code}")


async def exec_probe(handler: Object, target: Target) -> Outcome:
    command = [str(arg) for arg in handler.get("command") or []]
    proc = await asyncio.create_subprocess_exec(
        *target.exec_prefix,
        *command,
        env=target.env or None,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await proc.communicate()
    finally:
        if proc.returncode is None:  # timed out (cancelled): the probe's process must not outlive it
            proc.kill()
            await proc.wait()
    if proc.returncode == 0:
        return Outcome(True)
    return Outcome(False, output.decode(errors="replace").strip()[-1024:])


HANDLERS: dict[str, Callable[[Object, Target], Awaitable[Outcome]]] = {
    "httpGet": http_get,
    "tcpSocket": tcp_socket,
    "exec": exec_probe,
}


async def probe_once(spec: ProbeSpec, target: Target) -> Outcome:
    """Run the probe once within its timeout; every error is a failure with upstream-like wording."""
    handler = HANDLERS.get(spec.action)
    if handler is None:
        return Outcome(False, f"unsupported probe action {spec.action or '(none)'!r}")
    try:
        async with asyncio.timeout(spec.timeout):
            return await handler(spec.handler, target)
    except TimeoutError:
        return Outcome(False, f"{spec.action} probe timed out after {spec.timeout:g}s")
    except (OSError, ValueError) as err:
        return Outcome(False, f"{spec.action} probe failed: {err}")


async def run_prober(
    spec: ProbeSpec,
    target: Target,
    results: ProbeResults,
    changed: Callable[[bool, Outcome], None],
    failed: Callable[[Outcome], None] = lambda outcome: None,
) -> None:
    """Probe at once after the initial delay, then every period, until cancelled: `changed(result, outcome)` on each
    flip, `failed(outcome)` on each failed attempt (the kubelet's `Unhealthy` event)."""
    await asyncio.sleep(spec.initial_delay)
    while True:
        outcome = await probe_once(spec, target)
        if not outcome.ok:
            failed(outcome)
        if results.record(outcome.ok, spec):
            changed(results.result, outcome)
        await asyncio.sleep(spec.period)


async def until_started(spec: ProbeSpec, target: Target, failed: Callable[[Outcome], None]) -> bool:
    """A startup probe: True at its first success; False once it failed `failureThreshold` times in a row."""
    await asyncio.sleep(spec.initial_delay)
    failures = 0
    while True:
        outcome = await probe_once(spec, target)
        if outcome.ok:
            return True
        failed(outcome)
        failures += 1
        if failures >= spec.failure_threshold:
            return False
        await asyncio.sleep(spec.period)
