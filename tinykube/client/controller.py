"""The one controller run loop (client-go's controller pattern), for every level-triggered controller.

A controller registers informer handlers that `add` keys to its `WorkQueue`, then hands the rest to
`run_controller`:

    informers.start() ─▶ the caches synced ─▶ when_synced() ─▶ the workers, until cancelled

    a worker:  queue.get() ─▶ sync(key) ─┬─ returned ─▶ queue.forget(key) ─────────────────┬─▶ queue.done(key)
                                         └─ raised ───▶ log; queue.add_rate_limited(key) ──┘
    a resync:  every `period`, queue.add(key) for each key of `all_keys()`

Each worker is upstream's `processNextWorkItem` with its `handleErr`: a key whose sync raises comes back after an
exponential per-key backoff, a key synced without error has its failures forgotten. A controller with more than
one queue (node lifecycle: nodes and pods) passes one `Loop` per queue; work that is not per key (a periodic
health check) runs `beside` the workers. On the way out every queue is shut down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from tinykube.api import errors
from tinykube.client.informer import SharedInformers
from tinykube.client.rest import TransportError
from tinykube.client.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class Cache(Protocol):
    """What a controller reads from and must see filled before it works: an informer, or several behind one."""

    async def wait_synced(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Resync(Generic[K]):
    """Every `period` seconds, every key `all_keys()` names is queued again: what no event announces (something
    charged and never used, a clock that moved) is caught up with."""

    period: float
    all_keys: Callable[[], Iterable[K]]


@dataclass(frozen=True, slots=True)
class Loop(Generic[K]):
    """One queue and what works it: `workers` concurrent calls of `sync(key)`, never two for one key."""

    queue: WorkQueue[K]
    sync: Callable[[K], Awaitable[None]]
    workers: int = 1
    resync: Resync[K] | None = None


async def run_controller(
    informers: SharedInformers,
    caches: Iterable[Cache],
    *loops: Loop[Any],
    when_synced: Callable[[], Awaitable[None] | None] | None = None,
    beside: Iterable[Callable[[], Coroutine[Any, Any, None]]] = (),
) -> None:
    """Start the informers, wait for `caches` to sync, call `when_synced`, then work every loop's queue until this
    is cancelled or every queue has been shut down and drained (what runs `beside` is then cancelled). Every
    queue is shut down on the way out, whatever ended the run."""
    informers.start()
    try:
        await asyncio.gather(*(cache.wait_synced() for cache in caches))
        if when_synced is not None and (pending := when_synced()) is not None:
            await pending
        async with asyncio.TaskGroup() as group:
            side = [group.create_task(_resync(loop.queue, loop.resync)) for loop in loops if loop.resync]
            side += [group.create_task(task()) for task in beside]
            await asyncio.gather(*(run_workers(loop.queue, loop.workers, loop.sync) for loop in loops))
            for task in side:
                task.cancel()
    finally:
        for loop in loops:
            loop.queue.shutdown()


async def _resync(queue: WorkQueue[K], resync: Resync[K]) -> None:
    while True:
        await asyncio.sleep(resync.period)
        for key in resync.all_keys():
            queue.add(key)


async def run_workers(queue: WorkQueue[K], workers: int, sync: Callable[[K], Awaitable[None]]) -> None:
    """Process keys with `workers` concurrent workers until the queue shuts down (or this is cancelled).

    A key whose sync raises is logged and retried with its per-key backoff; success forgets its failures.
    """
    async with asyncio.TaskGroup() as group:
        for _ in range(workers):
            group.create_task(_worker(queue, sync))


async def _worker(queue: WorkQueue[K], sync: Callable[[K], Awaitable[None]]) -> None:
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        try:
            await sync(key)
        except Exception as err:
            _requeue(queue, key, err)
        else:
            queue.forget(key)
        finally:
            queue.done(key)


def _requeue(queue: WorkQueue[K], key: K, err: Exception) -> None:
    """upstream's handleErr: log the failure by what it says, and try the key again after its backoff."""
    # An ordinary race (the object gone or changed meanwhile, its namespace being deleted) is part of a controller's
    # life and its retry settles it: one INFO line. Another refusal by the API or a lost connection says all in one
    # line too; anything else is a bug worth its traceback.
    retry = queue.num_requeues(key) + 1
    if errors.is_ordinary_race(err):
        log.info("reconciling %r: %s (retry %d)", key, err, retry)
    else:
        trace = None if isinstance(err, errors.ApiError | TransportError) else err
        log.error("reconciling %r failed (retry %d): %s", key, retry, err, exc_info=trace)
    queue.add_rate_limited(key)
