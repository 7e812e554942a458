"""Persistent volumes (issue 19) on two simulated nodes: the default StorageClass `standard`, claims provisioned as
directories when their first pod is scheduled, static volumes bound by class, size and access modes, pods kept
Pending for a missing claim, and the protection finalizers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster

Object = dict[str, Any]
CORE = "/api/v1"
cluster = controllers_cluster("--nodes", "2")


def claim(name: str, size: str = "1Gi", **spec: Any) -> Object:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}} | spec
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": body}


def pod_using(name: str, claim_name: str) -> Object:
    spec = {
        "containers": [{"name": "c", "image": "busybox", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def get(client: httpx.Client, path: str) -> Object:
    return dict(client.get(path).json())


def post(client: httpx.Client, path: str, body: Object) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 201, response.text


def test_a_claim_is_provisioned_on_the_node_of_its_first_pod(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    [standard] = get(client, "/apis/storage.k8s.io/v1/storageclasses")["items"]
    assert standard["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (standard["provisioner"], standard["volumeBindingMode"]) == (
        "tinykube.io/local-path",
        "WaitForFirstConsumer",
    )

    post(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims", claim("data"))
    created = get(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims/data")
    assert created["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert created["status"].get("phase", "Pending") == "Pending"  # waits for its first consumer

    post(client, f"{CORE}/namespaces/{ns}/pods", pod_using("user", "data"))
    bound = eventually(
        lambda: (
            (c := get(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims/data"))["status"].get("phase") == "Bound"
            and c
        )
    )
    volume = get(client, f"{CORE}/persistentvolumes/{bound['spec']['volumeName']}")
    node = bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
    assert volume["metadata"]["name"] == f"pvc-{bound['metadata']['uid']}"
    assert volume["spec"]["claimRef"]["name"] == "data" and volume["status"]["phase"] == "Bound"
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]
    directory = Path(volume["spec"]["hostPath"]["path"])
    assert directory.is_dir() and directory.parent == cluster.data_dir / "volumes"
    assert bound["status"]["capacity"] == {"storage": "1Gi"}
    placed = eventually(lambda: get(client, f"{CORE}/namespaces/{ns}/pods/user")["spec"].get("nodeName"))
    assert placed == node

    # in use: the claim waits for its pod; then it goes, and its volume and directory with it (reclaim Delete)
    client.delete(f"{CORE}/namespaces/{ns}/persistentvolumeclaims/data")
    assert get(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims/data")["metadata"]["deletionTimestamp"]
    client.delete(f"{CORE}/namespaces/{ns}/pods/user")
    eventually(
        lambda: client.get(f"{CORE}/namespaces/{ns}/persistentvolumeclaims/data").status_code == 404, what="claim gone"
    )
    eventually(
        lambda: client.get(f"{CORE}/persistentvolumes/{volume['metadata']['name']}").status_code == 404, what="pv gone"
    )
    assert not directory.exists()


def test_a_pod_waits_for_a_missing_claim(client: httpx.Client, ns: str) -> None:
    post(client, f"{CORE}/namespaces/{ns}/pods", pod_using("early", "later"))

    def waiting() -> str:
        conditions = get(client, f"{CORE}/namespaces/{ns}/pods/early").get("status", {}).get("conditions") or []
        return next((c["message"] for c in conditions if c["type"] == "PodScheduled"), "")

    assert 'persistentvolumeclaim "later" not found' in eventually(waiting, what="unschedulable")
    post(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims", claim("later"))
    eventually(lambda: get(client, f"{CORE}/namespaces/{ns}/pods/early")["spec"].get("nodeName"), what="scheduled")


def test_a_static_volume_binds_by_class_size_and_modes(client: httpx.Client, ns: str) -> None:
    name = f"static-{ns}"[:63]
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                 "storageClassName": f"manual-{ns}", "hostPath": {"path": "/tmp/unused"},
                 "persistentVolumeReclaimPolicy": "Retain"},
    }  # fmt: skip
    post(client, f"{CORE}/persistentvolumes", volume)
    try:
        post(
            client,
            f"{CORE}/namespaces/{ns}/persistentvolumeclaims",
            claim("too-big", "10Gi", storageClassName=f"manual-{ns}"),
        )
        post(
            client,
            f"{CORE}/namespaces/{ns}/persistentvolumeclaims",
            claim("fits", "2Gi", storageClassName=f"manual-{ns}"),
        )
        fits = eventually(
            lambda: (
                (c := get(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims/fits"))["status"].get("phase")
                == "Bound"
                and c
            )
        )
        assert fits["spec"]["volumeName"] == name and fits["status"]["capacity"] == {"storage": "5Gi"}
        assert (
            get(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims/too-big")["status"].get("phase", "Pending")
            == "Pending"
        )
        client.delete(f"{CORE}/namespaces/{ns}/persistentvolumeclaims/fits")
        eventually(
            lambda: get(client, f"{CORE}/persistentvolumes/{name}")["status"].get("phase") == "Released",
            what="released",
        )
    finally:
        client.delete(f"{CORE}/persistentvolumes/{name}")


def test_a_claim_binds_to_a_volume_made_after_it(client: httpx.Client, ns: str) -> None:
    """The claim is synced first and finds nothing; the volume, once Available, brings it back."""
    name = f"later-{ns}"[:63]
    post(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims", claim("early", storageClassName=f"slow-{ns}"))
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": f"slow-{ns}",
                 "hostPath": {"path": "/tmp/unused"}, "persistentVolumeReclaimPolicy": "Retain"},
    }  # fmt: skip
    post(client, f"{CORE}/persistentvolumes", volume)
    try:
        path = f"{CORE}/namespaces/{ns}/persistentvolumeclaims/early"
        eventually(lambda: get(client, path)["status"].get("phase") == "Bound", what="bound to the later volume")
    finally:
        client.delete(f"{CORE}/persistentvolumes/{name}")


def test_a_volume_deleted_while_bound_goes_once_its_claim_is_deleted(client: httpx.Client, ns: str) -> None:
    """The binder works on volumes being deleted too: the claim's deletion makes the volume Released, and then
    the pv-protection finalizer, kept only while Bound, leaves (as the conformance lifecycle spec needs)."""
    name = f"doomed-{ns}"[:63]
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": f"c-{ns}",
                 "csi": {"driver": "inline-driver", "volumeHandle": "e2e-conformance"}},
    }  # fmt: skip
    post(client, f"{CORE}/persistentvolumes", volume)
    try:
        post(client, f"{CORE}/namespaces/{ns}/persistentvolumeclaims", claim("c", storageClassName=f"c-{ns}"))
        eventually(
            lambda: get(client, f"{CORE}/persistentvolumes/{name}")["status"].get("phase") == "Bound", what="bound"
        )
        assert client.delete(f"{CORE}/persistentvolumes/{name}").status_code == 200
        kept = get(client, f"{CORE}/persistentvolumes/{name}")
        assert kept["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
        assert kept["status"]["phase"] == "Bound"  # still protected while its claim holds it
        client.delete(f"{CORE}/namespaces/{ns}/persistentvolumeclaims/c")
        eventually(lambda: client.get(f"{CORE}/persistentvolumes/{name}").status_code == 404, what="volume gone")
    finally:
        client.delete(f"{CORE}/persistentvolumes/{name}")
