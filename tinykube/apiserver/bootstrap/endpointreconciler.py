"""The `default/kubernetes` Endpoints and EndpointSlice: where pods reach the apiserver (upstream's endpoint
reconciler, pkg/controlplane/reconcilers).

The `kubernetes` Service has no selector: the apiserver writes its endpoints itself — the address it serves on
inside the cluster, its port named `https` — and puts them back every 10 s if they were changed or deleted, as
upstream's reconciler does on its `--endpoint-reconciler-type=lease` interval. The Endpoints carry
`endpointslice.kubernetes.io/skip-mirror: "true"` and the EndpointSlice (which the proxies read) is written
alongside, as upstream's endpointsAdapter does. On shutdown both are removed (upstream's RemoveEndpoints), so a
cluster restarted without the sandbox lists no address that no longer answers.

With the netns dataplane that address is the LAN namespace's listener (`tinykube up`); with the simulated one it
is the control-plane node's address, where the apiserver's mirror pod is shown, which nothing dials (clients and
the conformance suite read it: a cluster always has these two objects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)

ENDPOINTS = builtin("", "v1", "endpoints")
SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")
NAMESPACE, NAME, PORT_NAME = "default", "kubernetes", "https"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME = "kubernetes.io/service-name"
INTERVAL = 10.0  # upstream's endpoint reconcile interval


def desired_endpoints(ip: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SKIP_MIRROR: "true"}},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}],
    }


def desired_slice(ip: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SERVICE_NAME: NAME}},
        "addressType": "IPv6" if ":" in ip else "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}],
    }


def _same_endpoints(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    labels = current["metadata"].get("labels") or {}
    return labels.get(SKIP_MIRROR) == "true" and current.get("subsets") == wanted["subsets"]


def _same_slice(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    labels = current["metadata"].get("labels") or {}
    addresses = [(e.get("addresses"), (e.get("conditions") or {}).get("ready")) for e in current.get("endpoints") or []]
    return (
        labels.get(SERVICE_NAME) == NAME
        and current.get("addressType") == wanted["addressType"]
        and addresses == [(wanted["endpoints"][0]["addresses"], True)]
        and [(p.get("name"), p.get("port"), p.get("protocol")) for p in current.get("ports") or []]
        == [(PORT_NAME, wanted["ports"][0]["port"], "TCP")]
    )


class KubernetesEndpoints:
    """Keeps `default/kubernetes` pointing at `ip:port` while `run()` runs; `remove()` takes the address away."""

    def __init__(self, client: RestClient, ip: str, port: int, interval: float = INTERVAL) -> None:
        self.client = client
        self.ip, self.port = ip, port
        self.interval = interval

    async def run(self) -> None:
        while True:
            try:
                await self.reconcile()
            except Exception as err:  # the API away for a moment: the next pass tries again
                log.warning("cannot reconcile the default/kubernetes endpoints: %s", err)
            await asyncio.sleep(self.interval)

    async def reconcile(self) -> None:
        await self._ensure(ENDPOINTS, desired_endpoints(self.ip, self.port), _same_endpoints)
        await self._ensure(SLICES, desired_slice(self.ip, self.port), _same_slice)

    async def _ensure(self, resource: Any, wanted: dict[str, Any], same: Any) -> None:
        try:
            current = await self.client.get(resource, NAMESPACE, NAME)
        except errors.NotFound:
            with contextlib.suppress(errors.AlreadyExists):  # made meanwhile: the next pass looks again
                await self.client.create(resource, NAMESPACE, wanted)
            return
        if same(current, wanted):
            return
        labels = {**(current["metadata"].get("labels") or {}), **wanted["metadata"]["labels"]}
        updated = {**current, **{k: v for k, v in wanted.items() if k != "metadata"}}
        updated["metadata"] = {**current["metadata"], "labels": labels}
        with contextlib.suppress(errors.Conflict):
            await self.client.update(resource, NAMESPACE, updated)

    async def remove(self) -> None:
        for resource in (SLICES, ENDPOINTS):
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(resource, NAMESPACE, NAME)
