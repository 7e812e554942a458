"""A component's log, kept so that `kubectl logs` can answer for the mirror pod that stands for it.

tinykube's components run in one process and log through Python's `logging` (one logger tree each:
`tinykube.apiserver`, `tinykube.dns`, ...). A `LogBuffer` is a logging handler that keeps the last lines of those
loggers in memory (bounded by bytes), written as klog writes a line (`I0102 15:04:05.000000 1234 file.py:10] msg`,
so a kube-apiserver's log reads as one); a `FileLog` serves a log file another process writes (the etcd that `up`
launched). Both answer `read` with the kubelet's `containerLogs` options: tail, timestamps, since, a byte limit, and
follow (polled, as the container log reader follows its file).

It lives below the components: the component that logs knows nothing of it, the entry point attaches it to the
loggers (`capture`), and the node agent that publishes the mirror pod reads it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

MAX_BYTES = 1 << 20  # what a LogBuffer keeps: the last MiB of lines
FOLLOW_POLL = 0.1  # seconds between looks for new lines while following
_LEVELS = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}


class LogSource(Protocol):
    """What answers `containerLogs` for a component (keyword arguments as `Runtime.logs` takes them)."""

    def read(
        self,
        *,
        follow: bool = False,
        tail_lines: int | None = None,
        timestamps: bool = False,
        since_time: datetime | None = None,
        limit_bytes: int | None = None,
        previous: bool = False,
    ) -> AsyncIterator[bytes]: ...


def klog_line(record: logging.LogRecord) -> str:
    """A record as klog's header writes it: level letter, MMDD hh:mm:ss.uuuuuu, pid, file:line, the message."""
    when = datetime.fromtimestamp(record.created, UTC)
    level = _LEVELS.get(record.levelname, "I")
    text = record.getMessage()
    if record.exc_info:
        text += "\n" + logging.Formatter().formatException(record.exc_info)
    where = f"{os.path.basename(record.pathname)}:{record.lineno}"
    return f"{level}{when:%m%d %H:%M:%S.%f} {record.process:7d} {where}] {text}"


def _stamp(when: datetime) -> bytes:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()


class _Limit:
    """A byte budget over the chunks of one answer (`limitBytes`)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def take(self, chunk: bytes) -> bytes:
        if self.left is None:
            return chunk
        chunk, self.left = chunk[: self.left], self.left - len(chunk)
        return chunk

    @property
    def spent(self) -> bool:
        return self.left is not None and self.left <= 0


def _render(lines: Iterable[tuple[datetime, bytes]], timestamps: bool, since: datetime | None) -> bytes:
    return b"".join(
        (_stamp(when) + b" " if timestamps else b"") + text + b"\n"
        for when, text in lines
        if since is None or when >= since
    )


class LogBuffer(logging.Handler):
    """The last `max_bytes` of a component's log lines, in memory. Thread-safe: `emit` may run on any thread
    (logging's handler lock); readers copy under the same lock."""

    def __init__(self, max_bytes: int = MAX_BYTES, *, exclude: tuple[str, ...] = ()) -> None:
        """`exclude`: logger names (and their children) whose records are another component's."""
        super().__init__(logging.INFO)
        self.max_bytes = max_bytes
        self.exclude = exclude
        self._lines: collections.deque[tuple[int, datetime, bytes]] = collections.deque()
        self._size = 0
        self._written = 0  # lines ever written: a follower's position
        self._guard = threading.Lock()
        self._attached: list[tuple[logging.Logger, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if any(record.name == name or record.name.startswith(name + ".") for name in self.exclude):
            return
        try:
            text = klog_line(record).encode(errors="replace")
        except Exception:  # a record that cannot be formatted must not break the component that logged it
            self.handleError(record)
            return
        when = datetime.fromtimestamp(record.created, UTC)
        with self._guard:
            for line in text.split(b"\n"):
                self._lines.append((self._written, when, line))
                self._written += 1
                self._size += len(line) + 1
            while self._size > self.max_bytes and len(self._lines) > 1:
                self._size -= len(self._lines.popleft()[2]) + 1

    def _since(self, position: int) -> tuple[list[tuple[datetime, bytes]], int]:
        with self._guard:
            return [(w, t) for n, w, t in self._lines if n >= position], self._written

    def capture(self, *names: str) -> LogBuffer:
        """Attach to the named loggers, lowering each to INFO if it was set higher (what the process prints is its
        own handlers' level, see `cli._logging`); `detach` undoes it."""
        for name in names:
            logger = logging.getLogger(name)
            self._attached.append((logger, logger.level))
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
            logger.addHandler(self)
        return self

    def detach(self) -> None:
        for logger, level in reversed(self._attached):
            logger.removeHandler(self)
            logger.setLevel(level)
        self._attached.clear()

    async def read(
        self,
        *,
        follow: bool = False,
        tail_lines: int | None = None,
        timestamps: bool = False,
        since_time: datetime | None = None,
        limit_bytes: int | None = None,
        previous: bool = False,
    ) -> AsyncIterator[bytes]:
        """The kept lines (the last `tail_lines`), then — following — every new line until the reader goes away.
        A component is never restarted inside its process, so there is no previous run: `previous` is empty."""
        if previous:
            return
        limit = _Limit(limit_bytes)
        lines, position = self._since(0)
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines else []
        while True:
            chunk = limit.take(_render(lines, timestamps, since_time))
            if chunk:
                yield chunk
            if not follow or limit.spent:
                return
            await asyncio.sleep(FOLLOW_POLL)
            lines, position = self._since(position)


def _file_line_time(line: bytes, fallback: datetime) -> datetime:
    """etcd writes JSON lines with `ts`; any other line takes the time of the line before it."""
    try:
        found = json.loads(line).get("ts")
        return datetime.fromisoformat(str(found).replace("Z", "+00:00")).astimezone(UTC) if found else fallback
    except (ValueError, AttributeError):
        return fallback


class FileLog:
    """A log file that another process writes (the etcd `up` launched), served as a `LogSource`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _lines(self, data: bytes, when: datetime) -> list[tuple[datetime, bytes]]:
        found = []
        for line in data.splitlines():
            when = _file_line_time(line, when)
            found.append((when, line))
        return found

    async def read(
        self,
        *,
        follow: bool = False,
        tail_lines: int | None = None,
        timestamps: bool = False,
        since_time: datetime | None = None,
        limit_bytes: int | None = None,
        previous: bool = False,
    ) -> AsyncIterator[bytes]:
        if previous or not self.path.exists():
            return
        limit, when = _Limit(limit_bytes), datetime.fromtimestamp(self.path.stat().st_mtime, UTC)
        with self.path.open("rb") as handle:
            data = handle.read()
            complete = data[: data.rfind(b"\n") + 1]
            partial = data[len(complete) :]
            lines = self._lines(complete, when)
            if tail_lines is not None:
                lines = lines[-tail_lines:] if tail_lines else []
            while True:
                chunk = limit.take(_render(lines, timestamps, since_time))
                if chunk:
                    yield chunk
                if not follow or limit.spent:
                    return
                await asyncio.sleep(FOLLOW_POLL)
                data = partial + handle.read()
                complete = data[: data.rfind(b"\n") + 1]
                partial = data[len(complete) :]
                lines = self._lines(complete, lines[-1][0] if lines else when)
