"""A running container's console and the commands run in it, for the streaming endpoints (netns runtime).

A container with `stdin: true` keeps its stdin open for `attach` (a pipe, or with `tty: true` a pseudo-terminal
whose master the agent holds); its output is teed from the log relay to every attached client. `exec` runs a
command in the container's namespaces (`nsenter` on its process: network, mount, UTS, root and working directory)
with its environment, on a pseudo-terminal of its own when a TTY is asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios
from collections.abc import Callable
from dataclasses import dataclass, field

from tinykube.streams.remotecommand import CommandStreams, Output, TerminalSize

CHUNK = 32 << 10
BACKLOG = 1024  # output chunks an attached client may fall behind by before it misses some
EOT = b"\x04"  # what a terminal's reader takes for the end of its input


def set_size(fd: int, size: TerminalSize) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))


def open_terminal() -> tuple[int, int]:
    """A pseudo-terminal (master, slave): the master non-blocking, the size a runtime starts one with (80x24) until
    the client tells its own."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    set_size(master, TerminalSize(80, 24))
    return master, slave


async def write_all(fd: int, data: bytes) -> None:
    """Write to a non-blocking pipe or terminal, waiting while it is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await asyncio.sleep(0.01)


@dataclass(slots=True)
class ContainerConsole:
    """One run of a container as `attach` sees it: its output (every run's, teed from the log relay) and, with
    `stdin: true`, its input."""

    fd: int | None  # the write end of its stdin pipe, or the terminal's master; None once closed
    tty: bool
    takes_input: bool  # `stdin: true` (a terminal without it shows its output only)
    once: bool  # stdinOnce: closed after the first attach ends
    listeners: set[asyncio.Queue[tuple[int, bytes] | None]] = field(default_factory=set)
    input_ended: bool = False

    def tee(self, stream: int, chunk: bytes) -> None:
        """An output chunk (stream 1 stdout, 2 stderr) to each attached client."""
        for queue in self.listeners:
            if queue.qsize() < BACKLOG:
                queue.put_nowait((stream, chunk))

    def close(self) -> None:
        """The run is over (attached clients stay for its last output, until the log relay is done)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def end_input(self) -> None:
        """stdinOnce: the process sees its input end (a terminal's reader gets EOT, a pipe's reader EOF)."""
        if self.fd is None or not self.takes_input or self.input_ended:
            return
        self.input_ended = True
        if self.tty:
            with contextlib.suppress(OSError):
                os.write(self.fd, EOT)
            return
        self.close()


async def attach(console: ContainerConsole, streams: CommandStreams, over: asyncio.Event) -> int:
    """Relay the console until the run is over or the client goes (the session cancelled). The end of the client's
    stdin ends the container's input only with `stdinOnce`, as upstream: the output goes on either way."""
    queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
    console.listeners.add(queue)
    to_client, run_over = asyncio.ensure_future(_to_client(queue, streams)), asyncio.ensure_future(over.wait())
    helpers = [asyncio.ensure_future(_resize(streams, lambda: console.fd if console.tty else None))]
    if streams.stdin is not None and console.takes_input and console.fd is not None:
        helpers.append(asyncio.ensure_future(_to_console(streams.stdin, console)))
    try:
        await asyncio.wait([to_client, run_over], return_when=asyncio.FIRST_COMPLETED)
        if run_over.done() and not to_client.done():  # the run's last output still goes to the client
            queue.put_nowait(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(to_client), 1.0)
    finally:
        console.listeners.discard(queue)
        for task in (to_client, run_over, *helpers):
            task.cancel()
        if console.once and streams.stdin is not None:
            console.end_input()  # the first attach with stdin is over: so is the container's input
    return 0


async def _to_client(queue: asyncio.Queue[tuple[int, bytes] | None], streams: CommandStreams) -> None:
    while (item := await queue.get()) is not None:
        stream, chunk = item
        out = streams.stdout if stream == 1 or streams.stderr is None else streams.stderr
        if out is not None:
            await out.write(chunk)


async def _to_console(stdin: asyncio.StreamReader, console: ContainerConsole) -> None:
    while data := await stdin.read(CHUNK):
        if console.fd is None:
            return
        await write_all(console.fd, data)
    if console.once:
        console.end_input()


async def _resize(streams: CommandStreams, terminal: Callable[[], int | None]) -> None:
    while True:
        size = await streams.resizes.get()
        fd = terminal()
        if fd is not None:
            set_size(fd, size)


async def run_command(argv: list[str], env: dict[str, str], tty: bool, streams: CommandStreams) -> int:
    """Run `argv` (already wrapped to enter the container) with the client's streams; its exit code. Cancelled
    (the client went away), the command is killed."""
    master = slave = -1
    pipe, none = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    stdin, stdout, stderr = (
        pipe if streams.stdin is not None else none,
        pipe if streams.stdout is not None else none,
        pipe if streams.stderr is not None else none,
    )
    if tty:
        master, slave = open_terminal()
        stdin = stdout = stderr = slave
        # a session of its own whose controlling terminal is this one (not in a preexec_fn: under uvloop it runs
        # before the child's stdio is set up); the session goes when the terminal is closed (SIGHUP)
        argv = ["setsid", "--wait", "--ctty", *argv]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
        )
    finally:
        if slave >= 0:
            os.close(slave)
    outputs: list[asyncio.Future[None]] = []  # what the command writes, to the client
    others: list[asyncio.Future[None]] = []  # what the client sends
    if tty:
        outputs.append(asyncio.ensure_future(_terminal_output(master, streams.stdout)))
        if streams.stdin is not None:
            others.append(asyncio.ensure_future(_terminal_input(streams.stdin, master)))
        others.append(asyncio.ensure_future(_resize(streams, lambda: master)))
    else:
        if streams.stdin is not None and process.stdin is not None:
            others.append(asyncio.ensure_future(_pipe_input(streams.stdin, process.stdin)))
        for source, out in ((process.stdout, streams.stdout), (process.stderr, streams.stderr)):
            if source is not None and out is not None:
                outputs.append(asyncio.ensure_future(_pipe_output(source, out)))
    try:
        code = await process.wait()
        with contextlib.suppress(TimeoutError):  # what it wrote last (a child it left may hold the output open)
            await asyncio.wait_for(asyncio.gather(*outputs, return_exceptions=True), 1.0)
        return 128 - code if code < 0 else code
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        for task in (*outputs, *others):
            task.cancel()
        if master >= 0:
            os.close(master)


async def _terminal_output(master: int, out: Output | None) -> None:
    """The terminal's output until its last writer is gone (the master reads EIO then)."""
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    loop.add_reader(master, readable.set)
    try:
        while True:
            await readable.wait()
            readable.clear()
            try:
                data = os.read(master, CHUNK)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the other side is closed
                return
            if not data:
                return
            if out is not None:
                await out.write(data)
    finally:
        loop.remove_reader(master)


async def _terminal_input(stdin: asyncio.StreamReader, master: int) -> None:
    while data := await stdin.read(CHUNK):
        await write_all(master, data)
    await write_all(master, EOT)  # the client's end of input, as a terminal's reader knows it


async def _pipe_input(stdin: asyncio.StreamReader, pipe: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await stdin.read(CHUNK):
            pipe.write(data)
            await pipe.drain()
        pipe.close()


async def _pipe_output(pipe: asyncio.StreamReader, out: Output) -> None:
    while data := await pipe.read(CHUNK):
        await out.write(data)
