"""What one CustomResourceDefinition makes the apiserver serve, read once from the CRD: its resources (one per
served version), schemas, printer columns, selectable fields and subresources.

A new `Definition` is made whenever the CRD's spec changes, as upstream rebuilds a CRD's storage then: requests
that start afterwards see the new schema, columns and versions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tinykube.api.meta import parse_time
from tinykube.api.resources import ALL_VERBS, ResourceInfo, version_priority
from tinykube.apiextensions import jsonpath
from tinykube.apiextensions.schema import Schema
from tinykube.apiserver.printing.cells import human_duration
from tinykube.apiserver.printing.table import NAME_COLUMN, Column, Printer

log = logging.getLogger(__name__)

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


@dataclass(frozen=True, slots=True)
class Scale:
    spec_replicas: tuple[str, ...]  # `.spec.replicas` as its keys
    status_replicas: tuple[str, ...]
    label_selector: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a CRD as served."""

    name: str
    schema: Schema | None
    raw_schema: dict[str, Any] | None  # the openAPIV3Schema as the CRD has it (OpenAPI documents, field manager)
    printer: Printer
    selectable: dict[str, tuple[jsonpath.Step, ...]]  # field selector name (`spec.color`) -> path
    status: bool
    scale: Scale | None
    warning: str  # the deprecation warning sent with every request, if deprecated


class Definition:
    """A CRD's serving state; `storage` is the resource its objects are stored as, `served` its versions in
    discovery order (the preferred one first)."""

    def __init__(self, crd: dict[str, Any]) -> None:
        meta, spec = crd["metadata"], crd["spec"]
        names = spec["names"]
        self.name: str = meta["name"]
        self.uid: str = meta.get("uid", "")
        self.group: str = spec["group"]
        self.kind: str = names["kind"]
        self.plural: str = names["plural"]
        self.namespaced = spec.get("scope") == "Namespaced"
        self.spec = spec
        self.terminating = False  # set while the CRD's instances are being deleted: no creates then
        self.structured: dict[str, Any] = {}  # version -> its schema as the field manager merges by it
        self.versions: dict[str, Version] = {}
        served: list[ResourceInfo] = []
        storage_version = ""
        for entry in spec.get("versions") or []:
            version = _version(entry, spec)
            self.versions[version.name] = version
            if entry.get("storage"):
                storage_version = version.name
            if entry.get("served"):
                served.append(self._resource(version))
        served.sort(key=lambda r: version_priority(r.version))
        self.served = tuple(served)
        self.storage = next(
            (r for r in served if r.version == storage_version),
            self._resource(self.versions[storage_version]) if storage_version else served[0],
        )

    def _resource(self, version: Version) -> ResourceInfo:
        names = self.spec["names"]
        subresources = tuple(s for s, on in (("status", version.status), ("scale", version.scale)) if on)
        return ResourceInfo(
            self.group,
            version.name,
            self.kind,
            self.plural,
            names.get("singular") or self.kind.lower(),
            self.namespaced,
            tuple(names.get("shortNames") or ()),
            subresources,
            tuple(names.get("categories") or ()),
            ALL_VERBS,
            custom=self,
        )

    def version_of(self, obj: dict[str, Any]) -> Version:
        """The version an object is written or stored in (by its apiVersion); the storage version otherwise."""
        api_version = str(obj.get("apiVersion", ""))
        version = api_version.rpartition("/")[2]
        return self.versions.get(version) or self.versions[self.storage.version]


def _version(entry: dict[str, Any], spec: dict[str, Any]) -> Version:
    validation = entry.get("schema") or {}
    raw_schema = validation.get("openAPIV3Schema")
    schema = None
    if raw_schema is not None:
        try:
            schema = Schema.compile(raw_schema)
        except Exception as err:  # validated as structural on create; a schema that still fails is served unchecked
            log.warning("the schema of %s version %s could not be compiled: %s", spec.get("group"), entry["name"], err)
    subresources = entry.get("subresources") or {}
    scale = subresources.get("scale")
    return Version(
        name=entry["name"],
        schema=schema,
        raw_schema=raw_schema,
        printer=_printer(entry.get("additionalPrinterColumns") or []),
        selectable={
            field["jsonPath"].lstrip("."): jsonpath.parse(field["jsonPath"])
            for field in entry.get("selectableFields") or []
        },
        status="status" in subresources,
        scale=_scale(scale) if scale is not None else None,
        warning=_deprecation(entry, spec) if entry.get("deprecated") else "",
    )


def _keys(path: str) -> tuple[str, ...]:
    return tuple(path.lstrip(".").split("."))


def _scale(scale: dict[str, Any]) -> Scale:
    selector = scale.get("labelSelectorPath")
    return Scale(
        _keys(scale["specReplicasPath"]), _keys(scale["statusReplicasPath"]), _keys(selector) if selector else None
    )


def _deprecation(entry: dict[str, Any], spec: dict[str, Any]) -> str:
    """upstream's default warning for a deprecated version, unless the CRD gives its own."""
    if entry.get("deprecationWarning") is not None:
        return str(entry["deprecationWarning"])
    return f"{spec['group']}/{entry['name']} {spec['names']['kind']} is deprecated"


# ---- Table output -------------------------------------------------------------------------------------------


def _printer(columns: list[dict[str, Any]]) -> Printer:
    """upstream's CR table: Name, then the CRD's columns (each a JSONPath, its first value as the column's type)."""
    defined = [NAME_COLUMN]
    paths: list[tuple[tuple[jsonpath.Step, ...], str]] = []
    for column in columns:
        path = column.get("jsonPath", "")
        description = column.get("description") or f"Custom resource definition column (in JSONPath format): {path}"
        defined.append(
            Column(column["name"], column.get("type", "string"), description, column.get("format", ""),
                   int(column.get("priority", 0)))
        )  # fmt: skip
        paths.append((jsonpath.parse(path), column.get("type", "string")))

    def cells(obj: dict[str, Any], now: datetime) -> list[Any]:
        row: list[Any] = [obj["metadata"].get("name", "")]
        for steps, kind in paths:
            found = jsonpath.find(steps, obj)
            row.append(_cell(kind, found[0], now) if found else None)
        return row

    return Printer(tuple(defined), cells)


def _cell(kind: str, value: Any, now: datetime) -> Any:
    """upstream's cellForJSONValue: the value as the column's type, or nothing."""
    if value is None:
        return None
    if kind == "string":
        return jsonpath.text(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        when = parse_time(value)
        return human_duration((now - when).total_seconds()) if when is not None else "<invalid>"
    return None
