"""Unknown fields: the paths in an object that its kind's schema does not know, named as upstream's strict
decoding names them, and upstream's texts for them (the 400 of `fieldValidation=Strict`, the `Warning` headers of
`Warn`). The policy per request is `fieldvalidation`'s; this is the pure walk over the served definitions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tinykube.apiserver.schema.definitions import Schema, served_definitions


def unknown_fields(api_version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """Paths of fields in `obj` its kind's schema does not know, as upstream's strict decoding names them.

    `spec.foo`, `spec.ports[0].bogus`, `metadata.labelz`; map values are walked as `field[key]`. Upstream
    stops after 100 and reports each once; so does this. Unknown kinds yield [].
    """
    return list(dict.fromkeys(text for text, _ in unknown_field_paths(api_version, kind, obj)))[:100]


FieldPath = tuple[str | int, ...]


def unknown_field_paths(api_version: str, kind: str, obj: dict[str, Any]) -> list[tuple[str, FieldPath]]:
    """Every field of `obj` its kind's schema does not know: upstream's text for it, and the keys and indices that
    lead to it (the text alone does not say where a key holds a "." or is empty)."""
    defs = served_definitions()
    name = defs.kinds.get((api_version, kind))
    if name is None:
        return []
    found: list[tuple[str, FieldPath]] = []
    _walk({"$ref": name}, obj, "", (), defs.schemas, found)
    return found


def _walk(
    schema: Schema,
    value: Any,
    path: str,
    steps: FieldPath,
    schemas: dict[str, Schema],
    found: list[tuple[str, FieldPath]],
) -> None:
    while "$ref" in schema:
        schema = schemas[schema["$ref"]]
    if isinstance(value, dict):
        _walk_object(schema, value, path, steps, schemas, found)
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{i}]", (*steps, i), schemas, found)


def _walk_object(
    schema: Schema,
    value: dict[str, Any],
    path: str,
    steps: FieldPath,
    schemas: dict[str, Schema],
    found: list[tuple[str, FieldPath]],
) -> None:
    properties = schema.get("properties")
    if properties is not None:
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if key in properties:
                _walk(properties[key], item, child, (*steps, key), schemas, found)
            else:
                found.append((child, (*steps, key)))
    elif isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            _walk(schema["additionalProperties"], item, f"{path}[{key}]", (*steps, key), schemas, found)


def strict_decoding_message(fields: Iterable[str]) -> str:
    """Upstream's 400 message for `fieldValidation=Strict`."""
    return "strict decoding error: " + ", ".join(unknown_field_warnings(fields))


def unknown_field_warnings(fields: Iterable[str]) -> list[str]:
    """Upstream's per-field text, used verbatim as `Warning` headers for `fieldValidation=Warn`."""
    return [f'unknown field "{f}"' for f in fields]
