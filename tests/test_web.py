"""`tinykube.web`: the small HTTP server of the kubelet endpoint and the DNS metrics."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tinykube.web import Body, Query, serve_http


def test_a_streamed_answer_ends_when_its_client_goes_away() -> None:
    """A followed log that stays quiet must not be served for ever to nobody (`kubectl logs -f` stopped)."""

    async def scenario() -> bool:
        ended = asyncio.Event()

        async def quiet_follow() -> AsyncIterator[bytes]:
            try:
                yield b"first line\n"
                await asyncio.Event().wait()  # nothing more, ever
            finally:
                ended.set()

        def handler(_path: str, _query: Query) -> tuple[int, str, Body]:
            return 200, "text/plain", quiet_follow()

        server = await serve_http(None, handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /containerLogs/ns/pod/c?follow=true HTTP/1.1\r\nHost: x\r\n\r\n")
        await reader.readuntil(b"first line\n")
        writer.close()
        await asyncio.wait_for(ended.wait(), 30)
        server.close()
        return ended.is_set()

    assert asyncio.run(scenario())
