"""Strategies (upstream v1 defaulting and validation) for admissionregistration.k8s.io: the mutating and validating
webhook configurations, ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding.

Each validation keeps kube-apiserver 1.32's field paths and messages, including its quirks (the swapped
name/namespace labels of a webhook's service, the `matchResouces` path of a policy binding), because users search
for the exact text kubectl prints. The objects are stored and validated, not acted on: no webhook is called, no CEL
expression is compiled (an expression is only required to be non-blank). On update, the checks a stored webhook
configuration already broke are relaxed (upstream's validation options: side effects, review versions, unique
names, selector values), so that old data stays writable.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

from tinykube.api.errors import FieldError, forbidden, invalid, not_supported, required, too_many
from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, indexed_dicts, strings
from tinykube.api.meta import dns1035_label, dns1123_subdomain, qualified_name
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import go_invalid, go_slice
from tinykube.apiserver.registry.netvalidation import port_number_errors
from tinykube.apiserver.registry.validation import (
    NamedItems,
    conditions_errors,
    default_if_nil,
    has_invalid_selector,
    has_wildcard,
    invalid_each,
    label_selector_errors,
    path_segment_name,
    qualified_name_errors,
)

_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_SIDE_EFFECTS = ["None", "NoneOnDryRun", "Some", "Unknown"]
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_REINVOCATION_POLICIES = ["IfNeeded", "Never"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]
_VALIDATION_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
_VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]
_NOT_FOUND_ACTIONS = ["Deny", "Allow"]
_URL_FORM = "; desired format: https://host[/path]"
_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset(
    ["true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if", "import",
     "let", "loop", "package", "namespace", "return", "var", "void", "while"]
)  # fmt: skip


def _default_rules(rules: Any) -> None:
    for _, rule in indexed_dicts(rules):
        default_if_nil(rule, "scope", "*")


def _default_webhook(hook: dict[str, Any], *, mutating: bool) -> None:
    default_if_nil(hook, "failurePolicy", "Fail")
    default_if_nil(hook, "matchPolicy", "Equivalent")
    default_if_nil(hook, "namespaceSelector", {})
    default_if_nil(hook, "objectSelector", {})
    default_if_nil(hook, "timeoutSeconds", 10)
    if mutating:
        default_if_nil(hook, "reinvocationPolicy", "Never")
    service = as_dict(hook.get("clientConfig")).get("service")
    if isinstance(service, dict):
        default_if_nil(service, "port", 443)
    _default_rules(hook.get("rules"))


def _default_match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    default_if_nil(match, "matchPolicy", "Equivalent")
    default_if_nil(match, "namespaceSelector", {})
    default_if_nil(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        _default_rules(match.get(key))


def fully_qualified_name_errors(name: str, field: str) -> list[FieldError]:
    if not name:
        return [required(field)]
    messages = dns1123_subdomain(name)
    if messages:
        return [invalid(field, name, ",".join(messages))]
    if len(name.split(".")) < 3:
        return [invalid(field, name, "should be a domain with at least three segments separated by dots")]
    return []


def _resources_errors(resources: list[str], path: str) -> list[FieldError]:
    """Resources with subresources (`pods/status`, `*/*`), and the wildcards that exclude others."""
    errs = [] if resources else [required(path)]
    wildcard_sub: set[str] = set()  # `x/*`
    wildcard_res: set[str] = set()  # `*/x`
    for i, entry in enumerate(resources):
        if not entry:
            errs.append(required(f"{path}[{i}]"))
            continue
        res, slash, sub = entry.partition("/")
        if not slash:
            continue
        if res in wildcard_sub:
            errs.append(invalid(f"{path}[{i}]", entry, f"if '{res}/*' is present, must not specify {entry}"))
        if sub in wildcard_res:
            errs.append(invalid(f"{path}[{i}]", entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        errs.append(invalid(path, resources, "if '*/*' is present, must not specify other resources"))
    # upstream remembers only whether the last plain resource was something other than "*"
    plain = [entry for entry in resources if entry and "/" not in entry]
    if "*" in resources and plain and plain[-1] != "*":
        detail = "if '*' is present, must not specify other resources without subresources"
        errs.append(invalid(path, resources, detail))
    return errs


def _rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    """A RuleWithOperations: operations, API groups, versions, resources and scope."""
    operations = strings(rule.get("operations"))
    errs = [] if operations else [required(f"{path}.operations")]
    if len(operations) > 1 and has_wildcard(operations):
        shown = go_slice(operations, "admissionregistration.OperationType")
        errs.append(go_invalid(f"{path}.operations", shown, "if '*' is present, must not specify other operations"))
    errs += [
        not_supported(f"{path}.operations[{i}]", op, _OPERATIONS)
        for i, op in enumerate(operations)
        if op not in _OPERATIONS
    ]
    groups, versions = strings(rule.get("apiGroups")), strings(rule.get("apiVersions"))
    if not groups:
        errs.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and has_wildcard(groups):
        errs.append(invalid(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"))
    if not versions:
        errs.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and has_wildcard(versions):
        errs.append(invalid(f"{path}.apiVersions", versions, "if '*' is present, must not specify other API versions"))
    errs += [required(f"{path}.apiVersions[{i}]") for i, version in enumerate(versions) if not version]
    errs += _resources_errors(strings(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _review_versions_errors(versions: list[str], path: str, *, require_recognized: bool) -> list[FieldError]:
    if not versions:
        return [required(path, "must specify one of v1, v1beta1")]
    errs: list[FieldError] = []
    for i, version in enumerate(versions):
        if version in versions[:i]:
            errs.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        errs += invalid_each(f"{path}[{i}]", version, dns1035_label(version))
    if require_recognized and not any(v in _REVIEW_VERSIONS for v in versions):
        errs.append(invalid(path, versions, "must include at least one of v1, v1beta1"))
    return errs


def webhook_url_errors(url: str, path: str) -> list[FieldError]:
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError as err:
        return [required(path, f"url must be a valid URL: {err}{_URL_FORM}")]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{_URL_FORM}"))
    if not host:
        errs.append(invalid(path, host, f"host must be specified{_URL_FORM}"))
    if "@" in parts.netloc:
        errs.append(invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        errs.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _service_path_errors(value: str, path: str) -> list[FieldError]:
    if value in ("", "/"):
        return []
    if value == "//":
        return [invalid(path, value, "segment[0] may not be empty")]
    errs = [] if value.startswith("/") else [invalid(path, value, "must start with a '/'")]
    steps = value[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            errs.append(invalid(path, value, f"segment[{i}] may not be empty"))
        errs += [invalid(path, value, f"segment[{i}]: {m}") for m in (dns1123_subdomain(step) if step else [])]
    return errs


def webhook_service_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    # Upstream passes the service's name and namespace to a function that takes them the other way round, so an
    # empty namespace is reported at `name` and an empty name at `namespace`; kept, as users see it.
    errs: list[FieldError] = []
    if not as_str(service.get("namespace")):
        errs.append(required(f"{path}.name"))
    if not as_str(service.get("name")):
        errs.append(required(f"{path}.namespace"))
    port = service.get("port", 443)
    messages = port_number_errors(port)
    if messages:
        errs.append(invalid(f"{path}.port", port, "port is not valid: " + ", ".join(messages)))
    if service.get("path") is not None:
        errs += _service_path_errors(as_str(service.get("path")), f"{path}.path")
    return errs


def _client_config_errors(config: dict[str, Any], path: str) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(f"{path}.clientConfig", "exactly one of url or service is required")]
    if url is not None:
        return webhook_url_errors(as_str(url), f"{path}.clientConfig.url")
    return webhook_service_errors(as_dict(service), f"{path}.clientConfig.service")


def match_conditions_errors(conditions: Any, path: str) -> list[FieldError]:
    """Each condition named (a qualified name, unique) with a non-blank CEL expression (not compiled here)."""
    entries = as_list(conditions)
    errs = [too_many(path, len(entries), 64)] if len(entries) > 64 else []
    names = NamedItems(qualified_name)
    for i, condition in indexed_dicts(entries):
        if not as_str(condition.get("expression")).strip():
            errs.append(required(f"{path}[{i}].expression"))
        errs += names.check(as_str(condition.get("name")), f"{path}[{i}].name")
    return errs


@dataclass(frozen=True, slots=True)
class _WebhookOptions:
    """Upstream's validationOptions: strict on create; on update, relaxed where the stored object was not."""

    ignore_match_conditions: bool = False
    require_no_side_effects: bool = True
    require_recognized_versions: bool = True
    require_unique_names: bool = True
    allow_invalid_label_values: bool = False


def _webhook_options(new: dict[str, Any], old: dict[str, Any] | None) -> _WebhookOptions:
    if old is None:
        return _WebhookOptions()
    hooks, old_hooks = (
        [h for _, h in indexed_dicts(new.get("webhooks"))],
        [h for _, h in indexed_dicts(old.get("webhooks"))],
    )
    names = [h.get("name") for h in old_hooks]
    return _WebhookOptions(
        ignore_match_conditions=len(hooks) == len(old_hooks)
        and all(a.get("matchConditions") == b.get("matchConditions") for a, b in zip(hooks, old_hooks, strict=True)),
        require_no_side_effects=all(h.get("sideEffects") in _NO_SIDE_EFFECTS for h in old_hooks),
        require_recognized_versions=all(
            not as_list(h.get("admissionReviewVersions"))
            or any(v in _REVIEW_VERSIONS for v in as_list(h.get("admissionReviewVersions")))
            for h in old_hooks
        ),
        require_unique_names=len(set(map(str, names))) == len(names),
        allow_invalid_label_values=has_invalid_selector(
            [h.get(key) for h in old_hooks for key in ("namespaceSelector", "objectSelector")]
        ),
    )


def _side_effects_errors(side_effects: Any, path: str, opts: _WebhookOptions) -> list[FieldError]:
    allowed = _NO_SIDE_EFFECTS if opts.require_no_side_effects else _SIDE_EFFECTS
    if side_effects is None:
        return [required(f"{path}.sideEffects", "must specify one of " + ", ".join(allowed))]
    return [] if side_effects in allowed else [not_supported(f"{path}.sideEffects", side_effects, allowed)]


def _webhook_policy_errors(hook: dict[str, Any], path: str, *, mutating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    checks = [("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)]
    for key, allowed in checks + ([("reinvocationPolicy", _REINVOCATION_POLICIES)] if mutating else []):
        value = hook.get(key)
        if value is not None and value not in allowed:
            errs.append(not_supported(f"{path}.{key}", value, allowed))
    return errs


def webhook_errors(hook: dict[str, Any], path: str, opts: _WebhookOptions, *, mutating: bool) -> list[FieldError]:
    errs = fully_qualified_name_errors(as_str(hook.get("name")), f"{path}.name")
    for i, rule in indexed_dicts(hook.get("rules")):
        errs += _rule_errors(rule, f"{path}.rules[{i}]")
    errs += _webhook_policy_errors(hook, path, mutating=mutating)
    errs += _side_effects_errors(hook.get("sideEffects"), path, opts)
    timeout = as_int(hook.get("timeoutSeconds"))
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        errs += label_selector_errors(
            hook.get(key), f"{path}.{key}", allow_invalid_values=opts.allow_invalid_label_values
        )
    errs += _client_config_errors(as_dict(hook.get("clientConfig")), path)
    if not opts.ignore_match_conditions:
        errs += match_conditions_errors(hook.get("matchConditions"), f"{path}.matchConditions")
    return errs


def webhook_configuration_errors(
    obj: dict[str, Any], old: dict[str, Any] | None, *, mutating: bool
) -> list[FieldError]:
    opts = _webhook_options(obj, old)
    errs: list[FieldError] = []
    names = NamedItems()
    for i, hook in indexed_dicts(obj.get("webhooks")):
        path = f"webhooks[{i}]"
        errs += webhook_errors(hook, path, opts, mutating=mutating)
        versions = strings(hook.get("admissionReviewVersions"))
        errs += _review_versions_errors(
            versions, f"{path}.admissionReviewVersions", require_recognized=opts.require_recognized_versions
        )
        name = as_str(hook.get("name"))
        if opts.require_unique_names and name:
            errs += names.repeat(name, f"{path}.name")
    return errs


class _WebhookConfigurationStrategy(Strategy):
    tracks_generation = True
    mutating = False

    def default(self, obj: dict[str, Any]) -> None:
        for _, hook in indexed_dicts(obj.get("webhooks")):
            _default_webhook(hook, mutating=self.mutating)

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return new.get("webhooks") != old.get("webhooks")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return webhook_configuration_errors(obj, old, mutating=self.mutating)


class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = True


class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = False


def _group_version(text: str) -> tuple[str, str] | None:
    if text in ("", "/"):
        return "", ""
    if text.count("/") > 1:
        return None
    group, _, version = text.rpartition("/")
    return group, version


def param_kind_errors(param_kind: dict[str, Any], path: str) -> list[FieldError]:
    api_version, kind = as_str(param_kind.get("apiVersion")), as_str(param_kind.get("kind"))
    errs: list[FieldError] = []
    parsed = _group_version(api_version)
    if not api_version:
        errs.append(required(f"{path}.apiVersion"))
    elif parsed is None:
        errs.append(invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    else:
        group, version = parsed
        if group and dns1123_subdomain(group):
            errs.append(invalid(f"{path}.apiVersion", group, ",".join(dns1123_subdomain(group))))
        if not version:
            errs.append(invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif dns1035_label(version):
            errs.append(invalid(f"{path}.apiVersion", version, ",".join(dns1035_label(version))))
    if not kind:
        errs.append(required(f"{path}.kind"))
    elif dns1035_label(kind.lower()):
        detail = "may have mixed case, but should otherwise match: " + ",".join(dns1035_label(kind.lower()))
        errs.append(invalid(f"{path}.kind", kind, detail))
    return errs


def _named_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    unique = NamedItems()
    for i, name in enumerate(strings(rule.get("resourceNames"))):
        errs += invalid_each(f"{path}.resourceNames[{i}]", name, path_segment_name(name))
        errs += unique.repeat(name, f"{path}.resourceNames[{i}]")
    return errs + _rule_errors(rule, path)


def match_resources_errors(match: Any, path: str) -> list[FieldError]:
    if not isinstance(match, dict):
        return []
    errs: list[FieldError] = []
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(required(f"{path}.matchPolicy"))
    elif policy not in _MATCH_POLICIES:
        errs.append(not_supported(f"{path}.matchPolicy", policy, _MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        selector = match.get(key)
        errs += [required(f"{path}.{key}")] if selector is None else label_selector_errors(selector, f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in indexed_dicts(match.get(key)):
            errs += _named_rule_errors(rule, f"{path}.{key}[{i}]")
    return errs


def _variable_errors(variable: dict[str, Any], path: str) -> list[FieldError]:
    name, expression = as_str(variable.get("name")), as_str(variable.get("expression"))
    errs: list[FieldError] = []
    if not name.strip():
        errs.append(required(f"{path}.name", "name is not specified"))
    elif not _CEL_IDENTIFIER.fullmatch(name) or name in _CEL_RESERVED:
        errs.append(invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    if not expression.strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    return errs


def _validation_errors(validation: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not as_str(validation.get("expression")).strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    message_expression = as_str(validation.get("messageExpression"))
    if message_expression and not message_expression.strip():
        errs.append(invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified"))
    message = as_str(validation.get("message"))
    if message and not message.strip():
        errs.append(invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        errs.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in _VALIDATION_REASONS:
        errs.append(not_supported(f"{path}.reason", reason, _VALIDATION_REASONS))
    return errs


def _audit_annotation_errors(annotation: dict[str, Any], policy_name: str, path: str) -> list[FieldError]:
    key = as_str(annotation.get("key"))
    if policy_name:
        errs = qualified_name_errors(f"{policy_name}/{key}", f"{path}.key")
    else:
        errs = [invalid(f"{path}.key", key, "requires metadata.name be non-empty")]
    value = as_str(annotation.get("valueExpression")).strip()
    if not value:
        errs.append(required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(value) > 5 * 1024:
        errs.append(required(f"{path}.valueExpression", "must not exceed 5120 bytes in length"))
    return errs


def _audit_annotations_errors(annotations: Any, policy_name: str, path: str) -> list[FieldError]:
    entries = as_list(annotations)
    errs = [] if len(entries) <= 20 else [invalid(path, entries, "must not have more than 20 auditAnnotations")]
    keys = NamedItems()
    for i, annotation in indexed_dicts(entries):
        errs += _audit_annotation_errors(annotation, policy_name, f"{path}[{i}]")
        errs += keys.repeat(as_str(annotation.get("key")), f"{path}[{i}].key")
    return errs


def _policy_match_errors(spec: dict[str, Any]) -> list[FieldError]:
    constraints = spec.get("matchConstraints")
    if constraints is None:
        return [required("spec.matchConstraints")]
    errs = match_resources_errors(constraints, "spec.matchConstraints")
    if not as_list(as_dict(constraints).get("resourceRules")):  # the rules give the policy its types
        errs.append(required("spec.matchConstraints.resourceRules"))
    return errs


def _policy_checks_errors(spec: dict[str, Any], policy_name: str) -> list[FieldError]:
    validations, annotations = as_list(spec.get("validations")), as_list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        return [required("spec.validations", detail), required("spec.auditAnnotations", detail)]
    errs: list[FieldError] = []
    for i, validation in indexed_dicts(validations):
        errs += _validation_errors(validation, f"spec.validations[{i}]")
    return errs + _audit_annotations_errors(annotations, policy_name, "spec.auditAnnotations")


def validating_admission_policy_errors(obj: dict[str, Any], *, ignore_match_conditions: bool) -> list[FieldError]:
    """The structure of a ValidatingAdmissionPolicy; its CEL expressions are required but not compiled."""
    spec = as_dict(obj.get("spec"))
    failure_policy = spec.get("failurePolicy")
    errs: list[FieldError] = []
    if failure_policy is None:
        errs.append(required("spec.failurePolicy"))
    elif failure_policy not in _FAILURE_POLICIES:
        errs.append(not_supported("spec.failurePolicy", failure_policy, _FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        errs += param_kind_errors(as_dict(spec["paramKind"]), "spec.paramKind")
    errs += _policy_match_errors(spec)
    if not ignore_match_conditions:
        errs += match_conditions_errors(spec.get("matchConditions"), "spec.matchConditions")
    for i, variable in indexed_dicts(spec.get("variables")):
        errs += _variable_errors(variable, f"spec.variables[{i}]")
    return errs + _policy_checks_errors(spec, as_str(obj["metadata"].get("name")))


def _type_checking_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    warnings = as_dict(status.get("typeChecking")).get("expressionWarnings")
    for i, warning in indexed_dicts(warnings):
        path = f"status.typeChecking.expressionWarnings[{i}]"
        if not warning.get("warning"):
            errs.append(required(f"{path}.warning"))
        if not as_str(warning.get("fieldRef")).strip():
            errs.append(required(f"{path}.fieldRef"))
    return errs


class ValidatingAdmissionPolicyStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_if_nil(spec, "failurePolicy", "Fail")
            _default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec, old_spec = as_dict(obj.get("spec")), as_dict((old or {}).get("spec"))
        unchanged = old is not None and all(spec.get(k) == old_spec.get(k) for k in ("paramKind", "matchConditions"))
        errs = validating_admission_policy_errors(obj, ignore_match_conditions=unchanged)
        status = as_dict(obj.get("status"))
        return errs + _type_checking_errors(status) + conditions_errors(status.get("conditions"), "status.conditions")


def param_ref_errors(ref: Any, path: str) -> list[FieldError]:
    if not isinstance(ref, dict):
        return []
    name, selector = as_str(ref.get("name")), ref.get("selector")
    errs: list[FieldError] = []
    if name:
        errs += invalid_each(f"{path}.name", name, path_segment_name(name))
        if selector is not None:
            errs.append(forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += label_selector_errors(selector, f"{path}.selector")
        if name:
            errs.append(forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(required(f"{path}.parameterNotFoundAction"))
    elif action not in _NOT_FOUND_ACTIONS:
        errs.append(not_supported(f"{path}.parameterNotFoundAction", action, _NOT_FOUND_ACTIONS))
    return errs


def _validation_actions_errors(actions: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    unique = NamedItems()
    for i, action in enumerate(actions):
        if action not in _VALIDATION_ACTIONS:
            errs.append(not_supported(f"{path}[{i}]", action, _VALIDATION_ACTIONS))
        errs += unique.repeat(action, f"{path}[{i}]")
    if "Deny" in actions and "Warn" in actions:
        detail = (
            "must not contain both Deny and Warn (repeating the same validation failure information in the API "
            "response and headers serves no purpose)"
        )
        errs.append(
            go_invalid(path, go_slice([str(a) for a in actions], "admissionregistration.ValidationAction"), detail)
        )
    if not actions:
        errs.append(required(path, "at least one validation action is required"))
    return errs


def policy_binding_errors(spec: dict[str, Any]) -> list[FieldError]:
    policy = as_str(spec.get("policyName"))
    errs = (
        [required("spec.policyName")]
        if not policy
        else invalid_each("spec.policyName", policy, dns1123_subdomain(policy))
    )
    errs += param_ref_errors(spec.get("paramRef"), "spec.paramRef")
    errs += match_resources_errors(spec.get("matchResources"), "spec.matchResouces")  # sic: upstream's path
    return errs + _validation_actions_errors(as_list(spec.get("validationActions")), "spec.validationActions")


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_match_resources(as_dict(obj.get("spec")).get("matchResources"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return policy_binding_errors(as_dict(obj.get("spec")))


STRATEGIES: dict[str, type[Strategy]] = {
    "mutatingwebhookconfigurations": MutatingWebhookConfigurationStrategy,
    "validatingwebhookconfigurations": ValidatingWebhookConfigurationStrategy,
    "validatingadmissionpolicies": ValidatingAdmissionPolicyStrategy,
    "validatingadmissionpolicybindings": ValidatingAdmissionPolicyBindingStrategy,
}
