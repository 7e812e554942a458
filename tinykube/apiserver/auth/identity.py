"""Who a request comes from (upstream's user.Info), as authentication found it; strategies that record the
requester (CertificateSigningRequests) and the review resources read it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.types import Scope

USER_KEY = "tinykube.user"  # where authentication leaves the UserInfo in the ASGI scope


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


# The cluster token's user: the administrator kind's kubeconfig names, in the group upstream never limits.
ADMIN = UserInfo("kubernetes-admin", groups=("system:masters", "system:authenticated"))
ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))


def user_of(scope: Scope) -> UserInfo:
    """The request's user; anonymous where authentication let a public path through without credentials."""
    user = scope.get(USER_KEY)
    return user if isinstance(user, UserInfo) else ANONYMOUS
