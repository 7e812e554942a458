"""Table columns (`kubectl get`) of the core volume kinds, PersistentVolumes and PersistentVolumeClaims, as
upstream's printers (`pkg/printers/internalversion`).

Cells read fields the apiserver defaults with the same defaults, as upstream's printers do. Column descriptions are
the upstream field descriptions (as the `kubernetes` client carries them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str
from tinykube.apiserver.printing.cells import age, meta_of, name_of, quantity_text
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Column, Printer

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
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


PRINTERS: dict[str, Printer] = {
    "persistentvolumes": Printer(PERSISTENT_VOLUME_COLUMNS, _persistent_volume_cells),
    "persistentvolumeclaims": Printer(PERSISTENT_VOLUME_CLAIM_COLUMNS, _persistent_volume_claim_cells),
}
