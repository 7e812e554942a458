"""RBAC enforced on a real cluster, through the REST API and kubectl: what a ServiceAccount may do follows its
bindings, with upstream's 403 messages; anonymous requests; `kubectl auth can-i` (with `--as` and `--list`);
impersonation checked against the `impersonate` verb; aggregated roles; the WebSocket exec check; and
`--authorization-mode AlwaysAllow`."""

from __future__ import annotations

import secrets
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import RunningCluster, eventually, running_cluster

RBAC = "/apis/rbac.authorization.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"


def service_account_token(api: httpx.Client, namespace: str, name: str) -> str:
    made = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": name}})
    assert made.status_code in (201, 409), made.text
    response = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", json={"spec": {}})
    assert response.status_code == 201, response.text
    return str(response.json()["status"]["token"])


def client_with(cluster: RunningCluster, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    return httpx.Client(base_url=cluster.server, verify=verify, headers=headers, timeout=30)


def bind(api: httpx.Client, namespace: str, name: str, role: str, subject: dict[str, str], kind: str = "ClusterRole") -> None:  # fmt: skip  # noqa: E501
    body = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [subject],
    }
    response = api.post(f"{RBAC}/namespaces/{namespace}/rolebindings", json=body)
    assert response.status_code == 201, response.text


def sa_subject(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


@pytest.fixture
def cluster_objects(api: httpx.Client) -> Iterator[list[str]]:
    """Paths of cluster-scoped objects a test makes on the shared cluster, deleted afterwards."""
    made: list[str] = []
    yield made
    for path in made:
        api.delete(path)


def test_a_service_account_gets_what_its_bindings_grant(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    user = f"system:serviceaccount:{namespace}:bot"
    with client_with(cluster, service_account_token(api, namespace, "bot")) as bot:
        denied = bot.get(f"/api/v1/namespaces/{namespace}/pods")
        assert denied.status_code == 403
        assert denied.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the '
            f'namespace "{namespace}"',
            "reason": "Forbidden",
            "details": {"kind": "pods"},
            "code": 403,
        }
        assert bot.get("/api").status_code == 200  # system:discovery
        assert bot.get("/version").status_code == 200
        bind(api, namespace, "bot-view", "view", sa_subject(namespace, "bot"))
        assert bot.get(f"/api/v1/namespaces/{namespace}/pods").status_code == 200
        assert bot.get(f"/api/v1/namespaces/{namespace}/pods?watch=true&timeoutSeconds=0").status_code == 200
        assert bot.get(f"/api/v1/namespaces/{namespace}/pods/nope").status_code == 404
        secret = bot.get(f"/api/v1/namespaces/{namespace}/secrets/s").json()
        assert secret["message"] == (
            f'secrets "s" is forbidden: User "{user}" cannot get resource "secrets" in API group "" in the namespace '
            f'"{namespace}"'
        )
        assert secret["details"] == {"name": "s", "kind": "secrets"}
        nodes = bot.get("/api/v1/nodes").json()
        assert nodes["message"] == (
            f'nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" at the cluster scope'
        )
        exec_ = bot.post(f"/api/v1/namespaces/{namespace}/pods/web/exec?command=ls").json()
        assert exec_["message"].startswith(f'pods "web" is forbidden: User "{user}" cannot create resource "pods/exec"')
        other = bot.get("/foo").json()
        assert (other["message"], other["details"]) == (f'forbidden: User "{user}" cannot get path "/foo"', {})
        deploy = bot.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json={}).json()
        assert deploy["message"].startswith("deployments.apps is forbidden: ")
        assert deploy["details"] == {"group": "apps", "kind": "deployments"}


def test_anonymous_requests_see_only_public_information(cluster: RunningCluster) -> None:
    with client_with(cluster, None) as anonymous:
        for path in ("/healthz", "/livez", "/readyz", "/version"):
            assert anonymous.get(path).status_code == 200, path
        refused = anonymous.get("/api")
        assert refused.status_code == 403
        assert refused.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
        pods = anonymous.get("/api/v1/namespaces/default/pods").json()
        assert pods["message"] == (
            'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace '
            '"default"'
        )
    with client_with(cluster, "wrong") as wrong:
        assert wrong.get("/healthz").status_code == 401


def test_access_reviews_answer_from_rbac(api: httpx.Client, namespace: str) -> None:
    def sar(spec: dict[str, Any]) -> dict[str, Any]:
        response = api.post(f"{AUTHZ}/subjectaccessreviews", json={"spec": spec})
        assert response.status_code == 201, response.text
        status: dict[str, Any] = response.json()["status"]
        return status

    pods = {"verb": "list", "resource": "pods", "namespace": namespace}
    group = f"devs-{secrets.token_hex(3)}"
    assert sar({"user": "jane", "groups": [group], "resourceAttributes": pods}) == {"allowed": False}
    bind(api, namespace, "devs-edit", "edit", {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"})
    assert sar({"user": "jane", "groups": [group], "resourceAttributes": pods}) == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "devs-edit/{namespace}" of ClusterRole "edit" to Group "{group}"',
    }
    assert sar({"user": "x", "groups": ["system:masters"], "resourceAttributes": pods}) == {"allowed": True}
    kind_admin = {"user": "kubernetes-admin", "groups": ["kubeadm:cluster-admins"], "resourceAttributes": pods}
    assert sar(kind_admin)["reason"] == (
        'RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group '
        '"kubeadm:cluster-admins"'
    )
    healthz = {"user": "x", "groups": ["system:unauthenticated"], "nonResourceAttributes": {"verb": "get", "path": "/healthz"}}  # fmt: skip  # noqa: E501
    reason = 'RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"'  # fmt: skip  # noqa: E501
    assert sar(healthz) == {"allowed": True, "reason": reason}
    ssar = api.post(f"{AUTHZ}/selfsubjectaccessreviews", json={"spec": {"resourceAttributes": pods}})
    assert ssar.json()["status"] == {"allowed": True}  # the administrator: system:masters


def test_kubectl_auth_can_i_as_a_service_account(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    service_account_token(api, namespace, "bot")
    who = f"--as=system:serviceaccount:{namespace}:bot"
    no = cluster.kubectl("auth", "can-i", "create", "pods", who, "-n", namespace, check=False)
    assert (no.returncode, no.stdout) == (1, "no\n")
    bind(api, namespace, "bot-edit", "edit", sa_subject(namespace, "bot"))
    yes = cluster.kubectl("auth", "can-i", "create", "pods", who, "-n", namespace)
    assert yes.stdout == "yes\n"
    assert cluster.kubectl("auth", "can-i", "list", "nodes", who, check=False).stdout == "no\n"
    assert cluster.kubectl("auth", "can-i", "create", "pods/exec", who, "-n", namespace).stdout == "yes\n"
    listed = cluster.kubectl("auth", "can-i", "--list", who, "-n", namespace).stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    rows = {line.split()[0]: line[line.rindex("[") :] for line in listed[1:] if not line.startswith(" ")}
    assert rows["pods"] == "[create delete deletecollection patch update get list watch]"  # as kind prints it
    assert rows["selfsubjectaccessreviews.authorization.k8s.io"] == "[create]"
    assert rows["deployments.apps"] == "[create delete deletecollection patch update get list watch]"
    assert any(line.split()[:1] == ["[/api]"] for line in (row.strip() for row in listed[1:]))
    mine = cluster.kubectl("auth", "can-i", "--list", "-n", namespace).stdout.splitlines()
    assert "*.*" in (line.split()[0] for line in mine[1:])  # the administrator: cluster-admin's rules


def test_kubectl_as_needs_the_impersonate_verb(
    cluster: RunningCluster, api: httpx.Client, namespace: str, cluster_objects: list[str], tmp_path: Path
) -> None:
    kubeconfig = sa_kubeconfig(cluster, api, namespace, "bot", tmp_path)
    user = f"system:serviceaccount:{namespace}:bot"
    refused = cluster.kubectl("--kubeconfig", str(kubeconfig), "get", "pods", "--as=jane", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): users "jane" is forbidden: User "{user}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )
    name = f"t-impersonate-{secrets.token_hex(3)}"
    role = {
        "metadata": {"name": name},
        "rules": [
            {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["jane"]},
            {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups"], "resourceNames": ["devs"]},
        ],
    }
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    cluster_objects.append(f"{RBAC}/clusterroles/{name}")
    crb = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [sa_subject(namespace, "bot")],
    }
    assert api.post(f"{RBAC}/clusterrolebindings", json=crb).status_code == 201
    cluster_objects.append(f"{RBAC}/clusterrolebindings/{name}")
    whoami = cluster.kubectl("--kubeconfig", str(kubeconfig), "auth", "whoami", "--as=jane", "--as-group=devs", "-o", "json")  # fmt: skip  # noqa: E501
    assert yaml.safe_load(whoami.stdout)["status"]["userInfo"] == {
        "username": "jane",
        "groups": ["devs", "system:authenticated"],
    }
    other_group = cluster.kubectl(
        "--kubeconfig", str(kubeconfig), "get", "pods", "--as=jane", "--as-group=admins", check=False
    )
    assert 'groups "admins" is forbidden' in other_group.stderr
    # the administrator may impersonate anyone; the impersonated user has only its own rights
    denied = cluster.kubectl("get", "nodes", "--as=jane", check=False)
    assert 'User "jane" cannot list resource "nodes"' in denied.stderr


def sa_kubeconfig(cluster: RunningCluster, api: httpx.Client, namespace: str, name: str, directory: Path) -> Path:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": name, "user": {"token": service_account_token(api, namespace, name)}}]
    for context in config["contexts"]:
        context["context"]["user"] = name
    path = directory / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_aggregated_roles_grant_what_is_aggregated_into_them(
    cluster: RunningCluster, api: httpx.Client, namespace: str, cluster_objects: list[str]
) -> None:
    name = f"t-widgets-view-{secrets.token_hex(3)}"
    role = {
        "metadata": {"name": name, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
    }
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    cluster_objects.append(f"{RBAC}/clusterroles/{name}")
    service_account_token(api, namespace, "viewer")
    bind(api, namespace, "viewer", "admin", sa_subject(namespace, "viewer"))  # admin ⊇ edit ⊇ view
    spec = {
        "user": f"system:serviceaccount:{namespace}:viewer",
        "resourceAttributes": {"verb": "list", "group": "example.com", "resource": "widgets", "namespace": namespace},
    }
    eventually(
        lambda: api.post(f"{AUTHZ}/subjectaccessreviews", json={"spec": spec}).json()["status"]["allowed"],
        what="widgets aggregated into admin",
    )


def test_a_websocket_exec_needs_create_as_well(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    role = {
        "metadata": {"name": "exec-get"},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/exec"]}],
    }
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=role).status_code == 201
    bind(api, namespace, "exec-get", "exec-get", sa_subject(namespace, "bot"), kind="Role")
    token = service_account_token(api, namespace, "bot")
    url = cluster.server.replace("https://", "wss://") + f"/api/v1/namespaces/{namespace}/pods/web/exec?command=ls"
    context = ssl.create_default_context(cafile=str(cluster.ca_file))

    def handshake_status() -> int:
        try:
            with connect(
                url,
                ssl=context,
                additional_headers={"Authorization": f"Bearer {token}"},
                subprotocols=["v5.channel.k8s.io"],  # type: ignore[list-item]
            ):
                return 101
        except InvalidStatus as err:
            return int(err.response.status_code)

    assert handshake_status() == 403
    grant = {"metadata": {"name": "exec-create"}, "rules": [{**role["rules"][0], "verbs": ["create"]}]}  # type: ignore[index]
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=grant).status_code == 201
    bind(api, namespace, "exec-create", "exec-create", sa_subject(namespace, "bot"), kind="Role")
    assert handshake_status() == 404  # allowed now; there is no such pod


@pytest.fixture(scope="module")
def always_allow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("always-allow") / "allow"
    with running_cluster(data_dir, "--authorization-mode", "AlwaysAllow") as running:
        yield running


def test_always_allow_mode(always_allow: RunningCluster) -> None:
    with always_allow.http() as api:
        token = service_account_token(api, "default", "anyone")
        review = api.post(
            f"{AUTHZ}/selfsubjectaccessreviews", json={"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}  # noqa: E501
        )  # fmt: skip
        assert review.json()["status"]["allowed"] is True
    with client_with(always_allow, token) as anyone:
        assert anyone.get("/api/v1/nodes").status_code == 200
    with client_with(always_allow, None) as anonymous:
        assert anonymous.get("/healthz").status_code == 200
        assert anonymous.get("/api").status_code == 401  # upstream turns anonymous requests off with AlwaysAllow


def test_nobody_grants_what_they_do_not_hold(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    """Upstream's escalation check: a Role's rules, or a binding's role, must be held already (or `escalate` /
    `bind` granted)."""
    manager = {
        "metadata": {"name": "rbac-manager"},
        "rules": [
            {  # not "*": that would include escalate and bind
                "verbs": ["create", "get", "list", "patch", "update"],
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["roles", "rolebindings"],
            },
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
        ],
    }
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=manager).status_code == 201
    bind(api, namespace, "bot-manager", "rbac-manager", sa_subject(namespace, "bot"), kind="Role")
    user = f"system:serviceaccount:{namespace}:bot"
    groups = f'["system:serviceaccounts" "system:serviceaccounts:{namespace}" "system:authenticated"]'
    with client_with(cluster, service_account_token(api, namespace, "bot")) as bot:
        roles = f"{RBAC}/namespaces/{namespace}/roles"
        held = {
            "metadata": {"name": "pod-reader"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        }
        assert bot.post(roles, json=held).status_code == 201
        secrets_ = {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["secrets"]}
        refused = bot.post(roles, json={"metadata": {"name": "secret-reader"}, "rules": [secrets_]})
        assert refused.status_code == 403
        assert refused.json()["message"] == (
            f'roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "{user}" (groups={groups}) is '
            'attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["secrets"], '
            'Verbs:["get" "list"]}'
        )
        patched = bot.patch(
            f"{roles}/pod-reader",
            json={"rules": [secrets_]},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 403 and "not currently held" in patched.json()["message"]
        bindings = f"{RBAC}/namespaces/{namespace}/rolebindings"
        edit = {
            "metadata": {"name": "bot-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [sa_subject(namespace, "bot")],
        }
        too_much = bot.post(bindings, json=edit)
        assert too_much.status_code == 403
        assert too_much.json()["message"].startswith(
            f'rolebindings.rbac.authorization.k8s.io "bot-edit" is forbidden: user "{user}" (groups={groups}) is '
            "attempting to grant RBAC permissions not currently held:\n"
        )
        reader = {
            **edit,
            "metadata": {"name": "reader"},
            "roleRef": {**edit["roleRef"], "kind": "Role", "name": "pod-reader"},
        }
        assert bot.post(bindings, json=reader).status_code == 201  # its rules are held
        missing = {**edit, "metadata": {"name": "ghost"}, "roleRef": {**edit["roleRef"], "name": "no-such-role"}}
        assert bot.post(bindings, json=missing).status_code == 404
        binder = {
            "metadata": {"name": "edit-binder"},
            "rules": [
                {
                    "verbs": ["bind"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles"],
                    "resourceNames": ["edit"],
                }
            ],
        }
        assert api.post(roles, json=binder).status_code == 201
        bind(api, namespace, "bot-binder", "edit-binder", sa_subject(namespace, "bot"), kind="Role")
        assert bot.post(bindings, json=edit).status_code == 201  # `bind` on edit
