"""The node's Lease in `kube-node-lease`, renewed as upstream's kubelet renews it (`pkg/kubelet/nodelease`): the
cheap heartbeat that says the node agent is alive, so that the Node's status needs writing only when it changes.

A renewal is one update of the Lease as last written (its resourceVersion included), every quarter of the lease
duration; only when that fails (the first renewal, a conflict, a deleted Lease) is the Lease read or created
again. No renewal ever lists leases, so the cost per node stays one write per interval however many nodes there are.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import micro_now
from tinykube.api.resources import builtin
from tinykube.client.rest import RestClient, TransportError

log = logging.getLogger(__name__)

Object = dict[str, Any]
LEASES = builtin("coordination.k8s.io", "v1", "leases")
NODES = builtin("", "v1", "nodes")
NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40  # seconds: the kubelet's nodeLeaseDurationSeconds
RENEW_FRACTION = 0.25  # the kubelet renews every quarter of the duration (10 s)
BACKOFF = (0.2, 7.0)  # after a failed renewal, retry from 0.2 s doubling to 7 s (the kubelet's ensure back-off)


class NodeLease:
    def __init__(self, client: RestClient, node: str, *, duration: int = LEASE_DURATION) -> None:
        self.client = client
        self.node = node
        self.duration = duration
        self._lease: Object | None = None  # as last written

    @property
    def interval(self) -> float:
        return self.duration * RENEW_FRACTION

    async def _owner(self) -> Object | None:
        """The Node as the Lease's owner (the Lease goes with it), as the kubelet sets it: only while the Node
        exists, or the garbage collector would delete each Lease as soon as it is made."""
        try:
            node = await self.client.get(NODES, "", self.node)
        except errors.NotFound:
            return None
        return {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": node["metadata"]["uid"]}

    async def _renewed(self, base: Object) -> Object:
        meta = dict(base.get("metadata") or {"name": self.node, "namespace": NAMESPACE})
        if not meta.get("ownerReferences") and (owner := await self._owner()) is not None:
            meta["ownerReferences"] = [owner]
        spec = {**(base.get("spec") or {}), "holderIdentity": self.node, "leaseDurationSeconds": self.duration}
        spec["renewTime"] = micro_now()
        return {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": meta, "spec": spec}

    async def renew(self) -> Object:
        """One renewal; raises what the API raised if the Lease could not be written."""
        if self._lease is not None:
            try:
                self._lease = await self.client.update(LEASES, NAMESPACE, await self._renewed(self._lease))
                return self._lease
            except (errors.Conflict, errors.NotFound):
                self._lease = None  # someone else wrote or removed it: start again from what is stored
        try:
            found = await self.client.get(LEASES, NAMESPACE, self.node)
            self._lease = await self.client.update(LEASES, NAMESPACE, await self._renewed(found))
        except errors.NotFound:
            self._lease = await self.client.create(LEASES, NAMESPACE, await self._renewed({}))
        return self._lease

    async def run(self) -> None:
        """Renew until cancelled; a failure is retried sooner, backing off, as the apiserver may be away."""
        delay = BACKOFF[0]
        while True:
            try:
                await self.renew()
            except (errors.ApiError, TransportError) as err:
                log.warning("node %s: failed to renew its lease: %s", self.node, err)
                await asyncio.sleep(min(delay, self.interval))
                delay = min(delay * 2, BACKOFF[1])
                continue
            delay = BACKOFF[0]
            await asyncio.sleep(self.interval)
