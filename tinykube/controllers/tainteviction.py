"""The taint eviction controller (upstream's `taint-eviction-controller`, pkg/controller/tainteviction, a controller
of its own since 1.29): pods leave nodes whose `NoExecute` taints they do not tolerate.

A pod bound to a node with a `NoExecute` taint that none of its tolerations tolerates is deleted at once. A pod
that tolerates every such taint stays as long as its tolerations say: a toleration without `tolerationSeconds`
for ever, one with it for that many seconds after its taint was added; the pod goes when the first of them runs
out. Before the delete it gets the `DisruptionTarget` condition and a `TaintManagerEviction` event, as upstream's.

Upstream counts a toleration's seconds from when the controller first saw the taint; tinykube counts them from the
taint's `timeAdded` (which the node lifecycle controller stamps), and from when it first saw the pod there for a
taint without one, so a restarted controller neither forgets nor restarts a countdown.

Work is per pod: a node whose `NoExecute` taints change queues its own pods (an index by node name), a pod whose
node or tolerations change queues itself, and a pod waiting out a toleration comes back when it runs out.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
COMPONENT = "taint-eviction-controller"
NO_EXECUTE = "NoExecute"
NODE_INDEX = "pods:node"  # pods by `spec.nodeName`, shared with the node lifecycle controller
WORKERS = 8  # upstream's UpdateWorkerSize
DISRUPTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByTaintManager",
    "message": "Taint manager: deleting due to NoExecute taint",
}


def pods_by_node(pod: Object) -> list[str]:
    """Index: the node a pod is bound to."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []


def no_execute_taints(node: Object | None) -> list[Object]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if t.get("effect") == NO_EXECUTE]


def toleration_matches(toleration: Object, taint: Object) -> bool:
    """Upstream's ToleratesTaint: an empty effect or key matches any; `Exists` any value, `Equal` (the default)
    the same value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def eviction_deadline(pod: Object, taints: list[Object], *, first_seen: float) -> float | None:
    """When (seconds since the epoch) the pod must be gone from a node with these `NoExecute` taints: 0 when one of
    them is not tolerated; the earliest `timeAdded` (else `first_seen`) plus the `tolerationSeconds` of the
    toleration that tolerates it (the first that does, as upstream picks); None when it may stay for ever."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    deadline: float | None = None
    for taint in taints:
        toleration = next((t for t in tolerations if toleration_matches(t, taint)), None)
        if toleration is None:
            return 0.0
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            continue
        added = parse_time(taint.get("timeAdded"))
        due = (added.timestamp() if added else first_seen) + max(int(seconds), 0)
        deadline = due if deadline is None else min(deadline, due)
    return deadline


class TaintEvictionController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.pods: Informer = ctx.informers.informer(PODS)
        self.nodes: Informer = ctx.informers.informer(NODES)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers
        self.scheduled: dict[str, float] = {}  # pod key -> when it goes, while it waits out a toleration
        self.first_seen: dict[str, float] = {}  # pod key -> when it was first found on a NoExecute-tainted node

    async def run(self) -> None:
        self.pods.store.add_index(NODE_INDEX, pods_by_node)
        self.nodes.add_handler(
            on_add=self._on_node_add, on_update=self._on_node_update, on_delete=self._enqueue_pods_of
        )
        self.pods.add_handler(on_add=self._enqueue, on_update=self._on_pod_update, on_delete=self._enqueue)
        await run_controller(self.informers, (self.pods, self.nodes), Loop(self.queue, self.sync, workers=self.workers))

    def _on_node_add(self, node: Object) -> None:
        if no_execute_taints(node):
            self._enqueue_pods_of(node)

    def _on_node_update(self, old: Object, new: Object) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._enqueue_pods_of(new)

    def _enqueue_pods_of(self, node: Object) -> None:
        for pod in self.pods.store.by_index(NODE_INDEX, node["metadata"]["name"]):
            self._enqueue(pod)

    def _on_pod_update(self, old: Object, new: Object) -> None:
        was, now_ = old.get("spec") or {}, new.get("spec") or {}
        if (was.get("nodeName"), was.get("tolerations")) != (now_.get("nodeName"), now_.get("tolerations")):
            self._enqueue(new)

    def _enqueue(self, pod: Object) -> None:
        if (pod.get("spec") or {}).get("nodeName") or object_key(pod) in self.scheduled:
            self.queue.add(object_key(pod))

    async def sync(self, key: str) -> None:
        pod = self.pods.store.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            await self._cancel(key, pod)
            return
        node = self.nodes.store.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        taints = no_execute_taints(node)
        if not taints:
            await self._cancel(key, pod)
            return
        clock = time.time()
        deadline = eviction_deadline(pod, taints, first_seen=self.first_seen.setdefault(key, clock))
        if deadline is None:
            await self._cancel(key, pod)
        elif deadline > clock:
            self.scheduled[key] = deadline
            self.queue.add_after(key, deadline - clock)
        else:
            await self._evict(key, pod)

    async def _cancel(self, key: str, pod: Object | None) -> None:
        """The pod no longer has to go: upstream's "Cancelling deletion" event if it was counting down."""
        self.first_seen.pop(key, None)
        if self.scheduled.pop(key, None) is None:
            return
        namespace, name = key.split("/", 1)
        ref = pod or {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": name}}
        message = f"Cancelling deletion of Pod {key}"
        await record_event(
            self.client, ref, type_="Normal", reason="TaintManagerEviction", message=message, component=COMPONENT
        )

    async def _evict(self, key: str, pod: Object) -> None:
        """Upstream's addConditionAndDeletePod: the event, the `DisruptionTarget` condition, then the delete (of
        this pod, not another since made under its name)."""
        self.scheduled.pop(key, None)
        self.first_seen.pop(key, None)
        meta = pod["metadata"]
        message = f"Marking for deletion Pod {key}"
        log.info("%s: deleting pod %s: a NoExecute taint of its node", COMPONENT, key)
        await record_event(
            self.client, pod, type_="Normal", reason="TaintManagerEviction", message=message, component=COMPONENT
        )
        conditions = (pod.get("status") or {}).get("conditions") or []
        marked = any(all(c.get(k) == v for k, v in DISRUPTION_TARGET.items()) for c in conditions)
        try:
            if not marked:
                condition = {**DISRUPTION_TARGET, "lastTransitionTime": now()}
                body = {"status": {"conditions": [condition]}}
                await self.client.patch(PODS, meta["namespace"], meta["name"], body, subresource="status")
            await self.client.delete(PODS, meta["namespace"], meta["name"], uid=str(meta.get("uid") or ""))
        except errors.NotFound:
            return
