"""The one place where a process's components are put together with each other: a component gets its
collaborators here, at construction, and imports no other component (DESIGN.md "Layers"); `up` runs what is made here.

`NetnsDataplane` is the `netns` dataplane of `tinykube up`: the cluster's sandbox of namespaces, the nodes (a
`NetnsRuntime` each, `tinykube/node/netns_nodes.py`), a proxy per node (nftables by default) started once its node's
namespace is there, the sandbox's load balancer (LoadBalancer addresses routed to a node), and the cluster DNS
server made reachable from pods (a listener on the LAN, the address of the DNS server's mirror pod, which
`kube-system/kube-dns` selects and the proxy turns the kube-dns ClusterIP into). Everything lives in namespaces
named after the cluster; nothing is configured in the root namespace.

`loopback_proxy` is the simulated dataplane's one proxy, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from pathlib import Path

from tinykube.api.resources import builtin
from tinykube.client.informer import SharedInformers
from tinykube.client.rest import RestClient
from tinykube.dns.run import DnsService
from tinykube.node.runtime import RuntimeFactory
from tinykube.proxy import conntrack
from tinykube.proxy.agent import ProxyAgent
from tinykube.proxy.model import NodeConfig
from tinykube.proxy.modes import DEFAULT_MODE, make_proxier
from tinykube.sandbox import netns
from tinykube.sandbox.loadbalancer import SandboxLoadBalancer
from tinykube.sandbox.topology import LAN_GATEWAY, NodeNet, Sandbox

log = logging.getLogger(__name__)

SERVICES = builtin("", "v1", "services")
DNS_PORT = 53


class NetnsDataplane:
    def __init__(
        self,
        client: RestClient,
        informers: SharedInformers,
        cluster: str,
        service_cidr: str,
        cluster_cidr: str,
        log_dir: Path,
        domain: str,
        proxy_mode: str = DEFAULT_MODE,
    ) -> None:
        """`informers` are the cluster's shared ones: the runtimes and proxies read Services through them."""
        from tinykube.node.netns_nodes import NetnsNodes  # imported when asked for: `up`'s start-up time

        self.client = client
        self.informers = informers
        self.cluster_cidr = cluster_cidr
        self.tasks: list[asyncio.Task[None]] = []  # the proxies and the load balancer
        self.sandbox = Sandbox(cluster, service_cidr)
        self.proxy_mode = proxy_mode
        self.services = informers.informer(SERVICES)
        self.nodes = NetnsNodes(self.sandbox, self.services, log_dir, domain=domain)
        self.load_balancer = SandboxLoadBalancer(informers, self.sandbox)
        self.dns_ip = ""

    async def create(self) -> None:
        """Make the sandbox and learn the kube-dns ClusterIP pods' resolv.conf names."""
        await asyncio.to_thread(functools.partial(self.sandbox.create, adopt=True))  # what a killed `up` left
        self.tasks.append(asyncio.create_task(self.load_balancer.run(), name="sandbox load balancer"))
        self.informers.start()
        kube_dns = await self.client.get(SERVICES, "kube-system", "kube-dns")
        self.dns_ip = kube_dns["spec"]["clusterIP"]
        await self.services.wait_synced()

    def runtime_for(self, node: str, ip: str) -> RuntimeFactory:
        """The node agent's runtime factory (`NetnsNodes.runtime_for`); the node's proxy and its load balancer
        routes follow once the agent has made the node's namespace."""
        self.tasks.append(asyncio.create_task(self._serve_node(node), name=f"proxy {node}"))
        return self.nodes.runtime_for(node, ip, dns_ip=self.dns_ip)

    async def _serve_node(self, name: str) -> None:
        """What the sandbox gives a node once its namespace is there: a say in the load balancer's routes, and the
        node's proxy."""
        node = await self.nodes.joined(name)
        self.load_balancer.nodes_changed()
        try:
            await self._proxy(node).run()
        except Exception:  # the node's agent goes on without it; say so rather than end silently in a task
            log.exception("proxy of node %s stopped", name)
            raise

    def _proxy(self, node: NodeNet) -> ProxyAgent:
        """The node's proxy, programming its namespace and serving its ports there."""
        config = NodeConfig(node.name, [node.ip], self.cluster_cidr, [self.sandbox.service_cidr])

        def bind(host: str, port: int) -> socket.socket:
            sock = netns.socket_in(node.netns, socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            return sock

        proxier = make_proxier(self.proxy_mode, config, node.netns, bind)
        kernel = self.proxy_mode != "userspace"  # the userspace mode's flows end at its own sockets
        return ProxyAgent(
            self.client,
            node.name,
            proxier,
            bind=bind,
            informers=self.informers,
            flush_conntrack=functools.partial(conntrack.flush, node.netns) if kernel else None,
        )

    async def serve_dns(self, dns: DnsService) -> None:
        """DNS on the LAN gateway address, port 53: the address of the DNS server's pod (`up` gives it to node-1),
        which the kube-dns Service selects, so the proxy turns the kube-dns ClusterIP into it."""
        udp = netns.socket_in(self.sandbox.lan, socket.AF_INET, socket.SOCK_DGRAM)
        tcp = netns.socket_in(self.sandbox.lan, socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        udp.bind((LAN_GATEWAY, DNS_PORT))
        tcp.bind((LAN_GATEWAY, DNS_PORT))
        await dns.server.listen(udp, tcp)

    async def destroy(self) -> list[str]:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        return await asyncio.to_thread(self.sandbox.destroy)


def loopback_proxy(
    client: RestClient, informers: SharedInformers, cluster_cidr: str, service_cidrs: list[str]
) -> ProxyAgent:
    """The simulated dataplane's one proxy (userspace): NodePorts on 127.0.0.1, for every simulated node."""

    def bind(host: str, port: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))  # loopback whatever was asked: the host is no node of the sandbox
        return sock

    config = NodeConfig("", ["127.0.0.1"], cluster_cidr, service_cidrs)
    proxier = make_proxier("userspace", config, None, bind)
    return ProxyAgent(client, "", proxier, informers=informers)
