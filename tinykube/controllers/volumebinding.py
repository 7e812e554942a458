"""The scheduler's part in binding volumes (upstream's VolumeBinding plugin, for the volumes tinykube has).

A pod whose claim is missing, or unbound with immediate binding, fits no node; a bound claim's volume keeps the
pod to the nodes its `nodeAffinity` names. A claim of a `WaitForFirstConsumer` class is unbound until a pod using
it is scheduled: the node chosen for the pod is written on the claim (`volume.kubernetes.io/selected-node`), the
persistent-volume controller provisions or binds for that node, and the pod is bound once its claims are.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tinykube.api import errors
from tinykube.api.nodeaffinity import node_selector_term_matches
from tinykube.api.resources import builtin
from tinykube.controllers.context import ControllerContext

Object = dict[str, Any]
CLAIMS = builtin("", "v1", "persistentvolumeclaims")
VOLUMES = builtin("", "v1", "persistentvolumes")
CLASSES = builtin("storage.k8s.io", "v1", "storageclasses")
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def claims_of(pod: Object) -> list[str]:
    """The names of the claims a pod's volumes use."""
    return [
        str(v["persistentVolumeClaim"]["claimName"])
        for v in (pod.get("spec") or {}).get("volumes") or []
        if (v.get("persistentVolumeClaim") or {}).get("claimName")
    ]


def bound(claim: Object) -> bool:
    return (claim.get("status") or {}).get("phase") == "Bound"


class VolumeBinding:
    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.claims_informer = ctx.informers.informer(CLAIMS)
        self.volumes = ctx.informers.informer(VOLUMES)
        self.classes = ctx.informers.informer(CLASSES)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.wait_synced() for i in (self.claims_informer, self.volumes, self.classes)))

    def claims(self, pod: Object) -> tuple[list[Object], str | None]:
        """The pod's claims, and why no node can take the pod (a claim missing, being deleted, or unbound with
        immediate binding), if so."""
        namespace = pod["metadata"]["namespace"]
        found = []
        for name in claims_of(pod):
            claim = self.claims_informer.store.get(f"{namespace}/{name}")
            if claim is None:
                return [], f'persistentvolumeclaim "{name}" not found'
            if claim["metadata"].get("deletionTimestamp"):
                return [], f'persistentvolumeclaim "{name}" is being deleted'
            found.append(claim)
        if any(not bound(c) and not self._delayed(c) for c in found):
            return found, "pod has unbound immediate PersistentVolumeClaims"
        return found, None

    def _delayed(self, claim: Object) -> bool:
        name = (claim.get("spec") or {}).get("storageClassName")
        klass = self.classes.store.get(name) if name else None
        return klass is not None and klass.get("volumeBindingMode") == "WaitForFirstConsumer"

    def why_not(self, claims: list[Object], node: Object) -> str | None:
        for claim in claims:
            if not bound(claim):
                continue
            volume = self.volumes.store.get((claim.get("spec") or {}).get("volumeName") or "")
            terms = ((((volume or {}).get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get(
                "nodeSelectorTerms"
            )
            if terms and not any(node_selector_term_matches(term, node) for term in terms):
                return "node(s) had volume node affinity conflict"
        return None

    async def wait_for_binding(self, claims: list[Object], node: str) -> bool:
        """Name `node` on the pod's unbound claims; True while any is unbound (the pod waits for them)."""
        waiting = False
        for claim in claims:
            if bound(claim):
                continue
            waiting = True
            meta = claim["metadata"]
            if (meta.get("annotations") or {}).get(SELECTED_NODE) != node:
                patch = {"metadata": {"annotations": {SELECTED_NODE: node}}}
                with contextlib.suppress(errors.NotFound, errors.Conflict):
                    await self.client.patch(CLAIMS, meta["namespace"], meta["name"], patch, patch_type="merge")
        return waiting
