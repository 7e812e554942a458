"""What a request asks for, read from its method and path alone (upstream's `RequestInfoFactory`): the verb, and for
a resource request the namespace, group, version, resource, subresource and name.

    GET    /api/v1/namespaces/ns/pods            → list pods in ns        (watch with ?watch=true or /watch/...)
    GET    /apis/apps/v1/namespaces/ns/deployments/web/scale → get deployments/scale "web"
    DELETE /api/v1/namespaces/ns/pods            → deletecollection
    POST   /api/v1/namespaces/ns/pods/web/exec   → create pods/exec "web"
    GET    /api/v1/namespaces/ns/services/web:80/proxy/x → get services/proxy "web:80"
    GET    /healthz                               → non-resource "get" of the path

A path that is not under /api or /apis, or too short to name a resource there (`/api`, `/api/v1`, `/apis/apps`),
is a non-resource request whose verb is the lower-cased method. The authorizer decides from this alone, before
any handler runs, as upstream's filter chain does.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_SPECIAL_VERBS = frozenset({"proxy", "watch"})  # /api/v1/watch/..., the legacy /api/v1/proxy/...
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # Go's strconv.ParseBool


@dataclass(frozen=True, slots=True)
class RequestInfo:
    verb: str
    resource_request: bool
    path: str
    namespace: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def _query(query_string: bytes | str) -> dict[str, str]:
    """`watch` and `fieldSelector`, the first value of each (as Go's url.Values.Get)."""
    text = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    found: dict[str, str] = {}
    if "watch" not in text and "fieldSelector" not in text:
        return found
    for key, value in parse_qsl(text, keep_blank_values=True):
        found.setdefault(key, value)  # the first value, as Go's url.Values.Get
    return found


def _exact_name(field_selector: str) -> str:
    """The name a field selector pins (`metadata.name=web`, `metadata.name==web`), as upstream's
    RequiresExactMatch; a name that is no valid path segment is ignored."""
    for term in field_selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not value.startswith("="):
                value = value.strip()
                if value and value not in (".", "..") and "/" not in value and "%" not in value:
                    return value
                return ""
    return ""


def resolve(method: str, path: str, query_string: bytes | str = b"") -> RequestInfo:
    """The request's attributes, as upstream's RequestInfoFactory.NewRequestInfo finds them."""
    non_resource = RequestInfo(method.lower(), False, path)
    stripped = path.strip("/")  # the ASGI path is percent-decoded already, as Go's URL.Path
    parts = stripped.split("/") if stripped else []
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            return non_resource  # upstream: an error ("unable to determine kind and namespace from url")
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        query = _query(query_string) if query_string else {}
        verb = "watch" if query.get("watch", "") in _TRUE else "list"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(verb, True, path, namespace, group, version, resource, subresource, name)
