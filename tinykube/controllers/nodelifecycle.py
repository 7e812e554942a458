"""The node lifecycle controller (upstream's `nodelifecycle`, pkg/controller/nodelifecycle): it notices nodes whose
agent went quiet, says so in their status and taints, and makes their pods not ready.

Health. Every `--node-monitor-period` (5 s) each Node is looked at: a node is alive while its agent renews its
Lease `kube-node-lease/<node>` or posts a new heartbeat in its Ready condition, as the controller sees it (times are
this controller's clock, never the node's). One silent for `--node-monitor-grace-period` (40 s; a node that never
posted a Ready condition gets `--node-startup-grace-period`, 60 s, from its creation) has its Ready,
MemoryPressure, DiskPressure and PIDPressure conditions set to `Unknown` ("Kubelet stopped posting node status.",
or "never posted"). When the controller itself turns a Ready node so, the node gets a `NodeNotReady` event and
every pod on it loses its Ready condition at once (upstream's MarkPodsNotReady), so endpoints drop it without
waiting for any eviction; a pod bound later to a node not Ready is marked so too.

Taints. Conditions are mirrored as `NoSchedule` taints whenever a Node changes (upstream's TaintNodesByCondition:
`not-ready` for Ready=False, `unreachable` for Unknown, the pressure taints, `unschedulable` for a cordoned node).
A node not Ready gets `node.kubernetes.io/not-ready:NoExecute`, one Unknown `node.kubernetes.io/unreachable:NoExecute`
(the two exclusive; both removed once it is Ready again), through upstream's rate-limited per-zone queue: 0.1 nodes
a second per zone (burst 1); none at all in a zone of more than two nodes of which 55 % are not Ready (0.01 a
second past 50 nodes), and none anywhere while every node of every zone is not Ready: then the control plane is
more likely cut off than the nodes dead, and NoExecute taints already set are taken off ("master disruption
mode"). The taint eviction controller (tainteviction.py) acts on `NoExecute` taints; the DefaultTolerationSeconds
admission plugin gives every pod 300 s of toleration for these two.

Per event, work is per node (its NoSchedule taints) or per pod (a newly bound pod on a sick node); only the
periodic health check looks at every node, as upstream's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Informer, object_key
from tinykube.client.rest import TransportError
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.tainteviction import NO_EXECUTE, NODE_INDEX, pods_by_node

log = logging.getLogger(__name__)

Object = dict[str, Any]
NODES, PODS = builtin("", "v1", "nodes"), builtin("", "v1", "pods")
LEASES = builtin("coordination.k8s.io", "v1", "leases")
LEASE_NAMESPACE = "kube-node-lease"
COMPONENT = "node-controller"
NODE_MONITOR_PERIOD = 5.0  # --node-monitor-period
NODE_STARTUP_GRACE_PERIOD = 60.0  # --node-startup-grace-period
EVICTION_RATE = 0.1  # --node-eviction-rate: nodes tainted NoExecute per second and zone
SECONDARY_EVICTION_RATE = 0.01  # --secondary-node-eviction-rate, in a partly disrupted large zone
LARGE_CLUSTER_SIZE_THRESHOLD = 50  # --large-cluster-size-threshold
UNHEALTHY_ZONE_THRESHOLD = 0.55  # --unhealthy-zone-threshold
UPDATE_RETRIES = 5  # upstream's NodeHealthUpdateRetry
TAINT_RETRY = 0.05  # seconds before a node the tainter could not taint is tried again
NODE_WORKERS = 8  # upstream's nodeUpdateWorkerSize
POD_WORKERS = 4  # upstream's podUpdateWorkerSize
NO_SCHEDULE = "NoSchedule"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONDITION_TAINTS = {  # condition type -> {status -> the NoSchedule taint's key}
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONTROLLED_KEYS = {key for keys in CONDITION_TAINTS.values() for key in keys.values()} | {UNSCHEDULABLE}
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")  # NetworkUnavailable is the network's
EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"  # label: not counted in its zone's health
NORMAL, PARTIAL, FULL, INITIAL = "Normal", "PartialDisruption", "FullDisruption", "Initial"
STOPPED_POSTING = ("NodeStatusUnknown", "Kubelet stopped posting node status.")
NEVER_POSTED = ("NodeStatusNeverUpdated", "Kubelet never posted node status.")


# ---- pure parts -------------------------------------------------------------------------------------------------


def condition(node: Object, kind: str) -> Object | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def taint(key: str, effect: str) -> Object:
    return {"key": key, "effect": effect}


def has_taint(node: Object, wanted: Object) -> bool:
    taints = (node.get("spec") or {}).get("taints") or []
    return any((t.get("key"), t.get("effect")) == (wanted["key"], wanted["effect"]) for t in taints)


def swapped(taints: list[Object], *, add: list[Object], remove: list[Object], stamp: str) -> list[Object]:
    """`taints` less `remove`, plus each of `add` not there yet, stamped `timeAdded` (a taint is its key and effect:
    one already there keeps its value and time)."""
    gone = {(t["key"], t["effect"]) for t in remove}
    kept = [t for t in taints if (t.get("key"), t.get("effect")) not in gone]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    return kept + [{**t, "timeAdded": stamp} for t in add if (t["key"], t["effect"]) not in present]


def no_schedule_changes(node: Object) -> tuple[list[Object], list[Object]]:
    """The condition and cordon NoSchedule taints to add and to remove (upstream's doNoScheduleTaintingPass)."""
    wanted = {
        keys[c.get("status")]
        for c in (node.get("status") or {}).get("conditions") or []
        if (keys := CONDITION_TAINTS.get(str(c.get("type")), {})) and c.get("status") in keys
    }
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add(UNSCHEDULABLE)
    present = {
        t.get("key")
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") == NO_SCHEDULE and t.get("key") in CONTROLLED_KEYS
    }
    return [taint(k, NO_SCHEDULE) for k in sorted(wanted - present)], [taint(k, NO_SCHEDULE) for k in present - wanted]


def marked_unknown(node: Object, stamp: str) -> list[Object]:
    """The node's conditions once its agent is found silent: each of MONITORED `Unknown` (a condition already
    Unknown kept as it is), or added as never posted, its heartbeat the node's creation."""
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or []]
    by_type = {c.get("type"): c for c in conditions}
    for kind in MONITORED:
        found = by_type.get(kind)
        if found is None:
            reason, message = NEVER_POSTED
            created = node["metadata"].get("creationTimestamp")
            conditions.append(
                {"type": kind, "status": "Unknown", "reason": reason, "message": message,
                 "lastHeartbeatTime": created, "lastTransitionTime": stamp}
            )  # fmt: skip
        elif found.get("status") != "Unknown":
            reason, message = STOPPED_POSTING
            found.update(status="Unknown", reason=reason, message=message, lastTransitionTime=stamp)
    return conditions


def zone_key(node: Object) -> str:
    """Upstream's GetZoneKey: "region:\\0:zone" from the (beta, else GA) topology labels; "" without both."""
    labels = node["metadata"].get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready: list[Object | None]) -> str:
    """A zone's state from its nodes' Ready conditions (upstream's ComputeZoneState)."""
    healthy = sum(1 for c in ready if c is not None and c.get("status") == "True")
    unhealthy = len(ready) - healthy
    if healthy == 0 and unhealthy > 0:
        return FULL
    if unhealthy > 2 and unhealthy / len(ready) >= UNHEALTHY_ZONE_THRESHOLD:
        return PARTIAL
    return NORMAL


def eviction_rate(state: str, zone_size: int) -> float:
    """Upstream's setLimiterInZone: the NoExecute tainting rate for a zone in `state`."""
    if state == PARTIAL:
        return SECONDARY_EVICTION_RATE if zone_size > LARGE_CLUSTER_SIZE_THRESHOLD else 0.0
    return EVICTION_RATE


def pod_status_not_ready(pod: Object, stamp: str) -> Object | None:
    """The pod's status with its Ready condition False (upstream's MarkPodsNotReady); None if there is nothing to
    change (no Ready condition, or False already)."""
    status = pod.get("status") or {}
    conditions = list(status.get("conditions") or [])
    for i, found in enumerate(conditions):
        if found.get("type") == "Ready":
            if found.get("status") == "False":
                return None
            conditions[i] = {**found, "status": "False", "lastTransitionTime": stamp}
            return {**status, "conditions": conditions}
    return None


@dataclass(slots=True)
class NodeHealth:
    """What the controller last saw of a node, and when (its own clock) it last saw a sign of life."""

    probe: float
    ready: Object | None  # the Ready condition
    renewed: float | None = None  # the Lease's renewTime


@dataclass
class Tainter:
    """One zone's queue of nodes waiting for their NoExecute taint (upstream's RateLimitedTimedQueue): taken at
    `rate` a second, burst 1. A node done stays known, so it is not queued again until removed."""

    rate: float = EVICTION_RATE
    queued: dict[str, float] = field(default_factory=dict)  # node -> when it may be tried (monotonic)
    known: set[str] = field(default_factory=set)
    tokens: float = 1.0
    filled: float = field(default_factory=time.monotonic)

    def add(self, name: str) -> bool:
        if name in self.known:
            return False
        self.known.add(name)
        self.queued[name] = time.monotonic()
        return True

    def remove(self, name: str) -> bool:
        self.queued.pop(name, None)
        if name not in self.known:
            return False
        self.known.discard(name)
        return True

    def set_rate(self, rate: float) -> None:
        """A new limiter, full, as upstream's SwapLimiter; at rate 0 one that never lets a node through."""
        self.rate, self.tokens, self.filled = rate, 1.0 if rate > 0 else 0.0, time.monotonic()

    def _refill(self, clock: float) -> None:
        self.tokens = min(1.0, self.tokens + (clock - self.filled) * self.rate)
        self.filled = clock

    def next_due(self, clock: float) -> tuple[str | None, float | None]:
        """The node to taint now (a token taken), else None and how long until one may be (None: not until a
        change)."""
        if not self.queued:
            return None, None
        name = min(self.queued, key=self.queued.__getitem__)
        if self.queued[name] > clock:
            return None, self.queued[name] - clock
        if self.rate <= 0:
            return None, None
        self._refill(clock)
        if self.tokens < 1.0:
            return None, (1.0 - self.tokens) / self.rate
        self.tokens -= 1.0
        return name, 0.0

    def done(self, name: str, *, ok: bool, clock: float) -> None:
        if ok:
            self.queued.pop(name, None)
        elif name in self.queued:
            self.queued[name] = clock + TAINT_RETRY


# ---- the controller ---------------------------------------------------------------------------------------------


class NodeLifecycleController:
    def __init__(self, ctx: ControllerContext, *, monitor_period: float = NODE_MONITOR_PERIOD) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.grace = ctx.settings.node_monitor_grace_period
        self.monitor_period = monitor_period
        self.nodes: Informer = ctx.informers.informer(NODES)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.leases: Informer = ctx.informers.informer(LEASES, namespace=LEASE_NAMESPACE)
        self.node_queue: WorkQueue[str] = WorkQueue()
        self.pod_queue: WorkQueue[str] = WorkQueue()
        self.health: dict[str, NodeHealth] = {}
        self.known: dict[str, Object] = {}  # nodes seen by the health check, as last seen
        self.retry: set[str] = set()  # nodes whose pods could not all be marked not ready
        self.zone_states: dict[str, str] = {}
        self.tainters: dict[str, Tainter] = {}
        self._tainter_wake = asyncio.Event()

    async def run(self) -> None:
        self.pods.store.add_index(NODE_INDEX, pods_by_node)
        enqueue_node = self._enqueue_node
        self.nodes.add_handler(on_add=enqueue_node, on_update=lambda _old, new: enqueue_node(new))
        self.pods.add_handler(on_add=lambda pod: self._on_pod(None, pod), on_update=self._on_pod)
        await run_controller(
            self.informers,
            (self.nodes, self.pods, self.leases),
            Loop(self.node_queue, self._sync_node, workers=NODE_WORKERS),
            Loop(self.pod_queue, self._sync_pod, workers=POD_WORKERS),
            beside=(self._monitoring, self._tainting),
        )

    def _enqueue_node(self, node: Object) -> None:
        self.node_queue.add(node["metadata"]["name"])

    def _on_pod(self, old: Object | None, new: Object) -> None:
        """A pod newly bound to a node (upstream's podUpdated)."""
        node = (new.get("spec") or {}).get("nodeName")
        if node and (old is None or (old.get("spec") or {}).get("nodeName") != node):
            self.pod_queue.add(object_key(new))

    # ---- NoSchedule taints, per node event ---------------------------------------------------------------------

    async def _sync_node(self, name: str) -> None:
        node = self.nodes.store.get(name)
        if node is None:
            return
        add, remove = no_schedule_changes(node)
        if (add or remove) and not await self._swap_taints(node, add=add, remove=remove):
            raise errors.Conflict(f"failed to swap the NoSchedule taints of node {name}")

    async def _swap_taints(self, node: Object, *, add: list[Object], remove: list[Object]) -> bool:
        """Upstream's SwapNodeControllerTaint: one update at the Node's resourceVersion, read again on a conflict;
        False if it could not be done."""
        name = node["metadata"]["name"]
        for attempt in range(UPDATE_RETRIES):
            try:
                if attempt:
                    node = await self.client.get(NODES, "", name)
                spec = node.get("spec") or {}
                taints = list(spec.get("taints") or [])
                wanted = swapped(taints, add=add, remove=remove, stamp=now())
                if wanted == taints:
                    return True
                await self.client.update(NODES, "", {**node, "spec": {**spec, "taints": wanted}})
                return True
            except errors.Conflict:
                continue
            except errors.NotFound:
                return True  # gone: nothing to taint
            except (errors.ApiError, TransportError) as err:
                log.warning("%s: cannot change the taints of node %s: %s", COMPONENT, name, err)
                return False
        return False

    # ---- pods bound to a node that is not Ready ---------------------------------------------------------------

    async def _sync_pod(self, key: str) -> None:
        """Upstream's processPod: a pod newly bound to a node not Ready (as last seen) is marked not ready."""
        pod = self.pods.store.get(key)
        if pod is None:
            return
        name = str((pod.get("spec") or {}).get("nodeName") or "")
        health = self.health.get(name)
        if health is None or health.ready is None or self.nodes.store.get(name) is None:
            return  # not looked at yet (its next health check does it), or gone
        if health.ready.get("status") != "True" and not await self._mark_pods_not_ready([pod], name):
            raise errors.Conflict(f"pod {key} could not be marked not ready")

    async def _mark_pods_not_ready(self, pods: list[Object], node: str) -> bool:
        """Upstream's MarkPodsNotReady: each pod's Ready condition False, and a `NodeNotReady` event on it; False if
        a pod could not be written (it is tried again)."""
        ok = True
        for pod in pods:
            status = pod_status_not_ready(pod, now())
            if (pod.get("spec") or {}).get("nodeName") != node or status is None:
                continue
            meta = pod["metadata"]
            try:
                await self.client.update(PODS, meta["namespace"], {**pod, "status": status}, subresource="status")
            except errors.NotFound:
                continue
            except (errors.ApiError, TransportError) as err:
                log.info("%s: cannot mark pod %s not ready: %s", COMPONENT, object_key(pod), err)
                ok = False
                continue
            await self._event(pod, "Warning", "NodeNotReady", "Node is not ready")
        return ok

    async def _event(self, obj: Object, type_: str, reason: str, message: str) -> None:
        await record_event(self.client, obj, type_=type_, reason=reason, message=message, component=COMPONENT)

    # ---- the health check, every monitor period -----------------------------------------------------------------

    async def _monitoring(self) -> None:
        while True:
            try:
                await self.monitor()
            except Exception:
                log.exception("%s: node health check failed", COMPONENT)
            await asyncio.sleep(self.monitor_period)

    async def monitor(self) -> None:
        """Upstream's monitorNodeHealth: every node's health (NODE_WORKERS at a time: upstream's ParallelizeUntil,
        a few workers taking the nodes in turn, not a task per node every 5 s), then the zones'."""
        nodes = self.nodes.store.list()
        await self._classify(nodes)
        by_zone: dict[str, list[Object | None]] = {}
        pending = iter(nodes)

        async def worker() -> None:
            for node in pending:
                checked, ready = await self._monitor_node(node)
                if checked and EXCLUDE_DISRUPTION not in (node["metadata"].get("labels") or {}):
                    by_zone.setdefault(zone_key(node), []).append(ready)

        await asyncio.gather(*(worker() for _ in range(min(NODE_WORKERS, len(nodes)))))
        await self._handle_disruption(by_zone, nodes)

    async def _classify(self, nodes: list[Object]) -> None:
        """New nodes: a `RegisteredNode` event, a zone, and no NoExecute taint of ours until found sick (as after a
        restart of upstream's controller); nodes gone: a `RemovingNode` event and their records dropped."""
        names = {node["metadata"]["name"] for node in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            self._zone(zone_key(node))
            if name not in self.known:
                message = f"Node {name} event: Registered Node {name} in Controller"
                await self._event(node, "Normal", "RegisteredNode", message)
                await self._mark_reachable(node)
            self.known[name] = node
        for name in set(self.known) - names:
            message = f"Node {name} event: Removing Node {name} from Controller"
            await self._event(self.known.pop(name), "Normal", "RemovingNode", message)
            self.health.pop(name, None)
            self.retry.discard(name)
            for tainter in self.tainters.values():
                tainter.remove(name)

    def _zone(self, zone: str) -> Tainter:
        if zone not in self.zone_states:
            self.zone_states[zone] = INITIAL
        tainter = self.tainters.get(zone)
        if tainter is None:
            tainter = self.tainters[zone] = Tainter()
        return tainter

    async def _monitor_node(self, node: Object) -> tuple[bool, Object | None]:
        """One node's health, its NoExecute taint and its pods; (whether its health could be updated, its Ready
        condition now)."""
        name = node["metadata"]["name"]
        for attempt in range(UPDATE_RETRIES):
            try:
                if attempt:
                    node = await self.client.get(NODES, "", name)
                node, observed, current = await self._update_health(node)
                break
            except errors.NotFound:
                return False, None
            except (errors.ApiError, TransportError) as err:
                log.info("%s: cannot update the health of node %s: %s", COMPONENT, name, err)
        else:
            log.warning("%s: gave up updating the health of node %s; its pods are left as they are", COMPONENT, name)
            return False, None
        if current is None:
            return True, None
        await self._taint_for_eviction(node, observed)
        if current.get("status") != "True" and observed.get("status") == "True":
            await self._event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
        elif name not in self.retry or observed.get("status") == "True":
            self.retry.discard(name)
            return True, current
        pods = self.pods.store.by_index(NODE_INDEX, name)
        if await self._mark_pods_not_ready(pods, name):
            self.retry.discard(name)
        else:
            self.retry.add(name)
        return True, current

    async def _update_health(self, node: Object) -> tuple[Object, Object, Object | None]:
        """Upstream's tryUpdateNodeHealth: note a new heartbeat or Lease renewal; a node silent for its grace period
        is marked Unknown. Returns (the node, its Ready condition as observed, its Ready condition now)."""
        name = node["metadata"]["name"]
        clock = time.time()
        current = condition(node, "Ready")
        health = self.health.get(name)
        if current is None:  # never posted: counted from its creation
            created = node["metadata"].get("creationTimestamp")
            stamps = {"lastHeartbeatTime": created, "lastTransitionTime": created}
            observed = {"type": "Ready", "status": "Unknown", **stamps}
            grace = NODE_STARTUP_GRACE_PERIOD
            if health is None:
                born = parse_time(created)
                health = NodeHealth(probe=born.timestamp() if born else clock, ready=None)
            health.ready = None
        else:
            observed, grace = dict(current), self.grace
            if health is None or health.ready is None:
                health = NodeHealth(probe=clock, ready=current, renewed=health.renewed if health else None)
            elif health.ready.get("lastHeartbeatTime") != current.get("lastHeartbeatTime"):
                health.probe, health.ready = clock, current
        lease = self.leases.store.get(f"{LEASE_NAMESPACE}/{name}")
        renewed = parse_time(((lease or {}).get("spec") or {}).get("renewTime"))
        if renewed is not None and (health.renewed is None or renewed.timestamp() > health.renewed):
            health.probe, health.renewed = clock, renewed.timestamp()
        self.health[name] = health
        if clock <= health.probe + grace:
            return node, observed, current
        status = {**(node.get("status") or {}), "conditions": marked_unknown(node, now())}
        updated = {**node, "status": status}
        now_ready = condition(updated, "Ready")
        if now_ready == observed:
            return node, observed, current
        node = await self.client.update(NODES, "", updated, subresource="status")
        health.ready = condition(node, "Ready")
        log.info("%s: node %s stopped posting its status: marked Unknown", COMPONENT, name)
        return node, observed, health.ready

    async def _taint_for_eviction(self, node: Object, observed: Object) -> None:
        """Upstream's processTaintBaseEviction: a not-ready or unreachable node queued for its NoExecute taint (or
        the one swapped for the other at once), a Ready one freed of both."""
        status = observed.get("status")
        if status in ("False", "Unknown"):
            wanted, other = (NOT_READY, UNREACHABLE) if status == "False" else (UNREACHABLE, NOT_READY)
            if has_taint(node, taint(other, NO_EXECUTE)):
                await self._swap_taints(node, add=[taint(wanted, NO_EXECUTE)], remove=[taint(other, NO_EXECUTE)])
                return
            tainter = self._zone(zone_key(node))
            if not has_taint(node, taint(wanted, NO_EXECUTE)):
                tainter.remove(node["metadata"]["name"])
            if tainter.add(node["metadata"]["name"]):
                self._tainter_wake.set()
        elif status == "True":
            await self._mark_reachable(node)

    async def _mark_reachable(self, node: Object) -> None:
        removed = [taint(UNREACHABLE, NO_EXECUTE), taint(NOT_READY, NO_EXECUTE)]
        if await self._swap_taints(node, add=[], remove=removed):
            self._zone(zone_key(node)).remove(node["metadata"]["name"])

    async def _handle_disruption(self, by_zone: dict[str, list[Object | None]], nodes: list[Object]) -> None:
        """Upstream's handleDisruption: each zone's tainting rate from its state; with every node of every zone not
        Ready, no NoExecute taints at all."""
        states = {zone: zone_state(ready) for zone, ready in by_zone.items()}
        for zone in states:
            self._zone(zone)
        for zone in set(self.zone_states) - set(by_zone):
            del self.zone_states[zone]
        all_are = all(state == FULL for state in states.values())
        all_were = all(state == FULL for state in self.zone_states.values())
        if all_are and all_were:
            return
        if all_are:
            log.info("%s: no node is Ready: entering master disruption mode (no NoExecute taints)", COMPONENT)
            for node in nodes:
                await self._mark_reachable(node)
            for zone in self.zone_states:
                self.tainters[zone].set_rate(0.0)
                self.zone_states[zone] = FULL
            return
        if all_were:
            log.info("%s: some nodes are Ready: leaving master disruption mode", COMPONENT)
            clock = time.time()
            for health in self.health.values():  # every node gets a fresh grace period
                health.probe = clock
        for zone, state in list(self.zone_states.items()):
            if all_were or state != states[zone]:
                self.tainters[zone].set_rate(eviction_rate(states[zone], len(by_zone[zone])))
                self.zone_states[zone] = states[zone]
                self._tainter_wake.set()

    # ---- NoExecute taints, at each zone's rate ------------------------------------------------------------------

    async def _tainting(self) -> None:
        while True:
            self._tainter_wake.clear()
            try:
                wait = await self._tainting_pass()
            except Exception:
                log.exception("%s: NoExecute tainting failed", COMPONENT)
                wait = 1.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._tainter_wake.wait(), wait)

    async def _tainting_pass(self) -> float | None:
        """Upstream's doNoExecuteTaintingPass: each zone's due nodes, as its rate allows; how long until the next
        may be due (None: nothing is waiting)."""
        wait = math.inf
        for tainter in list(self.tainters.values()):
            while True:
                clock = time.monotonic()
                name, delay = tainter.next_due(clock)
                if name is None:
                    wait = min(wait, delay if delay is not None else math.inf)
                    break
                tainter.done(name, ok=await self._taint_no_execute(name), clock=clock)
        return None if wait == math.inf else wait

    async def _taint_no_execute(self, name: str) -> bool:
        node = self.nodes.store.get(name)
        if node is None:
            return True
        ready = condition(node, "Ready")
        if ready is None:
            return False
        if ready.get("status") == "False":
            return await self._swap_taints(
                node, add=[taint(NOT_READY, NO_EXECUTE)], remove=[taint(UNREACHABLE, NO_EXECUTE)]
            )
        if ready.get("status") == "Unknown":
            return await self._swap_taints(
                node, add=[taint(UNREACHABLE, NO_EXECUTE)], remove=[taint(NOT_READY, NO_EXECUTE)]
            )
        return True  # Ready again meanwhile
