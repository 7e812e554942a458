"""The one controller run loop: workers (retry with backoff, forget on success, one worker per key, how failures
are logged) and `run_controller` around them (caches synced first, `when_synced`, resync, several queues, work
beside the workers, every queue shut down on the way out)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from tests.conftest import RunningCluster
from tinykube.api import errors
from tinykube.api.resources import by_path
from tinykube.client.controller import Loop, Resync, run_controller, run_workers
from tinykube.client.informer import SharedInformers, object_key
from tinykube.client.kubeconfig import Credentials
from tinykube.client.rest import RestClient
from tinykube.client.workqueue import WorkQueue

pytestmark = pytest.mark.anyio

CONFIG_MAPS = by_path("", "v1", "configmaps")
assert CONFIG_MAPS is not None


def no_informers() -> SharedInformers:
    """Shared informers nobody asks anything of: their client is never used."""
    return SharedInformers(RestClient(Credentials(server="http://127.0.0.1:9", token="", ca_data=None)))


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

    caplog.set_level(logging.DEBUG, logger="tinykube.client.controller")
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


async def test_run_controller_starts_the_informers_and_works_what_their_handlers_queue(
    cluster: RunningCluster, namespace: str
) -> None:
    client = RestClient.from_kubeconfig(cluster.kubeconfig)
    try:
        for name in ("a", "b"):
            await client.create(CONFIG_MAPS, namespace, {"metadata": {"name": name, "labels": {"app": "t"}}})
        informers = SharedInformers(client)
        config_maps = informers.informer(CONFIG_MAPS, namespace=namespace, label_selector="app=t")
        queue: WorkQueue[str] = WorkQueue()
        config_maps.add_handler(on_add=lambda obj: queue.add(object_key(obj)))
        seen: dict[str, int] = {}

        async def sync(key: str) -> None:
            seen[key] = len(config_maps.store)  # what a sync finds in the cache

        task = asyncio.create_task(run_controller(informers, [config_maps], Loop(queue, sync, workers=2)))
        await eventually(lambda: len(seen) == 2)
        assert seen == {f"{namespace}/a": 2, f"{namespace}/b": 2}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert queue.shutting_down
        await informers.stop()
    finally:
        await client.close()


class Gate:
    """A cache that is synced when the test says so."""

    def __init__(self) -> None:
        self.open = asyncio.Event()

    async def wait_synced(self) -> None:
        await self.open.wait()


async def test_no_key_is_worked_before_every_cache_is_synced() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first, second = Gate(), Gate()
    synced: list[str] = []

    async def sync(key: str) -> None:
        synced.append(key)

    task = asyncio.create_task(run_controller(no_informers(), [first, second], Loop(queue, sync)))
    queue.add("k")
    first.open.set()
    await asyncio.sleep(0.05)
    assert synced == []
    second.open.set()
    await eventually(lambda: synced == ["k"])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_when_synced_runs_once_before_any_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    order: list[str] = []

    async def when_synced() -> None:
        order.append("synced")
        queue.add("k")

    async def sync(key: str) -> None:
        order.append(key)
        queue.shutdown()

    await asyncio.wait_for(run_controller(no_informers(), [], Loop(queue, sync), when_synced=when_synced), 5)
    assert order == ["synced", "k"]


async def test_resync_queues_every_key_each_period() -> None:
    queue: WorkQueue[str] = WorkQueue()
    synced: list[str] = []

    async def sync(key: str) -> None:
        synced.append(key)

    loop = Loop(queue, sync, resync=Resync(0.05, lambda: ["a", "b"]))
    task = asyncio.create_task(run_controller(no_informers(), [], loop))
    await eventually(lambda: synced.count("a") >= 2 and synced.count("b") >= 2)
    queue.shutdown()
    await asyncio.wait_for(task, 5)  # the resync timer goes with the workers


async def test_every_loop_has_its_own_workers_and_the_run_ends_when_all_queues_are_shut_down() -> None:
    nodes: WorkQueue[str] = WorkQueue()
    pods: WorkQueue[str] = WorkQueue()
    synced: list[tuple[str, str]] = []
    beside_cancelled = asyncio.Event()

    async def on_node(key: str) -> None:
        synced.append(("node", key))

    async def on_pod(key: str) -> None:
        synced.append(("pod", key))

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            beside_cancelled.set()

    task = asyncio.create_task(
        run_controller(no_informers(), [], Loop(nodes, on_node), Loop(pods, on_pod, workers=3), beside=[forever])
    )
    nodes.add("n1")
    pods.add("p1")
    await eventually(lambda: sorted(synced) == [("node", "n1"), ("pod", "p1")])
    nodes.shutdown()
    await asyncio.sleep(0.05)
    assert not task.done()  # the pods' workers still run
    pods.shutdown()
    await asyncio.wait_for(task, 5)
    assert beside_cancelled.is_set()


async def test_every_queue_is_shut_down_when_the_run_is_cancelled() -> None:
    nodes: WorkQueue[str] = WorkQueue()
    pods: WorkQueue[str] = WorkQueue()

    async def sync(key: str) -> None:
        pass

    task = asyncio.create_task(run_controller(no_informers(), [], Loop(nodes, sync), Loop(pods, sync)))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert nodes.shutting_down and pods.shutting_down


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)
