"""Just enough HTTP/1.1 for health, readiness, metrics and log endpoints (DNS, proxy, node agent): one GET per
connection, answered by a plain function of the path and query. No framework: these ports are probed often and
must stay cheap. A body that is an async iterator is streamed chunked as it comes (a followed log). A server may
also take upgrade requests (the node agent's exec, attach and port-forward) over: the hook gets the connection."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs, unquote, urlsplit

Body = bytes | AsyncIterator[bytes]
Query = dict[str, list[str]]
Handler = Callable[[str, Query], tuple[int, str, Body]]  # (path, query) -> (status, content type, body)


@dataclass(frozen=True, slots=True)
class Request:
    """An upgrade request's head: header names lower-cased, repeated ones joined with ", "."""

    method: str
    path: str
    query: Query
    headers: dict[str, str]
    target: str  # the request target as sent: path and query


# Answers an upgrade request and owns the connection from there (the stream pair is just past the request head).
Upgrader = Callable[[Request, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def parse_head(head: bytes) -> Request | None:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 3:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:  # repeated ones joined, as a list header is (kubectl sends X-Stream-Protocol-Version once per protocol)
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    url = urlsplit(parts[1])
    return Request(parts[0], unquote(url.path), parse_qs(url.query), headers, parts[1])


async def serve_http(
    sock: socket.socket | None, handler: Handler, host: str = "", port: int = 0, upgrade: Upgrader | None = None
) -> asyncio.Server:
    """Serve `handler` on a bound socket (e.g. one made inside a network namespace), else on `host:port`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = parse_head(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5))
            if request is None:
                return
            if upgrade is not None and "upgrade" in request.headers:
                await upgrade(request, reader, writer)
                return
            if request.method != "GET":
                await _send(writer, 405, "text/plain; charset=utf-8", b"method not allowed\n")
                return
            code, content_type, body = handler(request.path, request.query)
            if isinstance(body, bytes):
                await _send(writer, code, content_type, body)
            else:
                await _stream_until_gone(reader, _send(writer, code, content_type, body))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()

    if sock is not None:
        sock.setblocking(False)
        sock.listen(128)
        return await asyncio.start_server(serve, sock=sock)
    return await asyncio.start_server(serve, host, port)


async def _stream_until_gone(reader: asyncio.StreamReader, sending: Awaitable[None]) -> None:
    """Send a streamed answer until it ends or the client goes away (its end of the connection read as EOF): a
    followed log that is quiet would otherwise never notice that nobody reads it any more."""
    send = asyncio.ensure_future(sending)
    gone = asyncio.ensure_future(reader.read())  # the client sends nothing after its request but, at last, EOF
    try:
        await asyncio.wait((send, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (send, gone):
            task.cancel()
        await asyncio.gather(send, gone, return_exceptions=True)
    if not send.cancelled() and (err := send.exception()) is not None:
        raise err  # ConnectionError and the like: `serve` says what is quiet


async def send_error(writer: asyncio.StreamWriter, code: int, message: str) -> None:
    """A plain-text error answer (to an upgrade request that is refused)."""
    await _send(writer, code, "text/plain; charset=utf-8", message.encode() + b"\n")


async def _send(writer: asyncio.StreamWriter, code: int, content_type: str, body: Body) -> None:
    head = f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: {content_type}\r\n"
    head += "X-Content-Type-Options: nosniff\r\n"
    if isinstance(body, bytes):
        writer.write(f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()
        return
    writer.write(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
    async for chunk in body:
        if chunk:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def fetch(host: str, port: int, path: str, timeout: float, limit: int = 64 << 20) -> tuple[int, bytes]:
    """GET `path` from a server of this module's kind (one request per connection, a Content-Length body):
    (status, body). Raises OSError, TimeoutError, or ValueError for an answer it cannot read."""
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *fields = head.decode("latin-1").split("\r\n")
            length = next((f.split(":", 1)[1] for f in fields if f.lower().startswith("content-length:")), "")
            if not length.strip().isdigit() or int(length) > limit:
                raise ValueError(f"no usable Content-Length in the answer to GET {path}")
            return int(status_line.split(" ")[1]), await reader.readexactly(int(length))
        finally:
            writer.close()
