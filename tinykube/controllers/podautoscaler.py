"""The horizontal pod autoscaler controller, as upstream's (pkg/controller/podautoscaler/horizontal.go): every
sync period each HorizontalPodAutoscaler reads its target's `scale` subresource, asks each metric for a replica
count, takes the highest, stabilizes and rate-limits it (`scalinglimits`), writes the new scale, and reports
`currentReplicas`, `desiredReplicas`, `currentMetrics` and the `AbleToScale`, `ScalingActive` and `ScalingLimited`
conditions with upstream's reasons, messages and events.

Resource and ContainerResource metrics come from the `metrics.k8s.io` PodMetrics that tinykube's apiserver serves
(`replicacalculator` turns them into a count). Pods, Object and External metrics need a custom or external metrics
API, which tinykube does not serve: such a metric fails as upstream's does when no adapter is installed.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any
from urllib.parse import quote

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.quantity import Quantity, QuantityError
from tinykube.api.resources import ResourceInfo, builtin, by_kind
from tinykube.api.selectors import SelectorError, parse_label_selector
from tinykube.client.controller import Loop, run_controller
from tinykube.client.events import record_event
from tinykube.client.informer import Informer, object_key
from tinykube.client.rest import path_for
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers import replicacalculator as calc
from tinykube.controllers import scalinglimits as limits
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.replicaset import update_status

log = logging.getLogger(__name__)

Object = dict[str, Any]
HPAS = builtin("autoscaling", "v2", "horizontalpodautoscalers")
PODS = builtin("", "v1", "pods")
COMPONENT = "horizontal-pod-autoscaler"
WORKERS = 2
_UNSERVED = {  # what a metric type fails with when no adapter serves its API (upstream's clients' errors)
    "Pods": ("FailedGetPodsMetric", "unable to fetch metrics from custom metrics API: no custom metrics API "
             "(custom.metrics.k8s.io) registered"),
    "Object": ("FailedGetObjectMetric", "unable to fetch metrics from custom metrics API: no custom metrics API "
               "(custom.metrics.k8s.io) registered"),
    "External": ("FailedGetExternalMetric", "unable to fetch metrics from external metrics API: the server could "
                 "not find the requested resource"),
}  # fmt: skip


class Unavailable(Exception):
    """A metric gave no count: the condition to show (reason, message) and the error to report."""

    def __init__(self, reason: str, message: str, error: str) -> None:
        super().__init__(error)
        self.reason, self.message = reason, message


def set_condition(conditions: list[Object], kind: str, status: str, reason: str, message: str) -> None:
    """Upstream's setConditionInList: updated in place, its transition time moved only when its status changes."""
    found = next((c for c in conditions if c.get("type") == kind), None)
    if found is None:
        found = {"type": kind}
        conditions.append(found)
    if found.get("status") != status:
        found["lastTransitionTime"] = now()
    found.update(status=status, reason=reason, message=message)


class HorizontalPodAutoscalerController:
    def __init__(self, ctx: ControllerContext, workers: int = WORKERS) -> None:
        self.client = ctx.client
        self.informers = ctx.informers
        self.settings = ctx.settings
        self.hpas: Informer = ctx.informers.informer(HPAS)
        self.pods: Informer = ctx.informers.informer(PODS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.workers = workers
        self.histories: dict[str, limits.History] = {}
        self.timing = calc.Timing(
            ctx.settings.hpa_tolerance,
            ctx.settings.hpa_cpu_initialization_period,
            ctx.settings.hpa_initial_readiness_delay,
        )
        self._kinds: dict[tuple[str, str], ResourceInfo] = {}  # (apiVersion, kind) -> resource, from discovery

    async def run(self) -> None:
        # a spec change is synced at once; a status write (ours) is not, or each sync would cause another
        self.hpas.add_handler(on_add=self._enqueue, on_update=self._on_update, on_delete=self._forget)
        await run_controller(self.informers, (self.hpas, self.pods), Loop(self.queue, self.sync, workers=self.workers))

    def _enqueue(self, hpa: Object) -> None:
        self.queue.add(object_key(hpa))

    def _on_update(self, old: Object, new: Object) -> None:
        if old.get("spec") != new.get("spec"):  # an HPA has no generation to tell a spec change by
            self._enqueue(new)

    def _forget(self, hpa: Object) -> None:
        self.histories.pop(object_key(hpa), None)

    async def sync(self, key: str) -> None:
        hpa = self.hpas.store.get(key)
        if hpa is None:
            self.histories.pop(key, None)
            return
        try:
            await self.reconcile(key, hpa)
        finally:  # every autoscaler is looked at again each sync period, whatever happened
            self.queue.add_after(key, self.settings.hpa_sync_period)

    async def _event(self, hpa: Object, type_: str, reason: str, message: str) -> None:
        await record_event(self.client, hpa, type_=type_, reason=reason, message=message, component=COMPONENT)

    # ---- one reconciliation ------------------------------------------------------------------------------------

    async def reconcile(self, key: str, hpa: Object) -> None:
        spec, old_status = hpa.get("spec") or {}, hpa.get("status") or {}
        status: Object = {
            "currentReplicas": old_status.get("currentReplicas", 0),
            "desiredReplicas": old_status.get("desiredReplicas", 0),
            "conditions": [dict(c) for c in old_status.get("conditions") or []],
        }
        if old_status.get("lastScaleTime"):
            status["lastScaleTime"] = old_status["lastScaleTime"]
        if old_status.get("currentMetrics"):
            status["currentMetrics"] = old_status["currentMetrics"]
        conditions = status["conditions"]
        namespace = hpa["metadata"]["namespace"]
        target = spec.get("scaleTargetRef") or {}
        try:
            resource = await self._resource(str(target.get("apiVersion", "")), str(target.get("kind", "")))
            scale = await self.client.request("GET", path_for(resource, namespace, target.get("name", ""), "scale"))
        except (errors.ApiError, LookupError) as err:
            await self._event(hpa, "Warning", "FailedGetScale", str(err))
            set_condition(conditions, "AbleToScale", "False", "FailedGetScale",
                          f"the HPA controller was unable to get the target's current scale: {err}")  # fmt: skip
            await self._write(hpa, status)
            return
        set_condition(conditions, "AbleToScale", "True", "SucceededGetScale",
                      "the HPA controller was able to get the target's current scale")  # fmt: skip
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        history = self.histories.setdefault(key, limits.History())
        history.start(current)
        min_replicas, max_replicas = int(spec.get("minReplicas", 1)), int(spec.get("maxReplicas", 1))
        desired, reason = current, ""
        if current == 0 and min_replicas != 0:
            desired = 0
            set_condition(conditions, "ScalingActive", "False", "ScalingDisabled",
                          "scaling is disabled since the replica count of the target is zero")  # fmt: skip
        elif current > max_replicas:
            desired, reason = max_replicas, "Current number of replicas above Spec.MaxReplicas"
        elif current < min_replicas:
            desired, reason = min_replicas, "Current number of replicas below Spec.MinReplicas"
        else:
            try:
                proposed, metric, statuses = await self._replicas_for_metrics(hpa, scale, current, conditions)
            except Unavailable as err:
                status["currentReplicas"] = current
                await self._write(hpa, status)
                await self._event(hpa, "Warning", "FailedComputeMetricsReplicas", str(err))
                return
            status["currentMetrics"] = statuses
            desired = max(proposed, 0)
            if desired > current:
                reason = f"{metric} above target"
            elif desired < current:
                reason = "All metrics below target"
            outcome = self._normalize(history, spec, current, desired, min_replicas, max_replicas)
            set_condition(conditions, "AbleToScale", "True", *outcome.stabilized)
            set_condition(conditions, "ScalingLimited", "True" if outcome.limited else "False", *outcome.limit)
            desired = outcome.replicas
        if desired != current:
            try:
                await self.client.request(
                    "PUT", path_for(resource, namespace, target["name"], "scale"),
                    {**scale, "spec": {**(scale.get("spec") or {}), "replicas": desired}},
                )  # fmt: skip
            except errors.ApiError as err:
                await self._event(
                    hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {err}"
                )
                set_condition(conditions, "AbleToScale", "False", "FailedUpdateScale",
                              f"the HPA controller was unable to update the target scale: {err}")  # fmt: skip
                status["currentReplicas"] = current
                await self._write(hpa, status)
                return
            set_condition(conditions, "AbleToScale", "True", "SucceededRescale",
                          f"the HPA controller was able to update the target scale to {desired}")  # fmt: skip
            await self._event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            history.scaled(spec.get("behavior"), current, desired)
            status["lastScaleTime"] = now()
        status["currentReplicas"], status["desiredReplicas"] = current, desired
        await self._write(hpa, status)

    def _normalize(
        self, history: limits.History, spec: Object, current: int, desired: int, low: int, high: int
    ) -> limits.Outcome:
        window = self.settings.hpa_downscale_stabilization
        behavior = spec.get("behavior")
        if behavior is None:
            return limits.normalize_legacy(history, current, desired, low, high, window)
        return limits.normalize(history, behavior, current, desired, low, high, window)

    async def _write(self, hpa: Object, status: Object) -> None:
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status != (hpa.get("status") or {}):
            await update_status(self.client, HPAS, hpa, status)

    async def _resource(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource of a scale target's kind: a built-in one, else from the apiserver's discovery (a custom
        resource with a scale subresource)."""
        found = by_kind(api_version, kind) or self._kinds.get((api_version, kind))
        if found is not None:
            return found
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{api_version}" if group else f"/api/{version}"
        try:
            listing = await self.client.request("GET", path)
        except errors.NotFound:
            listing = {}
        for entry in listing.get("resources") or []:
            if entry.get("kind") == kind and "/" not in entry.get("name", ""):
                resource = ResourceInfo(group, version, kind, entry["name"], entry.get("singularName", ""),
                                        bool(entry.get("namespaced")))  # fmt: skip
                self._kinds[(api_version, kind)] = resource
                return resource
        raise LookupError(f'no matches for kind "{kind}" in group "{group}"')

    # ---- metrics -----------------------------------------------------------------------------------------------

    async def _replicas_for_metrics(
        self, hpa: Object, scale: Object, current: int, conditions: list[Object]
    ) -> tuple[int, str, list[Object]]:
        """(replicas, the metric that asked for them, currentMetrics) as upstream's computeReplicasForMetrics;
        Unavailable when no metric gives a count, or some fail while the others would scale down."""
        selector_text = (scale.get("status") or {}).get("selector") or ""
        if not selector_text:
            await self._event(hpa, "Warning", "SelectorRequired", "selector is required")
            set_condition(conditions, "ScalingActive", "False", "InvalidSelector",
                          "the HPA target's scale is missing a selector")  # fmt: skip
            raise Unavailable("InvalidSelector", "", "selector is required")
        try:
            selector = parse_label_selector(selector_text)
        except (SelectorError, errors.ApiError) as err:
            message = f"couldn't convert selector into a corresponding internal selector object: {err}"
            await self._event(hpa, "Warning", "InvalidSelector", message)
            set_condition(conditions, "ScalingActive", "False", "InvalidSelector", message)
            raise Unavailable("InvalidSelector", message, message) from None
        namespace = hpa["metadata"]["namespace"]
        pods = [
            p
            for p in self.pods.store.by_index("namespace", namespace)
            if selector.matches(p["metadata"].get("labels") or {})
        ]
        metrics = (hpa.get("spec") or {}).get("metrics") or []
        statuses: list[Object] = []
        best, best_name = 0, ""
        failures: list[Unavailable] = []
        for metric in metrics:
            try:
                proposed, name, metric_status = await self._replicas_for_metric(
                    metric, namespace, selector_text, pods, current
                )
            except Unavailable as err:
                failures.append(err)
                await self._event(hpa, "Warning", err.reason, str(err))
                statuses.append({"type": ""})  # as upstream's status slot of a failed metric: left empty
                continue
            statuses.append(metric_status)
            if best == 0 or proposed > best:
                best, best_name = proposed, name
        if failures and (len(failures) >= len(metrics) or best < current):
            first = failures[0]
            set_condition(conditions, "ScalingActive", "False", first.reason, first.message)
            raise Unavailable(
                first.reason,
                first.message,
                f"invalid metrics ({len(failures)} invalid out of {len(metrics)}), first error is: {first}",
            )
        set_condition(conditions, "ScalingActive", "True", "ValidMetricFound",
                      f"the HPA was able to successfully calculate a replica count from {best_name}")  # fmt: skip
        return best, best_name, statuses

    async def _replicas_for_metric(
        self, metric: Object, namespace: str, selector: str, pods: list[Object], current: int
    ) -> tuple[int, str, Object]:
        kind = metric.get("type", "")
        if kind in _UNSERVED:
            reason, error = _UNSERVED[kind]
            source = metric.get({"Pods": "pods", "Object": "object", "External": "external"}[kind]) or {}
            name = (source.get("metric") or {}).get("name", "")
            failure = f"unable to get metric {name}: {error}"
            if kind == "Object":
                described = source.get("describedObject") or {}
                on = f"{described.get('kind')} on {namespace} {described.get('name')}"
                failure = f"unable to get metric {name}: {on}/{error}"
            raise Unavailable(reason, f"the HPA was unable to compute the replica count: {failure}", failure)
        container_metric = kind == "ContainerResource"
        source = metric.get("containerResource" if container_metric else "resource") or {}
        resource, container = str(source.get("name", "")), str(source.get("container", "")) if container_metric else ""
        reason = "FailedGetContainerResourceMetric" if container_metric else "FailedGetResourceMetric"
        target = source.get("target") or {}
        average = target.get("averageValue")
        what = "usage" if average is not None else "utilization"
        try:
            if average is not None:
                samples = await self._pod_metrics(namespace, selector, resource, container)
                replicas, usage = calc.average_value_replicas(
                    current, calc.milli(average), resource, pods, samples, self.timing, datetime.now(UTC)
                )
                current_value: Object = {"averageValue": _milli_quantity(usage)}
                label = f"{resource} resource" if not container_metric else f"{resource} container resource"
            else:
                utilization = target.get("averageUtilization")
                if utilization is None:
                    raise calc.MetricError(
                        "invalid resource metric source: neither an average utilization target nor an average value "
                        "(usage) target was set"
                    )
                samples = await self._pod_metrics(namespace, selector, resource, container)
                replicas, percent, raw = calc.utilization_replicas(
                    current, int(utilization), resource, pods, samples, self.timing, datetime.now(UTC), container
                )
                current_value = {"averageUtilization": percent, "averageValue": _milli_quantity(raw)}
                label = (
                    f"{resource} {'container ' if container_metric else ''}resource utilization (percentage of request)"
                )
        except (calc.MetricError, QuantityError) as err:
            failure = f"failed to get {resource} {what}: {err}"
            raise Unavailable(reason, f"the HPA was unable to compute the replica count: {failure}", failure) from None
        body: Object = {"name": resource, "current": current_value}
        if container_metric:
            body["container"] = container
        return replicas, label, {"type": kind, "containerResource" if container_metric else "resource": body}

    async def _pod_metrics(
        self, namespace: str, selector: str, resource: str, container: str
    ) -> dict[str, calc.PodMetric]:
        path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{quote(namespace)}/pods"
        try:
            listing = await self.client.request("GET", path, labelSelector=selector)
        except errors.ApiError as err:
            failure = f"unable to fetch metrics from resource metrics API: {err}"
            raise calc.MetricError(f"unable to get metrics for resource {resource}: {failure}") from None
        items = listing.get("items") or []
        if not items:
            raise calc.MetricError(
                f"unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
            )
        try:
            return calc.pod_metrics(items, resource, container)
        except calc.MetricError as err:
            failure = f"failed to get container metrics: {err}"
            raise calc.MetricError(f"unable to get metrics for resource {resource}: {failure}") from None


def _milli_quantity(value: int) -> str:
    """resource.NewMilliQuantity(value, DecimalSI) as a string."""
    return str(Quantity.of(Fraction(value, 1000)))
