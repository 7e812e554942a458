"""Query names: which zone a name is in, and what it asks for.

The grammar is CoreDNS's `kubernetes` plugin's: below the zone, `[endpoint|_port._proto].service.namespace.svc`
or `address.namespace.pod`; anything else is a name that does not exist. Reverse zones (`in-addr.arpa`,
`ip6.arpa` under the configured ranges) hold PTR names.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass

from tinykube.dns.records import IP


class Kind(enum.Enum):
    APEX = "apex"  # the zone itself (also a reverse zone's apex)
    SVC_ROOT = "svc"  # svc.<zone>, pod.<zone>: exist, hold no records
    NAMESPACE = "namespace"  # <ns>.svc.<zone>, <ns>.pod.<zone>
    SERVICE = "service"  # <svc>.<ns>.svc.<zone>, with optional endpoint or _port._proto
    POD = "pod"  # <a-b-c-d>.<ns>.pod.<zone>
    DNS_VERSION = "dns-version"
    NS_DNS = "ns.dns"
    REVERSE = "reverse"  # a full address under a reverse zone
    MISSING = "missing"  # in a zone, but cannot exist


@dataclass(frozen=True, slots=True)
class Name:
    kind: Kind
    zone: str
    namespace: str = ""
    service: str = ""
    endpoint: str = ""
    port: str = ""
    protocol: str = ""
    address: IP | None = None


def reverse_zones(cidrs: list[str]) -> list[str]:
    """The reverse zones covering `cidrs`, split at label boundaries: 10.96.0.0/12 -> 96..111.10.in-addr.arpa."""
    zones: list[str] = []
    for cidr in cidrs:
        network = ipaddress.ip_network(cidr, strict=False)
        step = 8 if network.version == 4 else 4
        boundary = -(-network.prefixlen // step) * step  # round up to a whole label
        if boundary == network.max_prefixlen:  # a zone per address would make each address its own zone's apex:
            boundary -= step  # serve the enclosing zone instead (a /28 -> its /24)
            network = network.supernet(new_prefix=boundary)
        subnets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = list(network.subnets(new_prefix=boundary))
        for subnet in subnets[:256]:
            labels = subnet.network_address.reverse_pointer.split(".")
            keep = boundary // step  # labels naming the network part, counted from the end of the address
            suffix = labels[-2:]  # in-addr.arpa / ip6.arpa
            address_labels = labels[:-2]
            zone = ".".join(address_labels[len(address_labels) - keep :] + suffix)
            if zone not in zones:
                zones.append(zone)
    return zones


def _strip(label: str) -> str:
    return label[1:] if label.startswith("_") else label


def pod_address(label: str) -> IP | None:
    """`10-244-1-5` -> 10.244.1.5; IPv6 with `-` for `:`. Exactly three dashes and no `--` reads as IPv4."""
    text = label.replace("-", ".") if label.count("-") == 3 and "--" not in label else label.replace("-", ":")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _reverse_address(labels: list[str], suffix: str) -> IP | None:
    """The address a full reverse name spells, or None if it is not a whole one."""
    try:
        if suffix == "in-addr.arpa" and len(labels) == 4:
            return ipaddress.IPv4Address(".".join(reversed(labels)))
        if suffix == "ip6.arpa" and len(labels) == 32 and all(len(label) == 1 for label in labels):
            nibbles = "".join(reversed(labels))
            return ipaddress.IPv6Address(int(nibbles, 16))
    except ValueError:
        return None
    return None


class Zones:
    def __init__(self, cluster_domain: str, reverse: list[str]) -> None:
        self.domain = cluster_domain.lower().strip(".")
        self.reverse = [zone.lower().strip(".") for zone in reverse]
        # Longest first, so a name falls in the most specific zone.
        self._all = sorted([self.domain, *self.reverse], key=len, reverse=True)

    def zone_of(self, name: str) -> str | None:
        """The zone `name` (lower-case, no final dot) is in, or None."""
        for zone in self._all:
            if name == zone or name.endswith("." + zone):
                return zone
        return None

    def parse(self, name: str) -> Name | None:
        """What `name` (lower-case, no final dot) asks for; None when it is outside every zone."""
        zone = self.zone_of(name)
        if zone is None:
            return None
        if name == zone:
            return Name(Kind.APEX, zone)
        if zone != self.domain:
            suffix = "ip6.arpa" if zone.endswith("ip6.arpa") else "in-addr.arpa"
            address = _reverse_address(name[: -len(suffix) - 1].split("."), suffix)
            return Name(Kind.REVERSE, zone, address=address) if address else Name(Kind.MISSING, zone)
        return _forward(name[: -len(zone) - 1].split("."), zone)


def _forward(labels: list[str], zone: str) -> Name:
    if labels == ["dns-version"]:
        return Name(Kind.DNS_VERSION, zone)
    if labels == ["ns", "dns"]:
        return Name(Kind.NS_DNS, zone)
    *rest, root = labels
    if root not in ("svc", "pod") or "" in labels:
        return Name(Kind.MISSING, zone)
    if not rest:
        return Name(Kind.SVC_ROOT, zone)
    if root == "pod":
        if len(rest) == 1:
            return Name(Kind.NAMESPACE, zone, namespace=rest[0])
        if len(rest) == 2:
            return Name(Kind.POD, zone, namespace=rest[1], address=pod_address(rest[0]))
        return Name(Kind.MISSING, zone)
    if len(rest) == 1:
        return Name(Kind.NAMESPACE, zone, namespace=rest[0])
    if len(rest) == 2:
        return Name(Kind.SERVICE, zone, namespace=rest[1], service=rest[0])
    if len(rest) == 3:
        return Name(Kind.SERVICE, zone, namespace=rest[2], service=rest[1], endpoint=rest[0])
    if len(rest) == 4:
        return Name(
            Kind.SERVICE, zone, namespace=rest[3], service=rest[2], port=_strip(rest[0]), protocol=_strip(rest[1])
        )
    return Name(Kind.MISSING, zone)
