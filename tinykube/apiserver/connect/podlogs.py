"""`pods/log`: find the pod's container and node, then stream the node agent's kubelet-style
`/containerLogs/{ns}/{pod}/{container}` response through, as upstream's `LogREST.Get` (pkg/registry/core/pod/rest/
log.go), `LogLocation` (pkg/registry/core/pod/strategy.go) and `LocationStreamer` do.

Upstream finds the kubelet from the Node's address and `status.daemonEndpoints`; tinykube's node agent serves plain
HTTP on a loopback port it advertises in the `tinykube.io/kubelet-endpoint` annotation, and that annotation is the
only address the apiserver ever connects to.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams
from starlette.responses import Response, StreamingResponse

from tinykube.api import errors
from tinykube.api.errors import FieldError, forbidden, invalid
from tinykube.api.resources import builtin
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest
from tinykube.apiserver.registry.generic import UnknownError

if TYPE_CHECKING:
    import httpx

KUBELET_ENDPOINT_ANNOTATION = "tinykube.io/kubelet-endpoint"
PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
_MAX_ERROR_BODY = 50000  # upstream reads at most this much of a failed kubelet response
_ENDPOINT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9.-]+)):(?P<port>[0-9]{1,5})$")
_BOOLS = ("follow", "previous", "timestamps", "insecureSkipTLSVerifyBackend")
_INTS = ("sinceSeconds", "tailLines", "limitBytes")


def log_options(params: QueryParams) -> dict[str, Any]:
    """PodLogOptions from the query, converted as upstream's parameter codec does."""
    opts: dict[str, Any] = {"container": params.get("container", "")}
    for name in _BOOLS:
        value = params.get(name)  # only "false"/"0" are false once the parameter is there, even an empty value
        opts[name] = value is not None and value != "0" and value.lower() != "false"
    for name in _INTS:
        value = params.get(name)
        if value is None:
            continue
        try:
            opts[name] = int(value, 10)
        except ValueError:
            raise errors.BadRequest(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None
    since_time = params.get("sinceTime")
    if since_time is not None:
        try:
            opts["sinceTime"] = datetime.fromisoformat(since_time.replace("Z", "+00:00"))
        except ValueError:
            raise errors.BadRequest(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00"') from None
        if opts["sinceTime"].tzinfo is None:  # RFC 3339 requires an offset
            raise errors.BadRequest(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00"')
    return opts


def validate_log_options(opts: dict[str, Any]) -> list[FieldError]:
    """Upstream's ValidatePodLogOptions."""
    errs: list[FieldError] = []
    if opts.get("tailLines") is not None and opts["tailLines"] < 0:
        errs.append(invalid("tailLines", opts["tailLines"], "must be greater than or equal to 0"))
    if opts.get("limitBytes") is not None and opts["limitBytes"] < 1:
        errs.append(invalid("limitBytes", opts["limitBytes"], "must be greater than 0"))
    if "sinceSeconds" in opts and "sinceTime" in opts:
        errs.append(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif opts.get("sinceSeconds") is not None and opts["sinceSeconds"] < 1:
        errs.append(invalid("sinceSeconds", opts["sinceSeconds"], "must be greater than 0"))
    return errs


def pod_container(pod: dict[str, Any], wanted: str) -> str:
    """Upstream's validateContainer: the only container by default; any container of the pod by name."""
    spec, name = pod.get("spec") or {}, pod["metadata"]["name"]
    containers = spec.get("containers") or []
    every = [
        c.get("name", "")
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
    ]
    if not wanted:
        if len(containers) == 1:
            return str(containers[0].get("name", ""))
        if not containers:
            raise errors.BadRequest(f"a container name must be specified for pod {name}")
        raise errors.BadRequest(
            f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]"
        )
    if wanted not in every:
        raise errors.BadRequest(f"container {wanted} is not valid for pod {name}")
    return wanted


def _kubelet_base(node: dict[str, Any]) -> str:
    host, port = kubelet_address(node)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def kubelet_address(node: dict[str, Any]) -> tuple[str, int]:
    """Where the node's agent serves the kubelet's API (its annotation); UnknownError when it does not say."""
    name = node["metadata"]["name"]
    endpoint = (node["metadata"].get("annotations") or {}).get(KUBELET_ENDPOINT_ANNOTATION)
    if not endpoint:
        # upstream's counterpart (a node without a usable address) is also a plain error: a 500 without a reason
        raise UnknownError(
            f'node "{name}" has no kubelet endpoint: its {KUBELET_ENDPOINT_ANNOTATION} annotation is not set'
        )
    match = _ENDPOINT.match(endpoint)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise UnknownError(
            f'node "{name}" has an invalid {KUBELET_ENDPOINT_ANNOTATION} annotation {json.dumps(endpoint)}: '
            "want <host>:<port>"
        )
    return match["v6"] or match["host"], int(match["port"])


def _query(opts: dict[str, Any]) -> str:
    """What upstream forwards to the kubelet, encoded as Go's url.Values (keys sorted)."""
    params: dict[str, str] = {}
    for name in ("follow", "previous", "timestamps"):
        if opts[name]:
            params[name] = "true"
    for name in _INTS:
        if opts.get(name) is not None:
            params[name] = str(opts[name])
    if "sinceTime" in opts:
        params["sinceTime"] = opts["sinceTime"].isoformat().replace("+00:00", "Z")
    return urlencode(sorted(params.items()))


def _kubelet_error(status: int, body: str, pod: str) -> errors.ApiError:
    """Upstream's GenericHttpResponseChecker for `pods/log`: the kubelet's 400 and 500 carry its text."""
    if status == 500:
        return errors.internal_error(body)
    if status == 400:
        return errors.BadRequest(body)
    reason, message = {
        404: ("NotFound", "the server could not find the requested resource"),
        403: ("Forbidden", body),
        503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    }.get(status, ("", f"the server responded with the status code {status} but did not return more information"))
    if status >= 500 and status != 503:
        reason = "InternalError"
        message = f"an error on the server ({json.dumps(body)}) has prevented the request from succeeding"
    # upstream formats "<message> (<verb> <resource> <name>)" with an empty verb, hence the double space
    details = {"name": pod, "kind": "pods/log"}
    return UnknownError(f"{message} ( pods/log {pod})", code=status, reason=reason, details=details)


class PodLogs:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        """Made on the first log request: httpx and its client cost ~0.2 s, a tenth of the cluster's start-up."""
        if self._client is None:
            import httpx

            # no read timeout: a followed log is quiet for as long as the container is; plain HTTP, so no CA bundle
            timeout = httpx.Timeout(10.0, read=None)
            self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=False)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def get(self, namespace: str, name: str, params: QueryParams) -> Response:
        opts = log_options(params)
        errs = validate_log_options(opts)
        if errs:
            raise errors.invalid_object("PodLogOptions", name, errs)
        pod = self.registry.get(RegistryRequest(PODS, namespace, name)).obj
        container = pod_container(pod, opts["container"])
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return Response(status_code=204)  # upstream: no location, no content
        node = self.registry.get(RegistryRequest(NODES, "", node_name)).obj
        url = f"{_kubelet_base(node)}/containerLogs/{namespace}/{name}/{container}"
        query = _query(opts)
        if query:
            url += "?" + query
        import httpx

        try:
            upstream = await self.client.send(self.client.build_request("GET", url), stream=True)
        except httpx.HTTPError as err:
            raise UnknownError(f'Get "{url}": {_transport_error(err)}') from None
        if upstream.is_redirect:
            await upstream.aclose()
            raise UnknownError(f'Get "{upstream.headers.get("location", "")}": redirects forbidden')
        if not 200 <= upstream.status_code <= 206:
            try:
                body = (await _read_some(upstream)).decode(errors="replace")
            finally:
                await upstream.aclose()
            raise _kubelet_error(upstream.status_code, body, name)
        return StreamingResponse(_relay(upstream), media_type="text/plain")


def _transport_error(err: httpx.HTTPError) -> str:
    """The failure as Go's dialer words it (`dial tcp 127.0.0.1:1: connect: connection refused`) where the cause
    is a socket error; httpx's own text otherwise."""
    import httpx

    cause: BaseException | None = err
    while cause is not None and not (isinstance(cause, OSError) and cause.errno):
        cause = cause.__cause__ or cause.__context__
    if isinstance(err, httpx.ConnectError) and isinstance(cause, OSError) and cause.errno:
        url = err.request.url
        return f"dial tcp {url.host}:{url.port}: connect: {os.strerror(cause.errno).lower()}"
    return str(err) or type(err).__name__


async def _read_some(response: httpx.Response) -> bytes:
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= _MAX_ERROR_BODY:
            break
    return body[:_MAX_ERROR_BODY]


async def _relay(upstream: httpx.Response) -> AsyncIterator[bytes]:
    """The kubelet's body as it arrives (so a followed log is live); closing it when the client goes away
    (the response task is cancelled) ends the kubelet's stream too."""
    import httpx

    try:
        async for chunk in upstream.aiter_bytes():
            yield chunk
    except httpx.HTTPError:
        return  # the kubelet went away mid-stream: the log ends there, as upstream's copy loop does
    finally:
        await upstream.aclose()
