"""Authorization without a server: the request-info resolver, RBAC's rule matcher (against a straightforward model,
with Hypothesis), the authorizer's index and reasons over cache-shaped objects, upstream's 403 messages, and the
impersonation headers."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinykube.api import errors
from tinykube.apiserver.auth.authorization import forbidden
from tinykube.apiserver.auth.authorizer import Attributes, Decision
from tinykube.apiserver.auth.identity import UserInfo
from tinykube.apiserver.auth.impersonation import Wanted, impersonated, requests_of
from tinykube.apiserver.auth.rbac_authorizer import RbacAuthorizer, StaticCache, compile_rule, rule_allows
from tinykube.apiserver.http.requestinfo import RequestInfo, resolve

SA = UserInfo(
    "system:serviceaccount:ns:bot",
    groups=("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"),
)
JANE = UserInfo("jane", groups=("devs", "system:authenticated"))


# ---- request info ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", "", ("list", "ns", "", "v1", "pods", "", "")),
        ("GET", "/api/v1/namespaces/ns/pods", "watch=true", ("watch", "ns", "", "v1", "pods", "", "")),
        ("GET", "/api/v1/namespaces/ns/pods", "watch=1", ("watch", "ns", "", "v1", "pods", "", "")),
        ("GET", "/api/v1/namespaces/ns/pods", "watch=false", ("list", "ns", "", "v1", "pods", "", "")),
        ("GET", "/api/v1/watch/namespaces/ns/pods", "", ("watch", "ns", "", "v1", "pods", "", "")),
        ("GET", "/api/v1/watch/namespaces/ns/pods/web", "", ("watch", "ns", "", "v1", "pods", "", "web")),
        (
            "GET",
            "/api/v1/namespaces/ns/pods",
            "fieldSelector=metadata.name%3Dweb",
            ("list", "ns", "", "v1", "pods", "", "web"),
        ),
        ("GET", "/api/v1/namespaces/ns/pods/web", "", ("get", "ns", "", "v1", "pods", "", "web")),
        ("HEAD", "/api/v1/namespaces/ns/pods/web", "", ("get", "ns", "", "v1", "pods", "", "web")),
        ("POST", "/api/v1/namespaces/ns/pods", "", ("create", "ns", "", "v1", "pods", "", "")),
        ("PUT", "/api/v1/namespaces/ns/pods/web", "", ("update", "ns", "", "v1", "pods", "", "web")),
        ("PATCH", "/api/v1/namespaces/ns/pods/web/status", "", ("patch", "ns", "", "v1", "pods", "status", "web")),
        ("DELETE", "/api/v1/namespaces/ns/pods/web", "", ("delete", "ns", "", "v1", "pods", "", "web")),
        ("DELETE", "/api/v1/namespaces/ns/pods", "", ("deletecollection", "ns", "", "v1", "pods", "", "")),
        ("POST", "/api/v1/namespaces/ns/pods/web/exec", "command=ls", ("create", "ns", "", "v1", "pods", "exec", "web")),  # noqa: E501
        ("GET", "/api/v1/namespaces/ns/pods/web/exec", "", ("get", "ns", "", "v1", "pods", "exec", "web")),
        ("GET", "/api/v1/namespaces/ns/pods/web/log", "", ("get", "ns", "", "v1", "pods", "log", "web")),
        (
            "GET",
            "/api/v1/namespaces/ns/services/web:80/proxy/a/b",
            "",
            ("get", "ns", "", "v1", "services", "proxy", "web:80"),
        ),
        ("PUT", "/api/v1/nodes/node-1/proxy/metrics", "", ("update", "", "", "v1", "nodes", "proxy", "node-1")),
        ("POST", "/api/v1/namespaces/ns/pods/web:8080/proxy/", "", ("create", "ns", "", "v1", "pods", "proxy", "web:8080")),  # noqa: E501
        ("GET", "/api/v1/nodes", "", ("list", "", "", "v1", "nodes", "", "")),
        ("GET", "/api/v1/namespaces", "", ("list", "", "", "v1", "namespaces", "", "")),
        ("GET", "/api/v1/namespaces/ns", "", ("get", "ns", "", "v1", "namespaces", "", "ns")),
        ("PUT", "/api/v1/namespaces/ns/finalize", "", ("update", "ns", "", "v1", "namespaces", "finalize", "ns")),
        (
            "GET",
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
            "",
            ("get", "ns", "apps", "v1", "deployments", "scale", "web"),
        ),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "", ("list", "", "rbac.authorization.k8s.io", "v1", "clusterroles", "", "")),  # noqa: E501
        ("GET", "/api/v1/proxy/namespaces/ns/pods/web/x", "", ("proxy", "ns", "", "v1", "pods", "", "web")),
    ],
)  # fmt: skip
def test_resource_requests(method: str, path: str, query: str, expected: tuple[str, ...]) -> None:
    info = resolve(method, path, query.encode())
    assert info.resource_request
    assert (info.verb, info.namespace, info.group, info.version, info.resource, info.subresource, info.name) == expected


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/healthz", "get"),
        ("GET", "/version", "get"),
        ("GET", "/api", "get"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis", "get"),
        ("GET", "/apis/apps", "get"),
        ("GET", "/apis/apps/v1", "get"),
        ("GET", "/openapi/v2", "get"),
        ("POST", "/foo", "post"),
        ("PUT", "/foo/bar", "put"),
        ("GET", "/", "get"),
    ],
)
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    assert resolve(method, path) == RequestInfo(verb, False, path)


# ---- the rule matcher -----------------------------------------------------------------------------------------------


def attrs(verb: str, resource: str = "", *, sub: str = "", name: str = "", group: str = "", ns: str = "") -> Attributes:
    if resource.startswith("/"):
        return Attributes(JANE, verb, False, path=resource)
    return Attributes(JANE, verb, True, ns, group, "v1", resource, sub, name)


@pytest.mark.parametrize(
    ("rule", "request_", "allowed"),
    [
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, attrs("get", "pods"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, attrs("list", "pods"), False),
        ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, attrs("list", "pods"), True),
        ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, attrs("get", "pods"), False),
        ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["pods"]}, attrs("get", "pods", group="x"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, attrs("get", "pods", sub="log"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}, attrs("get", "pods", sub="log"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, attrs("get", "pods", sub="log"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, attrs("get", "pods", sub="logs"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}, attrs("get", "pods"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}, attrs("get", "pods", sub="exec"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}, attrs("get", "pods", name="a"), True),  # noqa: E501
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}, attrs("get", "pods", name="b"), False),  # noqa: E501
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}, attrs("list", "pods"), False),  # noqa: E501
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, attrs("get", "/healthz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, attrs("get", "/healthz/etcd"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}, attrs("get", "/healthz/etcd"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}, attrs("get", "/healthzzz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["*"]}, attrs("get", "/anything"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["*"]}, attrs("get", "pods"), False),
        ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, attrs("get", "/healthz"), False),
    ],
)  # fmt: skip
def test_rule_allows(rule: dict[str, Any], request_: Attributes, allowed: bool) -> None:
    assert rule_allows(request_, compile_rule(rule)) is allowed


def model_allows(a: Attributes, rule: dict[str, list[str]]) -> bool:
    """RBAC's matching as its documentation states it, written plainly."""

    def any_of(values: list[str], wanted: str) -> bool:
        return "*" in values or wanted in values

    if not any_of(rule.get("verbs", []), a.verb):
        return False
    if not a.resource_request:
        return any(
            u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u.rstrip("*")))
            for u in rule.get("nonResourceURLs", [])
        )
    full = a.resource + ("/" + a.subresource if a.subresource else "")
    resource_ok = any(
        r == "*" or r == full or (bool(a.subresource) and r == "*/" + a.subresource) for r in rule.get("resources", [])
    )
    names = rule.get("resourceNames", [])
    return any_of(rule.get("apiGroups", []), a.group) and resource_ok and (not names or a.name in names)


WORDS = st.sampled_from(["", "*", "pods", "log", "exec", "apps", "get", "list", "a", "*/log", "pods/log", "/x", "/x*"])
RULES = st.fixed_dictionaries(
    {},
    optional={
        "verbs": st.lists(WORDS, max_size=3),
        "apiGroups": st.lists(WORDS, max_size=3),
        "resources": st.lists(WORDS, max_size=3),
        "resourceNames": st.lists(WORDS, max_size=2),
        "nonResourceURLs": st.lists(WORDS, max_size=3),
    },
)
REQUESTS = st.one_of(
    st.builds(
        lambda verb, group, resource, sub, name: Attributes(JANE, verb, True, "", group, "v1", resource, sub, name),
        WORDS,
        WORDS,
        WORDS,
        st.sampled_from(["", "log", "exec"]),
        WORDS,
    ),
    st.builds(lambda verb, path: Attributes(JANE, verb, False, path=path), WORDS, st.sampled_from(["/x", "/x/y", "/"])),
)


@given(RULES, REQUESTS)
def test_the_matcher_agrees_with_the_model(rule: dict[str, list[str]], request_: Attributes) -> None:
    assert rule_allows(request_, compile_rule(rule)) == model_allows(request_, rule)


# ---- the authorizer -------------------------------------------------------------------------------------------------


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "rules": rules}


def binding(name: str, kind: str, role_name: str, *subjects: dict[str, str], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "roleRef": {"kind": kind, "name": role_name}, "subjects": list(subjects)}


READ_PODS = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]


def authorizer(
    cluster_roles: Sequence[Any] = (), roles: Sequence[Any] = (), crbs: Sequence[Any] = (), rbs: Sequence[Any] = ()
) -> tuple[RbacAuthorizer, dict[str, StaticCache]]:
    caches = {
        "clusterroles": StaticCache(cluster_roles),
        "roles": StaticCache(roles),
        "clusterrolebindings": StaticCache(crbs),
        "rolebindings": StaticCache(rbs),
    }
    return RbacAuthorizer(caches), caches


def test_nothing_bound_is_denied_without_a_reason() -> None:
    rbac, _ = authorizer([role("reader", READ_PODS)])
    assert rbac.authorize(attrs("get", "pods", ns="ns")) == Decision(allowed=False)


def test_system_masters_is_allowed_everything_without_a_reason() -> None:
    rbac, _ = authorizer()
    admin = UserInfo("admin", groups=("system:masters",))
    assert rbac.authorize(Attributes(admin, "delete", True, resource="nodes")) == Decision(allowed=True)


def test_reasons_name_the_binding_role_and_subject() -> None:
    rbac, _ = authorizer(
        [role("reader", READ_PODS)],
        [role("local", READ_PODS, "ns")],
        [binding("devs-read", "ClusterRole", "reader", {"kind": "Group", "name": "devs"})],
        [
            binding("bot-read", "Role", "local", {"kind": "ServiceAccount", "name": "bot"}, namespace="ns"),
            binding("bot-cr", "ClusterRole", "reader", {"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}, namespace="other"),  # noqa: E501
        ],
    )  # fmt: skip
    decision = rbac.authorize(attrs("list", "pods", ns="anywhere"))
    assert decision.reason == 'RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "reader" to Group "devs"'
    bot = Attributes(SA, "get", True, "ns", "", "v1", "pods", "", "x")
    assert rbac.authorize(bot) == Decision(
        allowed=True, reason='RBAC: allowed by RoleBinding "bot-read/ns" of Role "local" to ServiceAccount "bot/ns"'
    )
    elsewhere = Attributes(SA, "get", True, "other", "", "v1", "pods", "", "x")
    reason = 'RBAC: allowed by RoleBinding "bot-cr/other" of ClusterRole "reader" to ServiceAccount "bot/ns"'
    assert rbac.authorize(elsewhere).reason == reason
    assert not rbac.authorize(Attributes(SA, "get", True, "third", "", "v1", "pods")).allowed
    assert not rbac.authorize(Attributes(SA, "get", True, "", "", "v1", "pods")).allowed  # no cluster-wide grant


def test_a_binding_to_a_missing_role_is_the_reason_of_a_denial() -> None:
    rbac, _ = authorizer(
        crbs=[binding("b", "ClusterRole", "nope", {"kind": "User", "name": "jane"})],
        rbs=[binding("r", "Role", "gone", {"kind": "Group", "name": "devs"}, namespace="ns")],
    )
    decision = rbac.authorize(attrs("get", "pods", ns="ns"))
    assert decision == Decision(
        allowed=False,
        reason='RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
        'role.rbac.authorization.k8s.io "gone" not found]',
    )
    rules = rbac.rules_for(JANE, "ns")
    assert rules.incomplete and "not found" in rules.evaluation_error


def test_changes_take_effect_at_once() -> None:
    rbac, caches = authorizer([role("reader", READ_PODS)])
    assert not rbac.authorize(attrs("get", "pods", ns="ns")).allowed
    caches["rolebindings"].put(binding("b", "ClusterRole", "reader", {"kind": "User", "name": "jane"}, namespace="ns"))
    assert rbac.authorize(attrs("get", "pods", ns="ns")).allowed
    caches["clusterroles"].put(role("reader", []))
    assert not rbac.authorize(attrs("get", "pods", ns="ns")).allowed
    caches["clusterroles"].put(role("reader", READ_PODS))
    caches["rolebindings"].delete("ns/b")
    assert not rbac.authorize(attrs("get", "pods", ns="ns")).allowed


@dataclass
class Event:
    type: str
    revision: int
    current: Any


@dataclass
class Cached:
    obj: dict[str, Any]


class EventCache:
    """A WatchCache's shape with its window of events: the index follows the events without rebuilding."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self.applied = 0
        self.oldest = 0
        self.events: deque[Event] = deque(maxlen=3)

    def write(self, kind: str, obj: dict[str, Any]) -> None:
        self.applied += 1
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = Cached(obj)
        if len(self.events) == self.events.maxlen:
            self.oldest = self.events[0].revision
        self.events.append(Event(kind, self.applied, Cached(obj)))


def test_the_index_follows_watch_events() -> None:
    bindings = EventCache()
    caches = {"clusterroles": StaticCache([role("reader", READ_PODS)]), "roles": StaticCache()}
    rbac = RbacAuthorizer({**caches, "clusterrolebindings": bindings, "rolebindings": StaticCache()})
    assert not rbac.authorize(attrs("get", "pods")).allowed
    jane = binding("b", "ClusterRole", "reader", {"kind": "User", "name": "jane"})
    bindings.write("ADDED", jane)
    assert rbac.authorize(attrs("get", "pods")).allowed
    bindings.write("MODIFIED", binding("b", "ClusterRole", "reader", {"kind": "User", "name": "joe"}))
    assert not rbac.authorize(attrs("get", "pods")).allowed
    for _ in range(5):  # past the window: rebuilt from the objects
        bindings.write("MODIFIED", jane)
    assert rbac.authorize(attrs("get", "pods")).allowed
    bindings.write("DELETED", jane)
    assert not rbac.authorize(attrs("get", "pods")).allowed


def test_rules_for_lists_the_rules_of_the_users_bindings() -> None:
    rbac, _ = authorizer(
        [
            role("reader", [*READ_PODS, {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
            role("named", [{"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]}]),  # noqa: E501
        ],
        crbs=[binding("b", "ClusterRole", "reader", {"kind": "Group", "name": "devs"})],
        rbs=[binding("n", "ClusterRole", "named", {"kind": "User", "name": "jane"}, namespace="ns")],
    )  # fmt: skip
    rules = rbac.rules_for(JANE, "ns")
    assert rules.resource_rules == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
    ]
    assert rules.non_resource_rules == [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]
    assert not rules.incomplete
    assert len(rbac.rules_for(JANE, "other").resource_rules) == 1


# ---- 403 messages ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "message", "details"),
    [
        (
            Attributes(SA, "list", True, "ns", "", "v1", "pods"),
            'pods is forbidden: User "system:serviceaccount:ns:bot" cannot list resource "pods" in API group "" in '
            'the namespace "ns"',
            {"kind": "pods"},
        ),
        (
            Attributes(SA, "list", True, "", "", "v1", "nodes"),
            'nodes is forbidden: User "system:serviceaccount:ns:bot" cannot list resource "nodes" in API group "" at '
            "the cluster scope",
            {"kind": "nodes"},
        ),
        (
            Attributes(JANE, "get", True, "ns", "apps", "v1", "deployments", "scale", "web"),
            'deployments.apps "web" is forbidden: User "jane" cannot get resource "deployments/scale" in API group '
            '"apps" in the namespace "ns"',
            {"name": "web", "group": "apps", "kind": "deployments"},
        ),
        (
            Attributes(JANE, "create", True, "ns", "", "v1", "pods", "exec", "x"),
            'pods "x" is forbidden: User "jane" cannot create resource "pods/exec" in API group "" in the namespace '
            '"ns"',
            {"name": "x", "kind": "pods"},
        ),
        (Attributes(JANE, "get", False, path="/foo"), 'forbidden: User "jane" cannot get path "/foo"', {}),
    ],
)
def test_forbidden_messages(attributes: Attributes, message: str, details: dict[str, str]) -> None:
    error = forbidden(attributes)
    assert (error.code, error.reason, error.message, error.details) == (403, "Forbidden", message, details)


# ---- impersonation --------------------------------------------------------------------------------------------------


def test_impersonation_headers() -> None:
    headers = [
        (b"impersonate-user", b"system:serviceaccount:ns:bot"),
        (b"impersonate-group", b"a"),
        (b"impersonate-group", b"b"),
        (b"impersonate-extra-scopes", b"view"),
        (b"impersonate-extra-acme.com%2fproject", b"x"),
        (b"impersonate-uid", b"1234"),
    ]
    wanted = requests_of(headers)
    assert wanted == [
        Wanted("ServiceAccount", "bot", "ns"),
        Wanted("Group", "a"),
        Wanted("Group", "b"),
        Wanted("UserExtra", "view", extra_key="scopes"),
        Wanted("UserExtra", "x", extra_key="acme.com/project"),
        Wanted("UID", "1234"),
    ]
    user = impersonated(wanted)
    assert user == UserInfo(
        "system:serviceaccount:ns:bot",
        "1234",
        ("a", "b", "system:authenticated"),
        {"scopes": ("view",), "acme.com/project": ("x",)},
    )


def test_impersonated_groups() -> None:
    assert impersonated([Wanted("User", "jane")]).groups == ("system:authenticated",)
    sa = impersonated([Wanted("ServiceAccount", "bot", "ns")])
    assert sa.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    unauth = impersonated([Wanted("User", "jane"), Wanted("Group", "system:unauthenticated")])
    assert unauth.groups == ("system:unauthenticated",)
    assert impersonated([Wanted("User", "system:anonymous")]).groups == ("system:unauthenticated",)


def test_groups_without_a_user_are_refused() -> None:
    with pytest.raises(errors.BadRequest, match="without impersonating a user"):
        requests_of([(b"impersonate-group", b"devs")])


# ---- escalation -----------------------------------------------------------------------------------------------------


def test_coverage_and_its_description() -> None:
    from tinykube.apiserver.auth.rbac_escalation import compact, compact_string, uncovered

    owned = [compile_rule(r) for r in [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/log"]},
        {"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]},
    ]]  # fmt: skip
    wanted = [compile_rule(r) for r in [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "pods/log", "services/log"]},
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz/etcd"]},
    ]]  # fmt: skip
    assert uncovered(owned, wanted) == []
    more = [compile_rule(r) for r in [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "secrets"]},
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments"]},
        {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
    ]]  # fmt: skip
    missing = compact(uncovered(owned, more))
    assert sorted(compact_string(r) for r in missing) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}',
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["update"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
    ]
