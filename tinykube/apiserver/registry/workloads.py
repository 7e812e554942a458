"""Strategies for the workload kinds beyond Deployments and ReplicaSets: StatefulSets, DaemonSets,
ControllerRevisions, ReplicationControllers, Jobs, CronJobs, HorizontalPodAutoscalers (stored as autoscaling/v2)
and PodDisruptionBudgets, with upstream 1.32's defaulting (`pkg/apis/{apps,batch,autoscaling,policy}/v1*/defaults.go`)
and validation field paths and messages (`pkg/apis/*/validation`).

Their controllers are elsewhere (issue 13); what users meet here is the API: the defaults `kubectl get -o yaml`
shows, the refusals `kubectl apply` prints, and the rules that decide what may change after creation (a
StatefulSet's spec beyond its replicas and template, a Job's pod template, a DaemonSet's selector).

Values inside field errors follow Go's `%#v` where users see it (selectors, label maps, int-or-strings). Whole
structs (a pod template, a PDB spec) are too long to be useful and are abbreviated as `Type{...}`.
"""

from __future__ import annotations

import copy
import re
import zoneinfo
from typing import Any

from croniter import croniter  # type: ignore[import-untyped]  # no stubs published

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.meta import dns1123_label, validate_labels
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
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.podvalidation import validate_pod_spec
from tinykube.apiserver.registry.service_validation import GoSyntaxError

_IMMUTABLE = "field is immutable"
_TEMPLATE_DUMP = "core.PodTemplateSpec{...}"

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


# ---- Job --------------------------------------------------------------------------------------------------------

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
_MAX_INDEXED_PARALLELISM = 100_000
_COMPLETION_MODES = ["NonIndexed", "Indexed"]
_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]


def _default_job_spec(spec: dict[str, Any]) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    for rule in _dict(policy).get("rules") or []:
        for pattern in _dict(rule).get("onPodConditions") or []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    _default_template(spec)


def _default_job_labels(obj: dict[str, Any]) -> None:
    """A Job without labels has its template's (upstream's defaulting copies them on every decode, so after the
    selector was generated)."""
    labels = _dict(_dict(_dict(obj.get("spec")).get("template")).get("metadata")).get("labels")
    if isinstance(labels, dict) and labels and not obj["metadata"].get("labels"):
        obj["metadata"]["labels"] = dict(labels)


def _generate_selector(obj: dict[str, Any]) -> None:
    """Label the template with the Job's name and uid (labels the user set are kept, and validation refuses them
    if they do not fit), and select on the uid label: no other Job's pods can match."""
    meta, spec = obj["metadata"], _dict(obj.get("spec"))
    template = _setdefault_dict(spec, "template")
    labels = _setdefault_dict(_setdefault_dict(template, "metadata"), "labels")
    for key in (LEGACY_JOB_NAME, JOB_NAME):
        labels.setdefault(key, meta.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        labels.setdefault(key, meta.get("uid", ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match_labels = _setdefault_dict(selector, "matchLabels")
    match_labels.setdefault(CONTROLLER_UID, meta.get("uid", ""))


def _manual_selector(spec: dict[str, Any]) -> bool:
    return spec.get("manualSelector") is True


def _has_label(labels: dict[str, Any], key: str, expected: str) -> list[FieldError]:
    path = f"spec.template.metadata.labels[{key}]"
    if key not in labels:
        return [required(path, expected)]
    if labels[key] != expected:
        return [_go_invalid(path, _go_string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector_errors(obj: dict[str, Any], *, prefixed: bool) -> list[FieldError]:
    """validateGeneratedSelector: a generated selector and its template labels are the Job's uid and name."""
    spec, meta = _dict(obj.get("spec")), obj["metadata"]
    if _manual_selector(spec) or spec.get("selector") is None:
        return []
    uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
    errs = [] if uid else [required("metadata.uid")]
    labels = _dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))
    expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
    if prefixed:
        expected |= {CONTROLLER_UID: uid, JOB_NAME: name}
    for key in (LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME, *((CONTROLLER_UID, JOB_NAME) if prefixed else ())):
        errs += _has_label(labels, key, expected[key])
    try:
        selector = selector_from_label_selector(_dict(spec.get("selector")))
    except errors.BadRequest:
        return errs
    if not selector.matches(expected):
        errs.append(_go_invalid("spec.selector", _go_selector(spec.get("selector")), "`selector` not auto-generated"))
    return errs


def _job_restart_policy_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy = _pod_spec(spec.get("template")).get("restartPolicy")
    field = f"{path}.template.spec.restartPolicy"
    if policy in (None, "", "Always"):  # the pod default is Always: a Job must say how its pods end
        return [required(field, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [not_supported(field, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [invalid(field, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _indexed_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    mode = spec.get("completionMode")
    errs: list[FieldError] = []
    if mode is not None and mode not in _COMPLETION_MODES:
        errs.append(not_supported(f"{path}.completionMode", mode, _COMPLETION_MODES))
    if mode == "Indexed":
        if spec.get("completions") is None:
            errs.append(required(f"{path}.completions", "when completion mode is Indexed"))
        parallelism = _int(spec.get("parallelism"))
        if parallelism is not None and parallelism > _MAX_INDEXED_PARALLELISM:
            message = f"must be less than or equal to {_MAX_INDEXED_PARALLELISM} when completion mode is Indexed"
            errs.append(invalid(f"{path}.parallelism", parallelism, message))
    elif spec.get("backoffLimitPerIndex") is not None:
        per_index = spec.get("backoffLimitPerIndex")
        errs.append(invalid(f"{path}.backoffLimitPerIndex", per_index, "requires indexed completion mode"))
    return errs


def _replacement_policy_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    allowed = ["Failed"] if spec.get("podFailurePolicy") is not None else _REPLACEMENT_POLICIES
    return [] if policy in allowed else [not_supported(f"{path}.podReplacementPolicy", policy, allowed)]


def _job_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    """validateJobSpec: what a Job's spec and a CronJob's job template share."""
    names = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished")
    errs = _nonnegative_fields(spec, (*names, "backoffLimitPerIndex", "maxFailedIndexes"), path)
    errs += _indexed_errors(spec, path)
    errs += _replacement_policy_errors(spec, path)
    errs += _template_errors(spec.get("template"), f"{path}.template")
    return errs + _job_restart_policy_errors(spec, path)


def _job_selector_errors(spec: dict[str, Any]) -> list[FieldError]:
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    errs = _label_selector_errors(selector, "spec.selector")
    labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
    mismatch = "`selector` does not match template `labels`"
    return errs + _selector_mismatch(selector, labels, "spec.template.metadata.labels", mismatch)


def _job_name_errors(obj: dict[str, Any]) -> list[FieldError]:
    """An Indexed Job's pods are named `<job>-<index>`: the last one must still be a DNS label."""
    spec, name = _dict(obj.get("spec")), str(obj["metadata"].get("name", ""))
    completions = _int(spec.get("completions"))
    if spec.get("completionMode") != "Indexed" or not completions or completions <= 0:
        return []
    hostname = f"{name}-{completions - 1}"
    if not dns1123_label(hostname):
        return []
    message = f"will not able to create pod with invalid DNS label: {hostname}"
    return [invalid("metadata.name", name, message)]


def _scheduling_directives_only(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The old template with the parts a suspended, never-started Job may change taken from the new one (node
    affinity, node selector, tolerations, scheduling gates, labels, annotations)."""
    merged = copy.deepcopy(old)
    new_meta, meta = _dict(new.get("metadata")), _setdefault_dict(merged, "metadata")
    for key in ("labels", "annotations"):
        _take(new_meta, meta, key)
    new_spec, spec = _dict(new.get("spec")), _setdefault_dict(merged, "spec")
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        _take(new_spec, spec, key)
    affinity = new_spec.get("affinity")
    old_affinity = _dict(spec.get("affinity"))
    rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
    if affinity is None and not rest:
        spec.pop("affinity", None)
    elif isinstance(affinity, dict):
        spec["affinity"] = {
            **rest,
            **({"nodeAffinity": affinity["nodeAffinity"]} if "nodeAffinity" in affinity else {}),
        }
    return merged


def _take(src: dict[str, Any], dst: dict[str, Any], key: str) -> None:
    if key in src:
        dst[key] = copy.deepcopy(src[key])
    else:
        dst.pop(key, None)


def _job_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errs = _completions_update_errors(spec, old_spec)
    errs += _immutable_selector(spec.get("selector"), old_spec.get("selector"))
    old_template = _dict(old_spec.get("template"))
    suspended = old_spec.get("suspend") is True and not _dict(old.get("status")).get("startTime")
    if suspended:
        old_template = _scheduling_directives_only(_dict(spec.get("template")), old_template)
    if spec.get("template") != old_template:
        errs.append(_go_invalid("spec.template", _TEMPLATE_DUMP, _IMMUTABLE))
    for name in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs += _immutable(spec.get(name), old_spec.get(name), f"spec.{name}")
    return errs


def _completions_update_errors(spec: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Completions are immutable, except that an Indexed Job scales by changing them with its parallelism."""
    completions = spec.get("completions")
    if completions == old.get("completions"):
        return []
    if spec.get("completionMode") != "Indexed":
        return [invalid("spec.completions", completions, _IMMUTABLE)]
    if completions is not None and completions != spec.get("parallelism"):
        return [invalid("spec.completions", completions, "can only be modified in tandem with spec.parallelism")]
    return []


class JobStrategy(Strategy):
    has_status = True
    tracks_generation = True
    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        if isinstance(obj.get("spec"), dict) and not _manual_selector(obj["spec"]):
            _generate_selector(obj)  # made of the uid, which the registry has set by now
        _default_job_labels(obj)

    def default(self, obj: dict[str, Any]) -> None:
        _default_job_spec(_spec(obj))
        obj.setdefault("status", {})

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        _default_job_labels(new)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        old_labels = _dict(_dict(_dict(_dict(old).get("spec")).get("template")).get("metadata")).get("labels")
        prefixed = old is None or CONTROLLER_UID in _dict(old_labels)
        errs = _generated_selector_errors(obj, prefixed=prefixed)
        errs += _job_spec_errors(spec, "spec") + _job_selector_errors(spec)
        errs += _job_name_errors(obj)
        if old is not None:
            errs += _job_update_errors(obj, old)
        status = _dict(obj.get("status"))
        return errs + _nonnegative_fields(status, ("active", "succeeded", "failed", "ready", "terminating"), "status")


# ---- CronJob ----------------------------------------------------------------------------------------------------

_CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
_TZ_NAME_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")
_MAX_CRONJOB_NAME = 52  # the controller appends an 11-character suffix to name its Jobs


class _Bounds:
    """One cron field as robfig/cron parses it: its range and the names it accepts."""

    def __init__(self, low: int, high: int, names: tuple[str, ...] = ()) -> None:
        self.low, self.high = low, high
        self.names = {name: i + (1 if low == 1 else 0) for i, name in enumerate(names)}


_FIELDS = (
    _Bounds(0, 59),
    _Bounds(0, 23),
    _Bounds(1, 31),
    _Bounds(1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    _Bounds(0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_GO_DURATION = re.compile(r"(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_INT64_MAX = 2**63 - 1


class ScheduleError(ValueError):
    """A schedule robfig/cron (upstream's parser) refuses; the message is robfig's."""


def _atoi(text: str) -> int:
    """strconv.Atoi, with robfig's wording around its errors."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if abs(number) > _GO_INT64_MAX:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, bounds: _Bounds) -> int:
    return bounds.names[text.lower()] if text.lower() in bounds.names else _atoi(text)


def _check_range(expr: str, bounds: _Bounds) -> str:
    """robfig's getRange for one comma-separated part; returns the part as croniter spells it."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_high[0], bounds)
        if len(low_high) > 2:
            raise ScheduleError(f"too many hyphens: {expr}")
        end = _int_or_name(low_high[1], bounds) if len(low_high) == 2 else start
    step = 1
    if len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return f"{start}-{end}/{step}"


def _check_descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith("@every "):
        _check_go_duration(spec, spec[len("@every ") :])
        return
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def _check_go_duration(spec: str, text: str) -> None:
    """time.ParseDuration's acceptance (a robfig `@every` interval)."""
    if text in ("0", "+0", "-0"):
        return
    body = text.lstrip("+-")
    if not body:
        raise ScheduleError(f'failed to parse duration {spec}: time: invalid duration "{text}"')
    position = 0
    while position < len(body):
        match = _GO_DURATION.match(body, position)
        if match is None:
            unit = re.match(r"[-+]?(\d+(\.\d*)?|\.\d+)([^\d.]*)", body[position:])
            if unit and unit.group(3):
                reason = f'unknown unit "{unit.group(3)}" in duration "{text}"'
            elif unit:
                reason = f'missing unit in duration "{text}"'
            else:
                reason = f'invalid duration "{text}"'
            raise ScheduleError(f"failed to parse duration {spec}: time: {reason}")
        position = match.end()


def check_schedule(schedule: str) -> None:
    """Refuse what upstream's cron parser (robfig/cron v3, standard five fields plus descriptors and a leading
    `TZ=`/`CRON_TZ=`) refuses, with its messages; then have croniter parse the fields.

    croniter is the well-kept parser, but it accepts more than robfig (a day-of-week 7, `L`, `W`, `#`, six or seven
    fields, reversed ranges), so robfig's rules are checked first, field by field, and croniter is given the
    normalized ranges."""
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        end = space if space >= 0 else len(spec)
        location = spec[spec.index("=") + 1 : end]
        if _load_location_error(location):
            raise ScheduleError(f"provided bad location {location}: {_load_location_error(location)}")
        spec = spec[end:].strip()
    if spec.startswith("@"):
        _check_descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    # robfig splits a field on commas and drops empty parts
    normalized = [",".join(_check_range(p, b) for p in f.split(",") if p) for f, b in zip(fields, _FIELDS, strict=True)]
    try:
        croniter.expand(" ".join(normalized))
    except (ValueError, KeyError) as err:
        raise ScheduleError(str(err)) from None


def _load_location_error(name: str) -> str:
    """time.LoadLocation's error for a zone name, or "" when the tz database knows it."""
    if name in ("", "UTC"):
        return ""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
    return ""


def _schedule_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    schedule, path = spec.get("schedule"), "spec.schedule"
    if not schedule:
        return [required(path)]
    if not isinstance(schedule, str):
        return [invalid(path, schedule, "must be a string")]
    errs: list[FieldError] = []
    try:
        check_schedule(schedule)
    except ScheduleError as err:
        errs.append(invalid(path, schedule, str(err)))
    # A TZ in the schedule is refused on create; an object that already had one may keep it (without timeZone).
    allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule", ""))
    if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
        errs.append(invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _time_zone_errors(zone: Any) -> list[FieldError]:
    path = "spec.timeZone"
    if zone is None:
        return []
    if not isinstance(zone, str) or not zone:
        return [invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_NAME_PART.fullmatch(part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    errs: list[FieldError] = []
    if zone.lower() == "local":
        message = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        errs.append(invalid(path, zone, message))
    if zone != "Local" and (problem := _load_location_error(zone)):
        errs.append(invalid(path, zone, problem))
    return errs


def _job_template_errors(template: dict[str, Any]) -> list[FieldError]:
    """ValidateJobTemplateSpec: the selector is always generated for the Jobs a CronJob makes."""
    spec, path = _dict(template.get("spec")), "spec.jobTemplate.spec"
    errs = _job_spec_errors(spec, path)
    if spec.get("selector") is not None:
        errs.append(
            _go_invalid(f"{path}.selector", _go_selector(spec["selector"]), "`selector` will be auto-generated")
        )
    if _manual_selector(spec):
        errs.append(not_supported(f"{path}.manualSelector", True, ["nil", "false"]))
    return errs


def _cronjob_spec_errors(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[FieldError]:
    errs = _schedule_errors(spec, old_spec)
    errs += _nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _time_zone_errors(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errs.append(required("spec.concurrencyPolicy"))
    elif policy not in _CONCURRENCY_POLICIES:
        errs.append(not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY_POLICIES))
    errs += _job_template_errors(_dict(spec.get("jobTemplate")))
    return errs + _nonnegative_fields(spec, ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"), "spec")


class CronJobStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = _spec(obj)
        spec["concurrencyPolicy"] = spec.get("concurrencyPolicy") or "Allow"
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        template = _setdefault_dict(spec, "jobTemplate")
        _setdefault_dict(template, "metadata").setdefault("creationTimestamp", None)
        _default_template(_setdefault_dict(template, "spec"))  # the pod template only: Job defaults are the Job's
        obj.setdefault("status", {})

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        errs = _cronjob_spec_errors(spec, None if old is None else _dict(old.get("spec")))
        name = str(obj["metadata"].get("name", ""))
        if old is None and len(name) > _MAX_CRONJOB_NAME:
            errs.append(invalid("metadata.name", name, f"must be no more than {_MAX_CRONJOB_NAME} characters"))
        return errs


# ---- HorizontalPodAutoscaler (autoscaling/v2) -------------------------------------------------------------------

_METRIC_SOURCES = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
_METRIC_TYPES = sorted(_METRIC_SOURCES)
_PRESENCE_ORDER = ("object", "external", "pods", "resource", "containerResource")  # the order upstream checks them
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
_SCALING_POLICIES = ["Percent", "Pods"]
_MAX_PERIOD_SECONDS = 1800
_MAX_STABILIZATION_SECONDS = 3600
_DEFAULT_CPU_UTILIZATION = 80
_QUANTITY_NUMBER = re.compile(r"\s*([+-]?)(\d*\.?\d*)")


def _default_scale_up() -> dict[str, Any]:
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def _default_scale_down() -> dict[str, Any]:
    # no stabilization window: the controller's --horizontal-pod-autoscaler-downscale-stabilization applies
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _fill_rules(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """copyHPAScalingRules: the fields a rule set gives replace the defaults' (explicit nulls do not)."""
    given = {k: v for k, v in _dict(rules).items() if v is not None}
    return {**defaults, **given}


def _default_hpa_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": _DEFAULT_CPU_UTILIZATION}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _fill_rules(behavior.get("scaleUp"), _default_scale_up())
        behavior["scaleDown"] = _fill_rules(behavior.get("scaleDown"), _default_scale_down())


def quantity_sign(value: Any) -> int:
    """The sign of a resource.Quantity given as JSON (a string such as "500m" or a number); 0 when unparseable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (value > 0) - (value < 0)
    match = _QUANTITY_NUMBER.match(str(value))
    digits = match.group(2) if match else ""
    if not digits.strip(".") or float(digits) == 0:
        return 0
    return -1 if match and match.group(1) == "-" else 1


def _path_segment_errors(name: Any, field: str) -> list[FieldError]:
    """IsValidPathSegmentName: the name ends up in a URL path."""
    text = str(name)
    errs = [invalid(field, name, f"may not be '{text}'")] if text in (".", "..") else []
    return errs + [invalid(field, name, f"may not contain '{c}'") for c in ("/", "%") if c in text]


def _object_reference_errors(ref: Any, path: str) -> list[FieldError]:
    ref, errs = _dict(ref), []
    for name in ("kind", "name"):
        if not ref.get(name):
            errs.append(required(f"{path}.{name}"))
        else:
            errs += _path_segment_errors(ref[name], f"{path}.{name}")
    return errs


def _metric_target_errors(target: dict[str, Any], path: str) -> list[FieldError]:
    kind = target.get("type")
    errs = [required(f"{path}.type", "must specify a metric target type")] if not kind else []
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(invalid(f"{path}.type", kind or "", "must be either Utilization, Value, or AverageValue"))
    for name in ("value", "averageValue"):
        if target.get(name) is not None and quantity_sign(target[name]) != 1:
            errs.append(invalid(f"{path}.{name}", target[name], "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errs


def _metric_identifier_errors(metric: Any, path: str) -> list[FieldError]:
    name = _dict(metric).get("name")
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return _path_segment_errors(name, f"{path}.name")


def _utilization_or_value(target: dict[str, Any], path: str) -> list[FieldError]:
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        return [required(f"{path}.averageUtilization", "must set either a target raw value or a target utilization")]
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        return [forbidden(f"{path}.averageValue", "may not set both a target raw value and a target utilization")]
    return []


def _resource_source_errors(source: dict[str, Any], path: str, *, container: bool) -> list[FieldError]:
    target = _dict(source.get("target"))
    errs = [] if source.get("name") else [required(f"{path}.name", "must specify a resource name")]
    if container:
        name = source.get("container")
        if not name:
            errs.append(required(f"{path}.container", "must specify a container"))
        else:
            errs += [invalid(f"{path}.container", name, m) for m in dns1123_label(str(name))]
    errs += _metric_target_errors(target, f"{path}.target")
    return errs + _utilization_or_value(target, f"{path}.target")


def _object_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = _dict(source.get("target"))
    errs = _object_reference_errors(source.get("describedObject"), f"{path}.describedObject")
    errs += _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return errs


def _external_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = _dict(source.get("target"))
    errs = _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        message = "must set either a target value for metric or a per-pod target"
        errs.append(required(f"{path}.target.averageValue", message))
    if target.get("value") is not None and target.get("averageValue") is not None:
        message = "may not set both a target value for metric and a per-pod target"
        errs.append(forbidden(f"{path}.target.value", message))
    return errs


def _pods_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    target = _dict(source.get("target"))
    errs = _metric_identifier_errors(source.get("metric"), f"{path}.metric")
    errs += _metric_target_errors(target, f"{path}.target")
    if target.get("averageValue") is None:
        errs.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return errs


def _source_errors(field: str, source: dict[str, Any], path: str) -> list[FieldError]:
    if field == "object":
        return _object_source_errors(source, path)
    if field == "external":
        return _external_source_errors(source, path)
    if field == "pods":
        return _pods_source_errors(source, path)
    return _resource_source_errors(source, path, container=field == "containerResource")


def _metric_spec_errors(metric: dict[str, Any], path: str) -> list[FieldError]:
    """validateMetricSpec: a known type, its source filled in, and no other source."""
    kind = metric.get("type")
    errs = [required(f"{path}.type", "must specify a metric source type")] if not kind else []
    if kind not in _METRIC_SOURCES:
        errs.append(not_supported(f"{path}.type", kind or "", _METRIC_TYPES))
    present = [name for name in _PRESENCE_ORDER if metric.get(name) is not None]
    if present:  # only the first source present is checked in depth
        errs += _source_errors(present[0], _dict(metric[present[0]]), f"{path}.{present[0]}")
    expected = _METRIC_SOURCES.get(str(kind), "")
    if expected and metric.get(expected) is None:
        errs.append(required(f"{path}.{expected}", "must populate information for the given metric source"))
    if not expected:
        errs.append(not_supported(f"{path}.type", kind or "", _METRIC_TYPES))
    if len(present) != 1:
        errs += [
            forbidden(f"{path}.{name}", "must populate the given metric source only")
            for name in sorted(present)
            if name != expected
        ]
    return errs


def _metrics_errors(metrics: Any, min_replicas: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    items = metrics if isinstance(metrics, list) else []
    for i, metric in enumerate(items):
        errs += _metric_spec_errors(_dict(metric), f"spec.metrics[{i}]")
    kinds = {_dict(m).get("type") for m in items}
    if min_replicas == 0 and not kinds & {"Object", "External"}:
        message = "must specify at least one Object or External metric to support scaling to zero replicas"
        errs.append(forbidden("spec.metrics", message))
    return errs


def _scaling_rules_errors(rules: Any, path: str) -> list[FieldError]:
    if rules is None:
        return []
    rules, errs = _dict(rules), []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if window is not None and window > _MAX_STABILIZATION_SECONDS:
        message = f"must be less than or equal to {_MAX_STABILIZATION_SECONDS}"
        errs.append(invalid(f"{path}.stabilizationWindowSeconds", window, message))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(not_supported(f"{path}.selectPolicy", select, _SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        errs.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies if isinstance(policies, list) else []):
        errs += _scaling_policy_errors(_dict(policy), f"{path}.policies[{i}]")
    return errs


def _scaling_policy_errors(policy: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if policy.get("type") not in _SCALING_POLICIES:
        errs.append(not_supported(f"{path}.type", policy.get("type", ""), _SCALING_POLICIES))
    value, period = _int(policy.get("value")) or 0, _int(policy.get("periodSeconds")) or 0
    if value <= 0:
        errs.append(invalid(f"{path}.value", value, "must be greater than zero"))
    if period <= 0:
        errs.append(invalid(f"{path}.periodSeconds", period, "must be greater than zero"))
    if period > _MAX_PERIOD_SECONDS:
        errs.append(invalid(f"{path}.periodSeconds", period, f"must be less than or equal to {_MAX_PERIOD_SECONDS}"))
    return errs


def _hpa_spec_errors(spec: dict[str, Any], min_lower_bound: int) -> list[FieldError]:
    errs: list[FieldError] = []
    low, high = _int(spec.get("minReplicas")), _int(spec.get("maxReplicas")) or 0
    if low is not None and low < min_lower_bound:
        message = f"must be greater than or equal to {min_lower_bound}"
        errs.append(invalid("spec.minReplicas", low, message))
    if high < 1:
        errs.append(invalid("spec.maxReplicas", high, "must be greater than 0"))
    if low is not None and high < low:
        errs.append(invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    errs += _object_reference_errors(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    errs += _metrics_errors(spec.get("metrics"), low)
    behavior = _dict(spec.get("behavior"))
    errs += _scaling_rules_errors(behavior.get("scaleUp"), "spec.behavior.scaleUp")
    return errs + _scaling_rules_errors(behavior.get("scaleDown"), "spec.behavior.scaleDown")


class HorizontalPodAutoscalerStrategy(Strategy):
    """Works on the stored autoscaling/v2 form; autoscaling/v1 requests are converted before and after."""

    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_hpa_spec(_spec(obj))
        _setdefault_dict(obj, "status").setdefault("desiredReplicas", 0)  # not omitempty in v2

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        # minReplicas 0 needs the HPAScaleToZero gate (alpha, off), unless the object already has it
        lower = 0 if old is not None and _dict(old.get("spec")).get("minReplicas") == 0 else 1
        errs = _hpa_spec_errors(_dict(obj.get("spec")), lower)
        status = _dict(obj.get("status"))
        return errs + _nonnegative_fields(status, ("currentReplicas", "desiredReplicas"), "status")


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
    "jobs": JobStrategy,
    "cronjobs": CronJobStrategy,
    "horizontalpodautoscalers": HorizontalPodAutoscalerStrategy,
    "poddisruptionbudgets": PodDisruptionBudgetStrategy,
}
