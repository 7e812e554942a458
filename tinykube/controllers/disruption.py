"""The disruption controller: each PodDisruptionBudget's status, as upstream's, which the eviction subresource
reads and decrements.

`currentHealthy` counts the selected pods that are Ready and not being deleted (nor just evicted: the pods in
`disruptedPods` the controller has not seen go yet, for at most two minutes); `desiredHealthy` is `minAvailable`
(a number), or a percentage of the expected pods, or the expected pods less `maxUnavailable`, where the expected
pods are the replicas of the selected pods' controllers (Deployment, ReplicaSet, StatefulSet,
ReplicationController); `disruptionsAllowed` is what is healthy beyond that, with the `DisruptionAllowed`
condition.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tinykube.api.meta import now, parse_time
from tinykube.api.resources import ResourceInfo, builtin
from tinykube.api.selectors import selector_from_label_selector
from tinykube.client.controller import Loop, run_controller
from tinykube.client.informer import Informer, object_key
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.intstr import scaled
from tinykube.controllers.ownership import controller_of
from tinykube.controllers.pods import pod_ready
from tinykube.controllers.replicaset import update_status

Object = dict[str, Any]
PODS = builtin("", "v1", "pods")
BUDGETS = builtin("policy", "v1", "poddisruptionbudgets")
SCALABLE: dict[str, ResourceInfo] = {
    "ReplicaSet": builtin("apps", "v1", "replicasets"),
    "Deployment": builtin("apps", "v1", "deployments"),
    "StatefulSet": builtin("apps", "v1", "statefulsets"),
    "ReplicationController": builtin("", "v1", "replicationcontrollers"),
}
DELETION_TIMEOUT = timedelta(minutes=2)  # upstream's DeletionTimeout for pods recorded as disrupted
WORKERS = 2


class DisruptionController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.budgets: Informer = ctx.informers.informer(BUDGETS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.owners = {kind: ctx.informers.informer(resource) for kind, resource in SCALABLE.items()}
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers

    async def run(self) -> None:
        self.budgets.add_handler(on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new))
        self.pods.add_handler(on_add=self._on_pod, on_update=self._on_pod_update, on_delete=self._on_pod)
        for informer in self.owners.values():  # a scale change changes what is expected
            informer.add_handler(on_update=lambda _old, new: self._on_owner(new))
        caches = (self.budgets, self.pods, *self.owners.values())
        await run_controller(self.informers, caches, Loop(self.queue, self.sync, workers=self.workers))

    def _enqueue(self, budget: Object) -> None:
        self.queue.add(object_key(budget))

    def _on_pod_update(self, old: Object, new: Object) -> None:
        self._on_pod(new)

    def _on_pod(self, pod: Object) -> None:
        labels = pod["metadata"].get("labels") or {}
        for budget in self.budgets.store.by_index("namespace", pod["metadata"].get("namespace", "")):
            selector = (budget.get("spec") or {}).get("selector")
            if selector is not None and selector_from_label_selector(selector).matches(labels):
                self._enqueue(budget)

    def _on_owner(self, owner: Object) -> None:
        for budget in self.budgets.store.by_index("namespace", owner["metadata"].get("namespace", "")):
            self._enqueue(budget)

    async def sync(self, key: str) -> None:
        budget = self.budgets.store.get(key)
        if budget is None or budget["metadata"].get("deletionTimestamp"):
            return
        spec = budget.get("spec") or {}
        selector = spec.get("selector")
        namespace = budget["metadata"]["namespace"]
        pods = [
            p
            for p in self.pods.store.by_index("namespace", namespace)
            if selector is not None
            and selector_from_label_selector(selector).matches(p["metadata"].get("labels") or {})
        ]
        status = dict(budget.get("status") or {})
        disrupted = self._still_disrupted(status.get("disruptedPods") or {}, pods)
        healthy = sum(
            1
            for p in pods
            if pod_ready(p) and not p["metadata"].get("deletionTimestamp") and p["metadata"]["name"] not in disrupted
        )
        expected, desired = self._expected_and_desired(spec, pods)
        allowed = max(healthy - desired, 0) if expected is not None else 0
        status |= {
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected or 0,
            "disruptionsAllowed": allowed,
            "observedGeneration": budget["metadata"].get("generation", 1),
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        else:
            status.pop("disruptedPods", None)
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        wanted = "True" if allowed > 0 else "False"
        if old is None or old.get("status") != wanted or old.get("reason") != reason:
            status["conditions"] = [
                {"type": "DisruptionAllowed", "status": wanted, "reason": reason, "message": "",
                 "lastTransitionTime": now(), "observedGeneration": budget["metadata"].get("generation", 1)}
            ]  # fmt: skip
        if disrupted:  # an evicted pod that does not go is healthy again after the timeout
            self.queue.add_after(key, DELETION_TIMEOUT.total_seconds())
        if status != (budget.get("status") or {}):
            await update_status(self.client, BUDGETS, budget, status)

    def _still_disrupted(self, recorded: dict[str, str], pods: list[Object]) -> dict[str, str]:
        """The evicted pods that still exist undeleted, recorded less than two minutes ago."""
        live = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
        cutoff = datetime.now(UTC) - DELETION_TIMEOUT
        return {
            name: stamp
            for name, stamp in recorded.items()
            if name in live and (when := parse_time(stamp)) is not None and when > cutoff
        }

    def _expected_and_desired(self, spec: Object, pods: list[Object]) -> tuple[int | None, int]:
        """(expected pods, desired healthy): upstream's getExpectedPodCount; expected is None when the pods'
        controllers cannot say (unmanaged pods with a percentage or `maxUnavailable`)."""
        min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
        if max_unavailable is None and (min_available is None or not str(min_available).endswith("%")):
            return len(pods), scaled(min_available, len(pods), round_up=True) if min_available is not None else 0
        expected = self._controllers_scale(pods)
        if expected is None:
            return None, 0
        if max_unavailable is not None:
            return expected, max(expected - scaled(max_unavailable, expected, round_up=True), 0)
        return expected, scaled(min_available, expected, round_up=True)

    def _controllers_scale(self, pods: list[Object]) -> int | None:
        """The replicas of the controllers of `pods` (a ReplicaSet's Deployment's when it has one), each counted
        once; None if a pod has no such controller."""
        seen: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            owner = self._owner(pod["metadata"]["namespace"], ref) if ref else None
            if owner is None:
                return None
            parent = controller_of(owner)
            if ref and ref.get("kind") == "ReplicaSet" and parent and parent.get("kind") == "Deployment":
                owner = self._owner(pod["metadata"]["namespace"], parent) or owner
            seen[owner["metadata"]["uid"]] = int((owner.get("spec") or {}).get("replicas", 1))
        return sum(seen.values())

    def _owner(self, namespace: str, ref: Object) -> Object | None:
        informer = self.owners.get(str(ref.get("kind")))
        owner = informer.store.get(f"{namespace}/{ref.get('name')}") if informer else None
        return owner if owner is not None and owner["metadata"]["uid"] == ref.get("uid") else None
