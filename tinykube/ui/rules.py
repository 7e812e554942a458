"""A node's real proxy rules, read from its namespace, with the lines of one Service marked.

The text is what `ip netns exec <node> nft list table ip kube-proxy` (nftables mode) or `iptables-save -t nat`
(iptables mode) prints — read-only. `highlight` marks the lines that name the Service (its `ns/name` comment, its
ClusterIP, LoadBalancer addresses, NodePorts), then, twice over, the chains those lines jump to and every line
of (or into) those chains: the Service's `service-*`/`KUBE-SVC-*` chain, then its endpoints' chains.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from tinykube.sandbox import netns

_NFT_CHAIN = re.compile(r"\b((?:service|local|external|endpoint|firewall|pick)-[A-Za-z0-9]+(?:-[^\s;{}]+)?)")
_IPT_CHAIN = re.compile(r"\b(KUBE-(?:SVC|SVL|SEP|EXT|FW|XLB)-[A-Z0-9]+)")
_BLOCK = re.compile(r"^\s*chain (\S+) \{")


@dataclass
class Rules:
    node: str
    command: list[str]
    lines: list[str] = field(default_factory=list)
    marked: list[bool] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "command": " ".join(self.command),
            "lines": [{"text": t, "hit": m} for t, m in zip(self.lines, self.marked, strict=True)],
            "error": self.error,
        }


def command_for(mode: str) -> list[str]:
    if mode == "iptables":
        return ["iptables-save", "-t", "nat"]
    return ["nft", "list", "table", "ip", "kube-proxy"]


async def read_rules(namespace: str, node: str, mode: str) -> Rules:
    """The node's rules as text (empty with an error for the userspace mode, which has no kernel rules)."""
    argv = command_for(mode)
    rules = Rules(node, ["ip", "netns", "exec", namespace, *argv])
    if mode == "userspace":
        rules.error = "the userspace proxy has no kernel rules: its listeners forward in the proxy process"
        return rules
    try:
        proc = await asyncio.create_subprocess_exec(
            *netns.exec_argv(namespace, argv), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 10)
    except (OSError, TimeoutError) as exc:
        rules.error = str(exc)
        return rules
    if proc.returncode != 0:
        rules.error = err.decode(errors="replace").strip() or f"exit status {proc.returncode}"
    rules.lines = out.decode(errors="replace").splitlines()
    rules.marked = [False] * len(rules.lines)
    return rules


def _needles(service: dict[str, Any]) -> list[re.Pattern[str]]:
    """What names the Service in a rule line."""
    meta, spec = service["metadata"], service.get("spec") or {}
    key = re.escape(f"{meta['namespace']}/{meta['name']}")
    found = [re.compile(rf"{key}(?=[:\s\"]|$)")]
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ips += [i["ip"] for i in ingress if i.get("ip")]
    ips += spec.get("externalIPs") or []
    found += [re.compile(rf"(?<![\d.]){re.escape(ip)}(?![\d])") for ip in ips]
    for port in spec.get("ports") or []:
        if port.get("nodePort"):
            node_port = port["nodePort"]
            found.append(re.compile(rf"(?:dport {node_port}\b|\. {node_port} :|(?<![\d.]){node_port} \. 0x)"))
    return found


def highlight(lines: list[str], service: dict[str, Any]) -> list[bool]:
    """Which lines belong to the Service (see the module's docstring)."""
    needles = _needles(service)
    marked = [any(n.search(line) for n in needles) for line in lines]
    blocks: list[str | None] = []  # the nftables chain each line is in
    current: str | None = None
    for line in lines:
        match = _BLOCK.match(line)
        if match:
            current = match.group(1)
        blocks.append(current)
        if line.strip() == "}":
            current = None
    for _ in range(2):  # the Service's chains, then its endpoints'
        chains: set[str] = set()
        for line, hit in zip(lines, marked, strict=True):
            if hit and not _BLOCK.match(line):
                chains.update(_NFT_CHAIN.findall(line))
                chains.update(_IPT_CHAIN.findall(line))
        if not chains:
            break
        for i, line in enumerate(lines):
            if marked[i]:
                continue
            in_chain = blocks[i] in chains
            names = any(line.startswith((f"-A {c} ", f":{c} ")) or f"-j {c}" in line for c in chains)
            marked[i] = in_chain or names
    return marked
