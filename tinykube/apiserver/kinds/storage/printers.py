"""Table columns (`kubectl get`) of the storage.k8s.io kinds (StorageClasses, the CSI kinds, VolumeAttachments), as
upstream's printers (`pkg/printers/internalversion`).

Cells read fields the apiserver defaults with the same defaults (a StorageClass without `reclaimPolicy` prints
Delete), as upstream's printers do. Column descriptions are the upstream field descriptions (as the `kubernetes`
client carries them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str, dicts
from tinykube.apiserver.printing.cells import age, meta_of, name_of, quantity_text
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Column, Printer

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)

STORAGE_CLASS_COLUMNS = (
    NAME_COLUMN,
    Column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    Column(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage "
        "class. Defaults to Delete.",
    ),
    Column(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, "
        "VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling "
        "feature.",
    ),
    Column(
        "AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand."
    ),
    AGE_COLUMN,
)

CSI_DRIVER_COLUMNS = (
    NAME_COLUMN,
    Column(
        "AttachRequired",
        "boolean",
        "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI "
        "ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach "
        "volume interface which checks the volumeattachment status and waits until the volume is attached before "
        "proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the "
        "volumeattachment status when the attach operation is complete. If the value is specified to false, the "
        "attach operation will be skipped. Otherwise the attach operation will be called.  This field is immutable.",
    ),
    Column(
        "PodInfoOnMount",
        "boolean",
        "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, "
        "etc.) during mount operations, if set to true. If set to false, pod information will not be passed on "
        "mount. Default is false.  The CSI driver specifies podInfoOnMount as part of driver deployment. If true, "
        "Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is "
        "responsible for parsing and validating the information passed in as VolumeContext.  The following "
        "VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be "
        'used. "csi.storage.k8s.io/pod.name": pod.Name "csi.storage.k8s.io/pod.namespace": pod.Namespace '
        '"csi.storage.k8s.io/pod.uid": string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an '
        "ephemeral inline volume                                 defined by a CSIVolumeSource, otherwise "
        '"false"  "csi.storage.k8s.io/ephemeral" is a new feature in Kubernetes 1.16. It is only required for '
        'drivers which support both the "Persistent" and "Ephemeral" VolumeLifecycleMode. Other drivers can leave '
        "pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can "
        "only support one mode when deployed on such a cluster and the deployment determines which mode that is, "
        "for example via a command line parameter of the driver.  This field was immutable in Kubernetes < 1.29 and "
        "now is mutable.",
    ),
    Column(
        "StorageCapacity",
        "boolean",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity "
        "that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, "
        "if set to true.  The check can be enabled immediately when deploying a driver. In that case, provisioning "
        "new volumes with late binding will pause until the driver deployment has published some suitable "
        "CSIStorageCapacity object.  Alternatively, the driver can be deployed with the field unset or false and it "
        "can be flipped later when storage capacity information has been published.  This field was immutable in "
        "Kubernetes <= 1.22 and now is mutable.",
    ),
    Column(
        "TokenRequests",
        "string",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do "
        "necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. "
        'The CSI driver should parse and validate the following VolumeContext: "csi.storage.k8s.io/serviceAccount.'
        'tokens": {   "<audience>": {     "token": <token>,     "expirationTimestamp": <expiration timestamp in '
        "RFC3339>,   },   ... }  Note: Audience in each TokenRequest should be different and at most one token is "
        "empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger "
        "NodePublishVolume periodically.",
    ),
    Column(
        "RequiresRepublish",
        "boolean",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect "
        "any possible change in the mounted volume. This field defaults to false.  Note: After a successful initial "
        "NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the "
        "volume. New mount points will not be seen by a running container.",
    ),
    Column(
        "Modes",
        "string",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list "
        'is empty is "Persistent", which is the usage defined by the CSI specification and implemented in '
        'Kubernetes via the usual PV/PVC mechanism.  The other mode is "Ephemeral". In this mode, volumes are '
        "defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of "
        "that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for "
        "such a volume.  For more information about implementing this mode, see "
        "https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of "
        "these modes and more modes may be added in the future.  This field is beta. This field is immutable.",
    ),
    AGE_COLUMN,
)

CSI_NODE_COLUMNS = (
    NAME_COLUMN,
    Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
    AGE_COLUMN,
)

# No AGE column upstream.
CSI_STORAGE_CAPACITY_COLUMNS = (
    NAME_COLUMN,
    Column(
        "StorageClassName",
        "string",
        "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must "
        "meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object "
        "no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This "
        "field is immutable.",
    ),
    Column(
        "Capacity",
        "string",
        "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with "
        "topology and parameters that match the previous fields.  The semantic is currently (CSI spec 1.2) defined "
        "as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, "
        "that information is currently unavailable.",
    ),
)

VOLUME_ATTACHMENT_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Attacher",
        "string",
        "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned "
        "by GetPluginName().",
        format="name",
    ),
    Column("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach."),
    Column("Node", "string", "nodeName represents the node that the volume should be attached to."),
    Column(
        "Attached",
        "boolean",
        "attached indicates the volume is successfully attached. This field must only be set by the entity "
        "completing the attach operation, i.e. the external-attacher.",
    ),
    AGE_COLUMN,
)


def _storage_class_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    annotations = as_dict(meta_of(obj).get("annotations"))
    default = any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)
    return [
        name_of(obj) + (" (default)" if default else ""),
        as_str(obj.get("provisioner")),
        as_str(obj.get("reclaimPolicy")) or "Delete",
        as_str(obj.get("volumeBindingMode")) or "Immediate",
        obj.get("allowVolumeExpansion") is True,
        age(obj, now),
    ]


def _flag(spec: dict[str, Any], field: str, default: bool) -> bool:
    value = spec.get(field)
    return value if isinstance(value, bool) else default


def _csi_driver_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(obj.get("spec"))
    requests = spec.get("tokenRequests")
    audiences = ",".join(as_str(r.get("audience")) for r in dicts(requests)) if requests is not None else "<unset>"
    modes = ",".join(as_str(m) for m in as_list(spec.get("volumeLifecycleModes"))) or "<none>"
    return [
        name_of(obj),
        _flag(spec, "attachRequired", True),
        _flag(spec, "podInfoOnMount", False),
        _flag(spec, "storageCapacity", False),
        audiences,
        _flag(spec, "requiresRepublish", False),
        modes,
        age(obj, now),
    ]


def _csi_node_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [name_of(obj), len(as_list(as_dict(obj.get("spec")).get("drivers"))), age(obj, now)]


def _csi_storage_capacity_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    capacity = obj.get("capacity")
    return [
        name_of(obj),
        as_str(obj.get("storageClassName")),
        "<unset>" if capacity is None else quantity_text(capacity),
    ]


def _volume_attachment_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(obj.get("spec"))
    return [
        name_of(obj),
        as_str(spec.get("attacher")),
        as_str(as_dict(spec.get("source")).get("persistentVolumeName")),
        as_str(spec.get("nodeName")),
        as_dict(obj.get("status")).get("attached") is True,
        age(obj, now),
    ]


PRINTERS: dict[str, Printer] = {
    "storageclasses": Printer(STORAGE_CLASS_COLUMNS, _storage_class_cells),
    "csidrivers": Printer(CSI_DRIVER_COLUMNS, _csi_driver_cells),
    "csinodes": Printer(CSI_NODE_COLUMNS, _csi_node_cells),
    "csistoragecapacities": Printer(CSI_STORAGE_CAPACITY_COLUMNS, _csi_storage_capacity_cells),
    "volumeattachments": Printer(VOLUME_ATTACHMENT_COLUMNS, _volume_attachment_cells),
}
