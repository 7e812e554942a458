"""Table columns (`kubectl get`) of the storage kinds, as upstream's printers (`pkg/printers/internalversion`).

Cells read fields the apiserver defaults with the same defaults (a StorageClass without `reclaimPolicy` prints
Delete), as upstream's printers do. Column descriptions are the upstream field descriptions (as the `kubernetes`
client carries them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.apiserver.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Printer,
    age,
    as_dict,
    as_list,
    as_str,
    dicts_in,
    meta_of,
    name_of,
)
from tinykube.apiserver.tables.config import quantity_text

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
_ACCESS_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)

_DESC_VOLUME_MODE = (
    "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block "
    "state. Value of Filesystem is implied when not included in spec."
)

PERSISTENT_VOLUME_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
    ),
    Column(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
    ),
    Column(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. "
        "Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically "
        "provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin "
        "underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes"
        "#reclaiming",
    ),
    Column(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
    ),
    Column(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected "
        "to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
    ),
    Column("StorageClass", "string", "StorageClass of the pv"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    Column(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy "
        "display in the CLI.",
    ),
    AGE_COLUMN,
    Column("VolumeMode", "string", _DESC_VOLUME_MODE, priority=1),
)

PERSISTENT_VOLUME_CLAIM_COLUMNS = (
    NAME_COLUMN,
    Column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    Column("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    Column("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
    Column(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
    ),
    Column("StorageClass", "string", "StorageClass of the pvc"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE_COLUMN,
    Column(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not "
        "included in claim spec.",
        priority=1,
    ),
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


def access_modes_text(modes: Any) -> str:
    """`GetAccessModesAsString`: the abbreviations, once each, always in the order RWO,ROX,RWX,RWOP."""
    present = [mode for mode in as_list(modes) if isinstance(mode, str)]
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


def _phase(obj: dict[str, Any]) -> str:
    if meta_of(obj).get("deletionTimestamp"):
        return "Terminating"
    return as_str(as_dict(obj.get("status")).get("phase"))


def _class_of(obj: dict[str, Any], class_name: Any) -> str:
    """The storage class, the beta annotation first (`GetPersistentVolumeClass`, `...ClaimClass`)."""
    annotations = as_dict(meta_of(obj).get("annotations"))
    if BETA_STORAGE_CLASS in annotations:
        return as_str(annotations[BETA_STORAGE_CLASS])
    return as_str(class_name)


def _or_unset(value: Any) -> str:
    return "<unset>" if value is None else as_str(value)


def _persistent_volume_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = as_dict(obj.get("spec"))
    claim = as_dict(spec.get("claimRef"))
    claimed = (
        f"{as_str(claim.get('namespace'))}/{as_str(claim.get('name'))}" if spec.get("claimRef") is not None else ""
    )
    return [
        name_of(obj),
        quantity_text(as_dict(spec.get("capacity")).get("storage")),
        access_modes_text(spec.get("accessModes")),
        as_str(spec.get("persistentVolumeReclaimPolicy")),
        _phase(obj),
        claimed,
        _class_of(obj, spec.get("storageClassName")),
        _or_unset(spec.get("volumeAttributesClassName")),
        as_str(as_dict(obj.get("status")).get("reason")),
        age(obj, now),
        _or_unset(spec.get("volumeMode")),
    ]


def _persistent_volume_claim_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    volume = as_str(spec.get("volumeName"))
    # capacity and access modes are the bound volume's: nothing until there is one
    capacity = quantity_text(as_dict(status.get("capacity")).get("storage")) if volume else ""
    return [
        name_of(obj),
        _phase(obj),
        volume,
        capacity,
        access_modes_text(status.get("accessModes")) if volume else "",
        _class_of(obj, spec.get("storageClassName")),
        _or_unset(spec.get("volumeAttributesClassName")),
        age(obj, now),
        _or_unset(spec.get("volumeMode")),
    ]


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
    audiences = ",".join(as_str(r.get("audience")) for r in dicts_in(requests)) if requests is not None else "<unset>"
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
    "persistentvolumes": Printer(PERSISTENT_VOLUME_COLUMNS, _persistent_volume_cells),
    "persistentvolumeclaims": Printer(PERSISTENT_VOLUME_CLAIM_COLUMNS, _persistent_volume_claim_cells),
    "storageclasses": Printer(STORAGE_CLASS_COLUMNS, _storage_class_cells),
    "csidrivers": Printer(CSI_DRIVER_COLUMNS, _csi_driver_cells),
    "csinodes": Printer(CSI_NODE_COLUMNS, _csi_node_cells),
    "csistoragecapacities": Printer(CSI_STORAGE_CAPACITY_COLUMNS, _csi_storage_capacity_cells),
    "volumeattachments": Printer(VOLUME_ATTACHMENT_COLUMNS, _volume_attachment_cells),
}
