"""A netns pod's sandbox, as a CRI runtime's RunPodSandbox makes it: a network namespace attached to its node's
(a veth, the pod's address, the node's route to it) with the pod's `resolv.conf` and `hosts`. A `hostNetwork` pod
has none of its own: it runs in its node's namespace, with the node's address. The namespaces themselves are made
by `tinykube.sandbox.topology`; this is what one node's runtime does with them.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tinykube.node import adoption, podfiles
from tinykube.node.runtime import host_network
from tinykube.sandbox import netns, topology

Object = dict[str, Any]


class PodSandboxes:
    """The sandboxes of one node's pods; `dns_ip` and `cluster_domain` are what their `resolv.conf` names."""

    def __init__(self, node: topology.NodeNet, *, dns_ip: str, cluster_domain: str) -> None:
        self.node = node
        self.dns_ip = dns_ip
        self.cluster_domain = cluster_domain

    def net(self, key: str, pod: Object, ip: str) -> topology.PodNet:
        """The pod's network: its own namespace, or the node's for a `hostNetwork` pod."""
        return topology.PodNet(self.node.netns, "", self.node.ip) if host_network(pod) else self.node.pod(key, ip)

    def own(self, net: topology.PodNet) -> bool:
        """Whether the network is a pod's own (not its node's)."""
        return net.netns != self.node.netns

    def with_addresses(self, pod: Object, ip: str) -> Object:
        """The pod as started, with its IPs filled in (env vars and the downward API see them)."""
        status = {**(pod.get("status") or {}), "podIP": ip, "podIPs": [{"ip": ip}]}
        status.update(hostIP=self.node.ip, hostIPs=[{"ip": self.node.ip}])
        return {**pod, "status": status}

    async def intact(self, net: topology.PodNet) -> bool:
        """Whether an earlier agent left the pod's own namespace whole (with its address, and its veth on the node)."""
        return self.own(net) and await asyncio.to_thread(adoption.plumbed, self.node, net)

    async def make(self, pod: Object, net: topology.PodNet, ip: str) -> None:
        """Make the pod's namespace afresh (what an earlier agent left of it, unadoptable, removed first)."""
        if not self.own(net):
            return
        if netns.exists(net.netns) or (netns.NETNS_ETC / net.netns).exists():  # left, but not adoptable
            await asyncio.to_thread(topology.detach_pod, self.node, net)
        resolv = podfiles.resolv_conf(pod, self.dns_ip, self.cluster_domain, _host_resolv())
        hosts = podfiles.hosts_file(pod, [ip], self.cluster_domain)
        try:
            await asyncio.to_thread(topology.attach_pod, self.node, net, resolv, hosts)
        except BaseException:
            await asyncio.to_thread(topology.detach_pod, self.node, net)
            raise

    async def remove(self, net: topology.PodNet) -> None:
        """Remove the pod's namespace and veth (a `hostNetwork` pod has none: the node's stay)."""
        if self.own(net):
            await asyncio.to_thread(topology.detach_pod, self.node, net)

    async def kill_all(self, net: topology.PodNet, sig: signal.Signals) -> None:
        """Signal whatever still runs in the pod's own namespace (a process that left its container's group)."""
        if self.own(net):  # the node's own namespace holds more than this pod
            await asyncio.to_thread(netns.kill_all, net.netns, sig)

    async def prune(self, keep: Iterable[str]) -> list[str]:
        """Remove the node's pod namespaces but those of the pods `keep` (keys), with whatever runs there; their veths
        (and the node's routes to them) go with them. Returns the namespaces removed."""
        kept = {self.node.pod(key, "").netns for key in keep}
        left = [name for name in netns.list_netns(f"{self.node.netns}.") if name not in kept]
        for name in left:
            await asyncio.to_thread(netns.delete, name)
        return left

    async def dial(self, net: topology.PodNet, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to `localhost:port` inside the pod's network namespace, as a runtime's port-forward."""
        sock = await asyncio.to_thread(netns.socket_in, net.netns)
        try:
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        except OSError as err:
            sock.close()
            why = os.strerror(err.errno).lower() if err.errno else str(err)
            raise OSError(
                f'failed to execute portforward in network namespace "{netns.NETNS_RUN / net.netns}": failed to '
                f'connect to localhost:{port} inside namespace "{net.netns}", IPv4: dial tcp4 127.0.0.1:{port}: '
                f"connect: {why}"
            ) from None
        return await asyncio.open_connection(sock=sock)


def _host_resolv() -> str:
    """The node's resolver configuration (a `dnsPolicy: Default` pod's), the host's own."""
    try:
        return Path("/etc/resolv.conf").read_text()
    except OSError:
        return ""
