"""Two storage admission plugins of kube-apiserver's recommended set:

* DefaultStorageClass (`plugin/pkg/admission/storage/storageclass/setdefault`): a new claim that names no class
  (the field absent, not `""`) gets the default StorageClass (annotated `storageclass.kubernetes.io/is-default-class:
  "true"`; the newest of several, as upstream picks).
* StorageObjectInUseProtection: a new claim gets the `kubernetes.io/pvc-protection` finalizer and a new volume
  `kubernetes.io/pv-protection`, which the persistent-volume controller removes once nothing uses them.
"""

from __future__ import annotations

from tinykube.api.resources import ResourceInfo
from tinykube.api.wellknown import DEFAULT_CLASS_ANNOTATION, PV_PROTECTION, PVC_PROTECTION
from tinykube.apiserver.admission.chain import Object, Plugin, is_core
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.storage.watchcache import WatchCache


def default_class(classes: WatchCache) -> str | None:
    defaults = [
        cached.obj
        for _key, cached in classes.items()
        if (cached.obj["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
    ]
    if not defaults:
        return None
    newest = max(defaults, key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
    return str(newest["metadata"]["name"])


class DefaultStorageClass(Plugin):
    name = "DefaultStorageClass"

    def __init__(self, classes: WatchCache) -> None:
        self.classes = classes

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "persistentvolumeclaims")

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        spec = obj.setdefault("spec", {})
        if old is not None or req.subresource or spec.get("storageClassName") is not None:
            return
        found = default_class(self.classes)
        if found is not None:
            spec["storageClassName"] = found


class StorageObjectInUseProtection(Plugin):
    name = "StorageObjectInUseProtection"

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "persistentvolumeclaims", "persistentvolumes")

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        if old is not None or req.subresource:
            return
        finalizer = PVC_PROTECTION if req.resource.plural == "persistentvolumeclaims" else PV_PROTECTION
        finalizers = obj.setdefault("metadata", {}).setdefault("finalizers", [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)
