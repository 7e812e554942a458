"""An asyncio REST client for the Kubernetes API, built on aiohttp, configured from a kubeconfig.

Errors come back as `tinykube.api.errors.ApiError` rebuilt from the server's `Status`, so callers handle
`NotFound` or `Conflict` exactly as the apiserver raised them; a server that cannot be reached or a connection that
breaks raises a `TransportError`.

aiohttp rather than httpx: a controller's cold start is thousands of small requests, and httpx (its connection
pool, anyio layers and h11) cost about 1 ms of CPU per request here against 0.2 ms for aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import orjson

from tinykube import __version__
from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.client.kubeconfig import Credentials, load_credentials
from tinykube.gcpause import gc_paused

if TYPE_CHECKING:
    import aiohttp

# client-go's: a 429 with a Retry-After (the apiserver's in-flight limits) is sent again after that many seconds,
# up to 10 times, before its error is returned
MAX_RETRIES = 10
# No total deadline: a limit on connecting (pool wait included) and on each wait for data, as httpx's 30 s had.
CONNECT_TIMEOUT = READ_TIMEOUT = 30.0


class TransportError(Exception):
    """The apiserver could not be reached or did not answer: refused, broken or closed connections, timeouts."""


_BY_CODE: dict[int, type[errors.ApiError]] = {
    cls.code: cls
    for cls in (
        errors.BadRequest,
        errors.Unauthorized,
        errors.Forbidden,
        errors.NotFound,
        errors.MethodNotAllowed,
        errors.Expired,
        errors.Invalid,
        errors.TooManyRequests,
        errors.InternalError,
        errors.ServiceUnavailable,
    )
}


PATCH_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}


def path_for(resource: ResourceInfo, namespace: str = "", name: str = "", subresource: str = "") -> str:
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{resource.plural}"
    if name:
        base += f"/{name}"
    if subresource:
        base += f"/{subresource}"
    return base


def _raise_for_status(status_code: int, content: bytes) -> None:
    if status_code < 400:
        return
    text = content.decode(errors="replace")
    try:
        status = orjson.loads(content)
        message = status.get("message", text)
        reason = status.get("reason", "")
    except orjson.JSONDecodeError:
        status, message, reason = {}, text, ""
    if status_code == 409:
        cls: type[errors.ApiError] = errors.AlreadyExists if reason == "AlreadyExists" else errors.Conflict
    else:
        cls = _BY_CODE.get(status_code, errors.ApiError)
    raise cls(message, details=status.get("details"))


def _loads(payload: bytes) -> Any:
    """JSON decoded with the cyclic GC paused. Decoding makes no reference cycles, yet the millions of containers
    of a big list (100,000 pods) would trigger collections that each rescan the growing heap: 3-5x slower."""
    with gc_paused():
        return orjson.loads(payload)


def _query(params: dict[str, Any]) -> dict[str, str] | None:
    """Query parameters as strings, booleans as "true"/"false" (aiohttp refuses bools)."""
    if not params:
        return None
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in params.items()}


def _ssl_context(creds: Credentials) -> ssl.SSLContext | bool:
    if creds.ca_data is None:
        return False
    return ssl.create_default_context(cadata=creds.ca_data.decode())


# As client-go's default (`<binary>/<version> (<os>/<arch>) kubernetes/<commit>`): the apiserver names the field
# manager of a write after the product before the first `/` (managedFields show `manager: tinykube`).
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}
USER_AGENT = f"tinykube/v{__version__} ({sys.platform}/{_GOARCH.get(platform.machine(), platform.machine())})"


class Answer(NamedTuple):
    status: int
    body: bytes
    retry_after: float | None = None  # seconds, from a `Retry-After` header of whole seconds


def retry_after(value: str | bytes | None) -> float | None:
    """A `Retry-After` of whole seconds, as client-go reads it (a date, or anything else, is none)."""
    if value is None:
        return None
    try:
        seconds = int(value)
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None


class HttpTransport:
    """Requests over HTTP(S) with aiohttp: the way to any apiserver. aiohttp is imported when the first session is
    made, not with this module: `up`'s components call their apiserver in process and never need it, and it is
    ~10 MB of an idle `up`."""

    def __init__(self, creds: Credentials) -> None:
        self._server = creds.server.rstrip("/")
        self._headers = {"Authorization": f"Bearer {creds.token}"} if creds.token else {}
        self._headers["User-Agent"] = USER_AGENT
        self._ssl = _ssl_context(creds)
        self._session: aiohttp.ClientSession | None = None  # made on first use: it must belong to the running loop
        # Watches hold a connection each for as long as they run (client-go multiplexes them over HTTP/2): they get
        # a pool of their own without a cap, so that many watches (50 node agents in one process) never leave the
        # requests' pool of 100 without a free connection.
        self._watch_session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self._new_session(limit=100)  # aiohttp's default
        return self._session

    def _watch_http(self) -> aiohttp.ClientSession:
        if self._watch_session is None:
            self._watch_session = self._new_session(limit=0)  # no cap
        return self._watch_session

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        import aiohttp

        connector = aiohttp.TCPConnector(ssl=self._ssl, limit=limit)
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT)
        return aiohttp.ClientSession(headers=self._headers, connector=connector, timeout=timeout)

    async def close(self) -> None:
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    async def call(
        self, method: str, path: str, query: dict[str, str] | None, content: bytes | None, content_type: str
    ) -> Answer:
        import aiohttp

        headers = {"Content-Type": content_type} if content else None
        try:
            async with self._http().request(
                method, self._server + path, data=content, params=query, headers=headers
            ) as response:
                body = await response.read()
                return Answer(response.status, body, retry_after(response.headers.get("Retry-After")))
        except aiohttp.ClientError as err:
            raise TransportError(_describe(err)) from err

    @contextlib.asynccontextmanager
    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[tuple[int, AsyncIterator[bytes]]]:
        import aiohttp

        url = self._server + path
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_read=None)  # a watch waits
        try:  # the body's failures too: they surface in the caller's `async with` and pass through this `yield`
            async with self._watch_http().get(url, params=query, timeout=timeout) as response:
                yield response.status, response.content.iter_any()
        except aiohttp.ClientError as err:
            raise TransportError(_describe(err)) from err


def _describe(err: Exception) -> str:
    return str(err) or type(err).__name__


StreamChunk = bytes | list[dict[str, Any]]


class Transport(Protocol):
    """How a `RestClient` reaches its apiserver: over HTTP (`HttpTransport`), or in this process
    (`tinykube.client.asgi.AsgiTransport`). Both raise `TransportError` when the apiserver cannot answer."""

    async def call(
        self, method: str, path: str, query: dict[str, str] | None, content: bytes | None, content_type: str
    ) -> Answer:
        """The status, body and `Retry-After` of one request."""
        ...

    def stream(
        self, path: str, query: dict[str, str]
    ) -> contextlib.AbstractAsyncContextManager[tuple[int, AsyncIterator[StreamChunk]]]:
        """A GET whose body is read as it comes: the status and the body's chunks (a watch's events already
        decoded, where the transport is in the apiserver's process: `tinykube.api.inprocess`)."""
        ...

    async def close(self) -> None: ...


class RestClient:
    def __init__(self, creds: Credentials, transport: Transport | None = None) -> None:
        self.ca_data = creds.ca_data  # the cluster's CA (PEM) this client trusts; None for plain HTTP
        self.transport: Transport = transport or HttpTransport(creds)

    @classmethod
    def from_kubeconfig(cls, path: Path, context: str | None = None) -> RestClient:
        return cls(load_credentials(path, context))

    async def close(self) -> None:
        await self.transport.close()

    async def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", **params: Any
    ) -> Any:
        content = orjson.dumps(body) if body is not None else None
        query = _query(params)
        answer = await self.transport.call(method, path, query, content, content_type)
        for _retry in range(MAX_RETRIES):
            if answer.status != 429 or answer.retry_after is None:
                break
            await asyncio.sleep(answer.retry_after)  # refused before any work was done: safe to send again
            answer = await self.transport.call(method, path, query, content, content_type)
        _raise_for_status(answer.status, answer.body)
        return _loads(answer.body) if answer.body else None

    async def get(self, resource: ResourceInfo, namespace: str, name: str, **params: Any) -> dict[str, Any]:
        """GET one object; `params` such as `resourceVersion="0"` (whatever the apiserver's cache has)."""
        result: dict[str, Any] = await self.request("GET", path_for(resource, namespace, name), **params)
        return result

    async def list(self, resource: ResourceInfo, namespace: str = "", **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", path_for(resource, namespace), **params)
        return result

    async def create(
        self, resource: ResourceInfo, namespace: str, obj: dict[str, Any], *, name: str = "", subresource: str = ""
    ) -> dict[str, Any]:
        """POST to the collection, or to an object's subresource (`binding`) when `subresource` is given."""
        result: dict[str, Any] = await self.request("POST", path_for(resource, namespace, name, subresource), obj)
        return result

    async def patch(
        self,
        resource: ResourceInfo,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        patch_type: str = "strategic",
    ) -> dict[str, Any]:
        """PATCH with a strategic merge patch (lists such as conditions merged by key), `merge` or `json`."""
        path = path_for(resource, namespace, name, subresource)
        content_type = PATCH_TYPES[patch_type]
        result: dict[str, Any] = await self.request("PATCH", path, body, content_type=content_type)
        return result

    async def update(
        self, resource: ResourceInfo, namespace: str, obj: dict[str, Any], subresource: str = ""
    ) -> dict[str, Any]:
        path = path_for(resource, namespace, obj["metadata"]["name"], subresource)
        result: dict[str, Any] = await self.request("PUT", path, obj)
        return result

    async def delete(self, resource: ResourceInfo, namespace: str, name: str, *, uid: str = "", **params: Any) -> Any:
        """DELETE; `params` are query parameters such as `gracePeriodSeconds`; `uid` a precondition (the object
        deleted must be that one, not another of its name)."""
        body = {"preconditions": {"uid": uid}} if uid else None
        return await self.request("DELETE", path_for(resource, namespace, name), body, **params)

    async def watch(self, resource: ResourceInfo, namespace: str = "", **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Watch events as dicts; the stream ends when the server ends it (timeout) or on error."""
        query = _query({"watch": "true", **params}) or {}
        async with self.transport.stream(path_for(resource, namespace), query) as (status, chunks):
            if status >= 400:
                _raise_for_status(status, b"".join([chunk async for chunk in chunks if isinstance(chunk, bytes)]))
            pending = b""  # the start of an event whose newline has not arrived yet
            async for chunk in chunks:
                if isinstance(chunk, list):  # the apiserver's own decoded objects: read-only
                    for event in chunk:
                        yield event
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
            if pending.strip():
                yield orjson.loads(pending)
