"""The garbage collector: objects whose owners are gone are deleted, as upstream's background cascading deletion
(the default of `kubectl delete`): a Deployment's ReplicaSets, then their pods.

It also honours the finalizers the apiserver puts on an object deleted with another propagation policy:
`orphan` (`--cascade=orphan`: dependents lose their reference to it and stay) and `foregroundDeletion`
(`--cascade=foreground`: dependents go first, the owner once none is left). An owner missing from the caches is
looked up in the API before anything is deleted, so a dependent created just before its owner shows up in the
cache is safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.crdclient import CRDS_PATH, client_resource
from tinykube.api.resources import STORED, ResourceInfo, builtin, by_kind
from tinykube.client.controller import Loop, run_controller
from tinykube.client.informer import Informer, object_key
from tinykube.client.rest import path_for
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.ownership import patch_quietly

log = logging.getLogger(__name__)

Object = dict[str, Any]
ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"
OWNER_INDEX = "gc:owner-uid"
WORKERS = 8
# Every kind the apiserver serves, as upstream's collector watches every resource it can list: any object may be
# an owner, a dependent, or deleted with a propagation policy whose finalizer this collector removes. Custom
# resources join as their CRDs are Established (upstream finds them by discovery, every 30 s). Events aside, as
# upstream's `DefaultIgnoredResources`: the most written kind, never an owner, and gone by their TTL anyway; watching
# them cost more than any other informer of a cluster starting pods (each pod brings four).
IGNORED = frozenset({("", "events")})
WATCHED = tuple(r for r in STORED if (r.group, r.plural) not in IGNORED)
CRDS = builtin(*CRDS_PATH)


def owner_uids(obj: Object) -> list[str]:
    return [str(ref["uid"]) for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("uid")]


class GarbageCollector:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.watched: dict[str, Informer] = {r.plural: ctx.informers.informer(r) for r in WATCHED}
        self.resources = {r.plural: r for r in WATCHED}
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()  # (plural, key); `plural.group` for custom resources
        self.workers = workers
        self.custom_kinds: dict[tuple[str, str], ResourceInfo] = {}  # (apiVersion, kind) of every served version
        self._custom_runs: dict[str, asyncio.Task[None]] = {}

    async def run(self) -> None:
        for plural, informer in self.watched.items():
            self._handle(plural, informer)
        self.watched["customresourcedefinitions"].add_handler(
            on_add=self._crd_changed, on_update=lambda _old, new: self._crd_changed(new), on_delete=self._crd_gone
        )
        try:  # it reads every kind: it waits for every shared informer
            await run_controller(self.informers, [self.informers], Loop(self.queue, self.sync, workers=self.workers))
        finally:
            for task in self._custom_runs.values():
                task.cancel()

    def _handle(self, plural: str, informer: Informer) -> None:
        informer.store.add_index(OWNER_INDEX, owner_uids)
        informer.add_handler(
            on_add=functools.partial(self._changed, plural),
            on_update=functools.partial(self._updated, plural),
            on_delete=self._gone,
        )

    # ---- custom resources --------------------------------------------------------------------------------------

    def _crd_changed(self, crd: Object) -> None:
        resource = client_resource(crd)
        if resource is None:
            return
        key = f"{resource.plural}.{resource.group}"
        for version in crd["spec"].get("versions") or []:
            if version.get("served"):
                self.custom_kinds[(f"{resource.group}/{version['name']}", resource.kind)] = resource
        known = self.resources.get(key)
        if known == resource and key in self._custom_runs:
            return
        self._stop_custom(key)
        informer = Informer(self.client, resource)
        self._handle(key, informer)
        self.watched[key], self.resources[key] = informer, resource
        self._custom_runs[key] = asyncio.create_task(informer.run(), name=f"gc informer {key}")

    def _crd_gone(self, crd: Object) -> None:
        spec = crd.get("spec") or {}
        key = f"{(spec.get('names') or {}).get('plural')}.{spec.get('group')}"
        self._stop_custom(key)
        self.watched.pop(key, None)
        self.resources.pop(key, None)
        self.custom_kinds = {k: r for k, r in self.custom_kinds.items() if f"{r.plural}.{r.group}" != key}

    def _stop_custom(self, key: str) -> None:
        task = self._custom_runs.pop(key, None)
        if task is not None:
            task.cancel()

    def _kind(self, ref: Object) -> tuple[str, ResourceInfo] | None:
        """The watched resource (its key here and its description) an owner reference names, if any."""
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        resource = by_kind(api_version, kind)
        if resource is not None:
            return resource.plural, resource
        custom = self.custom_kinds.get((api_version, kind))
        return (f"{custom.plural}.{custom.group}", custom) if custom is not None else None

    def _changed(self, plural: str, obj: Object) -> None:
        meta = obj["metadata"]
        if meta.get("ownerReferences") or {ORPHAN, FOREGROUND} & set(meta.get("finalizers") or ()):
            self.queue.add((plural, object_key(obj)))

    def _updated(self, plural: str, old: Object, new: Object) -> None:
        self._changed(plural, new)
        if old["metadata"].get("ownerReferences") != new["metadata"].get("ownerReferences"):
            self._queue_owners(old)  # an owner deleting in the foreground may wait for it no longer

    def _gone(self, obj: Object) -> None:
        """Its dependents may be orphans now, and an owner deleting in the foreground may have waited for it."""
        for plural, dependent in self._dependents(str(obj["metadata"].get("uid", ""))):
            self.queue.add((plural, object_key(dependent)))
        self._queue_owners(obj)

    def _queue_owners(self, obj: Object) -> None:
        namespace = obj["metadata"].get("namespace", "")
        for ref in obj["metadata"].get("ownerReferences") or []:
            found = self._kind(ref)
            if found is not None and found[0] in self.watched:
                watched, resource = found
                key = f"{namespace}/{ref['name']}" if resource.namespaced else str(ref["name"])
                self.queue.add((watched, key))

    def _dependents(self, uid: str) -> list[tuple[str, Object]]:
        return [(p, d) for p, informer in self.watched.items() for d in informer.store.by_index(OWNER_INDEX, uid)]

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, item: tuple[str, str]) -> None:
        plural, key = item
        informer = self.watched.get(plural)
        obj = informer.store.get(key) if informer is not None else None
        if obj is None:
            return
        finalizers = set(obj["metadata"].get("finalizers") or ())
        if obj["metadata"].get("deletionTimestamp") and ORPHAN in finalizers:
            await self._orphan_dependents(plural, obj)
        elif obj["metadata"].get("deletionTimestamp") and FOREGROUND in finalizers:
            await self._delete_dependents_first(plural, obj)
        elif obj["metadata"].get("ownerReferences") and not obj["metadata"].get("deletionTimestamp"):
            await self._collect_if_orphaned(plural, obj)

    async def _collect_if_orphaned(self, plural: str, obj: Object) -> None:
        """upstream's attemptToDeleteItem for an object not being deleted, by what its owners are: one present
        ("solid") keeps it, and the references to absent owners and to owners deleting in the foreground go; else
        it goes, in the foreground when an owner waits for it and it has dependents of its own (first making its
        references non-blocking if one of those dependents waits too: a cycle of owners)."""
        refs = obj["metadata"]["ownerReferences"]
        states = [await self._owner_state(ref, obj["metadata"].get("namespace", "")) for ref in refs]
        if "present" in states:
            if len(set(states)) > 1:
                kept = [ref for ref, state in zip(refs, states, strict=True) if state == "present"]
                await self._patch(plural, obj, {"metadata": {"ownerReferences": kept}})
            return
        dependents = self._dependents(obj["metadata"]["uid"])
        if "foreground" in states and dependents:
            if any(_deleting_dependents(dependent) for _plural, dependent in dependents):
                unblocked = [{**ref, "blockOwnerDeletion": False} if ref.get("blockOwnerDeletion") else ref
                             for ref in refs]  # fmt: skip
                if await self._patch(plural, obj, {"metadata": {"ownerReferences": unblocked}}) is None:
                    return  # gone or replaced: its events bring the truth
            await self._delete(plural, obj, "Foreground")
        else:
            await self._delete(plural, obj, "Background")

    async def _owner_state(self, ref: Object, namespace: str) -> str:
        """ "present", "foreground" (being deleted, dependents first) or "absent" (gone, or replaced by a namesake).
        Kinds this cluster does not serve count as present: nothing is deleted on a guess."""
        found = self._kind(ref)
        if found is None:
            return "present"
        watched, resource = found
        ns = namespace if resource.namespaced else ""
        informer = self.watched.get(watched)
        owner = informer.store.get(f"{ns}/{ref['name']}" if ns else str(ref["name"])) if informer else None
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            owner = await self._read(resource, ns, str(ref["name"]))  # the cache may not have seen it yet
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return "absent"
        deleting = owner["metadata"].get("deletionTimestamp")
        return "foreground" if deleting and FOREGROUND in (owner["metadata"].get("finalizers") or ()) else "present"

    async def _read(self, resource: ResourceInfo, namespace: str, name: str) -> Object | None:
        try:
            return await self.client.get(resource, namespace, name)
        except errors.NotFound:
            return None

    async def _orphan_dependents(self, plural: str, owner: Object) -> None:
        uid = owner["metadata"]["uid"]
        for dep_plural, dependent in self._dependents(uid):
            kept = [ref for ref in dependent["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
            await self._patch(dep_plural, dependent, {"metadata": {"ownerReferences": kept or None}})
        await self._drop_finalizer(plural, owner, ORPHAN)

    async def _delete_dependents_first(self, plural: str, owner: Object) -> None:
        """upstream's processDeletingDependentsItem: the owner goes once no dependent blocks it (a reference with
        `blockOwnerDeletion`); its dependents are looked at again, each keeping its place if another owner of it is
        present."""
        uid = owner["metadata"]["uid"]
        dependents = self._dependents(uid)
        blocking = [
            (dep_plural, dependent)
            for dep_plural, dependent in dependents
            if any(ref.get("uid") == uid and ref.get("blockOwnerDeletion") for ref in _refs(dependent))
        ]
        if not blocking:
            await self._drop_finalizer(plural, owner, FOREGROUND)
        for dep_plural, dependent in dependents:
            if not dependent["metadata"].get("deletionTimestamp"):
                self.queue.add((dep_plural, object_key(dependent)))

    # ---- writes ------------------------------------------------------------------------------------------------

    async def _delete(self, plural: str, obj: Object, policy: str) -> None:
        meta = obj["metadata"]
        log.debug("garbage-collecting %s %s/%s (%s)", plural, meta.get("namespace", ""), meta["name"], policy)
        options = {"preconditions": {"uid": meta["uid"]}, "propagationPolicy": policy}
        with contextlib.suppress(errors.NotFound, errors.Conflict):
            await self.client.request(
                "DELETE", path_for(self.resources[plural], meta.get("namespace", ""), meta["name"]), options
            )

    async def _patch(self, plural: str, obj: Object, patch: Object) -> Object | None:
        patch["metadata"]["uid"] = obj["metadata"]["uid"]  # only this object, not a namesake created since
        return await patch_quietly(self.client, self.resources[plural], obj, patch)

    async def _drop_finalizer(self, plural: str, obj: Object, finalizer: str) -> None:
        rest = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        await self._patch(plural, obj, {"metadata": {"finalizers": rest or None}})


def _refs(obj: Object) -> list[Object]:
    return list(obj["metadata"].get("ownerReferences") or [])


def _deleting_dependents(obj: Object) -> bool:
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and FOREGROUND in (meta.get("finalizers") or ())
