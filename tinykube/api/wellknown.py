"""Well-known annotation and finalizer names that the apiserver and a controller both act on (the storage admission
plugins set them, the persistent-volume controller reads and removes them)."""

from __future__ import annotations

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
