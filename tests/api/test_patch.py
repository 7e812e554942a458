"""PATCH semantics: JSON patch, JSON merge patch and strategic merge patch as kubectl sends them.

Expected results were checked against ``kubectl patch --local`` (v1.32), which runs the same
apimachinery/evanphx code as the apiserver; the cases where tinykube deliberately differs say so.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tinykube.api.errors import ApiError, BadRequest, Invalid, RequestEntityTooLarge, UnsupportedMediaType
from tinykube.api.patch import apply_patch, field_metadata

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web"},
        "finalizers": ["a", "b"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}],
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "ports": [{"containerPort": 80}, {"containerPort": 81}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            },
            {"name": "sidecar", "image": "busybox"},
        ],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cm"}}],
        "affinity": {"nodeAffinity": {}},
    },
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
        "podIPs": [{"ip": "10.0.0.1"}],
    },
}
SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default", "annotations": {"note": "x"}},
    "spec": {
        "selector": {"app": "web"},
        "ports": [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"},
        ],
        "type": "ClusterIP",
        "clusterIP": "10.96.0.10",
    },
}
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "a", "effect": "NoSchedule"}]},
    "status": {
        "addresses": [{"type": "InternalIP", "address": "1.1.1.1"}, {"type": "Hostname", "address": "n1"}],
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {
        "replicas": 1,
        "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "app", "image": "i", "env": [{"name": "E", "value": "1"}]}]},
        },
    },
}
WIDGET: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "finalizers": ["a"]},
    "spec": {"items": [{"name": "x", "size": 1}], "labels": {"a": "1"}},
}


def patched(original: dict[str, Any], patch: Any, content_type: str = SMP) -> dict[str, Any]:
    return apply_patch(original, json.dumps(patch).encode(), content_type, kind=original["kind"])


def at(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj.get(part)
    return obj


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


# ---- strategic merge patch ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "patch", "path", "expected"),
    [
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "new", "image": "redis"}]}},
            "spec.containers",
            [{"name": "new", "image": "redis"}, *POD["spec"]["containers"]],
            id="new-container-goes-before-untouched-ones",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "sidecar", "image": "alpine"}]}},
            "spec.containers.1",
            {"name": "sidecar", "image": "alpine"},
            id="container-merged-by-name",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}},
            "spec.containers",
            [{"name": "sidecar", "image": "busybox"}],
            id="container-deleted-by-directive",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}},
            "spec.containers",
            [{"name": "only", "image": "x"}],
            id="container-list-replaced-by-directive",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "3"}, {"name": "C"}]}]}},
            "spec.containers.0.env",
            [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C"}],
            id="env-merged-by-name",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 81, "name": "m"}]}]}},
            "spec.containers.0.ports",
            [{"containerPort": 80}, {"containerPort": 81, "name": "m"}],
            id="ports-merged-by-container-port",
        ),
        pytest.param(
            POD,
            {"spec": {"containers": [{"name": "app", "volumeMounts": [{"name": "data", "mountPath": "/d2"}]}]}},
            "spec.containers.0.volumeMounts",
            [{"name": "data", "mountPath": "/d2"}, {"name": "data", "mountPath": "/data"}],
            id="volume-mounts-merged-by-mount-path",
        ),
        pytest.param(
            POD,
            {"spec": {"tolerations": [{"key": "z", "operator": "Exists"}]}},
            "spec.tolerations",
            [{"key": "z", "operator": "Exists"}],
            id="tolerations-replaced",
        ),
        pytest.param(
            POD,
            {"spec": {"volumes": [{"name": "cfg", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}]}},
            "spec.volumes.1",
            {"name": "cfg", "secret": {"secretName": "s"}},
            id="retain-keys-drops-old-volume-source",
        ),
        pytest.param(POD, {"metadata": {"finalizers": ["c"]}}, "metadata.finalizers", ["c", "a", "b"], id="set-add"),
        pytest.param(
            POD,
            {"metadata": {"finalizers": ["b", "c"]}},
            "metadata.finalizers",
            ["a", "b", "c"],
            id="set-no-dups",
        ),
        pytest.param(
            POD,
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
            "metadata.finalizers",
            ["b"],
            id="delete-from-primitive-list",
        ),
        pytest.param(
            POD,
            {"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["c"]}},
            "metadata.finalizers",
            ["b", "c", "a"],
            id="set-element-order-primitives",
        ),
        pytest.param(
            POD,
            {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}},
            "spec.containers",
            [POD["spec"]["containers"][1], POD["spec"]["containers"][0]],
            id="set-element-order-reorders-only",
        ),
        pytest.param(
            POD,
            {"metadata": {"labels": {"app": None, "tier": "web"}}},
            "metadata.labels",
            {"tier": "web"},
            id="null-deletes-key",
        ),
        pytest.param(
            POD,
            {"metadata": {"labels": {"$patch": "replace", "only": "1"}}},
            "metadata.labels",
            {"only": "1"},
            id="map-replaced-by-directive",
        ),
        pytest.param(
            POD,
            {"metadata": {"labels": {"$patch": "merge", "more": "1"}}},
            "metadata.labels",
            {"app": "web", "more": "1"},
            id="map-explicit-merge-directive",  # upstream rejects $patch: merge in maps
        ),
        pytest.param(
            POD,
            {"spec": {"affinity": {"$patch": "delete"}}},
            "spec.affinity",
            None,
            id="map-deleted-by-directive",  # upstream leaves {}
        ),
        pytest.param(
            POD,
            {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u2"}]}},
            "metadata.ownerReferences",
            [
                {"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u2"},
                POD["metadata"]["ownerReferences"][0],
            ],
            id="owner-references-by-uid",
        ),
        pytest.param(
            POD,
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            "status.conditions",
            [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            id="pod-conditions-by-type",
        ),
        pytest.param(
            POD,
            {"status": {"podIPs": [{"ip": "fd00::1"}]}},
            "status.podIPs",
            [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}],
            id="pod-ips-by-ip",
        ),
        pytest.param(
            POD,
            {"spec": {"initContainers": [{"name": "init", "x": None}, {"name": "gone", "$patch": "delete"}]}},
            "spec.initContainers",
            [{"name": "init"}],
            id="new-list-is-cleaned-of-directives-and-nulls",  # upstream stores such values verbatim
        ),
        pytest.param(
            SERVICE,
            {"spec": {"ports": [{"port": 443, "targetPort": 9443}]}},
            "spec.ports.1",
            {"name": "https", "port": 443, "targetPort": 9443, "protocol": "TCP"},
            id="service-ports-by-port",
        ),
        pytest.param(
            SERVICE,
            {"spec": {"selector": {"$patch": "replace", "tier": "db"}}},
            "spec.selector",
            {"tier": "db"},
            id="service-selector-replaced",
        ),
        pytest.param(
            NODE,
            {"status": {"addresses": [{"type": "InternalIP", "address": "2.2.2.2"}]}},
            "status.addresses",
            [{"type": "InternalIP", "address": "2.2.2.2"}, {"type": "Hostname", "address": "n1"}],
            id="node-addresses-by-type",
        ),
        pytest.param(
            NODE,
            {"spec": {"podCIDRs": ["fd00::/64"]}},
            "spec.podCIDRs",
            ["fd00::/64", "10.0.0.0/24"],
            id="node-pod-cidrs-merged",
        ),
        pytest.param(
            NODE,
            {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}},
            "spec.taints",
            [{"key": "b", "effect": "NoExecute"}],
            id="node-taints-replaced",
        ),
        pytest.param(
            DEPLOYMENT,
            {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "F", "value": "2"}]}]}}}},
            "spec.template.spec.containers.0.env",
            [{"name": "F", "value": "2"}, {"name": "E", "value": "1"}],
            id="deployment-pod-template-merged",
        ),
        pytest.param(
            WIDGET,
            {"spec": {"items": [{"name": "y"}]}, "metadata": {"finalizers": ["b"]}},
            "spec.items",
            [{"name": "y"}],
            id="unknown-kind-lists-replaced",
        ),
        pytest.param(
            WIDGET,
            {"spec": {"labels": {"$patch": "replace", "b": "2"}}},
            "spec.labels",
            {"b": "2"},
            id="unknown-kind-honours-map-directives",
        ),
        pytest.param(
            WIDGET,
            {"spec": {"items": [{"name": "y"}, {"$patch": "replace"}, {"name": "x", "$patch": "delete"}]}},
            "spec.items",
            [{"name": "y"}],
            id="unknown-kind-drops-directive-elements",
        ),
    ],
)
def test_strategic_merge_patch(original: dict[str, Any], patch: Any, path: str, expected: Any) -> None:
    assert at(patched(original, patch), path) == expected


def test_unknown_kind_primitive_lists_are_replaced() -> None:
    assert patched(WIDGET, {"metadata": {"finalizers": ["b"]}})["metadata"]["finalizers"] == ["b"]


def test_null_strategic_patch_is_a_no_op() -> None:
    assert apply_patch(POD, b"null", SMP, kind="Pod") == POD


def test_kubectl_apply_reapply() -> None:
    """What ``kubectl apply`` sends when a Service manifest changes its ports and drops one."""
    last_applied = '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"}}\n'
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}},
        "spec": {
            "$setElementOrder/ports": [{"port": 8443}, {"port": 80}],
            "ports": [
                {"name": "alt", "port": 8443, "protocol": "TCP", "targetPort": 8443},
                {"port": 80, "targetPort": 9090},
                {"$patch": "delete", "port": 443},
            ],
        },
    }
    result = patched(SERVICE, patch)
    assert result["metadata"]["annotations"] == {
        "note": "x",
        "kubectl.kubernetes.io/last-applied-configuration": last_applied,
    }
    assert result["spec"]["ports"] == [
        {"name": "alt", "port": 8443, "protocol": "TCP", "targetPort": 8443},
        {"name": "http", "port": 80, "targetPort": 9090, "protocol": "TCP"},
    ]
    assert {k: v for k, v in result["spec"].items() if k != "ports"} == {
        k: v for k, v in SERVICE["spec"].items() if k != "ports"
    }


def test_kubectl_apply_reorders_existing_containers() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "extra"}, {"name": "app"}],
            "containers": [{"name": "extra", "image": "e"}],
        }
    }
    assert names(patched(POD, patch)["spec"]["containers"]) == ["sidecar", "extra", "app"]


# ---- JSON merge patch (kubectl label / annotate / patch --type merge) ---------------------------


@pytest.mark.parametrize(
    ("patch", "path", "expected"),
    [
        pytest.param(
            {"metadata": {"labels": {"env": "prod"}}},
            "metadata.labels",
            {"app": "web", "env": "prod"},
            id="kubectl-label",
        ),
        pytest.param({"metadata": {"labels": {"app": None}}}, "metadata.labels", {}, id="kubectl-label-remove"),
        pytest.param(
            {"metadata": {"annotations": {"note": "y"}, "resourceVersion": "42"}},
            "metadata",
            {**POD["metadata"], "annotations": {"note": "y"}, "resourceVersion": "42"},
            id="kubectl-annotate-with-resource-version",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "only"}]}},
            "spec.containers",
            [{"name": "only"}],
            id="lists-replaced",
        ),
        pytest.param({"spec": {"affinity": None}}, "spec.affinity", None, id="null-deletes"),
        pytest.param({"spec": {"new": {"a": None, "b": 1}}}, "spec.new", {"b": 1}, id="nulls-pruned-in-new-maps"),
        pytest.param(
            {"status": {"conditions": [{"type": "X", "reason": None}]}},
            "status.conditions",
            [{"type": "X"}],
            id="nulls-pruned-in-replacing-lists",  # evanphx/json-patch does this too
        ),
        pytest.param({"metadata": {"labels": "x"}}, "metadata.labels", "x", id="scalar-replaces-map"),
    ],
)
def test_merge_patch(patch: Any, path: str, expected: Any) -> None:
    assert at(patched(POD, patch, MERGE), path) == expected


# ---- JSON patch (kubectl patch --type json) -----------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "path", "expected"),
    [
        pytest.param(
            [
                {"op": "test", "path": "/metadata/name", "value": "web"},
                {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
                {"op": "remove", "path": "/metadata/labels/app"},
                {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"},
            ],
            "metadata.labels",
            {"tier": "front"},
            id="add-remove-replace-test",
        ),
        pytest.param(
            [
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                {"op": "add", "path": "/metadata/annotations/example.com~1a~0b", "value": "1"},
            ],
            "metadata.annotations",
            {"example.com/a~b": "1"},
            id="pointer-escapes",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/containers/-", "value": {"name": "z"}}],
            "spec.containers.2",
            {"name": "z"},
            id="append",
        ),
        pytest.param(
            [{"op": "remove", "path": "/spec/containers/-1"}],
            "spec.containers",
            [POD["spec"]["containers"][0]],
            id="negative-index",
        ),
        pytest.param(
            [{"op": "replace", "path": "/metadata/labels/new", "value": "1"}],
            "metadata.labels",
            {"app": "web", "new": "1"},
            id="replace-missing-member-adds",
        ),
        pytest.param(
            [{"op": "move", "from": "/metadata/labels", "path": "/metadata/annotations"}],
            "metadata.annotations",
            {"app": "web"},
            id="move",
        ),
        pytest.param(
            [{"op": "copy", "from": "/spec/containers/1", "path": "/spec/initContainers"}],
            "spec.initContainers",
            POD["spec"]["containers"][1],
            id="copy",
        ),
        pytest.param([{"op": "add", "path": "/metadata/x"}], "metadata.x", None, id="missing-value-is-null"),
        pytest.param(
            [{"op": "test", "path": "/metadata/missing", "value": None}],
            "metadata.name",
            "web",
            id="test-missing-equals-null",
        ),
        pytest.param([], "metadata.name", "web", id="no-operations"),
    ],
)
def test_json_patch(ops: list[dict[str, Any]], path: str, expected: Any) -> None:
    assert at(patched(POD, ops, JSON), path) == expected


@pytest.mark.parametrize(
    ("ops", "cause"),
    [
        pytest.param(
            [{"op": "test", "path": "/metadata/name", "value": "db"}],
            "testing value /metadata/name failed: test failed",
            id="test-fails",
        ),
        pytest.param(
            [{"op": "test", "path": "/spec/containers/0/ports/0/containerPort", "value": 80.0}],
            "testing value /spec/containers/0/ports/0/containerPort failed: test failed",
            id="test-is-exact",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/annotations/x"}],
            'remove operation does not apply: doc is missing path: "/metadata/annotations/x": missing value',
            id="remove-missing-parent",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/x"}],
            "error in remove for path: '/metadata/labels/x': Unable to remove nonexistent key: x: missing value",
            id="remove-missing-member",
        ),
        pytest.param(
            [{"op": "add", "path": "/nope/x", "value": 1}],
            'add operation does not apply: doc is missing path: "/nope/x": missing value',
            id="add-missing-parent",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/containers/5", "value": {}}],
            "error in add for path: '/spec/containers/5': Unable to access invalid index: 5: invalid index referenced",
            id="add-index-out-of-range",
        ),
        pytest.param(
            [{"op": "replace", "path": "/spec/containers/5", "value": {}}],
            "replace operation does not apply: doc is missing key: /spec/containers/5: missing value",
            id="replace-index-out-of-range",
        ),
        pytest.param(
            [{"op": "move", "from": "/metadata/x", "path": "/metadata/y"}],
            "error in move for path: 'x': Unable to remove nonexistent key: x: missing value",
            id="move-missing",
        ),
        pytest.param([{"op": "frob", "path": "/a"}], "Unexpected kind: frob", id="unknown-op"),
        pytest.param([{"path": "/a", "value": 1}], "Unexpected kind: unknown", id="missing-op"),
        pytest.param(
            [{"op": "add", "value": 1}],
            "add operation failed to decode path: missing value",
            id="missing-path",
        ),
        pytest.param(
            [{"op": "replace", "path": "", "value": [1]}],
            "the patched document is a JSON array, not an object",
            id="result-not-an-object",
        ),
    ],
)
def test_json_patch_failures_are_invalid(ops: list[dict[str, Any]], cause: str) -> None:
    with pytest.raises(Invalid) as caught:
        patched(POD, ops, JSON)
    assert caught.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": cause}]},
        "code": 422,
    }


# ---- request errors ------------------------------------------------------------------------------

MEDIA_TYPES = (
    "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
    "application/apply-patch+yaml"
)


@pytest.mark.parametrize(
    ("content_type", "body", "error", "message"),
    [
        pytest.param(
            "application/json",
            b"{}",
            UnsupportedMediaType,
            f"the body of the request was in an unknown format - accepted media types include: {MEDIA_TYPES}",
            id="plain-json",
        ),
        pytest.param(
            SMP,
            b"{nope",
            BadRequest,
            "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            id="smp-malformed",
        ),
        pytest.param(
            SMP,
            b"[]",
            BadRequest,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
            id="smp-not-an-object",
        ),
        pytest.param(SMP, b'{"a": NaN}', BadRequest, "invalid JSON value NaN", id="smp-nan"),
        pytest.param(
            MERGE,
            b"",
            BadRequest,
            "error decoding patch: Expecting value: line 1 column 1 (char 0)",
            id="merge-empty",
        ),
        pytest.param(
            MERGE,
            b'["a"]',
            BadRequest,
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
            id="merge-not-an-object",
        ),
        pytest.param(MERGE, b"null", BadRequest, "Invalid JSON Patch", id="merge-null"),
        pytest.param(
            JSON,
            b'{"op": "add"}',
            BadRequest,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
            id="json-not-a-list",
        ),
        pytest.param(
            JSON,
            b'["add"]',
            BadRequest,
            "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp",
            id="json-op-not-an-object",
        ),
        pytest.param(
            JSON,
            json.dumps([{"op": "test", "path": "/a"}] * 10001).encode(),
            RequestEntityTooLarge,
            "The allowed maximum operations in a JSON patch is 10000, got 10001",
            id="json-too-many-ops",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"containers": [{"image": "x"}]}}',
            BadRequest,
            "map: map[image:x] does not contain declared merge key: name",
            id="smp-missing-merge-key",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"containers": [{"$patch": "delete"}]}}',
            BadRequest,
            "map: map[$patch:delete] does not contain declared merge key: name",
            id="smp-delete-without-key",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"containers": [{"name": "app", "$patch": "frob"}]}}',
            BadRequest,
            "unknown patch type: frob in map: map[$patch:frob name:app]",
            id="smp-unknown-list-directive",
        ),
        pytest.param(
            SMP,
            b'{"metadata": {"labels": {"$patch": "frob"}}}',
            BadRequest,
            "unknown patch type: frob in map: map[$patch:frob]",
            id="smp-unknown-map-directive",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"$retainKeys": ["containers"], "hostname": "h"}}',
            BadRequest,
            "invalid patch format of retainKeys",
            id="smp-retain-keys-mismatch",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"$retainKeys": "containers"}}',
            BadRequest,
            "invalid patch format of retainKeys",
            id="smp-retain-keys-not-a-list",
        ),
        pytest.param(
            SMP,
            b'{"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}',
            BadRequest,
            "invalid patch format of primitive list",
            id="smp-bad-delete-list-key",
        ),
        pytest.param(
            SMP,
            b'{"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}',
            BadRequest,
            "expected a []interface {}, but received a string",
            id="smp-delete-list-not-a-list",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"$setElementOrder": []}}',
            BadRequest,
            "invalid patch format of setElementOrder list",
            id="smp-bad-set-order-key",
        ),
        pytest.param(
            SMP,
            b'{"spec": {"$setElementOrder/containers": {}}}',
            BadRequest,
            "invalid patch format of setElementOrder list",
            id="smp-set-order-not-a-list",
        ),
    ],
)
def test_request_errors(content_type: str, body: bytes, error: type[ApiError], message: str) -> None:
    with pytest.raises(error) as caught:
        apply_patch(POD, body, content_type, kind="Pod")
    assert caught.value.message == message


# ---- contract ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        pytest.param(SMP, {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "9"}]}]}}, id="smp"),
        pytest.param(MERGE, {"spec": {"containers": None}, "metadata": {"labels": {"app": "x"}}}, id="merge"),
        pytest.param(JSON, [{"op": "replace", "path": "/spec/containers/0/env/0/value", "value": "9"}], id="json"),
    ],
)
def test_original_is_never_mutated_nor_shared(content_type: str, patch: Any) -> None:
    before = copy.deepcopy(POD)
    result = patched(POD, patch, content_type)
    assert before == POD
    result["spec"]["tolerations"].append({"key": "mutated"})
    result["metadata"]["finalizers"].append("mutated")
    assert before == POD


def test_content_type_parameters_are_ignored() -> None:
    result = apply_patch(
        POD,
        b'{"metadata": {"labels": {"x": "1"}}}',
        "Application/Merge-Patch+JSON; charset=utf-8",
        kind="Pod",
    )
    assert result["metadata"]["labels"] == {"app": "web", "x": "1"}


@pytest.mark.parametrize(
    ("kind", "path", "merge_key", "merge"),
    [
        pytest.param("Pod", "spec.containers", "name", True, id="pod-containers"),
        pytest.param("Pod", "spec.containers.ports", "containerPort", True, id="container-ports"),
        pytest.param("Pod", "spec.ephemeralContainers.env", "name", True, id="ephemeral-env"),
        pytest.param("Pod", "spec.topologySpreadConstraints", "topologyKey", True, id="topology-spread"),
        pytest.param("Pod", "spec.hostAliases", "ip", True, id="host-aliases"),
        pytest.param("Pod", "spec.tolerations", "", False, id="tolerations-replace"),
        pytest.param("Pod", "metadata.finalizers", "", True, id="finalizers-set"),
        pytest.param(
            "Deployment",
            "spec.template.spec.initContainers.volumeMounts",
            "mountPath",
            True,
            id="deployment-template",
        ),
        pytest.param("ReplicaSet", "status.conditions", "type", True, id="replicaset-conditions"),
        pytest.param("Namespace", "status.conditions", "type", True, id="namespace-conditions"),
        pytest.param("Namespace", "spec.finalizers", "", False, id="namespace-finalizers-replace"),
        pytest.param("Endpoints", "subsets", "", False, id="endpoints-subsets-replace"),
        pytest.param("Widget", "metadata.finalizers", "", False, id="unknown-kind"),
    ],
)
def test_field_metadata(kind: str, path: str, merge_key: str, merge: bool) -> None:
    field = field_metadata(kind, path)
    assert (field.merge_key, field.merge) == (merge_key, merge)
