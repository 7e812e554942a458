"""Bearer-token authentication as ASGI middleware: every API request needs the cluster token.

Health and version endpoints stay open, as upstream's default RBAC lets anyone read them
(`system:public-info-viewer`); a request that presents a wrong token is refused even there.
"""

from __future__ import annotations

import hmac

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api.errors import Unauthorized
from tinykube.apiserver.identity import ADMIN, USER_KEY

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
_UNAUTHORIZED = orjson.dumps(Unauthorized("Unauthorized").status(), option=orjson.OPT_APPEND_NEWLINE)


class BearerTokenAuth:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        authenticated = presented is not None and hmac.compare_digest(presented, self.expected)
        if authenticated:
            scope[USER_KEY] = ADMIN
            await self.app(scope, receive, send)
        elif presented is None and scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
        else:
            await _refuse(send)


async def _refuse(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(_UNAUTHORIZED)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": _UNAUTHORIZED})
