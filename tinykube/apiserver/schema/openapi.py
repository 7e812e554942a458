"""OpenAPI v2/v3 documents for the served resources, and server-side unknown-field detection.

Why this exists: kubectl reads the server's OpenAPI before it writes anything.

* `kubectl apply`/`create -f` (default `--validate=strict`) fetch `/openapi/v3`, then the group-version
  document, and look for a `fieldValidation` query parameter on the kind's PATCH operation; when it is there
  they send `fieldValidation=Strict` and let the server reject unknown fields (`unknown_fields` below),
  otherwise they validate client-side against the schemas. With no document at all they fail before sending.
* `kubectl explain` (OpenAPI v3 since 1.27) prints the `description`s and follows `$ref`/`allOf`.
* client-side apply computes strategic-merge patches from `x-kubernetes-patch-merge-key`/`-patch-strategy`.

So the schemas must describe the *full* upstream objects. Rather than hand-writing them, they are generated
from the official `kubernetes` Python client, which ships one model class per API type with `openapi_types`
(attribute -> type string), `attribute_map` (attribute -> JSON name) and per-field descriptions. From each
kind in `tinykube.api.resources.RESOURCES` the type graph is walked and every model class becomes a definition
named as upstream names it (`io.k8s.api.core.v1.ServicePort`,
`io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`).
What the client does not carry (list/patch extensions, Quantity, MicroTime, int64) comes from tables here.

Class name -> definition name: `V1Service` is version `v1`, name `Service`; a class with a group prefix
(`CoreV1Event`, `DiscoveryV1EndpointPort`) names its package; an unprefixed class lives in the package of the
type that refers to it (the kind's group at the root), except the meta types (`_META_TYPES`) and the few core
types that other groups refer to (`_CORE_TYPES`). Extend those sets when a new group's types reach others.

Schemas are built once in a neutral form (`{"$ref": "<definition name>"}`) and rendered as Swagger 2.0
(`#/definitions/...`) or OpenAPI 3.0 (`#/components/schemas/...`, `allOf` around refs with siblings).
Everything is computed on first use and cached; importing this module imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import os
import re
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinykube.api.resources import BINDING, SCALE, TOKEN_REQUEST, ResourceInfo
from tinykube.api.resources import RESOURCES as SERVED

Schema = dict[str, Any]

KUBE_VERSION = "v1.32.0"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
TIME = f"{META}.Time"
MICRO_TIME = f"{META}.MicroTime"
FIELDS_V1 = f"{META}.FieldsV1"
PATCH = f"{META}.Patch"
STATUS = f"{META}.Status"
DELETE_OPTIONS = f"{META}.DeleteOptions"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"

# metrics.k8s.io is metrics-server's aggregated API upstream, documented by metrics-server; the Python client has
# no models to build its schemas from, so its kinds are left out of these documents (README "differs").
RESOURCES = tuple(r for r in SERVED if r.group != "metrics.k8s.io")


def group_versions() -> list[tuple[str, str]]:
    return list(dict.fromkeys((r.group, r.version) for r in RESOURCES))


_MODELS = "kubernetes.client.models"
_V2_REF = "#/definitions/"
_V3_REF = "#/components/schemas/"

# ----------------------------------------------------------------------------------------------------
# Naming: Python model class -> upstream definition name
# ----------------------------------------------------------------------------------------------------

_CLASS_RE = re.compile(r"^(?P<prefix>[A-Z][a-z]+)?(?P<version>V\d+(?:alpha\d+|beta\d+)?)(?P<name>[A-Z]\w*)$")

_META_TYPES = frozenset(
    {
        "APIGroup",
        "APIGroupList",
        "APIResource",
        "APIResourceList",
        "APIVersions",
        "Condition",
        "DeleteOptions",
        "FieldSelectorRequirement",
        "GroupVersionForDiscovery",
        "LabelSelector",
        "LabelSelectorRequirement",
        "ListMeta",
        "ManagedFieldsEntry",
        "ObjectMeta",
        "OwnerReference",
        "Preconditions",
        "ServerAddressByClientCIDR",
        "Status",
        "StatusCause",
        "StatusDetails",
        "WatchEvent",
    }
)
# Core types that other groups' types refer to (apps -> PodTemplateSpec, discovery -> ObjectReference, ...).
_CORE_TYPES = frozenset(
    {
        "EventSource",
        "LocalObjectReference",
        "NodeSelector",
        "ObjectReference",
        "PersistentVolumeClaim",
        "PersistentVolumeSpec",
        "PodTemplateSpec",
        "Toleration",
        "TopologySelectorTerm",
        "TypedLocalObjectReference",
    }
)
# Package roots that are not io.k8s.api.<first label of the group>.
_PACKAGE_ROOTS = {
    "": "io.k8s.api.core",
    "core": "io.k8s.api.core",
    "apiextensions": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "apiregistration": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
    "internal": "io.k8s.api.apiserverinternal",
}


def _package_root(group_or_prefix: str) -> str:
    """`discovery.k8s.io` / `Discovery` -> `io.k8s.api.discovery` (the version is appended by the caller)."""
    short = group_or_prefix.split(".")[0].lower()
    return _PACKAGE_ROOTS.get(short, f"io.k8s.api.{short}")


def _split_class(class_name: str) -> tuple[str, str, str] | None:
    """`CoreV1Event` -> ("Core", "v1", "Event"); `V1ObjectMeta` -> ("", "v1", "ObjectMeta")."""
    m = _CLASS_RE.match(class_name)
    if m is None:
        return None
    return m["prefix"] or "", m["version"].lower(), m["name"]


def definition_name(class_name: str, referrer_root: str) -> str:
    """Upstream definition name of a model class reached from a type in package root `referrer_root`."""
    parts = _split_class(class_name)
    if parts is None:
        return class_name
    prefix, version, name = parts
    if prefix:
        root = _package_root(prefix)
    elif name in _META_TYPES and version == "v1":
        return f"{META}.{name}"
    elif name in _CORE_TYPES:
        root = _package_root("")
    else:
        root = referrer_root
    return f"{root}.{version}.{name}"


def _root_of(definition: str) -> str:
    """`io.k8s.api.core.v1.Pod` -> `io.k8s.api.core`."""
    return definition.rsplit(".", 2)[0]


# ----------------------------------------------------------------------------------------------------
# What the Python client does not carry
# ----------------------------------------------------------------------------------------------------

_INT64_FIELDS = frozenset(
    {
        "activeDeadlineSeconds",
        "deletionGracePeriodSeconds",
        "expirationSeconds",
        "fsGroup",
        "generation",
        "gid",
        "gracePeriodSeconds",
        "observedGeneration",
        "remainingItemCount",
        "revision",
        "runAsGroup",
        "runAsUser",
        "sizeBytes",
        "startingDeadlineSeconds",
        "supplementalGroups",
        "terminationGracePeriodSeconds",
        "uid",
    }
)
# JSON names of int-or-string fields, for clients whose models carry no type annotations.
_INT_OR_STRING_FIELDS = frozenset({"maxSurge", "maxUnavailable", "minAvailable", "port", "targetPort"})

_QUANTITY_FIELDS: dict[str, frozenset[str]] = {
    "V1ContainerStatus": frozenset({"allocatedResources"}),
    "V1EmptyDirVolumeSource": frozenset({"sizeLimit"}),
    "V1LimitRangeItem": frozenset({"default", "defaultRequest", "max", "maxLimitRequestRatio", "min"}),
    "V1NodeStatus": frozenset({"allocatable", "capacity"}),
    "V1Overhead": frozenset({"podFixed"}),
    "V1PersistentVolumeClaimStatus": frozenset({"allocatedResources", "capacity"}),
    "V1PersistentVolumeSpec": frozenset({"capacity"}),
    "V1PodSpec": frozenset({"overhead"}),
    "V1ResourceFieldSelector": frozenset({"divisor"}),
    "V1ResourceQuotaSpec": frozenset({"hard"}),
    "V1ResourceQuotaStatus": frozenset({"hard", "used"}),
    "V1ResourceRequirements": frozenset({"limits", "requests"}),
    "V1VolumeResourceRequirements": frozenset({"limits", "requests"}),
}
_MICRO_TIME_FIELDS = frozenset(
    {
        ("CoreV1Event", "eventTime"),
        ("CoreV1EventSeries", "lastObservedTime"),
        ("EventsV1Event", "eventTime"),
        ("EventsV1EventSeries", "lastObservedTime"),
        ("V1LeaseSpec", "acquireTime"),
        ("V1LeaseSpec", "renewTime"),
    }
)
_OBJECT_FIELDS = {
    ("V1ManagedFieldsEntry", "fieldsV1"): FIELDS_V1,
    ("V1WatchEvent", "object"): RAW_EXTENSION,
    ("V1ControllerRevision", "data"): RAW_EXTENSION,
}
# The client drops descriptions of fields whose type is a model; these are upstream's for the common ones.
_REF_FIELD_DESCRIPTIONS = {
    "metadata": "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    "spec": "Spec defines the behavior of the {kind}. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
    "status": "Most recently observed status of the {kind}. Populated by the system. Read-only. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
}
_LIST_METADATA_DESCRIPTION = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

_SPECIAL_DEFINITIONS: dict[str, Schema] = {
    TIME: {
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and "
        "JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
        "type": "string",
        "format": "date-time",
    },
    MICRO_TIME: {
        "description": "MicroTime is version of Time with microsecond level precision.",
        "type": "string",
        "format": "date-time",
    },
    FIELDS_V1: {
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format."
        "\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or "
        "a string representing a sub-field or item. The string will follow one of these four formats: "
        "'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where "
        "<value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of "
        "a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique "
        "values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\n"
        "The exact format is defined in sigs.k8s.io/structured-merge-diff",
        "type": "object",
    },
    PATCH: {
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        "type": "object",
    },
    INT_OR_STRING: {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or "
        "YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to "
        "have, for example, a JSON field that can accept a name or number.",
        "type": "string",
        "format": "int-or-string",
    },
    QUANTITY: {
        "description": "Quantity is a fixed-point representation of a number. It provides convenient "
        "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n\n"
        "The serialization format is:\n\n``` <quantity>        ::= <signedNumber><suffix>\n```\n\n"
        'No matter what happens, a Quantity will be serialized in "canonical form" (for example 1.5Gi, '
        "100m).",
        "type": "string",
    },
    RAW_EXTENSION: {
        "description": "RawExtension is used to hold extensions in external versions. To use this, make a "
        "field which has RawExtension as its type in your external, versioned struct, and Object in your "
        "internal struct.",
        "type": "object",
    },
}
# OpenAPI v3 renders these two as upstream's builder3 does.
_V3_ONE_OF = {
    INT_OR_STRING: [{"type": "integer"}, {"type": "string"}],
    QUANTITY: [{"type": "string"}, {"type": "number"}],
}


def _map_list(*keys: str, merge: str | None = None, strategy: str = "merge") -> Schema:
    ext: Schema = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}
    if merge is not None:
        ext |= {"x-kubernetes-patch-merge-key": merge, "x-kubernetes-patch-strategy": strategy}
    return ext


_ATOMIC: Schema = {"x-kubernetes-list-type": "atomic"}
_SET: Schema = {"x-kubernetes-list-type": "set"}
_MERGED_SET: Schema = {"x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"}
_ATOMIC_MAP: Schema = {"x-kubernetes-map-type": "atomic"}
_CONDITIONS = _map_list("type", merge="type")
_CONTAINER_LISTS: dict[str, Schema] = {
    "ports": _map_list("containerPort", "protocol", merge="containerPort"),
    "env": _map_list("name", merge="name"),
    "envFrom": _ATOMIC,
    "volumeMounts": _map_list("mountPath", merge="mountPath"),
    "volumeDevices": _map_list("devicePath", merge="devicePath"),
    "command": _ATOMIC,
    "args": _ATOMIC,
    "resizePolicy": _ATOMIC,
    "restartPolicyRules": _ATOMIC,
}
_CORE = "io.k8s.api.core.v1"
# Field extensions, as upstream's `+listType`, `+patchStrategy`, `+patchMergeKey`, `+mapType` markers.
_FIELD_EXTENSIONS: dict[str, dict[str, Schema]] = {
    f"{META}.ObjectMeta": {
        "finalizers": _MERGED_SET,
        "ownerReferences": _map_list("uid", merge="uid"),
        "managedFields": _ATOMIC,
    },
    f"{META}.LabelSelector": {"matchExpressions": _ATOMIC},
    f"{META}.LabelSelectorRequirement": {"values": _ATOMIC},
    f"{META}.StatusDetails": {"causes": _ATOMIC},
    f"{META}.DeleteOptions": {"dryRun": _ATOMIC},
    f"{_CORE}.PodSpec": {
        "volumes": _map_list("name", merge="name", strategy="merge,retainKeys"),
        "initContainers": _map_list("name", merge="name"),
        "containers": _map_list("name", merge="name"),
        "ephemeralContainers": _map_list("name", merge="name"),
        "imagePullSecrets": _map_list("name", merge="name"),
        "hostAliases": _map_list("ip", merge="ip"),
        "tolerations": _ATOMIC,
        "topologySpreadConstraints": _map_list("topologyKey", "whenUnsatisfiable", merge="topologyKey"),
        "readinessGates": _ATOMIC,
        "schedulingGates": _map_list("name", merge="name"),
        "resourceClaims": _map_list("name", merge="name", strategy="merge,retainKeys"),
        "nodeSelector": _ATOMIC_MAP,
    },
    f"{_CORE}.Container": _CONTAINER_LISTS,
    f"{_CORE}.EphemeralContainer": _CONTAINER_LISTS,
    f"{_CORE}.PodStatus": {
        "conditions": _CONDITIONS,
        "podIPs": _map_list("ip", merge="ip"),
        "hostIPs": {**_ATOMIC, "x-kubernetes-patch-merge-key": "ip", "x-kubernetes-patch-strategy": "merge"},
        "initContainerStatuses": _ATOMIC,
        "containerStatuses": _ATOMIC,
        "ephemeralContainerStatuses": _ATOMIC,
        "resourceClaimStatuses": _map_list("name", merge="name", strategy="merge,retainKeys"),
    },
    f"{_CORE}.ContainerStatus": {"volumeMounts": _map_list("mountPath", merge="mountPath")},
    f"{_CORE}.ResourceRequirements": {"claims": _map_list("name")},
    f"{_CORE}.PodSecurityContext": {"supplementalGroups": _ATOMIC, "sysctls": _ATOMIC},
    f"{_CORE}.Capabilities": {"add": _ATOMIC, "drop": _ATOMIC},
    f"{_CORE}.NodeSelector": {"nodeSelectorTerms": _ATOMIC},
    f"{_CORE}.NodeSelectorTerm": {"matchExpressions": _ATOMIC, "matchFields": _ATOMIC},
    f"{_CORE}.NodeSelectorRequirement": {"values": _ATOMIC},
    f"{_CORE}.NodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": _ATOMIC},
    f"{_CORE}.PodAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": _ATOMIC,
        "preferredDuringSchedulingIgnoredDuringExecution": _ATOMIC,
    },
    f"{_CORE}.PodAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": _ATOMIC,
        "preferredDuringSchedulingIgnoredDuringExecution": _ATOMIC,
    },
    f"{_CORE}.PodAffinityTerm": {
        "namespaces": _ATOMIC,
        "matchLabelKeys": _ATOMIC,
        "mismatchLabelKeys": _ATOMIC,
    },
    f"{_CORE}.TopologySpreadConstraint": {"matchLabelKeys": _ATOMIC},
    f"{_CORE}.PodDNSConfig": {"nameservers": _ATOMIC, "searches": _ATOMIC, "options": _ATOMIC},
    f"{_CORE}.HostAlias": {"hostnames": _ATOMIC},
    f"{_CORE}.ExecAction": {"command": _ATOMIC},
    f"{_CORE}.HTTPGetAction": {"httpHeaders": _ATOMIC},
    f"{_CORE}.ConfigMapVolumeSource": {"items": _ATOMIC},
    f"{_CORE}.SecretVolumeSource": {"items": _ATOMIC},
    f"{_CORE}.DownwardAPIVolumeSource": {"items": _ATOMIC},
    f"{_CORE}.ConfigMapProjection": {"items": _ATOMIC},
    f"{_CORE}.SecretProjection": {"items": _ATOMIC},
    f"{_CORE}.DownwardAPIProjection": {"items": _ATOMIC},
    f"{_CORE}.ProjectedVolumeSource": {"sources": _ATOMIC},
    f"{_CORE}.PersistentVolumeClaimSpec": {"accessModes": _ATOMIC},
    f"{_CORE}.ServiceSpec": {
        "ports": _map_list("port", "protocol", merge="port"),
        "selector": _ATOMIC_MAP,
        "clusterIPs": _ATOMIC,
        "externalIPs": _ATOMIC,
        "loadBalancerSourceRanges": _ATOMIC,
        "ipFamilies": _ATOMIC,
    },
    f"{_CORE}.ServiceStatus": {"conditions": _CONDITIONS},
    f"{_CORE}.LoadBalancerStatus": {"ingress": _ATOMIC},
    f"{_CORE}.LoadBalancerIngress": {"ports": _ATOMIC},
    f"{_CORE}.Endpoints": {"subsets": _ATOMIC},
    f"{_CORE}.EndpointSubset": {"addresses": _ATOMIC, "notReadyAddresses": _ATOMIC, "ports": _ATOMIC},
    f"{_CORE}.NodeSpec": {"podCIDRs": _MERGED_SET, "taints": _ATOMIC},
    f"{_CORE}.NodeStatus": {
        "conditions": _CONDITIONS,
        "addresses": _map_list("type", merge="type"),
        "images": _ATOMIC,
        "volumesInUse": _ATOMIC,
        "volumesAttached": _ATOMIC,
        "runtimeHandlers": _ATOMIC,
    },
    f"{_CORE}.ContainerImage": {"names": _ATOMIC},
    f"{_CORE}.NamespaceSpec": {"finalizers": _ATOMIC},
    f"{_CORE}.NamespaceStatus": {"conditions": _CONDITIONS},
    "io.k8s.api.discovery.v1.EndpointSlice": {"endpoints": _ATOMIC, "ports": _ATOMIC},
    "io.k8s.api.discovery.v1.Endpoint": {"addresses": _SET},
    "io.k8s.api.discovery.v1.EndpointHints": {"forZones": _ATOMIC, "forNodes": _ATOMIC},
    "io.k8s.api.apps.v1.DeploymentStatus": {"conditions": _CONDITIONS},
    "io.k8s.api.apps.v1.ReplicaSetStatus": {"conditions": _CONDITIONS},
    "io.k8s.api.apps.v1.StatefulSetStatus": {"conditions": _CONDITIONS},
    "io.k8s.api.apps.v1.DaemonSetStatus": {"conditions": _CONDITIONS},
    "io.k8s.api.apps.v1.StatefulSetSpec": {"volumeClaimTemplates": _ATOMIC},
}
# Struct-level `+structType=atomic` (x-kubernetes-map-type on the definition itself).
_ATOMIC_STRUCTS = frozenset(
    {
        f"{META}.LabelSelector",
        f"{META}.OwnerReference",
        f"{_CORE}.ObjectReference",
        f"{_CORE}.LocalObjectReference",
        f"{_CORE}.TypedLocalObjectReference",
        f"{_CORE}.NodeSelector",
        f"{_CORE}.NodeSelectorTerm",
        f"{_CORE}.ConfigMapKeySelector",
        f"{_CORE}.SecretKeySelector",
        f"{_CORE}.ObjectFieldSelector",
        f"{_CORE}.ResourceFieldSelector",
        f"{_CORE}.EndpointAddress",
        f"{_CORE}.EndpointPort",
        f"{_CORE}.TopologySelectorTerm",
        "io.k8s.api.discovery.v1.EndpointPort",
    }
)

# ----------------------------------------------------------------------------------------------------
# Reading the Python client's model classes
# ----------------------------------------------------------------------------------------------------


def _model(class_name: str) -> type | None:
    models = importlib.import_module(_MODELS)
    cls = getattr(models, class_name, None)
    return cls if inspect.isclass(cls) and hasattr(cls, "openapi_types") else None


def _class_description(cls: type) -> str:
    doc = inspect.cleandoc(cls.__doc__ or "")
    text = doc.split("Attributes:")[0].strip()
    return "" if text.startswith("NOTE: This class is auto generated") else text


def _field_description(cls: type, attr: str) -> str:
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict) and attr in fields:
        return str(getattr(fields[attr], "description", None) or "")
    prop = getattr(cls, attr, None)  # pre-pydantic clients: the property getter's docstring
    lines = inspect.cleandoc(getattr(prop, "__doc__", None) or "").splitlines()[1:]
    body = [ln.replace("# noqa: E501", "").strip() for ln in lines if not ln.startswith(":")]
    return " ".join(ln for ln in body if ln)


def _field_required(cls: type, attr: str) -> bool:
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict) and attr in fields:
        return bool(fields[attr].is_required())
    return False


def _annotation_types(annotation: Any) -> set[Any]:
    """Leaf types of a (possibly Optional/Union/Annotated) annotation."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return _annotation_types(args[0])
    if not args:
        return {annotation}
    return set().union(*(_annotation_types(a) for a in args))


def _is_int_or_string(cls: type, attr: str, json_name: str) -> bool:
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict) and attr in fields:
        return {int, str} <= _annotation_types(fields[attr].annotation)
    return json_name in _INT_OR_STRING_FIELDS


_LIST_TYPE = re.compile(r"^[Ll]ist\[(?P<inner>.*)\]$")
_DICT_TYPE = re.compile(r"^(?:Dict\[str, (?P<a>.*)\]|dict\(str, (?P<b>.*)\))$")
_PRIMITIVES: dict[str, Schema] = {
    "str": {"type": "string"},
    "bool": {"type": "boolean"},
    "float": {"type": "number", "format": "double"},
    "bytes": {"type": "string", "format": "byte"},
    "object": {"type": "object"},
}


@dataclass(frozen=True, slots=True)
class _Field:
    """One property being typed: where it is (for the override tables) and which package refers to models."""

    cls: type
    attr: str
    json_name: str
    root: str


# ----------------------------------------------------------------------------------------------------
# Building the neutral definitions
# ----------------------------------------------------------------------------------------------------


class _Builder:
    """Walks the model-class graph from the kinds, filling `definitions` (neutral refs: bare names)."""

    def __init__(self) -> None:
        self.definitions: dict[str, Schema] = dict(_SPECIAL_DEFINITIONS)
        self._names: dict[str, str] = {}

    def add_class(self, class_name: str, root: str) -> str:
        """Definition name for `class_name` (first naming wins), building its schema on first sight."""
        if class_name in self._names:
            return self._names[class_name]
        name = definition_name(class_name, root)
        self._names[class_name] = name
        cls = _model(class_name)
        if cls is None:
            self.definitions[name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return name
        self.definitions[name] = {}  # placeholder: breaks cycles (JSONSchemaProps refers to itself)
        self.definitions[name] = self._class_schema(cls, name)
        return name

    def _class_schema(self, cls: type, name: str) -> Schema:
        properties: Schema = {}
        required: list[str] = []
        extensions = _FIELD_EXTENSIONS.get(name, {})
        types: dict[str, str] = getattr(cls, "openapi_types", {})
        json_names: dict[str, str] = getattr(cls, "attribute_map", {})
        for attr, type_str in sorted(types.items(), key=lambda kv: json_names[kv[0]]):
            json_name = json_names[attr]
            field = _Field(cls, attr, json_name, _root_of(name))
            prop = self._type_schema(type_str, field)
            description = _field_description(cls, attr)
            if description:
                prop["description"] = description
            prop |= extensions.get(json_name, {})
            properties[json_name] = prop
            if _field_required(cls, attr):
                required.append(json_name)
        schema: Schema = {"type": "object", "properties": properties}
        description = _class_description(cls)
        if description:
            schema["description"] = description
        if required:
            schema["required"] = required
        if name in _ATOMIC_STRUCTS:
            schema["x-kubernetes-map-type"] = "atomic"
        return schema

    def _type_schema(self, type_str: str, field: _Field) -> Schema:
        if m := _LIST_TYPE.match(type_str):
            return {"type": "array", "items": self._element_schema(m["inner"], field)}
        if m := _DICT_TYPE.match(type_str):
            return {"type": "object", "additionalProperties": self._element_schema(m["a"] or m["b"], field)}
        return self._element_schema(type_str, field)

    def _element_schema(self, type_str: str, field: _Field) -> Schema:
        cls_name = field.cls.__name__
        if field.json_name in _QUANTITY_FIELDS.get(cls_name, ()) and type_str == "str":
            return {"$ref": QUANTITY}
        if type_str == "datetime":
            return {"$ref": MICRO_TIME if (cls_name, field.json_name) in _MICRO_TIME_FIELDS else TIME}
        if type_str == "int":
            fmt = "int64" if field.json_name in _INT64_FIELDS else "int32"
            return {"type": "integer", "format": fmt}
        if type_str == "object":
            return self._object_schema(field)
        if type_str in _PRIMITIVES:
            return dict(_PRIMITIVES[type_str])
        if _LIST_TYPE.match(type_str) or _DICT_TYPE.match(type_str):
            return self._type_schema(type_str, field)
        return {"$ref": self.add_class(type_str, field.root)}

    def _object_schema(self, field: _Field) -> Schema:
        special = _OBJECT_FIELDS.get((field.cls.__name__, field.json_name))
        if special is not None:
            return {"$ref": special}
        if _is_int_or_string(field.cls, field.attr, field.json_name):
            return {"$ref": INT_OR_STRING}
        return {"type": "object"}


def _kind_class(info: ResourceInfo, kind: str) -> str:
    """Python class for a kind: `CoreV1Event` when the client disambiguates, else `V1Service`."""
    version = info.version[0].upper() + info.version[1:]
    prefix = (info.group.split(".")[0] or "core").capitalize()
    prefixed = f"{prefix}{version}{kind}"
    return prefixed if _model(prefixed) is not None else f"{version}{kind}"


def _gvk(info: ResourceInfo, kind: str) -> dict[str, str]:
    return {"group": info.group, "kind": kind, "version": info.version}


def _describe_top_level(schema: Schema, kind: str, is_list: bool) -> None:
    """Fill in the descriptions of metadata/spec/status that the client does not carry."""
    for field, template in _REF_FIELD_DESCRIPTIONS.items():
        prop = schema.get("properties", {}).get(field)
        if prop is not None and "description" not in prop:
            text = _LIST_METADATA_DESCRIPTION if is_list and field == "metadata" else template
            prop["description"] = text.format(kind=kind.lower())


@dataclass(frozen=True, slots=True)
class _Definitions:
    schemas: dict[str, Schema]
    kinds: dict[tuple[str, str], str]  # (apiVersion, kind) -> definition name (kinds and their lists)


def _cache_file() -> Path:
    """Where the built definitions are kept between runs: named after what they are built from (this module, the
    `kubernetes` client's version, the served resources), so any change builds them afresh."""
    key = hashlib.sha256(Path(__file__).read_bytes())
    key.update(importlib.metadata.version("kubernetes").encode())
    key.update(repr(RESOURCES).encode())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tinykube" / f"openapi-{key.hexdigest()[:16]}.json"


@functools.cache
def _definitions() -> _Definitions:
    """Building them imports ~200 model classes of the `kubernetes` client (~0.9 s): read them from the cache
    file when there is one, and write it when there is not (best effort: a read-only home just rebuilds)."""
    cache = _cache_file()
    try:
        stored = json.loads(cache.read_bytes())
        return _Definitions(stored["schemas"], {(v, k): name for v, k, name in stored["kinds"]})
    except (OSError, ValueError, KeyError, TypeError):
        pass
    built = _build_definitions()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        kinds = [[v, k, name] for (v, k), name in built.kinds.items()]
        partial.write_text(json.dumps({"schemas": built.schemas, "kinds": kinds}))
        partial.replace(cache)
    except OSError:
        pass
    return built


def _build_definitions() -> _Definitions:
    builder = _Builder()
    kinds: dict[tuple[str, str], str] = {}
    for info in RESOURCES:
        root = _package_root(info.group)
        listed = "list" in info.verbs  # the review kinds have no List kind
        for kind, is_list in ((info.kind, False), *(((info.list_kind, True),) if listed else ())):
            name = builder.add_class(_kind_class(info, kind), root)
            schema = builder.definitions[name]
            schema["x-kubernetes-group-version-kind"] = [_gvk(info, kind)]
            _describe_top_level(schema, kind, is_list)
            kinds[(info.group_version, kind)] = name
    for info, served in ((SCALE, "scale"), (BINDING, "binding"), (TOKEN_REQUEST, "token")):  # subresources' kinds
        if any(served in r.subresources for r in RESOURCES):
            name = builder.add_class(_kind_class(info, info.kind), _package_root(info.group))
            builder.definitions[name]["x-kubernetes-group-version-kind"] = [_gvk(info, info.kind)]
            _describe_top_level(builder.definitions[name], info.kind, False)
            kinds[(info.group_version, info.kind)] = name
    for class_name in ("V1Status", "V1DeleteOptions", "V1APIResourceList", "V1APIVersions", "V1APIGroupList"):
        builder.add_class(class_name, META)
    schemas = builder.definitions
    schemas[STATUS]["x-kubernetes-group-version-kind"] = [{"group": "", "kind": "Status", "version": "v1"}]
    schemas[DELETE_OPTIONS]["x-kubernetes-group-version-kind"] = [
        {"group": g, "kind": "DeleteOptions", "version": v} for g, v in group_versions()
    ]
    return _Definitions(schemas, kinds)


# ----------------------------------------------------------------------------------------------------
# Paths and operations (neutral; rendered per version)
# ----------------------------------------------------------------------------------------------------

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)

_PARAMS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": (
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement '
        "bookmarks may ignore this flag and bookmarks are sent at the server's discretion.",
    ),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server. Since this value is "
        "server defined, clients may only use the continue value from a previous query result with identical "
        "query parameters (except for the value of continue).",
    ),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized "
        "dryRun directive will result in an error response and no further processing of the request. Valid "
        "values are: - All: all dry run stages will be processed",
    ),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes. The value "
        "must be less than or 128 characters long, and only contain printable characters, as defined by "
        "https://golang.org/pkg/unicode/#IsPrint.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
        "containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown "
        "fields that are silently dropped from the object, and will ignore all but the last duplicate field "
        "that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a "
        "warning via the standard warning response header for each unknown field that is dropped from the "
        "object, and for each duplicate field that is encountered. The request will still succeed if there "
        "are no other errors, and will only persist the last of any duplicate fields. This is the default in "
        "v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be "
        "dropped from the object, or if any duplicate fields are present. The error returned from the server "
        "will contain all unknown and duplicate fields encountered.",
    ),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by '
        "other people. Force flag must be unset for non-apply patch requests.",
    ),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted. Value must be non-negative integer. "
        "The value zero indicates delete immediately. If this value is nil, the default grace period for the "
        "specified type will be used. Defaults to a per object value if not specified. zero means delete "
        "immediately.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow "
        "fails with a corrupt object error.",
    ),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    "limit": (
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items exist, the server "
        "will set the `continue` field on the list metadata to a value that can be used with the same "
        "initial query to retrieve the next set of results.",
    ),
    "name": ("string", "name of the {kind}"),
    "namespace": ("string", "object name and auth scope, such as for teams and projects"),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the "
        "dependent objects be orphaned.",
    ),
    "pretty": (
        "string",
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a "
        "browser or command-line HTTP tool (curl and wget).",
    ),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan' - orphan the "
        "dependents; 'Background' - allow the garbage collector to delete the dependents in the background; "
        "'Foreground' - a cascading policy that deletes all dependents in the foreground.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. Defaults to unset",
    ),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will "
        "begin with synthetic events to produce the current state of objects in the collection.",
    ),
    "timeoutSeconds": (
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity "
        "or inactivity.",
    ),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove "
        "notifications. Specify resourceVersion.",
    ),
}


@dataclass(frozen=True, slots=True)
class _Op:
    method: str
    action: str
    operation_id: str
    description: str
    query: tuple[str, ...] = ()
    body: str | None = None  # definition name of the request body
    patch: bool = False
    patch_types: tuple[str, ...] = ()  # what a PATCH takes, where not every type (custom resources: no strategic)
    responses: tuple[tuple[str, str, str | None], ...] = ()  # (code, description, definition name)
    gvk: dict[str, str] | None = None
    tag: str = ""


@dataclass(frozen=True, slots=True)
class _PathItem:
    path: str
    params: tuple[str, ...]  # path-level parameters: name, namespace, pretty
    ops: tuple[_Op, ...]
    kind: str = ""  # for the `name` parameter's description


def _ok(definition: str, *extra: str) -> tuple[tuple[str, str, str | None], ...]:
    described = {"200": "OK", "201": "Created", "202": "Accepted"}
    codes = ("200", *extra)
    return (*((c, described[c], definition) for c in codes), ("401", "Unauthorized", None))


def _gv_id(group: str, version: str) -> str:
    """Operation-id infix: ("", "v1") -> "CoreV1"; ("discovery.k8s.io", "v1") -> "DiscoveryV1"."""
    words = group.removesuffix(".k8s.io").split(".") if group else ["core"]
    return "".join(w.capitalize() for w in words) + version.capitalize()


def _gv_tag(group: str, version: str) -> str:
    ident = _gv_id(group, version)
    head = ident[: -len(version)]
    return f"{head[0].lower()}{head[1:]}_{version}"


def _gv_prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _resource_paths(info: ResourceInfo, kind_def: str, list_def: str) -> Iterator[_PathItem]:
    gv, kind, tag = _gv_id(info.group, info.version), info.kind, _gv_tag(info.group, info.version)
    gvk = _gvk(info, kind)
    scope = "Namespaced" if info.namespaced else ""
    base = _gv_prefix(info.group, info.version)
    scoped = f"{base}/namespaces/{{namespace}}" if info.namespaced else base
    collection = f"{scoped}/{info.plural}"
    ns_params = ("namespace",) if info.namespaced else ()

    def op(method: str, action: str, verb: str, desc: str, suffix: str = "", **kw: Any) -> _Op:
        op_id = f"{verb}{gv}{scope}{kind}{suffix}"
        return _Op(method, action, op_id, desc, gvk=gvk, tag=tag, **kw)

    verbs = set(info.verbs)
    collection_ops = []
    if "list" in verbs:
        collection_ops.append(
            op(
                "get",
                "list",
                "list",
                f"list or watch objects of kind {kind}",
                query=_LIST_PARAMS,
                responses=_ok(list_def),
            )
        )
    if "create" in verbs:
        collection_ops.append(
            op(
                "post",
                "post",
                "create",
                f"create a {kind}",
                query=_WRITE_PARAMS,
                body=kind_def,
                responses=_ok(kind_def, "201", "202"),
            )
        )
    if "deletecollection" in verbs:
        collection_ops.append(
            _Op(
                "delete",
                "deletecollection",
                f"delete{gv}Collection{scope}{kind}",
                f"delete collection of {kind}",
                query=_DELETE_PARAMS + _LIST_PARAMS,
                body=DELETE_OPTIONS,
                responses=_ok(STATUS),
                gvk=gvk,
                tag=tag,
            )
        )
    yield _PathItem(collection, (*ns_params, "pretty"), tuple(collection_ops))
    if "get" not in verbs:  # the reviews: answered once, nothing to read back
        return
    read, replace, patch = _item_ops(op, kind_def, f"the specified {kind}")
    item_ops = [read] if verbs == {"get", "list"} else [read, replace, patch]
    if "delete" in verbs:
        delete = op(
            "delete",
            "delete",
            "delete",
            f"delete a {kind}",
            query=_DELETE_PARAMS,
            body=DELETE_OPTIONS,
            responses=_ok(STATUS, "202"),
        )
        item_ops.append(delete)
    yield _PathItem(f"{collection}/{{name}}", ("name", *ns_params, "pretty"), tuple(item_ops), kind)
    if info.namespaced and "list" in verbs:
        yield _PathItem(
            f"{base}/{info.plural}",
            ("pretty",),
            (
                _Op(
                    "get",
                    "list",
                    f"list{gv}{kind}ForAllNamespaces",
                    f"list or watch objects of kind {kind}",
                    query=_LIST_PARAMS,
                    responses=_ok(list_def),
                    gvk=gvk,
                    tag=tag,
                ),
            ),
        )
    yield from _subresource_paths(info, collection, ns_params, op, kind_def)


def _subresource_paths(
    info: ResourceInfo, collection: str, ns_params: tuple[str, ...], op: Callable[..., _Op], kind_def: str
) -> Iterator[_PathItem]:
    kind = info.kind
    params = ("name", *ns_params, "pretty")
    for sub in ("status", "approval"):
        if sub in info.subresources:
            yield _PathItem(
                f"{collection}/{{name}}/{sub}",
                params,
                _item_ops(op, kind_def, f"{sub} of the specified {kind}", sub.capitalize()),
                kind,
            )
    if "token" in info.subresources:
        token_def = _definitions().kinds[(TOKEN_REQUEST.group_version, TOKEN_REQUEST.kind)]
        create = _create_op(op, token_def, f"token of a {kind}", "Token")
        yield _PathItem(
            f"{collection}/{{name}}/token",
            params,
            (dataclasses.replace(create, gvk=_gvk(TOKEN_REQUEST, TOKEN_REQUEST.kind)),),
            kind,
        )
    if "scale" in info.subresources:
        scale_def = _definitions().kinds[(SCALE.group_version, SCALE.kind)]
        ops = _item_ops(op, scale_def, f"scale of the specified {kind}", "Scale")
        scale_gvk = _gvk(SCALE, SCALE.kind)  # the operations take and return a Scale, not the parent's kind
        yield _PathItem(
            f"{collection}/{{name}}/scale",
            params,
            tuple(dataclasses.replace(o, gvk=scale_gvk) for o in ops),
            kind,
        )
    if "finalize" in info.subresources:
        yield _PathItem(
            f"{collection}/{{name}}/finalize",
            params,
            (_replace_op(op, kind_def, f"finalize of the specified {kind}", "Finalize"),),
            kind,
        )
    if "binding" in info.subresources:
        binding_def = _definitions().kinds[(BINDING.group_version, BINDING.kind)]
        create = _create_op(op, binding_def, f"binding of a {kind}", "Binding")
        yield _PathItem(
            f"{collection}/{{name}}/binding",
            params,
            (dataclasses.replace(create, gvk=_gvk(BINDING, BINDING.kind)),),
            kind,
        )


def _bindings_paths(group: str, version: str) -> Iterator[_PathItem]:
    """Upstream's older, create-only `bindings` collection beside `pods/{name}/binding`."""
    if (group, version) != (BINDING.group, BINDING.version) or not any("binding" in r.subresources for r in RESOURCES):
        return
    binding_def = _definitions().kinds[(BINDING.group_version, BINDING.kind)]
    gv, tag = _gv_id(group, version), _gv_tag(group, version)

    def op(method: str, action: str, verb: str, desc: str, suffix: str = "", **kw: Any) -> _Op:
        return _Op(
            method,
            action,
            f"{verb}{gv}Namespaced{BINDING.kind}{suffix}",
            desc,
            gvk=_gvk(BINDING, BINDING.kind),
            tag=tag,
            **kw,
        )

    create = _create_op(op, binding_def, f"a {BINDING.kind}")
    yield _PathItem(
        f"{_gv_prefix(group, version)}/namespaces/{{namespace}}/{BINDING.plural}", ("namespace", "pretty"), (create,)
    )


def _create_op(op: Callable[..., _Op], kind_def: str, what: str, suffix: str = "") -> _Op:
    return op(
        "post",
        "post",
        "create",
        f"create {what}",
        suffix,
        query=_WRITE_PARAMS,
        body=kind_def,
        responses=_ok(kind_def, "201", "202"),
    )


def _replace_op(op: Callable[..., _Op], kind_def: str, what: str, suffix: str = "") -> _Op:
    return op(
        "put",
        "put",
        "replace",
        f"replace {what}",
        suffix,
        query=_WRITE_PARAMS,
        body=kind_def,
        responses=_ok(kind_def, "201"),
    )


def _item_ops(op: Callable[..., _Op], kind_def: str, what: str, suffix: str = "") -> tuple[_Op, _Op, _Op]:
    """read, replace and patch of one object (`what` = "the specified Service") or of one of its subresources."""
    return (
        op("get", "get", "read", f"read {what}", suffix, responses=_ok(kind_def)),
        _replace_op(op, kind_def, what, suffix),
        op(
            "patch",
            "patch",
            "patch",
            f"partially update {what}",
            suffix,
            query=(*_WRITE_PARAMS, "force"),
            body=PATCH,
            patch=True,
            responses=_ok(kind_def, "201"),
        ),
    )


def _discovery_paths(group: str, version: str) -> list[_PathItem]:
    """The `/api/v1/` (`/apis/<group>/<version>/`) APIResourceList operation of a group-version document."""
    gv = _gv_id(group, version)
    return [
        _PathItem(
            f"{_gv_prefix(group, version)}/",
            (),
            (
                _Op(
                    "get",
                    "",
                    f"get{gv}APIResources",
                    "get available resources",
                    responses=_ok(f"{META}.APIResourceList"),
                    tag=_gv_tag(group, version),
                ),
            ),
        )
    ]


def _gv_paths(group: str, version: str) -> list[_PathItem]:
    defs = _definitions()
    items = _discovery_paths(group, version)
    for info in RESOURCES:
        if (info.group, info.version) == (group, version):
            kind_def = defs.kinds[(info.group_version, info.kind)]
            list_def = defs.kinds.get((info.group_version, info.list_kind), "")
            items.extend(_resource_paths(info, kind_def, list_def))
    items.extend(_bindings_paths(group, version))
    return items


def _root_paths(doc_path: str) -> list[_PathItem] | None:
    """`api`, `apis` and `apis/<group>` documents: the discovery GETs upstream publishes under those names."""
    if doc_path == "api":
        return [
            _PathItem(
                "/api/",
                (),
                (
                    _Op(
                        "get",
                        "",
                        "getCoreAPIVersions",
                        "get available API versions",
                        responses=_ok(f"{META}.APIVersions"),
                        tag="core",
                    ),
                ),
            )
        ]
    if doc_path == "apis":
        return [
            _PathItem(
                "/apis/",
                (),
                (
                    _Op(
                        "get",
                        "",
                        "getAPIVersions",
                        "get available API versions",
                        responses=_ok(f"{META}.APIGroupList"),
                        tag="apis",
                    ),
                ),
            )
        ]
    groups = {g for g, _ in group_versions() if g}
    group = doc_path.removeprefix("apis/")
    if doc_path.startswith("apis/") and group in groups:
        ident = _gv_id(group, "")
        return [
            _PathItem(
                f"/apis/{group}/",
                (),
                (
                    _Op(
                        "get",
                        "",
                        f"get{ident}APIGroup",
                        "get information of a group",
                        responses=_ok(f"{META}.APIGroup"),
                        tag=ident[0].lower() + ident[1:],
                    ),
                ),
            )
        ]
    return None


def _doc_paths(doc_path: str) -> list[_PathItem] | None:
    for group, version in group_versions():
        if doc_path == _gv_prefix(group, version).lstrip("/"):
            return _gv_paths(group, version)
    return _root_paths(doc_path)


# ----------------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------------


def _render_refs(node: Any, prefix: str, wrap: bool) -> Any:
    """Neutral `{"$ref": name, ...}` -> `{"$ref": prefix+name, ...}`; `wrap` puts siblings beside an allOf."""
    if isinstance(node, list):
        return [_render_refs(v, prefix, wrap) for v in node]
    if not isinstance(node, dict):
        return node
    if not isinstance(node.get("$ref"), str):  # JSONSchemaProps has a *property* named `$ref`
        return {k: _render_refs(v, prefix, wrap) for k, v in node.items()}
    out = {k: _render_refs(v, prefix, wrap) for k, v in node.items() if k != "$ref"}
    ref = {"$ref": prefix + node["$ref"]}
    if not out:
        return ref
    return {"allOf": [ref], **out} if wrap else {**ref, **out}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for v in node.values():
            yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def _closure(roots: Iterable[str]) -> dict[str, Schema]:
    """The definitions reachable from `roots`, sorted by name."""
    schemas = _definitions().schemas
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_refs(schemas[name]))
    return {name: schemas[name] for name in sorted(seen)}


def _path_roots(items: list[_PathItem]) -> set[str]:
    roots: set[str] = set()
    for item in items:
        for op in item.ops:
            roots.update(d for _, _, d in op.responses if d)
            if op.body:
                roots.add(op.body)
    return roots


def _param_text(name: str, kind: str) -> tuple[str, str]:
    typ, text = _PARAMS[name]
    return typ, text.format(kind=kind) if name == "name" else text


def _v2_param(name: str, location: str, kind: str = "") -> Schema:
    typ, text = _param_text(name, kind)
    param: Schema = {"description": text, "in": location, "name": name, "type": typ, "uniqueItems": True}
    if location == "path":
        param["required"] = True
    return param


def _v3_param(name: str, location: str, kind: str = "") -> Schema:
    typ, text = _param_text(name, kind)
    param: Schema = {"description": text, "in": location, "name": name, "schema": {"type": typ, "uniqueItems": True}}
    if location == "path":
        param["required"] = True
    return param


def _location(name: str) -> str:
    return "path" if name in ("name", "namespace") else "query"


def _common_op(op: _Op) -> Schema:
    out: Schema = {"description": op.description, "operationId": op.operation_id, "tags": [op.tag]}
    if op.action:
        out["x-kubernetes-action"] = op.action
    if op.gvk:
        out["x-kubernetes-group-version-kind"] = op.gvk
    return out


def _v2_op(op: _Op) -> Schema:
    out = _common_op(op)
    params = [_v2_param(q, "query") for q in op.query]
    if op.body:
        params.insert(0, {"in": "body", "name": "body", "required": op.method != "delete", "schema": {"$ref": op.body}})
    if params:
        out["parameters"] = params
    out["consumes"] = list(op.patch_types or _PATCH_TYPES) if op.patch else ["*/*"]
    out["produces"] = ["application/json"]
    out["schemes"] = ["https"]
    out["responses"] = {
        code: {"description": text, **({"schema": {"$ref": d}} if d else {})} for code, text, d in op.responses
    }
    return out


def _v3_content(definition: str | None) -> Schema:
    return {"content": {"application/json": {"schema": {"$ref": definition}}}} if definition else {}


def _v3_op(op: _Op) -> Schema:
    out = _common_op(op)
    if op.query:
        out["parameters"] = [_v3_param(q, "query") for q in op.query]
    if op.body:
        types = (op.patch_types or _PATCH_TYPES) if op.patch else ("*/*",)
        out["requestBody"] = {"content": {t: {"schema": {"$ref": op.body}} for t in types}}
        if op.method != "delete":
            out["requestBody"]["required"] = True
    out["responses"] = {code: {"description": text, **_v3_content(d)} for code, text, d in op.responses}
    return out


def _render_paths(items: list[_PathItem], v3: bool) -> Schema:
    render_op, render_param = (_v3_op, _v3_param) if v3 else (_v2_op, _v2_param)
    paths: Schema = {}
    for item in items:
        entry: Schema = {op.method: render_op(op) for op in item.ops}
        if item.params:
            entry["parameters"] = [render_param(p, _location(p), item.kind) for p in item.params]
        paths[item.path] = entry
    return paths


def _v3_schemas(schemas: dict[str, Schema]) -> dict[str, Schema]:
    out = {}
    for name, schema in schemas.items():
        rendered = _render_refs(schema, _V3_REF, wrap=True)
        if name in _V3_ONE_OF:
            rendered = {"description": rendered["description"], "oneOf": _V3_ONE_OF[name]}
            if name == INT_OR_STRING:
                rendered["format"] = "int-or-string"
        out[name] = rendered
    return out


def _dumps(doc: Schema) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_INFO = {"title": "Kubernetes", "version": KUBE_VERSION}
_SECURITY = {
    "BearerToken": {
        "description": "Bearer Token authentication",
        "in": "header",
        "name": "authorization",
        "type": "apiKey",
    }
}

# ----------------------------------------------------------------------------------------------------
# Swagger 2.0 as gnostic's openapi.v2.Document protobuf (field numbers from gnostic's OpenAPIv2.proto)
# ----------------------------------------------------------------------------------------------------

# kubectl asks with the `@` form; the response carries the dotted form (Go's mime parser rejects the `@`).
V2_PROTOBUF_MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_PROTOBUF_ACCEPTS = ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", V2_PROTOBUF_MEDIA_TYPE)
_PB_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _pb_bytes(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _pb_str(num: int, value: Any) -> bytes:
    return _pb_bytes(num, str(value).encode()) if value else b""


def _pb_strs(num: int, values: Iterable[str]) -> bytes:
    return b"".join(_pb_bytes(num, v.encode()) for v in values)


def _pb_bool(num: int, value: Any) -> bytes:
    return _varint(num << 3) + b"\x01" if value else b""


def _pb_named(num: int, name: str, value: bytes) -> bytes:
    """A gnostic `Named*` pair (name = 1, value = 2) as field `num`."""
    return _pb_bytes(num, _pb_str(1, name) + _pb_bytes(2, value))


def _pb_extensions(num: int, node: Schema) -> bytes:
    """`x-*` keys as `NamedAny{name, Any{yaml}}`; JSON is YAML, and kube-openapi reads them back as YAML."""
    pairs = ((key, value) for key, value in node.items() if key.startswith("x-"))
    return b"".join(_pb_named(num, key, _pb_str(2, json.dumps(value))) for key, value in pairs)


def _pb_schema(schema: Schema) -> bytes:
    out = _pb_str(1, schema.get("$ref")) + _pb_str(2, schema.get("format"))
    out += _pb_str(4, schema.get("description")) + _pb_strs(19, schema.get("required", ()))
    if isinstance(schema.get("additionalProperties"), dict):
        out += _pb_bytes(21, _pb_bytes(1, _pb_schema(schema["additionalProperties"])))
    if "type" in schema:
        out += _pb_bytes(22, _pb_str(1, schema["type"]))
    if "items" in schema:
        out += _pb_bytes(23, _pb_bytes(1, _pb_schema(schema["items"])))
    if "properties" in schema:
        props = b"".join(_pb_named(1, k, _pb_schema(v)) for k, v in schema["properties"].items())
        out += _pb_bytes(25, props)
    return out + _pb_extensions(31, schema)


def _pb_parameter(param: Schema) -> bytes:
    """ParametersItem{parameter: Parameter{body_parameter | non_body_parameter{query | path sub-schema}}}."""
    common = _pb_str(3, param.get("description")) + _pb_str(4, param["name"])
    if param["in"] == "body":
        body = _pb_str(2, param["name"]) + _pb_str(3, "body") + _pb_bool(4, param.get("required"))
        parameter = _pb_bytes(1, body + _pb_bytes(5, _pb_schema(param["schema"])))
    elif param["in"] == "query":
        sub = _pb_bool(1, param.get("required")) + _pb_str(2, "query") + common
        sub += _pb_str(6, param.get("type")) + _pb_bool(20, param.get("uniqueItems"))
        parameter = _pb_bytes(2, _pb_bytes(3, sub))
    else:
        sub = _pb_bool(1, param.get("required")) + _pb_str(2, "path") + common
        sub += _pb_str(5, param.get("type")) + _pb_bool(19, param.get("uniqueItems"))
        parameter = _pb_bytes(2, _pb_bytes(4, sub))
    return _pb_bytes(1, parameter)


def _pb_responses(responses: Schema) -> bytes:
    out = b""
    for code, response in responses.items():
        body = _pb_str(1, response.get("description"))
        if "schema" in response:
            body += _pb_bytes(2, _pb_bytes(1, _pb_schema(response["schema"])))
        out += _pb_named(1, code, _pb_bytes(1, body))
    return out


def _pb_operation(op: Schema) -> bytes:
    out = _pb_strs(1, op.get("tags", ())) + _pb_str(3, op.get("description"))
    out += _pb_str(5, op.get("operationId"))
    out += _pb_strs(6, op.get("produces", ())) + _pb_strs(7, op.get("consumes", ()))
    out += b"".join(_pb_bytes(8, _pb_parameter(p)) for p in op.get("parameters", ()))
    out += _pb_bytes(9, _pb_responses(op["responses"])) + _pb_strs(10, op.get("schemes", ()))
    return out + _pb_extensions(13, op)


def _pb_path_item(item: Schema) -> bytes:
    out = b"".join(_pb_bytes(num, _pb_operation(item[m])) for m, num in _PB_METHODS.items() if m in item)
    return out + b"".join(_pb_bytes(9, _pb_parameter(p)) for p in item.get("parameters", ()))


def _pb_security(doc: Schema) -> bytes:
    definitions = b""
    for name, sd in doc["securityDefinitions"].items():
        api_key = _pb_str(1, sd["type"]) + _pb_str(2, sd["name"]) + _pb_str(3, sd["in"])
        definitions += _pb_named(1, name, _pb_bytes(2, api_key + _pb_str(4, sd.get("description"))))
    requirements = b"".join(_pb_bytes(12, b"".join(_pb_named(1, k, b"") for k in req)) for req in doc["security"])
    return requirements + _pb_bytes(13, definitions)


def _pb_document(doc: Schema) -> bytes:
    info = _pb_str(1, doc["info"]["title"]) + _pb_str(2, doc["info"]["version"])
    paths = b"".join(_pb_named(2, k, _pb_path_item(v)) for k, v in doc["paths"].items())
    definitions = b"".join(_pb_named(1, k, _pb_schema(v)) for k, v in doc["definitions"].items())
    out = _pb_str(1, doc["swagger"]) + _pb_bytes(2, info) + _pb_bytes(8, paths) + _pb_bytes(9, definitions)
    return out + _pb_security(doc)


# ----------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------


@functools.cache
def _v2_document() -> Schema:
    items = [*(_root_paths("api") or []), *(_root_paths("apis") or [])]
    for group, version in group_versions():
        if group:
            items.extend(_root_paths(f"apis/{group}") or [])
        items.extend(_gv_paths(group, version))
    return {
        "swagger": "2.0",
        "info": _INFO,
        "paths": _render_refs(_render_paths(items, v3=False), _V2_REF, wrap=False),
        "definitions": _render_refs(_closure(_definitions().schemas), _V2_REF, wrap=False),
        "securityDefinitions": _SECURITY,
        "security": [{"BearerToken": []}],
    }


@functools.cache
def openapi_v2() -> bytes:
    """The Swagger 2.0 document (`GET /openapi/v2`, JSON)."""
    return _dumps(_v2_document())


def wants_v2_protobuf(accept: str | None) -> bool:
    """Whether a `GET /openapi/v2` Accept header asks for `openapi_v2_protobuf()` rather than JSON."""
    return any(media in (accept or "") for media in _V2_PROTOBUF_ACCEPTS)


@functools.cache
def openapi_v2_protobuf() -> bytes:
    """The same document as gnostic's `openapi.v2.Document` protobuf, served (as `V2_PROTOBUF_MEDIA_TYPE`)
    when `wants_v2_protobuf(accept)`. kubectl's client-side validation (used for `kind: List` manifests) and
    its v2 fallbacks parse only this; JSON fails there with "proto: cannot parse invalid wire-format data"."""
    return _pb_document(_v2_document())


@functools.cache
def openapi_v3_group(path: str) -> bytes | None:
    """The OpenAPI 3.0 document for `api/v1`, `apis/<group>/<version>`, `api`, `apis` or `apis/<group>`."""
    items = _doc_paths(path.strip("/"))
    if items is None:
        return None
    return v3_document(items, _closure(_path_roots(items)))


def v3_document(items: list[_PathItem], schemas: dict[str, Schema]) -> bytes:
    """A group-version's OpenAPI 3.0 document: its paths and the definitions they reach (built-in or custom)."""
    doc: Schema = {
        "openapi": "3.0.0",
        "info": _INFO,
        "paths": _render_refs(_render_paths(items, v3=True), _V3_REF, wrap=False),
        "components": {
            "schemas": _v3_schemas(schemas),
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
        "security": [{"BearerToken": []}],
    }
    return _dumps(doc)


def _v3_doc_names() -> list[str]:
    names = ["api", "apis"]
    for group, version in group_versions():
        if group and f"apis/{group}" not in names:
            names.append(f"apis/{group}")
        names.append(_gv_prefix(group, version).lstrip("/"))
    return names


@functools.cache
def openapi_v3_index() -> dict[str, Any]:
    """The `/openapi/v3` discovery document; each hash is the upper-case hex SHA-512 of the document."""
    paths: dict[str, Any] = {}
    for name in _v3_doc_names():
        body = openapi_v3_group(name)
        if body is not None:
            digest = hashlib.sha512(body).hexdigest().upper()
            paths[name] = {"serverRelativeURL": f"/openapi/v3/{name}?hash={digest}"}
    return {"paths": paths}


def unknown_fields(api_version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """Paths of fields in `obj` its kind's schema does not know, as upstream's strict decoding names them.

    `spec.foo`, `spec.ports[0].bogus`, `metadata.labelz`; map values are walked as `field[key]`. Upstream
    stops after 100 and reports each once; so does this. Unknown kinds yield [].
    """
    return list(dict.fromkeys(text for text, _ in unknown_field_paths(api_version, kind, obj)))[:100]


def schema_definitions() -> tuple[dict[tuple[str, str], str], dict[str, Schema]]:
    """The definition name of each served kind, keyed by (apiVersion, kind), and the definitions themselves (neutral
    form: a `$ref` is a bare definition name): for the schema walks that live elsewhere (`decodetypes`)."""
    defs = _definitions()
    return defs.kinds, defs.schemas


FieldPath = tuple[str | int, ...]


def unknown_field_paths(api_version: str, kind: str, obj: dict[str, Any]) -> list[tuple[str, FieldPath]]:
    """Every field of `obj` its kind's schema does not know: upstream's text for it, and the keys and indices that
    lead to it (the text alone does not say where a key holds a "." or is empty)."""
    defs = _definitions()
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
