"""`fieldValidation=Strict|Warn|Ignore`: unknown fields are an error, a warning, or silently kept.

kubectl sends `Strict` by default once the OpenAPI document says the server supports it, so an unknown field in a
manifest is reported exactly as a real cluster reports it. The schema walk lives in `openapi`.
"""

from __future__ import annotations

import asyncio
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


async def check_fields(request: Request, resource: ResourceInfo, obj: dict[str, Any]) -> list[str]:
    """Raise for Strict, return warnings for Warn (the default, as upstream), nothing for Ignore."""
    mode = request.query_params.get("fieldValidation") or "Warn"
    if mode not in MODES:
        raise errors.BadRequest(
            f"fieldValidation parameter unsupported: {mode}. Supported values are: Ignore, Warn, Strict"
        )
    if mode == "Ignore":
        return []
    unknown = await _unknown_fields(resource, obj)
    if not unknown:
        return []
    if mode == "Strict":
        raise errors.BadRequest("strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in unknown))
    return [f'unknown field "{f}"' for f in unknown]
