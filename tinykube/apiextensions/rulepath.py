"""The `fieldPath` of an `x-kubernetes-validations` rule: a JSON path into the rule's schema (upstream's
`cel.ValidFieldPath`), followed through properties and additionalProperties to the schema it names.

The CRD check asks only whether a path is valid; the returned `FieldPath` also prints the steps as `field.Path`
does, for where a failing rule reports its error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tinykube.apiextensions.schemaprops import Schema, properties, sub_schema


@dataclass(frozen=True, slots=True)
class FieldPath:
    """Where a valid field path leads: its steps as field.Path prints them, and the schema found there."""

    steps: tuple[str, ...]  # `name` for a property, `[key]` for a key of additionalProperties
    schema: Schema | None

    @property
    def root(self) -> str:
        return self.steps[0] if self.steps else ""

    def __str__(self) -> str:
        out = ""
        for step in self.steps:
            out += step if step.startswith("[") or not out else "." + step
        return out


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _unescape(quoted: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise ValueError(f"invalid escape char {m.group(0)}")
        return _ESCAPES[m.group(1)]

    return re.sub(r"\\(.)", one, quoted, flags=re.DOTALL)


def _tokens(path: str) -> Iterator[str]:
    """The scanner's tokens: '.', '[' and ']' alone, a single-quoted string whole, other text up to a delimiter."""
    i = 0
    while i < len(path):
        if path[i] == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            yield path[i : j + 1]
            i = j + 1
        elif path[i] in ".[]":
            yield path[i]
            i += 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            yield path[i:j]
            i = j


def _step(schema: Schema | None, name: str) -> tuple[str, Schema | None] | str:
    props = properties(schema) if schema is not None else {}
    if props:
        if name not in props:
            return "does not refer to a valid field"
        return name, props[name]
    if schema is not None and schema.get("additionalProperties") is not None:
        return f"[{name}]", sub_schema(schema, "additionalProperties")
    return "does not refer to a valid field"


def resolve_field_path(path: str, schema: Schema, *, allow_array_notation: bool = True) -> FieldPath | str:
    """Follow a `.a.b['c.d']` path through `schema`; the error text when it does not lead to a field."""
    steps: list[str] = []
    node: Schema | None = schema
    tokens = _tokens(path)
    for token in tokens:
        if token == "[":
            if not allow_array_notation:
                return "array notation is not allowed"
            quoted = next(tokens, None)
            if quoted is None:
                return "unexpected end of JSON path"
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                return f"expected single quoted string but got {quoted}"
            try:
                name = _unescape(quoted[1:-1])
            except ValueError as err:
                return f"invalid string literal: {err}"
            found = _step(node, name)
            if isinstance(found, str):
                return found
            steps.append(found[0])
            node = found[1]
            closing = next(tokens, None)
            if closing is None:
                return "unexpected end of JSON path"
            if closing != "]":
                return f"expected ] but got {closing}"
        elif token == ".":
            field_name = next(tokens, None)
            if field_name is None:
                return "unexpected end of JSON path"
            found = _step(node, field_name)
            if isinstance(found, str):
                return found
            steps.append(found[0])
            node = found[1]
        else:
            return f"expected [ or . but got: {token}"
    return FieldPath(tuple(steps), node)
