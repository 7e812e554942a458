"""The ServiceAccount admission plugin and the root CA publisher (issue 20), as upstream's: pods run as `default`
unless they name an existing ServiceAccount, and mount a projected `kube-api-access-*` volume (a bound token, the
cluster CA from the namespace's `kube-root-ca.crt` ConfigMap, the namespace) unless automounting is off."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}], "schedulerName": "none", **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


def create(api: httpx.Client, ns: str, body: dict[str, Any]) -> httpx.Response:
    return api.post(f"/api/v1/namespaces/{ns}/pods", json=body)


def test_a_pod_mounts_its_token_volume(api: httpx.Client, namespace: str) -> None:
    body = pod("web", initContainers=[{"name": "init", "image": "busybox"}])
    created = create(api, namespace, body)
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                    ]
                }
            },
        ],
    }
    mount = {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_PATH}
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["initContainers"][0]["volumeMounts"] == [mount]


def test_automounting_can_be_turned_off(api: httpx.Client, namespace: str) -> None:
    off = create(api, namespace, pod("off", automountServiceAccountToken=False)).json()["spec"]
    assert "volumes" not in off and "volumeMounts" not in off["containers"][0]

    account = {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json=account).status_code == 201
    quiet = create(api, namespace, pod("quiet", serviceAccountName="quiet")).json()["spec"]
    assert "volumes" not in quiet
    loud = create(api, namespace, pod("loud", serviceAccountName="quiet", automountServiceAccountToken=True))
    assert loud.json()["spec"]["volumes"][0]["name"].startswith("kube-api-access-")  # the pod's setting wins

    own = pod("own", volumes=[{"name": "mine", "emptyDir": {}}])
    own["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": TOKEN_PATH}]
    mine = create(api, namespace, own).json()["spec"]
    assert [v["name"] for v in mine["volumes"]] == ["mine"]  # something at the token path already: left alone


def test_a_missing_service_account_is_refused(api: httpx.Client, namespace: str) -> None:
    refused = create(api, namespace, pod("lost", serviceAccountName="nobody"))
    assert refused.status_code == 403
    body = refused.json()
    assert (body["reason"], body["message"]) == (
        "Forbidden",
        f'pods "lost" is forbidden: error looking up service account {namespace}/nobody: serviceaccount "nobody" '
        "not found",
    )


def test_every_namespace_gets_the_cluster_ca(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt"
    found = eventually(lambda: (r := api.get(path)).status_code == 200 and r.json())
    assert found["data"] == {"ca.crt": cluster.ca_file.read_text()}
    assert found["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
    api.delete(path)
    assert eventually(lambda: (r := api.get(path)).status_code == 200 and r.json())["data"] == found["data"]
    api.put(
        path, json={**found, "data": {"ca.crt": "tampered"}, "metadata": {**found["metadata"], "resourceVersion": ""}}
    )
    eventually(lambda: api.get(path).json()["data"] == found["data"], what="the CA put back")
