"""Neutral schemas and path items rendered for one OpenAPI version: `{"$ref": "<definition name>"}` becomes
`#/definitions/...` (Swagger 2.0) or `#/components/schemas/...` (OpenAPI 3.0, `allOf` around a `$ref` with
siblings), and each operation gets the parameters, body and responses in that version's shape."""

from __future__ import annotations

import json
from typing import Any

from tinykube.apiserver.schema.definitions import KUBE_VERSION, Schema
from tinykube.apiserver.schema.paths import PARAMS, PATCH_TYPES, Op, PathItem

V2_REF = "#/definitions/"
V3_REF = "#/components/schemas/"


def render_refs(node: Any, prefix: str, wrap: bool) -> Any:
    """Neutral `{"$ref": name, ...}` -> `{"$ref": prefix+name, ...}`; `wrap` puts siblings beside an allOf."""
    if isinstance(node, list):
        return [render_refs(v, prefix, wrap) for v in node]
    if not isinstance(node, dict):
        return node
    if not isinstance(node.get("$ref"), str):  # JSONSchemaProps has a *property* named `$ref`
        return {k: render_refs(v, prefix, wrap) for k, v in node.items()}
    out = {k: render_refs(v, prefix, wrap) for k, v in node.items() if k != "$ref"}
    ref = {"$ref": prefix + node["$ref"]}
    if not out:
        return ref
    return {"allOf": [ref], **out} if wrap else {**ref, **out}


def _param_text(name: str, kind: str) -> tuple[str, str]:
    typ, text = PARAMS[name]
    return typ, text.format(kind=kind) if name == "name" else text


def _v2_param(name: str, location: str, kind: str = "") -> Schema:
    typ, text = _param_text(name, kind)
    param: Schema = {"description": text, "in": location, "name": name, "type": typ, "uniqueItems": True}
    if location == "path":
        param["required"] = True
    return param


def _v3_param(name: str, location: str, kind: str = "") -> Schema:
    typ, text = _param_text(name, kind)
    param: Schema = {"description": text, "in": location, "name": name, "schema": {"type": typ, "uniqueItems": True}}
    if location == "path":
        param["required"] = True
    return param


def _location(name: str) -> str:
    return "path" if name in ("name", "namespace") else "query"


def _common_op(op: Op) -> Schema:
    out: Schema = {"description": op.description, "operationId": op.operation_id, "tags": [op.tag]}
    if op.action:
        out["x-kubernetes-action"] = op.action
    if op.gvk:
        out["x-kubernetes-group-version-kind"] = op.gvk
    return out


def _v2_op(op: Op) -> Schema:
    out = _common_op(op)
    params = [_v2_param(q, "query") for q in op.query]
    if op.body:
        params.insert(0, {"in": "body", "name": "body", "required": op.method != "delete", "schema": {"$ref": op.body}})
    if params:
        out["parameters"] = params
    out["consumes"] = list(op.patch_types or PATCH_TYPES) if op.patch else ["*/*"]
    out["produces"] = ["application/json"]
    out["schemes"] = ["https"]
    out["responses"] = {
        code: {"description": text, **({"schema": {"$ref": d}} if d else {})} for code, text, d in op.responses
    }
    return out


def _v3_content(definition: str | None) -> Schema:
    return {"content": {"application/json": {"schema": {"$ref": definition}}}} if definition else {}


def _v3_op(op: Op) -> Schema:
    out = _common_op(op)
    if op.query:
        out["parameters"] = [_v3_param(q, "query") for q in op.query]
    if op.body:
        types = (op.patch_types or PATCH_TYPES) if op.patch else ("*/*",)
        out["requestBody"] = {"content": {t: {"schema": {"$ref": op.body}} for t in types}}
        if op.method != "delete":
            out["requestBody"]["required"] = True
    out["responses"] = {code: {"description": text, **_v3_content(d)} for code, text, d in op.responses}
    return out


def render_paths(items: list[PathItem], v3: bool) -> Schema:
    render_op, render_param = (_v3_op, _v3_param) if v3 else (_v2_op, _v2_param)
    paths: Schema = {}
    for item in items:
        entry: Schema = {op.method: render_op(op) for op in item.ops}
        if item.params:
            entry["parameters"] = [render_param(p, _location(p), item.kind) for p in item.params]
        paths[item.path] = entry
    return paths


def dumps(doc: Schema) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


INFO = {"title": "Kubernetes", "version": KUBE_VERSION}
