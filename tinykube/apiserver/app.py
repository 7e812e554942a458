"""The apiserver application: resources open and close in `lifespan`; routes are thin and errors become a
Kubernetes `Status` in exactly one handler."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from tinykube.api import errors
from tinykube.api.resources import RESOURCES, by_path
from tinykube.apiserver import discovery, openapi
from tinykube.apiserver.auth import BearerTokenAuth
from tinykube.apiserver.handlers import ResourceHandler, json_response
from tinykube.apiserver.metrics import Metrics
from tinykube.apiserver.registry import Registry, strategies
from tinykube.apiserver.registry import Request as RegistryRequest
from tinykube.apiserver.watchcache import WatchCache
from tinykube.store.etcd import EtcdStore

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ApiServerConfig:
    etcd_servers: list[str]
    token: str
    prefix: str = "/registry/"
    server_address: str = "127.0.0.1:6443"
    compaction_interval: float = 300.0


class ApiServer:
    """Store, watch caches and registry of one apiserver; `app` is its ASGI application."""

    def __init__(self, config: ApiServerConfig) -> None:
        self.config = config
        self.store = EtcdStore(config.etcd_servers, config.prefix)
        self.caches = {r.plural: WatchCache(self.store, r) for r in RESOURCES}
        self.registry = Registry(self.store, self.caches, strategies())
        self.metrics = Metrics()
        self.ready = asyncio.Event()
        self.app = self._build_app()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        await self.store.connect()
        await asyncio.gather(*(c.start() for c in self.caches.values()))
        await self._bootstrap()
        compactor = asyncio.create_task(self._compact_forever(), name="compactor")
        self.ready.set()
        try:
            yield
        finally:
            compactor.cancel()
            await asyncio.gather(*(c.stop() for c in self.caches.values()))
            await self.store.close()

    async def _bootstrap(self) -> None:
        namespaces = by_path("", "v1", "namespaces")
        assert namespaces is not None
        for name in SYSTEM_NAMESPACES:
            with contextlib.suppress(errors.AlreadyExists):
                await self.registry.create(RegistryRequest(namespaces), {"metadata": {"name": name}})

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

    def _build_app(self) -> FastAPI:
        app = FastAPI(lifespan=self.lifespan, openapi_url=None, docs_url=None, redoc_url=None)
        app.add_exception_handler(errors.ApiError, self._api_error)  # type: ignore[arg-type]
        app.add_exception_handler(Exception, self._internal_error)
        resources = ResourceHandler(self.registry)
        counted = self.metrics.counting(resources)
        routes = [
            ("/version", self._version),
            ("/api", self._api),
            ("/apis", self._apis),
            ("/api/v1", self._group_version),
            ("/apis/{group}/{version}", self._group_version),
            ("/healthz", self._health),
            ("/livez", self._health),
            ("/readyz", self._readyz),
            ("/metrics", self._metrics),
            ("/openapi/v2", self._openapi_v2),
            ("/openapi/v3", self._openapi_v3),
            ("/openapi/v3/{path:path}", self._openapi_v3_group),
        ]
        for path, endpoint in routes:
            app.router.add_route(path, endpoint, methods=["GET"])
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        app.router.add_route("/api/{path:path}", counted, methods=methods)
        app.router.add_route("/apis/{path:path}", counted, methods=methods)
        app.add_middleware(BearerTokenAuth, token=self.config.token)
        return app

    async def _api_error(self, _request: Request, exc: errors.ApiError) -> Response:
        return json_response(exc.status(), exc.code)

    async def _internal_error(self, _request: Request, exc: Exception) -> Response:
        log.exception("internal error", exc_info=exc)
        err = errors.internal_error(f"{type(exc).__name__}: {exc}")
        return json_response(err.status(), err.code)

    async def _version(self, _request: Request) -> Response:
        return json_response(discovery.version_info())

    async def _api(self, request: Request) -> Response:
        return self._discovery(request, True) or json_response(discovery.api_versions(self.config.server_address))

    async def _apis(self, request: Request) -> Response:
        return self._discovery(request, False) or json_response(discovery.api_group_list())

    @staticmethod
    def _discovery(request: Request, core: bool) -> Response | None:
        version = discovery.aggregated_version(request.headers.get("accept", ""))
        if version is None:
            return None
        body = discovery.aggregated(core, f"apidiscovery.k8s.io/{version}")
        media = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        return Response(orjson.dumps(body), media_type=media)

    async def _group_version(self, request: Request) -> Response:
        group = request.path_params.get("group", "")
        version = request.path_params.get("version", "v1")
        body = discovery.api_resource_list(group, version)
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
        try:
            await asyncio.wait_for(self.store.revision(), 2)
        except Exception:
            checks["etcd"] = False
        healthy = all(checks.values())
        if "verbose" in request.query_params:
            lines = [f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in checks.items()]
            lines.append("readyz check passed" if healthy else "readyz check failed")
            return PlainTextResponse("\n".join(lines) + "\n", 200 if healthy else 500)
        return PlainTextResponse("ok" if healthy else "readyz check failed", 200 if healthy else 500)

    async def _metrics(self, _request: Request) -> Response:
        sizes = {plural: len(cache.objects) for plural, cache in self.caches.items()}
        return PlainTextResponse(self.metrics.render(sizes), media_type="text/plain; version=0.0.4")

    async def _openapi_v2(self, request: Request) -> Response:
        # kubectl validates `kind: List` manifests client-side from the v2 document, which it reads only as protobuf.
        if openapi.wants_v2_protobuf(request.headers.get("accept")):
            body = await asyncio.to_thread(openapi.openapi_v2_protobuf)
            return Response(body, media_type=openapi.V2_PROTOBUF_MEDIA_TYPE)
        return Response(await asyncio.to_thread(openapi.openapi_v2), media_type="application/json")

    async def _openapi_v3(self, _request: Request) -> Response:
        return json_response(await asyncio.to_thread(openapi.openapi_v3_index))

    async def _openapi_v3_group(self, request: Request) -> Response:
        body = await asyncio.to_thread(openapi.openapi_v3_group, request.path_params["path"])
        if body is None:
            raise errors.resource_not_found()
        return Response(body, media_type="application/json")
