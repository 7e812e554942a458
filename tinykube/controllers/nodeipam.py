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


CIDR_UPDATE_WORKERS = 30  # upstream's cidrUpdateWorkers


class CidrAllocator:
    """The /24s of the cluster CIDR, handed out lowest first. Each allocation and release costs the same at 5,000
    nodes as at 5 (held by CIDR and by node; the search for a free range resumes at the lowest one freed): a scan
    of every range from the first made starting 5,000 nodes quadratic."""

    def __init__(self, cluster_cidr: str, mask: int = NODE_CIDR_MASK) -> None:
        self.network = ipaddress.ip_network(cluster_cidr)
        if mask < self.network.prefixlen:
            raise ValueError(f"--cluster-cidr {cluster_cidr} is smaller than one node's /{mask}")
        self.mask = mask
        self.used: dict[str, str] = {}  # CIDR -> node
        self.held: dict[str, str] = {}  # node -> CIDR
        self.lowest_free = 0  # no range below this index is free

    @property
    def capacity(self) -> int:
        """How many nodes get a range."""
        return int(2 ** (self.mask - self.network.prefixlen))

    def _subnet(self, index: int) -> str:
        step = 1 << (self.network.max_prefixlen - self.mask)
        return str(ipaddress.ip_network((int(self.network.network_address) + index * step, self.mask)))

    def _index(self, cidr: str) -> int | None:
        subnet = ipaddress.ip_network(cidr, strict=False)
        offset = int(subnet.network_address) - int(self.network.network_address)
        if subnet.version != self.network.version or not 0 <= offset < self.network.num_addresses:
            return None
        return offset >> (self.network.max_prefixlen - self.mask)

    def occupy(self, cidr: str, node: str) -> None:
        if self.held.get(node, cidr) != cidr:
            self.release(node)  # it holds another one no more
        self.used[cidr] = node
        self.held[node] = cidr

    def release(self, node: str) -> None:
        cidr = self.held.pop(node, None)
        if cidr is None or self.used.get(cidr) != node:
            return
        del self.used[cidr]
        index = self._index(cidr)
        if index is not None:
            self.lowest_free = min(self.lowest_free, index)

    def allocate(self, node: str) -> str | None:
        """The node's CIDR: the one it holds (a second sync before our patch shows in the cache gets the same),
        else the lowest free one."""
        if node in self.held:
            return self.held[node]
        for index in range(self.lowest_free, self.capacity):
            cidr = self._subnet(index)
            if cidr not in self.used:
                self.lowest_free = index + 1
                self.occupy(cidr, node)
                return cidr
        self.lowest_free = self.capacity
        return None


class NodeIpamController:
    def __init__(self, ctx: ControllerContext, cluster_cidr: str = CLUSTER_CIDR) -> None:
        self.ctx = ctx
        self.nodes = ctx.informers.informer(NODES)
        self.allocator = CidrAllocator(cluster_cidr)
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.nodes.add_handler(on_add=self._seen, on_update=lambda _old, new: self._seen(new), on_delete=self._deleted)
        # Allocation is synchronous (no await between reading and marking `used`), so the patches can go out from
        # several workers, as upstream's range allocator sends them: one at a time, 5,000 nodes waited 100 s.
        await run_controller(self.ctx.informers, [self.nodes], Loop(self.queue, self.sync, workers=CIDR_UPDATE_WORKERS))

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
