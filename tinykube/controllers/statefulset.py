"""The StatefulSet controller: pods with a stable identity, `<set>-<ordinal>`, as upstream's.

Each pod gets the set's `serviceName` as its `subdomain` and its own name as `hostname`, so the headless Service
gives it a DNS name (`web-0.nginx.<ns>.svc.cluster.local`), and one PersistentVolumeClaim per
`volumeClaimTemplates` entry (`www-web-0`), which outlives the pod. With `OrderedReady` pods are created one at a
time in ordinal order, each once the one before is Running and Ready, and removed from the highest ordinal down;
with `Parallel` all at once. Templates are recorded as ControllerRevisions (`<set>-<hash>`, the data a strategic
merge patch that `kubectl rollout undo` applies); a `RollingUpdate` replaces the pods of an older revision from
the highest ordinal down to `partition`, `maxUnavailable` at a time, and `OnDelete` waits for pods to be deleted.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import time
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.intstr import scaled
from tinykube.controllers.ownership import CONTROLLER_INDEX, claim, controller_of, controller_ref, controller_uid
from tinykube.controllers.pods import pod_ready
from tinykube.controllers.replicaset import available, selector_of, update_status
from tinykube.controllers.revisions import (
    REVISION_LABEL,
    REVISIONS,
    revision_of,
    template_of,
    trim_history,
    update_revision,
)

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
CLAIMS = builtin("", "v1", "persistentvolumeclaims")
STATEFULSETS = builtin("apps", "v1", "statefulsets")
WORKERS = 5  # upstream's --concurrent-statefulset-syncs
COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(set_name: str, pod: Object) -> int | None:
    """The ordinal in a pod's name `<set>-<ordinal>`, or None for a pod not named so."""
    match = re.fullmatch(re.escape(set_name) + r"-(0|[1-9][0-9]*)", pod["metadata"]["name"])
    return int(match.group(1)) if match else None


def claim_name(template: Object, pod_name: str) -> str:
    return f"{template['metadata']['name']}-{pod_name}"


def running_and_ready(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)


def terminating(pod: Object) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def failed(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Failed"


class StatefulSetController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        # written in the background, correlated as upstream's recorder (no client rate: tinykube models none)
        self.events = EventRecorder(ctx.client, COMPONENT, qps=0.0)
        self.sets: Informer = ctx.informers.informer(STATEFULSETS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.revisions: Informer = ctx.informers.informer(REVISIONS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        for informer in (self.pods, self.revisions):
            with contextlib.suppress(ValueError):  # shared with other controllers, which may have added it
                informer.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.sets.add_handler(
            on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new), on_delete=self._enqueue
        )
        self.pods.add_handler(on_add=self._on_pod, on_update=self._on_pod_update, on_delete=self._on_pod)
        await run_controller(
            self.informers,
            (self.sets, self.pods, self.revisions),
            Loop(self.queue, self.sync, workers=self.workers),
            beside=[self.events.run],
        )

    def _enqueue(self, sts: Object) -> None:
        self.queue.add(object_key(sts))

    def _on_pod_update(self, old: Object, new: Object) -> None:
        self._on_pod(old)
        self._on_pod(new)

    def _on_pod(self, pod: Object) -> None:
        ref = controller_of(pod)
        if ref and ref.get("kind") == "StatefulSet":
            self.queue.add(f"{pod['metadata']['namespace']}/{ref['name']}")
        elif ref is None:  # an orphan: a set may adopt it
            namespace, labels = pod["metadata"].get("namespace", ""), pod["metadata"].get("labels") or {}
            for sts in self.sets.store.by_index("namespace", namespace):
                if selector_of(sts).matches(labels):
                    self._enqueue(sts)

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        sts = self.sets.store.get(key)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return  # its pods and revisions go with it: the garbage collector deletes them
        selector = selector_of(sts)
        pods = await claim(self.client, (sts, STATEFULSETS), (self.pods.store, PODS), selector)
        pods = [p for p in pods if ordinal_of(sts["metadata"]["name"], p) is not None]
        revisions = await claim(self.client, (sts, STATEFULSETS), (self.revisions.store, REVISIONS), selector)
        current, update, collisions = await self._revisions(sts, revisions)
        await self._update(sts, pods, current, update)
        await self._write_status(sts, current, update, collisions)

    # ---- revisions ---------------------------------------------------------------------------------------------

    async def _revisions(self, sts: Object, revisions: list[Object]) -> tuple[Object, Object, int]:
        """The current revision (what the pods were made from), the update revision (the template now) and the
        collision count."""
        status = sts.get("status") or {}
        collisions = int(status.get("collisionCount") or 0)
        update, by_age, collisions = await update_revision(self.client, sts, STATEFULSETS, revisions, collisions)
        current = next((r for r in by_age if r["metadata"]["name"] == status.get("currentRevision")), update)
        live = {revision_of(p) for p in self.pods.store.by_index(CONTROLLER_INDEX, sts["metadata"]["uid"])}
        await trim_history(self.client, sts, by_age, {current["metadata"]["name"], update["metadata"]["name"]} | live)
        return current, update, collisions

    # ---- pods --------------------------------------------------------------------------------------------------

    async def _update(self, sts: Object, pods: list[Object], current: Object, update: Object) -> None:
        """upstream's updateStatefulSet: make the missing pods, replace failed ones, remove the condemned, then roll
        the pods of an older revision; `OrderedReady` stops at the first pod not yet Running and Ready."""
        spec = sts["spec"]
        name = sts["metadata"]["name"]
        replicas = int(spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        by_ordinal = {ordinal_of(name, p): p for p in pods}
        condemned = sorted(
            (p for o, p in by_ordinal.items() if o is not None and o >= replicas), key=lambda p: -_ord(name, p)
        )
        for ordinal in range(replicas):
            pod = by_ordinal.get(ordinal)
            if pod is not None and failed(pod) and not terminating(pod):
                await self._delete_pod(sts, pod)
                if ordered:
                    return
                continue
            if pod is None:
                await self._create_pod(sts, ordinal, current, update)
                if ordered:
                    return
                continue
            if ordered and (terminating(pod) or not self._healthy(sts, pod)):
                return  # wait for this one before touching the next
        for pod in condemned:
            if ordered and any(terminating(p) or not running_and_ready(p) for p in pods if p is not pod):
                return  # scale down only a healthy set, one pod at a time
            if not terminating(pod):
                await self._release_claims(sts, pod)
                await self._delete_pod(sts, pod)
            if ordered:
                return
        await self._roll(
            sts, [by_ordinal[o] for o in sorted(k for k in by_ordinal if k is not None and k < replicas)], update
        )

    def _healthy(self, sts: Object, pod: Object) -> bool:
        min_ready = int(sts["spec"].get("minReadySeconds") or 0)
        if not running_and_ready(pod):
            return False
        if min_ready and not available(pod, min_ready, time.time()):
            self.queue.add_after(object_key(sts), 1.0)  # availability changes without an event
            return False
        return True

    async def _roll(self, sts: Object, pods: list[Object], update: Object) -> None:
        """RollingUpdate: from the highest ordinal down to `partition`, delete the pods of an older revision (they
        come back at the new one). As upstream by default: one at a time, waiting for an unhealthy pod; with
        `maxUnavailable` (upstream's MaxUnavailableStatefulSet gate): as many as keep that many unavailable."""
        strategy = sts["spec"].get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return  # OnDelete: pods are replaced when someone deletes them
        rolling = strategy.get("rollingUpdate") or {}
        partition = int(rolling.get("partition") or 0)
        name, target = sts["metadata"]["name"], update["metadata"]["name"]
        candidates = [p for p in reversed(pods) if _ord(name, p) >= partition]
        if rolling.get("maxUnavailable") is None:
            for pod in candidates:
                if revision_of(pod) != target and not terminating(pod):
                    await self._delete_pod(sts, pod)
                    return
                if not self._healthy(sts, pod):
                    return
            return
        budget = _max_unavailable(rolling["maxUnavailable"], int(sts["spec"].get("replicas", 1)))
        budget -= sum(1 for p in pods if terminating(p) or not self._healthy(sts, p))
        for pod in [p for p in candidates if revision_of(p) != target and not terminating(p)][: max(budget, 0)]:
            await self._delete_pod(sts, pod)

    async def _create_pod(self, sts: Object, ordinal: int, current: Object, update: Object) -> None:
        """upstream's newVersionedStatefulSetPod: below the partition (or the current replicas, without one) a pod
        is made from the current revision, above it from the update revision."""
        spec, status = sts["spec"], sts.get("status") or {}
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        below = (
            int(rolling.get("partition") or 0) > ordinal
            if rolling is not None
            else ordinal < int(status.get("currentReplicas") or 0)
        )
        revision = current if strategy.get("type", "RollingUpdate") == "RollingUpdate" and below else update
        pod = self._new_pod(sts, ordinal, template_of(revision.get("data") or {}), revision["metadata"]["name"])
        namespace = sts["metadata"]["namespace"]
        for template in spec.get("volumeClaimTemplates") or []:
            await self._create_claim(sts, template, pod["metadata"]["name"])
        try:
            await self.client.create(PODS, namespace, pod)
        except errors.AlreadyExists:
            return  # its event is on the way
        except errors.ApiError as err:
            if not errors.is_namespace_terminating(err):
                message = f"create Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} failed"
                self._event(sts, "Warning", "FailedCreate", f"{message} error: {err}")
            raise
        self._event(
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} successful",
        )

    def _new_pod(self, sts: Object, ordinal: int, template: Object, revision: str) -> Object:
        name = f"{sts['metadata']['name']}-{ordinal}"
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        labels |= {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision}
        spec = copy.deepcopy(template.get("spec") or {})
        spec["hostname"] = name
        if sts["spec"].get("serviceName"):
            spec["subdomain"] = sts["spec"]["serviceName"]
        claims = sts["spec"].get("volumeClaimTemplates") or []
        if claims:
            mounted = {t["metadata"]["name"] for t in claims}
            volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in mounted]
            for claim_template in claims:
                source = {"claimName": claim_name(claim_template, name)}
                volumes.append({"name": claim_template["metadata"]["name"], "persistentVolumeClaim": source})
            spec["volumes"] = volumes
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": sts["metadata"]["namespace"],
                "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [controller_ref(sts, STATEFULSETS)],
            },
            "spec": spec,
        }

    async def _create_claim(self, sts: Object, template: Object, pod_name: str) -> None:
        """A pod's claim from its template, unless it is there already (claims outlive their pods)."""
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {}) | dict((sts["spec"].get("selector") or {}).get("matchLabels") or {})
        name = claim_name(template, pod_name)
        body: Object = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": sts["metadata"]["namespace"], "labels": labels},
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if meta.get("annotations"):
            body["metadata"]["annotations"] = dict(meta["annotations"])
        if _retention(sts, "whenDeleted") == "Delete":  # the set owns it (not as controller): it goes with the set
            body["metadata"]["ownerReferences"] = [{**controller_ref(sts, STATEFULSETS), "controller": False}]
        try:
            await self.client.create(CLAIMS, sts["metadata"]["namespace"], body)
        except errors.AlreadyExists:
            return
        self._event(
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Claim {name} Pod {pod_name} in StatefulSet {sts['metadata']['name']} success",
        )

    async def _release_claims(self, sts: Object, pod: Object) -> None:
        """`whenScaled: Delete`: a scaled-down pod's claims are given to the pod, so they go with it."""
        if _retention(sts, "whenScaled") != "Delete":
            return
        ref = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        for template in sts["spec"].get("volumeClaimTemplates") or []:
            name = claim_name(template, pod["metadata"]["name"])
            patch = {"metadata": {"ownerReferences": [ref]}}
            with contextlib.suppress(errors.NotFound):
                await self.client.patch(CLAIMS, sts["metadata"]["namespace"], name, patch, patch_type="merge")

    async def _delete_pod(self, sts: Object, pod: Object) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete(PODS, meta["namespace"], meta["name"])
        except errors.NotFound:
            return
        self._event(
            sts,
            "Normal",
            "SuccessfulDelete",
            f"delete Pod {meta['name']} in StatefulSet {sts['metadata']['name']} successful",
        )

    def _event(self, sts: Object, type_: str, reason: str, message: str) -> None:
        self.events.record(sts, type_, reason, message)

    # ---- status ------------------------------------------------------------------------------------------------

    async def _write_status(self, sts: Object, current: Object, update: Object, collisions: int) -> None:
        """Counted from the pods as they are now in the cache (this sync's own writes show in the next one)."""
        name = sts["metadata"]["name"]
        pods = [
            p
            for p in self.pods.store.by_index(CONTROLLER_INDEX, sts["metadata"]["uid"])
            if ordinal_of(name, p) is not None
        ]
        min_ready = int(sts["spec"].get("minReadySeconds") or 0)
        now = time.time()
        current_name, update_name = current["metadata"]["name"], update["metadata"]["name"]
        live = [p for p in pods if not terminating(p)]
        counts = {
            "readyReplicas": sum(1 for p in pods if running_and_ready(p)),
            "currentReplicas": sum(1 for p in live if revision_of(p) == current_name),
            "updatedReplicas": sum(1 for p in live if revision_of(p) == update_name),
        }
        status: Object = {"replicas": len(pods), "observedGeneration": sts["metadata"].get("generation", 1)}
        status |= {k: v for k, v in counts.items() if v}  # zeros left out, as upstream's `omitempty`
        status["availableReplicas"] = sum(1 for p in pods if running_and_ready(p) and available(p, min_ready, now))
        status["currentRevision"], status["updateRevision"] = current_name, update_name
        status["collisionCount"] = collisions
        strategy = (sts["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate")
        if strategy == "RollingUpdate" and counts["updatedReplicas"] == len(pods) == counts["readyReplicas"]:
            status["currentReplicas"], status["currentRevision"] = counts["updatedReplicas"], update_name
            if not status["currentReplicas"]:
                del status["currentReplicas"]
        kept = {k: v for k, v in (sts.get("status") or {}).items() if k == "conditions"}
        status = kept | status
        if status != (sts.get("status") or {}):
            await update_status(self.client, STATEFULSETS, sts, status)


def _ord(set_name: str, pod: Object) -> int:
    ordinal = ordinal_of(set_name, pod)
    return ordinal if ordinal is not None else -1


def _retention(sts: Object, when: str) -> str:
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get(when) or "Retain")


def _max_unavailable(value: Any, replicas: int) -> int:
    """`maxUnavailable` (a count or a percentage of the replicas, rounded down, at least 1; 1 when unset)."""
    return max(scaled(value, replicas, round_up=False), 1) if value is not None else 1
