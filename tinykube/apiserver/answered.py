"""The resources answered per request rather than stored: the six reviews (create only), componentstatuses and the
`metrics.k8s.io` PodMetrics and NodeMetrics (read only) and the `serviceaccounts/{name}/token` subresource. This is
their HTTP side — verbs, bodies, rendering — over the HTTP-free modules that compute the answers (`reviews`,
`componentstatus`, `metricsserver`, `tokenrequest`).

Verbs a resource does not serve are refused as upstream's router refuses them: 405 where upstream registers the
path for another verb (a review's collection, `token` of a ServiceAccount), 404 where it registers no such path (a
review's named URL, a LocalSubjectAccessReview outside a namespace).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tinykube.api import errors
from tinykube.api.resources import TOKEN_REQUEST, ResourceInfo
from tinykube.apiserver.auth.authentication import TokenAuthenticator
from tinykube.apiserver.auth.authorizer import Authorizer
from tinykube.apiserver.auth.identity import user_of
from tinykube.apiserver.auth.reviews import REVIEWS, Context
from tinykube.apiserver.auth.satokens import ServiceAccountTokens
from tinykube.apiserver.auth.tokenrequest import create_token
from tinykube.apiserver.componentstatus import DEPRECATION, ComponentStatuses
from tinykube.apiserver.connect.metricsserver import MetricsServer
from tinykube.apiserver.handlers import json_response
from tinykube.apiserver.http.negotiation import MAX_BODY, decode_object, partial_metadata, rendering
from tinykube.apiserver.kinds.printers import table
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.schema.fieldvalidation import body_source, check_types

JSON = "application/json"


def _not_allowed() -> errors.MethodNotAllowed:
    return errors.MethodNotAllowed("the server does not allow this method on the requested resource")


class Answered:
    def __init__(
        self,
        registry: Registry,
        *,
        authorizer: Authorizer,
        authenticator: TokenAuthenticator,
        tokens: ServiceAccountTokens,
        components: ComponentStatuses,
        resource_metrics: MetricsServer,
    ) -> None:
        self.registry = registry
        self.authorizer = authorizer
        self.authenticator = authenticator
        self.tokens = tokens
        self.components = components
        self.resource_metrics = resource_metrics

    @staticmethod
    def handles(resource: ResourceInfo, subresource: str) -> bool:
        """The token subresource, and the resources that are neither stored nor a view (the reviews, cs)."""
        return subresource == "token" or not (resource.stored or resource.view_of)

    async def __call__(
        self, request: Request, resource: ResourceInfo, namespace: str, name: str, subresource: str
    ) -> Response:
        if subresource == "token":
            if request.method != "POST":
                raise _not_allowed()
            req = await self._decode(request, TOKEN_REQUEST)
            return json_response(create_token(self.registry, self.tokens, namespace, name, req), 201)
        if resource.plural == "componentstatuses":
            return await self._component_statuses(request, resource, name)
        if resource.group == "metrics.k8s.io":
            return await self._resource_metrics(request, resource, namespace, name)
        if name or (resource.namespaced and not namespace):
            raise errors.resource_not_found()
        if request.method != "POST":
            raise _not_allowed()
        review = await self._decode(request, resource)
        if not resource.namespaced:
            review["metadata"].pop("namespace", None)  # cleared for cluster-scoped kinds, as upstream's create
        elif review["metadata"].get("namespace") not in (None, "", namespace):
            raise errors.BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        return json_response(REVIEWS[resource.plural](review, self._context(request, namespace)), 201)

    def _context(self, request: Request, namespace: str) -> Context:
        return Context(
            user_of(request.scope),
            self.authorizer,
            self.authenticator.authenticate,
            self.authenticator.api_audiences,
            namespace,
        )

    @staticmethod
    async def _decode(request: Request, resource: ResourceInfo) -> dict[str, Any]:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_BODY:
            raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY}")
        obj = decode_object(await request.body(), request.headers.get("content-type", JSON), resource)
        source = body_source(request)
        if source is not None:
            await check_types(resource, obj, source)
        return obj

    async def _resource_metrics(self, request: Request, resource: ResourceInfo, namespace: str, name: str) -> Response:
        if request.method != "GET":
            raise _not_allowed()
        params = request.query_params
        if params.get("watch") in ("true", "1"):
            raise errors.MethodNotAllowed(f'watch is not supported on resources of kind "{resource.plural}"')
        body = await self.resource_metrics.answer(resource, namespace, name, dict(params))
        view = rendering(request.headers.get("accept", ""), params.get("includeObject"))
        if view.table:
            body = table(resource, body["items"] if not name else [body], include_object=view.include_object)
        elif view.metadata_only:
            items = [partial_metadata(i) for i in ([body] if name else body["items"])]
            body = items[0] if name else {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                          "metadata": {}, "items": items}  # fmt: skip
        return json_response(body)

    async def _component_statuses(self, request: Request, resource: ResourceInfo, name: str) -> Response:
        if request.method != "GET":
            raise _not_allowed()
        params = request.query_params
        if params.get("watch") in ("true", "1"):
            raise errors.MethodNotAllowed('watch is not supported on resources of kind "componentstatuses"')
        view = rendering(request.headers.get("accept", ""), params.get("includeObject"))
        if name:
            found = await self.components.get(name)
            body: Any = found
            if view.table:
                body = table(resource, [found], include_object=view.include_object)
            elif view.metadata_only:
                body = partial_metadata(found)
        else:
            items = await self.components.list()
            body = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
            if view.table:
                body = table(resource, items, include_object=view.include_object)
        response = json_response(body)
        response.headers.append("Warning", f'299 - "{DEPRECATION}"')
        return response
