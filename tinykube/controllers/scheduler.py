"""A minimal kube-scheduler: binds each unscheduled pod to a Ready node (the one with the fewest pods) through the
`binding` subresource, as upstream does; a pod no node fits gets `PodScheduled=False` (reason `Unschedulable`)
and is tried again when nodes change.

Filters, as upstream's essentials: the node is Ready and schedulable (or the pod tolerates
`node.kubernetes.io/unschedulable`, as DaemonSet pods do), its labels match the pod's `nodeSelector` and its required
node affinity (`matchExpressions` on labels, `matchFields` on `metadata.name`, as DaemonSet pods name their node),
and the pod tolerates its `NoSchedule`/`NoExecute` taints. No resources, pod affinity or spreading.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.pods import node_selector_term_matches, selector_matches
from tinykube.controllers.volumebinding import VolumeBinding, claims_of

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
SCHEDULER_NAME = "default-scheduler"
WORKERS = 16
RETRY_UNSCHEDULABLE = 5.0  # seconds; nodes changing also retries at once
NODE_INDEX = "scheduler:node"


def _node_of(pod: Object) -> list[str]:
    """Index: the node a live pod is bound to (terminal pods hold no place)."""
    node = (pod.get("spec") or {}).get("nodeName")
    live = (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    return [node] if node and live else []


def node_ready(node: Object) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def tolerates(pod: Object, taint: Object) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        operator = toleration.get("operator") or "Equal"
        if not toleration.get("key") and operator == "Exists":
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if operator == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def node_affinity_matches(pod: Object, node: Object) -> bool:
    """The pod's `nodeSelector` and required node affinity (terms ORed) accept the node."""
    spec = pod.get("spec") or {}
    if not selector_matches(spec.get("nodeSelector") or {}, node["metadata"].get("labels")):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms")
    return not required or any(node_selector_term_matches(term, node) for term in required)


UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def why_not(pod: Object, node: Object, pods_on_node: int) -> str | None:
    """Why `pod` cannot go to `node` (upstream's per-node reason, counted in the message), or None if it can."""
    spec = node.get("spec") or {}
    if not node_ready(node):
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    if spec.get("unschedulable") and not tolerates(pod, UNSCHEDULABLE_TAINT):
        return "node(s) were unschedulable"
    if not node_affinity_matches(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    allowed = str(((node.get("status") or {}).get("allocatable") or {}).get("pods", ""))
    if allowed.isdigit() and pods_on_node >= int(allowed):
        return "Too many pods"
    return None


def unschedulable_message(reasons: list[str], nodes: int) -> str:
    """Upstream's `0/N nodes are available: ...`: each reason with how many nodes gave it, sorted."""
    if not nodes:
        return "no nodes available to schedule pods"
    parts = sorted(f"{n} {reason}" for reason, n in Counter(reasons).items())
    return f"0/{nodes} nodes are available: {', '.join(parts)}."


def needs_scheduling(pod: Object) -> bool:
    spec, meta = pod.get("spec") or {}, pod["metadata"]
    phase = (pod.get("status") or {}).get("phase")
    return (
        not spec.get("nodeName")
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
        and not meta.get("deletionTimestamp")
        and phase not in ("Succeeded", "Failed")
    )


class Scheduler:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.pods = ctx.informers.informer(PODS)
        self.nodes = ctx.informers.informer(NODES)
        self.volumes = VolumeBinding(ctx)
        self.queue: WorkQueue[str] = WorkQueue()
        self.assumed: dict[str, str] = {}  # pod key -> node, bound by us but not yet seen bound in the cache
        self.pending: set[str] = set()  # pods the cache shows waiting for a node: what a node event retries

    async def run(self) -> None:
        self.pods.store.add_index(NODE_INDEX, _node_of)
        self.pods.add_handler(
            on_add=self._pod_seen,
            on_update=lambda _old, new: self._pod_seen(new),
            on_delete=self._pod_gone,
        )
        self.nodes.add_handler(
            on_add=self._nodes_changed,
            on_update=lambda _old, new: self._nodes_changed(new),
            on_delete=self._nodes_changed,
        )
        self.volumes.claims_informer.add_handler(
            on_add=self._claim_changed, on_update=lambda _old, new: self._claim_changed(new)
        )
        await run_controller(
            self.ctx.informers, (self.pods, self.nodes, self.volumes), Loop(self.queue, self.schedule, workers=WORKERS)
        )

    def _pod_seen(self, pod: Object) -> None:
        key = object_key(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            self.assumed.pop(key, None)
        if needs_scheduling(pod):
            self.pending.add(key)
            self.queue.add(key)
        else:
            self.pending.discard(key)

    def _pod_gone(self, pod: Object) -> None:
        key = object_key(pod)
        self.assumed.pop(key, None)
        self.pending.discard(key)

    def _claim_changed(self, claim: Object) -> None:
        """A claim came or was bound: the pods waiting for it may go now."""
        namespace, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        for key in self.pending:
            pod = self.pods.store.get(key)
            if pod is not None and pod["metadata"]["namespace"] == namespace and name in claims_of(pod):
                self.queue.add(key)

    def _nodes_changed(self, _node: Object) -> None:
        """A node came, went or changed (a heartbeat too): the pods still waiting may fit now."""
        for key in self.pending:
            self.queue.add(key)

    def _pods_on(self, node: str) -> int:
        """Pods bound to `node`, counting those we bound that the cache has not seen bound yet."""
        bound = self.pods.store.count(NODE_INDEX, node)
        return bound + sum(1 for key, chosen in self.assumed.items() if chosen == node and self._unbound(key))

    def _unbound(self, key: str) -> bool:
        cached = self.pods.store.get(key)
        return cached is not None and not (cached.get("spec") or {}).get("nodeName")

    async def schedule(self, key: str) -> None:
        pod = self.pods.store.get(key)
        if pod is None or not needs_scheduling(pod) or key in self.assumed:
            return
        nodes = sorted(self.nodes.store.list(), key=lambda n: n["metadata"]["name"])
        claims, problem = self.volumes.claims(pod)
        fit, reasons = [], []
        for node in nodes:
            reason = problem or why_not(pod, node, self._pods_on(node["metadata"]["name"]))
            reason = reason or self.volumes.why_not(claims, node)
            if reason is None:
                fit.append(node["metadata"]["name"])
            else:
                reasons.append(reason)
        if not fit:
            message = unschedulable_message(reasons, len(nodes))
            await self._event(pod, "Warning", "FailedScheduling", message)
            await self._unschedulable(pod, message)
            self.queue.add_after(key, RETRY_UNSCHEDULABLE)
            return
        chosen = min(fit, key=lambda name: (self._pods_on(name), name))
        if await self.volumes.wait_for_binding(claims, chosen):
            return  # the claims' node is chosen; the pod is bound once they are (their update brings it back)
        await self._bind(pod, chosen)

    async def _bind(self, pod: Object, node: str) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        key = object_key(pod)
        self.assumed[key] = node
        try:
            await self.ctx.client.create(PODS, meta["namespace"], binding, subresource="binding", name=meta["name"])
        except (errors.Conflict, errors.NotFound):
            self.assumed.pop(key, None)  # bound by someone else, or gone: nothing to do
        except Exception:
            self.assumed.pop(key, None)
            raise
        else:
            log.debug("bound %s to %s", key, node)
            await self._event(pod, "Normal", "Scheduled", f"Successfully assigned {key} to {node}")

    async def _event(self, pod: Object, type_: str, reason: str, message: str) -> None:
        await record_event(self.ctx.client, pod, type_=type_, reason=reason, message=message,
                           component="default-scheduler")  # fmt: skip

    async def _unschedulable(self, pod: Object, message: str) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current and current.get("status") == "False" and current.get("message") == message:
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": now(),
        }
        meta = pod["metadata"]
        patch = {"status": {"conditions": [condition]}}
        with contextlib.suppress(errors.NotFound):
            await self.ctx.client.patch(PODS, meta["namespace"], meta["name"], patch, subresource="status")
