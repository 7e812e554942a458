"""Stale UDP flows: which entries go after a sync (pure), then a real flow in a throwaway namespace pair that moves
to the new endpoint once its entry is cleared (root only)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from collections.abc import Iterator

import pytest

from tests.proxy.test_nftables import CONFIG, ep, node_and_pod, ns, svc  # noqa: F401 - fixtures
from tinykube.proxy.conntrack import Flush, flush, stale_flows
from tinykube.proxy.model import Endpoint, ServicePort
from tinykube.proxy.nftables import NftablesProxier, NftRunner
from tinykube.sandbox import netns


def dns(*endpoints: Endpoint, **changes: object) -> ServicePort:
    return svc("dns", *endpoints, protocol="udp", port=53, **changes)


def test_removed_endpoint_flows_are_cleared_for_every_service_address() -> None:
    old = [dns(ep("10.244.0.5"), ep("10.244.1.5"), node_port=30053, external_ips=("192.0.2.7",))]
    new = [dataclasses.replace(old[0], endpoints=(ep("10.244.1.5"),))]
    assert set(stale_flows(old, new)) == {
        Flush(destination="10.96.0.10", endpoint="10.244.0.5"),
        Flush(destination="192.0.2.7", endpoint="10.244.0.5"),
        Flush(node_port=30053, endpoint="10.244.0.5"),
    }
    assert Flush(node_port=30053, endpoint="10.244.0.5").argv() == [
        "-D",
        "-p",
        "udp",
        "--orig-port-dst",
        "30053",
        "--reply-src",
        "10.244.0.5",
    ]


def test_a_port_that_gets_its_first_endpoint_or_goes_away_is_cleared_whole() -> None:
    empty, served = dns(), dns(ep("10.244.0.5"))
    assert stale_flows([empty], [served]) == [Flush(destination="10.96.0.10")]
    assert stale_flows([served], []) == [Flush(destination="10.96.0.10")]


def test_tcp_and_unchanged_ports_need_nothing() -> None:
    tcp_old, tcp_new = svc("web", ep("10.244.0.5"), ep("10.244.0.6")), svc("web", ep("10.244.0.6"))
    assert stale_flows([tcp_old], [tcp_new]) == []
    served = dns(ep("10.244.0.5"))
    assert stale_flows([served], [served]) == []
    # a not-ready endpoint was not in use: its leaving clears nothing
    assert stale_flows([dns(ep("10.244.0.5"), ep("10.244.0.6", ready=False))], [served]) == []


# ---------------------------------------------------------------------------------------------------------------

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("conntrack"), reason="needs root, nft, conntrack"
)


@pytest.fixture
def udp_servers(node_and_pod: tuple[str, str]) -> Iterator[dict[int, socket.socket]]:  # noqa: F811
    _node, pod = node_and_pod
    servers = {}
    for port in (5353, 5354):
        sock = netns.socket_in(pod, socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(True)
        sock.settimeout(0.5)
        sock.bind(("10.244.0.2", port))
        servers[port] = sock
    yield servers
    for sock in servers.values():
        sock.close()


@root_only
def test_a_flow_moves_to_the_new_endpoint_once_cleared(
    node_and_pod: tuple[str, str],  # noqa: F811
    udp_servers: dict[int, socket.socket],
) -> None:
    node, _pod = node_and_pod
    first = dns(Endpoint("10.244.0.2", 5353, "node-1", True, True, False))
    second = dns(Endpoint("10.244.0.2", 5354, "node-1", True, True, False))
    proxier = NftablesProxier(CONFIG, NftRunner(node))
    client = netns.socket_in(node, socket.AF_INET, socket.SOCK_DGRAM)  # the node's own flow: one fixed source port
    client.setblocking(True)
    try:
        proxier.sync([first])
        client.sendto(b"1", ("10.96.0.10", 53))
        assert udp_servers[5353].recv(10) == b"1"
        proxier.sync([second])
        client.sendto(b"2", ("10.96.0.10", 53))  # the flow's DNAT was decided by its first packet
        assert udp_servers[5353].recv(10) == b"2"
        flush(node, stale_flows([first], [second]))
        client.sendto(b"3", ("10.96.0.10", 53))
        assert udp_servers[5354].recv(10) == b"3"
    finally:
        client.close()
        assert isinstance(proxier.runner, NftRunner)
        proxier.runner.close()
