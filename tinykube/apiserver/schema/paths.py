"""The paths and operations of the OpenAPI documents, in a neutral form that `render` turns into Swagger 2.0 or
OpenAPI 3.0: for each served resource its collection, item, all-namespaces and subresource paths, with upstream's
operation ids, tags, query parameters (and their descriptions) and responses; and the discovery GETs (`/api/`,
`/apis/`, `/apis/<group>/`, `/api/v1/`) that upstream's documents also carry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tinykube.api.resources import BINDING, SCALE, TOKEN_REQUEST, ResourceInfo
from tinykube.apiserver.schema.definitions import (
    DELETE_OPTIONS,
    META,
    PATCH,
    RESOURCES,
    STATUS,
    group_version_kind,
    group_versions,
    served_definitions,
)

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)

PARAMS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": (
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement '
        "bookmarks may ignore this flag and bookmarks are sent at the server's discretion.",
    ),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server. Since this value is "
        "server defined, clients may only use the continue value from a previous query result with identical "
        "query parameters (except for the value of continue).",
    ),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized "
        "dryRun directive will result in an error response and no further processing of the request. Valid "
        "values are: - All: all dry run stages will be processed",
    ),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes. The value "
        "must be less than or 128 characters long, and only contain printable characters, as defined by "
        "https://golang.org/pkg/unicode/#IsPrint.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
        "containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown "
        "fields that are silently dropped from the object, and will ignore all but the last duplicate field "
        "that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a "
        "warning via the standard warning response header for each unknown field that is dropped from the "
        "object, and for each duplicate field that is encountered. The request will still succeed if there "
        "are no other errors, and will only persist the last of any duplicate fields. This is the default in "
        "v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be "
        "dropped from the object, or if any duplicate fields are present. The error returned from the server "
        "will contain all unknown and duplicate fields encountered.",
    ),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by '
        "other people. Force flag must be unset for non-apply patch requests.",
    ),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted. Value must be non-negative integer. "
        "The value zero indicates delete immediately. If this value is nil, the default grace period for the "
        "specified type will be used. Defaults to a per object value if not specified. zero means delete "
        "immediately.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow "
        "fails with a corrupt object error.",
    ),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    "limit": (
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items exist, the server "
        "will set the `continue` field on the list metadata to a value that can be used with the same "
        "initial query to retrieve the next set of results.",
    ),
    "name": ("string", "name of the {kind}"),
    "namespace": ("string", "object name and auth scope, such as for teams and projects"),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the "
        "dependent objects be orphaned.",
    ),
    "pretty": (
        "string",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a "
        "browser or command-line HTTP tool (curl and wget).",
    ),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan' - orphan the "
        "dependents; 'Background' - allow the garbage collector to delete the dependents in the background; "
        "'Foreground' - a cascading policy that deletes all dependents in the foreground.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. Defaults to unset",
    ),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will "
        "begin with synthetic events to produce the current state of objects in the collection.",
    ),
    "timeoutSeconds": (
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity "
        "or inactivity.",
    ),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove "
        "notifications. Specify resourceVersion.",
    ),
}


@dataclass(frozen=True, slots=True)
class Op:
    method: str
    action: str
    operation_id: str
    description: str
    query: tuple[str, ...] = ()
    body: str | None = None  # definition name of the request body
    patch: bool = False
    patch_types: tuple[str, ...] = ()  # what a PATCH takes, where not every type (custom resources: no strategic)
    responses: tuple[tuple[str, str, str | None], ...] = ()  # (code, description, definition name)
    gvk: dict[str, str] | None = None
    tag: str = ""


@dataclass(frozen=True, slots=True)
class PathItem:
    path: str
    params: tuple[str, ...]  # path-level parameters: name, namespace, pretty
    ops: tuple[Op, ...]
    kind: str = ""  # for the `name` parameter's description


def _ok(definition: str, *extra: str) -> tuple[tuple[str, str, str | None], ...]:
    described = {"200": "OK", "201": "Created", "202": "Accepted"}
    codes = ("200", *extra)
    return (*((c, described[c], definition) for c in codes), ("401", "Unauthorized", None))


def _gv_id(group: str, version: str) -> str:
    """Operation-id infix: ("", "v1") -> "CoreV1"; ("discovery.k8s.io", "v1") -> "DiscoveryV1"."""
    words = group.removesuffix(".k8s.io").split(".") if group else ["core"]
    return "".join(w.capitalize() for w in words) + version.capitalize()


def _gv_tag(group: str, version: str) -> str:
    ident = _gv_id(group, version)
    head = ident[: -len(version)]
    return f"{head[0].lower()}{head[1:]}_{version}"


def gv_prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def resource_paths(info: ResourceInfo, kind_def: str, list_def: str) -> Iterator[PathItem]:
    gv, kind, tag = _gv_id(info.group, info.version), info.kind, _gv_tag(info.group, info.version)
    gvk = group_version_kind(info, kind)
    scope = "Namespaced" if info.namespaced else ""
    base = gv_prefix(info.group, info.version)
    scoped = f"{base}/namespaces/{{namespace}}" if info.namespaced else base
    collection = f"{scoped}/{info.plural}"
    ns_params = ("namespace",) if info.namespaced else ()

    def op(method: str, action: str, verb: str, desc: str, suffix: str = "", **kw: Any) -> Op:
        op_id = f"{verb}{gv}{scope}{kind}{suffix}"
        return Op(method, action, op_id, desc, gvk=gvk, tag=tag, **kw)

    verbs = set(info.verbs)
    collection_ops = []
    if "list" in verbs:
        collection_ops.append(
            op(
                "get",
                "list",
                "list",
                f"list or watch objects of kind {kind}",
                query=_LIST_PARAMS,
                responses=_ok(list_def),
            )
        )
    if "create" in verbs:
        collection_ops.append(
            op(
                "post",
                "post",
                "create",
                f"create a {kind}",
                query=_WRITE_PARAMS,
                body=kind_def,
                responses=_ok(kind_def, "201", "202"),
            )
        )
    if "deletecollection" in verbs:
        collection_ops.append(
            Op(
                "delete",
                "deletecollection",
                f"delete{gv}Collection{scope}{kind}",
                f"delete collection of {kind}",
                query=_DELETE_PARAMS + _LIST_PARAMS,
                body=DELETE_OPTIONS,
                responses=_ok(STATUS),
                gvk=gvk,
                tag=tag,
            )
        )
    yield PathItem(collection, (*ns_params, "pretty"), tuple(collection_ops))
    if "get" not in verbs:  # the reviews: answered once, nothing to read back
        return
    read, replace, patch = _item_ops(op, kind_def, f"the specified {kind}")
    item_ops = [read] if verbs == {"get", "list"} else [read, replace, patch]
    if "delete" in verbs:
        delete = op(
            "delete",
            "delete",
            "delete",
            f"delete a {kind}",
            query=_DELETE_PARAMS,
            body=DELETE_OPTIONS,
            responses=_ok(STATUS, "202"),
        )
        item_ops.append(delete)
    yield PathItem(f"{collection}/{{name}}", ("name", *ns_params, "pretty"), tuple(item_ops), kind)
    if info.namespaced and "list" in verbs:
        yield PathItem(
            f"{base}/{info.plural}",
            ("pretty",),
            (
                Op(
                    "get",
                    "list",
                    f"list{gv}{kind}ForAllNamespaces",
                    f"list or watch objects of kind {kind}",
                    query=_LIST_PARAMS,
                    responses=_ok(list_def),
                    gvk=gvk,
                    tag=tag,
                ),
            ),
        )
    yield from _subresource_paths(info, collection, ns_params, op, kind_def)


def _subresource_paths(
    info: ResourceInfo, collection: str, ns_params: tuple[str, ...], op: Callable[..., Op], kind_def: str
) -> Iterator[PathItem]:
    kind = info.kind
    params = ("name", *ns_params, "pretty")
    for sub in ("status", "approval"):
        if sub in info.subresources:
            yield PathItem(
                f"{collection}/{{name}}/{sub}",
                params,
                _item_ops(op, kind_def, f"{sub} of the specified {kind}", sub.capitalize()),
                kind,
            )
    if "token" in info.subresources:
        token_def = served_definitions().kinds[(TOKEN_REQUEST.group_version, TOKEN_REQUEST.kind)]
        create = _create_op(op, token_def, f"token of a {kind}", "Token")
        yield PathItem(
            f"{collection}/{{name}}/token",
            params,
            (dataclasses.replace(create, gvk=group_version_kind(TOKEN_REQUEST, TOKEN_REQUEST.kind)),),
            kind,
        )
    if "scale" in info.subresources:
        scale_def = served_definitions().kinds[(SCALE.group_version, SCALE.kind)]
        ops = _item_ops(op, scale_def, f"scale of the specified {kind}", "Scale")
        scale_gvk = group_version_kind(
            SCALE, SCALE.kind
        )  # the operations take and return a Scale, not the parent's kind
        yield PathItem(
            f"{collection}/{{name}}/scale",
            params,
            tuple(dataclasses.replace(o, gvk=scale_gvk) for o in ops),
            kind,
        )
    if "finalize" in info.subresources:
        yield PathItem(
            f"{collection}/{{name}}/finalize",
            params,
            (_replace_op(op, kind_def, f"finalize of the specified {kind}", "Finalize"),),
            kind,
        )
    if "binding" in info.subresources:
        binding_def = served_definitions().kinds[(BINDING.group_version, BINDING.kind)]
        create = _create_op(op, binding_def, f"binding of a {kind}", "Binding")
        yield PathItem(
            f"{collection}/{{name}}/binding",
            params,
            (dataclasses.replace(create, gvk=group_version_kind(BINDING, BINDING.kind)),),
            kind,
        )


def _bindings_paths(group: str, version: str) -> Iterator[PathItem]:
    """Upstream's older, create-only `bindings` collection beside `pods/{name}/binding`."""
    if (group, version) != (BINDING.group, BINDING.version) or not any("binding" in r.subresources for r in RESOURCES):
        return
    binding_def = served_definitions().kinds[(BINDING.group_version, BINDING.kind)]
    gv, tag = _gv_id(group, version), _gv_tag(group, version)

    def op(method: str, action: str, verb: str, desc: str, suffix: str = "", **kw: Any) -> Op:
        return Op(
            method,
            action,
            f"{verb}{gv}Namespaced{BINDING.kind}{suffix}",
            desc,
            gvk=group_version_kind(BINDING, BINDING.kind),
            tag=tag,
            **kw,
        )

    create = _create_op(op, binding_def, f"a {BINDING.kind}")
    yield PathItem(
        f"{gv_prefix(group, version)}/namespaces/{{namespace}}/{BINDING.plural}", ("namespace", "pretty"), (create,)
    )


def _create_op(op: Callable[..., Op], kind_def: str, what: str, suffix: str = "") -> Op:
    return op(
        "post",
        "post",
        "create",
        f"create {what}",
        suffix,
        query=_WRITE_PARAMS,
        body=kind_def,
        responses=_ok(kind_def, "201", "202"),
    )


def _replace_op(op: Callable[..., Op], kind_def: str, what: str, suffix: str = "") -> Op:
    return op(
        "put",
        "put",
        "replace",
        f"replace {what}",
        suffix,
        query=_WRITE_PARAMS,
        body=kind_def,
        responses=_ok(kind_def, "201"),
    )


def _item_ops(op: Callable[..., Op], kind_def: str, what: str, suffix: str = "") -> tuple[Op, Op, Op]:
    """read, replace and patch of one object (`what` = "the specified Service") or of one of its subresources."""
    return (
        op("get", "get", "read", f"read {what}", suffix, responses=_ok(kind_def)),
        _replace_op(op, kind_def, what, suffix),
        op(
            "patch",
            "patch",
            "patch",
            f"partially update {what}",
            suffix,
            query=(*_WRITE_PARAMS, "force"),
            body=PATCH,
            patch=True,
            responses=_ok(kind_def, "201"),
        ),
    )


def discovery_paths(group: str, version: str) -> list[PathItem]:
    """The `/api/v1/` (`/apis/<group>/<version>/`) APIResourceList operation of a group-version document."""
    gv = _gv_id(group, version)
    return [
        PathItem(
            f"{gv_prefix(group, version)}/",
            (),
            (
                Op(
                    "get",
                    "",
                    f"get{gv}APIResources",
                    "get available resources",
                    responses=_ok(f"{META}.APIResourceList"),
                    tag=_gv_tag(group, version),
                ),
            ),
        )
    ]


def gv_paths(group: str, version: str) -> list[PathItem]:
    defs = served_definitions()
    items = discovery_paths(group, version)
    for info in RESOURCES:
        if (info.group, info.version) == (group, version):
            kind_def = defs.kinds[(info.group_version, info.kind)]
            list_def = defs.kinds.get((info.group_version, info.list_kind), "")
            items.extend(resource_paths(info, kind_def, list_def))
    items.extend(_bindings_paths(group, version))
    return items


def root_paths(doc_path: str) -> list[PathItem] | None:
    """`api`, `apis` and `apis/<group>` documents: the discovery GETs upstream publishes under those names."""
    if doc_path == "api":
        return [
            PathItem(
                "/api/",
                (),
                (
                    Op(
                        "get",
                        "",
                        "getCoreAPIVersions",
                        "get available API versions",
                        responses=_ok(f"{META}.APIVersions"),
                        tag="core",
                    ),
                ),
            )
        ]
    if doc_path == "apis":
        return [
            PathItem(
                "/apis/",
                (),
                (
                    Op(
                        "get",
                        "",
                        "getAPIVersions",
                        "get available API versions",
                        responses=_ok(f"{META}.APIGroupList"),
                        tag="apis",
                    ),
                ),
            )
        ]
    groups = {g for g, _ in group_versions() if g}
    group = doc_path.removeprefix("apis/")
    if doc_path.startswith("apis/") and group in groups:
        ident = _gv_id(group, "")
        return [
            PathItem(
                f"/apis/{group}/",
                (),
                (
                    Op(
                        "get",
                        "",
                        f"get{ident}APIGroup",
                        "get information of a group",
                        responses=_ok(f"{META}.APIGroup"),
                        tag=ident[0].lower() + ident[1:],
                    ),
                ),
            )
        ]
    return None


def doc_paths(doc_path: str) -> list[PathItem] | None:
    for group, version in group_versions():
        if doc_path == gv_prefix(group, version).lstrip("/"):
            return gv_paths(group, version)
    return root_paths(doc_path)


def path_roots(items: list[PathItem]) -> set[str]:
    roots: set[str] = set()
    for item in items:
        for op in item.ops:
            roots.update(d for _, _, d in op.responses if d)
            if op.body:
                roots.add(op.body)
    return roots
