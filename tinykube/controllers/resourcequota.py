"""The ResourceQuota controller: keeps each quota's `status` — `hard` a copy of `spec.hard`, `used` what the objects
of its namespace in its scopes use — as upstream's resourcequota controller does.

Admission charges a quota before it admits a write (tinykube/apiserver/admission/resourcequota.py); this
controller recounts from its caches when a quota is new or its limits change, when something gives quota back (a
deletion, a pod that finished, a Service that is no longer a NodePort, a claim that shrank), and every `RESYNC`
seconds (upstream's --resource-quota-sync-period), which also returns what admission charged for writes that failed
after it. A create does not trigger a recount, as upstream: admission charged it already, and a count from a cache
that has not seen the create yet would take the charge back.

Objects are counted from shared informers, started for a resource only once a quota names it.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from tinykube.api.jsonshape import as_dict
from tinykube.api.quantity import ResourceList, rendered, resource_list
from tinykube.api.quota import Evaluator, evaluator_of_name, scope_requirements, usage_in
from tinykube.api.resources import STORED, ResourceInfo, builtin
from tinykube.client.controller import Loop, Resync, run_controller
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

Object = dict[str, Any]
QUOTAS = builtin("", "v1", "resourcequotas")
WORKERS = 5  # upstream's --concurrent-resource-quota-syncs
RESYNC = 300.0  # seconds, upstream's --resource-quota-sync-period


def _served(group: str, plural: str) -> ResourceInfo | None:
    return next((r for r in STORED if r.group == group and r.plural == plural), None)


def needs_sync(quota: Object) -> bool:
    """`status.hard` is not `spec.hard` yet, or a limited resource has no usage yet."""
    hard = resource_list(as_dict(quota.get("spec")).get("hard"))
    status = as_dict(quota.get("status"))
    used = as_dict(status.get("used"))
    return resource_list(status.get("hard")) != hard or any(name not in used for name in hard)


def by_evaluator(names: list[str]) -> dict[Evaluator, list[str]]:
    """A quota's resource names grouped by the evaluator that measures them (names none measures are left out)."""
    grouped: dict[Evaluator, list[str]] = {}
    for name in names:
        evaluator = evaluator_of_name(name)
        if evaluator is not None:
            grouped.setdefault(evaluator, []).append(name)
    return grouped


class ResourceQuotaController:
    def __init__(self, ctx: ControllerContext, *, resync: float = RESYNC) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.quotas: Informer = ctx.informers.informer(QUOTAS)
        self.counted: dict[tuple[str, str], Informer] = {}  # (group, plural) -> the informer of objects counted
        self.queue: WorkQueue[str] = WorkQueue()
        self.resync = resync

    async def run(self) -> None:
        self.quotas.add_handler(on_add=self._quota_added, on_update=self._quota_updated)
        resync = Resync(self.resync, self._every_quota)
        await run_controller(self.informers, [self.quotas], Loop(self.queue, self.sync, workers=WORKERS, resync=resync))

    # ---- what triggers a recount --------------------------------------------------------------------------------

    def _quota_added(self, quota: Object) -> None:
        self.queue.add(object_key(quota))

    def _quota_updated(self, old: Object, new: Object) -> None:
        if as_dict(old.get("spec")) != as_dict(new.get("spec")) or needs_sync(new):
            self.queue.add(object_key(new))

    def _released(self, evaluator: Evaluator, obj: Object) -> None:
        """Something in a namespace gave quota back: recount the quotas there that limit its resource."""
        namespace = obj["metadata"].get("namespace", "")
        for quota in self.quotas.store.by_index("namespace", namespace):
            if evaluator.matching_resources(as_dict(as_dict(quota.get("spec")).get("hard"))):
                self.queue.add(object_key(quota))

    def _updated(self, evaluator: Evaluator, old: Object, new: Object) -> None:
        if evaluator.replenishes(old, new, time.time()):
            self._released(evaluator, new)

    def _every_quota(self) -> list[str]:
        return [object_key(quota) for quota in self.quotas.store.list()]

    def _counting(self, evaluator: Evaluator) -> Informer | None:
        """The informer of the objects `evaluator` counts, started (with the handlers that notice quota given
        back) the first time a quota needs it; None for a resource this apiserver does not serve."""
        key = (evaluator.group, evaluator.plural)
        informer = self.counted.get(key)
        if informer is None:
            resource = _served(*key)
            if resource is None:
                return None
            informer = self.counted[key] = self.informers.informer(resource)
            informer.add_handler(
                on_update=functools.partial(self._updated, evaluator),
                on_delete=functools.partial(self._released, evaluator),
            )
            self.informers.start()
        return informer

    # ---- the recount ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        quota = self.quotas.store.get(key)
        if quota is None:
            return
        namespace = quota["metadata"]["namespace"]
        hard = as_dict(as_dict(quota.get("spec")).get("hard"))
        requirements = scope_requirements(quota)
        status = as_dict(quota.get("status"))
        used: ResourceList = resource_list(status.get("used"))
        for evaluator, names in by_evaluator(list(hard)).items():
            informer = self._counting(evaluator)
            if informer is None:
                continue
            await informer.wait_synced()
            used.update(usage_in(evaluator, names, requirements, informer.store.by_index("namespace", namespace)))
        used = {name: value for name, value in used.items() if name in hard}
        if resource_list(status.get("hard")) == resource_list(hard) and resource_list(status.get("used")) == used:
            return
        update = {**quota, "status": {**status, "hard": dict(hard), "used": rendered(used)}}
        await self.client.update(QUOTAS, namespace, update, subresource="status")  # a conflict: synced again
