"""`POST .../serviceaccounts/{name}/token`: a TokenRequest answered with a signed token, as upstream's TokenREST.

Nothing is stored. The request names its ServiceAccount in the URL and may bind the token to a Pod, Secret or
Node of the same namespace; the objects are read from the watch caches, and the checks, defaults and messages are
upstream's (`pkg/registry/core/serviceaccount/storage/token.go`, `pkg/apis/authentication/validation`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.apiserver.auth.satokens import DEFAULT_EXPIRATION, MIN_EXPIRATION, Bound, ServiceAccountTokens
from tinykube.apiserver.registry import Registry, Request

MAX_EXPIRATION = 1 << 32
_BOUND_KINDS = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}

Object = dict[str, Any]


def _invalid(name: str, errs: list[errors.FieldError]) -> errors.Invalid:
    return errors.invalid_object("TokenRequest", name, errs, "authentication.k8s.io")


def _check_names(req: Object, namespace: str, name: str) -> None:
    meta = req["metadata"]
    if meta.get("name") and meta["name"] != name:
        detail = "must match the service account name if specified"
        raise _invalid(name, [errors.invalid("metadata.name", meta["name"], detail)])
    if meta.get("namespace") and meta["namespace"] != namespace:
        detail = "must match the service account namespace if specified"
        raise _invalid(name, [errors.invalid("metadata.namespace", meta["namespace"], detail)])


def _spec(req: Object, audiences: tuple[str, ...]) -> Object:
    """The spec with upstream's defaults: the apiserver's audiences, an hour."""
    spec: Object = req["spec"] if isinstance(req.get("spec"), dict) else {}
    wanted = spec.get("audiences") or list(audiences)
    expiration = spec.get("expirationSeconds")
    if expiration is None:
        expiration = DEFAULT_EXPIRATION
    if not isinstance(wanted, list) or not all(isinstance(a, str) for a in wanted):
        raise errors.BadRequest("spec.audiences must be a list of strings")
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        raise errors.BadRequest("spec.expirationSeconds must be an integer")
    ref = spec.get("boundObjectRef")
    if ref is not None and not isinstance(ref, dict):
        raise errors.BadRequest("spec.boundObjectRef must be an object")
    return {"audiences": wanted, "expirationSeconds": expiration, "boundObjectRef": ref}


def validation_errors(spec: Object) -> list[errors.FieldError]:
    expiration = spec["expirationSeconds"]
    if expiration < MIN_EXPIRATION:
        return [errors.invalid("spec.expirationSeconds", expiration, "may not specify a duration less than 10 minutes")]
    if expiration > MAX_EXPIRATION:
        detail = "may not specify a duration larger than 2^32 seconds"
        return [errors.invalid("spec.expirationSeconds", expiration, detail)]
    return []


def _bound(registry: Registry, namespace: str, sa_name: str, ref: Object | None) -> Bound:
    """The object a token is bound to, checked as upstream: it exists, its uid matches, a pod runs as the SA."""
    if ref is None:
        return Bound()
    kind, api_version, name = str(ref.get("kind", "")), str(ref.get("apiVersion", "")), str(ref.get("name", ""))
    group, _, version = api_version.rpartition("/")
    plural = _BOUND_KINDS.get(kind) if group == "" else None
    if plural is None:
        raise errors.BadRequest(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    resource = builtin("", "v1", plural)
    obj = registry.get(Request(resource, namespace if resource.namespaced else "", name)).obj
    if kind == "Pod":
        spec = obj.get("spec") or {}
        if spec.get("serviceAccountName") != sa_name:
            raise errors.BadRequest(
                f'cannot bind token for serviceaccount "{sa_name}" to pod running with different serviceaccount name.'
            )
        bound = Bound(pod=obj, node=_node_of(registry, spec.get("nodeName")))
    else:
        bound = Bound(secret=obj) if kind == "Secret" else Bound(node=obj)
    uid = obj["metadata"].get("uid", "")
    if ref.get("uid") and ref["uid"] != uid:
        reason = (
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
            "The object might have been deleted and then recreated"
        )
        raise errors.conflict(kind, name, "", reason)
    return bound


def _node_of(registry: Registry, node_name: Any) -> Object | None:
    """A pod's node for the token's information; a node that is gone still lends its name, as upstream's."""
    if not isinstance(node_name, str) or not node_name:
        return None
    cached = registry.cache(builtin("", "v1", "nodes")).get(node_name)
    return cached.obj if cached is not None else {"metadata": {"name": node_name}}


def _timestamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def create_token(registry: Registry, tokens: ServiceAccountTokens, namespace: str, name: str, req: Object) -> Object:
    """The TokenRequest answered: upstream's order of checks, then the token and its expiration."""
    _check_names(req, namespace, name)
    sa = registry.get(Request(builtin("", "v1", "serviceaccounts"), namespace, name)).obj
    spec = _spec(req, tokens.audiences)
    if errs := validation_errors(spec):
        raise _invalid("", errs)
    bound = _bound(registry, namespace, name, spec["boundObjectRef"])
    token, issued = tokens.issue(sa, bound, audiences=spec["audiences"], expiration=spec["expirationSeconds"])
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": _timestamp(issued)},
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": _timestamp(issued + spec["expirationSeconds"])},
    }
