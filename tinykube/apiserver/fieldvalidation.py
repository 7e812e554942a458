"""`fieldValidation=Strict|Warn|Ignore`: unknown fields are an error, a warning, or silently kept.

kubectl sends `Strict` by default once the OpenAPI document says the server supports it, so an unknown field in a
manifest is reported exactly as a real cluster reports it. The schema walk lives in `openapi`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver import openapi

MODES = ("Ignore", "Warn", "Strict")


_schemas_loaded = False


async def _unknown_fields(resource: ResourceInfo, obj: dict[str, Any]) -> list[str]:
    """The first call builds the schemas (~0.5 s): do it off the event loop so other requests keep flowing."""
    global _schemas_loaded
    if not _schemas_loaded:
        found = await asyncio.to_thread(openapi.unknown_fields, resource.api_version, resource.kind, obj)
        _schemas_loaded = True
        return found
    return openapi.unknown_fields(resource.api_version, resource.kind, obj)


FieldCheck = Callable[[dict[str, Any]], Awaitable[list[str]]]
_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def field_check(request: Request, resource: ResourceInfo) -> FieldCheck:
    """The request's field validation as a check of a (decoded or patched) object; it prunes in place."""
    mode = request.query_params.get("fieldValidation") or "Warn"
    if mode not in MODES:
        raise errors.BadRequest(
            f"fieldValidation parameter unsupported: {mode}. Supported values are: Ignore, Warn, Strict"
        )

    async def check(obj: dict[str, Any]) -> list[str]:
        """Raise for Strict; otherwise drop unknown fields (as upstream's decoder does) and warn for Warn."""
        unknown = await _unknown_fields(resource, obj)
        if unknown and mode == "Strict":
            raise errors.BadRequest("strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in unknown))
        for path in unknown:
            _prune(obj, path)
        return [f'unknown field "{f}"' for f in unknown] if mode == "Warn" else []

    return check


def _prune(obj: Any, path: str) -> None:
    """Remove the field at an upstream-style path such as `spec.ports[0].bogus`."""
    steps: list[str | int] = [
        name if name else (int(index) if index.isdigit() else index) for name, index in _PATH_TOKEN.findall(path)
    ]
    node = obj
    for step in steps[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(node, dict):
        node.pop(steps[-1], None)
