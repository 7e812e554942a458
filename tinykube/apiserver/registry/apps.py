"""Strategies for apps/v1 Deployments and ReplicaSets, and their `scale` subresource (an autoscaling/v1 Scale).

Defaulting is upstream's apps/v1 (Deployment: one replica, a 25%/25% RollingUpdate, ten old ReplicaSets kept, a
600 s progress deadline; ReplicaSet: one replica; pod templates as pods). Validation keeps upstream's field paths
and messages, including the Go `%#v` renderings of selectors and labels that users see in kubectl's errors.

`scale` is not stored anywhere: a GET shows the parent's replicas and selector as a Scale; a write changes the
parent's `spec.replicas` through the parent's own update (so its validation and generation bump apply), as
upstream's ScaleREST does.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, go_value, invalid, not_supported, required
from tinykube.api.meta import qualified_name, regex_error, validate_labels
from tinykube.api.resources import SCALE
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.printing.cells import label_selector_text
from tinykube.apiserver.registry.core import default_object, default_pod_spec
from tinykube.apiserver.registry.generic import SYSTEM_FIELDS, Registry, Request, Strategy
from tinykube.apiserver.registry.podvalidation import validate_pod_spec
from tinykube.apiserver.registry.service_validation import GoSyntaxError, go_slice

RECREATE, ROLLING_UPDATE = "Recreate", "RollingUpdate"
_NONNEGATIVE = "must be greater than or equal to 0"
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MSG = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%"
)
_SCALE_ATTEMPTS = 16

# ---- Go renderings of values in field errors -------------------------------------------------------------------


def _go_string_map(value: Any) -> str:
    if not isinstance(value, dict):
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_value(k)}:{go_value(value[k])}" for k in sorted(value)) + "}"


def _go_requirement(expr: dict[str, Any]) -> str:
    values = expr.get("values")
    return (
        f"v1.LabelSelectorRequirement{{Key:{go_value(expr.get('key', ''))}, "
        f"Operator:{go_value(expr.get('operator', ''))}, "
        f"Values:{go_slice(values if isinstance(values, list) else None, 'string')}}}"
    )


def _go_selector(selector: Any) -> str:
    selector = selector if isinstance(selector, dict) else {}
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(_go_requirement(_dict(e)) for e in exprs) + "}"
    else:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{_go_string_map(selector.get('matchLabels'))}, MatchExpressions:{rendered}}}"


def _go_int_or_string(value: Any) -> str:
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_value(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def _go_invalid(field: str, go_text: str, detail: str) -> FieldError:
    return GoSyntaxError(ErrorType.INVALID, field, go_text, detail)


# ---- shared checks ----------------------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _nonnegative(value: Any, field: str) -> list[FieldError]:
    number = _int(value)
    return [invalid(field, number, _NONNEGATIVE)] if number is not None and number < 0 else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _validate_requirement(expr: dict[str, Any], field: str) -> list[FieldError]:
    operator, values = expr.get("operator", ""), expr.get("values") or []
    errs: list[FieldError] = []
    if operator in ("In", "NotIn") and not values:
        errs.append(required(f"{field}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errs.append(forbidden(f"{field}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
        errs.append(invalid(f"{field}.operator", operator, "not a valid selector operator"))
    key = str(expr.get("key", ""))
    return errs + [invalid(f"{field}.key", key, m) for m in qualified_name(key)]


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
        errs += _validate_requirement(_dict(expr), f"{field}.matchExpressions[{i}]")
    if not selector.get("matchLabels") and not exprs:
        # upstream says "deployment" for ReplicaSets too
        errs.append(_go_invalid(field, _go_selector(selector), "empty selector is invalid for deployment"))
    return errs


def _validate_template(spec: dict[str, Any], field: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet: the template's labels must match the selector, and its pods restart
    Always (a controller replaces pods; it does not wait for them to finish)."""
    template = _dict(spec.get("template"))
    meta, pod_spec = _dict(template.get("metadata")), _dict(template.get("spec"))
    errs: list[FieldError] = []
    try:
        selector = selector_from_label_selector(spec.get("selector"))
    except errors.BadRequest:
        return [_go_invalid("spec.selector", _go_selector(spec.get("selector")), "invalid label selector")]
    labels = meta.get("labels")
    if not selector.empty and not selector.matches(labels if isinstance(labels, dict) else {}):
        mismatch = "`selector` does not match template `labels`"
        errs.append(_go_invalid(f"{field}.metadata.labels", _go_string_map(labels), mismatch))
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
    errs = _nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _validate_selector(spec.get("selector"), "spec.selector")
    errs += _validate_template(spec, "spec.template")
    return errs + _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")


def _immutable_selector(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """apps/v1 forbids changing the selector (nil and empty maps/lists compare equal, as upstream's Semantic)."""
    if old is None:
        return []
    selector = _dict(new.get("spec")).get("selector")
    if _normalized(selector) == _normalized(_dict(old.get("spec")).get("selector")):
        return []
    return [_go_invalid("spec.selector", _go_selector(selector), "field is immutable")]


def _normalized(selector: Any) -> dict[str, Any]:
    return {k: v for k, v in _dict(selector).items() if v}


def _default_template(spec: dict[str, Any]) -> None:
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        meta = template.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta.setdefault("creationTimestamp", None)  # a zero Time in Go's JSON, as upstream stores it
        if isinstance(template.setdefault("spec", {}), dict):
            default_pod_spec(template["spec"])


def _status_errors(status: dict[str, Any], fields: tuple[str, ...], greater_message: str) -> list[FieldError]:
    """Counts are non-negative, none exceeds `replicas`, and available pods are ready ones."""
    errs: list[FieldError] = []
    for name in ("replicas", "observedGeneration", *fields):
        errs += _nonnegative(status.get(name), f"status.{name}")
    replicas = _int(status.get("replicas")) or 0
    for name in fields:
        value = _int(status.get(name)) or 0
        if name != "unavailableReplicas" and value > replicas:
            errs.append(invalid(f"status.{name}", value, greater_message))
    available, ready = _int(status.get("availableReplicas")) or 0, _int(status.get("readyReplicas")) or 0
    if available > ready:
        errs.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return errs


def _keep_spec(new: dict[str, Any], old: dict[str, Any], *, keep_labels: bool) -> None:
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


# ---- Deployment -------------------------------------------------------------------------------------------------


def _validate_percent(value: Any, field: str) -> list[FieldError]:
    if isinstance(value, str):
        return [] if _PERCENT.fullmatch(value) else [_go_invalid(field, _go_int_or_string(value), _PERCENT_MSG)]
    return _nonnegative(value, field)


def _intstr_value(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.fullmatch(value) else 0
    return _int(value) or 0


def _validate_rolling_update(rolling: dict[str, Any], field: str) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = _validate_percent(unavailable, f"{field}.maxUnavailable") + _validate_percent(surge, f"{field}.maxSurge")
    if _intstr_value(unavailable) == 0 and _intstr_value(surge) == 0:
        errs.append(
            _go_invalid(f"{field}.maxUnavailable", _go_int_or_string(unavailable), "may not be 0 when `maxSurge` is 0")
        )
    if isinstance(unavailable, str) and _intstr_value(unavailable) > 100:
        too_many = "must not be greater than 100%"
        errs.append(_go_invalid(f"{field}.maxUnavailable", _go_int_or_string(unavailable), too_many))
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
    errs += _validate_strategy(_dict(spec.get("strategy")))
    errs += _nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = _int(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        errs += _nonnegative(deadline, "spec.progressDeadlineSeconds")
        if deadline <= (_int(spec.get("minReadySeconds")) or 0):
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
        _default_template(spec)
        obj.setdefault("status", {})

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _keep_spec(new, old, keep_labels=True)

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
        errs += _status_errors(_dict(obj.get("status")), status_fields, "cannot be greater than status.replicas")
        return errs + _nonnegative(_dict(obj.get("status")).get("collisionCount"), "status.collisionCount")


# ---- ReplicaSet -------------------------------------------------------------------------------------------------


class ReplicaSetStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = default_object(obj, "spec")
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            _default_template(spec)
        status = default_object(obj, "status")
        if isinstance(status, dict):
            status.setdefault("replicas", 0)  # not omitempty in ReplicaSetStatus

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        _keep_spec(new, old, keep_labels=False)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        if not isinstance(obj.get("spec"), dict):
            return [invalid("spec", obj.get("spec"), "must be an object")]
        errs = _validate_workload_spec(obj["spec"]) + _immutable_selector(obj, old)
        status_fields = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        too_many = "cannot be greater than the number of replicas"
        return errs + _status_errors(_dict(obj.get("status")), status_fields, too_many)


STRATEGIES: dict[str, type[Strategy]] = {"deployments": DeploymentStrategy, "replicasets": ReplicaSetStrategy}

# ---- scale ------------------------------------------------------------------------------------------------------


def to_scale(obj: dict[str, Any], custom: CustomScale | None = None) -> dict[str, Any]:
    """The autoscaling/v1 Scale of a Deployment, ReplicaSet, StatefulSet or ReplicationController, or of a custom
    resource by its CRD's scale paths (`spec.replicas` is omitted when 0, as in Go)."""
    meta, spec, status = obj["metadata"], _dict(obj.get("spec")), _dict(obj.get("status"))
    fields = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
    if custom is not None:
        replicas = _int(_nested(obj, custom.spec_replicas)) or 0
        scale_status: dict[str, Any] = {"replicas": _int(_nested(obj, custom.status_replicas)) or 0}
        found = _nested(obj, custom.label_selector) if custom.label_selector else None
        selector = found if isinstance(found, str) else ""  # the CRD's path holds the selector as text
    else:
        replicas = _int(spec.get("replicas")) or 0
        scale_status = {"replicas": _int(status.get("replicas")) or 0}
        label_selector: Any = spec.get("selector")
        if obj.get("kind") == "ReplicationController":  # a plain label map, not a LabelSelector
            label_selector = {"matchLabels": label_selector} if isinstance(label_selector, dict) else None
        selector = label_selector_text(label_selector)
    if selector:
        scale_status["selector"] = selector
    return {
        "kind": SCALE.kind,
        "apiVersion": SCALE.api_version,
        "metadata": {k: meta[k] for k in fields if k in meta},
        "spec": {"replicas": replicas} if replicas else {},
        "status": scale_status,
    }


def _validate_scale(scale: dict[str, Any]) -> list[FieldError]:
    replicas = _dict(scale.get("spec")).get("replicas", 0)
    if _int(replicas) is None:
        return [invalid("spec.replicas", replicas, "must be an integer")]
    return _nonnegative(replicas, "spec.replicas")


ScaleChange = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class CustomScale(Protocol):
    """A CRD version's scale subresource: where replicas and the selector are (each path as its keys)."""

    spec_replicas: tuple[str, ...]
    status_replicas: tuple[str, ...]
    label_selector: tuple[str, ...] | None


def _nested(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _set_nested(obj: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[keys[-1]] = value


async def update_scale(
    registry: Registry, req: Request, change: ScaleChange, *, patch: bool, custom: CustomScale | None = None
) -> dict[str, Any]:
    """Write a Scale: `change` turns the current Scale into the wanted one (a PUT's body, or the PATCH applied).

    The wanted Scale's resourceVersion is a precondition on the parent; without one (or, for a PATCH, with the one
    it was given) a concurrent write is retried, as upstream's patcher does."""
    parent = Request(
        req.resource, req.namespace, req.name, dry_run=req.dry_run, manager=req.manager, recorded_as="scale"
    )
    for _attempt in range(_SCALE_ATTEMPTS):
        current = await registry.latest(parent)
        current_rv = current["metadata"]["resourceVersion"]
        wanted = await change(to_scale(current, custom))
        _check_scale(req, wanted)
        rv = _dict(wanted.get("metadata")).get("resourceVersion") or ""
        new = copy.deepcopy(current)
        _set_nested(
            new, custom.spec_replicas if custom else ("spec", "replicas"), _dict(wanted.get("spec")).get("replicas", 0)
        )
        new["metadata"]["resourceVersion"] = rv or current_rv
        try:
            updated, _ = await registry.update(parent, new)
        except errors.Conflict:
            if rv and not (patch and rv == current_rv):
                raise
            continue
        return to_scale(updated, custom)
    raise errors.conflict(req.resource.plural, req.name, req.resource.group)


def _check_scale(req: Request, scale: dict[str, Any]) -> None:
    name = _dict(scale.get("metadata")).get("name")
    if name and name != req.name:
        raise errors.BadRequest(f"the name of the object ({name}) does not match the name on the URL ({req.name})")
    errs = _validate_scale(scale)
    if errs:
        raise errors.invalid_object(SCALE.kind, req.name, errs, SCALE.group)
