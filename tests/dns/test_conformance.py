"""The cluster DNS server against the reference (k8s-behaviour.md §7, vectors 39-48): a table of questions with the
answers written as zone-file lines, asked of a real `tinykube up` with dnslib over UDP and TCP and with `dig`.

Three clusters: `main` (service range 10.0.0.0/24,fd00::/108, defaults: ttl 5, pods disabled, no upstream),
`extra` (pods insecure, ttl 600, a loopback upstream resolver) and `verified` (pods verified, zone tiny.test).
Further tests follow changes (Services, readiness, namespaces), the metrics port, a server whose apiserver is gone,
one that never synced, one whose upstreams fail, and what the command line prints and refuses.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml
from dnslib import EDNS0, QTYPE, DNSRecord

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster
from tests.dns.dnsutil import (
    HOST,
    FixedResolver,
    Reply,
    ask,
    create_namespace,
    create_service,
    create_slice,
    dig,
    dns_port,
    endpoint,
    exchange_tcp,
    exchange_udp,
    lines,
    packet,
    pod_body,
    read_framed,
    reply_of,
    run_pod,
    set_pod_status,
    upstream_server,
)

ZONE = "cluster.local"
SOA = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 0 7200 1800 86400 5"
SOA_600 = (
    "cluster.local. 300 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 0 7200 1800 86400 600"  # TTL capped
)
SOA_REV = "0.0.10.in-addr.arpa. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 0 7200 1800 86400 5"
SOA_POD_REV = "244.10.in-addr.arpa. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 0 7200 1800 86400 5"
SOA_TINY = "tiny.test. 5 IN SOA ns.dns.tiny.test. hostmaster.tiny.test. 0 7200 1800 86400 5"
AUTH = frozenset({"qr", "aa", "rd"})  # an authoritative answer to a query asking for recursion
NOT_AUTH = frozenset({"qr", "rd"})
TRUNCATED = frozenset({"qr", "aa", "rd", "tc"})
UPSTREAM_FLAGS = frozenset({"qr", "aa", "rd", "ra"})  # as the loopback upstream sets them
EDNS_OPT = "udp=1232 version=0 rcode=0"

UPSTREAM_ZONE = """
www.example.com. 60 IN A 192.0.2.10
outside.example.org. 60 IN A 192.0.2.20
outside.example.org. 60 IN TXT "hello"
"""

BIG = 500  # endpoints of the headless Service `big`: its answer fits no UDP packet
MID = 40  # endpoints of `mid`: more than 512 bytes, less than 1232
WIDE = 300  # hostnamed endpoints per family of the dual-stack headless Service `wide` (a StatefulSet's)
WIDE_PORTS = 4  # its named ports: an SRV answer for one passes 16 KiB, for all of them 64 KiB


def wide_ip(i: int, family: str = "IPv4") -> str:
    return f"10.247.{i // 200}.{i % 200 + 1}" if family == "IPv4" else f"fd00:2::{i + 1:x}"


def big_ip(i: int) -> str:
    return f"10.245.{i // 200}.{i % 200 + 1}"


def mid_ip(i: int) -> str:
    return f"10.246.0.{i + 1}"


def reverse(address: str) -> str:
    return ipaddress.ip_address(address).reverse_pointer + "."


# ---- clusters ------------------------------------------------------------------------------------------------------


@dataclass
class Dns:
    cluster: RunningCluster
    port: int


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> RunningCluster:
    return start_cluster(tmp_path_factory.mktemp("dns") / name, "--service-cluster-ip-range", "10.0.0.0/24", *flags)


def _stop(cluster: RunningCluster) -> None:
    stop_cluster(cluster)
    shutil.rmtree(cluster.data_dir, ignore_errors=True)


def _wait_for(port: int, name: str, qtype: str, count: int, *, tcp: bool = False) -> None:
    eventually(lambda: len(ask(port, name, qtype, tcp=tcp).rr) == count, what=f"{count} answers to {name} {qtype}")


def _populate_main(api: httpx.Client, port: int) -> None:
    """The objects the table asks about, all in `default` (the vectors' namespace)."""
    ns = "default"
    pg = [{"name": "pg", "port": 5432, "targetPort": 5432}]
    # Vector 43 through the real controllers: pods with a podIP and Ready status, one with hostname/subdomain.
    create_service(api, ns, "db", clusterIP="None", selector={"app": "db"}, ports=pg)
    run_pod(api, ns, pod_body("db-0", {"app": "db"}, hostname="db-0", subdomain="db"), "10.244.1.5")
    run_pod(api, ns, pod_body("db-1", {"app": "db"}), "10.244.2.6")
    create_service(api, ns, "db-down", clusterIP="None", ports=pg)
    down = [endpoint("10.244.9.1", "down-0", ready=False), endpoint("10.244.9.2", ready=False)]
    create_slice(api, ns, "db-down", "db-down-1", down, [{"name": "pg", "port": 5432, "protocol": "TCP"}])
    # publishNotReadyAddresses: the slice controller marks a not-ready pod ready.
    create_service(
        api, ns, "db-pub", clusterIP="None", selector={"app": "pub"}, publishNotReadyAddresses=True, ports=pg
    )
    run_pod(api, ns, pod_body("pub-0", {"app": "pub"}), "10.244.4.4", ready=False)
    # A ClusterIP Service with named ports of two protocols, and endpoints of its own (one with a hostname).
    web_ports = [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "dns", "port": 53, "protocol": "UDP"}]
    create_service(api, ns, "web", clusterIP="10.0.0.30", ports=web_ports)
    web_slice_ports = [
        {"name": "http", "port": 8080, "protocol": "TCP"},
        {"name": "dns", "port": 5353, "protocol": "UDP"},
    ]
    create_slice(api, ns, "web", "web-1", [endpoint("10.244.3.7", "web-0"), endpoint("10.244.3.8")], web_slice_ports)
    create_service(api, ns, "single", clusterIP="10.0.0.40", ports=[{"port": 8080}])  # one unnamed port
    create_service(
        api,
        ns,
        "dual",
        ipFamilyPolicy="RequireDualStack",
        ipFamilies=["IPv4", "IPv6"],
        clusterIP="10.0.0.20",
        clusterIPs=["10.0.0.20", "fd00::20"],
        ports=[{"name": "http", "port": 80}],
    )
    create_service(api, ns, "v6only", ipFamilies=["IPv6"], clusterIP="fd00::21", ports=[{"name": "http", "port": 80}])
    create_service(api, ns, "headless6", clusterIP="None", ports=[{"name": "http", "port": 80}])
    create_service(api, ns, "nilready", clusterIP="None", ports=[{"name": "http", "port": 80}])
    create_slice(
        api, ns, "nilready", "nilready-1", [endpoint("10.244.5.5", ready=None)], [{"name": "http", "port": 80}]
    )
    create_slice(api, ns, "headless6", "headless6-1", [endpoint("fd00:1::5")], [{"name": "http", "port": 80}], "IPv6")
    # ExternalName: out of the zone, an IP, into the zone, a chain, a loop, a dangling target.
    for name, target in [
        ("foo", "www.example.com"),
        ("ip-ext", "1.2.3.4"),
        ("inzone", f"kubernetes.default.svc.{ZONE}"),
        ("chain", f"inzone.default.svc.{ZONE}"),
        ("self", f"self.default.svc.{ZONE}"),
        ("dangling", f"nosuch.default.svc.{ZONE}"),
    ]:
        create_service(api, ns, name, type="ExternalName", externalName=target)
    # Headless Services too big for 512 bytes (`mid`) and for any UDP answer (`big`).
    create_service(api, ns, "mid", clusterIP="None", ports=[{"name": "http", "port": 80}])
    create_slice(api, ns, "mid", "mid-1", [endpoint(mid_ip(i)) for i in range(MID)], [{"name": "http", "port": 80}])
    create_service(api, ns, "big", clusterIP="None", ports=[{"name": "http", "port": 80}])
    for part in range(BIG // 100):
        items = [endpoint(big_ip(i)) for i in range(part * 100, part * 100 + 100)]
        create_slice(api, ns, "big", f"big-{part}", items, [{"name": "http", "port": 80}])
    # Past 16 KiB a name cannot be a compression target; past 64 KiB no DNS message fits a TCP frame.
    wide_ports = [{"name": f"p{p}", "port": 8000 + p, "protocol": "TCP"} for p in range(WIDE_PORTS)]
    service_ports = [{"name": p["name"], "port": p["port"]} for p in wide_ports]
    create_service(api, ns, "wide", clusterIP="None", ports=service_ports)
    for family in ("IPv4", "IPv6"):
        for part in range(WIDE // 100):
            items = [endpoint(wide_ip(i, family), f"h-{i}") for i in range(part * 100, part * 100 + 100)]
            create_slice(api, ns, "wide", f"wide-{family.lower()}-{part}", items, wide_ports, family)
    # Everything is in before the table runs.
    _wait_for(port, f"db.default.svc.{ZONE}", "A", 2)
    _wait_for(port, f"_pg._tcp.db.default.svc.{ZONE}", "SRV", 2)
    _wait_for(port, f"db-pub.default.svc.{ZONE}", "A", 1)
    _wait_for(port, f"big.default.svc.{ZONE}", "A", BIG, tcp=True)
    _wait_for(port, f"dangling.default.svc.{ZONE}", "CNAME", 1)
    _wait_for(port, f"wide.default.svc.{ZONE}", "A", WIDE, tcp=True)
    _wait_for(port, f"wide.default.svc.{ZONE}", "AAAA", WIDE, tcp=True)


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dns]:
    cluster = _start(
        tmp_path_factory, "main", "--service-cluster-ip-range", "10.0.0.0/24,fd00::/108", "--dns-metrics-port", "0"
    )
    try:
        port = dns_port(cluster)
        with cluster.http() as api:
            _populate_main(api, port)
        yield Dns(cluster, port)
    finally:
        _stop(cluster)


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[int, FixedResolver]]:
    with upstream_server(UPSTREAM_ZONE) as server:
        yield server


@pytest.fixture(scope="module")
def extra(tmp_path_factory: pytest.TempPathFactory, upstream: tuple[int, FixedResolver]) -> Iterator[Dns]:
    flags = ("--dns-pods", "insecure", "--dns-ttl", "600", "--dns-upstream", f"127.0.0.1:{upstream[0]}")
    cluster = _start(tmp_path_factory, "extra", *flags)
    try:
        port = dns_port(cluster)
        with cluster.http() as api:
            create_service(api, "default", "foo", type="ExternalName", externalName="www.example.com")
            create_service(api, "default", "gone", type="ExternalName", externalName="nosuch.example.com")
        _wait_for(port, f"gone.default.svc.{ZONE}", "CNAME", 1)
        yield Dns(cluster, port)
    finally:
        _stop(cluster)


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dns]:
    flags = ("--dns-pods", "verified", "--cluster-domain", "tiny.test", "--service-cluster-ip-range", "10.0.0.0/28")
    cluster = _start(tmp_path_factory, "verified", *flags)
    try:
        port = dns_port(cluster)
        with cluster.http() as api:
            run_pod(api, "default", pod_body("p1", {"app": "p"}), "10.244.1.5")
        _wait_for(port, "10-244-1-5.default.pod.tiny.test", "A", 1)
        yield Dns(cluster, port)
    finally:
        _stop(cluster)


# ---- the table -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    id: str
    name: str
    qtype: str
    rcode: str
    answer: tuple[str, ...] = ()
    authority: tuple[str, ...] = ()
    additional: tuple[str, ...] = ()
    flags: frozenset[str] = AUTH
    cluster: str = "main"
    via: tuple[str, ...] = ("udp",)  # udp, tcp (dnslib), dig
    edns: int | None = None  # dnslib only: the UDP size advertised in an OPT record
    edns_version: int = 0
    opt: str | None = None  # the OPT the reply must carry (dnslib with `edns`; dig always sends one)
    note: str = field(default="", compare=False)


def svc(name: str, zone: str = ZONE) -> str:
    return f"{name}.default.svc.{zone}."


K8S = svc("kubernetes")
DB = svc("db")
WEB = svc("web")

WIDE_P0 = f"_p0._tcp.{svc('wide')}"
WIDE_P0_SRV = tuple(f"{WIDE_P0} 5 IN SRV 0 1 8000 h-{i}.{svc('wide')}" for i in range(WIDE))
WIDE_GLUE = tuple(
    f"h-{i}.{svc('wide')} 5 IN {'A' if family == 'IPv4' else 'AAAA'} {wide_ip(i, family)}"
    for i in range(WIDE)
    for family in ("IPv4", "IPv6")
)


ROWS: list[Row] = [
    # Vector 39-41: ClusterIP A/AAAA, missing names, a namespace name.
    Row("v39-a", K8S, "A", "NOERROR", (f"{K8S} 5 IN A 10.0.0.1",), via=("udp", "tcp", "dig")),
    Row("v40-aaaa-nodata", K8S, "AAAA", "NOERROR", authority=(SOA,), via=("udp", "dig")),
    Row("v41-no-service", svc("nosuch"), "A", "NXDOMAIN", authority=(SOA,), via=("udp", "tcp", "dig")),
    Row("v41-no-namespace", f"kubernetes.nosuchns.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("v41-namespace-nodata", f"default.svc.{ZONE}.", "A", "NOERROR", authority=(SOA,), via=("udp", "dig")),
    Row("namespace-missing", f"nosuchns.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    # Vector 42: SRV of a named port, the address in the additional section.
    Row(
        "v42-srv",
        f"_https._tcp.{K8S}",
        "SRV",
        "NOERROR",
        (f"_https._tcp.{K8S} 5 IN SRV 0 100 443 {K8S}",),
        additional=(f"{K8S} 5 IN A 10.0.0.1",),
        via=("udp", "tcp", "dig"),
    ),
    Row("srv-a-query-with-port", f"_https._tcp.{K8S}", "A", "NOERROR", (f"_https._tcp.{K8S} 5 IN A 10.0.0.1",)),
    Row("srv-no-such-port", f"_http._tcp.{K8S}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row("srv-wrong-protocol", f"_https._udp.{K8S}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row(
        "srv-all-ports",
        WEB,
        "SRV",
        "NOERROR",
        (f"{WEB} 5 IN SRV 0 50 80 {WEB}", f"{WEB} 5 IN SRV 0 50 53 {WEB}"),
        additional=(f"{WEB} 5 IN A 10.0.0.30",),
    ),
    Row(
        "srv-udp-port",
        f"_dns._udp.{WEB}",
        "SRV",
        "NOERROR",
        (f"_dns._udp.{WEB} 5 IN SRV 0 100 53 {WEB}",),
        additional=(f"{WEB} 5 IN A 10.0.0.30",),
    ),
    Row("srv-udp-port-as-tcp", f"_dns._tcp.{WEB}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row(
        "srv-unnamed-port",
        svc("single"),
        "SRV",
        "NOERROR",
        (f"{svc('single')} 5 IN SRV 0 100 8080 {svc('single')}",),
        additional=(f"{svc('single')} 5 IN A 10.0.0.40",),
    ),
    Row("srv-unnamed-port-by-name", f"_http._tcp.{svc('single')}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row("a-other-service", WEB, "A", "NOERROR", (f"{WEB} 5 IN A 10.0.0.30",)),
    # Dual-stack and IPv6-only Services.
    Row("dual-a", svc("dual"), "A", "NOERROR", (f"{svc('dual')} 5 IN A 10.0.0.20",)),
    Row("dual-aaaa", svc("dual"), "AAAA", "NOERROR", (f"{svc('dual')} 5 IN AAAA fd00::20",), via=("udp", "dig")),
    Row("v6only-a-nodata", svc("v6only"), "A", "NOERROR", authority=(SOA,)),
    Row("v6only-aaaa", svc("v6only"), "AAAA", "NOERROR", (f"{svc('v6only')} 5 IN AAAA fd00::21",)),
    # Vector 43: a headless Service through the real controllers.
    Row(
        "v43-headless-a",
        DB,
        "A",
        "NOERROR",
        (f"{DB} 5 IN A 10.244.1.5", f"{DB} 5 IN A 10.244.2.6"),
        via=("udp", "tcp", "dig"),
    ),
    Row(
        "v43-headless-srv",
        f"_pg._tcp.{DB}",
        "SRV",
        "NOERROR",
        (f"_pg._tcp.{DB} 5 IN SRV 0 50 5432 db-0.{DB}", f"_pg._tcp.{DB} 5 IN SRV 0 50 5432 10-244-2-6.{DB}"),
        additional=(f"db-0.{DB} 5 IN A 10.244.1.5", f"10-244-2-6.{DB} 5 IN A 10.244.2.6"),
        via=("udp", "dig"),
    ),
    Row(
        "headless-srv-all-ports",
        DB,
        "SRV",
        "NOERROR",
        (f"{DB} 5 IN SRV 0 50 5432 db-0.{DB}", f"{DB} 5 IN SRV 0 50 5432 10-244-2-6.{DB}"),
        additional=(f"db-0.{DB} 5 IN A 10.244.1.5", f"10-244-2-6.{DB} 5 IN A 10.244.2.6"),
    ),
    Row("v43-hostname", f"db-0.{DB}", "A", "NOERROR", (f"db-0.{DB} 5 IN A 10.244.1.5",), via=("udp", "dig")),
    Row("headless-dashed-name", f"10-244-2-6.{DB}", "A", "NOERROR", (f"10-244-2-6.{DB} 5 IN A 10.244.2.6",)),
    Row("headless-hostname-aaaa-nodata", f"db-0.{DB}", "AAAA", "NOERROR", authority=(SOA,)),
    Row("headless-dashed-of-named", f"10-244-1-5.{DB}", "A", "NXDOMAIN", authority=(SOA,)),
    Row("headless-no-such-endpoint", f"db-9.{DB}", "A", "NXDOMAIN", authority=(SOA,)),
    Row("headless-srv-wrong-protocol", f"_pg._udp.{DB}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row("headless-other-type-nodata", DB, "MX", "NOERROR", authority=(SOA,)),
    Row("v43-all-not-ready", svc("db-down"), "A", "NXDOMAIN", authority=(SOA,), via=("udp", "dig")),
    Row("not-ready-hostname", f"down-0.{svc('db-down')}", "A", "NXDOMAIN", authority=(SOA,)),
    Row("not-ready-srv", f"_pg._tcp.{svc('db-down')}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row("publish-not-ready", svc("db-pub"), "A", "NOERROR", (f"{svc('db-pub')} 5 IN A 10.244.4.4",)),
    Row("headless-ipv6", svc("headless6"), "AAAA", "NOERROR", (f"{svc('headless6')} 5 IN AAAA fd00:1::5",)),
    Row(
        "headless-ipv6-dashed",
        f"fd00-1--5.{svc('headless6')}",
        "AAAA",
        "NOERROR",
        (f"fd00-1--5.{svc('headless6')} 5 IN AAAA fd00:1::5",),
    ),
    Row("endpoint-ready-unset", svc("nilready"), "A", "NOERROR", (f"{svc('nilready')} 5 IN A 10.244.5.5",)),
    Row(
        "srv-dual-stack",
        f"_http._tcp.{svc('dual')}",
        "SRV",
        "NOERROR",
        (f"_http._tcp.{svc('dual')} 5 IN SRV 0 100 80 {svc('dual')}",),
        additional=(f"{svc('dual')} 5 IN A 10.0.0.20", f"{svc('dual')} 5 IN AAAA fd00::20"),
    ),
    Row("headless-ipv6-a-nodata", svc("headless6"), "A", "NOERROR", authority=(SOA,)),
    # Endpoint names under a ClusterIP Service.
    Row("clusterip-endpoint-hostname", f"web-0.{WEB}", "A", "NOERROR", (f"web-0.{WEB} 5 IN A 10.244.3.7",)),
    Row("clusterip-endpoint-dashed", f"10-244-3-8.{WEB}", "A", "NOERROR", (f"10-244-3-8.{WEB} 5 IN A 10.244.3.8",)),
    Row(
        "clusterip-endpoint-srv",
        f"web-0.{WEB}",
        "SRV",
        "NOERROR",
        (f"web-0.{WEB} 5 IN SRV 0 50 8080 web-0.{WEB}", f"web-0.{WEB} 5 IN SRV 0 50 5353 web-0.{WEB}"),
        additional=(f"web-0.{WEB} 5 IN A 10.244.3.7",),
    ),
    Row("clusterip-no-endpoint", f"web-9.{WEB}", "A", "NXDOMAIN", authority=(SOA,)),
    # Vector 44 and ExternalName around it (no upstream in `main`: an out-of-zone target resolves to nothing).
    Row(
        "v44-cname", svc("foo"), "CNAME", "NOERROR", (f"{svc('foo')} 5 IN CNAME www.example.com.",), via=("udp", "dig")
    ),
    Row("v44-a-no-upstream", svc("foo"), "A", "NOERROR", authority=(SOA,), via=("udp", "tcp")),
    Row("v44-ip-externalname", svc("ip-ext"), "A", "NXDOMAIN", authority=(SOA,), via=("udp", "dig")),
    Row("externalname-ip-cname", svc("ip-ext"), "CNAME", "NXDOMAIN", authority=(SOA,)),
    Row(
        "externalname-in-zone",
        svc("inzone"),
        "A",
        "NOERROR",
        (f"{svc('inzone')} 5 IN CNAME {K8S}", f"{K8S} 5 IN A 10.0.0.1"),
        via=("udp", "tcp", "dig"),
    ),
    Row("externalname-in-zone-no-aaaa", svc("inzone"), "AAAA", "NOERROR", authority=(SOA,)),
    Row(
        "externalname-chain",
        svc("chain"),
        "A",
        "NOERROR",
        (f"{svc('chain')} 5 IN CNAME {svc('inzone')}", f"{svc('inzone')} 5 IN CNAME {K8S}", f"{K8S} 5 IN A 10.0.0.1"),
    ),
    Row("externalname-loop", svc("self"), "A", "NOERROR", authority=(SOA,)),
    Row("externalname-dangling", svc("dangling"), "A", "NOERROR", authority=(SOA,)),
    Row("externalname-srv", svc("foo"), "SRV", "NOERROR", authority=(SOA,)),
    Row("externalname-txt", svc("foo"), "TXT", "NOERROR", authority=(SOA,)),
    Row("externalname-endpoint", f"x.{svc('foo')}", "A", "NXDOMAIN", authority=(SOA,)),
    Row("externalname-port", f"_http._tcp.{svc('foo')}", "SRV", "NXDOMAIN", authority=(SOA,)),
    # Vector 45: the schema version; TXT elsewhere.
    Row(
        "v45-dns-version",
        f"dns-version.{ZONE}.",
        "TXT",
        "NOERROR",
        (f'dns-version.{ZONE}. 28800 IN TXT "1.1.0"',),
        via=("udp", "tcp", "dig"),
    ),
    Row("dns-version-a", f"dns-version.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("txt-service-nodata", K8S, "TXT", "NOERROR", authority=(SOA,)),
    Row("txt-missing", svc("nosuch"), "TXT", "NXDOMAIN", authority=(SOA,)),
    # Vector 46 (disabled here; insecure and verified in their clusters).
    Row("v46-pods-disabled", f"10-244-1-5.default.pod.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,), via=("udp", "dig")),
    # Vector 47: no wildcards.
    Row("v47-wildcard", f"*.default.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,), via=("udp", "dig")),
    Row("wildcard-any", f"any.default.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("wildcard-namespace", f"kubernetes.*.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("wildcard-namespace-any", f"kubernetes.any.svc.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("wildcard-srv", f"_*._tcp.{K8S}", "SRV", "NXDOMAIN", authority=(SOA,)),
    Row("wildcard-endpoint", f"*.{DB}", "A", "NXDOMAIN", authority=(SOA,)),
    # Vector 48: PTR in the reverse zones of the service and pod ranges.
    Row(
        "v48-ptr-service",
        "1.0.0.10.in-addr.arpa.",
        "PTR",
        "NOERROR",
        (f"1.0.0.10.in-addr.arpa. 5 IN PTR {K8S}",),
        via=("udp", "tcp", "dig"),
    ),
    Row(
        "v48-ptr-endpoint",
        reverse("10.244.1.5"),
        "PTR",
        "NOERROR",
        (f"{reverse('10.244.1.5')} 5 IN PTR db-0.{DB}",),
        via=("udp", "dig"),
    ),
    Row("v48-ptr-unknown", reverse("10.0.0.99"), "PTR", "NXDOMAIN", authority=(SOA_REV,), via=("udp", "dig")),
    Row("ptr-unknown-pod-ip", reverse("10.244.200.1"), "PTR", "NXDOMAIN", authority=(SOA_POD_REV,)),
    Row(
        "ptr-dashed-endpoint",
        reverse("10.244.2.6"),
        "PTR",
        "NOERROR",
        (f"{reverse('10.244.2.6')} 5 IN PTR 10-244-2-6.{DB}",),
    ),
    Row(
        "ptr-clusterip-endpoint",
        reverse("10.244.3.7"),
        "PTR",
        "NOERROR",
        (f"{reverse('10.244.3.7')} 5 IN PTR web-0.{WEB}",),
    ),
    Row("ptr-other-service", reverse("10.0.0.30"), "PTR", "NOERROR", (f"{reverse('10.0.0.30')} 5 IN PTR {WEB}",)),
    Row("ptr-ipv6-service", reverse("fd00::20"), "PTR", "NOERROR", (f"{reverse('fd00::20')} 5 IN PTR {svc('dual')}",)),
    Row("ptr-not-ready-endpoint", reverse("10.244.9.1"), "PTR", "NXDOMAIN", authority=(SOA_POD_REV,)),
    Row("ptr-a-query-nodata", "1.0.0.10.in-addr.arpa.", "A", "NOERROR", authority=(SOA_REV,)),
    Row("ptr-network-address", "0.0.0.10.in-addr.arpa.", "PTR", "NXDOMAIN", authority=(SOA_REV,)),
    Row("ptr-too-many-labels", "1.1.0.0.10.in-addr.arpa.", "PTR", "NXDOMAIN", authority=(SOA_REV,)),
    Row("ptr-outside-ranges", "4.3.2.1.in-addr.arpa.", "PTR", "REFUSED", flags=NOT_AUTH),
    Row("reverse-apex-soa", "0.0.10.in-addr.arpa.", "SOA", "NOERROR", (SOA_REV,)),
    # The apex: SOA and NS (kube-dns is 10.0.0.10), NODATA for the rest; svc/pod roots; names that cannot exist.
    Row("apex-soa", f"{ZONE}.", "SOA", "NOERROR", (SOA,), via=("udp", "tcp", "dig")),
    Row(
        "apex-ns",
        f"{ZONE}.",
        "NS",
        "NOERROR",
        (f"{ZONE}. 5 IN NS {svc('kube-dns').replace('default', 'kube-system')}",),
        additional=(f"kube-dns.kube-system.svc.{ZONE}. 5 IN A 10.0.0.10",),
        via=("udp", "dig"),
    ),
    Row("apex-a-nodata", f"{ZONE}.", "A", "NOERROR", authority=(SOA,)),
    Row("ns-dns-a", f"ns.dns.{ZONE}.", "A", "NOERROR", (f"ns.dns.{ZONE}. 5 IN A 10.0.0.10",)),
    Row("soa-below-apex", K8S, "SOA", "NOERROR", authority=(SOA,)),
    Row("svc-root", f"svc.{ZONE}.", "A", "NOERROR", authority=(SOA,)),
    Row("pod-root", f"pod.{ZONE}.", "A", "NOERROR", authority=(SOA,)),
    Row("not-svc-or-pod", f"foo.{ZONE}.", "A", "NXDOMAIN", authority=(SOA,)),
    Row("too-many-labels", f"a.b.c.{K8S}", "A", "NXDOMAIN", authority=(SOA,)),
    Row("endpoint-prefix-underscore", f"_https.{K8S}", "A", "NXDOMAIN", authority=(SOA,)),
    # Other types: the name exists -> NODATA, else NXDOMAIN; zone transfers refused.
    Row("mx-existing", K8S, "MX", "NOERROR", authority=(SOA,), via=("udp", "dig")),
    Row("mx-missing", svc("nosuch"), "MX", "NXDOMAIN", authority=(SOA,), via=("udp", "dig")),
    Row("caa-existing", K8S, "CAA", "NOERROR", authority=(SOA,)),
    Row("cname-of-clusterip", K8S, "CNAME", "NOERROR", authority=(SOA,)),
    Row("ptr-of-forward-name", K8S, "PTR", "NOERROR", authority=(SOA,)),
    Row("axfr-refused", f"{ZONE}.", "AXFR", "REFUSED", via=("tcp",)),
    # Case: compared without it, answered in the case asked.
    Row(
        "mixed-case",
        "KuberNetes.Default.SVC.Cluster.Local.",
        "A",
        "NOERROR",
        ("KuberNetes.Default.SVC.Cluster.Local. 5 IN A 10.0.0.1",),
        via=("udp", "dig"),
    ),
    Row(
        "mixed-case-srv",
        f"_HTTPS._TCP.Kubernetes.default.svc.{ZONE}.",
        "SRV",
        "NOERROR",
        (f"_HTTPS._TCP.Kubernetes.default.svc.{ZONE}. 5 IN SRV 0 100 443 {K8S}",),
        additional=(f"{K8S} 5 IN A 10.0.0.1",),
    ),
    Row("mixed-case-ptr", "1.0.0.10.IN-ADDR.ARPA.", "PTR", "NOERROR", (f"1.0.0.10.IN-ADDR.ARPA. 5 IN PTR {K8S}",)),
    # Outside the zone, no upstream: REFUSED.
    Row("outside-refused", "example.com.", "A", "REFUSED", flags=NOT_AUTH, via=("udp", "tcp", "dig")),
    Row("outside-suffix-refused", "notcluster.local.", "A", "REFUSED", flags=NOT_AUTH),
    # EDNS0: the OPT echoed with our size; a version we do not speak is BADVERS.
    Row("edns-opt", K8S, "A", "NOERROR", (f"{K8S} 5 IN A 10.0.0.1",), edns=4096, opt=EDNS_OPT, via=("udp", "tcp")),
    Row("edns-small-size", K8S, "A", "NOERROR", (f"{K8S} 5 IN A 10.0.0.1",), edns=256, opt=EDNS_OPT),
    Row("edns-nxdomain", svc("nosuch"), "A", "NXDOMAIN", authority=(SOA,), edns=1232, opt=EDNS_OPT),
    Row(
        "edns-badvers",
        K8S,
        "A",
        "NOERROR",  # BADVERS is 16: 0 in the header, 1 in the OPT record's extended rcode
        edns=1232,
        edns_version=1,
        opt="udp=1232 version=0 rcode=1",
        flags=NOT_AUTH,
    ),
    # Truncation: too big for the client's UDP size -> TC and no records; whole over TCP.
    Row("truncated-no-edns", svc("mid"), "A", "NOERROR", flags=TRUNCATED),
    Row(
        "fits-edns",
        svc("mid"),
        "A",
        "NOERROR",
        tuple(f"{svc('mid')} 5 IN A {mid_ip(i)}" for i in range(MID)),
        edns=1232,
        opt=EDNS_OPT,
    ),
    Row("truncated-500", svc("big"), "A", "NOERROR", flags=TRUNCATED, edns=4096, opt=EDNS_OPT),
    Row("truncated-500-no-edns", svc("big"), "A", "NOERROR", flags=TRUNCATED),
    Row(
        "tcp-500",
        svc("big"),
        "A",
        "NOERROR",
        tuple(f"{svc('big')} 5 IN A {big_ip(i)}" for i in range(BIG)),
        via=("tcp", "dig"),  # dig: over UDP, sees TC, asks again over TCP
    ),
    # A dual-stack StatefulSet of 300: each glue name is written twice (A, AAAA), the second time as a compression
    # pointer to the first, which lies past 16 KiB where no pointer reaches: written out in full instead.
    Row("srv-past-16k", WIDE_P0, "SRV", "NOERROR", WIDE_P0_SRV, additional=WIDE_GLUE, via=("tcp", "dig")),
    Row("srv-past-16k-udp", WIDE_P0, "SRV", "NOERROR", WIDE_P0_SRV, additional=WIDE_GLUE, edns=65000, opt=EDNS_OPT),
    # `extra`: pods insecure, ttl 600, an upstream resolver.
    Row("ttl-flag", K8S, "A", "NOERROR", (f"{K8S} 600 IN A 10.0.0.1",), cluster="extra", via=("udp", "dig")),
    Row("ttl-flag-soa", f"{ZONE}.", "SOA", "NOERROR", (SOA_600,), cluster="extra"),
    Row("ttl-flag-negative", svc("nosuch"), "A", "NXDOMAIN", authority=(SOA_600,), cluster="extra"),
    Row(
        "ttl-flag-txt-keeps-28800",
        f"dns-version.{ZONE}.",
        "TXT",
        "NOERROR",
        (f'dns-version.{ZONE}. 28800 IN TXT "1.1.0"',),
        cluster="extra",
    ),
    Row(
        "v46-pods-insecure",
        f"10-244-1-5.default.pod.{ZONE}.",
        "A",
        "NOERROR",
        (f"10-244-1-5.default.pod.{ZONE}. 600 IN A 10.244.1.5",),
        cluster="extra",
        via=("udp", "dig"),
    ),
    Row(
        "pods-insecure-aaaa-nodata",
        f"10-244-1-5.default.pod.{ZONE}.",
        "AAAA",
        "NOERROR",
        authority=(SOA_600,),
        cluster="extra",
    ),
    Row(
        "pods-insecure-ipv6",
        f"fd00--1.default.pod.{ZONE}.",
        "AAAA",
        "NOERROR",
        (f"fd00--1.default.pod.{ZONE}. 600 IN AAAA fd00::1",),
        cluster="extra",
    ),
    Row(
        "pods-insecure-no-namespace",
        f"10-244-1-5.nosuchns.pod.{ZONE}.",
        "A",
        "NXDOMAIN",
        authority=(SOA_600,),
        cluster="extra",
    ),
    Row("pods-insecure-not-an-ip", f"web.default.pod.{ZONE}.", "A", "NXDOMAIN", authority=(SOA_600,), cluster="extra"),
    Row("pods-namespace-nodata", f"default.pod.{ZONE}.", "A", "NOERROR", authority=(SOA_600,), cluster="extra"),
    Row(
        "v44-a-via-upstream",
        svc("foo"),
        "A",
        "NOERROR",
        (f"{svc('foo')} 600 IN CNAME www.example.com.", "www.example.com. 60 IN A 192.0.2.10"),
        cluster="extra",
        via=("udp", "tcp", "dig"),
    ),
    Row(  # a CNAME question gets just the CNAME, upstream or not
        "v44-cname-with-upstream",
        svc("foo"),
        "CNAME",
        "NOERROR",
        (f"{svc('foo')} 600 IN CNAME www.example.com.",),
        cluster="extra",
    ),
    Row("externalname-upstream-nodata", svc("foo"), "AAAA", "NOERROR", authority=(SOA_600,), cluster="extra"),
    Row("externalname-upstream-nxdomain", svc("gone"), "A", "NOERROR", authority=(SOA_600,), cluster="extra"),
    Row(
        "forwarded",
        "outside.example.org.",
        "A",
        "NOERROR",
        ("outside.example.org. 60 IN A 192.0.2.20",),
        flags=UPSTREAM_FLAGS,
        cluster="extra",
        via=("udp", "tcp", "dig"),
    ),
    Row(
        "forwarded-txt",
        "outside.example.org.",
        "TXT",
        "NOERROR",
        ('outside.example.org. 60 IN TXT "hello"',),
        flags=UPSTREAM_FLAGS,
        cluster="extra",
    ),
    Row("forwarded-nxdomain", "nosuch.example.org.", "A", "NXDOMAIN", flags=UPSTREAM_FLAGS, cluster="extra"),
    Row("forwarded-reverse", "4.3.2.1.in-addr.arpa.", "PTR", "NXDOMAIN", flags=UPSTREAM_FLAGS, cluster="extra"),
    # `verified`: pods verified, zone tiny.test.
    Row(
        "domain-flag",
        svc("kubernetes", "tiny.test"),
        "A",
        "NOERROR",
        (f"{svc('kubernetes', 'tiny.test')} 5 IN A 10.0.0.1",),
        cluster="verified",
        via=("udp", "dig"),
    ),
    Row("domain-flag-soa", "tiny.test.", "SOA", "NOERROR", (SOA_TINY,), cluster="verified"),
    Row("domain-flag-old-zone", K8S, "A", "REFUSED", flags=NOT_AUTH, cluster="verified"),
    Row(
        "domain-flag-version",
        "dns-version.tiny.test.",
        "TXT",
        "NOERROR",
        ('dns-version.tiny.test. 28800 IN TXT "1.1.0"',),
        cluster="verified",
    ),
    Row(
        "domain-flag-ptr",
        "1.0.0.10.in-addr.arpa.",
        "PTR",
        "NOERROR",
        (f"1.0.0.10.in-addr.arpa. 5 IN PTR {svc('kubernetes', 'tiny.test')}",),
        cluster="verified",
    ),
    Row(
        "small-range-ptr",
        reverse("10.0.0.10"),
        "PTR",
        "NOERROR",
        (f"{reverse('10.0.0.10')} 5 IN PTR kube-dns.kube-system.svc.tiny.test.",),
        cluster="verified",
        via=("udp", "dig"),
    ),
    Row(
        "small-range-ptr-unknown",
        reverse("10.0.0.14"),
        "PTR",
        "NXDOMAIN",
        authority=("0.0.10.in-addr.arpa. 5 IN SOA ns.dns.tiny.test. hostmaster.tiny.test. 0 7200 1800 86400 5",),
        cluster="verified",
    ),
    Row(
        "pods-verified",
        "10-244-1-5.default.pod.tiny.test.",
        "A",
        "NOERROR",
        ("10-244-1-5.default.pod.tiny.test. 5 IN A 10.244.1.5",),
        cluster="verified",
        via=("udp", "dig"),
    ),
    Row(
        "pods-verified-unknown-ip",
        "10-244-1-6.default.pod.tiny.test.",
        "A",
        "NXDOMAIN",
        authority=(SOA_TINY,),
        cluster="verified",
    ),
    Row(
        "pods-verified-other-namespace",
        "10-244-1-5.kube-system.pod.tiny.test.",
        "A",
        "NXDOMAIN",
        authority=(SOA_TINY,),
        cluster="verified",
    ),
]


def _ask(row: Row, via: str, port: int) -> Reply:
    if via == "dig":
        return dig(port, row.name, row.qtype)
    data = packet(row.name, row.qtype, edns=row.edns, version=row.edns_version, qid=0x5A5A)
    raw = exchange_tcp(port, data) if via == "tcp" else exchange_udp(port, data)
    record = DNSRecord.parse(raw)
    assert record.header.id == 0x5A5A
    assert [str(q.qname) for q in record.questions] == [row.name], "the question is echoed as asked"
    return reply_of(record)


@pytest.mark.parametrize(
    ("row", "via"), [pytest.param(row, via, id=f"{row.id}-{via}") for row in ROWS for via in row.via]
)
def test_conformance(row: Row, via: str, request: pytest.FixtureRequest) -> None:
    dns: Dns = request.getfixturevalue(row.cluster)
    got = _ask(row, via, dns.port)
    expected = Reply(
        rcode=row.rcode,
        flags=set(row.flags),
        answer=lines(row.answer),
        authority=lines(row.authority),
        additional=lines(row.additional),
    )
    assert (got.rcode, got.answer, got.authority, got.additional) == (
        expected.rcode,
        expected.answer,
        expected.authority,
        expected.additional,
    )
    if via == "dig":
        flags = set(row.flags) - {"tc"}  # dig asks again over TCP when truncated
        assert got.flags == flags
        assert got.opt == EDNS_OPT or "ra" in row.flags  # dig sends EDNS; our OPT says 1232 (upstream: its own)
    else:
        assert got.flags == expected.flags
        assert got.opt == row.opt


def test_tcp_answer_past_64k_keeps_what_fits(main: Dns) -> None:
    """SRV for all four ports of `wide`: 1,200 records and their glue, ~80 KiB, more than one TCP message can hold
    (its length is two bytes). As CoreDNS (miekg/dns `Truncate`): the records that fit, answer section first, TC
    set; and the connection stays in step for the next question."""
    name = svc("wide")
    every = {f"{name} 5 IN SRV 0 1 {8000 + p} h-{i}.{name}" for i in range(WIDE) for p in range(WIDE_PORTS)}
    with socket.create_connection((HOST, main.port), timeout=10) as sock:
        for query in (packet(name, "SRV", qid=1), packet(K8S, "A", qid=2)):
            sock.sendall(struct.pack("!H", len(query)) + query)
        raw = read_framed(sock)
        got = reply_of(DNSRecord.parse(raw))
        assert (got.rcode, got.flags, got.additional) == ("NOERROR", set(TRUNCATED), set())
        assert len(raw) > 60_000 and got.answer < every and len(got.answer) > 1000
        assert reply_of(DNSRecord.parse(read_framed(sock))).answer == {f"{K8S} 5 IN A 10.0.0.1"}


@pytest.mark.parametrize("tcp", [False, True], ids=["udp", "tcp"])
def test_the_do_bit_is_echoed(main: Dns, tcp: bool) -> None:
    """RFC 3225: the query's DO bit is copied into the response's OPT record (as CoreDNS does); no DO, none back."""
    for do in (True, False, True):  # over UDP the second DO question is answered from the response cache
        query = DNSRecord.question(K8S, "A")
        query.add_ar(EDNS0(udp_len=1232, flags="do" if do else ""))
        data = query.pack()
        reply = DNSRecord.parse(exchange_tcp(main.port, data) if tcp else exchange_udp(main.port, data))
        [opt] = [rr for rr in reply.ar if rr.rtype == QTYPE.OPT]
        assert (bool(opt.ttl & 0x8000), reply_of(reply).answer) == (do, {f"{K8S} 5 IN A 10.0.0.1"})


# ---- answers following changes -------------------------------------------------------------------------------------


def _answer(port: int, name: str, qtype: str = "A") -> tuple[str, set[str]]:
    """The rcode and answer lines (the response cache must not hide a change)."""
    got = reply_of(ask(port, name, qtype))
    return got.rcode, got.answer


def _fresh_namespace(api: httpx.Client, prefix: str) -> str:
    name = f"{prefix}-{os.urandom(3).hex()}"
    create_namespace(api, name)
    return name


def test_answers_follow_service_create_and_delete(main: Dns) -> None:
    with main.cluster.http() as api:
        ns = _fresh_namespace(api, "dns-svc")
        name, ptr = f"web.{ns}.svc.{ZONE}.", reverse("10.0.0.50")
        for _ in range(2):  # the second one is answered from the response cache
            assert _answer(main.port, name) == ("NXDOMAIN", set())
        assert _answer(main.port, ptr, "PTR") == ("NXDOMAIN", set())

        create_service(api, ns, "web", clusterIP="10.0.0.50", ports=[{"name": "http", "port": 80}])
        eventually(lambda: _answer(main.port, name) == ("NOERROR", {f"{name} 5 IN A 10.0.0.50"}), what="the new A")
        assert _answer(main.port, ptr, "PTR") == ("NOERROR", {f"{ptr} 5 IN PTR {name}"})
        srv = f"_http._tcp.{name}"
        assert _answer(main.port, srv, "SRV") == ("NOERROR", {f"{srv} 5 IN SRV 0 100 80 {name}"})

        assert api.delete(f"/api/v1/namespaces/{ns}/services/web").status_code == 200
        eventually(lambda: _answer(main.port, name) == ("NXDOMAIN", set()), what="NXDOMAIN after the delete")
        assert _answer(main.port, ptr, "PTR") == ("NXDOMAIN", set())
        assert _answer(main.port, srv, "SRV") == ("NXDOMAIN", set())
        api.delete(f"/api/v1/namespaces/{ns}")


def test_headless_answers_follow_readiness(main: Dns) -> None:
    with main.cluster.http() as api:
        ns = _fresh_namespace(api, "dns-ready")
        create_service(api, ns, "db", clusterIP="None", selector={"app": "db"}, ports=[{"name": "pg", "port": 5432}])
        run_pod(api, ns, pod_body("a", {"app": "db"}), "10.244.7.1")
        run_pod(api, ns, pod_body("b", {"app": "db"}), "10.244.7.2")
        name = f"db.{ns}.svc.{ZONE}."
        both = {f"{name} 5 IN A 10.244.7.1", f"{name} 5 IN A 10.244.7.2"}
        eventually(lambda: _answer(main.port, name) == ("NOERROR", both), what="both endpoints")
        assert _answer(main.port, reverse("10.244.7.2"), "PTR") == (
            "NOERROR",
            {f"{reverse('10.244.7.2')} 5 IN PTR 10-244-7-2.{name}"},
        )

        set_pod_status(api, ns, "b", "10.244.7.2", ready=False)
        one = {f"{name} 5 IN A 10.244.7.1"}
        eventually(lambda: _answer(main.port, name) == ("NOERROR", one), what="b dropped when not ready")
        assert _answer(main.port, f"10-244-7-2.{name}") == ("NXDOMAIN", set())
        assert _answer(main.port, reverse("10.244.7.2"), "PTR") == ("NXDOMAIN", set())

        set_pod_status(api, ns, "a", "10.244.7.1", ready=False)
        eventually(lambda: _answer(main.port, name) == ("NXDOMAIN", set()), what="NXDOMAIN with no ready endpoint")
        assert _answer(main.port, f"_pg._tcp.{name}", "SRV") == ("NXDOMAIN", set())

        set_pod_status(api, ns, "a", "10.244.7.1", ready=True)
        eventually(lambda: _answer(main.port, name) == ("NOERROR", one), what="a back when ready")
        api.delete(f"/api/v1/namespaces/{ns}")


def test_namespace_names_follow_namespaces(main: Dns) -> None:
    with main.cluster.http() as api:
        ns = f"dns-ns-{os.urandom(3).hex()}"
        name = f"{ns}.svc.{ZONE}."
        assert _answer(main.port, name) == ("NXDOMAIN", set())
        create_namespace(api, ns)
        eventually(lambda: _answer(main.port, name) == ("NOERROR", set()), what="NODATA for a new namespace")
        assert api.delete(f"/api/v1/namespaces/{ns}").status_code == 200
        eventually(lambda: _answer(main.port, name) == ("NXDOMAIN", set()), what="NXDOMAIN once it is gone")


# ---- the metrics port ----------------------------------------------------------------------------------------------


def _metrics(port: int) -> dict[str, float]:
    response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert response.status_code == 200
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def _total(samples: dict[str, float], metric: str, *labels: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(metric + "{") and all(label in k for label in labels))


def test_health_ready_and_metrics(main: Dns) -> None:
    port = dns_port(main.cluster, "dns_metrics")
    base = f"http://127.0.0.1:{port}"
    health = httpx.get(f"{base}/health", timeout=10)
    assert (health.status_code, health.text) == (200, "OK")
    assert httpx.get(f"{base}/ready", timeout=10).status_code == 200
    assert httpx.get(f"{base}/nosuch", timeout=10).status_code == 404

    before = _metrics(port)
    for i in range(5):  # HINFO: no other test asks it; each name twice, the second from the response cache
        for _ in range(2):
            assert ask(main.port, f"nosuch-{i}.default.svc.{ZONE}", "HINFO").header.rcode == 3
    assert ask(main.port, K8S, "HINFO", tcp=True).header.rcode == 0
    after = _metrics(port)

    requests = "coredns_dns_requests_total"
    assert _total(after, requests, 'proto="udp"', 'type="HINFO"') == 10
    assert _total(after, requests, 'proto="tcp"', 'type="HINFO"') == 1
    assert _total(after, requests) >= _total(before, requests) + 11
    assert _total(after, requests, 'family="1"', f'zone="{ZONE}."') > 0
    nx = 'rcode="NXDOMAIN"'
    assert _total(after, "coredns_dns_responses_total", nx) >= _total(before, "coredns_dns_responses_total", nx) + 10
    assert _total(after, "coredns_dns_request_duration_seconds_count", 'type="HINFO"') == 11
    assert _total(after, "coredns_dns_request_duration_seconds_bucket", 'type="HINFO"', 'le="+Inf"') == 11
    assert _total(after, "coredns_dns_request_duration_seconds_sum", 'type="HINFO"') > 0
    assert after["coredns_panics_total"] == 0


# ---- without an apiserver ------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class StandaloneDns:
    proc: subprocess.Popen[bytes]
    port: int
    metrics_port: int


def _run_dns(kubeconfig: Path, log: Path, *flags: str) -> StandaloneDns:
    """`tinykube dns` as its own process; its port read from what it prints."""
    metrics_port = _free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tinykube.cli",
                "dns",
                "--kubeconfig",
                str(kubeconfig),
                "--port",
                "0",
                "--metrics-port",
                str(metrics_port),
                "--service-cluster-ip-range",
                "10.0.0.0/24",
                *flags,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        found = eventually(
            lambda: re.search(r"dns: 127\.0\.0\.1:(\d+)", log.read_text()) or proc.poll() is not None,
            what="tinykube dns to listen",
        )
        assert proc.poll() is None, log.read_text()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    assert isinstance(found, re.Match)
    return StandaloneDns(proc, int(found.group(1)), metrics_port)


def _end(dns: StandaloneDns) -> None:
    if dns.proc.poll() is None:
        dns.proc.send_signal(signal.SIGTERM)
        try:
            dns.proc.wait(20)
        except subprocess.TimeoutExpired:
            dns.proc.kill()
            dns.proc.wait()


def test_keeps_answering_when_the_apiserver_is_gone(tmp_path_factory: pytest.TempPathFactory) -> None:
    cluster = _start(tmp_path_factory, "gone", "--dns-port", "-1")
    dns = None
    try:
        dns = _run_dns(cluster.kubeconfig, cluster.data_dir.parent / "gone-dns.log")
        with cluster.http() as api:
            create_service(api, "default", "kept", clusterIP="10.0.0.60", ports=[{"name": "http", "port": 80}])
        kept = svc("kept")
        eventually(lambda: _answer(dns.port, kept) == ("NOERROR", {f"{kept} 5 IN A 10.0.0.60"}), what="kept")
        # A name is answered as soon as its Service's watch has it; /ready waits for every watch to sync.
        ready = f"http://127.0.0.1:{dns.metrics_port}/ready"
        eventually(lambda: httpx.get(ready, timeout=10).status_code == 200, what="/ready")

        stop_cluster(cluster)  # apiserver and etcd gone
        deadline = time.monotonic() + 2  # the informers retry meanwhile; the answers stay
        while time.monotonic() < deadline:
            assert _answer(dns.port, kept) == ("NOERROR", {f"{kept} 5 IN A 10.0.0.60"})
            assert reply_of(ask(dns.port, K8S, tcp=True)).answer == {f"{K8S} 5 IN A 10.0.0.1"}
            assert _answer(dns.port, svc("nosuch")) == ("NXDOMAIN", set())
            assert _answer(dns.port, reverse("10.0.0.60"), "PTR") == (
                "NOERROR",
                {f"{reverse('10.0.0.60')} 5 IN PTR {kept}"},
            )
            time.sleep(0.1)
        assert dns.proc.poll() is None
        assert httpx.get(f"http://127.0.0.1:{dns.metrics_port}/health", timeout=10).status_code == 200
    finally:
        if dns is not None:
            _end(dns)
        _stop(cluster)


def test_not_ready_until_synced(main: Dns, tmp_path: Path) -> None:
    """A server whose apiserver never answers: listening, /health OK, /ready 503, and no name said not to exist."""
    with socket.socket() as closed:  # bound, never listening: connections to it are refused
        closed.bind(("127.0.0.1", 0))
        config = yaml.safe_load(main.cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{closed.getsockname()[1]}"
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        dns = _run_dns(kubeconfig, tmp_path / "dns.log")
        try:
            base = f"http://127.0.0.1:{dns.metrics_port}"
            eventually(lambda: _probe(f"{base}/health") == 200, what="/health")
            ready = httpx.get(f"{base}/ready", timeout=10)
            assert ready.status_code == 503, ready.text
            assert _answer(dns.port, K8S) == ("SERVFAIL", set())  # it may exist: not NXDOMAIN before the sync
            assert _answer(dns.port, f"{ZONE}.", "SOA")[0] == "NOERROR"
            assert _answer(dns.port, "example.com.")[0] == "REFUSED"
            assert dns.proc.poll() is None
        finally:
            _end(dns)


def _probe(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.TransportError:
        return None


# ---- upstreams that fail -------------------------------------------------------------------------------------------


def test_upstreams_tried_in_order_and_servfail_when_none_answers(
    main: Dns, upstream: tuple[int, FixedResolver], tmp_path: Path
) -> None:
    """The next upstream when one fails; with none answering, a forwarded question is SERVFAIL (CoreDNS's
    `forward`) and an ExternalName out of the zone is NODATA (no CNAME without its target's records)."""
    dead = f"127.0.0.1:{_free_port()}"  # nothing listens there: refused at once
    foo = svc("foo")
    dns = _run_dns(main.cluster.kubeconfig, tmp_path / "fallback.log", "--upstream", f"{dead},127.0.0.1:{upstream[0]}")
    try:
        resolved = ("NOERROR", {f"{foo} 5 IN CNAME www.example.com.", "www.example.com. 60 IN A 192.0.2.10"})
        eventually(lambda: _answer(dns.port, foo) == resolved, what="the ExternalName through the second upstream")
        assert _answer(dns.port, "outside.example.org.") == ("NOERROR", {"outside.example.org. 60 IN A 192.0.2.20"})
        assert reply_of(ask(dns.port, "outside.example.org.", tcp=True)).rcode == "NOERROR"
    finally:
        _end(dns)
    dns = _run_dns(main.cluster.kubeconfig, tmp_path / "dead.log", "--upstream", dead)
    try:
        eventually(lambda: _answer(dns.port, K8S) == ("NOERROR", {f"{K8S} 5 IN A 10.0.0.1"}), what="synced")
        assert _answer(dns.port, "outside.example.org.") == ("SERVFAIL", set())
        assert reply_of(ask(dns.port, "outside.example.org.", tcp=True)).rcode == "SERVFAIL"
        got = reply_of(ask(dns.port, foo))
        assert (got.rcode, got.answer, got.authority) == ("NOERROR", set(), lines([SOA]))
        assert dns.proc.poll() is None
    finally:
        _end(dns)


# ---- the command line ----------------------------------------------------------------------------------------------


def _resolver_hint(port: int) -> str:
    """What `tinykube up` and `tinykube dns` print: a dig line, a systemd-resolved drop-in that can be pasted as it
    is (a section header and one setting per line), and dnsmasq's server line."""
    return (
        f"  dns:  dig @127.0.0.1 -p {port} kubernetes.default.svc.{ZONE}\n"
        "        systemd-resolved (a drop-in such as /etc/systemd/resolved.conf.d/tinykube.conf):\n"
        "          [Resolve]\n"
        f"          DNS=127.0.0.1:{port}\n"
        f"          Domains=~{ZONE}\n"
        f"        dnsmasq: server=/{ZONE}/127.0.0.1#{port}\n"
    )


def test_up_prints_how_the_host_resolves_the_zone(main: Dns) -> None:
    log = main.cluster.data_dir.parent / f"{main.cluster.data_dir.name}.log"
    eventually(lambda: "dnsmasq" in log.read_text(), what="the DNS hint")
    assert _resolver_hint(main.port) in log.read_text()


def test_standalone_dns_prints_how_the_host_resolves_the_zone(main: Dns, tmp_path: Path) -> None:
    dns = _run_dns(main.cluster.kubeconfig, tmp_path / "dns.log")
    try:
        eventually(lambda: "dnsmasq" in (tmp_path / "dns.log").read_text(), what="the DNS hint")
        assert _resolver_hint(dns.port) in (tmp_path / "dns.log").read_text()
    finally:
        _end(dns)


@pytest.mark.parametrize("ttl", ["-1", "3601"])
def test_a_ttl_out_of_range_is_refused(ttl: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tinykube.cli", "dns", "--kubeconfig", str(tmp_path / "kubeconfig"), "--ttl", ttl],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert f"ttl must be in range [0, 3600]: {ttl}" in result.stderr  # CoreDNS's message
