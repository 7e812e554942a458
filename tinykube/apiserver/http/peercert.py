"""The TLS client certificate of a connection, put where the application sees it.

uvicorn does not hand the peer certificate to the ASGI application. The server asks for one (`ssl.CERT_OPTIONAL`
with the cluster CA as the only trusted issuer, so a certificate that is presented has been verified by the
handshake, and one that does not verify fails it); `with_peer_certificate` makes a subclass of a uvicorn protocol
that, once the connection is made, gives each of its requests the ASGI TLS extension
(`scope["extensions"]["tls"]["client_cert_chain"]`, PEM), which authentication reads (`auth/authentication.py`).
Connections without a client certificate are left exactly as uvicorn serves them.
"""

from __future__ import annotations

import ssl
from typing import Any, TypeVar

from starlette.types import ASGIApp, Receive, Scope, Send

P = TypeVar("P", bound=type[Any])


def tls_extension(transport: Any) -> dict[str, Any] | None:
    """The ASGI TLS extension of a connection whose peer presented a (verified) certificate, else None."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)],
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": None,
        "cipher_suite": None,
    }


def _with_tls(app: ASGIApp, tls: dict[str, Any]) -> ASGIApp:
    async def app_with_tls(scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), "tls": tls}
        await app(scope, receive, send)

    return app_with_tls


def with_peer_certificate(protocol: P) -> P:
    """`protocol` (a uvicorn HTTP or WebSocket protocol class) whose requests carry the client's certificate."""

    def connection_made(self: Any, transport: Any, *args: Any) -> None:
        base: Any = protocol
        base.connection_made(self, transport, *args)
        tls = tls_extension(transport)
        if tls is not None:
            self.app = _with_tls(self.app, tls)

    return type(protocol.__name__, (protocol,), {"connection_made": connection_made})  # type: ignore[return-value]
