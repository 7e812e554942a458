"""The `nft monitor trace` parser and the trace table, on lines recorded from a 2-node netns cluster (nftables
mode, then iptables-nft mode): a NodePort from the external client, and a Service without endpoints."""

# ruff: noqa: E501, W291 - the recorded lines are kept as nft printed them (long, with a trailing blank)
from __future__ import annotations

import pytest

from tinykube.trace import kernel, nftrace
from tinykube.trace.engine import role
from tinykube.trace.model import Endpoint, Step, TraceError, TraceResult
from tinykube.trace.render import explain, render
from tinykube.trace.resolve import fqdn, parse_source, parse_target

NFTABLES = """\
trace id 45ba6bce inet tinykube-trace pre packet: iif "eth0" ether saddr 0a:17:61:01:cc:32 ether daddr d2:44:c3:da:93:71 ip saddr 172.20.0.250 ip daddr 172.20.0.2 ip dscp cs0 ip ecn not-ect ip ttl 64 ip id 27264 ip protocol tcp ip length 60 tcp sport 47112 tcp dport 30569 tcp flags == syn tcp window 64240 
trace id 45ba6bce inet tinykube-trace pre rule ip saddr 172.20.0.250 tcp sport 47112 meta nftrace set 1 (verdict continue)
trace id 45ba6bce inet tinykube-trace pre policy accept 
trace id 45ba6bce ip kube-proxy nat-prerouting packet: iif "eth0" ether saddr 0a:17:61:01:cc:32 ether daddr d2:44:c3:da:93:71 ip saddr 172.20.0.250 ip daddr 172.20.0.2 ip dscp cs0 ip ecn not-ect ip ttl 64 ip id 27264 ip length 60 tcp sport 47112 tcp dport 30569 tcp flags == syn tcp window 64240 
trace id 45ba6bce ip kube-proxy nat-prerouting rule jump services (verdict jump services)
trace id 45ba6bce ip kube-proxy services rule ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports (verdict goto external-pick-tcp-80-1-2)
trace id 45ba6bce ip kube-proxy external-pick-tcp-80-1-2 rule jump mark-for-masquerade (verdict jump mark-for-masquerade)
trace id 45ba6bce ip kube-proxy mark-for-masquerade rule meta mark set meta mark | 0x00004000 (verdict continue)
trace id 45ba6bce ip kube-proxy external-pick-tcp-80-1-2 rule goto pick-tcp-80-1-2 (verdict goto pick-tcp-80-1-2)
trace id 45ba6bce ip kube-proxy pick-tcp-80-1-2 rule ct mark set numgen random mod 2 offset 1310721 (verdict continue)
trace id 45ba6bce ip kube-proxy nat-prerouting rule ip daddr @nodeport-ips meta l4proto { tcp, udp, sctp } dnat ip to th dport . ct mark map @nodeport-endpoint-addresses (verdict accept)
trace id 45ba6bce ip kube-proxy filter-forward packet: iif "eth0" oif "vethd6d4a329" ether saddr 0a:17:61:01:cc:32 ether daddr d2:44:c3:da:93:71 ip saddr 172.20.0.250 ip daddr 10.244.1.2 ip dscp cs0 ip ecn not-ect ip ttl 63 ip id 27264 ip length 60 tcp sport 47112 tcp dport 8080 tcp flags == syn tcp window 64240 
trace id 45ba6bce ip kube-proxy filter-forward policy accept meta mark 0x00004000 
trace id 45ba6bce ip kube-proxy masquerading rule masquerade fully-random (verdict accept)
trace id f6e741ae inet tinykube-trace prect packet: iif "vethd6d4a329" ether saddr ee:63:06:f6:a0:d0 ether daddr ee:ee:ee:ee:ee:ee ip saddr 10.244.1.2 ip daddr 172.20.0.2 ip dscp cs0 ip ecn not-ect ip ttl 64 ip id 0 ip protocol tcp ip length 60 tcp sport 8080 tcp dport 15300 tcp flags == 0x12 tcp window 65160 
trace id f6e741ae ip kube-proxy filter-forward policy accept 
trace id 45ba6bce inet tinykube-trace pre packet: iif "eth0" ether saddr 0a:17:61:01:cc:32 ether daddr d2:44:c3:da:93:71 ip saddr 172.20.0.250 ip daddr 172.20.0.2 ip dscp cs0 ip ecn not-ect ip ttl 64 ip id 27266 ip protocol tcp ip length 79 tcp sport 47112 tcp dport 30569 tcp flags == 0x18 tcp window 63 
"""

IPTABLES = """\
trace id 4a006041 ip nat PREROUTING packet: iif "eth0" ether saddr 26:bc:2c:41:19:71 ether daddr 22:4e:d8:ea:94:cd ip saddr 172.20.0.250 ip daddr 172.20.0.2 ip dscp cs0 ip ecn not-ect ip ttl 64 ip id 57680 ip length 60 tcp sport 47201 tcp dport 31950 tcp flags == syn tcp window 64240 
trace id 4a006041 ip nat PREROUTING rule  counter packets 0 bytes 0 jump KUBE-SERVICES (verdict jump KUBE-SERVICES)
trace id 4a006041 ip nat KUBE-SVC-IFSGUVPJVX5CWNQP rule  meta random & 2147483647 < 1073741824 counter packets 0 bytes 0 jump KUBE-SEP-P2XJOUPLZWKJOYO5 (verdict jump KUBE-SEP-P2XJOUPLZWKJOYO5)
trace id 4a006041 ip nat KUBE-SEP-P2XJOUPLZWKJOYO5 rule meta l4proto tcp   counter packets 0 bytes 0 dnat to 10.244.0.2:8080 (verdict accept)
trace id 4a006041 inet tinykube-trace request-prerouting unknown rule handle 7 (verdict continue)
trace id 1b2c3d4e ip filter KUBE-SERVICES rule meta l4proto tcp ip daddr 10.96.152.122 tcp dport 80  counter packets 0 bytes 0 reject (verdict drop)
trace id 9a8b7c6d ip filter OUTPUT packet: oif "eth0" ip saddr 172.20.0.2 ip daddr 10.244.0.2 ip dscp cs6 ip ecn not-ect ip ttl 64 ip id 1 ip length 88 icmp type destination-unreachable icmp code port-unreachable
"""


def test_packet_rule_and_policy_lines() -> None:
    lines = NFTABLES.splitlines()
    packet = nftrace.parse_line(lines[0])
    assert packet is not None and packet.kind == "packet" and packet.packet is not None
    assert (packet.family, packet.table, packet.chain) == ("inet", "tinykube-trace", "pre")
    p = packet.packet
    assert (p.saddr, p.sport, p.daddr, p.dport, p.proto, p.flags, p.iif) == (
        "172.20.0.250", 47112, "172.20.0.2", 30569, "tcp", "syn", "eth0"
    )  # fmt: skip
    assert p.summary() == "172.20.0.250:47112 > 172.20.0.2:30569 tcp syn"
    rule = nftrace.parse_line(lines[5])
    assert rule is not None and (rule.kind, rule.chain, rule.verdict) == (
        "rule",
        "services",
        "goto external-pick-tcp-80-1-2",
    )
    assert rule.rule == "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports"
    policy = nftrace.parse_line(lines[12])
    assert policy is not None and (policy.kind, policy.verdict, policy.rule) == (
        "policy",
        "accept",
        "meta mark 0x00004000",
    )
    assert nftrace.parse_line("") is None and nftrace.parse_line("Error: foo") is None


def test_trips_split_a_reused_trace_id() -> None:
    trips = nftrace.parse(NFTABLES)
    assert [t.id for t in trips] == ["45ba6bce", "f6e741ae", "45ba6bce"]  # the kernel reused 45ba6bce
    first = trips[0]
    assert first.first.daddr == "172.20.0.2" and first.last.daddr == "10.244.1.2"  # DNATed on the way
    assert nftrace.tcp_flags(trips[1].first.flags) == "syn,ack"
    assert trips[2].first.flags == "0x18" and nftrace.tcp_flags("0x18") == "psh,ack"


def test_iptables_nft_lines() -> None:
    events = [e for e in map(nftrace.parse_line, IPTABLES.splitlines()) if e is not None]
    assert events[1].rule == "jump KUBE-SERVICES"  # the counter is dropped
    assert events[3].rule == "meta l4proto tcp dnat to 10.244.0.2:8080" and events[3].verdict == "accept"
    assert events[4].rule == "unknown rule handle 7"
    icmp = events[6].packet
    assert icmp is not None and (icmp.proto, icmp.flags, icmp.sport) == ("icmp", "destination-unreachable", None)
    assert icmp.summary() == "172.20.0.2 > 10.244.0.2 icmp destination-unreachable"


def _step(chain: str, rule: str, verdict: str) -> Step:
    return Step("tk-x.node-1", "node-1", "request", "1", "ip", "nat", chain, rule, verdict)


@pytest.mark.parametrize(
    ("chain", "rule", "verdict", "said"),
    [
        ("KUBE-SVC-X", "meta random & 2147483647 < 1073741824 jump KUBE-SEP-A", "jump KUBE-SEP-A",
         "KUBE-SVC-X picks KUBE-SEP-A at random (probability 0.5)"),
        ("pick-tcp-80-1-2", "ct mark set numgen random mod 2 offset 1310721", "continue",
         "pick-tcp-80-1-2 picks an endpoint at random (probability 1/2 each of 2)"),
        ("services", "ip daddr @cluster-ips ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
         "jump mark-for-masquerade",
         "mark-for-masquerade marks it for SNAT because it came from outside the cluster CIDR (10.244.0.0/16)"),
        ("KUBE-EXT-X", "jump KUBE-MARK-MASQ", "jump KUBE-MARK-MASQ",
         "KUBE-MARK-MASQ marks it for SNAT because it came from outside to a NodePort"),
        ("reject-chain", "reject", "drop", "REJECT"),
        ("KUBE-SERVICES", "meta l4proto tcp ip daddr 10.96.1.2 tcp dport 80 reject", "drop", "REJECT"),
        ("nodeport-endpoints-check", "ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports",
         "drop", "the Service has no endpoints: drop"),
        ("masquerading", "masquerade fully-random", "accept", "masquerade (SNAT)"),
    ],
)  # fmt: skip
def test_explain(chain: str, rule: str, verdict: str, said: str) -> None:
    assert explain(_step(chain, rule, verdict)).startswith(said)


def test_trace_table_matches_only_the_flow() -> None:
    flow = kernel.Flow("10.244.1.3", 45000, "tcp", ("172.20.0.2",), ("10.244.0.2",), 8080)
    script = kernel.ruleset(flow)
    assert script.startswith("table inet tinykube-trace-45000 {")
    assert "type filter hook prerouting priority raw;" in script and "type filter hook output priority raw;" in script
    assert "ip saddr 10.244.1.3 tcp sport 45000 tcp flags & (syn | ack) == syn meta nftrace set 1" in script
    assert "ct original ip saddr 10.244.1.3 ct original proto-src 45000" in script
    assert "ip saddr @nodes ip daddr @endpoints tcp dport 8080" in script
    udp = kernel.ruleset(kernel.Flow("172.20.0.250", 45001, "udp"))
    assert "udp sport 45001 meta nftrace set 1" in udp and "@nodes" not in udp and "tcp flags" not in udp


def test_parse_from_and_to() -> None:
    assert parse_source("external") == ("external", "")
    assert parse_source("node/node-1") == ("node", "node-1")
    assert parse_source("web-1") == ("pod", "default/web-1")
    assert parse_source("kube-system/dns") == ("pod", "kube-system/dns")
    with pytest.raises(TraceError):
        parse_source("a/b/c")
    assert parse_target("web") == ("web", None)
    assert parse_target("172.20.0.2:30080") == ("172.20.0.2", 30080)
    with pytest.raises(TraceError):
        parse_target("web:http")
    assert fqdn("web") == "web.default.svc.cluster.local"
    assert fqdn("web.ns") == "web.ns.svc.cluster.local"
    assert fqdn("web.ns.svc") == "web.ns.svc.cluster.local"
    assert fqdn("example.com.x.y") == "example.com.x.y"


def test_render_an_error() -> None:
    failed = TraceResult(Endpoint("address", "nobody", None, ""), "web", "tcp", "", 0, 0, "unknown", error="no pod")
    assert render(failed) == "trace nobody -> web: no pod"


RELAYED = """\
trace id 0000abcd inet tinykube-trace-41916 request-prerouting packet: iif "veth1" ip saddr 10.244.1.2 ip daddr 10.96.160.18 ip protocol tcp tcp sport 41916 tcp dport 80 tcp flags == syn
trace id 0000abcd inet tinykube-trace-41916 request-prerouting rule ip saddr 10.244.1.2 tcp sport 41916 tcp flags & (syn | ack) == syn meta nftrace set 1 (verdict continue)
trace id 0000abcd ip tinykube-userspace portals rule dnat ip to ip daddr . meta l4proto . th dport map @portals (verdict accept)
trace id 0000abcd inet tinykube-trace-41916 relay-output packet: oif "eth0" ip saddr 172.20.0.3 ip daddr 10.244.0.2 ip protocol tcp tcp sport 53620 tcp dport 8080 tcp flags == syn
trace id 0000abcd inet tinykube-trace-41916 relay-output rule ip saddr @nodes ip daddr @endpoints tcp dport 8080 tcp flags & (syn | ack) == syn meta nftrace set 1 (verdict continue)
trace id 0000abcd ip tinykube-userspace output rule jump portals (verdict jump portals)
trace id 0000ef01 inet tinykube-trace-9999 request-prerouting rule ip saddr 10.244.1.9 tcp sport 9999 meta nftrace set 1 (verdict continue)
"""


def test_a_reused_id_entering_a_trace_table_again_is_a_new_packet() -> None:
    """The userspace proxy's own connection got the client packet's trace id: entering the trace table again, after
    the portal rule, starts a new trip; a trip marked by another trace's table is told apart by its table."""
    trips = nftrace.parse(RELAYED)
    assert [(t.id, t.first.saddr) for t in trips] == [
        ("0000abcd", "10.244.1.2"),
        ("0000abcd", "172.20.0.3"),
        ("0000ef01", ""),
    ]
    assert [kernel.role_of(t.events[1].chain) for t in trips[:2]] == ["request", "relay"]
    assert trips[2].events[0].table == "tinykube-trace-9999"
    flow = kernel.Flow("10.244.1.2", 41916, "tcp", ("172.20.0.3",), ("10.244.0.2",), 8080)
    assert [role(t, flow) for t in trips] == ["request", "relay", "other"]
