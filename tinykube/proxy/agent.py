"""The node proxy: watches Services and EndpointSlices and hands the node's desired state to its mode
(`Proxier.sync`), which programs only what changed: at once after a quiet spell, at most once per 50 ms in a burst
(upstream's minSyncPeriod, whose default is 1 s); every `sync_period` a full sync repairs drift (a flushed table).

Only the Services that changed are turned into `ServicePort`s again; the others keep their very objects, which
lets a proxier skip them with an identity check (10,000 Services cost milliseconds, not a re-plan).

Serves, as kube-proxy does, `/proxyMode`, `/metrics` and `/healthz` on the metrics port (10249), the
`{"lastUpdated": …}` health JSON on the healthz port (10256), and a health-check server on each
`healthCheckNodePort` of an `externalTrafficPolicy: Local` Service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Protocol

from tinykube.api.resources import builtin
from tinykube.client.indexes import SLICE_SERVICE_INDEX, slice_service
from tinykube.client.informer import Object, SharedInformers, object_key
from tinykube.client.rest import RestClient
from tinykube.metrics import Histogram, exponential_buckets
from tinykube.proxy.conntrack import Flush, stale_flows
from tinykube.proxy.model import PortTable, ServicePort, local_endpoints, service_ports
from tinykube.proxy.modes import Bind
from tinykube.web import Body, Handler, Query, serve_http

log = logging.getLogger(__name__)

SERVICES, SLICES = builtin("", "v1", "services"), builtin("discovery.k8s.io", "v1", "endpointslices")
DEBOUNCE = 0.05  # seconds between syncs at the least: changes arriving together are programmed in one transaction
SYNC_PERIOD = 30.0  # seconds between full syncs (upstream's --sync-period)
FULL_SYNC_SHARE = 10  # ... or ten times the last full sync's duration, if longer
METRICS_PORT, HEALTHZ_PORT = 10249, 10256


class Proxier(Protocol):
    mode: str
    syncs: int
    failures: int
    last_duration: float  # seconds the last sync took

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        """Program `ports`: everything when `full`, else only what changed since the last success."""

    def close(self) -> None:
        """Release what the proxier holds in this process (sessions, listeners, threads) when the agent stops.
        The kernel modes' rules stay, as upstream kube-proxy leaves them; `tinykube proxy --cleanup` removes them."""


def _go_time(moment: datetime) -> str:
    """A time as Go's `time.Time.String()` prints it (how kube-proxy's health JSON shows times)."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f") + "000 +0000 UTC"


class ProxyAgent:
    def __init__(
        self,
        client: RestClient,
        node: str,
        proxier: Proxier,
        *,
        bind: Bind | None = None,
        sync_period: float = SYNC_PERIOD,
        informers: SharedInformers | None = None,
        flush_conntrack: Callable[[list[Flush]], None] | None = None,
    ) -> None:
        """`bind(host, port)` makes a bound TCP socket for the proxy's servers (in the node's network namespace);
        without it the servers are not started. `flush_conntrack` deletes stale UDP flows after a sync (the kernel
        modes)."""
        self.client = client
        self.node = node
        self.proxier = proxier
        self.bind = bind
        self.sync_period = sync_period
        self.flush_conntrack = flush_conntrack
        self._owns_informers = informers is None  # shared ones are stopped by whoever made them
        self.informers = informers or SharedInformers(client)
        self.services = self.informers.informer(SERVICES)
        self.slices = self.informers.informer(SLICES)
        self._ports_of: dict[str, tuple[ServicePort, ...]] = {}  # "namespace/name" -> that Service's ports
        self._port_count = 0  # of _ports_of
        self.programmed_ports = 0  # service ports the proxier last programmed
        # healthCheckNodePort -> the ports (by key) of its externalTrafficPolicy Local Service, as programmed
        self._health_ports: dict[int, dict[str, ServicePort]] = {}
        # The Services whose ports changed since the last successful sync, with their ports as programmed then:
        # what the conntrack clean-up compares (not the whole table on every sync).
        self._changed_since: dict[str, tuple[ServicePort, ...]] = {}
        self._dirty: set[str] = set()  # Services whose ports must be computed again
        self.last_updated = datetime.now(UTC)
        self.pending_since: float | None = None  # monotonic time of the oldest change not yet programmed
        self._wake = asyncio.Event()
        self._health: dict[int, asyncio.Server] = {}  # healthCheckNodePort -> its server
        self._servers: list[asyncio.Server] = []
        self.synced = asyncio.Event()  # set after the first successful sync
        # upstream's histograms, with its buckets (1 ms doubling)
        buckets = exponential_buckets(0.001, 2, 15)
        self.durations = Histogram("kubeproxy_sync_proxy_rules_duration_seconds", "SyncProxyRules latency", buckets)
        self.full_durations = Histogram(
            "kubeproxy_sync_full_proxy_rules_duration_seconds", "SyncProxyRules latency, full resyncs", buckets
        )
        self.partial_durations = Histogram(
            "kubeproxy_sync_partial_proxy_rules_duration_seconds", "SyncProxyRules latency, partial syncs", buckets
        )

    # Running

    async def run(self) -> None:
        with contextlib.suppress(ValueError):  # another node's agent sharing these informers added it
            self.slices.store.add_index(SLICE_SERVICE_INDEX, slice_service)
        self.services.add_handler(
            on_add=self._service_changed,
            on_update=lambda old, new: self._service_changed(old, new),
            on_delete=self._service_changed,
        )
        self.slices.add_handler(
            on_add=self._slice_changed,
            on_update=lambda old, new: self._slice_changed(old, new),
            on_delete=self._slice_changed,
        )
        self.informers.start()
        # Nothing is programmed before both caches are complete (as upstream).
        await asyncio.gather(self.services.wait_synced(), self.slices.wait_synced())
        if self.bind is not None:
            self._servers.append(await serve_http(self.bind("127.0.0.1", METRICS_PORT), self._metrics_port))
            self._servers.append(await serve_http(self.bind("0.0.0.0", HEALTHZ_PORT), self._healthz_port))
        try:
            await self._loop()
        finally:
            for server in [*self._servers, *self._health.values()]:
                server.close()
            await asyncio.to_thread(self.proxier.close)
            if self._owns_informers:
                await self.informers.stop()

    def _service_changed(self, *services: Object) -> None:
        self._dirty.update(object_key(svc) for svc in services)
        self._changed()

    def _slice_changed(self, *slices: Object) -> None:
        self._dirty.update(key for item in slices for key in slice_service(item))
        self._changed()

    def _changed(self) -> None:
        if self.pending_since is None:
            self.pending_since = time.monotonic()
        self._wake.set()

    def _desired(self, full: bool) -> PortTable:
        """Every service port, computed again only for the Services that changed (all of them when `full`)."""
        dirty = self.services.store.keys() | self._ports_of.keys() if full else self._dirty
        self._dirty = set()
        for key in dirty:
            svc = self.services.store.get(key)
            old = self._ports_of.get(key, ())
            ports = tuple(service_ports([svc], self.slices.store.by_index(SLICE_SERVICE_INDEX, key))) if svc else ()
            if ports != old:  # unchanged ports keep their identity
                self._changed_since.setdefault(key, old)
                self._port_count += len(ports) - len(old)
                if ports:
                    self._ports_of[key] = ports
                else:
                    self._ports_of.pop(key, None)
        # The proxier runs in a thread while events go on; only this coroutine changes _ports_of, and not before
        # that sync has ended.
        return PortTable(self._ports_of, dict(self._changed_since))

    async def _loop(self) -> None:
        """At most one sync per DEBOUNCE, as upstream's BoundedFrequencyRunner: a change after a quiet spell is
        programmed at once, and the changes arriving while a sync runs or within DEBOUNCE of it wait for the next
        one, together."""
        full_due = last_sync = 0.0
        self.pending_since = self.pending_since or time.monotonic()
        while True:
            timeout = max(0.0, full_due - time.monotonic())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
                await asyncio.sleep(max(0.0, last_sync + DEBOUNCE - time.monotonic()))
            except TimeoutError:
                pass
            self._wake.clear()
            full = time.monotonic() >= full_due
            await self._sync(full)
            last_sync = time.monotonic()
            if full:
                # A full sync that takes long (iptables at 10,000 Services: ~40 s) must not run back to back:
                # at most a tenth of the time goes to them.
                full_due = last_sync + max(self.sync_period, FULL_SYNC_SHARE * self.proxier.last_duration)

    async def _sync(self, full: bool) -> None:
        ports = self._desired(full)
        started = self.pending_since
        self.pending_since = None
        try:
            await asyncio.to_thread(self.proxier.sync, ports, full=full)
        except Exception as err:
            self.durations.observe(self.proxier.last_duration)
            log.warning("proxy %s: sync failed (%s); a full sync follows", self.node, err)
            self.pending_since = started or time.monotonic()
            await asyncio.sleep(1.0)
            self._wake.set()
            return
        self.durations.observe(self.proxier.last_duration)
        (self.full_durations if full else self.partial_durations).observe(self.proxier.last_duration)
        self.programmed_ports = self._port_count
        changed, self._changed_since = self._changed_since, {}
        touched = self._index_health(changed)
        self.last_updated = datetime.now(UTC)
        before = [port for old in changed.values() for port in old]
        after = [port for key in changed for port in self._ports_of.get(key, ())]
        if self.flush_conntrack is not None and (stale := stale_flows(before, after)):
            await asyncio.to_thread(self.flush_conntrack, stale)
        self.synced.set()
        await self._health_servers(touched)

    # Health-check node ports

    def _index_health(self, changed: dict[str, tuple[ServicePort, ...]]) -> set[int]:
        """Bring the health-check index up to date for the Services just programmed (their old ports given);
        the health-check node ports they had or have."""
        touched = set()
        for key, old in changed.items():
            for port in old:
                touched.add(port.health_check_node_port)
                if port.health_check_node_port in self._health_ports:
                    held = self._health_ports[port.health_check_node_port]
                    held.pop(port.key, None)
                    if not held:
                        del self._health_ports[port.health_check_node_port]
            for port in self._ports_of.get(key, ()):
                touched.add(port.health_check_node_port)
                if port.health_check_node_port and port.external_local:
                    self._health_ports.setdefault(port.health_check_node_port, {})[port.key] = port
        touched.discard(0)
        return touched

    async def _health_servers(self, touched: set[int]) -> None:
        """Start or stop the health-check servers of these node ports, as the index now says."""
        if self.bind is None:
            return
        for port in touched:
            if port not in self._health_ports and port in self._health:
                self._health.pop(port).close()
        for port in touched & self._health_ports.keys():
            service_port = next(iter(self._health_ports[port].values()))
            if port not in self._health:
                try:
                    self._health[port] = await serve_http(self.bind("0.0.0.0", port), self._service_health(port))
                except OSError as err:
                    log.warning(
                        "node %s failed to start healthcheck %q on port %d: %s",
                        self.node,
                        f"{service_port.namespace}/{service_port.name}",
                        port,
                        err,
                    )

    def _service_health(self, node_port: int) -> Handler:
        def answer(_path: str, _query: Query) -> tuple[int, str, Body]:
            ports = list(self._health_ports.get(node_port, {}).values())
            if not ports:
                return 503, "application/json", b""
            local = {(e.ip, e.port) for p in ports for e in local_endpoints(p, self.node)}
            count = len({ip for ip, _ in local})
            healthy = self._healthy()
            report = {
                "service": {"namespace": ports[0].namespace, "name": ports[0].name},
                "localEndpoints": count,
                "serviceProxyHealthy": healthy,
            }
            body = json.dumps(report, indent="\t")  # upstream's layout: tab-indented, no final newline
            return (200 if count and healthy else 503), "application/json", body.encode()

        return answer

    # kube-proxy's own endpoints

    def _healthy(self) -> bool:
        return self.pending_since is None or time.monotonic() - self.pending_since < 2 * self.sync_period

    def _metrics_port(self, path: str, _query: Query) -> tuple[int, str, Body]:
        if path == "/proxyMode":
            return 200, "text/plain; charset=utf-8", self.proxier.mode.encode()
        if path == "/healthz":
            return 200, "text/plain; charset=utf-8", b"ok"
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", self._metrics().encode()
        return 404, "text/plain; charset=utf-8", b"404 page not found\n"

    def _healthz_port(self, path: str, _query: Query) -> tuple[int, str, Body]:
        now = datetime.now(UTC)
        updated = now if self._healthy() else self.last_updated
        times = f'"lastUpdated": "{_go_time(updated)}","currentTime": "{_go_time(now)}"'
        if path == "/livez":
            return 200, "application/json", ("{" + times + "}").encode()
        if path == "/healthz":
            code = 200 if self._healthy() else 503
            return code, "application/json", ("{" + times + ', "nodeEligible": true}').encode()
        return 404, "text/plain; charset=utf-8", b"404 page not found\n"

    def _metrics(self) -> str:
        proxier = self.proxier
        return (
            "\n".join(
                [
                    *self.durations.render(),
                    *self.full_durations.render(),
                    *self.partial_durations.render(),
                    "# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds The last time proxy rules were synced",
                    "# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge",
                    f"kubeproxy_sync_proxy_rules_last_timestamp_seconds {self.last_updated.timestamp()}",
                    "# HELP kubeproxy_sync_proxy_rules_total Syncs of the proxy rules (tinykube)",
                    "# TYPE kubeproxy_sync_proxy_rules_total counter",
                    f"kubeproxy_sync_proxy_rules_total {proxier.syncs}",
                    "# HELP kubeproxy_proxy_sync_failures_total Failed syncs (tinykube)",
                    "# TYPE kubeproxy_proxy_sync_failures_total counter",
                    f"kubeproxy_proxy_sync_failures_total {proxier.failures}",
                    "# HELP kubeproxy_sync_proxy_rules_service_port_count Service ports programmed (tinykube)",
                    "# TYPE kubeproxy_sync_proxy_rules_service_port_count gauge",
                    f"kubeproxy_sync_proxy_rules_service_port_count {self.programmed_ports}",
                ]
            )
            + "\n"
        )
