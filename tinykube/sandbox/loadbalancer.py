"""The sandbox's load balancer: it makes LoadBalancer addresses reach a node, as a cloud's (or MetalLB's, in its
L2 mode) would. The apiserver assigns the address; the node proxies DNAT it; this steers packets for it to a node.

Each address gets one node, as a /32 route via that node's LAN address in the external client's namespace and on
the LAN itself (the pool lies inside the LAN's /16, so without a route the client would ask ARP for it and nobody
would answer). With `externalTrafficPolicy: Cluster` any node will do; with `Local` it must be a node that runs a
ready endpoint (what the node's `healthCheckNodePort` reports, read here from the EndpointSlices), and while
there is none the address has no route. The choice is stable: a hash of the Service picks among the candidates.

The work is incremental: an event marks its Service dirty, and a sync (at most one per DEBOUNCE, so a burst of
events is one sync) looks at the dirty Services only and sends the changed routes in one `ip -batch` per
namespace. Nothing per event or per sync walks every Service.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Iterable
from typing import Any

from tinykube.api.resources import builtin
from tinykube.client.indexes import SLICE_SERVICE_INDEX, slice_service
from tinykube.client.informer import SharedInformers, object_key
from tinykube.sandbox import netns
from tinykube.sandbox.topology import Sandbox

log = logging.getLogger(__name__)

Object = dict[str, Any]
SERVICES = builtin("", "v1", "services")
SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")
DEBOUNCE = 0.05  # seconds between syncs at the least


def _addresses(service: Object) -> list[str]:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [entry["ip"] for entry in ingress if entry.get("ip") and ":" not in entry["ip"]]


def _ready_nodes(slices: Iterable[Object]) -> set[str]:
    """Nodes that run a ready endpoint of the slices' Service."""
    return {
        str(endpoint["nodeName"])
        for item in slices
        for endpoint in item.get("endpoints") or []
        if endpoint.get("nodeName") and (endpoint.get("conditions") or {}).get("ready") is not False
    }


def service_routes(service: Object | None, slices: Iterable[Object], nodes: dict[str, str]) -> dict[str, str]:
    """One Service's LoadBalancer addresses -> the LAN address of the node each goes to (`slices`: the Service's
    EndpointSlices; `nodes`: name -> LAN address). Empty for any other Service, or while no node qualifies."""
    if service is None or (service.get("spec") or {}).get("type") != "LoadBalancer":
        return {}
    addresses = _addresses(service)
    if not addresses:
        return {}
    candidates = sorted(nodes)
    if service["spec"].get("externalTrafficPolicy") == "Local":
        local = _ready_nodes(slices)
        candidates = [name for name in candidates if name in local]
    if not candidates:
        return {}
    key = object_key(service).encode()
    chosen = candidates[int(hashlib.sha256(key).hexdigest(), 16) % len(candidates)]
    return {address: nodes[chosen] for address in addresses}


class SandboxLoadBalancer:
    def __init__(self, informers: SharedInformers, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.services = informers.informer(SERVICES)
        self.slices = informers.informer(SLICES)
        with contextlib.suppress(ValueError):  # a proxy agent sharing these informers added it
            self.slices.store.add_index(SLICE_SERVICE_INDEX, slice_service)
        self.informers = informers
        self.programmed: dict[str, str] = {}  # address -> the node LAN address it is routed via
        self._routes_of: dict[str, dict[str, str]] = {}  # "namespace/name" -> its routes as programmed
        self._dirty: set[str] = set()  # Services to look at again
        self._load_balancers: set[str] = set()  # the keys of the Services of type LoadBalancer
        self._changed = asyncio.Event()

    async def run(self) -> None:
        self.services.add_handler(
            on_add=self._service_changed,
            on_update=lambda _old, new: self._service_changed(new),
            on_delete=self._service_changed,
        )
        self.slices.add_handler(
            on_add=self._slice_changed,
            on_update=lambda old, new: self._slice_changed(old, new),
            on_delete=self._slice_changed,
        )
        self.informers.start()
        await self.informers.wait_synced()
        while True:
            await self._changed.wait()
            await asyncio.sleep(DEBOUNCE)  # the rest of a burst joins this sync
            self._changed.clear()
            dirty, self._dirty = self._dirty, set()
            commands = self._plan(dirty)
            try:
                if commands:
                    await asyncio.to_thread(self._apply, commands)
            except netns.NetnsError as err:  # a namespace going away under us (shutdown): the next change retries
                log.warning("load balancer routes: %s", err)
                self._forget(dirty)

    def _service_changed(self, service: Object) -> None:
        key = object_key(service)
        self._dirty.add(key)
        if self.services.store.get(key) is service and service["spec"].get("type") == "LoadBalancer":
            self._load_balancers.add(key)
        else:  # deleted, or another type now
            self._load_balancers.discard(key)
        self._changed.set()

    def _slice_changed(self, *slices: Object) -> None:
        self._dirty.update(key for item in slices for key in slice_service(item))
        self._changed.set()

    def nodes_changed(self) -> None:
        """A node joined the sandbox: it may be the one an address should go to."""
        self._dirty.update(self._load_balancers)
        self._changed.set()

    def _plan(self, dirty: set[str]) -> list[str]:
        """The `ip route` commands that bring these Services' routes up to date (recorded as programmed)."""
        nodes = {name: node.ip for name, node in self.sandbox.nodes.items()}
        commands: list[str] = []
        for key in dirty:
            slices = self.slices.store.by_index(SLICE_SERVICE_INDEX, key)
            wanted = service_routes(self.services.store.get(key), slices, nodes)
            held = self._routes_of.pop(key, {})
            if wanted:
                self._routes_of[key] = wanted
            for address in held.keys() - wanted.keys():
                if self.programmed.get(address) == held[address]:
                    del self.programmed[address]
                    commands.append(f"route del {address}/32")
            for address, via in wanted.items():
                if self.programmed.get(address) != via:
                    self.programmed[address] = via
                    commands.append(f"route replace {address}/32 via {via}")
        return commands

    def _forget(self, keys: set[str]) -> None:
        """After a failed batch: these Services' routes are in an unknown state; the next change of any Service
        replaces them again (`-force` went on past the failed command, so the rest are in place)."""
        self._dirty |= keys
        for key in keys:
            for address in self._routes_of.get(key, {}):
                self.programmed.pop(address, None)

    def _apply(self, commands: list[str]) -> None:
        for namespace in (self.sandbox.external, self.sandbox.lan):  # a route del of a missing one fails harmlessly
            netns.ip("-force", "-batch", "-", netns=namespace, stdin="\n".join(commands) + "\n")
