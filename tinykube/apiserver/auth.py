"""Bearer-token authentication as ASGI middleware: the cluster token (the administrator) or a service-account JWT.

Health and version endpoints stay open, as upstream's default RBAC lets anyone read them
(`system:public-info-viewer`); a request that presents a wrong token is refused even there. The OIDC discovery
documents are not public: upstream grants them to `system:service-account-issuer-discovery`, which binds only
service accounts (and cluster-admin), so here as there an anonymous request gets 401.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api.errors import Unauthorized
from tinykube.apiserver.identity import ADMIN, USER_KEY, UserInfo
from tinykube.apiserver.satokens import ServiceAccountTokens, TokenInvalid

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
INVALID = "invalid bearer token"
_UNAUTHORIZED = orjson.dumps(Unauthorized("Unauthorized").status(), option=orjson.OPT_APPEND_NEWLINE)


@dataclass(frozen=True, slots=True)
class TokenResult:
    """What the authenticator makes of a token: a user and the audiences it is valid for, or upstream's error."""

    user: UserInfo | None = None
    audiences: tuple[str, ...] = ()
    error: str = ""


class TokenAuthenticator:
    """The tokens the apiserver accepts, for requests and for TokenReview alike."""

    def __init__(self, token: str, service_accounts: ServiceAccountTokens | None = None) -> None:
        self.expected = token.encode()
        self.service_accounts = service_accounts
        self.api_audiences = service_accounts.audiences if service_accounts else ()

    def authenticate(self, token: str, audiences: tuple[str, ...] = ()) -> TokenResult:
        if hmac.compare_digest(token.encode(), self.expected):
            return self._static(audiences)
        if self.service_accounts is None:
            return TokenResult(error=INVALID)
        try:
            found = self.service_accounts.authenticate(token, audiences)
        except TokenInvalid as err:
            return TokenResult(error=f"[{INVALID}, {err}]")  # as upstream's union of authenticators words it
        if found is None:
            return TokenResult(error=INVALID)
        return TokenResult(found.user, found.audiences)

    def _static(self, audiences: tuple[str, ...]) -> TokenResult:
        """The cluster token knows no audiences: it is good for the apiserver's own only (upstream's
        audience-agnostic wrapper around its static tokens)."""
        if not audiences:
            return TokenResult(ADMIN, self.api_audiences)
        shared = tuple(a for a in audiences if a in self.api_audiences)
        return TokenResult(ADMIN, shared) if shared else TokenResult(error=INVALID)


def bearer_token(header: bytes) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case, as upstream)."""
    scheme, _, token = header.decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


class BearerTokenAuth:
    def __init__(self, app: ASGIApp, token: str, authenticator: TokenAuthenticator | None = None) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        presented = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if presented is not None and hmac.compare_digest(presented, self.expected):  # the common case, first
            scope[USER_KEY] = ADMIN
            await self.app(scope, receive, send)
        elif presented is None and scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
        elif (user := self._other_token(presented)) is not None:
            scope[USER_KEY] = user
            await self.app(scope, receive, send)
        else:
            await _refuse(send)

    def _other_token(self, presented: bytes | None) -> UserInfo | None:
        if presented is None or self.authenticator is None:
            return None
        token = bearer_token(presented)
        return self.authenticator.authenticate(token).user if token else None


async def _refuse(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(_UNAUTHORIZED)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": _UNAUTHORIZED})
