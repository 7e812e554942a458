"""Strategies for core/v1 LimitRanges and ResourceQuotas, with upstream's v1 defaulting and validation
(`pkg/apis/core/validation`): the standard resource names each accepts, a LimitRange's ordering of min, default,
max and ratio, and a quota's scopes and scope selector, with upstream's field paths and messages.
"""

from __future__ import annotations

import math
from typing import Any

from tinykube.api.errors import (
    ErrorType,
    FieldError,
    forbidden,
    go_value,
    invalid,
    required,
)
from tinykube.api.jsonshape import as_dict, dicts
from tinykube.api.meta import qualified_name
from tinykube.api.quantity import MAX_MILLI_VALUE, Quantity, QuantityError, parse_quantity
from tinykube.apiserver.kinds.core.config import canonical_quantities
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_slice
from tinykube.apiserver.registry.validation import IMMUTABLE, NONNEGATIVE, NamedItems

# ---- resource names, shared by LimitRange and ResourceQuota --------------------------------------------------------

_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_QUOTA_COUNTS = (
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
)
_INTEGER_RESOURCES = frozenset({*_QUOTA_COUNTS, "services.nodeports", "services.loadbalancers"})
_STANDARD_QUOTA_RESOURCES = frozenset(
    {
        *_STANDARD_CONTAINER_RESOURCES,
        *_INTEGER_RESOURCES,
        *(f"{kind}.{name}" for kind in ("requests", "limits") for name in _STANDARD_CONTAINER_RESOURCES),
        "requests.storage",
    }
)
_STANDARD_RESOURCES = _STANDARD_QUOTA_RESOURCES | {"storage"}
_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    """Unprefixed names and names in the kubernetes.io/ domain."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """A resource outside kubernetes.io, and a valid name once quota prefixes it with "requests."."""
    return not _is_native(name) and not name.startswith("requests.") and not qualified_name("requests." + name)


def _is_standard_quota(name: str) -> bool:
    return name in _STANDARD_QUOTA_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name_errors(name: str, field: str) -> list[FieldError]:
    """`validateResourceName`: a qualified name; an unprefixed one must be a standard resource."""
    errs = [invalid(field, name, msg) for msg in qualified_name(name)]
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not _is_standard_quota(name):
        errs.append(invalid(field, name, "must be a standard resource type or fully qualified"))
    return errs


def _container_resource_name_errors(name: str, field: str) -> list[FieldError]:
    errs = _resource_name_errors(name, field)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(invalid(field, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(invalid(field, name, "doesn't follow extended resource name standard"))
    return errs


def _quota_resource_name_errors(name: str, field: str) -> list[FieldError]:
    errs = _resource_name_errors(name, field)
    if "/" not in name and not _is_standard_quota(name):
        errs.append(invalid(field, name, "must be a standard resource for quota"))
    return errs


def _quantity_or_error(raw: Any, field: str) -> Quantity | FieldError:
    """A stored quantity (canonical already, unless written through a status update) or the field error for it."""
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        return invalid(field, raw, str(err))


def quantity_value_errors(name: str, quantity: Quantity, field: str) -> list[FieldError]:
    """`ValidateResourceQuantityValue`: not negative, and whole for the resources counted in units."""
    errs = [invalid(field, str(quantity), NONNEGATIVE)] if quantity.value < 0 else []
    if (name in _INTEGER_RESOURCES or _is_extended(name)) and quantity.milli() % 1000:
        errs.append(GoSyntaxError(ErrorType.INVALID, field, quantity.go, "must be an integer"))
    return errs


# ---- LimitRange ---------------------------------------------------------------------------------------------------


class LimitRangeStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        """Quantities in canonical form; a Container limit defaults its limit to max and its request to the limit
        or min (`SetDefaults_LimitRangeItem`)."""
        for item in dicts(as_dict(obj.get("spec")).get("limits")):
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                canonical_quantities(self.resource, item.get(field))
            if item.get("type") == "Container":
                _default_container_limits(item)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        limits = as_dict(obj.get("spec")).get("limits") or []
        if not isinstance(limits, list):
            return [invalid("spec.limits", limits, "must be a list")]
        errs: list[FieldError] = []
        types = NamedItems()
        for i, item in enumerate(limits):
            errs += _limit_item_errors(as_dict(item), f"spec.limits[{i}]", types)
        return errs


def _default_container_limits(item: dict[str, Any]) -> None:
    default, request = dict(as_dict(item.get("default"))), dict(as_dict(item.get("defaultRequest")))
    for source, target in ((item.get("max"), default), (default, request), (item.get("min"), request)):
        for name, quantity in as_dict(source).items():
            target.setdefault(name, quantity)
    for field, values in (("default", default), ("defaultRequest", request)):
        if values:
            item[field] = values


def _limit_type_errors(kind: Any, field: str) -> list[FieldError]:
    errs = [invalid(field, kind, msg) for msg in qualified_name(str(kind or ""))]
    if not errs and "/" not in str(kind) and kind not in _LIMIT_TYPES:
        errs.append(invalid(field, kind, "must be a standard limit type or fully qualified"))
    return errs


def _limit_item_errors(item: dict[str, Any], path: str, types: NamedItems) -> list[FieldError]:
    kind = str(item.get("type") or "")
    errs = _limit_type_errors(item.get("type"), f"{path}.type")
    errs += types.repeat(kind, f"{path}.type")
    if kind == "Pod":  # a pod has no default limits of its own: its containers do
        pod_only = "may not be specified when `type` is 'Pod'"
        errs += [forbidden(f"{path}.{field}", pod_only) for field in ("default", "defaultRequest") if item.get(field)]
    if kind == "PersistentVolumeClaim" and "storage" not in as_dict(item.get("min")) | as_dict(item.get("max")):
        detail = "either minimum or maximum storage value is required, but neither was provided"
        errs.append(required(f"{path}.limits", detail))
    quantities: dict[str, dict[str, Quantity]] = {}
    for field in _LIMIT_FIELDS:
        if kind == "Pod" and field in ("default", "defaultRequest"):
            continue
        quantities[field] = {}
        for name, raw in as_dict(item.get(field)).items():
            errs += _limit_resource_name_errors(kind, name, f"{path}.{field}[{name}]")
            parsed = _quantity_or_error(raw, f"{path}.{field}[{name}]")
            if isinstance(parsed, FieldError):
                errs.append(parsed)
            else:
                quantities[field][name] = parsed
    for name in dict.fromkeys(name for values in quantities.values() for name in values):
        errs += _limit_order_errors({field: values.get(name) for field, values in quantities.items()}, name, path)
    return errs


_LIMIT_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")

# min <= defaultRequest <= default <= max, per resource: (lower, higher, field reported, value shown, message)
_LIMIT_ORDER = (
    ("min", "max", "min", "min", "min value {min} is greater than max value {max}"),
    (
        "min",
        "defaultRequest",
        "defaultRequest",
        "defaultRequest",
        "min value {min} is greater than default request value {defaultRequest}",
    ),
    (
        "defaultRequest",
        "max",
        "defaultRequest",
        "defaultRequest",
        "default request value {defaultRequest} is greater than max value {max}",
    ),
    (
        "defaultRequest",
        "default",
        "defaultRequest",
        "defaultRequest",
        "default request value {defaultRequest} is greater than default limit value {default}",
    ),
    ("min", "default", "default", "min", "min value {min} is greater than default value {default}"),
    ("default", "max", "default", "max", "default value {default} is greater than max value {max}"),
)


def _limit_resource_name_errors(kind: str, name: str, field: str) -> list[FieldError]:
    if kind in ("Pod", "Container"):
        return _container_resource_name_errors(name, field)
    return _resource_name_errors(name, field)


def _limit_order_errors(values: dict[str, Quantity | None], name: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for lower, higher, at, shown, message in _LIMIT_ORDER:
        low, high, value = values.get(lower), values.get(higher), values.get(shown)
        if low is not None and high is not None and value is not None and low.value > high.value:
            text = message.format(**{lower: low, higher: high})
            errs.append(GoSyntaxError(ErrorType.INVALID, f"{path}.{at}[{name}]", value.go, text))
    ratio_field = f"{path}.maxLimitRequestRatio[{name}]"
    errs += _ratio_errors(values.get("maxLimitRequestRatio"), values.get("min"), values.get("max"), ratio_field)
    default, request = values.get("default"), values.get("defaultRequest")
    overcommit = _is_native(name) and not _is_hugepages(name)  # GPUs and hugepages: a request is the limit
    if default is not None and request is not None and default.value != request.value and not overcommit:
        message = f"default value {default} must equal to defaultRequest value {request} in {name}"
        errs.append(GoSyntaxError(ErrorType.INVALID, f"{path}.defaultRequest[{name}]", request.go, message))
    return errs


def _ratio_errors(ratio: Quantity | None, low: Quantity | None, high: Quantity | None, field: str) -> list[FieldError]:
    """A limit may exceed the request by `ratio` at most: at least 1, and no more than max/min allows (compared
    in thousandths unless that would overflow, then in whole units, as upstream)."""
    if ratio is None:
        return []
    errs: list[FieldError] = []
    if ratio.value < 1:
        errs.append(GoSyntaxError(ErrorType.INVALID, field, ratio.go, f"ratio {ratio} is less than 1"))
    if low is not None and high is not None:
        most, lo, hi = float(ratio.whole()), low.whole(), high.whole()
        if ratio.whole() < MAX_MILLI_VALUE and lo < MAX_MILLI_VALUE and hi < MAX_MILLI_VALUE:
            most, lo, hi = ratio.milli() / 1000, low.milli(), high.milli()
        limit = _go_divide(hi, lo)
        if most > limit:
            detail = f"ratio {ratio} is greater than max/min = {_go_float(limit)}"
            errs.append(GoSyntaxError(ErrorType.INVALID, field, ratio.go, detail))
    return errs


def _go_divide(dividend: int, divisor: int) -> float:
    """Go's float64 division, which gives infinities and NaN where Python raises."""
    if divisor:
        return dividend / divisor
    return math.nan if dividend == 0 else math.copysign(math.inf, dividend)


def _go_float(number: float) -> str:
    """Go's `%f`."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return f"{number:f}"


# ---- ResourceQuota ------------------------------------------------------------------------------------------------

_QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass")
_SCOPES = (*_QUOTA_SCOPES, "CrossNamespacePodAffinity")
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "CrossNamespacePodAffinity")
_EXISTS_ONLY = (
    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
    "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
)


def _scope_allows(scope: str, resource: str) -> bool:
    """`IsResourceQuotaScopeValidForResource`: pod scopes apply to pod counts and pod compute resources only."""
    if scope == "BestEffort":
        return resource == "pods"
    if scope in _SCOPES:
        return resource == "pods" or resource in _POD_COMPUTE
    return True


class ResourceQuotaStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        canonical_quantities(self.resource, as_dict(obj.get("spec")).get("hard"))
        self._canonical_status(obj)

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_status_update(new, old)
        self._canonical_status(new)  # a status write is decoded too

    def _canonical_status(self, obj: dict[str, Any]) -> None:
        status = as_dict(obj.get("status"))
        for field in ("hard", "used"):
            canonical_quantities(self.resource, status.get(field))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errs = _quota_list_errors(spec.get("hard"), "spec.hard")
        errs += _scope_errors(spec) + _scope_selector_errors(spec)
        status = as_dict(obj.get("status"))
        for field in ("hard", "used"):
            errs += _quota_list_errors(status.get(field), f"status.{field}")
        if old is not None and set(_texts(spec.get("scopes"))) != set(_texts(as_dict(old.get("spec")).get("scopes"))):
            errs.append(GoSyntaxError(ErrorType.INVALID, "spec.scopes", _go_scopes(spec.get("scopes")), IMMUTABLE))
        return errs


def _texts(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _quota_list_errors(quantities: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, raw in as_dict(quantities).items():
        field = f"{path}[{name}]"
        errs += _quota_resource_name_errors(name, field)
        parsed = _quantity_or_error(raw, field)
        errs += [parsed] if isinstance(parsed, FieldError) else quantity_value_errors(name, parsed, field)
    return errs


def _go_scopes(scopes: Any) -> str:
    return go_slice(_texts(scopes) if isinstance(scopes, list) else None, "core.ResourceQuotaScope")


def _scope_errors(spec: dict[str, Any]) -> list[FieldError]:
    scopes = _texts(spec.get("scopes"))
    rendered = _go_scopes(spec.get("scopes"))
    errs: list[FieldError] = []
    for scope in scopes:
        if scope not in _SCOPES:
            errs.append(GoSyntaxError(ErrorType.INVALID, "spec.scopes", rendered, "unsupported scope"))
        for name in sorted(as_dict(spec.get("hard"))):
            if _is_standard_quota(name) and not _scope_allows(scope, name):
                errs.append(
                    GoSyntaxError(ErrorType.INVALID, "spec.scopes", rendered, "unsupported scope applied to resource")
                )
    return errs + _conflicts(set(scopes), "spec.scopes", rendered)


def _conflicts(scopes: set[str], field: str, rendered: str) -> list[FieldError]:
    return [
        GoSyntaxError(ErrorType.INVALID, field, rendered, "conflicting scopes")
        for pair in _CONFLICTING_SCOPES
        if scopes.issuperset(pair)
    ]


def _scope_selector_errors(spec: dict[str, Any]) -> list[FieldError]:
    selector = spec.get("scopeSelector")
    if not isinstance(selector, dict):
        return []
    path = "spec.scopeSelector.matchExpressions"
    errs: list[FieldError] = []
    scopes: set[str] = set()
    for expr in dicts(selector.get("matchExpressions")):
        scope, operator, values = str(expr.get("scopeName", "")), expr.get("operator", ""), expr.get("values") or []
        if scope not in _SCOPES:
            errs.append(invalid(f"{path}.scopeName", scope, "unsupported scope"))
        for name in sorted(as_dict(spec.get("hard"))):
            if _is_standard_quota(name) and not _scope_allows(scope, name):
                errs.append(
                    GoSyntaxError(
                        ErrorType.INVALID, path, _go_scope_selector(selector), "unsupported scope applied to resource"
                    )
                )
        if scope in _EXISTS_SCOPES and operator != "Exists":
            errs.append(invalid(f"{path}.operator", operator, _EXISTS_ONLY))
        errs += _selector_operator_errors(operator, values, path)
        scopes.add(scope)
    # upstream reports the `scopes` list here, not the selector
    return errs + _conflicts(scopes, path, _go_scopes(spec.get("scopes")))


def _selector_operator_errors(operator: Any, values: Any, path: str) -> list[FieldError]:
    if operator in ("In", "NotIn"):
        detail = "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"
        return [] if values else [required(f"{path}.values", detail)]
    if operator in ("Exists", "DoesNotExist"):
        detail = "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
        rendered = go_slice([str(v) for v in values], "string") if isinstance(values, list) else go_value(values)
        return [GoSyntaxError(ErrorType.INVALID, f"{path}.values", rendered, detail)] if values else []
    return [invalid(f"{path}.operator", operator, "not a valid selector operator")]


def _go_scope_selector(selector: dict[str, Any]) -> str:
    exprs = dicts(selector.get("matchExpressions"))
    rendered = ", ".join(
        "core.ScopedResourceSelectorRequirement{"
        f"ScopeName:{go_value(str(e.get('scopeName', '')))}, Operator:{go_value(str(e.get('operator', '')))}, "
        f"Values:{go_slice(e['values'] if isinstance(e.get('values'), list) else None, 'string')}}}"
        for e in exprs
    )
    return f"core.ScopeSelector{{MatchExpressions:[]core.ScopedResourceSelectorRequirement{{{rendered}}}}}"


STRATEGIES: dict[str, type[Strategy]] = {"limitranges": LimitRangeStrategy, "resourcequotas": ResourceQuotaStrategy}
