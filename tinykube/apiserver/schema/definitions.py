"""The OpenAPI definitions of the served kinds, generated from the `kubernetes` client's models: what the v2 and v3
documents (`openapiv2`, `openapiv3`) publish, and what the schema walks (`unknownfields`, `decodetypes`,
`fieldmanager`) read.

Why this exists: kubectl reads the server's OpenAPI before it writes anything.

* `kubectl apply`/`create -f` (default `--validate=strict`) fetch `/openapi/v3`, then the group-version
  document, and look for a `fieldValidation` query parameter on the kind's PATCH operation; when it is there
  they send `fieldValidation=Strict` and let the server reject unknown fields (`unknownfields`),
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

Schemas are built once in a neutral form (`{"$ref": "<definition name>"}`) and rendered (`render`) as Swagger 2.0
(`#/definitions/...`) or OpenAPI 3.0 (`#/components/schemas/...`, `allOf` around refs with siblings).
Everything is computed on first use and cached; importing this module imports nothing heavy.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import os
import re
import typing
from collections.abc import Iterable, Iterator
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


def group_version_kind(info: ResourceInfo, kind: str) -> dict[str, str]:
    return {"group": info.group, "kind": kind, "version": info.version}


def _describe_top_level(schema: Schema, kind: str, is_list: bool) -> None:
    """Fill in the descriptions of metadata/spec/status that the client does not carry."""
    for field, template in _REF_FIELD_DESCRIPTIONS.items():
        prop = schema.get("properties", {}).get(field)
        if prop is not None and "description" not in prop:
            text = _LIST_METADATA_DESCRIPTION if is_list and field == "metadata" else template
            prop["description"] = text.format(kind=kind.lower())


@dataclass(frozen=True, slots=True)
class Definitions:
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
def served_definitions() -> Definitions:
    """Building them imports ~200 model classes of the `kubernetes` client (~0.9 s): read them from the cache
    file when there is one, and write it when there is not (best effort: a read-only home just rebuilds)."""
    cache = _cache_file()
    try:
        stored = json.loads(cache.read_bytes())
        return Definitions(stored["schemas"], {(v, k): name for v, k, name in stored["kinds"]})
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


def _build_definitions() -> Definitions:
    builder = _Builder()
    kinds: dict[tuple[str, str], str] = {}
    for info in RESOURCES:
        root = _package_root(info.group)
        listed = "list" in info.verbs  # the review kinds have no List kind
        for kind, is_list in ((info.kind, False), *(((info.list_kind, True),) if listed else ())):
            name = builder.add_class(_kind_class(info, kind), root)
            schema = builder.definitions[name]
            schema["x-kubernetes-group-version-kind"] = [group_version_kind(info, kind)]
            _describe_top_level(schema, kind, is_list)
            kinds[(info.group_version, kind)] = name
    for info, served in ((SCALE, "scale"), (BINDING, "binding"), (TOKEN_REQUEST, "token")):  # subresources' kinds
        if any(served in r.subresources for r in RESOURCES):
            name = builder.add_class(_kind_class(info, info.kind), _package_root(info.group))
            builder.definitions[name]["x-kubernetes-group-version-kind"] = [group_version_kind(info, info.kind)]
            _describe_top_level(builder.definitions[name], info.kind, False)
            kinds[(info.group_version, info.kind)] = name
    for class_name in ("V1Status", "V1DeleteOptions", "V1APIResourceList", "V1APIVersions", "V1APIGroupList"):
        builder.add_class(class_name, META)
    schemas = builder.definitions
    schemas[STATUS]["x-kubernetes-group-version-kind"] = [{"group": "", "kind": "Status", "version": "v1"}]
    schemas[DELETE_OPTIONS]["x-kubernetes-group-version-kind"] = [
        {"group": g, "kind": "DeleteOptions", "version": v} for g, v in group_versions()
    ]
    return Definitions(schemas, kinds)


def refs(node: Any) -> Iterator[str]:
    """The definition names a neutral schema refers to (`{"$ref": name}`), at any depth."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for v in node.values():
            yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def closure(roots: Iterable[str]) -> dict[str, Schema]:
    """The definitions reachable from `roots`, sorted by name."""
    schemas = served_definitions().schemas
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(refs(schemas[name]))
    return {name: schemas[name] for name in sorted(seen)}


def schema_definitions() -> tuple[dict[tuple[str, str], str], dict[str, Schema]]:
    """The definition name of each served kind, keyed by (apiVersion, kind), and the definitions themselves (neutral
    form: a `$ref` is a bare definition name): for the schema walks that live elsewhere (`decodetypes`)."""
    defs = served_definitions()
    return defs.kinds, defs.schemas
