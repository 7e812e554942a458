"""The authorization filter (upstream's WithAuthorization): every request, WebSocket handshakes included, is put to
the authorizer before any handler runs, with the attributes its method and path give (`http/requestinfo.py`); a
request that is not allowed gets upstream's 403 `Status`:

    pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the
    namespace "ns"

Connecting to a pod over a WebSocket (exec, attach, portforward: a GET) needs `create` as well as `get`, as
upstream's AuthorizePodWebsocketUpgradeCreatePermission has it: SPDY clients POST and need `create` already.
Approving a CertificateSigningRequest needs `approve` on its signer, as upstream's CertificateApproval admission
plugin checks (here, with the cached object).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api import errors
from tinykube.apiserver.auth.authentication import send_status
from tinykube.apiserver.auth.authorizer import Attributes, Authorizer
from tinykube.apiserver.auth.identity import UserInfo, user_of
from tinykube.apiserver.http.requestinfo import RequestInfo, resolve

REQUEST_INFO_KEY = "tinykube.requestinfo"  # where the filter leaves the RequestInfo in the scope
CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})


def attributes_of(user: UserInfo, info: RequestInfo) -> Attributes:
    return Attributes(
        user,
        info.verb,
        info.resource_request,
        namespace=info.namespace,
        group=info.group,
        version=info.version,
        resource=info.resource,
        subresource=info.subresource,
        name=info.name,
        path=info.path,
    )


def forbidden_message(attributes: Attributes) -> str:
    """Upstream's forbiddenMessage."""
    user = attributes.user.name
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    resource = f"{attributes.resource}/{attributes.subresource}" if attributes.subresource else attributes.resource
    where = f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
    return f'User "{user}" cannot {attributes.verb} resource "{resource}" in API group "{attributes.group}" {where}'


def forbidden(attributes: Attributes, reason: str = "") -> errors.Forbidden:
    """responsewriters.Forbidden: the message, the authorizer's reason after a colon, as apierrors.NewForbidden."""
    message = forbidden_message(attributes)
    if reason:
        message = f"{message}: {reason}"
    group, resource, name = attributes.group, attributes.resource, attributes.name
    if not resource and not group:
        return errors.Forbidden(f"forbidden: {message}", details={})
    qualified = f"{resource}.{group}" if group else resource
    lead = f'{qualified} "{name}"' if name else qualified
    details: dict[str, str] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return errors.Forbidden(f"{lead} is forbidden: {message}", details=details)


def _websocket_upgrade(scope: Scope) -> bool:
    if scope["type"] == "websocket":
        return True
    return any(k == b"upgrade" and v.lower() == b"websocket" for k, v in scope["headers"])


async def refuse(scope: Scope, send: Send, error: errors.ApiError) -> None:
    await send_status(scope, send, error.code, orjson.dumps(error.status(), option=orjson.OPT_APPEND_NEWLINE))


CachedObject = Callable[[str, str, str], "dict[str, Any] | None"]  # (plural, namespace, name) → object, if cached
SIGNER_VERBS = {"approval": "approve"}  # upstream's `sign` check of status writes needs the new object: not done


def signer_check(
    authorizer: Authorizer, user: UserInfo, info: RequestInfo, cached: CachedObject | None
) -> errors.Forbidden | None:
    """Upstream's CertificateApproval admission: approving (or denying) a CertificateSigningRequest (`approval`)
    needs `approve` on `signers` (group certificates.k8s.io) named after its signerName or its domain with `/*`."""
    verb = SIGNER_VERBS.get(info.subresource)
    if (
        verb is None
        or info.resource != "certificatesigningrequests"
        or info.group != "certificates.k8s.io"
        or info.verb not in ("update", "patch")
        or cached is None
    ):
        return None
    csr = cached("certificatesigningrequests", "", info.name)
    if csr is None:
        return None  # the handler answers 404
    signer = str((csr.get("spec") or {}).get("signerName", ""))
    for name in (signer, signer.split("/", 1)[0] + "/*"):
        attributes = Attributes(user, verb, True, group="certificates.k8s.io", resource="signers", name=name)
        if authorizer.authorize(attributes).allowed:
            return None
    message = f'user not permitted to {verb} requests with signerName "{signer}"'
    details = {"name": info.name, "group": info.group, "kind": info.resource}
    return errors.Forbidden(
        f'certificatesigningrequests.certificates.k8s.io "{info.name}" is forbidden: {message}', details=details
    )


class Authorization:
    """ASGI middleware: authorize, then hand on (the RequestInfo left in the scope), or answer 403. With `cached`
    (the watch caches' objects), approvals of CertificateSigningRequests are also checked against their signer
    (`signer_check`)."""

    def __init__(self, app: ASGIApp, authorizer: Authorizer, cached: CachedObject | None = None) -> None:
        self.app = app
        self.authorizer = authorizer
        self.cached = cached

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        info = resolve(method, scope["path"], scope.get("query_string", b""))
        attributes = attributes_of(user_of(scope), info)
        decision = self.authorizer.authorize(attributes)
        if (
            decision.allowed
            and info.verb == "get"
            and info.resource == "pods"
            and info.subresource in CONNECT_SUBRESOURCES
            and _websocket_upgrade(scope)
        ):
            attributes = dataclasses.replace(attributes, verb="create")
            decision = self.authorizer.authorize(attributes)
        if not decision.allowed:
            await refuse(scope, send, forbidden(attributes, decision.reason))
            return
        if info.subresource in SIGNER_VERBS and (
            refused := signer_check(self.authorizer, attributes.user, info, self.cached)
        ):
            await refuse(scope, send, refused)
            return
        scope[REQUEST_INFO_KEY] = info
        await self.app(scope, receive, send)
