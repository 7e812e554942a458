"""The part of the kubelet's HTTP API the apiserver uses: `GET /containerLogs/{namespace}/{pod}/{container}` (what
`kubectl logs` reaches through `pods/log`), `GET /metrics/resource` (what the metrics server scrapes), plus
`/healthz`. Plain HTTP on a loopback port; the Node advertises
it in its `tinykube.io/kubelet-endpoint` annotation.

Served by `tinykube.web` (one request per connection; a followed log is sent chunked as it grows).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

from tinykube.api import errors
from tinykube.api.meta import parse_time
from tinykube.web import Body, Query, serve_http

log = logging.getLogger(__name__)

ENDPOINT_ANNOTATION = "tinykube.io/kubelet-endpoint"
Logs = Callable[..., AsyncIterator[bytes]]  # Runtime.logs, for the pod key "<namespace>/<name>"


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() in ("true", "1")


def _number(query: dict[str, list[str]], name: str) -> int | None:
    value = query.get(name, [""])[-1]
    if not value:
        return None
    if not value.lstrip("-").isdigit():
        raise errors.BadRequest(f"invalid {name}: {value!r}")
    return int(value)


def log_options(query: dict[str, list[str]]) -> dict[str, object]:
    """The query parameters of `containerLogs` as keyword arguments of `Runtime.logs`."""
    since = None
    if seconds := _number(query, "sinceSeconds"):
        since = datetime.now(UTC) - timedelta(seconds=seconds)
    elif text := query.get("sinceTime", [""])[-1]:
        since = parse_time(text)
        if since is None:
            raise errors.BadRequest(f"invalid sinceTime: {text!r}")
    return {
        "follow": _flag(query, "follow"),
        "tail_lines": _number(query, "tailLines"),
        "timestamps": _flag(query, "timestamps"),
        "previous": _flag(query, "previous"),
        "since_time": since,
        "limit_bytes": _number(query, "limitBytes"),
    }


class KubeletServer:
    def __init__(self, logs: Logs, resource_metrics: Callable[[], bytes]) -> None:
        self.logs = logs
        self.resource_metrics = resource_metrics
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await serve_http(None, self._answer, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    def _answer(self, path: str, query: Query) -> tuple[int, str, Body]:
        text = "text/plain"
        parts = path.strip("/").split("/")
        if path == "/healthz":
            return 200, text, b"ok"
        if path == "/metrics/resource":
            return 200, "text/plain; version=0.0.4; charset=utf-8", self.resource_metrics()
        if len(parts) != 4 or parts[0] != "containerLogs":
            return 404, text, b"404 page not found\n"
        _, namespace, pod, container = parts
        try:
            return 200, text, self.logs(f"{namespace}/{pod}", container, **log_options(query))
        except errors.ApiError as err:
            return err.code, text, str(err).encode()
