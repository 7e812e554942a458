"""What a Service write takes from the cluster-IP, node-port and load-balancer pools, and what it gives back.

Upstream allocates into a bitmap first and writes the Service second (reverting on failure), so a crash in
between leaks until a repair pass. Here the planner only *decides*: the chosen values become claims that commit
in the Service's own etcd transaction, so a Service and its allocations exist together or not at all.

The decisions follow upstream's service REST storage (`storage/alloc.go`): ipFamily/ipFamilyPolicy inference,
old-client friendliness on update (`patchAllocatedValues`, `normalizeClusterIPs`), type transitions
(`dropTypeDependentFields`), TCP and UDP on one port number sharing a nodePort, and the health-check nodePort.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError, invalid
from tinykube.apiserver.allocators.index import AllocationIndex, Holder
from tinykube.apiserver.allocators.pool import Pool
from tinykube.apiserver.allocators.ranges import IPRange, RangeError, RangeFull
from tinykube.apiserver.kinds.core.service_validation import (
    externally_accessible,
    is_headless,
    needs_health_check,
    validate_cluster_ips_related,
)
from tinykube.apiserver.registry.generic import Allocation
from tinykube.store.etcd import Claims

DRY_RUN_NODE_PORT = 32769  # upstream's dry-run allocator answers with a port outside any real range


def needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_ports(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def allocates_node_ports(spec: dict[str, Any]) -> bool:
    """Whether unset nodePorts are filled in; user-given ones are always honoured for NodePort/LoadBalancer."""
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def family_of(ip: str) -> str:
    return "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in spec.get("ports") or [] if isinstance(p, dict)]


def node_ports_of(svc: dict[str, Any]) -> list[int]:
    """Node ports a Service holds, each once (TCP and UDP share a number), with its health-check port."""
    spec = svc.get("spec") or {}
    held = {_int(p.get("nodePort")) for p in _ports(spec)} | {_int(spec.get("healthCheckNodePort"))}
    return sorted(held - {0})


def cluster_ips_of(svc: dict[str, Any]) -> list[str]:
    spec = svc.get("spec") or {}
    return [ip for ip in spec.get("clusterIPs") or [] if isinstance(ip, str) and ip not in ("", "None")]


def ingress_ips_of(svc: dict[str, Any]) -> list[str]:
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [i["ip"] for i in ingress if isinstance(i, dict) and isinstance(i.get("ip"), str)]


def _invalid(svc: dict[str, Any], errs: list[FieldError]) -> errors.Invalid:
    return errors.invalid_object("Service", svc["metadata"].get("name", ""), errs)


@dataclass
class ServicePools:
    cluster_ips: list[Pool]  # one per configured family, the primary first
    node_ports: Pool
    load_balancer_ips: Pool | None = None
    # Called after a write committed, with the Service and (reason, message) warnings worth an Event.
    warn: Callable[[dict[str, Any], str, str], None] = lambda svc, reason, message: None
    # Called after a write gave a load-balancer IP back, so Services waiting for one can be served.
    load_balancer_ip_freed: Callable[[], None] = lambda: None

    def for_family(self, family: str) -> Pool | None:
        return next((p for p in self.cluster_ips if p.range.family == family), None)

    @property
    def dual_stack(self) -> bool:
        return len(self.cluster_ips) > 1

    @property
    def primary_family(self) -> str:
        return self.cluster_ips[0].range.family

    def all(self) -> list[Pool]:
        return [*self.cluster_ips, self.node_ports, *([self.load_balancer_ips] if self.load_balancer_ips else [])]

    def plan(self, svc: dict[str, Any], old: dict[str, Any] | None, dry_run: bool) -> Allocation:
        return _Plan(self, svc, old, dry_run).run()

    @property
    def index(self) -> AllocationIndex:
        return self.node_ports.index

    def release(self, svc: dict[str, Any]) -> Allocation:
        """Everything a deleted Service holds (unless the index says another object holds it), and its
        Endpoints, as upstream's registry deletes them with the Service."""
        meta = svc["metadata"]
        keys = [self.held_key(svc, pool, ip) for ip in cluster_ips_of(svc) if (pool := self.pool_for_ip(ip))]
        keys += [self.held_key(svc, self.node_ports, str(port)) for port in node_ports_of(svc)]
        if self.load_balancer_ips:
            keys += [self.held_key(svc, self.load_balancer_ips, ip) for ip in ingress_ips_of(svc)]
        endpoints = f"endpoints/{meta.get('namespace', '')}/{meta.get('name', '')}"
        released = tuple(k for k in keys if k)
        return Allocation(
            Claims(release=(*released, endpoints)),
            committed=lambda revision: self.committed({}, released, revision),
        )

    def committed(self, taken: dict[str, bytes], released: tuple[str, ...], revision: int) -> None:
        self.index.note_committed(taken, released, revision)
        if self.load_balancer_ips and any(k.startswith(self.load_balancer_ips.key("")) for k in released):
            self.load_balancer_ip_freed()

    def pool_for_ip(self, ip: str) -> Pool | None:
        try:
            return self.for_family(family_of(ip))
        except ValueError:
            return None

    @staticmethod
    def held_key(svc: dict[str, Any], pool: Pool, value: str) -> str:
        holder = pool.holder(value)
        uid = svc["metadata"].get("uid", "")
        return pool.key(value) if holder is None or holder.uid in ("", uid) else ""


@dataclass
class _Plan:
    """One write's allocation decisions; `run` mutates `svc` into its allocated form."""

    pools: ServicePools
    svc: dict[str, Any]
    old: dict[str, Any] | None
    dry_run: bool
    take: dict[str, bytes] = field(default_factory=dict)
    release: list[str] = field(default_factory=list)
    conflicts: dict[str, errors.ApiError] = field(default_factory=dict)
    picked: list[tuple[Pool, str]] = field(default_factory=list)
    counted: list[tuple[Pool, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.svc.setdefault("spec", {})
        return spec

    @property
    def old_spec(self) -> dict[str, Any]:
        return (self.old or {}).get("spec") or {}

    def run(self) -> Allocation:
        try:
            if self.old is not None:
                self._patch_allocated_values()
                self._drop_type_dependent_fields()
            self._normalize_cluster_ips()
            if needs_cluster_ip(self.spec):
                self._init_ip_families()
                self._allocate_cluster_ips()
            else:
                self._release_all(cluster_ips_of(self.old or {}), self.pools.pool_for_ip)
            self._allocate_node_ports()
            self._allocate_health_check_port()
            self._allocate_load_balancer_ip()
        except BaseException:
            self._unreserve()
            raise
        return self._allocation()

    # ---- the pieces of one write's decision, in upstream's order --------------------------------------------

    def _patch_allocated_values(self) -> None:
        """Old clients send updates without the allocated values: keep what the Service already has."""
        spec, old = self.spec, self.old_spec
        if needs_cluster_ip(old) and needs_cluster_ip(spec):
            if not spec.get("clusterIP"):
                spec["clusterIP"] = old.get("clusterIP")
            if not spec.get("clusterIPs") and old.get("clusterIPs") and spec.get("clusterIP") == old.get("clusterIP"):
                spec["clusterIPs"] = list(old["clusterIPs"])
        if needs_node_ports(old) and needs_node_ports(spec):
            used_old = {_int(p.get("nodePort")) for p in _ports(old)} - {0}
            used_new = {_int(p.get("nodePort")) for p in _ports(spec)} - {0}
            keep = used_old & used_new
            by_name = {p.get("name", ""): _int(p.get("nodePort")) for p in _ports(old)}
            for port in _ports(spec):
                previous = by_name.get(port.get("name", ""), 0)
                if not _int(port.get("nodePort")) and previous and previous not in keep:
                    port["nodePort"] = previous
        if needs_health_check(self.old or {}) and needs_health_check(self.svc) and not spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old.get("healthCheckNodePort")

    def _drop_type_dependent_fields(self) -> None:
        """Fields that only make sense for the old type go, unless the user changed them in this very update."""
        spec, old = self.spec, self.old_spec
        if not needs_cluster_ip(spec) and needs_cluster_ip(old):
            if spec.get("clusterIP") == old.get("clusterIP") and spec.get("clusterIPs") == old.get("clusterIPs"):
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            if spec.get("ipFamilies") == old.get("ipFamilies"):
                spec.pop("ipFamilies", None)
            if spec.get("ipFamilyPolicy") == old.get("ipFamilyPolicy"):
                spec.pop("ipFamilyPolicy", None)
        if needs_node_ports(old) and not needs_node_ports(spec):
            old_ports = {_int(p.get("nodePort")) for p in _ports(old)}
            if {_int(p.get("nodePort")) for p in _ports(spec)} <= old_ports:
                for port in _ports(spec):
                    port.pop("nodePort", None)
        unchanged_hc = spec.get("healthCheckNodePort") == old.get("healthCheckNodePort")
        if needs_health_check(self.old or {}) and not needs_health_check(self.svc) and unchanged_hc:
            spec.pop("healthCheckNodePort", None)
        if old.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
            for name in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
                if spec.get(name) == old.get(name):
                    spec.pop(name, None)
            self.svc.setdefault("status", {})["loadBalancer"] = {}
        unchanged_etp = spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")
        if externally_accessible(self.old or {}) and not externally_accessible(self.svc) and unchanged_etp:
            spec.pop("externalTrafficPolicy", None)

    def _normalize_cluster_ips(self) -> None:
        spec, old = self.spec, self.old_spec
        if self.old is None:
            if spec.get("clusterIP") and not spec.get("clusterIPs"):
                spec["clusterIPs"] = [spec["clusterIP"]]
            return
        same_ip = old.get("clusterIP") and spec.get("clusterIP") == old.get("clusterIP")
        if same_ip and old.get("clusterIPs") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
            return
        if spec.get("clusterIP") != old.get("clusterIP") and spec.get("clusterIPs") == old.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]] if spec.get("clusterIP") else []
            if not spec["clusterIPs"]:
                spec.pop("clusterIPs")

    def _init_ip_families(self) -> None:
        """ipFamilyPolicy and ipFamilies from what the client gave, the old object and the cluster's ranges."""
        spec, old = self.spec, (self.old_spec if self.old and needs_cluster_ip(self.old_spec) else None)
        errs = validate_cluster_ips_related(self.svc)
        if errs:
            raise _invalid(self.svc, errs)
        if old is not None and _same_prefer_dual_stack(spec, old):
            return
        headless_selectorless = spec.get("clusterIP") == "None" and not spec.get("selector")
        if not spec.get("ipFamilyPolicy"):
            if old is not None and old.get("ipFamilyPolicy"):
                spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
            elif headless_selectorless:
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        policy = spec["ipFamilyPolicy"]
        ips: list[str] = list(spec.get("clusterIPs") or [])
        families: list[str] = list(spec.get("ipFamilies") or [])
        errs = []
        if old is not None:
            if policy == "SingleStack":
                if ips == old.get("clusterIPs") and len(ips) > 1:
                    ips = ips[:1]
                if families == old.get("ipFamilies") and len(families) > 1:
                    families = families[:1]
            else:
                if 0 < len(ips) < len(old.get("clusterIPs") or []):
                    errs.append(
                        invalid(
                            "spec.ipFamilyPolicy", policy, "must be 'SingleStack' to release the secondary cluster IP"
                        )
                    )
                if 0 < len(families) < len(old.get("ipFamilies") or []):
                    errs.append(
                        invalid(
                            "spec.ipFamilyPolicy", policy, "must be 'SingleStack' to release the secondary IP family"
                        )
                    )
        if policy == "SingleStack":
            if len(ips) == 2:
                errs.append(
                    invalid(
                        "spec.ipFamilyPolicy",
                        policy,
                        "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
                    )
                )
            if len(families) == 2:
                errs.append(
                    invalid(
                        "spec.ipFamilyPolicy",
                        policy,
                        "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
                    )
                )
        for i, ip in enumerate(ips):
            if ip == "None":
                break
            if i >= len(families):
                family = family_of(ip)
                if self.pools.for_family(family) is None:
                    errs.append(invalid(f"spec.clusterIPs[{i}]", ips, f"{family} is not configured on this cluster"))
                else:
                    families.append(family)
        if errs:
            raise _invalid(self.svc, errs)
        if headless_selectorless:
            families = families or [self.pools.primary_family]
            if len(families) < 2 and policy != "SingleStack":
                families.append(_other(families[0]))
        else:
            if policy == "RequireDualStack" and not self.pools.dual_stack:
                errs.append(
                    invalid("spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services")
                )
            for i, family in enumerate(families):
                if self.pools.for_family(family) is None:
                    errs.append(invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster"))
            if errs:
                raise _invalid(self.svc, errs)
            families = families or [self.pools.primary_family]
            if policy != "SingleStack" and len(families) == 1 and self.pools.dual_stack:
                families.append(_other(families[0]))
        spec["ipFamilies"] = families
        if ips:
            spec["clusterIPs"] = ips

    def _allocate_cluster_ips(self) -> None:
        spec = self.spec
        ips: list[str] = list(spec.get("clusterIPs") or [])
        if ips[:1] == ["None"]:
            return
        old_ips = cluster_ips_of(self.old) if self.old and needs_cluster_ip(self.old_spec) else []
        # The IPs a Service already has are immutable (validation says so); only new families allocate.
        for i, family in enumerate(spec["ipFamilies"][len(old_ips) :], start=len(old_ips)):
            pool = self.pools.for_family(family)
            assert pool is not None  # families were checked against the cluster's ranges
            given = ips[i] if i < len(ips) else ""
            if given:
                value = self._claim(pool, given, functools.partial(self._ip_error, given, list(ips)))
            elif self.dry_run:
                value = str(pool.range.network.network_address) if isinstance(pool.range, IPRange) else ""
            else:
                try:
                    value = self._pick(pool)
                except RangeFull:
                    raise errors.internal_error("failed to allocate a serviceIP: range is full") from None
            ips[i : i + 1] = [value]
        self._release_all(old_ips[len(spec["ipFamilies"]) :], self.pools.pool_for_ip)
        spec["clusterIPs"] = ips
        spec["clusterIP"] = ips[0]

    def _ip_error(self, ip: str, shown: list[str], err: RangeError) -> errors.ApiError:
        return self._field_error("spec.clusterIPs", shown, RangeError(f"failed to allocate IP {ip}: {err}"))

    def _field_error(self, path: str, value: Any, err: RangeError) -> errors.ApiError:
        return _invalid(self.svc, [invalid(path, value, str(err))])

    def _allocate_node_ports(self) -> None:
        spec = self.spec
        old_held = node_ports_of(self.old) if self.old and needs_node_ports(self.old_spec) else []
        if needs_node_ports(spec):
            by_number: dict[int, int] = {}  # service port -> the nodePort this write gave it
            ports = _ports(spec)
            for i, port in enumerate(ports):
                requested = _int(port.get("nodePort"))
                if not requested and not allocates_node_ports(spec):
                    continue
                number = _int(port.get("port"))
                shared = by_number.get(number)
                if shared and requested in (0, shared):
                    port["nodePort"] = shared  # TCP and UDP on one port number share a nodePort
                    continue
                if not requested and shared is None:
                    requested = _requested_later(ports[i + 1 :], number)
                if requested:
                    if requested not in old_held:
                        error = functools.partial(self._field_error, f"spec.ports[{i}].nodePort", requested)
                        self._claim(self.pools.node_ports, str(requested), error)
                    port["nodePort"] = requested
                elif self.dry_run:
                    port["nodePort"] = DRY_RUN_NODE_PORT
                else:
                    try:
                        port["nodePort"] = int(self._pick(self.pools.node_ports))
                    except RangeFull:
                        raise errors.internal_error("failed to allocate a nodePort: range is full") from None
                by_number.setdefault(number, port["nodePort"])
        held = set(node_ports_of(self.svc)) if needs_node_ports(spec) else set()
        self._release_all([str(p) for p in old_held if p not in held], lambda _v: self.pools.node_ports)

    def _allocate_health_check_port(self) -> None:
        spec = self.spec
        if not needs_health_check(self.svc):
            return
        old_port = _int(self.old_spec.get("healthCheckNodePort")) if self.old and needs_health_check(self.old) else 0
        requested = _int(spec.get("healthCheckNodePort"))
        if requested and requested == old_port:
            return
        if requested:
            self._claim(
                self.pools.node_ports,
                str(requested),
                lambda err: errors.internal_error(
                    f"failed to allocate requested HealthCheck NodePort {requested}: {err}"
                ),
            )
        elif self.dry_run:
            spec["healthCheckNodePort"] = DRY_RUN_NODE_PORT
        else:
            try:
                spec["healthCheckNodePort"] = int(self._pick(self.pools.node_ports))
            except RangeFull as err:
                raise errors.internal_error(f"failed to allocate a HealthCheck NodePort 0: {err}") from None

    def _allocate_load_balancer_ip(self) -> None:
        """The built-in load balancer: an ingress IP from the pool, in the same transaction, so a LoadBalancer
        Service is never `<pending>`. Only Services without a loadBalancerClass are ours, as upstream's
        cloud controller leaves classed ones to their own controller."""
        pool, spec = self.pools.load_balancer_ips, self.spec
        if pool is None:
            return
        ours = spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")
        held = [ip for ip in ingress_ips_of(self.old or {}) if pool.contains(ip)] if self.old else []
        if not ours:
            self._release_all(held, lambda _v: pool)
            return
        wanted = spec.get("loadBalancerIP") or ""
        if held and (not wanted or wanted in held):
            return  # keeps its ingress (status was carried over from the stored object)
        if self.dry_run:
            return
        try:
            value = self._take(pool, pool.check(wanted), "static") if wanted else self._pick(pool)
        except RangeError as err:
            reason = "LoadBalancerIPUnavailable" if wanted else "LoadBalancerPoolExhausted"
            self.warnings.append((reason, f"cannot assign {wanted or 'an ingress IP'} from pool {pool.range}: {err}"))
            return
        self._release_all(held, lambda _v: pool)
        self.svc.setdefault("status", {})["loadBalancer"] = {"ingress": [{"ip": value, "ipMode": "VIP"}]}

    # ---- claims ----------------------------------------------------------------------------------------------

    def _holder(self) -> Holder:
        meta = (self.old or self.svc)["metadata"]
        return Holder(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""))

    def _claim(self, pool: Pool, value: str, error: Callable[[RangeError], errors.ApiError]) -> str:
        """Take a value the client asked for; `error` turns a refusal into the API error upstream answers."""
        try:
            value = pool.check(value, check_taken=not (self.dry_run and isinstance(pool.range, IPRange)))
            if pool.key(value) in self.take:
                raise pool.range.already_allocated()  # twice in one Service
        except RangeError as err:
            raise error(err) from None
        if not self.dry_run:
            self._take(pool, value, "static")
            self.conflicts[pool.key(value)] = error(pool.range.already_allocated())
        return value

    def _pick(self, pool: Pool) -> str:
        value = pool.pick(avoid={k.rpartition("/")[2] for k in self.take if k.startswith(pool.key(""))})
        pool.in_flight.add(value)
        self.picked.append((pool, value))
        return self._take(pool, value, "dynamic")

    def _take(self, pool: Pool, value: str, scope: str) -> str:
        self.take[pool.key(value)] = self._holder().encode()
        self.counted.append((pool, scope))
        return value

    def _release_all(self, values: list[str], pool_of: Callable[[str], Pool | None]) -> None:
        svc = self.old or self.svc
        for value in values:
            pool = pool_of(value)
            key = ServicePools.held_key(svc, pool, value) if pool else ""
            if key and key not in self.take:
                self.release.append(key)

    def _unreserve(self) -> None:
        for pool, value in self.picked:
            pool.in_flight.discard(value)

    def _allocation(self) -> Allocation:
        svc = self.svc

        def committed(revision: int) -> None:
            self.pools.committed(self.take, tuple(self.release), revision)
            for pool, scope in self.counted:
                pool.allocations[scope] += 1
            for reason, message in self.warnings:
                self.pools.warn(svc, reason, message)

        return Allocation(Claims(dict(self.take), tuple(self.release)), self.conflicts, committed, self._unreserve)


def _requested_later(ports: list[dict[str, Any]], number: int) -> int:
    """A nodePort the client gave a later port with the same number (e.g. the UDP twin of a TCP port)."""
    return next((_int(p.get("nodePort")) for p in ports if _int(p.get("port")) == number and p.get("nodePort")), 0)


def _other(family: str) -> str:
    return "IPv6" if family == "IPv4" else "IPv4"


def _same_prefer_dual_stack(spec: dict[str, Any], old: dict[str, Any]) -> bool:
    """A PreferDualStack Service is not up- or downgraded just because the cluster changed its stacks."""
    return (
        old.get("ipFamilyPolicy") == "PreferDualStack"
        and spec.get("ipFamilyPolicy") == "PreferDualStack"
        and spec.get("clusterIPs") == old.get("clusterIPs")
        and spec.get("ipFamilies") == old.get("ipFamilies")
    )


__all__ = ["ServicePools", "cluster_ips_of", "ingress_ips_of", "is_headless", "node_ports_of"]
