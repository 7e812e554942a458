"""The pure parts of the DNS server: reverse zones of the configured ranges, pod and dashed addresses, the query-name
grammar (CoreDNS's `[endpoint|_port._proto].service.namespace.(svc|pod)`), what a slice publishes, and reading
query packets."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from dnslib import AAAA, EDNS0, QTYPE, RCODE, RR, SRV, A, DNSLabel, DNSRecord

from tinykube.dns import wire
from tinykube.dns.answers import Answer
from tinykube.dns.names import Kind, Name, Zones, pod_address, reverse_zones
from tinykube.dns.records import dashed, endpoints_from

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("cidrs", "zones"),
    [
        (["10.0.0.0/24"], ["0.0.10.in-addr.arpa"]),
        (["10.244.0.0/16"], ["244.10.in-addr.arpa"]),
        (["10.0.0.0/8"], ["10.in-addr.arpa"]),
        (["10.0.0.0/23"], ["0.0.10.in-addr.arpa", "1.0.10.in-addr.arpa"]),
        (["10.96.0.0/12"], [f"{n}.10.in-addr.arpa" for n in range(96, 112)]),
        (["10.0.0.5/24"], ["0.0.10.in-addr.arpa"]),  # host bits ignored
        (["0.0.0.0/0"], ["in-addr.arpa"]),
        (["10.0.0.0/24", "10.0.0.0/25"], ["0.0.10.in-addr.arpa"]),  # no duplicates
        # Past the last whole label a zone would be one address, its own apex: the enclosing zone is served.
        (["10.0.0.0/28"], ["0.0.10.in-addr.arpa"]),
        (["10.0.0.16/28", "10.0.1.7/32"], ["0.0.10.in-addr.arpa", "1.0.10.in-addr.arpa"]),
        (["fd00::/125"], [".".join(["0"] * 29 + ["d", "f", "ip6", "arpa"])]),
        (["fd00::/8"], ["d.f.ip6.arpa"]),
        (["fd00::/108"], [".".join(["0"] * 25 + ["d", "f", "ip6", "arpa"])]),  # 27 nibbles
        (["fd00::/107"], [".".join([n, *["0"] * 24, "d", "f", "ip6", "arpa"]) for n in "01"]),
        (["fd00:10::/112"], [".".join(["0"] * 21 + ["1", "0", "0", "0", "0", "d", "f", "ip6", "arpa"])]),
    ],
)
def test_reverse_zones(cidrs: list[str], zones: list[str]) -> None:
    assert reverse_zones(cidrs) == zones


def test_reverse_zones_cover_every_address_of_the_range() -> None:
    zones = reverse_zones(["10.96.0.0/12", "fd00::/108"])
    for address in ["10.96.0.1", "10.111.255.254", "fd00::1", "fd00::f:ffff"]:
        pointer = ip(address).reverse_pointer
        assert sum(pointer.endswith("." + zone) for zone in zones) == 1, address
    for address in ["10.95.255.255", "10.112.0.0", "fd00::10:0"]:
        assert not any(ip(address).reverse_pointer.endswith("." + zone) for zone in zones), address


def test_reverse_zones_reject_what_is_no_range() -> None:
    with pytest.raises(ValueError):
        reverse_zones(["10.0.0.0/33"])
    with pytest.raises(ValueError):
        reverse_zones(["not-a-cidr"])


@pytest.mark.parametrize(
    ("label", "address"),
    [
        ("10-244-1-5", "10.244.1.5"),
        ("0-0-0-0", "0.0.0.0"),
        ("fd00--1", "fd00::1"),
        ("fd00--0", "fd00::"),
        ("--1", "::1"),
        ("2001-db8-0-0-0-0-0-1", "2001:db8::1"),
        ("10-244-1", None),  # two dashes: read as IPv6, which it is not
        ("10-244-1-5-6", None),
        ("10-244-1-256", None),
        ("a-b-c-d", None),
        ("web", None),
        ("", None),
        ("10--1-5", "10::1:5"),  # three dashes but a `--`: IPv6
    ],
)
def test_pod_address(label: str, address: str | None) -> None:
    assert pod_address(label) == (ip(address) if address else None)


@pytest.mark.parametrize(
    ("address", "label"),
    [("10.244.1.5", "10-244-1-5"), ("fd00::", "fd00--0"), ("::1", "0--1"), ("fd00:1::5", "fd00-1--5")],
)
def test_dashed_names_are_labels_that_read_back(address: str, label: str) -> None:
    assert dashed(ip(address)) == label
    assert pod_address(label) == ip(address)


ZONES = Zones("Cluster.Local.", reverse_zones(["10.0.0.0/24", "10.244.0.0/16", "fd00::/108"]))
REV = "0.0.10.in-addr.arpa"
POD_REV = "244.10.in-addr.arpa"
V6_REV = reverse_zones(["fd00::/108"])[0]


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("cluster.local", Name(Kind.APEX, "cluster.local")),
        ("svc.cluster.local", Name(Kind.SVC_ROOT, "cluster.local")),
        ("pod.cluster.local", Name(Kind.SVC_ROOT, "cluster.local")),
        ("dns-version.cluster.local", Name(Kind.DNS_VERSION, "cluster.local")),
        ("ns.dns.cluster.local", Name(Kind.NS_DNS, "cluster.local")),
        ("default.svc.cluster.local", Name(Kind.NAMESPACE, "cluster.local", namespace="default")),
        ("default.pod.cluster.local", Name(Kind.NAMESPACE, "cluster.local", namespace="default")),
        (
            "kubernetes.default.svc.cluster.local",
            Name(Kind.SERVICE, "cluster.local", namespace="default", service="kubernetes"),
        ),
        (
            "db-0.db.default.svc.cluster.local",
            Name(Kind.SERVICE, "cluster.local", namespace="default", service="db", endpoint="db-0"),
        ),
        (
            "_https._tcp.kubernetes.default.svc.cluster.local",
            Name(
                Kind.SERVICE, "cluster.local", namespace="default", service="kubernetes", port="https", protocol="tcp"
            ),
        ),
        (  # as CoreDNS: the underscores are stripped when present, not required
            "https.tcp.kubernetes.default.svc.cluster.local",
            Name(
                Kind.SERVICE, "cluster.local", namespace="default", service="kubernetes", port="https", protocol="tcp"
            ),
        ),
        (
            "10-244-1-5.default.pod.cluster.local",
            Name(Kind.POD, "cluster.local", namespace="default", address=ip("10.244.1.5")),
        ),
        ("web.default.pod.cluster.local", Name(Kind.POD, "cluster.local", namespace="default")),
        ("a.b.default.pod.cluster.local", Name(Kind.MISSING, "cluster.local")),
        ("a.b.c.kubernetes.default.svc.cluster.local", Name(Kind.MISSING, "cluster.local")),
        ("foo.cluster.local", Name(Kind.MISSING, "cluster.local")),
        ("kubernetes.default.cluster.local", Name(Kind.MISSING, "cluster.local")),
        ("dns-version.svc.cluster.local", Name(Kind.NAMESPACE, "cluster.local", namespace="dns-version")),
        ("x.dns-version.cluster.local", Name(Kind.MISSING, "cluster.local")),
        ("ns.dns.svc.cluster.local", Name(Kind.SERVICE, "cluster.local", namespace="dns", service="ns")),
        ("kubernetes..svc.cluster.local", Name(Kind.MISSING, "cluster.local")),
        (REV, Name(Kind.APEX, REV)),
        ("1.0.0.10.in-addr.arpa", Name(Kind.REVERSE, REV, address=ip("10.0.0.1"))),
        ("5.1.244.10.in-addr.arpa", Name(Kind.REVERSE, POD_REV, address=ip("10.244.1.5"))),
        ("0.0.10.in-addr.arpa.x", None),
        ("0.1.0.0.10.in-addr.arpa", Name(Kind.MISSING, REV)),  # five labels: no address
        ("0.0.0.10.in-addr.arpa", Name(Kind.REVERSE, REV, address=ip("10.0.0.0"))),
        ("x.0.0.10.in-addr.arpa", Name(Kind.MISSING, REV)),
        ("256.0.0.10.in-addr.arpa", Name(Kind.MISSING, REV)),
        ("01.0.0.10.in-addr.arpa", Name(Kind.MISSING, REV)),
        ("1.1.10.in-addr.arpa", None),  # 10.1.x is in no configured range
        (ip("fd00::20").reverse_pointer, Name(Kind.REVERSE, V6_REV, address=ip("fd00::20"))),
        ("0." + V6_REV, Name(Kind.MISSING, V6_REV)),
        ("g.0.0.0.0." + V6_REV, Name(Kind.MISSING, V6_REV)),
        ("10.0.0.0.0." + V6_REV, Name(Kind.MISSING, V6_REV)),  # a label of two nibbles
        ("example.com", None),
        ("notcluster.local", None),
        ("local", None),
        ("4.3.2.1.in-addr.arpa", None),
        ("in-addr.arpa", None),
    ],
)
def test_name_grammar(name: str, parsed: Name | None) -> None:
    assert ZONES.parse(name) == parsed


def test_every_address_of_a_small_range_has_a_reverse_name() -> None:
    zones = Zones("cluster.local", reverse_zones(["10.0.0.0/28", "fd00::/125"]))
    for address in ["10.0.0.1", "10.0.0.14", "fd00::1", "fd00::7"]:
        assert zones.parse(ip(address).reverse_pointer) == Name(
            Kind.REVERSE, zones.zone_of(ip(address).reverse_pointer) or "", address=ip(address)
        )


def test_the_most_specific_zone_wins() -> None:
    zones = Zones("in-addr.arpa", reverse_zones(["10.0.0.0/24"]))  # a cluster domain that holds a reverse zone
    assert zones.zone_of("1.0.0.10.in-addr.arpa") == "0.0.10.in-addr.arpa"
    assert zones.zone_of("1.0.0.11.in-addr.arpa") == "in-addr.arpa"


def _slice(*endpoints: dict[str, object], address_type: str = "IPv4") -> dict[str, object]:
    return {"addressType": address_type, "endpoints": list(endpoints), "ports": [{"name": "HTTP", "port": 80}]}


def test_a_slice_publishes_ready_and_unset_endpoints_only() -> None:
    published = endpoints_from(
        _slice(
            {"addresses": ["10.244.1.5"], "hostname": "DB-0", "conditions": {"ready": True}},
            {"addresses": ["10.244.1.6"], "conditions": {}},  # ready unset: ready
            {"addresses": ["10.244.1.7"]},
            {"addresses": ["10.244.1.8"], "conditions": {"ready": False, "serving": True, "terminating": True}},
            {"addresses": ["not-an-ip"]},
        )
    )
    assert [(str(e.address), e.hostname) for e in published] == [
        ("10.244.1.5", "db-0"),
        ("10.244.1.6", "10-244-1-6"),
        ("10.244.1.7", "10-244-1-7"),
    ]
    assert {(p.name, p.protocol, p.number) for e in published for p in e.ports} == {("http", "tcp", 80)}
    assert endpoints_from(_slice({"addresses": ["db.example.com"]}, address_type="FQDN")) == ()


# ---- reading query packets -----------------------------------------------------------------------------------------


def _query(labels: tuple[bytes, ...], qtype: int = 1) -> bytes:
    name = b"".join(bytes([len(label)]) + label for label in labels) + b"\x00"
    return struct.pack("!HHHHHH", 77, 0x0100, 1, 0, 0, 0) + name + struct.pack("!HH", qtype, 1)


def test_a_name_longer_than_255_octets_is_formerr() -> None:
    fits = (b"a",) * 127  # 127 * 2 + 1 = 255 octets
    assert wire.parse_query(_query(fits)).qname == "a." * 127
    with pytest.raises(wire.Malformed) as caught:
        wire.parse_query(_query((b"a",) * 128))
    assert DNSRecord.parse(caught.value.response).header.rcode == RCODE.FORMERR


def test_a_dot_inside_a_label_is_not_a_label_boundary() -> None:
    labels = (b"kubernetes.default", b"svc", b"cluster", b"local")
    query = wire.parse_query(_query(labels))
    assert query.qname == "kubernetes\\.default.svc.cluster.local."
    assert ZONES.parse(query.qname.lower().rstrip(".")) != ZONES.parse("kubernetes.default.svc.cluster.local")
    response, _ = wire.encode(query, Answer(RCODE.NXDOMAIN), limit=512)
    assert DNSRecord.parse(response).q.qname.label == labels  # the question comes back as it was asked


@pytest.mark.parametrize("labels", [(b"a b", b"Cluster", b"local"), (b"x.", b"y"), (b"\\", b".")])
def test_the_question_is_echoed_byte_for_byte(labels: tuple[bytes, ...]) -> None:
    query = wire.parse_query(_query(labels))
    response, _ = wire.encode(query, Answer(), limit=512)
    assert DNSRecord.parse(response).q.qname.label == labels
    assert DNSLabel(labels) == query.question_name


# ---- writing responses ---------------------------------------------------------------------------------------------


def test_a_udp_size_past_what_a_datagram_holds_is_capped() -> None:
    offer = DNSRecord.question("a.cluster.local")
    offer.add_ar(EDNS0(udp_len=65535))
    assert wire.parse_query(offer.pack()).udp_size == wire.MAX_UDP_SIZE == 65507  # 65535 - IPv4 and UDP headers


def _question(name: str, qtype: str) -> wire.Query:
    return wire.parse_query(DNSRecord.question(name, qtype).pack())


def test_names_past_16k_are_written_out_not_pointed_at() -> None:
    """A compression pointer has 14 bits: a name first written past offset 16383 cannot be pointed at (dnslib
    would mask the offset and point into the middle of something else)."""
    owner = "_pg._tcp.db.default.svc.cluster.local."
    hosts = [f"db-{i}.db.default.svc.cluster.local." for i in range(300)]
    answer = Answer(
        answer=[RR(owner, QTYPE.SRV, rdata=SRV(0, 1, 5432, host), ttl=5) for host in hosts],
        additional=[RR(host, QTYPE.A, rdata=A(f"10.244.1.{i % 250}"), ttl=5) for i, host in enumerate(hosts)]
        + [RR(host, QTYPE.AAAA, rdata=AAAA(f"fd00::{i + 1:x}"), ttl=5) for i, host in enumerate(hosts)],
    )
    data, truncated = wire.encode(_question(owner, "SRV"), answer, limit=None)
    assert len(data) > 16384 and not truncated
    glue = DNSRecord.parse(data).ar
    assert [str(rr.rname) for rr in glue] == hosts + hosts


def test_a_tcp_answer_past_64k_keeps_the_records_that_fit() -> None:
    owner = "big.default.svc.cluster.local."
    records = [RR(owner, QTYPE.A, rdata=A(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"), ttl=5) for i in range(5000)]
    glue = [RR("x." + owner, QTYPE.A, rdata=A("10.0.0.1"), ttl=5)]
    data, truncated = wire.encode(_question(owner, "A"), Answer(answer=records, additional=glue), limit=None)
    reply = DNSRecord.parse(data)
    assert truncated and reply.header.tc == 1
    assert len(data) <= 65535 < len(data) + 16  # 16 octets: one more A record (its name a pointer)
    assert reply.rr == records[: len(reply.rr)] and reply.ar == []
