"""SPDY/3.1: framing and header blocks (vectors built by hand from the spec), Hypothesis round trips, hostile
input, and whole sessions — exec and port-forward against local servers, raw, tunnelled in a real WebSocket, and
relayed by uvicorn with the apiserver's `HttpProtocol`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from tinykube import web
from tinykube.apiserver.http.rawupgrade import Hijacked, can_take_over, relay_upgrade, request_head
from tinykube.apiserver.http.upgrade import HttpProtocol
from tinykube.streams import spdy
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams
from tinykube.streams.spdy import (
    DataFrame,
    GoAway,
    HeaderCompressor,
    HeaderDecompressor,
    HeadersFrame,
    Limits,
    MessageTransport,
    Ping,
    RstStream,
    Session,
    Settings,
    StreamReset,
    StreamTransport,
    SynReply,
    SynStream,
    WindowUpdate,
)
from tinykube.streams.spdy_streams import (
    go_dial_error,
    portforward_error,
    serve_command,
    serve_portforward,
    serve_portforward_tunnel,
)
from tinykube.streams.websocket import StreamWebSocket


def run(coro: Awaitable[Any], timeout: float = 30) -> Any:
    async def main() -> Any:
        async with asyncio.timeout(timeout):
            return await coro

    return asyncio.run(main())


class Bytes:
    """A byte source over a buffer (readexactly as asyncio's)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    async def readexactly(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            partial = self.data[self.pos :]
            self.pos = len(self.data)
            raise asyncio.IncompleteReadError(partial, n)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


async def frames_of(data: bytes, limits: Limits = spdy.DEFAULT_LIMITS) -> list[spdy.Frame]:
    source, decompressor, out = Bytes(data), HeaderDecompressor(limits.max_header_block), []
    while (frame := await spdy.read_frame(source, decompressor, limits)) is not None:
        out.append(frame)
    return out


# ---- the dictionary and header blocks ------------------------------------------------------------------------------


def test_dictionary_is_the_spdy3_one() -> None:
    d = spdy.DICTIONARY
    assert len(d) == 1423
    assert zlib.adler32(d) == spdy.DICTIONARY_ID == 0xE3C6A7C2
    assert d.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert b"\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1" in d
    assert d.endswith(b"charset=utf-8charset=iso-8859-1,utf-,*,enq=0.")


def test_header_block_layout_by_hand() -> None:
    block = spdy.encode_header_block({"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]})
    expected = (
        b"\x00\x00\x00\x03"
        b"\x00\x00\x00\x0astreamtype\x00\x00\x00\x05error"
        b"\x00\x00\x00\x04port\x00\x00\x00\x048080"
        b"\x00\x00\x00\x09requestid\x00\x00\x00\x010"
    )
    assert block == expected
    # several values of one name: NUL-separated
    assert spdy.encode_header_block({"a": ["x", "y"]}) == b"\x00\x00\x00\x01\x00\x00\x00\x01a\x00\x00\x00\x03x\x00y"
    assert spdy.decode_header_block(expected, 1) == {"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]}


def test_decompresses_a_hand_built_zlib_stream() -> None:
    """A zlib stream written by hand: header 78 F9 (deflate, 32K window, FDICT, level 3), the dictionary's
    Adler-32, then the block as one stored (uncompressed) deflate block, as a sync flush leaves it."""
    raw = b"\x00\x00\x00\x01\x00\x00\x00\x04port\x00\x00\x00\x0280"
    stored = b"\x00" + struct.pack("<HH", len(raw), len(raw) ^ 0xFFFF) + raw
    wire = bytes.fromhex("78f9") + struct.pack(">I", 0xE3C6A7C2) + stored
    assert (0x78F9 % 31) == 0  # a valid zlib header check
    assert HeaderDecompressor().decompress(wire) == raw
    # the next block continues the same stream: no zlib header, just another deflate block
    raw2 = b"\x00\x00\x00\x00"
    decompressor = HeaderDecompressor()
    decompressor.decompress(wire)
    assert decompressor.decompress(b"\x00" + struct.pack("<HH", 4, 4 ^ 0xFFFF) + raw2) == raw2


def test_compressed_blocks_use_the_dictionary_and_one_context() -> None:
    compressor = HeaderCompressor()
    first = compressor.compress({"streamtype": ["error"], "port": ["8080"]})
    assert first[:2] == b"\x78\xf9" and first[2:6] == struct.pack(">I", 0xE3C6A7C2)  # FDICT, dictionary id
    assert first.endswith(b"\x00\x00\xff\xff")  # sync flush
    with pytest.raises(zlib.error):  # not readable without the dictionary
        zlib.decompressobj().decompress(first)
    second = compressor.compress({"streamtype": ["data"], "port": ["8080"]})
    assert not second.startswith(b"\x78")  # same stream, no new header
    assert len(second) < len(first)  # and shorter: the first block is in the window
    inflater = zlib.decompressobj(zdict=spdy.DICTIONARY)
    assert spdy.decode_header_block(inflater.decompress(first), 1) == {"streamtype": ["error"], "port": ["8080"]}
    assert spdy.decode_header_block(inflater.decompress(second), 1) == {"streamtype": ["data"], "port": ["8080"]}


@pytest.mark.parametrize(
    ("block", "why"),
    [
        (b"\x00\x00", "truncated"),
        (b"\x00\x00\x00\x05", "cannot fit"),
        (b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00", "empty header name"),
        (b"\x00\x00\x00\x01\x00\x00\x00\x01a\x00\x00\x00\x09x", "truncated"),
        (b"\x00\x00\x00\x02" + (b"\x00\x00\x00\x01a\x00\x00\x00\x00") * 2, "duplicate"),
        (b"\x00\x00\x00\x00junk", "trailing"),
    ],
)
def test_bad_header_blocks_reset_the_stream(block: bytes, why: str) -> None:
    with pytest.raises(spdy.StreamError, match=why) as info:
        spdy.decode_header_block(block, 7)
    assert info.value.stream_id == 7 and info.value.status == spdy.PROTOCOL_ERROR


# ---- frames --------------------------------------------------------------------------------------------------------


def test_frame_vectors_by_hand() -> None:
    assert spdy.encode_frame(Ping(1)) == bytes.fromhex("8003 0006 00000004 00000001")
    assert spdy.encode_frame(RstStream(3, spdy.CANCEL)) == bytes.fromhex("8003 0003 00000008 00000003 00000005")
    assert spdy.encode_frame(GoAway(5, 0)) == bytes.fromhex("8003 0007 00000008 00000005 00000000")
    assert spdy.encode_frame(WindowUpdate(1, 65536)) == bytes.fromhex("8003 0009 00000008 00000001 00010000")
    assert spdy.encode_frame(DataFrame(1, b"abc", fin=True)) == bytes.fromhex("00000001 01000003 616263")
    assert spdy.encode_frame(DataFrame(3, b"")) == bytes.fromhex("00000003 00000000")
    assert spdy.encode_frame(Settings(((0, 4, 100),))) == bytes.fromhex("8003 0004 0000000c 00000001 00000004 00000064")
    syn = spdy.encode_frame(SynStream(1, {}, priority=7, fin=True), HeaderCompressor())
    # control bit and version 3, type 1, FIN, then stream id, associated id, priority in the top 3 bits, slot
    assert syn[:4] == bytes.fromhex("80030001") and syn[4] == 0x01
    assert syn[8:18] == bytes.fromhex("00000001 00000000 e0 00")
    assert struct.unpack(">I", syn[4:8])[0] & 0xFFFFFF == len(syn) - 8


def test_reads_back_the_frames_kubectl_exchanges() -> None:
    compressor = HeaderCompressor()
    frames: list[spdy.Frame] = [
        SynStream(1, {"streamtype": ["error"], "port": ["80"], "requestid": ["0"]}),
        SynReply(1, {}),
        DataFrame(1, b"", fin=True),
        SynStream(3, {"streamtype": ["data"], "port": ["80"], "requestid": ["0"]}),
        DataFrame(3, b"GET / HTTP/1.0\r\n\r\n"),
        Ping(1),
        HeadersFrame(3, {"x": ["y"]}, fin=True),
        RstStream(3, spdy.CANCEL),
        GoAway(3),
    ]
    wire = b"".join(spdy.encode_frame(f, compressor) for f in frames)
    assert run(frames_of(wire)) == frames


def test_unknown_control_frames_are_ignored_and_other_versions_refused() -> None:
    unknown = bytes.fromhex("8003 000a 00000002 abcd")
    assert run(frames_of(unknown)) == [spdy.UnknownControl(10)]
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        run(frames_of(bytes.fromhex("8002 0006 00000004 00000001")))


headers_st = st.dictionaries(
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=20),
    st.lists(st.text(st.characters(min_codepoint=1, max_codepoint=255), max_size=30), min_size=1, max_size=3),
    max_size=6,
)
ids = st.integers(1, spdy.MAX_STREAM_ID)
u32 = st.integers(0, 0xFFFFFFFF)
frames_st = st.one_of(
    st.builds(DataFrame, ids, st.binary(max_size=300), st.booleans()),
    st.builds(SynStream, ids, headers_st, st.integers(0, spdy.MAX_STREAM_ID), st.integers(0, 7), st.integers(0, 255)),
    st.builds(SynReply, ids, headers_st, st.booleans()),
    st.builds(HeadersFrame, ids, headers_st, st.booleans()),
    st.builds(RstStream, ids, st.integers(1, 11)),
    st.builds(Settings, st.lists(st.tuples(st.integers(0, 255), st.integers(0, 0xFFFFFF), u32), max_size=5).map(tuple)),
    st.builds(Ping, u32),
    st.builds(GoAway, st.integers(0, spdy.MAX_STREAM_ID), u32),
    st.builds(WindowUpdate, st.integers(0, spdy.MAX_STREAM_ID), st.integers(0, spdy.MAX_STREAM_ID)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(frames_st, max_size=12))
def test_frames_round_trip(frames: list[spdy.Frame]) -> None:
    compressor = HeaderCompressor()
    wire = b"".join(spdy.encode_frame(f, compressor) for f in frames)
    assert run(frames_of(wire)) == frames


@settings(max_examples=200, deadline=None)
@given(st.lists(headers_st, min_size=1, max_size=8))
def test_header_blocks_round_trip_through_one_context(blocks: list[spdy.Headers]) -> None:
    compressor, decompressor = HeaderCompressor(), HeaderDecompressor()
    for headers in blocks:
        assert spdy.decode_header_block(decompressor.decompress(compressor.compress(headers)), 1) == headers


# ---- sessions: helpers ---------------------------------------------------------------------------------------------


class Pipe:
    """An in-memory transport pair end."""

    def __init__(self, inbound: asyncio.StreamReader, outbound: asyncio.StreamReader) -> None:
        self.inbound = inbound
        self.outbound = outbound

    async def readexactly(self, n: int) -> bytes:
        return await self.inbound.readexactly(n)

    async def write(self, data: bytes) -> None:
        self.outbound.feed_data(data)

    async def close(self) -> None:
        self.outbound.feed_eof()


def pipe_pair() -> tuple[Pipe, Pipe]:
    a, b = asyncio.StreamReader(), asyncio.StreamReader()
    return Pipe(a, b), Pipe(b, a)


async def serve_raw(wire: bytes, limits: Limits = spdy.DEFAULT_LIMITS, accept: bool = True) -> tuple[Session, bytes]:
    """A server session fed `wire` then EOF; what it answered."""
    inbound, outbound = asyncio.StreamReader(), asyncio.StreamReader()
    inbound.feed_data(wire)
    inbound.feed_eof()

    async def on_stream(stream: spdy.Stream) -> bool:
        return accept

    session = Session(Pipe(inbound, outbound), server=True, on_stream=on_stream, limits=limits)
    await session.run()
    outbound.feed_eof()
    return session, await outbound.read()


def client_frames(*frames: spdy.Frame) -> bytes:
    compressor = HeaderCompressor()
    return b"".join(spdy.encode_frame(f, compressor) for f in frames)


# ---- hostile input -------------------------------------------------------------------------------------------------


def test_oversized_data_frame_ends_the_session_with_goaway() -> None:
    wire = struct.pack(">II", 1, (1 << 24) - 1)  # 16 MiB announced; nothing of it is read
    session, answer = run(serve_raw(wire))
    assert "data frame of" in (session.error or "")
    assert run(frames_of(answer)) == [GoAway(0, spdy.GOAWAY_PROTOCOL_ERROR)]


def test_oversized_control_frame_ends_the_session() -> None:
    wire = bytes.fromhex("8003 0001") + struct.pack(">I", 1 << 20)
    session, answer = run(serve_raw(wire))
    assert "control frame of" in (session.error or "")
    assert run(frames_of(answer))[-1] == GoAway(0, spdy.GOAWAY_PROTOCOL_ERROR)


def test_header_bomb_and_bad_compression_end_the_session() -> None:
    bomb = zlib.compressobj(9, zlib.DEFLATED, 15, 8, 0, spdy.DICTIONARY)
    block = bomb.compress(b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01a" + struct.pack(">I", 10 << 20) + bytes(10 << 20))
    block += bomb.flush(zlib.Z_SYNC_FLUSH)
    assert len(block) < 60 << 10
    syn = bytes.fromhex("8003 0001") + struct.pack(">I", 10 + len(block)) + struct.pack(">IIBB", 1, 0, 0, 0) + block
    session, _ = run(serve_raw(syn))
    assert "larger than" in (session.error or "")
    garbage = (
        bytes.fromhex("8003 0001") + struct.pack(">I", 14) + struct.pack(">IIBB", 1, 0, 0, 0) + b"\xde\xad\xbe\xef"
    )
    session, _ = run(serve_raw(garbage))
    assert "bad compressed header block" in (session.error or "")


def test_bad_header_block_resets_only_its_stream() -> None:
    compressor = HeaderCompressor()
    bad_block = compressor._z.compress(b"\x00\x00\x00\x00junk") + compressor._z.flush(zlib.Z_SYNC_FLUSH)
    bad = bytes.fromhex("8003 0001") + struct.pack(">I", 10 + len(bad_block)) + struct.pack(">IIBB", 1, 0, 0, 0)
    good = spdy.encode_frame(SynStream(3, {"a": ["b"]}), compressor)
    session, answer = run(serve_raw(bad + bad_block + good))
    frames = run(frames_of(answer))
    assert frames[0] == RstStream(1, spdy.PROTOCOL_ERROR)
    assert frames[1] == SynReply(3, {})
    assert session.error is None


def test_too_many_streams_are_refused_and_the_session_goes_on() -> None:
    limits = Limits(max_streams=3)
    wire = client_frames(*(SynStream(i, {"n": [str(i)]}) for i in (1, 3, 5, 7, 9)), Ping(1))
    _, answer = run(serve_raw(wire, limits))
    frames = run(frames_of(answer))
    assert frames == [SynReply(1, {}), SynReply(3, {}), SynReply(5, {}), RstStream(7, 3), RstStream(9, 3), Ping(1)]


def test_stream_ids_must_grow_and_be_the_clients() -> None:
    session, _ = run(serve_raw(client_frames(SynStream(3, {}), SynStream(1, {}))))
    assert "out of order" in (session.error or "")
    session, _ = run(serve_raw(client_frames(SynStream(2, {}))))
    assert "out of order" in (session.error or "")


def test_refused_streams_are_reset() -> None:
    _, answer = run(serve_raw(client_frames(SynStream(1, {})), accept=False))
    assert run(frames_of(answer)) == [RstStream(1, spdy.CANCEL)]


def test_truncated_frame_ends_quietly() -> None:
    session, _ = run(serve_raw(client_frames(SynStream(1, {}))[:-3]))
    assert "connection lost" in (session.error or "")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_garbage_never_escapes(wire: bytes) -> None:
    session, _ = run(serve_raw(wire, Limits(max_control_frame=256, max_data_frame=256, max_header_block=1024)))
    assert session.closed.is_set()


@settings(max_examples=100, deadline=None)
@given(st.lists(frames_st, max_size=10), st.binary(max_size=50))
def test_valid_then_garbage_never_escapes(frames: list[spdy.Frame], tail: bytes) -> None:
    session, _ = run(serve_raw(client_frames(*frames) + tail))
    assert session.closed.is_set()


def test_slow_reader_pauses_reading() -> None:
    async def main() -> None:
        client_end, server_end = pipe_pair()
        accepted: list[spdy.Stream] = []

        async def on_stream(stream: spdy.Stream) -> bool:
            accepted.append(stream)
            return True

        server = Session(server_end, server=True, on_stream=on_stream, limits=Limits(max_buffered=64 << 10))
        client = Session(client_end, server=False)
        tasks = [asyncio.create_task(server.run()), asyncio.create_task(client.run())]
        stream = await client.open_stream({"x": ["1"]})
        for _ in range(40):
            await stream.write(bytes(16 << 10))
        await asyncio.sleep(0.05)
        assert server._buffered <= (64 << 10) + (32 << 10)  # stopped reading past the budget (plus one frame)
        total = 0
        while total < 40 * (16 << 10):
            total += len(await accepted[0].read())
        await client.close()
        await asyncio.gather(*tasks)

    run(main())


def test_ping_is_answered_and_goaway_ends() -> None:
    async def main() -> None:
        client_end, server_end = pipe_pair()

        async def on_stream(stream: spdy.Stream) -> bool:
            return True

        server = Session(server_end, server=True, on_stream=on_stream)
        client = Session(client_end, server=False)
        tasks = [asyncio.create_task(server.run()), asyncio.create_task(client.run())]
        await client.ping()
        await server.ping()  # both ways
        stream = await client.open_stream({"a": ["b"]})
        await client.close()
        await asyncio.gather(*tasks)
        assert server.goaway_received and server.closed.is_set()
        with pytest.raises(StreamReset):
            await stream.write(b"late")

    run(main())


# ---- exec ----------------------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def node_server(upgrade: web.Upgrader) -> AsyncIterator[int]:
    server = await web.serve_http(None, lambda path, query: (404, "text/plain", b""), "127.0.0.1", 0, upgrade=upgrade)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def spdy_connect(
    port: int, path: str, protocols: str, method: str = "POST", extra: str = ""
) -> tuple[Session, dict[str, str], asyncio.Task[None]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: node\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        f"X-Stream-Protocol-Version: {protocols}\r\n{extra}\r\n".encode()
    )
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    fields[":status"] = head[0].split(" ")[1]
    session = Session(StreamTransport(reader, writer), server=False)
    return session, fields, asyncio.create_task(session.run())


async def read_all(stream: spdy.Stream) -> bytes:
    out = b""
    while data := await stream.read():
        out += data
    return out


async def echo_and_exit_3(request: CommandRequest, streams: CommandStreams) -> int:
    assert streams.stdin is not None and streams.stdout is not None
    while data := await streams.stdin.read(1 << 16):
        await streams.stdout.write(data.upper())
    if streams.stderr is not None:
        await streams.stderr.write(b"bye\n")
    return 3


def command_server(run_command: Any, **query: str) -> web.Upgrader:
    async def upgrade(request: web.Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        q = {"command": ["cat"], "stdin": ["true"], "stdout": ["true"], "stderr": ["true"], "tty": ["false"]}
        q.update({k: [v] for k, v in query.items()})
        command = CommandRequest.from_query("ns", "pod", "c", q, attach=False)
        await serve_command(request, reader, writer, command, run_command)

    return upgrade


def test_exec_v4_echo_then_exit_status() -> None:
    async def main() -> None:
        async with node_server(command_server(echo_and_exit_3)) as port:
            offered = "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io"
            session, head, task = await spdy_connect(port, "/exec/ns/pod/c?command=cat", offered)
            assert head[":status"] == "101" and head["upgrade"] == "SPDY/3.1"
            assert head["x-stream-protocol-version"] == "v4.channel.k8s.io"
            error = await session.open_stream({"streamtype": ["error"]})
            await error.close()
            stdin = await session.open_stream({"streamtype": ["stdin"]})
            stdout = await session.open_stream({"streamtype": ["stdout"]})
            stderr = await session.open_stream({"streamtype": ["stderr"]})
            await stdin.write(b"hello ")
            await stdin.write(b"world")
            await stdin.close()
            out, err, status = await asyncio.gather(read_all(stdout), read_all(stderr), read_all(error))
            assert out == b"HELLO WORLD" and err == b"bye\n"
            assert json.loads(status) == {
                "metadata": {},
                "status": "Failure",
                "message": "command terminated with non-zero exit code: exit status 3",
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
            }
            await session.close()
            await task

    run(main())


def test_exec_v2_text_error_and_command_error() -> None:
    async def fails(request: CommandRequest, streams: CommandStreams) -> int:
        raise CommandError('container "c" not found in pod "pod"')

    async def main() -> None:
        async with node_server(command_server(fails, stdin="false")) as port:
            session, head, task = await spdy_connect(port, "/exec", "v2.channel.k8s.io, channel.k8s.io")
            assert head["x-stream-protocol-version"] == "v2.channel.k8s.io"
            error = await session.open_stream({"streamtype": ["error"]})
            stdout = await session.open_stream({"streamtype": ["stdout"]})
            stderr = await session.open_stream({"streamtype": ["stderr"]})
            assert await read_all(error) == b'container "c" not found in pod "pod"'
            assert await read_all(stdout) == b"" and await read_all(stderr) == b""
            await session.close()
            await task

    run(main())


def test_exec_tty_resizes() -> None:
    sizes: list[tuple[int, int]] = []

    async def tty(request: CommandRequest, streams: CommandStreams) -> int:
        assert streams.stderr is None  # with a TTY stderr is stdout
        for _ in range(2):
            size = await streams.resizes.get()
            sizes.append((size.width, size.height))
        assert streams.stdout is not None
        await streams.stdout.write(b"ok")
        return 0

    async def main() -> None:
        async with node_server(command_server(tty, tty="true", stdin="false")) as port:
            session, _, task = await spdy_connect(port, "/exec", "v4.channel.k8s.io")
            error = await session.open_stream({"streamtype": ["error"]})
            stdout = await session.open_stream({"streamtype": ["stdout"]})
            resize = await session.open_stream({"streamtype": ["resize"]})
            await resize.write(b'{"Width":80,"Height":24}\n{"width":1')
            await resize.write(b'00,"height":50}\n')
            assert await read_all(stdout) == b"ok"
            assert json.loads(await read_all(error)) == {"metadata": {}, "status": "Success"}
            await session.close()
            await task

    run(main())
    assert sizes == [(80, 24), (100, 50)]


def test_exec_client_gone_cancels_the_command() -> None:
    cancelled = asyncio.Event()

    async def forever(request: CommandRequest, streams: CommandStreams) -> int:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    async def main() -> None:
        async with node_server(command_server(forever, stdin="false", stderr="false")) as port:
            session, _, task = await spdy_connect(port, "/exec", "v4.channel.k8s.io")
            await session.open_stream({"streamtype": ["error"]})
            await session.open_stream({"streamtype": ["stdout"]})
            await asyncio.sleep(0.05)
            session.transport.writer.transport.abort()  # type: ignore[attr-defined]
            await asyncio.wait_for(cancelled.wait(), 5)
            await task

    run(main())


def test_handshake_errors() -> None:
    async def main() -> None:
        async with node_server(command_server(echo_and_exit_3)) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"POST /exec HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                b"X-Stream-Protocol-Version: v9.channel.k8s.io\r\n\r\n"
            )
            answer = (await reader.read()).decode()
            assert answer.startswith("HTTP/1.1 403 Forbidden")
            assert "X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io\r\n" in answer
            assert answer.endswith(
                "unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts "
                "[v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n"
            )
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /exec HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nHost: x\r\n\r\n")
            answer = (await reader.read()).decode()
            assert answer.startswith("HTTP/1.1 400 Bad Request")
            assert "header X-Stream-Protocol-Version does not exist in request with 2 headers" in answer

    run(main())


# ---- port-forward --------------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def echo_server() -> AsyncIterator[int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def dial_local(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def forward_once(session: Session, port: int, request_id: int, payload: bytes) -> tuple[bytes, bytes]:
    """As client-go: error stream (closed at once), data stream, copy, then the error stream's content."""
    headers = {"streamtype": ["error"], "port": [str(port)], "requestid": [str(request_id)]}
    error = await session.open_stream(headers)
    await error.close()
    data = await session.open_stream({**headers, "streamtype": ["data"]})
    await data.write(payload)
    await data.close()
    echoed = await read_all(data)
    return echoed, await read_all(error)


def test_portforward_raw_many_connections_and_a_failed_dial() -> None:
    async def main() -> None:
        async with echo_server() as echo_port:

            async def upgrade(request: web.Request, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                await serve_portforward(request, reader, w, dial_local, pod="abc123", netns="/run/netns/p")

            async with node_server(upgrade) as port:
                session, head, task = await spdy_connect(port, "/portForward/ns/pod", "portforward.k8s.io")
                assert head[":status"] == "101" and head["x-stream-protocol-version"] == "portforward.k8s.io"
                payloads = [bytes([i]) * (1000 * i + 1) for i in range(20)]
                results = await asyncio.gather(
                    *(forward_once(session, echo_port, i, p) for i, p in enumerate(payloads))
                )
                assert results == [(p, b"") for p in payloads]
                refused = closed_port()
                echoed, error = await forward_once(session, refused, 99, b"x")
                assert echoed == b""
                assert error.decode() == (
                    f"error forwarding port {refused} to pod abc123, uid : failed to execute portforward in network "
                    f'namespace "/run/netns/p": failed to connect to localhost:{refused} inside namespace "abc123", '
                    f"IPv4: dial tcp4 127.0.0.1:{refused}: connect: connection refused IPv6 dial tcp6: address "
                    "localhost: no suitable address found "
                )
                await session.close()
                await task

    run(main())


def test_portforward_rejects_bad_streams() -> None:
    async def main() -> None:
        async def upgrade(request: web.Request, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await serve_portforward(request, reader, w, dial_local)

        async with node_server(upgrade) as port:
            session, _, task = await spdy_connect(port, "/portForward/ns/pod", "portforward.k8s.io")
            for headers in (
                {"streamtype": ["data"]},
                {"streamtype": ["data"], "port": ["0"]},
                {"streamtype": ["data"], "port": ["70000"]},
                {"streamtype": ["bogus"], "port": ["80"]},
            ):
                with pytest.raises(StreamReset):
                    await session.open_stream(headers)
            await session.close()
            await task

    run(main())


def test_portforward_pair_timeout_reports_on_the_error_stream() -> None:
    async def main() -> None:
        async def upgrade(request: web.Request, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await serve_portforward(request, reader, w, dial_local, creation_timeout=0.2)

        async with node_server(upgrade) as port:
            session, _, task = await spdy_connect(port, "/portForward/ns/pod", "portforward.k8s.io")
            error = await session.open_stream({"streamtype": ["error"], "port": ["80"], "requestid": ["5"]})
            assert (await read_all(error)).endswith(b"request=5) timed out waiting for streams")
            await session.close()
            await task

    run(main())


class ClientWebSocket:
    """A websockets client connection as a message channel, each write cut in small messages (as spdystream's
    unbuffered writes come through client-go's tunneling connection)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def recv(self) -> bytes | None:
        try:
            message = await self.ws.recv()
        except ConnectionClosed:
            return None
        return message if isinstance(message, bytes) else message.encode()

    async def send(self, data: bytes) -> None:
        for start in range(0, len(data), 5):
            await self.ws.send(data[start : start + 5])

    async def close(self, code: int = 1000) -> None:
        await self.ws.close(code)


def test_portforward_tunnelled_in_a_websocket() -> None:
    async def main() -> None:
        async with echo_server() as echo_port:

            async def upgrade(request: web.Request, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                # (no subprotocol here: "SPDY/3.1+portforward.k8s.io" is not an RFC 7230 token, and the websockets
                # library refuses it on both sides; the subprotocol's negotiation is the WebSocket layer's business)
                ws = await StreamWebSocket.accept(request, reader, w, "")
                await serve_portforward_tunnel(ws, dial_local)

            async with node_server(upgrade) as port, ws_connect(f"ws://127.0.0.1:{port}/portForward/ns/pod") as ws:
                session = Session(MessageTransport(ClientWebSocket(ws)), server=False)
                task = asyncio.create_task(session.run())
                payloads = [b"tunnel %d " % i * 500 for i in range(5)]
                results = await asyncio.gather(
                    *(forward_once(session, echo_port, i, p) for i, p in enumerate(payloads))
                )
                assert results == [(p, b"") for p in payloads]
                await session.ping()
                await session.close()
                await task

    run(main())


def test_go_wording_of_dial_errors() -> None:
    err = ConnectionRefusedError(111, "Connection refused")
    assert go_dial_error("tcp4", "127.0.0.1:80", err) == "dial tcp4 127.0.0.1:80: connect: connection refused"
    assert portforward_error(80, "p", "u", "", OSError("pod has no network")) == (
        "error forwarding port 80 to pod p, uid u: pod has no network"
    )


# ---- the apiserver's relay -----------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def apiserver(app: Any) -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=HttpProtocol, loop="none", lifespan="off", log_level="info", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task


def relay_app(node_port: int) -> Callable[..., Awaitable[None]]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/forbidden" or not can_take_over(scope):
            body = b'{"kind":"Status","code":403}'
            await send({"type": "http.response.start", "status": 403, "headers": [(b"content-length", b"28")]})
            await send({"type": "http.response.body", "body": body})
            return
        target = "/portForward/ns/pod" if scope["path"].endswith("portforward") else "/exec/ns/pod/c"
        await relay_upgrade(scope, "127.0.0.1", node_port, target)
        await Hijacked()(scope, receive, send)

    return app


def test_relay_through_uvicorn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    seen: list[web.Request] = []

    async def main() -> None:
        async with echo_server() as echo_port:

            async def upgrade(request: web.Request, reader: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                seen.append(request)
                if request.path.startswith("/portForward"):
                    await serve_portforward(request, reader, w, dial_local)
                else:
                    await command_server(echo_and_exit_3)(request, reader, w)

            async with node_server(upgrade) as node_port, apiserver(relay_app(node_port)) as port:
                # kubectl's request: one X-Stream-Protocol-Version line per protocol, credentials
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /api/v1/namespaces/ns/pods/pod/portforward HTTP/1.1\r\nHost: api\r\n"
                    b"Authorization: Bearer secret\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                    b"X-Stream-Protocol-Version: portforward.k8s.io\r\nX-Stream-Protocol-Version: other\r\n"
                    b"Content-Length: 0\r\n\r\n" + spdy.encode_frame(Ping(1))  # SPDY right behind the head
                )
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
                assert await reader.readexactly(12) == spdy.encode_frame(Ping(1))  # answered: not lost on the way
                session = Session(StreamTransport(reader, writer), server=False)
                task = asyncio.create_task(session.run())
                results = await asyncio.gather(*(forward_once(session, echo_port, i, b"%d" % i * 9) for i in range(8)))
                assert results == [(b"%d" % i * 9, b"") for i in range(8)]
                await session.close()
                await task
                assert seen[0].headers["x-stream-protocol-version"] == "portforward.k8s.io, other"
                assert "authorization" not in seen[0].headers

                # exec through the relay
                session, head_fields, task = await spdy_connect(
                    port, "/api/v1/namespaces/ns/pods/pod/exec", "v4.channel.k8s.io"
                )
                assert head_fields[":status"] == "101"
                error = await session.open_stream({"streamtype": ["error"]})
                stdin = await session.open_stream({"streamtype": ["stdin"]})
                stdout = await session.open_stream({"streamtype": ["stdout"]})
                stderr = await session.open_stream({"streamtype": ["stderr"]})
                await stdin.write(b"via relay")
                await stdin.close()
                out, _, status = await asyncio.gather(read_all(stdout), read_all(stderr), read_all(error))
                assert out == b"VIA RELAY" and json.loads(status)["reason"] == "NonZeroExitCode"
                await session.close()
                await task

                # an upgrade request that is answered, not taken over: the answer, then the connection closes
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /forbidden HTTP/1.1\r\nHost: api\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n"
                )
                answer = await asyncio.wait_for(reader.read(), 5)
                assert answer.startswith(b"HTTP/1.1 403") and answer.endswith(b'"code":403}')

                # a node agent that is not there: an error before anything is taken over
                scope = {"type": "http", "method": "POST", "headers": [], "extensions": {"tinykube.hijack": {}}}
                with pytest.raises(RuntimeError):
                    await relay_upgrade({"headers": []}, "127.0.0.1", closed_port(), "/x")
                assert request_head(scope, "h", 1, "/t") == b"POST /t HTTP/1.1\r\nHost: h:1\r\n\r\n"

    run(main())
    problems = [r for r in caplog.records if r.name.startswith("uvicorn") and r.levelno >= logging.WARNING]
    assert problems == []


def test_relay_reports_an_unreachable_node_before_taking_over() -> None:
    async def main() -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            try:
                await relay_upgrade(scope, "127.0.0.1", closed_port(), "/exec/ns/pod/c")
            except OSError as err:
                body = f"error dialing backend: {err.strerror}".encode()
                await send({"type": "http.response.start", "status": 500, "headers": []})
                await send({"type": "http.response.body", "body": body})

        async with apiserver(app) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /exec HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
            answer = await asyncio.wait_for(reader.read(), 5)
            assert answer.startswith(b"HTTP/1.1 500") and b"error dialing backend" in answer

    run(main())
