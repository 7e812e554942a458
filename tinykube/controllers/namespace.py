"""Namespace lifecycle: a deleted namespace is emptied, then its `kubernetes` finalizer is removed.

As upstream, deleting a namespace only marks it Terminating; this controller deletes every namespaced object
in it and then calls the `finalize` subresource, after which the apiserver removes the namespace itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.crdclient import CRDS_PATH, client_resource
from tinykube.api.resources import STORED, ResourceInfo, builtin, by_path
from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)

FINALIZER = "kubernetes"
NAMESPACES = by_path("", "v1", "namespaces")
CRDS = builtin(*CRDS_PATH)


class NamespaceController:
    def __init__(self, client: RestClient) -> None:
        self.client = client
        self.busy: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        try:
            await self._watch_forever()
        finally:
            for task in list(self.tasks):
                task.cancel()

    async def _watch_forever(self) -> None:
        assert NAMESPACES is not None
        backoff = 0.1
        while True:
            try:
                async for event in self.client.watch(NAMESPACES):
                    self._observe(event["object"])
                    backoff = 0.1
            except (errors.ApiError, OSError, Exception) as err:
                log.debug("namespace watch ended: %s", err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    def _observe(self, namespace: dict[str, Any]) -> None:
        name = namespace["metadata"]["name"]
        terminating = namespace["metadata"].get("deletionTimestamp")
        if not terminating or FINALIZER not in (namespace.get("spec") or {}).get("finalizers", []):
            return
        if name in self.busy:
            return
        self.busy.add(name)
        task = asyncio.create_task(self._finalize(name))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _finalize(self, name: str) -> None:
        try:
            for attempt in range(100):
                if await self._empty(name):
                    break
                await asyncio.sleep(min(0.05 * (attempt + 1), 1.0))
            for attempt in range(10):
                try:
                    await self._remove_finalizer(name)
                    break
                except errors.Conflict as err:  # the namespace changed since it was read: read it again
                    if attempt == 9:
                        raise
                    log.debug("finalizing namespace %s: %s; retrying", name, err)
        except errors.NotFound:
            pass
        except Exception as err:
            log.warning("finalizing namespace %s: %s", name, err)
        finally:
            self.busy.discard(name)

    async def _empty(self, name: str) -> bool:
        """Delete what is left in the namespace, custom resources included; True once nothing is."""
        resources = [r for r in STORED if r.namespaced] + await self._custom_resources()
        counts = await asyncio.gather(*(self._delete_all(r, name) for r in resources))
        return sum(counts) == 0

    async def _custom_resources(self) -> list[ResourceInfo]:
        """The namespaced custom resources of the Established CRDs (upstream's deleter finds them by discovery)."""
        crds = (await self.client.list(CRDS))["items"]
        found = (client_resource(crd) for crd in crds)
        return [r for r in found if r is not None and r.namespaced]

    async def _delete_all(self, resource: ResourceInfo, namespace: str) -> int:
        """Delete every object of `resource` in `namespace`; how many there were."""
        items = (await self.client.list(resource, namespace))["items"]
        for item in items:
            with contextlib.suppress(errors.NotFound):
                # in the background, as upstream's namespace deleter: no kind's default may leave an `orphan`
                # finalizer behind for the garbage collector, since everything in the namespace goes anyway
                await self.client.delete(resource, namespace, item["metadata"]["name"], propagationPolicy="Background")
        return len(items)

    async def _remove_finalizer(self, name: str) -> None:
        assert NAMESPACES is not None
        namespace = await self.client.get(NAMESPACES, "", name)
        spec = namespace.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers", []) if f != FINALIZER]
        await self.client.update(NAMESPACES, "", namespace, subresource="finalize")
