"""The nftables mode of the node proxy, laid out exactly as upstream kube-proxy's nftables proxier lays it out.

Three layers, as in upstream's knftables:

- `plan(config, ports) -> Ruleset` is pure: the whole table `ip kube-proxy` as data (chains with their rules,
  sets/maps, elements). `full_script` renders one as a transaction that recreates the table atomically;
  `incremental_script` renders only the difference between two plans. Scripts are exactly what `nft -f -` reads.
- `NftRunner` feeds a script to `nft -f -` inside a network namespace, one process per transaction.
- `NftablesProxier` keeps the last plan that the kernel accepted and sends diffs against it; the first sync, the
  one after a failure and any `full=True` sync recreate the table, which also repairs drift.

Only IPv4 (`ip` family), like `model.py`. LoadBalancerSourceRanges are not in the model yet, so the firewall map and
chain exist but stay empty.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tinykube.node.netns import exec_argv
from tinykube.proxy.model import Endpoint, ServicePort, cluster_endpoints, local_endpoints

TABLE = "ip kube-proxy"
NFT = shutil.which("nft") or "/usr/sbin/nft"
CHAIN_BASE_MAX = 240  # upstream's limit on the hashed part; nft allows 256 characters with the prefix


class NftError(Exception):
    """`nft` rejected a transaction or a command; the message carries nft's own error text."""


@dataclass(frozen=True, slots=True)
class NodeConfig:
    node_name: str
    node_ips: list[str]  # NodePorts answer on these (nftables' default `--nodeport-addresses primary`)
    cluster_cidr: str  # pod CIDR: traffic from outside it to a ClusterIP is masqueraded ("" = never)
    service_cidrs: list[str]  # unallocated IPs inside these are dropped


@dataclass(frozen=True, slots=True)
class Chain:
    rules: tuple[str, ...]
    spec: str = ""  # body of `add chain … { spec }`: hook and priority for base chains, or a comment


@dataclass(slots=True)
class Ruleset:
    """The table as data. Keys of `elements` are (set or map, element key); values are what follows the key
    inside the braces (` : goto service-…`, a comment, or nothing for a plain set)."""

    chains: dict[str, Chain] = field(default_factory=dict)
    sets: dict[str, str] = field(default_factory=dict)  # name -> "set { … }" / "map { … }"
    elements: dict[tuple[str, str], str] = field(default_factory=dict)


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
        ("ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"),
    ),
    "filter-output": (
        "output",
        0,
        ("ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"),
    ),
    "nat-prerouting": ("prerouting", -100, ("jump services",)),
    "nat-output": ("output", -100, ("jump services",)),
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
    rs.chains.update(
        {
            "services": Chain(
                (
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


@dataclass(frozen=True, slots=True)
class _Policy:
    """What upstream's CategorizeEndpoints decides for one service port on this node."""

    cluster: tuple[Endpoint, ...]  # used by the service- chain (empty when that chain is not needed)
    local: tuple[Endpoint, ...]  # used by the local- chain
    internal: tuple[Endpoint, ...]  # what ClusterIP traffic may reach
    external: tuple[Endpoint, ...]  # what NodePort / externalIP / LB traffic may reach
    any_endpoints: bool  # false: reject; true but internal/external empty: drop
    externally_accessible: bool


def _policy(config: NodeConfig, port: ServicePort) -> _Policy:
    cluster = cluster_endpoints(port)
    local = local_endpoints(port, config.node_name)
    external_access = bool(port.node_port or port.external_ips or port.load_balancer_ips)
    external_local = port.external_local and external_access
    # The service- chain also serves ETP Local's short-circuits, so any externally accessible port needs it.
    uses_cluster = not port.internal_local or external_access
    uses_local = port.internal_local or external_local
    return _Policy(
        cluster=cluster if uses_cluster else (),
        local=local if uses_local else (),
        internal=local if port.internal_local else cluster,
        external=(local if external_local else cluster) if external_access else (),
        any_endpoints=bool(cluster),
        externally_accessible=external_access,
    )


def _add_port(rs: Ruleset, config: NodeConfig, port: ServicePort) -> None:
    policy = _policy(config, port)
    base, proto = service_base(port), port.protocol
    service, local, external = f"service-{base}", f"local-{base}", f"external-{base}"
    missing = f' comment "{port_comment(port)}" : ' + ("drop" if policy.any_endpoints else "goto reject-chain")

    internal_to = f" : goto {local if port.internal_local else service}" if policy.internal else missing
    for ip in port.cluster_ips:
        rs.elements[("cluster-ips", ip)] = ""
        _element(
            rs,
            "service-ips" if policy.internal else "no-endpoint-services",
            f"{ip} . {proto} . {port.port}",
            internal_to,
        )
    if policy.externally_accessible:
        external_to = f" : goto {external}" if policy.external else missing
        for ip in (*port.external_ips, *port.load_balancer_ips):
            _element(
                rs,
                "service-ips" if policy.external else "no-endpoint-services",
                f"{ip} . {proto} . {port.port}",
                external_to,
            )
        if port.node_port:
            _element(
                rs,
                "service-nodeports" if policy.external else "no-endpoint-nodeports",
                f"{proto} . {port.node_port}",
                external_to,
            )

    if policy.cluster:
        masq = [
            f"ip daddr {ip} {proto} dport {port.port} ip saddr != {config.cluster_cidr} jump mark-for-masquerade"
            for ip in port.cluster_ips
            if config.cluster_cidr
        ]
        rs.chains[service] = Chain((*masq, *_balance(port, policy.cluster)))
    if policy.local:
        rs.chains[local] = Chain(_balance(port, policy.local))
    if policy.external:
        rs.chains[external] = Chain(_external_rules(config, port, service, local))
    for endpoint in dict.fromkeys((*policy.cluster, *policy.local)):  # ordered: the script must be stable
        _add_endpoint(rs, port, endpoint)


def _element(rs: Ruleset, target: str, key: str, value: str) -> None:
    rs.elements[(target, key)] = value


def _balance(port: ServicePort, endpoints: tuple[Endpoint, ...]) -> tuple[str, ...]:
    """Sticky clients first (affinity), then a uniform random pick among the endpoints."""
    bases = [endpoint_base(port, e) for e in endpoints]
    sticky = [f"ip saddr @affinity-{b} goto endpoint-{b}" for b in bases] if port.affinity_timeout else []
    vmap = " , ".join(f"{i} : goto endpoint-{b}" for i, b in enumerate(bases))
    return (*sticky, f"numgen random mod {len(bases)} vmap {{ {vmap} }}")


def _external_rules(config: NodeConfig, port: ServicePort, service: str, local: str) -> tuple[str, ...]:
    if not port.external_local:
        return ("jump mark-for-masquerade", f"goto {service}")
    # ETP Local: pods and the node itself still reach every endpoint (the node's traffic masqueraded); only
    # traffic from outside is kept on this node's endpoints, with its source IP preserved.
    pods = (
        [f'ip saddr {config.cluster_cidr} goto {service} comment "short-circuit pod traffic"']
        if config.cluster_cidr
        else []
    )
    return (
        *pods,
        'fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"',
        f'fib saddr type local goto {service} comment "short-circuit local traffic"',
        f"goto {local}",
    )


def _add_endpoint(rs: Ruleset, port: ServicePort, endpoint: Endpoint) -> None:
    base = endpoint_base(port, endpoint)
    rules = [f"ip saddr {endpoint.ip} jump mark-for-masquerade"]  # hairpin: a pod reaching itself via the VIP
    if port.affinity_timeout:
        affinity = f"affinity-{base}"
        rs.sets[affinity] = f"set {{ type ipv4_addr ; flags dynamic,timeout ; timeout {port.affinity_timeout}s ; }}"
        rules.append(f"update @{affinity} {{ ip saddr }}")
    rules.append(f"meta l4proto {port.protocol} dnat to {endpoint.ip}:{endpoint.port}")
    rs.chains[f"endpoint-{base}"] = Chain(tuple(rules))


def plan(config: NodeConfig, ports: Iterable[ServicePort]) -> Ruleset:
    """The whole desired table for these service ports (pure)."""
    rs = _skeleton(config)
    for port in ports:
        _add_port(rs, config, port)
    return rs


# ---------------------------------------------------------------------------------------------------------------
# Rendering


def _add_chain(name: str, chain: Chain) -> str:
    return f"add chain {TABLE} {name}" + (f" {{ {chain.spec} }}" if chain.spec else "")


def _rules(name: str, chain: Chain) -> list[str]:
    return [f"add rule {TABLE} {name} {rule}" for rule in chain.rules]


def _add_element(key: tuple[str, str], value: str) -> str:
    return f"add element {TABLE} {key[0]} {{ {key[1]}{value} }}"


def render_full(rs: Ruleset) -> str:
    """Recreate the table in one transaction: `add` makes the `delete` safe when there is no table yet, and deleting
    it drops whatever a previous (or foreign) writer left behind, stale chains included."""
    lines = [f"add table {TABLE}", f"delete table {TABLE}", f'add table {TABLE} {{ comment "rules for kube-proxy" ; }}']
    lines += [_add_chain(name, chain) for name, chain in rs.chains.items()]
    lines += [f"add {decl.split(' ', 1)[0]} {TABLE} {name} {decl.split(' ', 1)[1]}" for name, decl in rs.sets.items()]
    for name, chain in rs.chains.items():
        lines += _rules(name, chain)
    lines += [_add_element(key, value) for key, value in rs.elements.items()]
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

    lines = [f"delete element {TABLE} {k[0]} {{ {k[1]} }}" for k, v in old.elements.items() if new.elements.get(k) != v]
    lines += [f"flush chain {TABLE} {n}" for n in (*sorted(rewritten & old.chains.keys()), *stale)]
    lines += [f"delete set {TABLE} {n}" for n in gone_sets]
    lines += [
        f"add {d.split(' ', 1)[0]} {TABLE} {n} {d.split(' ', 1)[1]}"
        for n, d in new.sets.items()
        if old.sets.get(n) != d or n in gone_sets
    ]
    ordered = [n for n in new.chains if n in rewritten]
    lines += [_add_chain(n, new.chains[n]) for n in ordered if n not in old.chains]
    for n in ordered:
        lines += _rules(n, new.chains[n])
    lines += [_add_element(k, v) for k, v in new.elements.items() if old.elements.get(k) != v]
    lines += [f"delete chain {TABLE} {n}" for n in stale]
    return "\n".join(lines) + "\n" if lines else ""


def _chains_using(rs: Ruleset, sets: set[str]) -> set[str]:
    if not sets:
        return set()
    return {n for n, c in rs.chains.items() if any(m in sets for r in c.rules for m in SET_REFERENCE.findall(r))}


def full_script(config: NodeConfig, ports: Iterable[ServicePort]) -> str:
    return render_full(plan(config, ports))


def incremental_script(config: NodeConfig, old: Iterable[ServicePort], new: Iterable[ServicePort]) -> str:
    return render_diff(plan(config, old), plan(config, new))


# ---------------------------------------------------------------------------------------------------------------
# Running


class Runner(Protocol):
    def apply(self, script: str) -> None: ...


class NftRunner:
    """`nft` inside a network namespace (`None`: the caller's own, which tinykube never uses for real nodes)."""

    def __init__(self, netns: str | None) -> None:
        self.netns = netns

    def _run(self, args: Sequence[str], stdin: str | None = None) -> str:
        argv = [NFT, *args]
        if self.netns:
            argv = exec_argv(self.netns, argv)
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NftError(f"nft {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def apply(self, script: str) -> None:
        self._run(["-f", "-"], script)

    def check(self, script: str) -> None:
        """Parse and validate against the kernel without committing (`nft -c`)."""
        self._run(["-c", "-f", "-"], script)

    def dump(self) -> str:
        return self._run(["list", "table", *TABLE.split()])

    def cleanup(self) -> None:
        try:
            self._run(["delete", "table", *TABLE.split()])
        except NftError as err:
            if "No such file or directory" not in str(err):
                raise


class NftablesProxier:
    """Keeps the kernel's table equal to the desired service ports, with as little churn as possible."""

    mode = "nftables"  # what kube-proxy's /proxyMode answers

    def __init__(self, config: NodeConfig, runner: Runner) -> None:
        self.config = config
        self.runner = runner
        self.applied: Ruleset | None = None  # what the kernel last accepted; None forces a full sync
        self.syncs = 0
        self.failures = 0
        self.full_syncs = 0
        self.last_duration = 0.0  # seconds the last sync took

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        """Program `ports`; raises NftError (and makes the next sync a full one) when nft refuses."""
        start = time.monotonic()
        desired = plan(self.config, ports)
        full = full or self.applied is None
        script = render_full(desired) if full or self.applied is None else render_diff(self.applied, desired)
        try:
            if script:
                self.runner.apply(script)
        except Exception:
            self.failures += 1
            self.applied = None
            raise
        finally:
            self.syncs += 1
            self.last_duration = time.monotonic() - start
        self.full_syncs += full
        self.applied = desired
