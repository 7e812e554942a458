"""`fieldValidation=Strict|Warn|Ignore`: unknown fields are an error, a warning, or silently kept.

kubectl sends `Strict` by default once the OpenAPI document says the server supports it, so an unknown field in a
manifest is reported exactly as a real cluster reports it. The schema walk lives in `unknownfields`.

The same check first refuses fields of the wrong JSON type (`decodetypes`), as upstream's decoder does before it
looks for unknown fields: it sees every decoded body and every patched object, so one call covers create, update,
patch and the subresources that take a body.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request

from tinykube.api import errors, protobuf
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.schema import decodetypes, unknownfields
from tinykube.apiserver.schema.decodetypes import Source

MODES = ("Ignore", "Warn", "Strict")


_builder = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="openapi-schemas")
_schemas: concurrent.futures.Future[list[str]] | None = None


def load_schemas() -> concurrent.futures.Future[list[str]]:
    """Build the schemas the unknown-field check walks (~0.5 s of CPU) in a thread, once: the apiserver starts this
    as it starts, so its first write (a node registering, say) does not wait for it. (A thread's future, not a
    task: it outlives event loops, as tests run several.)"""
    global _schemas
    if _schemas is None:
        _schemas = _builder.submit(unknownfields.unknown_fields, "v1", "Pod", {})
    return _schemas


async def _schemas_ready() -> None:
    loading = load_schemas()
    if not loading.done():
        await asyncio.wrap_future(loading)


async def _unknown_fields(resource: ResourceInfo, obj: dict[str, Any]) -> list[tuple[str, unknownfields.FieldPath]]:
    await _schemas_ready()
    return unknownfields.unknown_field_paths(resource.api_version, resource.kind, obj)


async def check_types(
    resource: ResourceInfo, obj: dict[str, Any], source: Source = Source.JSON, *, patch: bytes = b""
) -> None:
    """Refuse fields of the wrong JSON type as upstream's decoding does (`decodetypes.check`)."""
    await _schemas_ready()
    decodetypes.check(resource, obj, source, patch=patch)


_PATCH_SOURCES = {
    "application/json-patch+json": Source.PATCHED,
    "application/merge-patch+json": Source.PATCHED,
    "application/strategic-merge-patch+json": Source.STRATEGIC,
}


def body_source(request: Request) -> Source | None:
    """How the request's body became the object the checks see: decoded from JSON or YAML, or a patch of one kind
    or another applied; None for protobuf, which its encoding types."""
    media = (request.headers.get("content-type") or "application/json").split(";", 1)[0].strip().lower()
    if request.method == "PATCH":
        return _PATCH_SOURCES.get(media, Source.APPLY)
    if media == protobuf.MEDIA_TYPE:
        return None
    return Source.YAML if media == "application/yaml" else Source.JSON


FieldCheck = Callable[[dict[str, Any]], Awaitable[list[str]]]


def field_check(request: Request, resource: ResourceInfo, duplicates: Sequence[str] = ()) -> FieldCheck:
    """The request's field validation as a check of a (decoded or patched) object; it prunes in place.
    `duplicates`: the keys the body repeats (`duplicate_keys`), reported under Strict with the unknown fields in
    one error, as upstream's strict decoder reports them."""
    mode = request.query_params.get("fieldValidation") or "Warn"
    if mode not in MODES:
        raise errors.BadRequest(
            f"fieldValidation parameter unsupported: {mode}. Supported values are: Ignore, Warn, Strict"
        )

    if resource.custom is not None:
        return _custom_check(resource, mode, duplicates)

    async def check(obj: dict[str, Any]) -> list[str]:
        """Raise for a field of the wrong type; then for an unknown field under Strict; otherwise drop unknown fields
        (as upstream's decoder does) and warn for Warn."""
        source = body_source(request)
        if source is not None:
            patch = await request.body() if source is Source.STRATEGIC else b""
            await check_types(resource, obj, source, patch=patch)
        found = await _unknown_fields(resource, obj)
        unknown = list(dict.fromkeys(text for text, _ in found))[:100]  # as upstream reports them
        warnings = _report_unknown(unknown, mode, duplicates)
        for _, steps in found:
            _prune(obj, steps)
        return warnings

    return check


def _custom_check(resource: ResourceInfo, mode: str, duplicates: Sequence[str]) -> FieldCheck:
    """A custom resource's fields are its CRD version's schema's: what it does not declare is pruned (types are
    the schema validation's, a 422 later)."""
    schema = resource.custom.versions[resource.version].schema

    async def check(obj: dict[str, Any]) -> list[str]:
        unknown = list(dict.fromkeys(schema.prune(obj)))[:100] if schema is not None else []
        return _report_unknown(unknown, mode, duplicates)

    return check


def _report_unknown(unknown: list[str], mode: str, duplicates: Sequence[str] = ()) -> list[str]:
    if (unknown or duplicates) and mode == "Strict":
        # upstream lists them in the body's order; tinykube, not tracking positions, the unknown ones first
        strict = [f'unknown field "{f}"' for f in unknown] + [f'duplicate field "{f}"' for f in duplicates]
        raise errors.BadRequest("strict decoding error: " + ", ".join(strict))
    return [f'unknown field "{f}"' for f in unknown] if mode == "Warn" else []


def _prune(obj: Any, steps: unknownfields.FieldPath) -> None:
    """Remove the field the keys and indices `steps` lead to."""
    node = obj
    for step in steps[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(node, dict):
        node.pop(steps[-1], None)


def duplicate_keys(request: Request, body: bytes, content_type: str) -> list[str]:
    """Under `fieldValidation=Strict`, the keys a JSON body repeats (`metadata.name`), which upstream's strict decoder
    refuses (`strict decoding error: duplicate field "metadata.name"`, beside any unknown field: `field_check`
    reports both). Warn and Ignore keep the last value, as orjson does, without the scan (it costs a second parse
    of the body)."""
    query: bytes = request.scope.get("query_string", b"")
    if b"fieldValidation" not in query and b"%" not in query:  # most requests: no need to parse the query
        return []
    if request.query_params.get("fieldValidation") != "Strict" or "json" not in (content_type or "application/json"):
        return []
    return duplicate_fields(body)


def duplicate_fields(body: bytes) -> list[str]:
    """The upstream-style paths (`spec.containers[0].name`) of every key a JSON document repeats."""
    repeated: dict[int, list[str]] = {}

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        again: list[str] = []
        for key, value in pairs:
            if key in obj and key not in again:
                again.append(key)
            obj[key] = value
        if again:
            repeated[id(obj)] = again
        return obj

    try:
        tree = json.loads(body, object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):
        return []  # the decoder proper reports what is wrong with the body
    if not repeated:
        return []
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", tree)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            found += [f"{path}.{key}" if path else key for key in repeated.get(id(node), [])]
            stack += [(f"{path}.{key}" if path else key, value) for key, value in reversed(node.items())]
        elif isinstance(node, list):
            stack += [(f"{path}[{i}]", value) for i, value in reversed(list(enumerate(node)))]
    return found
