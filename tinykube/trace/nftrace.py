"""Parsing `nft monitor trace` output: one event per line, grouped into packets by trace id.

    trace id 45ba6bce ip kube-proxy nat-prerouting packet: iif "eth0" … ip saddr 172.20.0.250 … tcp dport 30569 …
    trace id 45ba6bce ip kube-proxy services rule ip daddr @nodeport-ips … vmap @service-nodeports (verdict goto x)
    trace id 45ba6bce ip kube-proxy filter-forward policy accept meta mark 0x00004000

A trace id names one packet for one trip through one namespace's hooks (the kernel reuses ids, so a packet is a
run of consecutive lines with the same id); `packet:` lines show it as it entered a base chain. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EVENT = re.compile(r"^trace id (?P<id>[0-9a-f]+) (?P<family>\w+) (?P<table>\S+) (?P<chain>\S+) (?P<rest>.*)$")
_COUNTER = re.compile(r"\s*\bcounter packets \d+ bytes \d+")
_VERDICT = re.compile(r"^(?P<rule>.*) \(verdict (?P<verdict>[^()]*)\)\s*$")


@dataclass(frozen=True, slots=True)
class Packet:
    """The header fields of a `packet:` line that matter for a trace."""

    saddr: str = ""
    daddr: str = ""
    proto: str = ""  # "tcp", "udp", "icmp"
    sport: int | None = None
    dport: int | None = None
    flags: str = ""  # tcp flags as nft prints them ("syn", "0x12", "ack") or the icmp type
    iif: str = ""
    oif: str = ""

    def summary(self) -> str:
        source = f"{self.saddr}:{self.sport}" if self.sport is not None else self.saddr
        dest = f"{self.daddr}:{self.dport}" if self.dport is not None else self.daddr
        flags = (
            f" {tcp_flags(self.flags)}" if self.proto == "tcp" and self.flags else f" {self.flags}" * bool(self.flags)
        )
        return f"{source} > {dest} {self.proto}{flags}".strip()


@dataclass(frozen=True, slots=True)
class Event:
    """One line: a packet entering a chain, a rule it matched (with the verdict), or a chain's policy."""

    id: str
    family: str
    table: str
    chain: str
    kind: str  # "packet" | "rule" | "policy"
    rule: str = ""  # the rule text (kind "rule"); the policy's extra words (kind "policy")
    verdict: str = ""  # "jump services", "accept", "continue" …; for a policy, "accept"/"drop"
    packet: Packet | None = None


@dataclass
class Trip:
    """One packet's trip through one namespace: its events in order."""

    id: str
    events: list[Event] = field(default_factory=list)

    @property
    def first(self) -> Packet:
        return next((e.packet for e in self.events if e.packet is not None), Packet())

    @property
    def last(self) -> Packet:
        return next((e.packet for e in reversed(self.events) if e.packet is not None), Packet())


_TCP_FLAG_BITS = {0x01: "fin", 0x02: "syn", 0x04: "rst", 0x08: "psh", 0x10: "ack", 0x20: "urg"}


def tcp_flags(text: str) -> str:
    """nft's `syn`, `0x12`, `syn | ack` as a readable set: "syn", "syn,ack"."""
    text = text.strip()
    if text.startswith("0x"):
        value = int(text, 16)
        return ",".join(name for bit, name in _TCP_FLAG_BITS.items() if value & bit) or text
    return ",".join(part.strip() for part in text.split("|"))


def parse_packet(text: str) -> Packet:
    """The fields of a `packet:` line (what follows `packet:`)."""
    tokens = text.split()
    fields: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        head = tokens[i]
        if head in ("iif", "oif") and i + 1 < len(tokens):
            fields[head] = tokens[i + 1].strip('"')
            i += 2
        elif head in ("ip", "tcp", "udp", "icmp", "sctp") and i + 2 < len(tokens):
            key = tokens[i + 1]
            value = tokens[i + 2]
            if value == "==" and i + 3 < len(tokens):  # "tcp flags == syn"
                value = tokens[i + 3]
                i += 1
            if head == "ip" and key == "protocol":
                fields.setdefault("proto", value)
            elif head == "ip":
                fields[key] = value
            else:
                fields["proto"] = head
                fields[f"l4{key}"] = value
            i += 3
        else:
            i += 1
    return Packet(
        saddr=fields.get("saddr", ""),
        daddr=fields.get("daddr", ""),
        proto=fields.get("proto", ""),
        sport=_number(fields.get("l4sport")),
        dport=_number(fields.get("l4dport")),
        flags=fields.get("l4flags", fields.get("l4type", "")),
        iif=fields.get("iif", ""),
        oif=fields.get("oif", ""),
    )


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def clean_rule(text: str) -> str:
    """A rule's text without its counter (iptables-nft prints one in every rule) and doubled spaces."""
    return " ".join(_COUNTER.sub("", text).split())


def parse_line(line: str) -> Event | None:
    """One `nft monitor trace` line; None for anything else (blank lines, nft's notices)."""
    found = _EVENT.match(line.rstrip())
    if not found:
        return None
    ident, family, table, chain, rest = found.group("id", "family", "table", "chain", "rest")
    if rest.startswith("packet: "):
        return Event(ident, family, table, chain, "packet", packet=parse_packet(rest[len("packet: ") :]))
    if rest.startswith("unknown rule"):  # the rule was deleted before nft could read it back
        verdict = _VERDICT.match(rest)
        text = verdict["rule"] if verdict else rest
        return Event(ident, family, table, chain, "rule", text.strip(), verdict["verdict"] if verdict else "")
    if rest.startswith("rule "):
        body = rest[len("rule ") :]
        verdict = _VERDICT.match(body)
        if verdict:
            rule = clean_rule(verdict["rule"])
            return Event(ident, family, table, chain, "rule", rule, verdict["verdict"].strip())
        return Event(ident, family, table, chain, "rule", clean_rule(body), "")
    if rest.startswith("policy "):
        words = rest[len("policy ") :].split(maxsplit=1)
        return Event(ident, family, table, chain, "policy", words[1].strip() if len(words) > 1 else "", words[0])
    return None


def parse(text: str, marker: str = "tinykube-trace") -> list[Trip]:
    """The trips in one namespace's monitor output, in order. The kernel reuses trace ids, so the same id starts a
    new trip when a packet enters a `marker`… table (a trace table, whose chains come first in every hook that
    marks a packet) after events in other tables, or enters a base chain it has already entered."""
    trips: list[Trip] = []
    current: dict[str, Trip] = {}
    for line in text.splitlines():
        event = parse_line(line)
        if event is None:
            continue
        trip = current.get(event.id)
        if trip is not None and event.kind == "packet" and trip.events and _restarts(trip, event, marker):
            trip = None
        if trip is None:
            trip = Trip(event.id)
            current[event.id] = trip
            trips.append(trip)
        trip.events.append(event)
    return trips


def _restarts(trip: Trip, event: Event, marker: str) -> bool:
    if event.table.startswith(marker) and not trip.events[-1].table.startswith(marker):
        return True
    return any(e.kind == "packet" and (e.table, e.chain) == (event.table, event.chain) for e in trip.events)
