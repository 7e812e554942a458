"""One error tree for the whole API, rendered into a Kubernetes ``Status`` in one place.

    ApiError (code, reason, message, details)
    ├── BadRequest            400  BadRequest
    ├── Unauthorized          401  Unauthorized
    ├── Forbidden             403  Forbidden
    ├── NotFound              404  NotFound
    ├── MethodNotAllowed      405  MethodNotAllowed
    ├── NotAcceptable         406  NotAcceptable
    ├── AlreadyExists         409  AlreadyExists
    ├── Conflict              409  Conflict
    ├── Expired               410  Expired        (watch / list from a compacted resourceVersion)
    ├── RequestEntityTooLarge 413  RequestEntityTooLarge
    ├── UnsupportedMediaType  415  UnsupportedMediaType
    ├── Invalid               422  Invalid        (carries FieldErrors → details.causes)
    ├── InternalError         500  InternalError
    └── ServiceUnavailable    503  ServiceUnavailable

Messages follow upstream apimachinery (`reference/k8s-behaviour.md` §0) so that kubectl prints what users know.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

import orjson


class ApiError(Exception):
    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


class BadRequest(ApiError):
    code, reason = 400, "BadRequest"


class Unauthorized(ApiError):
    code, reason = 401, "Unauthorized"


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"


class NotFound(ApiError):
    code, reason = 404, "NotFound"


class MethodNotAllowed(ApiError):
    code, reason = 405, "MethodNotAllowed"


class NotAcceptable(ApiError):
    code, reason = 406, "NotAcceptable"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    code, reason = 409, "Conflict"


class Expired(ApiError):
    code, reason = 410, "Expired"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, continue_token: str = "") -> None:
        super().__init__(message, details=details)
        self.continue_token = continue_token  # an inconsistent list's way on, in the Status's ListMeta

    def status(self) -> dict[str, Any]:
        body = super().status()
        if self.continue_token:
            body["metadata"] = {"continue": self.continue_token}
        return body


class RequestEntityTooLarge(ApiError):
    code, reason = 413, "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    code, reason = 415, "UnsupportedMediaType"


class TooManyRequests(ApiError):
    code, reason = 429, "TooManyRequests"


class Invalid(ApiError):
    code, reason = 422, "Invalid"


class InternalError(ApiError):
    code, reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    code, reason = 503, "ServiceUnavailable"


class Timeout(ApiError):
    code, reason = 504, "Timeout"


def too_large_resource_version(wanted: int, current: int) -> Timeout:
    """A read at a resourceVersion the watch cache has not reached in time (upstream's cacher: clients retry)."""
    details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}
    return Timeout(
        f"Too large resource version: {wanted}, current: {current}", details={**details, "retryAfterSeconds": 1}
    )


def _details(resource: str, name: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> NotFound:
    return NotFound(f'{_qualified(resource, group)} "{name}" not found', details=_details(resource, name, group))


def already_exists(resource: str, name: str, group: str = "") -> AlreadyExists:
    return AlreadyExists(
        f'{_qualified(resource, group)} "{name}" already exists', details=_details(resource, name, group)
    )


def conflict(resource: str, name: str, group: str = "", reason: str = "") -> Conflict:
    reason = reason or "the object has been modified; please apply your changes to the latest version and try again"
    return Conflict(
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {reason}',
        details=_details(resource, name, group),
    )


def internal_error(err: str) -> InternalError:
    return InternalError(f"Internal error occurred: {err}", details={"causes": [{"message": err}]})


def resource_not_found() -> NotFound:
    return NotFound("the server could not find the requested resource", details={})


def namespace_terminating(resource: str, name: str, namespace: str, group: str = "") -> Forbidden:
    message = f"unable to create new content in namespace {namespace} because it is being terminated"
    details = _details(resource, name, group)
    details["causes"] = [{"reason": "NamespaceTerminating", "message": message, "field": "metadata.namespace"}]
    return Forbidden(f'{_qualified(resource, group)} "{name}" is forbidden: {message}', details=details)


def forbidden_request(resource: str, name: str, reason: str, group: str = "") -> Forbidden:
    """Upstream's NewForbidden: `<resource> "<name>" is forbidden: <reason>`."""
    return Forbidden(
        f'{_qualified(resource, group)} "{name}" is forbidden: {reason}', details=_details(resource, name, group)
    )


def has_status_cause(err: BaseException, reason: str) -> bool:
    """The error is an API error whose `details.causes` name `reason` (upstream's `apierrors.HasStatusCause`)."""
    if not isinstance(err, ApiError):
        return False
    causes = (err.details or {}).get("causes") or []
    return any(isinstance(cause, dict) and cause.get("reason") == reason for cause in causes)


def is_namespace_terminating(err: BaseException) -> bool:
    """A create refused because its namespace is being deleted: it keeps failing until the namespace is gone."""
    return isinstance(err, Forbidden) and has_status_cause(err, "NamespaceTerminating")


def is_ordinary_race(err: BaseException) -> bool:
    """A refusal every controller meets in normal operation and that its next sync settles: the object is gone or
    changed meanwhile (404, 409), or its namespace is being deleted. Worth one quiet line, never a traceback."""
    return isinstance(err, NotFound | Conflict | AlreadyExists) or is_namespace_terminating(err)


class ErrorType(enum.Enum):
    """Field error types: (cause reason, display string) as upstream's field.ErrorType."""

    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    INTERNAL = ("InternalError", "Internal error")


_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}
_NO_VALUE = object()


def go_value(value: Any) -> str:
    """Render a value as Go's field errors do: strings quoted, numbers and bools bare, nil as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    try:  # a client's value may nest as deep as the body may (json.dumps recurses in Python and overflows)
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return "{...}" if isinstance(value, dict) else "[...]" if isinstance(value, list) else repr(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    type: ErrorType
    field: str
    value: Any = _NO_VALUE
    detail: str = ""

    @property
    def body(self) -> str:
        text = self.type.value[1]
        if self.type not in _VALUELESS and self.value is not _NO_VALUE:
            text += f": {go_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}" if self.field else self.body

    def cause(self) -> dict[str, str]:
        return {"reason": self.type.value[0], "message": self.body, "field": self.field}


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, detail=detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, field, detail=detail)


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, detail)


def too_many(field: str, actual: int, most: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, field, actual, f"must have at most {most} items")


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, field, value)


def invalid_object(kind: str, name: str, errors: list[FieldError], group: str = "") -> Invalid:
    """422 with one cause per field error and upstream's aggregated message."""
    rendered: list[str] = []
    for err in errors:
        if str(err) not in rendered:
            rendered.append(str(err))
    qualified = f"{kind}.{group}" if group else kind
    message = f'{qualified} "{name}" is invalid'
    if len(rendered) == 1:
        message += f": {rendered[0]}"
    elif rendered:
        message += ": [" + ", ".join(rendered) + "]"
    details = _details(kind, name, group)
    details["causes"] = [err.cause() for err in errors]
    return Invalid(message, details=details)
