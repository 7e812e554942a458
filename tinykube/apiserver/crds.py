"""Serving custom resources: what upstream's apiextensions-apiserver does with its naming, establishing and
finalizing controllers and its CRD handler, in one loop over the CRD watch cache of this apiserver.

* A CRD whose names no other CRD of its group has taken gets `NamesAccepted` and `Established` (one status write);
  one whose names are taken gets `NamesAccepted=False` with upstream's reason and waits.
* An Established CRD is served: a `Definition` made from its spec, a strategy and a watch cache for its objects,
  and its versions in the catalog (routing, discovery, OpenAPI). A spec change makes a new Definition and a new
  cache (open watches end, as upstream's rebuilt storage ends them), so defaults and pruning apply on read.
* A deleted CRD (Terminating, behind the `customresourcecleanup` finalizer) has its objects deleted, then the
  finalizer removed; once the CRD is gone it is no longer served and its watches end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from tinykube.api import errors
from tinykube.api.conditions import condition, is_true, set_condition
from tinykube.api.resources import Catalog, builtin
from tinykube.apiextensions.definition import CLEANUP_FINALIZER, Definition
from tinykube.apiserver.registry import Registry, Request
from tinykube.apiserver.registry.customresources import CustomResourceStrategy
from tinykube.apiserver.storage.watchcache import CachedObject, CacheEvent, WatchCache, Watcher

log = logging.getLogger(__name__)

CRDS = builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions")
DELETION_WAIT = 60.0  # upstream waits a minute for the instances to go, then tries again


class CustomResources:
    def __init__(self, registry: Registry, catalog: Catalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self.definitions: dict[str, Definition] = {}  # CRD name -> what is served for it
        self._specs: dict[str, Any] = {}  # CRD name -> the spec its Definition was made from
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None
        self.changed: Callable[[], None] = lambda: None  # called when what is served changes

    @property
    def _crds(self) -> WatchCache:
        return self.registry.cache(CRDS)

    async def start(self) -> None:
        """Serve the Established CRDs before the apiserver reports ready, then follow changes."""
        watcher = self._subscribe()
        for _key, cached in list(self._crds.items()):
            await self._sync(cached.obj)
        self._task = asyncio.create_task(self._follow(watcher), name="custom-resources")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._cleanups.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.gather(*(self.registry.caches[d.storage.key].stop() for d in self.definitions.values()))

    def _subscribe(self) -> Watcher:
        watcher = Watcher(lambda _o: True)
        self._crds.subscribe(watcher, self._crds.revision)
        return watcher

    async def _follow(self, watcher: Watcher) -> None:
        while True:
            event: CacheEvent | None = await watcher.queue.get()
            if event is None:  # the cache relisted (or we fell behind): start over from what it holds
                self._crds.unsubscribe(watcher)
                watcher = self._subscribe()
                names = {c.obj["metadata"]["name"] for _k, c in self._crds.items()}
                for gone in set(self.definitions) - names:
                    await self._withdraw(gone)
                for _key, cached in list(self._crds.items()):
                    await self._guarded_sync(cached)
                continue
            if event.type == "DELETED":
                await self._withdraw(event.current.obj["metadata"]["name"])
                await self._retry_group(event.current.obj["spec"]["group"])
            else:
                await self._guarded_sync(event.current)

    async def _retry_group(self, group: str) -> None:
        """Names a deleted CRD held are free again: its group's CRDs that wanted them may have them now."""
        for _key, cached in list(self._crds.items()):
            if cached.obj["spec"].get("group") == group and not is_true(cached.obj, "NamesAccepted"):
                await self._guarded_sync(cached)

    async def _guarded_sync(self, cached: CachedObject) -> None:
        try:
            await self._sync(cached.obj)
        except errors.ApiError as err:  # a status write that lost a race: the next event brings the CRD again
            log.info("custom resource definition %s: %s", cached.obj["metadata"]["name"], err)
        except Exception:
            log.exception("custom resource definition %s", cached.obj["metadata"]["name"])

    # ---- one CRD ---------------------------------------------------------------------------------------------

    async def _sync(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        deleting = bool(crd["metadata"].get("deletionTimestamp"))
        if not deleting and await self._accept_names(crd):
            return  # its status write comes back as an event
        if is_true(crd, "Established"):
            await self._serve(crd)
            self.definitions[name].terminating = deleting
        cleaning = name in self._cleanups and not self._cleanups[name].done()
        if deleting and CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or []) and not cleaning:
            self._cleanups[name] = asyncio.create_task(self._finalize(name), name=f"crd-cleanup-{name}")

    async def _accept_names(self, crd: dict[str, Any]) -> bool:
        """upstream's naming and establishing controllers: accept the names nobody else in the group holds, and a
        CRD whose names are all accepted is Established. True if the status had to be written."""
        names, (status, reason, message) = self._names(crd)
        accepted = condition(crd, "NamesAccepted") or {}
        current = (crd.get("status") or {}).get("acceptedNames")
        established = is_true(crd, "Established")
        unchanged = current == names and (accepted.get("status"), accepted.get("reason")) == (status, reason)
        if unchanged and (established or status != "True"):
            return False

        def accept(latest: dict[str, Any]) -> None:
            latest.setdefault("status", {})["acceptedNames"] = names
            set_condition(latest, "NamesAccepted", status, reason, message)
            if status == "True":
                set_condition(
                    latest, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"
                )
            elif not is_true(latest, "Established"):
                set_condition(latest, "Established", "False", "NotAccepted", "not all names are accepted")

        await self.registry.guaranteed_update(Request(CRDS, "", crd["metadata"]["name"], "status"), accept)
        return True

    def _names(self, crd: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str, str]]:
        spec_names = crd["spec"]["names"]
        accepted = dict((crd.get("status") or {}).get("acceptedNames") or {})
        resources: set[str] = set()
        kinds: set[str] = set()
        for _key, other in self._crds.items():
            if (
                other.obj["metadata"]["name"] == crd["metadata"]["name"]
                or other.obj["spec"]["group"] != crd["spec"]["group"]
            ):
                continue
            taken = (other.obj.get("status") or {}).get("acceptedNames") or {}
            resources.update(
                n for n in (taken.get("plural"), taken.get("singular"), *(taken.get("shortNames") or ())) if n
            )
            kinds.update(n for n in (taken.get("kind"), taken.get("listKind")) if n)
        verdict = ("True", "NoConflicts", "no conflicts found")
        names = dict(accepted)
        for field, pool, reason in (
            ("plural", resources, "PluralConflict"),
            ("singular", resources, "SingularConflict"),
            ("kind", kinds, "KindConflict"),
            ("listKind", kinds, "ListKindConflict"),
        ):
            wanted = spec_names.get(field, "")
            if wanted != accepted.get(field) and wanted in pool:
                verdict = ("False", reason, f'"{wanted}" is already in use')
            elif wanted:
                names[field] = wanted
        short = list(spec_names.get("shortNames") or [])
        if short != list(accepted.get("shortNames") or []):
            clashes = [s for s in short if s not in (accepted.get("shortNames") or []) and s in resources]
            if clashes:
                verdict = ("False", "ShortNamesConflict", ", ".join(f'"{s}" is already in use' for s in clashes))
            else:
                names["shortNames"] = short
        if spec_names.get("categories"):
            names["categories"] = list(spec_names["categories"])
        else:
            names.pop("categories", None)
        if not short:
            names.pop("shortNames", None)
        return names, verdict

    async def _serve(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        spec = crd["spec"]
        if self._specs.get(name) == spec and name in self.definitions:
            return
        definition = Definition(crd)
        storage = definition.storage
        self.registry.strategies[storage.key] = CustomResourceStrategy(storage)
        cache = WatchCache(self.registry.store, storage, _normalizer(definition))
        previous = self.registry.caches.get(storage.key)
        self.registry.caches[storage.key] = cache
        self.definitions[name] = definition
        self._specs[name] = spec
        # The cache fills before the new versions are routed to it (they are served once it has listed).
        await self._start_cache(name, cache, previous, definition)

    async def _start_cache(
        self, name: str, cache: WatchCache, previous: WatchCache | None, definition: Definition
    ) -> None:
        try:
            await cache.start()
        except Exception as err:
            log.warning("custom resources of %s could not be listed: %s", name, err)
            return
        if self.definitions.get(name) is not definition:  # replaced or withdrawn meanwhile
            await cache.stop()
            return
        self.catalog.serve(name, definition.served)
        self.changed()
        if previous is not None and previous is not cache:
            await previous.stop()

    async def _withdraw(self, name: str) -> None:
        definition = self.definitions.pop(name, None)
        self._specs.pop(name, None)
        task = self._cleanups.pop(name, None)
        if task is not None and not task.done():
            task.cancel()
        if definition is None:
            return
        self.catalog.withdraw(name)
        self.changed()
        key = definition.storage.key
        self.registry.strategies.pop(key, None)
        cache = self.registry.caches.pop(key, None)
        if cache is not None:
            await cache.stop()

    # ---- deletion --------------------------------------------------------------------------------------------

    async def _finalize(self, name: str) -> None:
        """upstream's CRD finalizer: delete every instance, wait for them to go, then let the CRD go."""
        request = Request(CRDS, "", name, "status")
        definition = self.definitions.get(name)
        try:
            if definition is not None:
                await self._status(
                    request, "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"
                )
                while True:  # as upstream's finalizer requeues: delete what is left and wait again
                    try:
                        await self._delete_instances(definition)
                        break
                    except errors.Conflict as err:  # instances still there after the wait (their own finalizers)
                        log.info("custom resource definition %s: cleanup: %s", name, err)
                        await self._status(request, "True", "InstanceDeletionCheck", err.message)
                await self._status(request, "False", "InstanceDeletionCompleted", "removed all instances")
            else:
                await self._status(request, "False", "NeverEstablished", "resource was never established")
            await self.registry.guaranteed_update(Request(CRDS, "", name), _without_cleanup_finalizer)
            await self._delete_if_released(name)
        except errors.NotFound:
            return
        except errors.ApiError as err:
            log.info("custom resource definition %s: cleanup: %s", name, err)

    async def _status(self, request: Request, status: str, reason: str, message: str) -> None:
        def mutate(crd: dict[str, Any]) -> None:
            set_condition(crd, "Terminating", status, reason, message)

        await self.registry.guaranteed_update(request, mutate)

    async def _delete_instances(self, definition: Definition) -> None:
        storage = definition.storage
        cache = self.registry.caches.get(storage.key)
        if cache is None:
            return
        await cache.ready.wait()
        for _key, cached in list(cache.items()):
            meta = cached.obj["metadata"]
            with contextlib.suppress(errors.NotFound, errors.Conflict):
                await self.registry.delete(Request(storage, meta.get("namespace", ""), meta["name"]), {})
        deadline = time.monotonic() + DELETION_WAIT
        while cache.objects and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if cache.objects:
            count = len(cache.objects)
            message = f"could not confirm zero CustomResources remaining: {count} remaining"
            raise errors.Conflict(message)

    async def _delete_if_released(self, name: str) -> None:
        """The CRD without its finalizers is removed (what an update dropping the last finalizer of a deleted object
        does through the registry)."""
        with contextlib.suppress(errors.NotFound):
            await self.registry.delete(Request(CRDS, "", name), {})


def _without_cleanup_finalizer(crd: dict[str, Any]) -> None:
    finalizers = [f for f in crd["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
    if finalizers:
        crd["metadata"]["finalizers"] = finalizers
    else:
        crd["metadata"].pop("finalizers", None)


def _normalizer(definition: Definition) -> Callable[[dict[str, Any]], None]:
    """What upstream's storage decoder does to every custom resource it reads: its version's defaults, and the
    fields its schema does not know dropped."""

    def normalize(obj: dict[str, Any]) -> None:
        schema = definition.version_of(obj).schema
        if schema is not None:
            schema.prune(obj)
            schema.default(obj)

    return normalize
