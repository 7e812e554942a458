"""The Endpoints controller: one v1 Endpoints object per selector Service, listing the pods it selects
(upstream's `pkg/controller/endpoint`, reference §5.2).

    Services ─┐                        per-Service key "ns/name"
    Pods ─────┼─▶ handlers ─▶ WorkQueue ─────────────────────────▶ sync: desired subsets ─▶ PUT (creates) / DELETE
    Endpoints ┘   (pod events enqueue the Services selecting the pod, before and after the change)

A sync is level-triggered: it reads the Service, its pods and the current Endpoints from the informer caches and
computes the whole object again. It writes only when the subsets, the labels or the over-capacity annotation differ
from what is stored, so a restarted controller (whose trigger-time memory is empty) rewrites nothing that is right.
Services without a selector, and ExternalName Services, are left alone: their Endpoints are the user's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from tinykube.api import errors
from tinykube.api.meta import resource_version_number
from tinykube.api.resources import ResourceInfo, by_path
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.pods import (
    POD_LABEL_INDEX,
    SERVICE_SELECTOR_INDEX,
    Object,
    endpoint_view,
    find_port,
    headless,
    pod_ips,
    pod_label_index,
    pod_ready,
    selected,
    selects_pods,
    service_families,
    service_selector_index,
    services_of,
    should_be_in_endpoints,
    should_set_hostname,
)
from tinykube.controllers.triggers import TRIGGER_TIME, TriggerTimes, rfc3339nano

log = logging.getLogger(__name__)

HEADLESS_LABEL = "service.kubernetes.io/headless"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
LEADER = "control-plane.alpha.kubernetes.io/leader"
MAX_CAPACITY = 1000  # addresses (ready + not ready) in one Endpoints object
WORKERS = 16  # upstream runs 5 (--concurrent-endpoint-syncs); more writes in flight share etcd's fsyncs
COMPONENT = "endpoint-controller"


def _core(plural: str) -> ResourceInfo:
    resource = by_path("", "v1", plural)
    assert resource is not None
    return resource


SERVICES, PODS, ENDPOINTS, EVENTS = (_core(plural) for plural in ("services", "pods", "endpoints", "events"))

AddressKey = tuple[str, str]  # (ip, targetRef uid): the same IP from two pods stays two addresses
PortKey = tuple[str, int, str, str]  # (name, port, protocol, appProtocol or "")


# ---- desired subsets (pure) -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodEntry:
    """One pod's contribution: its address, whether it is ready, and the ports it resolved."""

    address: Object
    ready: bool
    ports: tuple[PortKey, ...]


def pod_address(pod: Object, svc: Object) -> Object | None:
    """The pod's address in the Service's (first) family; None when the pod has no IP of that family."""
    ips = pod_ips(pod, service_families(svc)[0])
    if not ips:
        return None
    meta, spec = pod["metadata"], pod.get("spec") or {}
    address: Object = {"ip": ips[0]}
    if should_set_hostname(pod, svc):
        address["hostname"] = spec["hostname"]
    address["nodeName"] = spec.get("nodeName") or ""  # upstream always sets it, "" for an unscheduled pod
    address["targetRef"] = {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}
    return address


def resolved_ports(pod: Object, svc: Object) -> tuple[PortKey, ...]:
    """The Service's ports as this pod serves them; ports whose named targetPort the pod lacks are left out."""
    ports: list[PortKey] = []
    for svc_port in (svc.get("spec") or {}).get("ports") or []:
        number = find_port(pod, svc_port)
        if number is not None:
            name, protocol = svc_port.get("name") or "", svc_port.get("protocol") or "TCP"
            ports.append((name, number, protocol, svc_port.get("appProtocol") or ""))
    return tuple(ports)


def pod_entries(svc: Object, pods: Iterable[Object]) -> list[PodEntry]:
    """The selected pods that belong in the Endpoints: eligible (terminating ones only when not-ready addresses are
    published), with an IP of the Service's family, serving at least one of its ports (or it is portless headless)."""
    spec = svc.get("spec") or {}
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    portless_headless = not spec.get("ports") and spec.get("clusterIP") == "None"
    entries = []
    for pod in pods:
        if not should_be_in_endpoints(pod, include_terminating=publish_not_ready):
            continue
        address = pod_address(pod, svc)
        ports = resolved_ports(pod, svc)
        if address is not None and (ports or portless_headless):
            entries.append(PodEntry(address, publish_not_ready or pod_ready(pod), ports))
    return entries


def repack(entries: Iterable[PodEntry]) -> list[Object]:
    """Subsets as upstream's RepackSubsets makes them: ports offered by the same addresses (with the same readiness)
    share a subset. A pod that resolved no ports (headless Service without ports) still gets a subset."""
    addresses: dict[AddressKey, Object] = {}
    by_port: dict[PortKey | None, dict[AddressKey, bool]] = {}  # None: the "no port" sentinel
    for entry in entries:
        key = (entry.address["ip"], entry.address["targetRef"]["uid"])
        addresses.setdefault(key, entry.address)
        for port in entry.ports or (None,):
            readiness = by_port.setdefault(port, {})
            readiness[key] = readiness.get(key, True) and entry.ready  # not ready for any port: not ready
    groups: dict[Members, list[PortKey]] = {}
    for port, readiness in by_port.items():
        ports = groups.setdefault(frozenset(readiness.items()), [])
        if port is not None:
            ports.append(port)
    subsets = [_subset(addresses, members, ports) for members, ports in groups.items()]
    return sorted(subsets, key=_json)  # upstream orders subsets by a hash; any fixed order will do


Members = frozenset[tuple[AddressKey, bool]]


def _subset(addresses: dict[AddressKey, Object], members: Members, ports: list[PortKey]) -> Object:
    ready = sorted(key for key, is_ready in members if is_ready)  # by IP string, then pod UID, as upstream
    not_ready = sorted(key for key, is_ready in members if not is_ready)
    subset: Object = {}
    if ready:
        subset["addresses"] = [addresses[key] for key in ready]
    if not_ready:
        subset["notReadyAddresses"] = [addresses[key] for key in not_ready]
    if ports:
        subset["ports"] = [_port(port) for port in sorted(ports)]
    return subset


def _port(key: PortKey) -> Object:
    name, number, protocol, app_protocol = key
    port: Object = {"name": name} if name else {}
    port |= {"port": number, "protocol": protocol}
    if app_protocol:
        port["appProtocol"] = app_protocol
    return port


def truncate(subsets: list[Object]) -> tuple[list[Object], bool]:
    """Cap the object at MAX_CAPACITY addresses, as upstream: with more than that many ready addresses keep only
    ready ones, else keep every ready one and fill up with not-ready ones; each subset keeps its proportional share
    (rounded up, capped by what is left)."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_CAPACITY:
        return subsets, False
    if ready > MAX_CAPACITY:
        trimmed, budget, total = "addresses", MAX_CAPACITY, ready
    else:
        trimmed, budget, total = "notReadyAddresses", MAX_CAPACITY - ready, not_ready
    left, kept = budget, []
    for subset in subsets:
        share = min(math.ceil(len(subset.get(trimmed) or []) / total * budget), left)
        subset = {**subset, trimmed: (subset.get(trimmed) or [])[:share]}
        if trimmed == "addresses":
            subset.pop("notReadyAddresses", None)
        left -= len(subset[trimmed])
        subset = {name: value for name, value in subset.items() if value}
        if "addresses" in subset or "notReadyAddresses" in subset:  # a subset without addresses would be invalid
            kept.append(subset)
    return kept, True


def endpoints_labels(svc: Object) -> dict[str, str]:
    """The Service's labels, plus the headless marker for a Service without a cluster IP."""
    labels = dict(svc["metadata"].get("labels") or {})
    if headless(svc):
        labels[HEADLESS_LABEL] = ""
    else:
        labels.pop(HEADLESS_LABEL, None)
    return labels


# ---- comparing and building the object (pure) ----------------------------------------------------------------


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _canonical(subsets: Any) -> list[bytes]:
    """Subsets in an order-free form, without targetRef.resourceVersion (a pod's unrelated updates change it)."""
    return sorted(
        _json({name: sorted(map(_canonical_item, items)) for name, items in s.items()}) for s in subsets or []
    )


def _canonical_item(item: Object) -> str:
    if isinstance(item.get("targetRef"), dict) and "resourceVersion" in item["targetRef"]:
        item = {**item, "targetRef": {k: v for k, v in item["targetRef"].items() if k != "resourceVersion"}}
    return _json(item).decode()


def up_to_date(current: Object, desired: Object) -> bool:
    """Whether writing `desired` would change anything that matters (the trigger time alone does not)."""
    old, new = current["metadata"], desired["metadata"]
    return (
        _canonical(current.get("subsets")) == _canonical(desired.get("subsets"))
        and (old.get("labels") or {}) == (new.get("labels") or {})
        and (old.get("annotations") or {}).get(OVER_CAPACITY) == (new.get("annotations") or {}).get(OVER_CAPACITY)
    )


def build_endpoints(
    svc: Object, current: Object | None, subsets: list[Object], *, truncated: bool, trigger: datetime | None
) -> Object:
    """The Endpoints to write: the current object's metadata (so other annotations survive) with new content."""
    meta = svc["metadata"]
    metadata = dict(current["metadata"]) if current else {"name": meta["name"], "namespace": meta["namespace"]}
    annotations = dict(metadata.get("annotations") or {})
    _set_or_drop(annotations, TRIGGER_TIME, rfc3339nano(trigger) if trigger else None)
    _set_or_drop(annotations, OVER_CAPACITY, "truncated" if truncated else None)
    metadata["labels"] = endpoints_labels(svc)
    metadata["annotations"] = annotations
    endpoints: Object = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
    if subsets:
        endpoints["subsets"] = subsets
    return endpoints


def _set_or_drop(mapping: dict[str, str], key: str, value: str | None) -> None:
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value


# ---- the controller --------------------------------------------------------------------------------------------


def _newer(obj: Object, than: Object) -> bool:
    return resource_version_number(obj) > resource_version_number(than)


class EndpointsController:
    def __init__(self, ctx: ControllerContext, *, namespace: str = "") -> None:
        """`namespace` limits the controller to one namespace (all by default)."""
        self.ctx = ctx
        self.services = ctx.informers.informer(SERVICES, namespace=namespace)
        self.pods = ctx.informers.informer(PODS, namespace=namespace)
        self.endpoints = ctx.informers.informer(ENDPOINTS, namespace=namespace)
        self.queue: WorkQueue[str] = WorkQueue()
        self.trigger_times = TriggerTimes()
        self._written: dict[str, Object] = {}  # our latest writes, until the Endpoints cache has caught up
        self.started = asyncio.Event()  # set once the caches are synced and every existing object is queued

    async def run(self) -> None:
        self._register()
        await run_controller(
            self.ctx.informers,
            (self.services, self.pods, self.endpoints),
            Loop(self.queue, self.sync, workers=WORKERS),
            when_synced=self._synced,
        )

    def _synced(self) -> None:
        self._enqueue_existing()
        self.started.set()

    def _register(self) -> None:
        with contextlib.suppress(ValueError):  # another instance sharing these informers added it
            self.pods.store.add_index(POD_LABEL_INDEX, pod_label_index)
        with contextlib.suppress(ValueError):
            self.services.store.add_index(SERVICE_SELECTOR_INDEX, service_selector_index)
        self.services.add_handler(
            on_add=self._service_changed,
            on_update=lambda _old, new: self._service_changed(new),
            on_delete=self._service_changed,
        )
        self.pods.add_handler(on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_changed)
        self.endpoints.add_handler(
            on_add=self._endpoints_seen,
            on_update=lambda _old, new: self._endpoints_seen(new),
            on_delete=self._endpoints_deleted,
        )

    def _enqueue_existing(self) -> None:
        """Every Service, and every Endpoints object so that those whose Service is gone get deleted (orphans)."""
        for svc in self.services.store.list():
            self.queue.add(object_key(svc))
        for endpoints in self.endpoints.store.list():
            if LEADER not in (endpoints["metadata"].get("annotations") or {}):
                self.queue.add(object_key(endpoints))

    # ---- event handlers: only enqueue ----

    def _service_changed(self, svc: Object) -> None:
        self.queue.add(object_key(svc))

    def _pod_changed(self, pod: Object) -> None:
        if self.started.is_set():  # before that, every Service is enqueued anyway (`_enqueue_existing`)
            self._enqueue_services_of(pod)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if self.started.is_set() and endpoint_view(old) != endpoint_view(new):
            self._enqueue_services_of(old)  # the Services it leaves (labels changed) …
            self._enqueue_services_of(new)  # … and those it joins

    def _enqueue_services_of(self, pod: Object) -> None:
        for key in services_of(self.services.store, pod):
            self.queue.add(key)

    def _endpoints_deleted(self, endpoints: Object) -> None:
        """Someone deleted the Endpoints of a Service we manage: write it again."""
        key = object_key(endpoints)
        self._written.pop(key, None)
        svc = self.services.store.get(key)
        if svc is not None and selects_pods(svc):
            self.queue.add(key)

    # ---- sync ----

    async def sync(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        svc = self.services.store.get(key)
        if svc is None:
            await self._delete(namespace, name)
            return
        if not selects_pods(svc):
            return
        pods = self._selected_pods(svc)
        trigger = self.trigger_times.observe(key, svc, pods)
        subsets, truncated = truncate(repack(pod_entries(svc, pods)))
        current = self._current(key)
        desired = build_endpoints(svc, current, subsets, truncated=truncated, trigger=trigger)
        if current is not None and up_to_date(current, desired):
            return
        await self._write(key, desired, creating=current is None)

    def _selected_pods(self, svc: Object) -> list[Object]:
        namespace, selector = svc["metadata"]["namespace"], svc["spec"]["selector"]
        if not selector:
            candidates = self.pods.store.by_index("namespace", namespace)
        else:
            buckets = (self.pods.store.by_index(POD_LABEL_INDEX, f"{namespace}/{k}={v}") for k, v in selector.items())
            candidates = min(buckets, key=len)
        return [pod for pod in candidates if selected(svc, pod)]

    def _current(self, key: str) -> Object | None:
        """The stored Endpoints: the cached one, or our own newer write the cache has not seen yet (so that a sync
        right after a write neither writes again nor fails on a stale resourceVersion)."""
        cached, written = self.endpoints.store.get(key), self._written.get(key)
        newer = written is not None and (cached is None or _newer(written, cached))
        return written if newer else cached

    async def _write(self, key: str, endpoints: Object, *, creating: bool) -> None:
        """PUT: it creates the object when absent (Endpoints allow create-on-update)."""
        namespace = endpoints["metadata"]["namespace"]
        try:
            written = await self.ctx.client.update(ENDPOINTS, namespace, endpoints)
        except errors.ApiError as err:
            if creating and isinstance(err, errors.Forbidden) and _namespace_terminating(err):
                return  # creates keep failing there until the namespace is gone: nothing to do
            await self._warn_failed(endpoints, err, creating=creating)
            raise
        cached = self.endpoints.store.get(key)
        if cached is None or _newer(written, cached):  # not so when nothing changed
            self._written[key] = written

    def _endpoints_seen(self, endpoints: Object) -> None:
        """The cache has caught up with our write: forget the write."""
        key = object_key(endpoints)
        written = self._written.get(key)
        if written is not None and resource_version_number(endpoints) >= resource_version_number(written):
            del self._written[key]

    async def _delete(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        self.trigger_times.forget(key)
        self._written.pop(key, None)
        with contextlib.suppress(errors.NotFound):
            await self.ctx.client.delete(ENDPOINTS, namespace, name)

    async def _warn_failed(self, endpoints: Object, err: errors.ApiError, *, creating: bool) -> None:
        """A Warning event on the Endpoints, as upstream records it."""
        key = object_key(endpoints)
        if creating:
            reason, message = "FailedToCreateEndpoint", f"Failed to create endpoint for service {key}: {err}"
        else:
            reason, message = "FailedToUpdateEndpoint", f"Failed to update endpoint {key}: {err}"
        endpoints = {"apiVersion": "v1", "kind": "Endpoints", **endpoints}
        await record_event(
            self.ctx.client, endpoints, type_="Warning", reason=reason, message=message, component=COMPONENT
        )


def _namespace_terminating(err: errors.ApiError) -> bool:
    causes = (err.details or {}).get("causes") or []
    return any(cause.get("reason") == "NamespaceTerminating" for cause in causes)
