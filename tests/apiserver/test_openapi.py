"""OpenAPI documents (v2 JSON + protobuf, v3 index and group documents) and strict unknown-field detection.

Pure: no server. What kubectl does with the documents was checked against the real binary separately; these
tests pin the properties kubectl relies on (refs resolve, patch-merge keys, GVK extensions, the PATCH
operation's `fieldValidation` parameter) and upstream's names and paths.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tinykube.apiserver.schema import customopenapi, definitions, openapiv2, openapiv3, unknownfields
from tinykube.apiserver.schema.definitions import RESOURCES, group_versions  # what the documents cover

CORE = "io.k8s.api.core.v1"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"


def v2() -> dict[str, Any]:
    return json.loads(openapiv2.openapi_v2())  # type: ignore[no-any-return]


def v3(path: str) -> dict[str, Any]:
    body = openapiv3.openapi_v3_group(path)
    assert body is not None, path
    return json.loads(body)  # type: ignore[no-any-return]


def v3_schemas(path: str = "api/v1") -> dict[str, Any]:
    return v3(path)["components"]["schemas"]  # type: ignore[no-any-return]


def v3_ref(node: dict[str, Any]) -> str:
    """The target of a v3 `$ref`, bare or wrapped in `allOf` as upstream does when there are siblings."""
    ref = node["$ref"] if "$ref" in node else node["allOf"][0]["$ref"]
    assert isinstance(ref, str)
    return ref.removeprefix("#/components/schemas/")


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def group_doc_name(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


# --- schemas --------------------------------------------------------------------------------------


def test_service_ports_are_a_merge_list_of_service_port_v3() -> None:
    schemas = v3_schemas()
    ports = schemas[f"{CORE}.ServiceSpec"]["properties"]["ports"]
    assert ports["type"] == "array"
    assert v3_ref(ports["items"]) == f"{CORE}.ServicePort"
    assert ports["x-kubernetes-patch-merge-key"] == "port"
    assert ports["x-kubernetes-patch-strategy"] == "merge"
    assert ports["x-kubernetes-list-type"] == "map"
    assert ports["x-kubernetes-list-map-keys"] == ["port", "protocol"]
    assert "ports that are exposed by this service" in ports["description"]

    port = schemas[f"{CORE}.ServicePort"]
    assert port["required"] == ["port"]
    assert port["properties"]["port"] == {**port["properties"]["port"], "type": "integer", "format": "int32"}
    target = port["properties"]["targetPort"]
    assert v3_ref(target) == "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    assert "description" in target and "allOf" in target  # a ref with siblings is wrapped, as upstream
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"


def test_service_ports_v2() -> None:
    definitions = v2()["definitions"]
    ports = definitions[f"{CORE}.ServiceSpec"]["properties"]["ports"]
    assert ports["items"] == {"$ref": f"#/definitions/{CORE}.ServicePort"}
    assert ports["x-kubernetes-patch-merge-key"] == "port"
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    assert definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    metadata = definitions[f"{CORE}.Service"]["properties"]["metadata"]
    assert metadata["$ref"] == f"#/definitions/{META}.ObjectMeta"
    assert metadata["description"].startswith("Standard object's metadata.")


@pytest.mark.parametrize(
    ("definition", "field", "merge_key", "strategy"),
    [
        (f"{CORE}.PodSpec", "containers", "name", "merge"),
        (f"{CORE}.PodSpec", "initContainers", "name", "merge"),
        (f"{CORE}.PodSpec", "ephemeralContainers", "name", "merge"),
        (f"{CORE}.PodSpec", "volumes", "name", "merge,retainKeys"),
        (f"{CORE}.PodSpec", "imagePullSecrets", "name", "merge"),
        (f"{CORE}.Container", "ports", "containerPort", "merge"),
        (f"{CORE}.Container", "env", "name", "merge"),
        (f"{CORE}.Container", "volumeMounts", "mountPath", "merge"),
        (f"{CORE}.PodStatus", "conditions", "type", "merge"),
        (f"{CORE}.NodeStatus", "addresses", "type", "merge"),
        (f"{META}.ObjectMeta", "ownerReferences", "uid", "merge"),
    ],
)
def test_patch_merge_lists(definition: str, field: str, merge_key: str, strategy: str) -> None:
    prop = v3_schemas()[definition]["properties"][field]
    assert prop["x-kubernetes-patch-merge-key"] == merge_key
    assert prop["x-kubernetes-patch-strategy"] == strategy


def test_finalizers_are_a_merged_set() -> None:
    finalizers = v3_schemas()[f"{META}.ObjectMeta"]["properties"]["finalizers"]
    assert finalizers["x-kubernetes-patch-strategy"] == "merge"
    assert finalizers["x-kubernetes-list-type"] == "set"


def test_special_types() -> None:
    schemas = v3_schemas()
    limits = schemas[f"{CORE}.ResourceRequirements"]["properties"]["limits"]
    assert v3_ref(limits["additionalProperties"]) == "io.k8s.apimachinery.pkg.api.resource.Quantity"
    assert v3_ref(schemas[f"{META}.ObjectMeta"]["properties"]["creationTimestamp"]) == f"{META}.Time"
    assert v3_ref(schemas[f"{CORE}.Event"]["properties"]["eventTime"]) == f"{META}.MicroTime"
    assert v3_ref(schemas[f"{META}.ManagedFieldsEntry"]["properties"]["fieldsV1"]) == f"{META}.FieldsV1"
    assert schemas[f"{META}.Time"] == {**schemas[f"{META}.Time"], "type": "string", "format": "date-time"}
    assert schemas[f"{META}.ObjectMeta"]["properties"]["generation"]["format"] == "int64"


def test_definition_names_follow_upstream() -> None:
    assert definitions.definition_name("V1Service", "io.k8s.api.core") == f"{CORE}.Service"
    assert definitions.definition_name("CoreV1Event", "io.k8s.api.core") == f"{CORE}.Event"
    assert definitions.definition_name("V1ObjectMeta", "io.k8s.api.discovery") == f"{META}.ObjectMeta"
    assert definitions.definition_name("DiscoveryV1EndpointPort", "x") == "io.k8s.api.discovery.v1.EndpointPort"
    assert definitions.definition_name("V1EndpointConditions", "io.k8s.api.discovery") == (
        "io.k8s.api.discovery.v1.EndpointConditions"
    )
    assert definitions.definition_name("V1ObjectReference", "io.k8s.api.discovery") == f"{CORE}.ObjectReference"
    assert definitions.definition_name("V1PodTemplateSpec", "io.k8s.api.apps") == f"{CORE}.PodTemplateSpec"
    schemas = v3_schemas("apis/discovery.k8s.io/v1")
    endpoint = schemas["io.k8s.api.discovery.v1.Endpoint"]["properties"]
    assert v3_ref(endpoint["targetRef"]) == f"{CORE}.ObjectReference"
    assert endpoint["addresses"]["x-kubernetes-list-type"] == "set"
    assert "addressType" in schemas["io.k8s.api.discovery.v1.EndpointSlice"]["required"]


@pytest.mark.parametrize("info", RESOURCES, ids=lambda r: f"{r.group_version}/{r.kind}")
def test_every_kind_and_list_carries_its_gvk(info: Any) -> None:
    schemas = v3_schemas(group_doc_name(info.group, info.version))
    for kind in (info.kind, info.list_kind) if "list" in info.verbs else (info.kind,):
        gvk = {"group": info.group, "kind": kind, "version": info.version}
        matches = [n for n, s in schemas.items() if gvk in s.get("x-kubernetes-group-version-kind", [])]
        assert len(matches) == 1, (kind, matches)
        assert matches[0].rsplit(".", 1)[1] == kind
        assert schemas[matches[0]]["description"]


# --- documents and paths --------------------------------------------------------------------------


def test_all_refs_resolve_v2() -> None:
    doc = v2()
    assert doc["swagger"] == "2.0" and doc["info"] == {"title": "Kubernetes", "version": definitions.KUBE_VERSION}
    names = set(doc["definitions"])
    dangling = {r for r in refs(doc) if r.removeprefix("#/definitions/") not in names}
    assert not dangling
    assert all(r.startswith("#/definitions/") for r in refs(doc))


def test_all_refs_resolve_v3() -> None:
    for name in openapiv3.openapi_v3_index()["paths"]:
        doc = v3(name)
        assert doc["openapi"] == "3.0.0"
        names = set(doc["components"]["schemas"])
        dangling = {r for r in refs(doc) if r.removeprefix("#/components/schemas/") not in names}
        assert not dangling, (name, dangling)


def test_v3_index_lists_every_document_with_its_hash() -> None:
    paths = openapiv3.openapi_v3_index()["paths"]
    served = [(g, v) for g, v in group_versions() if g]
    assert set(paths) == {"api", "api/v1", "apis"} | {f"apis/{g}" for g, _ in served} | {
        f"apis/{g}/{v}" for g, v in served
    }
    for name, entry in paths.items():
        body = openapiv3.openapi_v3_group(name)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest().upper()
        assert entry == {"serverRelativeURL": f"/openapi/v3/{name}?hash={digest}"}


def test_unknown_group_documents() -> None:
    assert openapiv3.openapi_v3_group("apis/example.com/v1") is None
    assert openapiv3.openapi_v3_group("nonsense") is None
    assert openapiv3.openapi_v3_group("/api/v1/") == openapiv3.openapi_v3_group("api/v1")


@pytest.mark.parametrize(
    "info", [r for r in RESOURCES if "patch" in r.verbs], ids=lambda r: f"{r.group_version}/{r.kind}"
)
def test_patch_operation_declares_field_validation(info: Any) -> None:
    """What kubectl checks (queryParamVerifierV3) before sending fieldValidation=Strict."""
    doc = v3(group_doc_name(info.group, info.version))
    gvk = {"group": info.group, "kind": info.kind, "version": info.version}
    patches = [p["patch"] for p in doc["paths"].values() if "patch" in p]
    mine = [op for op in patches if op.get("x-kubernetes-group-version-kind") == gvk]
    assert mine
    for op in mine:
        names = {(p["name"], p["in"]) for p in op["parameters"]}
        assert {("fieldValidation", "query"), ("dryRun", "query"), ("fieldManager", "query")} <= names
        assert "application/strategic-merge-patch+json" in op["requestBody"]["content"]


def test_service_paths_and_operations() -> None:
    paths = v2()["paths"]
    collection = paths["/api/v1/namespaces/{namespace}/services"]
    assert collection["get"]["operationId"] == "listCoreV1NamespacedService"
    assert collection["get"]["x-kubernetes-action"] == "list"
    assert collection["post"]["x-kubernetes-action"] == "post"
    assert collection["delete"]["x-kubernetes-action"] == "deletecollection"
    item = paths["/api/v1/namespaces/{namespace}/services/{name}"]
    assert {m for m in item if m != "parameters"} == {"get", "put", "patch", "delete"}
    assert item["patch"]["operationId"] == "patchCoreV1NamespacedService"
    assert paths["/api/v1/services"]["get"]["operationId"] == "listCoreV1ServiceForAllNamespaces"
    assert "put" in paths["/api/v1/namespaces/{namespace}/services/{name}/status"]
    assert "put" in paths["/api/v1/namespaces/{name}/finalize"]
    assert paths["/api/v1/nodes/{name}"]["get"]["operationId"] == "readCoreV1Node"
    slices = paths["/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"]
    assert slices["post"]["operationId"] == "createDiscoveryV1NamespacedEndpointSlice"
    post_params = {p["name"] for p in collection["post"]["parameters"]}
    assert {"body", "dryRun", "fieldManager", "fieldValidation"} <= post_params


def test_documents_are_cached() -> None:
    assert openapiv2.openapi_v2() is openapiv2.openapi_v2()
    assert openapiv3.openapi_v3_group("api/v1") is openapiv3.openapi_v3_group("api/v1")


# --- v2 protobuf ----------------------------------------------------------------------------------


def pb_fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """Minimal protobuf wire decoder: (field number, varint or length-delimited payload)."""
    i = 0

    def varint() -> int:
        nonlocal i
        shift = result = 0
        while True:
            byte = data[i]
            i += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    while i < len(data):
        key = varint()
        if key & 7 == 0:
            yield key >> 3, varint()
        else:
            assert key & 7 == 2
            size = varint()
            yield key >> 3, data[i : i + size]
            i += size


def pb_named(data: bytes) -> tuple[str, bytes]:
    fields = dict(pb_fields(data))
    name, value = fields[1], fields.get(2, b"")
    assert isinstance(name, bytes) and isinstance(value, bytes)
    return name.decode(), value


def test_v2_protobuf_is_the_gnostic_document() -> None:
    top = list(pb_fields(openapiv2.openapi_v2_protobuf()))
    assert top[0] == (1, b"2.0")
    definitions = next(v for n, v in top if n == 9)
    assert isinstance(definitions, bytes)
    named = dict(pb_named(v) for _, v in pb_fields(definitions) if isinstance(v, bytes))
    assert set(named) == set(v2()["definitions"])
    service = list(pb_fields(named[f"{CORE}.Service"]))
    extensions = dict(pb_named(v) for n, v in service if n == 31 and isinstance(v, bytes))
    gvk_yaml = dict(pb_fields(extensions["x-kubernetes-group-version-kind"]))[2]
    assert isinstance(gvk_yaml, bytes)
    assert json.loads(gvk_yaml) == [{"group": "", "kind": "Service", "version": "v1"}]
    paths = next(v for n, v in top if n == 8)
    assert isinstance(paths, bytes)
    assert "/api/v1/namespaces/{namespace}/services/{name}" in {
        pb_named(v)[0] for _, v in pb_fields(paths) if isinstance(v, bytes)
    }


def test_wants_v2_protobuf() -> None:
    assert openapiv2.wants_v2_protobuf("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert openapiv2.wants_v2_protobuf(openapiv2.V2_PROTOBUF_MEDIA_TYPE)
    assert not openapiv2.wants_v2_protobuf("application/json")
    assert not openapiv2.wants_v2_protobuf(None)


# --- unknown fields -------------------------------------------------------------------------------

REALISTIC_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web", "anything/goes": "x"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-1",
                "uid": "u",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "finalizers": ["x/y"],
        "managedFields": [
            {
                "manager": "kubectl",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            }
        ],
    },
    "spec": {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "serviceAccountName": "default",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "fsGroup": 2000,
            "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "a", "value": "1"}],
        },
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "web"}},
                        },
                    }
                ]
            },
        },
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
        "volumes": [
            {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "cfg", "configMap": {"name": "web-config", "items": [{"key": "a", "path": "a.conf"}]}},
            {"name": "sec", "secret": {"secretName": "s", "defaultMode": 420}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
            {
                "name": "tok",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                        {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                    ]
                },
            },
        ],
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.25",
                "imagePullPolicy": "IfNotPresent",
                "args": ["--port", "8080"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}}},
                ],
                "envFrom": [{"configMapRef": {"name": "web-config"}, "prefix": "CFG_"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": 1, "memory": "256Mi"}},
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "cfg", "mountPath": "/etc/web", "readOnly": True, "subPath": "a.conf"},
                ],
                "readinessProbe": {
                    "httpGet": {"path": "/healthz", "port": "http", "httpHeaders": [{"name": "X", "value": "y"}]},
                    "initialDelaySeconds": 5,
                    "periodSeconds": 10,
                },
                "livenessProbe": {"tcpSocket": {"port": 8080}, "failureThreshold": 3},
                "startupProbe": {"exec": {"command": ["true"]}},
                "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                },
                "terminationMessagePolicy": "FallbackToLogsOnError",
            }
        ],
        "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
        "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}],
        "imagePullSecrets": [{"name": "regcred"}],
    },
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "podIPs": [{"ip": "10.0.0.5"}],
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
        "containerStatuses": [
            {
                "name": "web",
                "ready": True,
                "restartCount": 0,
                "image": "nginx:1.25",
                "imageID": "",
                "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
            }
        ],
    },
}


def test_realistic_pod_has_no_unknown_fields() -> None:
    assert unknownfields.unknown_fields("v1", "Pod", REALISTIC_POD) == []


def test_unknown_fields_in_a_service() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "labelz": {"a": "b"}, "labels": {"free": "form"}},
        "spec": {
            "foo": 1,
            "selector": {"any": "key"},
            "ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "bogus": True}],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "nope": 1}]}},
        "extra": None,
    }
    assert unknownfields.unknown_fields("v1", "Service", svc) == [
        "metadata.labelz",
        "spec.foo",
        "spec.ports[1].bogus",
        "status.loadBalancer.ingress[0].nope",
        "extra",
    ]


def test_unknown_fields_in_other_kinds() -> None:
    slice_ = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "s"},
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": ["10.0.0.1"],
                "conditions": {"ready": True, "fast": True},
                "targetRef": {"kind": "Pod", "name": "p"},
                "zone": "a",
            }
        ],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    assert unknownfields.unknown_fields("discovery.k8s.io/v1", "EndpointSlice", slice_) == [
        "endpoints[0].conditions.fast"
    ]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reason": "X",
        "count": 2,
        "series": {"count": 1},
    }
    assert unknownfields.unknown_fields("v1", "Event", event) == []
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {
            "capacity": {"cpu": "4", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
        "spec": {"podCIDR": "10.244.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule", "x": 1}]},
    }
    assert unknownfields.unknown_fields("v1", "Node", node) == ["spec.taints[0].x"]


def test_unknown_fields_edge_cases() -> None:
    assert unknownfields.unknown_fields("v1", "Nope", {"spec": {"foo": 1}}) == []
    assert unknownfields.unknown_fields("apps/v1", "Service", {"spec": {"foo": 1}}) == []
    assert unknownfields.unknown_fields("v1", "ServiceList", {"items": [{"spec": {"x": 1}}], "y": 2}) == [
        "items[0].spec.x",
        "y",
    ]
    # case-sensitive, as upstream's decoder
    assert unknownfields.unknown_fields("v1", "Service", {"Spec": {}}) == ["Spec"]
    # a value of the wrong shape is a decoding error, not an unknown field
    assert unknownfields.unknown_fields("v1", "Service", {"spec": {"ports": {"port": 1}}, "metadata": []}) == []
    many = {"metadata": {f"f{i}": 1 for i in range(150)}}
    assert len(unknownfields.unknown_fields("v1", "Service", many)) == 100


def test_strict_decoding_message() -> None:
    assert unknownfields.strict_decoding_message(["spec.foo", "spec.ports[0].bogus"]) == (
        'strict decoding error: unknown field "spec.foo", unknown field "spec.ports[0].bogus"'
    )
    assert unknownfields.unknown_field_warnings(["a.b"]) == ['unknown field "a.b"']


# upstream's v2 conversion of a CRD's structural schema (vectors from apiextensions' openapi/v2 conversion tests)
@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "format": "byte"}, {"type": "string", "format": "byte"}),
        ({"type": "object", "nullable": True}, {}),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "nullable": True},
                    "b": {"type": "string", "nullable": True},
                    "c": {"type": "string"},
                },
                "required": ["a", "c"],
            },
            {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "string"}}, "required": ["c"]},
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string", "nullable": True}, "required": ["a", "c"]},
            {"type": "object", "additionalProperties": {}},
        ),
        (
            {"type": "object", "anyOf": [{"required": ["a"]}], "not": {"required": ["b"]}},
            {"type": "object"},
        ),
        (
            {"type": "array", "x-kubernetes-preserve-unknown-fields": True, "items": {"type": "string"}},
            {"x-kubernetes-preserve-unknown-fields": True},
        ),
        (
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"foo": {"type": "string"}}},
            {"x-kubernetes-preserve-unknown-fields": True},
        ),
        (
            {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "nullable": True}}}},
            {"type": "object", "properties": {"l": {"type": "array", "items": {}}}},
        ),
    ],
)
def test_custom_schema_in_v2(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert customopenapi.v2_structural(schema) == expected
