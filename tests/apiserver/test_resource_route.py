"""The resource route matched by a look at the path chooses what Starlette's ordered routes chose before it: held
against a router with the apiserver's discovery, proxy and generic routes, for paths hypothesis makes up."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import Match, Route, Router

from tinykube.apiserver.http.resourceroute import ResourceRoute, is_discovery

DISCOVERY = ["/api", "/apis", "/apis/{group}", "/api/v1", "/apis/{group}/{version}"]
PROXY = [
    "/api/v1/namespaces/{namespace}/pods/{id}/proxy",
    "/api/v1/namespaces/{namespace}/services/{id}/proxy",
    "/api/v1/nodes/{id}/proxy",
]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


async def discovery_endpoint() -> None: ...


async def proxy_endpoint() -> None: ...


async def resource_endpoint() -> None: ...


def ordered_router() -> Router:
    """The routes as the apiserver adds them, in its order (apiserver/app.py), without the resource route."""
    routes = [Route(p, discovery_endpoint, methods=["GET"]) for p in DISCOVERY + [p + "/" for p in DISCOVERY]]
    routes += [Route(p, proxy_endpoint, methods=METHODS) for p in PROXY + [p + "/{path:path}" for p in PROXY]]
    routes += [Route(p, resource_endpoint, methods=METHODS) for p in ("/api/{path:path}", "/apis/{path:path}")]
    return Router(routes)


ROUTER = ordered_router()
FAST = ResourceRoute("/api/{path:path}", resource_endpoint, methods=METHODS)


def first_full_match(path: str, method: str) -> object | None:
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    for route in ROUTER.routes:
        match, child = route.matches(scope)
        if match == Match.FULL:
            return child["endpoint"]
        if match == Match.PARTIAL:
            return None  # a 405 of an earlier route: the resource route must not take it either
    return None


segment = st.sampled_from(["api", "apis", "v1", "apps", "namespaces", "ns", "pods", "p", "proxy", "nodes", "", "x"])


@given(st.lists(segment, max_size=7), st.booleans(), st.sampled_from([*METHODS, "OPTIONS"]))
def test_the_resource_route_takes_exactly_what_the_generic_routes_took(
    parts: list[str], trailing: bool, method: str
) -> None:
    path = "/" + "/".join(parts) + ("/" if trailing and parts else "")
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    match, child = FAST.matches(scope)
    if match == Match.FULL:
        assert first_full_match(path, method) is resource_endpoint
        assert child["path_params"]["path"] == path.split("/", 2)[2]


def test_discovery_paths_are_left_to_their_routes() -> None:
    for path in ["/api", "/api/", "/api/v1", "/api/v1/", "/apis", "/apis/", "/apis/apps", "/apis/apps/v1/"]:
        assert is_discovery(path), path
    for path in ["/api/v2", "/api/v1/pods", "/apis/apps/v1/deployments", "/apis//v1", "/apiserver"]:
        assert not is_discovery(path), path


def test_resource_paths_match_at_once() -> None:
    for path in ["/api/v1/pods", "/api/v1/namespaces/a/pods/b/status", "/apis/apps/v1/namespaces/a/deployments"]:
        match, child = FAST.matches({"type": "http", "path": path, "method": "PATCH", "root_path": ""})
        assert match == Match.FULL and child["endpoint"] is resource_endpoint
