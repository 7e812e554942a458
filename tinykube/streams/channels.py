"""The WebSocket channel protocols of exec, attach and portforward, served by the node agent.

Every binary message starts with its channel number. remotecommand (exec, attach): 0 stdin, 1 stdout, 2 stderr,
3 error (the command's end: a JSON Status from v4 on, plain text before), 4 resize (JSON `{"Width", "Height"}`,
v3 on); v5 adds channel 255, whose message `[255, n]` closes channel n (stdin's end of file). portforward: for the
i-th port of `?ports=`, data on channel 2i and errors on 2i+1; the first message on each is the port number (two
bytes, little-endian), then one connection per port is relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
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
from tinykube.streams.websocket import StreamWebSocket

log = logging.getLogger(__name__)

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
REMOTECOMMAND_PROTOCOLS = (V5, V4, "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
PORTFORWARD_PROTOCOLS = (V4,)  # and none at all, as the kubelet's

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
CHUNK = 32 << 10
STDIN_BUFFER = 4 << 20  # unread stdin held before the client is made to wait


class ChannelOutput:
    def __init__(self, ws: StreamWebSocket, channel: int) -> None:
        self.ws = ws
        self.prefix = bytes([channel])

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), CHUNK):
            await self.ws.send(self.prefix + data[start : start + CHUNK])


def _version(subprotocol: str) -> int:
    return int(subprotocol[1]) if subprotocol.startswith("v") else 1


async def serve_command(ws: StreamWebSocket, request: CommandRequest, run: Run) -> None:
    """Run the command with its streams on the WebSocket's channels; send its end on the error channel."""
    version = _version(ws.subprotocol)
    stdin = asyncio.StreamReader() if request.stdin else None
    streams = CommandStreams(
        stdin=stdin,
        stdout=ChannelOutput(ws, STDOUT) if request.stdout else None,
        stderr=ChannelOutput(ws, STDERR) if request.stderr and not request.tty else None,
    )
    command = asyncio.ensure_future(run(request, streams))
    client = asyncio.ensure_future(_read_client(ws, streams, version))
    await asyncio.wait([command, client], return_when=asyncio.FIRST_COMPLETED)
    if not command.done():  # the client went away: the command goes with it
        command.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await command
        return
    client.cancel()
    try:
        status = exit_status(command.result())
    except CommandError as err:
        status = error_status(str(err))
    except ConnectionError:  # the client went while the command wrote to it
        return
    except Exception as err:
        log.exception("exec %s/%s: the runtime failed", request.namespace, request.pod)
        status = error_status(f"error executing command in container: {err}")
    with contextlib.suppress(ConnectionError):
        if version >= 4:
            await ws.send(bytes([ERROR]) + json.dumps(status, separators=(",", ":")).encode())
        elif status["status"] != "Success":
            await ws.send(bytes([ERROR]) + status["message"].encode())
        await ws.close()


async def _read_client(ws: StreamWebSocket, streams: CommandStreams, version: int) -> None:
    """Feed what the client sends to the command: stdin (its end on v5's close), terminal sizes."""
    stdin = streams.stdin
    while (message := await ws.recv()) is not None:
        if not message:
            continue
        channel, data = message[0], message[1:]
        if channel == STDIN and stdin is not None and not stdin.at_eof():
            stdin.feed_data(data)
            while len(getattr(stdin, "_buffer", b"")) > STDIN_BUFFER:  # a StreamReader has no bound of its own
                await asyncio.sleep(0.01)
        elif channel == RESIZE and version >= 3:
            with contextlib.suppress(ValueError, TypeError, KeyError):
                size = json.loads(data)
                streams.resizes.put_nowait(TerminalSize(int(size["Width"]), int(size["Height"])))
        elif channel == CLOSE and version >= 5 and data[:1] == bytes([STDIN]) and stdin is not None:
            stdin.feed_eof()
    if stdin is not None:
        stdin.feed_eof()


Connect = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def parse_ports(values: list[str]) -> list[int]:
    """`?ports=80,8080` (or repeated): the ports, or ValueError with the kubelet's message."""
    ports = []
    for value in values:
        for text in value.split(","):
            text = text.strip()
            if not text.isdigit() or not 0 < int(text) < 65536:
                raise ValueError(f'unable to parse "{text}" as a port: must be in the range 1-65535')
            ports.append(int(text))
    if not ports:
        raise ValueError('query parameter "port" is required')
    return ports


async def serve_portforward(ws: StreamWebSocket, ports: list[int], connect: Connect, describe: str) -> None:
    """One connection to each port, relayed over its data channel; a failed dial is told on its error channel.
    `describe` names the pod in errors (`<namespace>/<name>, uid <uid>` as the kubelet words it)."""
    writers: dict[int, asyncio.StreamWriter] = {}
    relays = []
    for index, port in enumerate(ports):
        number = port.to_bytes(2, "little")
        await ws.send(bytes([2 * index]) + number)
        await ws.send(bytes([2 * index + 1]) + number)
    for index, port in enumerate(ports):
        try:
            reader, writer = await connect(port)
        except OSError as err:
            message = f"error forwarding port {port} to pod {describe}: {err}"
            await ws.send(bytes([2 * index + 1]) + message.encode())
            continue
        writers[2 * index] = writer
        relays.append(asyncio.ensure_future(_pod_to_client(reader, ws, 2 * index)))
    client: asyncio.Future[Any] = asyncio.ensure_future(_client_to_pods(ws, writers))
    pods: list[asyncio.Future[Any]] = [asyncio.ensure_future(asyncio.wait(relays))] if relays else []
    try:
        if pods:  # until the client goes or every pod connection is over
            await asyncio.wait([client, *pods], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waited = [client, *relays, *pods]
        for task in waited:
            task.cancel()
        await asyncio.gather(*waited, return_exceptions=True)  # each one's end retrieved
        for writer in writers.values():
            writer.close()
        with contextlib.suppress(ConnectionError):
            await ws.close()


async def _pod_to_client(reader: asyncio.StreamReader, ws: StreamWebSocket, channel: int) -> None:
    prefix = bytes([channel])
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(CHUNK):
            await ws.send(prefix + data)


async def _client_to_pods(ws: StreamWebSocket, writers: dict[int, asyncio.StreamWriter]) -> None:
    while (message := await ws.recv()) is not None:
        writer = writers.get(message[0]) if message else None
        if writer is None or writer.is_closing():
            continue
        with contextlib.suppress(ConnectionError):
            writer.write(message[1:])
            await writer.drain()
