"""The six review kinds: questions put to the authenticator and the authorizer, answered and never stored.

Each takes the decoded request object and returns it with its `status` filled in, validated first with
upstream's field paths and messages (`pkg/apis/authorization/validation`, the REST storages under
`pkg/registry/authentication` and `pkg/registry/authorization`). Invalid reviews name no kind in their error, as
upstream's do: the decoded internal object has lost its TypeMeta by the time it is validated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError
from tinykube.api.jsonshape import as_dict, strings
from tinykube.api.meta import now
from tinykube.apiserver.auth.authentication import TokenResult
from tinykube.apiserver.auth.authorizer import Attributes, Authorizer, Decision
from tinykube.apiserver.auth.identity import UserInfo

Object = dict[str, Any]
AUTHORIZATION = "authorization.k8s.io"


TokenAuthenticate = Callable[[str, tuple[str, ...]], TokenResult]


@dataclass(frozen=True, slots=True)
class Context:
    """What a review may consult: who asks, in which namespace (LocalSubjectAccessReview), and the two seams."""

    user: UserInfo
    authorizer: Authorizer
    authenticate: TokenAuthenticate
    api_audiences: tuple[str, ...]
    namespace: str = ""


def _with_empty_meta(review: Object) -> Object:
    """A review answered as upstream writes it: an unset creationTimestamp shows as null."""
    meta = {k: v for k, v in as_dict(review.get("metadata")).items() if v is not None}
    review["metadata"] = {**meta, "creationTimestamp": meta.get("creationTimestamp")}
    return review


def _meta_set(meta: Object, allowed: tuple[str, ...] = ()) -> bool:
    """Whether metadata carries anything besides `allowed` (null values are unset, as kubectl sends them)."""
    return any(v not in (None, "", {}, []) for k, v in meta.items() if k not in (*allowed, "managedFields"))


def _invalid(errs: list[FieldError], group: str = AUTHORIZATION) -> errors.Invalid:
    return errors.invalid_object("", "", errs, group)


# ---- validation ---------------------------------------------------------------------------------------------------


def _selector_errors(selector: Any, path: str) -> list[FieldError]:
    if selector is None:
        return []
    selector = as_dict(selector)
    raw, requirements = selector.get("rawSelector") or "", selector.get("requirements") or []
    errs: list[FieldError] = []
    if raw and requirements:
        errs.append(errors.invalid(f"{path}.rawSelector", raw, "may not specified at the same time as requirements"))
    if not raw and not requirements:
        detail = f"when {path} is specified, requirements or rawSelector is required"
        errs.append(errors.required(f"{path}.requirements", detail))
    return errs


def _resource_attributes_errors(attributes: Any) -> list[FieldError]:
    if attributes is None:
        return []
    path = "spec.resourceAttributes"
    attributes = as_dict(attributes)
    return _selector_errors(attributes.get("fieldSelector"), f"{path}.fieldSelector") + _selector_errors(
        attributes.get("labelSelector"), f"{path}.labelSelector"
    )


def _attributes_errors(spec: Object) -> list[FieldError]:
    """Exactly one of resourceAttributes and nonResourceAttributes."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errs: list[FieldError] = []
    if resource is not None and non_resource is not None:
        detail = "cannot be specified in combination with resourceAttributes"
        errs.append(errors.invalid("spec.nonResourceAttributes", non_resource, detail))
    if resource is None and non_resource is None:
        detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        errs.append(errors.invalid("spec.resourceAttributes", "null", detail))
    return errs


def subject_access_review_spec_errors(spec: Object) -> list[FieldError]:
    errs = _attributes_errors(spec)
    if not spec.get("user") and not spec.get("groups"):
        detail = "at least one of user or group must be specified"
        errs.append(errors.invalid("spec.user", spec.get("user") or "", detail))
    return errs + _resource_attributes_errors(spec.get("resourceAttributes"))


def self_subject_access_review_errors(review: Object) -> list[FieldError]:
    spec = as_dict(review.get("spec"))
    errs = _attributes_errors(spec) + _resource_attributes_errors(spec.get("resourceAttributes"))
    if _meta_set(as_dict(review.get("metadata"))):
        errs.append(errors.invalid("metadata", review["metadata"], "must be empty"))
    return errs


def subject_access_review_errors(review: Object) -> list[FieldError]:
    errs = subject_access_review_spec_errors(as_dict(review.get("spec")))
    if _meta_set(as_dict(review.get("metadata"))):
        errs.append(errors.invalid("metadata", review["metadata"], "must be empty"))
    return errs


def local_subject_access_review_errors(review: Object) -> list[FieldError]:
    spec, meta = as_dict(review.get("spec")), as_dict(review.get("metadata"))
    errs = subject_access_review_spec_errors(spec)
    if _meta_set(meta, ("namespace",)):
        errs.append(errors.invalid("metadata", meta, "must be empty except for namespace"))
    resource = spec.get("resourceAttributes")
    if resource is not None and as_dict(resource).get("namespace", "") != meta.get("namespace", ""):
        value = as_dict(resource).get("namespace", "")
        errs.append(errors.invalid("spec.resourceAttributes.namespace", value, "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        detail = "disallowed on this kind of request"
        errs.append(errors.invalid("spec.nonResourceAttributes", spec["nonResourceAttributes"], detail))
    return errs


# ---- answers ------------------------------------------------------------------------------------------------------


def _attributes(user: UserInfo, spec: Object) -> Attributes:
    resource = spec.get("resourceAttributes")
    if resource is None:
        non_resource = as_dict(spec.get("nonResourceAttributes"))
        return Attributes(user, str(non_resource.get("verb", "")), False, path=str(non_resource.get("path", "")))
    resource = as_dict(resource)
    return Attributes(
        user,
        str(resource.get("verb", "")),
        True,
        namespace=str(resource.get("namespace", "")),
        group=str(resource.get("group", "")),
        version=str(resource.get("version", "")),
        resource=str(resource.get("resource", "")),
        subresource=str(resource.get("subresource", "")),
        name=str(resource.get("name", "")),
    )


def _status(decision: Decision) -> Object:
    status: Object = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    if decision.evaluation_error:
        status["evaluationError"] = decision.evaluation_error
    return status


def _spec_user(spec: Object) -> UserInfo:
    extra: Mapping[str, tuple[str, ...]] = {k: tuple(strings(v)) for k, v in as_dict(spec.get("extra")).items()}
    return UserInfo(str(spec.get("user", "")), str(spec.get("uid", "")), tuple(strings(spec.get("groups"))), extra)


def subject_access_review(review: Object, ctx: Context) -> Object:
    if errs := subject_access_review_errors(review):
        raise _invalid(errs)
    spec = as_dict(review.get("spec"))
    review["status"] = _status(ctx.authorizer.authorize(_attributes(_spec_user(spec), spec)))
    return _with_empty_meta(review)


def local_subject_access_review(review: Object, ctx: Context) -> Object:
    meta = review.setdefault("metadata", {})
    if not meta.get("namespace"):
        meta["namespace"] = ctx.namespace  # the URL's, as upstream's create handler fills it in
    if errs := local_subject_access_review_errors(review):
        raise _invalid(errs)
    if meta["namespace"] != ctx.namespace:
        raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {ctx.namespace}")
    spec = as_dict(review.get("spec"))
    review["status"] = _status(ctx.authorizer.authorize(_attributes(_spec_user(spec), spec)))
    return _with_empty_meta(review)


def self_subject_access_review(review: Object, ctx: Context) -> Object:
    if errs := self_subject_access_review_errors(review):
        raise _invalid(errs)
    review["status"] = _status(ctx.authorizer.authorize(_attributes(ctx.user, as_dict(review.get("spec")))))
    return _with_empty_meta(review)


def self_subject_rules_review(review: Object, ctx: Context) -> Object:
    """Only the status comes back (upstream builds a new object), so the spec is empty."""
    namespace = as_dict(review.get("spec")).get("namespace")
    if not namespace:
        raise errors.BadRequest("no namespace on request")
    rules = ctx.authorizer.rules_for(ctx.user, str(namespace))
    status: Object = {
        "resourceRules": rules.resource_rules,
        "nonResourceRules": rules.non_resource_rules,
        "incomplete": rules.incomplete,
    }
    if rules.evaluation_error:
        status["evaluationError"] = rules.evaluation_error
    return {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": f"{AUTHORIZATION}/v1",
        "metadata": {"creationTimestamp": None},
        "spec": {},
        "status": status,
    }


def user_info(user: UserInfo) -> Object:
    """authentication.k8s.io/v1 UserInfo (every field omitted when empty)."""
    info: Object = {}
    if user.name:
        info["username"] = user.name
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra.items()}
    return info


def self_subject_review(review: Object, ctx: Context) -> Object:
    """`kubectl auth whoami`: the requester's attributes, stamped with the time of asking."""
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": now()},
        "status": {"userInfo": user_info(ctx.user)},
    }


def token_review(review: Object, ctx: Context) -> Object:
    """Authenticates the token in spec as a request bearing it would be, for the audiences asked (by default the
    apiserver's own)."""
    spec = as_dict(review.get("spec"))
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.BadRequest("token is required for TokenReview in authentication")
    audiences = tuple(strings(spec.get("audiences"))) or ctx.api_audiences
    result = ctx.authenticate(token, audiences)
    status: Object = {}
    if result.user is not None:
        if not set(audiences) & set(result.audiences):
            raise errors.internal_error("error validating audiences")
        status["authenticated"] = True
    status["user"] = user_info(result.user) if result.user is not None else {}
    if result.user is not None:
        status["audiences"] = list(result.audiences)
    if result.error:
        status["error"] = result.error
    review["status"] = status
    return _with_empty_meta(review)


Review = Callable[[Object, Context], Object]
REVIEWS: dict[str, Review] = {
    "tokenreviews": token_review,
    "selfsubjectreviews": self_subject_review,
    "subjectaccessreviews": subject_access_review,
    "localsubjectaccessreviews": local_subject_access_review,
    "selfsubjectaccessreviews": self_subject_access_review,
    "selfsubjectrulesreviews": self_subject_rules_review,
}
