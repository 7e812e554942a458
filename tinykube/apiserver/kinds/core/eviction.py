"""`pods/eviction`: a pod deleted only if its PodDisruptionBudget allows it, as upstream's `EvictionREST.Create`
(pkg/registry/core/pod/storage/eviction.go): what `kubectl drain` calls.

A pod that has ended, is still Pending or is being deleted goes at once. Otherwise the one PodDisruptionBudget
selecting it (more than one is an error, as upstream) must allow a disruption: its status is decremented (and the
pod recorded in `disruptedPods`) by a write conditional on its resourceVersion, then the pod is deleted; a budget
that allows none answers 429 with upstream's message and cause.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.resources import builtin
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.registry.generic import Registry, Request

PODS = builtin("", "v1", "pods")
BUDGETS = builtin("policy", "v1", "poddisruptionbudgets")
MAX_DISRUPTED_PODS = 2000  # upstream's MaxDisruptedPodSize
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


async def evict(registry: Registry, namespace: str, name: str, eviction: dict[str, Any], dry_run: bool) -> None:
    meta = eviction.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise errors.BadRequest("name in URL does not match name in Eviction object")
    pod = registry.get(Request(PODS, namespace, name)).obj
    options = dict(eviction.get("deleteOptions") or {})
    if not _can_ignore_budget(pod):
        budgets = _budgets_of(registry, pod)
        if len(budgets) > 1:
            raise errors.ApiError(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            )
        if budgets and not _ignores_unhealthy(budgets[0], pod):
            await _take_disruption(registry, budgets[0], name, dry_run)
    await registry.delete(Request(PODS, namespace, name, dry_run=dry_run), options)


def _can_ignore_budget(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def _budgets_of(registry: Registry, pod: dict[str, Any]) -> list[dict[str, Any]]:
    labels = pod["metadata"].get("labels") or {}
    found = []
    for _key, cached in registry.cache(BUDGETS).items(pod["metadata"]["namespace"]):
        selector = (cached.obj.get("spec") or {}).get("selector")
        if selector is not None and selector_from_label_selector(selector).matches(labels):
            found.append(cached.obj)
    return found


def _ignores_unhealthy(budget: dict[str, Any], pod: dict[str, Any]) -> bool:
    """`unhealthyPodEvictionPolicy: AlwaysAllow` lets a pod that is not ready go without counting against the
    budget (upstream's default, IfHealthyBudget, counts it)."""
    policy = (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy")
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return policy == "AlwaysAllow" and not ready


async def _take_disruption(registry: Registry, budget: dict[str, Any], pod_name: str, dry_run: bool) -> None:
    meta = budget["metadata"]

    def decrement(latest: dict[str, Any]) -> None:
        status = latest.setdefault("status", {})
        name = latest["metadata"]["name"]
        if int(status.get("observedGeneration") or 0) < int(latest["metadata"].get("generation") or 1):
            message = f"The disruption budget {name} is still being processed by the server."
            raise _violation(message)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise errors.Forbidden("pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise errors.Forbidden("DisruptedPods map too big - too many evictions not confirmed by PDB controller")
        if allowed == 0:
            needs, has = int(status.get("desiredHealthy") or 0), int(status.get("currentHealthy") or 0)
            message = f"The disruption budget {name} needs {needs} healthy pods and has {has} currently"
            raise _violation(message)
        status["disruptionsAllowed"] = allowed - 1
        status.setdefault("disruptedPods", {})[pod_name] = now()

    request = Request(BUDGETS, meta["namespace"], meta["name"], "status", dry_run=dry_run)
    await registry.guaranteed_update(request, decrement)


def _violation(message: str) -> errors.TooManyRequests:
    return errors.TooManyRequests(VIOLATION, details={"causes": [{"reason": "DisruptionBudget", "message": message}]})
