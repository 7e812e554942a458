"""Strategies for apps/v1 Deployments and ReplicaSets (their `scale` subresource is the generic one,
`registry/scale.py`).

Defaulting is upstream's apps/v1 (Deployment: one replica, a 25%/25% RollingUpdate, ten old ReplicaSets kept, a
600 s progress deadline; ReplicaSet: one replica; pod templates as pods). Validation keeps upstream's field paths
and messages, including the Go `%#v` renderings of selectors and labels that users see in kubectl's errors.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, go_value, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.meta import validate_labels
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.kinds.core.pod_validation import validate_pod_spec
from tinykube.apiserver.kinds.core.strategy import default_object
from tinykube.apiserver.kinds.workloads import (
    default_template,
    intstr_value,
    keep_spec,
    normalized_selector,
    replica_status_errors,
    validate_percent,
)
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_int_or_string, go_invalid, go_selector, go_string_map
from tinykube.apiserver.registry.validation import nonnegative, validate_requirement

RECREATE, ROLLING_UPDATE = "Recreate", "RollingUpdate"

# ---- checks a Deployment and a ReplicaSet share ----------------------------------------------------------------


def _validate_selector(selector: Any, field: str) -> list[FieldError]:
    """Upstream's checks of a workload's `spec.selector` (required, well-formed, not empty)."""
    if selector is None:
        return [required(field)]
    if not isinstance(selector, dict):
        return [invalid(field, selector, "must be an object")]
    errs = validate_labels(selector.get("matchLabels") or {}, f"{field}.matchLabels")
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        errs.append(invalid(f"{field}.matchExpressions", exprs, "must be a list"))
        exprs = []
    for i, expr in enumerate(exprs):
        errs += validate_requirement(as_dict(expr), f"{field}.matchExpressions[{i}]")
    if not selector.get("matchLabels") and not exprs:
        # upstream says "deployment" for ReplicaSets too
        errs.append(go_invalid(field, go_selector(selector), "empty selector is invalid for deployment"))
    return errs


def _validate_template(spec: dict[str, Any], field: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet: the template's labels must match the selector, and its pods restart
    Always (a controller replaces pods; it does not wait for them to finish)."""
    template = as_dict(spec.get("template"))
    meta, pod_spec = as_dict(template.get("metadata")), as_dict(template.get("spec"))
    errs: list[FieldError] = []
    try:
        selector = selector_from_label_selector(spec.get("selector"))
    except errors.BadRequest:
        return [go_invalid("spec.selector", go_selector(spec.get("selector")), "invalid label selector")]
    labels = meta.get("labels")
    if not selector.empty and not selector.matches(labels if isinstance(labels, dict) else {}):
        mismatch = "`selector` does not match template `labels`"
        errs.append(go_invalid(f"{field}.metadata.labels", go_string_map(labels), mismatch))
    errs += validate_labels(labels or {}, f"{field}.metadata.labels")
    errs += validate_pod_spec(pod_spec, f"{field}.spec")
    policy = pod_spec.get("restartPolicy")
    if policy != "Always":
        errs.append(not_supported(f"{field}.spec.restartPolicy", policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            forbidden(f"{field}.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported")
        )
    return errs


def _validate_workload_spec(spec: dict[str, Any]) -> list[FieldError]:
    """What DeploymentSpec and ReplicaSetSpec share: replicas, minReadySeconds, selector, template."""
    errs = nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _validate_selector(spec.get("selector"), "spec.selector")
    errs += _validate_template(spec, "spec.template")
    return errs + nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")


def _immutable_selector(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """apps/v1 forbids changing the selector (nil and empty maps/lists compare equal, as upstream's Semantic)."""
    if old is None:
        return []
    selector = as_dict(new.get("spec")).get("selector")
    if normalized_selector(selector) == normalized_selector(as_dict(old.get("spec")).get("selector")):
        return []
    return [go_invalid("spec.selector", go_selector(selector), "field is immutable")]


# ---- Deployment -------------------------------------------------------------------------------------------------


def _validate_rolling_update(rolling: dict[str, Any], field: str) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = validate_percent(unavailable, f"{field}.maxUnavailable") + validate_percent(surge, f"{field}.maxSurge")
    if intstr_value(unavailable) == 0 and intstr_value(surge) == 0:
        errs.append(
            go_invalid(f"{field}.maxUnavailable", go_int_or_string(unavailable), "may not be 0 when `maxSurge` is 0")
        )
    if isinstance(unavailable, str) and intstr_value(unavailable) > 100:
        too_many = "must not be greater than 100%"
        errs.append(go_invalid(f"{field}.maxUnavailable", go_int_or_string(unavailable), too_many))
    return errs


def _validate_strategy(strategy: dict[str, Any]) -> list[FieldError]:
    kind, rolling = strategy.get("type", ""), strategy.get("rollingUpdate")
    if kind == RECREATE:
        if rolling is not None:
            return [forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == ROLLING_UPDATE:
        if rolling is None:
            return [required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil")]
        if not isinstance(rolling, dict):
            return [invalid("spec.strategy.rollingUpdate", rolling, "must be an object")]
        return _validate_rolling_update(rolling, "spec.strategy.rollingUpdate")
    pointer = "nil" if rolling is None else "0xc000000000"  # Go prints the pointer's address
    rendered = (
        f"apps.DeploymentStrategy{{Type:{go_value(kind)}, RollingUpdate:(*apps.RollingUpdateDeployment)({pointer})}}"
    )
    supported = 'supported values: "Recreate", "RollingUpdate"'
    return [GoSyntaxError(ErrorType.NOT_SUPPORTED, "spec.strategy", rendered, supported)]


def _validate_deployment_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs = _validate_workload_spec(spec)
    errs += _validate_strategy(as_dict(spec.get("strategy")))
    errs += nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = as_int(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        errs += nonnegative(deadline, "spec.progressDeadlineSeconds")
        if deadline <= (as_int(spec.get("minReadySeconds")) or 0):
            errs.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errs


class DeploymentStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = default_object(obj, "spec")
        if not isinstance(spec, dict):
            return  # validation reports it
        spec.setdefault("replicas", 1)
        strategy = default_object(spec, "strategy")
        if isinstance(strategy, dict):
            strategy.setdefault("type", ROLLING_UPDATE)
            rolling = default_object(strategy, "rollingUpdate") if strategy["type"] == ROLLING_UPDATE else None
            if isinstance(rolling, dict):
                for field in ("maxUnavailable", "maxSurge"):
                    if rolling.get(field) is None:  # JSON null is no value: defaulted as a missing one
                        rolling[field] = "25%"
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        default_template(spec)
        obj.setdefault("status", {})

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        keep_spec(new, old, keep_labels=True)

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        # annotations too: the controller copies them onto the ReplicaSets
        changed = new["metadata"].get("annotations") != old["metadata"].get("annotations")
        return changed or super().bumps_generation(new, old)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        if not isinstance(obj.get("spec"), dict):
            return [invalid("spec", obj.get("spec"), "must be an object")]
        errs = _validate_deployment_spec(obj["spec"])
        errs += _immutable_selector(obj, old)
        status_fields = ("updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        errs += replica_status_errors(
            as_dict(obj.get("status")), status_fields, "cannot be greater than status.replicas"
        )
        return errs + nonnegative(as_dict(obj.get("status")).get("collisionCount"), "status.collisionCount")


# ---- ReplicaSet -------------------------------------------------------------------------------------------------


class ReplicaSetStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = default_object(obj, "spec")
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            default_template(spec)
        status = default_object(obj, "status")
        if isinstance(status, dict):
            status.setdefault("replicas", 0)  # not omitempty in ReplicaSetStatus

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        if not isinstance(obj.get("spec"), dict):
            return [invalid("spec", obj.get("spec"), "must be an object")]
        errs = _validate_workload_spec(obj["spec"]) + _immutable_selector(obj, old)
        status_fields = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        too_many = "cannot be greater than the number of replicas"
        return errs + replica_status_errors(as_dict(obj.get("status")), status_fields, too_many)


STRATEGIES: dict[str, type[Strategy]] = {"deployments": DeploymentStrategy, "replicasets": ReplicaSetStrategy}
