"""The nodes of a netns sandbox, as their agents see them: a node's namespace is made once its agent knows the node's
pod CIDR (the routes to its pods need it), and then the node's `NetnsRuntime` runs its pods there.

What else a node of the sandbox gets (its proxy, load balancer routes to it) is not the node agent's to start: it
waits for `joined(node)`, the node's network once its namespace is there (see `tinykube/wiring.py`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tinykube.client.informer import Informer, Object
from tinykube.node.netns_runtime import NetnsRuntime
from tinykube.node.runtime import Runtime, RuntimeFactory, RuntimeHost
from tinykube.sandbox.topology import NodeNet, Sandbox


class NetnsNodes:
    def __init__(self, sandbox: Sandbox, services: Informer, log_dir: Path, *, domain: str) -> None:
        """`services`: the cluster's shared Service informer, the source of pods' service variables."""
        self.sandbox = sandbox
        self.services = services
        self.log_dir = log_dir
        self.domain = domain
        self._joined: dict[str, asyncio.Future[NodeNet]] = {}

    def runtime_for(self, node: str, ip: str, *, dns_ip: str) -> RuntimeFactory:
        """The node agent's runtime factory: it makes the node's namespace (with the pod CIDR it is called with),
        then the node's runtime, whose pods resolve names at `dns_ip`."""
        joined = self._future(node)

        def make(pod_cidr: str, host: RuntimeHost) -> Runtime:
            node_net = self.sandbox.add_node(node, ip, pod_cidr)
            joined.set_result(node_net)
            return NetnsRuntime(
                node_net,
                self.log_dir / node,
                self._services_for,
                host=host,
                dns_ip=dns_ip,
                cluster_domain=self.domain,
            )

        return make

    async def joined(self, node: str) -> NodeNet:
        """The node's network, once its namespace is made."""
        return await asyncio.shield(self._future(node))

    def _future(self, node: str) -> asyncio.Future[NodeNet]:
        if node not in self._joined:
            self._joined[node] = asyncio.get_running_loop().create_future()
        return self._joined[node]

    def _services_for(self, namespace: str) -> list[Object]:
        """The Services a pod of `namespace` may get variables from: its namespace's and `default/kubernetes`
        (looked up by index: a pod start costs its namespace's Services, not the cluster's)."""
        found = self.services.store.by_index("namespace", namespace)
        master = self.services.store.get("default/kubernetes")
        if master is not None and namespace != "default":
            found.append(master)
        return found
