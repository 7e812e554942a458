"""The Swagger 2.0 document (`GET /openapi/v2`), as JSON or as gnostic's `openapi.v2.Document` protobuf.

One document for every served group-version. kubectl's client-side validation (used for `kind: List` manifests)
and its v2 fallbacks parse only the protobuf form, encoded here field by field (numbers from gnostic's
OpenAPIv2.proto)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from tinykube.apiserver.schema.definitions import Schema, closure, group_versions, served_definitions
from tinykube.apiserver.schema.paths import gv_paths, root_paths
from tinykube.apiserver.schema.render import INFO, V2_REF, dumps, render_paths, render_refs

_SECURITY = {
    "BearerToken": {
        "description": "Bearer Token authentication",
        "in": "header",
        "name": "authorization",
        "type": "apiKey",
    }
}

# The protobuf form: gnostic's openapi.v2.Document (field numbers from gnostic's OpenAPIv2.proto).

# kubectl asks with the `@` form; the response carries the dotted form (Go's mime parser rejects the `@`).
V2_PROTOBUF_MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_PROTOBUF_ACCEPTS = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", V2_PROTOBUF_MEDIA_TYPE)
_PB_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _pb_bytes(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _pb_str(num: int, value: Any) -> bytes:
    return _pb_bytes(num, str(value).encode()) if value else b""


def _pb_strs(num: int, values: Iterable[str]) -> bytes:
    return b"".join(_pb_bytes(num, v.encode()) for v in values)


def _pb_bool(num: int, value: Any) -> bytes:
    return _varint(num << 3) + b"\x01" if value else b""


def _pb_named(num: int, name: str, value: bytes) -> bytes:
    """A gnostic `Named*` pair (name = 1, value = 2) as field `num`."""
    return _pb_bytes(num, _pb_str(1, name) + _pb_bytes(2, value))


def _pb_extensions(num: int, node: Schema) -> bytes:
    """`x-*` keys as `NamedAny{name, Any{yaml}}`; JSON is YAML, and kube-openapi reads them back as YAML."""
    pairs = ((key, value) for key, value in node.items() if key.startswith("x-"))
    return b"".join(_pb_named(num, key, _pb_str(2, json.dumps(value))) for key, value in pairs)


def _pb_schema(schema: Schema) -> bytes:
    out = _pb_str(1, schema.get("$ref")) + _pb_str(2, schema.get("format"))
    out += _pb_str(4, schema.get("description")) + _pb_strs(19, schema.get("required", ()))
    if isinstance(schema.get("additionalProperties"), dict):
        out += _pb_bytes(21, _pb_bytes(1, _pb_schema(schema["additionalProperties"])))
    if "type" in schema:
        out += _pb_bytes(22, _pb_str(1, schema["type"]))
    if "items" in schema:
        out += _pb_bytes(23, _pb_bytes(1, _pb_schema(schema["items"])))
    if "properties" in schema:
        props = b"".join(_pb_named(1, k, _pb_schema(v)) for k, v in schema["properties"].items())
        out += _pb_bytes(25, props)
    return out + _pb_extensions(31, schema)


def _pb_parameter(param: Schema) -> bytes:
    """ParametersItem{parameter: Parameter{body_parameter | non_body_parameter{query | path sub-schema}}}."""
    common = _pb_str(3, param.get("description")) + _pb_str(4, param["name"])
    if param["in"] == "body":
        body = _pb_str(2, param["name"]) + _pb_str(3, "body") + _pb_bool(4, param.get("required"))
        parameter = _pb_bytes(1, body + _pb_bytes(5, _pb_schema(param["schema"])))
    elif param["in"] == "query":
        sub = _pb_bool(1, param.get("required")) + _pb_str(2, "query") + common
        sub += _pb_str(6, param.get("type")) + _pb_bool(20, param.get("uniqueItems"))
        parameter = _pb_bytes(2, _pb_bytes(3, sub))
    else:
        sub = _pb_bool(1, param.get("required")) + _pb_str(2, "path") + common
        sub += _pb_str(5, param.get("type")) + _pb_bool(19, param.get("uniqueItems"))
        parameter = _pb_bytes(2, _pb_bytes(4, sub))
    return _pb_bytes(1, parameter)


def _pb_responses(responses: Schema) -> bytes:
    out = b""
    for code, response in responses.items():
        body = _pb_str(1, response.get("description"))
        if "schema" in response:
            body += _pb_bytes(2, _pb_bytes(1, _pb_schema(response["schema"])))
        out += _pb_named(1, code, _pb_bytes(1, body))
    return out


def _pb_operation(op: Schema) -> bytes:
    out = _pb_strs(1, op.get("tags", ())) + _pb_str(3, op.get("description"))
    out += _pb_str(5, op.get("operationId"))
    out += _pb_strs(6, op.get("produces", ())) + _pb_strs(7, op.get("consumes", ()))
    out += b"".join(_pb_bytes(8, _pb_parameter(p)) for p in op.get("parameters", ()))
    out += _pb_bytes(9, _pb_responses(op["responses"])) + _pb_strs(10, op.get("schemes", ()))
    return out + _pb_extensions(13, op)


def _pb_path_item(item: Schema) -> bytes:
    out = b"".join(_pb_bytes(num, _pb_operation(item[m])) for m, num in _PB_METHODS.items() if m in item)
    return out + b"".join(_pb_bytes(9, _pb_parameter(p)) for p in item.get("parameters", ()))


def _pb_security(doc: Schema) -> bytes:
    definitions = b""
    for name, sd in doc["securityDefinitions"].items():
        api_key = _pb_str(1, sd["type"]) + _pb_str(2, sd["name"]) + _pb_str(3, sd["in"])
        definitions += _pb_named(1, name, _pb_bytes(2, api_key + _pb_str(4, sd.get("description"))))
    requirements = b"".join(_pb_bytes(12, b"".join(_pb_named(1, k, b"") for k in req)) for req in doc["security"])
    return requirements + _pb_bytes(13, definitions)


def pb_document(doc: Schema) -> bytes:
    info = _pb_str(1, doc["info"]["title"]) + _pb_str(2, doc["info"]["version"])
    paths = b"".join(_pb_named(2, k, _pb_path_item(v)) for k, v in doc["paths"].items())
    definitions = b"".join(_pb_named(1, k, _pb_schema(v)) for k, v in doc["definitions"].items())
    out = _pb_str(1, doc["swagger"]) + _pb_bytes(2, info) + _pb_bytes(8, paths) + _pb_bytes(9, definitions)
    return out + _pb_security(doc)


@functools.cache
def v2_document() -> Schema:
    items = [*(root_paths("api") or []), *(root_paths("apis") or [])]
    for group, version in group_versions():
        if group:
            items.extend(root_paths(f"apis/{group}") or [])
        items.extend(gv_paths(group, version))
    return {
        "swagger": "2.0",
        "info": INFO,
        "paths": render_refs(render_paths(items, v3=False), V2_REF, wrap=False),
        "definitions": render_refs(closure(served_definitions().schemas), V2_REF, wrap=False),
        "securityDefinitions": _SECURITY,
        "security": [{"BearerToken": []}],
    }


@functools.cache
def openapi_v2() -> bytes:
    """The Swagger 2.0 document (`GET /openapi/v2`, JSON)."""
    return dumps(v2_document())


def wants_v2_protobuf(accept: str | None) -> bool:
    """Whether a `GET /openapi/v2` Accept header asks for `openapi_v2_protobuf()` rather than JSON."""
    return any(media in (accept or "") for media in _V2_PROTOBUF_ACCEPTS)


@functools.cache
def openapi_v2_protobuf() -> bytes:
    """The same document as gnostic's `openapi.v2.Document` protobuf, served (as `V2_PROTOBUF_MEDIA_TYPE`)
    when `wants_v2_protobuf(accept)`. kubectl's client-side validation (used for `kind: List` manifests) and
    its v2 fallbacks parse only this; JSON fails there with "proto: cannot parse invalid wire-format data"."""
    return pb_document(v2_document())
