"""Running the cluster DNS server: informers feeding `ClusterRecords`, the DNS sockets, and the metrics port with
`/health`, `/ready` and `/metrics` (CoreDNS serves these on :8080, :8181 and :9153; tinykube on one port)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tinykube.api.resources import builtin
from tinykube.client.informer import Informer, SharedInformers
from tinykube.client.rest import RestClient
from tinykube.dns.answers import Answerer, DnsSettings
from tinykube.dns.cache import ResponseCache
from tinykube.dns.metrics import DnsMetrics
from tinykube.dns.names import Zones, reverse_zones
from tinykube.dns.options import DnsOptions
from tinykube.dns.records import GLOBAL, ClusterRecords, Group, Object
from tinykube.dns.server import DnsServer, Upstreams
from tinykube.web import Body, Query, serve_http

log = logging.getLogger(__name__)


def _newest(put: Callable[[Object], None]) -> Callable[[Object, Object], None]:
    return lambda _old, new: put(new)


class DnsService:
    """The DNS server of one cluster, fed from the apiserver through shared informers."""

    def __init__(self, client: RestClient, options: DnsOptions, informers: SharedInformers | None = None) -> None:
        options.check()
        self.options = options
        self._owns_informers = informers is None  # shared ones are stopped by whoever made them
        self.informers = informers or SharedInformers(client)
        self._watched: list[Informer] = []
        self.cache = ResponseCache()
        self.records = ClusterRecords(on_change=self._invalidate, on_reset=self.cache.clear)
        zones = Zones(options.cluster_domain, reverse_zones(options.reverse_cidrs))
        settings = DnsSettings(
            options.cluster_domain, tuple(options.reverse_cidrs), options.ttl, options.pods, (options.host,)
        )
        self.metrics = DnsMetrics(f"dns://{options.host}:{options.port}", zones.domain + ".")
        self.server = DnsServer(
            Answerer(self.records, settings, zones), Upstreams(options.upstreams), self.metrics, self.cache
        )
        self.metrics_address: tuple[str, int] | None = None
        self._http: asyncio.Server | None = None

    def _invalidate(self, group: Group) -> None:
        self.cache.invalidate(group)
        self.cache.invalidate(GLOBAL)  # reverse names and the NS glue may name what changed

    def _watch(self) -> None:
        records = self.records
        watched: list[tuple[str, str, Callable[[Object], None], Callable[[Object], None]]] = [
            ("", "namespaces", records.put_namespace, records.delete_namespace),
            ("", "services", records.put_service, records.delete_service),
            ("discovery.k8s.io", "endpointslices", records.put_slice, records.delete_slice),
        ]
        if self.options.pods == "verified":
            watched.append(("", "pods", records.put_pod, records.delete_pod))
        for group, plural, put, delete in watched:
            informer = self.informers.informer(builtin(group, "v1", plural))
            informer.add_handler(on_add=put, on_update=_newest(put), on_delete=delete)
            self._watched.append(informer)
        self.informers.start()

    async def start(self) -> None:
        """Listen (DNS at once; names that do not exist yet are SERVFAIL until the caches are synced)."""
        self._watch()
        await self.server.start(self.options.host, self.options.port)
        self.metrics.server = "dns://{}:{}".format(*self.server.address)
        if self.options.metrics_port is not None:
            self._http = await serve_http(None, self._http_answer, self.options.host, self.options.metrics_port)
            self.metrics_address = self._http.sockets[0].getsockname()[:2]

    async def wait_synced(self) -> None:
        await asyncio.gather(*(informer.wait_synced() for informer in self._watched))
        self.cache.clear()  # nothing cached before the sync is cached (server.synced gates it); be sure anyway
        self.server.synced = True
        log.info("dns: serving %s on %s:%d", self.options.cluster_domain, *self.server.address)

    async def run_synced(self) -> None:
        """Once started: mark the server synced when the watches are, then serve until cancelled."""
        await self.wait_synced()
        await asyncio.Event().wait()

    async def stop(self) -> None:
        await self.server.stop()
        if self._http is not None:
            self._http.close()
        if self._owns_informers:
            await self.informers.stop()

    def _http_answer(self, path: str, _query: Query) -> tuple[int, str, Body]:
        text = "text/plain; charset=utf-8"
        if path == "/health":
            return 200, text, b"OK"
        if path == "/ready":
            return (200, text, b"OK") if self.server.synced else (503, text, b"kubernetes\n")
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", self.metrics.render().encode()
        return 404, text, b"404 page not found\n"
