"""The EndpointSlice controller: the pods a Service selects, published as EndpointSlices (upstream's
`pkg/controller/endpointslice`).

One work-queue key per Service. A sync computes the endpoints the Service should have — one per selected pod and
address family, grouped by the ports the pod resolves — and hands them with the Service's live slices to the pure
planner in `slicepacking`, which decides the few writes that get there. A slice already right is never written,
so a readiness flip rewrites one slice and a restart against correct slices writes nothing.

The informer cache lags behind our own writes. Planning from a cache that has not yet seen a slice we just created
would create it again, so every write is remembered (`Expectations`) and a Service whose slices the cache has not
caught up with is retried shortly instead of synced, as upstream's endpointSliceTracker does.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo, by_path
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Store, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers import pods as podsel
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.slicepacking import Group, GroupKey, Object, Plan, SliceTemplate, plan_service, port_key
from tinykube.controllers.triggers import TRIGGER_TIME, TriggerTimes, rfc3339nano

log = logging.getLogger(__name__)

MAX_ENDPOINTS_PER_SLICE = 100
WORKERS = 16  # upstream: 5 (--concurrent-service-endpoint-syncs); see endpoints.WORKERS
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
COMPONENT = "endpointslice-controller"

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_ZONE = "topology.kubernetes.io/zone"
RESERVED_LABELS = frozenset({LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS})

STALE_RETRY = 0.05  # seconds before a Service whose slices the cache has not caught up with is tried again
EXPECTATION_TTL = 10.0  # a write the cache never reflects (deleted meanwhile by someone else) stops blocking


def resource(group: str, plural: str) -> ResourceInfo:
    resource = by_path(group, "v1", plural)
    assert resource is not None, plural
    return resource


SERVICES = resource("", "services")
PODS = resource("", "pods")
NODES = resource("", "nodes")
EVENTS = resource("", "events")
SLICES = resource("discovery.k8s.io", "endpointslices")

# Index names carry the controller's name: the informers are shared with other controllers.
BY_NODE = "endpointslice/node"  # pods by spec.nodeName
BY_SERVICE = "endpointslice/service"  # slices by "<ns>/<service name>"


# ---- desired state (pure) ------------------------------------------------------------------------------------


def pod_ports(pod: Object, svc: Object) -> list[Object]:
    """The Service's ports as this pod serves them; a port whose named targetPort the pod lacks is left out."""
    ports: list[Object] = []
    for svc_port in (svc.get("spec") or {}).get("ports") or []:
        number = podsel.find_port(pod, svc_port)
        if number is None:
            continue
        port: Object = {"name": svc_port.get("name", ""), "port": number, "protocol": svc_port.get("protocol", "TCP")}
        if svc_port.get("appProtocol"):
            port["appProtocol"] = svc_port["appProtocol"]
        ports.append(port)
    return ports


def pod_endpoint(pod: Object, svc: Object, addresses: list[str], zone: str | None) -> Object:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    serving = podsel.pod_ready(pod)
    terminating = podsel.terminating(pod)
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    conditions = {"ready": publish or (serving and not terminating), "serving": serving, "terminating": terminating}
    endpoint: Object = {"addresses": addresses, "conditions": conditions}
    if podsel.should_set_hostname(pod, svc):
        endpoint["hostname"] = spec["hostname"]
    endpoint["targetRef"] = {
        "kind": "Pod",
        "namespace": meta.get("namespace"),
        "name": meta["name"],
        "uid": meta.get("uid"),
    }
    if spec.get("nodeName"):
        endpoint["nodeName"] = spec["nodeName"]
    if zone:
        endpoint["zone"] = zone
    return endpoint


def desired_groups(svc: Object, pods: Iterable[Object], zone_of: Callable[[str], str | None]) -> list[Group]:
    """The Service's endpoints by address family and resolved port list, pods in name order."""
    groups: dict[GroupKey, Group] = {}
    eligible = sorted(
        (p for p in pods if podsel.should_be_in_endpoints(p, include_terminating=True)),
        key=lambda p: str(p["metadata"]["name"]),
    )
    for family in podsel.service_families(svc):
        for pod in eligible:
            addresses = podsel.pod_ips(pod, family)
            if not addresses:
                continue
            ports = pod_ports(pod, svc)
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            endpoint = pod_endpoint(pod, svc, addresses, zone_of(node) if node else None)
            groups.setdefault((family, port_key(ports)), Group(family, ports, [])).endpoints.append(endpoint)
    return list(groups.values())


def slice_labels(svc: Object) -> dict[str, str]:
    meta = svc["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in RESERVED_LABELS}
    if podsel.headless(svc):
        labels[LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = meta["name"]
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    return labels


def owner_reference(obj: Object, kind: str) -> Object:
    meta = obj["metadata"]
    return {
        "apiVersion": "v1",
        "kind": kind,
        "name": meta["name"],
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def slice_template(svc: Object, trigger_time: str | None) -> SliceTemplate:
    meta = svc["metadata"]
    return SliceTemplate(
        namespace=meta.get("namespace", ""),
        generate_name=f"{meta['name']}-",
        labels=slice_labels(svc),
        owner=owner_reference(svc, "Service"),
        stamp={TRIGGER_TIME: trigger_time},
    )


# ---- the informer cache and our own writes -------------------------------------------------------------------


def _revision(obj: Object) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


class Expectations:
    """Slice writes of ours the informer cache may not show yet, per owner key: name → revision written, or None
    for a delete."""

    def __init__(self, ttl: float = EXPECTATION_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._pending: dict[str, dict[str, tuple[int | None, float]]] = {}

    def wrote(self, key: str, obj: Object) -> None:
        self._pending.setdefault(key, {})[obj["metadata"]["name"]] = (_revision(obj), self.clock() + self.ttl)

    def deleted(self, key: str, name: str) -> None:
        self._pending.setdefault(key, {})[name] = (None, self.clock() + self.ttl)

    def observed(self, key: str, obj: Object) -> bool:
        """Whether the cache now shows exactly one of our writes (then no longer pending): a sync for it would
        find nothing to do, as the sync that wrote it planned from the same caches."""
        pending = self._pending.get(key)
        name = obj["metadata"]["name"]
        if pending is None or name not in pending or pending[name][0] != _revision(obj):
            return False
        del pending[name]
        if not pending:
            del self._pending[key]
        return True

    def gone(self, key: str, name: str) -> None:
        """The cache saw the slice deleted: nothing about it is pending any more."""
        pending = self._pending.get(key)
        if pending is not None:
            pending.pop(name, None)

    def stale(self, key: str, cached: dict[str, Object]) -> bool:
        """Whether the cache lacks any of our writes for `key`; writes it reflects are forgotten."""
        pending = self._pending.get(key)
        if not pending:
            return False
        moment = self.clock()
        for name, (revision, deadline) in list(pending.items()):
            obj = cached.get(name)
            caught_up = obj is None if revision is None else obj is not None and _revision(obj) >= revision
            if caught_up or deadline < moment:
                del pending[name]
        if not pending:
            del self._pending[key]
            return False
        return True


def _stamp(moment: datetime | None) -> str | None:
    return rfc3339nano(moment) if moment else None


def ensure_index(store: Store, name: str, fn: Callable[[Object], list[str]]) -> None:
    with contextlib.suppress(ValueError):  # already there: another instance on the same shared informers
        store.add_index(name, fn)


def _node_index(pod: Object) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def service_index(slice_: Object) -> list[str]:
    """A slice's owner key from its service-name label."""
    name = (slice_["metadata"].get("labels") or {}).get(LABEL_SERVICE_NAME)
    return [f"{slice_['metadata'].get('namespace', '')}/{name}"] if name else []


def _zone_label(node: Object) -> str | None:
    return (node["metadata"].get("labels") or {}).get(LABEL_ZONE)


class SliceWriter:
    """What both slice controllers share: a work queue of owner keys fed by their slices' events, expectations of
    their own writes until the cache shows them, and the count of keys in flight behind `idle()`."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.queue: WorkQueue[str] = WorkQueue()
        self.expectations = Expectations()
        self._syncing: dict[str, list[Object]] = {}  # keys being reconciled → their slices' events meanwhile

    @property
    def in_flight(self) -> int:
        """Keys being reconciled right now."""
        return len(self._syncing)

    def _slice_event(self, slice_: Object) -> None:
        """Sync the owner unless the event is our own write coming back (as upstream's endpointSliceTracker). The
        watch often delivers that before the write's response: while the owner is being synced, decide at its end."""
        for key in service_index(slice_):
            if key in self._syncing:
                self._syncing[key].append(slice_)
            elif not self.expectations.observed(key, slice_):
                self.queue.add(key)

    def _slice_gone(self, slice_: Object) -> None:
        for key in service_index(slice_):
            self.expectations.gone(key, slice_["metadata"]["name"])
            self.queue.add(key)

    async def reconcile(self, key: str) -> None:
        self._syncing[key] = []
        try:
            await self._sync(key)
        finally:
            seen = self._syncing.pop(key)
            if not all([self.expectations.observed(key, slice_) for slice_ in seen]):  # a list: forget each of ours
                self.queue.add(key)

    async def _sync(self, key: str) -> None:
        raise NotImplementedError

    async def _write(self, key: str, plan: Plan) -> None:
        """Creates, then updates, then deletes: endpoints appear in their new slices before old ones go."""
        namespace = key.split("/", 1)[0]
        for obj in plan.create:
            try:
                created = await self.client.create(SLICES, namespace, obj)
            except errors.ApiError as err:
                if errors.is_namespace_terminating(err):
                    return  # as upstream: creates keep failing there until the namespace is gone; drop the work
                raise
            self.expectations.wrote(key, created)
        for obj in plan.update:
            self.expectations.wrote(key, await self.client.update(SLICES, namespace, obj))
        for obj in plan.delete:
            name = obj["metadata"]["name"]
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(SLICES, namespace, name)
            self.expectations.deleted(key, name)
        if plan:
            log.debug("%s: %d created, %d updated, %d deleted", key, *map(len, (plan.create, plan.update, plan.delete)))


class EndpointSliceController(SliceWriter):
    """Keeps every selector Service's EndpointSlices equal to its pods. `idle()` tells tests and benchmarks when
    everything observed so far has been reconciled."""

    def __init__(
        self,
        ctx: ControllerContext,
        *,
        max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
        workers: int = WORKERS,
    ) -> None:
        if not 1 <= max_endpoints_per_slice <= 1000:
            raise ValueError(f"max endpoints per slice must be between 1 and 1000, not {max_endpoints_per_slice}")
        super().__init__(ctx)
        self.max_endpoints = max_endpoints_per_slice
        self.workers = workers
        self.triggers = TriggerTimes()
        self._started = False  # workers running: before that, every Service is queued anyway (by its own on_add)
        informers = ctx.informers
        self.services = informers.informer(SERVICES)
        self.pods = informers.informer(PODS)
        self.nodes = informers.informer(NODES)
        self.slices = informers.informer(SLICES, label_selector=f"{LABEL_MANAGED_BY}={CONTROLLER_NAME}")

    async def run(self) -> None:
        ensure_index(self.services.store, podsel.SERVICE_SELECTOR_INDEX, podsel.service_selector_index)
        ensure_index(self.pods.store, podsel.POD_LABEL_INDEX, podsel.pod_label_index)
        ensure_index(self.pods.store, BY_NODE, _node_index)
        ensure_index(self.slices.store, BY_SERVICE, service_index)
        self._register()
        await run_controller(
            self.ctx.informers,
            (self.services, self.pods, self.nodes, self.slices),
            Loop(self.queue, self.reconcile, workers=self.workers),
            when_synced=self._synced,
        )

    def _synced(self) -> None:
        self._started = True

    def idle(self) -> bool:
        """Every informer synced and no key queued or being reconciled (keys waiting on a timer do not count)."""
        synced = all(i.synced.is_set() for i in (self.services, self.pods, self.nodes, self.slices))
        return synced and len(self.queue) == 0 and self.in_flight == 0

    # ---- events → keys -----------------------------------------------------------------------------------------

    def _register(self) -> None:
        self.services.add_handler(
            on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new), on_delete=self._enqueue
        )
        self.pods.add_handler(on_add=self._pod_event, on_update=self._pod_update, on_delete=self._pod_event)
        self.nodes.add_handler(on_add=self._node_event, on_update=self._node_update, on_delete=self._node_event)
        self.slices.add_handler(
            on_add=self._slice_event, on_update=lambda _old, new: self._slice_event(new), on_delete=self._slice_gone
        )

    def _enqueue(self, obj: Object) -> None:
        self.queue.add(object_key(obj))

    def _services_of(self, pod: Object) -> set[str]:
        return podsel.services_of(self.services.store, pod)

    def _pod_event(self, pod: Object) -> None:
        if not self._started:  # the initial list of every pod would only queue Services already queued
            return
        for key in self._services_of(pod):
            self.queue.add(key)

    def _pod_update(self, old: Object, new: Object) -> None:
        if not self._started or (podsel.endpoint_view(old) == podsel.endpoint_view(new) and old is not new):
            return
        for key in self._services_of(old) | self._services_of(new):
            self.queue.add(key)

    def _node_event(self, node: Object) -> None:
        if not self._started:
            return
        for pod in self.pods.store.by_index(BY_NODE, node["metadata"]["name"]):
            self._pod_event(pod)

    def _node_update(self, old: Object, new: Object) -> None:
        if _zone_label(old) != _zone_label(new) or old is new:
            self._node_event(new)

    async def _sync(self, key: str) -> None:
        cached = {s["metadata"]["name"]: s for s in self.slices.store.by_index(BY_SERVICE, key)}
        if self.expectations.stale(key, cached):
            self.queue.add_after(key, STALE_RETRY)
            return
        live = [s for s in cached.values() if not s["metadata"].get("deletionTimestamp")]
        svc = self.services.store.get(key)
        if svc is None:
            self.triggers.forget(key)
            await self._apply(key, None, Plan(delete=live))
            return
        if not podsel.selects_pods(svc):
            return  # selectorless: slices come from users or the mirroring controller; ExternalName: none
        pods = self._selected_pods(svc)
        plan = plan_service(
            live,
            desired_groups(svc, pods, self._zone),
            slice_template(svc, _stamp(self.triggers.observe(key, svc, pods))),
            address_types=podsel.service_families(svc),
            max_endpoints=self.max_endpoints,
        )
        if svc["metadata"].get("deletionTimestamp"):
            plan.create.clear()  # the Service is going away: replacing its slices now would only race their deletion
        await self._apply(key, svc, plan)

    def _selected_pods(self, svc: Object) -> list[Object]:
        namespace = svc["metadata"].get("namespace", "")
        values = podsel.service_selector_index(svc)
        if values == [f"{namespace}/"]:
            candidates = self.pods.store.by_index("namespace", namespace)
        else:
            candidates = min((self.pods.store.by_index(podsel.POD_LABEL_INDEX, v) for v in values), key=len)
        return [pod for pod in candidates if podsel.selected(svc, pod)]

    def _zone(self, node_name: str) -> str | None:
        node = self.nodes.store.get(node_name)
        return _zone_label(node) if node is not None else None

    async def _apply(self, key: str, svc: Object | None, plan: Plan) -> None:
        try:
            await self._write(key, plan)
        except errors.ApiError as err:
            if svc is not None and not isinstance(err, errors.Conflict):
                message = f"Error updating Endpoint Slices for Service {key}: {err}"
                await record_event(
                    self.client,
                    svc,
                    type_="Warning",
                    reason="FailedToUpdateEndpointSlices",
                    message=message,
                    component=COMPONENT,
                )
            raise
