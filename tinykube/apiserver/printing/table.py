"""Columns, printers and the Table built from them (``k8s.io/apiserver/pkg/registry/rest/table.go``).

Resources without a printer get the generic ``Name`` / ``Created At`` table of upstream's
``defaultTableConvertor``. Like upstream (which always generates with ``Wide: true``), every row carries all cells,
including the priority-1 ones; kubectl hides those unless ``-o wide`` is given.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tinykube.api.meta import parse_time
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.printing.cells import meta_of, name_of

INCLUDE_OBJECT_POLICIES = ("None", "Object", "Metadata")

# ---------------------------------------------------------------------------------------------
# Columns and printers
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """A ``TableColumnDefinition``; ``priority`` 1 means "only with ``-o wide``"."""

    name: str
    type: str
    description: str
    format: str = ""
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


Cells = list[Any]
CellsFunc = Callable[[dict[str, Any], datetime], Cells]
ConditionsFunc = Callable[[dict[str, Any]], list[dict[str, str]]]


@dataclass(frozen=True, slots=True)
class Printer:
    """Columns of one resource plus the function that fills a row's cells for an object."""

    columns: tuple[Column, ...]
    cells: CellsFunc
    conditions: ConditionsFunc | None = None


# Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

NAME_COLUMN = Column("Name", "string", NAME_DESCRIPTION, format="name")
AGE_COLUMN = Column("Age", "string", CREATED_DESCRIPTION)

LABEL_SELECTORS_URL = "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"

# rest.defaultTableConvertor: for resources without a printer of their own.
DEFAULT_COLUMNS = (
    NAME_COLUMN,
    Column("Created At", "date", CREATED_DESCRIPTION),
)


def _default_cells(obj: dict[str, Any], now: datetime) -> Cells:
    """``defaultTableConvertor``: name and creationTimestamp in RFC 3339 UTC (Go zero time if unset)."""
    created = parse_time(meta_of(obj).get("creationTimestamp"))
    stamp = created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if created else "0001-01-01T00:00:00Z"
    return [name_of(obj), stamp]


DEFAULT_PRINTER = Printer(DEFAULT_COLUMNS, _default_cells)


def _row_object(resource: ResourceInfo, obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Metadata":
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": copy.deepcopy(meta_of(obj)),
        }
    full = copy.deepcopy(obj)
    full.setdefault("kind", resource.kind)
    full.setdefault("apiVersion", resource.group_version)
    return full


def render(
    printer: Printer,
    resource: ResourceInfo,
    objects: list[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    resource_version: str = "",
    continue_token: str = "",
    remaining: int | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (a list, or one object for a single GET), printed by ``printer``.

    ``include_object`` is the ``includeObject`` query parameter: ``None`` leaves the row
    object out, ``Object`` embeds the full object, ``Metadata`` (kubectl's default) embeds a
    ``PartialObjectMetadata``. List metadata fields are omitted when empty, as upstream does.
    """
    if include_object not in INCLUDE_OBJECT_POLICIES:
        allowed = ", ".join(INCLUDE_OBJECT_POLICIES)
        raise ValueError(f"includeObject must be one of {allowed}, not {include_object!r}")
    when = now if now is not None else datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)

    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer.cells(obj, when)}
        if printer.conditions is not None and (conditions := printer.conditions(obj)):
            row["conditions"] = conditions
        row_object = _row_object(resource, obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)

    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [column.to_dict() for column in printer.columns],
        "rows": rows,
    }
