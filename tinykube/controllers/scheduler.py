"""A kube-scheduler with the default profile's filters: binds each unscheduled pod to a fitting Ready node (the one
with the fewest pods) through the `binding` subresource, as upstream does; a pod no node fits gets a
`FailedScheduling` event and `PodScheduled=False` (reason `Unschedulable`) with upstream's FitError message, and a
pod of higher priority evicts lower ones to fit (DefaultPreemption).

Filters, in upstream's order: the node is schedulable (or the pod tolerates `node.kubernetes.io/unschedulable`, as
DaemonSet pods do), the pod tolerates its `NoSchedule`/`NoExecute` taints (a node not Ready counts as tainted
not-ready), its labels match the pod's `nodeSelector` and required node affinity (`matchExpressions` on labels,
`matchFields` on `metadata.name`), the pod's host ports are free there (NodePorts), what the pod requests fits in
the node's allocatable beside what the pods bound there request (NodeResourcesFit, `noderesources`), and its
volumes can go there. Pods nominated to a node by preemption, of at least the pod's priority, count as bound there.
No pod affinity or spreading.

An unschedulable pod is tried again when the cluster changes in a way that can make it fit (a bound pod deleted or
finished, a node added or changed in labels, taints, schedulability, readiness or allocatable, a claim or volume
changed, the pod's own spec changed), never sooner than its backoff (1 s, doubling per attempt, at most 10 s), and
at the latest after five minutes, as upstream's scheduling queue flushes its leftovers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.nodeaffinity import node_affinity_matches, tolerates
from tinykube.api.noderesources import Footprint, NodeTotals, NodeUsage, allocatable, fit_reasons
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.preemption import (
    NEVER,
    NOT_HELPFUL,
    TERMINATING_ON_NOMINATED,
    Candidate,
    pick_candidate,
    select_victims,
)
from tinykube.controllers.roundrobin import RoundRobinIndex
from tinykube.controllers.volumebinding import VolumeBinding, claims_of

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
SCHEDULER_NAME = "default-scheduler"
WORKERS = 16
INITIAL_BACKOFF, MAX_BACKOFF = 1.0, 10.0  # seconds: upstream's podInitialBackoffDuration, podMaxBackoffDuration
FLUSH_UNSCHEDULABLE = 300.0  # seconds: podMaxInUnschedulablePodsDuration, tried again whatever happened
NO_NODES = "no nodes available to schedule pods"
PREEMPTED_CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def node_ready(node: Object) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


@dataclass(frozen=True, slots=True)
class NodeView:
    """What filtering reads of a node whatever the pod, worked out once per version of the node rather than for
    every pod it is checked for (a pod on 250 nodes is checked against 120 of them)."""

    unschedulable: bool
    ready: bool
    taints: tuple[Object, ...]  # the NoSchedule and NoExecute ones, in the node's order
    allocatable: dict[str, int]

    @classmethod
    def of(cls, node: Object) -> NodeView:
        spec = node.get("spec") or {}
        hard = tuple(t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute"))
        return cls(bool(spec.get("unschedulable")), node_ready(node), hard, allocatable(node))

    @property
    def open(self) -> bool:
        """No filter but the pod count can refuse a plain pod here (see `plain`)."""
        return self.ready and not self.unschedulable and not self.taints

    @property
    def shut(self) -> bool:
        """Every pod with at most the default tolerations (`default_tolerations_only`) is refused here, whatever
        its spec: the node is unschedulable, not Ready, or has a hard taint those tolerations do not match."""
        return (
            self.unschedulable
            or not self.ready
            or any(not tolerates(DEFAULT_TOLERATING_POD, taint) for taint in self.taints)
        )


def plain(pod: Object, want: Footprint, claims: list[Object]) -> bool:
    """A pod that only the pod count can keep from an open node: no node selector or required node affinity, no
    host ports, no resource requests and no volume claims (most pods of a simulated cluster). For it, the filters
    need not run on an open node with room: they would find nothing."""
    spec = pod.get("spec") or {}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return not (
        claims
        or want.ports
        or spec.get("nodeSelector")
        or affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        or any(amount > 0 for amount in want.requests.values())
    )


# The tolerations the DefaultTolerationSeconds admission gives every pod, with any value: a pod whose tolerations
# are among these is refused by every node that refuses this one (tolerating less, it is refused more).
DEFAULT_TOLERATING_POD: Object = {
    "spec": {
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        ]
    }
}
DEFAULT_TOLERATION_KEYS = frozenset(t["key"] for t in DEFAULT_TOLERATING_POD["spec"]["tolerations"])


def default_tolerations_only(pod: Object) -> bool:
    """The pod tolerates nothing beyond what `DEFAULT_TOLERATING_POD` does."""
    return all(
        t.get("key") in DEFAULT_TOLERATION_KEYS and t.get("effect") == "NoExecute"
        for t in (pod.get("spec") or {}).get("tolerations") or []
    )


def why_not(pod: Object, node: Object, view: NodeView | None = None) -> str | None:
    """Why `pod` cannot go to `node` whatever pods are removed from it (upstream's UnschedulableAndUnresolvable
    filters, in their order: NodeUnschedulable, TaintToleration, NodeAffinity), or None. `view`: the node's, if
    known."""
    view = view or NodeView.of(node)
    if view.unschedulable and not tolerates(pod, UNSCHEDULABLE_TAINT):
        return "node(s) were unschedulable"
    if not view.ready:
        return "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
    for taint in view.taints:
        if not tolerates(pod, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    if not node_affinity_matches(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    return None


def fit_error(nodes: int, reasons: Mapping[str, Iterable[str]], *, absent: str = "") -> str:
    """Upstream's FitError message, `0/N nodes are available: ...`: each node's reasons counted, sorted; the
    nodes `reasons` does not name give `absent`."""
    counts = Counter(reason for node_reasons in reasons.values() for reason in node_reasons)
    if absent and len(reasons) < nodes:
        counts[absent] += nodes - len(reasons)
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    message = f"0/{nodes} nodes are available:"
    return f"{message} {', '.join(parts)}." if parts else message


def unschedulable_message(reasons: list[str], nodes: int) -> str:
    """The message for one reason per node (`reasons`), or that there is no node at all."""
    if not nodes:
        return NO_NODES
    return fit_error(nodes, {str(i): [reason] for i, reason in enumerate(reasons)})


def backoff(attempts: int) -> float:
    """Seconds an unschedulable pod waits before it is tried again after `attempts` failed ones."""
    return min(INITIAL_BACKOFF * 2.0 ** max(attempts - 1, 0), MAX_BACKOFF)


def node_changed(old: Object, new: Object) -> bool:
    """Whether a Node update can make a pod fit (heartbeats cannot): labels, spec, allocatable, readiness."""
    if old["metadata"].get("labels") != new["metadata"].get("labels") or old.get("spec") != new.get("spec"):
        return True
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    return old_status.get("allocatable") != new_status.get("allocatable") or node_ready(old) != node_ready(new)


def spec_changed(old: Object, new: Object) -> bool:
    """Whether a pod changed other than in its status (a status write is no reason to try it again)."""
    keep = ("labels", "annotations")
    return old.get("spec") != new.get("spec") or any(old["metadata"].get(k) != new["metadata"].get(k) for k in keep)


def live(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def preempted_terminating(pod: Object | None) -> bool:
    """Upstream's podTerminatingByPreemption: being deleted, with the scheduler's DisruptionTarget condition."""
    if pod is None or not pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    target = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
    return target is not None and target.get("status") == "True" and target.get("reason") == "PreemptionByScheduler"


def needs_scheduling(pod: Object) -> bool:
    spec, meta = pod.get("spec") or {}, pod["metadata"]
    phase = (pod.get("status") or {}).get("phase")
    return (
        not spec.get("nodeName")
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
        and not meta.get("deletionTimestamp")
        and phase not in ("Succeeded", "Failed")
    )


SCHEDULER_QPS, SCHEDULER_BURST = 50.0, 100
MIN_FEASIBLE_NODES = 100  # upstream's minFeasibleNodesToFind
MIN_FEASIBLE_PERCENTAGE = 5  # upstream's minFeasibleNodesPercentageToFind


def feasible_nodes_to_find(nodes: int) -> int:
    """Upstream's numFeasibleNodesToFind with the default (adaptive) percentageOfNodesToScore: every node of a
    small cluster; of a big one, 50 % less 1 % per 125 nodes (at least 5 %, at least 100 nodes). Filtering stops
    once that many fit, and only they are scored."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    percentage = max(50 - nodes // 125, MIN_FEASIBLE_PERCENTAGE)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES)


class Scheduler:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.pods = ctx.informers.informer(PODS)
        self.nodes = ctx.informers.informer(NODES)
        self.volumes = VolumeBinding(ctx)
        self.queue: WorkQueue[str] = WorkQueue()
        self.usage = NodeUsage()  # what the bound pods (and the ones we bound, not yet seen so) take per node
        self.assumed: dict[str, str] = {}  # pod key -> node, bound by us but not yet seen bound in the cache
        self.nominated: dict[str, Footprint] = {}  # pending pod key -> its footprint on the node it preempted on
        self.unschedulable: dict[str, float] = {}  # pod key -> loop time its backoff ends
        self.attempts: Counter[str] = Counter()  # pod key -> failed attempts in a row
        self._views: dict[str, tuple[str, NodeView]] = {}  # node -> (resourceVersion, its view)
        self._node_names: list[str] | None = None  # sorted, until a node comes or goes
        self._next_start = 0  # where the next pod's search for feasible nodes begins
        # For plain pods: which nodes have room, over `_node_names` (None: to be built), the nodes not open (while
        # there are any, the index is used only for pods they shut out), those of them a pod with the default
        # tolerations might pass (while there are any, the filters decide), and the nodes changed since the index
        # last looked at them.
        self._rooms: RoundRobinIndex | None = None
        self._position: dict[str, int] = {}
        self._closed: set[str] = set()
        self._ajar: set[str] = set()
        self._stale: set[str] = set()
        # written in the background at kube-scheduler's client rate (its clientConnection qps 50, burst 100)
        self.events = EventRecorder(ctx.client, SCHEDULER_NAME, qps=SCHEDULER_QPS, burst=SCHEDULER_BURST)

    async def run(self) -> None:
        self.pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_gone)
        self.nodes.add_handler(
            on_add=self._node_added,
            on_update=self._node_updated,
            on_delete=self._node_gone,
        )
        self.volumes.claims_informer.add_handler(
            on_add=self._claim_changed, on_update=lambda _old, new: self._claim_changed(new)
        )
        self.volumes.volumes.add_handler(
            on_add=self._cluster_changed, on_update=lambda _old, new: self._cluster_changed(new)
        )
        await run_controller(
            self.ctx.informers,
            (self.pods, self.nodes, self.volumes),
            Loop(self.queue, self.schedule, workers=WORKERS),
            beside=[self.events.run],
        )

    # What the informers tell: the per-node accounting, nominations, and which waiting pods to try again

    def _account(self, pod: Object) -> None:
        key = object_key(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self.assumed.pop(key, None)
            self.nominated.pop(key, None)
            if live(pod):
                self.usage.set(Footprint.of(pod, key, str(node)))
            elif self.usage.clear(key) is not None:
                self._cluster_changed()  # it finished: its place is free
            return
        if key in self.assumed:
            return  # bound by us: its footprint stays until the cache shows it bound (or the binding failed)
        self.usage.clear(key)
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if nominated and needs_scheduling(pod):
            self.nominated[key] = Footprint.of(pod, key, str(nominated))

    def _pod_added(self, pod: Object) -> None:
        self._account(pod)
        if needs_scheduling(pod):
            self.queue.add(object_key(pod))

    def _pod_updated(self, old: Object, new: Object) -> None:
        self._account(new)
        if not needs_scheduling(new):
            self._forget(object_key(new))
            return
        key = object_key(new)
        if key not in self.unschedulable:
            self.queue.add(key)
        elif spec_changed(old, new):
            self._retry(key)

    def _pod_gone(self, pod: Object) -> None:
        key = object_key(pod)
        self.assumed.pop(key, None)
        self.nominated.pop(key, None)
        self._forget(key)
        if self.usage.clear(key) is not None:
            self._cluster_changed()

    def _forget(self, key: str) -> None:
        self.unschedulable.pop(key, None)
        self.attempts.pop(key, None)

    def _node_gone(self, node: Object) -> None:
        self._views.pop(node["metadata"]["name"], None)
        self._node_names = None
        self._cluster_changed()

    def _node_added(self, node: Object) -> None:
        self._node_names = None
        self._cluster_changed(node)

    def _node_updated(self, old: Object, new: Object) -> None:
        self._stale.add(new["metadata"]["name"])
        if node_changed(old, new):
            self._cluster_changed(new)

    def _sorted_names(self) -> list[str]:
        """The cached Nodes' names in order, kept until a node comes or goes (not sorted again per pod)."""
        if self._node_names is None:
            self._node_names = sorted(self.nodes.store.keys())
            self._rooms = None
        return self._node_names

    def _nodes_in_order(self) -> list[Object]:
        found = [self.nodes.store.get(name) for name in self._sorted_names()]
        return [node for node in found if node is not None]

    def _claim_changed(self, claim: Object) -> None:
        """A claim came or was bound: the pods waiting for it may go now."""
        namespace, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        for key in list(self.unschedulable):
            pod = self.pods.store.get(key)
            if pod is not None and pod["metadata"]["namespace"] == namespace and name in claims_of(pod):
                self._retry(key)

    def _cluster_changed(self, _obj: Object | None = None) -> None:
        """Something that can make a waiting pod fit: each is tried again once its backoff is over."""
        for key in list(self.unschedulable):
            self._retry(key)

    def _retry(self, key: str) -> None:
        until = self.unschedulable.get(key)
        delay = 0.0 if until is None else until - asyncio.get_running_loop().time()
        self.queue.add_after(key, max(delay, 0.0))

    # One scheduling cycle

    def _view(self, node: Object) -> NodeView:
        meta = node["metadata"]
        version = str(meta.get("resourceVersion") or "")
        cached = self._views.get(meta["name"])
        if cached is None or cached[0] != version or not version:
            cached = (version, NodeView.of(node))
            self._views[meta["name"]] = cached
        return cached[1]

    def _totals(self, node: str, want: Footprint) -> NodeTotals:
        """What is taken on `node` for `want`: the bound pods, and the pods nominated there that are at least as
        important (upstream's RunFilterPluginsWithNominatedPods)."""
        if not self.nominated:
            return self.usage.on(node)
        nominated = [f for f in self.nominated.values() if f.node == node and f.key != want.key]
        return self.usage.on(node).with_pods(f for f in nominated if f.priority >= want.priority)

    def _has_room(self, node: Object, want: Footprint) -> bool:
        """For a `plain` pod: the node is open and below its pod count, so every filter passes."""
        view = self._view(node)
        return view.open and len(self._totals(node["metadata"]["name"], want).pods) < view.allocatable.get("pods", 0)

    def _filter(self, pod: Object, want: Footprint, node: Object, claims: list[Object]) -> tuple[list[str], bool]:
        """Why `pod` does not fit on `node` (nothing: it fits), and whether evicting pods could change that."""
        view = self._view(node)
        reason = why_not(pod, node, view)
        if reason:
            return [reason], False
        reasons = fit_reasons(want, view.allocatable, self._totals(node["metadata"]["name"], want))
        if reasons:
            return reasons, True
        reason = self.volumes.why_not(claims, node)
        return ([reason], False) if reason else ([], True)

    def _room_index(self) -> RoundRobinIndex:
        """The index of which nodes have room for a plain pod, brought up to date with the nodes and their usage."""
        names = self._sorted_names()
        changed = self._stale | self.usage.take_changed()
        self._stale = set()
        if self._rooms is None:
            self._rooms = RoundRobinIndex(len(names))
            self._position = {name: i for i, name in enumerate(names)}
            self._closed, self._ajar = set(), set()
            changed = set(names)
        for name in changed:
            i = self._position.get(name)
            if i is None:
                continue  # pods bound to a node that is not (or no longer) there
            node = self.nodes.store.get(name)
            view = self._view(node) if node is not None else None
            if view is None or not view.open:
                self._closed.add(name)
                if view is None or not view.shut:  # (a node gone from the cache: the loop, which skips it, decides)
                    self._ajar.add(name)
                else:
                    self._ajar.discard(name)
                self._rooms.set(i, False, 0)
                continue
            self._closed.discard(name)
            self._ajar.discard(name)
            pods = len(self.usage.on(name).pods)
            self._rooms.set(i, pods < view.allocatable.get("pods", 0), pods)
        return self._rooms

    async def _schedule_quickly(self, pod: Object, want: Footprint, claims: list[Object]) -> bool:
        """A plain pod with no pod nominated anywhere, and each node open, or shut to it (a node not Ready
        refuses it as surely as a full one: while 5,000 nodes come up, most are): the search's answer read off the
        index (the same node and the same next start as the loop of `schedule`); False when that cannot be done or
        no node has room (the loop then finds the reasons)."""
        if self.nominated:
            return False
        rooms = self._room_index()
        if self._ajar or (self._closed and not default_tolerations_only(pod)) or not rooms.fitting():
            return False
        names = self._sorted_names()
        start = self._next_start % len(names)
        pick = rooms.pick(start, feasible_nodes_to_find(len(names)))
        self._next_start = (start + pick.checked) % len(names)
        await self._place(pod, want, names[pick.chosen], claims)
        return True

    async def schedule(self, key: str) -> None:
        pod = self.pods.store.get(key)
        if pod is None or not needs_scheduling(pod) or key in self.assumed:
            return
        want = Footprint.of(pod, key, "")
        claims, problem = self.volumes.claims(pod)
        quick = not problem and plain(pod, want, claims)
        if quick and await self._schedule_quickly(pod, want, claims):
            return
        nodes = self._nodes_in_order()
        if not nodes:
            await self._failed(pod, NO_NODES)
            return
        if problem:  # a PreFilter's verdict: the same for every node, so named once
            post, _, nominate = self._preemption(pod, want, nodes, [])
            await self._failed(pod, f"0/{len(nodes)} nodes are available: {problem}. {post}", nominate=nominate)
            return
        reasons: dict[str, list[str]] = {}
        resolvable: list[Object] = []
        fit: list[str] = []
        enough = feasible_nodes_to_find(len(nodes))
        start = self._next_start % len(nodes)
        checked = 0
        found: list[str]
        for node in nodes[start:] + nodes[:start]:  # upstream's round robin: each pod starts where the last stopped
            checked += 1
            if quick and self._has_room(node, want):
                found, can_preempt = [], True  # what the filters would find
            else:
                found, can_preempt = self._filter(pod, want, node, claims)
            if not found:
                fit.append(node["metadata"]["name"])
                if len(fit) >= enough:
                    break
                continue
            reasons[node["metadata"]["name"]] = found
            if can_preempt:
                resolvable.append(node)
        self._next_start = (start + checked) % len(nodes)
        if fit:
            chosen = min(fit, key=lambda name: (len(self.usage.on(name).pods), name))
            await self._place(pod, want, chosen, claims)
            return
        await self._unschedulable(pod, want, fit_error(len(nodes), reasons), nodes, resolvable)

    async def _place(self, pod: Object, want: Footprint, node: str, claims: list[Object]) -> None:
        key = want.key
        self._reserve(pod, key, node)  # before any await: the next pod's decision sees this one's place taken
        if await self.volumes.wait_for_binding(claims, node):
            # the claims' node is chosen; the pod is bound once they are (their update brings it back)
            self._unreserve(key)
            self.unschedulable[key] = asyncio.get_running_loop().time()  # waits, with no backoff
            self.queue.add_after(key, FLUSH_UNSCHEDULABLE)
            return
        await self._bind(pod, node)

    def _reserve(self, pod: Object, key: str, node: str) -> None:
        self.assumed[key] = node
        self.usage.set(Footprint.of(pod, key, node))

    def _unreserve(self, key: str) -> bool:
        """Give the pod's reserved place back (unless the cache shows it bound); whether it was freed."""
        if self.assumed.pop(key, None) is not None:
            cached = self.pods.store.get(key)
            if cached is None or not (cached.get("spec") or {}).get("nodeName"):
                return self.usage.clear(key) is not None
        return False

    async def _unschedulable(
        self, pod: Object, want: Footprint, message: str, nodes: list[Object], resolvable: list[Object]
    ) -> None:
        """No node fits: preempt if that helps (upstream's PostFilter), then report the failure."""
        post, candidate, nominate = self._preemption(pod, want, nodes, resolvable)
        if candidate is None:
            await self._failed(pod, f"{message} {post}", nominate=nominate)
            return
        await self._preempt(pod, want, candidate)
        await self._failed(pod, message, nominate=candidate.node)

    def _preemption(
        self, pod: Object, want: Footprint, nodes: list[Object], resolvable: list[Object]
    ) -> tuple[str, Candidate | None, str | None]:
        """DefaultPreemption: the node whose eviction costs least, or the message saying why there is none, with
        the pod's nomination to write (None: kept as it is, "": cleared)."""
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return f"preemption: {NEVER}", None, None
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if nominated and any(n["metadata"]["name"] == nominated for n in resolvable):
            for footprint in self.usage.on(str(nominated)).pods.values():
                if footprint.priority < want.priority and preempted_terminating(self.pods.store.get(footprint.key)):
                    return f"preemption: {TERMINATING_ON_NOMINATED}", None, None
        candidates, reasons = [], {}
        for node in resolvable:
            name = node["metadata"]["name"]
            fits = self._fits(want, self._view(node).allocatable)
            victims, why = select_victims(want, self._totals(name, want), fits)
            if victims:
                candidates.append(Candidate(name, tuple(victims)))
            else:
                reasons[name] = why
        best = pick_candidate(candidates)
        if best is None:
            return f"preemption: {fit_error(len(nodes), reasons, absent=NOT_HELPFUL)}", None, ""
        return "", best, best.node

    @staticmethod
    def _fits(want: Footprint, alloc: dict[str, int]) -> Callable[[NodeTotals], list[str]]:
        return lambda totals: fit_reasons(want, alloc, totals)

    async def _preempt(self, pod: Object, want: Footprint, candidate: Candidate) -> None:
        """Upstream's prepareCandidate: each victim marked `DisruptionTarget` and deleted, with a `Preempted` event;
        lower-priority pods nominated to the node lose their nomination."""
        key, node = want.key, candidate.node
        self.nominated[key] = Footprint(key, node, want.requests, want.ports, want.priority, want.started)
        uid = pod["metadata"].get("uid")
        for footprint in candidate.victims:
            victim = self.pods.store.get(footprint.key)
            if victim is None:
                continue
            log.info("preempting %s on %s for %s", footprint.key, node, key)
            await self._evict(victim)
            self._event(victim, "Normal", "Preempted", f"Preempted by pod {uid} on node {node}")
        for other in [f for f in self.nominated.values() if f.node == node and f.priority < want.priority]:
            self.nominated.pop(other.key, None)
            namespace, name = other.key.split("/", 1)
            with contextlib.suppress(errors.NotFound):
                body = {"status": {"nominatedNodeName": None}}
                await self.ctx.client.patch(PODS, namespace, name, body, subresource="status")

    async def _evict(self, victim: Object) -> None:
        meta = victim["metadata"]
        message = f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod"
        condition = {**PREEMPTED_CONDITION, "message": message}
        conditions = (victim.get("status") or {}).get("conditions") or []
        try:
            if not any(all(c.get(k) == v for k, v in condition.items()) for c in conditions):
                body = {"status": {"conditions": [{**condition, "lastTransitionTime": now()}]}}
                await self.ctx.client.patch(PODS, meta["namespace"], meta["name"], body, subresource="status")
            await self.ctx.client.delete(PODS, meta["namespace"], meta["name"], uid=str(meta.get("uid") or ""))
        except errors.NotFound:
            return

    async def _bind(self, pod: Object, node: str) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        key = object_key(pod)
        try:
            await self.ctx.client.create(PODS, meta["namespace"], binding, subresource="binding", name=meta["name"])
        except (errors.Conflict, errors.NotFound):
            self._unreserve(key)  # bound by someone else, or gone: nothing to do
        except Exception:
            if self._unreserve(key):
                self._cluster_changed()  # the place it held may fit a waiting pod
            raise
        else:
            log.debug("bound %s to %s", key, node)
            self._forget(key)
            self._event(pod, "Normal", "Scheduled", f"Successfully assigned {key} to {node}")

    def _event(self, pod: Object, type_: str, reason: str, message: str) -> None:
        self.events.record(pod, type_, reason, message)

    async def _failed(self, pod: Object, message: str, *, nominate: str | None = None) -> None:
        """Upstream's handleSchedulingFailure: the pod waits (backoff, then the next change that may help), its
        `PodScheduled=False` condition and nomination are written, and a `FailedScheduling` event says why.
        `nominate`: the node it preempted on, "" to clear its nomination, None to keep it."""
        key = object_key(pod)
        self.attempts[key] += 1
        self.unschedulable[key] = asyncio.get_running_loop().time() + backoff(self.attempts[key])
        self.queue.add_after(key, FLUSH_UNSCHEDULABLE)
        if nominate == "":
            self.nominated.pop(key, None)
        await self._write_unschedulable(pod, message, nominate)
        self._event(pod, "Warning", "FailedScheduling", message)

    async def _write_unschedulable(self, pod: Object, message: str, nominate: str | None) -> None:
        status = pod.get("status") or {}
        current = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        nomination_same = nominate is None or nominate == (status.get("nominatedNodeName") or "")
        if current and current.get("status") == "False" and current.get("message") == message and nomination_same:
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": now(),
        }
        body: Object = {"conditions": [condition]}
        if not nomination_same:
            body["nominatedNodeName"] = nominate or None
        meta = pod["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self.ctx.client.patch(PODS, meta["namespace"], meta["name"], {"status": body}, subresource="status")
