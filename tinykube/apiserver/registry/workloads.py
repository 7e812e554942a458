"""Strategies for the workload kinds beyond Deployments and ReplicaSets: StatefulSets, DaemonSets,
ControllerRevisions, ReplicationControllers and PodDisruptionBudgets, with upstream 1.32's defaulting
(`pkg/apis/{apps,policy}/v1*/defaults.go`) and validation field paths and messages (`pkg/apis/*/validation`).
The shared checks at the top (selectors, pod templates, immutability) serve batch.py and autoscaling.py too.

Their controllers are elsewhere (issue 13); what users meet here is the API: the defaults `kubectl get -o yaml`
shows, the refusals `kubectl apply` prints, and the rules that decide what may change after creation (a
StatefulSet's spec beyond its replicas and template, a DaemonSet's selector).

Values inside field errors follow Go's `%#v` where users see it (selectors, label maps, int-or-strings). Whole
structs (a PDB spec) are too long to be useful and are abbreviated as `Type{...}`.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.meta import validate_labels
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.registry.apps import (
    _default_template,
    _dict,
    _go_int_or_string,
    _go_invalid,
    _go_selector,
    _go_string_map,
    _int,
    _intstr_value,
    _keep_spec,
    _nonnegative,
    _normalized,
    _status_errors,
    _validate_percent,
    _validate_requirement,
)
from tinykube.apiserver.registry.generic import ORPHAN_DEPENDENTS, Strategy
from tinykube.apiserver.registry.podvalidation import validate_pod_spec
from tinykube.apiserver.registry.service_validation import GoSyntaxError

_IMMUTABLE = "field is immutable"


# ---- shared checks ----------------------------------------------------------------------------------------------


def _label_selector_errors(selector: Any, field: str) -> list[FieldError]:
    """ValidateLabelSelector: well-formed labels and requirements."""
    if not isinstance(selector, dict):
        return [invalid(field, selector, "must be an object")]
    errs = validate_labels(selector.get("matchLabels") or {}, f"{field}.matchLabels")
    exprs = selector.get("matchExpressions") or []
    for i, expr in enumerate(exprs if isinstance(exprs, list) else []):
        errs += _validate_requirement(_dict(expr), f"{field}.matchExpressions[{i}]")
    return errs


def _selector_errors(selector: Any, field: str, kind: str) -> list[FieldError]:
    """ValidateLabelSelector plus the "empty selector" rule a workload kind adds (its name is in the message)."""
    errs = _label_selector_errors(selector, field)
    if not _dict(selector).get("matchLabels") and not _dict(selector).get("matchExpressions"):
        errs.append(_go_invalid(field, _go_selector(selector), f"empty selector is invalid for {kind}"))
    return errs


def _selector_mismatch(selector: Any, labels: Any, field: str, message: str) -> list[FieldError]:
    """The template's labels must be selected: a nil selector selects nothing, an empty one everything."""
    labels = labels if isinstance(labels, dict) else None
    mismatch = [_go_invalid(field, _go_string_map(labels), message)]
    if selector is None:
        return mismatch
    if not isinstance(selector, dict):
        return []  # not a selector at all: reported where the selector is checked
    try:
        parsed = selector_from_label_selector(selector)
    except errors.BadRequest:
        return []
    return [] if parsed.empty or parsed.matches(labels or {}) else mismatch


def _template_errors(template: Any, field: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the template's labels and its pod spec."""
    template = _dict(template)
    meta = _dict(template.get("metadata"))
    return validate_labels(meta.get("labels") or {}, f"{field}.metadata.labels") + validate_pod_spec(
        template.get("spec"), f"{field}.spec"
    )


def _pod_spec(template: Any) -> dict[str, Any]:
    return _dict(_dict(template).get("spec"))


def _restart_always(template: Any, field: str, kind: str) -> list[FieldError]:
    """Controllers that replace their pods need them to restart Always and to run without a deadline."""
    pod_spec = _pod_spec(template)
    errs: list[FieldError] = []
    if pod_spec.get("restartPolicy") != "Always":
        errs.append(not_supported(f"{field}.spec.restartPolicy", pod_spec.get("restartPolicy"), ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        message = f"activeDeadlineSeconds in {kind} is not Supported"
        errs.append(forbidden(f"{field}.spec.activeDeadlineSeconds", message))
    return errs


def _positive_int_or_percent(value: Any, field: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    errs = _validate_percent(value, field)
    if isinstance(value, str) and _intstr_value(value) > 100:
        errs.append(_go_invalid(field, _go_int_or_string(value), "must not be greater than 100%"))
    return errs


def _immutable(new: Any, old: Any, field: str) -> list[FieldError]:
    return [] if new == old else [invalid(field, new, _IMMUTABLE)]


def _immutable_selector(new: Any, old: Any, field: str = "spec.selector") -> list[FieldError]:
    """Nil and empty selectors compare equal, as upstream's semantic equality."""
    if _normalized(new) == _normalized(old):
        return []
    return [_go_invalid(field, _go_selector(new), _IMMUTABLE)]


def _nonnegative_fields(obj: dict[str, Any], names: tuple[str, ...], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in names:
        errs += _nonnegative(obj.get(name), f"{path}.{name}")
    return errs


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's spec for defaulting: created when absent; a spec of the wrong JSON type is left to validation."""
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else {}


def _setdefault_dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    child = parent.setdefault(key, {})
    return child if isinstance(child, dict) else {}


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
    _setdefault_dict(claim, "metadata").setdefault("creationTimestamp", None)
    _setdefault_dict(claim, "spec").setdefault("volumeMode", "Filesystem")
    _setdefault_dict(claim, "status").setdefault("phase", "Pending")


def _default_statefulset(spec: dict[str, Any]) -> None:
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _setdefault_dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        strategy.setdefault("rollingUpdate", {})
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type") == "RollingUpdate" and isinstance(rolling, dict):
        rolling.setdefault("partition", 0)
    retention = _setdefault_dict(spec, "persistentVolumeClaimRetentionPolicy")
    retention["whenDeleted"] = retention.get("whenDeleted") or "Retain"
    retention["whenScaled"] = retention.get("whenScaled") or "Retain"
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            _default_claim_template(claim)
    _default_template(spec)


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
    rolling = _dict(rolling)
    errs = _nonnegative(rolling.get("partition"), f"{path}.rollingUpdate.partition")
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        field = f"{path}.rollingUpdate.maxUnavailable"
        errs += _validate_percent(unavailable, field)
        if _intstr_value(unavailable) == 0:
            errs.append(_go_invalid(field, _go_int_or_string(unavailable), "cannot be 0"))
        if isinstance(unavailable, str) and _intstr_value(unavailable) > 100:
            errs.append(_go_invalid(field, _go_int_or_string(unavailable), "must not be greater than 100%"))
    return errs


def _retention_errors(policy: Any) -> list[FieldError]:
    path, errs = "spec.persistentVolumeClaimRetentionPolicy", []
    for name in ("whenDeleted", "whenScaled"):
        value = _dict(policy).get(name)
        if policy is not None and value not in _RETENTION_POLICIES:
            errs.append(not_supported(f"{path}.{name}", value, _RETENTION_POLICIES))
    return errs


def _sts_template_errors(spec: dict[str, Any]) -> list[FieldError]:
    """ValidatePodTemplateSpecForStatefulSet checks the template's labels and annotations only: its pod spec mounts
    the claim templates' volumes, which a pod-spec check would refuse (upstream leaves it unchecked)."""
    template = _dict(spec.get("template"))
    labels = _dict(template.get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    errs = _selector_mismatch(spec.get("selector"), labels, "spec.template.metadata.labels", mismatch)
    errs += validate_labels(labels or {}, "spec.template.labels")  # sic: upstream's path has no "metadata"
    return errs + _restart_always(template, "spec.template", "StatefulSet")


def _validate_statefulset_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs += _sts_update_strategy_errors(_dict(spec.get("updateStrategy")))
    errs += _retention_errors(spec.get("persistentVolumeClaimRetentionPolicy"))
    errs += _nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _nonnegative(_dict(spec.get("ordinals")).get("start"), "spec.ordinals.start")
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    if spec.get("selector") is None:
        errs.append(required("spec.selector"))
    else:
        errs += _selector_errors(spec.get("selector"), "spec.selector", "statefulset")
    return errs + _sts_template_errors(spec)


def _sts_status_errors(status: dict[str, Any]) -> list[FieldError]:
    counts = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    errs = _nonnegative_fields(status, (*counts, "observedGeneration", "collisionCount"), "status")
    replicas = _int(status.get("replicas")) or 0
    for name in counts[1:]:
        value = _int(status.get(name)) or 0
        if value > replicas:
            errs.append(invalid(f"status.{name}", value, "cannot be greater than status.replicas"))
    available, ready = _int(status.get("availableReplicas")) or 0, _int(status.get("readyReplicas")) or 0
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
        _default_statefulset(_spec(obj))
        status = _setdefault_dict(obj, "status")
        status.setdefault("replicas", 0)  # not omitempty in StatefulSetStatus
        status.setdefault("availableReplicas", 0)

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = _validate_statefulset_spec(spec)
        if old is not None:
            errs += _sts_forbidden_change(spec, _dict(old.get("spec")))
        return errs + _sts_status_errors(_dict(obj.get("status")))


# ---- DaemonSet --------------------------------------------------------------------------------------------------


def _default_daemonset(spec: dict[str, Any]) -> None:
    strategy = _setdefault_dict(spec, "updateStrategy")
    strategy["type"] = strategy.get("type") or "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _setdefault_dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _default_template(spec)


def _ds_rolling_update_errors(rolling: dict[str, Any], path: str) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = _positive_int_or_percent(unavailable, f"{path}.maxUnavailable")
    errs += _positive_int_or_percent(surge, f"{path}.maxSurge")
    has_unavailable, has_surge = _intstr_value(unavailable) != 0, _intstr_value(surge) != 0
    if has_unavailable and has_surge:
        message = "may not be set when maxUnavailable is non-zero"
        errs.append(_go_invalid(f"{path}.maxSurge", _go_int_or_string(surge), message))
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
        return _ds_rolling_update_errors(_dict(rolling), f"{path}.rollingUpdate")
    rendered = f"apps.DaemonSetUpdateStrategy{{Type:{errors.go_value(kind or '')}, RollingUpdate:...}}"
    detail = 'supported values: "RollingUpdate", "OnDelete"'
    return [GoSyntaxError(ErrorType.NOT_SUPPORTED, path, rendered, detail)]


def _validate_daemonset_spec(spec: dict[str, Any]) -> list[FieldError]:
    selector, template = spec.get("selector"), _dict(spec.get("template"))
    errs = _selector_errors(selector, "spec.selector", "daemonset") if selector is not None else []
    if selector is None:
        errs.append(required("spec.selector"))
    labels = _dict(template.get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    errs += _selector_mismatch(selector, labels, "spec.template.metadata.labels", mismatch)
    errs += _template_errors(template, "spec.template")
    errs += _restart_always(template, "spec.template", "DaemonSet")
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _ds_update_strategy_errors(_dict(spec.get("updateStrategy")))
    return errs + _nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")


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
        _default_daemonset(_spec(obj))
        status = _setdefault_dict(obj, "status")
        for name in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"):
            status.setdefault(name, 0)  # not omitempty in DaemonSetStatus

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = _validate_daemonset_spec(spec)
        if old is not None:
            errs += _immutable_selector(spec.get("selector"), _dict(old.get("spec")).get("selector"))
        return errs + _nonnegative_fields(_dict(obj.get("status")), _DS_STATUS, "status")


# ---- ControllerRevision -----------------------------------------------------------------------------------------


class ControllerRevisionStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("revision", 0)  # an int64 without omitempty

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = [required("data", "data is mandatory")] if obj.get("data") is None else []
        errs += _nonnegative(obj.get("revision"), "revision")
        if old is not None:
            errs += _immutable(obj.get("data"), old.get("data"), "data")
        return errs


# ---- ReplicationController --------------------------------------------------------------------------------------


def _default_replication_controller(obj: dict[str, Any]) -> None:
    """A missing selector (and missing object labels) are the template's labels."""
    spec = _spec(obj)
    labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    if isinstance(spec.get("template"), dict):
        _default_template(spec)


def _rc_template_errors(spec: dict[str, Any]) -> list[FieldError]:
    template = spec.get("template")
    if template is None:
        return [required("spec.template")]
    selector = spec.get("selector")
    labels = _dict(_dict(template).get("metadata")).get("labels")
    errs: list[FieldError] = []
    if isinstance(selector, dict) and selector:
        message = "selector does not match labels in spec.template"
        errs += _selector_mismatch({"matchLabels": selector}, labels, "spec.template.metadata.labels", message)
    errs += _template_errors(template, "spec.template")
    return errs + _restart_always(template, "spec.template", "ReplicationController")


def _validate_rc_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs = _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    selector = spec.get("selector")
    if not selector:
        errs.append(required("spec.selector"))
    else:
        errs += validate_labels(selector, "spec.selector")
    errs += _nonnegative(spec.get("replicas"), "spec.replicas")
    return errs + _rc_template_errors(spec)


class ReplicationControllerStrategy(Strategy):
    has_status = True
    tracks_generation = True
    gc_policy = ORPHAN_DEPENDENTS  # core/v1 orphans a ReplicationController's pods by default, as it always did

    def default(self, obj: dict[str, Any]) -> None:
        _default_replication_controller(obj)
        _setdefault_dict(obj, "status").setdefault("replicas", 0)  # not omitempty

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = _validate_rc_spec(_dict(obj.get("spec")))
        status_fields = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        too_many = "cannot be greater than the number of replicas"
        return errs + _status_errors(_dict(obj.get("status")), status_fields, too_many)


# ---- PodDisruptionBudget ----------------------------------------------------------------------------------------

_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]
_PDB_STATUS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def _pdb_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        rendered = "policy.PodDisruptionBudgetSpec{...}"
        errs.append(_go_invalid("spec", rendered, "minAvailable and maxUnavailable cannot be both set"))
    for name in ("minAvailable", "maxUnavailable"):
        if spec.get(name) is not None:
            errs += _positive_int_or_percent(spec[name], f"spec.{name}")
    selector = spec.get("selector")
    if selector is not None:
        errs += _label_selector_errors(selector, "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        errs.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES))
    return errs


class PodDisruptionBudgetStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        _spec(obj)
        status = _setdefault_dict(obj, "status")
        for name in _PDB_STATUS:
            status.setdefault(name, 0)  # not omitempty in PodDisruptionBudgetStatus

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = _pdb_spec_errors(_dict(obj.get("spec")))
        return errs + _nonnegative_fields(_dict(obj.get("status")), _PDB_STATUS, "status")


STRATEGIES: dict[str, type[Strategy]] = {
    "statefulsets": StatefulSetStrategy,
    "daemonsets": DaemonSetStrategy,
    "controllerrevisions": ControllerRevisionStrategy,
    "replicationcontrollers": ReplicationControllerStrategy,
    "poddisruptionbudgets": PodDisruptionBudgetStrategy,
}
