"""The apiserver application: resources open and close in `lifespan`; routes are thin and errors become a
Kubernetes `Status` in exactly one handler."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from tinykube.api import defaults, errors
from tinykube.api.resources import STORED
from tinykube.apiserver import admission, discovery
from tinykube.apiserver.allocators import report
from tinykube.apiserver.allocators.index import AllocationIndex
from tinykube.apiserver.allocators.pool import Pool
from tinykube.apiserver.allocators.ranges import IPRange, PortRange, parse_service_ranges
from tinykube.apiserver.allocators.repair import Repair
from tinykube.apiserver.allocators.services import ServicePools
from tinykube.apiserver.answered import Answered
from tinykube.apiserver.auth.authentication import BearerTokenAuth, TokenAuthenticator
from tinykube.apiserver.auth.authorization import Authorization
from tinykube.apiserver.auth.authorizer import new_authorizer
from tinykube.apiserver.auth.impersonation import Impersonation
from tinykube.apiserver.auth.rbac_escalation import EscalationCheck
from tinykube.apiserver.auth.satokens import ISSUER, ServiceAccountTokens
from tinykube.apiserver.bootstrap.pki import load_service_account_key
from tinykube.apiserver.bootstrap.systemobjects import (
    ensure_bootstrap_policy,
    ensure_default_service_accounts,
    ensure_namespaces,
    ensure_priority_classes,
    ensure_system_services,
)
from tinykube.apiserver.componentstatus import ComponentStatuses, Health
from tinykube.apiserver.connect.metricsserver import DEFAULT_RESOLUTION, MetricsServer
from tinykube.apiserver.connect.podlogs import PodLogs
from tinykube.apiserver.connect.proxy import METHODS as PROXY_METHODS
from tinykube.apiserver.connect.proxy import ProxyHandler
from tinykube.apiserver.crds import CustomResources
from tinykube.apiserver.events import EventRecorder
from tinykube.apiserver.handlers import ResourceHandler, json_response, raw_json_response
from tinykube.apiserver.http.limits import Limits, RequestLimits
from tinykube.apiserver.http.resourceroute import ResourceRoute
from tinykube.apiserver.http.upgrade import WebSocketAsHttp
from tinykube.apiserver.kinds.strategies import strategies
from tinykube.apiserver.metrics import Metrics
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest
from tinykube.apiserver.schema import customopenapi, fieldvalidation, openapiv2, openapiv3
from tinykube.apiserver.storage.watchcache import WatchCache
from tinykube.store.etcd import EtcdStore

log = logging.getLogger(__name__)

DEFAULT_SERVICE_RANGE = defaults.SERVICE_RANGE
DEFAULT_NODE_PORT_RANGE = defaults.NODE_PORT_RANGE
DEFAULT_LOAD_BALANCER_RANGE = defaults.LOAD_BALANCER_RANGE
_DISCOVERY_CACHE = {"Cache-Control": "public, max-age=3600"}


@dataclass
class ApiServerConfig:
    etcd_servers: list[str]
    token: str
    prefix: str = "/registry/"
    server_address: str = "127.0.0.1:6443"
    compaction_interval: float = 300.0
    service_cluster_ip_range: str = DEFAULT_SERVICE_RANGE
    service_node_port_range: str = DEFAULT_NODE_PORT_RANGE
    load_balancer_ip_range: str = DEFAULT_LOAD_BALANCER_RANGE  # empty: no built-in load balancer
    repair_interval: float = 180.0
    event_ttl: float = 3600.0  # --event-ttl: how long an Event is kept after its last write
    limits: Limits = field(default_factory=Limits)
    # --service-account-signing-key-file; None: a key of this process only (its tokens die with it)
    service_account_key_file: Path | None = None
    service_account_issuer: str = ISSUER  # also the API audience, as upstream's --api-audiences defaults to it
    metric_resolution: float = DEFAULT_RESOLUTION  # how often the node agents' resource metrics are scraped
    authorization_mode: str = "RBAC"  # --authorization-mode: RBAC or AlwaysAllow
    disabled_admission_plugins: frozenset[str] = frozenset()  # --disable-admission-plugins
    dns_service: bool = True  # keep `kube-system/kube-dns` (a cluster without its DNS server has none)

    @property
    def api_port(self) -> int:
        return int(self.server_address.rsplit(":", 1)[1])


class ApiServer:
    """Store, watch caches and registry of one apiserver; `app` is its ASGI application."""

    def __init__(self, config: ApiServerConfig) -> None:
        self.config = config
        self.store = EtcdStore(config.etcd_servers, config.prefix)
        self.caches = {r.key: WatchCache(self.store, r) for r in STORED}
        self.allocations = AllocationIndex(self.store)
        self.pools = ServicePools(
            [Pool("clusterips", r, self.allocations) for r in parse_service_ranges(config.service_cluster_ip_range)],
            Pool("nodeports", PortRange.parse(config.service_node_port_range), self.allocations),
            Pool("loadbalancerips", IPRange.parse(config.load_balancer_ip_range), self.allocations)
            if config.load_balancer_ip_range
            else None,
        )
        self.registry = Registry(self.store, self.caches, strategies(self.pools, config.event_ttl))
        self.registry.admission = admission.standard(self.registry, config.disabled_admission_plugins)
        self.catalog = self.registry.catalog
        self.custom_resources = CustomResources(self.registry, self.catalog)
        self.events = EventRecorder(self.registry)
        self.pools.warn = lambda svc, reason, message: self.events.warn(svc, reason, message, "service-controller")
        self.pools.load_balancer_ip_freed = self._serve_pending_load_balancers_soon
        self.repair = Repair(self.store, self.pools, self.events.warn)
        self._pending_load_balancers: asyncio.Task[None] | None = None
        self.metrics = Metrics()
        self.pod_logs = PodLogs(self.registry)
        self.resource_metrics = MetricsServer(self.registry, config.metric_resolution)
        issuer = config.service_account_issuer
        self.tokens = ServiceAccountTokens(
            self._service_account_key(), self._cached_object, issuer=issuer, audiences=(issuer,)
        )
        self.authenticator = TokenAuthenticator(config.token, self.tokens)
        self.components = ComponentStatuses(self._etcd_health)
        self.ready = asyncio.Event()
        # outermost: a WebSocket handshake is served by the HTTP application, its errors included
        self.app = WebSocketAsHttp(self._build_app())

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        fieldvalidation.load_schemas()
        await self.store.connect()
        await asyncio.gather(*(c.start() for c in self.caches.values()), self.allocations.start())
        await self.custom_resources.start()
        await ensure_namespaces(self.registry)
        await asyncio.gather(ensure_bootstrap_policy(self.registry), ensure_default_service_accounts(self.registry))
        await ensure_priority_classes(self.registry)
        await self._repair_pass()
        tasks = [
            asyncio.create_task(self._compact_forever(), name="compactor"),
            asyncio.create_task(self._repair_forever(), name="allocation-repair"),
            asyncio.create_task(self.resource_metrics.run(), name="metrics-server"),
        ]
        self.ready.set()
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await self.custom_resources.stop()
            await asyncio.gather(*(c.stop() for c in self.caches.values()), self.allocations.stop())
            await self.pod_logs.close()
            await self.store.close()

    def _service_account_key(self) -> rsa.RSAPrivateKey:
        path = self.config.service_account_key_file
        return load_service_account_key(path) if path else rsa.generate_private_key(65537, 2048)

    def _cached_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """An object as the watch cache has it: what token authentication checks, with no etcd round trip."""
        cached = self.caches[plural].get(self.registry.cache_key(namespace, name))
        return cached.obj if cached is not None else None

    async def _etcd_health(self) -> Health:
        if await self.store.healthy(2):
            return Health(True, "ok")
        return Health(False, error="etcd cluster is unavailable or misconfigured")

    async def _repair_pass(self) -> None:
        """Upstream's repair controllers and bootstrap controller in one pass: allocations rebuilt from the
        Services, the system Services in place."""
        await self.repair.run_once()
        await ensure_system_services(self.registry, self.pools, self.config.api_port, dns=self.config.dns_service)
        await self._serve_pending_load_balancers()

    def _serve_pending_load_balancers_soon(self) -> None:
        if self._pending_load_balancers is None or self._pending_load_balancers.done():
            self._pending_load_balancers = asyncio.create_task(self._serve_pending_load_balancers())

    async def _serve_pending_load_balancers(self) -> None:
        """LoadBalancer Services still without an ingress IP (the pool was exhausted) get one by being
        rewritten unchanged: their write allocates what is free now."""
        for _key, cached in list(self.caches["services"].items()):
            svc = cached.obj
            spec, status = svc.get("spec") or {}, svc.get("status") or {}
            if spec.get("type") != "LoadBalancer" or spec.get("loadBalancerClass"):
                continue
            if (status.get("loadBalancer") or {}).get("ingress"):
                continue
            meta = svc["metadata"]
            request = RegistryRequest(self.caches["services"].resource, meta["namespace"], meta["name"])
            with contextlib.suppress(errors.ApiError):
                await self.registry.update(request, copy.deepcopy(svc))

    async def _repair_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.repair_interval)
            try:
                await self._repair_pass()
            except Exception as err:  # a pass fails as a whole (etcd away): the next one starts over
                log.warning("allocation repair pass failed: %s", err)

    async def _compact_forever(self) -> None:
        """Compact etcd to the revision seen one interval ago, as upstream's apiserver does every 5 minutes."""
        previous = 0
        while True:
            await asyncio.sleep(self.config.compaction_interval)
            try:
                if previous:
                    await self.store.compact(previous)
                previous = await self.store.revision()
            except Exception as err:
                log.debug("compaction skipped: %s", err)

    def _build_app(self) -> Starlette:
        # Plain Starlette: every ASGI layer costs each request, and FastAPI's (body limits, telemetry, exit stacks)
        # do nothing for these hand-written routes.
        app = Starlette(lifespan=self.lifespan)
        app.add_exception_handler(errors.ApiError, self._api_error)  # type: ignore[arg-type]
        app.add_exception_handler(Exception, self._internal_error)
        authorizer = new_authorizer(self.config.authorization_mode, self.caches)
        self.registry.admission = EscalationCheck(self.registry.admission, authorizer)  # RBAC's, last
        answered = Answered(
            self.registry,
            authorizer=authorizer,
            authenticator=self.authenticator,
            tokens=self.tokens,
            components=self.components,
            resource_metrics=self.resource_metrics,
        )
        resources = ResourceHandler(self.registry, self.pod_logs, answered)
        counted = self.metrics.counting(resources)
        routes = [
            ("/version", self._version),
            ("/api", self._api),
            ("/apis", self._apis),
            ("/apis/{group}", self._group),
            ("/api/v1", self._group_version),
            ("/apis/{group}/{version}", self._group_version),
            ("/healthz", self._health),
            ("/livez", self._health),
            ("/readyz", self._readyz),
            ("/metrics", self._metrics),
            ("/debug/allocations", self._allocations),
            ("/openapi/v2", self._openapi_v2),
            ("/openapi/v3", self._openapi_v3),
            ("/openapi/v3/{path:path}", self._openapi_v3_group),
            ("/.well-known/openid-configuration", self._openid_configuration),
            ("/openid/v1/jwks", self._jwks),
        ]
        # discovery is served with a trailing slash too (`/api/`, `/apis/apps/v1/`), as upstream's mux does
        discovery_paths = {"/api", "/apis", "/apis/{group}", "/api/v1", "/apis/{group}/{version}"}
        routes += [(path + "/", endpoint) for path, endpoint in routes if path in discovery_paths]
        for path, endpoint in routes:
            app.router.add_route(path, endpoint, methods=["GET"])
        self.proxy = ProxyHandler(self.registry)  # pods/proxy, services/proxy, nodes/proxy (apiserver/connect/proxy.py)
        for proxy_path, proxy_endpoint in self.proxy.routes():
            app.router.add_route(proxy_path, proxy_endpoint, methods=PROXY_METHODS)
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        app.router.add_route("/api/{path:path}", counted, methods=methods)
        app.router.add_route("/apis/{path:path}", counted, methods=methods)
        app.router.routes.insert(0, ResourceRoute("/api/{path:path}", counted, methods=methods))
        # Outermost last: authentication, impersonation, limits, authorization (upstream's filter order)
        app.add_middleware(Authorization, authorizer=authorizer, cached=self._cached_object)
        app.add_middleware(RequestLimits, limits=self.config.limits)  # inside authentication, as upstream's
        app.add_middleware(Impersonation, authorizer=authorizer)
        # upstream turns anonymous requests off with AlwaysAllow
        anonymous = self.config.authorization_mode != "AlwaysAllow"
        app.add_middleware(
            BearerTokenAuth, token=self.config.token, authenticator=self.authenticator, anonymous=anonymous
        )
        return app

    async def _api_error(self, _request: Request, exc: errors.ApiError) -> Response:
        return json_response(exc.status(), exc.code)

    async def _internal_error(self, _request: Request, exc: Exception) -> Response:
        log.exception("internal error", exc_info=exc)
        err = errors.internal_error(f"{type(exc).__name__}: {exc}")
        return json_response(err.status(), err.code)

    async def _version(self, _request: Request) -> Response:
        return raw_json_response(discovery.version_info())

    async def _api(self, request: Request) -> Response:
        return self._discovery(request, True) or json_response(discovery.api_versions(self.config.server_address))

    async def _apis(self, request: Request) -> Response:
        return self._discovery(request, False) or json_response(discovery.api_group_list(self.catalog))

    def _discovery(self, request: Request, core: bool) -> Response | None:
        version = discovery.aggregated_version(request.headers.get("accept", ""))
        if version is None:
            return None
        body = discovery.aggregated(self.catalog, core, f"apidiscovery.k8s.io/{version}")
        media = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        return Response(orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE), media_type=media)

    async def _group(self, request: Request) -> Response:
        body = discovery.api_group(self.catalog, request.path_params["group"])
        if body is None:
            raise errors.resource_not_found()
        return json_response(body)

    async def _group_version(self, request: Request) -> Response:
        group = request.path_params.get("group", "")
        version = request.path_params.get("version", "v1")
        body = discovery.api_resource_list(self.catalog, group, version)
        if body is None:
            raise errors.resource_not_found()
        return json_response(body)

    async def _health(self, _request: Request) -> Response:
        return PlainTextResponse("ok")

    async def _readyz(self, request: Request) -> Response:
        checks = {
            "ping": True,
            "etcd": True,
            "informer-sync": all(c.ready.is_set() for c in self.caches.values()),
            "bootstrap-namespaces": self.ready.is_set(),
        }
        # The cluster, not one member: some member serves a linearizable read (it has a leader with its quorum).
        checks["etcd"] = await self.store.healthy(2)
        healthy = all(checks.values())
        if "verbose" in request.query_params:
            lines = [f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in checks.items()]
            lines.append("readyz check passed" if healthy else "readyz check failed")
            return PlainTextResponse("\n".join(lines) + "\n", 200 if healthy else 500)
        return PlainTextResponse("ok" if healthy else "readyz check failed", 200 if healthy else 500)

    async def _metrics(self, _request: Request) -> Response:
        sizes = {plural: len(cache.objects) for plural, cache in self.caches.items()}
        text = self.metrics.render(sizes) + "\n".join(report.metrics(self.pools)) + "\n"
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def _openid_configuration(self, _request: Request) -> Response:
        """Service-account issuer discovery (upstream's, written with json.Marshal and cacheable for an hour)."""
        body = self.tokens.openid_configuration(f"https://{self.config.server_address}/openid/v1/jwks")
        return Response(orjson.dumps(body), media_type="application/json", headers=_DISCOVERY_CACHE)

    async def _jwks(self, _request: Request) -> Response:
        body = orjson.dumps(self.tokens.jwks())
        return Response(body, media_type="application/jwk-set+json", headers=_DISCOVERY_CACHE)

    async def _allocations(self, _request: Request) -> Response:
        return json_response(report.allocations(self.pools))

    async def _openapi_v2(self, request: Request) -> Response:
        # kubectl validates `kind: List` manifests client-side from the v2 document, which it reads only as protobuf.
        if openapiv2.wants_v2_protobuf(request.headers.get("accept")):
            body = await asyncio.to_thread(customopenapi.v2_protobuf, self.catalog)
            return Response(body, media_type=openapiv2.V2_PROTOBUF_MEDIA_TYPE)
        return Response(await asyncio.to_thread(customopenapi.v2_json, self.catalog), media_type="application/json")

    async def _openapi_v3(self, _request: Request) -> Response:
        # kube-openapi writes its documents with json.Marshal: no newline at the end, unlike the API's responses
        index = await asyncio.to_thread(customopenapi.v3_index, self.catalog)
        return Response(orjson.dumps(index), media_type="application/json")

    async def _openapi_v3_group(self, request: Request) -> Response:
        path = request.path_params["path"]
        body = await asyncio.to_thread(customopenapi.v3_document, self.catalog, path)
        if body is None:
            body = await asyncio.to_thread(openapiv3.openapi_v3_group, path)
        if body is None:
            raise errors.resource_not_found()
        return Response(body, media_type="application/json")
