"""Repair loops: rebuild the allocation state from the Services, as upstream's ClusterIP and NodePort repair
controllers do, at start-up and every `--repair-interval`.

One pass reads every Service and every allocation key at one etcd revision (a consistent snapshot), then:
- a value a Service uses but no key records is marked (Warning `ClusterIPNotAllocated` / `PortNotAllocated`);
- a value two Services use is reported on the one that does not hold the record (`…AlreadyAllocated`), and a value
  outside the range is reported (`ClusterIPOutOfRange` / `PortOutOfRange`): never silently changed;
- a key no Service uses is released only after it was found unused on 3 consecutive passes (upstream's leak grace),
  with a delete conditioned on the key not having changed since.
Since Services and their allocations commit in one transaction here, repairs are only needed after someone edits
etcd directly (or restores a backup); the loop is the safety net upstream's design makes a necessity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from tinykube.apiserver.allocators.index import PREFIX, Holder
from tinykube.apiserver.allocators.services import ServicePools, cluster_ips_of, family_of, ingress_ips_of
from tinykube.store.errors import KeyExists, KeyNotFound, RevisionConflict, StoreError
from tinykube.store.etcd import EtcdStore, KeyValue

log = logging.getLogger(__name__)

LEAK_PASSES = 3  # a key unused on this many consecutive passes is released
IP_COMPONENT, IP_ACTION = "ipallocator-repair-controller", "ClusterIPAllocation"
PORT_COMPONENT, PORT_ACTION = "portallocator-repair-controller", "PortAllocation"
_RECREATE = "please recreate service"

Warn = Callable[[dict[str, Any], str, str, str, str], None]  # (service, reason, message, component, action)


@dataclass
class PassReport:
    marked: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    suspected: list[str] = field(default_factory=list)  # unused keys still in their grace period
    reported: list[tuple[str, str]] = field(default_factory=list)  # (reason, message)


@dataclass
class _Use:
    """One Service's use of one value of a pool."""

    key: str
    value: str
    svc: dict[str, Any]


class Repair:
    def __init__(self, store: EtcdStore, pools: ServicePools, warn: Warn) -> None:
        self.store = store
        self.pools = pools
        self.warn = warn
        self.unused_passes: dict[str, tuple[int, int]] = {}  # key -> (consecutive unused passes, mod revision)

    async def run_forever(self, interval: float) -> None:
        while True:
            try:
                await self.run_once()
            except StoreError as err:
                log.warning("allocation repair pass failed: %s", err)
            await asyncio.sleep(interval)

    async def run_once(self) -> PassReport:
        revision = await self.store.revision()
        services = [
            orjson.loads(kv.value) for kv in (await self.store.scan("services/specs/", revision=revision)).items
        ]
        stored = {kv.key: kv for kv in (await self.store.scan(PREFIX, revision=revision)).items}
        report = PassReport()
        uses = [*self._ip_uses(services, report), *self._port_uses(services, report), *self._lb_uses(services)]
        used = await self._reconcile(uses, stored, report)
        await self._collect_leaks(stored, used, report)
        return report

    # ---- what the Services use -------------------------------------------------------------------------------

    def _report(self, report: PassReport, svc: dict[str, Any], reason: str, message: str, port: bool) -> None:
        report.reported.append((reason, message))
        component, action = (PORT_COMPONENT, PORT_ACTION) if port else (IP_COMPONENT, IP_ACTION)
        self.warn(svc, reason, message, component, action)

    def _ip_uses(self, services: list[dict[str, Any]], report: PassReport) -> Iterator[_Use]:
        for svc in services:
            for ip in cluster_ips_of(svc):
                try:
                    family = family_of(ip)
                except ValueError:
                    message = f"Cluster IP {ip} is not a valid IP; {_RECREATE}"
                    self._report(report, svc, "ClusterIPNotValid", message, False)
                    continue
                pool = self.pools.for_family(family)
                if pool is None:
                    gone = "is of ip family that is no longer configured on cluster"
                    message = f"Cluster IP {ip}({family}) {gone}; {_RECREATE}"
                    self._report(report, svc, "ClusterIPNotValid", message, False)
                elif not pool.contains(ip):
                    message = f"Cluster IP [{family}]:{ip} is not within the service CIDR {pool.range}; {_RECREATE}"
                    self._report(report, svc, "ClusterIPOutOfRange", message, False)
                else:
                    value = pool.range.canonical(ip)
                    yield _Use(pool.key(value), value, svc)

    def _port_uses(self, services: list[dict[str, Any]], report: PassReport) -> Iterator[_Use]:
        pool = self.pools.node_ports
        for svc in services:
            for port in _collect_node_ports(svc):
                if not pool.contains(str(port)):
                    message = f"Port {port} is not within the port range {pool.range}; please recreate service"
                    self._report(report, svc, "PortOutOfRange", message, True)
                else:
                    yield _Use(pool.key(str(port)), str(port), svc)

    def _lb_uses(self, services: list[dict[str, Any]]) -> Iterator[_Use]:
        pool = self.pools.load_balancer_ips
        if pool is None:
            return
        for svc in services:
            for ip in ingress_ips_of(svc):
                if pool.contains(ip):
                    yield _Use(pool.key(pool.range.canonical(ip)), ip, svc)

    # ---- reconcile -------------------------------------------------------------------------------------------

    async def _reconcile(self, uses: list[_Use], stored: dict[str, KeyValue], report: PassReport) -> set[str]:
        """Mark what is missing and report duplicates; returns the keys in use."""
        by_key: dict[str, list[_Use]] = {}
        for use in uses:
            by_key.setdefault(use.key, []).append(use)
        for key, users in by_key.items():
            kv = stored.get(key)
            holder = Holder.decode(kv.value) if kv else None
            # The Service the record names keeps the value; without a record, the first one listed does.
            owner = next((u for u in users if holder and u.svc["metadata"].get("uid") == holder.uid), users[0])
            port = key.startswith(self.pools.node_ports.key(""))
            for other in users:
                if other is owner:
                    continue
                reason = "PortAlreadyAllocated" if port else "ClusterIPAlreadyAllocated"
                self._report(report, other.svc, reason, self._duplicate_message(key, other.value), port)
            if kv is None:
                await self._mark(key, owner, report, port)
        return set(by_key)

    def _duplicate_message(self, key: str, value: str) -> str:
        if key.startswith(self.pools.node_ports.key("")):
            return f"Port {value} was assigned to multiple services; please recreate service"
        if self.pools.load_balancer_ips and key.startswith(self.pools.load_balancer_ips.key("")):
            return f"Load balancer IP {value} was assigned to multiple services; please recreate service"
        return f"Cluster IP [{family_of(value)}]:{value} was assigned to multiple services; please recreate service"

    async def _mark(self, key: str, use: _Use, report: PassReport, port: bool) -> None:
        meta = use.svc["metadata"]
        holder = Holder(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))
        try:
            await self.store.create(key, holder.encode())
        except KeyExists:
            return  # allocated meanwhile (by this Service's own write, or another): the next pass looks again
        report.marked.append(key)
        if port:
            self._report(report, use.svc, "PortNotAllocated", f"Port {use.value} is not allocated; repairing", True)
        elif self.pools.load_balancer_ips and key.startswith(self.pools.load_balancer_ips.key("")):
            message = f"Load balancer IP {use.value} is not allocated; repairing"
            self._report(report, use.svc, "LoadBalancerIPNotAllocated", message, False)
        else:
            message = f"Cluster IP [{family_of(use.value)}]:{use.value} is not allocated; repairing"
            self._report(report, use.svc, "ClusterIPNotAllocated", message, False)

    async def _collect_leaks(self, stored: dict[str, KeyValue], used: set[str], report: PassReport) -> None:
        for key in [k for k in self.unused_passes if k in used or k not in stored]:
            del self.unused_passes[key]
        for key, kv in stored.items():
            if key in used or not self._managed(key):
                continue
            passes, revision = self.unused_passes.get(key, (0, kv.mod_revision))
            passes = passes + 1 if revision == kv.mod_revision else 1
            if passes < LEAK_PASSES:
                if passes == 1:
                    log.info("the allocation %s may have leaked: flagging for later clean up", key)
                self.unused_passes[key] = (passes, kv.mod_revision)
                report.suspected.append(key)
                continue
            log.warning("the allocation %s appears to have leaked: cleaning up", key)
            self.unused_passes.pop(key, None)
            try:
                await self.store.delete(key, expected_revision=kv.mod_revision)
                report.released.append(key)
            except (KeyNotFound, RevisionConflict):
                pass  # released or re-allocated meanwhile

    def _managed(self, key: str) -> bool:
        return any(key.startswith(pool.key("")) for pool in self.pools.all())


def _collect_node_ports(svc: dict[str, Any]) -> list[int]:
    """As upstream's collectServiceNodePorts: a nodePort on TCP and UDP counts once, twice on one protocol counts
    twice (and so shows up as a duplicate), plus the health-check port."""
    spec = svc.get("spec") or {}
    seen: dict[int, set[str]] = {}
    found: list[int] = []
    for port in spec.get("ports") or []:
        if not isinstance(port, dict) or not isinstance(port.get("nodePort"), int) or not port["nodePort"]:
            continue
        number, protocol = port["nodePort"], str(port.get("protocol", "TCP"))
        if number in seen and protocol not in seen[number]:
            seen[number].add(protocol)
            continue
        seen.setdefault(number, set()).add(protocol)
        found.append(number)
    hc = spec.get("healthCheckNodePort")
    if isinstance(hc, int) and hc:
        found.append(hc)
    return found
