"""The authorizer seat: what every request and every access review asks (upstream's authorizer.Authorizer).

Two modes, as `--authorization-mode` picks them: `RBAC` (the default; `rbac_authorizer.py`, with the
`system:masters` group allowed everything) and `AlwaysAllow` (every authenticated request is allowed; RBAC objects
are still stored and validated, but not enforced). The request filter (`authorization.py`) and the access-review
APIs (`reviews.py`) ask the same authorizer, so `kubectl auth can-i` tells what the apiserver does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tinykube.apiserver.auth.identity import UserInfo

ALLOW_REASON = "tinykube allows every authenticated request (--authorization-mode AlwaysAllow): RBAC is not enforced"
MODES = ("RBAC", "AlwaysAllow")


@dataclass(frozen=True, slots=True)
class Attributes:
    """What is asked (upstream's authorizer.Attributes): a verb on a resource, or on a non-resource path."""

    user: UserInfo
    verb: str
    resource_request: bool
    namespace: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    denied: bool = False
    reason: str = ""
    evaluation_error: str = ""


@dataclass(frozen=True, slots=True)
class Rules:
    """What a user may do in a namespace, as SelfSubjectRulesReview lists it."""

    resource_rules: list[dict[str, list[str]]] = field(default_factory=list)
    non_resource_rules: list[dict[str, list[str]]] = field(default_factory=list)
    incomplete: bool = False
    evaluation_error: str = ""


class Authorizer(Protocol):
    def authorize(self, attributes: Attributes) -> Decision: ...

    def rules_for(self, user: UserInfo, namespace: str) -> Rules: ...


class AlwaysAllow:
    def authorize(self, attributes: Attributes) -> Decision:
        return Decision(allowed=True, reason=ALLOW_REASON)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """Upstream's AlwaysAllow rules: everything, and the list is complete."""
        return Rules(
            resource_rules=[{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            non_resource_rules=[{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        )


def new_authorizer(mode: str, caches: Mapping[str, Any]) -> Authorizer:
    """The authorizer of `--authorization-mode`, over the apiserver's watch caches (plural → WatchCache)."""
    if mode == "AlwaysAllow":
        return AlwaysAllow()
    if mode == "RBAC":
        from tinykube.apiserver.auth.rbac_authorizer import RbacAuthorizer

        return RbacAuthorizer(caches)
    raise ValueError(f"unknown authorization mode {mode!r} (known: {', '.join(MODES)})")
