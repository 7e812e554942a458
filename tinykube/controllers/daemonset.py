"""The DaemonSet controller: one pod on every node that should run it, as upstream's.

A node should run the set's pod when it matches the template's `nodeSelector` and required node affinity and the
pod (with the tolerations upstream's controller adds) tolerates its `NoSchedule`/`NoExecute` taints. Each pod
names its node by a required node affinity on `metadata.name` and is placed by the scheduler, as upstream's are.
Nodes that come or go, or change, get or lose their pod. Templates are recorded as ControllerRevisions
(`kubectl rollout history|undo`); `RollingUpdate` replaces old pods within `maxUnavailable` (deleting first) or
`maxSurge` (the new pod first), `OnDelete` waits for pods to be deleted.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from typing import Any

from tinykube.api import errors
from tinykube.api.nodeaffinity import node_affinity_matches, tolerates
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
    revision_label,
    revision_of,
    template_of,
    trim_history,
    update_revision,
)

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
NODES = builtin("", "v1", "nodes")
DAEMONSETS = builtin("apps", "v1", "daemonsets")
WORKERS = 2  # upstream's --concurrent-daemonset-syncs
COMPONENT = "daemonset-controller"
GENERATION_LABEL = "pod-template-generation"
# What upstream's controller adds to every daemon pod (AddOrUpdateDaemonPodTolerations).
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def daemon_pod_spec(ds: Object, template: Object, node: str) -> Object:
    """The template's pod spec for `node`: its node named by a required node affinity (replacing any other
    `metadata.name` field term, as upstream's ReplaceDaemonSetPodNodeNameNodeAffinity) and the daemon tolerations."""
    spec = copy.deepcopy(template.get("spec") or {})
    names = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        fields = [f for f in term.get("matchFields") or [] if f.get("key") != "metadata.name"]
        term["matchFields"] = [*fields, names]
    required["nodeSelectorTerms"] = terms
    tolerations = list(spec.get("tolerations") or [])
    for toleration in DAEMON_TOLERATIONS:
        if not any(t.get("key") == toleration["key"] and t.get("effect") == toleration["effect"] for t in tolerations):
            tolerations.append(dict(toleration))
    spec["tolerations"] = tolerations
    return spec


def should_run(ds: Object, node: Object, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> bool:
    """upstream's NodeShouldRunDaemonPod: the node's labels, and its taints of `effects` tolerated. With only
    `NoExecute`, whether a pod already there should continue running (a `NoSchedule` taint such as a lost node's
    `unreachable` keeps new pods away, not running ones)."""
    template = (ds.get("spec") or {}).get("template") or {}
    pod = {"spec": daemon_pod_spec(ds, template, node["metadata"]["name"])}
    if not node_affinity_matches(pod, node):
        return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in effects and not tolerates(pod, taint):
            return False
    return True


def node_of(pod: Object) -> str:
    """The node a daemon pod is for: where it runs, else the node its affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return ""


class DaemonSetController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        # written in the background, correlated as upstream's recorder (no client rate: tinykube models none)
        self.events = EventRecorder(ctx.client, COMPONENT, qps=0.0)
        self.sets: Informer = ctx.informers.informer(DAEMONSETS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.nodes: Informer = ctx.informers.informer(NODES)
        self.revisions: Informer = ctx.informers.informer(REVISIONS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        for informer in (self.pods, self.revisions):
            with contextlib.suppress(ValueError):  # shared with other controllers, which may have added it
                informer.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.sets.add_handler(on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new))
        self.pods.add_handler(on_add=self._on_pod, on_update=self._on_pod_update, on_delete=self._on_pod)
        self.nodes.add_handler(on_add=self._on_node, on_update=self._on_node_update, on_delete=self._on_node)
        await run_controller(
            self.informers,
            (self.sets, self.pods, self.nodes, self.revisions),
            Loop(self.queue, self.sync, workers=self.workers),
            beside=[self.events.run],
        )

    def _enqueue(self, ds: Object) -> None:
        self.queue.add(object_key(ds))

    def _on_pod_update(self, old: Object, new: Object) -> None:
        self._on_pod(new)

    def _on_pod(self, pod: Object) -> None:
        ref = controller_of(pod)
        if ref and ref.get("kind") == "DaemonSet":
            self.queue.add(f"{pod['metadata']['namespace']}/{ref['name']}")

    def _on_node_update(self, old: Object, new: Object) -> None:
        """Only what decides placement: labels, taints, readiness (not every heartbeat)."""
        if (old["metadata"].get("labels"), (old.get("spec") or {}).get("taints")) != (
            new["metadata"].get("labels"),
            (new.get("spec") or {}).get("taints"),
        ) or _ready(old) != _ready(new):
            self._on_node(new)

    def _on_node(self, _node: Object) -> None:
        for ds in self.sets.store.list():
            self._enqueue(ds)

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        ds = self.sets.store.get(key)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return  # its pods go with it: the garbage collector deletes them
        selector = selector_of(ds)
        pods = await claim(self.client, (ds, DAEMONSETS), (self.pods.store, PODS), selector)
        pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        revisions = await claim(self.client, (ds, DAEMONSETS), (self.revisions.store, REVISIONS), selector)
        collisions = int((ds.get("status") or {}).get("collisionCount") or 0)
        update, by_age, collisions = await update_revision(
            self.client, ds, DAEMONSETS, revisions, collisions, daemon=True
        )
        await trim_history(self.client, ds, by_age, {update["metadata"]["name"]} | {revision_of(p) for p in pods})
        nodes = {n["metadata"]["name"]: n for n in self.nodes.store.list()}
        by_node: dict[str, list[Object]] = {}
        for pod in pods:
            by_node.setdefault(node_of(pod), []).append(pod)
        wanted = {name for name, node in nodes.items() if should_run(ds, node)}
        staying = {name for name in by_node if name in nodes and should_run(ds, nodes[name], ("NoExecute",))}
        await self._place(ds, update, wanted, by_node, staying)
        await self._roll(ds, update, wanted, by_node)
        await self._write_status(ds, update, wanted, by_node, collisions)

    async def _place(
        self, ds: Object, update: Object, wanted: set[str], by_node: dict[str, list[Object]], staying: set[str]
    ) -> None:
        """A pod where one should run and none does; none where it should not and may not continue running (or a
        failed one, replaced)."""
        for node in sorted(wanted):
            running = [p for p in by_node.get(node, []) if (p.get("status") or {}).get("phase") != "Failed"]
            for pod in by_node.get(node, []):
                if pod not in running:
                    await self._delete(ds, pod)
            if not running:
                await self._create(ds, update, node)
            elif len(running) > 1 and not _surging(ds):  # one too many: keep the oldest
                for pod in sorted(running, key=lambda p: p["metadata"].get("creationTimestamp") or "")[1:]:
                    await self._delete(ds, pod)
        for node, pods in by_node.items():
            if node not in wanted and node not in staying:
                for pod in pods:
                    await self._delete(ds, pod)

    async def _roll(self, ds: Object, update: Object, wanted: set[str], by_node: dict[str, list[Object]]) -> None:
        strategy = ds["spec"].get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return  # OnDelete
        target = revision_label(update)
        min_ready = int(ds["spec"].get("minReadySeconds") or 0)
        now = time.time()
        surge, unavailable_budget = _surge_and_unavailable(ds, len(wanted))
        old_nodes, unavailable = [], 0
        for node in sorted(wanted):
            pods = by_node.get(node, [])
            new = [p for p in pods if revision_of(p) == target]
            old = [p for p in pods if revision_of(p) != target]
            if not any(pod_ready(p) and available(p, min_ready, now) for p in pods):
                unavailable += 1
            if old:
                old_nodes.append((node, old, new))
        for node, old, new in old_nodes:
            if new and any(available(p, min_ready, now) for p in new):  # surged, and the new one is up
                for pod in old:
                    await self._delete(ds, pod)
            elif surge > 0 and not new:
                surge -= 1
                await self._create(ds, update, node)
            elif surge == 0 and not new and (unavailable < unavailable_budget or not any(pod_ready(p) for p in old)):
                if any(pod_ready(p) for p in old):
                    unavailable += 1
                for pod in old:
                    await self._delete(ds, pod)

    async def _create(self, ds: Object, revision: Object, node: str) -> None:
        template = template_of(revision.get("data") or {})
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        labels[REVISION_LABEL] = revision_label(revision)
        labels[GENERATION_LABEL] = str(ds["metadata"].get("generation", 1))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{ds['metadata']['name']}-",
                "namespace": ds["metadata"]["namespace"],
                "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [controller_ref(ds, DAEMONSETS)],
            },
            "spec": daemon_pod_spec(ds, template, node),
        }
        try:
            created = await self.client.create(PODS, ds["metadata"]["namespace"], pod)
        except errors.ApiError as err:
            if not errors.is_namespace_terminating(err):
                self._event(ds, "Warning", "FailedCreate", f"Error creating: {err}")
            raise
        self._event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _delete(self, ds: Object, pod: Object) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self.client.delete(PODS, meta["namespace"], meta["name"])
            self._event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    def _event(self, ds: Object, type_: str, reason: str, message: str) -> None:
        self.events.record(ds, type_, reason, message)

    async def _write_status(
        self, ds: Object, update: Object, wanted: set[str], by_node: dict[str, list[Object]], collisions: int
    ) -> None:
        min_ready = int(ds["spec"].get("minReadySeconds") or 0)
        now = time.time()
        target = revision_label(update)
        scheduled = [n for n in wanted if by_node.get(n)]
        ready = [n for n in scheduled if any(pod_ready(p) for p in by_node[n])]
        up = [n for n in scheduled if any(pod_ready(p) and available(p, min_ready, now) for p in by_node[n])]
        status: Object = {
            "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": sum(1 for n in by_node if n not in wanted and by_node[n]),
            "desiredNumberScheduled": len(wanted),
            "numberReady": len(ready),
            "observedGeneration": ds["metadata"].get("generation", 1),
            "updatedNumberScheduled": sum(1 for n in scheduled if any(revision_of(p) == target for p in by_node[n])),
            "numberAvailable": len(up),
            "numberUnavailable": len(wanted) - len(up),
        }
        status = {k: v for k, v in status.items() if v or k in _ALWAYS}
        if collisions:
            status["collisionCount"] = collisions
        if min_ready and len(ready) != len(up):
            self.queue.add_after(object_key(ds), 1.0)  # availability changes without an event
        if status != (ds.get("status") or {}):
            await update_status(self.client, DAEMONSETS, ds, status)


# Not `omitempty` in upstream's DaemonSetStatus: kubectl shows them as 0.
_ALWAYS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")


def _ready(node: Object) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def _surging(ds: Object) -> bool:
    rolling = ((ds["spec"].get("updateStrategy") or {}).get("rollingUpdate")) or {}
    return bool(rolling.get("maxSurge")) and rolling.get("maxSurge") not in (0, "0", "0%")


def _surge_and_unavailable(ds: Object, desired: int) -> tuple[int, int]:
    """`maxSurge` (default 0) and `maxUnavailable` (default 1) against the number of nodes to run on, percentages
    rounded up (as upstream's for DaemonSets); both 0 means one unavailable."""
    rolling = ((ds["spec"].get("updateStrategy") or {}).get("rollingUpdate")) or {}
    surge = scaled(rolling.get("maxSurge", 0), desired, round_up=True)
    unavailable = scaled(rolling.get("maxUnavailable", 1), desired, round_up=True)
    if desired and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable
