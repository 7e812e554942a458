"""The WebSocket channel protocols as the node agent serves them, against `websockets`' client: exec's streams and
exit Status per protocol version, stdin's end (v5), resizes, port-forward's channels and errors, and what a
hostile client sends."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from tinykube.streams import channels
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams, TerminalSize
from tinykube.streams.websocket import StreamWebSocket, choose_subprotocol
from tinykube.web import Request, send_error, serve_http

Run = Callable[[CommandRequest, CommandStreams], Awaitable[int]]


def in_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """An async test run to its end in a fresh event loop (bounded, so a hang fails rather than stalls)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(test(*args, **kwargs), 30))

    return run


@asynccontextmanager
async def server(run: Run, connect_port: channels.Connect | None = None) -> AsyncIterator[int]:
    """A node-agent-like server: `/exec/...` runs `run`, `/portForward/...` dials with `connect_port`."""

    async def upgrade(request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        kind = request.path.strip("/").split("/")[0]
        supported = channels.REMOTECOMMAND_PROTOCOLS if kind == "exec" else channels.PORTFORWARD_PROTOCOLS
        protocol = choose_subprotocol(request, supported) or ""
        if kind == "portForward":
            try:
                ports = channels.parse_ports(request.query.get("ports", []))
            except ValueError as err:
                await send_error(writer, 400, str(err))
                return
            ws = await StreamWebSocket.accept(request, reader, writer, protocol)
            assert connect_port is not None
            await channels.serve_portforward(ws, ports, connect_port, "default/pod")
            return
        ws = await StreamWebSocket.accept(request, reader, writer, protocol)
        await channels.serve_command(ws, CommandRequest.from_query("default", "pod", "c", request.query, False), run)

    http = await serve_http(None, lambda _p, _q: (404, "text/plain", b""), "127.0.0.1", 0, upgrade=upgrade)
    try:
        yield http.sockets[0].getsockname()[1]
    finally:
        http.close()


def dial(port: int, path: str, protocol: str) -> connect:
    return connect(f"ws://127.0.0.1:{port}{path}", subprotocols=[protocol] if protocol else None, proxy=None)  # type: ignore[list-item]


async def messages(ws: ClientConnection) -> list[bytes]:
    return [m if isinstance(m, bytes) else m.encode() async for m in ws]


async def echo_and_exit(request: CommandRequest, streams: CommandStreams) -> int:
    """Copies stdin to stdout, writes to stderr, exits with the code named by the command."""
    assert streams.stdout is not None and streams.stderr is not None
    if streams.stdin is not None:
        while data := await streams.stdin.read(1024):
            await streams.stdout.write(data)
    await streams.stderr.write(b"bye\n")
    return int(request.command[0])


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
@in_loop
async def test_exec_streams_and_exit_status(protocol: str) -> None:
    async with server(echo_and_exit) as port, dial(port, "/exec/default/pod/c?command=3&stdin=true", protocol) as ws:
        assert ws.subprotocol == protocol
        await ws.send(b"\x00hello ")
        await ws.send(b"\x00world")
        if not protocol.startswith("v5"):  # v4 has no way to close stdin: what comes is relayed as it comes
            seen = b""
            while seen != b"hello world":
                message = await ws.recv()
                assert isinstance(message, bytes) and message[0] == 1
                seen += message[1:]
            return
        await ws.send(b"\xff\x00")  # v5: stdin is closed
        got = await messages(ws)
    assert b"".join(m[1:] for m in got if m[0] == 1) == b"hello world"
    assert [m[1:] for m in got if m[0] == 2] == [b"bye\n"]
    status = json.loads(next(m[1:] for m in got if m[0] == 3))
    assert status == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: exit status 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }


@in_loop
async def test_success_status_and_older_protocols() -> None:
    async with server(echo_and_exit) as port:
        async with dial(port, "/exec/default/pod/c?command=0", "v4.channel.k8s.io") as ws:
            got = await messages(ws)
        assert json.loads(got[-1][1:]) == {"metadata": {}, "status": "Success"}
        async with dial(port, "/exec/default/pod/c?command=0", "channel.k8s.io") as ws:
            assert [m for m in await messages(ws) if m[0] == 3] == []  # v1: nothing on success
        async with dial(port, "/exec/default/pod/c?command=2", "v2.channel.k8s.io") as ws:
            errors = [m[1:] for m in await messages(ws) if m[0] == 3]
        assert errors == [b"command terminated with non-zero exit code: exit status 2"]  # text before v4


@in_loop
async def test_a_command_that_cannot_run_is_a_failure_status() -> None:
    async def refuse(_request: CommandRequest, _streams: CommandStreams) -> int:
        raise CommandError('container "c" in pod "pod" is not running')

    async with server(refuse) as port, dial(port, "/exec/default/pod/c?command=x", "v5.channel.k8s.io") as ws:
        got = await messages(ws)
    assert json.loads(got[-1][1:]) == {
        "metadata": {},
        "status": "Failure",
        "message": 'container "c" in pod "pod" is not running',
    }


@in_loop
async def test_resizes_reach_the_command() -> None:
    sizes: list[TerminalSize] = []

    async def watch_sizes(_request: CommandRequest, streams: CommandStreams) -> int:
        while len(sizes) < 2:
            sizes.append(await streams.resizes.get())
        return 0

    path = "/exec/default/pod/c?command=x&tty=true&stdin=true"
    async with server(watch_sizes) as port, dial(port, path, "v5.channel.k8s.io") as ws:
        await ws.send(b'\x04{"Width":80,"Height":24}')
        await ws.send(b"\x04not json")  # ignored
        await ws.send(b'\x04{"Width":120,"Height":40}')
        await messages(ws)
    assert sizes == [TerminalSize(80, 24), TerminalSize(120, 40)]


@in_loop
async def test_the_client_going_away_cancels_the_command() -> None:
    cancelled = asyncio.Event()

    async def forever(_request: CommandRequest, _streams: CommandStreams) -> int:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    async with server(forever) as port:
        async with dial(port, "/exec/default/pod/c?command=x", "v5.channel.k8s.io"):
            pass
        await asyncio.wait_for(cancelled.wait(), 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8))
def test_garbage_from_the_client_never_breaks_the_session(garbage: list[bytes]) -> None:
    """Messages on unknown channels, empty ones, bad resizes and closes of other channels are ignored."""

    async def scenario() -> None:
        async with (
            server(echo_and_exit) as port,
            dial(port, "/exec/default/pod/c?command=0", "v5.channel.k8s.io") as ws,
        ):
            for message in garbage:
                if message[:1] not in (b"\x00",):
                    await ws.send(message)
            await ws.send(b"\xff\x00")
            got = await messages(ws)
        assert json.loads(got[-1][1:])["status"] == "Success"

    asyncio.run(scenario())


async def _echo_server() -> tuple[asyncio.Server, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(echo, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


@in_loop
async def test_port_forward_channels() -> None:
    echo, echo_port = await _echo_server()

    async def connect_port(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if port != 80:
            raise OSError(f"dial tcp4 127.0.0.1:{port}: connect: connection refused")
        return await asyncio.open_connection("127.0.0.1", echo_port)

    try:
        path = "/portForward/default/pod?ports=80,81"
        async with server(echo_and_exit, connect_port) as port, dial(port, path, "v4.channel.k8s.io") as ws:
            first = [await ws.recv() for _ in range(4)]  # each channel opens with its port, little-endian
            assert first == [b"\x00\x50\x00", b"\x01\x50\x00", b"\x02\x51\x00", b"\x03\x51\x00"]
            assert await ws.recv() == (
                b"\x03error forwarding port 81 to pod default/pod: dial tcp4 127.0.0.1:81: connect: connection refused"
            )
            await ws.send(b"\x00hello")
            assert await ws.recv() == b"\x00HELLO"
    finally:
        echo.close()


@in_loop
async def test_port_forward_refuses_bad_ports() -> None:
    async def never(_port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise AssertionError("nothing is dialled")

    async with server(echo_and_exit, never) as port:
        with pytest.raises(InvalidStatus) as refused:
            async with dial(port, "/portForward/default/pod?ports=0", "v4.channel.k8s.io"):
                pass
    assert refused.value.response.status_code == 400
    assert b'unable to parse "0" as a port' in refused.value.response.body


@pytest.mark.parametrize("values", [["70000"], ["http"], [""], []])
def test_parse_ports_refuses(values: list[str]) -> None:
    with pytest.raises(ValueError):
        channels.parse_ports(values)


def test_parse_ports() -> None:
    assert channels.parse_ports(["80,8080", "9090"]) == [80, 8080, 9090]
