"""Impersonation (upstream's WithImpersonation): `Impersonate-User`, `Impersonate-Group` (repeatable),
`Impersonate-Uid` and `Impersonate-Extra-<key>` make the request another user's, once the authenticated user is
allowed the `impersonate` verb on each thing asked for:

    Impersonate-User: jane              → users "jane"                     (API group "")
    Impersonate-User: system:serviceaccount:ns:sa → serviceaccounts "sa" in ns (API group "")
    Impersonate-Group: devs             → groups "devs"                    (API group "")
    Impersonate-Uid: 1234               → uids "1234"                      (authentication.k8s.io)
    Impersonate-Extra-scopes: view      → userextras/scopes "view"         (authentication.k8s.io)

The impersonated user is in `system:authenticated` unless `system:authenticated` or `system:unauthenticated` is
among its groups already (`system:anonymous` gets `system:unauthenticated`); a ServiceAccount impersonated without
groups gets its own. The headers are removed before the request goes on. `kubectl --as/--as-group/--as-uid` send
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from tinykube.api import errors
from tinykube.apiserver.auth.authorization import forbidden, refuse
from tinykube.apiserver.auth.authorizer import Attributes, Authorizer
from tinykube.apiserver.auth.identity import USER_KEY, UserInfo, user_of
from tinykube.apiserver.auth.satokens import groups as service_account_groups

USER_HEADER = b"impersonate-user"
GROUP_HEADER = b"impersonate-group"
UID_HEADER = b"impersonate-uid"
EXTRA_PREFIX = b"impersonate-extra-"
AUTHENTICATION = "authentication.k8s.io"


@dataclass(frozen=True, slots=True)
class Wanted:
    """One thing asked for (upstream's ObjectReference): kind User, ServiceAccount, Group, UserExtra or UID."""

    kind: str
    name: str
    namespace: str = ""
    extra_key: str = ""

    def __str__(self) -> str:
        return f"{{{self.kind} {self.namespace} {self.name} {self.extra_key}}}"


def _split_service_account(user: str) -> tuple[str, str] | None:
    parts = user.split(":")
    if len(parts) == 4 and parts[0] == "system" and parts[1] == "serviceaccount" and parts[2] and parts[3]:
        return parts[2], parts[3]
    return None


def requests_of(headers: list[tuple[bytes, bytes]]) -> list[Wanted]:
    """buildImpersonationRequests; BadRequest when groups, extras or a uid come without a user."""
    wanted: list[Wanted] = []
    user = next((v.decode("latin-1") for k, v in headers if k == USER_HEADER), "")
    if user:
        account = _split_service_account(user)
        wanted.append(Wanted("ServiceAccount", account[1], account[0]) if account else Wanted("User", user))
    wanted += [Wanted("Group", v.decode("latin-1")) for k, v in headers if k == GROUP_HEADER]
    for key, value in headers:
        if key.startswith(EXTRA_PREFIX):
            extra = unquote(key[len(EXTRA_PREFIX) :].decode("latin-1").lower())
            wanted.append(Wanted("UserExtra", value.decode("latin-1"), extra_key=extra))
    uid = next((v.decode("latin-1") for k, v in headers if k == UID_HEADER), "")
    if uid:
        wanted.append(Wanted("UID", uid))
    if wanted and not user:
        listed = "[" + " ".join(str(w) for w in wanted) + "]"
        raise errors.BadRequest(f"requested {listed} without impersonating a user")
    return wanted


def _attributes(requester: UserInfo, wanted: Wanted) -> Attributes:
    resource, group, version, subresource = {
        "ServiceAccount": ("serviceaccounts", "", "v1", ""),
        "User": ("users", "", "v1", ""),
        "Group": ("groups", "", "v1", ""),
        "UserExtra": ("userextras", AUTHENTICATION, "v1", wanted.extra_key),
        "UID": ("uids", AUTHENTICATION, "v1", ""),
    }[wanted.kind]
    return Attributes(
        requester,
        "impersonate",
        True,
        namespace=wanted.namespace,
        group=group,
        version=version,
        resource=resource,
        subresource=subresource,
        name=wanted.name,
    )


def impersonated(wanted: list[Wanted]) -> UserInfo:
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    groups_given = any(w.kind == "Group" for w in wanted)
    for w in wanted:
        if w.kind == "ServiceAccount":
            name = f"system:serviceaccount:{w.namespace}:{w.name}"
            if not groups_given:
                groups += service_account_groups(w.namespace)[:2]
        elif w.kind == "User":
            name = w.name
        elif w.kind == "Group":
            groups.append(w.name)
        elif w.kind == "UserExtra":
            extra.setdefault(w.extra_key, []).append(w.name)
        else:
            uid = w.name
    if name != "system:anonymous":
        if "system:authenticated" not in groups and "system:unauthenticated" not in groups:
            groups.append("system:authenticated")
    elif "system:unauthenticated" not in groups:
        groups.append("system:unauthenticated")
    return UserInfo(name, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})


class Impersonation:
    """ASGI middleware, right after authentication."""

    def __init__(self, app: ASGIApp, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not any(
            k.startswith(b"impersonate-") for k, _ in scope["headers"]
        ):
            await self.app(scope, receive, send)
            return
        try:
            wanted = requests_of(scope["headers"])
        except errors.ApiError as err:
            await refuse(scope, send, err)
            return
        requester = user_of(scope)
        for w in wanted:
            attributes = _attributes(requester, w)
            decision = self.authorizer.authorize(attributes)
            if not decision.allowed:
                await refuse(scope, send, forbidden(attributes, decision.reason))
                return
        scope[USER_KEY] = impersonated(wanted)
        scope["headers"] = [(k, v) for k, v in scope["headers"] if not k.startswith(b"impersonate-")]
        await self.app(scope, receive, send)
