"""Node IPAM (upstream's range allocator, `--allocate-node-cidrs`): each Node gets a pod CIDR, a /24 of
`--cluster-cidr` by default, in `spec.podCIDR` and `spec.podCIDRs`.

What is taken is read from the Nodes themselves (as upstream, no state of its own): a restart re-learns it.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.defaults import CLUSTER_CIDR
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

Object = dict[str, Any]
NODES = builtin("", "v1", "nodes")
NODE_CIDR_MASK = 24  # upstream's --node-cidr-mask-size for IPv4
COMPONENT = "node-ipam-controller"


class CidrAllocator:
    """The /24s of the cluster CIDR, handed out lowest first."""

    def __init__(self, cluster_cidr: str, mask: int = NODE_CIDR_MASK) -> None:
        self.network = ipaddress.ip_network(cluster_cidr)
        if mask < self.network.prefixlen:
            raise ValueError(f"--cluster-cidr {cluster_cidr} is smaller than one node's /{mask}")
        self.mask = mask
        self.used: dict[str, str] = {}  # CIDR -> node

    @property
    def capacity(self) -> int:
        """How many nodes get a range."""
        return int(2 ** (self.mask - self.network.prefixlen))

    def occupy(self, cidr: str, node: str) -> None:
        self.used[cidr] = node

    def release(self, node: str) -> None:
        for cidr in [c for c, holder in self.used.items() if holder == node]:
            del self.used[cidr]

    def allocate(self, node: str) -> str | None:
        """The node's CIDR: the one it holds (a second sync before our patch shows in the cache gets the same),
        else the lowest free one."""
        for cidr, holder in self.used.items():
            if holder == node:
                return cidr
        for subnet in self.network.subnets(new_prefix=self.mask):
            if str(subnet) not in self.used:
                self.used[str(subnet)] = node
                return str(subnet)
        return None


class NodeIpamController:
    def __init__(self, ctx: ControllerContext, cluster_cidr: str = CLUSTER_CIDR) -> None:
        self.ctx = ctx
        self.nodes = ctx.informers.informer(NODES)
        self.allocator = CidrAllocator(cluster_cidr)
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.nodes.add_handler(on_add=self._seen, on_update=lambda _old, new: self._seen(new), on_delete=self._deleted)
        # one worker: allocation is a read-modify of `used`
        await run_controller(self.ctx.informers, [self.nodes], Loop(self.queue, self.sync, workers=1))

    def _seen(self, node: Object) -> None:
        cidr = (node.get("spec") or {}).get("podCIDR")
        if cidr:
            self.allocator.occupy(cidr, node["metadata"]["name"])
        else:
            self.queue.add(object_key(node))

    def _deleted(self, node: Object) -> None:
        self.allocator.release(node["metadata"]["name"])

    async def sync(self, key: str) -> None:
        node = self.nodes.store.get(key)
        if node is None or (node.get("spec") or {}).get("podCIDR"):
            return
        name = node["metadata"]["name"]
        cidr = self.allocator.allocate(name)
        if cidr is None:
            message = f"Node {name} status is now: CIDRNotAvailable"  # upstream's event, as its nodeutil records it
            await record_event(
                self.ctx.client, node, type_="Normal", reason="CIDRNotAvailable", message=message, component=COMPONENT
            )
            return
        try:
            await self.ctx.client.patch(NODES, "", name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})
        except errors.NotFound:
            self.allocator.release(name)  # the node went away meanwhile
        except Exception:
            self.allocator.release(name)  # retried with backoff by the work queue
            raise
