"""The OpenAPI 3.0 documents (`GET /openapi/v3/...`): one per group-version (`api/v1`, `apis/<group>/<version>`)
and for `api`, `apis` and `apis/<group>`, each with the definitions its paths reach, and the `/openapi/v3` index
that names them with their hashes (kubectl fetches a document by the URL the index gives)."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from tinykube.apiserver.schema.definitions import INT_OR_STRING, QUANTITY, Schema, closure, group_versions
from tinykube.apiserver.schema.paths import PathItem, doc_paths, gv_prefix, path_roots
from tinykube.apiserver.schema.render import INFO, V3_REF, dumps, render_paths, render_refs

# OpenAPI v3 renders these two as upstream's builder3 does.
_V3_ONE_OF = {
    INT_OR_STRING: [{"type": "integer"}, {"type": "string"}],
    QUANTITY: [{"type": "string"}, {"type": "number"}],
}


def _v3_schemas(schemas: dict[str, Schema]) -> dict[str, Schema]:
    out = {}
    for name, schema in schemas.items():
        rendered = render_refs(schema, V3_REF, wrap=True)
        if name in _V3_ONE_OF:
            rendered = {"description": rendered["description"], "oneOf": _V3_ONE_OF[name]}
            if name == INT_OR_STRING:
                rendered["format"] = "int-or-string"
        out[name] = rendered
    return out


@functools.cache
def openapi_v3_group(path: str) -> bytes | None:
    """The OpenAPI 3.0 document for `api/v1`, `apis/<group>/<version>`, `api`, `apis` or `apis/<group>`."""
    items = doc_paths(path.strip("/"))
    if items is None:
        return None
    return v3_document(items, closure(path_roots(items)))


def v3_document(items: list[PathItem], schemas: dict[str, Schema]) -> bytes:
    """A group-version's OpenAPI 3.0 document: its paths and the definitions they reach (built-in or custom)."""
    doc: Schema = {
        "openapi": "3.0.0",
        "info": INFO,
        "paths": render_refs(render_paths(items, v3=True), V3_REF, wrap=False),
        "components": {
            "schemas": _v3_schemas(schemas),
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
        "security": [{"BearerToken": []}],
    }
    return dumps(doc)


def _v3_doc_names() -> list[str]:
    names = ["api", "apis"]
    for group, version in group_versions():
        if group and f"apis/{group}" not in names:
            names.append(f"apis/{group}")
        names.append(gv_prefix(group, version).lstrip("/"))
    return names


@functools.cache
def openapi_v3_index() -> dict[str, Any]:
    """The `/openapi/v3` discovery document; each hash is the upper-case hex SHA-512 of the document."""
    paths: dict[str, Any] = {}
    for name in _v3_doc_names():
        body = openapi_v3_group(name)
        if body is not None:
            digest = hashlib.sha512(body).hexdigest().upper()
            paths[name] = {"serverRelativeURL": f"/openapi/v3/{name}?hash={digest}"}
    return {"paths": paths}
