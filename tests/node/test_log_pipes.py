"""A container's output pipe is closed exactly once when its relay ends, under uvloop (which `tinykube up` runs
on; its transports close the descriptor themselves, MagicStack/uvloop#763) and asyncio alike. A second close would
hit whatever file took the number meanwhile (another thread's pipe, socket or log file): the file object handed to
the loop is a probe that, finding its descriptor already closed, opens a pipe in between, as such a thread would."""

from __future__ import annotations

import asyncio
import gc
import io
import os
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from tinykube.node import container_logs


class Probe(io.FileIO):
    hit: list[int] = []  # descriptors of other files that a second close closed

    def close(self) -> None:
        if not self.closed and self.closefd:
            try:
                os.fstat(self.fileno())
            except OSError:  # closed already, by the loop: the number is free for anyone
                other, other_end = os.pipe()
                super().close()
                try:
                    os.fstat(other)
                except OSError:
                    Probe.hit.append(other)
                else:
                    os.close(other)
                os.close(other_end)
                return
        super().close()


async def relay_one_pipe() -> None:
    read_end, write_end = os.pipe()
    reader, transport = await container_logs.open_pipe(read_end)
    os.write(write_end, b"line\n")
    os.close(write_end)
    assert await reader.read() == b"line\n"
    transport.close()
    await asyncio.sleep(0.05)  # the transport's close runs on the loop
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(read_end)  # closed (once)


@pytest.mark.parametrize("run", [uvloop.run, asyncio.run], ids=["uvloop", "asyncio"])
def test_a_log_pipe_is_closed_once(run: Callable[[Coroutine[Any, Any, None]], None], monkeypatch: Any) -> None:
    def fdopen(fd: int, mode: str, buffering: int = -1, closefd: bool = True) -> Probe:
        return Probe(fd, mode.replace("b", ""), closefd=closefd)

    monkeypatch.setattr(container_logs.os, "fdopen", fdopen)
    Probe.hit.clear()
    run(relay_one_pipe())
    assert Probe.hit == []
