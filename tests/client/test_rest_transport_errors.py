"""The HTTP transport's failures reach callers as `TransportError` (aiohttp is the transport's own business: it is
imported only when a session is made), and `up`'s import leaves aiohttp and grpcio out of the process."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import pytest

from tinykube.api.resources import builtin
from tinykube.client.kubeconfig import Credentials
from tinykube.client.rest import RestClient, TransportError

pytestmark = pytest.mark.anyio
CONFIGMAPS = builtin("", "v1", "configmaps")


def creds(port: int) -> Credentials:
    return Credentials(server=f"http://127.0.0.1:{port}", token="t", ca_data=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


async def test_a_refused_connection_raises_transport_error() -> None:
    client = RestClient(creds(free_port()))
    try:
        with pytest.raises(TransportError, match=r"127\.0\.0\.1"):
            await client.request("GET", "/api/v1/namespaces")
    finally:
        await client.close()


async def test_a_watch_whose_connection_breaks_mid_body_raises_transport_error() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        event = b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        writer.write(b'40\r\n{"type":')  # a chunk promised whole, cut short by the server's going away
        await writer.drain()
        writer.transport.abort()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = RestClient(creds(server.sockets[0].getsockname()[1]))
    seen = []
    try:
        with pytest.raises(TransportError):
            async with asyncio.timeout(10):
                async for event in client.watch(CONFIGMAPS, "default"):
                    seen.append(event["object"]["metadata"]["name"])
        assert seen == ["a"]
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


def test_up_imports_neither_aiohttp_nor_grpc() -> None:
    """~10 MB and ~8 MB of an idle `up`: its components call the apiserver in process, and the etcd client is
    tinykube's own (only aetcd's generated message modules are loaded)."""
    probe = "import sys, tinykube.up; print(sorted(m for m in ('aiohttp', 'grpc', 'aetcd') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out
