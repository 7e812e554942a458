"""The ReplicaSet controller: keeps `spec.replicas` pods from the template running, as upstream's.

Each sync counts the active pods the ReplicaSet controls (adopting orphans its selector matches, releasing pods that
stopped matching), creates or deletes the difference, and writes `status`. Its own creates and deletes reach its
pod cache a moment after they succeed; until they have (or `EXPECTATION_TIMEOUT` passed), a ReplicaSet is not
counted again — upstream's "expectations" — or a second sync would create the same pods twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resources import ResourceInfo, builtin
from tinykube.api.selectors import LabelSelector, selector_from_label_selector
from tinykube.client.controller import Loop, run_controller
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import Informer, object_key
from tinykube.client.rest import RestClient
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.ownership import CONTROLLER_INDEX, claim, controller_of, controller_ref, controller_uid
from tinykube.controllers.pods import pod_ready

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
REPLICASETS = builtin("apps", "v1", "replicasets")
REPLICATION_CONTROLLERS = builtin("", "v1", "replicationcontrollers")
WORKERS = 5  # upstream's --concurrent-replicaset-syncs
BURST = 500  # pods created or deleted per sync, as upstream's burstReplicas
COMPONENTS = {"replicasets": "replicaset-controller", "replicationcontrollers": "replication-controller"}
REPLICA_FAILURE = "ReplicaFailure"  # the condition type, the same on ReplicaSets and ReplicationControllers
EXPECTATION_TIMEOUT = 60.0  # seconds; upstream waits 5 minutes for an event that may never come


def active(pod: Object) -> bool:
    """Counts towards replicas: not finished, not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def available(pod: Object, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least `min_ready_seconds` (upstream's `IsPodAvailable`)."""
    if not pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            since = _epoch(condition.get("lastTransitionTime"))
            return since is not None and since + min_ready_seconds <= now
    return False


def _epoch(stamp: Any) -> float | None:
    parsed = parse_time(stamp)
    return parsed.timestamp() if parsed else None


def deletion_order(pod: Object) -> tuple[Any, ...]:
    """Pods to delete first sort first, as upstream's ActivePods ranking: unscheduled, then pending, then not
    ready, then the most recently created."""
    status = pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(status.get("phase", "Pending"), 0)
    created = pod["metadata"].get("creationTimestamp") or ""
    return (bool((pod.get("spec") or {}).get("nodeName")), phase_rank, pod_ready(pod), _Reversed(created))


@dataclass(frozen=True, order=False)
class _Reversed:
    value: str

    def __lt__(self, other: _Reversed) -> bool:
        return self.value > other.value


@dataclass
class Expectations:
    """What this controller has asked for and its cache has not shown yet, per ReplicaSet key: a number of pod
    creates (raised before they are sent: a pod's watch event can beat its create's response) and the names of
    pods deleted."""

    adds: dict[str, int] = field(default_factory=dict)
    deletes: dict[str, set[str]] = field(default_factory=dict)
    since: dict[str, float] = field(default_factory=dict)

    def expect(self, key: str, *, creates: int = 0, deleted: Iterable[str] = ()) -> None:
        self.adds[key] = self.adds.get(key, 0) + creates
        self.deletes.setdefault(key, set()).update(deleted)
        self.since[key] = time.monotonic()

    def observed_add(self, key: str) -> None:
        if self.adds.get(key):
            self.adds[key] -= 1

    def observed_delete(self, key: str, name: str) -> None:
        self.deletes.get(key, set()).discard(name)

    def satisfied(self, key: str) -> bool:
        if not self.adds.get(key) and not self.deletes.get(key):
            return True
        return time.monotonic() - self.since.get(key, 0.0) > EXPECTATION_TIMEOUT

    def forget(self, key: str) -> None:
        for table in (self.adds, self.deletes, self.since):
            table.pop(key, None)


def pod_from_template(rs: Object, resource: ResourceInfo = REPLICASETS) -> Object:
    """A pod for `rs`: its template's labels, annotations and spec, a generated name, the ReplicaSet as controller."""
    template = (rs.get("spec") or {}).get("template") or {}
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": rs["metadata"]["name"] + "-",
            "namespace": rs["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [controller_ref(rs, resource)],
        },
        "spec": template.get("spec") or {},
    }


class ReplicaSetController:
    """Also the ReplicationController controller (`resource=REPLICATION_CONTROLLERS`), as upstream's runs the
    ReplicaSet controller on ReplicationControllers: the same but for the selector, a plain label map."""

    def __init__(self, ctx: ControllerContext, workers: int = WORKERS, resource: ResourceInfo = REPLICASETS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.resource = resource
        # written in the background, correlated as upstream's recorder (no client rate: tinykube models none)
        self.events = EventRecorder(ctx.client, COMPONENTS[resource.plural], qps=0.0)
        self.replicasets: Informer = ctx.informers.informer(resource)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.expectations = Expectations()
        self.workers = workers

    async def run(self) -> None:
        with contextlib.suppress(ValueError):  # shared with the Deployment controller, which may have added it
            self.pods.store.add_index(CONTROLLER_INDEX, controller_uid)
        self.replicasets.add_handler(
            on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new), on_delete=self._on_rs_delete
        )
        self.pods.add_handler(on_add=self._on_pod_add, on_update=self._on_pod_update, on_delete=self._on_pod_delete)
        await run_controller(
            self.informers,
            (self.replicasets, self.pods),
            Loop(self.queue, self.sync, workers=self.workers),
            beside=[self.events.run],
        )

    # ---- events ------------------------------------------------------------------------------------------------

    def _enqueue(self, rs: Object) -> None:
        self.queue.add(object_key(rs))

    def _on_rs_delete(self, rs: Object) -> None:
        self.expectations.forget(object_key(rs))
        self.queue.add(object_key(rs))

    def _owner_key(self, pod: Object) -> str | None:
        ref = controller_of(pod)
        if not ref or ref.get("kind") != self.resource.kind:
            return None
        return f"{pod['metadata']['namespace']}/{ref['name']}"

    def _on_pod_add(self, pod: Object) -> None:
        key = self._owner_key(pod)
        if key:
            self.expectations.observed_add(key)
            self.queue.add(key)
        else:
            self._enqueue_selecting(pod)  # an orphan: a ReplicaSet may adopt it

    def _on_pod_update(self, old: Object, new: Object) -> None:
        for pod in (old, new):
            key = self._owner_key(pod)
            if key:
                self.queue.add(key)
        if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}) and not controller_of(new):
            self._enqueue_selecting(new)
        if new["metadata"].get("deletionTimestamp") and (key := self._owner_key(new)):
            self.expectations.observed_delete(key, new["metadata"]["name"])

    def _on_pod_delete(self, pod: Object) -> None:
        key = self._owner_key(pod)
        if key:
            self.expectations.observed_delete(key, pod["metadata"]["name"])
            self.queue.add(key)

    def _enqueue_selecting(self, pod: Object) -> None:
        namespace = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        for rs in self.replicasets.store.by_index("namespace", namespace):
            if self._selector(rs).matches(labels):
                self.queue.add(object_key(rs))

    def _selector(self, obj: Object) -> LabelSelector:
        if self.resource is REPLICATION_CONTROLLERS:
            return selector_from_label_selector({"matchLabels": (obj.get("spec") or {}).get("selector") or {}})
        return selector_of(obj)

    # ---- sync --------------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        rs = self.replicasets.store.get(key)
        if rs is None:
            self.expectations.forget(key)
            return  # its pods go with it: the garbage collector deletes them
        pods = await claim(self.client, (rs, self.resource), (self.pods.store, PODS), self._selector(rs), active)
        failure: errors.ApiError | None = None
        if self.expectations.satisfied(key) and not rs["metadata"].get("deletionTimestamp"):
            try:
                await self._manage(key, rs, pods)
            except errors.ApiError as err:
                failure = err  # written in the status first, as upstream's calculateStatus, then retried
        await self._write_status(rs, pods, failure)
        if failure is not None:
            raise failure

    async def _manage(self, key: str, rs: Object, pods: list[Object]) -> None:
        want = int((rs.get("spec") or {}).get("replicas", 1))
        diff = want - len(pods)
        if diff > 0:
            await self._create(key, rs, min(diff, BURST))
        elif diff < 0:
            await self._delete(key, rs, sorted(pods, key=deletion_order)[: min(-diff, BURST)])

    async def _create(self, key: str, rs: Object, count: int) -> None:
        pod = pod_from_template(rs, self.resource)
        self.expectations.expect(key, creates=count)
        results = await asyncio.gather(
            *(self.client.create(PODS, rs["metadata"]["namespace"], pod) for _ in range(count)), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        for _ in failed:  # no event will come for these
            self.expectations.observed_add(key)
        created = [r["metadata"]["name"] for r in results if isinstance(r, dict)]
        for name in created:
            self._event(rs, "Normal", "SuccessfulCreate", f"Created pod: {name}")
        # As upstream: creates in a namespace being deleted keep failing until it is gone, so they are no error and
        # get no event; the ReplicaSet goes with its namespace.
        failed = [err for err in failed if not errors.is_namespace_terminating(err)]
        if failed:
            err = failed[0]
            self._event(rs, "Warning", "FailedCreate", f"Error creating: {err}")
            message = f"{len(failed)} of {count} pod creates for {key} failed: {err}"
            if isinstance(err, errors.ApiError):  # the API's refusal, kept as such (the work queue logs it in a line)
                raise ReplicasFailed(type(err)(message, details=err.details), err) from err
            raise err

    async def _delete(self, key: str, rs: Object, pods: list[Object]) -> None:
        self.expectations.expect(key, deleted=[p["metadata"]["name"] for p in pods])
        for pod in pods:
            meta = pod["metadata"]
            try:
                await self.client.delete(PODS, meta["namespace"], meta["name"])
                self._event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")
            except errors.NotFound:
                self.expectations.observed_delete(key, meta["name"])  # its event may have come and gone already
            except errors.ApiError:
                self.expectations.observed_delete(key, meta["name"])
                raise

    def _event(self, rs: Object, type_: str, reason: str, message: str) -> None:
        self.events.record(rs, type_, reason, message)

    async def _write_status(self, rs: Object, pods: list[Object], failure: errors.ApiError | None = None) -> None:
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        now = time.time()
        min_ready = int(spec.get("minReadySeconds") or 0)
        counts = {
            "fullyLabeledReplicas": sum(
                1 for p in pods if template_labels.items() <= (p["metadata"].get("labels") or {}).items()
            ),
            "readyReplicas": sum(1 for p in pods if pod_ready(p)),
            "availableReplicas": sum(1 for p in pods if available(p, min_ready, now)),
        }
        status = {k: v for k, v in (rs.get("status") or {}).items() if k not in counts}
        status |= {k: v for k, v in counts.items() if v}  # zeros left out, as upstream's `omitempty`
        status["replicas"] = len(pods)
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        _replica_failure(status, failure, len(pods) - int(spec.get("replicas", 1)))
        if min_ready and any(pod_ready(p) and not available(p, min_ready, now) for p in pods):
            self.queue.add_after(object_key(rs), min_ready)  # availability changes without an event
        if status != (rs.get("status") or {}):
            await update_status(self.client, self.resource, rs, status)


class ReplicasFailed(errors.ApiError):
    """A create or delete of pods the API refused: the whole story for the work queue's log, and the API's own
    error, whose text the `ReplicaFailure` condition shows."""

    def __init__(self, summary: errors.ApiError, cause: errors.ApiError) -> None:
        super().__init__(summary.message, details=summary.details)
        self.code, self.reason, self.cause = summary.code, summary.reason, cause


def _replica_failure(status: Object, failure: errors.ApiError | None, surplus: int) -> None:
    """upstream's calculateStatus: a failed create (too few pods) or delete (too many) sets `ReplicaFailure`, kept
    as first set while failures go on; a sync without one removes it."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    present = len(conditions) != len(status.get("conditions") or [])
    if failure is not None and not present:
        cause = failure.cause if isinstance(failure, ReplicasFailed) else failure
        reason = "FailedCreate" if surplus < 0 else "FailedDelete" if surplus > 0 else ""
        condition = {"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": now(), "reason": reason,
                     "message": cause.message}  # fmt: skip
        status["conditions"] = [*conditions, condition]
    elif failure is None and present:
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)


def selector_of(obj: Object) -> LabelSelector:
    """The object's label selector; a missing one selects nothing."""
    return selector_from_label_selector((obj.get("spec") or {}).get("selector"))


async def update_status(client: RestClient, resource: ResourceInfo, obj: Object, status: Object) -> None:
    """PUT the status at the resourceVersion it was computed from. On a conflict the object has changed since, and
    its update event queues another sync that computes from the new state."""
    body = {**obj, "status": status}
    with contextlib.suppress(errors.NotFound, errors.Conflict):
        await client.update(resource, obj["metadata"]["namespace"], body, subresource="status")
