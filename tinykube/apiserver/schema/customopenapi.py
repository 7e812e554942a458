"""OpenAPI for custom resources: each served CRD version's schema published as upstream's apiextensions-apiserver
publishes it, beside the built-in documents of `openapiv2` and `openapiv3`.

`kubectl explain` reads a kind's schema from the group-version's v3 document (found by its
`x-kubernetes-group-version-kind`); `kubectl apply` looks for `fieldValidation` on the kind's PATCH there, and
validates `kind: List` manifests client-side from the v2 document. The documents change with the catalog, so
they are derived per catalog state (`Catalog.derived`) rather than cached for the process.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from typing import Any

from tinykube.api.jsonshape import as_dict
from tinykube.api.resources import Catalog, ResourceInfo
from tinykube.apiserver.schema import definitions, openapiv2, openapiv3, paths, render

Schema = dict[str, Any]

_OBJECT_META_DESCRIPTION = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
# What a custom resource's PATCH takes: no strategic merge (kubectl's client-side apply then sends a merge patch).
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")
# What OpenAPI v2 cannot say (upstream's v2 conversion drops these from a CRD's schema).
_NOT_IN_V2 = frozenset({"nullable", "oneOf", "anyOf", "not", "allOf", "x-kubernetes-validations"})


def definition_name(group: str, version: str, kind: str) -> str:
    """upstream's name for a custom kind's definition: the group reversed (`com.example.stable.v1.CronTab`)."""
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def _gvk(resource: ResourceInfo, kind: str) -> list[dict[str, str]]:
    return [{"group": resource.group, "kind": kind, "version": resource.version}]


def _kind_schema(resource: ResourceInfo, *, v2: bool) -> Schema:
    raw = resource.custom.versions[resource.version].raw_schema
    if v2 and (not isinstance(raw, dict) or raw.get("x-kubernetes-preserve-unknown-fields") is True):
        # upstream publishes a bare object here: kubectl's v2 validation would refuse the unknown fields of any
        # properties listed
        return {"type": "object", "x-kubernetes-group-version-kind": _gvk(resource, resource.kind)}
    schema: Schema = copy.deepcopy(raw) if isinstance(raw, dict) else {"type": "object"}
    if v2:
        schema = v2_structural(schema)
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {
        "description": "APIVersion defines the versioned schema of this representation of an object.",
        "type": "string",
    }
    properties["kind"] = {
        "description": "Kind is a string value representing the REST resource this object represents.",
        "type": "string",
    }
    properties["metadata"] = {"$ref": f"{definitions.META}.ObjectMeta", "description": _OBJECT_META_DESCRIPTION}
    schema["x-kubernetes-group-version-kind"] = _gvk(resource, resource.kind)
    return schema


def v2_structural(schema: Schema) -> Schema:
    """upstream's v2 conversion of a structural schema, node by node: junctors go; a nullable node loses its type
    (and, untyped, its properties and items); an unknown-fields node loses its properties and items, and its
    type when that is object; an array left without items loses its type; nullable properties are not required."""
    out = {k: v for k, v in schema.items() if k not in _NOT_IN_V2}
    dropped = set()
    if schema.get("nullable") is True:
        dropped |= {"type", "items", "properties"}
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        dropped |= {"items", "properties"}
    for key in dropped:
        out.pop(key, None)
    for key in ("properties", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _v2_node(sub) for name, sub in out[key].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _v2_node(out[key])
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    if schema.get("x-kubernetes-preserve-unknown-fields") is True and out.get("type") == "object":
        out.pop("type")
    nullable = {name for name, sub in as_dict(schema.get("properties")).items() if as_dict(sub).get("nullable") is True}
    if isinstance(out.get("required"), list) and nullable:
        out["required"] = [name for name in out["required"] if name not in nullable]
    if as_dict(schema.get("additionalProperties")).get("nullable") is True:
        out.pop("required", None)
    if out.get("required") == []:
        out.pop("required")
    return out


def _v2_node(schema: Any) -> Any:
    return v2_structural(schema) if isinstance(schema, dict) else schema


def _list_schema(resource: ResourceInfo, kind_def: str) -> Schema:
    return {
        "description": f"{resource.list_kind} is a list of {resource.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": kind_def}},
            "kind": {"type": "string"},
            "metadata": {"$ref": f"{definitions.META}.ListMeta"},
        },
        "x-kubernetes-group-version-kind": _gvk(resource, resource.list_kind),
    }


def _group_version(
    catalog: Catalog, group: str, version: str, *, v2: bool = False
) -> tuple[list[Any], dict[str, Schema]]:
    """The path items and custom definitions of one custom group-version."""
    items = paths.discovery_paths(group, version)
    schemas: dict[str, Schema] = {}
    for resource in catalog.in_group_version(group, version):
        if resource.custom is None:
            continue
        kind_def = definition_name(group, version, resource.kind)
        list_def = definition_name(group, version, resource.list_kind)
        schemas[kind_def] = _kind_schema(resource, v2=v2)
        schemas[list_def] = _list_schema(resource, kind_def)
        for item in paths.resource_paths(resource, kind_def, list_def):
            ops = tuple(dataclasses.replace(op, patch_types=_PATCH_TYPES) if op.patch else op for op in item.ops)
            items.append(dataclasses.replace(item, ops=ops))
    return items, schemas


def _custom_group_versions(catalog: Catalog) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r.group, r.version) for r in catalog.resources if r.custom is not None))


def _built_in_closure(items: list[Any], custom: dict[str, Schema]) -> dict[str, Schema]:
    roots = paths.path_roots(items) - custom.keys()
    for schema in custom.values():
        roots |= set(definitions.refs(schema)) - custom.keys()
    return definitions.closure(roots)


def v3_document(catalog: Catalog, path: str) -> bytes | None:
    """`/openapi/v3/apis/<group>/<version>` of a custom group-version, or None if `path` is not one."""
    wanted = path.strip("/")
    for group, version in _custom_group_versions(catalog):
        if wanted == f"apis/{group}/{version}":
            found: bytes = catalog.derived(("openapi-v3", wanted), lambda: _v3(catalog, *_split(wanted)))
            return found
    return None


def _split(doc_path: str) -> tuple[str, str]:
    _apis, group, version = doc_path.split("/")
    return group, version


def _v3(catalog: Catalog, group: str, version: str) -> bytes:
    items, custom = _group_version(catalog, group, version)
    schemas = {**_built_in_closure(items, custom), **custom}
    return openapiv3.v3_document(items, dict(sorted(schemas.items())))


def v3_index(catalog: Catalog) -> dict[str, Any]:
    """The built-in `/openapi/v3` index with the custom group-versions' documents."""

    def make() -> dict[str, Any]:
        documents = dict(openapiv3.openapi_v3_index()["paths"])
        for group, version in _custom_group_versions(catalog):
            name = f"apis/{group}/{version}"
            body = v3_document(catalog, name)
            assert body is not None
            digest = hashlib.sha512(body).hexdigest().upper()
            documents[name] = {"serverRelativeURL": f"/openapi/v3/{name}?hash={digest}"}
        return {"paths": documents}

    found: dict[str, Any] = catalog.derived("openapi-v3-index", make)
    return found


def _v2_document(catalog: Catalog) -> Schema:
    base = openapiv2.v2_document()
    if not _custom_group_versions(catalog):
        return base
    items: list[Any] = []
    custom: dict[str, Schema] = {}
    for group, version in _custom_group_versions(catalog):
        found_items, found = _group_version(catalog, group, version, v2=True)
        items += found_items
        custom |= found
    custom_paths = render.render_refs(render.render_paths(items, v3=False), render.V2_REF, wrap=False)
    custom_definitions = render.render_refs(custom, render.V2_REF, wrap=False)
    return {
        **base,
        "paths": {**base["paths"], **custom_paths},
        "definitions": dict(sorted({**base["definitions"], **custom_definitions}.items())),
    }


def v2_json(catalog: Catalog) -> bytes:
    if not _custom_group_versions(catalog):
        return openapiv2.openapi_v2()
    found: bytes = catalog.derived("openapi-v2", lambda: render.dumps(_v2_document(catalog)))
    return found


def v2_protobuf(catalog: Catalog) -> bytes:
    if not _custom_group_versions(catalog):
        return openapiv2.openapi_v2_protobuf()
    found: bytes = catalog.derived("openapi-v2-pb", lambda: openapiv2.pb_document(_v2_document(catalog)))
    return found
