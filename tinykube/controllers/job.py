"""The Job controller: runs pods to completion, as upstream's.

`completions` pods must succeed (or, without `completions`, one, once no pod is active), at most `parallelism` at
a time; `completionMode: Indexed` gives each pod an index (`batch.kubernetes.io/job-completion-index`, the
`JOB_COMPLETION_INDEX` variable, hostname `<job>-<index>`) and is done when every index has succeeded. Pods carry
the `batch.kubernetes.io/job-tracking` finalizer until the Job has counted them: a finished pod's uid is first
written to `status.uncountedTerminatedPods`, then its finalizer is removed, then it moves to `succeeded` or
`failed`, so a restart can neither lose nor double a count. Failures: more than `backoffLimit` failed pods
(recreated after upstream's back-off, 10 s doubling to 6 min), `activeDeadlineSeconds`, or a `podFailurePolicy`
rule with `FailJob` (`Ignore` rules are not counted); then `FailureTarget`, the active pods deleted, and `Failed`.

An Indexed Job with `backoffLimitPerIndex` counts failures per index: each pod carries its index's count in
`batch.kubernetes.io/job-index-failure-count` (and `…-ignored-failure-count` for failures an `Ignore` rule matched),
one more than the pod it replaces, so an index's last failed pod keeps its finalizer (uncounted) until its
replacement exists; the back-off is the index's own. An index whose pod fails at its limit, or matches a `FailIndex`
rule, goes to `status.failedIndexes` and is not run again; the Job fails once more than `maxFailedIndexes` have
failed, or when no index is left to run and some failed.

Success gives `SuccessCriteriaMet` and `Complete`: every completion, or (Indexed) the first `successPolicy` rule
met, the pods still running deleted first. `suspend` deletes the active pods and holds the Job. A Job whose
`managedBy` names another controller is that controller's: not even its pods are touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import re
import time
from datetime import UTC, datetime
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.ownership import CONTROLLER_INDEX, claim, controller_of, controller_ref, controller_uid
from tinykube.controllers.pods import pod_ready
from tinykube.controllers.replicaset import selector_of, update_status

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
JOBS = builtin("batch", "v1", "jobs")
WORKERS = 5  # upstream's --concurrent-job-syncs
COMPONENT = "job-controller"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"  # the annotation, and (since 1.28) the label
POD_BATCH_PERIOD = 1.0  # seconds; upstream's syncJobBatchPeriod
ORPHAN = "orphan:"  # a work-queue key for a tracked pod whose Job is gone (+ the pod's key)
BACKOFF_BASE, BACKOFF_CAP = 10.0, 360.0  # upstream's DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
MANAGER = "kubernetes.io/job-controller"  # `spec.managedBy` naming this controller, as leaving it unset does
INT32_MAX = 2**31 - 1


def finished(job: Object) -> str:
    """ "Complete" or "Failed" when the Job has ended, else ""."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def pod_finished(pod: Object) -> bool:
    """Terminal, or being deleted (a deleted pod that did not succeed counts as failed, as upstream's with
    `podReplacementPolicy: TerminatingOrFailed`)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def pod_succeeded(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"


def index_of(pod: Object) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX_KEY)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def format_indexes(indexes: set[int]) -> str:
    """upstream's interval text for `completedIndexes` and `failedIndexes`: `1,3-5,7`; a run of two is written as
    two numbers (`6,7`), as upstream's orderedIntervals.String does."""
    runs: list[list[int]] = []
    for index in sorted(indexes):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ",".join(f"{a}" if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}" for a, b in runs)


def parse_indexes(text: str) -> set[int]:
    found: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            found.update(range(int(low), int(high or low) + 1))
    return found


def failure_rule(job: Object, pod: Object) -> tuple[int, Object] | None:
    """The first `podFailurePolicy` rule a failed pod matches (upstream's matchPodFailurePolicy), with its index."""
    rules = ((job.get("spec") or {}).get("podFailurePolicy") or {}).get("rules") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    conditions = (pod.get("status") or {}).get("conditions") or []
    for i, rule in enumerate(rules):
        codes = rule.get("onExitCodes")
        if codes:
            values, operator = set(codes.get("values") or []), codes.get("operator")
            for status in statuses:
                if codes.get("containerName") and status.get("name") != codes["containerName"]:
                    continue
                code = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
                if code is None or code == 0:
                    continue
                if (operator == "In") == (code in values):
                    return i, {**rule, "_container": status.get("name"), "_code": code}
        for wanted in rule.get("onPodConditions") or []:
            want = wanted.get("status", "True")
            if any(c.get("type") == wanted.get("type") and c.get("status") == want for c in conditions):
                return i, rule
    return None


def policy_action(job: Object, pod: Object) -> str | None:
    found = failure_rule(job, pod)
    return str(found[1].get("action")) if found else None


def managed_elsewhere(job: Object) -> bool:
    manager = (job.get("spec") or {}).get("managedBy")
    return manager is not None and manager != MANAGER


def per_index(job: Object) -> bool:
    """Failures counted per index (upstream's hasBackoffLimitPerIndex; validation allows it on Indexed Jobs only)."""
    spec = job.get("spec") or {}
    return spec.get("completionMode") == "Indexed" and spec.get("backoffLimitPerIndex") is not None


def completions_of(job: Object) -> int:
    return int((job.get("spec") or {}).get("completions") or 0)


def indexes_in(job: Object, field: str) -> set[int]:
    """`completedIndexes` or `failedIndexes`, without indexes past `completions` (a scaled-down Job keeps them)."""
    return {i for i in parse_indexes((job.get("status") or {}).get(field) or "") if i < completions_of(job)}


def annotated_count(pod: Object, key: str) -> int:
    """A failure-count annotation, 0 when absent or not an int32 of at least 0 (a user may have written it)."""
    value = (pod["metadata"].get("annotations") or {}).get(key)
    if not isinstance(value, str) or not re.fullmatch(r"[+-]?[0-9]+", value):
        return 0
    count = int(value)
    return count if 0 <= count <= INT32_MAX else 0


def index_failed(job: Object, pod: Object) -> bool:
    """upstream's isIndexFailed: a failed pod ends its index when it matches a `FailIndex` rule, or when it was its
    index's `backoffLimitPerIndex`-th retry and no `Ignore` rule matches it."""
    if not pod_finished(pod) or pod_succeeded(pod):
        return False
    action = policy_action(job, pod)
    if action == "FailIndex":
        return True
    return action != "Ignore" and annotated_count(pod, FAILURE_COUNT) >= int(job["spec"]["backoffLimitPerIndex"])


def failed_indexes(job: Object, pods: list[Object]) -> set[int]:
    """upstream's calculateFailedIndexes: the status's, and those of tracked (not yet counted) pods."""
    found = indexes_in(job, "failedIndexes")
    for pod in pods:
        index = index_of(pod)
        if index is not None and index < completions_of(job) and _tracked(pod) and index_failed(job, pod):
            found.add(index)
    return found


def delayed_pods(job: Object, pods: list[Object]) -> dict[int, Object]:
    """upstream's getPodsWithDelayedDeletionPerIndex: for each index neither done, failed nor running, its last
    failed pod, which keeps its finalizer (and stays uncounted) until a replacement exists, the only carrier of the
    index's failure counts and last failure time. None once the Job is ending: every pod is counted then."""
    if not per_index(job) or _condition_true(job, "FailureTarget") or _condition_true(job, "SuccessCriteriaMet"):
        return {}
    uncounted = (job.get("status") or {}).get("uncountedTerminatedPods") or {}
    listed = set(uncounted.get("succeeded") or []) | set(uncounted.get("failed") or [])
    closed = indexes_in(job, "completedIndexes") | indexes_in(job, "failedIndexes")
    closed |= {i for p in pods if not pod_finished(p) and (i := index_of(p)) is not None}
    kept: dict[int, Object] = {}
    for pod in pods:
        index = index_of(pod)
        if index is None or index >= completions_of(job) or index in closed or pod_succeeded(pod):
            continue
        if not pod_finished(pod) or not _tracked(pod) or pod["metadata"]["uid"] in listed:
            continue
        last = kept.get(index)
        if last is None or (_failures(last) <= _failures(pod) and _finished_at(pod) >= _finished_at(last)):
            kept[index] = pod
    return kept


def replacement_counts(job: Object, replaced: Object | None) -> tuple[int, int]:
    """The (counted, ignored) failure counts of a new pod for the index `replaced` failed in (upstream's
    getNewIndexFailureCounts)."""
    if replaced is None:
        return 0, 0
    counted, ignored = annotated_count(replaced, FAILURE_COUNT), annotated_count(replaced, IGNORED_COUNT)
    return (counted, ignored + 1) if policy_action(job, replaced) == "Ignore" else (counted + 1, ignored)


def index_backoff(replaced: Object | None, at: float) -> float:
    """Seconds before an index may run again: the back-off over all its failures, ignored ones too, from when its
    last failed pod finished (upstream's getRemainingTimePerIndex)."""
    if replaced is None:
        return 0.0
    return max(_finished_at(replaced) + back_off(_failures(replaced) + 1) - at, 0.0)


def back_off(failures: int) -> float:
    """upstream's delay after `failures` failures: 10 s doubling, capped (the exponent too: a user may write the
    count, and the cap is reached long before)."""
    return float(min(BACKOFF_BASE * 2 ** min(failures - 1, 16), BACKOFF_CAP))


def success_rule(job: Object) -> int | None:
    """The index of the first `successPolicy` rule the succeeded indexes meet (upstream's matchSuccessPolicy): all of
    its `succeededIndexes`, or `succeededCount` of them; or, without indexes, `succeededCount` indexes at all."""
    done = indexes_in(job, "completedIndexes")
    if not done:
        return None
    for i, rule in enumerate(((job.get("spec") or {}).get("successPolicy") or {}).get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            wanted = {x for x in parse_indexes(str(rule["succeededIndexes"])) if x < completions_of(job)}
            met = len(wanted & done)
            if wanted and (met == len(wanted) or (count is not None and met >= int(count))):
                return i
        elif count is not None and len(done) >= int(count):
            return i
    return None


def set_condition(job: Object, kind: str, status: str, reason: str, message: str) -> None:
    conditions = job.setdefault("status", {}).setdefault("conditions", [])
    stamp = now()
    for condition in conditions:
        if condition.get("type") == kind:
            if [condition.get(k) for k in ("status", "reason", "message")] == [status, reason, message]:
                return  # unchanged: no new probe time, so no write (upstream's ensureJobConditionStatus)
            if condition.get("status") != status:
                condition["lastTransitionTime"] = stamp
            condition.update(status=status, reason=reason, message=message, lastProbeTime=stamp)
            return
    conditions.append(
        {
            "type": kind,
            "status": status,
            "lastProbeTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }
    )


class JobController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        # written in the background, correlated as upstream's recorder (no client rate: tinykube models none)
        self.events = EventRecorder(ctx.client, COMPONENT, qps=0.0)
        self.jobs: Informer = ctx.informers.informer(JOBS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        with contextlib.suppress(ValueError):  # shared with other controllers, which may have added it
            self.pods.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.jobs.add_handler(
            on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new), on_delete=self._on_job_gone
        )
        self.pods.add_handler(on_add=self._on_pod_add, on_update=self._on_pod_update, on_delete=self._on_pod)
        await run_controller(
            self.informers,
            (self.jobs, self.pods),
            Loop(self.queue, self.sync, workers=self.workers),
            beside=[self.events.run],
        )

    def _enqueue(self, job: Object) -> None:
        self.queue.add(object_key(job))

    def _on_job_gone(self, job: Object) -> None:
        for pod in self.pods.store.by_index(CONTROLLER_INDEX, job["metadata"]["uid"]):
            if _tracked(pod):
                self.queue.add(ORPHAN + object_key(pod))

    def _on_pod_add(self, pod: Object) -> None:
        self._on_pod(pod)
        if controller_of(pod) is None:
            self._enqueue_selecting(pod)

    def _on_pod_update(self, old: Object, new: Object) -> None:
        old_ref, new_ref = controller_of(old), controller_of(new)
        if old_ref != new_ref and old_ref and old_ref.get("kind") == "Job":  # released: its old Job counts again
            self.queue.add_after(f"{old['metadata']['namespace']}/{old_ref['name']}", POD_BATCH_PERIOD)
        self._on_pod(new)
        if new_ref is None and (old_ref != new_ref or old["metadata"].get("labels") != new["metadata"].get("labels")):
            self._enqueue_selecting(new)  # an orphan now or newly labelled: a Job may adopt it

    def _enqueue_selecting(self, pod: Object) -> None:
        labels = pod["metadata"].get("labels") or {}
        for job in self.jobs.store.by_index("namespace", pod["metadata"]["namespace"]):
            if selector_of(job).matches(labels):
                self.queue.add_after(object_key(job), POD_BATCH_PERIOD)

    def _on_pod(self, pod: Object) -> None:
        ref = controller_of(pod)
        namespace = pod["metadata"]["namespace"]
        if ref and ref.get("kind") == "Job":  # batched, as upstream's: one sync sees a burst of pod changes
            self.queue.add_after(f"{namespace}/{ref['name']}", POD_BATCH_PERIOD)
        if _tracked(pod) and self._job_of(pod) is None:  # its Job is gone: nobody else would remove our finalizer
            self.queue.add(ORPHAN + object_key(pod))

    def _job_of(self, pod: Object) -> Object | None:
        ref = controller_of(pod)
        if not ref or ref.get("kind") != "Job":
            return None
        job = self.jobs.store.get(f"{pod['metadata']['namespace']}/{ref['name']}")
        return job if job is not None and job["metadata"]["uid"] == ref.get("uid") else None

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        if key.startswith(ORPHAN):
            pod = self.pods.store.get(key.removeprefix(ORPHAN))
            if pod is not None and self._job_of(pod) is None:
                await self._release([pod])
            return
        job = self.jobs.store.get(key)
        if job is None or managed_elsewhere(job):  # another controller's Job, pods and finalizers and all
            return
        job = copy.deepcopy(job)
        pods = await claim(self.client, (job, JOBS), (self.pods.store, PODS), selector_of(job))
        if finished(job) or job["metadata"].get("deletionTimestamp"):
            await self._release(pods)  # nothing more is counted: pods keep no finalizer of ours
            return
        status = job.setdefault("status", {})
        delayed: dict[int, Object] = {}
        if per_index(job):  # written with the uids of the pods that failed the indexes (upstream flushes both)
            status["failedIndexes"] = format_indexes(failed_indexes(job, pods))
            delayed = delayed_pods(job, pods)
        if await self._count(job, pods, held={p["metadata"]["uid"] for p in delayed.values()}):
            return  # the status write brings the Job back
        active = [p for p in pods if not pod_finished(p)]
        failure, success = self._outcome(job, pods, active, delayed)
        if failure is not None:
            await self._fail(job, active, *failure, uncounted=bool(delayed))
        elif success is not None:
            await self._complete(job, active, *success, uncounted=bool(delayed))
        elif job["spec"].get("suspend"):
            await self._suspend(job, active)
        else:
            await self._resume(job)
            await self._manage(job, pods, active, delayed)
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if pod_ready(p))
        status["terminating"] = sum(1 for p in pods if p["metadata"].get("deletionTimestamp") and not _terminal(p))
        for field in ("active", "succeeded", "failed"):  # `omitempty` counts
            if not status.get(field):
                status.pop(field, None)
        await self._write(job)

    # ---- counting ----------------------------------------------------------------------------------------------

    async def _count(self, job: Object, pods: list[Object], *, held: set[str]) -> bool:
        """upstream's two-step tracking: finished pods' uids go to `uncountedTerminatedPods` (written at once; True
        then, and a new sync follows the write), then their finalizers are removed and they are counted (written
        with the rest of this sync's status). The `held` pods (an index's last failure) wait for their replacement."""
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        listed = set(uncounted.get("succeeded") or []) | set(uncounted.get("failed") or [])
        new = [p for p in pods if pod_finished(p) and _tracked(p) and p["metadata"]["uid"] not in listed | held]
        for pod in new:
            field = "succeeded" if pod_succeeded(pod) else "failed"
            if field == "failed" and (rule := failure_rule(job, pod)) and rule[1].get("action") == "Ignore":
                field = "ignored"  # upstream: not counted towards the backoff limit
            uncounted.setdefault(field, []).append(pod["metadata"]["uid"])
        if new:
            ignored = uncounted.pop("ignored", [])
            await self._write(job)
            await self._release([p for p in pods if p["metadata"]["uid"] in set(ignored)])
            return True
        if not listed:
            return False
        by_uid = {p["metadata"]["uid"]: p for p in pods}
        await self._release([by_uid[u] for u in listed if u in by_uid])
        status["succeeded"] = int(status.get("succeeded") or 0) + len(uncounted.get("succeeded") or [])
        status["failed"] = int(status.get("failed") or 0) + len(uncounted.get("failed") or [])
        if job["spec"].get("completionMode") == "Indexed":
            done = parse_indexes(status.get("completedIndexes", ""))
            for uid in uncounted.get("succeeded") or []:
                index = index_of(by_uid[uid]) if uid in by_uid else None
                if index is not None:
                    done.add(index)
            status["completedIndexes"] = format_indexes(done)
        status["uncountedTerminatedPods"] = {}
        return False

    async def _release(self, pods: list[Object]) -> None:
        for pod in pods:
            if not _tracked(pod):
                continue
            meta = pod["metadata"]
            finalizers = [f for f in meta.get("finalizers") or [] if f != TRACKING_FINALIZER]
            patch = {"metadata": {"finalizers": finalizers or None, "resourceVersion": meta["resourceVersion"]}}
            with contextlib.suppress(errors.NotFound):
                try:
                    await self.client.patch(PODS, meta["namespace"], meta["name"], patch, patch_type="merge")
                except errors.Conflict:  # changed meanwhile: the pod's Job (or, an orphan, the pod) is looked at again
                    ref = controller_of(pod)
                    again = f"{meta['namespace']}/{ref['name']}" if ref else ORPHAN + object_key(pod)
                    self.queue.add_after(again, 0.1)

    # ---- decisions ---------------------------------------------------------------------------------------------

    def _outcome(
        self, job: Object, pods: list[Object], active: list[Object], delayed: dict[int, Object]
    ) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
        """(why the Job fails, why it succeeds), one at most: once `SuccessCriteriaMet`, it can only complete
        (upstream's order); else failures are looked for first."""
        if (met := _condition(job, "SuccessCriteriaMet")) is not None:
            return None, (str(met.get("reason", "")), str(met.get("message", "")))
        if (failure := self._failure(job, pods, delayed)) is not None:
            return failure, None
        return None, self._success(job, active)

    def _failure(self, job: Object, pods: list[Object], delayed: dict[int, Object]) -> tuple[str, str] | None:
        """Why the Job fails, in upstream's order: an earlier verdict, a `FailJob` rule, `backoffLimit`, the
        deadline, then (per index) `maxFailedIndexes` and the failed indexes."""
        if (target := _condition(job, "FailureTarget")) is not None:
            return target["reason"], target["message"]
        return (
            _fail_job_rule(job, pods)
            or _past_backoff_limit(job, delayed)
            or self._past_deadline(job)
            or _index_failure(job)
        )

    def _past_deadline(self, job: Object) -> tuple[str, str] | None:
        spec, status = job["spec"], job["status"]
        deadline = spec.get("activeDeadlineSeconds")
        started = parse_time(status.get("startTime"))
        if deadline is not None and started is not None and not spec.get("suspend"):
            left = started.timestamp() + int(deadline) - time.time()
            if left <= 0:
                return "DeadlineExceeded", "Job was active longer than specified deadline"
            self.queue.add_after(object_key(job), left)
        return None

    def _success(self, job: Object, active: list[Object]) -> tuple[str, str] | None:
        if job["spec"].get("completionMode") == "Indexed" and (rule := success_rule(job)) is not None:
            return "SuccessPolicy", f"Matched rules at index {rule}"
        if self._succeeded(job, active):
            return "CompletionsReached", "Reached expected number of succeeded pods"
        return None

    def _succeeded(self, job: Object, active: list[Object]) -> bool:
        spec, status = job["spec"], job["status"]
        succeeded = int(status.get("succeeded") or 0)
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed":
            return set(range(int(completions or 0))) <= parse_indexes(status.get("completedIndexes", ""))
        if completions is None:  # a work queue: done once a pod succeeded and none is left running
            return succeeded > 0 and not active
        return succeeded >= int(completions)

    async def _fail(self, job: Object, active: list[Object], reason: str, message: str, *, uncounted: bool) -> None:
        set_condition(job, "FailureTarget", "True", reason, message)
        await self._delete(job, active)
        if not active and not uncounted:  # once the pods deleted, and any held, are counted (a later sync)
            set_condition(job, "Failed", "True", reason, message)
            self._event(job, "Warning", reason, message)

    async def _complete(self, job: Object, active: list[Object], reason: str, message: str, *, uncounted: bool) -> None:
        set_condition(job, "SuccessCriteriaMet", "True", reason, message)
        await self._delete(job, active)
        if not active and not uncounted:  # once the pods deleted, and any held, are counted (a later sync)
            set_condition(job, "Complete", "True", reason, message)
            job["status"]["completionTime"] = now()
            self._event(job, "Normal", "Completed", "Job completed")

    async def _suspend(self, job: Object, active: list[Object]) -> None:
        await self._delete(job, active)
        if not _condition_true(job, "Suspended"):
            set_condition(job, "Suspended", "True", "JobSuspended", "Job suspended")
            self._event(job, "Normal", "Suspended", "Job suspended")

    async def _resume(self, job: Object) -> None:
        status = job["status"]
        if _condition_true(job, "Suspended"):
            set_condition(job, "Suspended", "False", "JobResumed", "Job resumed")
            status["startTime"] = now()  # upstream starts the deadline again
            self._event(job, "Normal", "Resumed", "Job resumed")
        status.setdefault("startTime", now())

    async def _manage(self, job: Object, pods: list[Object], active: list[Object], delayed: dict[int, Object]) -> None:
        spec, status = job["spec"], job["status"]
        parallelism = int(spec.get("parallelism", 1))
        live = [p for p in active if not p["metadata"].get("deletionTimestamp")]
        if spec.get("completionMode") == "Indexed":
            taken = indexes_in(job, "completedIndexes") | indexes_in(job, "failedIndexes")
            taken |= {i for p in live if (i := index_of(p)) is not None}
            pending = [i for i in range(completions_of(job)) if i not in taken]
            wanted: list[int | None] = list(self._due(job, pending[: max(parallelism - len(live), 0)], delayed))
        else:
            completions = spec.get("completions")
            remaining = parallelism if completions is None else int(completions) - int(status.get("succeeded") or 0)
            if completions is None and int(status.get("succeeded") or 0) > 0:
                remaining = 0  # a work queue that had a success makes no new pods
            wanted = [None] * max(min(parallelism, remaining) - len(live), 0)
        if not wanted:
            return
        delay = 0.0 if per_index(job) else self._backoff(job, pods)
        if delay > 0:
            self.queue.add_after(object_key(job), delay)
            return
        await self._create(job, wanted, delayed)

    def _due(self, job: Object, indexes: list[int], delayed: dict[int, Object]) -> list[int]:
        """With `backoffLimitPerIndex`, of the first pending indexes those whose own back-off is over (upstream picks
        the indexes first, then the ones not waiting); the Job comes back when the next one's is."""
        if not per_index(job):
            return indexes
        at = time.time()
        waits = {i: index_backoff(delayed.get(i), at) for i in indexes}
        if any(waits.values()):
            self.queue.add_after(object_key(job), min(w for w in waits.values() if w))
        return [i for i in indexes if not waits[i]]

    def _backoff(self, job: Object, pods: list[Object]) -> float:
        """Seconds left before a failed pod may be replaced (upstream's exponential back-off per failure)."""
        failed = int(job["status"].get("failed") or 0)
        if not failed:
            return 0.0
        last = max((_finished_at(p) for p in pods if pod_finished(p) and not pod_succeeded(p)), default=0.0)
        return max(last + back_off(failed) - time.time(), 0.0) if last else 0.0

    # ---- writes ------------------------------------------------------------------------------------------------

    async def _create(self, job: Object, indexes: list[int | None], replacing: dict[int, Object]) -> None:
        namespace = job["metadata"]["namespace"]
        results = await asyncio.gather(
            *(self.client.create(PODS, namespace, self._new_pod(job, i, replacing)) for i in indexes),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, dict):
                self._event(job, "Normal", "SuccessfulCreate", f"Created pod: {result['metadata']['name']}")
        failed = [r for r in results if isinstance(r, BaseException) and not errors.is_namespace_terminating(r)]
        if failed:
            self._event(job, "Warning", "FailedCreate", f"Error creating: {failed[0]}")
            raise failed[0]

    def _new_pod(self, job: Object, index: int | None, replacing: dict[int, Object]) -> Object:
        template = copy.deepcopy(job["spec"].get("template") or {})
        meta, spec = template.get("metadata") or {}, template.get("spec") or {}
        name = job["metadata"]["name"]
        labels, annotations = dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
        generate = f"{name}-"
        if index is not None:
            annotations[INDEX_KEY] = labels[INDEX_KEY] = str(index)
            generate = f"{name}-{index}-"
            spec.setdefault("hostname", f"{name}-{index}")
            variable = {"name": "JOB_COMPLETION_INDEX",
                        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_KEY}']"}}}  # fmt: skip
            for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in container.get("env") or []):
                    container["env"] = [*(container.get("env") or []), variable]
            if per_index(job):
                counted, ignored = replacement_counts(job, replacing.get(index))
                annotations[FAILURE_COUNT] = str(counted)
                if ignored:
                    annotations[IGNORED_COUNT] = str(ignored)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": generate,
                "namespace": job["metadata"]["namespace"],
                "labels": labels,
                "annotations": annotations,
                "finalizers": [TRACKING_FINALIZER],
                "ownerReferences": [controller_ref(job, JOBS)],
            },
            "spec": spec,
        }

    async def _delete(self, job: Object, pods: list[Object]) -> None:
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            with contextlib.suppress(errors.NotFound):
                await self.client.delete(PODS, meta["namespace"], meta["name"])
                self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    async def _write(self, job: Object) -> None:
        current = self.jobs.store.get(object_key(job))
        if current is not None and current.get("status") == job["status"]:
            return
        await update_status(self.client, JOBS, job, job["status"])

    def _event(self, job: Object, type_: str, reason: str, message: str) -> None:
        self.events.record(job, type_, reason, message)


def _terminal(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _tracked(pod: Object) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def _condition(job: Object, kind: str) -> Object | None:
    """The Job's condition `kind` when it is True."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _condition_true(job: Object, kind: str) -> bool:
    return _condition(job, kind) is not None


def _failures(pod: Object) -> int:
    """All the failures of a pod's index before it, ignored ones too (upstream's getIndexAbsoluteFailureCount)."""
    return annotated_count(pod, FAILURE_COUNT) + annotated_count(pod, IGNORED_COUNT)


def _fail_job_rule(job: Object, pods: list[Object]) -> tuple[str, str] | None:
    for pod in pods:
        if pod_finished(pod) and not pod_succeeded(pod) and (found := failure_rule(job, pod)):
            index, rule = found
            if rule.get("action") == "FailJob":
                meta = pod["metadata"]
                who = f"pod {meta['namespace']}/{meta['name']}"
                if "_container" in rule:
                    what = f"Container {rule['_container']} for {who} failed with exit code {rule['_code']}"
                else:
                    what = f"Pod {meta['namespace']}/{meta['name']} has condition"
                return "PodFailurePolicy", f"{what} matching FailJob rule at index {index}"
    return None


def _past_backoff_limit(job: Object, delayed: dict[int, Object]) -> tuple[str, str] | None:
    # a failed pod held for its index's replacement is a failure already, as upstream counts it from the pod
    held = sum(1 for pod in delayed.values() if policy_action(job, pod) != "Ignore")
    if int(job["status"].get("failed") or 0) + held > int(job["spec"].get("backoffLimit", 6)):
        return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    return None


def _index_failure(job: Object) -> tuple[str, str] | None:
    if not per_index(job):
        return None
    failed = len(indexes_in(job, "failedIndexes"))
    most = job["spec"].get("maxFailedIndexes")
    if most is not None and failed > int(most):
        return "MaxFailedIndexesExceeded", "Job has exceeded the specified maximal number of failed indexes"
    if failed and failed + len(indexes_in(job, "completedIndexes")) >= completions_of(job):
        return "FailedIndexes", "Job has failed indexes"
    return None


def _finished_at(pod: Object) -> float:
    """When a pod's last container finished (its deletion time for a deleted one), as a Unix time."""
    stamps = [
        ((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
        for s in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    stamps.append(pod["metadata"].get("deletionTimestamp"))
    times = [t.timestamp() for t in map(parse_time, stamps) if t is not None]
    return max(times, default=datetime.now(UTC).timestamp())
