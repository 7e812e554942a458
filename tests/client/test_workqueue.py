"""The work queue's guarantees (coalescing, one worker per key, delays, backoff, shutdown) and the worker loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from tinykube.api import errors
from tinykube.client.workqueue import ExponentialBackoff, ShutDown, WorkQueue, run_workers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def get(queue: WorkQueue[str]) -> str:
    return await asyncio.wait_for(queue.get(), 5)


async def test_keys_added_before_processing_coalesce() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a", "b", "c"):
        queue.add(key)
    assert len(queue) == 3
    assert [await get(queue) for _ in range(3)] == ["a", "b", "c"]
    assert len(queue) == 0


async def test_key_being_processed_is_requeued_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert await get(queue) == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # not available to a second worker while the first holds it
    queue.done("a")
    assert len(queue) == 1
    assert await get(queue) == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_done_without_readd_does_not_requeue() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert await get(queue) == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_add_after_delays_and_earliest_delay_wins() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("late", 3600)
    queue.add_after("soon", 3600)
    queue.add_after("soon", 0.01)
    assert len(queue) == 0
    assert await get(queue) == "soon"
    queue.add_after("now", 0)
    assert len(queue) == 1
    assert await get(queue) == "now"
    assert len(queue) == 0  # "late" still waiting
    queue.shutdown()


@pytest.mark.parametrize(
    ("failures", "delay"),
    [
        pytest.param(0, 0.005, id="first"),
        pytest.param(1, 0.01, id="second"),
        pytest.param(10, 0.005 * 1024, id="eleventh"),
        pytest.param(30, 1000.0, id="capped"),
        pytest.param(5000, 1000.0, id="no-overflow"),
    ],
)
async def test_backoff_doubles_per_key_up_to_the_cap(failures: int, delay: float) -> None:
    backoff: ExponentialBackoff[str] = ExponentialBackoff()
    for _ in range(failures):
        backoff.when("a")
    assert backoff.when("a") == pytest.approx(delay)
    assert backoff.when("b") == pytest.approx(0.005)  # per key


async def test_rate_limited_adds_count_until_forgotten() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for attempt in range(3):
        queue.add_rate_limited("a")
        assert queue.num_requeues("a") == attempt + 1
        assert await get(queue) == "a"
        queue.done("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    assert queue.backoff.when("a") == pytest.approx(0.005)


async def test_shutdown_drains_then_stops_every_getter() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add_after("b", 3600)
    waiting = [asyncio.create_task(queue.get()) for _ in range(3)]
    queue.shutdown()
    queue.add("c")  # refused
    results = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 5)
    assert results.count("a") == 1
    assert sum(isinstance(result, ShutDown) for result in results) == 2
    with pytest.raises(ShutDown):
        await get(queue)
    assert queue.shutting_down


async def test_workers_retry_failures_with_backoff_and_forget_on_success() -> None:
    queue: WorkQueue[str] = WorkQueue()
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if key == "flaky" and calls.count("flaky") < 4:
            raise RuntimeError("not yet")

    workers = asyncio.create_task(run_workers(queue, 2, reconcile))
    queue.add("flaky")
    queue.add("fine")
    await eventually(lambda: calls.count("flaky") == 4)
    assert calls.count("fine") == 1
    await eventually(lambda: queue.num_requeues("flaky") == 0)
    queue.shutdown()
    await asyncio.wait_for(workers, 5)  # run_workers returns once the queue is shut down


async def test_workers_log_ordinary_races_in_one_quiet_line_and_bugs_with_their_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 404, a 409 or a create refused in a Terminating namespace is retried below WARNING and without a traceback;
    another API refusal is an error in one line; any other exception is a bug, logged with its traceback."""
    failures: dict[str, Exception] = {
        "gone": errors.not_found("pods", "p"),
        "changed": errors.conflict("pods", "p"),
        "exists": errors.already_exists("pods", "p"),
        "terminating": errors.namespace_terminating("pods", "p", "ns"),
        "refused": errors.Invalid('pods "p" is invalid'),
        "forbidden": errors.Forbidden('pods "p" is forbidden: exceeded quota'),
        "bug": KeyError("spec"),
    }
    calls: dict[str, int] = {}

    async def reconcile(key: str) -> None:
        calls[key] = calls.get(key, 0) + 1
        if calls[key] == 1:
            raise failures[key]

    caplog.set_level(logging.DEBUG, logger="tinykube.client.workqueue")
    queue: WorkQueue[str] = WorkQueue()
    workers = asyncio.create_task(run_workers(queue, 2, reconcile))
    for key in failures:
        queue.add(key)
    await eventually(lambda: all(calls.get(key) == 2 for key in failures))  # every failure is retried
    queue.shutdown()
    await asyncio.wait_for(workers, 5)
    logged = {key: r for r in caplog.records for key in failures if repr(key) in r.getMessage()}
    assert set(logged) == set(failures)
    for key in ("gone", "changed", "exists", "terminating"):
        assert logged[key].levelno == logging.INFO and logged[key].exc_info is None, key
    for key in ("refused", "forbidden"):
        assert logged[key].levelno == logging.ERROR and logged[key].exc_info is None, key
    assert logged["bug"].levelno == logging.ERROR and logged["bug"].exc_info is not None


async def test_workers_never_hold_one_key_concurrently_but_run_keys_in_parallel() -> None:
    queue: WorkQueue[str] = WorkQueue()
    active: set[str] = set()
    overlaps: list[str] = []
    most_at_once = 0
    seen: dict[str, int] = {}
    release = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal most_at_once
        if key in active:
            overlaps.append(key)
        active.add(key)
        most_at_once = max(most_at_once, len(active))
        seen[key] = seen.get(key, 0) + 1
        await release.wait()
        active.discard(key)

    workers = asyncio.create_task(run_workers(queue, 4, reconcile))
    queue.add("x")
    queue.add("y")
    await eventually(lambda: active == {"x", "y"})
    for _ in range(5):
        queue.add("x")  # re-added while being processed: one more round, after this one
    await asyncio.sleep(0.05)
    assert seen == {"x": 1, "y": 1}
    release.set()
    await eventually(lambda: seen == {"x": 2, "y": 1} and not active)
    assert overlaps == []
    assert most_at_once == 2
    queue.shutdown()
    await asyncio.wait_for(workers, 5)


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)
