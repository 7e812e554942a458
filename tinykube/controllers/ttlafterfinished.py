"""The TTL-after-finished controller: a finished Job with `ttlSecondsAfterFinished` is deleted (with its pods, in
the foreground) that many seconds after it finished, as upstream's."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import parse_time
from tinykube.client.controller import Loop, run_controller
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.job import JOBS, finished

Object = dict[str, Any]
WORKERS = 5  # upstream's --concurrent-ttl-after-finished-syncs


def finish_time(job: Object) -> float | None:
    """When the Job's Complete or Failed condition became True, as a Unix time."""
    kind = finished(job)
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            stamp = parse_time(condition.get("lastTransitionTime"))
            return stamp.timestamp() if stamp else None
    return None


class TtlAfterFinishedController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.jobs: Informer = ctx.informers.informer(JOBS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        self.jobs.add_handler(on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new))
        await run_controller(self.informers, [self.jobs], Loop(self.queue, self.sync, workers=self.workers))

    def _enqueue(self, job: Object) -> None:
        if (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and finished(job):
            self.queue.add(object_key(job))

    async def sync(self, key: str) -> None:
        job = self.jobs.store.get(key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        done = finish_time(job)
        if ttl is None or done is None:
            return
        left = done + int(ttl) - time.time()
        if left > 0:
            self.queue.add_after(key, left)
            return
        meta = job["metadata"]
        with contextlib.suppress(errors.NotFound):  # deleted already
            await self.client.delete(JOBS, meta["namespace"], meta["name"], propagationPolicy="Foreground")
