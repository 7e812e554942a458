"""The REST verbs for every served resource, behind one route: parse the path, then get/list/watch/write.

Routing is done here rather than with one framework route per resource and verb: the URL shapes are the same
for every resource (`/api/v1/namespaces/{ns}/{plural}/{name}/{sub}`, `/apis/{group}/{version}/...`), and one
parser keeps the hot GET path short.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from tinykube.api import errors
from tinykube.api.conversion import Converted, converter
from tinykube.api.patch import APPLY_PATCH, CUSTOM_PATCH_TYPES, PATCH_TYPES, apply_patch, unsupported_patch_type
from tinykube.api.resources import BINDING, EVICTION, SCALE, Catalog, ResourceInfo, stored_of
from tinykube.apiserver import listing
from tinykube.apiserver.auth.identity import UserInfo, user_of
from tinykube.apiserver.connect.podconnect import PodConnect
from tinykube.apiserver.connect.podlogs import PodLogs
from tinykube.apiserver.http.limits import yaml_duplicate_keys
from tinykube.apiserver.http.negotiation import (
    MAX_BODY,
    Rendering,
    check_custom_accept,
    decode_object,
    decode_options,
    delete_dry_run,
    partial_metadata,
    rendering,
)
from tinykube.apiserver.kinds.core.binding import bind
from tinykube.apiserver.kinds.core.eviction import evict
from tinykube.apiserver.kinds.printers import table
from tinykube.apiserver.metrics import RESOURCE_KEY
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest
from tinykube.apiserver.registry.generic import INTERNAL_MANAGER
from tinykube.apiserver.registry.scale import to_scale, update_scale
from tinykube.apiserver.schema import fieldmanager
from tinykube.apiserver.schema.fieldvalidation import duplicate_keys, field_check
from tinykube.apiserver.storage import consistency
from tinykube.apiserver.watch import watch_response

if TYPE_CHECKING:  # answered.py renders with this module's json_response
    from tinykube.apiserver.answered import Answered

JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Target:
    resource: ResourceInfo
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    converted: Converted | None = None  # a view of another version's objects (`ResourceInfo.view_of`)

    def registry_request(
        self, dry_run: bool = False, user: UserInfo | None = None, manager: str = INTERNAL_MANAGER
    ) -> RegistryRequest:
        return RegistryRequest(
            stored_of(self.resource), self.namespace, self.name, self.subresource, dry_run, user, manager
        )

    def out(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as this request's version serves it."""
        return self.converted.out(stored) if self.converted else stored

    def into(self, served: dict[str, Any]) -> dict[str, Any]:
        return self.converted.into(served) if self.converted else served


def parse_path(path: str, catalog: Catalog) -> Target:
    """`/api/v1/...` or `/apis/<group>/<version>/...` into the resource, namespace, name and subresource."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise errors.resource_not_found()
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and catalog.by_path(group, version, rest[2]) is not None:
        namespace, rest = rest[1], rest[2:]
    resource = catalog.by_path(group, version, rest[0])
    if resource is None or len(rest) > 3 or (namespace and not resource.namespaced):
        raise errors.resource_not_found()
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in resource.subresources:
        raise errors.resource_not_found()
    return Target(resource, namespace, name, subresource, converter(resource))


def json_response(body: Any, status: int = 200) -> Response:
    """An object, list, Table or Status as kube-apiserver writes one: with Go's `json.Encoder`, whose output ends in
    a newline (clients that join several error bodies in one message rely on it). `body` is a value to encode or
    an encoded document (ending in a newline already or not)."""
    if isinstance(body, bytes):
        raw = body if body.endswith(b"\n") else body + b"\n"
    else:
        raw = orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE)
    return Response(raw, status_code=status, media_type=JSON)


def raw_json_response(body: Any) -> Response:
    """A document that is no API object (`/version`), as upstream's `WriteRawJSON` writes it: indented, with no
    newline at the end."""
    return Response(orjson.dumps(body, option=orjson.OPT_INDENT_2), media_type=JSON)


def _dry_run(request: Request) -> bool:
    values = request.query_params.getlist("dryRun")
    for value in values:
        if value != "All":
            raise errors.BadRequest(f'unsupported dry run option "{value}": only "All" is supported')
    return bool(values)


def _strict_yaml(request: Request, body: bytes) -> list[str]:
    """An apply body's duplicate keys: refused under `fieldValidation=Strict`, a warning under Warn (the default),
    in upstream's words."""
    mode = request.query_params.get("fieldValidation") or "Warn"
    if mode == "Ignore":
        return []
    duplicates = yaml_duplicate_keys(body)
    if not duplicates:
        return []
    text = "error converting YAML to JSON: yaml: unmarshal errors:\n  " + "\n  ".join(duplicates)
    if mode == "Strict":
        raise errors.BadRequest("error strict decoding YAML: " + text)
    return [text]


def _legacy_bindings(path: str) -> str | None:
    """The namespace of `/api/v1/namespaces/{ns}/bindings`, upstream's older form of `pods/{name}/binding`."""
    parts = [p for p in path.split("/") if p]
    if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "bindings":
        return parts[3]
    return None


# upstream's errNotAcceptable, for an `as=` form the storage cannot give
NOT_ACCEPTABLE = (
    "only the following media types are accepted: application/json, application/yaml, "
    "application/vnd.kubernetes.protobuf"
)


def _created() -> Response:
    """What upstream answers a Binding or an Eviction with: a Status, not the object, its code the create's 201."""
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201)


def _not_allowed() -> errors.MethodNotAllowed:
    return errors.MethodNotAllowed("the server does not allow this method on the requested resource")


class ResourceHandler:
    """Starlette endpoint for every resource URL."""

    def __init__(self, registry: Registry, logs: PodLogs, answered: Answered | None = None) -> None:
        self.registry = registry
        self.logs = logs
        self.answered = answered  # the resources answered per request (reviews, componentstatuses, tokens)
        self.connect = PodConnect(registry)  # exec, attach, portforward

    async def __call__(self, request: Request) -> Response:
        legacy_namespace = _legacy_bindings(request.url.path)
        if legacy_namespace is not None:
            request.scope[RESOURCE_KEY] = "bindings"
            if request.method != "POST":
                raise _not_allowed()
            return await self._bind(request, Target(BINDING, legacy_namespace))
        target = parse_path(request.url.path, self.registry.catalog)
        request.scope[RESOURCE_KEY] = target.resource.plural
        if target.resource.custom is not None:
            return await self._custom(request, target)
        return await self._serve(request, target)

    async def _custom(self, request: Request, target: Target) -> Response:
        """A custom resource: an Accept admitting neither JSON nor YAML refused (its scale subresource is an
        autoscaling/v1 Scale, a built-in kind), refused creates while its CRD is terminating, and its version's
        deprecation warning on every answer, as upstream's CRD handler."""
        definition = target.resource.custom
        if target.subresource != "scale":
            check_custom_accept(request.headers.get("accept", ""))
        if definition.terminating and request.method == "POST" and not target.name:
            raise errors.forbidden_request(
                target.resource.plural,
                "",
                "create not allowed while custom resource definition is terminating",
                target.resource.group,
            )
        response = await self._serve(request, target)
        warning = definition.versions[target.resource.version].warning
        return _with_warnings(response, [warning]) if warning else response

    async def _serve(self, request: Request, target: Target) -> Response:
        if self.answered is not None and self.answered.handles(target.resource, target.subresource):
            if "get" not in target.resource.verbs:  # a create-only review has no Table nor metadata form
                view = rendering(request.headers.get("accept", ""), request.query_params.get("includeObject"))
                if view.table or view.metadata_only:
                    raise errors.NotAcceptable(NOT_ACCEPTABLE)
            return await self.answered(request, target.resource, target.namespace, target.name, target.subresource)
        method = request.method
        if target.subresource in ("exec", "attach", "portforward") and target.name:
            return await self.connect(request, target.namespace, target.name, target.subresource)
        if target.subresource in ("binding", "eviction", "log"):  # pods' connect-like subresources: one verb each
            if target.subresource == "binding" and method == "POST":
                return await self._bind(request, target)
            if target.subresource == "eviction" and method == "POST":
                return await self._evict(request, target)
            if target.subresource == "log" and method == "GET":
                return await self.logs.get(target.namespace, target.name, request.query_params)
            raise _not_allowed()
        if target.subresource == "scale":
            return await self._scale(request, target)
        if method == "GET":
            return await self._read(request, target)
        if target.resource.namespaced and not target.namespace:  # writes need a namespace in the URL
            raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
        if method == "POST" and not target.name:
            return await self._create(request, target)
        if method == "PUT" and target.name:
            return await self._update(request, target)
        if method == "PATCH" and target.name:
            return await self._patch(request, target)
        if method == "DELETE":
            if target.name:
                return await self._delete(request, target)
            return await self._delete_collection(request, target)
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")

    # ---- reads -----------------------------------------------------------------------------------------------

    async def _read(self, request: Request, target: Target) -> Response:
        params = request.query_params
        view = rendering(request.headers.get("accept", ""), params.get("includeObject"))
        if params.get("watch") in ("true", "1"):
            return await watch_response(
                request, self.registry, target.resource, target.namespace, view, target.name, target.converted
            )
        if not target.name:
            return await self._list(request, target, view)
        wanted = params.get("resourceVersion", "")
        await consistency.reach(self.registry.cache(target.resource), self.registry.revisions, wanted)
        cached = self.registry.get(target.registry_request())
        if view.table:
            return json_response(table(target.resource, [cached.full()], include_object=view.include_object))
        if view.metadata_only:
            return json_response(partial_metadata(cached.full()))
        converted = target.converted
        return json_response(
            target.out(cached.full()) if converted and not converted.unchanged(cached.obj) else cached.raw
        )

    async def _list(self, request: Request, target: Target, view: Rendering) -> Response:
        page = await listing.list_objects(self.registry, target.resource, target.namespace, request.query_params)
        if view.table:
            return json_response(
                table(
                    target.resource,
                    [o.full() for o in page.items],
                    include_object=view.include_object,
                    resource_version=str(page.revision),
                    continue_token=page.continue_token,
                    remaining=page.remaining,
                )
            )
        if view.metadata_only:
            body = listing.list_body(
                "PartialObjectMetadataList",
                "meta.k8s.io/v1",
                page,
                [orjson.dumps(partial_metadata(o.full())) for o in page.items],
            )
            return json_response(body)
        converted = target.converted
        items = [
            orjson.dumps(converted.out(o.full())) if converted and not converted.unchanged(o.obj) else o.raw
            for o in page.items
        ]
        items = listing.list_items(target.resource, items)
        return json_response(listing.list_body(target.resource.list_kind, target.resource.api_version, page, items))

    # ---- writes ----------------------------------------------------------------------------------------------

    async def _body(self, request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_BODY:
            raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY}")
        return await request.body()

    async def _create(self, request: Request, target: Target) -> Response:
        body, content_type = await self._body(request), request.headers.get("content-type", JSON)
        obj = decode_object(body, content_type, target.resource)
        duplicates = duplicate_keys(request, body, content_type)
        self._check_namespace(obj, target)
        warnings = await field_check(request, target.resource, duplicates)(obj)
        req = target.registry_request(_dry_run(request), user_of(request.scope), _manager(request, "CreateOptions"))
        created = await self.registry.create(req, target.into(obj))
        return _with_warnings(json_response(target.out(created), 201), warnings)

    async def _update(self, request: Request, target: Target) -> Response:
        body, content_type = await self._body(request), request.headers.get("content-type", JSON)
        obj = decode_object(body, content_type, target.resource)
        duplicates = duplicate_keys(request, body, content_type)
        self._check_namespace(obj, target)
        warnings = await field_check(request, target.resource, duplicates)(obj)
        user = user_of(request.scope)  # RBAC's escalation check sees who writes (auth/rbac_escalation.py)
        req = target.registry_request(_dry_run(request), user, _manager(request, "UpdateOptions"))
        updated, created = await self.registry.update(req, target.into(obj))
        return _with_warnings(json_response(target.out(updated), 201 if created else 200), warnings)

    async def _patch(self, request: Request, target: Target) -> Response:
        content_type = _patch_type(request, target.resource)
        body = await self._body(request)
        manager, force = _patch_options(request, content_type)
        req = target.registry_request(_dry_run(request), user_of(request.scope), manager)
        if content_type == APPLY_PATCH:
            return await self._apply(request, target, req, body, force)
        check = field_check(request, target.resource)
        warnings: list[str] = []

        async def check_patched(obj: dict[str, Any]) -> None:
            warnings[:] = await check(obj)

        patched = await self.registry.patch(req, body, content_type, check=check_patched, view=target.converted)
        return _with_warnings(json_response(target.out(patched)), warnings)

    async def _apply(
        self, request: Request, target: Target, req: RegistryRequest, body: bytes, force: bool
    ) -> Response:
        """Server-side apply: the body is the applier's whole configuration (YAML or JSON)."""
        field_check(request, target.resource)  # the parameter itself is checked; the schema refuses unknown fields
        config = fieldmanager.decode_config(body)
        warnings = _strict_yaml(request, body)
        applied, created = await self.registry.apply(
            req, config, force=force, view=target.converted, served=target.resource
        )
        return _with_warnings(json_response(target.out(applied), 201 if created else 200), warnings)

    async def _delete(self, request: Request, target: Target) -> Response:
        options = decode_options(
            await self._body(request), request.headers.get("content-type", JSON), request.query_params
        )
        req = target.registry_request(_dry_run(request) or delete_dry_run(options))
        obj, gone = await self.registry.delete(req, options)
        strategy = self.registry.strategies[target.resource.key]
        warnings = strategy.delete_warnings(options)
        if not gone or strategy.return_deleted_object:
            return _with_warnings(json_response(target.out(obj)), warnings)
        return _with_warnings(json_response(_success_status(target, obj)), warnings)

    async def _delete_collection(self, request: Request, target: Target) -> Response:
        options = decode_options(
            await self._body(request), request.headers.get("content-type", JSON), request.query_params
        )
        dry_run = _dry_run(request) or delete_dry_run(options)
        page = await listing.list_objects(self.registry, target.resource, target.namespace, request.query_params)
        deleted = []
        for item in page.items:
            meta = item.obj["metadata"]
            one = Target(target.resource, meta.get("namespace", ""), meta["name"])
            try:
                obj, _ = await self.registry.delete(one.registry_request(dry_run), options)
            except errors.NotFound:
                continue
            deleted.append(orjson.dumps(target.out(obj)))
        page = listing.Page(page.items, page.revision, "", None)
        deleted = listing.list_items(target.resource, deleted)
        body = listing.list_body(target.resource.list_kind, target.resource.api_version, page, deleted)
        warnings = self.registry.strategies[target.resource.key].delete_warnings(options)
        return _with_warnings(json_response(body), warnings)

    async def _bind(self, request: Request, target: Target) -> Response:
        """POST of a Binding, to `pods/{name}/binding` or (without a name in the URL) to `bindings`."""
        binding = decode_object(await self._body(request), request.headers.get("content-type", JSON), BINDING)
        self._check_namespace(binding, target)
        name = target.name if target.resource is not BINDING else binding["metadata"].get("name", "")
        await bind(self.registry, target.namespace, name, binding, _dry_run(request))
        return _created()

    async def _evict(self, request: Request, target: Target) -> Response:
        """POST of a policy/v1 Eviction to `pods/{name}/eviction` (what kubectl 1.32 sends; v1beta1 is refused)."""
        eviction = decode_object(await self._body(request), request.headers.get("content-type", JSON), EVICTION)
        self._check_namespace(eviction, target)
        await evict(self.registry, target.namespace, target.name, eviction, _dry_run(request))
        return _created()

    async def _scale(self, request: Request, target: Target) -> Response:
        """`deployments/{name}/scale`, `replicasets/{name}/scale`: the parent's replicas as an autoscaling/v1 Scale."""
        custom = target.resource.custom.versions[target.resource.version].scale if target.resource.custom else None
        if request.method == "GET":
            scale = to_scale(self.registry.get(target.registry_request()).obj, custom)
            view = rendering(request.headers.get("accept", ""), request.query_params.get("includeObject"))
            return json_response(table(SCALE, [scale], include_object=view.include_object) if view.table else scale)
        check = field_check(request, SCALE)
        warnings: list[str] = []
        content_type = request.headers.get("content-type", JSON)
        body = await self._body(request)

        async def wanted(current: dict[str, Any]) -> dict[str, Any]:
            if request.method == "PUT":
                scale = decode_object(body, content_type, SCALE)
                self._check_namespace(scale, target)
            else:
                scale = apply_patch(current, body, content_type, kind=SCALE.kind)
            warnings[:] = await check(scale)
            return scale

        if request.method not in ("PUT", "PATCH"):
            raise _not_allowed()
        force = False
        if request.method == "PATCH":
            patch_type = _patch_type(request, target.resource)
            manager, force = _patch_options(request, patch_type)
        else:
            patch_type, manager = "", _manager(request, "UpdateOptions")
        req = target.registry_request(_dry_run(request), manager=manager)
        if patch_type == APPLY_PATCH:
            return await self._apply_scale(req, body, force)
        scale = await update_scale(self.registry, req, wanted, patch=request.method == "PATCH", custom=custom)
        return _with_warnings(json_response(scale), warnings)

    async def _apply_scale(self, req: RegistryRequest, body: bytes, force: bool) -> Response:
        """An applied Scale is an apply of the parent's `spec.replicas`, recorded as through `scale` (upstream keeps
        the Scale's entries in the parent's managedFields, its paths mapped onto the parent's)."""
        config = fieldmanager.scale_config(fieldmanager.decode_config(body), req.resource, req.name)
        parent = dataclasses.replace(req, subresource="", recorded_as="scale")
        applied, _ = await self.registry.apply(parent, config, force=force, create=False)
        return json_response(to_scale(applied))

    @staticmethod
    def _check_namespace(obj: dict[str, Any], target: Target) -> None:
        namespace = obj["metadata"].get("namespace")
        if target.resource.namespaced and namespace and namespace != target.namespace:
            raise errors.BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )


def _patch_type(request: Request, resource: ResourceInfo) -> str:
    """The patch type of a PATCH's Content-Type (parameters dropped), refused with 415 unless upstream takes it for
    the resource."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    accepted = CUSTOM_PATCH_TYPES if resource.custom is not None else PATCH_TYPES
    if content_type not in accepted:
        raise unsupported_patch_type(accepted)
    return content_type


def _options_error(kind: str, found: list[errors.FieldError]) -> errors.Invalid:
    """upstream's 422 for invalid CreateOptions/UpdateOptions/PatchOptions: `PatchOptions.meta.k8s.io "" is ..."`."""
    return errors.invalid_object(kind, "", found, "meta.k8s.io")


def _manager(request: Request, options: str, found: list[errors.FieldError] | None = None) -> str:
    """The write's field manager: `?fieldManager=`, else the User-Agent's product (`kubectl/v1.32.0 (...)` ->
    `kubectl`), as upstream."""
    given = request.query_params.get("fieldManager", "")
    found = (found or []) + fieldmanager.validate_manager(given, "fieldManager")
    if found:
        raise _options_error(options, found)
    return given or fieldmanager.manager_from_user_agent(request.headers.get("user-agent", ""))


def _patch_options(request: Request, content_type: str) -> tuple[str, bool]:
    """PatchOptions as upstream validates them: apply needs a fieldManager, and only apply may be forced."""
    params = request.query_params
    force = params.get("force")
    found: list[errors.FieldError] = []
    if content_type != APPLY_PATCH:
        if force is not None:
            found.append(errors.forbidden("force", "may not be specified for non-apply patch"))
    elif not params.get("fieldManager"):
        found.append(errors.required("fieldManager", "is required for apply patch"))
    manager = _manager(request, "PatchOptions", found)
    # upstream's query decoding: "0" and "false" (any case) are false, any other value true
    return manager, force is not None and force != "0" and force.lower() != "false"


def _with_warnings(response: Response, warnings: list[str]) -> Response:
    for warning in warnings:
        quoted = warning.replace("\\", "\\\\").replace('"', '\\"')  # a quoted-string, as client-go parses it
        response.headers.append("Warning", _header_value(f'299 - "{quoted}"'))
    return response


def _header_value(text: str) -> str:
    """A header value as Go's net/http writes one: the text's UTF-8 bytes (a client's unknown field may be named in
    any script), CR and LF as spaces; so are the other control characters, which uvicorn refuses to send. (Starlette
    sends a str's code points as bytes: latin-1.)"""
    return _CONTROL.sub(" ", text).encode("utf-8", "replace").decode("latin-1")


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f]")


def _success_status(target: Target, obj: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"name": target.name}
    if target.resource.group:
        details["group"] = target.resource.group
    details["kind"] = target.resource.plural
    details["uid"] = obj["metadata"].get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
