"""exec, attach and port-forward over SPDY, as the kubelet serves them (its `cri/streaming` `httpstream.go`s).

- `serve_command`: a raw `Upgrade: SPDY/3.1` request for `/exec/...` or `/attach/...`. The client names the
  protocols it speaks in `X-Stream-Protocol-Version`; the best one both sides speak is answered in the 101. The
  client then opens one stream per channel, told apart by their `streamType` header (error, stdin, stdout, stderr,
  and resize with a TTY from v3 on); once the expected ones are there the command runs, and its end is reported
  on the error stream: the `Status` as JSON from v4 on, the message as plain text (failures only) before that.
- `serve_portforward`: a raw upgrade for `/portForward/...` (`portforward.k8s.io`). Each connection the client
  forwards is a pair of streams with the same `requestID` header, an error stream and a data stream, both with a
  `port` header; the data stream is spliced to a connection dialled to that port in the pod, and a dial that fails
  is reported as text on the error stream.
- `serve_portforward_tunnel`: the same, with SPDY carried in the binary messages of a WebSocket (subprotocol
  `SPDY/3.1+portforward.k8s.io`, kubectl 1.32's default for port-forward).

SPDY sessions speak only `v4.channel.k8s.io` and older for commands, as the kubelet does (`v5.channel.k8s.io` is a
WebSocket protocol; over SPDY client-go runs v5 as v4).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from tinykube.streams.remotecommand import (
    CommandError,
    CommandRequest,
    CommandStreams,
    Run,
    TerminalSize,
    error_status,
    exit_status,
)
from tinykube.streams.spdy import (
    DEFAULT_LIMITS,
    Limits,
    MessageChannel,
    MessageTransport,
    Session,
    Stream,
    StreamReset,
    StreamTransport,
    Transport,
)
from tinykube.web import Request

log = logging.getLogger(__name__)

COMMAND_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
PORTFORWARD_PROTOCOL = "portforward.k8s.io"
TUNNEL_SUBPROTOCOL = "SPDY/3.1+" + PORTFORWARD_PROTOCOL
STREAM_CREATION_TIMEOUT = 30.0  # the kubelet's (remotecommand.DefaultStreamCreationTimeout)
LINGER = 5.0  # after the last frame, how long the client has to close its end before the connection is closed
HALF_CLOSE_GRACE = 1.0  # containerd's: once the pod's side of a forwarded connection ends, how long the other has

# Opens a TCP connection to a port of the pod (raises OSError as a failed connect does).
PortDial = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


# ---- the upgrade ---------------------------------------------------------------------------------------------------


def offered_protocols(request: Request) -> list[str]:
    """`X-Stream-Protocol-Version`, comma-separated (client-go sends one header per protocol; a relay joins them)."""
    value = request.headers.get("x-stream-protocol-version", "")
    return [p.strip() for p in value.split(",") if p.strip()]


async def _refuse(writer: asyncio.StreamWriter, code: int, reason: str, message: str, extra: str = "") -> None:
    """As Go's `http.Error` answers."""
    body = (message + "\n").encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n"
        f"{extra}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(ConnectionError):
        writer.write(head.encode("latin-1") + body)
        await writer.drain()


async def handshake(request: Request, writer: asyncio.StreamWriter, supported: Iterable[str]) -> str | None:
    """Answer an `Upgrade: SPDY/3.1` request as upstream's `httpstream.Handshake` and the SPDY response upgrader do:
    101 with the negotiated protocol, or the error (400, or 403 when no protocol is shared). The protocol or None."""
    supported = list(supported)
    connection = request.headers.get("connection", "").lower()
    upgrade = request.headers.get("upgrade", "").lower()
    if "x-stream-protocol-version" not in request.headers:
        count = len([name for name in request.headers if name != "host"])
        message = f"unable to upgrade: header X-Stream-Protocol-Version does not exist in request with {count} headers"
        await _refuse(writer, 400, "Bad Request", message)
        return None
    offered = offered_protocols(request)
    if not offered:
        value = request.headers["x-stream-protocol-version"]
        message = f"unable to upgrade: header X-Stream-Protocol-Version contains [{value}], but no valid protocols"
        await _refuse(writer, 400, "Bad Request", message)
        return None
    protocol = next((p for p in offered if p in supported), None)
    if protocol is None:
        accepted = "".join(f"X-Accepted-Stream-Protocol-Versions: {p}\r\n" for p in supported)
        message = (
            f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(offered)}], "
            f"server accepts [{' '.join(supported)}]"
        )
        await _refuse(writer, 403, "Forbidden", message, accepted)
        return None
    if "upgrade" not in connection or "spdy/3.1" not in upgrade:
        await _refuse(writer, 400, "Bad Request", "unable to upgrade: missing upgrade headers in request")
        return None
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        + f"X-Stream-Protocol-Version: {protocol}\r\n\r\n".encode("latin-1")
    )
    await writer.drain()
    return protocol


# ---- exec and attach -----------------------------------------------------------------------------------------------


class StreamOutput:
    """stdout or stderr: what the runtime writes goes out as data frames (raises StreamReset once the client has
    gone or reset the stream)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    async def write(self, data: bytes) -> None:
        if data:
            await self.stream.write(data)


class _Valve:
    """Stands in for a transport under an `asyncio.StreamReader`, whose buffer pauses and resumes it: the pump
    that feeds stdin waits while the runtime has not read what it was given."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.open.set()

    def pause_reading(self) -> None:
        self.open.clear()

    def resume_reading(self) -> None:
        self.open.set()


async def _pump_stdin(stream: Stream, reader: asyncio.StreamReader, valve: _Valve) -> None:
    try:
        while data := await stream.read():
            reader.feed_data(data)
            await valve.open.wait()
    finally:
        reader.feed_eof()


MAX_RESIZE_TEXT = 4096  # an unfinished resize message longer than this ends the resize stream
MAX_PENDING_RESIZES = 16  # the oldest give way when the runtime does not keep up


async def _pump_resizes(stream: Stream, queue: asyncio.Queue[TerminalSize]) -> None:
    """JSON `{"Width": w, "Height": h}` messages, one after the other (Go's json.Decoder: keys in any case); the
    first that does not decode ends the stream's handling, as the kubelet's."""
    decoder = json.JSONDecoder()
    text = ""
    while data := await stream.read():
        text += data.decode("latin-1")
        while text := text.lstrip():
            try:
                value, end = decoder.raw_decode(text)
            except json.JSONDecodeError:
                if len(text) > MAX_RESIZE_TEXT:
                    return
                break
            text = text[end:]
            if not isinstance(value, dict):
                return
            fields = {str(key).lower(): item for key, item in value.items()}
            width, height = fields.get("width", 0), fields.get("height", 0)
            if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 0xFFFF for n in (width, height)):
                return
            while queue.qsize() >= MAX_PENDING_RESIZES:
                queue.get_nowait()
            queue.put_nowait(TerminalSize(width, height))


def _status_message(protocol: str, status: dict[str, Any]) -> bytes:
    if protocol == "v4.channel.k8s.io":
        return json.dumps(status, separators=(",", ":")).encode()
    if status.get("status") == "Success":
        return b""
    return str(status.get("message", "")).encode()


async def serve_command(
    request: Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    command: CommandRequest,
    run: Run,
    *,
    limits: Limits = DEFAULT_LIMITS,
    creation_timeout: float = STREAM_CREATION_TIMEOUT,
) -> None:
    """Answer a raw SPDY upgrade for exec or attach and run `command` with the streams the client opens. If the
    client goes away before the command ends, `run` is cancelled."""
    if not (command.stdin or command.stdout or command.stderr):
        await _refuse(writer, 400, "Bad Request", "you must specify at least 1 of stdin, stdout, stderr")
        return
    protocol = await handshake(request, writer, COMMAND_PROTOCOLS)
    if protocol is None:
        return
    tty = command.tty
    expected = {"error"}
    if command.stdin:
        expected.add("stdin")
    if command.stdout:
        expected.add("stdout")
    if command.stderr and not tty:  # with a TTY stderr is stdout's
        expected.add("stderr")
    if tty and protocol in ("v4.channel.k8s.io", "v3.channel.k8s.io"):
        expected.add("resize")
    streams: dict[str, Stream] = {}
    all_there = asyncio.Event()

    async def on_stream(stream: Stream) -> bool:
        kind = stream.header("streamtype")
        if kind in ("error", "stdin", "stdout", "stderr", "resize"):
            streams[kind] = stream
            if expected <= streams.keys():
                all_there.set()
        else:
            log.debug("unexpected stream type %r", kind)
        return True  # the kubelet replies to every stream

    session = Session(StreamTransport(reader, writer), server=True, on_stream=on_stream, limits=limits)
    await _run_command(session, protocol, expected, streams, all_there, command, run, creation_timeout)


async def _run_command(
    session: Session,
    protocol: str,
    expected: set[str],
    streams: dict[str, Stream],
    all_there: asyncio.Event,
    command: CommandRequest,
    run: Run,
    creation_timeout: float,
) -> None:
    reading = asyncio.create_task(session.run(), name="spdy-session")
    pumps: list[asyncio.Task[None]] = []
    linger = 0.0
    try:
        if not await _first(all_there.wait(), session.closed.wait(), timeout=creation_timeout):
            log.debug("SPDY %s: timed out waiting for client to create streams", protocol)
            return
        if session.closed.is_set():
            return
        for kind in expected:
            await streams[kind].replied.wait()
        stdin = None
        if "stdin" in streams:
            valve = _Valve()
            stdin = asyncio.StreamReader()
            stdin.set_transport(valve)  # type: ignore[arg-type]
            pumps.append(asyncio.create_task(_pump_stdin(streams["stdin"], stdin, valve)))
        command_streams = CommandStreams(
            stdin=stdin,
            stdout=StreamOutput(streams["stdout"]) if "stdout" in streams else None,
            stderr=StreamOutput(streams["stderr"]) if "stderr" in streams and not command.tty else None,
        )
        if "resize" in streams:
            pumps.append(asyncio.create_task(_pump_resizes(streams["resize"], command_streams.resizes)))
        status = await _run_until_gone(session, command, command_streams, run)
        if status is None:
            return
        for kind in ("stdout", "stderr"):
            if kind in streams:
                await streams[kind].close()
        error_stream = streams["error"]
        with contextlib.suppress(ConnectionError):
            message = _status_message(protocol, status)
            if message:
                await error_stream.write(message)
        await error_stream.close()
        linger = LINGER
    finally:
        for pump in pumps:
            pump.cancel()
        await session.close(linger=linger)
        reading.cancel()
        await asyncio.gather(reading, *pumps, return_exceptions=True)


async def _run_until_gone(
    session: Session, command: CommandRequest, streams: CommandStreams, run: Run
) -> dict[str, Any] | None:
    """The command's end as a Status; None if the client went away first (the command is then cancelled)."""
    task: asyncio.Future[int] = asyncio.ensure_future(run(command, streams))
    gone: asyncio.Future[Any] = asyncio.ensure_future(session.closed.wait())
    try:
        await asyncio.wait([task, gone], return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return None
    try:
        return exit_status(task.result())
    except CommandError as err:
        return error_status(str(err))
    except Exception as err:  # the runtime failed: reported to the client as the kubelet reports it
        log.exception("remote command %s/%s failed", command.namespace, command.pod)
        return error_status(f"Internal error occurred: error executing command in container: {err}")


async def _first(*waits: Awaitable[Any], timeout: float) -> bool:
    """Whether any of `waits` finished within `timeout` (the others are cancelled)."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ---- port-forward --------------------------------------------------------------------------------------------------


def go_dial_error(network: str, address: str, err: OSError) -> str:
    """A failed connect as Go words it: `dial tcp4 127.0.0.1:8080: connect: connection refused`."""
    reason = os.strerror(err.errno) if err.errno else str(err)
    if err.errno in (errno.ETIMEDOUT,) or isinstance(err, TimeoutError):
        reason = "i/o timeout"
    return f"dial {network} {address}: connect: {reason[:1].lower()}{reason[1:]}"


def portforward_error(port: int, pod: str, uid: str, netns: str, err: BaseException) -> str:
    """What the kubelet writes on the error stream when forwarding fails (containerd's wording inside it). An
    OSError from connect is worded as containerd's dial; anything else carries its own message."""
    if isinstance(err, OSError) and err.errno:
        ipv4 = go_dial_error("tcp4", f"127.0.0.1:{port}", err)
        cause = (
            f'failed to execute portforward in network namespace "{netns}": failed to connect to localhost:{port} '
            f'inside namespace "{pod}", IPv4: {ipv4} IPv6 dial tcp6: address localhost: no suitable address found '
        )
    else:
        cause = str(err)
    return f"error forwarding port {port} to pod {pod}, uid {uid}: {cause}"


class _Pair:
    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.error: Stream | None = None
        self.data: Stream | None = None
        self.complete = asyncio.Event()


class PortForwarder:
    """The streams of one port-forward session, paired by request and spliced to dialled connections."""

    def __init__(
        self,
        dial: PortDial,
        pod: str = "",
        uid: str = "",
        netns: str = "",
        creation_timeout: float = STREAM_CREATION_TIMEOUT,
    ) -> None:
        self.dial = dial
        self.pod = pod
        self.uid = uid
        self.netns = netns
        self.creation_timeout = creation_timeout
        self.pairs: dict[str, _Pair] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def on_stream(self, stream: Stream) -> bool:
        port = stream.header("port")
        if not port:
            log.debug('port-forward stream rejected: "port" header is required')
            return False
        if not port.isdigit() or not 1 <= int(port) <= 0xFFFF:
            log.debug("port-forward stream rejected: unable to parse %r as a port", port)
            return False
        kind = stream.header("streamtype")
        if kind not in ("error", "data"):
            log.debug("port-forward stream rejected: invalid stream type %r", kind)
            return False
        request_id = stream.header("requestid")
        if not request_id:  # old clients: the error stream's id names the pair
            request_id = str(stream.id if kind == "error" else stream.id - 2)
        pair = self.pairs.get(request_id)
        if pair is None:
            pair = self.pairs[request_id] = _Pair(request_id)
            self._spawn(self._monitor(pair), f"portforward-pair-{request_id}")
        if getattr(pair, kind) is not None:
            message = f"error processing stream for request {request_id}: {kind} stream already assigned"
            log.debug("%s", message)
            if pair.error is not None:
                self._spawn(_write_quietly(pair.error, message.encode()), "portforward-error")
            return True
        setattr(pair, kind, stream)
        if pair.error is not None and pair.data is not None:
            pair.complete.set()
            self.pairs.pop(request_id, None)
            self._spawn(self._forward(pair.data, pair.error), f"portforward-{request_id}")
        return True

    async def _monitor(self, pair: _Pair) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.creation_timeout):
                await pair.complete.wait()
                return
        if self.pairs.get(pair.request_id) is pair:
            del self.pairs[pair.request_id]
        message = f"(conn=spdy, request={pair.request_id}) timed out waiting for streams"
        log.debug("%s", message)
        if pair.error is not None:
            await _write_quietly(pair.error, message.encode())
            await pair.error.close()
        if pair.data is not None:
            await pair.data.reset()

    async def _forward(self, data: Stream, error: Stream) -> None:
        await data.replied.wait()
        await error.replied.wait()
        if data.ended.is_set() or error.ended.is_set():
            return
        port = int(data.header("port"))
        try:
            conn_reader, conn_writer = await self.dial(port)
        except Exception as err:  # a dial that fails in any way is the client's error message
            message = portforward_error(port, self.pod, self.uid, self.netns, err)
            log.debug("%s", message)
            await _write_quietly(error, message.encode())
            await data.reset()
            await error.close()
            return
        try:
            await splice(data, conn_reader, conn_writer)
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                conn_writer.close()
            await data.close()
            await error.close()

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _write_quietly(stream: Stream, data: bytes) -> None:
    with contextlib.suppress(ConnectionError):
        await stream.write(data)


async def splice(stream: Stream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy both ways between a stream and a connection. The client half-closing (FIN) half-closes the connection
    and the pod's answer still flows; once the pod's side ends, the client's has `HALF_CLOSE_GRACE` seconds (as
    containerd's port-forward); a reset, or the session ending, stops both at once."""

    async def to_pod() -> None:
        while data := await stream.read():
            writer.write(data)
            await writer.drain()
        if not stream.ended.is_set() and writer.can_write_eof():
            writer.write_eof()

    async def to_client() -> None:
        while data := await reader.read(stream.session.limits.write_chunk):
            await stream.write(data)
        await stream.close()

    up = asyncio.create_task(to_pod())
    down = asyncio.create_task(to_client())
    ended = asyncio.create_task(stream.ended.wait())
    try:
        done, _ = await asyncio.wait({up, down, ended}, return_when=asyncio.FIRST_COMPLETED)
        if up in done and down not in done and up.exception() is None and not stream.ended.is_set():
            await asyncio.wait({down, ended}, return_when=asyncio.FIRST_COMPLETED)
        elif down in done and up not in done and not stream.ended.is_set():
            await asyncio.wait({up, ended}, timeout=HALF_CLOSE_GRACE, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (up, down, ended):
            task.cancel()
        results = await asyncio.gather(up, down, ended, return_exceptions=True)
    for result in results:
        if isinstance(result, Exception) and not isinstance(result, (ConnectionError, StreamReset, OSError)):
            log.debug("port-forward copy failed: %r", result)


async def _serve_portforward(
    transport: Transport, dial: PortDial, pod: str, uid: str, netns: str, limits: Limits, creation_timeout: float
) -> None:
    forwarder = PortForwarder(dial, pod, uid, netns, creation_timeout)
    session = Session(transport, server=True, on_stream=forwarder.on_stream, limits=limits)
    try:
        await session.run()
    finally:
        await forwarder.stop()
        await session.close()


async def serve_portforward(
    request: Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    dial: PortDial,
    *,
    pod: str = "",
    uid: str = "",
    netns: str = "",
    limits: Limits = DEFAULT_LIMITS,
    creation_timeout: float = STREAM_CREATION_TIMEOUT,
) -> None:
    """Answer a raw SPDY upgrade for port-forward (`portforward.k8s.io`) and forward until the client goes.
    `pod`, `uid` and `netns` only word the error a failed dial reports."""
    if await handshake(request, writer, (PORTFORWARD_PROTOCOL,)) is None:
        return
    await _serve_portforward(StreamTransport(reader, writer), dial, pod, uid, netns, limits, creation_timeout)


async def serve_portforward_tunnel(
    ws: MessageChannel,
    dial: PortDial,
    *,
    pod: str = "",
    uid: str = "",
    netns: str = "",
    limits: Limits = DEFAULT_LIMITS,
    creation_timeout: float = STREAM_CREATION_TIMEOUT,
) -> None:
    """Port-forward with SPDY inside an accepted WebSocket (`SPDY/3.1+portforward.k8s.io`)."""
    await _serve_portforward(MessageTransport(ws), dial, pod, uid, netns, limits, creation_timeout)
