"""Field management: `metadata.managedFields` on every write, and server-side apply (`application/apply-patch+yaml`).

The same bookkeeping as kube-apiserver's field manager (k8s.io/apimachinery/pkg/util/managedfields), in the same
order of steps, over the JSON merge logic of `tinykube.api.structured`:

* **Update** (create, PUT, PATCH of the other kinds, and writes through `status`/`scale`/other subresources): the
  paths the write added or changed go to the request's manager (an `Update` entry per manager, apiVersion and
  subresource); every other manager loses the paths that changed value and the paths removed. An object that has
  no managedFields is not tracked by updates (only creates start tracking), as upstream.
* **Apply**: the configuration is merged over the live object; the applier owns exactly the paths its
  configuration sets; what it applied last time and no longer applies is removed unless someone else owns it;
  changing a value someone else owns is a 409 conflict unless forced, which moves ownership. A first apply to an
  object without managedFields first records everything there as owned by `before-first-apply`.
* `kubectl apply --server-side` (manager `kubectl`) takes over from client-side apply: conflicts on fields whose
  live value is still what `kubectl.kubernetes.io/last-applied-configuration` says are forced, and that
  annotation, when the object has it, is rewritten to the applied configuration.

Schemas (list types and keys, atomic structs and maps) come from the served OpenAPI definitions; what they do not
describe is merged as deduced (maps granular, lists atomic). Field paths are kept in the stored form, `fieldsV1`
(see `tinykube.api.fieldpath`), so an unchanged entry is never decoded or re-encoded.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from tinykube.api import errors, golang
from tinykube.api import fieldpath as fp
from tinykube.api import structured as st
from tinykube.api.fieldpath import FieldSet
from tinykube.api.meta import now
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.http.limits import load_yaml
from tinykube.apiserver.kinds.zeros import zero
from tinykube.apiserver.schema import definitions
from tinykube.apiserver.schema.fieldvalidation import load_schemas

APPLY, UPDATE = "Apply", "Update"
FIELDS_V1: Final = "FieldsV1"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10
MAX_MANAGER_LENGTH: Final = 128
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL: Final = "kubectl"
_MAX_ANNOTATIONS_BYTES: Final = 256 * 1024

# Paths nobody owns (upstream's stripMetaManager): identity and server-set metadata.
_SERVER_META: Final = (
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
)
_STRIPPED: Final[FieldSet] = fp.from_paths(
    [("f:apiVersion",), ("f:kind",), ("f:metadata",), *(("f:metadata", fp.field(name)) for name in _SERVER_META)]
)

Ident = tuple[str, str, str, str]  # manager, operation, apiVersion (Update only), subresource
Ignore = Callable[[FieldSet], FieldSet]


def _keep_all(fields: FieldSet) -> FieldSet:
    return fields


def _without(*elements: str) -> Ignore:
    def drop(fields: FieldSet) -> FieldSet:
        if not any(e in fields for e in elements):
            return fields
        return {e: n for e, n in fields.items() if e not in elements}

    return drop


@functools.cache
def ignored_fields(subresource: str, *, has_status: bool) -> Ignore:
    """What a write through this (sub)resource does not own: upstream's reset fields of the strategy. A main
    resource write never owns `status` where a status subresource exists, a status write never owns `spec`, and a
    scale write owns only the replicas. (What else a strategy resets never shows as a change.)"""
    if subresource == "status":
        return _without("f:spec")
    if subresource == "scale":
        return lambda fields: fp.intersection(fields, _REPLICAS)
    return _without("f:status") if has_status and not subresource else _keep_all


_REPLICAS: Final[FieldSet] = fp.from_paths([("f:spec", "f:replicas")])


# ---- entries -----------------------------------------------------------------------------------------------------


# Types whose JSON form is a string or a number: upstream's apply schema makes them untyped scalars (a Quantity
# applied as `cpu: 1` is no type error), whatever the OpenAPI says.
_UNTYPED_SCALARS: Final = frozenset({definitions.QUANTITY, definitions.INT_OR_STRING})


@dataclass(slots=True)
class Entry:
    """One managedFields entry: its identity, time and set. `wire` is the stored form while `fields` is unchanged."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet
    wire: dict[str, Any] | None = None
    ordered: bool = False  # `fields` is in upstream's order already (made so), and written as it is

    @property
    def ident(self) -> Ident:
        return ident(self.manager, self.operation, self.api_version, self.subresource)

    def changed(self, fields: FieldSet) -> Entry:
        """The entry with fewer paths: set operations keep the order of what they leave, so an entry in upstream's
        order (as stored) stays in it."""
        ordered = self.ordered or self.wire is not None
        return Entry(self.manager, self.operation, self.api_version, self.subresource, self.time, fields, None, ordered)

    def encode(self) -> dict[str, Any]:
        if self.wire is not None:
            return self.wire
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = FIELDS_V1
        out["fieldsV1"] = self.fields if self.ordered else fp.to_wire(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def ident(manager: str, operation: str, api_version: str, subresource: str) -> Ident:
    """Upstream's manager identifier: appliers are one manager whatever version they apply in."""
    return (manager, operation, "" if operation == APPLY else api_version, subresource)


Managed = dict[Ident, Entry]


class InvalidManagedFields(ValueError):
    """managedFields that do not decode; upstream then falls back to the live object's."""


def _entry(raw: Any, i: int, *, trusted: bool) -> Entry:
    if not isinstance(raw, dict):
        raise InvalidManagedFields(f"entry {i} is not an object")
    operation = raw.get("operation")
    if operation not in (APPLY, UPDATE):
        raise InvalidManagedFields("operation must be `Apply` or `Update`")
    api_version = raw.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        raise InvalidManagedFields("apiVersion must not be empty")
    fields_type = raw.get("fieldsType")
    if fields_type != FIELDS_V1:
        problem = "missing fieldsType" if not fields_type else f"invalid fieldsType {fields_type!r}"
        raise InvalidManagedFields(f"{problem} in managed fields entry {i}")
    manager, time, subresource = raw.get("manager", ""), raw.get("time"), raw.get("subresource", "")
    if not isinstance(manager, str) or not isinstance(subresource, str) or not isinstance(time, str | None):
        raise InvalidManagedFields(f"entry {i} has fields of the wrong type")
    document = raw.get("fieldsV1")
    try:
        fields = {} if document is None else document if trusted and isinstance(document, dict) else None
        if fields is None:
            fields = fp.from_wire(document)
    except fp.PathError as err:
        raise InvalidManagedFields(f"error decoding set: {err}") from None
    wire = raw if trusted else None
    return Entry(manager, operation, api_version, subresource, time, fields, wire)


def decode(raw: Any, *, trusted: bool = False) -> Managed:
    """managedFields as entries by identity; `trusted` (what we stored ourselves) skips re-checking every path."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise InvalidManagedFields("managedFields must be a list")
    out: Managed = {}
    for i, item in enumerate(raw):
        entry = _entry(item, i, trusted=trusted)
        out[entry.ident] = entry
    return out


def _sort_key(entry: Entry) -> tuple[str, str, str, str, str]:
    return (entry.operation, entry.time or "", entry.manager, entry.api_version, entry.subresource)


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The entries in upstream's order: appliers first, then by time, manager, apiVersion and subresource."""
    return [e.encode() for e in sorted(managed.values(), key=_sort_key)]


def _is_reset(raw: Any) -> bool:
    """`managedFields: []` (or one empty entry) in a write clears them (upstream's isResetManagedFields)."""
    return isinstance(raw, list) and (not raw or raw == [{}])


def validate_manager(value: str, where: str) -> list[errors.FieldError]:
    """upstream's ValidateFieldManager: at most 128 bytes, printable characters only."""
    found: list[errors.FieldError] = []
    if len(value.encode()) > MAX_MANAGER_LENGTH:
        detail = f"may not be more than {MAX_MANAGER_LENGTH} bytes"
        found.append(errors.FieldError(errors.ErrorType.TOO_LONG, where, detail=detail))
    for i, char in enumerate(value):
        if not _printable(char):
            found.append(errors.invalid(where, value, f"invalid character {_go_rune(char)} (at position {i})"))
    return found


def _printable(char: str) -> bool:
    """Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def _go_rune(char: str) -> str:
    return f"U+{ord(char):04X}" if not _printable(char) else f"U+{ord(char):04X} '{char}'"


def manager_from_user_agent(user_agent: str) -> str:
    """upstream's default manager: the User-Agent up to its first `/`, printable characters only, at most 128 bytes."""
    out, size = [], 0
    for char in user_agent.split("/", 1)[0]:
        if not _printable(char):
            continue
        size += len(char.encode())
        if size > MAX_MANAGER_LENGTH:
            break
        out.append(char)
    return "".join(out)


# ---- schemas -------------------------------------------------------------------------------------------------------

_KEY_DEFAULTS: Final = {"protocol": "TCP"}  # ContainerPort.protocol and ServicePort.protocol default "TCP"
_CORE = "io.k8s.api.core.v1"
_MAP_BY_TYPE: Final = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
_MAP_BY_NAME: Final = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
# List types upstream declares that the served definitions do not carry (yet).
_EXTRA_LIST_TYPES: Final[dict[tuple[str, str], dict[str, Any]]] = {
    (f"{_CORE}.ServiceAccount", "secrets"): _MAP_BY_NAME,
    (f"{_CORE}.PersistentVolumeClaimStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", "webhooks"): _MAP_BY_NAME,
    ("io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", "webhooks"): _MAP_BY_NAME,
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.flowcontrol.v1.FlowSchemaStatus", "conditions"): _MAP_BY_TYPE,
    ("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationStatus", "conditions"): _MAP_BY_TYPE,
}
_SCALARS: Final = {"string": "string", "integer": "numeric", "number": "numeric", "boolean": "boolean"}


class SchemaCompiler:
    """OpenAPI definitions (tinykube's neutral form: `{"$ref": name}`) compiled into `structured.Node`s."""

    def __init__(self, definitions: dict[str, dict[str, Any]]) -> None:
        self.definitions = definitions
        self._nodes: dict[str, st.Node] = {}

    def definition(self, name: str) -> st.Node:
        node = self._nodes.get(name)
        if node is None:
            node = self._compile_definition(name)
            self._nodes[name] = node
        return node

    def _compile_definition(self, name: str) -> st.Node:
        if name in _UNTYPED_SCALARS:
            return st.SCALAR_NODE
        schema = self.definitions.get(name)
        if schema is None:
            return st.DEDUCED_NODE
        atomic = schema.get("x-kubernetes-map-type") == "atomic"
        properties = schema.get("properties")
        if isinstance(properties, dict):
            elem = st.DEDUCED_NODE if schema.get("x-kubernetes-preserve-unknown-fields") else None
            return st.Node(
                st.STRUCT,
                atomic=atomic,
                elem=elem,
                resolve_fields=functools.partial(self._fields, name, properties),
            )
        return self._compile(schema, name)

    def _fields(self, owner: str, properties: dict[str, Any]) -> dict[str, st.Node]:
        out = {}
        for name, prop in properties.items():
            extra = _EXTRA_LIST_TYPES.get((owner, name))
            out[name] = self._compile({**prop, **extra} if extra else prop, owner)
        return out

    def _compile(self, schema: dict[str, Any], owner: str) -> st.Node:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            base = self.definition(ref)
            if schema.get("x-kubernetes-map-type") == "atomic" and not base.atomic:
                return st.Node(base.kind, atomic=True, elem=base.elem, resolve_fields=lambda: base.fields)
            return base
        kind = schema.get("type")
        if kind == "array":
            return self._list(schema)
        if kind == "object":
            extra = schema.get("additionalProperties")
            atomic = schema.get("x-kubernetes-map-type") == "atomic"
            if isinstance(extra, dict):
                return st.Node(st.MAP, atomic=atomic, elem=self._compile(extra, owner))
            properties = schema.get("properties")
            if isinstance(properties, dict):
                fields = functools.partial(self._fields, owner, properties)
                elem = st.DEDUCED_NODE if schema.get("x-kubernetes-preserve-unknown-fields") else None
                return st.Node(st.STRUCT, atomic=atomic, elem=elem, resolve_fields=fields)
            return st.DEDUCED_NODE
        if schema.get("format") == "int-or-string" or kind not in _SCALARS:
            return st.SCALAR_NODE
        return st.Node(st.SCALAR, scalar=_SCALARS[kind])

    def _list(self, schema: dict[str, Any]) -> st.Node:
        items = schema.get("items")
        elem = self._compile(items, "") if isinstance(items, dict) else st.DEDUCED_NODE
        list_type = schema.get("x-kubernetes-list-type")
        keys: tuple[str, ...] = ()
        if list_type == "map":
            keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        elif list_type is None and "merge" in str(schema.get("x-kubernetes-patch-strategy", "")).split(","):
            merge_key = schema.get("x-kubernetes-patch-merge-key")
            list_type, keys = ("map", (merge_key,)) if merge_key else ("set", ())
        kind = {"map": st.KEYED, "set": st.SET}.get(str(list_type), st.ATOMIC)
        if kind == st.KEYED and not keys:
            kind = st.ATOMIC
        defaults = {k: _KEY_DEFAULTS[k] for k in keys if k in _KEY_DEFAULTS}
        return st.Node(st.LIST, list_type=kind, keys=keys, key_defaults=defaults, elem=elem)


@functools.cache
def _compiler() -> SchemaCompiler:
    # The served definitions, built (or read from their cache file) on first use: the same ones the OpenAPI
    # documents and the unknown-field check are made of.
    return SchemaCompiler(definitions.served_definitions().schemas)


def schema_for(resource: ResourceInfo) -> st.Node:
    if resource.custom is not None:
        return _custom_schema(resource)
    return _schema(resource.api_version, resource.kind)


def _custom_schema(resource: ResourceInfo) -> st.Node:
    """A custom resource version's schema as upstream's field manager reads a CRD's: its openAPIV3Schema with the
    object's apiVersion, kind and ObjectMeta; deduced where the CRD has no schema. Kept with the CRD's serving
    state, so a changed CRD gets a new one."""
    nodes: dict[str, st.Node] = resource.custom.structured
    node = nodes.get(resource.version)
    if node is None:
        raw = resource.custom.versions[resource.version].raw_schema
        if not isinstance(raw, dict):
            node = st.DEDUCED_NODE
        else:
            properties = {
                **(raw.get("properties") or {}),
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"$ref": f"{definitions.META}.ObjectMeta"},
            }
            node = _compiler()._compile({**raw, "type": "object", "properties": properties}, "")
        nodes[resource.version] = node
    return node


@functools.cache
def _schema(api_version: str, kind: str) -> st.Node:
    name = definitions.served_definitions().kinds.get((api_version, kind))
    return st.DEDUCED_NODE if name is None else _compiler().definition(name)


async def schemas_ready() -> None:
    """The definitions are built in a thread as the apiserver starts (`fieldvalidation.load_schemas`): a write
    that comes before they are waits for them."""
    loading = load_schemas()
    if not loading.done():
        await asyncio.wrap_future(loading)


# ---- conflicts -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Conflict:
    entry: Entry
    path: fp.Path


class Conflicts(Exception):
    def __init__(self, found: list[Conflict]) -> None:
        super().__init__(f"{len(found)} conflicts")
        self.found = found


def _manager_text(entry: Entry) -> str:
    """How upstream names a conflicting manager: `"kubectl" with subresource "scale" using apps/v1`."""
    text = json.dumps(entry.manager, ensure_ascii=False)
    if entry.subresource:
        text += f" with subresource {json.dumps(entry.subresource, ensure_ascii=False)}"
    if entry.operation == UPDATE:
        text += f" using {entry.api_version}"
    return text


def conflict_error(found: list[Conflict]) -> errors.Conflict:
    """upstream's NewConflictError: 409 Conflict, one `FieldManagerConflict` cause per path."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {_manager_text(c.entry)}", "field": _text(c)}
        for c in found
    ]
    if len(found) == 1:
        message = f"Apply failed with 1 conflict: conflict with {_manager_text(found[0].entry)}: {_text(found[0])}"
    else:
        by_manager: dict[str, list[str]] = {}
        for c in found:
            by_manager.setdefault(_manager_text(c.entry), []).append(_text(c))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {path}" for path in by_manager[manager]]
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return errors.Conflict(message, details={"causes": causes})


def _text(conflict: Conflict) -> str:
    return fp.path_text(conflict.path)


# ---- the operations --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Write:
    """One write's part in field management: what is written, by whom, through which subresource."""

    resource: ResourceInfo
    manager: str
    subresource: str = ""
    has_status: bool = False
    time: str = ""  # the entries' time: the write's first use of `now`

    def now(self) -> str:
        if not self.time:
            self.time = now()
        return self.time

    @property
    def ignore(self) -> Ignore:
        return ignored_fields(self.subresource, has_status=self.has_status)

    @property
    def node(self) -> st.Node:
        return schema_for(self.resource)

    @property
    def zero(self) -> dict[str, Any]:
        return zero(self.resource.kind if self.resource.custom is None else "")


def _strip(fields: FieldSet) -> FieldSet:
    return fp.difference(fields, _STRIPPED)


_UNOWNED_META: Final = frozenset(_SERVER_META)


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without what nobody owns (identity, server-set metadata, managedFields): what an update compares. (A
    shallow copy: the rest is shared.)"""
    out = {k: v for k, v in obj.items() if k != "apiVersion" and k != "kind"}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _UNOWNED_META}
    return out


def _compare(write: Write, old: dict[str, Any], new: dict[str, Any]) -> st.Comparison:
    found = st.compare(old, new, write.node, write.zero)
    ignore = write.ignore
    if ignore is _keep_all:
        return found
    return st.Comparison(ignore(found.added), ignore(found.modified), ignore(found.removed))


def _lose(managed: Managed, changed: FieldSet, removed: FieldSet, keep: Ident | None = None) -> Managed:
    """Every manager but `keep` loses the paths that changed and the paths removed; empty entries are dropped."""
    if not changed and not removed:
        return managed
    out: Managed = {}
    for key, entry in managed.items():
        if key == keep:
            out[key] = entry
            continue
        left = fp.difference(fp.difference(entry.fields, changed), removed)
        if left is entry.fields:
            out[key] = entry
        elif left:
            out[key] = entry.changed(left)
    return out


def record_update(write: Write, old: dict[str, Any] | None, new: dict[str, Any], managed: Managed) -> Managed:
    """The entries after an update from `old` (None: a create, from the kind's zero value) to `new` by
    `write.manager` (upstream's Updater.Update run as "current-operation", then merged into the manager's own entry
    with a fresh time); `managed` itself when nothing changed."""
    if old is None:
        changed, removed = write.ignore(st.created(new, write.node, write.zero)), fp.EMPTY
    else:
        found = _compare(write, old, new)
        changed, removed = found.changed(), found.removed
    if not changed and not removed:
        return managed
    out = _lose(managed, changed, removed)
    mine = _strip(changed)
    if mine:
        key = ident(write.manager, UPDATE, write.resource.api_version, write.subresource)
        previous = out.get(key)
        fields = mine if previous is None else fp.union(previous.fields, mine)
        ordered = old is None and previous is None  # `created` walks in order, and stripping keeps it
        version, subresource = write.resource.api_version, write.subresource
        out[key] = Entry(write.manager, UPDATE, version, subresource, write.now(), fields, ordered=ordered)
    return _cap(out)


def _cap(managed: Managed) -> Managed:
    """At most ten Update entries: the oldest are merged into an `ancient-changes` entry per apiVersion."""
    if len(managed) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters = [k for k, e in managed.items() if e.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda k: (managed[k].time or "", k))
    out = dict(managed)
    first_of_version: dict[str, Ident] = {}
    count = len(updaters)
    for key in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        entry = out[key]
        version = entry.api_version
        bucket = ident(ANCIENT_CHANGES, UPDATE, version, "")
        if version not in first_of_version:
            first_of_version[version] = key
            continue
        if bucket not in out:
            first = out.pop(first_of_version[version])
            out[bucket] = Entry(ANCIENT_CHANGES, UPDATE, version, "", first.time, first.fields)
        merged = fp.union(entry.fields, out[bucket].fields)
        out[bucket] = Entry(ANCIENT_CHANGES, UPDATE, version, "", entry.time, merged)
        del out[key]
        count -= 1
    return out


def base_entries(
    old: dict[str, Any] | None, new: dict[str, Any], subresource: str
) -> tuple[Managed, list[Any] | None] | None:
    """The entries an update starts from (upstream's decodeLiveOrNew), and the stored list they are when they are
    the live object's: the write's own managedFields when it sets valid ones, an empty start when it resets them
    (`[]`), else the live object's. None: the object is not tracked."""
    live_raw = (old or {}).get("metadata", {}).get("managedFields")
    try:
        live = decode(live_raw, trusted=True)
    except InvalidManagedFields:
        live, live_raw = {}, None
    new_raw = new.get("metadata", {}).get("managedFields")
    chosen, raw = live, live_raw
    if not subresource and new_raw != live_raw:
        raw = None
        if _is_reset(new_raw):
            chosen = {}
        else:
            try:
                chosen = decode(new_raw)
            except InvalidManagedFields:
                chosen = {}
            if not chosen:
                chosen, raw = live, live_raw
    if not chosen and old is not None and old.get("metadata", {}).get("uid"):
        return None  # an update of an untracked object stays untracked
    return chosen, raw


def set_entries(obj: dict[str, Any], managed: Managed) -> None:
    meta = obj.setdefault("metadata", {})
    meta.pop("managedFields", None)
    if managed:
        meta["managedFields"] = encode(managed)


def restore_entries(obj: dict[str, Any], entries: Any) -> None:
    """Put back managedFields that a strategy's preparation replaced with the stored ones."""
    meta = obj.setdefault("metadata", {})
    meta.pop("managedFields", None)
    if entries:
        meta["managedFields"] = entries


def update(write: Write, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """Record `write` (a create when `old` is None) in `new`'s managedFields."""
    if old is not None and _unchanged(write, old, new):
        return
    base = base_entries(old, new, write.subresource)
    if base is None:
        new.get("metadata", {}).pop("managedFields", None)
        return
    managed, raw = base
    after = record_update(write, comparable(old) if old is not None else None, comparable(new), managed)
    if after is managed and raw is not None:
        restore_entries(new, list(raw))  # unchanged: as stored
    else:
        set_entries(new, after)


def _unchanged(write: Write, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A write that changes nothing (a controller's no-op update) keeps the stored managedFields: checked first, as
    it is the common case and costs one comparison."""
    live_raw = old.get("metadata", {}).get("managedFields")
    new_raw = new.get("metadata", {}).get("managedFields")
    if not (write.subresource or new_raw is None or new_raw == live_raw) or comparable(old) != comparable(new):
        return False
    restore_entries(new, list(live_raw) if isinstance(live_raw, list) else None)
    return True


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


# ---- apply -------------------------------------------------------------------------------------------------------


def decode_config(body: bytes) -> dict[str, Any]:
    """An apply request's body (YAML, or JSON, which is YAML) as an object, with upstream's 400s."""
    try:
        config = orjson.loads(body) if body.lstrip()[:1] == b"{" else load_yaml(body)
    except orjson.JSONDecodeError:
        config = _yaml(body)
    except errors.BadRequest as err:
        raise errors.BadRequest("error decoding YAML: " + err.message.rpartition("parse error: ")[2]) from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise errors.BadRequest(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{golang.json_type(config)} into Go value of type map[string]interface {{}}"
        )
    # YAML's own types (timestamps, non-string keys) as the JSON they convert to
    normal: dict[str, Any] = orjson.loads(orjson.dumps(config, option=orjson.OPT_NON_STR_KEYS))
    return normal


def _yaml(body: bytes) -> Any:
    try:
        return load_yaml(body)
    except errors.BadRequest as err:
        raise errors.BadRequest("error decoding YAML: " + err.message.rpartition("parse error: ")[2]) from None


def _gvk_text(api_version: str, kind: str) -> str:
    """Go's GroupVersionKind.String() of a configuration's apiVersion and kind (an unparsable apiVersion: none)."""
    group, version = "", ""
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
    elif "/" not in api_version:
        version = api_version
    return f"{group}/{version}, Kind={kind}"


def scale_config(config: dict[str, Any], parent: ResourceInfo, name: str) -> dict[str, Any]:
    """An applied autoscaling/v1 Scale as the configuration of its parent that it stands for: its replicas."""
    api_version = config.get("apiVersion") if isinstance(config.get("apiVersion"), str) else ""
    kind = config.get("kind") if isinstance(config.get("kind"), str) else ""
    assert isinstance(api_version, str) and isinstance(kind, str)
    if (api_version, kind) != ("autoscaling/v1", "Scale"):
        raise errors.BadRequest(f"invalid object type: {_gvk_text(api_version, kind)}")
    meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    if meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    out: dict[str, Any] = {
        "apiVersion": parent.api_version,
        "kind": parent.kind,
        "metadata": {"name": name, **{k: v for k, v in meta.items() if k in ("name", "namespace", "resourceVersion")}},
    }
    spec = config.get("spec")
    if isinstance(spec, dict) and "replicas" in spec:
        out["spec"] = {"replicas": spec["replicas"]}
    return out


def check_config(write: Write, config: dict[str, Any]) -> None:
    """What upstream refuses in an applied configuration before merging it, in its order: another kind or version
    than the URL's, managedFields, and whatever its typed conversion finds (fields the schema does not declare,
    duplicate keys in a list, values of the wrong type)."""
    api_version = config.get("apiVersion") if isinstance(config.get("apiVersion"), str) else ""
    kind = config.get("kind") if isinstance(config.get("kind"), str) else ""
    assert isinstance(api_version, str) and isinstance(kind, str)
    if api_version != write.resource.api_version or kind != write.resource.kind:
        raise errors.BadRequest(f"invalid object type: {_gvk_text(api_version, kind)}")
    meta = config.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    problems = st.check(config, write.node)
    if problems:
        detail = problems[0] if len(problems) == 1 else "errors:\n" + "\n".join(f"  {p}" for p in problems)
        name, namespace = meta.get("name", ""), meta.get("namespace", "")
        where = f"{namespace if isinstance(namespace, str) else ''}/{name if isinstance(name, str) else ''}"
        raise errors.BadRequest(
            f"failed to create typed patch object ({where}; {_gvk_text(api_version, kind)}): {detail}"
        )


def apply(write: Write, live: dict[str, Any] | None, config: dict[str, Any], *, force: bool) -> dict[str, Any]:
    """The object after applying `config` (a new object when `live` is None), with its managedFields; raises the
    409 of upstream's conflicts unless `force`."""
    check_config(write, config)
    try:
        managed = decode((live or {}).get("metadata", {}).get("managedFields"), trusted=True)
    except InvalidManagedFields as err:
        raise errors.internal_error(f"failed to decode managed fields: {err}") from None
    base = _without_managed(live) if live is not None else {}
    if not managed and live is not None:
        first = Write(write.resource, BEFORE_FIRST_APPLY, write.subresource, write.has_status, write.now())
        managed = record_update(first, None, comparable(base), {})
    try:
        merged, managed = _apply(write, base, config, managed, force=force)
    except Conflicts as conflicts:
        if write.manager != KUBECTL:
            raise conflict_error(conflicts.found) from None
        allowed = _allowed_by_last_applied(write, base)
        left = [c for c in conflicts.found if not fp.has(allowed, c.path)]
        if left:
            raise conflict_error(left) from None
        merged, managed = _apply(write, base, config, managed, force=True)
    if write.manager == KUBECTL:
        merged = _sync_last_applied(merged, config)
    out: dict[str, Any] = st.drop_nulls(merged)  # a copy all through: nothing is shared with `live` or `config`
    set_entries(out, managed)
    return out


def _apply(
    write: Write, base: dict[str, Any], config: dict[str, Any], managed: Managed, *, force: bool
) -> tuple[dict[str, Any], Managed]:
    node, ignore = write.node, write.ignore
    merged = st.merge(base, config, node)
    if not isinstance(merged, dict):
        merged = {}
    key = ident(write.manager, APPLY, write.resource.api_version, write.subresource)
    last = managed.get(key)
    mine = ignore(st.field_set(config, node))
    managed = dict(managed)
    managed[key] = Entry(write.manager, APPLY, write.resource.api_version, write.subresource, None, mine)
    if last is not None and last.fields:
        merged = _prune(merged, managed, last.fields, node)
    found = _compare(write, comparable(base), comparable(merged))
    changed = found.changed()
    conflicts = [
        Conflict(entry, path)
        for other, entry in sorted(managed.items(), key=lambda kv: kv[0])
        if other != key
        for path in fp.members(fp.intersection(entry.fields, changed))
    ]
    if conflicts and not force:
        raise Conflicts(conflicts)
    managed = _lose(managed, changed, found.removed, keep=key)
    fields = _strip(mine)
    if not fields:
        managed.pop(key, None)
    elif merged == base and last is not None and last.fields == fields:
        managed[key] = last  # nothing changed: the entry keeps its time (and its stored form)
    else:
        time = write.now() if merged != base else (last.time if last is not None else None)
        managed[key] = Entry(write.manager, APPLY, write.resource.api_version, write.subresource, time, fields)
    return merged, _cap(managed)


def _prune(merged: dict[str, Any], managed: Managed, last: FieldSet, node: st.Node) -> dict[str, Any]:
    """Remove what the applier applied last time and no longer applies, unless someone (the applier's new
    configuration included) owns it; as upstream's prune, addBackOwnedItems and addBackDanglingItems."""
    named = functools.partial(st.ensure_named_members, node=node)
    last_named = named(last)
    pruned = st.remove(merged, last_named, node)
    owned: FieldSet = {}
    for entry in managed.values():
        owned = fp.union(owned, entry.fields)
    merged_set = named(st.field_set(merged, node))
    kept = fp.union(named(st.field_set(pruned, node)), named(owned))
    pruned = st.remove(merged, fp.difference(merged_set, kept), node)
    gone = fp.intersection(fp.difference(merged_set, named(st.field_set(pruned, node))), last_named)
    out = st.remove(merged, gone, node)
    return out if isinstance(out, dict) else {}


def _allowed_by_last_applied(write: Write, live: dict[str, Any]) -> FieldSet:
    """The conflicts kubectl's server-side apply may take over: fields client-side apply last applied whose live
    value is unchanged since (upstream's lastAppliedManager)."""
    annotations = live.get("metadata", {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str) or not text:
        return {}
    try:
        last = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(last, dict):
        return {}
    node = write.node
    applied = st.field_set(last, node)
    modified = st.compare(last, live, node).modified
    return fp.difference(applied, modified)


def _sync_last_applied(merged: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """kubectl's server-side apply keeps an existing last-applied annotation in step (upstream's
    lastAppliedUpdater), so that a later client-side apply does not undo it."""
    meta = merged.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return merged
    applied = copy.deepcopy(config)
    applied_annotations = applied.get("metadata", {}).get("annotations")
    if isinstance(applied_annotations, dict):
        applied_annotations.pop(LAST_APPLIED, None)
        if not applied_annotations:
            applied["metadata"].pop("annotations")
    text = _go_encode(applied) + "\n"
    annotations = dict(annotations)
    annotations[LAST_APPLIED] = text
    if sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str)) > _MAX_ANNOTATIONS_BYTES:
        annotations.pop(LAST_APPLIED)
    return {**merged, "metadata": {**meta, "annotations": annotations}}


def _go_encode(value: Any) -> str:
    """JSON as Go's encoding/json writes an unstructured object: map keys sorted, HTML characters escaped."""
    return fp.go_json(value)
