"""`pods/exec`, `pods/attach` and `pods/portforward`: checked here, then relayed to the node agent that runs the
pod (upstream's apiserver → kubelet), which speaks the streaming protocols (`tinykube.streams`).

A WebSocket (kubectl 1.32's default, the Python client's only way) arrives through `upgrade.WebSocketAsHttp` as an
HTTP request that carries the WebSocket: a WebSocket is opened to the node agent with the subprotocols the client
offered, the client's is accepted with the one the node agent chose, and messages are relayed both ways as they
are. An SPDY upgrade (kubectl's fallback) takes the client's connection over and splices it to the node agent
(`rawupgrade`). Anything else gets upstream's 400 "Upgrade request required".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.apiserver.connect.podlogs import kubelet_address, pod_container
from tinykube.apiserver.http.rawupgrade import can_take_over, relay_upgrade
from tinykube.apiserver.http.upgrade import WEBSOCKET_EXTENSION
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest
from tinykube.apiserver.registry.generic import UnknownError
from tinykube.streams.websocket import HandshakeRefused, StreamWebSocket

PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
KUBELET_PATHS = {"exec": "exec", "attach": "attach", "portforward": "portForward"}
VERBS = {"exec": "exec into", "attach": "attach to"}


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("true", "1")


class PodConnect:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def __call__(self, request: Request, namespace: str, name: str, subresource: str) -> Response:
        if request.method not in ("GET", "POST"):
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        pod = self.registry.get(RegistryRequest(PODS, namespace, name)).obj
        target = self._kubelet_target(request, pod, subresource)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            raise errors.BadRequest(f"pod {name} does not have a host assigned")
        host, port = kubelet_address(self.registry.get(RegistryRequest(NODES, "", node_name)).obj)
        websocket = (request.scope.get("extensions") or {}).get(WEBSOCKET_EXTENSION)
        if websocket is not None:
            return WebSocketRelay(host, port, target, list(request.scope.get("subprotocols", [])))
        if request.headers.get("upgrade", "").lower().startswith("spdy/") and can_take_over(request.scope):
            return RawRelay(host, port, target)
        raise errors.BadRequest("Upgrade request required")

    def _kubelet_target(self, request: Request, pod: dict[str, Any], subresource: str) -> str:
        """The node agent's path and query for this request, after upstream's checks."""
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        phase = (pod.get("status") or {}).get("phase")
        if subresource == "portforward":
            return f"/portForward/{namespace}/{name}" + (f"?{request.url.query}" if request.url.query else "")
        if phase in ("Succeeded", "Failed"):
            raise errors.BadRequest(
                f"cannot {VERBS[subresource]} a container in a completed pod; current phase is {phase}"
            )
        container = pod_container(pod, request.query_params.get("container", ""))
        params: list[tuple[str, str]] = []
        if subresource == "exec":
            command = request.query_params.getlist("command")
            if not command:
                raise errors.BadRequest("you must specify at least 1 command")
            params += [("command", c) for c in command]
        for stream in ("stdin", "stdout", "stderr", "tty"):
            if _flag(request, stream):
                params.append((stream, "true"))
        if not any(_flag(request, s) for s in ("stdin", "stdout", "stderr")):
            raise errors.BadRequest("you must specify at least one of stdin, stdout, stderr")
        path = f"/{KUBELET_PATHS[subresource]}/{namespace}/{name}/{container}"
        return f"{path}?{urlencode(params)}"


class WebSocketRelay(Response):
    """Relays the client's WebSocket to the node agent's, message for message."""

    def __init__(self, host: str, port: int, target: str, subprotocols: list[str]) -> None:
        self.host, self.port, self.target = host, port, target
        self.subprotocols = subprotocols
        self.background = None
        self.status_code = 101  # as counted in the metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            upstream = await StreamWebSocket.connect(self.host, self.port, self.target, self.subprotocols)
        except HandshakeRefused as err:
            body = err.body.decode(errors="replace").strip()
            await _answer(send, UnknownError(f"error upgrading connection: {body}", code=err.status))
            return
        except (OSError, TimeoutError) as err:
            await _answer(send, errors.internal_error(f"error dialing backend: {err}"))
            return
        exchange = scope["extensions"][WEBSOCKET_EXTENSION]
        ws_receive, ws_send = exchange.take_over()
        accept: dict[str, Any] = {"type": "websocket.accept"}
        if upstream.subprotocol:
            accept["subprotocol"] = upstream.subprotocol
        await ws_send(accept)

        async def client_to_node() -> None:
            while True:
                message = await ws_receive()
                if message["type"] == "websocket.connect":  # the handshake's, not yet taken by anyone
                    continue
                if message["type"] != "websocket.receive":
                    return
                data = message.get("bytes")
                await upstream.send(data if data is not None else message.get("text", "").encode())

        async def node_to_client() -> None:
            while (data := await upstream.recv()) is not None:
                await ws_send({"type": "websocket.send", "bytes": data})

        tasks = [asyncio.ensure_future(client_to_node()), asyncio.ensure_future(node_to_client())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await upstream.close()
            upstream.abort()
            with contextlib.suppress(Exception):
                await ws_send({"type": "websocket.close", "code": 1000})


class RawRelay(Response):
    """An SPDY upgrade: the client's connection spliced to the node agent's (after the checks above)."""

    def __init__(self, host: str, port: int, target: str) -> None:
        self.host, self.port, self.target = host, port, target
        self.background = None
        self.status_code = 101

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:  # the node agent is dialled, and its answer read, before the client's connection is taken over
            await relay_upgrade(scope, self.host, self.port, self.target)
        except (OSError, TimeoutError, ValueError) as err:
            await _answer(send, errors.internal_error(f"error dialing backend: {err}"))


async def _answer(send: Send, err: errors.ApiError) -> None:
    body = json.dumps(err.status()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": err.code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
