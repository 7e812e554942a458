"""The route of resource requests (`/api/v1/...`, `/apis/<group>/<version>/...`), nearly every request the
apiserver serves, found by a look at the path instead of Starlette trying each of some thirty route patterns in
turn. It goes first and matches only what no earlier route would: discovery paths and proxy paths fall through
to the ordinary routes, whose generic `/api/{path:path}` routes stay as they were behind it."""

from __future__ import annotations

from typing import Any

from starlette.routing import Match, Route
from starlette.types import Scope

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


def is_discovery(path: str) -> bool:
    """`/api`, `/api/v1`, `/apis`, `/apis/<group>` and `/apis/<group>/<version>`, each with or without a `/`."""
    if path.startswith("/apis"):
        rest, segments = path[len("/apis") :], 2
    elif path.startswith("/api"):
        rest, segments = path[len("/api") :], 1
    else:
        return False
    if rest in ("", "/"):
        return True
    parts = rest[1:].removesuffix("/").split("/")
    return rest.startswith("/") and len(parts) <= segments and all(parts) and (segments == 2 or parts == ["v1"])


class ResourceRoute(Route):
    """`/api/{path:path}` and `/apis/{path:path}` in one route, matched without a regular expression."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or scope["method"] not in METHODS or scope.get("root_path"):
            return Match.NONE, {}
        path: str = scope["path"]
        if not path.startswith(("/api/", "/apis/")) or "/proxy" in path or is_discovery(path):
            return Match.NONE, {}
        params: dict[str, Any] = {**scope.get("path_params", {}), "path": path.split("/", 2)[2]}
        return Match.FULL, {"endpoint": self.endpoint, "path_params": params}
