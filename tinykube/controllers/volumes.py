"""Persistent volumes, as kind's cluster has them: upstream's binder and protection controllers, and a local-path
provisioner behind a default StorageClass `standard`.

* The class `standard` (`tinykube.io/local-path`, `WaitForFirstConsumer`, reclaim `Delete`, the default) is made
  when the controller starts, if missing.
* A claim binds to an Available volume of its class whose capacity and access modes suffice (the smallest), and
  both are marked Bound (`spec.volumeName`, `spec.claimRef`, `status.phase`). A claim of a `WaitForFirstConsumer`
  class waits for the scheduler to name a node (`volume.kubernetes.io/selected-node`, set when a pod using it is
  scheduled).
* A claim of the `tinykube.io/local-path` provisioner that nothing matches gets a volume `pvc-<claim uid>`: a
  directory under the cluster's data dir (`volumes/`), mounted as a hostPath, tied to the selected node.
* A volume whose claim is gone is Released, and deleted with its directory when its reclaim policy is Delete.
* The `kubernetes.io/pvc-protection` finalizer leaves a claim no pod uses any more, `kubernetes.io/pv-protection`
  a volume that is not Bound.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from typing import Any

from tinykube.api import errors
from tinykube.api.quantity import parse_quantity
from tinykube.api.resources import builtin
from tinykube.api.wellknown import DEFAULT_CLASS_ANNOTATION, PV_PROTECTION, PVC_PROTECTION
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.volumebinding import SELECTED_NODE, claims_of

log = logging.getLogger(__name__)

Object = dict[str, Any]
CLAIMS = builtin("", "v1", "persistentvolumeclaims")
VOLUMES = builtin("", "v1", "persistentvolumes")
CLASSES = builtin("storage.k8s.io", "v1", "storageclasses")
PODS = builtin("", "v1", "pods")
PROVISIONER = "tinykube.io/local-path"
COMPONENT = "persistentvolume-controller"
CLASS_INDEX = "pv:storage-class"
WORKERS = 2
STANDARD: Object = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
    "provisioner": PROVISIONER,
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer",
}


def class_of(obj: Object) -> list[str]:
    """Index: a volume's or a claim's class ("" for none), so that a claim looks only at the volumes of its own,
    and a volume that becomes Available only at the claims of its own."""
    return [str((obj.get("spec") or {}).get("storageClassName") or "")]


def _request(claim: Object) -> int:
    storage = (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage", "0")
    return _nanos(storage)


def _capacity(volume: Object) -> int:
    return _nanos(((volume.get("spec") or {}).get("capacity") or {}).get("storage", "0"))


def _nanos(value: Any) -> int:
    try:
        return parse_quantity(value).nanos
    except ValueError:  # stored before validation knew better: fits nothing
        return 0


def fits(volume: Object, claim: Object) -> bool:
    """upstream's findBestMatchForClaim, for one volume: Available, the claim's class, enough room and modes."""
    spec, wanted = volume.get("spec") or {}, claim.get("spec") or {}
    if (volume.get("status") or {}).get("phase", "Available") != "Available" or volume["metadata"].get(
        "deletionTimestamp"
    ):
        return False
    ref = spec.get("claimRef")
    if ref and (ref.get("namespace"), ref.get("name")) != (claim["metadata"]["namespace"], claim["metadata"]["name"]):
        return False
    return (
        (spec.get("storageClassName") or "") == (wanted.get("storageClassName") or "")
        and set(wanted.get("accessModes") or []) <= set(spec.get("accessModes") or [])
        and _capacity(volume) >= _request(claim)
    )


class VolumeController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.root = ctx.settings.volumes_dir
        self.claims: Informer = ctx.informers.informer(CLAIMS)
        self.volumes: Informer = ctx.informers.informer(VOLUMES)
        self.classes: Informer = ctx.informers.informer(CLASSES)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.queue: WorkQueue[str] = WorkQueue()  # "claim:<ns>/<name>" or "volume:<name>"
        self.workers = workers

    async def run(self) -> None:
        self.claims.add_handler(on_add=self._claim, on_update=lambda _o, new: self._claim(new), on_delete=self._claim)
        self.volumes.add_handler(on_add=self._volume, on_update=lambda _o, n: self._volume(n), on_delete=self._volume)
        self.pods.add_handler(on_update=lambda _old, new: self._pod(new), on_delete=self._pod_gone)
        self.volumes.store.add_index(CLASS_INDEX, class_of)
        self.claims.store.add_index(CLASS_INDEX, class_of)
        await run_controller(
            self.informers,
            (self.claims, self.volumes, self.classes, self.pods),
            Loop(self.queue, self.sync, workers=self.workers),
            when_synced=self._ensure_standard_class,
        )

    async def _ensure_standard_class(self) -> None:
        if self.root is not None and self.classes.store.get("standard") is None:
            with contextlib.suppress(errors.AlreadyExists):
                await self.client.create(CLASSES, "", STANDARD)

    def _claim(self, claim: Object) -> None:
        self.queue.add("claim:" + object_key(claim))
        if (claim.get("spec") or {}).get("volumeName"):
            self.queue.add("volume:" + claim["spec"]["volumeName"])

    def _volume(self, volume: Object) -> None:
        self.queue.add("volume:" + volume["metadata"]["name"])
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("name"):
            self.queue.add(f"claim:{ref.get('namespace')}/{ref['name']}")
        elif (volume.get("status") or {}).get("phase") == "Available":  # it may fit a claim that waits
            for claim in self.claims.store.by_index(CLASS_INDEX, class_of(volume)[0]):
                if (claim.get("status") or {}).get("phase") != "Bound":
                    self.queue.add("claim:" + object_key(claim))

    def _pod_gone(self, pod: Object) -> None:
        for name in claims_of(pod):
            self.queue.add(f"claim:{pod['metadata']['namespace']}/{name}")

    def _pod(self, pod: Object) -> None:
        """A pod that ends or goes may free its claims of their protection."""
        if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
            "Succeeded",
            "Failed",
        ):
            for name in claims_of(pod):
                self.queue.add(f"claim:{pod['metadata']['namespace']}/{name}")

    async def sync(self, key: str) -> None:
        kind, _, name = key.partition(":")
        if kind == "claim":
            claim = self.claims.store.get(name)
            if claim is not None:
                await self._sync_claim(claim)
        else:
            volume = self.volumes.store.get(name)
            if volume is not None:
                await self._sync_volume(volume)

    # ---- claims ------------------------------------------------------------------------------------------------

    async def _sync_claim(self, claim: Object) -> None:
        meta, spec = claim["metadata"], claim.get("spec") or {}
        if meta.get("deletionTimestamp"):
            await self._unprotect_claim(claim)
            return
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        bound = spec.get("volumeName") and self.volumes.store.get(spec["volumeName"])
        if bound:
            await self._bind(claim, bound)
            return
        klass = self.classes.store.get(spec.get("storageClassName") or "") if spec.get("storageClassName") else None
        waiting = klass is not None and klass.get("volumeBindingMode") == "WaitForFirstConsumer"
        node = (meta.get("annotations") or {}).get(SELECTED_NODE)
        if waiting and not node:
            return  # the scheduler names the node once a pod uses the claim
        same_class = self.volumes.store.by_index(CLASS_INDEX, spec.get("storageClassName") or "")
        candidates = sorted((v for v in same_class if fits(v, claim)), key=_capacity)
        if candidates:
            await self._bind(claim, candidates[0])
        elif klass is not None and klass.get("provisioner") == PROVISIONER and self.root is not None:
            await self._bind(claim, await self._provision(claim, klass, node))

    async def _provision(self, claim: Object, klass: Object, node: str | None) -> Object:
        assert self.root is not None
        name = f"pvc-{claim['metadata']['uid']}"
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        spec: Object = {
            "capacity": {
                "storage": ((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            },
            "accessModes": list(claim["spec"].get("accessModes") or ["ReadWriteOnce"]),
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "persistentVolumeReclaimPolicy": klass.get("reclaimPolicy") or "Delete",
            "storageClassName": klass["metadata"]["name"],
            "volumeMode": claim["spec"].get("volumeMode") or "Filesystem",
            "claimRef": _claim_ref(claim),
        }
        if node:
            term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": spec,
        }
        try:
            created = await self.client.create(VOLUMES, "", volume)
        except errors.AlreadyExists:
            created = await self.client.get(VOLUMES, "", name)
        message = f"Successfully provisioned volume {name}"
        await record_event(self.client, claim, type_="Normal", reason="ProvisioningSucceeded", message=message,
                           component=COMPONENT)  # fmt: skip
        return created

    async def _bind(self, claim: Object, volume: Object) -> None:
        """Both halves of a binding, the volume first (as upstream's binder), each skipped if already so."""
        ref = volume["spec"].get("claimRef") or {}
        if ref.get("uid") != claim["metadata"]["uid"] or (volume.get("status") or {}).get("phase") != "Bound":
            volume = {**volume, "spec": {**volume["spec"], "claimRef": _claim_ref(claim)}}
            volume = await self.client.update(VOLUMES, "", volume)
            await self._set_phase(volume, "Bound")
        meta = claim["metadata"]
        if claim["spec"].get("volumeName") != volume["metadata"]["name"]:
            annotations = dict(meta.get("annotations") or {}) | {"pv.kubernetes.io/bind-completed": "yes"}
            claim = {**claim, "metadata": {**meta, "annotations": annotations},
                     "spec": {**claim["spec"], "volumeName": volume["metadata"]["name"]}}  # fmt: skip
            claim = await self.client.update(CLAIMS, meta["namespace"], claim)
        status = {
            "phase": "Bound",
            "accessModes": list(volume["spec"].get("accessModes") or []),
            "capacity": dict(volume["spec"].get("capacity") or {}),
        }
        await self.client.update(CLAIMS, meta["namespace"], {**claim, "status": status}, subresource="status")

    async def _unprotect_claim(self, claim: Object) -> None:
        meta = claim["metadata"]
        if PVC_PROTECTION not in (meta.get("finalizers") or []):
            return
        for pod in self.pods.store.by_index("namespace", meta["namespace"]):
            ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if meta["name"] in claims_of(pod) and not ended and not pod["metadata"].get("deletionTimestamp"):
                return  # still in use: upstream's pvc-protection controller waits
        await _drop_finalizer(self.client, CLAIMS, claim, PVC_PROTECTION)

    async def _set_phase(self, volume: Object, phase: str) -> Object:
        """The volume with its new phase (upstream's updateVolumePhase: the rest of the status stays, the message
        is cleared)."""
        status = {k: v for k, v in (volume.get("status") or {}).items() if k != "message"} | {"phase": phase}
        return await self.client.update(VOLUMES, "", {**volume, "status": status}, subresource="status")

    # ---- volumes -----------------------------------------------------------------------------------------------

    async def _sync_volume(self, volume: Object) -> None:
        """The binder's work on the volume, then upstream's pv-protection controller's: a volume being deleted keeps
        `kubernetes.io/pv-protection` only while it is Bound (the binder, which works on volumes being deleted too,
        first makes a volume whose claim is gone Released)."""
        now = await self._reclaim(volume)
        if now["metadata"].get("deletionTimestamp") and _phase(now) != "Bound":
            await _drop_finalizer(self.client, VOLUMES, now, PV_PROTECTION)

    async def _reclaim(self, volume: Object) -> Object:
        """Available when free, Released when its claim is gone, deleted when Released with reclaim policy Delete;
        the volume as it is now."""
        meta, spec = volume["metadata"], volume.get("spec") or {}
        phase = (volume.get("status") or {}).get("phase")
        ref = spec.get("claimRef")
        if not ref:
            if phase in (None, "Pending"):  # the apiserver makes a volume Pending; the binder makes it Available
                return await self._set_phase(volume, "Available")
            return volume
        claim = self.claims.store.get(f"{ref.get('namespace')}/{ref.get('name')}")
        if claim is not None and (not ref.get("uid") or claim["metadata"]["uid"] == ref.get("uid")):
            return volume  # bound, or being bound: the claim's sync finishes it
        if not ref.get("uid"):  # pre-bound by its creator to a claim yet to come: it waits for that claim
            return volume if phase == "Available" else await self._set_phase(volume, "Available")
        if phase in ("Bound", "Pending", None):
            return await self._set_phase(volume, "Released")
        if phase == "Released" and spec.get("persistentVolumeReclaimPolicy") == "Delete":
            if (meta.get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER and self.root:
                shutil.rmtree(self.root / meta["name"], ignore_errors=True)
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(VOLUMES, "", meta["name"])
        return volume


def _phase(volume: Object) -> str | None:
    return (volume.get("status") or {}).get("phase")


def _claim_ref(claim: Object) -> Object:
    meta = claim["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "resourceVersion": meta.get("resourceVersion", ""),
    }


async def _drop_finalizer(client: Any, resource: Any, obj: Object, finalizer: str) -> None:
    meta = obj["metadata"]
    kept = [f for f in meta.get("finalizers") or [] if f != finalizer]
    patch = {"metadata": {"finalizers": kept or None, "resourceVersion": meta["resourceVersion"]}}
    with contextlib.suppress(errors.NotFound, errors.Conflict):
        await client.patch(resource, meta.get("namespace", ""), meta["name"], patch, patch_type="merge")
