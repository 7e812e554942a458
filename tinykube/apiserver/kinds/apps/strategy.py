"""Strategies for the apps/v1 kinds beyond Deployments and ReplicaSets (those are in `deployments.py`): StatefulSets,
DaemonSets and ControllerRevisions, with upstream 1.32's defaulting (`pkg/apis/apps/v1/defaults.go`) and validation
field paths and messages (`pkg/apis/apps/validation`). The checks they share with the other workload kinds
(selectors, pod templates, immutability) are in `kinds/workloads.py`.

Their controllers are elsewhere (issue 13); what users meet here is the API: the defaults `kubectl get -o yaml`
shows, the refusals `kubectl apply` prints, and the rules that decide what may change after creation (a
StatefulSet's spec beyond its replicas and template, a DaemonSet's selector).

Values inside field errors follow Go's `%#v` where users see it (selectors, label maps, int-or-strings). Whole
structs are too long to be useful and are abbreviated as `Type{...}`.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.meta import validate_labels
from tinykube.apiserver.kinds.workloads import (
    default_template,
    immutable_selector,
    intstr_value,
    keep_spec,
    nonnegative_fields,
    positive_int_or_percent,
    restart_always_errors,
    selector_errors,
    selector_mismatch,
    setdefault_dict,
    spec_to_default,
    template_errors,
    validate_percent,
)
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_int_or_string, go_invalid
from tinykube.apiserver.registry.validation import immutable, nonnegative

# ---- StatefulSet ------------------------------------------------------------------------------------------------

_STS_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STS_FORBIDDEN = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
_RETENTION_POLICIES = ["Delete", "Retain"]


def _default_claim_template(claim: dict[str, Any]) -> None:
    """A volumeClaimTemplate is defaulted as a PersistentVolumeClaim and keeps its type meta, as upstream shows."""
    claim.setdefault("apiVersion", "v1")
    claim.setdefault("kind", "PersistentVolumeClaim")
    setdefault_dict(claim, "metadata").setdefault("creationTimestamp", None)
    setdefault_dict(claim, "spec").setdefault("volumeMode", "Filesystem")
    setdefault_dict(claim, "status").setdefault("phase", "Pending")


def _default_statefulset(spec: dict[str, Any]) -> None:
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = setdefault_dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        strategy.setdefault("rollingUpdate", {})
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type") == "RollingUpdate" and isinstance(rolling, dict):
        rolling.setdefault("partition", 0)
    retention = setdefault_dict(spec, "persistentVolumeClaimRetentionPolicy")
    retention["whenDeleted"] = retention.get("whenDeleted") or "Retain"
    retention["whenScaled"] = retention.get("whenScaled") or "Retain"
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            _default_claim_template(claim)
    default_template(spec)


def _sts_update_strategy_errors(strategy: dict[str, Any]) -> list[FieldError]:
    kind, rolling, path = strategy.get("type"), strategy.get("rollingUpdate"), "spec.updateStrategy"
    if not kind:
        return [required(path)]
    if kind == "OnDelete":
        if rolling is not None:
            return [invalid(f"{path}.rollingUpdate", rolling, "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind != "RollingUpdate":
        return [invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'")]
    rolling = as_dict(rolling)
    errs = nonnegative(rolling.get("partition"), f"{path}.rollingUpdate.partition")
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        field = f"{path}.rollingUpdate.maxUnavailable"
        errs += validate_percent(unavailable, field)
        if intstr_value(unavailable) == 0:
            errs.append(go_invalid(field, go_int_or_string(unavailable), "cannot be 0"))
        if isinstance(unavailable, str) and intstr_value(unavailable) > 100:
            errs.append(go_invalid(field, go_int_or_string(unavailable), "must not be greater than 100%"))
    return errs


def _retention_errors(policy: Any) -> list[FieldError]:
    path, errs = "spec.persistentVolumeClaimRetentionPolicy", []
    for name in ("whenDeleted", "whenScaled"):
        value = as_dict(policy).get(name)
        if policy is not None and value not in _RETENTION_POLICIES:
            errs.append(not_supported(f"{path}.{name}", value, _RETENTION_POLICIES))
    return errs


def _sts_template_errors(spec: dict[str, Any]) -> list[FieldError]:
    """ValidatePodTemplateSpecForStatefulSet checks the template's labels and annotations only: its pod spec mounts
    the claim templates' volumes, which a pod-spec check would refuse (upstream leaves it unchecked)."""
    template = as_dict(spec.get("template"))
    labels = as_dict(template.get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    errs = selector_mismatch(spec.get("selector"), labels, "spec.template.metadata.labels", mismatch)
    errs += validate_labels(labels or {}, "spec.template.labels")  # sic: upstream's path has no "metadata"
    return errs + restart_always_errors(template, "spec.template", "StatefulSet")


def _validate_statefulset_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs += _sts_update_strategy_errors(as_dict(spec.get("updateStrategy")))
    errs += _retention_errors(spec.get("persistentVolumeClaimRetentionPolicy"))
    errs += nonnegative(spec.get("replicas"), "spec.replicas")
    errs += nonnegative(as_dict(spec.get("ordinals")).get("start"), "spec.ordinals.start")
    errs += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    if spec.get("selector") is None:
        errs.append(required("spec.selector"))
    else:
        errs += selector_errors(spec.get("selector"), "spec.selector", "statefulset")
    return errs + _sts_template_errors(spec)


def _sts_status_errors(status: dict[str, Any]) -> list[FieldError]:
    counts = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    errs = nonnegative_fields(status, (*counts, "observedGeneration", "collisionCount"), "status")
    replicas = as_int(status.get("replicas")) or 0
    for name in counts[1:]:
        value = as_int(status.get(name)) or 0
        if value > replicas:
            errs.append(invalid(f"status.{name}", value, "cannot be greater than status.replicas"))
    available, ready = as_int(status.get("availableReplicas")) or 0, as_int(status.get("readyReplicas")) or 0
    if available > ready:
        errs.append(invalid("status.availableReplicas", available, "cannot be greater than status.readyReplicas"))
    return errs


def _sts_forbidden_change(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Only the fields in `_STS_MUTABLE` may change: the rest (service name, selector, claim templates, …) define
    the pods' identity and storage."""
    kept = {k: v for k, v in new.items() if k not in _STS_MUTABLE}
    if kept == {k: v for k, v in old.items() if k not in _STS_MUTABLE}:
        return []
    return [forbidden("spec", _STS_FORBIDDEN)]


class StatefulSetStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_statefulset(spec_to_default(obj))
        status = setdefault_dict(obj, "status")
        status.setdefault("replicas", 0)  # not omitempty in StatefulSetStatus
        status.setdefault("availableReplicas", 0)

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errs = _validate_statefulset_spec(spec)
        if old is not None:
            errs += _sts_forbidden_change(spec, as_dict(old.get("spec")))
        return errs + _sts_status_errors(as_dict(obj.get("status")))


# ---- DaemonSet --------------------------------------------------------------------------------------------------


def _default_daemonset(spec: dict[str, Any]) -> None:
    strategy = setdefault_dict(spec, "updateStrategy")
    strategy["type"] = strategy.get("type") or "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = setdefault_dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    default_template(spec)


def _ds_rolling_update_errors(rolling: dict[str, Any], path: str) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = positive_int_or_percent(unavailable, f"{path}.maxUnavailable")
    errs += positive_int_or_percent(surge, f"{path}.maxSurge")
    has_unavailable, has_surge = intstr_value(unavailable) != 0, intstr_value(surge) != 0
    if has_unavailable and has_surge:
        message = "may not be set when maxUnavailable is non-zero"
        errs.append(go_invalid(f"{path}.maxSurge", go_int_or_string(surge), message))
    elif not has_unavailable and not has_surge:
        errs.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return errs


def _ds_update_strategy_errors(strategy: dict[str, Any]) -> list[FieldError]:
    path, kind = "spec.updateStrategy", strategy.get("type")
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [required(f"{path}.rollingUpdate")]
        return _ds_rolling_update_errors(as_dict(rolling), f"{path}.rollingUpdate")
    rendered = f"apps.DaemonSetUpdateStrategy{{Type:{errors.go_value(kind or '')}, RollingUpdate:...}}"
    detail = 'supported values: "RollingUpdate", "OnDelete"'
    return [GoSyntaxError(ErrorType.NOT_SUPPORTED, path, rendered, detail)]


def _validate_daemonset_spec(spec: dict[str, Any]) -> list[FieldError]:
    selector, template = spec.get("selector"), as_dict(spec.get("template"))
    errs = selector_errors(selector, "spec.selector", "daemonset") if selector is not None else []
    if selector is None:
        errs.append(required("spec.selector"))
    labels = as_dict(template.get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    errs += selector_mismatch(selector, labels, "spec.template.metadata.labels", mismatch)
    errs += template_errors(template, "spec.template")
    errs += restart_always_errors(template, "spec.template", "DaemonSet")
    errs += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _ds_update_strategy_errors(as_dict(spec.get("updateStrategy")))
    return errs + nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")


_DS_STATUS = (
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
    "collisionCount",
)


class DaemonSetStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_daemonset(spec_to_default(obj))
        status = setdefault_dict(obj, "status")
        for name in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
            status.setdefault(name, 0)  # not omitempty in DaemonSetStatus

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errs = _validate_daemonset_spec(spec)
        if old is not None:
            errs += immutable_selector(spec.get("selector"), as_dict(old.get("spec")).get("selector"))
        return errs + nonnegative_fields(as_dict(obj.get("status")), _DS_STATUS, "status")


# ---- ControllerRevision -----------------------------------------------------------------------------------------


class ControllerRevisionStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("revision", 0)  # an int64 without omitempty

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = [required("data", "data is mandatory")] if obj.get("data") is None else []
        errs += nonnegative(obj.get("revision"), "revision")
        if old is not None:
            errs += immutable(obj.get("data"), old.get("data"), "data")
        return errs


STRATEGIES: dict[str, type[Strategy]] = {
    "statefulsets": StatefulSetStrategy,
    "daemonsets": DaemonSetStrategy,
    "controllerrevisions": ControllerRevisionStrategy,
}
