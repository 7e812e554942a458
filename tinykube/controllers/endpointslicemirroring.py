"""EndpointSlice mirroring: user-written Endpoints of a selectorless Service, copied into EndpointSlices (upstream's
`pkg/controller/endpointslicemirroring`).

Services without a selector get their endpoints from whoever writes the Endpoints object — a user, an operator,
tinykube's DNS server publishing itself. Consumers that read only EndpointSlices (our proxy and DNS, as upstream's)
would not see them, so this controller mirrors each such Endpoints object into slices: one per (subset ports,
address family), at most `MAX_ENDPOINTS_PER_SUBSET` addresses from each subset, owned by the Endpoints object.

Mirroring stops — and the mirrored slices are deleted — when the Service goes away or gets a selector (the
EndpointSlice controller then publishes the pods), when the Endpoints object is gone, or when it carries the label
`endpointslice.kubernetes.io/skip-mirror: "true"` or the leader-election annotation.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass

from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import object_key
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.endpointslice import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    SERVICES,
    SLICES,
    STALE_RETRY,
    SliceWriter,
    ensure_index,
    owner_reference,
    resource,
    service_index,
)
from tinykube.controllers.slicepacking import Group, GroupKey, Object, Plan, SliceTemplate, plan_mirror, port_key
from tinykube.controllers.triggers import TRIGGER_TIME

log = logging.getLogger(__name__)

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
COMPONENT = "endpointslice-mirroring-controller"
MAX_ENDPOINTS_PER_SUBSET = 1000  # upstream's --mirroring-max-endpoints-per-subset
WORKERS = 5  # upstream's --mirroring-concurrent-service-endpoint-syncs

LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NOT_COPIED_ANNOTATIONS = frozenset({TRIGGER_TIME, LAST_APPLIED})

ENDPOINTS = resource("", "endpoints")
BY_SERVICE = "endpointslicemirroring/service"


# ---- desired state (pure) ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mirror:
    """What an Endpoints object mirrors to, and what could not be mirrored."""

    groups: list[Group]
    invalid: int  # addresses that are not IPs
    skipped: int  # addresses past the per-subset cap


def should_mirror(svc: Object | None, endpoints: Object | None) -> bool:
    if svc is None or endpoints is None:
        return False
    if svc["metadata"].get("deletionTimestamp") or (svc.get("spec") or {}).get("selector") is not None:
        return False
    meta = endpoints["metadata"]
    if (meta.get("labels") or {}).get(LABEL_SKIP_MIRROR) == "true":
        return False
    return LEADER_ANNOTATION not in (meta.get("annotations") or {})


def _ports(subset: Object) -> list[Object]:
    ports: list[Object] = []
    for port in subset.get("ports") or []:
        mirrored: Object = {
            "name": port.get("name", ""),
            "port": port.get("port"),
            "protocol": port.get("protocol", "TCP"),
        }
        if port.get("appProtocol"):
            mirrored["appProtocol"] = port["appProtocol"]
        ports.append(mirrored)
    return ports


def _endpoint(address: Object, ip: str, ready: bool) -> Object:
    endpoint: Object = {"addresses": [ip], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if address.get("targetRef"):
        endpoint["targetRef"] = dict(address["targetRef"])
    if address.get("nodeName"):
        endpoint["nodeName"] = address["nodeName"]
    return endpoint


def _canonical_ip(value: object) -> tuple[str, str] | None:
    """(family, re-stringified IP), or None for anything that is not an IP address."""
    if not isinstance(value, str):
        return None
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return None
    return ("IPv4" if ip.version == 4 else "IPv6"), str(ip)


def mirror_groups(endpoints: Object, max_per_subset: int = MAX_ENDPOINTS_PER_SUBSET) -> Mirror:
    """The slices' content: subsets' addresses by (ports, family); ready addresses first, then not-ready ones, at
    most `max_per_subset` of them per subset."""
    groups: dict[GroupKey, Group] = {}
    invalid = skipped = 0
    for subset in endpoints.get("subsets") or []:
        ports = _ports(subset)
        taken = 0
        for ready, field in ((True, "addresses"), (False, "notReadyAddresses")):
            for address in subset.get(field) or []:
                parsed = _canonical_ip(address.get("ip"))
                if parsed is None:
                    invalid += 1
                    continue
                if taken >= max_per_subset:
                    skipped += 1
                    continue
                taken += 1
                family, ip = parsed
                group = groups.setdefault((family, port_key(ports)), Group(family, ports, []))
                group.endpoints.append(_endpoint(address, ip, ready))
    return Mirror(list(groups.values()), invalid, skipped)


def mirror_template(endpoints: Object) -> SliceTemplate:
    meta = endpoints["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in (LABEL_MANAGED_BY, LABEL_SERVICE_NAME)}
    labels[LABEL_SERVICE_NAME] = meta["name"]
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in NOT_COPIED_ANNOTATIONS}
    return SliceTemplate(
        namespace=meta.get("namespace", ""),
        generate_name=f"{meta['name']}-",
        labels=labels,
        owner=owner_reference(endpoints, "Endpoints"),
        annotations=annotations,
    )


# ---- the controller --------------------------------------------------------------------------------------------


class EndpointSliceMirroringController(SliceWriter):
    def __init__(
        self,
        ctx: ControllerContext,
        *,
        max_endpoints_per_subset: int = MAX_ENDPOINTS_PER_SUBSET,
        workers: int = WORKERS,
    ) -> None:
        super().__init__(ctx)
        self.max_per_subset = max_endpoints_per_subset
        self.workers = workers
        self.services = ctx.informers.informer(SERVICES)
        self.endpoints = ctx.informers.informer(ENDPOINTS)
        self.slices = ctx.informers.informer(SLICES, label_selector=f"{LABEL_MANAGED_BY}={CONTROLLER_NAME}")

    async def run(self) -> None:
        ensure_index(self.slices.store, BY_SERVICE, service_index)
        enqueue = self._enqueue
        self.services.add_handler(on_add=enqueue, on_update=lambda _old, new: enqueue(new), on_delete=enqueue)
        self.endpoints.add_handler(on_add=enqueue, on_update=lambda _old, new: enqueue(new), on_delete=enqueue)
        self.slices.add_handler(
            on_add=self._slice_event, on_update=lambda _old, new: self._slice_event(new), on_delete=self._slice_gone
        )
        await run_controller(
            self.ctx.informers,
            (self.services, self.endpoints, self.slices),
            Loop(self.queue, self.reconcile, workers=self.workers),
        )

    def idle(self) -> bool:
        synced = all(i.synced.is_set() for i in (self.services, self.endpoints, self.slices))
        return synced and len(self.queue) == 0 and self.in_flight == 0

    def _enqueue(self, obj: Object) -> None:
        self.queue.add(object_key(obj))

    async def _sync(self, key: str) -> None:
        cached = {s["metadata"]["name"]: s for s in self.slices.store.by_index(BY_SERVICE, key)}
        if self.expectations.stale(key, cached):
            self.queue.add_after(key, STALE_RETRY)
            return
        live = [s for s in cached.values() if not s["metadata"].get("deletionTimestamp")]
        endpoints = self.endpoints.store.get(key)
        if endpoints is None or not should_mirror(self.services.store.get(key), endpoints):
            await self._write(key, Plan(delete=live))
            return
        mirror = mirror_groups(endpoints, self.max_per_subset)
        await self._write(key, plan_mirror(live, mirror.groups, mirror_template(endpoints)))
        await self._report(endpoints, mirror)

    async def _report(self, endpoints: Object, mirror: Mirror) -> None:
        if mirror.invalid:
            message = f"Skipped {mirror.invalid} invalid IP addresses when mirroring to EndpointSlices"
            await self._warn(endpoints, "InvalidIPAddress", message)
        if mirror.skipped:
            message = (
                f"A max of {self.max_per_subset} addresses can be mirrored to EndpointSlices per Endpoints subset. "
                f"{mirror.skipped} addresses were skipped"
            )
            await self._warn(endpoints, "TooManyAddressesToMirror", message)

    async def _warn(self, endpoints: Object, reason: str, message: str) -> None:
        await record_event(self.client, endpoints, type_="Warning", reason=reason, message=message, component=COMPONENT)
