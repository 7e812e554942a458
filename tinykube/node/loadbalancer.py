"""The sandbox's load balancer: it makes LoadBalancer addresses reach a node, as a cloud's (or MetalLB's, in its
L2 mode) would. The apiserver assigns the address; the node proxies DNAT it; this steers packets for it to a node.

Each address gets one node, as a /32 route via that node's LAN address in the external client's namespace and on
the LAN itself (the pool lies inside the LAN's /16, so without a route the client would ask ARP for it and nobody
would answer). With `externalTrafficPolicy: Cluster` any node will do; with `Local` it must be a node that runs a
ready endpoint (what the node's `healthCheckNodePort` reports, read here from the EndpointSlices), and while
there is none the address has no route. The choice is stable: a hash of the Service picks among the candidates.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from tinykube.api.resources import builtin
from tinykube.client.informer import SharedInformers
from tinykube.node import netns
from tinykube.node.sandbox import Sandbox

log = logging.getLogger(__name__)

Object = dict[str, Any]
SERVICES = builtin("", "v1", "services")
SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")
SERVICE_NAME = "kubernetes.io/service-name"


def _addresses(service: Object) -> list[str]:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [entry["ip"] for entry in ingress if entry.get("ip") and ":" not in entry["ip"]]


def _ready_nodes(slices: list[Object]) -> set[str]:
    """Nodes that run a ready endpoint of the slices' Service."""
    return {
        str(endpoint["nodeName"])
        for item in slices
        for endpoint in item.get("endpoints") or []
        if endpoint.get("nodeName") and (endpoint.get("conditions") or {}).get("ready") is not False
    }


def routes(services: list[Object], slices: list[Object], nodes: dict[str, str]) -> dict[str, str]:
    """LoadBalancer address -> the LAN address of the node it goes to (`nodes`: name -> LAN address)."""
    by_service: dict[tuple[str, str], list[Object]] = {}
    for item in slices:
        meta = item["metadata"]
        name = (meta.get("labels") or {}).get(SERVICE_NAME)
        if name:
            by_service.setdefault((meta["namespace"], name), []).append(item)
    found: dict[str, str] = {}
    for service in services:
        spec, meta = service.get("spec") or {}, service["metadata"]
        if spec.get("type") != "LoadBalancer":
            continue
        candidates = sorted(nodes)
        if spec.get("externalTrafficPolicy") == "Local":
            local = _ready_nodes(by_service.get((meta["namespace"], meta["name"]), []))
            candidates = [name for name in candidates if name in local]
        if not candidates:
            continue
        key = f"{meta['namespace']}/{meta['name']}".encode()
        chosen = candidates[int(hashlib.sha256(key).hexdigest(), 16) % len(candidates)]
        for address in _addresses(service):
            found[address] = nodes[chosen]
    return found


class SandboxLoadBalancer:
    def __init__(self, informers: SharedInformers, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.services = informers.informer(SERVICES)
        self.slices = informers.informer(SLICES)
        self.informers = informers
        self.programmed: dict[str, str] = {}
        self._changed = asyncio.Event()

    async def run(self) -> None:
        for informer in (self.services, self.slices):
            informer.add_handler(on_add=self._poke, on_update=lambda _old, _new: self._poke(), on_delete=self._poke)
        self.informers.start()
        await self.informers.wait_synced()
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                await asyncio.to_thread(self._sync)
            except netns.NetnsError as err:  # a namespace going away under us (shutdown): try again on the next change
                log.warning("load balancer routes: %s", err)

    def _poke(self, _obj: Object | None = None) -> None:
        self._changed.set()

    def nodes_changed(self) -> None:
        """A node joined the sandbox: it may be the one an address should go to."""
        self._changed.set()

    def _sync(self) -> None:
        nodes = {name: node.ip for name, node in self.sandbox.nodes.items()}
        wanted = routes(self.services.store.list(), self.slices.store.list(), nodes)
        for address in set(self.programmed) - set(wanted):
            for namespace in (self.sandbox.external, self.sandbox.lan):
                netns.ip("route", "del", f"{address}/32", netns=namespace, check=False)
        for address, via in wanted.items():
            if self.programmed.get(address) != via:
                for namespace in (self.sandbox.external, self.sandbox.lan):
                    netns.ip("route", "replace", f"{address}/32", "via", via, netns=namespace)
        self.programmed = wanted
