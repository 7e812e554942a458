"""One trace, start to end: find the source and the target, arm tracing in the namespaces the flow can cross,
make the one connection, disarm, and turn the kernel's events into a `TraceResult`."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
import time
from typing import TYPE_CHECKING

from tinykube.trace import kernel, nftrace, probe
from tinykube.trace.model import Dnat, Endpoint, Snat, Step, TraceError, TraceResult
from tinykube.trace.render import explain, kept_reason, masquerade_reason
from tinykube.trace.resolve import ClusterView, Target, find_source, find_target, read_view

if TYPE_CHECKING:
    from tinykube.client.rest import RestClient

EVENTS_SETTLE = 0.3  # seconds for the monitors to print the last events after the probe returns
PROTOS = ("tcp", "udp")
_ONE_AT_A_TIME = threading.Lock()  # traces of one process (the web page's) run one after another


async def trace(
    client: RestClient, cluster: str, source: str, target: str, proto: str = "tcp", timeout: float = 2.0
) -> TraceResult:
    """Trace one connection from `source` (`ns/name`, `name`, `node/NAME`, `external`) to `target` (a Service
    name, DNS name, ClusterIP, `NODE_IP:NODEPORT`, LoadBalancer address; `:PORT` optional where the Service says)
    in the netns sandbox of `cluster` (its name, as `tinykube up --name`). Never raises for a bad source or target:
    the result's `error` says what is wrong. Needs root (it runs `nft` inside the sandbox's namespaces)."""
    try:
        if proto not in PROTOS:
            raise TraceError(f"--proto {proto!r}: tcp or udp")
        view = await read_view(client, cluster)
        return await asyncio.to_thread(trace_in, view, source, target, proto, timeout)
    except TraceError as err:
        failed = TraceResult(Endpoint("address", source, None, ""), target, proto, "", 0, 0, "unknown")
        failed.error = str(err)
        return failed


def proxy_mode(view: ClusterView) -> str:
    """What the node proxies program, seen in the first node's namespace: nftables, iptables or userspace."""
    for node in sorted(view.nodes):
        found = kernel.tables(view.node_netns(node))
        if "ip kube-proxy" in found:
            return "nftables"
        if "ip nat" in found:
            return "iptables"
        return "userspace"
    raise TraceError("the cluster has no nodes: `tinykube up --dataplane netns --nodes N` makes them")


def trace_in(view: ClusterView, source_text: str, target_text: str, proto: str, timeout: float) -> TraceResult:
    """The blocking part of `trace` (subprocesses in the sandbox's namespaces)."""
    mode = proxy_mode(view)
    source = find_source(view, source_text)
    target = find_target(view, source, target_text)
    sport = probe.pick_port()
    result = TraceResult(source, target_text, proto, target.destination, target.port, sport, mode)
    result.resolution = target.resolution
    assert source.netns is not None
    namespaces = list(dict.fromkeys([source.netns, *(view.node_netns(n) for n in sorted(view.nodes))]))
    target_ports = {b.port for b in target.backends}
    flow = kernel.Flow(
        source.ip,
        sport,
        proto,
        nodes=tuple(sorted(view.nodes.values())),
        endpoints=tuple(sorted({b.ip for b in target.backends})),
        target_port=next(iter(target_ports)) if len(target_ports) == 1 else None,
    )
    with _ONE_AT_A_TIME, kernel.armed(namespaces, flow) as state:  # a monitor shows every trace in its namespace
        answer = probe.probe(source.netns, target.destination, target.port, sport, proto, timeout)
        time.sleep(EVENTS_SETTLE)
        state.disarm()
    result.reply = answer.reply
    result.seen_client = answer.seen_client
    result.outcome = answer.outcome  # type: ignore[assignment]
    result.steps = steps(view, source, target, flow, state.output)
    result.dnat = find_dnat(view, target, result.steps)
    if result.dnat is not None:
        result.steps = [_name_dnat(step, result.dnat) for step in result.steps]
    result.snat = find_snat(view, source, target, result)
    if result.outcome == "timed out" and any(s.verdict in ("drop", "policy drop") for s in result.steps):
        result.outcome = "dropped"
    if source.kind == "external" and target.kind == "ClusterIP" and result.outcome != "answered":
        result.notes.append(
            "a ClusterIP is reachable only from inside the cluster (pods and nodes); from outside, use a NodePort "
            "or a LoadBalancer address"
        )
    if mode == "userspace":
        userspace(view, result)
    return result


def _ends(summary: str) -> tuple[str, str]:
    """("1.2.3.4:80", "5.6.7.8:9") from a packet summary "1.2.3.4:80 > 5.6.7.8:9 tcp syn"."""
    source, _, rest = summary.partition(" > ")
    return source, rest.split(" ", 1)[0]


def userspace(view: ClusterView, result: TraceResult) -> None:
    """In userspace mode the node proxy accepts the connection (a portal DNATs a virtual IP to its listener, or it
    listens on the NodePort itself) and opens its own to the endpoint it picks: say which listener, and that the
    endpoint sees the node's address."""
    portal = next((s for s in result.steps if s.chain == "portals" and "dnat" in s.rule), None)
    key = f"{result.destination} . {result.proto} . {result.port}"
    listener = f"{result.destination}:{result.port}"
    node = view.node_of_ip(result.destination)
    if portal is not None:
        node = portal.where
        listed = kernel.nft(portal.netns, "list", "map", "ip", "tinykube-userspace", "portals", check=False).stdout
        found = re.search(rf'{re.escape(key)}(?: comment "[^"]*")? : (\S+) \. (\d+)', listed)
        listener = f"{found[1]}:{found[2]}" if found else "its proxy port"
    result.listener = f"{listener} on {node}" if node else listener
    if portal is not None:
        said_portal = f"the portal DNATs the Service address to the userspace proxy's listener {result.listener}"
        result.steps = [
            dataclasses.replace(s, explain=said_portal) if s.chain == "portals" and "dnat" in s.rule else s
            for s in result.steps
        ]
    relay = next(
        (
            s
            for s in result.steps
            if s.direction == "request" and _ends(s.packet)[0].split(":")[0] in view.nodes.values()
        ),
        None,
    )
    said = f"userspace mode: the proxy's listener {result.listener} accepted the connection"
    if relay is not None:
        address = _ends(relay.packet)[0].split(":")[0]
        said += f" and opened its own to the endpoint {_ends(relay.packet)[1]} from {address}"
        relayed_by = view.node_of_ip(address)
        result.snat = Snat(
            True, "the userspace proxy connects to the endpoint itself, from the node's address", relayed_by, address
        )
        if result.dnat is not None:
            result.dnat = dataclasses.replace(result.dnat, chain=f"the userspace proxy on {relayed_by}")
    result.notes.append(said)


def where(view: ClusterView, source: Endpoint, netns: str) -> str:
    if netns == source.netns and source.kind != "node":
        return f"pod {source.name}" if source.kind == "pod" else source.name
    return netns.removeprefix(view.prefix)


def role(trip: nftrace.Trip, flow: kernel.Flow) -> str:
    """Which packet a trip is ("request", "relay", "reply", "relay-reply"): named by the trace-table chain that
    marked it, else guessed from its addresses."""
    for event in trip.events:
        if event.table.startswith(kernel.TABLE) and event.table != flow.table:
            return "other"  # another trace's packet (a trace run at the same time by another process)
        if event.table == flow.table and event.kind == "rule":
            found = kernel.role_of(event.chain)
            if found:
                return found
    first = trip.first
    if first.saddr == flow.saddr and first.sport == flow.sport:
        return "request"
    if first.saddr in flow.nodes and first.daddr in flow.endpoints and first.dport == flow.target_port:
        return "relay"
    return "reply"


def steps(view: ClusterView, source: Endpoint, target: Target, flow: kernel.Flow, output: dict[str, str]) -> list[Step]:
    """The events of the first packet of each kind in each namespace, in the order the packets crossed them: the
    client's packet (source, its node, the node addressed, the endpoint's node), a node's onward connection to the
    endpoint (after SNAT, or the userspace proxy's), then the answers the other way."""
    entry = view.node_of_ip(target.destination)
    endpoint_nodes = [b.node for b in target.backends if b.node]
    assert source.netns is not None
    order = [source.netns, *(view.node_netns(n) for n in (source.node, entry, *endpoint_nodes) if n)]
    order = list(dict.fromkeys([*order, *output]))
    trips: dict[str, dict[str, nftrace.Trip]] = {r: {} for r in kernel.ROLES}
    for netns in order:
        for trip in nftrace.parse(output.get(netns, "")):
            kind = role(trip, flow)
            if kind in trips:
                trips[kind].setdefault(netns, trip)
    request, relay = trips["request"], trips["relay"]
    # a node reached only after DNAT comes after the node that DNATed (its first packet already has an endpoint)
    req_order = sorted(
        [n for n in order if n in request],
        key=lambda n: (n != source.netns, request[n].first.daddr in flow.endpoints and n != source.netns),
    )
    relay_order = [n for n in order if n in relay]
    path = [
        *(("request", n, request[n]) for n in req_order),
        *(("request", n, relay[n]) for n in relay_order),
        *(("reply", n, trips["relay-reply"][n]) for n in reversed(relay_order) if n in trips["relay-reply"]),
        *(("reply", n, trips["reply"][n]) for n in reversed(req_order) if n in trips["reply"]),
        *(("reply", n, trips["reply"][n]) for n in order if n in trips["reply"] and n not in request),
    ]
    found: list[Step] = []
    for direction, netns, trip in path:
        found.extend(_trip_steps(view, source, netns, direction, trip))
    return found


def _trip_steps(view: ClusterView, source: Endpoint, netns: str, direction: str, trip: nftrace.Trip) -> list[Step]:
    out = []
    packet = nftrace.Packet()
    for event in trip.events:
        if event.packet is not None:
            packet = event.packet
            continue
        if event.table.startswith(kernel.TABLE):
            continue  # the trace table
        verdict = event.verdict if event.kind == "rule" else f"policy {event.verdict}"
        step = Step(
            netns=netns,
            where=where(view, source, netns),
            direction=direction,  # type: ignore[arg-type]
            packet_id=trip.id,
            family=event.family,
            table=event.table,
            chain=event.chain,
            rule=event.rule if event.kind == "rule" else "",
            verdict=verdict,
            packet=packet.summary(),
        )
        out.append(dataclasses.replace(step, explain=explain(step)))
    if not out and trip.events:
        out.append(
            Step(netns, where(view, source, netns), direction, trip.id, "", "", "", "", "no rules: passed through",  # type: ignore[arg-type]
                 trip.first.summary())
        )  # fmt: skip
    return out


def _name_dnat(step: Step, dnat: Dnat) -> Step:
    """The DNAT rule's explanation names the endpoint it chose (the nftables rule shows only the map)."""
    if step.direction != "request" or "dnat" not in step.rule.lower() or step.chain != dnat.chain:
        return step
    where = f" (pod {dnat.pod} on {dnat.node})" if dnat.pod else ""
    said = f"DNAT: the destination becomes the endpoint picked, {dnat.address}:{dnat.port}{where}"
    if "recent" in step.rule:  # iptables' KUBE-SEP-* rule records the client for session affinity as well
        said += "; session affinity (ClientIP): remembers this client, so its next connections come here too"
    return dataclasses.replace(step, explain=said)


def find_dnat(view: ClusterView, target: Target, steps_: list[Step]) -> Dnat | None:
    """Where a request packet's destination changed: the first DNAT (the address in a later `packet:` line)."""
    dest = f"{target.destination}:{target.port}"
    for step in steps_:
        if step.direction != "request" or not step.packet:
            continue
        shown = step.packet.split(" > ", 1)[1].split()[0] if " > " in step.packet else ""
        if shown and shown != dest:
            address, _, port = shown.rpartition(":")
            chain = next((s.chain for s in steps_ if s.direction == "request" and "dnat" in s.rule.lower()), "")
            backend = next((b for b in target.backends if (b.ip, b.port) == (address, int(port or 0))), None)
            pod = view.pod_by_ip(address)
            node = backend.node if backend else ((pod or {}).get("spec") or {}).get("nodeName")
            name = (
                backend.pod
                if backend
                else (f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}" if pod else None)
            )
            return Dnat(address, int(port or 0), node, name, chain)
    return None


def find_snat(view: ClusterView, source: Endpoint, target: Target, result: TraceResult) -> Snat | None:
    """Whether a node masqueraded the request, and the reason the rules give."""
    for step in result.steps:
        if step.direction == "request" and "masquerade" in step.rule.lower() and step.verdict == "accept":
            node = step.where
            reason = masquerade_reason(result.steps, source, target.kind)
            return Snat(True, reason, node, view.nodes.get(node))
    if result.dnat is None and result.outcome != "answered":
        return Snat(False, "the packet reached no endpoint, so nothing was NATed")
    if result.steps or result.outcome == "answered":
        return Snat(False, kept_reason(source, target.kind, target.traffic_policy))
    return None
