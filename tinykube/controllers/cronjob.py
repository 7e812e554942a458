"""The CronJob controller: Jobs from a schedule, as upstream's (cronjob_controllerv2).

At each scheduled time (in `timeZone`, a `TZ=` prefix, else UTC: tinykube's controllers run in UTC) a Job named
`<cronjob>-<scheduled time in minutes since the epoch>` is made from `jobTemplate`, unless the time is older than
`startingDeadlineSeconds` or `concurrencyPolicy: Forbid` finds a Job still running (`Replace` deletes it first).
Only the most recent missed time is run, as upstream. `status.active` lists the running Jobs,
`lastScheduleTime`/`lastSuccessfulTime` are kept, and finished Jobs beyond `successfulJobsHistoryLimit` (3) and
`failedJobsHistoryLimit` (1) are deleted. Schedules are read by the apiserver's own parser (robfig's rules, then
croniter).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tinykube.api import errors
from tinykube.api.cron import DESCRIPTORS, ScheduleError, check_schedule
from tinykube.api.golang import parse_go_duration
from tinykube.api.meta import parse_time
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.job import JOBS, finished
from tinykube.controllers.ownership import CONTROLLER_INDEX, controller_of, controller_ref, controller_uid

log = logging.getLogger(__name__)

Object = dict[str, Any]
CRONJOBS = builtin("batch", "v1", "cronjobs")
WORKERS = 5  # upstream's --concurrent-cron-job-syncs
COMPONENT = "cronjob-controller"
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
TOO_MANY_MISSED = 100


class Schedule:
    """A CronJob's schedule in its zone: the times it fires after a moment."""

    def __init__(self, cronjob: Object) -> None:
        spec = cronjob["spec"]
        location, expression = check_schedule(str(spec.get("schedule", "")))
        self.zone = ZoneInfo(spec.get("timeZone") or location or "UTC")
        self.every = parse_go_duration(expression[len("@every ") :]) if expression.startswith("@every ") else None
        self.expression = DESCRIPTORS.get(expression, expression)

    def count(self, after: datetime, until: datetime, limit: int) -> int:
        """How many times it fired in (after, until], counted up to `limit`."""
        found, moment = 0, after
        while found < limit:
            moment = self.next(moment)
            if moment > until:
                break
            found += 1
        return found

    def latest(self, after: datetime, until: datetime) -> datetime | None:
        """The most recent time in (after, until], if any (upstream's mostRecentScheduleTime)."""
        if self.every is not None:
            step = timedelta(seconds=max(int(self.every), 1))
            start = after.replace(microsecond=0)
            fired = (until - start) // step
            return start + fired * step if fired >= 1 else None
        from croniter import croniter  # type: ignore[import-untyped]

        found: datetime = croniter(self.expression, (until + timedelta(seconds=1)).astimezone(self.zone)).get_prev(
            datetime
        )
        return found.astimezone(UTC) if found.astimezone(UTC) > after else None

    def next(self, after: datetime) -> datetime:
        if self.every is not None:  # robfig: the interval from the last run, rounded to the second
            return after.replace(microsecond=0) + timedelta(seconds=max(int(self.every), 1))
        from croniter import croniter  # type: ignore[import-untyped]  # imported on use, as the apiserver does

        found: datetime = croniter(self.expression, after.astimezone(self.zone)).get_next(datetime)
        return found.astimezone(UTC)


def job_name(cronjob: Object, scheduled: datetime) -> str:
    return f"{cronjob['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def job_reference(job: Object) -> Object:
    meta = job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "namespace": meta["namespace"],
        "uid": meta["uid"],
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class CronJobController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.cronjobs: Informer = ctx.informers.informer(CRONJOBS)
        self.jobs: Informer = ctx.informers.informer(JOBS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        with contextlib.suppress(ValueError):
            self.jobs.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.cronjobs.add_handler(on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new))
        self.jobs.add_handler(
            on_add=self._on_job, on_update=lambda _old, new: self._on_job(new), on_delete=self._on_job
        )
        await run_controller(
            self.informers, (self.cronjobs, self.jobs), Loop(self.queue, self.sync, workers=self.workers)
        )

    def _enqueue(self, cronjob: Object) -> None:
        self.queue.add(object_key(cronjob))

    def _on_job(self, job: Object) -> None:
        ref = controller_of(job)
        if ref and ref.get("kind") == "CronJob":
            self.queue.add(f"{job['metadata']['namespace']}/{ref['name']}")

    async def sync(self, key: str) -> None:
        cronjob = self.cronjobs.store.get(key)
        if cronjob is None or cronjob["metadata"].get("deletionTimestamp"):
            return
        cronjob = copy.deepcopy(cronjob)
        status = cronjob.setdefault("status", {})
        jobs = list(self.jobs.store.by_index(CONTROLLER_INDEX, cronjob["metadata"]["uid"]))
        await self._follow_jobs(cronjob, jobs)
        try:
            schedule = Schedule(cronjob)
        except (ScheduleError, ValueError) as err:  # stored before a stricter parser: say so, do nothing
            await self._event(cronjob, "Warning", "UnparseableSchedule", f"unparseable schedule: {err}")
            return
        now = datetime.now(UTC)
        if not cronjob["spec"].get("suspend"):
            await self._run_due(cronjob, schedule, jobs, now)
        await self._clean_history(cronjob, jobs)
        if status != (self.cronjobs.store.get(key) or {}).get("status"):
            with contextlib.suppress(errors.NotFound, errors.Conflict):  # the update's event brings a new sync
                await self.client.update(CRONJOBS, cronjob["metadata"]["namespace"], cronjob, subresource="status")
        self.queue.add_after(key, max((schedule.next(now) - datetime.now(UTC)).total_seconds(), 0.0) + 0.1)

    async def _follow_jobs(self, cronjob: Object, jobs: list[Object]) -> None:
        """`status.active` keeps the Jobs this controller made while they run (a finished one is reported once, a
        missing one dropped), and `lastSuccessfulTime` follows every Job of the CronJob that succeeded (one made by
        `kubectl create job --from=cronjob/...` too), as upstream's."""
        status = cronjob["status"]
        by_uid = {j["metadata"]["uid"]: j for j in jobs}
        active = []
        for ref in status.get("active") or []:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                await self._event(cronjob, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
            elif state := finished(job):
                message = f"Saw completed job: {job['metadata']['name']}, status: {state}"
                await self._event(cronjob, "Normal", "SawCompletedJob", message)
            else:
                active.append(job_reference(job))
        for job in jobs:
            if finished(job) == "Complete":
                completed = parse_time((job.get("status") or {}).get("completionTime"))
                last = parse_time(status.get("lastSuccessfulTime"))
                if completed is not None and (last is None or completed > last):
                    status["lastSuccessfulTime"] = _stamp(completed)
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    async def _run_due(self, cronjob: Object, schedule: Schedule, jobs: list[Object], now: datetime) -> None:
        spec, status = cronjob["spec"], cronjob["status"]
        created = parse_time(cronjob["metadata"].get("creationTimestamp")) or now
        earliest = parse_time(status.get("lastScheduleTime")) or created
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - timedelta(seconds=int(deadline)))
        scheduled = schedule.latest(earliest, now)  # only the most recent missed time runs
        if scheduled is None:
            return
        if schedule.count(earliest, now, TOO_MANY_MISSED + 1) > TOO_MANY_MISSED:
            message = "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
            await self._event(cronjob, "Warning", "TooManyMissedTimes", message)
        running = [j for j in jobs if not finished(j) and not j["metadata"].get("deletionTimestamp")]
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and running:
            message = "Not starting job because prior execution is running and concurrency policy is Forbid"
            await self._event(cronjob, "Normal", "JobAlreadyActive", message)
            return
        if policy == "Replace":
            for job in running:
                await self._delete_job(cronjob, job)
        name = job_name(cronjob, scheduled)
        made: Object | None
        try:
            made = await self.client.create(JOBS, cronjob["metadata"]["namespace"], self._new_job(cronjob, scheduled))
        except errors.AlreadyExists:
            made = None  # made by an earlier sync whose status write was lost
        except errors.ApiError as err:
            if not errors.is_namespace_terminating(err):
                await self._event(cronjob, "Warning", "FailedCreate", f"Error creating job: {err}")
            raise
        if made is not None:
            await self._event(cronjob, "Normal", "SuccessfulCreate", f"Created job {name}")
            status.setdefault("active", []).append(job_reference(made))
        status["lastScheduleTime"] = _stamp(scheduled)

    def _new_job(self, cronjob: Object, scheduled: datetime) -> Object:
        template = copy.deepcopy(cronjob["spec"].get("jobTemplate") or {})
        meta = template.get("metadata") or {}
        zone = ZoneInfo(cronjob["spec"].get("timeZone") or "UTC")
        annotations = dict(meta.get("annotations") or {})
        annotations[SCHEDULED_ANNOTATION] = scheduled.astimezone(zone).isoformat()
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job_name(cronjob, scheduled),
                "namespace": cronjob["metadata"]["namespace"],
                "labels": dict(meta.get("labels") or {}),
                "annotations": annotations,
                "ownerReferences": [controller_ref(cronjob, CRONJOBS)],
            },
            "spec": template.get("spec") or {},
        }

    async def _clean_history(self, cronjob: Object, jobs: list[Object]) -> None:
        spec = cronjob["spec"]
        limits = (("Complete", "successfulJobsHistoryLimit", 3), ("Failed", "failedJobsHistoryLimit", 1))
        for state, field, default in limits:
            limit = spec.get(field, default)
            done = sorted(
                (j for j in jobs if finished(j) == state and not j["metadata"].get("deletionTimestamp")),
                key=lambda j: (j.get("status") or {}).get("startTime") or j["metadata"].get("creationTimestamp") or "",
            )
            for job in done[: max(len(done) - int(limit), 0)]:
                await self._delete_job(cronjob, job)

    async def _delete_job(self, cronjob: Object, job: Object) -> None:
        meta = job["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self.client.delete(JOBS, meta["namespace"], meta["name"], propagationPolicy="Background")
            await self._event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {meta['name']}")

    async def _event(self, cronjob: Object, type_: str, reason: str, message: str) -> None:
        await record_event(self.client, cronjob, type_=type_, reason=reason, message=message, component=COMPONENT)
