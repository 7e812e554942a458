"""A per-key work queue with the guarantees of client-go's `workqueue`, for level-triggered controllers.

Informer handlers only `add` a key ("namespace/name"); workers `get` a key, reconcile the object's current state
and call `done`. The queue makes that safe and cheap:

- a key added several times before a worker takes it is processed once (the adds coalesce);
- a key is never held by two workers at once: re-added while being processed, it is queued again on `done`;
- a key whose reconcile failed comes back after a per-key exponential backoff (`add_rate_limited`) until
  `forget` clears its failure count.

The worker loop around a `sync(key)` coroutine is `tinykube.client.controller` (`run_workers`, `run_controller`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar, cast

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """Raised by `WorkQueue.get` once the queue is shut down and drained."""


class ExponentialBackoff(Generic[K]):
    """Per-key delay `base * 2**failures`, capped (client-go's ItemExponentialFailureRateLimiter)."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return min(self.base * 2.0 ** min(failures, 64), self.cap)  # min(): 2**huge would overflow the float

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)


_END = object()  # queued once by shutdown(); every getter that meets it puts it back for the next one


class WorkQueue(Generic[K]):
    def __init__(self, backoff: ExponentialBackoff[K] | None = None) -> None:
        self.backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        self._ready: asyncio.Queue[object] = asyncio.Queue()  # keys in FIFO order, each at most once
        self._dirty: set[K] = set()  # keys waiting to be processed (queued, or re-added while processing)
        self._processing: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys waiting for a worker (not counting delayed ones)."""
        return self._ready.qsize() - (1 if self._shutting_down else 0)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.put_nowait(key)

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` once `delay` seconds have passed; of several pending delays for a key the earliest wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        pending = self._timers.get(key)
        if pending is not None:
            if pending.when() <= loop.time() + delay:
                return
            pending.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: K) -> None:
        del self._timers[key]
        self.add(key)

    def add_rate_limited(self, key: K) -> None:
        self.add_after(key, self.backoff.when(key))

    def forget(self, key: K) -> None:
        """Reset the key's failure count (call after it was processed successfully)."""
        self.backoff.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.backoff.failures(key)

    async def get(self) -> K:
        """The next key, now marked as processing; call `done(key)` when finished. Raises ShutDown at the end."""
        item = await self._ready.get()
        if item is _END:
            self._ready.put_nowait(_END)
            raise ShutDown
        key = cast(K, item)
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.put_nowait(key)

    def shutdown(self) -> None:
        """Refuse new keys; workers finish the keys already queued, then `get` raises ShutDown."""
        if self._shutting_down:
            return
        self._shutting_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._ready.put_nowait(_END)
