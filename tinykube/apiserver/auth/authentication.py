"""Authentication as ASGI middleware: an x509 client certificate signed by the cluster CA, the cluster token (the
administrator) or a service-account JWT; a request with none of them is anonymous.

As upstream's union of authenticators, a client certificate is looked at first (CN is the user, each O a group);
then the bearer token. A token that is presented but wrong is refused with 401, even where an anonymous request
would be let through. A request without credentials is `system:anonymous` (group `system:unauthenticated`) and
goes on to the authorizer, which with RBAC lets it read what `system:public-info-viewer` grants (/healthz,
/livez, /readyz, /version) and nothing else. With `--authorization-mode AlwaysAllow`, where upstream turns
anonymous requests off, only those public paths stay open to them (and the rest gets 401).

WebSocket handshakes (`websocket` scopes) are authenticated as requests are; a refusal is the handshake's HTTP
answer (the ASGI `websocket.http.response` extension).
"""

from __future__ import annotations

import datetime
import functools
import hmac
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api.errors import Unauthorized
from tinykube.apiserver.auth.identity import ADMIN, ANONYMOUS, USER_KEY, UserInfo
from tinykube.apiserver.auth.satokens import ServiceAccountTokens, TokenInvalid

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
    def __init__(
        self, app: ASGIApp, token: str, authenticator: TokenAuthenticator | None = None, anonymous: bool = False
    ) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.authenticator = authenticator
        self.anonymous = anonymous  # requests without credentials go on as system:anonymous, to any path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        presented = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        extensions = scope.get("extensions")
        if extensions and "tls" in extensions and (user := certificate_user(extensions["tls"])) is not None:
            scope[USER_KEY] = user
            await self.app(scope, receive, send)
        elif presented is not None and hmac.compare_digest(presented, self.expected):  # the common case
            scope[USER_KEY] = ADMIN
            await self.app(scope, receive, send)
        elif presented is None and (self.anonymous or scope["path"] in PUBLIC_PATHS):
            scope[USER_KEY] = ANONYMOUS
            await self.app(scope, receive, send)
        elif (user := self._other_token(presented)) is not None:
            scope[USER_KEY] = user
            await self.app(scope, receive, send)
        else:
            await send_status(scope, send, 401, _UNAUTHORIZED)

    def _other_token(self, presented: bytes | None) -> UserInfo | None:
        if presented is None or self.authenticator is None:
            return None
        token = bearer_token(presented)
        return self.authenticator.authenticate(token).user if token else None


@functools.lru_cache(maxsize=256)
def _certificate(pem: str) -> tuple[UserInfo | None, datetime.datetime]:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cert = x509.load_pem_x509_certificate(pem.encode())
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    if not common_name:
        return None, cert.not_valid_after_utc  # upstream: no user from a certificate without a CN
    groups = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return UserInfo(common_name, groups=(*groups, "system:authenticated")), cert.not_valid_after_utc


def certificate_user(tls: dict[str, Any]) -> UserInfo | None:
    """The user of a verified client certificate (the TLS handshake checked it against the cluster CA): CN is the
    name, each O a group, as upstream's CommonNameUserConversion; None without a certificate, a CN, or once expired."""
    chain = tls.get("client_cert_chain") or []
    if not chain:
        return None
    user, expires = _certificate(chain[0])
    if user is None or expires < datetime.datetime.now(datetime.UTC):
        return None
    return user


async def send_status(scope: Scope, send: Send, status: int, body: bytes) -> None:
    """A JSON answer, as an HTTP response or as a WebSocket handshake's HTTP answer."""
    prefix = "websocket.http.response" if scope["type"] == "websocket" else "http.response"
    if scope["type"] == "websocket" and "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": f"{prefix}.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}.body", "body": body})
