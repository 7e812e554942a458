"""The work queue's guarantees (coalescing, one worker per key, delays, backoff, shutdown)."""

from __future__ import annotations

import asyncio

import pytest

from tinykube.client.workqueue import ExponentialBackoff, ShutDown, WorkQueue

pytestmark = pytest.mark.anyio


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
