"""The nftables proxier: golden transaction text from the pure planner, then real `nft` and real packets inside a
throwaway network namespace (root only; nothing touches the root namespace)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinykube.proxy.model import Endpoint, PortTable, ServicePort
from tinykube.proxy.nftables import (
    NftablesProxier,
    NftError,
    NftRunner,
    NodeConfig,
    _Discard,
    endpoint_base,
    full_script,
    incremental_script,
    service_base,
)
from tinykube.sandbox import netns

M80 = 80 << 14  # the mark base of TCP port 80 (nftables.mark_base)
CONFIG = NodeConfig(
    node_name="node-1", node_ips=["10.244.0.1"], cluster_cidr="10.244.0.0/16", service_cidrs=["10.96.0.0/16"]
)
T = "ip kube-proxy"
SVC = "service-ULMVA6XW-ns1/svc1/tcp/p80"
EP_A = "endpoint-XPXKCKG5-ns1/svc1/tcp/p80__10.244.0.5/8080"
EP_B = "endpoint-TNFFH6U2-ns1/svc1/tcp/p80__10.244.1.5/8080"


def ep(ip: str, node: str = "node-1", *, ready: bool = True, terminating: bool = False) -> Endpoint:
    return Endpoint(ip=ip, port=8080, node=node, ready=ready, serving=ready or terminating, terminating=terminating)


def svc(name: str = "svc1", *endpoints: Endpoint, cip: str = "10.96.0.10", **changes: object) -> ServicePort:
    port = ServicePort(
        namespace="ns1",
        name=name,
        port_name="p80",
        protocol="tcp",
        port=80,
        cluster_ips=(cip,),
        endpoints=endpoints,
    )
    return dataclasses.replace(port, **changes)  # type: ignore[arg-type]


def lines(script: str) -> set[str]:
    return set(script.splitlines())


def chain_rules(script: str, chain: str) -> list[str]:
    prefix = f"add rule {T} {chain} "
    return [line.removeprefix(prefix) for line in script.splitlines() if line.startswith(prefix)]


# ---------------------------------------------------------------------------------------------------------------
# Planner


def test_chain_name_hash_vectors() -> None:
    assert service_base(svc()) == "ULMVA6XW-ns1/svc1/tcp/p80"
    assert (
        endpoint_base(svc(), Endpoint("10.180.0.1", 80, "", True, True, False))
        == "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"
    )


def chains(script: str) -> set[str]:
    return {line.split()[4] for line in script.splitlines() if line.startswith(f"add chain {T} ")}


def elements(script: str, name: str, verb: str = "add") -> list[str]:
    """The elements a script adds to (or deletes from) one set or map, one string each."""
    prefix = f"{verb} element {T} {name} {{ "
    found: list[str] = []
    for line in script.splitlines():
        if line.startswith(prefix):
            found += line.removeprefix(prefix).removesuffix(" }").split(", ")
    return found


def test_cluster_ip_with_two_endpoints() -> None:
    script = full_script(CONFIG, [svc("svc1", ep("10.244.0.5"), ep("10.244.1.5", "node-2"))])
    assert script.startswith(f'add table {T}\ndelete table {T}\nadd table {T} {{ comment "rules for kube-proxy" ; }}\n')
    assert elements(script, "cluster-ips") == ["10.96.0.10"]
    assert elements(script, "service-ips") == ["10.96.0.10 . tcp . 80 : goto pick-tcp-80-1-2"]
    # the marks: protocol (tcp: 0) . port 80 . index, i.e. 80 << 14 plus 1, 2
    assert elements(script, "endpoint-addresses") == [
        f"10.96.0.10 . {M80 + 1} : 10.244.0.5 . 8080",
        f"10.96.0.10 . {M80 + 2} : 10.244.1.5 . 8080",
    ]
    assert chain_rules(script, "pick-tcp-80-1-2") == [f"ct mark set numgen random mod 2 offset {M80 + 1}"]
    assert chains(script) - chains(full_script(CONFIG, [])) == {"pick-tcp-80-1-2"}  # no chain of the Service's own
    assert not elements(script, "no-endpoint-services")


def test_fixed_skeleton() -> None:
    script = full_script(CONFIG, [])
    assert {
        f"add chain {T} nat-output {{ type nat hook output priority -100 ; }}",
        f"add chain {T} filter-input {{ type filter hook input priority 0 ; }}",
        f"add rule {T} services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
        f"add rule {T} cluster-ips-check ip daddr {{ 10.96.0.0/16 }} drop "
        'comment "Drop traffic to unallocated ClusterIPs"',
        f"add rule {T} masquerading masquerade fully-random",
        f"add rule {T} mark-for-masquerade mark set mark or 0x4000",
    } <= lines(script)
    dnat = [
        "ip daddr @nodeport-ips meta l4proto { tcp, udp, sctp } dnat ip to th dport . ct mark "
        "map @nodeport-endpoint-addresses",
        "meta l4proto { tcp, udp, sctp } dnat ip to ip daddr . ct mark map @endpoint-addresses",
    ]
    assert chain_rules(script, "nat-prerouting") == ["jump services", *dnat]
    assert chain_rules(script, "nat-output") == ["jump services", *dnat]
    assert chain_rules(script, "services")[0] == (
        "ip daddr @cluster-ips ip saddr != 10.244.0.0/16 jump mark-for-masquerade"
    )
    assert chain_rules(script, "filter-forward")[0].startswith("ct status dnat fib daddr . iif oif exists")


@pytest.mark.parametrize(
    ("port", "element"),
    [
        pytest.param(svc(), '10.96.0.10 . tcp . 80 comment "ns1/svc1:p80" : goto reject-chain', id="no-endpoints"),
        pytest.param(
            svc("svc1", ep("10.244.1.5", "node-2"), internal_local=True),
            '10.96.0.10 . tcp . 80 comment "ns1/svc1:p80" : drop',
            id="itp-local-none-local",
        ),
        pytest.param(
            svc("svc1", ep("10.244.0.5", ready=False)),
            '10.96.0.10 . tcp . 80 comment "ns1/svc1:p80" : goto reject-chain',
            id="only-not-ready",
        ),
    ],
)
def test_unusable_services_go_to_no_endpoint_services(port: ServicePort, element: str) -> None:
    script = full_script(CONFIG, [port])
    assert elements(script, "no-endpoint-services") == [element]
    assert not elements(script, "service-ips") and not elements(script, "endpoint-addresses")
    assert elements(script, "cluster-ips") == ["10.96.0.10"]


def test_terminating_endpoints_are_a_fallback() -> None:
    script = full_script(CONFIG, [svc("svc1", ep("10.244.0.5", ready=False, terminating=True))])
    assert elements(script, "endpoint-addresses") == [f"10.96.0.10 . {M80 + 1} : 10.244.0.5 . 8080"]
    mixed = full_script(CONFIG, [svc("svc1", ep("10.244.0.5", ready=False, terminating=True), ep("10.244.1.5"))])
    assert elements(mixed, "endpoint-addresses") == [f"10.96.0.10 . {M80 + 1} : 10.244.1.5 . 8080"]
    assert elements(mixed, "service-ips") == ["10.96.0.10 . tcp . 80 : goto pick-tcp-80-1-1"]


def test_internal_traffic_policy_local() -> None:
    script = full_script(CONFIG, [svc("svc1", ep("10.244.0.5"), ep("10.244.1.5", "node-2"), internal_local=True)])
    assert elements(script, "service-ips") == ["10.96.0.10 . tcp . 80 : goto pick-tcp-80-1-1"]
    assert elements(script, "endpoint-addresses") == [f"10.96.0.10 . {M80 + 1} : 10.244.0.5 . 8080"]
    assert "10.244.1.5" not in script  # the remote endpoint is not programmed at all


def test_external_traffic_policy_local_node_port() -> None:
    port = svc("svc1", ep("10.244.0.5"), ep("10.244.1.5", "node-2"), node_port=30080, external_local=True)
    script = full_script(CONFIG, [port])
    external = "external-ULMVA6XW-ns1/svc1/tcp/p80"
    assert elements(script, "service-nodeports") == [f"tcp . 30080 : goto {external}"]
    assert elements(script, "service-ips") == ["10.96.0.10 . tcp . 80 : goto pick-tcp-80-1-2"]
    assert chain_rules(script, external) == [
        'ip saddr 10.244.0.0/16 goto pick-tcp-80-1-2 comment "short-circuit pod traffic"',
        'fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"',
        'fib saddr type local goto pick-tcp-80-1-2 comment "short-circuit local traffic"',
        "goto pick-tcp-80-3-3",
    ]
    assert chain_rules(script, "pick-tcp-80-3-3") == [f"ct mark set numgen random mod 1 offset {M80 + 3}"]
    # indices 1-2: the cluster group, 3: the local group; at the ClusterIP and at the NodePort alike
    numbered = [f"{M80 + 1} : 10.244.0.5 . 8080", f"{M80 + 2} : 10.244.1.5 . 8080", f"{M80 + 3} : 10.244.0.5 . 8080"]
    assert elements(script, "endpoint-addresses") == [f"10.96.0.10 . {n}" for n in numbered]
    assert elements(script, "nodeport-endpoint-addresses") == [f"30080 . {n}" for n in numbered]

    # no local endpoint: pods and the node still short-circuit to the remote one; the rest is dropped by the filter
    # hooks (which see the destination after DNAT, so the short-circuited traffic passes)
    remote_only = full_script(CONFIG, [dataclasses.replace(port, endpoints=(ep("10.244.1.5", "node-2"),))])
    assert elements(remote_only, "service-nodeports") == [f"tcp . 30080 : goto {external}"]
    assert elements(remote_only, "no-endpoint-nodeports") == ['tcp . 30080 comment "ns1/svc1:p80" : drop']
    assert (
        chain_rules(remote_only, external)[-1]
        == 'fib saddr type local goto pick-tcp-80-1-1 comment "short-circuit local traffic"'
    )


def test_external_traffic_policy_cluster_and_external_ips() -> None:
    port = svc("svc1", ep("10.244.1.5", "node-2"), node_port=30080, external_ips=("192.0.2.7",))
    script = full_script(CONFIG, [port])
    pick = "pick-tcp-80-1-1"
    assert chain_rules(script, f"external-{pick}") == ["jump mark-for-masquerade", f"goto {pick}"]
    assert set(elements(script, "service-ips")) == {
        f"10.96.0.10 . tcp . 80 : goto {pick}",
        f"192.0.2.7 . tcp . 80 : goto external-{pick}",
    }
    assert elements(script, "service-nodeports") == [f"tcp . 30080 : goto external-{pick}"]
    assert set(elements(script, "endpoint-addresses")) == {
        f"{ip} . {M80 + 1} : 10.244.1.5 . 8080" for ip in ("10.96.0.10", "192.0.2.7")
    }
    assert elements(script, "nodeport-endpoint-addresses") == [f"30080 . {M80 + 1} : 10.244.1.5 . 8080"]
    empty = full_script(CONFIG, [dataclasses.replace(port, endpoints=())])
    assert elements(empty, "no-endpoint-nodeports") == ['tcp . 30080 comment "ns1/svc1:p80" : goto reject-chain']


def test_load_balancer_source_ranges() -> None:
    port = svc(
        "svc1",
        ep("10.244.0.5"),
        node_port=30080,
        load_balancer_ips=("192.0.2.50",),
        source_ranges=("203.0.113.0/24", "198.51.100.7/32"),
    )
    script = full_script(CONFIG, [port])
    firewall = "firewall-ULMVA6XW-ns1/svc1/tcp/p80"
    assert elements(script, "firewall-ips") == [f"192.0.2.50 . tcp . 80 : goto {firewall}"]
    assert chain_rules(script, firewall) == [
        'ip saddr != { 203.0.113.0/24, 198.51.100.7/32 } drop comment "ns1/svc1:p80"'
    ]
    assert "firewall-" not in full_script(CONFIG, [dataclasses.replace(port, source_ranges=())]).replace(
        "firewall-check", ""
    ).replace("firewall-ips", "")


def test_session_affinity() -> None:
    script = full_script(CONFIG, [svc("svc1", ep("10.244.0.5"), ep("10.244.1.5", "node-2"), affinity_timeout=10800)])
    set_a = "affinity-XPXKCKG5-ns1/svc1/tcp/p80__10.244.0.5/8080"
    assert f"add set {T} {set_a} {{ type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }}" in lines(script)
    assert elements(script, "service-ips") == [f"10.96.0.10 . tcp . 80 : goto {SVC}"]
    rules = chain_rules(script, SVC)
    assert rules[0] == f"ip saddr @{set_a} goto {EP_A}"
    assert rules[2] == f"numgen random mod 2 vmap {{ 0 : goto {EP_A} , 1 : goto {EP_B} }}"
    assert chain_rules(script, EP_A) == [f"update @{set_a} {{ ip saddr }}", f"ct mark set {M80 + 1}"]
    assert chain_rules(script, EP_B)[1] == f"ct mark set {M80 + 2}"


def test_a_cluster_ip_shared_by_two_ports_stays_until_both_leave() -> None:
    http, https = svc("web", ep("10.244.0.5")), svc("web", ep("10.244.0.5"), port_name="https", port=443)
    assert incremental_script(CONFIG, [http, https], [http]).splitlines() == [
        f"delete element {T} endpoint-addresses {{ 10.96.0.10 . {(443 << 14) + 1} }}",
        f"delete element {T} service-ips {{ 10.96.0.10 . tcp . 443 }}",
    ]
    assert f"delete element {T} cluster-ips {{ 10.96.0.10 }}" in incremental_script(CONFIG, [http, https], [])


def test_incremental_touches_only_the_changed_service() -> None:
    other = svc("svc2", ep("10.244.0.9"), cip="10.96.0.11")
    old = [svc("svc1", ep("10.244.0.5")), other]
    new = [svc("svc1", ep("10.244.0.5"), ep("10.244.1.5", "node-2")), other]
    script = incremental_script(CONFIG, old, new)
    assert "svc2" not in script and "10.96.0.11" not in script and "table" not in script
    assert script.splitlines() == [
        f"delete element {T} endpoint-addresses {{ 10.96.0.10 . {M80 + 1} }}",
        f"delete element {T} service-ips {{ 10.96.0.10 . tcp . 80 }}",
        f"add chain {T} pick-tcp-80-1-2",
        f"add rule {T} pick-tcp-80-1-2 ct mark set numgen random mod 2 offset {M80 + 1}",
        f"add element {T} endpoint-addresses {{ 10.96.0.10 . {M80 + 1} : 10.244.0.5 . 8080, "
        f"10.96.0.10 . {M80 + 2} : 10.244.1.5 . 8080 }}",
        f"add element {T} service-ips {{ 10.96.0.10 . tcp . 80 : goto pick-tcp-80-1-2 }}",
    ]
    assert incremental_script(CONFIG, new, new) == ""


def test_shared_pick_chains_stay_until_a_full_sync() -> None:
    one, two = [svc("svc1", ep("10.244.0.5"))], [svc("svc1", ep("10.244.0.5"), ep("10.244.0.6"))]
    proxier = NftablesProxier(CONFIG, _Discard())
    proxier.sync(one)
    proxier.sync(two)
    proxier.sync(one)  # pick-1-2 is no longer used, but another port may take it up again at no cost
    assert " chain " not in proxier.runner.script
    proxier.sync(two)
    assert " chain " not in proxier.runner.script
    proxier.sync(one, full=True)
    assert "pick-1-2" not in proxier.runner.script


def test_incremental_removal_and_endpoints_gone() -> None:
    old = [svc("svc1", ep("10.244.0.5")), svc("svc2", ep("10.244.0.9"), cip="10.96.0.11", affinity_timeout=60)]
    script = incremental_script(CONFIG, old, [svc("svc1")])
    svc2 = "service-" + service_base(old[1])
    assert elements(script, "cluster-ips", "delete") == ["10.96.0.11"]
    assert elements(script, "service-ips", "delete") == ["10.96.0.10 . tcp . 80", "10.96.0.11 . tcp . 80"]
    assert elements(script, "no-endpoint-services") == [
        '10.96.0.10 . tcp . 80 comment "ns1/svc1:p80" : goto reject-chain'
    ]
    assert {f"flush chain {T} {svc2}", f"delete chain {T} {svc2}"} <= lines(script)
    text = script.splitlines()  # references leave before the objects they point at
    assert text.index(f"delete element {T} service-ips {{ 10.96.0.10 . tcp . 80, 10.96.0.11 . tcp . 80 }}") < (
        text.index(f"delete chain {T} {svc2}")
    )


def test_incremental_affinity_timeout_change_recreates_the_set() -> None:
    old = [svc("svc1", ep("10.244.0.5"), affinity_timeout=100)]
    script = incremental_script(CONFIG, old, [dataclasses.replace(old[0], affinity_timeout=200)])
    set_a = "affinity-XPXKCKG5-ns1/svc1/tcp/p80__10.244.0.5/8080"
    text = script.splitlines()
    assert text.index(f"flush chain {T} {EP_A}") < text.index(f"delete set {T} {set_a}")
    assert f"add set {T} {set_a} {{ type ipv4_addr ; flags dynamic,timeout ; timeout 200s ; }}" in text
    assert f"add rule {T} {SVC} ip saddr @{set_a} goto {EP_A}" in text


class _Recorder:
    def __init__(self) -> None:
        self.scripts: list[str] = []

    def apply(self, script: str) -> None:
        self.scripts.append(script)

    def close(self) -> None:
        pass


# One step: per Service (svc0..svc3) absent, or one of a few shapes (ports, endpoints, policies).
SHAPES = [
    lambda name, cip: (svc(name, cip=cip),),
    lambda name, cip: (svc(name, ep("10.244.0.5"), cip=cip),),
    lambda name, cip: (svc(name, ep("10.244.0.5"), ep("10.244.1.5", "node-2"), cip=cip),),
    lambda name, cip: (svc(name, ep("10.244.0.6"), cip=cip, affinity_timeout=60),),
    lambda name, cip: (
        svc(name, ep("10.244.0.5"), cip=cip),
        svc(name, ep("10.244.0.5"), cip=cip, port_name="https", port=443),
    ),
    lambda name, cip: (svc(name, ep("10.244.1.7", "node-2"), cip=cip, node_port=30080, external_local=True),),
]
STEP = st.lists(st.one_of(st.none(), st.integers(0, len(SHAPES) - 1)), min_size=4, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=8))
def test_a_port_table_sync_sends_what_a_sync_of_every_port_sends(steps: list[list[int | None]]) -> None:
    """The agent hands over a PortTable whose changed Services alone are looked at: the transactions must be the
    very ones comparing every port gives."""
    every, table = _Recorder(), _Recorder()
    by_list, by_table = NftablesProxier(CONFIG, every), NftablesProxier(CONFIG, table)  # type: ignore[arg-type]
    held: dict[str, tuple[ServicePort, ...]] = {}
    for step in steps:
        wanted = {
            f"ns1/svc{i}": SHAPES[shape](f"svc{i}", f"10.96.0.{10 + i}")
            for i, shape in enumerate(step)
            if shape is not None
        }
        previous = {key: held.get(key, ()) for key in held.keys() | wanted.keys() if held.get(key) != wanted.get(key)}
        by_list.sync([port for ports in wanted.values() for port in ports])
        by_table.sync(PortTable(wanted, previous))
        assert table.scripts == every.scripts
        held = wanted


# ---------------------------------------------------------------------------------------------------------------
# Real nft in a throwaway namespace

root_only = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/sbin/nft"), reason="needs root and nft")


@pytest.fixture
def ns() -> Iterator[str]:
    name = f"tkproxytest-{os.getpid()}"
    netns.delete(name)
    netns.ip("netns", "add", name)
    try:
        netns.ip("link", "set", "lo", "up", netns=name)
        yield name
    finally:
        netns.delete(name)


def many_ports(count: int, endpoints: int = 3) -> list[ServicePort]:
    return [
        svc(
            f"svc{i}",
            *(ep(f"10.244.{e}.{i % 250 + 1}", f"node-{e}") for e in range(endpoints)),
            cip=f"10.96.{i // 250}.{i % 250 + 1}",
            node_port=30000 + i,
        )
        for i in range(count)
    ]


@root_only
def test_full_then_incremental_in_kernel(ns: str) -> None:
    runner = NftRunner(ns)
    old = [svc("svc1", ep("10.244.0.5"), node_port=30080, affinity_timeout=60), svc("svc2", cip="10.96.0.11")]
    script = full_script(CONFIG, old)
    runner.check(script)
    runner.apply(script)
    dump = runner.dump()
    assert "10.96.0.10 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80" in dump
    assert '10.96.0.11 . tcp . 80 comment "ns1/svc2:p80" : goto reject-chain' in dump
    assert "tcp . 30080 : goto external-ULMVA6XW-ns1/svc1/tcp/p80" in dump

    new = [
        svc("svc1", ep("10.244.1.5", "node-2"), node_port=30080, affinity_timeout=90),
        svc("svc3", ep("10.244.0.7"), cip="10.96.0.12"),
    ]
    runner.apply(incremental_script(CONFIG, old, new))
    dump = runner.dump()
    assert "10.96.0.11" not in dump and EP_A not in dump and "timeout 1m\n" not in dump
    assert EP_B in dump and "timeout 1m30s" in dump
    assert "10.96.0.12 . tcp . 80 : goto pick-tcp-80-1-1" in dump
    # the incremental result is the fresh full result (up to the order nft lists chains in: creation order)
    assert blocks(runner.dump()) == blocks(_reload(runner, full_script(CONFIG, new)))


def _reload(runner: NftRunner, script: str) -> str:
    runner.cleanup()
    runner.apply(script)
    return runner.dump()


def blocks(dump: str) -> list[str]:
    """A listed table's sets, maps and chains, in name order."""
    return sorted(dump.split("\n\n"))


@root_only
def test_proxier_repairs_drift_and_recovers_from_failure(ns: str) -> None:
    runner = NftRunner(ns)
    proxier = NftablesProxier(CONFIG, runner)
    ports = [svc("svc1", ep("10.244.0.5"))]
    proxier.sync(ports)
    expected = runner.dump()
    subprocess.run(netns.exec_argv(ns, ["nft", "flush", "table", "ip", "kube-proxy"]), check=True)
    assert "jump services" not in runner.dump()  # rules gone (elements stay: `flush table` keeps sets)
    proxier.sync(ports, full=True)
    assert runner.dump() == expected

    runner.cleanup()  # someone deleted the table: the incremental transaction cannot apply
    with pytest.raises(NftError, match="No such file or directory"):
        proxier.sync([svc("svc1", ep("10.244.0.5"), ep("10.244.0.6"))])
    assert (proxier.syncs, proxier.failures, proxier.full_syncs) == (3, 1, 2)
    proxier.sync(ports)  # after a failure: a full sync again
    assert runner.dump() == expected and proxier.full_syncs == 3
    runner.cleanup()
    runner.cleanup()  # NotFound ignored


@root_only
def test_thousand_ports_timing(ns: str) -> None:
    runner = NftRunner(ns)
    proxier = NftablesProxier(CONFIG, runner)
    ports = many_ports(1000)
    proxier.sync(ports)
    full = proxier.last_duration
    changed = list(ports)
    changed[500] = dataclasses.replace(changed[500], endpoints=changed[500].endpoints[:2])
    proxier.sync(changed)
    incremental = proxier.last_duration
    start = time.monotonic()
    dump = runner.dump()
    print(
        f"\n1000 ports x 3 endpoints: full sync {full:.3f}s, incremental (1 port) {incremental:.3f}s, "
        f"dump {time.monotonic() - start:.3f}s, {len(full_script(CONFIG, ports).splitlines())} script lines"
    )
    # each port's 3 endpoints at its ClusterIP and at the node's NodePort; the changed one has 2
    assert len(re.findall(r"\. 0x[0-9a-f]{8} : 10\.244\.", dump)) == 1000 * 2 * 3 - 2


# ---------------------------------------------------------------------------------------------------------------
# Real packets: a "node" namespace (running the proxy table) and a "pod" namespace joined by a veth; the pod is
# also the endpoint, so reaching its own Service exercises the hairpin masquerade too.


@pytest.fixture
def node_and_pod(ns: str) -> Iterator[tuple[str, str]]:
    pod = f"{ns}-pod"
    netns.delete(pod)
    netns.ip("netns", "add", pod)
    try:
        # the route to the service CIDR leads back out the pod's link: ICMP redirects would spend the per-host ICMP
        # budget that the rejects need
        for key in ("net.ipv4.conf.all.send_redirects", "net.ipv4.conf.default.send_redirects"):
            netns.write_sysctl(ns, key, "0")
        netns.ip_batch(
            ns,
            [
                f"link add veth-n type veth peer name veth-p netns {pod}",
                "addr add 10.244.0.1/24 dev veth-n",
                "link set veth-n up",
                "route add 10.96.0.0/16 dev veth-n",  # like a default route: what the node does without the proxy
            ],
        )
        netns.write_sysctl(ns, "net.ipv4.ip_forward", "1")
        netns.ip_batch(
            pod,
            [
                "link set lo up",
                "addr add 10.244.0.2/24 dev veth-p",
                "link set veth-p up",
                "route add default via 10.244.0.1",
            ],
        )
        yield ns, pod
    finally:
        netns.delete(pod)


def _connect(name: str, ip: str, port: int) -> socket.socket:
    client = netns.socket_in(name)
    client.settimeout(3)
    client.connect((ip, port))
    return client


def _exchange(listener: socket.socket, client: socket.socket) -> str:
    """Answer one connection; returns the client address the listener saw."""
    conn, peer = listener.accept()
    with conn, client:
        conn.sendall(b"hello")
        assert client.recv(5) == b"hello"
    return str(peer[0])


@root_only
def test_packets_reach_the_endpoint_or_are_refused(node_and_pod: tuple[str, str]) -> None:
    node, pod = node_and_pod
    endpoint = Endpoint("10.244.0.2", 8080, "node-1", True, True, False)
    NftablesProxier(CONFIG, NftRunner(node)).sync(
        [svc("svc1", endpoint, node_port=30080), svc("svc2", cip="10.96.0.11")]
    )
    listener = netns.socket_in(pod)
    listener.settimeout(3)
    listener.bind(("10.244.0.2", 8080))
    listener.listen(8)
    with listener:
        # the pod reaching itself through its Service: hairpin, so the node masquerades it to its own IP
        assert _exchange(listener, _connect(pod, "10.96.0.10", 80)) == "10.244.0.1"
        assert _exchange(listener, _connect(pod, "10.244.0.1", 30080)) == "10.244.0.1"  # NodePort on the node IP
        assert _exchange(listener, _connect(node, "10.96.0.10", 80)) == "10.244.0.1"  # from the node itself
        with pytest.raises(ConnectionRefusedError) as refused:  # no endpoints: reject-chain
            _connect(pod, "10.96.0.11", 80)
        assert refused.value.errno == errno.ECONNREFUSED
        with pytest.raises(ConnectionRefusedError):  # a port the ClusterIP does not define: cluster-ips-check
            _connect(pod, "10.96.0.10", 81)


@root_only
def test_connections_spread_over_every_endpoint(node_and_pod: tuple[str, str]) -> None:
    node, pod = node_and_pod
    endpoints = [Endpoint("10.244.0.2", port, "node-1", True, True, False) for port in (8080, 8081, 8082)]
    NftablesProxier(CONFIG, NftRunner(node)).sync([svc("svc1", *endpoints)])
    listeners = []
    for endpoint in endpoints:
        listener = netns.socket_in(pod)
        listener.setblocking(True)
        listener.settimeout(3)
        listener.bind((endpoint.ip, endpoint.port))
        listener.listen(64)
        listeners.append(listener)
    try:
        for _ in range(30):
            _connect(pod, "10.96.0.10", 80).close()
        # every endpoint got some of the 30 connections (a uniform pick misses one with probability < 1e-5)
        accepted = []
        for listener in listeners:
            listener.settimeout(0.2)
            count = 0
            with contextlib.suppress(TimeoutError):
                while True:
                    listener.accept()[0].close()
                    count += 1
            accepted.append(count)
        assert sum(accepted) == 30 and min(accepted) > 0, accepted
    finally:
        for listener in listeners:
            listener.close()
