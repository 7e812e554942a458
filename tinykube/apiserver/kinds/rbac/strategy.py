"""Strategies (upstream v1 defaulting and validation) for the rbac.authorization.k8s.io kinds: Role, ClusterRole,
RoleBinding and ClusterRoleBinding.

Names only need to be usable as a URL path segment (RBAC names such as `system:node` carry colons). A binding's
`roleRef` is fixed once created: changing what a binding grants means deleting it and creating another, which is
what `kubectl auth reconcile` does. The objects are validated here; enforcing them (and upstream's check that a
user cannot grant permissions they do not hold) belongs to the authorizer.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_list, as_str, indexed_dicts
from tinykube.api.meta import dns1123_subdomain
from tinykube.api.selectors import selector_from_label_selector
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError
from tinykube.apiserver.registry.validation import label_selector_errors, path_segment_name

GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]


# ---- roles -------------------------------------------------------------------------------------------------------


def policy_rule_errors(rule: dict[str, Any], path: str, *, namespaced: bool) -> list[FieldError]:
    """A rule grants verbs on resources of API groups, or on non-resource URLs (cluster roles only), never both."""
    errs: list[FieldError] = []
    if not as_list(rule.get("verbs")):
        errs.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = as_list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            errs.append(invalid(f"{path}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs"))
        if any(as_list(rule.get(key)) for key in ("apiGroups", "resources", "resourceNames")):
            detail = "rules cannot apply to both regular resources and non-resource URLs"
            errs.append(invalid(f"{path}.nonResourceURLs", urls, detail))
        return errs
    if not as_list(rule.get("apiGroups")):
        errs.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not as_list(rule.get("resources")):
        errs.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def _rules_errors(obj: dict[str, Any], *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in indexed_dicts(obj.get("rules")):
        errs += policy_rule_errors(rule, f"rules[{i}]", namespaced=namespaced)
    return errs


def aggregation_rule_errors(rule: Any) -> list[FieldError]:
    """An aggregated ClusterRole's rules are filled in by a controller from the roles its selectors match."""
    if rule is None:
        return []
    path = "aggregationRule.clusterRoleSelectors"
    selectors = as_list(as_dict(rule).get("clusterRoleSelectors"))
    errs = (
        [] if selectors else [required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil")]
    )
    for i, selector in enumerate(selectors):
        errs += label_selector_errors(selector, f"{path}[{i}]")
        try:
            selector_from_label_selector(as_dict(selector))
        except errors.BadRequest:
            errs.append(invalid(f"{path}[{i}]", None, "invalid label selector."))
    return errs


class _RoleStrategy(Strategy):
    name_rule = staticmethod(path_segment_name)
    namespaced_rules = True

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("rules", None)  # written even when empty (no omitempty): `rules: null`

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return _rules_errors(obj, namespaced=self.namespaced_rules)


class RoleStrategy(_RoleStrategy):
    namespaced_rules = True


class ClusterRoleStrategy(_RoleStrategy):
    namespaced_rules = False

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return super().validate(obj, old) + aggregation_rule_errors(obj.get("aggregationRule"))


# ---- bindings ----------------------------------------------------------------------------------------------------


def default_subject(subject: dict[str, Any]) -> None:
    """Users and groups are RBAC's own kinds; a ServiceAccount is a core kind (group "")."""
    if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
        subject["apiGroup"] = GROUP


def subject_errors(subject: dict[str, Any], path: str, *, namespaced: bool) -> list[FieldError]:
    name, kind, group = as_str(subject.get("name")), subject.get("kind", ""), as_str(subject.get("apiGroup"))
    errs = [] if name else [required(f"{path}.name")]
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(f"{path}.name", name, m) for m in dns1123_subdomain(name)]
        if group:
            errs.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not as_str(subject.get("namespace")):
            errs.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:  # 1.32 reports an empty user or group name twice: required, and this
            errs.append(invalid(f"{path}.name", name, f"{str(kind).lower()} name cannot be empty"))
        if group != GROUP:
            errs.append(not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        errs.append(not_supported(f"{path}.kind", kind, SUBJECT_KINDS))
    return errs


def role_ref_errors(ref: dict[str, Any], kinds: list[str]) -> list[FieldError]:
    group, kind, name = as_str(ref.get("apiGroup")), ref.get("kind", ""), as_str(ref.get("name"))
    errs: list[FieldError] = []
    if group != GROUP:
        errs.append(not_supported("roleRef.apiGroup", group, [GROUP]))
    if kind not in kinds:
        errs.append(not_supported("roleRef.kind", kind, kinds))
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid("roleRef.name", name, m) for m in path_segment_name(name)]
    return errs


def _go_role_ref(ref: dict[str, Any]) -> str:
    """Go's `%#v` of the internal RoleRef, the value of the "cannot change roleRef" error."""
    fields = ", ".join(
        f'{k}:"{as_str(ref.get(key))}"' for k, key in (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))
    )
    return f"rbac.RoleRef{{{fields}}}"


class _BindingStrategy(Strategy):
    name_rule = staticmethod(path_segment_name)
    namespaced = True
    role_kinds = ["Role", "ClusterRole"]

    def default(self, obj: dict[str, Any]) -> None:
        ref = obj.setdefault("roleRef", {})
        if isinstance(ref, dict) and not ref.get("apiGroup"):
            ref["apiGroup"] = GROUP
        for _, subject in indexed_dicts(obj.get("subjects")):
            default_subject(subject)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = role_ref_errors(as_dict(obj.get("roleRef")), self.role_kinds)
        for i, subject in indexed_dicts(obj.get("subjects")):
            errs += subject_errors(subject, f"subjects[{i}]", namespaced=self.namespaced)
        if old is not None and _ref(obj) != _ref(old):
            shown = _go_role_ref(as_dict(obj.get("roleRef")))
            errs.append(GoSyntaxError(ErrorType.INVALID, "roleRef", shown, "cannot change roleRef"))
        return errs


def _ref(obj: dict[str, Any]) -> tuple[str, str, str]:
    ref = as_dict(obj.get("roleRef"))
    return as_str(ref.get("apiGroup")), as_str(ref.get("kind")), as_str(ref.get("name"))


class RoleBindingStrategy(_BindingStrategy):
    namespaced = True
    role_kinds = ["Role", "ClusterRole"]


class ClusterRoleBindingStrategy(_BindingStrategy):
    namespaced = False  # a ServiceAccount subject must then say which namespace it is in
    role_kinds = ["ClusterRole"]


STRATEGIES: dict[str, type[Strategy]] = {
    "roles": RoleStrategy,
    "clusterroles": ClusterRoleStrategy,
    "rolebindings": RoleBindingStrategy,
    "clusterrolebindings": ClusterRoleBindingStrategy,
}
