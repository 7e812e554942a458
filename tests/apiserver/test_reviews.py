"""The resources answered per request: the six reviews, componentstatuses, and the RBAC bootstrap policy with its
aggregation. Validation and aggregation are tested as pure functions first; the rest against the session's real
apiserver (fixtures `cluster`, `api`, `namespace`).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually
from tinykube.api.aggregation import aggregate
from tinykube.apiserver.auth import reviews
from tinykube.apiserver.kinds.rbac.bootstrap_policy import AGGREGATE_TO_VIEW, cluster_roles

AUTHZ = "/apis/authorization.k8s.io/v1"
AUTHN = "/apis/authentication.k8s.io/v1"
POD_GET = {"verb": "get", "resource": "pods", "namespace": "default"}
NULL_BOTH = 'spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes'


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


# ---- validation ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"user": "me", "resourceAttributes": POD_GET}, [], id="valid"),
        pytest.param({"groups": ["g"], "nonResourceAttributes": {"verb": "get", "path": "/x"}}, [], id="groups"),
        pytest.param(
            {"user": "me"}, [NULL_BOTH + " must be specified"], id="neither"
        ),
        pytest.param(
            {"user": "me", "resourceAttributes": {}, "nonResourceAttributes": {}},
            ["spec.nonResourceAttributes: Invalid value: {}: "
             "cannot be specified in combination with resourceAttributes"],
            id="both",
        ),
        pytest.param(
            {"resourceAttributes": {}},
            ['spec.user: Invalid value: "": at least one of user or group must be specified'],
            id="nobody",
        ),
        pytest.param(
            {"user": "me", "resourceAttributes": {"fieldSelector": {"rawSelector": "a=b", "requirements": [{}]}}},
            ['spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "a=b": '
             "may not specified at the same time as requirements"],
            id="field-selector-both",
        ),
        pytest.param(
            {"user": "me", "resourceAttributes": {"labelSelector": {}}},
            ["spec.resourceAttributes.labelSelector.requirements: Required value: when "
             "spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required"],
            id="label-selector-neither",
        ),
    ],
)  # fmt: skip
def test_subject_access_review_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert messages(reviews.subject_access_review_errors({"metadata": {}, "spec": spec})) == expected


def test_review_metadata_must_be_empty() -> None:
    review = {"metadata": {"name": "x", "creationTimestamp": None}, "spec": {"resourceAttributes": POD_GET}}
    assert messages(reviews.self_subject_access_review_errors(review)) == [
        'metadata: Invalid value: {"name":"x","creationTimestamp":null}: must be empty'
    ]
    null_only = {"metadata": {"creationTimestamp": None}, "spec": review["spec"]}  # what kubectl sends
    assert reviews.self_subject_access_review_errors(null_only) == []


def test_local_subject_access_review_stays_in_its_namespace() -> None:
    review = {
        "metadata": {"namespace": "a"},
        "spec": {"user": "me", "resourceAttributes": {**POD_GET, "namespace": "b"}},
    }
    assert messages(reviews.local_subject_access_review_errors(review)) == [
        'spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace'
    ]
    review["spec"] = {"user": "me", "nonResourceAttributes": {"verb": "get", "path": "/x"}}
    assert messages(reviews.local_subject_access_review_errors(review)) == [
        'spec.nonResourceAttributes: Invalid value: {"verb":"get","path":"/x"}: disallowed on this kind of request'
    ]


# ---- aggregation --------------------------------------------------------------------------------------------------


def role(name: str, labels: dict[str, str], *rules: dict[str, Any], selectors: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name, "labels": labels}, "rules": list(rules)}
    if selectors is not None:
        body["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return body


READ_PODS = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
READ_NODES = {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}


def test_aggregation_takes_each_rule_once_in_name_order_never_its_own() -> None:
    label = {"agg": "yes"}
    target = role("target", label, READ_NODES, selectors=[{"matchLabels": label}, {"matchLabels": {"x": "1"}}])
    roles = [
        target,
        role("b", label, READ_PODS, {**READ_PODS, "resourceNames": []}),  # an empty list is no list: the same rule
        role("a", label, READ_NODES),
        role("c", {"x": "1"}, READ_PODS),
        role("d", {}, {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
    ]
    assert aggregate(target, roles) == [READ_NODES, READ_PODS]


def test_the_bootstrap_roles_aggregate_view_into_edit_into_admin() -> None:
    by_name = {r["metadata"]["name"]: r for r in cluster_roles()}
    assert by_name["view"]["rules"] == AGGREGATE_TO_VIEW
    assert all(rule in by_name["edit"]["rules"] for rule in AGGREGATE_TO_VIEW)
    assert all(rule in by_name["admin"]["rules"] for rule in by_name["edit"]["rules"])
    assert len(by_name["admin"]["rules"]) > len(by_name["edit"]["rules"]) > len(by_name["view"]["rules"])
    for name in ("view", "edit", "admin"):  # what the controller would compute from the same roles
        assert aggregate(by_name[name], list(by_name.values())) == by_name[name]["rules"]


# ---- the reviews, served ------------------------------------------------------------------------------------------


def post(api: httpx.Client, path: str, body: dict[str, Any], code: int = 201) -> dict[str, Any]:
    response = api.post(path, json=body)
    assert response.status_code == code, response.text
    result: dict[str, Any] = response.json()
    return result


def test_access_reviews_answer_as_rbac_decides(api: httpx.Client, namespace: str) -> None:
    """The administrator (system:masters) is allowed with no reason given, as upstream's privileged group; users
    nothing grants anything are denied, with no reason either (tests/apiserver/test_rbac_* go further)."""
    ssar = post(api, f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {"resourceAttributes": POD_GET}})
    assert ssar == {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": {"resourceAttributes": POD_GET},
        "status": {"allowed": True},
    }
    sar = post(api, f"{AUTHZ}/subjectaccessreviews", {"spec": {"user": "alice", "resourceAttributes": POD_GET}})
    assert sar["status"] == {"allowed": False}
    spec = {"groups": ["devs"], "resourceAttributes": {**POD_GET, "namespace": namespace}}
    lsar = post(api, f"{AUTHZ}/namespaces/{namespace}/localsubjectaccessreviews", {"spec": spec})
    assert (lsar["metadata"], lsar["status"]) == (
        {"namespace": namespace, "creationTimestamp": None},
        {"allowed": False},
    )


def test_invalid_reviews_are_refused_as_upstream(api: httpx.Client, namespace: str) -> None:
    body = post(api, f"{AUTHZ}/subjectaccessreviews", {"spec": {}}, 422)
    assert body["message"] == (
        f'.authorization.k8s.io "" is invalid: [{NULL_BOTH} must be specified, '
        'spec.user: Invalid value: "": at least one of user or group must be specified]'
    )
    other = {"spec": {"user": "me", "resourceAttributes": {**POD_GET, "namespace": "elsewhere"}}}
    body = post(api, f"{AUTHZ}/namespaces/{namespace}/localsubjectaccessreviews", other, 422)
    assert body["message"].endswith('spec.resourceAttributes.namespace: Invalid value: "elsewhere": must match '
                                    "metadata.namespace")  # fmt: skip
    elsewhere = {"metadata": {"namespace": "elsewhere"}, "spec": other["spec"]}
    body = post(api, f"{AUTHZ}/namespaces/{namespace}/localsubjectaccessreviews", elsewhere, 400)
    assert body["message"] == "the namespace of the provided object does not match the namespace sent on the request"


def test_the_rules_review_lists_the_users_rules(api: httpx.Client) -> None:
    review = post(api, f"{AUTHZ}/selfsubjectrulesreviews", {"spec": {"namespace": "default"}})
    assert review["spec"] == {}
    status = review["status"]  # the administrator's bindings: cluster-admin's rules first (bindings in name order)
    assert status["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert status["nonResourceRules"][0] == {"verbs": ["*"], "nonResourceURLs": ["*"]}
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in (
        status["nonResourceRules"]
    )
    assert status["incomplete"] is False
    assert post(api, f"{AUTHZ}/selfsubjectrulesreviews", {"spec": {}}, 400)["message"] == "no namespace on request"


def test_self_subject_review_is_who_asks(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    admin = post(api, f"{AUTHN}/selfsubjectreviews", {})
    assert admin["status"] == {
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
    }
    assert admin["metadata"]["creationTimestamp"]
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    post(api, path, {"metadata": {"name": "bot"}})
    token = post(api, f"{path}/bot/token", {})["status"]["token"]
    with cluster.http(headers={"Authorization": f"Bearer {token}"}) as client:
        info = post(client, f"{AUTHN}/selfsubjectreviews", {})["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{namespace}:bot"
    assert info["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
    assert info["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")


def test_token_review(cluster: RunningCluster, api: httpx.Client) -> None:
    ok = post(api, f"{AUTHN}/tokenreviews", {"spec": {"token": cluster.token}})
    assert ok["status"] == {
        "authenticated": True,
        "user": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "audiences": ["https://kubernetes.default.svc.cluster.local"],
    }
    assert ok["spec"] == {"token": cluster.token} and ok["metadata"] == {"creationTimestamp": None}
    elsewhere = post(api, f"{AUTHN}/tokenreviews", {"spec": {"token": cluster.token, "audiences": ["vault"]}})
    assert elsewhere["status"] == {"user": {}, "error": "invalid bearer token"}
    bad = post(api, f"{AUTHN}/tokenreviews", {"spec": {"token": "nonsense"}})
    assert bad["status"] == {"user": {}, "error": "invalid bearer token"}
    missing = post(api, f"{AUTHN}/tokenreviews", {"spec": {}}, 400)
    assert missing["message"] == "token is required for TokenReview in authentication"


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        pytest.param("GET", f"{AUTHZ}/selfsubjectaccessreviews", 405, id="list-review"),
        pytest.param("GET", f"{AUTHZ}/selfsubjectaccessreviews?watch=true", 405, id="watch-review"),
        pytest.param("DELETE", f"{AUTHN}/tokenreviews", 405, id="delete-collection"),
        pytest.param("GET", f"{AUTHN}/tokenreviews/x", 404, id="named-review"),
        pytest.param("PUT", f"{AUTHN}/selfsubjectreviews/x", 404, id="update-review"),
        pytest.param("POST", f"{AUTHZ}/localsubjectaccessreviews", 404, id="local-outside-namespace"),
        pytest.param("POST", "/api/v1/componentstatuses", 405, id="create-cs"),
        pytest.param("DELETE", "/api/v1/componentstatuses/etcd-0", 405, id="delete-cs"),
    ],
)
def test_other_verbs_are_refused(api: httpx.Client, method: str, path: str, code: int) -> None:
    response = api.request(method, path, json={"spec": {}})
    assert response.status_code == code, response.text
    assert response.json()["reason"] == {404: "NotFound", 405: "MethodNotAllowed"}[code]


# ---- componentstatuses --------------------------------------------------------------------------------------------


def test_component_statuses(api: httpx.Client) -> None:
    """The test cluster runs without the scheduler (`--controllers *,-scheduler`): it says so."""
    listed = api.get("/api/v1/componentstatuses")
    assert listed.headers["warning"] == '299 - "v1 ComponentStatus is deprecated in v1.19+"'
    body = listed.json()
    assert (body["kind"], body["apiVersion"], body["metadata"]) == ("ComponentStatusList", "v1", {})
    by_name = {item["metadata"]["name"]: item["conditions"] for item in body["items"]}
    assert by_name["etcd-0"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    assert by_name["controller-manager"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    assert by_name["scheduler"] == [
        {"type": "Healthy", "status": "False", "error": "the scheduler is not running in this tinykube process"}
    ]
    one = api.get("/api/v1/componentstatuses/etcd-0").json()
    assert one == {
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": "etcd-0", "creationTimestamp": None},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    }
    unknown = api.get("/api/v1/componentstatuses/nope")
    assert unknown.status_code == 500 and "reason" not in unknown.json()
    assert unknown.json()["message"] == "Component not found: nope"
    watch = api.get("/api/v1/componentstatuses", params={"watch": "true"})
    assert (watch.status_code, watch.json()["message"]) == (
        405,
        'watch is not supported on resources of kind "componentstatuses"',
    )


def test_component_statuses_as_a_table(api: httpx.Client) -> None:
    table = api.get(
        "/api/v1/componentstatuses", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    ).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Message", "Error"]
    rows = {row["cells"][0]: row["cells"][1:] for row in table["rows"]}
    assert rows["etcd-0"] == ["Healthy", "ok", ""]
    assert rows["scheduler"][0] == "Unhealthy"


# ---- the bootstrap policy -----------------------------------------------------------------------------------------

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def test_the_default_cluster_roles_and_bindings_exist(api: httpx.Client) -> None:
    roles = {r["metadata"]["name"]: r for r in api.get(f"{RBAC}/clusterroles").json()["items"]}
    expected = {r["metadata"]["name"] for r in cluster_roles()}
    assert expected <= set(roles)
    for name in ("cluster-admin", "system:discovery", "system:basic-user", "system:node", "view"):
        meta = roles[name]["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert meta["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert roles["cluster-admin"]["rules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]
    assert roles["edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    bindings = {b["metadata"]["name"]: b for b in api.get(f"{RBAC}/clusterrolebindings").json()["items"]}
    assert bindings["cluster-admin"]["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}
    ]
    assert bindings["system:kube-dns"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}
    ]
    assert "subjects" not in bindings["system:node"]
    assert bindings["system:service-account-issuer-discovery"]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:service-account-issuer-discovery",
    }


def test_aggregated_roles_follow_their_sources(api: httpx.Client, request: pytest.FixtureRequest) -> None:
    name = f"widgets-view-{request.node.name[-6:].strip('[]')}"
    widgets = {"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": [f"widgets-{name}"]}
    body = {
        "metadata": {"name": name, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [widgets],
    }
    post(api, f"{RBAC}/clusterroles", body)
    try:
        for aggregated in ("view", "edit", "admin"):
            eventually(
                lambda a=aggregated: widgets in (api.get(f"{RBAC}/clusterroles/{a}").json()["rules"] or []),
                what=f"{aggregated} to include the new rule",
            )
    finally:
        api.delete(f"{RBAC}/clusterroles/{name}")
    eventually(
        lambda: widgets not in api.get(f"{RBAC}/clusterroles/admin").json()["rules"], what="the rule to leave admin"
    )
