"""The RBAC authorizer (upstream's `--authorization-mode=RBAC`) over the apiserver's watch caches of Roles,
ClusterRoles, RoleBindings and ClusterRoleBindings.

The caches are not walked per request: an index keeps each binding under its subjects (a user name — a
ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>` — or a group; RoleBindings per namespace)
and each role's rules compiled. Before a decision the index catches up with the caches' events since it last
looked (the caches keep a window of recent events; a relist or a gap rebuilds it), so a binding is in force as soon
as its write has been answered, and a decision costs the rules of the user's own bindings.

Rules match as upstream's `RuleAllows`: verbs, API groups, resources (`*`, `resource/subresource`, `*/subresource`)
and resource names for a resource request; verbs and non-resource URLs (`*`, exact, or a `prefix*`) otherwise. The
`system:masters` group is allowed everything before RBAC is asked (upstream's privileged-group authorizer), with no
reason given. Denials carry no reason unless a binding refers to a role that does not exist.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tinykube.api.jsonshape import strings
from tinykube.apiserver.auth.authorizer import Attributes, Decision, Rules
from tinykube.apiserver.auth.identity import UserInfo

PRIVILEGED_GROUP = "system:masters"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Rule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()


def compile_rule(rule: Mapping[str, Any]) -> Rule:
    return Rule(
        tuple(strings(rule.get("verbs"))),
        tuple(strings(rule.get("apiGroups"))),
        tuple(strings(rule.get("resources"))),
        tuple(strings(rule.get("resourceNames"))),
        tuple(strings(rule.get("nonResourceURLs"))),
    )


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource in ("*", combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def _url_matches(rule: Rule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attributes: Attributes, rule: Rule) -> bool:
    """Upstream's RuleAllows."""
    if not ("*" in rule.verbs or attributes.verb in rule.verbs):
        return False
    if not attributes.resource_request:
        return _url_matches(rule, attributes.path)
    combined = f"{attributes.resource}/{attributes.subresource}" if attributes.subresource else attributes.resource
    return (
        ("*" in rule.api_groups or attributes.group in rule.api_groups)
        and _resource_matches(rule, combined, attributes.subresource)
        and (not rule.resource_names or attributes.name in rule.resource_names)
    )


# ---- bindings -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""

    def user_key(self, binding_namespace: str) -> tuple[str, str] | None:
        """The index key this subject is found under: ("user", name) or ("group", name); None if it can match no
        one (a ServiceAccount without a namespace, an unknown kind)."""
        if self.kind == "User":
            return ("user", self.name)
        if self.kind == "Group":
            return ("group", self.name)
        if self.kind == "ServiceAccount":
            namespace = self.namespace or binding_namespace
            return ("user", f"{SA_PREFIX}{namespace}:{self.name}") if namespace and self.name else None
        return None

    def describe(self, binding_namespace: str) -> str:
        if self.kind == "ServiceAccount":
            return f'{self.kind} "{self.name}/{self.namespace or binding_namespace}"'
        return f'{self.kind} "{self.name}"'


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    namespace: str  # "" for a ClusterRoleBinding
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def subject_for(self, user: UserInfo) -> Subject | None:
        """The first subject that is this user (upstream's appliesTo)."""
        for subject in self.subjects:
            key = subject.user_key(self.namespace)
            if key is None:
                continue
            if (key[0] == "user" and key[1] == user.name) or (key[0] == "group" and key[1] in user.groups):
                return subject
        return None

    def describe(self, subject: Subject) -> str:
        kind = "RoleBinding" if self.namespace else "ClusterRoleBinding"
        name = f"{self.name}/{self.namespace}" if self.namespace else self.name
        return f'{kind} "{name}" of {self.role_kind} "{self.role_name}" to {subject.describe(self.namespace)}'


def parse_binding(obj: Mapping[str, Any]) -> Binding:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    subjects = tuple(
        Subject(str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace", "") or ""))
        for s in obj.get("subjects") or []
        if isinstance(s, dict)
    )
    return Binding(
        str(meta.get("name", "")),
        str(meta.get("namespace", "") or ""),
        str(ref.get("kind", "")),
        str(ref.get("name", "")),
        subjects,
    )


# ---- the index over the caches ------------------------------------------------------------------------------------


class CachedLike(Protocol):
    obj: dict[str, Any]


class EventLike(Protocol):
    type: str
    revision: int
    current: Any


class CacheLike(Protocol):
    """What is read of a WatchCache: its objects, the revision its events reached, and its window of events."""

    objects: dict[str, Any]
    applied: int
    oldest: int
    events: deque[Any]


class StaticCache:
    """A fixed set of objects in the shape of a WatchCache (unit tests; `objects` may be replaced or extended, and
    `bump()` tells the index to look again)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.objects: dict[str, Any] = {}
        self.applied = 1
        self.oldest = 1 << 62  # no event window: every change is a rebuild
        self.events: deque[Any] = deque()
        for obj in objects:
            self.put(obj)

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))
        self.objects[key] = _Cached(dict(obj))
        self.bump()

    def delete(self, key: str) -> None:
        self.objects.pop(key, None)
        self.bump()

    def bump(self) -> None:
        self.applied += 1
        self.objects = dict(self.objects)  # a new dict: the index rebuilds


@dataclass(slots=True)
class _Cached:
    obj: dict[str, Any]


class _Synced:
    """One cache as last seen: the dict it had, and the revision its events had reached."""

    def __init__(self, cache: CacheLike) -> None:
        self.cache = cache
        self.objects: dict[str, Any] | None = None
        self.applied = -1

    def changes(self) -> Iterator[tuple[str, str, dict[str, Any]]] | None:
        """(event type, key, object) since last time; None when the index must be rebuilt from `objects`; an empty
        iterator when nothing changed."""
        cache = self.cache
        if cache.objects is self.objects and cache.applied == self.applied:
            return iter(())
        if cache.objects is not self.objects or self.applied < cache.oldest:
            self.objects, self.applied = cache.objects, cache.applied
            return None
        since, self.applied = self.applied, cache.applied
        fresh = []
        for event in reversed(cache.events):
            if event.revision <= since:
                break
            fresh.append(event)
        return ((e.type, _key(e.current.obj), e.current.obj) for e in reversed(fresh))


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name", ""))


@dataclass
class _Index:
    cluster_roles: dict[str, tuple[Rule, ...]] = field(default_factory=dict)
    roles: dict[str, tuple[Rule, ...]] = field(default_factory=dict)  # "ns/name"
    cluster_bindings: dict[str, Binding] = field(default_factory=dict)
    bindings: dict[str, Binding] = field(default_factory=dict)  # "ns/name"
    # (namespace or "", "user"|"group", name) -> keys of the bindings with such a subject
    by_subject: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)

    def add_binding(self, binding: Binding) -> None:
        (self.bindings if binding.namespace else self.cluster_bindings)[binding.key] = binding
        for subject in binding.subjects:
            key = subject.user_key(binding.namespace)
            if key is not None:
                self.by_subject.setdefault((binding.namespace, *key), set()).add(binding.key)

    def remove_binding(self, key: str, namespaced: bool) -> None:
        binding = (self.bindings if namespaced else self.cluster_bindings).pop(key, None)
        if binding is None:
            return
        for subject in binding.subjects:
            user_key = subject.user_key(binding.namespace)
            if user_key is None:
                continue
            found = self.by_subject.get((binding.namespace, *user_key))
            if found is not None:
                found.discard(key)
                if not found:
                    del self.by_subject[(binding.namespace, *user_key)]


def _rules(obj: Mapping[str, Any]) -> tuple[Rule, ...]:
    return tuple(compile_rule(r) for r in obj.get("rules") or [] if isinstance(r, dict))


class RbacAuthorizer:
    """Decisions and rule lists from the RBAC objects in `caches` (plural → WatchCache, or anything shaped so)."""

    def __init__(self, caches: Mapping[str, CacheLike]) -> None:
        self._sources = {
            kind: _Synced(caches[kind]) for kind in ("clusterroles", "roles", "clusterrolebindings", "rolebindings")
        }
        self._index = _Index()

    # ---- keeping up with the caches ----

    def _sync(self) -> None:
        for kind, source in self._sources.items():
            changes = source.changes()
            if changes is None:
                self._rebuild(kind, source)
                continue
            for event_type, key, obj in changes:
                self._apply(kind, event_type, key, obj)

    def _rebuild(self, kind: str, source: _Synced) -> None:
        index = self._index
        objects = source.objects or {}
        if kind == "clusterroles":
            index.cluster_roles = {key: _rules(c.obj) for key, c in objects.items()}
        elif kind == "roles":
            index.roles = {key: _rules(c.obj) for key, c in objects.items()}
        else:
            namespaced = kind == "rolebindings"
            for key in list(index.bindings if namespaced else index.cluster_bindings):
                index.remove_binding(key, namespaced)
            for cached in objects.values():
                index.add_binding(parse_binding(cached.obj))

    def _apply(self, kind: str, event_type: str, key: str, obj: dict[str, Any]) -> None:
        index = self._index
        deleted = event_type == "DELETED"
        if kind in ("clusterroles", "roles"):
            table = index.cluster_roles if kind == "clusterroles" else index.roles
            if deleted:
                table.pop(key, None)
            else:
                table[key] = _rules(obj)
            return
        namespaced = kind == "rolebindings"
        index.remove_binding(key, namespaced)
        if not deleted:
            index.add_binding(parse_binding(obj))

    # ---- what applies to a user ----

    def _bindings_for(self, user: UserInfo, namespace: str) -> list[Binding]:
        """The bindings with the user (or one of its groups) among their subjects: cluster-wide ones with
        namespace "", a namespace's RoleBindings otherwise; in name order."""
        index = self._index
        keys: set[str] = set()
        for key in (("user", user.name), *(("group", g) for g in user.groups)):
            keys |= index.by_subject.get((namespace, *key), set())
        table = index.bindings if namespace else index.cluster_bindings
        return [table[k] for k in sorted(keys) if k in table]

    def _role_rules(self, binding: Binding) -> tuple[tuple[Rule, ...], str]:
        index = self._index
        if binding.role_kind == "ClusterRole":
            rules = index.cluster_roles.get(binding.role_name)
            missing = f'clusterrole.rbac.authorization.k8s.io "{binding.role_name}" not found'
        elif binding.role_kind == "Role" and binding.namespace:
            rules = index.roles.get(f"{binding.namespace}/{binding.role_name}")
            missing = f'role.rbac.authorization.k8s.io "{binding.role_name}" not found'
        else:
            return (), f"unsupported role reference kind: {binding.role_kind!r}"
        return (rules, "") if rules is not None else ((), missing)

    def _visit(self, user: UserInfo, namespace: str) -> Iterator[tuple[Binding, Subject, tuple[Rule, ...], str]]:
        """Upstream's VisitRulesFor: the cluster's bindings, then (for a namespace) the namespace's."""
        self._sync()
        scopes = ("", namespace) if namespace else ("",)
        for scope in scopes:
            for binding in self._bindings_for(user, scope):
                subject = binding.subject_for(user)
                if subject is None:
                    continue
                rules, error = self._role_rules(binding)
                yield binding, subject, rules, error

    # ---- the Authorizer protocol ----

    def authorize(self, attributes: Attributes) -> Decision:
        user = attributes.user
        if PRIVILEGED_GROUP in user.groups:
            return Decision(allowed=True)
        errors: list[str] = []
        for binding, subject, rules, error in self._visit(user, attributes.namespace):
            if error:
                errors.append(error)
            for rule in rules:
                if rule_allows(attributes, rule):
                    return Decision(allowed=True, reason=f"RBAC: allowed by {binding.describe(subject)}")
        return Decision(allowed=False, reason=f"RBAC: {aggregate_errors(errors)}" if errors else "")

    def policy_rules(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """The user's rules in a namespace (cluster-wide ones with ""), and the errors met finding them (upstream's
        RulesFor, which the escalation check compares a new role's rules with)."""
        found: list[Rule] = []
        errors: list[str] = []
        for _binding, _subject, rules, error in self._visit(user, namespace):
            if error:
                errors.append(error)
            found.extend(rules)
        return found, errors

    def role_rules(self, kind: str, name: str, namespace: str) -> tuple[tuple[Rule, ...], str]:
        """The rules of the role a binding (in `namespace`, "" for a ClusterRoleBinding) refers to, or the error."""
        self._sync()
        return self._role_rules(Binding("", namespace, kind, name, ()))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        resource_rules: list[dict[str, list[str]]] = []
        non_resource_rules: list[dict[str, list[str]]] = []
        errors: list[str] = []
        for _binding, _subject, rules, error in self._visit(user, namespace):
            if error:
                errors.append(error)
            for rule in rules:
                if rule.resources:
                    resource_rule = {"verbs": list(rule.verbs)}
                    if rule.api_groups:
                        resource_rule["apiGroups"] = list(rule.api_groups)
                    resource_rule["resources"] = list(rule.resources)
                    if rule.resource_names:
                        resource_rule["resourceNames"] = list(rule.resource_names)
                    resource_rules.append(resource_rule)
                if rule.non_resource_urls:
                    urls = list(rule.non_resource_urls)
                    non_resource_rules.append({"verbs": list(rule.verbs), "nonResourceURLs": urls})
        error = aggregate_errors(errors)
        return Rules(resource_rules, non_resource_rules, incomplete=bool(errors), evaluation_error=error)


def aggregate_errors(errors: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several (each once) in brackets."""
    unique = list(dict.fromkeys(errors))
    if not unique:
        return ""
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
