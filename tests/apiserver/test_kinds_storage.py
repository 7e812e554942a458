"""The storage kinds — PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSIDrivers, CSINodes,
CSIStorageCapacities, VolumeAttachments — as kube-apiserver 1.32 defaults, validates and prints them: the strategies
called with plain dicts, then a few round trips through a real apiserver (the tests that take `api` or `cluster`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import kubernetes.client as k8s
import pytest

from tests.apiserver.kinds import created, strategy, updated
from tests.conftest import RunningCluster
from tinykube.api.resources import by_path
from tinykube.apiserver.kinds.core import volumes
from tinykube.apiserver.kinds.printers import PRINTERS, table

NOW = datetime(2025, 1, 1, tzinfo=UTC)
CREATED = (NOW - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
GROUPS = {
    "persistentvolumes": "",
    "persistentvolumeclaims": "",
    "storageclasses": "storage.k8s.io",
    "csidrivers": "storage.k8s.io",
    "csinodes": "storage.k8s.io",
    "csistoragecapacities": "storage.k8s.io",
    "volumeattachments": "storage.k8s.io",
}


def obj(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "creationTimestamp": CREATED}, **fields}


def with_spec(body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**body, "spec": {**body["spec"], **changes}}


# ---- PersistentVolume ---------------------------------------------------------------------------------------------


def volume(**spec: Any) -> dict[str, Any]:
    fields = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}
    return obj(spec={**fields, **spec})


def test_volume_defaults() -> None:
    body, errs = created("persistentvolumes", volume(capacity={"storage": "1024Mi"}, status={"phase": "Bound"}))
    assert errs == []
    spec, status = body["spec"], body["status"]
    assert (spec["persistentVolumeReclaimPolicy"], spec["volumeMode"]) == ("Retain", "Filesystem")
    assert spec["hostPath"] == {"path": "/data", "type": ""}
    assert spec["capacity"] == {"storage": "1Gi"}
    assert status["phase"] == "Pending", "a new volume's status is the server's"
    assert status["lastPhaseTransitionTime"]


def test_volume_needs_capacity_access_modes_and_a_source() -> None:
    _, errs = created("persistentvolumes", obj(spec={}))
    assert errs == [
        "spec.accessModes: Required value",
        "spec.capacity: Required value",
        'spec.capacity: Unsupported value: core.ResourceList(nil): supported values: "storage"',
        "spec: Required value: must specify a volume type",
    ]


def test_volume_capacity_is_storage_only_and_positive() -> None:
    _, errs = created("persistentvolumes", volume(capacity={"storage": "1Gi", "cpu": "1"}))
    assert errs[0].startswith('spec.capacity: Unsupported value: core.ResourceList{"cpu":resource.Quantity{')
    assert errs[0].endswith(': supported values: "storage"')
    _, errs = created("persistentvolumes", volume(capacity={"storage": "0"}))
    assert errs == ['spec.capacity[storage]: Invalid value: "0": must be greater than zero']


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"nfs": {"server": "nfs", "path": "/x"}},
            ["spec.nfs: Forbidden: may not specify more than 1 volume type"],
            id="two-sources",
        ),
        pytest.param(
            {"cephfs": {"monitors": ["m"]}},
            ["spec.cephFS: Forbidden: may not specify more than 1 volume type"],
            id="cephfs-name",
        ),
        pytest.param(
            {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]},
            ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"],
            id="rwop-mixed",
        ),
        pytest.param(
            {"accessModes": ["ReadWriteSometimes"]},
            [
                'spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
                '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
            ],
            id="unknown-access-mode",
        ),
        pytest.param(
            {"persistentVolumeReclaimPolicy": "Recycle", "hostPath": {"path": "/"}},
            ["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"],
            id="recycle-root",
        ),
        pytest.param(
            {"hostPath": {"path": "/a/../b"}},
            ["spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'"],
            id="backsteps",
        ),
        pytest.param(
            {"volumeMode": "Sideways"},
            ['spec.volumeMode: Unsupported value: "Sideways": supported values: "Block", "Filesystem"'],
            id="volume-mode",
        ),
        pytest.param(
            {"storageClassName": "Fast"},
            [
                'spec.storageClassName: Invalid value: "Fast": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
            id="class-name",
        ),
    ],
)
def test_volume_spec_errors(spec: dict[str, Any], expected: list[str]) -> None:
    _, errs = created("persistentvolumes", volume(**spec))
    assert errs == expected


def test_volume_sources_are_checked() -> None:
    _, errs = created(
        "persistentvolumes",
        obj(spec={"capacity": {"storage": "1"}, "accessModes": ["ReadOnlyMany"], "nfs": {"path": "data"}}),
    )
    assert errs == ["spec.nfs.server: Required value", 'spec.nfs.path: Invalid value: "data": must be an absolute path']
    _, errs = created(
        "persistentvolumes",
        obj(spec={"capacity": {"storage": "1"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"}}),
    )
    assert errs == ["spec.nodeAffinity: Required value: Local volume requires node affinity"]
    _, errs = created(
        "persistentvolumes", obj(spec={"capacity": {"storage": "1"}, "accessModes": ["ReadWriteOnce"], "csi": {}})
    )
    assert errs[0] == "spec.csi.driver: Required value"
    assert errs[1].startswith('spec.csi.driver: Invalid value: "": a lowercase RFC 1123 subdomain must consist of')
    assert errs[2:] == ["spec.csi.volumeHandle: Required value"]
    _, errs = created(
        "persistentvolumes",
        obj(spec={"capacity": {"storage": "1"}, "accessModes": ["ReadWriteOnce"], "gcePersistentDisk": {}}),
    )
    assert errs == ["spec.persistentDisk.pdName: Required value"]


def test_volume_node_affinity() -> None:
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}
    _, errs = created("persistentvolumes", volume(nodeAffinity=affinity))
    expr = "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]"
    assert errs == [f"{expr}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]
    _, errs = created("persistentvolumes", volume(nodeAffinity={}))
    assert errs == ["spec.nodeAffinity.required: Required value: must specify required node constraints"]


def test_volume_source_and_mode_are_immutable() -> None:
    old, _ = created("persistentvolumes", volume())
    _, errs = updated("persistentvolumes", with_spec(old, hostPath={"path": "/elsewhere", "type": ""}), old)
    assert errs == ["spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"]
    _, errs = updated("persistentvolumes", with_spec(old, volumeMode="Block"), old)
    assert errs == ['volumeMode: Invalid value: "Block": field is immutable']
    _, errs = updated("persistentvolumes", with_spec(old, capacity={"storage": "2Gi"}, storageClassName="slow"), old)
    assert errs == []


def test_csi_volume_may_gain_an_expansion_secret() -> None:
    csi = {"driver": "csi.example.com", "volumeHandle": "v1"}
    old, _ = created(
        "persistentvolumes", obj(spec={"capacity": {"storage": "1"}, "accessModes": ["ReadWriteOnce"], "csi": csi})
    )
    secret = {"name": "s", "namespace": "ns"}
    _, errs = updated("persistentvolumes", with_spec(old, csi={**csi, "controllerExpandSecretRef": secret}), old)
    assert errs == []
    _, errs = updated("persistentvolumes", with_spec(old, csi={**csi, "volumeHandle": "v2"}), old)
    assert len(errs) == 1 and errs[0].startswith("spec.persistentvolumesource: Forbidden")


def test_node_affinity_cannot_change_once_set() -> None:
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}
    old, _ = created("persistentvolumes", volume(nodeAffinity=affinity))
    changed = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "Exists"}]}]}}
    _, errs = updated("persistentvolumes", with_spec(old, nodeAffinity=changed), old)
    assert errs == [
        "nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: "
        "field is immutable, except for updating from beta label to GA"
    ]


def test_volume_attributes_class_is_dropped_with_its_feature_gate_off() -> None:
    body, _ = created("persistentvolumes", volume(volumeAttributesClassName="gold"))
    assert "volumeAttributesClassName" not in body["spec"]


def test_volume_phase_changes_are_stamped() -> None:
    chosen = strategy("persistentvolumes")
    old, _ = created("persistentvolumes", volume())
    old["status"]["lastPhaseTransitionTime"] = "2020-01-01T00:00:00Z"
    same = {**old, "status": {"phase": "Pending"}}
    chosen.prepare_status_update(same, old)
    assert same["status"]["lastPhaseTransitionTime"] == "2020-01-01T00:00:00Z"
    bound = {**old, "status": {"phase": "Bound"}}
    chosen.prepare_status_update(bound, old)
    assert bound["status"]["lastPhaseTransitionTime"] > "2020"
    stamped = {**old, "status": {"phase": "Bound", "lastPhaseTransitionTime": "2021-01-01T00:00:00Z"}}
    chosen.prepare_status_update(stamped, old)
    assert stamped["status"]["lastPhaseTransitionTime"] == "2021-01-01T00:00:00Z"


# ---- PersistentVolumeClaim ----------------------------------------------------------------------------------------


def claim(**spec: Any) -> dict[str, Any]:
    fields = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {**obj(spec={**fields, **spec}), "metadata": {"name": "c", "namespace": "ns", "creationTimestamp": CREATED}}


def test_claim_defaults() -> None:
    body, errs = created(
        "persistentvolumeclaims", {**claim(resources={"requests": {"storage": "1000Mi"}}), "status": {"phase": "Bound"}}
    )
    assert errs == []
    assert body["spec"]["volumeMode"] == "Filesystem"
    assert body["spec"]["resources"] == {"requests": {"storage": "1000Mi"}}
    assert body["status"] == {"phase": "Pending"}


def test_claim_needs_access_modes_and_storage() -> None:
    _, errs = created("persistentvolumeclaims", claim(accessModes=[], resources={}))
    assert errs == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        "spec.resources[storage]: Required value",
    ]
    _, errs = created("persistentvolumeclaims", claim(resources={"requests": {"storage": "-1"}}))
    assert errs == ['spec.resources[storage]: Invalid value: "-1": must be greater than zero']


def test_claim_data_sources_are_normalized() -> None:
    source = {"kind": "PersistentVolumeClaim", "name": "src"}
    body, errs = created("persistentvolumeclaims", claim(dataSource=source))
    assert (body["spec"]["dataSourceRef"], errs) == (source, [])
    populator = {"apiGroup": "populators.example.com", "kind": "Seed", "name": "s", "namespace": "other"}
    body, errs = created("persistentvolumeclaims", claim(dataSourceRef=populator))
    assert body["spec"]["dataSource"] == {"apiGroup": "populators.example.com", "kind": "Seed", "name": "s"}
    assert "namespace" not in body["spec"]["dataSourceRef"], "CrossNamespaceVolumeDataSource is off"
    assert errs == []
    body, _ = created("persistentvolumeclaims", claim(dataSource={"kind": "ConfigMap", "name": "c"}))
    assert "dataSource" not in body["spec"] and "dataSourceRef" not in body["spec"]


def test_claim_data_source_of_the_core_group_must_be_a_claim() -> None:
    _, errs = created("persistentvolumeclaims", claim(dataSourceRef={"kind": "Secret", "name": "s"}))
    message = "must be 'PersistentVolumeClaim' when referencing the default apiGroup"
    assert errs == [
        f'spec.dataSource: Invalid value: "Secret": {message}',
        f'spec.dataSourceRef: Invalid value: "Secret": {message}',
    ]


def test_claim_spec_is_immutable() -> None:
    old, _ = created("persistentvolumeclaims", claim())
    immutable = (
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        "for bound claims"
    )
    _, errs = updated("persistentvolumeclaims", with_spec(old, accessModes=["ReadWriteMany"]), old)
    assert errs == [immutable]
    _, errs = updated("persistentvolumeclaims", with_spec(old, resources={"requests": {"storage": "2Gi"}}), old)
    assert errs == [immutable], "an unbound claim does not grow"
    _, errs = updated("persistentvolumeclaims", with_spec(old, volumeName="pv-1", storageClassName="fast"), old)
    assert errs == [], "a volume name is set once, and a storage class where there was none"
    _, errs = updated("persistentvolumeclaims", with_spec(old, volumeMode="Block"), old)
    assert errs == [immutable, 'volumeMode: Invalid value: "Block": field is immutable']


def test_bound_claim_may_grow_but_not_below_its_capacity() -> None:
    old, _ = created("persistentvolumeclaims", claim(resources={"requests": {"storage": "2Gi"}}))
    old["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}}
    _, errs = updated("persistentvolumeclaims", with_spec(old, resources={"requests": {"storage": "4Gi"}}), old)
    assert errs == []
    _, errs = updated("persistentvolumeclaims", with_spec(old, resources={"requests": {"storage": "1Gi"}}), old)
    assert errs == ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]


def test_claim_status_writes_are_decoded_too() -> None:
    chosen = strategy("persistentvolumeclaims")
    old, _ = created("persistentvolumeclaims", claim())
    new = {**old, "status": {"phase": "Bound", "capacity": {"storage": "1024Mi"}}}
    chosen.prepare_status_update(new, old)
    assert (new["spec"], new["status"]) == (old["spec"], {"phase": "Bound", "capacity": {"storage": "1Gi"}})
    assert chosen.validate(new, old) == []


def test_claim_storage_class_annotation_is_immutable() -> None:
    old, _ = created("persistentvolumeclaims", claim())
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = {volumes.BETA_STORAGE_CLASS: "gold"}
    _, errs = updated("persistentvolumeclaims", new, old)
    assert errs == [
        'metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: "gold": field is immutable'
    ]


# ---- StorageClass -------------------------------------------------------------------------------------------------


def test_storage_class_defaults() -> None:
    body, errs = created("storageclasses", obj(provisioner="kubernetes.io/no-provisioner"))
    assert (body["reclaimPolicy"], body["volumeBindingMode"], errs) == ("Delete", "Immediate", [])


def test_storage_class_validation() -> None:
    _, errs = created("storageclasses", obj(reclaimPolicy="Recycle", volumeBindingMode="Later"))
    assert errs == [
        "provisioner: Required value",
        'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
    ]
    _, errs = created("storageclasses", obj(provisioner="Example.com/Bad/Name"))
    assert errs[0].startswith('provisioner: Invalid value: "example.com/bad/name": a qualified name must consist of')
    topology = [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]
    _, errs = created("storageclasses", obj(provisioner="p", allowedTopologies=topology))
    assert errs == ["allowedTopologies[0].matchLabelExpressions[0].values: Required value"]


def test_storage_class_updates() -> None:
    old, _ = created("storageclasses", obj(provisioner="p", parameters={"type": "ssd"}))
    changed = {
        **old,
        "provisioner": "q",
        "parameters": {"type": "hdd"},
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    _, errs = updated("storageclasses", changed, old)
    assert errs == [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
        'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable',
    ]
    _, errs = updated("storageclasses", {**old, "allowVolumeExpansion": True, "mountOptions": ["ro"]}, old)
    assert errs == []


# ---- CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment -----------------------------------------------------


def test_csi_driver_defaults() -> None:
    body, errs = created("csidrivers", obj())
    assert errs == []
    assert body["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    assert strategy("csidrivers").tracks_generation


def test_csi_driver_validation_and_immutability() -> None:
    _, errs = created(
        "csidrivers",
        obj(
            spec={
                "fsGroupPolicy": "Sometimes",
                "volumeLifecycleModes": ["Forever"],
                "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}],
            }
        ),
    )
    assert errs == [
        'spec.fsGroupPolicy: Unsupported value: "Sometimes": '
        'supported values: "File", "None", "ReadWriteOnceWithFSType"',
        "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
        'spec.tokenRequests[1].audience: Duplicate value: "a"',
        'spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"',
    ]
    old, _ = created("csidrivers", obj())
    _, errs = updated(
        "csidrivers",
        {
            **old,
            "spec": {
                **old["spec"],
                "attachRequired": False,
                "volumeLifecycleModes": ["Ephemeral"],
                "podInfoOnMount": True,
            },
        },
        old,
    )
    assert errs == [
        "spec.attachedRequired: Invalid value: false: field is immutable",
        'spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{"Ephemeral"}: field is immutable',
    ]


def test_csi_node_drivers() -> None:
    drivers = [
        {"name": "csi.example.com", "nodeID": "n" * 193, "topologyKeys": ["zone", "zone"]},
        {"name": "csi.example.com", "nodeID": "n1"},
        {"name": "", "nodeID": ""},
    ]
    _, errs = created("csinodes", obj(spec={"drivers": drivers}))
    assert errs[:3] == [
        f'spec.drivers[0].nodeID: Invalid value: "{"n" * 193}": must be 192 characters or less',
        'spec.drivers[0]: Duplicate value: "zone"',
        'spec.drivers[1].name: Duplicate value: "csi.example.com"',
    ]
    assert errs[3:5] == ["spec.drivers[2].name: Required value", errs[4]]
    assert errs[-1] == "spec.drivers[2].nodeID: Required value"


def test_csi_node_driver_entries_are_immutable() -> None:
    old, _ = created("csinodes", obj(spec={"drivers": [{"name": "a.example.com", "nodeID": "n1"}]}))
    _, errs = updated(
        "csinodes",
        obj(spec={"drivers": [{"name": "a.example.com", "nodeID": "n2"}, {"name": "b.example.com", "nodeID": "n"}]}),
        old,
    )
    assert errs == [
        'spec.drivers: Invalid value: storage.CSINodeDriver{Name:"a.example.com", NodeID:"n2", '
        "TopologyKeys:[]string(nil), Allocatable:(*storage.VolumeNodeResources)(nil)}: field is immutable"
    ]


def test_csi_storage_capacity() -> None:
    body, errs = created(
        "csistoragecapacities", obj(storageClassName="fast", capacity="1024Mi", maximumVolumeSize=None)
    )
    assert (body["capacity"], "maximumVolumeSize" in body, errs) == ("1Gi", False, [])
    _, errs = created("csistoragecapacities", obj(storageClassName="fast", capacity="-1"))
    assert errs == ['capacity: Invalid value: "-1": must be greater than or equal to 0']
    old, _ = created("csistoragecapacities", obj(storageClassName="fast", nodeTopology={"matchLabels": {"zone": "a"}}))
    _, errs = updated(
        "csistoragecapacities", {**old, "storageClassName": "slow", "nodeTopology": {"matchLabels": {"zone": "b"}}}, old
    )
    assert errs == [
        'nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"zone":"b"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        'storageClassName: Invalid value: "slow": field is immutable',
    ]


def attachment(**spec: Any) -> dict[str, Any]:
    fields = {"attacher": "csi.example.com", "source": {"persistentVolumeName": "pv-1"}, "nodeName": "node-1"}
    return obj(spec={**fields, **spec})


def test_volume_attachment_status_is_the_servers() -> None:
    body, errs = created("volumeattachments", {**attachment(), "status": {"attached": True}})
    assert (body["status"], errs) == ({"attached": False}, [])
    assert strategy("volumeattachments").has_status


def test_volume_attachment_validation() -> None:
    _, errs = created("volumeattachments", attachment(attacher="", source={}, nodeName="Node_1"))
    assert errs[0] == "spec.attacher: Required value"
    assert (
        errs[1] == "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    )
    assert errs[2].startswith('spec.nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain')
    assert "spec.attacher: Required value" in errs[3:]
    old, _ = created("volumeattachments", attachment())
    _, errs = updated("volumeattachments", with_spec(old, nodeName="node-2"), old)
    assert errs == [
        'spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:"csi.example.com", '
        "Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)(0xc000000000), "
        'InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, NodeName:"node-2"}: field is immutable'
    ]


# ---- printing -----------------------------------------------------------------------------------------------------


def rows(plural: str, *objects: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    resource = by_path(GROUPS[plural], "v1", plural)
    assert resource is not None
    answer = table(resource, list(objects), now=NOW)
    return [c["name"] for c in answer["columnDefinitions"]], [row["cells"] for row in answer["rows"]]


def test_persistent_volume_rows() -> None:
    body, _ = created("persistentvolumes", volume(accessModes=["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]))
    body["spec"]["claimRef"] = {"namespace": "ns", "name": "c"}
    body["metadata"]["annotations"] = {volumes.BETA_STORAGE_CLASS: "legacy"}
    assert rows("persistentvolumes", body) == (
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode",
        ],
        [["x", "1Gi", "RWO,RWX", "Retain", "Pending", "ns/c", "legacy", "<unset>", "", "3h", "Filesystem"]],
    )
    assert rows("persistentvolumes", {**obj(), "metadata": {**obj()["metadata"], "deletionTimestamp": CREATED}})[1] == [
        ["x", "0", "", "", "Terminating", "", "", "<unset>", "", "3h", "<unset>"]
    ]


def test_persistent_volume_claim_rows() -> None:
    pending, _ = created("persistentvolumeclaims", claim(storageClassName="fast"))
    bound = copy.deepcopy(pending)
    bound["spec"]["volumeName"] = "pv-1"
    bound["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"]}
    assert rows("persistentvolumeclaims", pending, bound) == (
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode",
        ],
        [
            ["c", "Pending", "", "", "", "fast", "<unset>", "3h", "Filesystem"],
            ["c", "Bound", "pv-1", "2Gi", "RWO", "fast", "<unset>", "3h", "Filesystem"],
        ],
    )


def test_storage_class_rows_mark_the_default() -> None:
    body = obj(provisioner="rancher.io/local-path", allowVolumeExpansion=True)
    body["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    assert rows("storageclasses", body, obj(provisioner="p")) == (
        ["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"],
        [
            ["x (default)", "rancher.io/local-path", "Delete", "Immediate", True, "3h"],
            ["x", "p", "Delete", "Immediate", False, "3h"],
        ],
    )


def test_csi_rows() -> None:
    driver, _ = created("csidrivers", obj(spec={"tokenRequests": [{"audience": "vault"}, {"audience": ""}]}))
    assert rows("csidrivers", driver) == (
        [
            "Name",
            "AttachRequired",
            "PodInfoOnMount",
            "StorageCapacity",
            "TokenRequests",
            "RequiresRepublish",
            "Modes",
            "Age",
        ],
        [["x", True, False, False, "vault,", False, "Persistent", "3h"]],
    )
    assert rows("csidrivers", obj())[1] == [["x", True, False, False, "<unset>", False, "<none>", "3h"]]
    assert rows("csinodes", obj(spec={"drivers": [{"name": "a"}, {"name": "b"}]})) == (
        ["Name", "Drivers", "Age"],
        [["x", 2, "3h"]],
    )
    assert rows(
        "csistoragecapacities", obj(storageClassName="fast", capacity="10Gi"), obj(storageClassName="slow")
    ) == (
        ["Name", "StorageClassName", "Capacity"],
        [["x", "fast", "10Gi"], ["x", "slow", "<unset>"]],
    )


def test_volume_attachment_rows() -> None:
    body, _ = created("volumeattachments", attachment())
    assert rows("volumeattachments", body) == (
        ["Name", "Attacher", "PV", "Node", "Attached", "Age"],
        [["x", "csi.example.com", "pv-1", "node-1", False, "3h"]],
    )


@pytest.mark.parametrize(
    ("printer", "column", "model", "field"),
    [
        ("persistentvolumes", "Capacity", "V1PersistentVolumeSpec", "capacity"),
        ("persistentvolumes", "Reclaim Policy", "V1PersistentVolumeSpec", "persistent_volume_reclaim_policy"),
        ("persistentvolumes", "VolumeMode", "V1PersistentVolumeSpec", "volume_mode"),
        ("persistentvolumeclaims", "Access Modes", "V1PersistentVolumeClaimStatus", "access_modes"),
        ("storageclasses", "VolumeBindingMode", "V1StorageClass", "volume_binding_mode"),
        ("csidrivers", "PodInfoOnMount", "V1CSIDriverSpec", "pod_info_on_mount"),
        ("csidrivers", "TokenRequests", "V1CSIDriverSpec", "token_requests"),
        ("csidrivers", "Modes", "V1CSIDriverSpec", "volume_lifecycle_modes"),
        ("csistoragecapacities", "Capacity", "V1CSIStorageCapacity", "capacity"),
        ("volumeattachments", "Attached", "V1VolumeAttachmentStatus", "attached"),
    ],
)
def test_column_descriptions_are_the_field_descriptions(printer: str, column: str, model: str, field: str) -> None:
    columns = {c.name: c for c in PRINTERS[printer].columns}
    assert columns[column].description == getattr(k8s, model).model_fields[field].description


# ---- against a real apiserver -------------------------------------------------------------------------------------


def test_claim_over_http(api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    response = api.post(path, json={"metadata": {"name": "c"}, "spec": claim()["spec"]})
    assert response.status_code == 201, response.text
    assert (response.json()["status"], response.json()["spec"]["volumeMode"]) == ({"phase": "Pending"}, "Filesystem")
    response = api.patch(
        f"{path}/c",
        json={"spec": {"accessModes": ["ReadWriteMany"]}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims",
            "field": "spec",
        }
    ]


def test_storage_class_over_kubectl(cluster: RunningCluster) -> None:
    manifest = (
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: tinykube-test-default\n"
        '  annotations:\n    storageclass.kubernetes.io/is-default-class: "true"\nprovisioner: example.com/none\n'
    )
    cluster.kubectl("apply", "-f", "-", input=manifest)
    try:
        lines = cluster.kubectl("get", "storageclass", "tinykube-test-default").stdout.splitlines()
        assert lines[0].split() == [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ]
        assert lines[1].split()[:6] == [
            "tinykube-test-default",
            "(default)",
            "example.com/none",
            "Delete",
            "Immediate",
            "false",
        ]
        patched = cluster.kubectl(
            "patch", "storageclass", "tinykube-test-default", "-p", '{"provisioner":"other"}', check=False
        )
        assert "provisioner: Forbidden: updates to provisioner are forbidden." in patched.stderr
    finally:
        cluster.kubectl("delete", "storageclass", "tinykube-test-default")


def test_claim_table_over_kubectl(cluster: RunningCluster, namespace: str) -> None:
    manifest = (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n"
        "  resources:\n    requests:\n      storage: 1Gi\n"
    )
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    lines = cluster.kubectl("get", "pvc", "-n", namespace, "-o", "wide").stdout.splitlines()
    header = ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert lines[0].split() == [*header, "VOLUMEMODE"]
    assert lines[1].split()[:2] == ["data", "Pending"]
    assert lines[1].split()[-1] == "Filesystem"
