"""The Deployment controller: rolls a Deployment's pod template out through ReplicaSets, as upstream's.

Every template gets a ReplicaSet named `<deployment>-<pod-template-hash>` (the hash label is added to its selector
and template so the ReplicaSets of one Deployment never share pods) and a revision annotation. A sync:

    claim ReplicaSets ─▶ find or create the new one ─▶ scale (Recreate | RollingUpdate) ─▶ prune history ─▶ status

RollingUpdate keeps at most `replicas + maxSurge` pods and at least `replicas - maxUnavailable` available ones:
the new ReplicaSet grows into the surge, old ones shrink as pods become available. Recreate scales the old
ReplicaSets to zero and starts the new one once their pods are gone. Status and the `Available` / `Progressing`
conditions carry upstream's reasons and messages, which `kubectl rollout status` reads.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from typing import Any

import orjson

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.deploymentscale import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    is_scaling_event,
    replicas_of,
    scale_plan,
)
from tinykube.controllers.intstr import scaled
from tinykube.controllers.ownership import (
    CONTROLLER_INDEX,
    claim,
    controller_of,
    controller_ref,
    controller_uid,
    patch_quietly,
)
from tinykube.controllers.replicaset import active, selector_of, update_status

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
REPLICASETS = builtin("apps", "v1", "replicasets")
DEPLOYMENTS = builtin("apps", "v1", "deployments")
WORKERS = 5  # upstream's --concurrent-deployment-syncs
COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
_SAFE_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # upstream's rand.SafeEncodeString alphabet


def template_hash(template: Object, collision_count: int = 0) -> str:
    """FNV-32a of the template (and the collision count), in upstream's safe alphabet. Upstream hashes its Go
    struct dump, so the values differ from a real cluster's; what matters is that equal templates hash alike."""
    value = 0x811C9DC5
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += str(collision_count).encode()
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_CHARS[ord(c) % len(_SAFE_CHARS)] for c in str(value))


def _without_hash(template: Object) -> Object:
    template = copy.deepcopy(template or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
    return template


def same_template(a: Object, b: Object) -> bool:
    """Templates equal but for the pod-template-hash label (upstream's EqualIgnoreHash)."""
    return _without_hash(a) == _without_hash(b)


def surge_and_unavailable(deployment: Object) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods: surge rounds up, unavailability down, and both 0 means 1 unavailable."""
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def _max_surge(deployment: Object) -> int:
    """The surge a scaling allows: none for Recreate (upstream's MaxSurge)."""
    if ((deployment.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
        return 0
    return surge_and_unavailable(deployment)[0]


def revision(rs: Object) -> int:
    text = (rs["metadata"].get("annotations") or {}).get(REVISION, "0")
    return int(text) if str(text).isdigit() else 0


def _available(rs: Object) -> int:
    return min(_status(rs, "availableReplicas"), replicas_of(rs))


def _status(rs: Object, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


class DeploymentController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        # written in the background, correlated as upstream's recorder (no client rate: tinykube models none)
        self.events = EventRecorder(ctx.client, COMPONENT, qps=0.0)
        self.deployments: Informer = ctx.informers.informer(DEPLOYMENTS)
        self.replicasets: Informer = ctx.informers.informer(REPLICASETS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        for informer in (self.replicasets, self.pods):
            with contextlib.suppress(ValueError):  # shared with the ReplicaSet controller, which may have added it
                informer.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.deployments.add_handler(on_add=self._enqueue, on_update=lambda _o, new: self._enqueue(new))
        self.replicasets.add_handler(on_add=self._on_rs, on_update=self._on_rs_update, on_delete=self._on_rs)
        self.pods.add_handler(on_delete=self._on_pod_delete)
        await run_controller(
            self.informers,
            (self.deployments, self.replicasets, self.pods),
            Loop(self.queue, self.sync, workers=self.workers),
            beside=[self.events.run],
        )

    # ---- events ------------------------------------------------------------------------------------------------

    def _enqueue(self, deployment: Object) -> None:
        self.queue.add(object_key(deployment))

    def _on_rs(self, rs: Object) -> None:
        namespace = rs["metadata"].get("namespace", "")
        ref = controller_of(rs)
        if ref:
            if ref.get("kind") == "Deployment":
                self.queue.add(f"{namespace}/{ref['name']}")
            return
        labels = rs["metadata"].get("labels") or {}
        for deployment in self.deployments.store.by_index("namespace", namespace):
            if selector_of(deployment).matches(labels):
                self._enqueue(deployment)  # an orphan it may adopt

    def _on_rs_update(self, old: Object, new: Object) -> None:
        self._on_rs(old)
        self._on_rs(new)

    def _on_pod_delete(self, pod: Object) -> None:
        """Recreate waits for the old pods to be gone: their deletion moves it on."""
        ref = controller_of(pod)
        if ref and ref.get("kind") == "ReplicaSet":
            rs = self.replicasets.store.get(f"{pod['metadata']['namespace']}/{ref['name']}")
            if rs is not None:
                self._on_rs(rs)

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        deployment = self.deployments.store.get(key)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return  # its ReplicaSets go with it: the garbage collector deletes them
        replicasets = await self._claim_replicasets(deployment)
        template = (deployment.get("spec") or {}).get("template") or {}
        new = next((rs for rs in replicasets if same_template(rs["spec"].get("template") or {}, template)), None)
        olds = [rs for rs in replicasets if rs is not new]
        created = False
        wanted = int((deployment.get("spec") or {}).get("replicas", 1))
        if (deployment.get("spec") or {}).get("paused") or is_scaling_event(wanted, replicasets):
            # upstream's sync: a paused Deployment, or a new `replicas`, is scaled and rolls nothing out this time
            await self._scale_all(deployment, new, olds)
        else:
            if new is None:
                new, created = await self._create_new(deployment, olds), True
            await self._mark_revision(new, olds)
            if ((deployment.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
                await self._recreate(deployment, new, olds)
            else:
                await self._roll(deployment, new, olds)
            await self._prune_history(deployment, olds)
        await self._write_status(deployment, new, olds, created)

    async def _claim_replicasets(self, deployment: Object) -> list[Object]:
        """The ReplicaSets `deployment` controls, as copies whose `spec` this sync may change (the cached objects
        are read-only)."""
        owned = await claim(
            self.client, (deployment, DEPLOYMENTS), (self.replicasets.store, REPLICASETS), selector_of(deployment)
        )
        return [{**rs, "spec": dict(rs.get("spec") or {})} for rs in owned]

    async def _patch_rs(self, rs: Object, patch: Object) -> Object | None:
        return await patch_quietly(self.client, REPLICASETS, rs, patch)

    async def _create_new(self, deployment: Object, olds: list[Object]) -> Object:
        spec = deployment.get("spec") or {}
        collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
        hashed = template_hash(spec.get("template") or {}, collisions)
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = hashed
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = hashed
        replicas = int(spec.get("replicas", 1))
        surge, _ = surge_and_unavailable(deployment)
        name = f"{deployment['metadata']['name']}-{hashed}"
        if spec.get("strategy", {}).get("type") == "Recreate":
            start = 0 if any(replicas_of(rs) or _status(rs, "replicas") for rs in olds) else replicas
        else:
            start = max(min(replicas + surge - sum(replicas_of(rs) for rs in olds), replicas), 0)
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": deployment["metadata"]["namespace"],
                "labels": dict(template["metadata"]["labels"]),
                "annotations": {
                    REVISION: str(max((revision(rs) for rs in olds), default=0) + 1),
                    DESIRED_REPLICAS: str(replicas),
                    MAX_REPLICAS: str(replicas + _max_surge(deployment)),
                },
                "ownerReferences": [controller_ref(deployment, DEPLOYMENTS)],
            },
            "spec": {
                "replicas": start,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": template,
            },
        }
        try:
            created = await self.client.create(REPLICASETS, deployment["metadata"]["namespace"], body)
            if start:
                self._scaled_event(deployment, name, 0, start)
            return created
        except errors.AlreadyExists:
            existing = await self.client.get(REPLICASETS, deployment["metadata"]["namespace"], name)
            owner = controller_of(existing)
            if (
                owner
                and owner.get("uid") == deployment["metadata"]["uid"]
                and same_template(existing["spec"].get("template") or {}, template)
            ):
                return existing  # ours: the cache had not shown it yet
            status = {**(deployment.get("status") or {}), "collisionCount": collisions + 1}
            await update_status(self.client, DEPLOYMENTS, deployment, status)
            raise RuntimeError(f"hash collision on ReplicaSet {name}; retrying") from None

    async def _mark_revision(self, new: Object, olds: list[Object]) -> None:
        """The new ReplicaSet carries the highest revision: a rollback to an old template makes it newest again.
        (The Deployment shows it too, written with its status: through `/status` it is not a new generation.)"""
        wanted = max((revision(rs) for rs in olds), default=0) + 1
        if revision(new) < wanted and any(revision(rs) >= revision(new) for rs in olds):
            patched = await self._patch_rs(new, {"metadata": {"annotations": {REVISION: str(wanted)}}})
            new.update(patched or {})

    async def _scale(self, deployment: Object, rs: Object, replicas: int) -> None:
        """Size `rs` and record the Deployment size it is for (the annotations a later scaling reads)."""
        wanted = int((deployment.get("spec") or {}).get("replicas", 1))
        annotations = {DESIRED_REPLICAS: str(wanted), MAX_REPLICAS: str(wanted + _max_surge(deployment))}
        current = rs["metadata"].get("annotations") or {}
        if replicas_of(rs) == replicas and all(current.get(k) == v for k, v in annotations.items()):
            return
        patched = await self._patch_rs(rs, {"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}})
        if patched is None:
            return  # gone or changed meanwhile: the next sync scales from what is there
        before, rs["spec"], rs["metadata"] = replicas_of(rs), patched["spec"], patched["metadata"]
        if before != replicas:
            self._scaled_event(deployment, rs["metadata"]["name"], before, replicas)

    async def _scale_all(self, deployment: Object, new: Object | None, olds: list[Object]) -> None:
        rolling = ((deployment.get("spec") or {}).get("strategy") or {}).get("type") != "Recreate"
        for rs, size in scale_plan(deployment, new, olds, surge=_max_surge(deployment), rolling=rolling):
            await self._scale(deployment, rs, size)

    def _scaled_event(self, deployment: Object, name: str, before: int, after: int) -> None:
        message = f"Scaled {'up' if after > before else 'down'} replica set {name} from {before} to {after}"
        self.events.record(deployment, "Normal", "ScalingReplicaSet", message)

    async def _roll(self, deployment: Object, new: Object, olds: list[Object]) -> None:
        wanted = int((deployment.get("spec") or {}).get("replicas", 1))
        surge, unavailable = surge_and_unavailable(deployment)
        # The new ReplicaSet grows into the surge ...
        if replicas_of(new) > wanted:
            await self._scale(deployment, new, wanted)
        elif replicas_of(new) < wanted:
            room = wanted + surge - replicas_of(new) - sum(replicas_of(rs) for rs in olds)
            if room > 0:
                await self._scale(deployment, new, replicas_of(new) + min(room, wanted - replicas_of(new)))
        # ... and old ones shrink, never below `wanted - unavailable` available pods.
        if not any(replicas_of(rs) for rs in olds):
            return
        total = replicas_of(new) + sum(replicas_of(rs) for rs in olds)
        new_unavailable = replicas_of(new) - _status(new, "availableReplicas")
        budget = total - (wanted - unavailable) - new_unavailable
        if budget <= 0:
            # Upstream stops here too: an old ReplicaSet's available count may not yet show the pods this
            # controller's last scale-down removed, and reading it would cut below the minimum again.
            return
        for rs in sorted(olds, key=lambda rs: (revision(rs), rs["metadata"].get("creationTimestamp") or "")):
            unhealthy = replicas_of(rs) - _status(rs, "availableReplicas")  # unavailable old pods go first
            cut = min(budget, max(unhealthy, 0))
            if cut > 0:
                await self._scale(deployment, rs, replicas_of(rs) - cut)
                budget -= cut
        # Then healthy ones, as far as the available pods allow.
        # An old ReplicaSet just scaled down may still report the pods it is losing as available: no more than its
        # new size are counted, or the next sync cuts below the minimum again.
        available = _available(new) + sum(_available(rs) for rs in olds)
        budget = available - (wanted - unavailable)
        for rs in sorted(olds, key=lambda rs: (revision(rs), rs["metadata"].get("creationTimestamp") or "")):
            cut = min(budget, replicas_of(rs))
            if cut > 0:
                await self._scale(deployment, rs, replicas_of(rs) - cut)
                budget -= cut

    async def _recreate(self, deployment: Object, new: Object, olds: list[Object]) -> None:
        for rs in olds:
            await self._scale(deployment, rs, 0)
        old_uids = {rs["metadata"]["uid"] for rs in olds}
        if any(active(p) for uid in old_uids for p in self.pods.store.by_index(CONTROLLER_INDEX, uid)):
            return  # the new pods start once every old one is gone
        await self._scale(deployment, new, int((deployment.get("spec") or {}).get("replicas", 1)))

    async def _prune_history(self, deployment: Object, olds: list[Object]) -> None:
        limit = int((deployment.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = sorted(
            (rs for rs in olds if not replicas_of(rs) and not _status(rs, "replicas")), key=lambda rs: revision(rs)
        )
        for rs in idle[: max(len(idle) - limit, 0)]:
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(REPLICASETS, rs["metadata"]["namespace"], rs["metadata"]["name"])

    # ---- status ------------------------------------------------------------------------------------------------

    async def _write_status(self, deployment: Object, new: Object | None, olds: list[Object], created: bool) -> None:
        spec, old_status = deployment.get("spec") or {}, deployment.get("status") or {}
        wanted = int(spec.get("replicas", 1))
        everything = [*olds, *([new] if new else [])]
        available = sum(_status(rs, "availableReplicas") for rs in everything)
        status: Object = {
            **old_status,
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": sum(_status(rs, "replicas") for rs in everything),
            "updatedReplicas": _status(new, "replicas") if new else 0,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in everything),
            "availableReplicas": available,
            "unavailableReplicas": max(sum(replicas_of(rs) for rs in everything) - available, 0),
        }
        _, unavailable = surge_and_unavailable(deployment)
        conditions = {c["type"]: c for c in old_status.get("conditions") or []}
        if available >= wanted - unavailable:
            _set(conditions, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        else:
            _set(
                conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        if spec.get("paused"):  # whether or not a ReplicaSet runs the current template yet
            _set(conditions, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
        elif new is not None:
            self._progress(deployment, new, status, old_status, conditions, created)
        status["conditions"] = [conditions[t] for t in ("Available", "Progressing") if t in conditions]
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "conditions")}  # `omitempty`
        annotations = dict(deployment["metadata"].get("annotations") or {})
        if new is not None:
            annotations[REVISION] = str(revision(new))
        if status != old_status or annotations != (deployment["metadata"].get("annotations") or {}):
            shown = {**deployment, "metadata": {**deployment["metadata"], "annotations": annotations}}
            await update_status(self.client, DEPLOYMENTS, shown, status)

    def _progress(
        self, deployment: Object, new: Object, status: Object, old: Object, conditions: dict[str, Object], created: bool
    ) -> None:
        spec = deployment.get("spec") or {}
        wanted, name = int(spec.get("replicas", 1)), new["metadata"]["name"]
        complete = status["updatedReplicas"] == status["replicas"] == status["availableReplicas"] == wanted
        grown = ("updatedReplicas", "readyReplicas", "availableReplicas")
        progressed = any(status[f] > int(old.get(f) or 0) for f in grown)
        progressed = progressed or status["replicas"] < int(old.get("replicas") or 0)
        if complete:
            _set(
                conditions,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
            )
        elif created:
            _set(conditions, "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{name}"')
        elif progressed or (conditions.get("Progressing") or {}).get("reason") in (None, "DeploymentPaused"):
            _set(conditions, "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.')
        else:
            self._check_deadline(deployment, name, conditions)

    def _check_deadline(self, deployment: Object, name: str, conditions: dict[str, Object]) -> None:
        deadline = (deployment.get("spec") or {}).get("progressDeadlineSeconds", 600)
        current = conditions.get("Progressing") or {}
        if deadline is None or current.get("reason") in ("NewReplicaSetAvailable", "ProgressDeadlineExceeded"):
            return
        since = parse_time(current.get("lastUpdateTime"))
        left = (since.timestamp() + int(deadline) - time.time()) if since else 0
        if left <= 0:
            _set(
                conditions,
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{name}" has timed out progressing.',
            )
        else:
            self.queue.add_after(object_key(deployment), left)


def _set(conditions: dict[str, Object], kind: str, status: str, reason: str, message: str) -> None:
    """Set a condition, keeping its lastTransitionTime unless its status changes (and both times when nothing does)."""
    current = conditions.get(kind)
    if current and (current.get("status"), current.get("reason"), current.get("message")) == (status, reason, message):
        return
    stamp = now()
    transition = current["lastTransitionTime"] if current and current.get("status") == status else stamp
    conditions[kind] = {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
