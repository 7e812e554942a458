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

- `plan(config, ports) -> Ruleset` is pure: every KUBE chain of both tables with its rules. `restore_input` turns a
  plan into `iptables-restore --noflush` input. Declaring a chain (`:NAME - [0:0]`) creates or flushes it, so a
  sync writes only the chains whose rules changed and deletes (`-X`) those that disappeared; the built-in chains are
  never flushed (other software owns them too), the jumps from them into ours are inserted when missing.
- `IptablesRunner` runs iptables-restore / iptables-save inside a network namespace.
- `IptablesProxier` keeps the last plan the kernel accepted and writes the chains that differ from it; the first
  sync, the one after a failure and any `full=True` sync read the kernel back with iptables-save and write
  everything, which also repairs drift and removes chains left by an earlier run.

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
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tinykube.node.netns import exec_argv
from tinykube.proxy.model import Endpoint, NodeConfig, Policy, ServicePort
from tinykube.proxy.model import policy as proxy_policy
from tinykube.proxy.nftables import port_comment

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
# The whole plan


def _skeleton() -> _Builder:
    b = _Builder()
    for chain in (SERVICES, EXTERNAL_SERVICES, FORWARD, NODEPORTS, PROXY_FIREWALL):
        b.add(FILTER, chain)
    b.add(NAT, SERVICES)
    b.add(NAT, NODEPORTS)
    b.add(
        NAT,
        POSTROUTING,
        f"-m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
        f"-j MARK --xor-mark {MASQ_MARK}",  # cleared: a packet traversing the stack again is not masqueraded twice
        f"{_comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully",
    )
    b.add(NAT, MARK_MASQ, f"-j MARK --or-mark {MASQ_MARK}")
    return b


def _finish(b: _Builder, config: NodeConfig) -> None:
    last = _comment("kubernetes service nodeports; NOTE: this must be the last rule in this chain")
    b.add(NAT, SERVICES, *(f"{last} -d {ip} -j {NODEPORTS}" for ip in config.node_ips))
    b.add(
        FILTER,
        FORWARD,
        "-m conntrack --ctstate INVALID -j DROP",  # upstream's guard against spurious resets (unless tcp_be_liberal)
        f"{_comment('kubernetes forwarding rules')} -m mark --mark {MASQ_MARK}/{MASQ_MARK} -j ACCEPT",
        f"{_comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    )


def plan(config: NodeConfig, ports: Iterable[ServicePort]) -> Ruleset:
    """Every KUBE chain of both tables for these service ports (pure)."""
    b = _skeleton()
    for port in ports:
        _add_port(b, config, port)
    _finish(b, config)
    return b.ruleset()


# ---------------------------------------------------------------------------------------------------------------
# Rendering


def is_service_chain(chain: str) -> bool:
    return chain.startswith(SERVICE_CHAIN_PREFIXES)


def _table_input(table: str, chains: Chains, write: list[str], delete: list[str], jumps: list[Jump]) -> list[str]:
    """One table's block: declaring a chain creates or flushes it, so its rules can follow; stale chains are
    declared (flushed) before `-X` deletes them."""
    if not (write or delete or jumps):
        return []
    lines = [f"*{table}", *(f":{name} - [0:0]" for name in (*write, *delete))]
    lines += [f"-I {jump.chain} {jump.rule}" for jump in jumps]
    lines += [f"-A {name} {rule}" for name in write for rule in chains[name]]
    lines += [f"-X {name}" for name in delete]
    return [*lines, "COMMIT"]


def restore_input(
    new: Ruleset,
    *,
    old: Ruleset | None = None,
    existing: Mapping[str, Iterable[str]] | None = None,
    jumps: Iterable[Jump] = (),
) -> str:
    """`iptables-restore --noflush` input that turns the kernel into `new`; "" when nothing changed.

    `old` is what the kernel holds (the last plan it accepted): chains with the same rules are left out. Without it
    every chain is written. Service chains in `old` or `existing` (chain names per table, from iptables-save) that
    `new` lacks are deleted; `jumps` are inserted into the built-in chains."""
    lines: list[str] = []
    for table, chains in new.items():
        before = (old or {}).get(table)
        write = [name for name, rules in chains.items() if before is None or before.get(name) != rules]
        known = dict.fromkeys((*(before or ()), *(existing or {}).get(table, ())))
        delete = [name for name in known if name not in chains and is_service_chain(name)]
        lines += _table_input(table, chains, write, delete, [j for j in jumps if j.table == table])
    return "\n".join(lines) + "\n" if lines else ""


def render(config: NodeConfig, ports: Iterable[ServicePort]) -> dict[str, str]:
    """Each table's complete restore input (every KUBE chain declared and filled), as upstream's tests show it."""
    return {
        table: "\n".join(_table_input(table, chains, list(chains), [], [])) + "\n"
        for table, chains in plan(config, ports).items()
    }


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


def missing_jumps(saved: Saved) -> list[Jump]:
    """The jumps from built-in chains into ours that the kernel lacks (any rule with that target counts)."""
    present = {(table, *_chain_and_target(rule)) for table, rules in saved.rules.items() for rule in rules}
    return [jump for jump in JUMPS if (jump.table, jump.chain, jump.target) not in present]


def cleanup_input(saved: Saved) -> str:
    """What `kube-proxy --cleanup` does, for every table: delete the rules of other chains that jump into a KUBE-*
    chain, then flush and delete every KUBE-* chain. "" when there is none."""
    lines: list[str] = []
    for table, chains in saved.chains.items():
        ours = [name for name in chains if name.startswith("KUBE-")]
        links = []
        for rule in saved.rules.get(table, []):
            chain, target = _chain_and_target(rule)
            if target.startswith("KUBE-") and not chain.startswith("KUBE-"):
                links.append(rule)
        if ours or links:
            lines += [f"*{table}", *(f":{name} - [0:0]" for name in ours)]
            lines += ["-D " + rule.removeprefix("-A ") for rule in links]
            lines += [*(f"-X {name}" for name in ours), "COMMIT"]
    return "\n".join(lines) + "\n" if lines else ""


# ---------------------------------------------------------------------------------------------------------------
# Running


class Runner(Protocol):
    def save(self) -> str: ...

    def restore(self, text: str) -> None: ...

    def cleanup(self) -> None: ...


class IptablesRunner:
    """iptables-restore / iptables-save inside a network namespace (`None`: the caller's own, which tinykube never
    uses for real nodes). Whichever backend the host's iptables uses (Debian's default is nft) is fine."""

    def __init__(self, netns: str | None) -> None:
        self.netns = netns

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        if self.netns:
            argv = exec_argv(self.netns, argv)
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise IptablesError(_explain(done.stderr))
        return done.stdout

    def save(self) -> str:
        return self._run([IPTABLES_SAVE])

    def restore(self, text: str) -> None:
        # --noflush: tables keep everything not declared in the input (the built-in chains, other software's rules).
        self._run([IPTABLES_RESTORE, "-w", "5", "--noflush"], text)

    def cleanup(self) -> None:
        """Remove every KUBE-* chain and the jumps to them; idempotent."""
        text = cleanup_input(parse_save(self.save()))
        if text:
            self.restore(text)


def _explain(stderr: str) -> str:
    """iptables' message on one line, without its "Try `iptables-restore -h'" hint. (With the nft backend the line
    it names is the failed table's COMMIT, so the input line is not quoted.)"""
    return " ".join(line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("Try `"))


class IptablesProxier:
    """Keeps the node's KUBE chains equal to the desired service ports, writing only the chains that changed."""

    mode = "iptables"  # what kube-proxy's /proxyMode answers

    def __init__(self, config: NodeConfig, runner: Runner) -> None:
        self.config = config
        self.runner = runner
        self.applied: Ruleset | None = None  # what the kernel last accepted; None forces a full sync
        self.syncs = 0
        self.failures = 0
        self.full_syncs = 0
        self.last_duration = 0.0  # seconds the last sync took

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        """Program `ports`; raises IptablesError (and makes the next sync a full one) when iptables refuses."""
        start = time.monotonic()
        desired = plan(self.config, ports)
        full = full or self.applied is None
        try:
            if full:
                # Read the kernel back: chains an earlier run left go, jumps someone removed come back.
                saved = parse_save(self.runner.save())
                text = restore_input(desired, existing=saved.chains, jumps=missing_jumps(saved))
            else:
                text = restore_input(desired, old=self.applied)
            if text:
                self.runner.restore(text)
        except Exception:
            self.failures += 1
            self.applied = None
            raise
        finally:
            self.syncs += 1
            self.last_duration = time.monotonic() - start
        self.full_syncs += full
        self.applied = desired

    def close(self) -> None:
        """Nothing to release: each sync runs iptables-restore and ends (the rules stay)."""

    def cleanup(self) -> None:
        """Remove everything this mode programs (as `kube-proxy --cleanup`); the next sync starts afresh."""
        self.applied = None
        self.runner.cleanup()
