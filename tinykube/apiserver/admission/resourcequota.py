"""The ResourceQuota admission plugin: a write that would take a namespace past one of its quotas is refused (403),
and one that fits is charged to the quotas' `status.used` *before* it is admitted, by a write conditional on the
quota's resourceVersion — so concurrent creates, here or on another apiserver, cannot exceed a quota between them.
The quota controller recounts later and gives back what was charged for writes that then failed, and what
deleted objects used.

As upstream's plugin, requests are evaluated per namespace in batches: while one batch's quota writes are in
flight, the requests that arrive queue up, and the next batch is checked and charged with one write per quota. A
write that conflicts (someone else charged or recounted first) is retried against the quota as etcd has it now,
three times, as upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from tinykube.api import errors
from tinykube.api.quota import CREATE, UPDATE, Evaluator, evaluator_for
from tinykube.api.resources import ResourceInfo, builtin
from tinykube.apiserver.admission.chain import Object, Plugin, forbidden, is_core
from tinykube.apiserver.admission.index import NamespaceIndex
from tinykube.apiserver.admission.quotacheck import QuotaState, Refused, check_request
from tinykube.apiserver.registry.generic import Registry, Request

RESOURCE_QUOTAS = builtin("", "v1", "resourcequotas")
ATTEMPTS = 4  # the first write and upstream's three retries


@dataclass(eq=False)
class _Waiter:
    req: Request
    obj: Object
    old: Object | None
    evaluator: Evaluator
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def finish(self, error: BaseException | None = None) -> None:
        if not self.done.done():
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)


class ResourceQuota(Plugin):
    name = "ResourceQuota"

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.quotas = NamespaceIndex(registry.cache(RESOURCE_QUOTAS))
        self._queued: dict[str, list[_Waiter]] = {}  # namespace -> requests waiting for the next batch
        self._batches: dict[str, asyncio.Task[None]] = {}

    def handles(self, resource: ResourceInfo) -> bool:
        return resource.namespaced and not is_core(resource, "events")  # upstream ignores Events

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        if req.subresource or not req.namespace:
            return
        evaluator = evaluator_for(req.resource.group, req.resource.plural)
        if not evaluator.handles(UPDATE if old is not None else CREATE) or not self.quotas.objects(req.namespace):
            return
        waiter = _Waiter(req, obj, old, evaluator)
        self._queued.setdefault(req.namespace, []).append(waiter)
        if req.namespace not in self._batches:
            self._batches[req.namespace] = asyncio.create_task(self._drain(req.namespace))
        await waiter.done

    async def _drain(self, namespace: str) -> None:
        """Check the namespace's queued requests batch after batch until none is left."""
        try:
            while batch := self._queued.pop(namespace, None):
                try:
                    quotas = [QuotaState.of(obj) for obj in self.quotas.objects(namespace)]
                    await self._check(quotas, batch, ATTEMPTS)
                except BaseException as err:  # never leave a request waiting
                    for waiter in batch:
                        waiter.finish(err if isinstance(err, Exception) else errors.ServiceUnavailable(str(err)))
                    if not isinstance(err, Exception):
                        raise
        finally:
            del self._batches[namespace]

    async def _check(self, quotas: list[QuotaState], waiters: list[_Waiter], attempts: int) -> None:
        """Upstream's `checkQuotas`: charge each request in turn to the running quotas, then write the quotas that
        changed; the requests that changed one are admitted once every write succeeded."""
        original = quotas
        charged = []
        for waiter in waiters:
            operation = UPDATE if waiter.old is not None else CREATE
            try:
                after = check_request(quotas, waiter.evaluator, waiter.obj, waiter.old, operation)
            except Refused as err:
                waiter.finish(forbidden(waiter.req, waiter.obj, str(err)))
                continue
            if waiter.req.dry_run or all(a.used == b.used for a, b in zip(after, quotas, strict=True)):
                waiter.finish()
                continue
            quotas = after
            charged.append(waiter)
        if not charged:
            return
        failed, error = await self._write(quotas, original)
        if not failed:
            for waiter in charged:
                waiter.finish()
        elif attempts <= 1:
            for waiter in charged:
                waiter.finish(error)
        else:  # those charged to the quotas written keep their charge; the rest is checked again
            await self._check(await self._latest(failed), charged, attempts - 1)

    async def _write(
        self, quotas: list[QuotaState], original: list[QuotaState]
    ) -> tuple[list[QuotaState], errors.ApiError | None]:
        """Write the quotas whose usage changed; those that failed, and the last error."""
        failed, error = [], None
        for quota, before in zip(quotas, original, strict=True):
            if quota.used == before.used:
                continue
            meta = quota.obj["metadata"]
            request = Request(RESOURCE_QUOTAS, meta["namespace"], meta["name"], subresource="status")
            try:
                await self.registry.update(request, quota.body())
            except errors.ApiError as err:
                failed.append(quota)
                error = err
        return failed, error

    async def _latest(self, quotas: list[QuotaState]) -> list[QuotaState]:
        """The quotas as etcd has them now (a deleted one no longer counts)."""
        fresh = []
        for quota in quotas:
            meta = quota.obj["metadata"]
            with contextlib.suppress(errors.NotFound):
                latest = await self.registry.latest(Request(RESOURCE_QUOTAS, meta["namespace"], meta["name"]))
                fresh.append(QuotaState.of(latest))
        return fresh
