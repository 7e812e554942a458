"""The iptables mode of the node proxy, laid out exactly as upstream kube-proxy's iptables proxier lays it out
(`pkg/proxy/iptables/proxier.go`): the layout that blog posts and the seed article dissect, kept for teaching and for
comparison with the nftables mode, whose policy decisions it shares.

    nat     PREROUTING, OUTPUT -> KUBE-SERVICES -> KUBE-SVC-* (Cluster policy) or KUBE-SVL-* (Local policy)
            -> KUBE-SEP-* (one DNAT per endpoint, chosen by `-m statistic --mode random`);
            NodePorts: KUBE-SERVICES -> KUBE-NODEPORTS; every external destination (NodePort, externalIP,
            load-balancer IP) -> KUBE-EXT-* (through KUBE-FW-* with loadBalancerSourceRanges);
            KUBE-MARK-MASQ sets mark 0x4000, POSTROUTING -> KUBE-POSTROUTING masquerades what carries it.
    filter  KUBE-SERVICES / KUBE-EXTERNAL-SERVICES reject packets to services without endpoints (drop when only
            local ones are missing); KUBE-NODEPORTS accepts health-check node ports; KUBE-PROXY-FIREWALL drops
            what a KUBE-FW-* chain did not accept; KUBE-FORWARD lets service traffic through a DROP forward policy.

Three layers, like the nftables mode:

- `plan_port(config, port) -> PortPlan` is pure: one service port's own chains (KUBE-SVC-…, KUBE-SEP-…, …) and its
  rules in the shared chains (KUBE-SERVICES, KUBE-NODEPORTS, KUBE-EXTERNAL-SERVICES, KUBE-PROXY-FIREWALL: each port's
  rules are one run there, in the order of the ports). `plan(config, ports) -> Ruleset` is every KUBE chain of both
  tables. `restore_input` turns a plan into `iptables-restore --noflush` input. Declaring a chain (`:NAME - [0:0]`)
  creates or flushes it, so a sync writes only the chains whose rules changed and deletes (`-X`) those that
  disappeared; the built-in chains are never flushed (other software owns them too), the jumps from them into ours
  are inserted when missing.
- `IptablesRunner` runs iptables-restore / iptables-save inside a network namespace.
- `IptablesProxier` keeps each port's part as the kernel accepted it and, on a sync, plans only the ports whose
  `ServicePort` changed (the agent hands over the very same objects for unchanged Services: `is` first, then `==`).
  It writes their chains that changed, and a shared chain, whole (upstream rewrites KUBE-SERVICES on every sync),
  only when some port's rules in it changed: an endpoint change writes a service chain and an endpoint chain. The
  first sync, the one after a failure and any `full=True` sync read the kernel back with iptables-save and write
  everything, which also repairs drift and removes chains left by an earlier run.

The bulk layout. iptables-nft-restore 1.8.9 (the nf_tables backend) puts the name of every chain a command of a
table block names (its chain, and the chain it jumps to) into a sorted linked list (`cache_chain_list_insert`: the
chains to fetch from the kernel), each by a linear walk, so a block of L lines naming N chains costs up to L * N / 2
`strcmp` calls: ~25 s of a full sync of 2,000 Services x 10 endpoints (86,000 lines, 22,000 chains). Neither
iptables-legacy-restore nor a restore without `--noflush` (its table flush names no chain) keeps the list. The list
is dropped for the rest of the block once a command names no chain, and `-S` (list the whole table; the output is
discarded) is such a command and harmless. So a large block is written as: the chains the inserted jumps lead to,
the jumps (before the listing: after it iptables-nft takes missing built-in chains for present and the insert
fails), `-S`, then each chain declared right before its rules, every chain after the chains it jumps to (`rank`:
then iptables' lookups of a chain just declared are short too). The listing costs about an iptables-save of the
table, so only blocks whose L^2 estimate is the larger use it (`use_bulk`): full syncs, not one changed Service.
iptables-legacy-restore cannot list inside a restore, and needs no such help. What remains superlinear is iptables',
a few seconds at 10,000 Services: its hash tables of chain names have 512 buckets.

Only IPv4, like `model.py`. Unlike upstream there is no "large cluster mode" (comments are always written), no
localhost NodePorts (`route_localnet`) and no nfacct counters; NodePorts answer on `config.node_ips` (upstream's
`--nodeport-addresses` set to the node IPs).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import ipaddress
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tinykube.proxy.model import Endpoint, NodeConfig, Policy, ServicePort
from tinykube.proxy.model import policy as proxy_policy
from tinykube.proxy.nftables import port_comment
from tinykube.proxy.syncing import KernelSyncs
from tinykube.sandbox.netns import exec_argv

IPTABLES_RESTORE = shutil.which("iptables-restore") or "/usr/sbin/iptables-restore"
IPTABLES_SAVE = shutil.which("iptables-save") or "/usr/sbin/iptables-save"

FILTER, NAT = "filter", "nat"
SERVICES = "KUBE-SERVICES"
EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES"
NODEPORTS = "KUBE-NODEPORTS"
FORWARD = "KUBE-FORWARD"
PROXY_FIREWALL = "KUBE-PROXY-FIREWALL"
POSTROUTING = "KUBE-POSTROUTING"
MARK_MASQ = "KUBE-MARK-MASQ"
MASQ_MARK = "0x4000"  # upstream's default --iptables-masquerade-bit 14
# The per-service chains: the ones a sync deletes when their service port is gone (never anyone else's KUBE chains).
SERVICE_CHAIN_PREFIXES = ("KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-")

Chains = dict[str, tuple[str, ...]]  # chain -> its rules in order, each what follows `-A CHAIN`
Ruleset = dict[str, Chains]  # "filter" / "nat" -> the KUBE chains the proxy writes there


class IptablesError(Exception):
    """iptables-restore or iptables-save failed; the message carries iptables' own error text."""


@dataclass(frozen=True, slots=True)
class Jump:
    """A rule in a built-in chain that leads into one of ours (upstream's iptablesJumpChains)."""

    table: str
    chain: str  # the built-in chain
    target: str  # our chain
    comment: str
    match: str = ""

    @property
    def rule(self) -> str:
        return f"{self.match}{' ' if self.match else ''}{_comment(self.comment)} -j {self.target}"


NEW = "-m conntrack --ctstate NEW"
JUMPS = (
    Jump(FILTER, "INPUT", EXTERNAL_SERVICES, "kubernetes externally-visible service portals", NEW),
    Jump(FILTER, "FORWARD", EXTERNAL_SERVICES, "kubernetes externally-visible service portals", NEW),
    Jump(FILTER, "INPUT", NODEPORTS, "kubernetes health check service ports"),
    Jump(FILTER, "FORWARD", SERVICES, "kubernetes service portals", NEW),
    Jump(FILTER, "OUTPUT", SERVICES, "kubernetes service portals", NEW),
    Jump(FILTER, "FORWARD", FORWARD, "kubernetes forwarding rules"),
    Jump(FILTER, "INPUT", PROXY_FIREWALL, "kubernetes load balancer firewall", NEW),
    Jump(FILTER, "OUTPUT", PROXY_FIREWALL, "kubernetes load balancer firewall", NEW),
    Jump(FILTER, "FORWARD", PROXY_FIREWALL, "kubernetes load balancer firewall", NEW),
    Jump(NAT, "OUTPUT", SERVICES, "kubernetes service portals"),
    Jump(NAT, "PREROUTING", SERVICES, "kubernetes service portals"),
    Jump(NAT, "POSTROUTING", POSTROUTING, "kubernetes postrouting rules"),
)


# ---------------------------------------------------------------------------------------------------------------
# Names


@functools.lru_cache(maxsize=1 << 17)
def _hash16(text: str) -> str:
    """base32(sha256(text))[:16]: 16 base32 characters are exactly the digest's first 10 bytes."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()[:10]).decode()


def port_proto_hash(port: ServicePort) -> str:
    """Upstream's portProtoHash of the service port name (`ns/svc:port`) and the protocol: chain names must stay
    within iptables' 28 characters."""
    return _hash16(port_comment(port) + port.protocol)


def service_chain(prefix: str, port: ServicePort) -> str:
    """`KUBE-SVC-…`, `KUBE-SVL-…`, `KUBE-EXT-…` or `KUBE-FW-…` of a service port (prefix SVC, SVL, EXT, FW)."""
    return f"KUBE-{prefix}-{port_proto_hash(port)}"


def endpoint_chain(port: ServicePort, endpoint: Endpoint) -> str:
    """Upstream's servicePortEndpointChainName: the hash also covers the endpoint's `ip:port`."""
    return "KUBE-SEP-" + _hash16(f"{port_comment(port)}{port.protocol}{endpoint.ip}:{endpoint.port}")


def _comment(text: str) -> str:
    """A comment match, quoted as upstream writes it (and iptables-save prints it) when it holds a space."""
    return f'-m comment --comment "{text}"' if " " in text else f"-m comment --comment {text}"


# ---------------------------------------------------------------------------------------------------------------
# One service port


@dataclass(slots=True)
class _Builder:
    """Rules collected per table and chain, in the order chains were first written."""

    tables: dict[str, dict[str, list[str]]] = field(default_factory=lambda: {FILTER: {}, NAT: {}})

    def add(self, table: str, chain: str, *rules: str) -> None:
        self.tables[table].setdefault(chain, []).extend(rules)

    def ruleset(self) -> Ruleset:
        return {table: {name: tuple(rules) for name, rules in chains.items()} for table, chains in self.tables.items()}


def _add_port(b: _Builder, config: NodeConfig, port: ServicePort) -> None:
    policy = proxy_policy(port, config.node_name)
    _capture(b, port, policy)
    svc, svl = service_chain("SVC", port), service_chain("SVL", port)
    internal_chain = svl if port.internal_local else svc
    if bool(policy.internal) and config.cluster_cidr:
        # Off-cluster sources reaching a ClusterIP (routed to the service range through some node) may be sent on
        # to another node: masquerade them so that the answer comes back the same way.
        cluster_ip = _comment(f"{port_comment(port)} cluster IP")
        masq = (f"{cluster_ip} {_dest(port, ip)} ! -s {config.cluster_cidr} -j {MARK_MASQ}" for ip in port.cluster_ips)
        b.add(NAT, internal_chain, *masq)
    if policy.any_endpoints and policy.externally_accessible:
        b.add(NAT, service_chain("EXT", port), *_external_rules(config, port, policy))
    if _uses_firewall(port, policy):
        b.add(NAT, service_chain("FW", port), *_firewall_rules(config, port))
    if policy.cluster:
        b.add(NAT, svc, *_dispatch(port, policy.cluster))
    if policy.local:
        b.add(NAT, svl, *_dispatch(port, policy.local))
    for endpoint in dict.fromkeys((*policy.cluster, *policy.local)):  # ordered: the input must be stable
        b.add(NAT, endpoint_chain(port, endpoint), *_endpoint_rules(port, endpoint))


def _uses_firewall(port: ServicePort, policy: Policy) -> bool:
    return policy.any_endpoints and bool(port.load_balancer_ips) and bool(port.source_ranges)


Refusal = tuple[str, str]  # a filter verdict (REJECT or DROP) and its comment


def _refusal(port: ServicePort, policy: Policy, usable: bool) -> Refusal | None:
    """What the filter table does with traffic that has no endpoints to go to (None: it has some)."""
    if usable:
        return None
    name = port_comment(port)
    return (
        ("DROP", f"{name} has no local endpoints") if policy.any_endpoints else ("REJECT", f"{name} has no endpoints")
    )


def _refuse(refusal: Refusal, match: str) -> str:
    return f"{_comment(refusal[1])} {match} -j {refusal[0]}"


def _dest(port: ServicePort, ip: str) -> str:
    return f"-m {port.protocol} -p {port.protocol} -d {ip} --dport {port.port}"


def _capture(b: _Builder, port: ServicePort, policy: Policy) -> None:
    """The port's entries in KUBE-SERVICES and KUBE-NODEPORTS (nat), or the filter rules refusing its traffic."""
    name = port_comment(port)
    internal_refused = _refusal(port, policy, bool(policy.internal))
    internal_chain = service_chain("SVL" if port.internal_local else "SVC", port)
    for ip in port.cluster_ips:
        if internal_refused:
            b.add(FILTER, SERVICES, _refuse(internal_refused, _dest(port, ip)))
        else:
            b.add(NAT, SERVICES, f"{_comment(f'{name} cluster IP')} {_dest(port, ip)} -j {internal_chain}")
    _capture_external(b, port, policy, _refusal(port, policy, bool(policy.external)))
    if port.health_check_node_port and policy.external_local:
        check = _comment(f"{name} health check node port")
        b.add(FILTER, NODEPORTS, f"{check} -m tcp -p tcp --dport {port.health_check_node_port} -j ACCEPT")


def _capture_external(b: _Builder, port: ServicePort, policy: Policy, refused: Refusal | None) -> None:
    name, ext, fw = port_comment(port), service_chain("EXT", port), service_chain("FW", port)
    firewall = _uses_firewall(port, policy)
    for ip in port.external_ips:
        if policy.any_endpoints:
            b.add(NAT, SERVICES, f"{_comment(f'{name} external IP')} {_dest(port, ip)} -j {ext}")
        if refused:
            b.add(FILTER, EXTERNAL_SERVICES, _refuse(refused, _dest(port, ip)))
    for ip in port.load_balancer_ips:
        if policy.any_endpoints:
            b.add(
                NAT, SERVICES, f"{_comment(f'{name} loadbalancer IP')} {_dest(port, ip)} -j {fw if firewall else ext}"
            )
        if firewall:
            b.add(
                FILTER, PROXY_FIREWALL, f"{_comment(f'{name} traffic not accepted by {fw}')} {_dest(port, ip)} -j DROP"
            )
    if refused:
        b.add(FILTER, EXTERNAL_SERVICES, *(_refuse(refused, _dest(port, ip)) for ip in port.load_balancer_ips))
    if port.node_port:
        match = f"-m {port.protocol} -p {port.protocol} --dport {port.node_port}"
        if policy.any_endpoints:  # NodePorts are not subject to loadBalancerSourceRanges (as upstream)
            b.add(NAT, NODEPORTS, f"{_comment(name)} {match} -j {ext}")
        if refused:
            b.add(FILTER, EXTERNAL_SERVICES, _refuse(refused, f"-m addrtype --dst-type LOCAL {match}"))


def _external_rules(config: NodeConfig, port: ServicePort, policy: Policy) -> list[str]:
    name = port_comment(port)
    svc = service_chain("SVC", port)
    if not policy.external_local:
        rules = [f"{_comment(f'masquerade traffic for {name} external destinations')} -j {MARK_MASQ}"]
    else:
        # ETP Local keeps external clients on this node's endpoints with their source IP. Pods and the node itself
        # still reach every endpoint, as if they had gone out to a load balancer and come back in; the node's
        # traffic is masqueraded (its source would be the external IP itself).
        rules = []
        if config.cluster_cidr:
            pods = _comment(f"pod traffic for {name} external destinations")
            rules.append(f"{pods} -s {config.cluster_cidr} -j {svc}")
        local = "-m addrtype --src-type LOCAL"
        rules.append(f"{_comment(f'masquerade LOCAL traffic for {name} external destinations')} {local} -j {MARK_MASQ}")
        rules.append(f"{_comment(f'route LOCAL traffic for {name} external destinations')} {local} -j {svc}")
    if bool(policy.external):
        rules.append(f"-j {service_chain('SVL' if policy.external_local else 'SVC', port)}")
    return rules


def _firewall_rules(config: NodeConfig, port: ServicePort) -> list[str]:
    """loadBalancerSourceRanges: allowed sources go on to KUBE-EXT-; the rest falls through undNATed and is
    dropped by KUBE-PROXY-FIREWALL in the filter table."""
    name, ext = port_comment(port), service_chain("EXT", port)
    accepted = _comment(f"{name} loadbalancer IP")
    rules = [f"{accepted} -s {cidr} -j {ext}" for cidr in port.source_ranges]
    ranges = [ipaddress.ip_network(cidr, strict=False) for cidr in port.source_ranges]
    if any(ipaddress.ip_address(ip) in net for ip in config.node_ips for net in ranges):
        # A node's request to an LB IP held locally loops back with the LB IP as its source.
        rules += [f"{accepted} -s {ip} -j {ext}" for ip in port.load_balancer_ips]
    rules.append(_comment(f"other traffic to {name} will be dropped by {PROXY_FIREWALL}"))
    return rules


def _dispatch(port: ServicePort, endpoints: tuple[Endpoint, ...]) -> list[str]:
    """Sticky clients first (affinity), then a uniform random pick: the i-th of n rules matches with probability
    1/(n-i), the last one always."""
    name, rules = port_comment(port), []
    if port.affinity_timeout:
        for e in endpoints:
            sep = endpoint_chain(port, e)
            recent = f"-m recent --name {sep} --rcheck --seconds {port.affinity_timeout} --reap"
            rules.append(f"{_comment(f'{name} -> {e.ip}:{e.port}')} {recent} -j {sep}")
    for i, e in enumerate(endpoints):
        left = len(endpoints) - i
        chance = f" -m statistic --mode random --probability {1 / left:.10f}" if left > 1 else ""
        rules.append(f"{_comment(f'{name} -> {e.ip}:{e.port}')}{chance} -j {endpoint_chain(port, e)}")
    return rules


def _endpoint_rules(port: ServicePort, endpoint: Endpoint) -> list[str]:
    comment, proto = _comment(port_comment(port)), port.protocol
    recent = f" -m recent --name {endpoint_chain(port, endpoint)} --set" if port.affinity_timeout else ""
    return [
        f"{comment} -s {endpoint.ip} -j {MARK_MASQ}",  # hairpin: a pod reaching itself through its Service
        f"{comment}{recent} -m {proto} -p {proto} -j DNAT --to-destination {endpoint.ip}:{endpoint.port}",
    ]


# ---------------------------------------------------------------------------------------------------------------
# Each port's part of the plan, and the whole plan

# The chains every plan has, in the order `plan` lists them first.
SKELETON = {
    FILTER: (SERVICES, EXTERNAL_SERVICES, FORWARD, NODEPORTS, PROXY_FIREWALL),
    NAT: (SERVICES, NODEPORTS, POSTROUTING, MARK_MASQ),
}
# The skeleton chains that ports write into, each port its rules as one run, in the order of the ports (nat
# KUBE-NODEPORTS before KUBE-SERVICES, which jumps to it: the order the bulk layout writes them in).
SHARED = {FILTER: (SERVICES, EXTERNAL_SERVICES, NODEPORTS, PROXY_FIREWALL), NAT: (NODEPORTS, SERVICES)}

Shared = dict[tuple[str, str], tuple[str, ...]]  # (table, shared chain) -> rules


@dataclass(frozen=True, slots=True)
class PortPlan:
    """One service port's part of the plan: its own chains (`KUBE-SVC-…`, `KUBE-SEP-…`, …) per table, in the order
    they were first written, and its rules in the shared chains."""

    chains: dict[str, Chains]
    shared: Shared  # only the shared chains it has rules in
    rules: dict[str, int]  # table -> how many rules the port holds there, its own chains' and its shared ones


def plan_port(config: NodeConfig, port: ServicePort) -> PortPlan:
    """One service port's chains and shared rules (pure)."""
    b = _Builder()
    _add_port(b, config, port)
    chains: dict[str, Chains] = {}
    shared: Shared = {}
    counts: dict[str, int] = {}
    for table, built in b.tables.items():
        own: Chains = {}
        for name, rules in built.items():
            if name not in SHARED[table]:
                own[name] = tuple(rules)
            elif rules:
                shared[(table, name)] = tuple(rules)
        chains[table] = own
        counts[table] = sum(map(len, built.values()))
    return PortPlan(chains, shared, counts)


def _fixed_rules(config: NodeConfig) -> Shared:
    """The skeleton's own rules; in nat KUBE-SERVICES they follow the ports' rules."""
    last = _comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain")
    return {
        (FILTER, FORWARD): (
            # upstream's guard against spurious resets (unless tcp_be_liberal)
            "-m conntrack --ctstate INVALID -j DROP",
            f"{_comment('kubernetes forwarding rules')} -m mark --mark {MASQ_MARK}/{MASQ_MARK} -j ACCEPT",
            f"{_comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        ),
        (NAT, SERVICES): tuple(f"{last} -d {ip} -j {NODEPORTS}" for ip in config.node_ips),
        (NAT, POSTROUTING): (
            f"-m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
            f"-j MARK --xor-mark {MASQ_MARK}",  # cleared: a packet traversing the stack again is not masqueraded twice
            f"{_comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully",
        ),
        (NAT, MARK_MASQ): (f"-j MARK --or-mark {MASQ_MARK}",),
    }


def _skeleton_chain(table: str, chain: str, fragments: Iterable[PortPlan], fixed: Shared) -> tuple[str, ...]:
    key = (table, chain)
    if chain not in SHARED[table]:
        return fixed.get(key, ())
    return (*(rule for fragment in fragments for rule in fragment.shared.get(key, ())), *fixed.get(key, ()))


def _assemble(config: NodeConfig, fragments: Sequence[PortPlan]) -> Ruleset:
    fixed = _fixed_rules(config)
    ruleset: Ruleset = {}
    for table, names in SKELETON.items():
        chains = ruleset[table] = {name: _skeleton_chain(table, name, fragments, fixed) for name in names}
        for fragment in fragments:
            chains.update(fragment.chains[table])
    return ruleset


def _wanted(ports: Iterable[ServicePort]) -> dict[str, ServicePort]:
    """The ports by key, in order; a key listed twice counts once, with its last port."""
    return {port.key: port for port in ports}


def plan(config: NodeConfig, ports: Iterable[ServicePort]) -> Ruleset:
    """Every KUBE chain of both tables for these service ports (pure)."""
    return _assemble(config, [plan_port(config, port) for port in _wanted(ports).values()])


# ---------------------------------------------------------------------------------------------------------------
# Rendering

LIST = "-S"  # the bulk layout's listing command, see the module docstring
BULK_MIN_LINES = 1_000  # smaller blocks never pay for a listing
# A block of L lines costs iptables-nft-restore about L^2 / 2 steps of its sorted chain-name list (~13 ns each on
# the benchmark host); `-S` costs about 10 µs per rule of the table. So the listing pays off when L^2 > 1,500 * rules.
LIST_COST_RATIO = 1_500
_RANKS = {"KUBE-SEP-": 1, "KUBE-SVL-": 2, "KUBE-SVC-": 3, "KUBE-EXT-": 4}


def is_service_chain(chain: str) -> bool:
    return chain.startswith(SERVICE_CHAIN_PREFIXES)


def rank(chain: str) -> int:
    """A chain's place in the bulk layout, after every chain it jumps to: the endpoint chains, the service chains,
    KUBE-EXT-, KUBE-FW-, then nat KUBE-NODEPORTS and last the chains reached from the built-in ones. The fixed
    chains (KUBE-MARK-MASQ, KUBE-POSTROUTING, KUBE-FORWARD) jump to no chain and come first."""
    found = _RANKS.get(chain[:9])
    if found:
        return found
    if chain.startswith("KUBE-FW-"):
        return 5
    if chain == NODEPORTS:
        return 6
    return 7 if chain in (SERVICES, EXTERNAL_SERVICES, PROXY_FIREWALL) else 0


def dependency_order(chains: Mapping[str, Sequence[str]]) -> dict[str, Sequence[str]]:
    """`chains` reordered for the bulk layout (stable: a port's chains keep their relative order)."""
    return dict(sorted(chains.items(), key=lambda item: rank(item[0])))


def use_bulk(lines: int, kernel_rules: int) -> bool:
    """Whether a table block of `lines` lines loads faster in the bulk layout into a table holding `kernel_rules`
    rules (iptables-nft-restore only)."""
    return lines >= BULK_MIN_LINES and lines * lines > LIST_COST_RATIO * kernel_rules


def _block_lines(write: Mapping[str, Sequence[str]], delete: Sequence[str], jumps: Sequence[Jump]) -> int:
    return len(write) + sum(map(len, write.values())) + 2 * len(delete) + len(jumps)


def _table_input(
    table: str,
    write: Mapping[str, Sequence[str]],
    delete: Sequence[str] = (),
    jumps: Sequence[Jump] = (),
    *,
    bulk: bool = False,
) -> list[str]:
    """One table's block: declaring a chain creates or flushes it, so its rules can follow; stale chains are
    declared (flushed) before `-X` deletes them.

    The classic layout declares every chain first. The bulk layout (`write` in dependency order, see `rank`)
    declares the chains the inserted jumps lead to, inserts the jumps, lists the table (`-S`), then declares each
    chain right before its rules."""
    if not (write or delete or jumps):
        return []
    inserts = [f"-I {jump.chain} {jump.rule}" for jump in jumps]
    if not bulk:
        lines = [f"*{table}", *(f":{name} - [0:0]" for name in (*write, *delete)), *inserts]
        for name, rules in write.items():
            lines += [f"-A {name} {rule}" for rule in rules]
    else:
        early = dict.fromkeys(jump.target for jump in jumps if jump.target in write)
        lines = [f"*{table}", *(f":{name} - [0:0]" for name in early), *inserts, LIST]
        for name, rules in write.items():
            if name not in early:
                lines.append(f":{name} - [0:0]")
            lines += [f"-A {name} {rule}" for rule in rules]
        lines += [f":{name} - [0:0]" for name in delete]
    lines += [f"-X {name}" for name in delete]
    return [*lines, "COMMIT"]


def restore_input(
    new: Ruleset,
    *,
    old: Ruleset | None = None,
    existing: Mapping[str, Iterable[str]] | None = None,
    jumps: Iterable[Jump] = (),
    bulk: bool = False,
) -> str:
    """`iptables-restore --noflush` input that turns the kernel into `new`; "" when nothing changed.

    `old` is what the kernel holds (the last plan it accepted): chains with the same rules are left out. Without it
    every chain is written. Service chains in `old` or `existing` (chain names per table, from iptables-save) that
    `new` lacks are deleted; `jumps` are inserted into the built-in chains. `bulk`: the bulk layout (every table)."""
    lines: list[str] = []
    for table, chains in new.items():
        before = (old or {}).get(table)
        write = {name: rules for name, rules in chains.items() if before is None or before.get(name) != rules}
        known = dict.fromkeys((*(before or ()), *(existing or {}).get(table, ())))
        delete = [name for name in known if name not in chains and is_service_chain(name)]
        inserts = [j for j in jumps if j.table == table]
        lines += _table_input(table, dependency_order(write) if bulk else write, delete, inserts, bulk=bulk)
    return "\n".join(lines) + "\n" if lines else ""


def render(config: NodeConfig, ports: Iterable[ServicePort]) -> dict[str, str]:
    """Each table's complete restore input (every KUBE chain declared and filled), as upstream's tests show it."""
    return {table: "\n".join(_table_input(table, chains)) + "\n" for table, chains in plan(config, ports).items()}


# ---------------------------------------------------------------------------------------------------------------
# Reading iptables-save


@dataclass(slots=True)
class Saved:
    """iptables-save output, per table: chain names (built-in ones included) and `-A` lines."""

    chains: dict[str, list[str]] = field(default_factory=dict)
    rules: dict[str, list[str]] = field(default_factory=dict)


def parse_save(text: str) -> Saved:
    saved, table = Saved(), ""
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
            saved.chains.setdefault(table, [])
            saved.rules.setdefault(table, [])
        elif line.startswith(":") and table:
            saved.chains[table].append(line[1:].split()[0])
        elif line.startswith("-A ") and table:
            saved.rules[table].append(line)
    return saved


def _chain_and_target(rule: str) -> tuple[str, str]:
    """(chain, jump target or "") of a saved `-A` line; comments may be quoted, hence shlex."""
    words = shlex.split(rule)
    target = words[words.index("-j") + 1] if "-j" in words[:-1] else ""
    return words[1], target


def _links(rules: Iterable[str]) -> Iterable[tuple[str, str, str]]:
    """(rule, chain, target) of the rules outside the KUBE-* chains that may jump into one (shlex is slow: the
    KUBE-* chains' own rules, nearly all of them, are skipped unparsed)."""
    for rule in rules:
        if "KUBE-" in rule and not rule.startswith("-A KUBE-"):
            yield (rule, *_chain_and_target(rule))


def missing_jumps(saved: Saved) -> list[Jump]:
    """The jumps from built-in chains into ours that the kernel lacks (any rule with that target counts)."""
    present = {(table, chain, target) for table, rules in saved.rules.items() for _, chain, target in _links(rules)}
    return [jump for jump in JUMPS if (jump.table, jump.chain, jump.target) not in present]


def cleanup_input(saved: Saved) -> str:
    """What `kube-proxy --cleanup` does, for every table: delete the rules of other chains that jump into a KUBE-*
    chain, then flush and delete every KUBE-* chain. "" when there is none."""
    lines: list[str] = []
    for table, chains in saved.chains.items():
        ours = [name for name in chains if name.startswith("KUBE-")]
        links = [rule for rule, chain, target in _links(saved.rules.get(table, [])) if target.startswith("KUBE-")]
        if ours or links:
            lines += [f"*{table}", *(f":{name} - [0:0]" for name in ours)]
            lines += ["-D " + rule.removeprefix("-A ") for rule in links]
            lines += [*(f"-X {name}" for name in ours), "COMMIT"]
    return "\n".join(lines) + "\n" if lines else ""


# ---------------------------------------------------------------------------------------------------------------
# Running


class Runner(Protocol):
    @property
    def nft_backend(self) -> bool:
        """True when iptables-restore is iptables-nft-restore (the bulk layout's listing is then worth it)."""
        ...

    def save(self) -> str: ...

    def restore(self, text: str) -> None: ...

    def cleanup(self) -> None: ...


@functools.cache
def _is_nft(binary: str) -> bool:
    """`iptables-restore --version` says "(nf_tables)" for the nft backend, "(legacy)" for the other."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "nf_tables" in done.stdout + done.stderr


class IptablesRunner:
    """iptables-restore / iptables-save inside a network namespace (`None`: the caller's own, which tinykube never
    uses for real nodes). Whichever backend the host's iptables uses (Debian's default is nft) is fine."""

    def __init__(self, netns: str | None) -> None:
        self.netns = netns

    @property
    def nft_backend(self) -> bool:
        return _is_nft(IPTABLES_RESTORE)

    def _run(self, argv: list[str], stdin: str | None = None, *, output: bool = True) -> str:
        if self.netns:
            argv = exec_argv(self.netns, argv)
        stdout = subprocess.PIPE if output else subprocess.DEVNULL
        done = subprocess.run(argv, input=stdin, stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            raise IptablesError(_explain(done.stderr))
        return done.stdout or ""

    def save(self) -> str:
        return self._run([IPTABLES_SAVE])

    def restore(self, text: str) -> None:
        # --noflush: tables keep everything not declared in the input (the built-in chains, other software's rules).
        # What it prints (the bulk layout's listing) is not wanted.
        self._run([IPTABLES_RESTORE, "-w", "5", "--noflush"], text, output=False)

    def cleanup(self) -> None:
        """Remove every KUBE-* chain and the jumps to them; idempotent."""
        text = cleanup_input(parse_save(self.save()))
        if text:
            self.restore(text)


def _explain(stderr: str) -> str:
    """iptables' message on one line, without its "Try `iptables-restore -h'" hint. (With the nft backend the line
    it names is the failed table's COMMIT, so the input line is not quoted.)"""
    return " ".join(line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("Try `"))


@dataclass(slots=True)
class _Change:
    """One table's part of a sync: the chains to write (in dependency order) and to delete, the jumps to insert."""

    write: dict[str, Sequence[str]] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    jumps: list[Jump] = field(default_factory=list)


class IptablesProxier(KernelSyncs):
    """Keeps the node's KUBE chains equal to the desired service ports, planning and writing only what changed.
    `sync` raises IptablesError when iptables refuses."""

    mode = "iptables"  # what kube-proxy's /proxyMode answers

    def __init__(self, config: NodeConfig, runner: Runner) -> None:
        super().__init__()
        self.config = config
        self.runner = runner
        # What the kernel holds, per port key in the order of the last sync: the port as it was handed over, and
        # its part of the plan (the shared chains are assembled from these parts).
        self.ports: dict[str, ServicePort] = {}
        self.fragments: dict[str, PortPlan] = {}
        self.rules = dict.fromkeys(SKELETON, 0)  # rules in our chains, per table

    def _full(self, ports: Iterable[ServicePort]) -> None:
        """Read the kernel back and write every chain: chains an earlier run left go, jumps someone removed come
        back, drift is repaired."""
        wanted = _wanted(ports)
        fragments = {key: plan_port(self.config, port) for key, port in wanted.items()}
        saved = parse_save(self.runner.save())
        jumps = missing_jumps(saved)
        fixed = _fixed_rules(self.config)
        changes: dict[str, _Change] = {}
        for table in SKELETON:
            change = changes[table] = _Change(jumps=[jump for jump in jumps if jump.table == table])
            write = change.write
            write.update((name, fixed.get((table, name), ())) for name in SKELETON[table] if name not in SHARED[table])
            for fragment in fragments.values():
                write.update(dependency_order(fragment.chains[table]))
            write.update((name, _skeleton_chain(table, name, fragments.values(), fixed)) for name in SHARED[table])
            known = dict.fromkeys(saved.chains.get(table, ()))
            change.delete = [name for name in known if name not in write and is_service_chain(name)]
        self._apply(changes, {table: len(saved.rules.get(table, ())) for table in SKELETON})
        self.ports, self.fragments = wanted, fragments
        self.rules = {table: sum(map(len, change.write.values())) for table, change in changes.items()}

    def _incremental(self, ports: Iterable[ServicePort]) -> None:
        """Plan the ports whose `ServicePort` changed (the agent hands over the very same object for an unchanged
        Service: `is` first, then `==`), write their chains that changed and the shared chains whose rules changed,
        delete the chains they no longer have."""
        wanted = _wanted(ports)
        held = self.ports
        changed = {key: port for key, port in wanted.items() if (old := held.get(key)) is not port and old != port}
        added = changed.keys() - held.keys()
        removed = [key for key in held if key not in wanted] if len(wanted) - len(added) != len(held) else []
        same_keys = not added and not removed
        # The shared chains follow the order of the ports: when it changed, every one of them is rewritten.
        if same_keys:
            same_order = list(wanted) == list(held)
        else:
            same_order = [key for key in wanted if key in held] == [key for key in held if key in wanted]
        if not changed and not removed and same_order:
            self.ports = wanted  # equal objects: the next sync finds these by identity
            return
        plans = {key: plan_port(self.config, port) for key, port in changed.items()}
        changes = {table: _Change() for table in SKELETON}
        rules = dict(self.rules)
        dirty: set[tuple[str, str]] = set()
        for key in (*changed, *removed):
            before, after = self.fragments.get(key), plans.get(key)
            for table, change in changes.items():
                old_chains = before.chains[table] if before else {}
                new_chains = after.chains[table] if after else {}
                for name, chain_rules in dependency_order(new_chains).items():
                    if old_chains.get(name) != chain_rules:
                        change.write[name] = chain_rules
                change.delete += [name for name in old_chains if name not in new_chains]
                rules[table] += (after.rules[table] if after else 0) - (before.rules[table] if before else 0)
            old_shared = before.shared if before else {}
            new_shared = after.shared if after else {}
            dirty.update(
                name for name in old_shared.keys() | new_shared.keys() if old_shared.get(name) != new_shared.get(name)
            )
        if not same_order:
            dirty = {(table, name) for table, names in SHARED.items() for name in names}
        if dirty:
            fixed = _fixed_rules(self.config)
            fragments = [plans.get(key) or self.fragments[key] for key in wanted]
            for table, names in SHARED.items():
                for name in names:
                    if (table, name) in dirty:
                        changes[table].write[name] = _skeleton_chain(table, name, fragments, fixed)
        self._apply(changes, self.rules)
        if same_keys and same_order:
            self.fragments.update(plans)
        else:
            self.fragments = {key: plans.get(key) or self.fragments[key] for key in wanted}
        self.ports, self.rules = wanted, rules

    def _apply(self, changes: Mapping[str, _Change], kernel_rules: Mapping[str, int]) -> None:
        """Render and send one restore input (nothing when nothing changed)."""
        nft = self.runner.nft_backend
        lines: list[str] = []
        for table, change in changes.items():
            bulk = nft and use_bulk(_block_lines(change.write, change.delete, change.jumps), kernel_rules[table])
            lines += _table_input(table, change.write, change.delete, change.jumps, bulk=bulk)
        if lines:
            self.runner.restore("\n".join(lines) + "\n")

    def close(self) -> None:
        """Nothing to release: each sync runs iptables-restore and ends (the rules stay)."""

    def cleanup(self) -> None:
        """Remove everything this mode programs (as `kube-proxy --cleanup`); the next sync starts afresh."""
        self.in_sync = False
        self.runner.cleanup()
