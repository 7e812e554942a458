"""The proxy subresources, as upstream's: `pods/proxy`, `services/proxy` and `nodes/proxy`.

    /api/v1/namespaces/{ns}/pods/[scheme:]{name}[:port]/proxy[/path]
    /api/v1/namespaces/{ns}/services/[scheme:]{name}[:port name or number]/proxy[/path]
    /api/v1/nodes/[scheme:]{name}[:port]/proxy[/path]

Where each goes is found as upstream's `ResourceLocation`s find it (pkg/registry/core/{pod,service,node}): a pod's
IP and its first declared container port by default; a ready endpoint of the service port (by name, or by number
through the Service's ports), only one that is a pod of the namespace holding that IP; a node's kubelet (here the
node agent's HTTP server, its `tinykube.io/kubelet-endpoint` annotation) or, for another port, its InternalIP. The
request is then relayed as upstream's UpgradeAwareHandler does: any method, the query, the headers less the
client's credentials and hop-by-hop ones, the body streamed both ways; `Location` headers rewritten under the
proxy path, CORS headers dropped; a failed connection is a 503 `error trying to reach service: dial tcp …`.

Connections are made by a dialer (`dialer.py`): with the netns dataplane from inside the sandbox, with the
simulated one to loopback only (pod IPs are fictitious there: pod and service proxying answer 503 saying so).
There is no authorization here: the authorization layer in front of every handler sees `…/proxy/…` as the
`proxy` subresource. Upgrade requests (WebSocket, SPDY) are not relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import posixpath
import random
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import h11
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.apiserver.connect.dialer import DialError, LoopbackDialer
from tinykube.apiserver.connect.podlogs import kubelet_address
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest

PODS, SERVICES, NODES = builtin("", "v1", "pods"), builtin("", "v1", "services"), builtin("", "v1", "nodes")
SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]  # upstream's proxyMethods
_SCHEMES = ("", "http", "https")
_GO_INT = re.compile(r"^[+-]?[0-9]+$")  # what strconv.ParseInt takes
# Hop-by-hop headers (RFC 9110 7.6.1, as Go's ReverseProxy lists them), never relayed either way.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# The apiserver's authentication removes the client's credentials before any handler (upstream's
# WithAuthentication and WithImpersonation): a backend never sees them.
_CREDENTIALS = ("authorization", "impersonate-")
_CORS = frozenset(
    {
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-allow-origin",
    }
)
_REFRAMED = ("expect", "content-length")  # the body is framed afresh (and a 100-continue is uvicorn's to answer)
_READ = 64 * 1024

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Location:
    scheme: str  # http or https
    host: str
    port: int

    @property
    def hostport(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def split_scheme_name_port(id_: str) -> tuple[str, str, str] | None:
    """Upstream's SplitSchemeNamePort: `name`, `name:port` or `scheme:name:port`; None if invalid."""
    parts = id_.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in _SCHEMES:
        return None
    return scheme, name, port


def proxyable(ip: str) -> bool:
    """Upstream's IsProxyableIP: a global unicast address (Go's sense: not unspecified, loopback, link-local,
    multicast or the broadcast address)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if address.is_unspecified or address.is_loopback or address.is_link_local or address.is_multicast:
        return False
    return str(address) != "255.255.255.255"


def _port(value: str, what: str, id_: str) -> int:
    if value.isdigit() and 0 < int(value) < 65536:
        return int(value)
    raise errors.BadRequest(f'invalid {what} request "{id_}": port "{value}" is not a number between 1 and 65535')


def backend_path(subpath: str, trailing_slash: bool) -> str:
    """The backend's path: the request's path below `/proxy` (upstream's PodProxyOptions.Path), joined as
    net.JoinPreservingTrailingSlash joins it (cleaned, the trailing slash kept)."""
    if trailing_slash and not subpath.endswith("/"):
        subpath += "/"
    if not subpath:
        return ""
    if not subpath.startswith("/"):
        subpath = "/" + subpath
    cleaned = posixpath.normpath(re.sub(r"^/+", "/", subpath))
    if subpath.endswith("/") and not cleaned.endswith("/"):
        cleaned += "/"
    return cleaned


def rewrite_location(value: str, backend: str, request_host: str, prefix: str) -> str:
    """Upstream's Transport.rewriteURL, with the empty scheme and host a Go server's request URL has: a redirect
    to the backend's own host (or an absolute path) is put under the proxy path."""
    url = urlsplit(value)
    if url.netloc and url.netloc not in (backend, request_host):
        return value
    if not url.path.startswith("/"):
        return value
    scheme, netloc = url.scheme, url.netloc
    if url.netloc != request_host:
        scheme = netloc = ""
    path = url.path
    if not path.startswith(prefix):
        joined = posixpath.normpath(prefix + "/" + path)
        path = joined + "/" if path.endswith("/") and not joined.endswith("/") else joined
    return urlunsplit((scheme, netloc, path, url.query, url.fragment))


def _reach_error(message: str) -> errors.ServiceUnavailable:
    return errors.ServiceUnavailable(f"error trying to reach service: {message}")


def _insecure_tls() -> ssl.SSLContext:
    """As upstream's proxy transport: TLS to a pod or node is not verified (there is nothing to verify it with)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class ProxyHandler:
    """The three proxy subresources; `dialer` decides what may be reached and from where (set by `tinykube up`
    for the netns dataplane)."""

    def __init__(self, registry: Registry, dialer: LoopbackDialer | None = None) -> None:
        self.registry = registry
        self.dialer = dialer or LoopbackDialer()

    def routes(self) -> list[tuple[str, Endpoint]]:
        """(path, endpoint) for Starlette, ahead of the generic `/api/...` route."""
        pods = "/api/v1/namespaces/{namespace}/pods/{id}/proxy"
        services = "/api/v1/namespaces/{namespace}/services/{id}/proxy"
        nodes = "/api/v1/nodes/{id}/proxy"
        found: list[tuple[str, Endpoint]] = []
        for path, endpoint in ((pods, self.pod), (services, self.service), (nodes, self.node)):
            found += [(path, endpoint), (path + "/{path:path}", endpoint)]
        return found

    # Locations

    async def pod(self, request: Request) -> Response:
        namespace, id_ = request.path_params["namespace"], request.path_params["id"]
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.BadRequest(f'invalid pod request "{id_}"')
        scheme, name, port = parsed
        pod = self.registry.get(RegistryRequest(PODS, namespace, name)).obj
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not port:  # the first port any container declares
            declared = (p for c in spec.get("containers") or [] for p in (c.get("ports") or [])[:1])
            first = next(declared, None)
            port = str(first.get("containerPort", "")) if first else ""
        ips = [entry.get("ip", "") for entry in status.get("podIPs") or []] or [status.get("podIP", "")]
        ip = ips[0] or ""
        if not proxyable(ip):
            raise errors.BadRequest("address not allowed")
        scheme = scheme or "http"
        number = _port(port, "pod", id_) if port else (443 if scheme == "https" else 80)
        prefix = f"/api/v1/namespaces/{namespace}/pods/{id_}/proxy"
        return await self._forward(request, Location(scheme, ip, number), prefix)

    async def service(self, request: Request) -> Response:
        namespace, id_ = request.path_params["namespace"], request.path_params["id"]
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.BadRequest(f'invalid service request "{id_}"')
        scheme, name, port = parsed
        svc = self.registry.get(RegistryRequest(SERVICES, namespace, name)).obj
        if _GO_INT.match(port):  # a port number stands for the name of the Service's port with that number
            number = int(port)
            named = [p for p in (svc.get("spec") or {}).get("ports") or [] if p.get("port") == number]
            if not named:
                raise errors.ServiceUnavailable(f'no service port {number} found for service "{name}"')
            port = str(named[0].get("name") or "")
        location = self._endpoint(namespace, name, id_, scheme or "http", port)
        prefix = f"/api/v1/namespaces/{namespace}/services/{id_}/proxy"
        return await self._forward(request, location, prefix)

    def _endpoint(self, namespace: str, service: str, id_: str, scheme: str, port_name: str) -> Location:
        """A ready endpoint of the port from the Service's EndpointSlices, tried from a random slice and address
        on, and only an address that is the IP of a pod of the namespace its targetRef names (upstream's
        isValidAddress: the apiserver proxies to pods, not to whatever a selectorless Service lists)."""
        slices = [
            cached.obj
            for _, cached in self.registry.cache(SLICES).items(namespace)
            if cached.labels.get(SERVICE_NAME_LABEL) == service and cached.obj.get("addressType") != "FQDN"
        ]
        if not any(s.get("endpoints") for s in slices):
            raise errors.ServiceUnavailable(f'no endpoints available for service "{service}"')
        random.shuffle(slices)
        for endpoint_slice in slices:
            ports = [p for p in endpoint_slice.get("ports") or [] if (p.get("name") or "") == port_name]
            if not ports or not ports[0].get("port"):
                continue
            endpoints = [
                e
                for e in endpoint_slice.get("endpoints") or []
                if (e.get("conditions") or {}).get("ready") is not False
            ]
            random.shuffle(endpoints)
            for endpoint in endpoints:
                address = (endpoint.get("addresses") or [""])[0]
                if self._is_pod_address(namespace, endpoint.get("targetRef") or {}, address):
                    return Location(scheme, address, int(ports[0]["port"]))
        raise errors.ServiceUnavailable(f'no endpoints available for service "{id_}"')

    def _is_pod_address(self, namespace: str, ref: dict[str, Any], address: str) -> bool:
        if ref.get("kind", "Pod") != "Pod" or ref.get("namespace") != namespace or not ref.get("name"):
            return False
        cached = self.registry.cache(PODS).get(f"{namespace}/{ref['name']}")
        if cached is None:
            return False
        status = cached.obj.get("status") or {}
        ips = {entry.get("ip") for entry in status.get("podIPs") or []} | {status.get("podIP")}
        return address in ips and proxyable(address)

    async def node(self, request: Request) -> Response:
        id_ = request.path_params["id"]
        parsed = split_scheme_name_port(id_)
        if parsed is None:
            raise errors.BadRequest(f'invalid node request "{id_}"')
        scheme, name, port = parsed
        node = self.registry.get(RegistryRequest(NODES, "", name)).obj
        prefix = f"/api/v1/nodes/{id_}/proxy"
        host, kubelet_port = kubelet_address(node)
        if not port or port == str(kubelet_port):  # the kubelet: the node agent's plain-HTTP server
            return await self._forward(request, Location("http", host, kubelet_port), prefix)
        addresses = (node.get("status") or {}).get("addresses") or []
        ip = next((a.get("address", "") for a in addresses if a.get("type") == "InternalIP"), "")
        if not proxyable(ip):
            raise errors.BadRequest("address not allowed")
        return await self._forward(request, Location(scheme or "http", ip, _port(port, "node", id_)), prefix)

    # Relaying

    async def _forward(self, request: Request, location: Location, prefix: str) -> Response:
        path = request.scope["path"]
        subpath = request.path_params.get("path")
        if subpath is None:  # `…/proxy` itself: the path may come as a query parameter (PodProxyOptions.path)
            subpath = request.query_params.get("path", "")
        target_path = backend_path(subpath, path.endswith("/"))
        query = request.scope.get("query_string", b"").decode("latin-1")
        if not target_path:  # upstream redirects an empty path to the one ending in "/" (kubernetes#4958)
            return RedirectResponse(path + "/" + (f"?{query}" if query else ""), status_code=301)
        try:
            sock = await self.dialer.dial(location.host, location.port)
        except DialError as err:
            raise _reach_error(str(err)) from None
        return await _exchange(request, sock, location, target_path, query, prefix)


def _request_headers(request: Request, prefix: str, target_path: str) -> list[tuple[bytes, bytes]]:
    raw: list[tuple[bytes, bytes]] = request.scope["headers"]
    named = {v.strip().lower() for k, value in raw if k == b"connection" for v in value.decode("latin-1").split(",")}
    headers = []
    forwarded_for = ""
    for key, value in raw:
        name = key.decode("latin-1").lower()
        if (
            name in _HOP_BY_HOP
            or name in named
            or name.startswith(_CREDENTIALS)
            or name in ("expect", "content-length")
        ):
            continue
        if name == "x-forwarded-for":
            forwarded_for = value.decode("latin-1")
            continue
        if name.startswith("x-forwarded-"):
            continue
        headers.append((key, value))
    client = request.client.host if request.client else ""
    if client:
        forwarded_for = f"{forwarded_for}, {client}" if forwarded_for else client
    if forwarded_for:
        headers.append((b"X-Forwarded-For", forwarded_for.encode("latin-1")))
    headers.append((b"X-Forwarded-Uri", (prefix + quote(target_path, safe="/:@!$&'()*+,;=~")).encode("latin-1")))
    if not any(k.lower() == b"host" for k, _ in headers):
        headers.append((b"Host", b"localhost"))
    # The body is framed afresh: with its length when the client gave one, chunked when it streamed one.
    length = request.headers.get("content-length")
    if length is not None:
        headers.append((b"Content-Length", length.encode("latin-1")))
    elif "transfer-encoding" in request.headers:
        headers.append((b"Transfer-Encoding", b"chunked"))
    return headers


def _response_headers(
    raw: list[tuple[bytes, bytes]], location: Location, request_host: str, prefix: str
) -> list[tuple[bytes, bytes]]:
    named = {v.strip().lower() for k, value in raw if k == b"connection" for v in value.decode("latin-1").split(",")}
    out = []
    for key, value in raw:
        name = key.decode("latin-1").lower()
        if name in _HOP_BY_HOP or name in named or name in _CORS or name == "date":  # uvicorn writes its own Date
            continue
        if name == "location":
            value = rewrite_location(value.decode("latin-1"), location.hostport, request_host, prefix).encode("latin-1")
        out.append((name.encode("latin-1"), value))
    return out


async def _exchange(
    request: Request, sock: socket.socket, location: Location, target_path: str, query: str, prefix: str
) -> Response:
    """One HTTP/1.1 exchange with the backend over the connected socket: the request (its body streamed), then
    the response head; the response body is streamed to the client as it comes."""
    context = _insecure_tls() if location.scheme == "https" else None
    try:
        reader, writer = await asyncio.open_connection(
            sock=sock, ssl=context, server_hostname=location.host if context else None
        )
    except (OSError, ssl.SSLError) as err:
        sock.close()
        raise _reach_error(str(err) or type(err).__name__) from None
    conn = h11.Connection(h11.CLIENT)
    target = quote(target_path, safe="/:@!$&'()*+,;=~") + (f"?{query}" if query else "")
    headers = _request_headers(request, prefix, target_path)
    has_body = request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers
    try:
        writer.write(conn.send(h11.Request(method=request.method, target=target.encode("latin-1"), headers=headers)))
        if has_body:
            async for chunk in request.stream():
                if chunk:
                    writer.write(conn.send(h11.Data(data=chunk)))
                    await writer.drain()
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()
        head = await _response_head(conn, reader)
    except (OSError, h11.ProtocolError, ssl.SSLError) as err:
        writer.close()
        raise _reach_error(str(err) or type(err).__name__) from None
    except BaseException:
        writer.close()
        raise
    request_host = request.headers.get("host", "")
    response = StreamingResponse(_body(conn, reader, writer), status_code=head.status_code)
    response.raw_headers = _response_headers(list(head.headers), location, request_host, prefix)
    return response


async def _response_head(conn: h11.Connection, reader: asyncio.StreamReader) -> h11.Response:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(_READ)
            if not data and conn.their_state is h11.SEND_RESPONSE:
                raise h11.RemoteProtocolError("EOF")  # closed before answering, as Go's transport words it
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Response):
            return event
        if isinstance(event, h11.InformationalResponse):
            continue
        raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} from the backend")


async def _body(
    conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> AsyncIterator[bytes]:
    """The backend's body as it arrives; a backend going away mid-body ends it (as upstream's copy loop does), and
    the client going away closes the backend connection."""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(_READ))
            elif isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return
    except (OSError, h11.ProtocolError):
        return
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1)
