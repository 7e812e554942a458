"""What a trace found: the dataclasses `tinykube trace` prints and the web page draws (no behaviour here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["answered", "refused", "dropped", "timed out", "error"]
Direction = Literal["request", "reply"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One end of the flow: where it lives in the sandbox."""

    kind: Literal["pod", "node", "external", "address"]
    name: str  # "default/web-1", "node-1", "external", or the address itself
    netns: str | None  # the namespace it lives in (None: outside the sandbox's knowledge)
    ip: str
    node: str | None = None  # a pod's node


@dataclass(frozen=True, slots=True)
class Resolution:
    """How the target's name became an address, as the source resolves it."""

    query: str  # what was asked (the name as typed, or the FQDN)
    answers: list[str]  # the addresses the resolver answered
    server: str  # the resolver asked (e.g. "10.96.0.10 (from the pod's /etc/resolv.conf)")
    service: str | None = None  # "ns/name" of the Service the address belongs to, when one does


@dataclass(frozen=True, slots=True)
class Step:
    """One rule (or chain policy) a packet hit in one namespace, in the order the kernel evaluated them."""

    netns: str  # the namespace ("tk-demo.node-1")
    where: str  # its role, for people: "node-1", "pod default/web-1", "external"
    direction: Direction  # the first packet of the flow, or the first answer to it
    packet_id: str  # nft's trace id: steps with the same id are one packet in one namespace
    family: str  # "ip", "inet"
    table: str  # "kube-proxy", "nat", "filter"
    chain: str  # "services", "KUBE-SVC-…"
    rule: str  # the rule's text ("" for a chain's policy)
    verdict: str  # "jump services", "goto pick-tcp-80-1-2", "accept", "continue", "drop", "policy accept"
    packet: str = ""  # the packet as it entered the chain: "172.20.0.250:47001 > 172.20.0.2:30569 tcp syn"
    explain: str = ""  # one line in plain words (rendered with --explain)


@dataclass(frozen=True, slots=True)
class Dnat:
    """The destination NAT: which endpoint the Service (or NodePort) rules chose."""

    address: str
    port: int
    node: str | None  # the endpoint's node, when it is a pod
    pod: str | None  # "ns/name" of the endpoint's pod, when known
    chain: str  # the rule's chain that picked it ("pick-tcp-80-1-2", "KUBE-SEP-…")


@dataclass(frozen=True, slots=True)
class Snat:
    """Whether the packet was masqueraded (source NAT), and why (or why not)."""

    masqueraded: bool
    reason: str  # "came from outside the pod network (172.20.0.250) to a NodePort", "…"
    node: str | None = None  # the node that masqueraded it
    address: str | None = None  # the address it took (the node's)


@dataclass
class TraceResult:
    source: Endpoint
    target: str  # as the user wrote it
    proto: str  # "tcp" | "udp"
    destination: str  # the address connected to
    port: int
    source_port: int  # the fixed client port the flow was traced by
    mode: str  # the proxy mode: "nftables", "iptables", "userspace"
    resolution: Resolution | None = None
    steps: list[Step] = field(default_factory=list)
    dnat: Dnat | None = None
    snat: Snat | None = None
    outcome: Outcome = "error"
    reply: str = ""  # what came back ("HTTP/1.1 200 OK", "connection refused", "")
    seen_client: str | None = None  # the client address the endpoint saw (the echoserver's client_address=)
    listener: str | None = None  # userspace mode: the proxy's listener that took the connection ("ip:port on node")
    notes: list[str] = field(default_factory=list)  # things said along the way (a namespace without rules …)
    error: str | None = None  # why no trace could be made (unknown pod, name that does not resolve …)

    @property
    def namespaces(self) -> list[str]:
        """The namespaces the traced packets crossed, in order of first appearance."""
        seen: dict[str, None] = {}
        for step in self.steps:
            seen.setdefault(step.netns, None)
        return list(seen)


class TraceError(Exception):
    """The trace cannot be made as asked (a source that does not exist, a target that does not resolve …)."""
