"""Service-account tokens, access reviews and the default RBAC policy as users meet them: kubectl 1.32's `create
token`, `auth can-i`, `auth whoami`, `get cs`, `get clusterroles`, and the official Python client."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from kubernetes import client as k8s

from tests.conftest import eventually
from tinykube.apiserver.auth import jws
from tinykube.apiserver.bootstrap.pki import load_service_account_key

if TYPE_CHECKING:
    from tests.conftest import RunningCluster
    from tests.e2e.conftest import Kubectl

ISSUER = "https://kubernetes.default.svc.cluster.local"


def claims_of(token: str) -> dict[str, Any]:
    return jws.unverified_claims(token.strip())


def test_create_token(kubectl: Kubectl) -> None:
    kubectl("create", "serviceaccount", "bot")
    sa_uid = kubectl.json("get", "serviceaccount", "bot")["metadata"]["uid"]
    claims = claims_of(kubectl("create", "token", "bot").stdout)
    assert claims["sub"] == f"system:serviceaccount:{kubectl.namespace}:bot"
    assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == (ISSUER, [ISSUER], 3600)
    assert claims["kubernetes.io"] == {"namespace": kubectl.namespace, "serviceaccount": {"name": "bot", "uid": sa_uid}}
    claims = claims_of(kubectl("create", "token", "bot", "--duration", "20m", "--audience", "vault").stdout)
    assert (claims["exp"] - claims["iat"], claims["aud"]) == (1200, ["vault"])
    refused = kubectl.fail("create", "token", "bot", "--duration", "1m")
    assert "may not specify a duration less than 10 minutes" in refused.stderr
    assert 'serviceaccounts "nobody" not found' in kubectl.fail("create", "token", "nobody").stderr


def test_create_token_bound_to_a_pod(kubectl: Kubectl) -> None:
    kubectl("create", "serviceaccount", "bot")
    kubectl.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec: {serviceAccountName: bot, containers: [{name: c, image: nginx}]}\n"
    )
    pod_uid = kubectl.json("get", "pod", "web")["metadata"]["uid"]
    token = kubectl("create", "token", "bot", "--bound-object-kind", "Pod", "--bound-object-name", "web").stdout
    assert claims_of(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": pod_uid}
    wrong = kubectl.fail("create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "web")
    assert "to pod running with different serviceaccount name" in wrong.stderr


def test_a_created_token_works_until_its_account_is_deleted(cluster: RunningCluster, kubectl: Kubectl) -> None:
    kubectl("create", "serviceaccount", "bot")
    kubectl("create", "rolebinding", "bot-view", "--clusterrole=view", f"--serviceaccount={kubectl.namespace}:bot")
    token = kubectl("create", "token", "bot").stdout.strip()
    with cluster.http(headers={"Authorization": f"Bearer {token}"}) as as_bot:
        assert as_bot.get(f"/api/v1/namespaces/{kubectl.namespace}/serviceaccounts").status_code == 200
        assert "bot" in kubectl("--token", token, "get", "serviceaccounts", "-o", "name").stdout
        kubectl("delete", "serviceaccount", "bot")
        eventually(lambda: as_bot.get("/api").status_code == 401, what="the token refused")
    assert "Unauthorized" in kubectl.fail("--token", token, "get", "pods").stderr


def test_an_expired_token_stops_working(cluster: RunningCluster, kubectl: Kubectl) -> None:
    """Tokens last ten minutes at least: this one is signed here, with the cluster's key, already expired."""
    kubectl("create", "serviceaccount", "bot")
    claims = claims_of(kubectl("create", "token", "bot").stdout)
    key = load_service_account_key(cluster.data_dir / "pki" / "sa.key")
    past = int(time.time()) - 7200
    expired = jws.sign({**claims, "iat": past, "nbf": past, "exp": past + 600}, key)
    current = jws.sign(claims, key)
    assert kubectl("--token", current, "auth", "whoami", "-o", "json").returncode == 0
    assert "Unauthorized" in kubectl.fail("--token", expired, "auth", "whoami").stderr


def test_auth_can_i(kubectl: Kubectl) -> None:
    assert kubectl("auth", "can-i", "create", "pods").stdout == "yes\n"
    assert kubectl("auth", "can-i", "delete", "nodes", "--all-namespaces").stdout == "yes\n"
    assert kubectl("auth", "can-i", "get", "/logs").stdout == "yes\n"
    listed = kubectl("auth", "can-i", "--list").stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert listed[1].split() == ["*.*", "[]", "[]", "[*]"]
    assert listed[2].split() == ["[*]", "[]", "[*]"]
    kubectl("create", "serviceaccount", "bot")
    token = kubectl("create", "token", "bot").stdout.strip()
    assert kubectl.fail("--token", token, "auth", "can-i", "create", "secrets").stdout == "no\n"  # RBAC
    kubectl("create", "rolebinding", "bot-edit", "--clusterrole=edit", f"--serviceaccount={kubectl.namespace}:bot")
    assert kubectl("--token", token, "auth", "can-i", "create", "secrets").stdout == "yes\n"


def test_auth_whoami(kubectl: Kubectl) -> None:
    admin = kubectl("auth", "whoami").stdout.splitlines()
    assert admin[1].split() == ["Username", "kubernetes-admin"]
    assert admin[2].split() == ["Groups", "[system:masters", "system:authenticated]"]
    kubectl("create", "serviceaccount", "bot")
    token = kubectl("create", "token", "bot").stdout.strip()
    uid = kubectl.json("get", "serviceaccount", "bot")["metadata"]["uid"]
    info = json.loads(kubectl("--token", token, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert info == {
        "username": f"system:serviceaccount:{kubectl.namespace}:bot",
        "uid": uid,
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{kubectl.namespace}", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={claims_of(token)['jti']}"]},
    }
    table = kubectl("--token", token, "auth", "whoami").stdout
    assert "Extra: authentication.kubernetes.io/credential-id" in table


def test_get_component_statuses(kubectl: Kubectl) -> None:
    result = kubectl("get", "componentstatuses")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[1:]}
    assert result.stdout.split("\n")[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    assert rows["etcd-0"] == ["Healthy", "ok"]
    assert rows["controller-manager"] == ["Healthy", "ok"]
    assert rows["scheduler"][0] == "Unhealthy"  # the test cluster runs without it
    assert kubectl("get", "cs", "etcd-0", "-o", "jsonpath={.conditions[0].status}").stdout == "True"


AGGREGATED_TO_VIEW = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {name}
  labels: {{rbac.authorization.k8s.io/aggregate-to-view: "true"}}
rules:
- apiGroups: [stable.example.com]
  resources: [{name}]
  verbs: [get, list, watch]
"""


def test_default_cluster_roles_and_their_aggregation(kubectl: Kubectl) -> None:
    names = set(kubectl("get", "clusterroles", "-o", "name").stdout.split())
    for role in ("cluster-admin", "admin", "edit", "view", "system:discovery", "system:node", "system:kube-scheduler"):
        assert f"clusterrole.rbac.authorization.k8s.io/{role}" in names
    bindings = kubectl("get", "clusterrolebindings", "cluster-admin", "-o", "wide").stdout.splitlines()
    assert bindings[1].split()[:2] == ["cluster-admin", "ClusterRole/cluster-admin"]
    assert "system:masters" in bindings[1]
    name = f"crontabs-{kubectl.namespace}"[:63]
    kubectl.apply(AGGREGATED_TO_VIEW.format(name=name))
    rule = {"apiGroups": ["stable.example.com"], "resources": [name], "verbs": ["get", "list", "watch"]}
    try:
        for aggregated in ("view", "edit", "admin"):
            eventually(
                lambda a=aggregated: rule in kubectl.json("get", "clusterrole", a)["rules"],
                what=f"{aggregated} aggregating the new role",
            )
        described = kubectl("describe", "clusterrole", "view").stdout
        assert f"{name}.stable.example.com" in described
    finally:
        kubectl("delete", "clusterrole", name)


def test_python_client_tokens_and_reviews(k8s_client: k8s.ApiClient, cluster: RunningCluster, namespace: str) -> None:
    core = k8s.CoreV1Api(k8s_client)
    core.create_namespaced_service_account(namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="bot")))
    request = k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=900))
    answer = core.create_namespaced_service_account_token("bot", namespace, request)
    assert answer.spec.audiences == [ISSUER] and answer.spec.expiration_seconds == 900
    assert answer.status.expiration_timestamp > answer.metadata.creation_timestamp

    review = k8s.V1SelfSubjectAccessReview(
        spec=k8s.V1SelfSubjectAccessReviewSpec(
            resource_attributes=k8s.V1ResourceAttributes(verb="list", resource="pods", namespace=namespace)
        )
    )
    result = k8s.AuthorizationV1Api(k8s_client).create_self_subject_access_review(review)
    assert (result.status.allowed, result.status.reason) == (True, None)  # system:masters: no reason given

    with cluster.http(headers={"Authorization": f"Bearer {answer.status.token}"}) as as_bot:
        assert as_bot.get(f"/api/v1/namespaces/{namespace}/pods").status_code == 403  # nothing is bound to it
        assert as_bot.get("/api").status_code == 200  # system:discovery
