"""Defaulting and validation of a CustomResourceDefinition (`apiextensions.k8s.io/v1`), as upstream's
`SetDefaults_CustomResourceDefinition` and `ValidateCustomResourceDefinition[Update]` do them.

Upstream validates the *internal* form of a CRD, into which a v1 object is converted first, and its messages name
that form's fields. The conversion moves a per-version schema, subresources, printer columns or selectable fields
that every version shares up to the top of the spec, so a one-version CRD's schema errors read
`spec.validation.openAPIV3Schema.properties[spec].type`, and its printer columns `spec.additionalPrinterColumns[0]`,
exactly as kubectl users see them. `_Spec.from_v1` does that conversion (and only that); the checks then follow
upstream's order, so an aggregated 422 lists its causes as upstream's does.

The schema rules themselves (structural schemas, `x-kubernetes-*` extensions, defaults) live in `structuralcheck`,
reading schemas through `schemaprops`.

One deliberate difference: tinykube does not call conversion webhooks, so `spec.conversion.strategy: Webhook` is
refused (`Unsupported value: "Webhook": supported values: "None" (...)`) rather than accepted and left failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from tinykube.api.errors import (
    ErrorType,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)
from tinykube.api.jsonshape import as_dict, as_list, as_str
from tinykube.api.meta import dns1035_label, dns1123_subdomain
from tinykube.apiextensions import rulepath
from tinykube.apiextensions import schemaprops as sp
from tinykube.apiextensions import structuralcheck as sc

API_APPROVED = "api-approved.kubernetes.io"
MAX_SELECTABLE_FIELDS = 8
SCOPES = ["Cluster", "Namespaced"]
COLUMN_TYPES = "boolean,date,integer,number,string"
COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
WEBHOOK_REFUSED = (
    'supported values: "None" (tinykube does not call conversion webhooks; '
    'strategy "None" serves every version with only apiVersion changed)'
)
_IMMUTABLE = "field is immutable"
ALL_RULES = sc.SchemaRules()
_APPROVAL_PR = "see https://github.com/kubernetes/enhancements/pull/1111"


# ---- defaulting -------------------------------------------------------------------------------------------------


def default_crd(crd: dict[str, Any]) -> None:
    """v1 defaulting, in place: singular and listKind from kind, conversion strategy None, a webhook service's port
    443, and the storage version as the first stored version."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = as_str(names.get("kind"))
        if not names.get("singular") and kind:
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    service = as_dict(as_dict(as_dict(spec.get("conversion")).get("webhook")).get("clientConfig")).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443
    status = crd.get("status")
    if status is None or isinstance(status, dict):
        _default_stored_versions(crd, spec)


def _default_stored_versions(crd: dict[str, Any], spec: dict[str, Any]) -> None:
    status = crd.get("status") or {}
    if status.get("storedVersions"):
        return
    storage = next((v for v in as_list(spec.get("versions")) if isinstance(v, dict) and v.get("storage") is True), None)
    if storage is not None and isinstance(storage.get("name"), str):
        crd["status"] = {**status, "storedVersions": [storage["name"]]}


# ---- the internal form upstream validates ------------------------------------------------------------------------


@dataclass(slots=True)
class _Version:
    name: str
    served: bool
    storage: bool
    deprecated: bool
    deprecation_warning: str | None
    schema: dict[str, Any] | None  # CustomResourceValidation: {"openAPIV3Schema": ...}
    subresources: dict[str, Any] | None
    columns: list[dict[str, Any]]
    selectable: list[dict[str, Any]]


@dataclass(slots=True)
class _Spec:
    group: str
    scope: str
    names: dict[str, Any]
    preserve_unknown_fields: bool
    versions: list[_Version]
    raw_versions: list[Any]
    conversion: dict[str, Any] | None  # internal: strategy, webhookClientConfig, conversionReviewVersions
    version: str = ""
    validation: dict[str, Any] | None = None
    subresources: dict[str, Any] | None = None
    columns: list[dict[str, Any]] = field(default_factory=list)
    selectable: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_v1(cls, spec: dict[str, Any]) -> _Spec:
        versions = [_version(v) for v in as_list(spec.get("versions"))]
        out = cls(
            group=as_str(spec.get("group")),
            scope=as_str(spec.get("scope")),
            names=as_dict(spec.get("names")),
            preserve_unknown_fields=spec.get("preserveUnknownFields") is True,
            versions=versions,
            raw_versions=as_list(spec.get("versions")),
            conversion=_conversion(spec.get("conversion")),
        )
        if versions:
            out.version = versions[0].name
            out._hoist_shared()
        return out

    def _hoist_shared(self) -> None:
        """A per-version field that every version sets alike moves to the top of the spec (upstream's conversion)."""
        first = self.versions[0]
        if all(v.schema == first.schema for v in self.versions):
            self.validation = first.schema
            for v in self.versions:
                v.schema = None
        if all(v.subresources == first.subresources for v in self.versions):
            self.subresources = first.subresources
            for v in self.versions:
                v.subresources = None
        if all(v.columns == first.columns for v in self.versions):
            self.columns = first.columns
            for v in self.versions:
                v.columns = []
        if all(v.selectable == first.selectable for v in self.versions):
            self.selectable = first.selectable
            for v in self.versions:
                v.selectable = []

    def schemas(self) -> list[dict[str, Any]]:
        found = [as_dict(self.validation).get("openAPIV3Schema")]
        found += [as_dict(v.schema).get("openAPIV3Schema") for v in self.versions]
        return [s for s in found if isinstance(s, dict)]

    def has_schema_with(self, predicate: Any) -> bool:
        return any(sp.schema_has(s, predicate) for s in self.schemas())

    def subresources_for(self, version: _Version) -> dict[str, Any] | None:
        if not any(v.subresources is not None for v in self.versions):
            return self.subresources
        return version.subresources

    def any_status(self) -> bool:
        return _has_status(self.subresources) or any(_has_status(v.subresources) for v in self.versions)


def _version(raw: Any) -> _Version:
    v = as_dict(raw)
    warning = v.get("deprecationWarning")
    return _Version(
        name=as_str(v.get("name")),
        served=v.get("served") is True,
        storage=v.get("storage") is True,
        deprecated=v.get("deprecated") is True,
        deprecation_warning=warning if isinstance(warning, str) else None,
        schema=v.get("schema") if isinstance(v.get("schema"), dict) else None,
        subresources=v.get("subresources") if isinstance(v.get("subresources"), dict) else None,
        columns=[as_dict(c) for c in as_list(v.get("additionalPrinterColumns"))],
        selectable=[as_dict(f) for f in as_list(v.get("selectableFields"))],
    )


def _conversion(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    webhook = raw.get("webhook")
    out: dict[str, Any] = {"strategy": as_str(raw.get("strategy"))}
    if isinstance(webhook, dict):
        if webhook.get("clientConfig") is not None:
            out["webhookClientConfig"] = webhook["clientConfig"]
        out["conversionReviewVersions"] = as_list(webhook.get("conversionReviewVersions"))
    return out


def _has_status(subresources: dict[str, Any] | None) -> bool:
    return subresources is not None and subresources.get("status") is not None


# ---- options: what an update may keep of an old CRD's flaws ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    rules: sc.SchemaRules = ALL_RULES
    require_openapi_schema: bool = True
    require_immutable_names: bool = False
    too_many_selectable_allowed: frozenset[str] = frozenset()  # versions ("" for the top level)


def _established(crd: dict[str, Any]) -> bool:
    conditions = as_list(as_dict(crd.get("status")).get("conditions"))
    return any(as_dict(c).get("type") == "Established" and as_dict(c).get("status") == "True" for c in conditions)


def _non_structural(s: dict[str, Any]) -> bool:
    return sc.structural_init_error(s) is not None or bool(sc.structural_errors(s, ""))


def _has_unpruned_defaults(s: dict[str, Any]) -> bool:
    if not sp.schema_has(s, sp.has_default) or _non_structural(s):
        return False
    errs = sc.default_errors(s, "", require_pruned=True, value_errors=lambda *_: [])
    return any(e.detail == "must not have unknown fields" for e in errs)


def _non_atomic_set(s: dict[str, Any]) -> bool:
    items = sp.item_schema(s)
    if sp.optional_text(s, sp.LIST_TYPE) != "set" or items is None:
        return False
    if sp.text(items, "type") == "array":
        list_type = sp.optional_text(items, sp.LIST_TYPE)
        return list_type is not None and list_type != "atomic"
    return sp.text(items, "type") == "object" and sp.optional_text(items, sp.MAP_TYPE) != "atomic"


def _update_options(spec: _Spec, old: dict[str, Any], old_spec: _Spec) -> _Options:
    old_schemas = old_spec.schemas()
    rules = sc.SchemaRules(
        require_valid_property_type=not old_spec.has_schema_with(
            lambda s: bool(sp.text(s, "type")) and sp.text(s, "type") not in sp.OPENAPI_TYPES
        ),
        require_structural=not any(_non_structural(s) for s in old_schemas),
        require_pruned_defaults=not any(_has_unpruned_defaults(s) for s in old_schemas),
        require_atomic_set_type=not old_spec.has_schema_with(_non_atomic_set),
        require_map_list_keys_map_set_validation=not old_spec.has_schema_with(
            lambda s: bool(sc.map_list_keys_map_set_errors(s, ""))
        ),
    )
    all_have_schema = as_dict(old_spec.validation).get("openAPIV3Schema") is not None or all(
        as_dict(v.schema).get("openAPIV3Schema") is not None for v in old_spec.versions
    )
    return _Options(
        rules=rules,
        require_openapi_schema=all_have_schema,
        require_immutable_names=_established(old),
        too_many_selectable_allowed=_too_many_selectable_allowed(spec, old_spec),
    )


def _too_many_selectable_allowed(spec: _Spec, old: _Spec) -> frozenset[str]:
    allowed = set()
    if len(old.selectable) > MAX_SELECTABLE_FIELDS and spec.selectable == old.selectable:
        allowed.add("")
    old_versions = {v.name: v for v in old.versions}
    for v in spec.versions:
        was = old_versions.get(v.name)
        if was is not None and len(was.selectable) > MAX_SELECTABLE_FIELDS and v.selectable == was.selectable:
            allowed.add(v.name)
    return frozenset(allowed)


# ---- validation --------------------------------------------------------------------------------------------------


def validate_crd(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """Validation of a CRD's create (`old` None) or update, after defaulting. Object metadata in general (the name
    being a DNS subdomain, labels, annotations) is the registry's; here the name must be `<plural>.<group>`."""
    spec = _Spec.from_v1(as_dict(crd.get("spec")))
    status = as_dict(crd.get("status"))
    errs: list[FieldError] = []
    if old is None:
        opts = _Options()
        name = as_str(as_dict(crd.get("metadata")).get("name"))
        if name and name != f"{as_str(spec.names.get('plural'))}.{spec.group}":
            errs.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
        errs += _spec_errors(spec, opts)
    else:
        old_spec = _Spec.from_v1(as_dict(old.get("spec")))
        opts = _update_options(spec, old, old_spec)
        errs += _spec_errors(spec, opts) + _spec_update_errors(spec, old_spec, opts)
    errs += _names_errors(as_dict(status.get("acceptedNames")), "status.acceptedNames")
    errs += stored_versions_errors(status.get("storedVersions"), spec.versions)
    errs += _api_approval_errors(crd, old)
    errs += _preserve_unknown_fields_errors(spec, old)
    return errs


def validate_crd_status(crd: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """A write of the status subresource: upstream checks only the accepted names' form (storedVersions are the
    storage-version migrator's to shrink; the main resource's writes keep the storage version in them)."""
    return _names_errors(as_dict(as_dict(crd.get("status")).get("acceptedNames")), "status.acceptedNames")


def _spec_update_errors(spec: _Spec, old: _Spec, opts: _Options) -> list[FieldError]:
    errs: list[FieldError] = []
    pairs = [
        ("spec.group", spec.group, old.group),
        ("spec.names.plural", spec.names.get("plural"), old.names.get("plural")),
    ]
    if opts.require_immutable_names:
        pairs = [
            ("spec.scope", spec.scope, old.scope),
            ("spec.names.kind", spec.names.get("kind"), old.names.get("kind")),
            *pairs,
        ]
    for path, new_value, old_value in pairs:
        if new_value != old_value:
            errs.append(invalid(path, new_value, _IMMUTABLE))
    return errs


def _group_errors(group: str) -> list[FieldError]:
    if not group:
        return [required("spec.group", "")]
    if problems := dns1123_subdomain(group):
        return [invalid("spec.group", group, ",".join(problems))]
    if "." not in group:
        return [invalid("spec.group", group, "should be a domain with at least one dot")]
    return []


def _enum_errors(path: str, value: str, accepted: list[str]) -> list[FieldError]:
    if not value:
        return [required(path, "")]
    return [] if value in accepted else [not_supported(path, value, accepted)]


def _spec_errors(spec: _Spec, opts: _Options) -> list[FieldError]:
    errs = _group_errors(spec.group) + _enum_errors("spec.scope", spec.scope, SCOPES)
    rules = opts.rules
    if not spec.preserve_unknown_fields:  # pruning needs structural schemas
        rules = replace(rules, require_structural=True)
    errs += _missing_schema_errors(spec, opts)
    if rules.allow_defaults and spec.has_schema_with(sp.has_default):
        rules = replace(rules, require_structural=True)
        if spec.preserve_unknown_fields:
            errs.append(
                invalid("spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema")
            )
    if spec.has_schema_with(sp.has_kubernetes_extensions):
        rules = replace(rules, require_structural=True)
    errs += _versions_errors(spec, opts, rules)
    errs += _names_required_errors(spec.names) + _names_errors(spec.names, "spec.names")
    errs += _validation_errors(spec.validation, spec.any_status(), rules, "spec.validation")
    errs += subresources_errors(spec.subresources, "spec.subresources")
    for i, column in enumerate(spec.columns):
        errs += column_errors(column, f"spec.additionalPrinterColumns[{i}]")
    if spec.selectable:
        errs += _top_level_selectable_errors(spec, opts)
    return errs + _conversion_errors(spec)


def _missing_schema_errors(spec: _Spec, opts: _Options) -> list[FieldError]:
    if as_dict(spec.validation).get("openAPIV3Schema") is not None:
        return []
    errs: list[FieldError] = []
    for i, v in enumerate(spec.versions):
        if as_dict(v.schema).get("openAPIV3Schema") is not None:
            continue
        path = f"spec.versions[{i}].schema.openAPIV3Schema"
        if opts.require_openapi_schema:
            errs.append(required(path, ""))
        elif not spec.preserve_unknown_fields and v.served:
            errs.append(required(path, "because otherwise all fields are pruned"))
    return errs


def _versions_errors(spec: _Spec, opts: _Options, rules: sc.SchemaRules) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, version in enumerate(spec.versions):
        if problems := dns1035_label(version.name):
            errs.append(invalid(f"spec.versions[{i}].name", version.name, ",".join(problems)))
        status = _has_status(spec.subresources_for(version))
        errs += _version_errors(version, f"spec.versions[{i}]", status, opts, rules)
    names = [v.name for v in spec.versions]
    if len(set(names)) != len(names):
        errs.append(invalid("spec.versions", spec.raw_versions, "must contain unique version names"))
    if sum(v.storage for v in spec.versions) != 1:
        errs.append(
            invalid("spec.versions", spec.raw_versions, "must have exactly one version marked as storage version")
        )
    if spec.version and (problems := dns1035_label(spec.version)):
        errs.append(invalid("spec.version", spec.version, ",".join(problems)))
    return errs


def _version_errors(
    version: _Version, path: str, status: bool, opts: _Options, rules: sc.SchemaRules
) -> list[FieldError]:
    errs = [
        invalid(f"{path}.deprecationWarning", version.deprecation_warning, problem)
        for problem in deprecation_warning_errors(version.deprecated, version.deprecation_warning)
    ]
    errs += _validation_errors(version.schema, status, rules, f"{path}.schema")
    errs += subresources_errors(version.subresources, f"{path}.subresources")
    for i, column in enumerate(version.columns):
        errs += column_errors(column, f"{path}.additionalPrinterColumns[{i}]")
    if version.selectable:
        schema = as_dict(version.schema).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            detail = "may only be set when `version.schema.openAPIV3Schema` is not included"
            errs.append(invalid(f"{path}.selectableFields", "", detail))
        else:
            if (problem := sc.structural_init_error(schema)) is not None:
                errs.append(invalid(f"{path}.schema.openAPIV3Schema", "", problem))
            allow_many = version.name in opts.too_many_selectable_allowed
            errs += selectable_fields_errors(version.selectable, schema, f"{path}.selectableFields", allow_many)
    return errs


def _top_level_selectable_errors(spec: _Spec, opts: _Options) -> list[FieldError]:
    if spec.validation is None:
        return [invalid("spec.selectableFields", "", "may only be set when validations.schema is included")]
    errs: list[FieldError] = []
    schema = spec.validation.get("openAPIV3Schema")
    schema = schema if isinstance(schema, dict) else None
    if schema is not None and (problem := sc.structural_init_error(schema)) is not None:
        errs.append(invalid("spec.schema.openAPIV3Schema", "", problem))
    allow_many = "" in opts.too_many_selectable_allowed
    return errs + selectable_fields_errors(spec.selectable, schema, "spec.selectableFields", allow_many)


def deprecation_warning_errors(deprecated: bool, warning: str | None) -> list[str]:
    if not deprecated and warning is not None:
        return ["can only be set for deprecated versions"]
    if warning is None:
        return []
    problems: list[str] = []
    size = len(warning.encode("utf-8", "surrogatepass"))
    if size > 256:
        problems.append("must be <= 256 characters long")
    if size == 0:
        problems.append("must not be an empty string")
    for i, char in enumerate(warning):
        if not char.isprintable():
            at = len(warning[:i].encode("utf-8", "surrogatepass"))
            problems.append(
                f"must only contain printable UTF-8 characters; non-printable character found at index {at}"
            )
            break
    return problems


def _names_required_errors(names: dict[str, Any]) -> list[FieldError]:
    fields = ("plural", "singular", "kind", "listKind")
    return [required(f"spec.names.{name}", "") for name in fields if not as_str(names.get(name))]


def _names_errors(names: dict[str, Any], path: str) -> list[FieldError]:
    """The form of a set of names (in the spec, and as accepted in the status)."""
    errs: list[FieldError] = []
    for name in ("plural", "singular"):
        value = as_str(names.get(name))
        if value and (problems := dns1035_label(value)):
            errs.append(invalid(f"{path}.{name}", value, ",".join(problems)))
    for name in ("kind", "listKind"):
        value = as_str(names.get(name))
        if value and (problems := dns1035_label(value.lower())):
            detail = "may have mixed case, but should otherwise match: " + ",".join(problems)
            errs.append(invalid(f"{path}.{name}", value, detail))
    for i, short in enumerate(as_list(names.get("shortNames"))):
        if problems := dns1035_label(as_str(short)):
            errs.append(invalid(f"{path}.shortNames[{i}]", as_str(short), ",".join(problems)))
    kind = as_str(names.get("kind"))
    if kind and kind == as_str(names.get("listKind")):
        errs.append(invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    for i, category in enumerate(as_list(names.get("categories"))):
        if problems := dns1035_label(as_str(category)):
            errs.append(invalid(f"{path}.categories[{i}]", as_str(category), ",".join(problems)))
    return errs


# ---- schemas -----------------------------------------------------------------------------------------------------


def _status_root_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """With a status subresource, `status` is validated by `properties.status` alone: nothing at the root may say
    more about the object than what still holds for that part of it."""
    for go_name, json_name, _ in sp.SCHEMA_FIELDS:
        if not sp.is_set(schema, json_name):
            continue
        if go_name == "Type":
            if schema.get("type") != "object":
                detail = (
                    'only "object" is allowed as the type at the root of the schema if the status subresource is '
                    "enabled"
                )
                return [invalid(f"{path}.openAPIV3Schema.type", schema.get("type"), detail)]
            continue
        if go_name not in sp.ROOT_FIELDS_WITH_STATUS:
            allowed = " ".join(sp.ROOT_FIELDS_WITH_STATUS)
            detail = (
                f"only [{allowed}] fields are allowed at the root of the schema if the status subresource is enabled"
            )
            return [invalid(f"{path}.openAPIV3Schema", schema, detail)]
    return []


def _validation_errors(
    validation: dict[str, Any] | None, status: bool, rules: sc.SchemaRules, path: str
) -> list[FieldError]:
    """Upstream's validateCustomResourceDefinitionValidation for one `schema` (a CustomResourceValidation)."""
    schema = as_dict(validation).get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    root = f"{path}.openAPIV3Schema"
    errs = _status_root_errors(schema, path) if status else []
    if sp.flag(schema, "nullable"):
        errs.append(forbidden(f"{root}.nullable", "nullable cannot be true at the root"))
    init_errs: list[FieldError] = []
    rules_compile = False
    if rules.require_structural:
        if (problem := sc.structural_init_error(schema)) is not None:
            init_errs.append(invalid(root, "", problem))  # shown only if nothing else is wrong
        elif structural := sc.structural_errors(schema, root):
            errs += structural
        elif defaults := sc.default_errors(
            schema, root, require_pruned=rules.require_pruned_defaults, value_errors=sc.value_errors
        ):
            errs += defaults
        else:
            rules_compile = True
    walk = sc.Walk(allow_defaults=rules.allow_defaults, require_valid_property_type=rules.require_valid_property_type)
    schema_errs = sc.openapi_errors(schema, root, walk, rules, root=True)
    errs += schema_errs
    if rules_compile and not schema_errs:
        errs += sc.rule_errors(schema, root)
    if not errs:
        errs += init_errs
    return errs


# ---- subresources, printer columns, selectable fields ------------------------------------------------------------


def _simple_json_path_errors(value: str, path: str) -> list[FieldError]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def subresources_errors(subresources: dict[str, Any] | None, path: str) -> list[FieldError]:
    scale = as_dict(subresources).get("scale")
    if not isinstance(scale, dict):
        return []
    errs: list[FieldError] = []
    for name, prefix, where in (("specReplicasPath", ".spec.", ".spec"), ("statusReplicasPath", ".status.", ".status")):
        value, at = as_str(scale.get(name)), f"{path}.scale.{name}"
        if not value:
            errs.append(required(at, ""))
        elif problems := _simple_json_path_errors(value, at):
            errs += problems
        elif not value.startswith(prefix):
            errs.append(invalid(at, value, f"should be a json path under {where}"))
    selector, at = as_str(scale.get("labelSelectorPath")), f"{path}.scale.labelSelectorPath"
    if selector:
        if problems := _simple_json_path_errors(selector, at):
            errs += problems
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(invalid(at, selector, "should be a json path under either .spec or .status"))
    return errs


def column_errors(column: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not as_str(column.get("name")):
        errs.append(required(f"{path}.name", ""))
    kind = as_str(column.get("type"))
    if not kind:
        errs.append(required(f"{path}.type", f"must be one of {COLUMN_TYPES}"))
    elif kind not in COLUMN_TYPES.split(","):
        errs.append(invalid(f"{path}.type", kind, f"must be one of {COLUMN_TYPES}"))
    fmt = as_str(column.get("format"))
    if fmt and fmt not in COLUMN_FORMATS.split(","):
        errs.append(invalid(f"{path}.format", fmt, f"must be one of {COLUMN_FORMATS}"))
    json_path = as_str(column.get("jsonPath"))
    if not json_path:
        errs.append(required(f"{path}.JSONPath", ""))  # upstream names the internal Go field
    else:
        errs += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errs


def selectable_fields_errors(
    fields: list[dict[str, Any]], schema: dict[str, Any] | None, path: str, allow_too_many: bool = False
) -> list[FieldError]:
    errs: list[FieldError] = []
    unique: set[str] = set()
    for i, selectable in enumerate(fields):
        at = f"{path}[{i}].jsonPath"
        json_path = as_str(selectable.get("jsonPath"))
        if not json_path:
            errs.append(required(at, ""))
            continue
        found = rulepath.resolve_field_path(json_path, schema or {}, allow_array_notation=False)
        if isinstance(found, str):
            errs.append(invalid(at, json_path, f"is an invalid path: {found}"))
            continue
        if found.root == "metadata":
            errs.append(invalid(at, json_path, "must not point to fields in metadata"))
        if found.schema is None or sp.text(found.schema, "type") not in ("string", "boolean", "integer"):
            detail = (
                "must point to a field of type string, boolean or integer. "
                "Enum string fields and strings with formats are allowed."
            )
            errs.append(invalid(at, json_path, detail))
        if str(found) in unique:
            errs.append(duplicate(at, json_path))
        unique.add(str(found))
    if len(unique) > MAX_SELECTABLE_FIELDS and not allow_too_many:
        errs.append(too_many(path, len(unique), MAX_SELECTABLE_FIELDS))
    return errs


# ---- conversion --------------------------------------------------------------------------------------------------


def _conversion_errors(spec: _Spec) -> list[FieldError]:
    conversion = spec.conversion
    if conversion is None:
        return []
    strategy = conversion["strategy"]
    errs: list[FieldError] = []
    if strategy != "None" and spec.preserve_unknown_fields:
        errs.append(invalid("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields is true"))
    if not strategy:
        return [*errs, required("spec.conversion.strategy", "")]
    if strategy == "Webhook":
        # tinykube's one refusal that upstream does not make: the webhook would never be called
        return [*errs, FieldError(ErrorType.NOT_SUPPORTED, "spec.conversion.strategy", strategy, WEBHOOK_REFUSED)]
    if strategy != "None":
        return [*errs, not_supported("spec.conversion.strategy", strategy, ["None"])]
    detail = "should not be set when strategy is not set to Webhook"
    if conversion.get("webhookClientConfig") is not None:
        errs.append(forbidden("spec.conversion.webhookClientConfig", detail))
    if conversion.get("conversionReviewVersions"):
        errs.append(forbidden("spec.conversion.conversionReviewVersions", detail))
    return errs


# ---- status, approval, preserveUnknownFields ---------------------------------------------------------------------


def stored_versions_errors(stored: Any, versions: list[_Version]) -> list[FieldError]:
    path = "status.storedVersions"
    stored_list = [as_str(v) for v in as_list(stored)]
    if not stored_list:
        return [invalid(path, stored_list, "must have at least one stored version")]
    errs: list[FieldError] = []
    remaining = {v: i for i, v in enumerate(stored_list)}
    for version in versions:
        found = version.name in remaining
        if version.storage and not found:
            errs.append(invalid(path, stored_list, "must have the storage version " + version.name))
        remaining.pop(version.name, None)
    for name, i in sorted(remaining.items(), key=lambda item: item[1]):
        detail = (
            f"missing from spec.versions; {name} was previously a storage version, and must remain in spec.versions "
            f"until a storage migration ensures no data remains persisted in {name} and removes {name} from "
            "status.storedVersions"
        )
        errs.append(invalid(f"{path}[{i}]", name, detail))
    return errs


def is_protected_group(group: str) -> bool:
    return any(group == suffix or group.endswith("." + suffix) for suffix in ("k8s.io", "kubernetes.io"))


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")


def _is_url(value: str) -> bool:
    """Go's url.ParseRequestURI accepts it with a scheme and a host."""
    if any(ord(c) < 0x20 or c in " \x7f" for c in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(_SCHEME.fullmatch(parts.scheme)) and bool(parts.hostname)


def approval_state(annotations: dict[str, Any]) -> tuple[str, str]:
    """(state, reason) of the `api-approved.kubernetes.io` annotation: Missing, Bypassed, Approved or Invalid."""
    value = as_str(annotations.get(API_APPROVED))
    if not value:
        return "Missing", f'protected groups must have approval annotation "{API_APPROVED}", {_APPROVAL_PR}'
    if value.startswith("unapproved"):
        return "Bypassed", f'not approved: "{value}"'
    if _is_url(value):
        return "Approved", f"approved in {value}"
    return "Invalid", (
        f'protected groups must have approval annotation "{API_APPROVED}" with either a URL or a reason starting '
        f'with "unapproved", {_APPROVAL_PR}'
    )


def _annotations(crd: dict[str, Any]) -> dict[str, Any]:
    return as_dict(as_dict(crd.get("metadata")).get("annotations"))


def _api_approval_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """CRDs in the community's groups (`*.k8s.io`, `*.kubernetes.io`) carry the API review's approval."""
    if not is_protected_group(as_str(as_dict(crd.get("spec")).get("group"))):
        return []
    state, reason = approval_state(_annotations(crd))
    if old is not None and approval_state(_annotations(old))[0] == state:
        return []
    path = f"metadata.annotations[{API_APPROVED}]"
    if state == "Missing":
        return [required(path, reason)]
    if state == "Invalid":
        return [invalid(path, as_str(_annotations(crd).get(API_APPROVED)), reason)]
    return []


def _preserve_unknown_fields_errors(spec: _Spec, old: dict[str, Any] | None) -> list[FieldError]:
    if old is not None and as_dict(old.get("spec")).get("preserveUnknownFields") is True:
        return []
    if not spec.preserve_unknown_fields:
        return []
    detail = "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
    return [invalid("spec.preserveUnknownFields", True, detail)]
