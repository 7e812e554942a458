"""A trace as text, with the names the seed articles use (KUBE-SERVICES, KUBE-SVC-*, KUBE-SEP-*, KUBE-MARK-MASQ in
iptables mode; their nftables-mode counterparts `services`, `pick-*`, `mark-for-masquerade`), and `--explain`'s
one line per step in plain words."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tinykube.trace.model import Endpoint, Step, TraceResult

_PICK = re.compile(r"numgen random mod (\d+)")
_PROBABILITY = re.compile(r"probability ([0-9.]+)")
_SADDR_NOT = re.compile(r"ip saddr != (\S+)")
# iptables-nft prints `-m statistic --mode random --probability P` as this comparison (P = N / 2**31)
_RANDOM = re.compile(r"meta random & 2147483647 < (\d+)")


def explain(step: Step) -> str:
    """One plain-words line for a rule (or policy) a packet hit."""
    rule, chain, verdict = step.rule, step.chain, step.verdict
    low = rule.lower()
    if not rule:
        if verdict.startswith("policy"):
            return f"end of {chain}: the chain's policy lets the packet go on ({verdict.split()[-1]})"
        return "this namespace has no rules for it: the packet passes through"
    target = verdict.split()[-1] if verdict.startswith(("jump", "goto")) else ""
    # the masquerade mark, SNAT
    if chain in ("mark-for-masquerade", "KUBE-MARK-MASQ"):
        return f"{chain} marks the packet (0x4000) for SNAT: the node that sends it on will masquerade it"
    if target in ("mark-for-masquerade", "KUBE-MARK-MASQ"):
        return f"{target} marks it for SNAT because {mark_reason(step)}"
    if "update @affinity" in low or "--set" in low or ("recent" in low and "set" in low):
        return "session affinity (ClientIP): remembers this client, so its next connections come to this endpoint"
    if "@affinity" in low or "recent" in low:
        return f"session affinity (ClientIP): this client had {target or 'this endpoint'} before, so back to it"
    if "masquerade" in low and verdict == "accept":
        return "masquerade (SNAT): the source becomes this node's address, because the packet carries the mark"
    if chain in ("masquerading", "KUBE-POSTROUTING") and verdict == "return":
        return "no masquerade mark: the source address is kept (no SNAT)"
    if "mark" in low and ("^ 0x00004000" in low or "xor 0x4000" in low):
        return "clears the masquerade mark before masquerading (so it is not applied twice)"
    # picking an endpoint
    pick = _PICK.search(rule)
    if pick:
        n = int(pick[1])
        return f"{chain} picks an endpoint at random (probability 1/{n} each of {n}), remembered in the connection mark"
    probability = _PROBABILITY.search(rule)
    if probability and target:
        return f"{chain} picks {target} at random (probability {float(probability[1]):g})"
    random = _RANDOM.search(rule)
    if random and target:
        return f"{chain} picks {target} at random (probability {int(random[1]) / 2**31:.4g})"
    if chain.startswith("KUBE-SVC-") and target.startswith("KUBE-SEP-"):
        return f"{chain} picks {target} (the last, or only, endpoint: no dice needed)"
    # hairpin, session affinity (before DNAT: the hairpin rule tests `ct status dnat`)
    if "hairpin" in low:
        return (
            "the packet leaves by the interface it came in on (hairpin): marked for SNAT so the answer comes back "
            "the same way"
        )
    if re.fullmatch(r"ct mark set 0x[0-9a-f]+", rule):
        return f"{chain} remembers its endpoint in the connection mark (the DNAT below looks it up)"
    # DNAT
    if "dnat" in low:
        where = re.search(r"dnat (?:ip )?to (\S+)", low)
        return f"DNAT: the destination becomes the chosen endpoint{f' {where[1]}' if where and ':' in where[1] else ''}"
    # dispatch
    if "@service-ips" in rule:
        return f"the destination (address . protocol . port) is a Service: on to {target or verdict}"
    if "@service-nodeports" in rule:
        return f"the destination is a NodePort on this node: on to {target or verdict}"
    if chain == "KUBE-SERVICES" and target.startswith("KUBE-SVC-"):
        return f"KUBE-SERVICES matches the Service's ClusterIP and port: on to {target}"
    if chain == "KUBE-SERVICES" and target.startswith("KUBE-EXT-"):
        return f"KUBE-SERVICES matches the Service's external (LoadBalancer) address: on to {target}"
    if target == "KUBE-NODEPORTS":
        return "the destination is this node's address: KUBE-NODEPORTS looks at the port"
    if chain == "KUBE-NODEPORTS":
        return f"KUBE-NODEPORTS matches the NodePort: on to {target}"
    if chain.startswith(("external-", "KUBE-EXT-")):
        if "short-circuit pod traffic" in rule or "cluster-cidr" in low:
            return "traffic from a pod is treated like ClusterIP traffic (every endpoint)"
        local_chain = chain.startswith("external-") and not chain.startswith("external-pick-")
        if target.startswith(("local-", "KUBE-SVL-")) or (local_chain and rule.startswith("goto ")):
            return f"externalTrafficPolicy Local: only this node's endpoints ({target}); the client address is kept"
        if target:
            return f"{chain}: on to {target}"
    if "@no-endpoint-services" in rule or "@no-endpoint-nodeports" in rule:
        if target == "reject-chain":
            return "the Service has no endpoints: REJECT (the client gets 'connection refused')"
        return f"the Service has no endpoints: {target or verdict}"
    if verdict == "reject" or "reject" in low:
        return "REJECT: an ICMP port-unreachable goes back (the client sees 'connection refused')"
    if verdict == "drop":
        return f"dropped in {chain} (no endpoint here for it): the client hears nothing and times out"
    if target:
        return f"{chain} {verdict.split()[0]}s to {target}"
    return f"{chain}: {verdict}"


def mark_reason(step: Step) -> str:
    """Why the rule that jumps to the masquerade-mark chain does so (the words after "because")."""
    rule, chain = step.rule, step.chain
    outside = _SADDR_NOT.search(rule) or re.search(r"! -s (\S+)", rule)
    if outside:
        return f"it came from outside the cluster CIDR ({outside[1]}) to a ClusterIP"
    itself = re.search(r"ip saddr (\d+\.\d+\.\d+\.\d+)\b", rule)
    if itself and chain.startswith("KUBE-SEP-"):
        return f"the endpoint {itself[1]} itself sent it (hairpin): the answer must come back through the node"
    if "fib saddr type local" in rule or "addrtype" in rule.lower():
        return "the node itself sent it"
    if "hairpin" in rule.lower():
        return "a pod reached itself through its Service (hairpin)"
    if chain.startswith(("external-", "KUBE-EXT-")):
        return (
            "it came from outside to a NodePort or LoadBalancer address with externalTrafficPolicy Cluster: it may "
            "go on to an endpoint on another node, whose answer must come back through this one"
        )
    return f"{chain} says so"


def masquerade_reason(steps: list[Step], source: Endpoint, kind: str) -> str:
    """Why the request was masqueraded, from the rule that marked it."""
    for step in steps:
        if step.direction != "request":
            continue
        target = step.verdict.split()[-1] if step.verdict.startswith(("jump", "goto")) else ""
        if target in ("mark-for-masquerade", "KUBE-MARK-MASQ") or step.chain in ("KUBE-MARK-MASQ",):
            return mark_reason(step)
    if "hairpin" in " ".join(s.rule for s in steps):
        return "hairpin: the pod reached itself through its Service"
    return f"the rules marked it (a {kind} destination from {source.name})"


def kept_reason(source: Endpoint, kind: str, policy: str) -> str:
    """Why the request kept its source address."""
    if kind in ("NodePort", "LoadBalancer") and policy == "Local" and source.kind == "external":
        return "externalTrafficPolicy Local: only endpoints on this node are used, so the client address is kept"
    if source.kind == "pod":
        return "it came from inside the cluster CIDR: the endpoint can answer the pod directly"
    return "no rule marked it for masquerade"


def render(result: TraceResult, explain: bool = False) -> str:
    """The trace as text: the resolution, the path per namespace, DNAT, SNAT, the outcome."""
    if result.error:
        return f"trace {result.source.name} -> {result.target}: {result.error}"
    lines = [
        f"trace {result.source.name} ({result.source.ip}) -> {result.target} "
        f"[{result.proto} {result.destination}:{result.port}, client port {result.source_port}, "
        f"proxy mode {result.mode}]"
    ]
    if result.resolution:
        res = result.resolution
        svc = f" (Service {res.service})" if res.service else ""
        lines.append(f"resolve {res.query} via {res.server}: {', '.join(res.answers)}{svc}")
    current: tuple[str, str, str] | None = None
    for step in result.steps:
        if (step.direction, step.netns, step.packet_id) != current:
            current = (step.direction, step.netns, step.packet_id)
            label = "request" if step.direction == "request" else "reply  "
            lines.append(f"{label} in {step.where} [{step.netns}]: {step.packet}")
        if not step.chain:
            lines.append(f"    {step.verdict}")
            continue
        rule = step.rule or "(policy)"
        lines.append(f"    {step.family} {step.table} {step.chain}: {rule}  -> {step.verdict}")
        if explain and step.explain:
            lines.append(f"        # {step.explain}")
    if result.dnat:
        d = result.dnat
        who = f" (pod {d.pod} on {d.node})" if d.pod else (f" (on {d.node})" if d.node else "")
        lines.append(f"DNAT    {result.destination}:{result.port} -> {d.address}:{d.port}{who} by {d.chain or '?'}")
    elif result.steps:
        lines.append("DNAT    none")
    if result.snat:
        s = result.snat
        if s.masqueraded and result.listener:
            lines.append(f"SNAT    the proxy's own connection, from {s.node} ({s.address}): {s.reason}")
        elif s.masqueraded:
            lines.append(f"SNAT    masqueraded by {s.node} to {s.address or 'its address'}: {s.reason}")
        else:
            lines.append(f"SNAT    none: {s.reason}")
    if result.listener:
        lines.append(f"proxy   userspace listener {result.listener}")
    for note in result.notes:
        lines.append(f"note    {note}")
    lines.append(f"verdict {result.outcome}: {result.reply}")
    if result.seen_client:
        lines.append(f"the endpoint saw the client as {result.seen_client}")
    return "\n".join(lines)
