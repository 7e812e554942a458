"""Stale UDP conntrack entries, cleared as upstream kube-proxy clears them.

A UDP "connection" lives in conntrack as long as packets keep coming, and its DNAT was decided by its first packet:
a client that keeps sending to a Service whose endpoint went away would go on sending to the dead address, and
one that sent while the Service had no endpoints would keep its rejected flow. So after each sync, for UDP
service ports only (TCP notices by itself): the entries from a Service IP or NodePort to an endpoint that is no
longer used are deleted, and so are all entries to a port that had no usable endpoint before and has some now,
or that is gone. `conntrack -D` runs inside the node's network namespace.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from tinykube.proxy.model import ServicePort, usable
from tinykube.sandbox.netns import exec_argv

log = logging.getLogger(__name__)

CONNTRACK = shutil.which("conntrack") or "/usr/sbin/conntrack"


@dataclass(frozen=True, slots=True, order=True)
class Flush:
    """The UDP entries whose original destination is `destination` (an IP) or `node_port`, and whose reply comes
    from `endpoint` ("" = any)."""

    destination: str = ""
    node_port: int = 0
    endpoint: str = ""

    def argv(self) -> list[str]:
        args = ["-D", "-p", "udp"]
        args += ["--orig-dst", self.destination] if self.destination else ["--orig-port-dst", str(self.node_port)]
        return args + (["--reply-src", self.endpoint] if self.endpoint else [])


def stale_flows(old: Iterable[ServicePort], new: Iterable[ServicePort]) -> list[Flush]:
    """What to delete after the proxy went from programming `old` to `new` (pure)."""
    before = {p.key: p for p in old if p.protocol == "udp"}
    flushes: set[Flush] = set()
    for port in new:
        if port.protocol != "udp":
            continue
        previous = before.pop(port.key, None)
        now = {(e.ip, e.port) for e in usable(port.endpoints)}
        was = {(e.ip, e.port) for e in usable(previous.endpoints)} if previous else set()
        if previous is not None and not was and now:  # flows rejected while there was no endpoint
            flushes.update(_to(port))
        for ip, _port in was - now:  # a flow's reply comes from the endpoint's address, whatever its port
            flushes.update(_to(port, ip))
    for port in before.values():  # Service ports that are gone
        flushes.update(_to(port))
    return sorted(flushes)


def _to(port: ServicePort, endpoint: str = "") -> list[Flush]:
    found = [Flush(destination=ip, endpoint=endpoint) for ip in (*port.cluster_ips, *port.external_ips)]
    found += [Flush(destination=ip, endpoint=endpoint) for ip in port.load_balancer_ips]
    if port.node_port:
        found.append(Flush(node_port=port.node_port, endpoint=endpoint))
    return found


def flush(netns: str, flushes: Iterable[Flush]) -> None:
    """Delete the entries in `netns`; "no entry matched" is no failure, and a failure is only logged (the flows
    then age out, as they would without this)."""
    if not shutil.which(CONNTRACK):
        log.warning("conntrack is not installed: stale UDP flows age out instead of being cleared")
        return
    for item in flushes:
        done = subprocess.run(exec_argv(netns, [CONNTRACK, *item.argv()]), capture_output=True, text=True, check=False)
        if done.returncode != 0 and "0 flow entries have been deleted" not in done.stderr:
            log.warning("conntrack %s in %s: %s", " ".join(item.argv()), netns, done.stderr.strip())
