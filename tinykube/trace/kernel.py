"""Switching the kernel's packet tracing on for one flow, and off again.

In each namespace a trace covers, a table `inet tinykube-trace` sets `meta nftrace set 1` on exactly that flow:

- at prerouting and output, priority raw (-300, before conntrack and every kube-proxy chain): the flow's first
  packet, by source address, protocol and the fixed client port; and — where a node masqueraded it on to an
  endpoint on another node, or the userspace proxy opened its own connection — that onward packet (from a node
  address to one of the Service's endpoints on its target port);
- at priority -150 (after conntrack, before DNAT): the first answer, by the connection's *original* tuple (the
  answer's own addresses are NATed), and an ICMP error sent back to the client (a REJECT).

Only the first packet of each direction is traced (a TCP SYN, the SYN-ACK or RST), so the output stays short.
`nft monitor trace` runs in each namespace while the probe connects; `disarm` deletes the tables and stops the
monitors whatever happened. Every `nft` here runs through `ip netns exec <sandbox namespace>`: nothing is done in
the root namespace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tinykube.proxy.nftables import NFT
from tinykube.sandbox.netns import exec_argv
from tinykube.sandbox.netns import pids as netns_pids

TABLE = "tinykube-trace"  # the prefix: each trace's table is `tinykube-trace-<client port>`
FAMILY = "inet"
MONITOR_SETTLE = 0.3  # seconds for `nft monitor` to subscribe before the probe sends


@dataclass(frozen=True, slots=True)
class Flow:
    """The flow to trace: the client's address and fixed port, and where a masqueraded copy of it may go."""

    saddr: str
    sport: int
    proto: str  # "tcp" | "udp"
    nodes: tuple[str, ...] = ()  # node addresses a masqueraded copy may come from
    endpoints: tuple[str, ...] = ()  # the Service's endpoint addresses
    target_port: int | None = None  # the endpoints' port

    @property
    def table(self) -> str:
        """This trace's own table (two traces at once, from two processes, must not touch each other's)."""
        return f"{TABLE}-{self.sport}"


ROLES = ("request", "relay", "reply", "relay-reply")  # chain name prefixes: which kind of packet a chain marks


def ruleset(flow: Flow) -> str:
    """The `nft -f` script that creates the trace table for `flow`. Each kind of packet is marked in chains of its
    own (`request-*`: the client's packet; `relay-*`: a node's onward connection to an endpoint, after SNAT or from
    the userspace proxy; `reply-*`, `relay-reply-*`: their answers), so a trace tells them apart by chain name."""
    p = flow.proto
    first = " tcp flags & (syn | ack) == syn" if p == "tcp" else ""
    answer = " tcp flags & (syn | rst) != 0" if p == "tcp" else ""
    mark = "meta nftrace set 1"
    rules: dict[str, list[str]] = {
        "request": [f"ip saddr {flow.saddr} {p} sport {flow.sport}{first} {mark}"],
        "reply": [
            f"meta l4proto {p} ct direction reply ct original ip saddr {flow.saddr} "
            f"ct original proto-src {flow.sport}{answer} {mark}",
            f"ip daddr {flow.saddr} icmp type destination-unreachable {mark}",
        ],
    }
    sets: list[str] = []
    if flow.nodes and flow.endpoints and flow.target_port:
        sets = [
            f"set nodes {{ type ipv4_addr; elements = {{ {', '.join(flow.nodes)} }}; }}",
            f"set endpoints {{ type ipv4_addr; elements = {{ {', '.join(flow.endpoints)} }}; }}",
        ]
        rules["relay"] = [f"ip saddr @nodes ip daddr @endpoints {p} dport {flow.target_port}{first} {mark}"]
        rules["relay-reply"] = [
            f"meta l4proto {p} ct direction reply ct original ip saddr @nodes ct original ip daddr @endpoints "
            f"ct original proto-dst {flow.target_port}{answer} {mark}"
        ]
    lines = [f"table {FAMILY} {flow.table} {{", *(f"  {s}" for s in sets)]
    for role in ROLES:
        priority = "-150" if role.endswith("reply") else "raw"
        for hook in ("prerouting", "output"):
            if role not in rules:
                continue
            lines.append(f"  chain {role}-{hook} {{")
            lines.append(f"    type filter hook {hook} priority {priority}; policy accept;")
            lines.extend(f"    {rule}" for rule in rules[role])
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def role_of(chain: str) -> str | None:
    """The kind of packet a trace-table chain marks ("request", "relay", "reply", "relay-reply")."""
    role = chain.rsplit("-", 1)[0]
    return role if role in ROLES else None


def nft(netns: str, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`nft args…` inside a sandbox namespace (never the root one)."""
    done = subprocess.run(
        exec_argv(netns, [NFT, *args]), input=stdin, capture_output=True, text=True, check=False, timeout=30
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"nft {' '.join(args)} in {netns}: {done.stderr.strip()}")
    return done


def trace_tables(netns: str) -> list[str]:
    """The trace tables in `netns` (any trace's)."""
    return [t.split()[1] for t in tables(netns) if t.split()[0] == FAMILY and t.split()[1].startswith(TABLE)]


def monitors(netns: str) -> list[int]:
    """`nft monitor` processes running in `netns`."""
    found = []
    for pid in netns_pids(netns):
        with contextlib.suppress(OSError):
            if b"\0monitor\0" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def remove_leftovers(netns: str) -> list[str]:
    """Trace tables a killed trace left behind: only when no trace is running in `netns` (no monitor there)."""
    left = trace_tables(netns)
    if left and not monitors(netns):
        for table in left:
            nft(netns, "delete", "table", FAMILY, table, check=False)
        return left
    return []


def tables(netns: str) -> list[str]:
    """`family name` of every nft table in `netns` (iptables-nft's tables included)."""
    listed = nft(netns, "list", "tables", check=False).stdout
    return [line.split(maxsplit=1)[1] for line in listed.splitlines() if line.startswith("table ")]


@dataclass
class Armed:
    """The trace tables and monitors running for one trace; `disarm()` removes them (idempotent)."""

    namespaces: list[str]
    table: str
    monitors: dict[str, subprocess.Popen[str]] = field(default_factory=dict)
    tabled: list[str] = field(default_factory=list)
    output: dict[str, str] = field(default_factory=dict)

    def stop_monitors(self) -> dict[str, str]:
        """Stop every monitor and collect what it printed (by namespace)."""
        for netns, proc in list(self.monitors.items()):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                out, _ = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            self.output[netns] = out or ""
            del self.monitors[netns]
        return self.output

    def disarm(self) -> None:
        """Delete the trace tables first (no more events), then stop the monitors."""
        for netns in list(self.tabled):
            if os.path.exists(f"/run/netns/{netns}"):
                nft(netns, "delete", "table", FAMILY, self.table, check=False)
            self.tabled.remove(netns)
        self.stop_monitors()


def arm(namespaces: Sequence[str], flow: Flow) -> Armed:
    """Start a monitor and create the trace table in each namespace; on any failure, undo what was done."""
    armed = Armed(list(namespaces), flow.table)
    script = ruleset(flow)
    try:
        # the tables first: `nft monitor` reads the rules it will name once, when it starts
        for netns in armed.namespaces:
            remove_leftovers(netns)
            armed.tabled.append(netns)
            nft(netns, "-f", "-", stdin=script)
        for netns in armed.namespaces:
            proc = subprocess.Popen(
                exec_argv(netns, [NFT, "monitor", "trace"]),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            armed.monitors[netns] = proc
        time.sleep(MONITOR_SETTLE)
    except BaseException:
        armed.disarm()
        raise
    return armed


@contextlib.contextmanager
def armed(namespaces: Sequence[str], flow: Flow) -> Iterator[Armed]:
    """Tracing on for `flow` in `namespaces` for the block; off (tables deleted, monitors stopped) after it."""
    state = arm(namespaces, flow)
    try:
        yield state
    finally:
        state.disarm()
