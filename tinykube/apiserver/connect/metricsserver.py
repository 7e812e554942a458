"""metrics-server, inside the apiserver: every `--metric-resolution` it scrapes each node agent's
`/metrics/resource`, keeps the last two samples of every container and node, and answers the
`metrics.k8s.io/v1beta1` PodMetrics and NodeMetrics (what `kubectl top` and the HPA controller read) from them.

Upstream, metrics-server is a Deployment behind an APIService; tinykube's apiserver serves the group itself, with
metrics-server's semantics: CPU is the rate of the cumulative counter between two samples (`window` is their
distance), memory the last working set, a pod is listed only once every container it reports has a rate, and the
object carries its pod's or node's labels. Two differences: a container's first sample already gives a rate, taken
from its start (where its counter was zero), so a new pod has metrics after one scrape, not two; and a request that
would miss something that should have metrics by now (a Running pod whose containers all run, a node with one
sample and no rate yet) has its node scraped there and then, at most once a second per node and for at most two
seconds, instead of waiting up to `--metric-resolution` for the next round. So `kubectl top pod` and the HPA see a
new pod as soon as it runs (the official Python client's e2e suite asks 10 s after its pod runs, which
metrics-server's 15 s resolution often misses); metrics that exist are never refreshed early. And rounds begin
with the first read and pause once nothing has read metrics for `IDLE_AFTER` (a round of 5,000 simulated nodes is
a tenth of a core, a new connection to each kubelet); the first read after a pause scrapes a round first (waiting
`CATCH_UP_TIMEOUT` at most), so its rates span the pause, as their window says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.quantity import Quantity, parse_quantity
from tinykube.api.resource_metrics import Sample, parse
from tinykube.api.resources import ResourceInfo
from tinykube.api.selectors import LabelSelector, parse_field_selector, parse_label_selector
from tinykube.apiserver.connect.podlogs import kubelet_address
from tinykube.apiserver.printing.table import NAME_COLUMN, Column, Printer
from tinykube.apiserver.registry import Registry
from tinykube.web import fetch

log = logging.getLogger(__name__)

GROUP_VERSION = "metrics.k8s.io/v1beta1"
DEFAULT_RESOLUTION = 15.0  # seconds, metrics-server's --metric-resolution
SCRAPE_TIMEOUT = 10.0  # seconds at most per node, metrics-server's --kubelet-request-timeout
CATCH_UP_INTERVAL = 1.0  # seconds: a node is scraped out of turn (for what has no metrics yet) at most this often
CATCH_UP_TIMEOUT = 2.0  # seconds a request waits at most for those scrapes
IDLE_AFTER = 300.0  # seconds without a read after which rounds pause (an HPA reads every 15 s: never paused)


@dataclass(frozen=True, slots=True)
class Point:
    at: float  # seconds since the epoch
    cpu: float  # cumulative core-seconds
    memory: float  # working-set bytes


@dataclass(frozen=True, slots=True)
class Usage:
    """A rate over a window: what one PodMetrics container or one NodeMetrics says."""

    at: float
    window: float
    nanocores: int
    memory: int


def rate(before: Point | None, last: Point) -> Usage | None:
    """The usage between two samples of one counter; None without an earlier sample, or if the counter fell (a
    restart the start time did not show)."""
    if before is None or last.at <= before.at or last.cpu < before.cpu:
        return None
    nanocores = round((last.cpu - before.cpu) / (last.at - before.at) * 1e9)
    return Usage(last.at, last.at - before.at, nanocores, int(last.memory))


@dataclass
class _Container:
    started: float
    last: Point


class MetricsServer:
    def __init__(self, registry: Registry, resolution: float = DEFAULT_RESOLUTION) -> None:
        self.registry = registry
        self.resolution = resolution
        # node -> (namespace, pod) -> container -> its last sample; and the usages computed from them
        self._samples: dict[str, dict[tuple[str, str], dict[str, _Container]]] = {}
        self._pods: dict[str, dict[str, dict[tuple[str, str], dict[str, Usage]]]] = {}  # namespace -> node -> pod
        self._nodes: dict[str, tuple[Point | None, Usage | None]] = {}
        self._scraped: dict[str, float] = {}  # node -> when (monotonic) its last scrape began
        self._locks: dict[str, asyncio.Lock] = {}  # one scrape of a node at a time, stored in the order taken
        self._read_at = -math.inf  # the last read of metrics (none yet: no rounds until one)
        self._round_at = -math.inf  # the last round's start

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.resolution)
            if time.monotonic() - self._read_at > IDLE_AFTER:
                continue
            try:
                await self.scrape()
            except Exception as err:  # one round fails as a whole (say the node cache is resyncing): try the next
                log.warning("metrics scrape failed: %s", err)

    async def scrape(self) -> None:
        """One round: every node with a kubelet endpoint, at once; a node that does not answer keeps no metrics."""
        self._round_at = time.monotonic()
        nodes = self.registry.caches["nodes"]
        names = [key for key, _ in nodes.items()]
        await asyncio.gather(*(self._refresh(name) for name in names))
        for gone in (set(self._samples) | set(self._nodes) | set(self._scraped)) - set(names):
            if nodes.get(gone) is None:
                self._forget(gone)
                self._scraped.pop(gone, None)
                self._locks.pop(gone, None)

    async def _refresh(self, name: str, since: float | None = None, timeout: float = SCRAPE_TIMEOUT) -> None:
        """Scrape the node `name` and store what it says (or forget it if it does not answer); with `since`, only
        if no scrape of it began after that."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            if since is not None and self._scraped.get(name, -math.inf) > since:
                return
            cached = self.registry.caches["nodes"].get(name)
            if cached is None:
                return
            self._scraped[name] = time.monotonic()
            sample = await self._scrape(cached.obj, timeout)
            if sample is None:
                self._forget(name)
            else:
                self._store(name, sample)

    async def _catch_up(self, nodes: set[str]) -> None:
        """Scrape out of turn those of `nodes` not scraped in the last CATCH_UP_INTERVAL, waiting a little at most."""
        since = time.monotonic() - CATCH_UP_INTERVAL
        due = [name for name in nodes if self._scraped.get(name, -math.inf) <= since]
        if not due:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CATCH_UP_TIMEOUT):
                await asyncio.gather(*(self._refresh(name, since, CATCH_UP_TIMEOUT) for name in due))

    async def _scrape(self, node: dict[str, Any], timeout: float = SCRAPE_TIMEOUT) -> Sample | None:
        try:
            host, port = kubelet_address(node)
        except errors.ApiError:
            return None  # no kubelet endpoint (yet): no metrics for it
        try:
            status, body = await fetch(host, port, "/metrics/resource", min(timeout, self.resolution))
        except (OSError, TimeoutError, ValueError, EOFError, asyncio.LimitOverrunError) as err:
            log.debug("scraping node %s: %s", node["metadata"]["name"], err)
            return None
        return parse(body.decode(errors="replace")) if status == 200 else None

    def _forget(self, node: str) -> None:
        self._samples.pop(node, None)
        self._nodes.pop(node, None)
        for by_node in self._pods.values():
            by_node.pop(node, None)

    def _store(self, node: str, sample: Sample) -> None:
        before = self._samples.get(node, {})
        samples: dict[tuple[str, str], dict[str, _Container]] = {}
        pods: dict[tuple[str, str], dict[str, Usage]] = {}
        for (namespace, pod, name), fields in sample.containers.items():
            if not {"cpu", "memory", "started"} <= fields.keys():
                continue
            last = Point(fields["at"], fields["cpu"], fields["memory"])
            earlier = before.get((namespace, pod), {}).get(name)
            previous = earlier.last if earlier is not None and earlier.started == fields["started"] else None
            if previous is None and fields["started"] < last.at:  # from the start, where the counter was zero
                previous = Point(fields["started"], 0.0, 0.0)
            samples.setdefault((namespace, pod), {})[name] = _Container(fields["started"], last)
            usage = rate(previous, last)
            pods.setdefault((namespace, pod), {})
            if usage is not None:
                pods[(namespace, pod)][name] = usage
        self._samples[node] = samples
        for by_node in self._pods.values():
            by_node.pop(node, None)
        for (namespace, pod), usages in pods.items():
            if usages and len(usages) == len(samples[(namespace, pod)]):  # every container has a rate
                self._pods.setdefault(namespace, {}).setdefault(node, {})[(namespace, pod)] = usages
        if {"cpu", "memory"} <= sample.node.keys():
            point = Point(sample.node["cpu_at"], sample.node["cpu"], sample.node["memory"])
            self._nodes[node] = (point, rate(self._nodes.get(node, (None, None))[0], point))

    # ---- metrics.k8s.io/v1beta1 -----------------------------------------------------------------------------

    async def answer(self, resource: ResourceInfo, namespace: str, name: str, query: dict[str, str]) -> dict[str, Any]:
        """A GET of `pods` or `nodes` (one, or a list filtered by label and field selectors)."""
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""))
        self._read_at = time.monotonic()
        if self._read_at - self._round_at > 2 * self.resolution:  # rounds paused: this read resumes them
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CATCH_UP_TIMEOUT):
                    await self.scrape()
        if resource.plural == "nodes":
            await self._catch_up(self._nodes_without_metrics(name, labels))
            items = self._node_metrics(name)
        else:
            await self._catch_up(self._nodes_of_pods_without_metrics(namespace, name, labels))
            items = self._pod_metrics(namespace, name)
        if name:
            if not items:
                shown = f"{namespace}/{name}" if namespace else name
                raise errors.NotFound(f'{resource.plural}.metrics.k8s.io "{shown}" not found')
            return items[0]
        kept = [i for i in items if labels.matches(i["metadata"].get("labels") or {}) and fields.matches(i)]
        return {"kind": f"{resource.kind}List", "apiVersion": GROUP_VERSION, "metadata": {}, "items": kept}

    def _nodes_of_pods_without_metrics(self, namespace: str, name: str, labels: LabelSelector) -> set[str]:
        """The nodes of the asked-for pods that run (every container running) and have no metrics yet."""
        cache = self.registry.caches["pods"]
        if name:
            one = cache.get(self.registry.cache_key(namespace, name))
            pods = [one.obj] if one is not None else []
        else:
            pods = [cached.obj for _, cached in cache.items(namespace)]
        nodes = set()
        for pod in pods:
            meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
            node = spec.get("nodeName")
            running = [s for s in status.get("containerStatuses") or [] if "running" in (s.get("state") or {})]
            if (
                not node
                or status.get("phase") != "Running"
                or len(running) < len(spec.get("containers") or [])
                or not labels.matches(meta.get("labels") or {})
            ):
                continue
            if (meta["namespace"], meta["name"]) not in self._pods.get(meta["namespace"], {}).get(node, {}):
                nodes.add(node)
        return nodes

    def _nodes_without_metrics(self, name: str, labels: LabelSelector) -> set[str]:
        """The asked-for nodes scraped once (so a second scrape gives them a rate) that have no metrics yet."""
        return {
            node
            for node, (point, usage) in self._nodes.items()
            if point is not None and usage is None and (not name or node == name)
            and (cached := self.registry.caches["nodes"].get(node)) is not None
            and labels.matches(cached.obj["metadata"].get("labels") or {})
        }  # fmt: skip

    def _pod_metrics(self, namespace: str, name: str) -> list[dict[str, Any]]:
        cache = self.registry.caches["pods"]
        found = []
        for ns in [namespace] if namespace else sorted(self._pods):
            for by_pod in self._pods.get(ns, {}).values():
                for (pod_ns, pod_name), usages in sorted(by_pod.items()):
                    if name and pod_name != name:
                        continue
                    cached = cache.get(self.registry.cache_key(pod_ns, pod_name))
                    if cached is None:
                        continue
                    pod = cached.obj
                    first = next(iter(usages.values()))
                    found.append({
                        "kind": "PodMetrics",
                        "apiVersion": GROUP_VERSION,
                        "metadata": _metadata(pod, namespaced=True),
                        "timestamp": _time(first.at),
                        "window": _duration(first.window),
                        "containers": [{"name": c, "usage": _usage(u)} for c, u in usages.items()],
                    })  # fmt: skip
        return sorted(found, key=lambda m: (m["metadata"]["namespace"], m["metadata"]["name"]))

    def _node_metrics(self, name: str) -> list[dict[str, Any]]:
        cache = self.registry.caches["nodes"]
        found = []
        for node_name, (_point, usage) in sorted(self._nodes.items()):
            cached = cache.get(node_name)
            if usage is None or cached is None or (name and node_name != name):
                continue
            found.append({
                "kind": "NodeMetrics",
                "apiVersion": GROUP_VERSION,
                "metadata": _metadata(cached.obj, namespaced=False),
                "timestamp": _time(usage.at),
                "window": _duration(usage.window),
                "usage": _usage(usage),
            })  # fmt: skip
        return found


def _metadata(obj: dict[str, Any], *, namespaced: bool) -> dict[str, Any]:
    meta = obj["metadata"]
    found: dict[str, Any] = {"name": meta["name"]}
    if namespaced:
        found["namespace"] = meta["namespace"]
    found["creationTimestamp"] = now()  # metrics-server's objects are made per request
    if meta.get("labels"):
        found["labels"] = meta["labels"]
    return found


def _usage(usage: Usage) -> dict[str, str]:
    """CPU in nanocores, memory in bytes, written as metrics-server's quantities are."""
    cpu = Quantity.of(Fraction(usage.nanocores, 10**9))
    return {"cpu": str(cpu), "memory": str(Quantity.of(usage.memory, "BinarySI"))}


def _time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    """A window as Go prints a time.Duration rounded to the millisecond ("15.012s")."""
    ms = round(seconds * 1000)
    whole, frac = divmod(ms, 1000)
    if whole >= 60:
        minutes, whole = divmod(whole, 60)
        return f"{minutes}m{whole}{f'.{frac:03d}'.rstrip('0').rstrip('.')}s"
    if whole == 0 and frac:
        return f"{frac}ms"
    return f"{whole}{f'.{frac:03d}'.rstrip('0').rstrip('.')}s"


def _cells(obj: dict[str, Any], _when: datetime) -> list[Any]:
    """Name, the usage summed over the containers, and the window, as metrics-server's table rows."""
    usages = [c.get("usage") or {} for c in obj.get("containers") or []] or [obj.get("usage") or {}]
    summed = {
        resource: sum((parse_quantity(u[resource]).nanos for u in usages if resource in u), 0)
        for resource in ("cpu", "memory")
    }
    memory = str(Quantity(summed["memory"], "BinarySI"))
    return [obj["metadata"]["name"], str(Quantity(summed["cpu"])), memory, obj.get("window", "")]


PRINTER = Printer(
    (
        NAME_COLUMN,
        Column("cpu", "string", "", format="quantity"),
        Column("memory", "string", "", format="quantity"),
        Column("Window", "string", "", format="duration"),
    ),
    _cells,
)
