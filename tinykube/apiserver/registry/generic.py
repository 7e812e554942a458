"""HTTP-free storage logic shared by every resource: create, get, list, update, patch, delete.

Per-resource behaviour (defaulting, validation, status handling, what DELETE returns) lives in a `Strategy`;
this module owns what is common: system metadata, optimistic concurrency on the etcd mod revision,
generateName, finalizers and deletionTimestamp, dry-run, reading from the watch cache, and when `Admission` runs
(mutating plugins after defaulting, validating ones after validation, once per request, dry-run included).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

import orjson

from tinykube.api import errors
from tinykube.api.conversion import Converted
from tinykube.api.errors import FieldError, invalid
from tinykube.api.gotyped import drop_omitted_zeros
from tinykube.api.jsoncopy import json_copy
from tinykube.api.meta import (
    NameValidator,
    dns1123_subdomain,
    generate_name,
    new_uid,
    now,
    parse_time,
    validate_object_meta,
)
from tinykube.api.patch import apply_patch
from tinykube.api.resources import Catalog, ResourceInfo
from tinykube.apiserver.auth.identity import UserInfo
from tinykube.apiserver.schema import fieldmanager
from tinykube.apiserver.storage.consistency import RevisionReader
from tinykube.apiserver.storage.leases import LeaseReuse
from tinykube.apiserver.storage.watchcache import CachedObject, WatchCache
from tinykube.store.errors import KeyExists, KeyNotFound, RevisionConflict, StoreUnavailable
from tinykube.store.etcd import NO_CLAIMS, Claims, EtcdStore

SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
_CREATE_ATTEMPTS = 8  # generated names and picked allocations that someone else took meanwhile are retried
DELETE_DEPENDENTS, ORPHAN_DEPENDENTS, GC_UNSUPPORTED = "DeleteDependents", "OrphanDependents", "Unsupported"
ORPHAN_FINALIZER, FOREGROUND_FINALIZER = "orphan", "foregroundDeletion"
_FINALIZER_POLICIES = {ORPHAN_FINALIZER: "Orphan", FOREGROUND_FINALIZER: "Foreground"}
_UPDATE_ATTEMPTS = 16
_T = TypeVar("_T")
MAX_TXN_OPS = 128  # etcd's default --max-txn-ops: operations in each branch of one transaction


class MaybeStale(Exception):
    """A write started from the watch cache's copy changes nothing of it: whether it changes the stored object is
    known only from the stored object (upstream's GuaranteedUpdate reads it then too)."""


def _nothing(*_args: Any) -> None:
    return None


class UnknownError(errors.ApiError):
    """What upstream answers for an error that is not a Status error: 500 with an empty (omitted) reason; also
    any code and reason given (upstream's generic server responses)."""

    code, reason = 500, ""

    def __init__(self, message: str, *, code: int = 500, reason: str = "", details: dict[str, Any] | None = None):
        super().__init__(message, details=details)
        self.code, self.reason = code, reason

    def status(self) -> dict[str, Any]:
        body = super().status()
        if not body["reason"]:
            del body["reason"]
        return body


@dataclass
class Allocation:
    """What a write claims and releases in its own etcd transaction (see `Claims`).

    A claim someone else holds fails the transaction: for a value the client asked for, the write fails with the
    error in `conflicts`; a value the allocator picked itself is picked again. `committed` runs with the revision
    once the write is in etcd; `finished` always runs, committed or not.
    """

    claims: Claims = NO_CLAIMS
    conflicts: dict[str, errors.ApiError] = field(default_factory=dict)
    committed: Callable[[int], None] = _nothing
    finished: Callable[[], None] = _nothing


class Strategy:
    """Defaults and validation for one resource; subclasses override what differs from upstream's generic store."""

    name_rule: NameValidator = staticmethod(dns1123_subdomain)  # type: ignore[assignment]
    allow_create_on_update = False
    return_deleted_object = False
    # upstream's DefaultGarbageCollectionPolicy: what a DELETE that names no propagation policy does to dependents
    # (DELETE_DEPENDENTS: nothing here, the collector deletes them in the background; ORPHAN_DEPENDENTS: the
    # `orphan` finalizer is added; GC_UNSUPPORTED: no propagation finalizer at all)
    gc_policy = DELETE_DEPENDENTS
    has_status = False
    clears_status_on_create = True
    tracks_generation = False
    allocates = False  # `allocate` fills in values (picks), so a retry must start from the request as sent
    ttl = 0.0  # seconds an object lives after each write (etcd deletes it then); 0: for ever
    storage_api_version = ""  # the apiVersion objects are stored in, when not the one they are written in

    def __init__(self, resource: ResourceInfo) -> None:
        self.resource = resource

    def prepare_create(self, obj: dict[str, Any]) -> None:
        """Defaulting before validation; status is cleared for resources with a status subresource."""
        if self.has_status and self.clears_status_on_create:
            obj.pop("status", None)
        self.default(obj)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        if self.has_status:
            _copy_field(old, new, "status")
        self.default(new)

    def record_requester(self, obj: dict[str, Any], user: UserInfo | None) -> None:
        """After `prepare_create`: for kinds that record who created them (CertificateSigningRequests)."""

    def prepare_admitted(self, obj: dict[str, Any]) -> None:
        """After mutating admission on create: what upstream's PrepareForCreate derives from the admitted object."""

    def prepare_subresource_update(self, subresource: str, new: dict[str, Any], old: dict[str, Any]) -> None:
        """A write through a subresource other than `status` (which has `prepare_status_update`)."""
        raise errors.resource_not_found()

    def validate_subresource_update(
        self, subresource: str, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[FieldError]:
        """Validation of a write through a subresource (`status` included); by default the kind's own."""
        return self.validate(obj, old)

    # Upstream's older kinds reset only spec on a status write and keep the metadata sent (labels, annotations,
    # finalizers); newer kinds and custom resources reset metadata too (ResetObjectMetaForStatus).
    status_keeps_sent_metadata = False

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Status writes change status (and, for `status_keeps_sent_metadata` kinds, metadata) only: the rest
        comes from the stored object."""
        status, meta = new.get("status"), new.get("metadata")
        new.clear()
        new.update(json_copy(old))
        if status is not None:
            new["status"] = status
        if self.status_keeps_sent_metadata and isinstance(meta, dict):
            old_meta = new["metadata"]
            new["metadata"] = {k: v for k, v in meta.items() if k not in SYSTEM_FIELDS}
            new["metadata"].update({k: old_meta[k] for k in SYSTEM_FIELDS if k in old_meta})

    def default(self, obj: dict[str, Any]) -> None:
        """v1 defaulting, applied on every write."""

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        """Whether an update is a new generation (for resources that track one): upstream's is a spec change."""
        return new.get("spec") != old.get("spec")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """Kind-specific validation; metadata is validated by the registry."""
        return []

    def allocate(self, new: dict[str, Any], old: dict[str, Any] | None, dry_run: bool) -> Allocation:
        """Values the object takes from shared pools (cluster IPs, node ports); runs before validation, as upstream's
        allocation does, so an allocation error is reported alone."""
        return Allocation()

    def release(self, obj: dict[str, Any]) -> Allocation:
        """Keys that go away with the object, in its delete transaction."""
        return Allocation()

    def too_many_claims(self, obj: dict[str, Any], excess: int) -> list[FieldError]:
        """The field errors for a write whose claims exceed etcd's transaction limit by `excess` operations."""
        return [errors.FieldError(errors.ErrorType.TOO_MANY, "spec", detail=f"{excess} allocations too many")]

    def check_delete(self, obj: dict[str, Any]) -> None:
        """Raise to refuse a delete outright (an ApiError), before anything is written."""

    def delete_warnings(self, options: dict[str, Any]) -> list[str]:
        """Warnings for a DELETE (or DELETE of the collection) with these DeleteOptions."""
        return []

    def finalizing(self, obj: dict[str, Any]) -> bool:
        """True while something must happen before a deleted object may go away: its finalizers, or a graceful
        deletion's grace period (a pod's node agent deletes it with a period of 0 once its containers stopped)."""
        meta = obj["metadata"]
        return bool(meta.get("finalizers")) or bool(meta.get("deletionGracePeriodSeconds"))

    def grace_period(self, obj: dict[str, Any], requested: int | None) -> int | None:
        """Upstream's CheckGracefulDelete: the seconds a DELETE gives the object (`requested`: the DeleteOptions'
        `gracePeriodSeconds`); None for kinds deleted at once."""
        return None

    def mark_deleting(self, obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("deletionTimestamp", now())
        obj["metadata"].setdefault("deletionGracePeriodSeconds", 0)


def _copy_field(src: dict[str, Any], dst: dict[str, Any], field: str) -> None:
    if field in src:
        dst[field] = json_copy(src[field])
    else:
        dst.pop(field, None)


def _strip_for_storage(obj: dict[str, Any], api_version: str = "") -> bytes:
    """What goes into etcd: the object without its resourceVersion (the key's mod revision is the truth), in the
    `api_version` it is stored as when that is not the one it was written in (custom resources)."""
    meta = obj["metadata"]
    rv = meta.pop("resourceVersion", None)
    written = obj.get("apiVersion")
    if api_version:
        obj["apiVersion"] = api_version
    try:
        return orjson.dumps(obj)
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv
        if api_version:
            obj["apiVersion"] = written


INTERNAL_MANAGER = "kube-apiserver"  # the field manager of the apiserver's own writes (upstream's user agent)


@dataclass(frozen=True, slots=True)
class Request:
    """The parts of an API request the registry needs; `namespace` is "" for cluster-scoped resources. `manager`
    is the field manager the write is recorded for in managedFields; `recorded_as` the subresource it is recorded
    as when that is not `subresource` (a write of `scale` is an update of the parent)."""

    resource: ResourceInfo
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    user: UserInfo | None = None
    manager: str = INTERNAL_MANAGER
    recorded_as: str = ""

    def field_write(self, strategy: Strategy, resource: ResourceInfo | None = None) -> fieldmanager.Write:
        """This request as a write whose fields are managed."""
        subresource = self.recorded_as or self.subresource
        return fieldmanager.Write(resource or self.resource, self.manager, subresource, strategy.has_status)


class Admission(Protocol):
    """The admission chain (`tinykube.apiserver.admission`): `mutate` runs after defaulting, `validate` after
    validation, once per request; either refuses a request by raising an ApiError. `old` is None on create."""

    async def mutate(self, req: Request, obj: dict[str, Any], old: dict[str, Any] | None) -> None: ...

    async def validate(self, req: Request, obj: dict[str, Any], old: dict[str, Any] | None) -> None: ...


class NoAdmission:
    async def mutate(self, req: Request, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        return None

    async def validate(self, req: Request, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        return None


class Registry:
    def __init__(self, store: EtcdStore, caches: dict[str, WatchCache], strategies: dict[str, Strategy]) -> None:
        self.store = store
        self.caches = caches
        self.revisions = RevisionReader(store)  # etcd's current revision, for consistent reads
        self.strategies = strategies
        self.catalog = Catalog()  # what is served: the built-in resources and the Established CRDs' (crds.py)
        self.admission: Admission = NoAdmission()  # the apiserver sets its chain, whose plugins use this registry
        self.leases = LeaseReuse(store)

    # ---- keys and reads -------------------------------------------------------------------------------------

    @staticmethod
    def cache_key(namespace: str, name: str) -> str:
        return f"{namespace}/{name}" if namespace else name

    def key(self, req: Request, name: str | None = None) -> str:
        return req.resource.storage_segment + "/" + self.cache_key(req.namespace, name or req.name)

    def cache(self, resource: ResourceInfo) -> WatchCache:
        return self.caches[resource.key]

    def get(self, req: Request) -> CachedObject:
        found = self.cache(req.resource).get(self.cache_key(req.namespace, req.name))
        if found is None:
            raise errors.not_found(req.resource.plural, req.name, req.resource.group)
        return found

    async def _read(self, req: Request) -> tuple[dict[str, Any], int]:
        """The stored object (from etcd, not the cache: writes must start from the latest state)."""
        kv = await self._store_call(self.store.get(self.key(req)))
        if kv is None:
            raise errors.not_found(req.resource.plural, req.name, req.resource.group)
        obj = orjson.loads(kv.value)
        obj["metadata"]["resourceVersion"] = str(kv.mod_revision)
        return obj, kv.mod_revision

    async def _start(self, req: Request, current: bool) -> tuple[dict[str, Any], int, bool]:
        """What a write starts from, its revision, and whether it is known to be current: the watch cache's copy
        unless `current` is asked for (upstream's cached suggestion to GuaranteedUpdate, one read from etcd less
        per write; the write is conditional on the revision, so a cache behind etcd costs a retry, not a lost
        write), else the stored object. Not for dry runs (nothing is written to catch a stale answer), nor for
        custom resources (their cache holds them defaulted and pruned, not as stored)."""
        cache = self.cache(req.resource)
        if not current and not req.dry_run and cache.normalize is None:
            cached = cache.get(self.cache_key(req.namespace, req.name))
            if cached is not None:
                return cached.full(), cached.revision, False
        obj, revision = await self._read(req)
        return obj, revision, True

    async def latest(self, req: Request) -> dict[str, Any]:
        """The stored object as etcd has it now (with its resourceVersion), for writes built on it elsewhere."""
        obj, _revision = await self._read(req)
        return obj

    @staticmethod
    async def _store_call(awaitable: Any) -> Any:
        try:
            return await awaitable
        except StoreUnavailable as err:
            raise errors.ServiceUnavailable(f"etcd is unavailable: {err}") from err

    async def _lease(self, req: Request) -> int:
        """The etcd lease a write of this resource takes (0: none): its TTL starts again with every write."""
        ttl = self.strategies[req.resource.key].ttl
        return await self._store_call(self.leases.lease_for(ttl)) if ttl > 0 else 0

    async def _settle(self, req: Request, revision: int) -> None:
        """Let the watch cache catch up with our own write, so the client can read it back at once."""
        await self.cache(req.resource).wait_for(revision, own_write=True)

    # ---- create ----------------------------------------------------------------------------------------------

    def _check_namespace(self, req: Request, name: str) -> None:
        if not req.resource.namespaced:
            return
        ns = self.caches["namespaces"].get(req.namespace)
        if ns is None:
            raise errors.not_found("namespaces", req.namespace)
        if ns.obj["metadata"].get("deletionTimestamp"):
            raise errors.namespace_terminating(req.resource.plural, name, req.namespace, req.resource.group)

    def _invalid(self, req: Request, obj: dict[str, Any], errs: list[FieldError]) -> errors.Invalid:
        name = obj["metadata"].get("name") or obj["metadata"].get("generateName", "")
        return errors.invalid_object(req.resource.kind, name, errs, req.resource.group)

    def _validate(self, req: Request, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        strategy = self.strategies[req.resource.key]
        errs = validate_object_meta(obj["metadata"], namespaced=req.resource.namespaced, name_rule=strategy.name_rule)
        if old is not None:
            errs += _immutable_meta(obj, old)
        if req.subresource and old is not None:
            errs += strategy.validate_subresource_update(req.subresource, obj, old)
        else:
            errs += strategy.validate(obj, old)
        if errs:
            raise self._invalid(req, obj, errs)

    def _check_txn_size(self, req: Request, obj: dict[str, Any], allocation: Allocation) -> None:
        """An object and its claims commit in one etcd transaction, which etcd bounds (`--max-txn-ops`): a write
        that cannot fit is an invalid object (422), never an unavailable etcd (503)."""
        claims = allocation.claims
        excess = 1 + len(claims.take) + len(claims.release) - MAX_TXN_OPS
        if excess > 0:
            raise self._invalid(req, obj, self.strategies[req.resource.key].too_many_claims(obj, excess))

    async def create(self, req: Request, obj: dict[str, Any], *, applied: bool = False) -> dict[str, Any]:
        """POST (and an apply that creates: then `obj` carries its managedFields already)."""
        obj.setdefault("apiVersion", req.resource.api_version)
        obj.setdefault("kind", req.resource.kind)
        meta = obj.setdefault("metadata", {})
        if req.resource.namespaced:
            meta["namespace"] = req.namespace
        else:  # upstream's BeforeCreate clears it on a cluster-scoped kind
            meta.pop("namespace", None)
        strategy = self.strategies[req.resource.key]
        generated = not meta.get("name") and bool(meta.get("generateName"))
        for field_name in ("resourceVersion", *SYSTEM_FIELDS):
            meta.pop(field_name, None)
        # system fields first, as upstream's store fills them before the strategy runs (a Job's selector names its uid)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now()
        if generated:  # named with them too: a Job's strategy labels its template with its name
            meta["name"] = generate_name(meta["generateName"])
        if strategy.tracks_generation:
            meta["generation"] = 1
        if "managedFields" in meta:  # last, as upstream's ObjectMeta has it
            meta["managedFields"] = meta.pop("managedFields")
        strategy.prepare_create(obj)
        drop_omitted_zeros(obj)
        strategy.record_requester(obj, req.user)
        if not applied:
            await fieldmanager.schemas_ready()
            fieldmanager.update(req.field_write(strategy), None, obj)
        await self.admission.mutate(req, obj, None)
        strategy.prepare_admitted(obj)
        admitted = False  # validating admission runs once: a retry with another name or pick is the same request
        for attempt in range(_CREATE_ATTEMPTS):
            if generated and attempt:  # the name was taken meanwhile
                meta["name"] = generate_name(meta["generateName"])
            self._check_namespace(req, meta.get("name", ""))
            key = self.key(Request(req.resource, req.namespace, meta.get("name", "")))
            candidate = json_copy(obj) if strategy.allocates else obj
            allocation = strategy.allocate(candidate, None, req.dry_run)
            try:
                self._validate(req, candidate, None)
                self._check_txn_size(req, candidate, allocation)
                if not admitted:
                    await self.admission.validate(req, candidate, None)
                    admitted = True
                if req.dry_run:
                    return candidate
                value = _strip_for_storage(candidate, strategy.storage_api_version)
                lease = await self._lease(req)
                revision = await self._store_call(self.store.create(key, value, allocation.claims, lease=lease))
                allocation.committed(revision)
            except KeyExists as err:
                if err.key != key:
                    if err.key in allocation.conflicts:
                        raise allocation.conflicts[err.key] from None
                    continue  # a value we picked was taken meanwhile: pick again
                if generated:
                    continue
                raise errors.already_exists(req.resource.plural, meta["name"], req.resource.group) from None
            finally:
                allocation.finished()
            candidate["metadata"]["resourceVersion"] = str(revision)
            await self._settle(req, revision)
            return candidate
        if generated:
            raise errors.already_exists(req.resource.plural, meta["name"], req.resource.group)
        raise errors.conflict(req.resource.plural, meta["name"], req.resource.group, reason="allocation kept failing")

    # ---- update and patch ------------------------------------------------------------------------------------

    async def update(self, req: Request, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """PUT: returns (object, created). Started from the watch cache's copy, as a patch is (a node's Lease
        renewal, 500 a second with 5,000 nodes, reads nothing from etcd)."""
        strategy = self.strategies[req.resource.key]

        async def attempt(old: dict[str, Any], revision: int, current: bool) -> tuple[dict[str, Any], bool]:
            wanted = body["metadata"].get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise errors.conflict(req.resource.plural, req.name, req.resource.group)
            new = body if current else json_copy(body)  # a try on a stale copy must leave the body as sent
            return await self._write(req, new, old, revision, retry_on_conflict=True, current=current), False

        async def create() -> tuple[dict[str, Any], bool]:
            if not strategy.allow_create_on_update or req.subresource:
                raise errors.not_found(req.resource.plural, req.name, req.resource.group)
            return await self.create(req, body), True

        return await self._on_latest(req, attempt, missing=create)

    async def patch(
        self,
        req: Request,
        patch: bytes,
        content_type: str,
        *,
        check: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        view: Converted | None = None,
    ) -> dict[str, Any]:
        """PATCH: apply to the latest stored object (as the `view` version serves it, when the request is for one);
        retry when someone else wrote in between."""

        async def attempt(old: dict[str, Any], revision: int, current: bool) -> dict[str, Any]:
            new = apply_patch(view.out(old) if view else old, patch, content_type, kind=req.resource.kind)
            if not isinstance(new.get("metadata"), dict):
                raise errors.BadRequest("metadata must be an object")
            if check is not None:
                await check(new)
            wanted = new["metadata"].get("resourceVersion")
            if wanted and wanted != old["metadata"]["resourceVersion"]:
                raise errors.conflict(req.resource.plural, req.name, req.resource.group)
            if view is not None:
                new = view.into(new)
            return await self._write(req, new, old, revision, retry_on_conflict=True, current=current)

        return await self._on_latest(req, attempt)

    async def apply(
        self,
        req: Request,
        config: dict[str, Any],
        *,
        force: bool,
        view: Converted | None = None,
        served: ResourceInfo | None = None,
        create: bool = True,
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply of `config` (in the `served` resource's version): returns (object, created). An object
        that is not there is created, except through a subresource (or when not to `create`); a write in between is
        retried, as upstream's patcher does."""
        strategy = self.strategies[req.resource.key]
        write = req.field_write(strategy, served)
        await fieldmanager.schemas_ready()
        for _attempt in range(_UPDATE_ATTEMPTS):
            try:
                old: dict[str, Any] | None
                old, revision = await self._read(req)
            except errors.NotFound:
                if req.subresource or not create:
                    raise
                old, revision = None, 0
            live = view.out(old) if view is not None and old is not None else old
            new = fieldmanager.apply(write, live, config, force=force)
            self._check_applied(req, new, old)
            if view is not None:
                new = view.into(new)
            if old is None:
                try:
                    return await self.create(req, new, applied=True), True
                except errors.AlreadyExists:
                    continue  # created meanwhile: apply to it
            try:
                return await self._write(req, new, old, revision, retry_on_conflict=True, applied=True), False
            except RevisionConflict:
                continue
        raise errors.conflict(req.resource.plural, req.name, req.resource.group)

    def _check_applied(self, req: Request, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """The applied object's identity against the URL (upstream's checkName and namespace check)."""
        meta = new["metadata"] if isinstance(new.get("metadata"), dict) else new.setdefault("metadata", {})
        name, namespace = meta.get("name", ""), meta.get("namespace", "")
        if name != req.name:
            raise errors.BadRequest(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
        if not req.resource.namespaced:
            meta.pop("namespace", None)
        elif namespace and namespace != req.namespace:
            raise errors.BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if old is None:
            if meta.get("uid"):
                reason = f"uid mismatch: the provided object specified uid {meta['uid']}, and no existing object was "
                reason += "found"
                raise errors.conflict(req.resource.plural, req.name, req.resource.group, reason=reason)
            return
        wanted = meta.get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise errors.conflict(req.resource.plural, req.name, req.resource.group)

    async def _write(
        self,
        req: Request,
        new: dict[str, Any],
        old: dict[str, Any],
        revision: int,
        *,
        retry_on_conflict: bool = False,
        applied: bool = False,
        current: bool = True,
    ) -> dict[str, Any]:
        """The write itself; `applied`: `new` comes from an apply, with its managedFields recorded already;
        `current`: `old` is known to be the stored object (else a write that changes nothing of it raises
        MaybeStale, as it might change the stored one)."""
        strategy = self.strategies[req.resource.key]
        self._keep_identity(req, new, old)
        entries = new["metadata"].get("managedFields") if applied else None
        if req.subresource == "status":
            strategy.prepare_status_update(new, old)
        elif req.subresource:
            strategy.prepare_subresource_update(req.subresource, new, old)
        else:
            strategy.prepare_update(new, old)
            _keep_system_meta(new, old, strategy)
        drop_omitted_zeros(new, old)
        if applied:  # a subresource write keeps the stored metadata: the applied entries go on it
            fieldmanager.restore_entries(new, entries)
        else:
            await fieldmanager.schemas_ready()
            fieldmanager.update(req.field_write(strategy), old, new)
        await self.admission.mutate(req, new, old)
        allocates = strategy.allocates and not req.subresource
        admitted = False
        for _attempt in range(_CREATE_ATTEMPTS):
            candidate = json_copy(new) if allocates else new
            allocation = strategy.allocate(candidate, old, req.dry_run) if allocates else Allocation()
            try:
                self._validate(req, candidate, old)
                self._check_txn_size(req, candidate, allocation)
                if not admitted:
                    await self.admission.validate(req, candidate, old)
                    admitted = True
                if _same(candidate, old):
                    if not current:
                        raise MaybeStale
                    return old
                if req.dry_run:
                    return candidate
                if old["metadata"].get("deletionTimestamp") and not strategy.finalizing(candidate):
                    return await self._delete_stored(req, candidate, revision)
                written = await self._store_update(req, candidate, revision, allocation)
            except RevisionConflict:
                if retry_on_conflict:
                    raise
                raise errors.conflict(req.resource.plural, req.name, req.resource.group) from None
            except KeyExists as err:
                if err.key in allocation.conflicts:
                    raise allocation.conflicts[err.key] from None
                continue  # a value we picked was taken meanwhile: pick again
            finally:
                allocation.finished()
            return written
        raise errors.conflict(req.resource.plural, req.name, req.resource.group, reason="allocation kept failing")

    async def _store_update(
        self, req: Request, new: dict[str, Any], revision: int, allocation: Allocation | None = None
    ) -> dict[str, Any]:
        allocation = allocation or Allocation()
        storage_api_version = self.strategies[req.resource.key].storage_api_version
        value, lease = _strip_for_storage(new, storage_api_version), await self._lease(req)
        try:
            written = await self._store_call(
                self.store.update(
                    self.key(req), value, expected_revision=revision, claims=allocation.claims, lease=lease
                )
            )
        except KeyNotFound:
            raise errors.not_found(req.resource.plural, req.name, req.resource.group) from None
        allocation.committed(written)
        new["metadata"]["resourceVersion"] = str(written)
        await self._settle(req, written)
        return new

    async def guaranteed_update(
        self,
        req: Request,
        mutate: Callable[[dict[str, Any]], None],
        preconditions: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Upstream's GuaranteedUpdate: `mutate` the latest stored object (it may raise an ApiError) and write it
        back conditionally on its revision, retrying when someone else wrote in between. No strategy runs: this is
        for subresources (pods/binding) that change a few fields the API user may not write directly."""

        async def attempt(old: dict[str, Any], revision: int, _current: bool) -> dict[str, Any]:
            _check_preconditions(req, old, preconditions or {})
            new = old  # a fresh decoding (of etcd's value or the cache's), ours to change
            mutate(new)
            if req.dry_run:
                return new
            return await self._store_update(req, new, revision)

        return await self._on_latest(req, attempt)

    async def _on_latest(
        self,
        req: Request,
        attempt: Callable[[dict[str, Any], int, bool], Awaitable[_T]],
        *,
        missing: Callable[[], Awaitable[_T]] | None = None,
    ) -> _T:
        """Upstream's GuaranteedUpdate loop with its cached suggestion: `attempt(old, revision, current)` on the
        watch cache's copy first, again on the stored object when that copy proves old (a revision conflict, a
        write that changes nothing of it, any error judged on it), and again while someone else writes in between.
        `missing`: what to do instead when the object is not there (else NotFound)."""
        current = False
        for _attempt in range(_UPDATE_ATTEMPTS):
            try:
                old, revision, current = await self._start(req, current)
            except errors.NotFound:
                if missing is None:
                    raise
                return await missing()
            try:
                return await attempt(old, revision, current)
            except (RevisionConflict, MaybeStale):
                current = True
            except errors.ApiError:
                if current:
                    raise
                current = True  # judged on what may be an old state: judged again on the stored one
        raise errors.conflict(req.resource.plural, req.name, req.resource.group)

    def _keep_identity(self, req: Request, new: dict[str, Any], old: dict[str, Any]) -> None:
        meta = new.setdefault("metadata", {})
        body_name = meta.get("name")
        if body_name and body_name != req.name:
            raise errors.BadRequest(
                f"the name of the object ({body_name}) does not match the name on the URL ({req.name})"
            )
        meta["name"] = req.name
        if req.resource.namespaced:
            meta["namespace"] = req.namespace
        else:  # and BeforeUpdate
            meta.pop("namespace", None)
        # a custom resource is written in the request's version (and validated in it); stored in the storage one
        custom = req.resource.custom is not None
        new["apiVersion"] = req.resource.api_version if custom else old.get("apiVersion", req.resource.api_version)
        new["kind"] = old.get("kind", req.resource.kind)

    # ---- delete ----------------------------------------------------------------------------------------------

    async def delete(self, req: Request, options: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """DELETE: returns (object to answer with, whether it is gone already)."""
        strategy = self.strategies[req.resource.key]
        for _attempt in range(_UPDATE_ATTEMPTS):
            old, revision = await self._read(req)
            _check_preconditions(req, old, options.get("preconditions") or {})
            strategy.check_delete(old)
            pending = json_copy(old)
            if not _start_grace_period(strategy, pending, options.get("gracePeriodSeconds")):
                return old, False  # a graceful deletion is under way and not shortened: nothing changes
            strategy.mark_deleting(pending)
            _gc_finalizers(pending, options, strategy.gc_policy)
            if strategy.finalizing(pending):
                if req.dry_run or pending == old:
                    return pending, False
                try:
                    return await self._store_update(req, pending, revision), False
                except RevisionConflict:
                    continue
            if req.dry_run:
                return old, True
            try:
                return await self._delete_stored(req, old, revision), True
            except RevisionConflict:
                continue
        raise errors.conflict(req.resource.plural, req.name, req.resource.group)

    async def _delete_stored(self, req: Request, obj: dict[str, Any], revision: int) -> dict[str, Any]:
        try:
            release = self.strategies[req.resource.key].release(obj)
            _, written = await self._store_call(
                self.store.delete(self.key(req), expected_revision=revision, claims=release.claims)
            )
            release.committed(written)
        except KeyNotFound:
            raise errors.not_found(req.resource.plural, req.name, req.resource.group) from None
        obj["metadata"]["resourceVersion"] = str(written)
        await self._settle(req, written)
        return obj


def _start_grace_period(strategy: Strategy, obj: dict[str, Any], requested: int | None) -> bool:
    """Upstream's BeforeDelete: a first DELETE of a kind with graceful deletion sets `deletionTimestamp` to when the
    grace period ends and `deletionGracePeriodSeconds`; a later one may only shorten it (to 0: gone now). False when
    a graceful deletion is pending and this DELETE does not shorten it."""
    meta = obj["metadata"]
    if requested is not None and requested < 0:
        requested = 1  # negative periods count as one second, as upstream's
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if not current:
            return True  # deleting without a grace period (finalizers, or an interrupted deletion): as before
        if requested is None or requested >= current:
            return False
        ends = parse_time(meta["deletionTimestamp"])
        if ends is not None:
            meta["deletionTimestamp"] = _stamp(ends - timedelta(seconds=current - requested))
        meta["deletionGracePeriodSeconds"] = requested
        return True
    period = strategy.grace_period(obj, requested)
    if period is not None:
        meta["deletionTimestamp"] = _stamp(datetime.now(UTC) + timedelta(seconds=period))
        meta["deletionGracePeriodSeconds"] = period
    return True


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _gc_finalizers(obj: dict[str, Any], options: dict[str, Any], default: str) -> None:
    """Upstream's deletionFinalizersForGarbageCollection: the propagation finalizer the garbage collector carries out
    (`orphan` or `foregroundDeletion`, the other one removed), chosen by the request's options, else by the one the
    object already has, else by the kind's default policy. The object then stays, with `deletionTimestamp`, until
    its dependents are orphaned or deleted."""
    finalizers = list(obj["metadata"].get("finalizers") or [])
    wanted = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if default != GC_UNSUPPORTED:
        policy = _propagation(options) or next(
            (_FINALIZER_POLICIES[f] for f in finalizers if f in _FINALIZER_POLICIES), None
        )
        if policy == "Orphan" or (policy is None and default == ORPHAN_DEPENDENTS):
            wanted.append(ORPHAN_FINALIZER)
        elif policy == "Foreground":
            wanted.append(FOREGROUND_FINALIZER)
    if set(wanted) == set(finalizers):
        return
    if wanted:
        obj["metadata"]["finalizers"] = wanted
    else:
        obj["metadata"].pop("finalizers", None)


def _propagation(options: dict[str, Any]) -> str | None:
    """The propagation policy a DELETE asked for, the deprecated `orphanDependents` boolean included."""
    if options.get("orphanDependents") is not None:
        return "Orphan" if options["orphanDependents"] else "Background"
    policy = options.get("propagationPolicy")
    return None if policy is None else str(policy)


def asks_no_propagation(options: dict[str, Any]) -> bool:
    """Whether a DELETE leaves the propagation to the kind's default (upstream warns about that for Jobs)."""
    return _propagation(options) is None


def _same(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """An update that changes nothing is not written (upstream skips the etcd write too)."""
    a = {**new, "metadata": {k: v for k, v in new["metadata"].items() if k != "resourceVersion"}}
    b = {**old, "metadata": {k: v for k, v in old["metadata"].items() if k != "resourceVersion"}}
    return a == b


def _keep_system_meta(new: dict[str, Any], old: dict[str, Any], strategy: Strategy) -> None:
    meta, old_meta = new["metadata"], old["metadata"]
    for name in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
        _copy_field(old_meta, meta, name)
    meta.setdefault("uid", old_meta.get("uid"))
    if strategy.tracks_generation and strategy.bumps_generation(new, old):
        meta["generation"] = int(old_meta.get("generation", 0)) + 1


def _immutable_meta(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    uid = new["metadata"].get("uid")
    if uid != old["metadata"].get("uid"):
        return [invalid("metadata.uid", uid, "field is immutable")]
    return []


def _check_preconditions(req: Request, obj: dict[str, Any], preconditions: dict[str, Any]) -> None:
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta.get("uid"):
        message = f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}"
        raise errors.conflict(req.resource.plural, req.name, req.resource.group, reason=message)
    if rv and rv != meta.get("resourceVersion"):
        message = (
            f"Precondition failed: ResourceVersion in precondition: {rv}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
        )
        raise errors.conflict(req.resource.plural, req.name, req.resource.group, reason=message)
