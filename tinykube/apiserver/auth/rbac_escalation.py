"""RBAC's escalation check (upstream's policy-based RBAC storage): nobody grants what they do not hold.

Writing a Role or ClusterRole needs the `escalate` verb on it, or every permission it grants already (in the Role's
namespace; cluster-wide for a ClusterRole); a ClusterRole with an `aggregationRule` needs `escalate`. Writing a
RoleBinding or ClusterRoleBinding needs the `bind` verb on the role it refers to, or every permission of that role
(in the binding's namespace). `system:masters` is exempt, and so are the apiserver's own writes. Refusals are
upstream's:

    roles.rbac.authorization.k8s.io "r" is forbidden: user "jane" (groups=["devs" "system:authenticated"]) is
    attempting to grant RBAC permissions not currently held:
    {APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}

It runs as a validating admission plugin, after the object is final (a patch applied), before it is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.auth.authorizer import Attributes, Authorizer
from tinykube.apiserver.auth.rbac_authorizer import PRIVILEGED_GROUP, RbacAuthorizer, Rule, compile_rule
from tinykube.apiserver.registry.generic import Admission, Request

GROUP = "rbac.authorization.k8s.io"
ROLES = ("roles", "clusterroles")
BINDINGS = ("rolebindings", "clusterrolebindings")

Object = dict[str, Any]


# ---- coverage (upstream's validation.Covers) ------------------------------------------------------------------------


def breakdown(rule: Rule) -> list[Rule]:
    """One rule per group, resource, verb (and name); one per URL and verb."""
    atoms: list[Rule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    atoms += [Rule((verb,), (group,), (resource,), (name,)) for name in rule.resource_names]
                else:
                    atoms.append(Rule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        atoms += [Rule((verb,), non_resource_urls=(url,)) for verb in rule.verbs]
    return atoms


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if "*" in owned or all(r in owned for r in wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path or f"*/{path.split('/', 1)[1]}" not in owned:
            return False
    return True


def _url_covers(owned: str, wanted: str) -> bool:
    return owned == wanted or (owned.endswith("*") and wanted.startswith(owned.rstrip("*")))


def rule_covers(owner: Rule, wanted: Rule) -> bool:
    verbs = "*" in owner.verbs or all(v in owner.verbs for v in wanted.verbs)
    groups = "*" in owner.api_groups or all(g in owner.api_groups for g in wanted.api_groups)
    urls = all(any(_url_covers(o, u) for o in owner.non_resource_urls) for u in wanted.non_resource_urls)
    if wanted.resource_names:
        names = not owner.resource_names or all(n in owner.resource_names for n in wanted.resource_names)
    else:
        names = not owner.resource_names
    return verbs and groups and _resources_cover(owner.resources, wanted.resources) and names and urls


def uncovered(owner: Sequence[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    return [atom for rule in wanted for atom in breakdown(rule) if not any(rule_covers(o, atom) for o in owner)]


def _go_strings(values: Iterable[str]) -> str:
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def compact(rules: list[Rule]) -> list[Rule]:
    """CompactRules: single-group, single-resource rules without names that differ only by verb, merged."""
    merged: dict[tuple[str, str], list[str]] = {}
    others: list[Rule] = []
    for rule in rules:
        simple = len(rule.api_groups) == 1 and len(rule.resources) == 1 and not rule.resource_names
        if simple and not rule.non_resource_urls:
            verbs = merged.setdefault((rule.api_groups[0], rule.resources[0]), [])
            verbs += [v for v in rule.verbs if v not in verbs]
        else:
            others.append(rule)
    return [Rule(tuple(verbs), (group,), (resource,)) for (group, resource), verbs in merged.items()] + others


def compact_string(rule: Rule) -> str:
    parts = []
    if rule.api_groups:
        parts.append(f"APIGroups:{_go_strings(rule.api_groups)}")
    if rule.resources:
        parts.append(f"Resources:{_go_strings(rule.resources)}")
    if rule.non_resource_urls:
        parts.append(f"NonResourceURLs:{_go_strings(rule.non_resource_urls)}")
    if rule.resource_names:
        parts.append(f"ResourceNames:{_go_strings(rule.resource_names)}")
    if rule.verbs:
        parts.append(f"Verbs:{_go_strings(rule.verbs)}")
    return "{" + ", ".join(parts) + "}"


# ---- the plugin ---------------------------------------------------------------------------------------------------


class EscalationCheck:
    """Wraps the registry's admission chain: its plugins first, then this check on the four RBAC kinds."""

    def __init__(self, chain: Admission, authorizer: Authorizer) -> None:
        self.chain = chain
        self.authorizer = authorizer

    async def mutate(self, req: Request, obj: Object, old: Object | None) -> None:
        await self.chain.mutate(req, obj, old)

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        await self.chain.validate(req, obj, old)
        if _is_rbac(req.resource) and not req.subresource:
            self.check(req, obj)

    def check(self, req: Request, obj: Object) -> None:
        user = req.user
        if user is None or PRIVILEGED_GROUP in user.groups:
            return  # the apiserver's own writes (bootstrap), and the privileged group
        meta = obj.get("metadata") or {}
        name, namespace = str(req.name or meta.get("name", "")), req.namespace
        plural = req.resource.plural
        if plural in ROLES:
            escalate = Attributes(user, "escalate", True, namespace, GROUP, "v1", plural, "", name)
            if self.authorizer.authorize(escalate).allowed:
                return
            if plural == "clusterroles" and obj.get("aggregationRule") is not None:
                reason = "must have cluster-admin privileges to use the aggregationRule"
                raise errors.forbidden_request(plural, name, reason, GROUP)
            granted = tuple(compile_rule(r) for r in obj.get("rules") or [] if isinstance(r, dict))
            self._confirm(req, name, granted)
            return
        ref = obj.get("roleRef") or {}
        kind, role = str(ref.get("kind", "")), str(ref.get("name", ""))
        resource = "clusterroles" if kind == "ClusterRole" else "roles"
        bind = Attributes(user, "bind", True, namespace, GROUP, "v1", resource, "", role)
        if self.authorizer.authorize(bind).allowed:
            return
        if not isinstance(self.authorizer, RbacAuthorizer):
            return
        rules, error = self.authorizer.role_rules(kind, role, namespace)
        if error:  # upstream: the role reference's own error, a 404
            raise errors.not_found(resource, role, GROUP)
        self._confirm(req, name, rules)

    def _confirm(self, req: Request, name: str, granted: Sequence[Rule]) -> None:
        """ConfirmNoEscalation: the user's own rules where the object applies cover what it grants."""
        if not isinstance(self.authorizer, RbacAuthorizer):
            return  # another authorizer allowed `escalate`/`bind` already, or has no rules to compare
        user = req.user
        assert user is not None
        owned, resolution_errors = self.authorizer.policy_rules(user, req.namespace)
        missing = uncovered(owned, granted)
        if not missing:
            return
        listed = "\n".join(sorted({compact_string(rule) for rule in compact(missing)}))
        message = (
            f'user "{user.name}" (groups={_go_strings(user.groups)}) is attempting to grant RBAC permissions not '
            f"currently held:\n{listed}"
        )
        if resolution_errors:
            message += f"; resolution errors: [{', '.join(resolution_errors)}]"
        raise errors.forbidden_request(req.resource.plural, name, message, GROUP)


def _is_rbac(resource: ResourceInfo) -> bool:
    return resource.group == GROUP and resource.plural in (*ROLES, *BINDINGS)
