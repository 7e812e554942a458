"""Relaying a raw (non-WebSocket) upgrade — kubectl's `Upgrade: SPDY/3.1` fallback for exec, attach and
port-forward — from the client to the node agent, as upstream's `UpgradeAwareHandler` relays it to the kubelet.

uvicorn upgrades only to WebSocket; any other upgrade request reaches the application as an ordinary request. For
those, `upgrade.HttpProtocol` puts `HIJACK_EXTENSION` in the request's `scope["extensions"]`: its `take_over()`
hands the raw connection (the bytes after the request head) to the application as an asyncio stream pair, and
uvicorn writes nothing more on it and logs nothing about the request having no ASGI response.

`relay_upgrade` dials the node agent and sends the request on (the upgrade headers only: no credentials); only once
the node agent has answered is the client's connection taken over, so a node agent that cannot be reached is still
the caller's to report as an HTTP error. The answer (101, or the node agent's refusal) goes to the client as it
came, and from there bytes are copied both ways until either side closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

HIJACK_EXTENSION = "tinykube.hijack"  # scope["extensions"][HIJACK_EXTENSION]["take_over"]: () -> (reader, writer)
RELAYED_HEADERS = ("connection", "upgrade", "x-stream-protocol-version")
MAX_ANSWER_HEAD = 64 << 10
COPY_CHUNK = 64 << 10
LINGER = 5.0  # once one direction has ended, how long the other may go on before both are closed

TakeOver = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def can_take_over(scope: Scope) -> bool:
    return HIJACK_EXTENSION in (scope.get("extensions") or {})


def _take_over_of(scope: Scope) -> TakeOver:
    extension = (scope.get("extensions") or {}).get(HIJACK_EXTENSION)
    if not extension:
        raise RuntimeError("this request's connection cannot be taken over (not a raw upgrade request)")
    take_over: TakeOver = extension["take_over"]
    return take_over


def request_head(scope: Scope, host: str, port: int, target: str) -> bytes:
    """The request to the node agent: the method, the target, and the client's upgrade headers (repeated ones joined
    with commas, as one header line: the node agent keeps one value per name)."""
    values: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        if name in RELAYED_HEADERS:
            values.setdefault(name, []).append(raw_value.decode("latin-1").strip())
            names[name] = "-".join(part.capitalize() for part in name.split("-"))
    lines = [f"{scope.get('method', 'GET')} {target} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{names[name]}: {', '.join(v for v in values[name] if v)}" for name in RELAYED_HEADERS if name in values]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def relay_upgrade(scope: Scope, host: str, port: int, target: str, *, timeout: float = 30.0) -> None:
    """Relay this raw upgrade request to the node agent at `host:port` (`target`: path and query there) and then the
    connection both ways. Raises OSError, TimeoutError or ValueError (a bad answer) if the node agent cannot be
    reached or does not answer: the client's connection is then untouched, for the caller's error response. Once
    the relay has begun it returns when the connection is over, and raises nothing."""
    take_over = _take_over_of(scope)
    async with asyncio.timeout(timeout):
        node_reader, node_writer = await asyncio.open_connection(host, port, limit=MAX_ANSWER_HEAD)
    try:
        node_writer.write(request_head(scope, host, port, target))
        async with asyncio.timeout(timeout):
            await node_writer.drain()
            try:
                answer = await node_reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                raise ValueError("the node agent's answer head is too large") from None
            except asyncio.IncompleteReadError:
                raise ValueError("the node agent closed the connection without answering") from None
        if not answer.startswith(b"HTTP/1."):
            raise ValueError("the node agent's answer is not HTTP/1.x")
        client_reader, client_writer = await take_over()
    except BaseException:
        _close(node_writer)
        raise
    try:
        client_writer.write(answer)
        await client_writer.drain()
    except (ConnectionError, OSError):
        _close(node_writer)
        _close(client_writer)
        return
    await splice_connections(client_reader, client_writer, node_reader, node_writer)


async def splice_connections(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both directions have ended (an end half-closes the other side where the transport can,
    TLS cannot), or `LINGER` seconds after the first ended; then close both."""

    async def copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(COPY_CHUNK):
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
            else:
                _close(writer)
        except (ConnectionError, OSError, RuntimeError):
            _close(writer)

    tasks = {asyncio.create_task(copy(a_reader, b_writer)), asyncio.create_task(copy(b_reader, a_writer))}
    try:
        _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            await asyncio.wait(pending, timeout=LINGER)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _close(a_writer)
        _close(b_writer)


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        writer.close()


class Hijacked(Response):
    """What an endpoint returns once it has taken the connection over (`relay_upgrade` done): nothing is sent."""

    def __init__(self) -> None:
        super().__init__(status_code=101)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


class TakenOverProtocol(asyncio.StreamReaderProtocol):
    """The protocol of a connection taken over from uvicorn: a plain stream pair, and `on_lost` when it ends (uvicorn
    forgets the connection then)."""

    def __init__(self, reader: asyncio.StreamReader, on_lost: Callable[[], Any]) -> None:
        super().__init__(reader)
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._on_lost()
