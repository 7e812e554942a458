"""Request decoding and response encoding: JSON or YAML bodies in, JSON (plain, Table or metadata-only) out."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors, protobuf
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.http.limits import MAX_BODY as MAX_BODY
from tinykube.apiserver.http.limits import load_json, load_yaml
from tinykube.apiserver.schema.decodetypes import type_error, undecodable

INCLUDE_OBJECT_POLICIES = ("None", "Object", "Metadata")  # TableOptions.includeObject


@dataclass(frozen=True, slots=True)
class Rendering:
    """How the client asked to see objects: `as=Table`, `as=PartialObjectMetadata[List]`, or the objects."""

    table: bool = False
    metadata_only: bool = False
    include_object: str = "Metadata"


def accept_params(accept: str) -> Iterator[dict[str, str]]:
    """The parameters of each media range in an Accept header, in the client's order (`as`, `g`, `v`, ...)."""
    for part in accept.split(","):
        yield dict(p.strip().split("=", 1) for p in part.split(";")[1:] if "=" in p)


def rendering(accept: str, include_object: str | None) -> Rendering:
    for params in accept_params(accept):
        if params.get("g") != "meta.k8s.io":
            continue
        if params.get("as") == "Table":
            if include_object not in (None, "", *INCLUDE_OBJECT_POLICIES):
                raise errors.BadRequest(
                    "Unable to convert to Table as requested: includeObject: Invalid value: "
                    f"{errors.go_value(include_object)}: must be 'Metadata', 'Object', 'None', or empty"
                )
            return Rendering(table=True, include_object=include_object or "Metadata")
        if params.get("as", "").startswith("PartialObjectMetadata"):
            return Rendering(metadata_only=True)
    return Rendering()


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


# What a request body may be, in upstream's order (its 415 lists them so).
BODY_MEDIA_TYPES = ("application/json", "application/yaml", protobuf.MEDIA_TYPE)
_TOKEN = r'[^\x00-\x20\x7f-\U0010ffff()<>@,;:\\"/\[\]?=]+'  # RFC 2045, as Go's mime package reads it
_MEDIA_TYPE = re.compile(rf"{_TOKEN}(?:/{_TOKEN})?")
_PARAMETER = re.compile(rf'\s*;\s*({_TOKEN})\s*=\s*(?:{_TOKEN}|"(?:[^"\\]|\\.)*")')


def media_type(content_type: str) -> str | None:
    """The media type of a Content-Type, lowercased, as Go's `mime.ParseMediaType` gives it; None for a value it
    refuses (a malformed type or parameter, a parameter twice)."""
    base = content_type.split(";", 1)[0]
    media, rest, names = base.strip().lower(), content_type[len(base) :], set()
    if not _MEDIA_TYPE.fullmatch(media):
        return None
    while rest.strip():
        parameter = _PARAMETER.match(rest)
        if parameter is None:
            return media if rest.strip() == ";" else None  # a trailing semicolon is allowed
        if parameter.group(1).lower() in names:
            return None
        names.add(parameter.group(1).lower())
        rest = rest[parameter.end() :]
    return media


def body_media_type(content_type: str) -> str:
    """Upstream's NegotiateInputSerializer: a body without a Content-Type is JSON; one of a type no decoder reads
    (`text/plain`, a patch type on a create) or that does not parse is refused with 415."""
    media = media_type(content_type) if content_type else BODY_MEDIA_TYPES[0]
    if media not in BODY_MEDIA_TYPES:
        raise errors.UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(BODY_MEDIA_TYPES)
        )
    return media


def decode_body(body: bytes, content_type: str) -> Any:
    if len(body) > MAX_BODY:
        raise errors.RequestEntityTooLarge(f"Request entity too large: limit is {MAX_BODY}")
    media = body_media_type(content_type)
    if not body.strip(b" \t\r\n"):
        raise errors.BadRequest("the request body is empty")
    if media == protobuf.MEDIA_TYPE:  # kubectl's generator commands send protobuf
        return protobuf.decode(body)
    if media == "application/yaml":
        return load_yaml(body)  # aliases and nesting bounded before anything is built
    return load_json(body)


# What a custom resource is answered in, in upstream's order (CBOR, behind a feature gate upstream, is not served).
CUSTOM_MEDIA_TYPES = ("application/json", "application/yaml")


def check_custom_accept(accept: str) -> None:
    """Upstream's output negotiation for a custom resource, which has no protobuf encoding: an Accept header none of
    whose media ranges admits JSON or YAML (`application/vnd.kubernetes.protobuf` alone) is a 406, before anything
    else of the request is looked at; client-go's `application/vnd.kubernetes.protobuf, */*` is answered in JSON."""
    ranges = [media for part in accept.split(",") if (media := part.split(";", 1)[0].strip().lower())]
    if not ranges or any(media in ("*/*", "application/*", *CUSTOM_MEDIA_TYPES) for media in ranges):
        return
    raise errors.NotAcceptable("only the following media types are accepted: " + ", ".join(CUSTOM_MEDIA_TYPES))


def decode_object(body: bytes, content_type: str, resource: ResourceInfo) -> dict[str, Any]:
    """A request body as an object of `resource`'s kind: a missing kind/apiVersion is taken from the URL. The fields
    every later step reads (kind, apiVersion, the metadata naming the object) are refused here when their JSON type
    is wrong, in the decoder's words; the rest of the object's types are `decodetypes`' (through `field_check`)."""
    if resource.custom is not None and body_media_type(content_type) == protobuf.MEDIA_TYPE:
        # custom resources have no protobuf encoding
        raise errors.UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(CUSTOM_MEDIA_TYPES)
        )
    obj = decode_body(body, content_type)
    if not isinstance(obj, dict):
        raise errors.BadRequest(f"the body of the request must be a JSON object, not {type(obj).__name__}")
    _check_type_meta(obj, body, content_type, resource)
    kind = obj.setdefault("kind", resource.kind)
    api_version = obj.setdefault("apiVersion", resource.api_version)
    if kind != resource.kind or api_version != resource.api_version:
        raise errors.BadRequest(
            f'{kind} in version "{api_version}" cannot be handled as a {resource.kind}: '
            f"the object is not a {resource.api_version} {resource.kind}"
        )
    meta = obj.get("metadata")
    if meta is None:  # JSON null is Go's zero value: no metadata
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise undecodable(resource, type_error(meta, resource.kind, "metadata", "v1.ObjectMeta"))
    obj = {"apiVersion": api_version, "kind": kind, **obj}  # upstream's field order in responses
    for field in ("name", "namespace", "generateName", "resourceVersion"):
        if field in meta and meta[field] is None:
            del meta[field]
        elif field in meta and not isinstance(meta[field], str):
            raise undecodable(resource, type_error(meta[field], "ObjectMeta", f"metadata.{field}", "string"))
    return obj


def _check_type_meta(obj: dict[str, Any], body: bytes, content_type: str, resource: ResourceInfo) -> None:
    """Upstream reads kind and apiVersion first, into an anonymous struct (so its type errors name the struct ""),
    and answers a failure with the body's first 30 bytes; null is no value, and the URL's is taken."""
    if isinstance(obj.get("kind", ""), str) and isinstance(obj.get("apiVersion", ""), str):
        return
    yaml = body_media_type(content_type) == "application/yaml"  # converted to JSON first: its keys sorted
    for key in sorted(obj, key=str) if yaml else list(obj):
        if key not in ("apiVersion", "kind"):
            continue
        if obj[key] is None:
            del obj[key]
        elif not isinstance(obj[key], str):
            summary = body[:30].decode("utf-8", "replace") + (" ..." if len(body) > 30 else "")
            raise errors.BadRequest(
                f"the object provided is unrecognized (must be of type {resource.kind}): couldn't get version/kind; "
                f"json parse error: {type_error(obj[key], '', key, 'string')} ({summary})"
            )


PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


def decode_options(body: bytes, content_type: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
    """DeleteOptions from a DELETE body (optional) and the query (`?propagationPolicy=Foreground`), validated as
    upstream's ValidateDeleteOptions does the propagation fields."""
    options: Any = decode_body(body, content_type) if body.strip() else {}
    if not isinstance(options, dict):
        raise errors.BadRequest("DeleteOptions must be a JSON object")
    query = query or {}
    if "propagationPolicy" in query:
        options.setdefault("propagationPolicy", query["propagationPolicy"])
    if "orphanDependents" in query:
        options.setdefault("orphanDependents", query["orphanDependents"] == "true")
    if "gracePeriodSeconds" in query:
        text = query["gracePeriodSeconds"]
        if not text.lstrip("-").isdigit():
            raise errors.BadRequest(f'strconv.ParseInt: parsing "{text}": invalid syntax')
        options.setdefault("gracePeriodSeconds", int(text))
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise errors.BadRequest("DeleteOptions.gracePeriodSeconds must be an integer")
    _validate_propagation(options)
    return options


def delete_dry_run(options: Mapping[str, Any]) -> bool:
    """Whether DeleteOptions from the body ask for a dry run: `dryRun: ["All"]`, validated as upstream's
    ValidateDryRun (a collection's body counts as much as one object's: a dry run must never delete)."""
    value = options.get("dryRun")
    if value is None or value == []:
        return False
    if not isinstance(value, list) or any(v != "All" for v in value):
        errs = [errors.not_supported("dryRun", value, ["All"])]
        raise errors.invalid_object("DeleteOptions", "", errs, group="meta.k8s.io")
    return True


def _validate_propagation(options: dict[str, Any]) -> None:
    policy = options.get("propagationPolicy")
    errs: list[errors.FieldError] = []
    if policy is not None and options.get("orphanDependents") is not None:
        errs.append(
            errors.invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set")
        )
    if policy is not None and policy not in PROPAGATION_POLICIES:
        errs.append(errors.not_supported("propagationPolicy", policy, [*PROPAGATION_POLICIES, "nil"]))
    if errs:
        raise errors.invalid_object("DeleteOptions", "", errs, group="meta.k8s.io")
