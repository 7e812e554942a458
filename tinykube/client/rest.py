"""An asyncio REST client for the Kubernetes API, built on httpx, configured from a kubeconfig.

Errors come back as `tinykube.api.errors.ApiError` rebuilt from the server's `Status`, so callers handle
`NotFound` or `Conflict` exactly as the apiserver raised them.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.client.kubeconfig import Credentials, load_credentials

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


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        status = orjson.loads(response.content)
        message = status.get("message", response.text)
        reason = status.get("reason", "")
    except orjson.JSONDecodeError:
        status, message, reason = {}, response.text, ""
    if response.status_code == 409:
        cls: type[errors.ApiError] = errors.AlreadyExists if reason == "AlreadyExists" else errors.Conflict
    else:
        cls = _BY_CODE.get(response.status_code, errors.ApiError)
    raise cls(message, details=status.get("details"))


def _ssl_context(creds: Credentials) -> ssl.SSLContext | bool:
    if creds.ca_data is None:
        return False
    return ssl.create_default_context(cadata=creds.ca_data.decode())


class RestClient:
    def __init__(self, creds: Credentials) -> None:
        headers = {"Authorization": f"Bearer {creds.token}"} if creds.token else {}
        self._http = httpx.AsyncClient(
            base_url=creds.server, headers=headers, verify=_ssl_context(creds), timeout=httpx.Timeout(30.0)
        )

    @classmethod
    def from_kubeconfig(cls, path: Path, context: str | None = None) -> RestClient:
        return cls(load_credentials(path, context))

    async def close(self) -> None:
        await self._http.aclose()

    async def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", **params: Any
    ) -> Any:
        content = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if content else {}
        response = await self._http.request(method, path, content=content, params=params or None, headers=headers)
        _raise_for_status(response)
        return orjson.loads(response.content) if response.content else None

    async def get(self, resource: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", path_for(resource, namespace, name))
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

    async def delete(self, resource: ResourceInfo, namespace: str, name: str, **params: Any) -> Any:
        """DELETE; `params` are query parameters such as `gracePeriodSeconds`."""
        return await self.request("DELETE", path_for(resource, namespace, name), **params)

    async def watch(self, resource: ResourceInfo, namespace: str = "", **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Watch events as dicts; the stream ends when the server ends it (timeout) or on error."""
        params = {"watch": "true", **params}
        async with self._http.stream(
            "GET", path_for(resource, namespace), params=params, timeout=httpx.Timeout(30.0, read=None)
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for_status(response)
            async for line in response.aiter_lines():
                if line:
                    yield orjson.loads(line)
