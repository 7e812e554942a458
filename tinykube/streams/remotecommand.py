"""A remote command (exec or attach) as the runtime sees it, whatever protocol carries its streams."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tinykube.web import Query


class CommandError(Exception):
    """The command could not be run (no such pod or container, a runtime that cannot exec): sent to the client
    as a Failure Status on the error channel, as the kubelet does."""


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """What the client asked for (the query of `/exec/{ns}/{pod}/{container}` or `/attach/...`)."""

    namespace: str
    pod: str
    container: str
    command: tuple[str, ...]  # empty for attach
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def from_query(cls, namespace: str, pod: str, container: str, query: Query, attach: bool) -> CommandRequest:
        def flag(name: str, default: bool) -> bool:
            values = query.get(name)
            return default if not values else values[-1].lower() in ("true", "1")

        return cls(
            namespace=namespace,
            pod=pod,
            container=container,
            command=() if attach else tuple(query.get("command", [])),
            stdin=flag("stdin", False),
            stdout=flag("stdout", True),
            stderr=flag("stderr", True),
            tty=flag("tty", False),
        )


class Output(Protocol):
    async def write(self, data: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class TerminalSize:
    width: int
    height: int


@dataclass(slots=True)
class CommandStreams:
    """The streams of one remote command. The protocol feeds `stdin` (EOF when the client closes it) and
    `resizes`; the runtime writes `stdout`/`stderr` (None when the client did not ask for them; with a TTY
    stderr is merged into stdout, as upstream)."""

    stdin: asyncio.StreamReader | None
    stdout: Output | None
    stderr: Output | None
    resizes: asyncio.Queue[TerminalSize] = field(default_factory=asyncio.Queue)


# Runs the command to its end; returns its exit code (or raises CommandError).
Run = Callable[[CommandRequest, CommandStreams], Awaitable[int]]

# Opens a TCP connection to a port of a pod, inside its network namespace (raises OSError, as a dial fails).
Dial = Callable[[str, str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def exit_status(code: int) -> dict[str, Any]:
    """The Status the kubelet sends on the error channel when the command ends (kubectl exits with the code)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def error_status(message: str) -> dict[str, Any]:
    """The Status for a command that could not run."""
    return {"metadata": {}, "status": "Failure", "message": message}
