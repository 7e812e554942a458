"""Limits applied before work, as kube-apiserver's: what a request may cost is bounded before it is spent.

- Request line and headers: upstream's `http.Server.MaxHeaderBytes` 1 MiB (Go reads 4 KiB more), answered as Go
  answers, `HTTP/1.0 431 Request Header Fields Too Large` in plain text, and the connection closed
  (`LimitedHttpProtocol`).
- Time: `ReadHeaderTimeout` 32 s (`--read-header-timeout`, from the connection's start or the request's first byte),
  `IdleTimeout` 90 s (`--idle-timeout`, uvicorn's keep-alive timeout); a body must arrive within
  `--read-body-timeout` (60 s, upstream's request timeout) or the connection is closed.
- Body: `MaxRequestBodyBytes` 3 MiB for every verb and transfer encoding, read through a bounded `receive` that stops
  at the limit: 413 `Request entity too large: limit is 3145728` (`RequestLimits`).
- Requests in flight: `--max-requests-inflight` 400, `--max-mutating-requests-inflight` 200, counted after
  authentication; long-running requests (watch, log, exec, attach, portforward, proxy) are exempt; more get 429 with
  `Retry-After: 1` and "Too many requests, please try again later." in plain text, as Go's `http.Error` writes it
  (`RequestLimits`).
- Connections: `--max-connections` (0: half the open-file limit less 128, the limit raised to the hard one at start
  as Go's runtime does), counted from the moment a connection is accepted, its TLS handshake not yet done
  (`tls_accepting`): at the cap the connection idle longest is closed to make room, else the new one. A connection
  is idle while no request is under way, and a connection whose handshake has not finished is idle since it was
  accepted: so sockets that connect and say nothing (or only a ClientHello) are shed first, before any client
  that is being served, and cost a file descriptor only until then. The handshake must end within
  `ReadHeaderTimeout` (as Go's http.Server bounds it), not asyncio's 60 s.
- Nesting: Go's `encoding/json` stops at 10,000 levels; tinykube at `MAX_DEPTH` (tinykube/api/depth.py).
- YAML aliases: go-yaml's rule ("document contains excessive aliasing": alias-expanded nodes over decoded nodes at
  most 0.99 up to 400,000 nodes, falling to 0.10 at 4,000,000), checked on the event stream before anything is
  built (`load_yaml`).
- JSON patch: 10,000 operations (413); `copy` operations may grow a document by `JSONPatchMaxCopyBytes`, 3 MiB, in
  all (422) (tinykube/api/patch.py).
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import functools
import resource
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tinykube.api import errors
from tinykube.api.depth import MAX_DEPTH, check_depth
from tinykube.apiserver.http.upgrade import HttpProtocol

MAX_BODY = 3 * 1024 * 1024  # MaxRequestBodyBytes
MAX_HEADER_BYTES = 1 << 20  # http.Server.MaxHeaderBytes in kube-apiserver's secure serving
HEADER_SLACK = 4096  # Go reads MaxHeaderBytes + 4096 before it answers 431
JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024
# PyYAML builds a node object of ~450 bytes per value before the value: a 3 MB flow list of 1.5M numbers took the
# apiserver to 675 MB and 70 s. Upstream has no such limit (go-yaml decodes straight into values).
MAX_YAML_NODES = 200_000

TOO_MANY_REQUESTS = "Too many requests, please try again later."
LONG_RUNNING_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PROBES = frozenset({"/healthz", "/livez", "/readyz"})


@dataclass
class Limits:
    max_requests_inflight: int = 400  # 0: no limit
    max_mutating_requests_inflight: int = 200
    max_body_bytes: int = MAX_BODY
    max_header_bytes: int = MAX_HEADER_BYTES
    idle_timeout: float = 90.0
    read_header_timeout: float = 32.0
    read_body_timeout: float = 60.0
    max_connections: int = 0  # 0: from the file-descriptor limit

    def connection_cap(self) -> int:
        if self.max_connections > 0:
            return self.max_connections
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 65536
        # Half of what is left: `up`'s own components are clients of this apiserver in the same process, and each
        # of their connections costs two descriptors here. A cap above that is never reached: the accept fails
        # first, and libuv then accepts and resets every waiting connection, the authenticated client's included.
        return max(64, (soft - 128) // 2)


def raise_fd_limit() -> None:
    """As Go's runtime does at start: the soft limit on open files raised to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def too_large(limit: int) -> errors.RequestEntityTooLarge:
    return errors.RequestEntityTooLarge(f"Request entity too large: limit is {limit}")


# ---- nesting and aliases ---------------------------------------------------------------------------------------


def load_json(body: bytes, prefix: str = "couldn't get version/kind; json parse error: ") -> Any:
    """orjson refuses documents nested deeper than 1024 itself; the rest is checked against MAX_DEPTH."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise errors.BadRequest(f"{prefix}{err}") from err
    check_depth(value)
    return value


def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's allowedAliasRatio (decode.go, the fix for CVE-2019-11253)."""
    low, high = 400_000, 4_000_000
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * ((decoded - low) / (high - low))


def _scan_yaml(body: bytes, depth_limit: int) -> bool:
    """The event stream checked before any object is built: nesting depth, and go-yaml's alias rule computed with
    each anchor's expanded size (so an alias bomb costs its events, never its expansion)."""
    loader = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    sizes: dict[str, int] = {}  # anchor -> nodes its value expands to
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, decoded count when it opened)
    decoded = aliased = 0
    for count, event in enumerate(yaml.parse(body, Loader=loader)):
        if count > MAX_YAML_NODES or decoded > MAX_YAML_NODES:
            raise errors.RequestEntityTooLarge(f"yaml: the document has more than {MAX_YAML_NODES} values")
        if isinstance(event, yaml.AliasEvent):
            size = sizes.get(event.anchor or "")
            if size is None:
                raise errors.BadRequest(f"yaml: unknown anchor '{event.anchor}' referenced")
            decoded += size + 1
            aliased += size
            if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
                raise errors.BadRequest("yaml: document contains excessive aliasing")
        elif isinstance(event, yaml.ScalarEvent):
            decoded += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            decoded += 1
            open_nodes.append((event.anchor, decoded))
            if len(open_nodes) > depth_limit:
                raise errors.BadRequest(f"yaml: exceeded max depth of {depth_limit}")
        elif isinstance(event, yaml.CollectionEndEvent) and open_nodes:
            anchor, start = open_nodes.pop()
            if anchor:
                sizes[anchor] = decoded - start + 1
    return aliased > 0


class _Loader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML whose integers beyond int64 are floats, as upstream's decoder reads such a JSON number (YAML
    reaches it as JSON); everything after the decoding handles int64 only."""


def _int64_or_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    value: int = loader.construct_yaml_int(node)
    return value if -(2**63) <= value < 2**63 else float(value)


_Loader.add_constructor("tag:yaml.org,2002:int", _int64_or_float)


def load_yaml(body: bytes, depth_limit: int = MAX_DEPTH) -> Any:
    try:
        aliased = _scan_yaml(body, depth_limit)
        value = yaml.load(body, Loader=_Loader)
    except yaml.YAMLError as err:
        raise errors.BadRequest(f"couldn't get version/kind; yaml parse error: {err}") from err
    except RecursionError as err:  # not reached below the depth limit; kept as a 400 all the same
        raise errors.BadRequest("couldn't get version/kind; yaml parse error: nested too deeply") from err
    check_depth(value, depth_limit)  # merge keys and aliases nest what the events did not show
    if aliased:  # an alias is the anchored object itself: unshared, so that changing one place changes only it
        value = orjson.loads(orjson.dumps(value))
    return value


def yaml_duplicate_keys(body: bytes) -> list[str]:
    """The keys a YAML document sets twice in one mapping, in Go's yaml words (`line 9: key "foo" already set in
    map`, the line of the second), which upstream's strict YAML decoding reports. A document that does not parse
    has none here: the decoder's own error comes first."""
    try:
        root = yaml.compose(body, Loader=_Loader)
    except yaml.YAMLError:
        return []
    found: list[str] = []
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        found.append(
                            f"line {key.start_mark.line + 1}: key {orjson.dumps(key.value).decode()} already set in map"
                        )
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return sorted(found, key=lambda text: int(text.split(":", 1)[0].removeprefix("line ")))


# ---- bodies and in-flight requests (ASGI, after authentication) ------------------------------------------------


def _long_running(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    if b"watch=true" in query or b"watch=1" in query:
        return True
    path: str = scope.get("path", "")
    return "/watch/" in path or _subresource(path) in LONG_RUNNING_SUBRESOURCES


def _proxied(scope: Scope) -> bool:
    """A proxy subresource (`/api/v1/[namespaces/N/]RESOURCE/NAME/proxy[/...]`): its body is the backend's business,
    streamed through as upstream's proxy handler does, so no limit here."""
    path: str = scope.get("path", "")
    return path.startswith("/api/") and _subresource(path) == "proxy"


def _subresource(path: str) -> str:
    """The subresource a resource path names (whatever follows it, as a proxy's path), or ""."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if rest[:1] == ["namespaces"] and len(rest) >= 4:  # a namespaced resource: namespaces/N/RESOURCE/NAME/...
        rest = rest[2:]
    return rest[2] if len(rest) >= 3 else ""


class _Refused(Exception):
    pass


class RequestLimits:
    """ASGI middleware inside authentication: upstream's max-in-flight filter, and the body limit for every verb
    and transfer encoding (the handlers' `request.body()` reads through `receive`, which stops at the limit)."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits
        self.inflight = 0
        self.mutating = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        bounded_receive = receive if _proxied(scope) else self._bounded(scope, receive, limits.max_body_bytes)
        if _long_running(scope) or scope["path"] in PROBES:
            await self.app(scope, bounded_receive, send)
            return
        mutating = scope["method"] not in READ_ONLY_METHODS
        limit = limits.max_mutating_requests_inflight if mutating else limits.max_requests_inflight
        current = self.mutating if mutating else self.inflight
        if limit > 0 and current >= limit:
            await _too_many_requests(send)
            return
        if mutating:
            self.mutating += 1
        else:
            self.inflight += 1
        try:
            await self.app(scope, bounded_receive, send)
        finally:
            if mutating:
                self.mutating -= 1
            else:
                self.inflight -= 1

    @staticmethod
    def _bounded(scope: Scope, receive: Receive, limit: int) -> Receive:
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        declared = int(length) if length is not None and length.isdigit() else None
        total = 0

        async def bounded() -> Message:
            nonlocal total
            if declared is not None and declared > limit:
                raise too_large(limit)  # before a byte of the body is read
            message = await receive()
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > limit:
                    raise too_large(limit)
            return message

        return bounded


async def _too_many_requests(send: Send) -> None:
    """As upstream's max-in-flight filter answers: Go's `http.Error`, plain text, not a `Status`."""
    body = f"{TOO_MANY_REQUESTS}\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"x-content-type-options", b"nosniff"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# ---- the connection: header size, read timeouts, a cap on connections ------------------------------------------

_HEADER_TOO_LARGE = (
    b"HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\n431 Request Header Fields Too Large"
)
RST_AVOIDANCE_DELAY = 0.5  # Go's closeWriteAndWait: the answer is read before the connection goes


class LimitedHttpProtocol(HttpProtocol):
    """uvicorn's httptools protocol (through upgrade.HttpProtocol) with Go's http.Server limits: the request line
    and headers are bounded in size (431) and in time, a body in time, and connections in number."""

    limits: Limits = Limits()
    cap: int = 0
    # connections accepted whose TLS handshake is not done: protocol -> (raw transport, loop time accepted); one
    # map per protocol class (`limited_protocol`), shared by its connections as uvicorn's `connections` set is
    handshaking: dict[LimitedHttpProtocol, tuple[asyncio.BaseTransport, float]] = {}

    def accepted(self, raw: asyncio.BaseTransport) -> None:
        """A TLS connection is accepted, its handshake not begun (`tls_accepting`): it counts from now."""
        self.handshaking[self] = (raw, self.loop.time())
        if len(self.connections) + len(self.handshaking) > self.cap:
            self._make_room()

    def handshake_ended(self) -> None:
        self.handshaking.pop(self, None)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        handshaken = self.handshaking.pop(self, None) is not None  # counted when accepted (TLS)
        super().connection_made(transport)
        self._in_headers = True
        self._header_bytes = 0
        self._discarding = False
        self._idle = True
        self._deadline = 0.0  # loop time by which the current phase must end; 0: none
        self._timer: asyncio.TimerHandle | None = None
        self._arm(self.limits.read_header_timeout)
        if not handshaken and len(self.connections) + len(self.handshaking) > self.cap:
            self._make_room()

    def _make_room(self) -> None:
        """At the cap the connection idle longest is closed: no request under way, headers not begun, or the TLS
        handshake not finished (idle since it was accepted). If none is idle, the new one is closed."""
        idle: list[tuple[float, Callable[[], None]]] = [
            (since, raw.close) for protocol, (raw, since) in self.handshaking.items() if protocol is not self
        ]
        # aborted, not closed: a TLS close waits (up to 30 s) for the peer's close_notify, keeping the descriptor
        # that is to make room, and an idle peer never sends it
        idle += [
            (c._idle_since, c.transport.abort)
            for c in self.connections
            if isinstance(c, LimitedHttpProtocol) and c is not self and getattr(c, "_idle", False)
        ]
        if idle:
            min(idle, key=lambda found: found[0])[1]()
        elif self in self.handshaking:
            self.handshaking[self][0].close()
        else:
            self.transport.abort()

    # One timer per connection, moved lazily: a request moves the deadline three times, and a loop timer scheduled
    # and cancelled for each was the largest cost of this class in a GET's profile.

    def _arm(self, timeout: float) -> None:
        self._idle_since = now = self.loop.time()
        self._deadline = now + timeout if timeout > 0 else 0.0
        if not self._deadline:
            return
        if self._timer is not None and self._timer.when() > self._deadline:  # an earlier deadline than the timer's
            self._timer.cancel()
            self._timer = None
        if self._timer is None:
            self._timer = self.loop.call_at(self._deadline, self._check_deadline)

    def _disarm(self) -> None:
        self._deadline = 0.0

    def _check_deadline(self) -> None:
        self._timer = None
        if not self._deadline or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline:
            self._timer = self.loop.call_at(self._deadline, self._check_deadline)
            return
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        super().data_received(data)
        if self._in_headers and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.limits.max_header_bytes + HEADER_SLACK:
                self._refuse_headers()

    def _refuse_headers(self) -> None:
        self._discarding = True
        self._disarm()
        self.transport.write(_HEADER_TOO_LARGE)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(RST_AVOIDANCE_DELAY, self.transport.close)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers = True
        self._idle = False
        self._arm(self.limits.read_header_timeout)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._header_bytes = 0
        self._arm(self.limits.read_body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_headers = True  # what comes next is the next request's
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._idle = True
        self._idle_since = self.loop.time()
        super().on_response_complete()  # arms uvicorn's keep-alive (idle) timeout

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        super().handle_websocket_upgrade()


def limited_protocol(limits: Limits) -> type[LimitedHttpProtocol]:
    """The protocol class for uvicorn's `http=`, carrying these limits."""
    fields = {"limits": limits, "cap": limits.connection_cap(), "handshaking": {}}
    return type("LimitedHttpProtocol", (LimitedHttpProtocol,), fields)


# ---- TLS: connections counted from their accept ----------------------------------------------------------------


def tls_accepting(
    make_protocol: Callable[..., asyncio.Protocol], context: ssl.SSLContext, handshake_timeout: float
) -> Callable[..., asyncio.Protocol]:
    """A protocol factory for a server created without `ssl=` that does the TLS itself, with the event loop's own
    SSL protocol (uvloop's, or asyncio's): so that a connection is seen, and counted against the cap, when it is
    accepted rather than once its handshake is done, and one that never finishes it can be shed. (The loop's
    `create_server(ssl=...)` gives the application protocol nothing before the handshake.)"""

    def make(*args: Any, **kwargs: Any) -> asyncio.Protocol:
        app = make_protocol(*args, **kwargs)
        loop = asyncio.get_running_loop()
        loop_type: Any = type(loop)
        wrapper = _handshaking_class(loop_type)(
            loop, app, context, None, server_side=True, ssl_handshake_timeout=handshake_timeout or None
        )
        wrapper.app_protocol = app
        protocol: asyncio.Protocol = wrapper
        return protocol

    return make


@functools.cache
def _handshaking_class(loop_type: type[Any]) -> type[Any]:
    base: type[Any] = asyncio.sslproto.SSLProtocol
    with contextlib.suppress(ImportError):
        import uvloop

        if issubclass(loop_type, uvloop.Loop):
            base = getattr(uvloop.loop, "SSLProtocol")  # noqa: B009 - the loop's own (Cython), not in its stubs

    def connection_made(self: Any, transport: asyncio.BaseTransport) -> None:
        if isinstance(self.app_protocol, LimitedHttpProtocol):
            self.app_protocol.accepted(transport)
        base.connection_made(self, transport)

    def connection_lost(self: Any, exc: Exception | None) -> None:
        if isinstance(self.app_protocol, LimitedHttpProtocol):
            self.app_protocol.handshake_ended()
        base.connection_lost(self, exc)

    return type(
        "HandshakingProtocol", (base,), {"connection_made": connection_made, "connection_lost": connection_lost}
    )
