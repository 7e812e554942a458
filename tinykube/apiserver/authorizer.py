"""The authorizer in place: every authenticated request is allowed (upstream's AlwaysAllow mode).

The access-review APIs ask this module, never a hard-wired answer, so `kubectl auth can-i` tells the truth about
what tinykube does today and keeps telling it when an RBAC authorizer takes this seat (issue 15). RBAC objects are
stored and validated meanwhile, and the reason of every decision says that they are not enforced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tinykube.apiserver.identity import UserInfo

ALLOW_REASON = "tinykube allows every authenticated request: RBAC objects are stored, not enforced"


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
