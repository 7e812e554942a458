"""Strategies (upstream v1 defaulting and validation) for four small kinds of cluster plumbing: coordination.k8s.io
Lease, scheduling.k8s.io PriorityClass, node.k8s.io RuntimeClass and apiregistration.k8s.io APIService.

Each validation keeps kube-apiserver 1.32's field paths and messages, because users search for the exact text
kubectl prints. The objects are stored and validated, not acted on.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, forbidden, go_value, invalid, not_supported, required
from tinykube.api.meta import dns1035_label, dns1123_label, dns1123_subdomain, label_value, validate_labels
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.service_validation import port_number_errors
from tinykube.apiserver.registry.validation import (
    _default,
    _dict,
    _each,
    _go_invalid,
    _immutable,
    _int,
    _items,
    _qualified_name_errors,
    _str,
    decode_bytes,
    path_segment_name,
)

# =================================================================================================================
# coordination.k8s.io/v1 Lease
# =================================================================================================================

_LEASE_STRATEGIES = ["OldestEmulationVersion"]
_GATED_LEASE_FIELDS = ("strategy", "preferredHolder")


def _lease_strategy_errors(strategy: str, path: str) -> list[FieldError]:
    field = f"{path}.strategy"  # upstream names the child again under the already-named path: spec.strategy.strategy
    if "/" not in strategy:
        return [] if strategy in _LEASE_STRATEGIES else [not_supported(field, strategy, _LEASE_STRATEGIES)]
    return _qualified_name_errors(strategy, field)


def lease_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    duration = _int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(invalid(f"{path}.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _int(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(invalid(f"{path}.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        errs += _lease_strategy_errors(_str(strategy), f"{path}.strategy")
    if _str(spec.get("preferredHolder")) and not _str(strategy):
        errs.append(forbidden(f"{path}.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


class LeaseStrategy(Strategy):
    """The object leader election renews. `strategy` and `preferredHolder` belong to coordinated leader election,
    an alpha feature that 1.32 ships switched off: they are dropped unless the stored object already had them."""

    allow_create_on_update = True  # leader-election clients create their lease with a PUT
    coordinated_leader_election = False  # the CoordinatedLeaderElection feature gate

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        if not self.coordinated_leader_election:
            for name in _GATED_LEASE_FIELDS:
                _dict(obj.get("spec")).pop(name, None)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        if not self.coordinated_leader_election:
            old_spec = _dict(old.get("spec"))
            for name in _GATED_LEASE_FIELDS:
                if old_spec.get(name) is None:
                    _dict(new.get("spec")).pop(name, None)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return lease_spec_errors(_dict(obj.get("spec")), "spec")


# =================================================================================================================
# scheduling.k8s.io/v1 PriorityClass
# =================================================================================================================

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
_PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    """Why a `system-` name is refused ("" when it is one of the built-in classes, as built in)."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known:
        return f"value of {name} PriorityClass must be {known}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def _preemption_policy_errors(policy: Any) -> list[FieldError]:
    if policy is None or policy in _PREEMPTION_POLICIES:
        return []
    return (
        [required("preemptionPolicy")]
        if policy == ""
        else [not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES)]
    )


def priority_class_errors(obj: dict[str, Any]) -> list[FieldError]:
    name, value = _str(obj["metadata"].get("name")), _int(obj.get("value")) or 0
    errs: list[FieldError] = []
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, bool(obj.get("globalDefault")))
        if problem:
            reserved = f"priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
            errs.append(forbidden("metadata.name", reserved))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(forbidden("value", detail))
    return errs + _preemption_policy_errors(obj.get("preemptionPolicy"))


class PriorityClassStrategy(Strategy):
    """Value and preemption policy are fixed once created: pods copied them at admission."""

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("value", 0)  # `value` is written even when zero (no omitempty)
        _default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = priority_class_errors(obj)
        if old is not None:
            if obj.get("value") != old.get("value"):
                errs.append(forbidden("value", "may not be changed in an update."))
            errs += _immutable(obj.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")
        return errs


# =================================================================================================================
# node.k8s.io/v1 RuntimeClass
# =================================================================================================================

_TOLERATION_OPERATORS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]


def _go_toleration(toleration: dict[str, Any]) -> str:
    seconds = "nil" if toleration.get("tolerationSeconds") is None else "0xc000000000"  # Go prints the address
    fields = ", ".join(
        f"{name}:{go_value(_str(toleration.get(key)))}"
        for name, key in (("Key", "key"), ("Operator", "operator"), ("Value", "value"), ("Effect", "effect"))
    )
    return f"core.Toleration{{{fields}, TolerationSeconds:(*int64)({seconds})}}"


def _toleration_errors(toleration: dict[str, Any], path: str) -> list[FieldError]:
    """The checks of core's ValidateTolerations a RuntimeClass's scheduling tolerations meet most often."""
    key, operator, effect = _str(toleration.get("key")), toleration.get("operator", ""), toleration.get("effect", "")
    errs = _qualified_name_errors(key, f"{path}.key") if key else []
    if not key and operator != "Exists":
        detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
        errs.append(invalid(f"{path}.operator", operator, detail))
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        errs.append(invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        messages = label_value(_str(toleration.get("value")))
        if messages:
            errs.append(invalid(f"{path}.operator", toleration.get("value", ""), ";".join(messages)))
    elif operator == "Exists":
        if _str(toleration.get("value")):
            detail = "value must be empty when `operator` is 'Exists'"
            errs.append(_go_invalid(f"{path}.operator", _go_toleration(toleration), detail))
    else:
        errs.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        errs.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return errs


def _runtime_class_scheduling_errors(scheduling: Any) -> list[FieldError]:
    if not isinstance(scheduling, dict):
        return []
    errs = validate_labels(scheduling.get("nodeSelector") or {}, "scheduling.nodeSelector")
    for i, toleration in _items(scheduling.get("tolerations")):
        errs += _toleration_errors(toleration, f"scheduling.tolerations[{i}]")
    return errs


class RuntimeClassStrategy(Strategy):
    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        handler = _str(obj.get("handler"))  # required: an empty handler fails the label rule, as upstream
        errs = _each("handler", handler, dns1123_label(handler))
        errs += _runtime_class_scheduling_errors(obj.get("scheduling"))
        if old is not None:
            errs += _immutable(obj.get("handler"), old.get("handler"), "handler")
        return errs


# =================================================================================================================
# apiregistration.k8s.io/v1 APIService
# =================================================================================================================


def _api_service_name_errors(name: str, spec: dict[str, Any]) -> list[FieldError]:
    """The name is the API it serves: `<version>.<group>`."""
    wanted = f"{_str(spec.get('version'))}.{_str(spec.get('group'))}"
    if not name or path_segment_name(name):
        return []  # the registry's name rule reports these
    detail = f'must be `spec.version+"."+spec.group`: {go_value(wanted)}'
    return [] if name == wanted else [invalid("metadata.name", name, detail)]


def _api_service_local_errors(spec: dict[str, Any]) -> list[FieldError]:
    """A local APIService (no service) is served by this apiserver: no TLS settings make sense for it."""
    errs: list[FieldError] = []
    ca_bundle = _str(spec.get("caBundle"))
    if ca_bundle:
        size = len(decode_bytes(ca_bundle, "APIService"))
        errs.append(invalid("spec.caBundle", f"{size} bytes", "local APIServices may not have a caBundle"))
    if spec.get("insecureSkipTLSVerify"):
        detail = "local APIServices may not have insecureSkipTLSVerify"
        errs.append(invalid("spec.insecureSkipTLSVerify", True, detail))
    return errs


def _api_service_remote_errors(spec: dict[str, Any]) -> list[FieldError]:
    service = _dict(spec.get("service"))
    errs = [required(f"spec.service.{key}") for key in ("namespace", "name") if not _str(service.get(key))]
    port = service.get("port", 443)
    messages = port_number_errors(port)
    if messages:
        errs.append(invalid("spec.service.port", port, "port is not valid: " + ", ".join(messages)))
    if spec.get("insecureSkipTLSVerify") and _str(spec.get("caBundle")):
        errs.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


def api_service_errors(obj: dict[str, Any]) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    group, version = _str(spec.get("group")), _str(spec.get("version"))
    errs = _api_service_name_errors(_str(obj["metadata"].get("name")), spec)
    if not group and version != "v1":
        errs.append(required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += _each("spec.group", group, dns1123_subdomain(group))
    errs += _each("spec.version", version, dns1035_label(version))
    minimum, priority = _int(spec.get("groupPriorityMinimum")) or 0, _int(spec.get("versionPriority")) or 0
    if not 0 < minimum <= 20000:
        errs.append(invalid("spec.groupPriorityMinimum", minimum, "must be positive and less than 20000"))
    if not 0 < priority <= 1000:
        errs.append(invalid("spec.versionPriority", priority, "must be positive and less than 1000"))
    local = spec.get("service") is None
    return errs + (_api_service_local_errors(spec) if local else _api_service_remote_errors(spec))


def _api_service_status_errors(status: dict[str, Any]) -> list[FieldError]:
    return [
        not_supported(f"status.conditions[{i}].status", c.get("status", ""), ["True", "False", "Unknown"])
        for i, c in _items(status.get("conditions"))
        if c.get("status", "") not in ("True", "False", "Unknown")
    ]


class APIServiceStrategy(Strategy):
    name_rule = staticmethod(path_segment_name)  # plus `<version>.<group>`, checked with the spec in validate
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        service = _dict(obj.get("spec")).get("service")
        if isinstance(service, dict):
            _default(service, "port", 443)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return api_service_errors(obj) + _api_service_status_errors(_dict(obj.get("status")))


STRATEGIES: dict[str, type[Strategy]] = {
    "leases": LeaseStrategy,
    "priorityclasses": PriorityClassStrategy,
    "runtimeclasses": RuntimeClassStrategy,
    "apiservices": APIServiceStrategy,
}
