"""Prometheus metrics with upstream names (`apiserver_request_total`, `apiserver_storage_objects`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from tinykube.api.errors import ApiError

Endpoint = Callable[[Request], Awaitable[Response]]
RESOURCE_KEY = "tinykube.resource"  # set in the ASGI scope by the resource handler once it has parsed the path


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, int]] = Counter()

    def counting(self, endpoint: Endpoint) -> Endpoint:
        """Wrap a resource endpoint so every request is counted by verb, resource and code."""

        async def counted(request: Request) -> Response:
            try:
                response = await endpoint(request)
            except ApiError as err:
                self.requests[(request.method, request.scope.get(RESOURCE_KEY, ""), err.code)] += 1
                raise
            self.requests[(request.method, request.scope.get(RESOURCE_KEY, ""), response.status_code)] += 1
            return response

        return counted

    def render(self, storage_objects: dict[str, int]) -> str:
        lines = [
            "# HELP apiserver_request_total Counter of apiserver requests.",
            "# TYPE apiserver_request_total counter",
        ]
        for (verb, resource, code), n in sorted(self.requests.items()):
            lines.append(f'apiserver_request_total{{verb="{verb}",resource="{resource}",code="{code}"}} {n}')
        lines += [
            "# HELP apiserver_storage_objects Number of stored objects per resource.",
            "# TYPE apiserver_storage_objects gauge",
        ]
        lines += [f'apiserver_storage_objects{{resource="{r}"}} {n}' for r, n in sorted(storage_objects.items())]
        return "\n".join(lines) + "\n"
