"""The iptables proxier: iptables-restore input from the pure planner (checked against upstream's own golden output
where it has one), then real iptables-restore / iptables-save and real packets inside throwaway network namespaces
(root only; nothing touches the root namespace)."""

from __future__ import annotations

import dataclasses
import errno
import os
import random
import select
import shlex
import shutil
import socket
import subprocess
import textwrap
from collections.abc import Iterator

import pytest

from tinykube.proxy import iptables
from tinykube.proxy.iptables import (
    JUMPS,
    IptablesError,
    IptablesProxier,
    IptablesRunner,
    cleanup_input,
    endpoint_chain,
    missing_jumps,
    parse_save,
    plan,
    render,
    restore_input,
    service_chain,
)
from tinykube.proxy.model import Endpoint, NodeConfig, ServicePort
from tinykube.sandbox import netns

# upstream's proxier_test fixtures: node IP 192.168.0.2, cluster CIDR 10.0.0.0/8, service IPs 172.30.0.x
CONFIG = NodeConfig(
    node_name="node-1", node_ips=["192.168.0.2"], cluster_cidr="10.0.0.0/8", service_cidrs=["172.30.0.0/16"]
)
SVC = "KUBE-SVC-XPGD46QRK7WJZT7O"  # ns1/svc1:p80 tcp
SEP_1 = "KUBE-SEP-SXIVWICOYRO3J4NJ"  # … -> 10.180.0.1:80
SEP_2 = "KUBE-SEP-ZX7GRIZKSNUQ3LAJ"  # … -> 10.180.2.1:80


def ep(ip: str, node: str = "", *, ready: bool = True, terminating: bool = False, port: int = 80) -> Endpoint:
    return Endpoint(ip=ip, port=port, node=node, ready=ready, serving=ready or terminating, terminating=terminating)


def svc(
    ns: str = "ns1", name: str = "svc1", *endpoints: Endpoint, cip: str = "172.30.0.41", **changes: object
) -> ServicePort:
    port = ServicePort(
        namespace=ns,
        name=name,
        port_name="p80",
        protocol="tcp",
        port=80,
        cluster_ips=(cip,),
        endpoints=endpoints,
    )
    return dataclasses.replace(port, **changes)  # type: ignore[arg-type]


def chains_of(text: str) -> dict[str, list[str]]:
    """Each declared chain with its rules in order (upstream's tests compare this way: chain order is free)."""
    chains: dict[str, list[str]] = {}
    for line in textwrap.dedent(text).strip().splitlines():
        if line.startswith(":"):
            chains.setdefault(line[1:].split()[0], [])
        elif line.startswith("-A "):
            chains[line.split()[1]].append(line)
    return chains


def nat(*ports: ServicePort) -> dict[str, list[str]]:
    return chains_of(render(CONFIG, ports)["nat"])


def filter_(*ports: ServicePort) -> dict[str, list[str]]:
    return chains_of(render(CONFIG, ports)["filter"])


def rules(chains: dict[str, list[str]], chain: str) -> list[str]:
    return [rule.removeprefix(f"-A {chain} ") for rule in chains[chain]]


# ---------------------------------------------------------------------------------------------------------------
# Names and upstream's golden output


def test_chain_name_vectors() -> None:
    assert service_chain("SVC", svc()) == SVC
    assert endpoint_chain(svc(), ep("10.180.0.1")) == SEP_1
    assert endpoint_chain(svc(), ep("10.180.2.1")) == SEP_2
    assert service_chain("FW", svc("ns5", "svc5")) == "KUBE-FW-NUKIZ6OKUXPJNT4C"
    assert service_chain("SVL", svc("ns2", "svc2")) == "KUBE-SVL-GNZBNJ2PO5MGZ6GT"


# upstream's TestOverallIPTablesRules expectation (pkg/proxy/iptables/proxier_test.go) with tinykube's three
# differences: NodePorts on the node IPs (`-d 192.168.0.2`, not `addrtype LOCAL`), MASQUERADE --random-fully, and no
# KUBE-FIREWALL chain (localhost NodePorts are not supported).
OVERALL = """
    *filter
    :KUBE-NODEPORTS - [0:0]
    :KUBE-SERVICES - [0:0]
    :KUBE-EXTERNAL-SERVICES - [0:0]
    :KUBE-FORWARD - [0:0]
    :KUBE-PROXY-FIREWALL - [0:0]
    -A KUBE-NODEPORTS -m comment --comment "ns2/svc2:p80 health check node port" -m tcp -p tcp --dport 30000 -j ACCEPT
    -A KUBE-SERVICES -m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp -p tcp -d 172.30.0.46 --dport 80 -j REJECT
    -A KUBE-EXTERNAL-SERVICES -m comment --comment "ns2/svc2:p80 has no local endpoints" -m tcp -p tcp -d 192.168.99.22 --dport 80 -j DROP
    -A KUBE-EXTERNAL-SERVICES -m comment --comment "ns2/svc2:p80 has no local endpoints" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j DROP
    -A KUBE-EXTERNAL-SERVICES -m comment --comment "ns2/svc2:p80 has no local endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 3001 -j DROP
    -A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
    -A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
    -A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
    -A KUBE-PROXY-FIREWALL -m comment --comment "ns5/svc5:p80 traffic not accepted by KUBE-FW-NUKIZ6OKUXPJNT4C" -m tcp -p tcp -d 5.6.7.8 --dport 80 -j DROP
    COMMIT
    *nat
    :KUBE-NODEPORTS - [0:0]
    :KUBE-SERVICES - [0:0]
    :KUBE-EXT-4SW47YFZTEDKD3PK - [0:0]
    :KUBE-EXT-GNZBNJ2PO5MGZ6GT - [0:0]
    :KUBE-EXT-NUKIZ6OKUXPJNT4C - [0:0]
    :KUBE-EXT-X27LE4BHSL4DOUIK - [0:0]
    :KUBE-FW-NUKIZ6OKUXPJNT4C - [0:0]
    :KUBE-MARK-MASQ - [0:0]
    :KUBE-POSTROUTING - [0:0]
    :KUBE-SEP-C6EBXVWJJZMIWKLZ - [0:0]
    :KUBE-SEP-I77PXRDZVX7PMWMN - [0:0]
    :KUBE-SEP-OYPFS5VJICHGATKP - [0:0]
    :KUBE-SEP-RS4RBKLTHTF2IUXJ - [0:0]
    :KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
    :KUBE-SEP-UKSFD7AGPMPPLUHC - [0:0]
    :KUBE-SVC-4SW47YFZTEDKD3PK - [0:0]
    :KUBE-SVC-GNZBNJ2PO5MGZ6GT - [0:0]
    :KUBE-SVC-NUKIZ6OKUXPJNT4C - [0:0]
    :KUBE-SVC-X27LE4BHSL4DOUIK - [0:0]
    :KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
    -A KUBE-NODEPORTS -m comment --comment ns2/svc2:p80 -m tcp -p tcp --dport 3001 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT
    -A KUBE-NODEPORTS -m comment --comment ns3/svc3:p80 -m tcp -p tcp --dport 3003 -j KUBE-EXT-X27LE4BHSL4DOUIK
    -A KUBE-NODEPORTS -m comment --comment ns5/svc5:p80 -m tcp -p tcp --dport 3002 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
    -A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
    -A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 -j KUBE-SVC-GNZBNJ2PO5MGZ6GT
    -A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 external IP" -m tcp -p tcp -d 192.168.99.22 --dport 80 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT
    -A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 loadbalancer IP" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j KUBE-EXT-GNZBNJ2PO5MGZ6GT
    -A KUBE-SERVICES -m comment --comment "ns3/svc3:p80 cluster IP" -m tcp -p tcp -d 172.30.0.43 --dport 80 -j KUBE-SVC-X27LE4BHSL4DOUIK
    -A KUBE-SERVICES -m comment --comment "ns4/svc4:p80 cluster IP" -m tcp -p tcp -d 172.30.0.44 --dport 80 -j KUBE-SVC-4SW47YFZTEDKD3PK
    -A KUBE-SERVICES -m comment --comment "ns4/svc4:p80 external IP" -m tcp -p tcp -d 192.168.99.33 --dport 80 -j KUBE-EXT-4SW47YFZTEDKD3PK
    -A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 cluster IP" -m tcp -p tcp -d 172.30.0.45 --dport 80 -j KUBE-SVC-NUKIZ6OKUXPJNT4C
    -A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 loadbalancer IP" -m tcp -p tcp -d 5.6.7.8 --dport 80 -j KUBE-FW-NUKIZ6OKUXPJNT4C
    -A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -d 192.168.0.2 -j KUBE-NODEPORTS
    -A KUBE-EXT-4SW47YFZTEDKD3PK -m comment --comment "masquerade traffic for ns4/svc4:p80 external destinations" -j KUBE-MARK-MASQ
    -A KUBE-EXT-4SW47YFZTEDKD3PK -j KUBE-SVC-4SW47YFZTEDKD3PK
    -A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment "pod traffic for ns2/svc2:p80 external destinations" -s 10.0.0.0/8 -j KUBE-SVC-GNZBNJ2PO5MGZ6GT
    -A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment "masquerade LOCAL traffic for ns2/svc2:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ
    -A KUBE-EXT-GNZBNJ2PO5MGZ6GT -m comment --comment "route LOCAL traffic for ns2/svc2:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-GNZBNJ2PO5MGZ6GT
    -A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment "masquerade traffic for ns5/svc5:p80 external destinations" -j KUBE-MARK-MASQ
    -A KUBE-EXT-NUKIZ6OKUXPJNT4C -j KUBE-SVC-NUKIZ6OKUXPJNT4C
    -A KUBE-EXT-X27LE4BHSL4DOUIK -m comment --comment "masquerade traffic for ns3/svc3:p80 external destinations" -j KUBE-MARK-MASQ
    -A KUBE-EXT-X27LE4BHSL4DOUIK -j KUBE-SVC-X27LE4BHSL4DOUIK
    -A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 loadbalancer IP" -s 203.0.113.0/25 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
    -A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "other traffic to ns5/svc5:p80 will be dropped by KUBE-PROXY-FIREWALL"
    -A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
    -A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
    -A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
    -A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
    -A KUBE-SEP-C6EBXVWJJZMIWKLZ -m comment --comment ns4/svc4:p80 -s 10.180.0.5 -j KUBE-MARK-MASQ
    -A KUBE-SEP-C6EBXVWJJZMIWKLZ -m comment --comment ns4/svc4:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.5:80
    -A KUBE-SEP-I77PXRDZVX7PMWMN -m comment --comment ns5/svc5:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
    -A KUBE-SEP-I77PXRDZVX7PMWMN -m comment --comment ns5/svc5:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
    -A KUBE-SEP-OYPFS5VJICHGATKP -m comment --comment ns3/svc3:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
    -A KUBE-SEP-OYPFS5VJICHGATKP -m comment --comment ns3/svc3:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
    -A KUBE-SEP-RS4RBKLTHTF2IUXJ -m comment --comment ns2/svc2:p80 -s 10.180.0.2 -j KUBE-MARK-MASQ
    -A KUBE-SEP-RS4RBKLTHTF2IUXJ -m comment --comment ns2/svc2:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.2:80
    -A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
    -A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
    -A KUBE-SEP-UKSFD7AGPMPPLUHC -m comment --comment ns4/svc4:p80 -s 10.180.0.4 -j KUBE-MARK-MASQ
    -A KUBE-SEP-UKSFD7AGPMPPLUHC -m comment --comment ns4/svc4:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.4:80
    -A KUBE-SVC-4SW47YFZTEDKD3PK -m comment --comment "ns4/svc4:p80 cluster IP" -m tcp -p tcp -d 172.30.0.44 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
    -A KUBE-SVC-4SW47YFZTEDKD3PK -m comment --comment "ns4/svc4:p80 -> 10.180.0.4:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-UKSFD7AGPMPPLUHC
    -A KUBE-SVC-4SW47YFZTEDKD3PK -m comment --comment "ns4/svc4:p80 -> 10.180.0.5:80" -j KUBE-SEP-C6EBXVWJJZMIWKLZ
    -A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
    -A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 -> 10.180.0.2:80" -j KUBE-SEP-RS4RBKLTHTF2IUXJ
    -A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 cluster IP" -m tcp -p tcp -d 172.30.0.45 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
    -A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 -> 10.180.0.3:80" -j KUBE-SEP-I77PXRDZVX7PMWMN
    -A KUBE-SVC-X27LE4BHSL4DOUIK -m comment --comment "ns3/svc3:p80 cluster IP" -m tcp -p tcp -d 172.30.0.43 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
    -A KUBE-SVC-X27LE4BHSL4DOUIK -m comment --comment "ns3/svc3:p80 -> 10.180.0.3:80" -j KUBE-SEP-OYPFS5VJICHGATKP
    -A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
    -A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j KUBE-SEP-SXIVWICOYRO3J4NJ
    COMMIT
"""  # noqa: E501 - upstream's lines, verbatim


def overall_ports() -> list[ServicePort]:
    """The Services and EndpointSlices of upstream's TestOverallIPTablesRules."""
    return [
        svc("ns1", "svc1", ep("10.180.0.1")),
        svc(  # LoadBalancer, ETP Local; its endpoint has no nodeName, so it is not local
            "ns2",
            "svc2",
            ep("10.180.0.2"),
            cip="172.30.0.42",
            node_port=3001,
            load_balancer_ips=("1.2.3.4",),
            external_ips=("192.168.99.22",),
            external_local=True,
            health_check_node_port=30000,
        ),
        svc("ns3", "svc3", ep("10.180.0.3"), cip="172.30.0.43", node_port=3003),
        svc(
            "ns4",
            "svc4",
            ep("10.180.0.4"),
            ep("10.180.0.5", "node-1"),
            cip="172.30.0.44",
            external_ips=("192.168.99.33",),
        ),
        svc(  # LoadBalancer, ETP Cluster, source ranges (a health check node port that Cluster policy ignores)
            "ns5",
            "svc5",
            ep("10.180.0.3"),
            cip="172.30.0.45",
            node_port=3002,
            load_balancer_ips=("5.6.7.8",),
            health_check_node_port=30000,
            source_ranges=("203.0.113.0/25",),
        ),
        svc("ns6", "svc6", cip="172.30.0.46"),  # no endpoints
    ]


def test_upstream_overall_rules() -> None:
    tables = render(CONFIG, overall_ports())
    expected_filter, expected_nat = textwrap.dedent(OVERALL).strip().split("COMMIT\n")
    assert chains_of(tables["filter"]) == chains_of(expected_filter)
    assert chains_of(tables["nat"]) == chains_of(expected_nat)
    for table, text in tables.items():
        assert text.startswith(f"*{table}\n") and text.endswith("COMMIT\n")


# ---------------------------------------------------------------------------------------------------------------
# Behaviours


def test_cluster_ip_random_choice_among_ready_endpoints() -> None:
    chains = nat(
        svc("ns1", "svc1", ep("10.180.0.1"), ep("10.180.1.1", ready=False), ep("10.180.2.1"), ep("10.180.3.1"))
    )
    dispatch = rules(chains, SVC)[1:]
    assert [r.split(" -j ")[0].split("--probability ")[-1] for r in dispatch[:2]] == ["0.3333333333", "0.5000000000"]
    assert (
        dispatch[2]
        == f'-m comment --comment "ns1/svc1:p80 -> 10.180.3.1:80" -j {endpoint_chain(svc(), ep("10.180.3.1"))}'
    )
    assert dispatch[1].endswith(f"-j {SEP_2}")
    assert "10.180.1.1" not in "".join(line for chain in chains.values() for line in chain)  # not ready: no chain


def test_masquerade_where_upstream_does() -> None:
    chains = nat(svc("ns1", "svc1", ep("10.180.0.1")))
    assert rules(chains, SVC)[0].endswith("-d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ")  # off-cluster
    assert rules(chains, SEP_1)[0] == "-m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ"  # hairpin
    unknown_cidr = chains_of(
        render(dataclasses.replace(CONFIG, cluster_cidr=""), [svc("ns1", "svc1", ep("10.180.0.1"))])["nat"]
    )
    assert all("KUBE-MARK-MASQ" not in rule for rule in rules(unknown_cidr, SVC))


@pytest.mark.parametrize(
    "endpoints",
    [pytest.param((), id="none"), pytest.param((ep("10.180.0.1", ready=False),), id="only-not-ready")],
)
def test_no_endpoints_reject_every_destination(endpoints: tuple[Endpoint, ...]) -> None:
    port = svc(
        "ns1", "svc1", *endpoints, node_port=3001, external_ips=("192.168.99.11",), load_balancer_ips=("1.2.3.4",)
    )
    comment = '-m comment --comment "ns1/svc1:p80 has no endpoints"'
    assert rules(filter_(port), "KUBE-SERVICES") == [f"{comment} -m tcp -p tcp -d 172.30.0.41 --dport 80 -j REJECT"]
    assert rules(filter_(port), "KUBE-EXTERNAL-SERVICES") == [
        f"{comment} -m tcp -p tcp -d 192.168.99.11 --dport 80 -j REJECT",
        f"{comment} -m tcp -p tcp -d 1.2.3.4 --dport 80 -j REJECT",
        f"{comment} -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 3001 -j REJECT",
    ]
    chains = nat(port)
    assert not [name for name in chains if name.startswith(("KUBE-SVC-", "KUBE-EXT-", "KUBE-SEP-"))]
    assert rules(chains, "KUBE-NODEPORTS") == [] and len(rules(chains, "KUBE-SERVICES")) == 1  # the NodePort jump


def test_terminating_endpoints_are_a_fallback() -> None:
    only_terminating = nat(svc("ns1", "svc1", ep("10.180.0.1", ready=False, terminating=True)))
    assert rules(only_terminating, SVC)[-1].endswith(f"-j {SEP_1}")
    mixed = nat(svc("ns1", "svc1", ep("10.180.0.1", ready=False, terminating=True), ep("10.180.2.1")))
    assert rules(mixed, SVC)[1:] == [f'-m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j {SEP_2}']
    assert SEP_1 not in mixed


def test_session_affinity() -> None:
    chains = nat(svc("ns1", "svc1", ep("10.180.0.1"), ep("10.180.2.1"), affinity_timeout=10800))
    assert rules(chains, SVC)[1:] == [
        f'-m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m recent --name {SEP_1} --rcheck --seconds 10800 '
        f"--reap -j {SEP_1}",
        f'-m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -m recent --name {SEP_2} --rcheck --seconds 10800 '
        f"--reap -j {SEP_2}",
        '-m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m statistic --mode random --probability 0.5000000000'
        f" -j {SEP_1}",
        f'-m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j {SEP_2}',
    ]
    assert rules(chains, SEP_1)[1] == (
        f"-m comment --comment ns1/svc1:p80 -m recent --name {SEP_1} --set "
        "-m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80"
    )


def test_internal_traffic_policy_local() -> None:
    port = svc("ns1", "svc1", ep("10.180.0.1", "node-1"), ep("10.180.2.1", "node-2"), internal_local=True)
    chains = nat(port)
    svl = service_chain("SVL", port)
    assert rules(chains, "KUBE-SERVICES")[0].endswith(f"-d 172.30.0.41 --dport 80 -j {svl}")
    assert rules(chains, svl) == [
        '-m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 '
        "-j KUBE-MARK-MASQ",
        f'-m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j {SEP_1}',
    ]
    assert SVC not in chains and SEP_2 not in chains  # the remote endpoint is not programmed at all

    remote_only = dataclasses.replace(port, endpoints=(ep("10.180.2.1", "node-2"),))
    assert rules(filter_(remote_only), "KUBE-SERVICES") == [
        '-m comment --comment "ns1/svc1:p80 has no local endpoints" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j DROP'
    ]
    assert not [name for name in nat(remote_only) if name.startswith(("KUBE-SVC-", "KUBE-SVL-", "KUBE-SEP-"))]


def test_external_traffic_policy_local_with_a_local_endpoint() -> None:
    port = svc(
        "ns1",
        "svc1",
        ep("10.180.0.1", "node-1"),
        ep("10.180.2.1", "node-2"),
        node_port=3001,
        external_local=True,
        health_check_node_port=30000,
    )
    chains = nat(port)
    ext, svl = service_chain("EXT", port), service_chain("SVL", port)
    assert rules(chains, "KUBE-NODEPORTS") == [f"-m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 3001 -j {ext}"]
    assert rules(chains, ext) == [
        f'-m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8 -j {SVC}',
        '-m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" '
        "-m addrtype --src-type LOCAL -j KUBE-MARK-MASQ",
        f'-m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" '
        f"-m addrtype --src-type LOCAL -j {SVC}",
        f"-j {svl}",  # external clients: local endpoints only, source kept (no KUBE-MARK-MASQ on this path)
    ]
    assert rules(chains, svl) == [f'-m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j {SEP_1}']
    assert rules(chains, SVC)[-1] == f'-m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j {SEP_2}'
    assert rules(filter_(port), "KUBE-NODEPORTS") == [
        '-m comment --comment "ns1/svc1:p80 health check node port" -m tcp -p tcp --dport 30000 -j ACCEPT'
    ]
    assert rules(filter_(port), "KUBE-EXTERNAL-SERVICES") == []


def test_external_ips_and_protocols() -> None:
    udp = svc("ns1", "svc1", ep("10.180.0.1"), protocol="udp", external_ips=("192.168.99.11",))
    sctp = svc("ns1", "svc1", ep("10.180.0.1"), protocol="sctp")
    assert service_chain("SVC", udp) != service_chain("SVC", sctp) != SVC  # the protocol is part of the hash
    chains = nat(udp)
    ext = service_chain("EXT", udp)
    assert rules(chains, "KUBE-SERVICES")[1] == (
        f'-m comment --comment "ns1/svc1:p80 external IP" -m udp -p udp -d 192.168.99.11 --dport 80 -j {ext}'
    )
    assert rules(chains, ext) == [
        '-m comment --comment "masquerade traffic for ns1/svc1:p80 external destinations" -j KUBE-MARK-MASQ',
        f"-j {service_chain('SVC', udp)}",
    ]
    sep = endpoint_chain(sctp, ep("10.180.0.1"))
    assert (
        rules(nat(sctp), sep)[1]
        == "-m comment --comment ns1/svc1:p80 -m sctp -p sctp -j DNAT --to-destination 10.180.0.1:80"
    )


def test_load_balancer_source_ranges() -> None:
    port = svc(
        "ns1",
        "svc1",
        ep("10.180.0.1"),
        node_port=3001,
        load_balancer_ips=("1.2.3.4",),
        source_ranges=("203.0.113.0/25", "192.168.0.0/24"),  # the second holds the node IP
    )
    chains = nat(port)
    fw, ext = service_chain("FW", port), service_chain("EXT", port)
    assert rules(chains, "KUBE-SERVICES")[1] == (
        f'-m comment --comment "ns1/svc1:p80 loadbalancer IP" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j {fw}'
    )
    assert rules(chains, fw) == [
        f'-m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 203.0.113.0/25 -j {ext}',
        f'-m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 192.168.0.0/24 -j {ext}',
        f'-m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 1.2.3.4 -j {ext}',  # the node reaching its LB IP
        '-m comment --comment "other traffic to ns1/svc1:p80 will be dropped by KUBE-PROXY-FIREWALL"',
    ]
    assert rules(chains, "KUBE-NODEPORTS")[0].endswith(f"-j {ext}")  # NodePorts bypass the source ranges
    assert rules(filter_(port), "KUBE-PROXY-FIREWALL") == [
        f'-m comment --comment "ns1/svc1:p80 traffic not accepted by {fw}" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j DROP'
    ]
    without_ranges = nat(dataclasses.replace(port, source_ranges=()))
    assert fw not in without_ranges and rules(without_ranges, "KUBE-SERVICES")[1].endswith(f"-j {ext}")


# ---------------------------------------------------------------------------------------------------------------
# Sync input: what changed, what is stale, which jumps are missing


def test_partial_input_writes_only_changed_chains_and_deletes_removed_ones() -> None:
    other = svc("ns2", "svc2", ep("10.180.0.9"), cip="172.30.0.42")
    old = plan(CONFIG, [svc("ns1", "svc1", ep("10.180.0.1")), other])
    new = plan(CONFIG, [svc("ns1", "svc1", ep("10.180.0.1"), ep("10.180.2.1"))])
    text = restore_input(new, old=old)
    gone = [service_chain("SVC", other), endpoint_chain(other, ep("10.180.0.9"))]
    lines = text.splitlines()
    assert lines[0] == "*nat" and lines[-1] == "COMMIT" and "*filter" not in lines  # the filter table is unchanged
    assert [line for line in lines if line.startswith(":")] == [
        ":KUBE-SERVICES - [0:0]",
        f":{SVC} - [0:0]",
        f":{SEP_2} - [0:0]",
        *(f":{name} - [0:0]" for name in gone),
    ]
    assert [line for line in lines if line.startswith("-X")] == [f"-X {name}" for name in gone]
    assert f"-A {SEP_1}" not in text  # unchanged: left as the kernel has it
    assert f'-A {SVC} -m comment --comment "ns1/svc1:p80 -> 10.180.2.1:80" -j {SEP_2}' in lines
    assert restore_input(new, old=new) == ""


SAVED = """\
# Generated by iptables-save v1.8.9 (nf_tables)
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -j KUBE-FIREWALL
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-LEFTOVER0000000 - [0:0]
:MY-CHAIN - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -j MY-CHAIN
-A MY-CHAIN -m comment --comment "not a -j KUBE-X jump" -j KUBE-SERVICES
COMMIT
"""


def test_full_input_deletes_leftovers_and_restores_missing_jumps() -> None:
    saved = parse_save(SAVED)
    assert saved.chains["nat"] == [
        "PREROUTING",
        "OUTPUT",
        "POSTROUTING",
        "KUBE-SERVICES",
        "KUBE-SVC-LEFTOVER0000000",
        "MY-CHAIN",
    ]
    jumps = missing_jumps(saved)
    assert {(j.table, j.chain, j.target) for j in JUMPS} - {(j.table, j.chain, j.target) for j in jumps} == {
        ("filter", "FORWARD", "KUBE-SERVICES"),
        ("nat", "PREROUTING", "KUBE-SERVICES"),
    }
    text = restore_input(plan(CONFIG, []), existing=saved.chains, jumps=jumps)
    lines = text.splitlines()
    assert ":KUBE-SVC-LEFTOVER0000000 - [0:0]" in lines and lines[-2] == "-X KUBE-SVC-LEFTOVER0000000"
    assert "KUBE-FIREWALL" not in text and "MY-CHAIN" not in text  # not ours: left alone
    assert '-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING' in lines
    assert (
        '-I INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" '
        "-j KUBE-EXTERNAL-SERVICES" in lines
    )
    assert lines.index("*filter") < lines.index("*nat")  # filter first, as upstream
    assert lines.count(":KUBE-SERVICES - [0:0]") == 2  # every chain of both tables is written


def test_cleanup_input_unlinks_and_deletes_every_kube_chain() -> None:
    text = cleanup_input(parse_save(SAVED))
    assert text.splitlines() == [
        "*filter",
        ":KUBE-FIREWALL - [0:0]",
        ":KUBE-SERVICES - [0:0]",
        "-D INPUT -j KUBE-FIREWALL",
        '-D FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        "-X KUBE-FIREWALL",
        "-X KUBE-SERVICES",
        "COMMIT",
        "*nat",
        ":KUBE-SERVICES - [0:0]",
        ":KUBE-SVC-LEFTOVER0000000 - [0:0]",
        '-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-D MY-CHAIN -m comment --comment "not a -j KUBE-X jump" -j KUBE-SERVICES',
        "-X KUBE-SERVICES",
        "-X KUBE-SVC-LEFTOVER0000000",
        "COMMIT",
    ]
    assert cleanup_input(parse_save("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n")) == ""


# ---------------------------------------------------------------------------------------------------------------
# The proxier's syncs, against a model of the kernel that applies restore input as iptables-nft-restore does


BUILT_IN = {"filter": ("INPUT", "FORWARD", "OUTPUT"), "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING")}
TARGETS = {"", "ACCEPT", "DROP", "RETURN", "REJECT", "DNAT", "MARK", "MASQUERADE"}  # no chains ("": no -j)


def _target(rule: str) -> str:
    words = shlex.split(rule)
    return words[words.index("-j") + 1] if "-j" in words else ""


class FakeKernel:
    """Tables as chain -> rules. A restore block is checked line by line, in the order the nft backend's batch
    runs it: a rule's chain and the chain it jumps to exist by then, `-X` finds its chain empty and unreferenced,
    and no jump is inserted after the listing (`-S`: from then on iptables-nft takes missing built-in chains as
    present). Then the block replaces the table (one transaction per COMMIT)."""

    nft_backend = True

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[str]]] = {t: {c: [] for c in chains} for t, chains in BUILT_IN.items()}
        self.inputs: list[str] = []

    def save(self) -> str:
        lines = []
        for table, chains in self.tables.items():
            lines.append(f"*{table}")
            lines += [f":{c} {'ACCEPT' if c in BUILT_IN[table] else '-'} [0:0]" for c in chains]
            lines += [f"-A {c} {rule}" for c, rules in chains.items() for rule in rules]
            lines.append("COMMIT")
        return "\n".join(lines) + "\n"

    def restore(self, text: str) -> None:
        self.inputs.append(text)
        chains: dict[str, list[str]] = {}
        table, listed = "", False
        for line in text.splitlines():
            if line.startswith("*"):
                table, listed = line[1:], False
                chains = {name: list(rules) for name, rules in self.tables[table].items()}
            elif line == "COMMIT":
                self.tables[table] = chains
            elif line == "-S":
                listed = True
            elif line.startswith(":"):
                chains[line[1:].split()[0]] = []
            else:
                op, chain, rule = (*line.split(" ", 2), "")[:3]  # `-X NAME` has no rule
                assert chain in chains, line
                if op == "-X":
                    assert not chains[chain] and not [
                        r for rules in chains.values() for r in rules if _target(r) == chain
                    ]
                    del chains[chain]
                    continue
                target = _target(rule)
                assert target in TARGETS or target in chains, f"jump to a chain not declared yet: {line}"
                assert op == "-A" or (op == "-I" and not listed), line
                chains[chain].insert(0, rule) if op == "-I" else chains[chain].append(rule)

    def cleanup(self) -> None:
        raise NotImplementedError

    def kube(self) -> dict[str, dict[str, list[str]]]:
        return {t: {c: r for c, r in chains.items() if c.startswith("KUBE-")} for t, chains in self.tables.items()}


def as_lists(ruleset: dict[str, dict[str, tuple[str, ...]]]) -> dict[str, dict[str, list[str]]]:
    return {table: {name: list(rules) for name, rules in chains.items()} for table, chains in ruleset.items()}


KINDS = ("add", "remove", "endpoint", "endpoint", "empty", "policy", "external", "reorder")


def mutate(rng: random.Random, ports: list[ServicePort], serial: int, kind: str = "") -> list[ServicePort]:
    """One change an agent may hand over (`kind`, else one at random): Services come and go, endpoints change, so
    do policies and addresses; every other port stays the very same object."""
    ports = list(ports)
    i = rng.randrange(len(ports)) if ports else 0
    kind = kind or rng.choice(KINDS)
    if kind == "add" or not ports:
        ports.insert(i, svc("ns9", f"new{serial}", ep(f"10.181.0.{serial % 250 + 1}"), cip=f"172.30.9.{serial % 250}"))
    elif kind == "remove":
        ports.pop(i)
    elif kind == "endpoint":
        extra = ep(f"10.182.{serial // 250 % 250}.{serial % 250 + 1}", rng.choice(["node-1", "node-2"]))
        ports[i] = dataclasses.replace(ports[i], endpoints=(*ports[i].endpoints[-2:], extra))
    elif kind == "empty":
        ports[i] = dataclasses.replace(ports[i], endpoints=())
    elif kind == "policy":
        ports[i] = dataclasses.replace(ports[i], external_local=not ports[i].external_local, node_port=3100 + i)
    elif kind == "external":
        ports[i] = dataclasses.replace(
            ports[i], load_balancer_ips=("1.2.3.9",), source_ranges=rng.choice([(), ("203.0.113.0/25",)])
        )
    else:
        rng.shuffle(ports)
    return ports


@pytest.mark.parametrize("bulk", [False, True], ids=["classic", "bulk"])
def test_incremental_syncs_equal_a_fresh_full_plan(bulk: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if bulk:  # every block in the bulk layout, however small
        monkeypatch.setattr(iptables, "BULK_MIN_LINES", 0)
        monkeypatch.setattr(iptables, "LIST_COST_RATIO", 0)
    kernel = FakeKernel()
    proxier = IptablesProxier(CONFIG, kernel)
    rng = random.Random(7)
    ports = overall_ports()
    proxier.sync(ports)
    for serial in range(300):
        ports = mutate(rng, ports, serial)
        proxier.sync(ports)
        assert kernel.kube() == as_lists(plan(CONFIG, ports)), serial
    assert (proxier.syncs, proxier.full_syncs) == (301, 1)
    assert ("-S" in kernel.inputs[-1].splitlines()) == bulk
    assert missing_jumps(parse_save(kernel.save())) == []
    proxier.sync(ports, full=True)  # nothing to delete, every chain written again
    assert kernel.kube() == as_lists(plan(CONFIG, ports)) and proxier.full_syncs == 2


def test_unchanged_ports_are_not_planned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    planned: list[str] = []
    plan_port = iptables.plan_port

    def counting(config: NodeConfig, port: ServicePort) -> iptables.PortPlan:
        planned.append(port.name)
        return plan_port(config, port)

    monkeypatch.setattr(iptables, "plan_port", counting)
    kernel = FakeKernel()
    proxier = IptablesProxier(CONFIG, kernel)
    ports = overall_ports()
    proxier.sync(ports)
    assert planned == ["svc1", "svc2", "svc3", "svc4", "svc5", "svc6"] and len(kernel.inputs) == 1
    planned.clear()
    proxier.sync(ports)  # the same objects: nothing planned, nothing written
    proxier.sync([dataclasses.replace(port) for port in ports])  # equal objects (`==`): the same
    assert planned == [] and len(kernel.inputs) == 1
    ports[0] = svc("ns1", "svc1", ep("10.180.0.1"), ep("10.180.2.1"))  # one endpoint more
    proxier.sync(ports)
    assert planned == ["svc1"]
    declared = [line[1:].split()[0] for line in kernel.inputs[-1].splitlines() if line.startswith(":")]
    assert declared == [SEP_2, SVC]  # the new endpoint's chain, the one jumping to it (KUBE-SERVICES is unchanged)
    assert kernel.kube() == as_lists(plan(CONFIG, ports))


def test_shared_chains_are_rewritten_only_when_a_port_s_rules_there_change() -> None:
    kernel = FakeKernel()
    proxier = IptablesProxier(CONFIG, kernel)
    ports = overall_ports()
    proxier.sync(ports)
    ports[5] = svc("ns6", "svc6", ep("10.180.0.6"), cip="172.30.0.46")  # no endpoints -> one: REJECT -> jump
    proxier.sync(ports)
    filter_text, nat_text = kernel.inputs[-1].split("COMMIT\n")[:2]
    assert [line for line in filter_text.splitlines() if line.startswith(":")] == [":KUBE-SERVICES - [0:0]"]
    assert ":KUBE-SERVICES - [0:0]" in nat_text.splitlines() and ":KUBE-NODEPORTS - [0:0]" not in nat_text
    ports.pop(1)  # ns2/svc2 goes: its chains, its NodePort, its shared rules in both tables
    proxier.sync(ports)
    declared = {line[1:].split()[0] for line in kernel.inputs[-1].splitlines() if line.startswith(":")}
    assert {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES"} <= declared
    assert "-X KUBE-SVC-GNZBNJ2PO5MGZ6GT" in kernel.inputs[-1].splitlines()
    assert kernel.kube() == as_lists(plan(CONFIG, ports))


def test_bulk_layout_lists_first_then_declares_each_chain_after_its_targets() -> None:
    ports = [
        *overall_ports(),
        svc("ns7", "svc7", ep("10.180.0.7"), ep("10.180.0.8", "node-1"), internal_local=True, affinity_timeout=60),
    ]
    saved = parse_save(SAVED)
    text = restore_input(plan(CONFIG, ports), existing=saved.chains, jumps=missing_jumps(saved), bulk=True)
    nat_lines = text.split("COMMIT\n")[1].splitlines()
    listing = nat_lines.index("-S")
    assert nat_lines[:listing] == [  # the chains the jumps lead to, the jumps
        "*nat",
        ":KUBE-SERVICES - [0:0]",
        ":KUBE-POSTROUTING - [0:0]",
        '-I OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    ]
    declared = [line[1:].split()[0] for line in nat_lines if line.startswith(":")]
    assert nat_lines[-2:] == [":KUBE-SVC-LEFTOVER0000000 - [0:0]", "-X KUBE-SVC-LEFTOVER0000000"]  # stale: last
    ranks = [iptables.rank(name) for name in declared[2:-1]]
    assert ranks == sorted(ranks) and declared.index(SEP_1) < declared.index(SVC)
    current = ""
    for line in nat_lines[listing + 1 : -2]:  # each chain's rules right after its declaration
        if line.startswith(":"):
            current = line[1:].split()[0]
        elif line.split()[1] != current:
            assert line.split()[1] in ("KUBE-SERVICES", "KUBE-POSTROUTING"), line  # declared before the jumps
            current = line.split()[1]
    kernel = FakeKernel()
    kernel.tables["nat"]["KUBE-SVC-LEFTOVER0000000"] = []
    kernel.restore(text)  # every reference resolves when it is made
    assert kernel.kube() == as_lists(plan(CONFIG, ports))


def test_bulk_layout_only_where_the_listing_pays_off() -> None:
    assert not iptables.use_bulk(999, 0)  # small blocks: never
    assert iptables.use_bulk(86_000, 0) and iptables.use_bulk(86_000, 64_000)  # a full sync, fresh or resynced
    assert not iptables.use_bulk(10_000, 320_000)  # KUBE-SERVICES rewritten at 10,000 Services: listing costs more
    kernel = FakeKernel()
    kernel.nft_backend = False  # iptables-legacy-restore: never (its -S inside a restore fails)
    IptablesProxier(CONFIG, kernel).sync(
        [svc("ns1", f"s{i}", ep("10.180.0.1"), cip=f"172.30.1.{i}") for i in range(250)]
    )
    assert "-S" not in kernel.inputs[0].splitlines()
    kernel = FakeKernel()
    IptablesProxier(CONFIG, kernel).sync(
        [svc("ns1", f"s{i}", ep("10.180.0.1"), cip=f"172.30.1.{i}") for i in range(250)]
    )
    filter_text, nat_text = kernel.inputs[0].split("COMMIT\n")[:2]
    assert "-S" not in filter_text.splitlines() and "-S" in nat_text.splitlines()  # nat: 1,000 lines and more


# ---------------------------------------------------------------------------------------------------------------
# Real iptables in throwaway namespaces

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("iptables-restore"), reason="needs root and iptables-restore"
)


def _fresh_netns(suffix: str) -> str:
    name = f"tkipt-{os.getpid()}-{suffix}"
    netns.delete(name)
    netns.ip("netns", "add", name)
    return name


@pytest.fixture
def ns() -> Iterator[str]:
    name = _fresh_netns("node")
    try:
        netns.ip("link", "set", "lo", "up", netns=name)
        yield name
    finally:
        netns.delete(name)


def saved_chains(runner: IptablesRunner) -> dict[str, list[str]]:
    return parse_save(runner.save()).chains


def kube_chains(runner: IptablesRunner) -> set[str]:
    return {name for chains in saved_chains(runner).values() for name in chains if name.startswith("KUBE-")}


@root_only
def test_rules_load_resync_and_cleanup_in_kernel(ns: str) -> None:
    runner = IptablesRunner(ns)
    proxier = IptablesProxier(CONFIG, runner)
    ports = [
        *overall_ports(),
        svc("ns7", "svc7", ep("10.180.0.7"), ep("10.180.0.8"), protocol="udp", affinity_timeout=60),
    ]
    proxier.sync(ports)
    dump = runner.save()
    assert kube_chains(runner) == set(plan(CONFIG, ports)["nat"]) | set(plan(CONFIG, ports)["filter"])
    assert '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' in dump
    assert "-j MASQUERADE --random-fully" in dump and "--rcheck --seconds 60 --reap" in dump
    assert '-m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp --dport 80 -j REJECT' in dump

    assert ports.pop(0).name == "svc1"  # ns1/svc1: its KUBE-SVC and KUBE-SEP chains must go
    proxier.sync(ports)
    assert (proxier.syncs, proxier.full_syncs) == (2, 1)
    assert not {SVC, SEP_1} & kube_chains(runner) and service_chain("SVC", ports[0]) in kube_chains(runner)
    assert "ns1/svc1" not in runner.save()
    partial = runner.save()
    runner.cleanup()
    IptablesProxier(CONFIG, runner).sync(ports)
    assert _rules_only(runner.save()) == _rules_only(partial)  # partial result == fresh full result

    proxier.cleanup()
    assert not kube_chains(runner) and "KUBE-" not in runner.save()
    proxier.cleanup()  # idempotent


def _kube_rules(dump: str) -> dict[str, list[str]]:
    """`table chain` -> its rules in order, as iptables-save prints them: the KUBE chains and the jumps into them."""
    saved, found = parse_save(dump), dict[str, list[str]]()
    for table, rules in saved.rules.items():
        found.update({f"{table} {name}": [] for name in saved.chains[table] if name.startswith("KUBE-")})
        for rule in rules:
            if "KUBE-" in rule:
                found.setdefault(f"{table} {rule.split()[1]}", []).append(rule)
    return found


@root_only
@pytest.mark.parametrize("bulk", [False, True], ids=["classic", "bulk"])
def test_incremental_syncs_equal_a_fresh_full_sync_in_kernel(
    ns: str, bulk: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = IptablesRunner(ns)
    if bulk and not runner.nft_backend:
        pytest.skip("the bulk layout is for iptables-nft-restore")
    if bulk:  # every block in the bulk layout, however small
        monkeypatch.setattr(iptables, "BULK_MIN_LINES", 0)
        monkeypatch.setattr(iptables, "LIST_COST_RATIO", 0)
    runner.restore("*nat\n:KUBE-SVC-LEFTOVER0000000 - [0:0]\nCOMMIT\n")  # left by an earlier run
    proxier = IptablesProxier(CONFIG, runner)
    rng = random.Random(3)
    ports = [
        *overall_ports(),
        svc("ns7", "svc7", ep("10.180.0.7"), ep("10.180.0.8"), protocol="udp", affinity_timeout=60),
    ]
    proxier.sync(ports)
    for serial, kind in enumerate(("endpoint", "add", "empty", "remove", "policy", "external", "reorder", "endpoint")):
        ports = mutate(rng, ports, serial, kind)
        proxier.sync(ports)
    incremental = _kube_rules(runner.save())
    assert "nat KUBE-SVC-LEFTOVER0000000" not in incremental and "nat KUBE-SERVICES" in incremental
    proxier.sync(ports, full=True)  # every chain written again over the loaded table
    assert _kube_rules(runner.save()) == incremental
    assert (proxier.syncs, proxier.full_syncs, proxier.failures) == (10, 2, 0)
    runner.cleanup()
    monkeypatch.undo()
    IptablesProxier(CONFIG, runner).sync(ports)  # a fresh full sync in the classic layout
    assert _kube_rules(runner.save()) == incremental


def _rules_only(dump: str) -> list[str]:
    return sorted(line for line in dump.splitlines() if line.startswith(("-A", ":")))


@root_only
def test_proxier_repairs_drift_and_recovers_from_failure(ns: str) -> None:
    runner = IptablesRunner(ns)
    proxier = IptablesProxier(CONFIG, runner)
    ports = [svc("ns1", "svc1", ep("10.180.0.1"))]
    proxier.sync(ports)
    expected = _rules_only(runner.save())
    delete_jump = 'iptables -t nat -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES'
    subprocess.run(netns.exec_argv(ns, shlex.split(delete_jump)), check=True)
    proxier.sync(ports, full=True)  # a full sync puts the jump back
    assert _rules_only(runner.save()) == expected

    runner.cleanup()  # someone removed everything: a partial sync refers to chains that no longer exist
    with pytest.raises(IptablesError, match=r"Chain 'KUBE-[A-Z0-9-]+' does not exist"):
        proxier.sync([svc("ns1", "svc1", ep("10.180.0.1"), cip="172.30.0.99")])
    assert (proxier.syncs, proxier.failures, proxier.full_syncs) == (3, 1, 2)
    proxier.sync(ports)  # after a failure: a full sync again
    assert _rules_only(runner.save()) == expected and proxier.full_syncs == 3


@root_only
def test_restore_errors_carry_iptables_message(ns: str) -> None:
    with pytest.raises(
        IptablesError, match=r"^iptables-restore v[\d.]+ .*: Chain 'NOPE' does not exist Error occurred"
    ):
        IptablesRunner(ns).restore("*filter\n:KUBE-X - [0:0]\n-A KUBE-X -j NOPE\nCOMMIT\n")


# Real packets: a "node" namespace (running the rules) and a "pod" namespace joined by a veth; the pod holds the
# endpoints, so reaching its own Service exercises the hairpin masquerade too.

NODE_CONFIG = NodeConfig(
    node_name="node-1", node_ips=["10.244.0.1"], cluster_cidr="10.244.0.0/16", service_cidrs=["10.96.0.0/16"]
)


@pytest.fixture
def node_and_pod(ns: str) -> Iterator[tuple[str, str]]:
    pod = _fresh_netns("pod")
    try:
        for key in ("net.ipv4.conf.all.send_redirects", "net.ipv4.conf.default.send_redirects"):
            netns.write_sysctl(ns, key, "0")  # redirects would spend the ICMP budget the REJECTs need
        netns.ip_batch(
            ns,
            [
                f"link add veth-n type veth peer name veth-p netns {pod}",
                "addr add 10.244.0.1/24 dev veth-n",
                "link set veth-n up",
                "route add 10.96.0.0/16 dev veth-n",  # what the node does with service IPs without the proxy
            ],
        )
        netns.write_sysctl(ns, "net.ipv4.ip_forward", "1")
        netns.ip_batch(
            pod,
            [
                "link set lo up",
                "addr add 10.244.0.2/24 dev veth-p",
                "addr add 10.244.0.3/24 dev veth-p",
                "link set veth-p up",
                "route add default via 10.244.0.1",
            ],
        )
        yield ns, pod
    finally:
        netns.delete(pod)


def _listener(name: str, ip: str) -> socket.socket:
    listener = netns.socket_in(name)
    listener.settimeout(3)
    listener.bind((ip, 8080))
    listener.listen(16)
    return listener


def _visit(name: str, ip: str, port: int, listeners: list[socket.socket]) -> tuple[str, str]:
    """Connect from namespace `name`; (the endpoint that accepted, the client address it saw)."""
    client = netns.socket_in(name)
    client.settimeout(3)
    with client:
        client.connect((ip, port))
        ready, _, _ = select.select(listeners, [], [], 3)
        conn, peer = ready[0].accept()
        with conn:
            conn.sendall(b"hello")
            assert client.recv(5) == b"hello"
        return str(ready[0].getsockname()[0]), str(peer[0])


@root_only
def test_packets_reach_endpoints_stick_or_are_refused(node_and_pod: tuple[str, str]) -> None:
    node, pod = node_and_pod
    a, b = (Endpoint(ip, 8080, "node-1", True, True, False) for ip in ("10.244.0.2", "10.244.0.3"))
    IptablesProxier(NODE_CONFIG, IptablesRunner(node)).sync(
        [
            svc("ns1", "svc1", a, cip="10.96.0.10", node_port=30080),
            svc("ns1", "sticky", a, b, cip="10.96.0.12", affinity_timeout=300),
            svc("ns1", "empty", cip="10.96.0.11"),
        ]
    )
    listeners = [_listener(pod, "10.244.0.2"), _listener(pod, "10.244.0.3")]
    try:
        # the pod reaching itself through its Service: hairpin, so the node masquerades it to its own IP
        assert _visit(pod, "10.96.0.10", 80, listeners) == ("10.244.0.2", "10.244.0.1")
        assert _visit(pod, "10.244.0.1", 30080, listeners) == ("10.244.0.2", "10.244.0.1")  # NodePort, node IP
        assert _visit(node, "10.96.0.10", 80, listeners) == ("10.244.0.2", "10.244.0.1")  # from the node itself
        # ClientIP affinity: one client keeps its endpoint (a random pick would differ within ten tries
        # with probability 1 - 2/1024)
        assert len({_visit(node, "10.96.0.12", 80, listeners)[0] for _ in range(10)}) == 1
        with pytest.raises(ConnectionRefusedError) as refused:  # no endpoints: REJECT in the filter table
            _visit(pod, "10.96.0.11", 80, listeners)
        assert refused.value.errno == errno.ECONNREFUSED
    finally:
        for listener in listeners:
            listener.close()
