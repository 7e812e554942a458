"""Checks shared by the kinds that run pods from a template, across API groups: apps/v1 (Deployments, ReplicaSets,
StatefulSets, DaemonSets), batch/v1 (Jobs, CronJobs), core/v1 ReplicationControllers, policy/v1 PodDisruptionBudgets
and autoscaling/v2 HorizontalPodAutoscalers.

They are one group's rules in upstream (`pkg/apis/apps/validation` and core's pod template checks) that the others
reuse; here they sit beside the groups' homes rather than in one of them, so that no group imports another's
strategy module for them. Field paths and messages are upstream's, with Go's `%#v` renderings of selectors, label
maps and int-or-strings where users see them.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError, forbidden, invalid, not_supported
from tinykube.api.jsonshape import as_dict, as_int
from tinykube.api.meta import regex_error, validate_labels
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.kinds.core.pod_validation import validate_pod_spec
from tinykube.apiserver.kinds.core.pods import default_pod_spec
from tinykube.apiserver.registry.generic import SYSTEM_FIELDS
from tinykube.apiserver.registry.gosyntax import go_int_or_string, go_invalid, go_selector, go_string_map
from tinykube.apiserver.registry.validation import IMMUTABLE, nonnegative, validate_requirement

_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MSG = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%"
)


# ---- numbers and int-or-percent values -------------------------------------------------------------------------


def validate_percent(value: Any, field: str) -> list[FieldError]:
    if isinstance(value, str):
        return [] if _PERCENT.fullmatch(value) else [go_invalid(field, go_int_or_string(value), _PERCENT_MSG)]
    return nonnegative(value, field)


def intstr_value(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.fullmatch(value) else 0
    return as_int(value) or 0


# ---- selectors and pod templates -------------------------------------------------------------------------------


def normalized_selector(selector: Any) -> dict[str, Any]:
    return {k: v for k, v in as_dict(selector).items() if v}


def workload_label_selector_errors(selector: Any, field: str) -> list[FieldError]:
    """ValidateLabelSelector: well-formed labels and requirements."""
    if not isinstance(selector, dict):
        return [invalid(field, selector, "must be an object")]
    errs = validate_labels(selector.get("matchLabels") or {}, f"{field}.matchLabels")
    exprs = selector.get("matchExpressions") or []
    for i, expr in enumerate(exprs if isinstance(exprs, list) else []):
        errs += validate_requirement(as_dict(expr), f"{field}.matchExpressions[{i}]")
    return errs


def selector_errors(selector: Any, field: str, kind: str) -> list[FieldError]:
    """ValidateLabelSelector plus the "empty selector" rule a workload kind adds (its name is in the message)."""
    errs = workload_label_selector_errors(selector, field)
    if not as_dict(selector).get("matchLabels") and not as_dict(selector).get("matchExpressions"):
        errs.append(go_invalid(field, go_selector(selector), f"empty selector is invalid for {kind}"))
    return errs


def selector_mismatch(selector: Any, labels: Any, field: str, message: str) -> list[FieldError]:
    """The template's labels must be selected: a nil selector selects nothing, an empty one everything."""
    labels = labels if isinstance(labels, dict) else None
    mismatch = [go_invalid(field, go_string_map(labels), message)]
    if selector is None:
        return mismatch
    if not isinstance(selector, dict):
        return []  # not a selector at all: reported where the selector is checked
    try:
        parsed = selector_from_label_selector(selector)
    except errors.BadRequest:
        return []
    return [] if parsed.empty or parsed.matches(labels or {}) else mismatch


def template_errors(template: Any, field: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: the template's labels and its pod spec."""
    template = as_dict(template)
    meta = as_dict(template.get("metadata"))
    return validate_labels(meta.get("labels") or {}, f"{field}.metadata.labels") + validate_pod_spec(
        template.get("spec"), f"{field}.spec"
    )


def template_pod_spec(template: Any) -> dict[str, Any]:
    return as_dict(as_dict(template).get("spec"))


def restart_always_errors(template: Any, field: str, kind: str) -> list[FieldError]:
    """Controllers that replace their pods need them to restart Always and to run without a deadline."""
    pod_spec = template_pod_spec(template)
    errs: list[FieldError] = []
    if pod_spec.get("restartPolicy") != "Always":
        errs.append(not_supported(f"{field}.spec.restartPolicy", pod_spec.get("restartPolicy"), ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        message = f"activeDeadlineSeconds in {kind} is not Supported"
        errs.append(forbidden(f"{field}.spec.activeDeadlineSeconds", message))
    return errs


def positive_int_or_percent(value: Any, field: str) -> list[FieldError]:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    errs = validate_percent(value, field)
    if isinstance(value, str) and intstr_value(value) > 100:
        errs.append(go_invalid(field, go_int_or_string(value), "must not be greater than 100%"))
    return errs


def immutable_selector(new: Any, old: Any, field: str = "spec.selector") -> list[FieldError]:
    """Nil and empty selectors compare equal, as upstream's semantic equality."""
    if normalized_selector(new) == normalized_selector(old):
        return []
    return [go_invalid(field, go_selector(new), IMMUTABLE)]


def nonnegative_fields(obj: dict[str, Any], names: tuple[str, ...], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in names:
        errs += nonnegative(obj.get(name), f"{path}.{name}")
    return errs


def spec_to_default(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's spec for defaulting: created when absent; a spec of the wrong JSON type is left to validation."""
    spec = obj.setdefault("spec", {})
    return spec if isinstance(spec, dict) else {}


def setdefault_dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    child = parent.setdefault(key, {})
    return child if isinstance(child, dict) else {}


# ---- defaulting and status writes -----------------------------------------------------------------------------


def default_template(spec: dict[str, Any]) -> None:
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        meta = template.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta.setdefault("creationTimestamp", None)  # a zero Time in Go's JSON, as upstream stores it
        if isinstance(template.setdefault("spec", {}), dict):
            default_pod_spec(template["spec"])


def replica_status_errors(status: dict[str, Any], fields: tuple[str, ...], greater_message: str) -> list[FieldError]:
    """Counts are non-negative, none exceeds `replicas`, and available pods are ready ones."""
    errs: list[FieldError] = []
    for name in ("replicas", "observedGeneration", *fields):
        errs += nonnegative(status.get(name), f"status.{name}")
    replicas = as_int(status.get("replicas")) or 0
    for name in fields:
        value = as_int(status.get(name)) or 0
        if name != "unavailableReplicas" and value > replicas:
            errs.append(invalid(f"status.{name}", value, greater_message))
    available, ready = as_int(status.get("availableReplicas")) or 0, as_int(status.get("readyReplicas")) or 0
    if available > ready:
        errs.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return errs


def keep_spec(new: dict[str, Any], old: dict[str, Any], *, keep_labels: bool) -> None:
    """A status write of a workload: upstream keeps the spec (and a Deployment's labels) but takes the rest of the
    metadata as sent, which is how the deployment controller records its revision annotation without a new
    generation."""
    new["spec"] = copy.deepcopy(old.get("spec"))
    meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
    for name in (*SYSTEM_FIELDS, *(("labels",) if keep_labels else ())):
        if name in old_meta:
            meta[name] = copy.deepcopy(old_meta[name])
        else:
            meta.pop(name, None)
