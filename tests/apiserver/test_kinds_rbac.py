"""RBAC's strategies and printers without HTTP: upstream 1.32's defaults, field paths and messages for Role,
ClusterRole, RoleBinding and ClusterRoleBinding.

The last section runs against a real apiserver (fixtures `api`, `namespace`): it needs the kinds to be served.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.apiserver.kinds import created, strategy
from tinykube.api.meta import validate_object_meta
from tinykube.api.resources import RESOURCES
from tinykube.apiserver.kinds.printers import table

GROUP = "rbac.authorization.k8s.io"


def create_errors(plural: str, obj: dict[str, Any]) -> list[str]:
    return created(plural, obj)[1]


# ---- names -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("plural", ["roles", "clusterroles", "rolebindings", "clusterrolebindings"])
@pytest.mark.parametrize(
    ("name", "messages"),
    [
        pytest.param("system:node", [], id="colons-allowed"),
        pytest.param("Admin_Role", [], id="any-case"),
        pytest.param("..", ["metadata.name: Invalid value: \"..\": may not be '..'"], id="dotdot"),
        pytest.param(
            "a/b%c",
            [
                "metadata.name: Invalid value: \"a/b%c\": may not contain '/'",
                "metadata.name: Invalid value: \"a/b%c\": may not contain '%'",
            ],
            id="slash-and-percent",
        ),
    ],
)
def test_rbac_names_are_path_segments(plural: str, name: str, messages: list[str]) -> None:
    s = strategy(plural)
    namespaced = plural in ("roles", "rolebindings")
    meta = {"name": name, **({"namespace": "ns"} if namespaced else {})}
    assert [str(e) for e in validate_object_meta(meta, namespaced=namespaced, name_rule=s.name_rule)] == messages


# ---- roles -------------------------------------------------------------------------------------------------------


def test_role_rules_written_as_null_when_absent() -> None:
    obj, errs = created("roles", {})
    assert errs == []
    assert "rules" in obj and obj["rules"] is None


@pytest.mark.parametrize(
    ("rule", "messages"),
    [
        pytest.param({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, [], id="valid"),
        pytest.param(
            {"apiGroups": [""], "resources": ["pods"]},
            ["rules[0].verbs: Required value: verbs must contain at least one value"],
            id="no-verbs",
        ),
        pytest.param(
            {"verbs": ["get"]},
            [
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ],
            id="no-groups-no-resources",
        ),
        pytest.param(
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            ['rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to '
             "non-resource URLs"],
            id="urls-in-a-role",
        ),
    ],
)  # fmt: skip
def test_role_rules(rule: dict[str, Any], messages: list[str]) -> None:
    assert create_errors("roles", {"rules": [rule]}) == messages


def test_cluster_role_rules() -> None:
    assert create_errors("clusterroles", {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}) == []
    mixed = {"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}
    assert create_errors("clusterroles", {"rules": [mixed]}) == [
        'rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular '
        "resources and non-resource URLs"
    ]


def test_cluster_role_aggregation_rule() -> None:
    selector = {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}
    assert create_errors("clusterroles", {"aggregationRule": {"clusterRoleSelectors": [selector]}}) == []
    assert create_errors("clusterroles", {"aggregationRule": {}}) == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
        "aggregationRule is non-nil"
    ]
    bad = {"matchExpressions": [{"key": "a", "operator": "Near"}]}
    assert create_errors("clusterroles", {"aggregationRule": {"clusterRoleSelectors": [bad]}}) == [
        'aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid '
        "selector operator",
        "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
    ]


# ---- bindings ----------------------------------------------------------------------------------------------------


def role_binding(**fields: Any) -> dict[str, Any]:
    return {"roleRef": {"kind": "ClusterRole", "name": "view"}, **fields}


def test_binding_defaults_api_groups() -> None:
    subjects = [
        {"kind": "User", "name": "alice"},
        {"kind": "Group", "name": "dev"},
        {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
    ]
    obj, errs = created("rolebindings", role_binding(subjects=subjects))
    assert errs == []
    assert obj["roleRef"]["apiGroup"] == GROUP
    assert [s.get("apiGroup") for s in obj["subjects"]] == [GROUP, GROUP, None]


@pytest.mark.parametrize(
    ("plural", "ref", "messages"),
    [
        pytest.param("rolebindings", {"kind": "Role", "name": "r"}, [], id="role"),
        pytest.param(
            "clusterrolebindings",
            {"kind": "Role", "name": "r"},
            ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"'],
            id="crb-to-a-role",
        ),
        pytest.param(
            "rolebindings",
            {"kind": "Policy", "name": "r", "apiGroup": "example.com"},
            [
                'roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"',
                'roleRef.kind: Unsupported value: "Policy": supported values: "Role", "ClusterRole"',
            ],
            id="foreign-ref",
        ),
        pytest.param("rolebindings", {"kind": "Role"}, ["roleRef.name: Required value"], id="no-name"),
    ],
)
def test_binding_role_ref(plural: str, ref: dict[str, Any], messages: list[str]) -> None:
    assert create_errors(plural, {"roleRef": ref}) == messages


@pytest.mark.parametrize(
    ("plural", "subject", "messages"),
    [
        pytest.param(
            "clusterrolebindings",
            {"kind": "ServiceAccount", "name": "default"},
            ["subjects[0].namespace: Required value"],
            id="crb-sa-needs-namespace",
        ),
        pytest.param("rolebindings", {"kind": "ServiceAccount", "name": "default"}, [], id="rb-sa-namespace-optional"),
        pytest.param(
            "rolebindings",
            {"kind": "ServiceAccount", "name": "default", "apiGroup": GROUP},
            ['subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""'],
            id="sa-api-group",
        ),
        pytest.param(
            "rolebindings",
            {"kind": "User", "name": ""},
            ["subjects[0].name: Required value", 'subjects[0].name: Invalid value: "": user name cannot be empty'],
            id="empty-user",
        ),
        pytest.param(
            "rolebindings",
            {"kind": "Group", "name": "dev", "apiGroup": "example.com"},
            ['subjects[0].apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"'],
            id="group-api-group",
        ),
        pytest.param(
            "rolebindings",
            {"kind": "Robot", "name": "r2"},
            ['subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"'],
            id="kind",
        ),
    ],
)
def test_binding_subjects(plural: str, subject: dict[str, Any], messages: list[str]) -> None:
    assert create_errors(plural, role_binding(subjects=[subject])) == messages


@pytest.mark.parametrize("plural", ["rolebindings", "clusterrolebindings"])
def test_binding_role_ref_cannot_change(plural: str) -> None:
    s = strategy(plural)
    old, errs = created(plural, role_binding())
    assert errs == []
    new = copy.deepcopy(old)
    new["roleRef"]["name"] = "edit"
    new["subjects"] = [{"kind": "User", "name": "bob"}]
    s.prepare_update(new, old)
    assert [str(e) for e in s.validate(new, old)] == [
        'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
        'Name:"edit"}: cannot change roleRef'
    ]
    unchanged = copy.deepcopy(old)
    unchanged["subjects"] = [{"kind": "User", "name": "bob"}]
    s.prepare_update(unchanged, old)
    assert s.validate(unchanged, old) == []


# ---- printers ----------------------------------------------------------------------------------------------------

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = (NOW - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


def printed(plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    info = next(r for r in RESOURCES if r.plural == plural and r.stored)
    obj.setdefault("metadata", {"name": "x", "creationTimestamp": CREATED})
    result: dict[str, Any] = table(info, [obj], now=NOW)
    return result


@pytest.mark.parametrize("plural", ["roles", "clusterroles"])
def test_roles_print_name_and_created_at(plural: str) -> None:
    result = printed(plural, {})
    assert [c["name"] for c in result["columnDefinitions"]] == ["Name", "Created At"]
    assert result["rows"][0]["cells"] == ["x", CREATED]


@pytest.mark.parametrize("plural", ["rolebindings", "clusterrolebindings"])
def test_bindings_print_role_and_subjects(plural: str) -> None:
    subjects = [
        {"kind": "User", "name": "alice"},
        {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
        {"kind": "User", "name": "bob"},
        {"kind": "Group", "name": "dev"},
    ]
    result = printed(plural, role_binding(subjects=subjects))
    columns = result["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in columns] == [
        ("Name", 0),
        ("Role", 0),
        ("Age", 0),
        ("Users", 1),
        ("Groups", 1),
        ("ServiceAccounts", 1),
    ]
    assert result["rows"][0]["cells"] == ["x", "ClusterRole/view", "120m", "alice, bob", "dev", "ns/default"]
    assert printed(plural, role_binding())["rows"][0]["cells"][3:] == ["", "", ""]


# ---- against a real apiserver (needs the kinds served) -----------------------------------------------------------


def test_served_role_binding_role_ref_is_immutable(api: httpx.Client, namespace: str) -> None:
    url = f"/apis/{GROUP}/v1/namespaces/{namespace}/rolebindings"
    body = {"apiVersion": f"{GROUP}/v1", "kind": "RoleBinding", "metadata": {"name": "b"}, **role_binding()}
    response = api.post(url, json=body)
    assert response.status_code == 201, response.text
    assert response.json()["roleRef"]["apiGroup"] == GROUP
    patch = {"roleRef": {"name": "edit"}}
    response = api.patch(f"{url}/b", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        f'RoleBinding.{GROUP} "b" is invalid: roleRef: Invalid value: rbac.RoleRef{{APIGroup:"{GROUP}", '
        'Kind:"ClusterRole", Name:"edit"}: cannot change roleRef'
    )


def test_served_role_refuses_non_resource_urls(api: httpx.Client, namespace: str) -> None:
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
    }
    response = api.post(f"/apis/{GROUP}/v1/namespaces/{namespace}/roles", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["details"]["causes"][0]["field"] == "rules[0].nonResourceURLs"
