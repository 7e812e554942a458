"""The root CA certificate publisher (upstream's `root-ca-cert-publisher`): every active namespace has a ConfigMap
`kube-root-ca.crt` holding the cluster's CA (`ca.crt`), which the `kube-api-access-*` volume of every pod projects
so that its processes can verify the apiserver. Made when the namespace appears, put back when it is changed or
deleted. It watches only ConfigMaps of that name, not every ConfigMap of the cluster.
"""

from __future__ import annotations

import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

NAMESPACES = builtin("", "v1", "namespaces")
CONFIG_MAPS = builtin("", "v1", "configmaps")
NAME = "kube-root-ca.crt"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)
WORKERS = 4

Object = dict[str, Any]


class RootCACertPublisher:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.namespaces = ctx.informers.informer(NAMESPACES)
        self.config_maps = ctx.informers.informer(CONFIG_MAPS, field_selector=f"metadata.name={NAME}")
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        if not self.ctx.client.ca_data:
            log.info("no cluster CA (plain HTTP): no %s to publish", NAME)
            return
        self.namespaces.add_handler(on_add=self._namespace, on_update=lambda _old, new: self._namespace(new))
        self.config_maps.add_handler(on_update=lambda _old, new: self._config_map(new), on_delete=self._config_map)
        await run_controller(
            self.ctx.informers, (self.namespaces, self.config_maps), Loop(self.queue, self.sync, workers=WORKERS)
        )

    def _namespace(self, namespace: Object) -> None:
        self.queue.add(namespace["metadata"]["name"])

    def _config_map(self, config_map: Object) -> None:
        self.queue.add(config_map["metadata"].get("namespace", ""))

    def wanted(self) -> Object:
        assert self.ctx.client.ca_data is not None
        return {"ca.crt": self.ctx.client.ca_data.decode()}

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.store.get(namespace)
        if ns is None or (ns.get("status") or {}).get("phase") != "Active":
            return
        found = self.config_maps.store.get(f"{namespace}/{NAME}")
        data = self.wanted()
        try:
            if found is None:
                body = {
                    "metadata": {"name": NAME, "annotations": {"kubernetes.io/description": DESCRIPTION}},
                    "data": data,
                }
                await self.ctx.client.create(CONFIG_MAPS, namespace, body)
            elif found.get("data") != data:
                await self.ctx.client.update(CONFIG_MAPS, namespace, {**found, "data": data})
        except (errors.AlreadyExists, errors.Conflict, errors.NotFound):
            self.queue.add_after(namespace, 1.0)  # changed meanwhile: look again once the cache has caught up
        except errors.ApiError as err:
            if not errors.is_namespace_terminating(err):
                raise
