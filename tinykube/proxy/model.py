"""What a node's proxy must make real, as plain values: one `ServicePort` per (Service, port) with its endpoints
resolved from the EndpointSlices (pure; from API objects).

Only IPv4 for now (the sandbox is IPv4); IPv6 cluster IPs and endpoints are left out.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

Object = dict[str, Any]
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """What every proxy mode knows about its node."""

    node_name: str
    node_ips: list[str]  # NodePorts answer on these (nftables' default `--nodeport-addresses primary`)
    cluster_cidr: str  # pod CIDR: traffic from outside it to a ClusterIP is masqueraded ("" = never)
    service_cidrs: list[str]  # unallocated IPs inside these are dropped


@dataclass(frozen=True, slots=True)
class Endpoint:
    ip: str
    port: int
    node: str  # endpoint nodeName ("" when unknown)
    ready: bool
    serving: bool
    terminating: bool


@dataclass(frozen=True, slots=True)
class ServicePort:
    namespace: str
    name: str
    port_name: str  # "" for an unnamed port
    protocol: str  # lower case: tcp, udp, sctp
    port: int
    cluster_ips: tuple[str, ...]  # empty for headless and ExternalName (they get no rules)
    external_ips: tuple[str, ...] = ()
    load_balancer_ips: tuple[str, ...] = ()
    node_port: int = 0  # 0: none
    external_local: bool = False  # externalTrafficPolicy: Local
    internal_local: bool = False  # internalTrafficPolicy: Local
    affinity_timeout: int = 0  # seconds of ClientIP session affinity; 0: none
    health_check_node_port: int = 0  # 0: none
    endpoints: tuple[Endpoint, ...] = ()
    source_ranges: tuple[str, ...] = ()  # loadBalancerSourceRanges (IPv4 CIDRs): who may use the LB IPs
    # Upstream's service port name, `ns/svc/proto/portname`: chain names and comments derive from it. Computed
    # once: proxies look it up for every port on every sync.
    key: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}/{self.protocol}/{self.port_name}")


def _ipv4(values: Any) -> tuple[str, ...]:
    found = []
    for value in values or []:
        try:
            if ipaddress.ip_address(value).version == 4:
                found.append(str(value))
        except ValueError:
            continue  # "None" (headless) and anything else that is no address
    return tuple(found)


def _ipv4_cidrs(values: Any) -> tuple[str, ...]:
    found = []
    for value in values or []:
        try:
            network = ipaddress.ip_network(str(value).strip(), strict=False)
        except ValueError:
            continue  # validation refuses these; an old object may still carry one
        if network.version == 4:
            found.append(str(network))
    return tuple(found)


def _endpoints(slices: list[Object], port_name: str, protocol: str) -> tuple[Endpoint, ...]:
    """The endpoints of a Service's port across its IPv4 slices, deduplicated (an address may sit in two slices
    while the controller moves it)."""
    found: dict[tuple[str, int], Endpoint] = {}
    for item in slices:
        if item.get("addressType") != "IPv4":
            continue
        ports = [p for p in item.get("ports") or [] if (p.get("name") or "") == port_name]
        ports = [p for p in ports if str(p.get("protocol") or "TCP").lower() == protocol and p.get("port")]
        if not ports:
            continue
        number = int(ports[0]["port"])
        for endpoint in item.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            ready = conditions.get("ready") is not False  # nil means ready (the API contract)
            serving = conditions.get("serving", conditions.get("ready")) is not False
            terminating = conditions.get("terminating") is True
            for ip in _ipv4(endpoint.get("addresses")):
                found.setdefault(
                    (ip, number), Endpoint(ip, number, endpoint.get("nodeName") or "", ready, serving, terminating)
                )
    return tuple(sorted(found.values(), key=lambda e: (e.ip, e.port)))


def service_ports(services: list[Object], slices: list[Object]) -> list[ServicePort]:
    """Every (Service, port) the proxy programs: those with a cluster IP (headless and ExternalName get none)."""
    slices_of: dict[tuple[str, str], list[Object]] = defaultdict(list)
    for item in slices:
        meta = item["metadata"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if service:
            slices_of[(meta["namespace"], service)].append(item)
    found = []
    for service in services:
        meta, spec = service["metadata"], service.get("spec") or {}
        cluster_ips = _ipv4(spec.get("clusterIPs") or [spec.get("clusterIP")])
        if not cluster_ips or spec.get("type") == "ExternalName":
            continue
        affinity = 0
        if spec.get("sessionAffinity") == "ClientIP":
            config = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
            affinity = int(config.get("timeoutSeconds") or 10800)
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        own = slices_of[(meta["namespace"], meta["name"])]
        for port in spec.get("ports") or []:
            name, protocol = port.get("name") or "", str(port.get("protocol") or "TCP").lower()
            found.append(
                ServicePort(
                    namespace=meta["namespace"],
                    name=meta["name"],
                    port_name=name,
                    protocol=protocol,
                    port=int(port["port"]),
                    cluster_ips=cluster_ips,
                    external_ips=_ipv4(spec.get("externalIPs")),
                    load_balancer_ips=_ipv4([i.get("ip") for i in ingress]),
                    node_port=int(port.get("nodePort") or 0),
                    external_local=spec.get("externalTrafficPolicy") == "Local",
                    internal_local=spec.get("internalTrafficPolicy") == "Local",
                    affinity_timeout=affinity,
                    health_check_node_port=int(spec.get("healthCheckNodePort") or 0),
                    endpoints=_endpoints(own, name, protocol),
                    source_ranges=_ipv4_cidrs(spec.get("loadBalancerSourceRanges")),
                )
            )
    return sorted(found, key=lambda p: p.key)


class PortTable:
    """Every service port a node's proxy should program, by Service ("namespace/name"), with the Services changed
    since the last successful sync and their ports as programmed then (`previous`).

    Iterating gives every port, in Service order: what a full sync needs, and the modes that rewrite a chain
    listing every Service (iptables' KUBE-SERVICES, as upstream). `changes()` gives only the ports a change can
    touch, so an incremental sync costs what changed, not what exists."""

    __slots__ = ("by_service", "previous")

    def __init__(
        self, by_service: Mapping[str, tuple[ServicePort, ...]], previous: Mapping[str, tuple[ServicePort, ...]]
    ) -> None:
        self.by_service = by_service
        self.previous = previous

    def __iter__(self) -> Iterator[ServicePort]:
        return (port for ports in self.by_service.values() for port in ports)

    def changes(self) -> dict[str, ServicePort | None]:
        """Port key -> the port wanted now (None: gone) for every port the changed Services had or have."""
        found: dict[str, ServicePort | None] = {port.key: None for old in self.previous.values() for port in old}
        for key in self.previous:
            found.update((port.key, port) for port in self.by_service.get(key, ()))
        return found


def usable(endpoints: tuple[Endpoint, ...]) -> tuple[Endpoint, ...]:
    """Upstream's CategorizeEndpoints for one set: the ready ones, else the serving-but-terminating ones."""
    ready = tuple(e for e in endpoints if e.ready)
    return ready or tuple(e for e in endpoints if e.serving and e.terminating)


def cluster_endpoints(port: ServicePort) -> tuple[Endpoint, ...]:
    return usable(port.endpoints)


def local_endpoints(port: ServicePort, node: str) -> tuple[Endpoint, ...]:
    return usable(tuple(e for e in port.endpoints if e.node == node))


@dataclass(frozen=True, slots=True)
class Policy:
    """What upstream's CategorizeEndpoints decides for one service port on one node: the endpoint groups its
    destinations lead to (every mode programs these)."""

    cluster: tuple[Endpoint, ...]  # the cluster-wide group (empty when no destination uses it)
    local: tuple[Endpoint, ...]  # this node's group (empty when no destination uses it)
    internal_local: bool  # ClusterIP traffic goes to the local group (internalTrafficPolicy Local)
    external_local: bool  # traffic from outside goes to the local group (externalTrafficPolicy Local)
    any_endpoints: bool  # false: every destination rejects; true with an empty group: that destination drops
    externally_accessible: bool  # a NodePort, an externalIP or a load-balancer IP

    @property
    def internal(self) -> tuple[Endpoint, ...]:
        return self.local if self.internal_local else self.cluster

    @property
    def external(self) -> tuple[Endpoint, ...]:
        if not self.externally_accessible:
            return ()
        return self.local if self.external_local else self.cluster


def policy(port: ServicePort, node: str) -> Policy:
    cluster = cluster_endpoints(port)
    external_access = bool(port.node_port or port.external_ips or port.load_balancer_ips)
    external_local = port.external_local and external_access
    # UsesClusterEndpoints / UsesLocalEndpoints: ETP Local short-circuits pod and node traffic to the cluster
    # group, so any externally accessible port needs it.
    uses_cluster = not port.internal_local or external_access
    uses_local = port.internal_local or external_local
    return Policy(
        cluster=cluster if uses_cluster else (),
        local=local_endpoints(port, node) if uses_local else (),
        internal_local=port.internal_local,
        external_local=external_local,
        any_endpoints=bool(cluster),
        externally_accessible=external_access,
    )
