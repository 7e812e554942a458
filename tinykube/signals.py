"""How a long-running tinykube command stops, as upstream's components do (k8s.io/apiserver's
`SetupSignalContext`, which kube-apiserver, the kubelet and kube-controller-manager share): SIGINT and SIGTERM
both begin a graceful stop, and a second signal exits at once with status 1.

SIGINT is taken explicitly, whatever the process inherited. A shell script's `cmd &`, and many job runners, start
their children with SIGINT ignored; Python then leaves it ignored, and asyncio's `Runner` only takes over a SIGINT
that still has Python's default handler. So `kill -INT` (and Ctrl-C) did nothing at all to a `tinykube node` or
`tinykube controllers` started that way, while SIGTERM, which they handled themselves, stopped them. Go's
`signal.Notify` takes over an ignored SIGINT too.

A graceful stop is bounded: a process still there `GRACE_SECONDS` after the first signal (a task that swallowed its
cancellation, a thread blocked in a call) exits anyway, as a second signal would make it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable

GRACE_SECONDS = 15.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def take_sigint() -> None:
    """Ctrl-C raises KeyboardInterrupt from here on, even where SIGINT was inherited ignored (before a loop runs:
    imports, etcd's start)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


class Stopper:
    """The loop's handlers for SIGINT and SIGTERM: the first calls `on_stop(signal)` and arms the deadline, a second
    exits at once."""

    def __init__(self, on_stop: Callable[[int], None], *, grace: float = GRACE_SECONDS) -> None:
        self.on_stop = on_stop
        self.grace = grace
        self.received: int | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self._signalled, sig)

    def _signalled(self, sig: int) -> None:
        if self.received is not None:
            _exit(f"second signal ({signal.Signals(sig).name}): exiting at once")
        self.received = sig
        watchdog = threading.Timer(self.grace, _exit, (f"not stopped {self.grace:g} s after {_name(sig)}: exiting",))
        watchdog.daemon = True  # it never holds up an exit that comes in time
        watchdog.start()
        self.on_stop(sig)


def _name(sig: int) -> str:
    return signal.Signals(sig).name


def _exit(message: str) -> None:
    print(f"tinykube: {message}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)
