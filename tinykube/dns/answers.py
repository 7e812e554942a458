"""Record synthesis: a question (name, type) in, an answer out, as CoreDNS's `kubernetes` plugin gives it.

Pure: it reads `ClusterRecords` and knows nothing of sockets. Names outside the cluster (an ExternalName
target, say) are left for the server to resolve upstream (`Answer.chase`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from dnslib import AAAA, CNAME, NS, PTR, QTYPE, RCODE, RR, SOA, SRV, TXT, A

from tinykube.dns.names import Kind, Name, Zones
from tinykube.dns.records import GLOBAL, IP, ClusterRecords, Group, Port, Service, pods_group, service_group

SCHEMA_VERSION = "1.1.0"  # Kubernetes DNS-Based Service Discovery specification
SCHEMA_TTL = 28800
MAX_CNAME_CHAIN = 10


@dataclass
class Answer:
    rcode: int = RCODE.NOERROR
    answer: list[RR] = field(default_factory=list)
    authority: list[RR] = field(default_factory=list)
    additional: list[RR] = field(default_factory=list)
    groups: set[Group] = field(default_factory=set)  # what it depends on (empty: not cacheable)
    chase: str = ""  # an out-of-cluster name whose A/AAAA records the server appends (ExternalName)
    authoritative: bool = True


@dataclass(frozen=True)
class DnsSettings:
    cluster_domain: str = "cluster.local"
    reverse_cidrs: tuple[str, ...] = ()
    ttl: int = 5
    pods: str = "disabled"
    ns_addresses: tuple[str, ...] = ("127.0.0.1",)  # where the server itself listens: `ns.dns.<zone>` when no kube-dns


@dataclass(frozen=True, slots=True)
class _Target:
    """One item a name resolves to, as CoreDNS's `msg.Service`: an address, a port and the name SRV points at."""

    host: str  # fully qualified, no final dot
    address: IP | None
    port: Port | None


def _family(qtype: int) -> int:
    return 6 if qtype == QTYPE.AAAA else 4


def _address_rr(owner: str, address: IP, ttl: int) -> RR:
    if address.version == 4:
        return RR(owner, QTYPE.A, rdata=A(str(address)), ttl=ttl)
    return RR(owner, QTYPE.AAAA, rdata=AAAA(str(address)), ttl=ttl)


class Answerer:
    def __init__(self, records: ClusterRecords, settings: DnsSettings, zones: Zones) -> None:
        self.records = records
        self.settings = settings
        self.zones = zones
        self.ttl = settings.ttl

    # Entry point

    def answer(self, qname: str, qtype: int) -> Answer | None:
        """The answer for `qname` (as asked, any case, final dot optional), or None if it is outside our zones."""
        name = self.zones.parse(qname.lower().rstrip("."))
        if name is None:
            return None
        owner = qname if qname.endswith(".") else qname + "."
        if qtype in (QTYPE.AXFR, QTYPE.IXFR):
            return Answer(RCODE.REFUSED, groups={GLOBAL})
        result = self._dispatch(name, owner, qtype)
        if not result.answer and result.rcode in (RCODE.NOERROR, RCODE.NXDOMAIN) and not result.chase:
            result.authority.append(self.soa(name.zone))
        return result

    def _dispatch(self, name: Name, owner: str, qtype: int) -> Answer:
        kind = name.kind
        if kind is Kind.APEX:
            return self._apex(name, owner, qtype)
        if qtype == QTYPE.SOA:
            return Answer(groups={GLOBAL})  # CoreDNS: SOA below the apex is NOERROR/empty, whatever the name
        if kind is Kind.DNS_VERSION:
            if qtype != QTYPE.TXT:
                return Answer(RCODE.NXDOMAIN, groups={GLOBAL})
            return Answer(answer=[RR(owner, QTYPE.TXT, rdata=TXT(SCHEMA_VERSION), ttl=SCHEMA_TTL)], groups={GLOBAL})
        if kind is Kind.NS_DNS:
            found = [_address_rr(owner, ip, self.ttl) for ip in self._ns_addresses() if ip.version == _family(qtype)]
            return Answer(answer=found if qtype in (QTYPE.A, QTYPE.AAAA) else [], groups={GLOBAL})
        if kind is Kind.SVC_ROOT:
            return Answer(groups={GLOBAL})
        if kind is Kind.NAMESPACE:
            exists = name.namespace in self.records.namespaces
            return Answer(RCODE.NOERROR if exists else RCODE.NXDOMAIN, groups={GLOBAL})
        if kind is Kind.POD:
            return self._pod(name, owner, qtype)
        if kind is Kind.REVERSE:
            return self._reverse(name, owner, qtype)
        if kind is Kind.SERVICE:
            return self._service(name, owner, qtype, depth=0)
        return Answer(RCODE.NXDOMAIN, groups={GLOBAL})

    # The zone apex

    def soa(self, zone: str) -> RR:
        domain = self.settings.cluster_domain.strip(".")
        ttl = min(self.ttl, 300)
        times = (self.records.serial, 7200, 1800, 86400, self.ttl)
        rdata = SOA(f"ns.dns.{domain}.", f"hostmaster.{domain}.", times)
        return RR(zone + ".", QTYPE.SOA, rdata=rdata, ttl=ttl)

    def _ns_service(self) -> Service | None:
        service = self.records.service("kube-system", "kube-dns")
        return service if service is not None and service.cluster_ips else None

    def _ns_addresses(self) -> list[IP]:
        service = self._ns_service()
        if service is not None:
            return list(service.cluster_ips)
        return [ipaddress.ip_address(address) for address in self.settings.ns_addresses]

    def _apex(self, name: Name, owner: str, qtype: int) -> Answer:
        if qtype == QTYPE.SOA:
            soa = self.soa(name.zone)
            soa.rname = owner
            return Answer(answer=[soa], groups={GLOBAL})
        if qtype == QTYPE.NS:
            domain = self.settings.cluster_domain.strip(".")
            target = f"kube-dns.kube-system.svc.{domain}." if self._ns_service() else f"ns.dns.{domain}."
            glue = [_address_rr(target, ip, self.ttl) for ip in self._ns_addresses()]
            return Answer(
                answer=[RR(owner, QTYPE.NS, rdata=NS(target), ttl=self.ttl)], additional=glue, groups={GLOBAL}
            )
        return Answer(groups={GLOBAL})

    # Pods

    def _pod(self, name: Name, owner: str, qtype: int) -> Answer:
        mode = self.settings.pods
        groups = {pods_group(name.namespace)}
        address = name.address
        if mode == "disabled" or name.namespace not in self.records.namespaces or address is None:
            return Answer(RCODE.NXDOMAIN, groups=groups)
        if mode == "verified" and not self.records.has_pod_ip(name.namespace, address):
            return Answer(RCODE.NXDOMAIN, groups=groups)
        if qtype in (QTYPE.A, QTYPE.AAAA) and address.version == _family(qtype):
            return Answer(answer=[_address_rr(owner, address, self.ttl)], groups=groups)
        return Answer(groups=groups)

    # Reverse lookups

    def _reverse(self, name: Name, owner: str, qtype: int) -> Answer:
        address = name.address
        assert address is not None
        domain = self.settings.cluster_domain.strip(".")
        targets: list[str] = []
        services = self.records.service_ips.get(address)
        if services:
            first = min(services, key=lambda s: (s.namespace, s.name))
            targets = [f"{first.name}.{first.namespace}.svc.{domain}."]
        else:
            held = sorted(self.records.endpoint_ips.get(address, []))
            targets = list(dict.fromkeys(f"{host}.{svc}.{ns}.svc.{domain}." for ns, svc, host in held))
        if not targets:
            return Answer(RCODE.NXDOMAIN, groups={GLOBAL})
        if qtype != QTYPE.PTR:
            return Answer(groups={GLOBAL})
        return Answer(answer=[RR(owner, QTYPE.PTR, rdata=PTR(t), ttl=self.ttl) for t in targets], groups={GLOBAL})

    # Services

    def _targets(self, service: Service, name: Name) -> list[_Target]:
        """Everything `name` (service, endpoint, port filters) selects from `service`, as CoreDNS's findServices."""
        domain = self.settings.cluster_domain.strip(".")
        service_host = f"{service.name}.{service.namespace}.svc.{domain}"
        ports: tuple[Port | None, ...] = service.ports or (None,)
        wanted = [p for p in ports if _port_matches(p, name)]
        found: list[_Target] = []
        if name.endpoint or service.headless:
            for endpoint in self.records.endpoints(service.namespace, service.name):
                if name.endpoint and endpoint.hostname != name.endpoint:
                    continue
                host = f"{endpoint.hostname}.{service_host}"
                endpoint_ports: tuple[Port | None, ...] = endpoint.ports or (None,)
                for port in endpoint_ports:
                    if _port_matches(port, name):
                        found.append(_Target(host, endpoint.address, port))
            return found
        for ip in service.cluster_ips:
            found.extend(_Target(service_host, ip, port) for port in wanted)
        return found

    def _service(self, name: Name, owner: str, qtype: int, depth: int) -> Answer:
        groups = {service_group(name.namespace, name.service)}
        service = None
        if name.namespace in self.records.namespaces:
            service = self.records.service(name.namespace, name.service)
        if service is None:
            return Answer(RCODE.NXDOMAIN, groups=groups)
        if service.external_name:
            return self._external(service, name, owner, qtype, groups, depth)
        targets = self._targets(service, name)
        if not targets:
            return Answer(RCODE.NXDOMAIN, groups=groups)
        if qtype in (QTYPE.A, QTYPE.AAAA):
            family = _family(qtype)
            addresses = dict.fromkeys(t.address for t in targets if t.address and t.address.version == family)
            return Answer(answer=[_address_rr(owner, ip, self.ttl) for ip in addresses if ip], groups=groups)
        if qtype == QTYPE.SRV:
            return self._srv(targets, owner, groups)
        return Answer(groups=groups)  # the name exists: NODATA for every other type

    def _srv(self, targets: list[_Target], owner: str, groups: set[Group]) -> Answer:
        unique = dict.fromkeys((t.host, t.port.number) for t in targets if t.port is not None)
        weight = max(1, 100 // len(unique)) if unique else 0
        answer = [RR(owner, QTYPE.SRV, rdata=SRV(0, weight, port, host + "."), ttl=self.ttl) for host, port in unique]
        glue = dict.fromkeys((t.host, t.address) for t in targets if t.port is not None and t.address is not None)
        additional = [_address_rr(host + ".", address, self.ttl) for host, address in glue if address is not None]
        return Answer(answer=answer, additional=additional, groups=groups)

    def _external(self, service: Service, name: Name, owner: str, qtype: int, groups: set[Group], depth: int) -> Answer:
        target = service.external_name
        try:
            ipaddress.ip_address(target)
            return Answer(RCODE.NXDOMAIN, groups=groups)  # as CoreDNS: an IP is no name to point at
        except ValueError:
            pass
        if name.endpoint or name.port or not target:
            return Answer(RCODE.NXDOMAIN, groups=groups)
        if qtype not in (QTYPE.CNAME, QTYPE.A, QTYPE.AAAA):
            return Answer(groups=groups)
        cname = RR(owner, QTYPE.CNAME, rdata=CNAME(target + "."), ttl=self.ttl)
        if qtype == QTYPE.CNAME:
            return Answer(answer=[cname], groups=groups)
        inside = self.zones.parse(target)
        if inside is None:
            return Answer(answer=[cname], groups=groups, chase=target)
        if target == owner.lower().rstrip(".") or depth >= MAX_CNAME_CHAIN or inside.kind is not Kind.SERVICE:
            return Answer(groups=groups)
        followed = self._service(inside, target + ".", qtype, depth + 1)
        groups |= followed.groups
        if not followed.answer:
            return Answer(groups=groups)  # as CoreDNS: a target without records drops the CNAME too
        return Answer(answer=[cname, *followed.answer], groups=groups, chase=followed.chase)


def _port_matches(port: Port | None, name: Name) -> bool:
    """`_port._proto` against a port, case-insensitively; no filter matches every port (and a Service without ports)."""
    if not name.port and not name.protocol:
        return True
    return port is not None and port.name == name.port and port.protocol == name.protocol
