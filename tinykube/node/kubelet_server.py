"""The part of the kubelet's HTTP API the apiserver uses: `GET /containerLogs/{namespace}/{pod}/{container}` (what
`kubectl logs` reaches through `pods/log`), `GET /metrics/resource` (what the metrics server scrapes), `/healthz`,
and the streaming endpoints the apiserver relays `pods/exec`, `pods/attach` and `pods/portforward` to:
`/exec/{namespace}/{pod}/{container}`, `/attach/...` and `/portForward/{namespace}/{pod}`, each an upgrade to a
WebSocket channel protocol or to SPDY (`tinykube.streams`). Plain HTTP on a loopback port; the Node advertises
it in its `tinykube.io/kubelet-endpoint` annotation.

Served by `tinykube.web` (one request per connection; a followed log is sent chunked as it grows).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from tinykube.api import errors
from tinykube.api.meta import parse_time
from tinykube.streams import channels, spdy_streams
from tinykube.streams.remotecommand import CommandRequest, CommandStreams
from tinykube.streams.websocket import StreamWebSocket, choose_subprotocol
from tinykube.web import Body, Query, Request, send_error, serve_http

log = logging.getLogger(__name__)

ENDPOINT_ANNOTATION = "tinykube.io/kubelet-endpoint"
Logs = Callable[..., AsyncIterator[bytes]]  # Runtime.logs, for the pod key "<namespace>/<name>"


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() in ("true", "1")


def _number(query: dict[str, list[str]], name: str) -> int | None:
    value = query.get(name, [""])[-1]
    if not value:
        return None
    if not value.lstrip("-").isdigit():
        raise errors.BadRequest(f"invalid {name}: {value!r}")
    return int(value)


def log_options(query: dict[str, list[str]]) -> dict[str, object]:
    """The query parameters of `containerLogs` as keyword arguments of `Runtime.logs`."""
    since = None
    if seconds := _number(query, "sinceSeconds"):
        since = datetime.now(UTC) - timedelta(seconds=seconds)
    elif text := query.get("sinceTime", [""])[-1]:
        since = parse_time(text)
        if since is None:
            raise errors.BadRequest(f"invalid sinceTime: {text!r}")
    return {
        "follow": _flag(query, "follow"),
        "tail_lines": _number(query, "tailLines"),
        "timestamps": _flag(query, "timestamps"),
        "previous": _flag(query, "previous"),
        "since_time": since,
        "limit_bytes": _number(query, "limitBytes"),
    }


class Streaming(Protocol):
    """What the streaming endpoints ask of the node: its pods' commands and ports (by pod key)."""

    async def exec(self, key: str, request: CommandRequest, streams: CommandStreams) -> int: ...

    async def attach(self, key: str, request: CommandRequest, streams: CommandStreams) -> int: ...

    async def dial(self, key: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]: ...

    def pod_uid(self, key: str) -> str: ...


SPDY = "spdy/3.1"
PORTFORWARD_TUNNEL = "SPDY/3.1+portforward.k8s.io"  # kubectl's port-forward: SPDY inside the WebSocket


class KubeletServer:
    def __init__(self, logs: Logs, resource_metrics: Callable[[], bytes], streaming: Streaming | None = None) -> None:
        self.logs = logs
        self.resource_metrics = resource_metrics
        self.streaming = streaming
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await serve_http(None, self._answer, host, port, upgrade=self._upgrade)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _upgrade(self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """exec, attach and portforward: the protocol is chosen by the upgrade asked for."""
        parts = request.path.strip("/").split("/")
        upgrade = request.headers.get("upgrade", "").lower()
        if upgrade not in ("websocket", SPDY):
            await send_error(writer, 400, f"unsupported upgrade: {request.headers.get('upgrade')}")
        elif self.streaming is None:
            await send_error(writer, 404, "streaming is not served by this node")
        elif parts[0] in ("exec", "attach") and len(parts) == 4:
            await self._command(request, reader, writer, parts[0], *parts[1:])
        elif parts[0] == "portForward" and len(parts) == 3:
            await self._port_forward(request, reader, writer, *parts[1:])
        else:
            await send_error(writer, 404, "404 page not found")

    async def _command(
        self,
        request: Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        kind: str,
        namespace: str,
        pod: str,
        container: str,
    ) -> None:
        assert self.streaming is not None
        key = f"{namespace}/{pod}"
        command = CommandRequest.from_query(namespace, pod, container, request.query, attach=kind == "attach")
        if kind == "exec" and not command.command:
            await send_error(writer, 400, "you must specify at least 1 command")
            return
        run = self.streaming.exec if kind == "exec" else self.streaming.attach

        async def run_pod(req: CommandRequest, streams: CommandStreams) -> int:
            return await run(key, req, streams)

        if request.headers["upgrade"].lower() == SPDY:
            await spdy_streams.serve_command(request, reader, writer, command, run_pod)
            return
        offered = request.headers.get("sec-websocket-protocol")
        protocol = choose_subprotocol(request, channels.REMOTECOMMAND_PROTOCOLS)
        if offered and protocol is None:
            await send_error(writer, 400, f"none of the offered subprotocols is supported: {offered}")
            return
        ws = await StreamWebSocket.accept(request, reader, writer, protocol or "")
        await channels.serve_command(ws, command, run_pod)

    async def _port_forward(
        self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, namespace: str, pod: str
    ) -> None:
        assert self.streaming is not None
        streaming, key = self.streaming, f"{namespace}/{pod}"
        full_name, uid = f"{pod}_{namespace}", streaming.pod_uid(key)  # as the kubelet names the pod in errors

        async def dial(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await streaming.dial(key, port)

        if request.headers["upgrade"].lower() == SPDY:
            await spdy_streams.serve_portforward(request, reader, writer, dial, pod=full_name, uid=uid)
            return
        protocol = choose_subprotocol(request, (PORTFORWARD_TUNNEL, *channels.PORTFORWARD_PROTOCOLS))
        if protocol == PORTFORWARD_TUNNEL:
            ws = await StreamWebSocket.accept(request, reader, writer, protocol)
            await spdy_streams.serve_portforward_tunnel(ws, dial, pod=full_name, uid=uid)
            return
        try:
            ports = channels.parse_ports(request.query.get("ports", []) + request.query.get("port", []))
        except ValueError as err:
            await send_error(writer, 400, str(err))
            return
        ws = await StreamWebSocket.accept(request, reader, writer, protocol or "")
        await channels.serve_portforward(ws, ports, dial, f"{full_name}, uid {uid}")

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    def _answer(self, path: str, query: Query) -> tuple[int, str, Body]:
        text = "text/plain"
        parts = path.strip("/").split("/")
        if path == "/healthz":
            return 200, text, b"ok"
        if path == "/metrics/resource":
            return 200, "text/plain; version=0.0.4; charset=utf-8", self.resource_metrics()
        if len(parts) != 4 or parts[0] != "containerLogs":
            return 404, text, b"404 page not found\n"
        _, namespace, pod, container = parts
        try:
            return 200, text, self.logs(f"{namespace}/{pod}", container, **log_options(query))
        except errors.ApiError as err:
            return err.code, text, str(err).encode()
