"""Object metadata: system fields, name generation and the validation messages upstream prints for them."""

from __future__ import annotations

import re
import secrets
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, required
from tinykube.api.shapes import ObjectMeta

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # upstream's generateName alphabet: no vowels, no look-alikes


_stamp: tuple[int, str] = (-1, "")  # the last second formatted: a write stamps several fields, many writes a second


def now() -> str:
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        _stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp[1]


def micro_now() -> str:
    """Now as a `metav1.MicroTime` (Lease renewals, Event series): `2006-01-02T15:04:05.000000Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 `metav1.Time`/`MicroTime` string as an aware datetime; None if unset or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def resource_version_number(obj: dict[str, Any]) -> int:
    """An object's resourceVersion as a number (tinykube's are etcd revisions), 0 when it is none."""
    text = str(obj["metadata"].get("resourceVersion") or "")
    return int(text) if text.isdigit() else 0


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(base: str) -> str:
    base = base[: 63 - 5]
    return base + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _full(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def dns1123_label(value: str) -> list[str]:
    errs = [] if len(value) <= 63 else ["must be no more than 63 characters"]
    if not _full(_DNS1123_LABEL, value):
        msg = (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _DNS1123_LABEL, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = [] if len(value) <= 253 else ["must be no more than 253 characters"]
    if not _full(_DNS1123_SUBDOMAIN, value):
        msg = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _DNS1123_SUBDOMAIN, "example.com"))
    return errs


def dns1035_label(value: str) -> list[str]:
    errs = [] if len(value) <= 63 else ["must be no more than 63 characters"]
    if not _full(_DNS1035_LABEL, value):
        msg = (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
            "start with an alphabetic character, and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _DNS1035_LABEL, "my-name", "abc-123"))
    return errs


NameValidator = Callable[[str], list[str]]


def _name_part(name: str) -> list[str]:
    errs: list[str] = []
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _full(_QUALIFIED_NAME, name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME, "MyName", "my.name", "123-abc"))
    return errs


def qualified_name(value: str) -> list[str]:
    """A label or annotation key: an optional DNS subdomain prefix and '/', then a name of at most 63 characters."""
    parts = value.split("/")
    if len(parts) > 2:
        example = regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME, "MyName", "my.name", "123-abc")
        suffix = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"a qualified name {example} {suffix}"]
    errs: list[str] = []
    if len(parts) == 2:
        errs += (
            ["prefix part " + m for m in dns1123_subdomain(parts[0])] if parts[0] else ["prefix part must be non-empty"]
        )
    return errs + _name_part(parts[-1])


def label_value(value: str) -> list[str]:
    errs = [] if len(value) <= 63 else ["must be no more than 63 characters"]
    if not _full(_LABEL_VALUE, value):
        msg = (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errs


def validate_labels(labels: Any, field: str) -> list[FieldError]:
    if not isinstance(labels, dict):
        return [invalid(field, labels, "must be a map of string keys to string values")]
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs += [invalid(field, key, m) for m in qualified_name(str(key))]
        if not isinstance(value, str):
            errs.append(invalid(f"{field}[{key}]", value, "must be a string"))
            continue
        errs += [invalid(field, value, m) for m in label_value(value)]
    return errs


def _validate_annotations(annotations: Any, field: str) -> list[FieldError]:
    if not isinstance(annotations, dict):
        return [invalid(field, annotations, "must be a map of string keys to string values")]
    errs: list[FieldError] = []
    for key, value in annotations.items():
        errs += [invalid(field, key, m) for m in qualified_name(str(key))]
        if not isinstance(value, str):
            errs.append(invalid(f"{field}[{key}]", value, "must be a string"))
    total = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if total > 256 * 1024:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 262144 bytes"))
    return errs


def validate_object_meta(meta: ObjectMeta, *, namespaced: bool, name_rule: NameValidator) -> list[FieldError]:
    """Upstream's ValidateObjectMeta for the fields a client may set."""
    errs: list[FieldError] = []
    name = meta.get("name", "")
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs += [invalid("metadata.name", name, m) for m in name_rule(name)]
    if namespaced and not meta.get("namespace"):
        errs.append(required("metadata.namespace"))
    if not namespaced and meta.get("namespace"):
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    errs += validate_labels(meta.get("labels") or {}, "metadata.labels")
    errs += _validate_annotations(meta.get("annotations") or {}, "metadata.annotations")
    return errs
