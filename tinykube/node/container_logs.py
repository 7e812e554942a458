"""A container's log files, in the CRI format the kubelet writes (`<time> <stream> <F|P> <content>`, one file per
run): the relay that copies a run's stdout and stderr pipes into its file, and the reader that serves a file as the
kubelet's `containerLogs` does (tail, timestamps, since, a byte limit, following the run to its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

DRAIN = 1.0  # seconds to keep reading a finished container's pipes (a child it left may hold them open)
FOLLOW_POLL = 0.1


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


Tee = Callable[[int, bytes], None]  # (1 stdout or 2 stderr, chunk): the output to attached clients as well


async def _pump(stream: asyncio.StreamReader, tag: bytes, out: BinaryIO, tee: Tee | None = None) -> None:
    """Copy a pipe into the CRI log: full lines as `F`, an unfinished tail (or a very long line) as `P`."""
    pending = b""
    while chunk := await stream.read(65536):
        if tee is not None:
            tee(TAGS.index(tag) + 1, chunk)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            out.write(b"%s %s F %s\n" % (stamp().encode(), tag, line))
        if len(pending) >= 16384:
            out.write(b"%s %s P %s\n" % (stamp().encode(), tag, pending))
            pending = b""
        out.flush()
    if pending:
        out.write(b"%s %s P %s\n" % (stamp().encode(), tag, pending))
        out.flush()


Pipe = tuple[asyncio.StreamReader, asyncio.BaseTransport]
TAGS = (b"stdout", b"stderr")


async def open_pipe(fd: int) -> Pipe:
    """A reader of the pipe `fd` (which the transport owns from here on, and closes once).

    asyncio's transport closes the file object it is given; uvloop's closes the descriptor itself (libuv) and the
    file object would close the number again when collected — by then, maybe another thread's newly opened file
    (MagicStack/uvloop#763): under uvloop the file object must not own the descriptor."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=not type(loop).__module__.startswith("uvloop"))
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader, transport


async def relay(
    path: Path, pipes: list[Pipe], exited: Callable[[], Awaitable[Any]], over: asyncio.Event, tee: Tee | None = None
) -> None:
    """A run's stdout and stderr pipes (a terminal: one, its output) into its log, and to `tee`; reading stops
    shortly after the process exits (a child left behind could otherwise hold the pipes open forever)."""
    with path.open("ab") as out:
        pumps = asyncio.gather(*(_pump(r, tag, out, tee) for (r, _), tag in zip(pipes, TAGS, strict=False)))
        try:
            await exited()
            await asyncio.wait_for(asyncio.shield(pumps), DRAIN)
        except TimeoutError:
            pass
        finally:
            pumps.cancel()
            with contextlib.suppress(BaseException):
                await pumps
            for _, transport in pipes:
                transport.close()
            over.set()


def _parse(line: bytes) -> tuple[str, bytes, bool] | None:
    """A CRI log line: (timestamp, content, whether the line is complete)."""
    parts = line.rstrip(b"\n").split(b" ", 3)
    if len(parts) < 3:
        return None
    content = parts[3] if len(parts) == 4 else b""
    return parts[0].decode(), content, parts[2] == b"F"


def _format(entries: list[bytes], timestamps: bool, since: datetime | None) -> bytes:
    out = []
    for entry in entries:
        parsed = _parse(entry)
        if parsed is None:
            continue
        when, content, full = parsed
        if since is not None and datetime.fromisoformat(when) < since:
            continue
        out.append((when.encode() + b" " if timestamps else b"") + content + (b"\n" if full else b""))
    return b"".join(out)


async def read_log(
    path: Path,
    over: asyncio.Event | None,
    tail_lines: int | None,
    timestamps: bool,
    since: datetime | None,
    limit_bytes: int | None,
) -> AsyncIterator[bytes]:
    """The log's lines (the last `tail_lines`), then — following — new lines until the run is over."""
    left = limit_bytes
    with path.open("rb") as handle:
        lines = handle.read().splitlines(keepends=True)
        partial = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines else []
        chunk = _format(lines, timestamps, since)
        while True:
            if chunk:
                if left is not None:
                    chunk, left = chunk[:left], left - len(chunk)
                yield chunk
                if left is not None and left <= 0:
                    return
            if over is None:
                return
            done = over.is_set()
            data = partial + handle.read()
            complete = data[: data.rfind(b"\n") + 1]
            partial = data[len(complete) :]
            chunk = _format(complete.splitlines(keepends=True), timestamps, since)
            if done and not chunk:
                return
            if not chunk:
                await asyncio.sleep(FOLLOW_POLL)
