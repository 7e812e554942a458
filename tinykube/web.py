"""Just enough HTTP/1.1 for health, readiness and metrics endpoints (DNS, proxy): one GET per connection, answered by
a plain function of the path. No framework: these ports are probed often and must stay cheap."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from http import HTTPStatus

Handler = Callable[[str], tuple[int, str, bytes]]  # path (without the query) -> (status, content type, body)


async def serve_http(sock: socket.socket | None, handler: Handler, host: str = "", port: int = 0) -> asyncio.Server:
    """Serve `handler` on a bound socket (e.g. one made inside a network namespace), else on `host:port`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            parts = request.split(b" ", 2)
            path = parts[1].decode("latin-1").split("?")[0] if len(parts) > 2 else ""
            code, content_type, body = handler(path)
            head = (
                f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: {content_type}\r\n"
                f"X-Content-Type-Options: nosniff\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
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
