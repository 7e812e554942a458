"""The part of the kubelet's HTTP API the apiserver uses: `GET /containerLogs/{namespace}/{pod}/{container}` (what
`kubectl logs` reaches through `pods/log`), plus `/healthz`. Plain HTTP on a loopback port; the Node advertises
it in its `tinykube.io/kubelet-endpoint` annotation.

Just enough HTTP/1.1 for one request per connection; a followed log is sent chunked as it grows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from tinykube.api import errors
from tinykube.api.meta import parse_time

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


class KubeletServer:
    def __init__(self, logs: Logs) -> None:
        self.logs = logs
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, target = head.split(b" ", 2)[:2]
            await self._answer(method.decode(), urlsplit(target.decode("latin-1")), writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()

    async def _answer(self, method: str, url: SplitResult, writer: asyncio.StreamWriter) -> None:
        path, query = unquote(url.path), parse_qs(url.query)
        parts = path.strip("/").split("/")
        if method != "GET":
            return await _reply(writer, 405, b"method not allowed\n")
        if path == "/healthz":
            return await _reply(writer, 200, b"ok")
        if len(parts) != 4 or parts[0] != "containerLogs":
            return await _reply(writer, 404, b"404 page not found\n")
        _, namespace, pod, container = parts
        try:
            stream = self.logs(f"{namespace}/{pod}", container, **log_options(query))
        except errors.ApiError as err:
            return await _reply(writer, err.code, str(err).encode())
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        async for chunk in stream:
            if chunk:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


async def _reply(writer: asyncio.StreamWriter, code: int, body: bytes) -> None:
    reasons = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
    head = (
        f"HTTP/1.1 {code} {reasons.get(code, 'Error')}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    )
    writer.write(head.encode() + b"Connection: close\r\n\r\n" + body)
    await writer.drain()
