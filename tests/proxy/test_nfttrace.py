"""What the nftables planner's table does to packets, end to end and without a kernel: the tracer of
`tinykube/proxy/nfttrace.py` follows a new connection through `plan()`'s rules (and through what an incremental
sync really sent) and reports where it lands, with what probability, and whether it was masqueraded."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction

import pytest

from tests.proxy.test_nftables import ep, svc
from tinykube.proxy.model import Endpoint, NodeConfig, ServicePort
from tinykube.proxy.nftables import NftablesProxier, Ruleset, plan, render_full
from tinykube.proxy.nfttrace import Outcome, Packet, TraceError, apply, trace

NODE_IP = "192.168.1.10"
CONFIG = NodeConfig(
    node_name="node-1", node_ips=[NODE_IP], cluster_cidr="10.244.0.0/16", service_cidrs=["10.96.0.0/16"]
)
A, B, CLIENT_POD = "10.244.1.5", "10.244.1.6", "10.244.1.7"  # pods on node-1
REMOTE = "10.244.2.5"  # a pod on node-2
OUTSIDE = "203.0.113.9"  # a client outside the cluster
# Each pod of node-1 behind its own veth, as tinykube's sandbox wires them; everything else out of eth0.
ROUTES = (*((f"{ip}/32", f"veth-{ip}") for ip in (A, B, CLIENT_POD)), ("0.0.0.0/0", "eth0"))
CIP = "10.96.0.10"
NODE_PORT = 30080
EXTERNAL_IP, LB_IP = "192.0.2.7", "192.0.2.50"


def local(ip: str, **kw: bool) -> Endpoint:
    return ep(ip, "node-1", **kw)


def remote(ip: str = REMOTE, **kw: bool) -> Endpoint:
    return ep(ip, "node-2", **kw)


def from_pod(dst: str, port: int = 80, *, pod: str = CLIENT_POD, proto: str = "tcp") -> Packet:
    return Packet(pod, dst, port, proto, iif=f"veth-{pod}", routes=ROUTES)


def from_outside(dst: str, port: int = 80, *, src: str = OUTSIDE, proto: str = "tcp") -> Packet:
    return Packet(src, dst, port, proto, iif="eth0", routes=ROUTES)


def from_node(dst: str, port: int = 80, *, src: str = NODE_IP) -> Packet:
    return Packet(src, dst, port, hook="output", routes=ROUTES)


def spread(outcomes: Iterable[Outcome]) -> dict[str, Fraction]:
    """Where the connection goes and how likely: `ip:port` of the endpoint (` masq` when masqueraded), or
    `accept` (untouched), `drop`, `reject`."""
    found: dict[str, Fraction] = defaultdict(Fraction)
    for outcome in outcomes:
        where = f"{outcome.dnat[0]}:{outcome.dnat[1]}" if outcome.dnat else outcome.verdict
        if outcome.dnat and outcome.verdict != "accept":
            where += f" {outcome.verdict}"
        found[where + (" masq" if outcome.masqueraded else "")] += outcome.probability
    assert sum(found.values()) == 1
    return dict(found)


def go(ports: list[ServicePort], packet: Packet, **kw: Iterable[str]) -> dict[str, Fraction]:
    return spread(trace(plan(CONFIG, ports).table, packet, CONFIG, members=kw or None))


HALF, THIRD = Fraction(1, 2), Fraction(1, 3)
EXTERNAL = {"node_port": NODE_PORT, "external_ips": (EXTERNAL_IP,), "load_balancer_ips": (LB_IP,)}


@pytest.mark.parametrize(
    ("ports", "packet", "expected"),
    [
        # ClusterIP
        pytest.param(
            [svc("web", local(A), local(B), remote())],
            from_pod(CIP),
            {f"{A}:8080": THIRD, f"{B}:8080": THIRD, f"{REMOTE}:8080": THIRD},
            id="cluster-ip-from-pod-even-spread",
        ),
        pytest.param(
            [svc("web", local(A), local(B, ready=False))], from_pod(CIP), {f"{A}:8080": 1}, id="not-ready-left-out"
        ),
        pytest.param(
            [svc("web", local(A), remote())],
            from_node(CIP),
            {f"{A}:8080 masq": HALF, f"{REMOTE}:8080 masq": HALF},
            id="cluster-ip-from-node-masqueraded",
        ),
        pytest.param(
            [svc("web", local(A))], from_outside(CIP), {f"{A}:8080 masq": 1}, id="cluster-ip-from-outside-masqueraded"
        ),
        pytest.param(
            [svc("web", local(A), local(B))],
            from_pod(CIP, pod=A),
            {f"{A}:8080 masq": HALF, f"{B}:8080": HALF},
            id="hairpin-masqueraded-only-back-to-itself",
        ),
        pytest.param([svc("web", local(A))], from_pod(CIP, 81), {"reject": 1}, id="undefined-port-rejected"),
        pytest.param([svc("web", local(A))], from_node(CIP, 81), {"reject": 1}, id="undefined-port-from-node"),
        pytest.param([svc("web", local(A))], from_pod("10.96.0.99"), {"drop": 1}, id="unallocated-ip-dropped"),
        pytest.param([svc("web", local(A))], from_pod("10.97.0.1"), {"accept": 1}, id="outside-service-cidr-untouched"),
        pytest.param([svc("web")], from_pod(CIP), {"reject": 1}, id="no-endpoints-rejected"),
        pytest.param([svc("web")], from_node(CIP), {"reject": 1}, id="no-endpoints-from-node"),
        pytest.param([svc("web", local(A, ready=False))], from_pod(CIP), {"reject": 1}, id="only-not-ready"),
        pytest.param(
            [svc("web", local(A, ready=False, terminating=True), remote())],
            from_pod(CIP),
            {f"{REMOTE}:8080": 1},
            id="terminating-not-while-one-is-ready",
        ),
        pytest.param(
            [svc("web", local(A, ready=False, terminating=True), remote(ready=False))],
            from_pod(CIP),
            {f"{A}:8080": 1},
            id="terminating-as-the-fallback",
        ),
        pytest.param(
            [svc("dns", local(A), protocol="udp", port=53)],
            from_pod(CIP, 53, proto="udp"),
            {f"{A}:8080": 1},
            id="udp",
        ),
        pytest.param(
            [svc("dns", local(A), protocol="udp", port=53)], from_pod(CIP, 53), {"reject": 1}, id="tcp-to-udp-port"
        ),
        pytest.param(
            [
                svc("web", local(A)),
                svc("web", Endpoint(B, 8443, "node-1", True, True, False), port_name="https", port=443),
            ],
            from_pod(CIP, 443),
            {f"{B}:8443": 1},
            id="multi-port-each-its-own-endpoints",
        ),
        pytest.param(
            [svc("web", local(A)), svc("api", remote(), cip="10.96.0.11")],
            from_pod("10.96.0.11"),
            {f"{REMOTE}:8080": 1},
            id="two-services-one-pick-chain",
        ),
        # NodePort, externalIPs, LoadBalancer IPs: externalTrafficPolicy Cluster
        pytest.param(
            [svc("web", local(A), remote(), **EXTERNAL)],
            from_outside(NODE_IP, NODE_PORT),
            {f"{A}:8080 masq": HALF, f"{REMOTE}:8080 masq": HALF},
            id="node-port-from-outside-masqueraded",
        ),
        pytest.param(
            [svc("web", local(A), **EXTERNAL)], from_outside(EXTERNAL_IP), {f"{A}:8080 masq": 1}, id="external-ip"
        ),
        pytest.param([svc("web", local(A), **EXTERNAL)], from_outside(LB_IP), {f"{A}:8080 masq": 1}, id="lb-ip"),
        pytest.param([svc("web", local(A), **EXTERNAL)], from_pod(LB_IP), {f"{A}:8080 masq": 1}, id="lb-ip-from-pod"),
        pytest.param(
            [svc("web", remote(), **EXTERNAL)],
            from_node(NODE_IP, NODE_PORT),
            {f"{REMOTE}:8080 masq": 1},
            id="node-port-from-the-node-itself",
        ),
        pytest.param(
            [svc("web", local(A), **EXTERNAL)],
            from_outside("192.168.1.99", NODE_PORT),
            {"accept": 1},
            id="node-port-only-on-node-ips",
        ),
        pytest.param(
            [svc("web", **EXTERNAL)], from_outside(NODE_IP, NODE_PORT), {"reject": 1}, id="node-port-no-endpoints"
        ),
        pytest.param(
            [svc("web", **EXTERNAL)],
            from_node(NODE_IP, NODE_PORT),
            {"reject": 1},
            id="node-port-no-endpoints-from-node-over-lo",
        ),
        pytest.param([svc("web", **EXTERNAL)], from_outside(LB_IP), {"reject": 1}, id="lb-ip-no-endpoints"),
        # externalTrafficPolicy Local
        pytest.param(
            [svc("web", local(A), remote(), external_local=True, **EXTERNAL)],
            from_outside(NODE_IP, NODE_PORT),
            {f"{A}:8080": 1},
            id="etp-local-outside-to-local-endpoints-source-kept",
        ),
        pytest.param(
            [svc("web", local(A), local(B), remote(), external_local=True, **EXTERNAL)],
            from_outside(LB_IP),
            {f"{A}:8080": HALF, f"{B}:8080": HALF},
            id="etp-local-lb-ip",
        ),
        pytest.param(
            [svc("web", local(A), remote(), external_local=True, **EXTERNAL)],
            from_pod(NODE_IP, NODE_PORT),
            {f"{A}:8080": HALF, f"{REMOTE}:8080": HALF},
            id="etp-local-pods-reach-every-endpoint",
        ),
        pytest.param(
            [svc("web", local(A), remote(), external_local=True, **EXTERNAL)],
            from_node(EXTERNAL_IP),
            {f"{A}:8080 masq": HALF, f"{REMOTE}:8080 masq": HALF},
            id="etp-local-node-reaches-every-endpoint-masqueraded",
        ),
        pytest.param(
            [svc("web", local(A), remote(), external_local=True, **EXTERNAL)],
            from_pod(CIP),
            {f"{A}:8080": HALF, f"{REMOTE}:8080": HALF},
            id="etp-local-cluster-ip-unaffected",
        ),
        pytest.param(
            [svc("web", remote(), external_local=True, **EXTERNAL)],
            from_outside(NODE_IP, NODE_PORT),
            {"drop": 1},
            id="etp-local-none-here-node-port-dropped",
        ),
        pytest.param(
            [svc("web", remote(), external_local=True, **EXTERNAL)],
            from_outside(LB_IP),
            {"drop": 1},
            id="etp-local-none-here-lb-ip-dropped",
        ),
        # internalTrafficPolicy Local
        pytest.param(
            [svc("web", local(A), remote(), internal_local=True)], from_pod(CIP), {f"{A}:8080": 1}, id="itp-local"
        ),
        pytest.param(
            [svc("web", remote(), internal_local=True)], from_pod(CIP), {"drop": 1}, id="itp-local-none-here-dropped"
        ),
        pytest.param(
            [svc("web", remote(), internal_local=True, node_port=NODE_PORT)],
            from_outside(NODE_IP, NODE_PORT),
            {f"{REMOTE}:8080 masq": 1},
            id="itp-local-leaves-node-port-alone",
        ),
        # loadBalancerSourceRanges
        pytest.param(
            [svc("web", local(A), source_ranges=("203.0.113.0/24",), **EXTERNAL)],
            from_outside(LB_IP),
            {f"{A}:8080 masq": 1},
            id="source-range-allowed",
        ),
        pytest.param(
            [svc("web", local(A), source_ranges=("203.0.113.0/24",), **EXTERNAL)],
            from_outside(LB_IP, src="198.51.100.1"),
            {"drop": 1},
            id="source-range-other-dropped",
        ),
        pytest.param(
            [svc("web", local(A), source_ranges=("203.0.113.0/24",), **EXTERNAL)],
            from_pod(LB_IP),
            {"drop": 1},
            id="source-range-pods-too",
        ),
        pytest.param(
            [svc("web", local(A), source_ranges=("203.0.113.0/24",), **EXTERNAL)],
            from_outside(NODE_IP, NODE_PORT, src="198.51.100.1"),
            {f"{A}:8080 masq": 1},
            id="source-range-not-on-node-ports",
        ),
        pytest.param(
            [svc("web", local(A), source_ranges=("203.0.113.0/24",), **EXTERNAL)],
            from_outside(EXTERNAL_IP, src="198.51.100.1"),
            {f"{A}:8080 masq": 1},
            id="source-range-not-on-external-ips",
        ),
    ],
)
def test_where_connections_go(ports: list[ServicePort], packet: Packet, expected: dict[str, Fraction]) -> None:
    outcomes = trace(plan(CONFIG, ports).table, packet, CONFIG)
    assert spread(outcomes) == expected, [o.chains for o in outcomes]


def test_session_affinity_sticks_to_the_recorded_endpoint() -> None:
    ports = [svc("web", local(A), local(B), remote(), affinity_timeout=10800)]
    first = trace(plan(CONFIG, ports).table, from_pod(CIP), CONFIG)
    assert spread(first) == {f"{A}:8080": THIRD, f"{B}:8080": THIRD, f"{REMOTE}:8080": THIRD}
    for outcome in first:
        ((affinity_set, client),) = outcome.updated  # the endpoint chain records the client
        assert client == CLIENT_POD and affinity_set.startswith("affinity-")
        assert outcome.dnat is not None
        sticky = go(ports, from_pod(CIP), **{affinity_set: [CLIENT_POD]})
        assert sticky == {f"{outcome.dnat[0]}:8080": 1}
        # another client is not held by it
        assert go(ports, from_pod(CIP, pod=B), **{affinity_set: [CLIENT_POD]}) == go(ports, from_pod(CIP, pod=B))


def test_session_affinity_with_etp_local_keeps_outside_clients_here() -> None:
    ports = [svc("web", local(A), remote(), affinity_timeout=60, external_local=True, **EXTERNAL)]
    table = plan(CONFIG, ports).table
    (to_remote,) = [o for o in trace(table, from_outside(CIP), CONFIG) if o.dnat == (REMOTE, 8080)]
    remote_set = to_remote.updated[0][0]
    # an outside client recorded for the remote endpoint (through the ClusterIP) still only reaches this node's
    # through the LB IP, and sticks to the remote one through the ClusterIP
    assert go(ports, from_outside(LB_IP), **{remote_set: [OUTSIDE]}) == {f"{A}:8080": 1}
    assert go(ports, from_outside(CIP), **{remote_set: [OUTSIDE]}) == {f"{REMOTE}:8080 masq": 1}


def test_probabilities_are_exact_for_many_endpoints() -> None:
    endpoints = [remote(f"10.244.2.{i}") for i in range(1, 8)]
    assert go([svc("web", *endpoints)], from_pod(CIP)) == {f"{e.ip}:8080": Fraction(1, 7) for e in endpoints}


# ---------------------------------------------------------------------------------------------------------------
# Corners where upstream kube-proxy's behaviour is easy to miss


@pytest.mark.parametrize(
    ("packet", "expected"),
    [
        pytest.param(from_pod(NODE_IP, NODE_PORT), {f"{REMOTE}:8080": 1}, id="pod"),
        pytest.param(from_node(LB_IP), {f"{REMOTE}:8080 masq": 1}, id="node"),
    ],
)
def test_etp_local_without_local_endpoints_still_serves_pods_and_the_node(
    packet: Packet, expected: dict[str, Fraction]
) -> None:
    # upstream keeps the external chain while the Service has endpoints anywhere: pods and the node short-circuit
    # to the cluster-wide endpoints; only traffic from outside falls through to the "drop"
    assert go([svc("web", remote(), external_local=True, **EXTERNAL)], packet) == expected


def test_source_ranges_holding_the_node_ip_let_the_node_reach_its_vip() -> None:
    # a VIP-like load balancer: its IP is local to the node, so the node's request goes out from the VIP itself;
    # upstream adds the LB IPs to the allowed sources when a range holds the node IP
    ports = [svc("web", local(A), source_ranges=(f"{NODE_IP}/32",), **EXTERNAL)]
    assert "drop" not in go(ports, from_node(LB_IP, src=LB_IP))


# ---------------------------------------------------------------------------------------------------------------
# What incremental syncs really send leaves a table that behaves as a fresh plan


class _Scripts:
    def __init__(self) -> None:
        self.scripts: list[str] = []

    def apply(self, script: str) -> None:
        self.scripts.append(script)


STEPS = [
    [svc("web", local(A))],
    [svc("web", local(A), remote()), svc("api", local(B), cip="10.96.0.11", node_port=30081)],
    [svc("web", local(A), remote(), affinity_timeout=60), svc("api", cip="10.96.0.11", node_port=30081)],
    [
        svc("web", local(A), remote(), affinity_timeout=120, external_local=True, **EXTERNAL),
        svc("db", local(B), cip="10.96.0.12", external_ips=(EXTERNAL_IP,), port=5432),
    ],
    [
        svc("web", remote(), external_local=True, source_ranges=("203.0.113.0/24",), **EXTERNAL),
        svc("db", local(B), local(A), cip="10.96.0.12", internal_local=True, port=5432),
    ],
    [svc("web", local(A), local(B), remote())],
    [],
]
DESTINATIONS = [(CIP, 80), (CIP, 81), ("10.96.0.11", 80), ("10.96.0.12", 5432), ("10.96.0.13", 80), (LB_IP, 80)]
DESTINATIONS += [(NODE_IP, NODE_PORT), (NODE_IP, 30081), (EXTERNAL_IP, 80), (EXTERNAL_IP, 5432)]
PROBES = [make(dst, port) for dst, port in DESTINATIONS for make in (from_pod, from_outside, from_node)]


def test_incremental_syncs_behave_like_a_fresh_plan() -> None:
    runner = _Scripts()
    proxier = NftablesProxier(CONFIG, runner)  # type: ignore[arg-type]
    model: Ruleset | None = None
    for step, ports in enumerate(STEPS):
        proxier.sync(ports)
        model = apply(model, "".join(runner.scripts))
        runner.scripts.clear()
        assert model is not None
        fresh = plan(CONFIG, ports).table
        for packet in PROBES:
            assert trace(model, packet, CONFIG) == trace(fresh, packet, CONFIG), (step, packet)
    assert proxier.full_syncs == 1  # every later step was incremental


def test_the_model_refuses_what_the_kernel_refuses() -> None:
    table = apply(None, render_full(plan(CONFIG, [svc("web", local(A), affinity_timeout=60)]).table))
    assert table is not None
    with pytest.raises(TraceError, match="still referenced"):
        apply(table, "delete chain ip kube-proxy mark-for-masquerade\n")
    affinity = next(name for name in table.sets if name.startswith("affinity-"))
    with pytest.raises(TraceError, match="cannot change"):
        apply(table, f"add set ip kube-proxy {affinity} {{ type ipv4_addr ; flags timeout ; timeout 60s ; }}")
    retimed = apply(
        table, f"add set ip kube-proxy {affinity} {{ type ipv4_addr ; flags dynamic,timeout ; timeout 9s ; }}"
    )
    assert retimed is not None and "timeout 9s" in retimed.sets[affinity]
    with pytest.raises(TraceError, match="still uses"):
        apply(table, f"delete set ip kube-proxy {affinity}")
    with pytest.raises(TraceError, match="another value"):
        apply(table, f"add element ip kube-proxy service-ips {{ {CIP} . tcp . 80 : drop }}")
    with pytest.raises(TraceError, match="ENOENT"):
        apply(table, "delete element ip kube-proxy cluster-ips { 10.96.0.99 }")
    with pytest.raises(TraceError, match="missing chain"):
        apply(table, "add element ip kube-proxy service-ips { 10.96.0.99 . tcp . 80 : goto nowhere }")
    with pytest.raises(TraceError, match="no table"):
        apply(None, "add chain ip kube-proxy services")


# ---------------------------------------------------------------------------------------------------------------
# The tracer refuses what it does not model


def _with_rule(chain: str, rule: str) -> Ruleset:
    table = plan(CONFIG, [svc("web", local(A))]).table
    held = table.chains[chain]
    table.chains[chain] = dataclasses.replace(held, rules=(*held.rules, rule))
    return table


@pytest.mark.parametrize(
    ("chain", "rule", "message"),
    [
        pytest.param("services", "ip saddr 10.0.0.1 counter", "at 'counter'", id="unknown-statement"),
        pytest.param("services", "ct state established accept", "unknown expression", id="other-ct-state"),
        pytest.param("services", "tcp dport 80 accept", "unknown expression", id="unknown-selector"),
        pytest.param("services", "jump nowhere", "no chain nowhere", id="missing-chain"),
        pytest.param("services", "ip daddr @nothing drop", "no set @nothing", id="missing-set"),
        pytest.param("services", "ip daddr . th dport vmap @service-ips", "used as", id="wrong-key-type"),
        pytest.param("services", "drop accept", "nothing may follow", id="two-verdicts"),
        pytest.param("services", "ip daddr 10.96.0.300 drop", "is no ipv4_addr", id="bad-address"),
    ],
)
def test_the_tracer_refuses_unknown_rules(chain: str, rule: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        trace(_with_rule(chain, rule), from_pod(CIP), CONFIG)


def test_the_tracer_refuses_unknown_elements_and_chains() -> None:
    table = plan(CONFIG, [svc("web", local(A))]).table
    table.elements[("service-ips", "10.96.0.99 . tcp . 80")] = " : goto nowhere"
    with pytest.raises(TraceError, match="no chain nowhere"):
        trace(table, from_pod(CIP), CONFIG)
    table = plan(CONFIG, []).table
    table.chains["extra"] = dataclasses.replace(table.chains["nat-output"], spec="type route hook output priority 0 ;")
    with pytest.raises(TraceError, match="cannot trace the spec"):
        trace(table, from_pod(CIP), CONFIG)
