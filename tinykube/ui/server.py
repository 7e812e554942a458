"""The live picture's web server: `tinykube up --ui-port PORT` (loopback only).

    GET /                      the page (tinykube/ui/static/index.html; its script and style next to it)
    GET /events                Server-Sent Events: `snapshot` (every element, and the sandbox's fixed parts) once,
                               then `diff` ({"put": [...], "delete": [...]}) as the informers see changes
    GET /api/services/NS/NAME  one Service's DNS names and records, environment variables, and (`?node=`) the
                               node's real proxy rules with the Service's lines marked
    POST /api/trace            a `tinykube trace` from a pod, node or the external client: its text and the hops
                               the page draws (501 while tinykube.trace is not there)

Every request needs the cluster's bearer token, as the API does: an `Authorization: Bearer` header, or `?token=`
once (the answer sets a cookie, SameSite=Strict and HttpOnly, and redirects to the address without the token),
then that cookie — which is what the page's own requests and its EventSource carry.

The model is fed by the process's shared informers (nodes, pods, services, endpointslices, namespaces): an event
marks the picture dirty; a publisher recomputes the snapshot (at most every 50 ms) and sends each page the diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import importlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api.resources import builtin
from tinykube.client.informer import Informer, SharedInformers
from tinykube.sandbox.topology import BRIDGE, EXTERNAL_IP, LAN_CIDR, LAN_GATEWAY, netns_prefix
from tinykube.ui import details, rules, state

log = logging.getLogger(__name__)

COOKIE = "tinykube-ui"
COALESCE = 0.05  # seconds: changes that come together are sent as one diff
HEARTBEAT = 15.0  # an SSE comment this often keeps idle connections open
QUEUE_LIMIT = 1000  # a page this far behind is dropped (its EventSource reconnects and gets a fresh snapshot)
_STATIC = {"app.js": "text/javascript", "style.css": "text/css", "index.html": "text/html"}
_WATCHED = {
    "nodes": ("", "nodes"),
    "pods": ("", "pods"),
    "services": ("", "services"),
    "slices": ("discovery.k8s.io", "endpointslices"),
    "namespaces": ("", "namespaces"),
}


class _Server(uvicorn.Server):
    """No signal handlers of its own: `tinykube up` stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def trace_available() -> bool:
    """Whether `tinykube trace` (its `trace` and `render`) is there to call: the hook the page's trace control
    waits for. Imported only when a page connects."""
    try:
        module = importlib.import_module("tinykube.trace")
    except Exception:  # absent, or half-built: no trace control
        return False
    return callable(getattr(module, "trace", None)) and callable(getattr(module, "render", None))


class UiServer:
    def __init__(
        self,
        informers: SharedInformers,
        token: str,
        *,
        cluster: str,
        dataplane: str = "none",
        proxy_mode: str = "",
        domain: str = "cluster.local",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.informers = informers
        self.cookie = hashlib.sha256(f"tinykube-ui:{token}".encode()).hexdigest()
        self.token = token
        self.cluster = cluster
        self.dataplane = dataplane
        self.proxy_mode = proxy_mode
        self.domain = domain
        self.host = host
        self.port = port
        self.address: tuple[str, int] | None = None
        self.current: state.Snapshot = {}
        self._informers: dict[str, Informer] = {}
        self._dirty = asyncio.Event()
        self._pages: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self._server: _Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._tracing = asyncio.Lock()

    # Life cycle

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as err:
            sock.close()
            raise SystemExit(
                f"tinykube: cannot listen on {self.host}:{self.port} for the UI: {err.strerror} "
                "(choose another --ui-port; 0 picks a free one)"
            ) from err
        sock.listen(128)
        self.address = sock.getsockname()[:2]
        for key, (group, plural) in _WATCHED.items():
            informer = self.informers.informer(builtin(group, "v1", plural))
            informer.add_handler(on_add=self._changed, on_update=self._updated, on_delete=self._changed)
            self._informers[key] = informer
        self.informers.start()
        config = uvicorn.Config(
            self.app(), log_level="warning", lifespan="off", access_log=False, loop="none", timeout_graceful_shutdown=1
        )
        self._server = _Server(config)
        self._tasks.append(asyncio.create_task(self._server.serve(sockets=[sock]), name="ui"))
        self._tasks.append(asyncio.create_task(self._publish(), name="ui publisher"))
        while not self._server.started:
            if self._tasks[0].done():
                self._tasks[0].result()
                raise SystemExit("tinykube: the UI server stopped during start-up")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        for page in list(self._pages):
            page.put_nowait(None)  # ends its stream, so the server need not wait for it
        if self._server is not None:
            self._server.should_exit = True
        if self._tasks:
            self._tasks[1].cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # The model

    def _changed(self, _obj: state.Object) -> None:
        self._dirty.set()

    def _updated(self, _old: state.Object, _new: state.Object) -> None:
        self._dirty.set()

    def _objects(self, key: str) -> list[state.Object]:
        return self._informers[key].store.list()

    def snapshot(self) -> state.Snapshot:
        return state.snapshot(
            self._objects("nodes"), self._objects("pods"), self._objects("services"), self._objects("slices")
        )

    async def _publish(self) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(COALESCE)
            self._publish_now()

    def _publish_now(self) -> None:
        """The pages get what changed since the last snapshot; the new one becomes `current`. (No await: a page
        that connects gets `current` and, from then, exactly the diffs that follow it.)"""
        self._dirty.clear()
        fresh = self.snapshot()
        change = state.diff(self.current, fresh)
        self.current = fresh
        if not change["put"] and not change["delete"]:
            return
        for page in list(self._pages):
            if page.qsize() >= QUEUE_LIMIT:
                self._pages.discard(page)
                page.put_nowait(None)
            else:
                page.put_nowait(change)

    def meta(self) -> dict[str, Any]:
        lan = None
        if self.dataplane == "netns":
            lan = {"cidr": LAN_CIDR, "gateway": LAN_GATEWAY, "bridge": BRIDGE, "external": EXTERNAL_IP}
        return {
            "cluster": self.cluster,
            "dataplane": self.dataplane,
            "proxyMode": self.proxy_mode,
            "domain": self.domain,
            "lan": lan,
            "trace": trace_available(),
        }

    # HTTP

    def app(self) -> ASGIApp:
        routes = [
            Route("/", self._index),
            Route("/static/{name}", self._static),
            Route("/events", self._events),
            Route("/api/services/{namespace}/{name}", self._service),
            Route("/api/trace", self._trace, methods=["POST"]),
        ]
        app = Starlette(routes=routes)

        async def authenticated(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                refused = self._refused(Request(scope))
                if refused is not None:
                    await refused(scope, receive, send)
                    return
            await app(scope, receive, send)

        return authenticated

    def _refused(self, request: Request) -> Response | None:
        """None if the request carries the token (header or cookie); else the answer: a redirect that sets the
        cookie for a right `?token=`, 401 for anything else."""
        given = request.query_params.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return _unauthorized()
            response = RedirectResponse(str(request.url.remove_query_params("token")), status_code=303)
            response.set_cookie(COOKIE, self.cookie, httponly=True, samesite="strict", path="/")
            return response
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), self.token.encode()):
            return None
        cookie = request.cookies.get(COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), self.cookie.encode()):
            return None
        return _unauthorized()

    async def _index(self, _request: Request) -> Response:
        return _file("index.html")

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found\n", 404)
        return _file(name)

    async def _events(self, request: Request) -> Response:
        page: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        if self._dirty.is_set() or not self.current:
            self._publish_now()  # the other pages catch up first: this one starts from the newest snapshot
        first = {"meta": self.meta(), "elements": list(self.current.values())}
        self._pages.add(page)

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield _sse("snapshot", first)
                while True:
                    try:
                        change = await asyncio.wait_for(page.get(), HEARTBEAT)
                    except TimeoutError:
                        yield b": keep-alive\n\n"
                        continue
                    if change is None:
                        return
                    yield _sse("diff", change)
            finally:
                self._pages.discard(page)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def _service(self, request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        service = self._informers["services"].store.get(f"{namespace}/{name}")
        if service is None:
            return JSONResponse({"message": f'services "{name}" not found'}, 404)
        services = self._objects("services")
        slices = self._objects("slices")
        nodes = sorted(n["metadata"]["name"] for n in self._objects("nodes"))
        node = request.query_params.get("node") or self._endpoint_node(namespace, name) or (nodes[0] if nodes else "")
        body: dict[str, Any] = {
            "service": state.service_element(service),
            "dns": details.dns_records(service, services, slices, self._objects("namespaces"), self.domain),
            "env": details.environment(service, services),
            "nodes": nodes,
            "node": node,
        }
        if self.dataplane != "netns":
            body["rules"] = {"node": node, "command": "", "lines": [], "error": "no kernel rules: pods are simulated"}
        elif node not in nodes:
            body["rules"] = {"node": node, "command": "", "lines": [], "error": f"no node {node!r}"}
        else:
            found = await rules.read_rules(f"{netns_prefix(self.cluster)}{node}", node, self.proxy_mode)
            found.marked = rules.highlight(found.lines, service)
            body["rules"] = found.as_json()
        return JSONResponse(body)

    def _endpoint_node(self, namespace: str, name: str) -> str:
        """The node of the Service's first endpoint pod (where its local rules are the interesting ones)."""
        for element in sorted(self.current.values(), key=lambda e: e["id"]):
            if element["kind"] == "edge" and element["service"] == f"svc/{namespace}/{name}":
                pod = self.current.get(element["target"])
                if pod and pod["node"]:
                    return str(pod["node"])
        return ""

    async def _trace(self, request: Request) -> Response:
        """One `tinykube trace` (issue 22) for the page: {"from": "ns/pod" | "node/NAME" | "external", "to":
        "name.ns:PORT" | "IP:PORT", "proto": "tcp" | "udp"} in; its text (`render(explain=True)`), outcome and the
        hops to draw out. One at a time: a trace switches kernel tracing on in the namespaces it crosses."""
        if not trace_available():
            return JSONResponse({"message": "tinykube trace is not available in this build"}, 501)
        from tinykube.trace import render, trace

        try:
            asked = await request.json()
            source, target = str(asked["from"]), str(asked["to"])
            proto = str(asked.get("proto") or "tcp")
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"message": 'give {"from": ..., "to": ..., "proto": "tcp"}'}, 400)
        async with self._tracing:
            result = await trace(self.informers.client, self.cluster, source, target, proto)
        return JSONResponse(
            {
                "text": render(result, explain=True),
                "outcome": result.outcome,
                "error": result.error,
                "seenClient": result.seen_client,
                "path": state.trace_path(result, self.current),
            }
        )


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _file(name: str) -> Response:
    body = resources.files("tinykube.ui").joinpath("static", name).read_bytes()
    return Response(body, media_type=_STATIC[name], headers={"Cache-Control": "no-store"})


def _unauthorized() -> Response:
    return PlainTextResponse(
        "401 Unauthorized: open the address `tinykube up` printed, or add ?token=<the cluster's token> "
        "(the file `token` in its data directory) once; then a cookie does.\n",
        401,
        headers={"WWW-Authenticate": 'Bearer realm="tinykube-ui"'},
    )
