"""The `service_account_client` fixture and `Cluster.kubeconfig_for`, as an operator's test uses them: is the RBAC
the operator ships enough for what it does?"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tinykube.testing import Cluster

OPERATOR_RBAC = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "operator"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator"}],
    },
]


def test_a_service_account_has_exactly_its_rbac(
    tinykube_cluster: Cluster, namespace: str, service_account_client: Any
) -> None:
    tinykube_cluster.apply(OPERATOR_RBAC, namespace=namespace)
    core = client.CoreV1Api(service_account_client("operator", namespace))
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"a": "1"})
    core.create_namespaced_config_map(namespace, body)
    assert "settings" in [c.metadata.name for c in core.list_namespaced_config_map(namespace).items if c.metadata]
    with pytest.raises(ApiException) as refused:
        core.delete_namespaced_config_map("settings", namespace)
    assert refused.value.status == 403
    message = json.loads(str(refused.value.body))["message"]
    assert message.startswith(f'configmaps "settings" is forbidden: User "system:serviceaccount:{namespace}:operator"')
    with pytest.raises(ApiException) as secrets:
        core.list_namespaced_secret(namespace)
    assert secrets.value.status == 403


def test_a_kubeconfig_for_a_service_account(tinykube_cluster: Cluster, namespace: str) -> None:
    kubeconfig = tinykube_cluster.kubeconfig_for("reader", namespace)
    assert tinykube_cluster.get("serviceaccount", "reader", namespace=namespace) is not None
    whoami = tinykube_cluster.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig)
    assert whoami["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:reader"
    can = tinykube_cluster.kubectl("auth", "can-i", "--list", kubeconfig=kubeconfig)
    assert "selfsubjectrulesreviews.authorization.k8s.io" in can
    tinykube_cluster.kubectl(
        "create", "rolebinding", "reader", "--clusterrole=view", f"--serviceaccount={namespace}:reader", "-n", namespace
    )
    assert tinykube_cluster.kubectl("auth", "can-i", "list", "pods", kubeconfig=kubeconfig) == "yes\n"
