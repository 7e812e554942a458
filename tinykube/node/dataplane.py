"""The `netns` dataplane of `tinykube up`: the cluster's sandbox of namespaces, a `NetnsRuntime` and a proxy
(nftables by default) per node, the sandbox's load balancer (LoadBalancer addresses routed to a node), and the
cluster DNS server made reachable from pods (a listener on the LAN, published as `kube-system/kube-dns`'s endpoint,
which the proxy turns the kube-dns ClusterIP into).

Everything lives in namespaces named after the cluster; nothing is configured in the root namespace.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from pathlib import Path
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.client.informer import Object, SharedInformers
from tinykube.client.rest import RestClient
from tinykube.dns.run import DnsService
from tinykube.node import netns
from tinykube.node.loadbalancer import SandboxLoadBalancer
from tinykube.node.netns_runtime import NetnsRuntime
from tinykube.node.runtime import Runtime, RuntimeFactory, RuntimeHost
from tinykube.node.sandbox import LAN_GATEWAY, NodeNet, Sandbox
from tinykube.proxy import conntrack
from tinykube.proxy.agent import ProxyAgent
from tinykube.proxy.model import NodeConfig
from tinykube.proxy.modes import DEFAULT_MODE, make_proxier

log = logging.getLogger(__name__)

SERVICES, ENDPOINTS = builtin("", "v1", "services"), builtin("", "v1", "endpoints")
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
        self.client = client
        self.informers = informers
        self.cluster_cidr = cluster_cidr
        self.tasks: list[asyncio.Task[None]] = []  # the proxies and the load balancer
        self.sandbox = Sandbox(cluster, service_cidr)
        self.log_dir = log_dir
        self.domain = domain
        self.proxy_mode = proxy_mode
        self.services = informers.informer(SERVICES)
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
        """The node agent's runtime factory: the node's namespace is made once its pod CIDR is known."""

        def make(pod_cidr: str, host: RuntimeHost) -> Runtime:
            node_net = self.sandbox.add_node(node, ip, pod_cidr)
            self._start_proxy(node_net)
            self.load_balancer.nodes_changed()
            return NetnsRuntime(
                node_net,
                self.log_dir / node,
                self._services_for,
                host=host,
                dns_ip=self.dns_ip,
                cluster_domain=self.domain,
            )

        return make

    def _services_for(self, namespace: str) -> list[Object]:
        """The Services a pod of `namespace` may get variables from: its namespace's and `default/kubernetes`
        (looked up by index: a pod start costs its namespace's Services, not the cluster's)."""
        found = self.services.store.by_index("namespace", namespace)
        master = self.services.store.get("default/kubernetes")
        if master is not None and namespace != "default":
            found.append(master)
        return found

    def _start_proxy(self, node: NodeNet) -> None:
        """The node's proxy, programming its namespace and serving its ports there."""
        config = NodeConfig(node.name, [node.ip], self.cluster_cidr, [self.sandbox.service_cidr])

        def bind(host: str, port: int) -> socket.socket:
            sock = netns.socket_in(node.netns, socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            return sock

        proxier = make_proxier(self.proxy_mode, config, node.netns, bind)
        kernel = self.proxy_mode != "userspace"  # the userspace mode's flows end at its own sockets
        agent = ProxyAgent(
            self.client,
            node.name,
            proxier,
            bind=bind,
            informers=self.informers,
            flush_conntrack=functools.partial(conntrack.flush, node.netns) if kernel else None,
        )
        self.tasks.append(asyncio.create_task(agent.run(), name=f"proxy {node.name}"))

    async def serve_dns(self, dns: DnsService) -> None:
        """DNS on the LAN gateway address, port 53, and that address as kube-dns's endpoint."""
        udp = netns.socket_in(self.sandbox.lan, socket.AF_INET, socket.SOCK_DGRAM)
        tcp = netns.socket_in(self.sandbox.lan, socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        udp.bind((LAN_GATEWAY, DNS_PORT))
        tcp.bind((LAN_GATEWAY, DNS_PORT))
        await dns.server.listen(udp, tcp)
        await self._publish_dns_endpoints()

    async def _publish_dns_endpoints(self) -> None:
        """kube-dns is selectorless (the DNS server is no pod): its Endpoints are ours to write; the mirroring
        controller makes the EndpointSlice the proxy reads."""
        endpoints: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "subsets": [
                {
                    "addresses": [{"ip": LAN_GATEWAY}],
                    "ports": [
                        {"name": "dns", "port": DNS_PORT, "protocol": "UDP"},
                        {"name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP"},
                    ],
                }
            ],
        }
        try:
            await self.client.create(ENDPOINTS, "kube-system", endpoints)
        except errors.AlreadyExists:
            current = await self.client.get(ENDPOINTS, "kube-system", "kube-dns")
            endpoints["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await self.client.update(ENDPOINTS, "kube-system", endpoints)

    async def destroy(self) -> list[str]:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        return await asyncio.to_thread(self.sandbox.destroy)
