"""A component's log kept for its mirror pod (`tinykube.componentlog`): bounded, per component, read with the
kubelet's log options."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tinykube.componentlog import FileLog, LogBuffer, LogSource


async def _read(source: LogSource, **options: object) -> bytes:
    return b"".join([chunk async for chunk in source.read(**options)])  # type: ignore[arg-type]


def read(source: LogSource, **options: object) -> bytes:
    return asyncio.run(_read(source, **options))


@pytest.fixture
def buffer() -> Iterator[LogBuffer]:
    captured = LogBuffer(exclude=("test.component.other",)).capture("test.component")
    yield captured
    captured.detach()


def test_a_log_buffer_keeps_its_components_lines_in_klog_format(buffer: LogBuffer) -> None:
    logging.getLogger("test.component.part").info("serving on %s", "127.0.0.1:53")
    logging.getLogger("test.component.part").warning("slow")
    logging.getLogger("test.component.other").warning("another component's")
    logging.getLogger("test.component.part").debug("below INFO")
    lines = read(buffer).decode().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["serving on 127.0.0.1:53", "slow"]
    assert lines[0][0] == "I" and lines[1][0] == "W" and "test_componentlog.py:" in lines[0]


def test_a_log_buffer_answers_tail_timestamps_since_and_limit(buffer: LogBuffer) -> None:
    for i in range(5):
        logging.getLogger("test.component").info("line %d", i)
    assert read(buffer, tail_lines=2).decode().count("\n") == 2 and b"line 4" in read(buffer, tail_lines=1)
    assert read(buffer, tail_lines=0) == b""
    stamped = read(buffer, timestamps=True, tail_lines=1).decode()
    assert datetime.fromisoformat(stamped.split(" ", 1)[0].replace("Z", "+00:00")).tzinfo is not None
    assert read(buffer, since_time=datetime.now(UTC) + timedelta(seconds=60)) == b""
    assert read(buffer, limit_bytes=3) == read(buffer)[:3]
    assert read(buffer, previous=True) == b""


def test_a_log_buffer_is_bounded_by_bytes() -> None:
    small = LogBuffer(max_bytes=200).capture("test.bounded")
    try:
        for i in range(100):
            logging.getLogger("test.bounded").info("line %03d", i)
        kept = read(small)
        assert len(kept) <= 200 and kept.endswith(b"line 099\n") and b"line 000" not in kept
    finally:
        small.detach()


def test_following_a_log_buffer_shows_new_lines(buffer: LogBuffer) -> None:
    async def follow() -> list[bytes]:
        logging.getLogger("test.component").info("before")
        chunks: list[bytes] = []
        async for chunk in buffer.read(follow=True):
            chunks.append(chunk)
            if len(chunks) == 1:
                logging.getLogger("test.component").info("after")
            else:
                return chunks
        return chunks

    first, second = asyncio.run(asyncio.wait_for(follow(), 30))
    assert first.endswith(b"] before\n") and second.endswith(b"] after\n")


def test_detaching_a_log_buffer_restores_the_logger() -> None:
    logger = logging.getLogger("test.detached")
    logger.setLevel(logging.WARNING)
    captured = LogBuffer().capture("test.detached")
    assert logger.level == logging.INFO and captured in logger.handlers
    captured.detach()
    assert logger.level == logging.WARNING and captured not in logger.handlers


def test_a_file_log_serves_etcds_json_lines_with_their_times(tmp_path: Path) -> None:
    path = tmp_path / "etcd.log"
    path.write_bytes(
        b'{"level":"info","ts":"2024-01-02T03:04:05.678Z","msg":"one"}\n'
        b'{"level":"info","ts":"2024-01-02T03:04:06.000Z","msg":"two"}\n{"partial'
    )
    assert read(FileLog(path)).count(b"\n") == 2  # the unfinished line is not shown yet
    assert read(FileLog(path), tail_lines=1, timestamps=True).startswith(b"2024-01-02T03:04:06.000000Z {")
    since = datetime(2024, 1, 2, 3, 4, 5, 900000, tzinfo=UTC)
    assert b'"one"' not in read(FileLog(path), since_time=since)
    assert read(FileLog(tmp_path / "missing.log")) == b""
