"""Strategy for core/v1 ReplicationControllers, with upstream 1.32's defaulting (one replica; the selector and labels
taken from the template's labels) and validation field paths and messages (`pkg/apis/core/validation`). The checks
it shares with the apps/v1 workloads are in `kinds/workloads.py`.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, required
from tinykube.api.jsonshape import as_dict
from tinykube.api.meta import validate_labels
from tinykube.apiserver.kinds.workloads import (
    default_template,
    keep_spec,
    replica_status_errors,
    restart_always_errors,
    selector_mismatch,
    setdefault_dict,
    spec_to_default,
    template_errors,
)
from tinykube.apiserver.registry.generic import ORPHAN_DEPENDENTS, Strategy
from tinykube.apiserver.registry.validation import nonnegative

# ---- ReplicationController --------------------------------------------------------------------------------------


def _default_replication_controller(obj: dict[str, Any]) -> None:
    """A missing selector (and missing object labels) are the template's labels."""
    spec = spec_to_default(obj)
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    if isinstance(spec.get("template"), dict):
        default_template(spec)


def _rc_template_errors(spec: dict[str, Any]) -> list[FieldError]:
    template = spec.get("template")
    if template is None:
        return [required("spec.template")]
    selector = spec.get("selector")
    labels = as_dict(as_dict(template).get("metadata")).get("labels")
    errs: list[FieldError] = []
    if isinstance(selector, dict) and selector:
        message = "selector does not match labels in spec.template"
        errs += selector_mismatch({"matchLabels": selector}, labels, "spec.template.metadata.labels", message)
    errs += template_errors(template, "spec.template")
    return errs + restart_always_errors(template, "spec.template", "ReplicationController")


def _validate_rc_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs = nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    selector = spec.get("selector")
    if not selector:
        errs.append(required("spec.selector"))
    else:
        errs += validate_labels(selector, "spec.selector")
    errs += nonnegative(spec.get("replicas"), "spec.replicas")
    return errs + _rc_template_errors(spec)


class ReplicationControllerStrategy(Strategy):
    has_status = True
    tracks_generation = True
    gc_policy = ORPHAN_DEPENDENTS  # core/v1 orphans a ReplicationController's pods by default, as it always did

    def default(self, obj: dict[str, Any]) -> None:
        _default_replication_controller(obj)
        setdefault_dict(obj, "status").setdefault("replicas", 0)  # not omitempty

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = _validate_rc_spec(as_dict(obj.get("spec")))
        status_fields = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        too_many = "cannot be greater than the number of replicas"
        return errs + replica_status_errors(as_dict(obj.get("status")), status_fields, too_many)


STRATEGIES: dict[str, type[Strategy]] = {"replicationcontrollers": ReplicationControllerStrategy}
