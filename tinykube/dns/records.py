"""What the DNS server knows of the cluster: slim, immutable copies of the Services, EndpointSlices, Namespaces
(and, for `--pods verified`, Pod IPs) it watches, indexed the way queries look them up.

Only the fields DNS answers depend on are kept, so a 10,000-Service cluster costs little memory, and an update
that changes none of them (a status write, a label) costs no cache invalidation.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tinykube.api.shapes import ObjectMeta, ServiceSpec

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Object = dict[str, Any]
Group = tuple[str, ...]  # what an answer depends on; see `service_group` and friends

GLOBAL: Group = ("global",)  # answers that depend on many objects: PTR, NS, apex


def service_group(namespace: str, name: str) -> Group:
    return ("svc", namespace, name)


def pods_group(namespace: str) -> Group:
    return ("pods", namespace)


@dataclass(frozen=True, slots=True)
class Port:
    name: str  # lower-cased: names are matched case-insensitively
    protocol: str  # lower-cased, as in SRV names: tcp, udp, sctp
    number: int


@dataclass(frozen=True, slots=True)
class Service:
    namespace: str
    name: str
    cluster_ips: tuple[IP, ...]  # empty for headless and ExternalName Services
    headless: bool
    external_name: str  # lower-cased, without the final dot; "" unless type ExternalName
    ports: tuple[Port, ...]


@dataclass(frozen=True, slots=True)
class Endpoint:
    address: IP
    hostname: str  # the label naming it: the endpoint's hostname, else its dashed address
    ports: tuple[Port, ...]  # its slice's ports


def dashed(address: IP) -> str:
    """`10.244.1.5` -> `10-244-1-5`; IPv6 `fd00::` -> `fd00--0` (a label may not start or end with `-`)."""
    text = str(address).replace(".", "-").replace(":", "-")
    if text.startswith("-"):
        text = "0" + text
    if text.endswith("-"):
        text += "0"
    return text


def _ports(items: Sequence[Mapping[str, Any]] | None) -> tuple[Port, ...]:
    """A Service's or an EndpointSlice's ports (both name them `port`); a port without a number is skipped."""
    ports = []
    for item in items or []:
        number = item.get("port")
        if isinstance(number, int):
            ports.append(Port(str(item.get("name") or "").lower(), str(item.get("protocol") or "TCP").lower(), number))
    return tuple(ports)


def _addresses(values: list[Any]) -> tuple[IP, ...]:
    parsed = []
    for value in values:
        try:
            parsed.append(ipaddress.ip_address(value))
        except (TypeError, ValueError):
            continue  # "None" (headless) and anything malformed
    return tuple(parsed)


def service_from(obj: Object) -> Service:
    meta: ObjectMeta = obj["metadata"]
    spec: ServiceSpec = obj.get("spec") or {}
    external = spec.get("type") == "ExternalName"
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return Service(
        namespace=meta["namespace"],
        name=meta["name"],
        cluster_ips=() if external else _addresses(ips),
        headless=not external and spec.get("clusterIP") == "None",
        external_name=str(spec.get("externalName") or "").lower().rstrip(".") if external else "",
        ports=_ports(spec.get("ports")),
    )


def endpoints_from(obj: Object) -> tuple[Endpoint, ...]:
    """The ready endpoints of a slice (`conditions.ready` true or unset), one entry per address."""
    if obj.get("addressType") not in ("IPv4", "IPv6"):
        return ()  # FQDN slices name no address DNS could publish
    ports = _ports(obj.get("ports"))
    found = []
    for endpoint in obj.get("endpoints") or []:
        if (endpoint.get("conditions") or {}).get("ready") is False:
            continue
        for address in _addresses(endpoint.get("addresses") or []):
            found.append(Endpoint(address, str(endpoint.get("hostname") or dashed(address)).lower(), ports))
    return tuple(found)


SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class ClusterRecords:
    """The indexed view. `on_change(group)` is called for every change that can alter an answer; a namespace
    appearing or going away alters too many to name, so it calls `on_reset()` instead."""

    def __init__(self, *, on_change: Callable[[Group], None], on_reset: Callable[[], None]) -> None:
        self.on_change = on_change
        self.on_reset = on_reset
        self.namespaces: set[str] = set()
        self.services: dict[tuple[str, str], Service] = {}
        self.service_ips: dict[IP, list[Service]] = {}
        self._slices: dict[tuple[str, str], tuple[str, tuple[Endpoint, ...]]] = {}  # (ns, slice) -> (svc, endpoints)
        self._slices_of: dict[tuple[str, str], set[str]] = {}  # (ns, svc) -> slice names
        self._endpoints: dict[tuple[str, str], tuple[Endpoint, ...]] = {}  # (ns, svc) -> its ready endpoints
        self.endpoint_ips: dict[IP, list[tuple[str, str, str]]] = {}  # address -> (ns, svc, hostname)
        self._pod_ips: dict[tuple[str, IP], int] = {}  # (ns, address) -> how many pods have it
        self._pods: dict[tuple[str, str], IP] = {}
        self.serial = int(time.time())  # the SOA serial: when the records last changed

    # Lookups

    def service(self, namespace: str, name: str) -> Service | None:
        return self.services.get((namespace, name))

    def endpoints(self, namespace: str, name: str) -> tuple[Endpoint, ...]:
        return self._endpoints.get((namespace, name), ())

    def has_pod_ip(self, namespace: str, address: IP) -> bool:
        return (namespace, address) in self._pod_ips

    # Changes, from the informers' handlers

    def _changed(self, group: Group) -> None:
        self.serial = max(self.serial + 1, int(time.time()))
        self.on_change(group)

    def put_namespace(self, obj: Object) -> None:
        name = obj["metadata"]["name"]
        if name not in self.namespaces:
            self.namespaces.add(name)
            self.serial = max(self.serial + 1, int(time.time()))
            self.on_reset()

    def delete_namespace(self, obj: Object) -> None:
        if obj["metadata"]["name"] in self.namespaces:
            self.namespaces.discard(obj["metadata"]["name"])
            self.serial = max(self.serial + 1, int(time.time()))
            self.on_reset()

    def put_service(self, obj: Object) -> None:
        fresh = service_from(obj)
        key = (fresh.namespace, fresh.name)
        old = self.services.get(key)
        if old == fresh:
            return
        if old is not None:
            self._unindex_service(old)
        self.services[key] = fresh
        for ip in fresh.cluster_ips:
            self.service_ips.setdefault(ip, []).append(fresh)
        self._changed(service_group(*key))

    def delete_service(self, obj: Object) -> None:
        old = self.services.pop((obj["metadata"]["namespace"], obj["metadata"]["name"]), None)
        if old is not None:
            self._unindex_service(old)
            self._changed(service_group(old.namespace, old.name))

    def _unindex_service(self, service: Service) -> None:
        for ip in service.cluster_ips:
            holders = self.service_ips.get(ip, [])
            holders[:] = [held for held in holders if held is not service]
            if not holders:
                self.service_ips.pop(ip, None)

    def put_slice(self, obj: Object) -> None:
        meta = obj["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL, "")
        fresh = (service, endpoints_from(obj))
        old = self._slices.get((namespace, name))
        if old == fresh:
            return
        self._slices[(namespace, name)] = fresh
        if old is not None and old[0] != service:
            self._slices_of.get((namespace, old[0]), set()).discard(name)
            self._reindex_endpoints(namespace, old[0])
        if service:
            self._slices_of.setdefault((namespace, service), set()).add(name)
            self._reindex_endpoints(namespace, service)

    def delete_slice(self, obj: Object) -> None:
        meta = obj["metadata"]
        old = self._slices.pop((meta["namespace"], meta["name"]), None)
        if old is not None and old[0]:
            self._slices_of.get((meta["namespace"], old[0]), set()).discard(meta["name"])
            self._reindex_endpoints(meta["namespace"], old[0])

    def _reindex_endpoints(self, namespace: str, service: str) -> None:
        key = (namespace, service)
        for endpoint in self._endpoints.pop(key, ()):
            holders = self.endpoint_ips.get(endpoint.address, [])
            holders[:] = [held for held in holders if held[:2] != key]
            if not holders:
                self.endpoint_ips.pop(endpoint.address, None)
        names = self._slices_of.get(key)
        if not names:
            self._slices_of.pop(key, None)
        else:
            # The same address can sit in two slices while the controller moves it: publish it once.
            unique = {
                (e.address, e.hostname, e.ports): e for n in sorted(names) for e in self._slices[(namespace, n)][1]
            }
            endpoints = tuple(unique.values())
            if endpoints:
                self._endpoints[key] = endpoints
            for endpoint in endpoints:
                self.endpoint_ips.setdefault(endpoint.address, []).append((namespace, service, endpoint.hostname))
        self._changed(service_group(namespace, service))

    def put_pod(self, obj: Object) -> None:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        ips = _addresses([(obj.get("status") or {}).get("podIP")])
        fresh = ips[0] if ips else None
        old = self._pods.get(key)
        if old == fresh:
            return
        self._drop_pod(key)
        if fresh is not None:
            self._pods[key] = fresh
            self._pod_ips[(key[0], fresh)] = self._pod_ips.get((key[0], fresh), 0) + 1
        self._changed(pods_group(key[0]))

    def delete_pod(self, obj: Object) -> None:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self._pods:
            self._drop_pod(key)
            self._changed(pods_group(key[0]))

    def _drop_pod(self, key: tuple[str, str]) -> None:
        old = self._pods.pop(key, None)
        if old is not None:
            count = self._pod_ips.pop((key[0], old)) - 1
            if count:
                self._pod_ips[(key[0], old)] = count
