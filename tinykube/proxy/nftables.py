"""The nftables mode of the node proxy: upstream kube-proxy's table `ip kube-proxy`, with one change of layout.

Upstream ends each service chain with `numgen random mod N vmap { 0 : goto endpoint-…, … }` and DNATs in one chain
per endpoint. Measured here (bench/README.md): each such rule carries an anonymous set, and 4,000 of them took
9.7 s to load (superlinear in the kernel); DNAT through a map from 10,000 service chains was as slow (each verdict
element revalidates every rule using the map); and with a chain per Service, every later transaction pays for nft
reading the chain list back (about 1 MB at 10,000 Services). So tinykube has no chain per Service in the common
case. A destination (`ip . proto . port`) leads through `service-ips` to a *pick chain* shared by all Services
with the same protocol, port and number of endpoints, `pick-tcp-80-1-N`: `ct mark set numgen random mod N offset
B+1`, where the mark B+i carries the protocol and port in its high bits and the endpoint's index in its low 14.
Back in the nat base chain one rule DNATs through a single map, `endpoint-addresses`: (address . mark) ->
endpoint, and one more, for NodePorts, through `nodeport-endpoint-addresses`: (port . mark) -> endpoint. (A
two-part key parses a third faster than address . protocol . port . index: 100,000 of them are most of a full
sync.) Chains of
their own remain only where a Service needs them: externalTrafficPolicy Local (`external-…`), session affinity
(upstream's service and endpoint chains, which set the index) and loadBalancerSourceRanges (`firewall-…`).
ClusterIP traffic from outside the pod network is masqueraded by one rule over `@cluster-ips`, and hairpin
traffic (a pod reaching itself through its Service, routed back out the interface it came in on) by one `fib`
rule. The rest (the maps keyed by address . protocol . port, the no-endpoint and firewall maps, the masquerade
mark, the reject and drop checks) is upstream's.

Three layers:

- `plan_port(config, port) -> Ruleset` is pure: one service port's chains, sets and map elements. `plan` adds the
  fixed skeleton and every port.
- `render_full` recreates the table in one transaction; `render_diff` turns one ruleset into another.
- `NftablesProxier` keeps each port's last accepted fragment and, on a sync, plans and diffs only the ports whose
  `ServicePort` changed (the agent hands over the very same objects for unchanged Services, so the check is cheap),
  then sends the transaction through `NftRunner`: a long-lived libnftables session in the node's namespace
  (`nft_session.py`), or the `nft` command where libnftables is missing.

Only IPv4 (`ip` family), like `model.py`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tinykube.gcpause import gc_paused
from tinykube.proxy.model import Endpoint, NodeConfig, Policy, PortTable, ServicePort
from tinykube.proxy.model import policy as proxy_policy
from tinykube.proxy.nft_session import NftError, NftSession, libnftables_path
from tinykube.proxy.syncing import KernelSyncs
from tinykube.sandbox.netns import exec_argv

__all__ = ["NftError", "NftRunner", "NftablesProxier", "NodeConfig", "Ruleset", "plan", "render_diff", "render_full"]

TABLE = "ip kube-proxy"
NFT = shutil.which("nft") or "/usr/sbin/nft"
CHAIN_BASE_MAX = 240  # upstream's limit on the hashed part; nft allows 256 characters with the prefix
PICK_MAP = "endpoint-addresses"
NODE_PORT_PICK_MAP = "nodeport-endpoint-addresses"
PROTOCOL_CODES = {"tcp": 0, "udp": 1, "sctp": 2}
INDEX_BITS = 14  # a picked mark is protocol (2 bits) . service port (16) . index (14)


@dataclass(frozen=True, slots=True)
class Chain:
    rules: tuple[str, ...]
    spec: str = ""  # body of `add chain … { spec }`: hook and priority for base chains, or a comment


Element = tuple[str, str]  # (set or map, element key)
# What follows the key inside the braces (` : goto service-…`, a comment, or nothing for a plain set); for the
# endpoint-address maps, whose key here is a destination, its elements: (element key, ` : address . port`) each.
Value = str | tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Ruleset:
    """The table (or one port's part of it) as data."""

    chains: dict[str, Chain] = field(default_factory=dict)
    sets: dict[str, str] = field(default_factory=dict)  # name -> "set { … }" / "map { … }"
    elements: dict[Element, Value] = field(default_factory=dict)

    def update(self, other: Ruleset) -> None:
        self.chains.update(other.chains)
        self.sets.update(other.sets)
        self.elements.update(other.elements)


# ---------------------------------------------------------------------------------------------------------------
# Names


@functools.lru_cache(maxsize=1 << 17)
def hash_name(name: str) -> str:
    """Upstream's hashAndTruncate: base32(sha256(name))[:8] + "-" + name, cut to 240 characters. Eight base32
    characters are exactly the digest's first 5 bytes: encoding only those is the same and far cheaper, and names
    repeat from sync to sync."""
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()[:5]).decode()
    full = f"{digest}-{name}"
    return full if len(full) <= CHAIN_BASE_MAX else full[: CHAIN_BASE_MAX - 3] + "..."


def service_base(port: ServicePort) -> str:
    return hash_name(port.key)


def endpoint_base(port: ServicePort, endpoint: Endpoint) -> str:
    return hash_name(f"{port.key}__{endpoint.ip}/{endpoint.port}")


def port_comment(port: ServicePort) -> str:
    """Upstream's ServicePortName.String(): `ns/svc:port`, or `ns/svc` for an unnamed port."""
    suffix = f":{port.port_name}" if port.port_name else ""
    return f"{port.namespace}/{port.name}{suffix}"


# ---------------------------------------------------------------------------------------------------------------
# The fixed skeleton

L4 = "meta l4proto { tcp, udp, sctp }"
# NodePorts first: their destination address is a node's, which an externalIP may share.
DNAT_NODE_PORT = f"ip daddr @nodeport-ips {L4} dnat ip to th dport . ct mark map @{NODE_PORT_PICK_MAP}"
DNAT_PICKED = f"{L4} dnat ip to ip daddr . ct mark map @{PICK_MAP}"
HAIRPIN = 'ct status dnat fib daddr . iif oif exists meta mark set meta mark or 0x4000 comment "hairpin"'

BASE_CHAINS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "filter-prerouting-pre-dnat": ("prerouting", -110, ("ct state new jump firewall-check",)),
    "filter-output-pre-dnat": ("output", -110, ("ct state new jump firewall-check",)),
    "filter-input": (
        "input",
        0,
        ("ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check"),
    ),
    "filter-forward": (
        "forward",
        0,
        (HAIRPIN, "ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"),
    ),
    "filter-output": (
        "output",
        0,
        ("ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"),
    ),
    "nat-prerouting": ("prerouting", -100, ("jump services", DNAT_NODE_PORT, DNAT_PICKED)),
    "nat-output": ("output", -100, ("jump services", DNAT_NODE_PORT, DNAT_PICKED)),
    "nat-postrouting": ("postrouting", 100, ("jump masquerading",)),
}

SETS = {
    "cluster-ips": 'set { type ipv4_addr ; comment "Active ClusterIPs" ; }',
    "nodeport-ips": 'set { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }',
    "service-ips": "map { type ipv4_addr . inet_proto . inet_service : verdict ; "
    'comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }',
    "service-nodeports": 'map { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }',
    "no-endpoint-services": "map { type ipv4_addr . inet_proto . inet_service : verdict ; "
    'comment "vmap to drop or reject packets to services with no endpoints" ; }',
    "no-endpoint-nodeports": "map { type inet_proto . inet_service : verdict ; "
    'comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }',
    "firewall-ips": "map { type ipv4_addr . inet_proto . inet_service : verdict ; "
    'comment "destinations that are subject to LoadBalancerSourceRanges" ; }',
    PICK_MAP: "map { type ipv4_addr . mark : ipv4_addr . inet_service ; "
    'comment "the endpoint a service chain picked (ct mark) for this destination address" ; }',
    NODE_PORT_PICK_MAP: "map { type inet_service . mark : ipv4_addr . inet_service ; "
    'comment "the endpoint a service chain picked (ct mark) for this NodePort" ; }',
}


def _skeleton(config: NodeConfig) -> Ruleset:
    rs = Ruleset(sets=dict(SETS))
    for name, (hook, priority, rules) in BASE_CHAINS.items():
        kind = "filter" if name.startswith("filter") else "nat"
        rs.chains[name] = Chain(rules, f"type {kind} hook {hook} priority {priority} ;")
    cluster_ips_check = ['ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"']
    if config.service_cidrs:
        cidrs = ", ".join(config.service_cidrs)
        cluster_ips_check.append(f'ip daddr {{ {cidrs} }} drop comment "Drop traffic to unallocated ClusterIPs"')
    # ClusterIP traffic from outside the pod network is masqueraded (upstream does it in each service chain).
    masquerade_outside = (
        [f"ip daddr @cluster-ips ip saddr != {config.cluster_cidr} jump mark-for-masquerade"]
        if config.cluster_cidr
        else []
    )
    rs.chains.update(
        {
            "services": Chain(
                (
                    *masquerade_outside,
                    "ip daddr . meta l4proto . th dport vmap @service-ips",
                    "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
                )
            ),
            "service-endpoints-check": Chain(("ip daddr . meta l4proto . th dport vmap @no-endpoint-services",)),
            "nodeport-endpoints-check": Chain(
                ("ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports",)
            ),
            "firewall-check": Chain(("ip daddr . meta l4proto . th dport vmap @firewall-ips",)),
            "cluster-ips-check": Chain(tuple(cluster_ips_check)),
            "reject-chain": Chain(("reject",), 'comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ;'),
            "mark-for-masquerade": Chain(("mark set mark or 0x4000",)),
            "masquerading": Chain(
                ("mark and 0x4000 == 0 return", "mark set mark xor 0x4000", "masquerade fully-random")
            ),
        }
    )
    for ip in config.node_ips:
        rs.elements[("nodeport-ips", ip)] = ""
    return rs


# ---------------------------------------------------------------------------------------------------------------
# One service port


def mark_base(port: ServicePort) -> int:
    """The marks of a service port's endpoints are this plus 1, 2, …: protocol and port in the high bits keep two
    ports of one address (or of two Services sharing an external IP) apart, with no allocation."""
    return (PROTOCOL_CODES[port.protocol] << 30) | (port.port << INDEX_BITS)


def pick_chain(port: ServicePort, first: int, count: int) -> str:
    """The shared chain picking uniformly among the marks of indices first … first+count-1 of a protocol and port."""
    return f"pick-{port.protocol}-{port.port}-{first}-{first + count - 1}"


def plan_port(config: NodeConfig, port: ServicePort) -> Ruleset:
    """One service port's part of the table (pure). Its endpoints are numbered 1 … Nc (the cluster group), then
    Nc+1 … Nc+Nl (the local group); every destination of the port maps each index's mark to its endpoint."""
    rs = Ruleset()
    policy = proxy_policy(port, config.node_name)
    base, proto = service_base(port), port.protocol
    # the index bits cap a port at 16,383 endpoints in all (a Service that large is refused by nothing else)
    room = (1 << INDEX_BITS) - 1
    cluster = policy.cluster[:room]
    local = policy.local[: room - len(cluster)]
    endpoints = (*cluster, *local)
    cluster_to = _group(rs, port, cluster, 1, f"service-{base}")
    local_to = _group(rs, port, local, len(cluster) + 1, f"local-{base}")
    missing = f' comment "{port_comment(port)}" : ' + ("drop" if policy.any_endpoints else "goto reject-chain")

    marks = [str(mark_base(port) + i) for i in range(1, len(endpoints) + 1)]
    targets = [f" : {endpoint.ip} . {endpoint.port}" for endpoint in endpoints]

    def number(pick_map: str, destination: str) -> None:
        """Each mark's endpoint at one destination (an address, or a NodePort)."""
        elements = tuple((f"{destination} . {mark}", target) for mark, target in zip(marks, targets, strict=True))
        rs.elements[(pick_map, f"{destination} . {proto} . {port.port}")] = elements

    def route(target: str, missing_target: str, key: str, to: str | None, usable: bool) -> bool:
        """One destination (`key` in the `target` map) to its chain; and, as upstream, to the no-endpoint map when
        nothing `usable` is behind it — the filter hooks see the destination after DNAT, so what the chain
        short-circuited passes and the rest is dropped. Whether the destination needs its marks numbered."""
        if to:
            rs.elements[(target, key)] = f" : goto {to}"
        if not usable:
            rs.elements[(missing_target, key)] = missing
        return to is not None

    internal_to = local_to if policy.internal_local else cluster_to
    for ip in port.cluster_ips:
        rs.elements[("cluster-ips", ip)] = ""
        if route(
            "service-ips", "no-endpoint-services", f"{ip} . {proto} . {port.port}", internal_to, bool(internal_to)
        ):
            number(PICK_MAP, ip)
    if policy.externally_accessible:
        external_to = _external(rs, config, port, policy, cluster_to, local_to)
        usable = bool(policy.external)
        for ip in (*port.external_ips, *port.load_balancer_ips):
            if route("service-ips", "no-endpoint-services", f"{ip} . {proto} . {port.port}", external_to, usable):
                number(PICK_MAP, ip)
        if port.node_port:
            key = f"{proto} . {port.node_port}"
            if route("service-nodeports", "no-endpoint-nodeports", key, external_to, usable):
                number(NODE_PORT_PICK_MAP, str(port.node_port))
        if port.source_ranges and port.load_balancer_ips:
            _add_firewall(rs, config, port, base)
    return rs


def _group(rs: Ruleset, port: ServicePort, group: tuple[Endpoint, ...], first: int, own_chain: str) -> str | None:
    """The chain that picks an endpoint of `group` (indices first …): a shared pick chain, or with session affinity
    the port's own chain (upstream's shape: sticky clients first; endpoint chains record the client)."""
    if not group:
        return None
    offset = mark_base(port) + first
    if not port.affinity_timeout:
        chain = pick_chain(port, first, len(group))
        rs.chains[chain] = Chain((f"ct mark set numgen random mod {len(group)} offset {offset}",))
        return chain
    bases = [endpoint_base(port, e) for e in group]
    for i, b in enumerate(bases):
        affinity = f"affinity-{b}"
        rs.sets[affinity] = f"set {{ type ipv4_addr ; flags dynamic,timeout ; timeout {port.affinity_timeout}s ; }}"
        rs.chains[f"endpoint-{b}"] = Chain((f"update @{affinity} {{ ip saddr }}", f"ct mark set {offset + i}"))
    sticky = [f"ip saddr @affinity-{b} goto endpoint-{b}" for b in bases]
    vmap = " , ".join(f"{i} : goto endpoint-{b}" for i, b in enumerate(bases))
    rs.chains[own_chain] = Chain((*sticky, f"numgen random mod {len(bases)} vmap {{ {vmap} }}"))
    return own_chain


def _external(
    rs: Ruleset, config: NodeConfig, port: ServicePort, policy: Policy, cluster_to: str | None, local_to: str | None
) -> str | None:
    """The chain for traffic arriving from outside (NodePort, externalIPs, LB IPs)."""
    if not policy.external_local:
        if cluster_to is None:
            return None
        chain = f"external-{cluster_to}" if cluster_to.startswith("pick-") else f"external-{service_base(port)}"
        rs.chains[chain] = Chain(("jump mark-for-masquerade", f"goto {cluster_to}"))
        return chain
    if cluster_to is None:
        return None
    # ETP Local: pods and the node itself still reach every endpoint (the node's traffic masqueraded); only
    # traffic from outside is kept on this node's endpoints, with its source IP preserved (and, without a local
    # endpoint, left undone for the filter hooks to drop).
    pods = (
        [f'ip saddr {config.cluster_cidr} goto {cluster_to} comment "short-circuit pod traffic"']
        if config.cluster_cidr
        else []
    )
    chain = f"external-{service_base(port)}"
    rs.chains[chain] = Chain(
        (
            *pods,
            'fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"',
            f'fib saddr type local goto {cluster_to} comment "short-circuit local traffic"',
            *([f"goto {local_to}"] if local_to else []),
        )
    )
    return chain


def _add_firewall(rs: Ruleset, config: NodeConfig, port: ServicePort, base: str) -> None:
    """loadBalancerSourceRanges: traffic to the LB IPs from anywhere else is dropped before DNAT. As upstream, when
    a range holds a node IP the LB IPs themselves are allowed too (the node reaching a VIP it holds)."""
    chain = f"firewall-{base}"
    for ip in port.load_balancer_ips:
        rs.elements[("firewall-ips", f"{ip} . {port.protocol} . {port.port}")] = f" : goto {chain}"
    networks = [ipaddress.ip_network(r) for r in port.source_ranges]
    from_node = any(ipaddress.ip_address(ip) in net for ip in config.node_ips for net in networks)
    ranges = ", ".join((*port.source_ranges, *(port.load_balancer_ips if from_node else ())))
    rs.chains[chain] = Chain((f'ip saddr != {{ {ranges} }} drop comment "{port_comment(port)}"',))


def is_shared(chain: str) -> bool:
    """Pick chains (and their external twins) serve every port with the same group shape."""
    return chain.startswith(("pick-", "external-pick-"))


class Elements:
    """The table's elements and which port each came from. Ports rarely want the same element (a cluster IP is
    wanted by every port of its Service; two Services may claim one external IP and port by mistake); then the
    lowest port key's value wins, and the others' are kept for when it leaves."""

    def __init__(self, skeleton: dict[Element, Value]) -> None:
        self.values = dict(skeleton)  # what the table holds
        self.owner = dict.fromkeys(skeleton, "")  # "" is the skeleton
        self.contested: dict[Element, dict[str, Value]] = {}  # every owner's value, for elements with several

    def add(self, owner: str, elements: dict[Element, Value]) -> None:
        values, owners = self.values, self.owner
        for element, value in elements.items():
            if element not in owners:
                owners[element], values[element] = owner, value
                continue
            claims = self.contested.setdefault(element, {owners[element]: values[element]})
            claims[owner] = value
            owners[element] = first = min(claims)
            values[element] = claims[first]

    def remove(self, owner: str, elements: Iterable[Element]) -> None:
        for element in elements:
            claims = self.contested.get(element)
            if claims is None:
                del self.owner[element], self.values[element]
                continue
            del claims[owner]
            self.owner[element] = first = min(claims)
            self.values[element] = claims[first]
            if len(claims) == 1:
                del self.contested[element]


@dataclass(slots=True)
class Plan:
    """The whole table, and how it came about: each port's fragment and where each element came from."""

    table: Ruleset
    fragments: dict[str, tuple[ServicePort, Ruleset]]
    elements: Elements


def plan(config: NodeConfig, ports: Iterable[ServicePort]) -> Plan:
    """The whole desired table for these service ports (pure)."""
    table, fragments = _skeleton(config), {}
    elements = Elements(table.elements)
    chains, sets = table.chains, table.sets
    for port in ports:
        fragment = plan_port(config, port)
        fragments[port.key] = (port, fragment)
        elements.add(port.key, fragment.elements)
        chains.update(fragment.chains)
        sets.update(fragment.sets)
    table.elements = elements.values
    return Plan(table, fragments, elements)


# ---------------------------------------------------------------------------------------------------------------
# Rendering

ELEMENTS_PER_LINE = 1000  # nft parses one command per line much faster than one per element


def _add_chain(name: str, chain: Chain) -> str:
    return f"add chain {TABLE} {name}" + (f" {{ {chain.spec} }}" if chain.spec else "")


def _rules(name: str, chain: Chain) -> list[str]:
    return [f"add rule {TABLE} {name} {rule}" for rule in chain.rules]


def _add_set(name: str, decl: str) -> str:
    kind, body = decl.split(" ", 1)
    return f"add {kind} {TABLE} {name} {body}"


def _element_lines(verb: str, items: Iterable[tuple[Element, Value]]) -> list[str]:
    """`add element` / `delete element` commands, the elements of each set batched."""
    by_set: dict[str, list[str]] = defaultdict(list)
    adding = verb == "add"
    for (target, key), value in items:
        texts = by_set[target]
        if isinstance(value, tuple):  # a destination's numbered endpoints
            texts += [element + target if adding else element for element, target in value]
        else:
            texts.append(key + value if adding else key)
    lines = []
    for target, texts in by_set.items():
        for i in range(0, len(texts), ELEMENTS_PER_LINE):
            lines.append(f"{verb} element {TABLE} {target} {{ " + ", ".join(texts[i : i + ELEMENTS_PER_LINE]) + " }")
    return lines


def render_full(rs: Ruleset) -> str:
    """Recreate the table in one transaction: `add` makes the `delete` safe when there is no table yet, and deleting
    it drops whatever a previous (or foreign) writer left behind, stale chains included."""
    lines = [f"add table {TABLE}", f"delete table {TABLE}", f'add table {TABLE} {{ comment "rules for kube-proxy" ; }}']
    lines += [_add_chain(name, chain) for name, chain in rs.chains.items()]
    lines += [_add_set(name, decl) for name, decl in rs.sets.items()]
    for name, chain in rs.chains.items():
        lines += _rules(name, chain)
    lines += _element_lines("add", rs.elements.items())
    return "\n".join(lines) + "\n"


SET_REFERENCE = re.compile(r"@([^\s,{}]+)")


def render_diff(old: Ruleset, new: Ruleset) -> str:
    """One transaction turning `old` into `new`; "" when nothing changed.

    Order matters within the transaction: references (map elements, rules) to a chain or set go before the object
    does. Upstream waits ≥1 s before deleting a chain that a removed map element referenced (kernels < 6.2 kept the
    reference); newer kernels accept the delete in the same transaction, so stale chains go at the end of this one.
    """
    gone_sets = [n for n, decl in old.sets.items() if new.sets.get(n) != decl]  # removed, or timeout changed
    rewritten = {n for n, chain in new.chains.items() if old.chains.get(n) != chain}
    rewritten |= _chains_using(new, set(gone_sets) & set(new.sets))  # a recreated set needs its rules re-added
    stale = [n for n in old.chains if n not in new.chains]

    lines = _element_lines("delete", ((k, v) for k, v in old.elements.items() if new.elements.get(k) != v))
    lines += [f"flush chain {TABLE} {n}" for n in (*sorted(rewritten & old.chains.keys()), *stale)]
    lines += [f"delete set {TABLE} {n}" for n in gone_sets]
    lines += [_add_set(n, d) for n, d in new.sets.items() if old.sets.get(n) != d or n in gone_sets]
    ordered = [n for n in new.chains if n in rewritten]
    lines += [_add_chain(n, new.chains[n]) for n in ordered if n not in old.chains]
    for n in ordered:
        lines += _rules(n, new.chains[n])
    lines += _element_lines("add", ((k, v) for k, v in new.elements.items() if old.elements.get(k) != v))
    lines += [f"delete chain {TABLE} {n}" for n in stale]
    return "\n".join(lines) + "\n" if lines else ""


def _chains_using(rs: Ruleset, sets: set[str]) -> set[str]:
    if not sets:
        return set()
    return {n for n, c in rs.chains.items() if any(m in sets for r in c.rules for m in SET_REFERENCE.findall(r))}


def full_script(config: NodeConfig, ports: Iterable[ServicePort]) -> str:
    return render_full(plan(config, ports).table)


def incremental_script(config: NodeConfig, old: Iterable[ServicePort], new: Iterable[ServicePort]) -> str:
    """What a proxier that programmed `old` sends to program `new`."""
    proxier = NftablesProxier(config, _Discard())
    proxier.sync(old)
    runner = proxier.runner = _Discard()
    proxier.sync(new)
    return runner.script


# ---------------------------------------------------------------------------------------------------------------
# Running


class _Discard:
    """A runner that keeps the last script instead of running it (for `incremental_script`)."""

    script = ""

    def apply(self, script: str) -> None:
        self.script = script

    def close(self) -> None:
        pass


class NftRunner:
    """The kube-proxy table in a network namespace: through a long-lived libnftables session when the library is
    installed, else one `nft -f -` per transaction. `None`: the caller's own namespace (the `nft` command; tinykube
    never uses it for real nodes)."""

    def __init__(self, netns: str | None, *, session: bool = True) -> None:
        self.netns = netns
        self._session = NftSession(netns) if netns and session and libnftables_path() else None

    def run(self, script: str) -> str:
        if self._session is not None:
            return self._session.run(script)
        return self._nft(["-f", "-"], script)

    def _nft(self, args: Sequence[str], stdin: str | None = None) -> str:
        argv = [NFT, *args]
        if self.netns:
            argv = exec_argv(self.netns, argv)
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NftError(f"nft {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def apply(self, script: str) -> None:
        self.run(script)

    def check(self, script: str) -> None:
        """Parse and validate against the kernel without committing (`nft -c`)."""
        self._nft(["-c", "-f", "-"], script)

    def dump(self) -> str:
        return self.run(f"list table {TABLE}\n")

    def cleanup(self) -> None:
        """Delete the table (what `--cleanup` does); no table is fine."""
        try:
            self.run(f"delete table {TABLE}\n")
        except NftError as err:
            if "No such file or directory" not in str(err):
                raise

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


class NftablesProxier(KernelSyncs):
    """Keeps the kernel's table equal to the desired service ports, planning and sending only what changed; a full
    sync recreates the table. `sync` raises NftError when nft refuses."""

    mode = "nftables"  # what kube-proxy's /proxyMode answers

    def __init__(self, config: NodeConfig, runner: NftRunner | _Discard) -> None:
        super().__init__()
        self.config = config
        self.runner = runner
        self.shared: set[str] = set()  # pick chains in the kernel: kept until the next full sync, whoever uses them
        self.fragments: dict[str, tuple[ServicePort, Ruleset]] = {}  # port key -> what the kernel has for it
        self.elements = Elements({})

    def close(self) -> None:
        """Stop the libnftables session (the table stays)."""
        self.runner.close()

    def _full(self, ports: Iterable[ServicePort]) -> None:
        with gc_paused():  # ~40 objects per port and no cycles: collections would only rescan them (~30 % of it)
            desired = plan(self.config, ports)
            script = render_full(desired.table)
        self.runner.apply(script)
        self.fragments, self.elements = desired.fragments, desired.elements
        self.shared = {chain for chain in desired.table.chains if is_shared(chain)}

    def _changed(self, ports: Iterable[ServicePort]) -> dict[str, ServicePort | None]:
        """Port key -> the port to program (None: to remove), for the ports that differ from the kernel's. From
        a `PortTable`, only the changed Services' ports are looked at; from anything else, every port."""
        if isinstance(ports, PortTable):
            wanted = ports.changes()
            gone = [key for key, port in wanted.items() if port is None]
        else:
            wanted = {port.key: port for port in ports}
            gone = list(self.fragments.keys() - wanted.keys())
        changed: dict[str, ServicePort | None] = {key: None for key in gone if key in self.fragments}
        for key, port in wanted.items():
            held = self.fragments.get(key)
            if port is not None and (held is None or (held[0] is not port and held[0] != port)):
                changed[key] = port
        return dict(sorted(changed.items()))  # the same transaction text whichever way the ports came

    def _incremental(self, ports: Iterable[ServicePort]) -> None:
        changed = self._changed(ports)
        if not changed:
            return
        old, new = Ruleset(), Ruleset()
        before: dict[str, Ruleset] = {}
        after: dict[str, Ruleset] = {}
        for key, wanted in changed.items():
            held = self.fragments.pop(key, None)
            if held is not None:
                before[key] = held[1]
                old.chains.update((n, c) for n, c in held[1].chains.items() if not is_shared(n))
                old.sets.update(held[1].sets)
            if wanted is None:
                continue
            after[key] = fragment = plan_port(self.config, wanted)
            self.fragments[key] = (wanted, fragment)
            new.chains.update((n, c) for n, c in fragment.chains.items() if not is_shared(n) or n not in self.shared)
            new.sets.update(fragment.sets)
        self.shared.update(n for n in new.chains if is_shared(n))
        touched = sorted({e for fragment in (*before.values(), *after.values()) for e in fragment.elements})
        values = self.elements.values
        old.elements = {e: values[e] for e in touched if e in values}
        for key, fragment in before.items():
            self.elements.remove(key, fragment.elements)
        for key, fragment in after.items():
            self.elements.add(key, fragment.elements)
        new.elements = {e: values[e] for e in touched if e in values}
        script = render_diff(old, new)
        if script:
            self.runner.apply(script)
