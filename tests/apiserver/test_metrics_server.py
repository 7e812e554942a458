"""The metrics server's out-of-turn scrapes: a request that would miss a pod that runs, or a node that has one
sample and no rate yet, scrapes that node there and then instead of waiting for the next round (up to
`--metric-resolution`, 15 s by default) — what the official Python client's `test_metrics_utilities_integration`
needs, asking 10 s after its pod runs. Against a fake kubelet that serves `/metrics/resource` and counts scrapes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tinykube.api import errors
from tinykube.api.resource_metrics import ContainerUsage, render
from tinykube.api.resources import builtin
from tinykube.apiserver.connect import metricsserver
from tinykube.apiserver.connect.metricsserver import MetricsServer
from tinykube.apiserver.connect.podlogs import KUBELET_ENDPOINT_ANNOTATION

pytestmark = pytest.mark.anyio

PODS = builtin("metrics.k8s.io", "v1beta1", "pods")
NODES = builtin("metrics.k8s.io", "v1beta1", "nodes")


@dataclass
class Cached:
    obj: dict[str, Any]


@dataclass
class Cache:
    objects: dict[str, Cached] = field(default_factory=dict)

    def get(self, key: str) -> Cached | None:
        return self.objects.get(key)

    def items(self, namespace: str = "") -> Iterator[tuple[str, Cached]]:
        return iter(sorted((k, v) for k, v in self.objects.items() if not namespace or k.startswith(namespace + "/")))


class Registry:
    """What the metrics server reads of the apiserver's registry: the node and pod caches."""

    def __init__(self) -> None:
        self.caches = {"nodes": Cache(), "pods": Cache()}

    @staticmethod
    def cache_key(namespace: str, name: str) -> str:
        return f"{namespace}/{name}" if namespace else name


class Kubelet:
    """`/metrics/resource` of one node: its running pods' usage (each container started a second ago)."""

    def __init__(self) -> None:
        self.pods: list[tuple[str, str]] = []
        self.scrapes = 0
        self.silent = False  # accept, and answer nothing until released
        self.released = asyncio.Event()
        self.cpu = 0.0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:  # a scrape cancelled before it asked
            writer.close()
            return
        self.scrapes += 1
        if self.silent:
            await self.released.wait()
            writer.close()
            return
        now = time.time()
        usage = {pod: {"app": ContainerUsage(0.5, 1 << 20, now - 1, now)} for pod in self.pods}
        self.cpu += 1.0
        body = render(usage, self.cpu, 1 << 20, now)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


INTERVAL = 0.5  # seconds between out-of-turn scrapes of a node, for the test (1 s in a cluster)


@pytest.fixture
async def setup(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[MetricsServer, Registry, Kubelet]]:
    monkeypatch.setattr(metricsserver, "CATCH_UP_INTERVAL", INTERVAL)
    kubelet = Kubelet()
    server = await asyncio.start_server(kubelet.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    registry = Registry()
    registry.caches["nodes"].objects["node-1"] = Cached({
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"},
                     "annotations": {KUBELET_ENDPOINT_ANNOTATION: f"127.0.0.1:{port}"}},
    })  # fmt: skip
    try:
        yield MetricsServer(registry, resolution=15.0), registry, kubelet  # type: ignore[arg-type]
    finally:
        kubelet.released.set()
        server.close()
        await asyncio.sleep(0.01)  # the held connection's handler ends


def add_pod(registry: Registry, kubelet: Kubelet, name: str, phase: str = "Running", running: bool = True) -> None:
    state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}} if running else {"waiting": {"reason": "x"}}
    registry.caches["pods"].objects[f"ns/{name}"] = Cached({
        "metadata": {"namespace": "ns", "name": name, "labels": {"app": name}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app"}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "app", "state": state}]},
    })  # fmt: skip
    if phase == "Running" and running:
        kubelet.pods.append(("ns", name))


def names(answer: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in answer["items"]]


async def test_a_running_pod_without_metrics_has_its_node_scraped_at_once(
    setup: tuple[MetricsServer, Registry, Kubelet],
) -> None:
    metrics, registry, kubelet = setup
    add_pod(registry, kubelet, "web")
    assert names(await metrics.answer(PODS, "ns", "", {})) == ["web"]  # no round has run: 15 s away
    assert kubelet.scrapes == 1
    one = await metrics.answer(PODS, "ns", "web", {})
    assert one["containers"][0]["name"] == "app" and one["window"]
    # a pod that appears later is not scraped for again within the interval, but once it is over
    add_pod(registry, kubelet, "late")
    assert names(await metrics.answer(PODS, "ns", "", {"labelSelector": "app=late"})) == []
    assert kubelet.scrapes == 1
    await asyncio.sleep(INTERVAL)
    assert names(await metrics.answer(PODS, "ns", "", {"labelSelector": "app=late"})) == ["late"]
    assert kubelet.scrapes == 2


async def test_pods_that_do_not_run_yet_or_have_metrics_cause_no_scrape(
    setup: tuple[MetricsServer, Registry, Kubelet],
) -> None:
    metrics, registry, kubelet = setup
    add_pod(registry, kubelet, "pending", phase="Pending", running=False)
    add_pod(registry, kubelet, "starting", running=False)
    assert names(await metrics.answer(PODS, "ns", "", {})) == []
    assert kubelet.scrapes == 1  # the first read began the rounds
    await asyncio.sleep(INTERVAL)
    with pytest.raises(errors.NotFound):
        await metrics.answer(PODS, "ns", "starting", {})
    assert kubelet.scrapes == 1
    add_pod(registry, kubelet, "web")
    await metrics.scrape()  # a round
    await asyncio.sleep(INTERVAL)
    assert names(await metrics.answer(PODS, "ns", "", {"labelSelector": "app=web"})) == ["web"]
    assert kubelet.scrapes == 2  # it has metrics: nothing is refreshed early


async def test_a_node_with_one_sample_gets_its_rate_from_a_scrape_out_of_turn(
    setup: tuple[MetricsServer, Registry, Kubelet],
) -> None:
    metrics, _registry, kubelet = setup
    assert kubelet.scrapes == 0  # no read yet: no round
    assert names(await metrics.answer(NODES, "", "", {})) == []  # the first read's round: one sample, no rate
    assert kubelet.scrapes == 1
    assert names(await metrics.answer(NODES, "", "", {})) == []  # just scraped
    assert kubelet.scrapes == 1
    await asyncio.sleep(INTERVAL)
    node = await metrics.answer(NODES, "", "node-1", {})
    assert kubelet.scrapes == 2
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "node-1"} and node["usage"]["cpu"] != "0"


async def test_a_node_that_does_not_answer_delays_a_request_a_little_at_most(
    setup: tuple[MetricsServer, Registry, Kubelet], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request gives up on its scrape after CATCH_UP_TIMEOUT, even while a round holds the node (a round
    allows a node 10 s)."""
    metrics, registry, kubelet = setup
    monkeypatch.setattr(metricsserver, "CATCH_UP_TIMEOUT", 0.2)
    kubelet.silent = True
    add_pod(registry, kubelet, "web")
    round_ = asyncio.ensure_future(metrics.scrape())
    while kubelet.scrapes < 1:
        await asyncio.sleep(0.01)
    await asyncio.sleep(INTERVAL)  # the round's scrape is now old enough for the request to want another
    assert names(await metrics.answer(PODS, "ns", "", {})) == []
    assert not round_.done()  # the answer came without waiting for the round
    assert kubelet.scrapes == 1
    round_.cancel()


async def test_rounds_pause_while_nothing_reads_and_the_next_read_scrapes_first(
    setup: tuple[MetricsServer, Registry, Kubelet], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metricsserver, "IDLE_AFTER", 0.2)
    metrics, _registry, kubelet = setup
    metrics.resolution = 0.1
    await metrics.scrape()  # a node's first sample
    await asyncio.sleep(0.3)  # nothing read: rounds pause
    rounds = asyncio.create_task(metrics.run())
    try:
        await asyncio.sleep(0.5)
        assert kubelet.scrapes == 1  # no round while nobody reads
        node = await metrics.answer(NODES, "", "node-1", {})  # a round first, then the answer
        assert kubelet.scrapes == 2 and node["usage"]["cpu"] != "0"
        window = node["window"]  # a Go duration: its rate spans the pause, as it says
        spanned = int(window[:-2]) >= 800 if window.endswith("ms") else window != "0s"
        assert spanned, window
        await asyncio.sleep(0.15)
        assert kubelet.scrapes >= 3  # read again: rounds go on
    finally:
        rounds.cancel()
        await asyncio.gather(rounds, return_exceptions=True)


async def test_rounds_begin_with_the_first_read(setup: tuple[MetricsServer, Registry, Kubelet]) -> None:
    """A cluster of 5,000 simulated nodes nobody reads metrics of opens no connection to their kubelets."""
    metrics, _registry, kubelet = setup
    metrics.resolution = 0.05
    rounds = asyncio.create_task(metrics.run())
    try:
        await asyncio.sleep(0.3)
        assert kubelet.scrapes == 0
        await metrics.answer(NODES, "", "", {})
        assert kubelet.scrapes == 1  # the read's own round
        await asyncio.sleep(0.2)
        assert kubelet.scrapes >= 3  # and the rounds after it
    finally:
        rounds.cancel()
        await asyncio.gather(rounds, return_exceptions=True)
