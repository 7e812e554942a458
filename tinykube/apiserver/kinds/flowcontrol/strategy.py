"""Strategies (upstream v1 defaulting and validation) for flowcontrol.apiserver.k8s.io FlowSchema and
PriorityLevelConfiguration, with kube-apiserver 1.32's field paths and messages. The objects are stored and
validated, not acted on: no request is classified or throttled by them.
"""

from __future__ import annotations

import math
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, go_value, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, indexed_dicts, strings
from tinykube.api.meta import dns1123_label, dns1123_subdomain
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError
from tinykube.apiserver.registry.validation import NamedItems, default_if_nil, has_wildcard, invalid_each

_FLOW_VERBS = sorted(["get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"])
_SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]
_DISTINGUISHERS = ["ByNamespace", "ByUser"]
_PRIORITY_LEVEL_TYPES = ["Exempt", "Limited"]
_LIMIT_RESPONSES = ["Queue", "Reject"]
_MAX_MATCHING_PRECEDENCE = 10000
_MAX_QUEUES = 10_000_000
_MAX_HASH_BITS = 60
_NAMESPACE_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_SUBJECT_FIELDS = {"ServiceAccount": "serviceAccount", "User": "user", "Group": "group"}
_OTHER_SUBJECT_MESSAGES = {
    "serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
    "user": "user is forbidden when subject kind is not 'User'",
    "group": "group is forbidden when subject kind is not 'Group'",
}


def _service_account_subject_errors(subject: dict[str, Any], path: str) -> list[FieldError]:
    name, namespace = as_str(subject.get("name")), as_str(subject.get("namespace"))
    errs: list[FieldError] = []
    if not name:
        errs.append(required(f"{path}.name"))
    elif name != "*":
        errs += invalid_each(f"{path}.name", name, dns1123_subdomain(name))
    if namespace:
        errs += invalid_each(f"{path}.namespace", namespace, dns1123_label(namespace))
    else:
        errs.append(required(f"{path}.namespace", "must specify namespace for service account"))
    return errs


def flow_subject_errors(subject: dict[str, Any], path: str) -> list[FieldError]:
    kind = subject.get("kind", "")
    key = _SUBJECT_FIELDS.get(str(kind))
    if key is None:
        return [not_supported(f"{path}.kind", kind, _SUBJECT_KINDS)]
    errs: list[FieldError] = []
    detail = subject.get(key)
    if detail is None:
        errs.append(required(f"{path}.{key}", f"{key} is required when subject kind is '{kind}'"))
    elif key == "serviceAccount":
        errs += _service_account_subject_errors(as_dict(detail), f"{path}.{key}")
    elif not as_str(as_dict(detail).get("name")):
        errs.append(required(f"{path}.{key}.name"))
    errs += [
        forbidden(f"{path}.{other}", _OTHER_SUBJECT_MESSAGES[other])
        for other in _OTHER_SUBJECT_MESSAGES
        if other != key and subject.get(other) is not None
    ]
    return errs


def _verbs_errors(verbs: list[str], path: str) -> list[FieldError]:
    if not verbs:
        return [required(path, "verbs must contain at least one value")]
    if has_wildcard(verbs):
        return [invalid(path, verbs, "if '*' is present, must not specify other verbs")] if len(verbs) > 1 else []
    return [] if set(verbs) <= set(_FLOW_VERBS) else [not_supported(path, verbs, _FLOW_VERBS)]


def _listed_errors(values: list[str], path: str, what: str, wildcard_what: str) -> list[FieldError]:
    if not values:
        return [required(path, f"resource rules must supply at least one {what}")]
    if len(values) > 1 and has_wildcard(values):
        return [invalid(path, values, f"if '*' is present, must not specify other {wildcard_what}")]
    return []


def _flow_namespaces_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    namespaces = strings(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        return [required(path, "resource rules that are not cluster scoped must supply at least one namespace")]
    if has_wildcard(namespaces):
        detail = "if '*' is present, must not specify other namespaces"
        return [invalid(path, namespaces, detail)] if len(namespaces) > 1 else []
    return [
        invalid(f"{path}[{i}]", ns, _NAMESPACE_INTRO + m) for i, ns in enumerate(namespaces) for m in dns1123_label(ns)
    ]


def _resource_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs = _verbs_errors(strings(rule.get("verbs")), f"{path}.verbs")
    errs += _listed_errors(strings(rule.get("apiGroups")), f"{path}.apiGroups", "api group", "api groups")
    errs += _listed_errors(strings(rule.get("resources")), f"{path}.resources", "resource", "resources")
    return errs + _flow_namespaces_errors(rule, f"{path}.namespaces")


def non_resource_url_problem(url: str) -> str:
    """ValidateNonResourceURLPath: an absolute path, `*` only as a final `/*`."""
    if not url:
        return "must not be empty"
    if url == "/":
        return ""
    if not url.startswith("/"):
        return "must start with slash"
    if " " in url:
        return "must not contain white-space"
    if "//" in url:
        return "must not contain double slash"
    stars = url.count("*")
    if stars > 1 or (stars == 1 and not url.endswith("/*")):
        return "wildcard can only do suffix matching"
    return ""


def _non_resource_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs = _verbs_errors(strings(rule.get("verbs")), f"{path}.verbs")
    urls = strings(rule.get("nonResourceURLs"))
    here = f"{path}.nonResourceURLs"
    if not urls:
        return [*errs, required(here, "nonResourceURLs must contain at least one value")]
    if has_wildcard(urls):
        detail = "if '*' is present, must not specify other non-resource URLs"
        return errs + ([invalid(here, urls, detail)] if len(urls) > 1 else [])
    return errs + [invalid(f"{here}[{i}]", u, p) for i, u in enumerate(urls) if (p := non_resource_url_problem(u))]


def _policy_rules_with_subjects_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    subjects = as_list(rule.get("subjects"))
    errs = [] if subjects else [required(f"{path}.subjects", "subjects must contain at least one value")]
    for i, subject in indexed_dicts(subjects):
        errs += flow_subject_errors(subject, f"{path}.subjects[{i}]")
    resource_rules, non_resource_rules = as_list(rule.get("resourceRules")), as_list(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errs.append(required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, entry in indexed_dicts(resource_rules):
        errs += _resource_rule_errors(entry, f"{path}.resourceRules[{i}]")
    for i, entry in indexed_dicts(non_resource_rules):
        errs += _non_resource_rule_errors(entry, f"{path}.nonResourceRules[{i}]")
    return errs


def _precedence_errors(name: str, precedence: int) -> list[FieldError]:
    path = "spec.matchingPrecedence"
    errs = [invalid(path, precedence, "must be a positive value")] if precedence <= 0 else []
    if precedence > _MAX_MATCHING_PRECEDENCE:
        errs.append(invalid(path, precedence, f"must not be greater than {_MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != "exempt":
        errs.append(invalid(path, precedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
    return errs


def flow_schema_errors(obj: dict[str, Any]) -> list[FieldError]:
    """The spec of a FlowSchema. (Upstream also pins the specs of its mandatory `exempt` and `catch-all`
    schemas to their built-in values; tinykube does not create those.)"""
    spec = as_dict(obj.get("spec"))
    errs = _precedence_errors(as_str(obj["metadata"].get("name")), as_int(spec.get("matchingPrecedence")) or 0)
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in _DISTINGUISHERS:
        shown = f"flowcontrol.FlowDistinguisherMethod{{Type:{go_value(as_str(method.get('type')))}}}"
        detail = "supported values: " + ", ".join(go_value(d) for d in _DISTINGUISHERS)
        errs.append(GoSyntaxError(ErrorType.NOT_SUPPORTED, "spec.distinguisherMethod.type", shown, detail))
    level = as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if level:
        errs += invalid_each("spec.priorityLevelConfiguration.name", level, dns1123_subdomain(level))
    else:
        errs.append(required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in indexed_dicts(spec.get("rules")):
        errs += _policy_rules_with_subjects_errors(rule, f"spec.rules[{i}]")
    return errs


def _flow_status_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    types = NamedItems()
    for i, condition in indexed_dicts(status.get("conditions")):
        kind = as_str(condition.get("type"))
        errs += types.repeat(kind, f"status.conditions[{i}].type")
        if not kind:
            errs.append(required(f"status.conditions[{i}].type", "must not be empty"))
    return errs


class FlowSchemaStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
            spec["matchingPrecedence"] = 1000

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return flow_schema_errors(obj) + _flow_status_errors(as_dict(obj.get("status")))


def _required_entropy_bits(deck: int, hand: int) -> int:
    return math.ceil(math.log2(deck) * hand)


def queuing_errors(queuing: dict[str, Any], path: str) -> list[FieldError]:
    """Queue lengths, and shuffle sharding's deck and hand sizes."""
    limit, queues, hand = (as_int(queuing.get(k)) or 0 for k in ("queueLengthLimit", "queues", "handSize"))
    errs = [invalid(f"{path}.queueLengthLimit", limit, "must be positive")] if limit <= 0 else []
    if queues <= 0:
        errs.append(invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > _MAX_QUEUES:
        errs.append(invalid(f"{path}.queues", queues, f"must not be greater than {_MAX_QUEUES}"))
    if hand <= 0:
        errs.append(invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errs.append(invalid(f"{path}.handSize", hand, f"should not be greater than queues ({queues})"))
    elif _required_entropy_bits(queues, hand) > _MAX_HASH_BITS:
        detail = (
            f"required entropy bits of deckSize {queues} and handSize {hand} should not be greater than "
            f"{_MAX_HASH_BITS}"
        )
        errs.append(invalid(f"{path}.handSize", hand, detail))
    return errs


def _limit_response_errors(response: dict[str, Any], path: str) -> list[FieldError]:
    kind, queuing = response.get("type", ""), response.get("queuing")
    if kind == "Reject":
        return (
            [forbidden(f"{path}.queuing", "must be nil if limited.limitResponse.type is not Limited")]
            if queuing is not None
            else []
        )
    if kind == "Queue":
        if queuing is None:
            return [required(f"{path}.queuing", "must not be empty if limited.limitResponse.type is Limited")]
        return queuing_errors(as_dict(queuing), f"{path}.queuing")
    return [not_supported(f"{path}.type", kind, _LIMIT_RESPONSES)]


def _lendable_errors(config: dict[str, Any], path: str) -> list[FieldError]:
    lendable = as_int(config.get("lendablePercent"))
    if lendable is not None and not 0 <= lendable <= 100:
        return [invalid(f"{path}.lendablePercent", lendable, "must be between 0 and 100, inclusive")]
    return []


def _limited_errors(limited: dict[str, Any], path: str) -> list[FieldError]:
    shares = as_int(limited.get("nominalConcurrencyShares"))
    errs: list[FieldError] = []
    if shares is not None and shares < 0:  # v1 allows zero
        errs.append(invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    errs += _limit_response_errors(as_dict(limited.get("limitResponse")), f"{path}.limitResponse")
    errs += _lendable_errors(limited, path)
    borrowing = as_int(limited.get("borrowingLimitPercent"))
    if borrowing is not None and borrowing < 0:
        detail = "if specified, must be a non-negative integer"
        errs.append(invalid(f"{path}.borrowingLimitPercent", borrowing, detail))
    return errs


def _exempt_errors(exempt: dict[str, Any], path: str) -> list[FieldError]:
    shares = as_int(exempt.get("nominalConcurrencyShares"))
    errs: list[FieldError] = []
    if shares is not None and shares < 0:
        errs.append(invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    return errs + _lendable_errors(exempt, path)


def priority_level_errors(obj: dict[str, Any]) -> list[FieldError]:
    """The spec of a PriorityLevelConfiguration (the mandatory `exempt` and `catch-all` levels are not pinned)."""
    spec = as_dict(obj.get("spec"))
    kind, limited, exempt = spec.get("type", ""), spec.get("limited"), spec.get("exempt")
    errs: list[FieldError] = []
    if (as_str(obj["metadata"].get("name")) == "exempt") != (kind == "Exempt"):
        errs.append(invalid("spec.type", kind, "type must be 'Exempt' if and only if name is 'exempt'"))
    if kind == "Exempt":
        if limited is not None:
            errs.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        if exempt is not None:
            errs += _exempt_errors(as_dict(exempt), "spec.exempt")
    elif kind == "Limited":
        if exempt is not None:
            errs.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        if limited is None:
            errs.append(required("spec.limited", "must not be empty when type is Limited"))
        else:
            errs += _limited_errors(as_dict(limited), "spec.limited")
    else:
        errs.append(not_supported("spec.type", kind, _PRIORITY_LEVEL_TYPES))
    return errs


def _default_priority_level(spec: dict[str, Any]) -> None:
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if isinstance(exempt, dict):
        default_if_nil(exempt, "nominalConcurrencyShares", 0)
        default_if_nil(exempt, "lendablePercent", 0)
    if not isinstance(limited, dict):
        return
    default_if_nil(limited, "nominalConcurrencyShares", 30)
    default_if_nil(limited, "lendablePercent", 0)
    queuing = as_dict(limited.get("limitResponse")).get("queuing")
    if isinstance(queuing, dict):
        for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
            if not queuing.get(key):
                queuing[key] = value


class PriorityLevelConfigurationStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _default_priority_level(spec)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return priority_level_errors(obj) + _flow_status_errors(as_dict(obj.get("status")))


STRATEGIES: dict[str, type[Strategy]] = {
    "flowschemas": FlowSchemaStrategy,
    "prioritylevelconfigurations": PriorityLevelConfigurationStrategy,
}
