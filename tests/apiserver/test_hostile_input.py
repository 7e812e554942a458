"""Issue 16: bad input is a 4xx Status, never a 500 or a 201 for an invalid object; reads are consistent with etcd."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import eventually
from tinykube.api import errors
from tinykube.apiserver.schema.fieldvalidation import duplicate_fields
from tinykube.apiserver.storage.consistency import RevisionReader, reach
from tinykube.store.errors import StoreUnavailable

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": list(containers), **spec},
    }


def refused(response: httpx.Response, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status" and body["reason"] == reason
    return body


def test_include_object_bogus_with_table_is_400(api: httpx.Client, namespace: str) -> None:
    for path in (f"/api/v1/namespaces/{namespace}/pods", "/api/v1/namespaces/default"):
        body = refused(api.get(path, params={"includeObject": "Bogus"}, headers={"Accept": TABLE}), 400, "BadRequest")
        assert body["message"] == (
            'Unable to convert to Table as requested: includeObject: Invalid value: "Bogus": '
            "must be 'Metadata', 'Object', 'None', or empty"
        )
    assert api.get("/api/v1/namespaces/default", params={"includeObject": ""}, headers={"Accept": TABLE}).is_success


def test_future_resource_version_is_504_too_large(api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    future = {"resourceVersion": "999999999", "resourceVersionMatch": "Exact"}
    body = refused(api.get(path, params=future), 504, "Timeout")
    assert body["message"].startswith("Too large resource version: 999999999, current: ")
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    start = f"{namespace}/p\u0000"
    token = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 999999999, "start": start}).encode())
    refused(api.get(path, params={"limit": "1", "continue": token.decode()}), 504, "Timeout")
    # a token without a start key is refused before its revision is looked at, as upstream's DecodeContinue does
    empty = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 999999999, "start": ""}).encode())
    assert refused(api.get(path, params={"limit": "1", "continue": empty.decode()}), 400, "BadRequest")["message"] == (
        "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
    )
    refused(api.get("/api/v1/namespaces/default", params={"resourceVersion": "999999999"}), 504, "Timeout")
    for bad in ("-1", "1_0", " 5", "x"):
        refused(api.get(path, params={"resourceVersion": bad}), 400, "BadRequest")


def test_nodeport_service_too_large_for_one_txn_is_422_not_503(api: httpx.Client, namespace: str) -> None:
    ports = [{"name": f"p{i}", "port": 1000 + i} for i in range(127)]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "big"},
        "spec": {"type": "NodePort", "ports": ports},
    }
    body = refused(api.post(f"/api/v1/namespaces/{namespace}/services", json=svc), 422, "Invalid")
    assert body["message"] == 'Service "big" is invalid: spec.ports: Too many: 127: must have at most 126 items'
    assert api.get(f"/api/v1/namespaces/{namespace}/services/big").status_code == 404
    svc["spec"]["ports"] = ports[:100]
    assert api.post(f"/api/v1/namespaces/{namespace}/services", json=svc).status_code == 201


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"containers": [{"name": "C_1", "image": "x"}]},
            'spec.containers[0].name: Invalid value: "C_1": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
            "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        (
            {"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
            'spec.containers[1].name: Duplicate value: "c"',
        ),
        (
            {"initContainers": [{"name": "c", "image": "x"}], "containers": [{"name": "c", "image": "y"}]},
            'spec.containers[0].name: Duplicate value: "c"',
        ),
        (
            {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 99999}]}]},
            "spec.containers[0].ports[0].containerPort: Invalid value: 99999: must be between 1 and 65535, inclusive",
        ),
        (
            {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "protocol": "ICMP"}]}]},
            'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        ),
        (
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "x",
                        "ports": [{"name": "web", "containerPort": 80}, {"name": "web", "containerPort": 81}],
                    }
                ]
            },
            'spec.containers[0].ports[1].name: Duplicate value: "web"',
        ),
        (
            {"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]},
            'spec.containers[0].volumeMounts[0].name: Not found: "data"',
        ),
        (
            {"containers": [{"name": "c", "image": "x"}], "volumes": [{"name": "v"}, {"name": "v"}]},
            'spec.volumes[1].name: Duplicate value: "v"',
        ),
        (
            {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Sometimes"},
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"',
        ),
        (
            {"containers": [{"name": "c", "image": "x"}], "dnsPolicy": "Google"},
            'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirst", "ClusterFirstWithHostNet", '
            '"Default", "None"',
        ),
        (
            {"containers": [{"name": "c", "image": "x", "env": [{"name": "1X"}]}]},
            'spec.containers[0].env[0].name: Invalid value: "1X": a valid environment variable name must consist of '
            "alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or "
            "'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
        ),
    ],
)
def test_invalid_pods_are_422(api: httpx.Client, namespace: str, spec: dict[str, Any], message: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    status = refused(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 422, "Invalid")
    assert status["message"] == f'Pod "p" is invalid: {message}'
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/p").status_code == 404


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {"containers": "nope"},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        (  # found by test_fuzz_api: a 500 (unhashable list)
            {"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": [None], "mountPath": "/d"}]}]},
            "json: cannot unmarshal array into Go struct field VolumeMount.spec.containers.volumeMounts.name of type "
            "string",
        ),
    ],
    ids=["quantity", "containers-string", "mount-name-list"],
)
def test_pods_of_the_wrong_shape_are_400(api: httpx.Client, namespace: str, spec: dict[str, Any], message: str) -> None:
    """Upstream's decoder refuses them before validation (they were 422 here, from validation)."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    status = refused(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 400, "BadRequest")
    assert status["message"] == f'Pod in version "v1" cannot be handled as a Pod: {message}'
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/p").status_code == 404


def test_duplicate_keys_under_strict_are_400(api: httpx.Client, namespace: str) -> None:
    raw = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"q"},'
    raw += b'"spec":{"containers":[{"name":"c","image":"x"}]}}'
    path = f"/api/v1/namespaces/{namespace}/pods"
    headers = {"Content-Type": "application/json"}
    body = refused(
        api.post(path, content=raw, params={"fieldValidation": "Strict"}, headers=headers), 400, "BadRequest"
    )
    assert body["message"] == 'strict decoding error: duplicate field "metadata.name"'
    assert api.get(f"{path}/p").status_code == 404 and api.get(f"{path}/q").status_code == 404
    assert api.post(path, content=raw, headers=headers).status_code == 201  # Warn (default): the last one wins


def test_duplicate_field_paths() -> None:
    assert duplicate_fields(b'{"a":1,"a":2,"m":{"x":[{"n":1,"n":2}]}}') == ["a", "m.x[0].n"]
    assert duplicate_fields(b'{"a":1}') == [] and duplicate_fields(b"not json") == []


def test_body_without_kind_takes_the_kind_of_the_url(api: httpx.Client, namespace: str) -> None:
    """As upstream's typed decoding (the default GroupVersionKind comes from the URL): kept, with its kind."""
    made = api.post(f"/api/v1/namespaces/{namespace}/endpoints", json={"metadata": {"name": "e"}})
    assert made.status_code == 201 and made.json()["kind"] == "Endpoints"


def test_nested_label_value_is_400(api: httpx.Client, namespace: str) -> None:
    value = '{"a":' * 60 + '"x"' + "}" * 60
    raw = '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"n","labels":{"a":' + value + "}}}"
    response = api.post(
        f"/api/v1/namespaces/{namespace}/endpoints", content=raw, headers={"Content-Type": "application/json"}
    )
    body = refused(response, 400, "BadRequest")
    assert body["message"].endswith(
        "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string"
    )
    assert errors.go_value(json.loads(value)).startswith('{"a":{"a":')  # was a 500: rendering it recursed


# ---- found by test_fuzz_schemas ------------------------------------------------------------------------------

UNKNOWN_FORMAT = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "*/*", "application/json-patch+json", "garbage;;==", "application/json; charset", "application"],
)
def test_a_body_of_no_known_media_type_is_415(api: httpx.Client, namespace: str, content_type: str) -> None:
    """Upstream's NegotiateInputSerializer: such a body was decoded as JSON and created (201)."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    raw = json.dumps(pod("p", {"name": "c", "image": "x"})).encode()
    body = refused(api.post(path, content=raw, headers={"Content-Type": content_type}), 415, "UnsupportedMediaType")
    assert body["message"] == UNKNOWN_FORMAT
    assert api.get(f"{path}/p").status_code == 404
    made = api.post(path, content=raw).json()  # no Content-Type: JSON
    refused(
        api.put(f"{path}/p", content=json.dumps(made), headers={"Content-Type": content_type}),
        415,
        "UnsupportedMediaType",
    )
    refused(
        api.request("DELETE", f"{path}/p", content=b"{}", headers={"Content-Type": content_type}),
        415,
        "UnsupportedMediaType",
    )
    assert api.get(f"{path}/p").json()["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    "content_type", ["", "application/json; charset=utf-8", "Application/JSON;", "application/yaml"]
)
def test_a_body_of_a_known_media_type_is_decoded(api: httpx.Client, namespace: str, content_type: str) -> None:
    raw = json.dumps(pod("p", {"name": "c", "image": "x"})).encode()  # JSON is YAML too
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", content=raw, headers={"Content-Type": content_type})
    assert response.status_code == 201, response.text


def test_unknown_fields_of_any_name_are_warned_about_and_dropped(api: httpx.Client, namespace: str) -> None:
    """Named in another script, a warning was a 500 after the pod was stored (a header is latin-1); with a control
    character the connection dropped; an empty name removed all of `metadata` (500); a name with a dot removed the
    field the dotted path names (`spec.containers`)."""
    body: dict[str, Any] = pod("p", {"name": "c", "image": "x"})
    body["metadata"].update({"赦": "x", "\x1f": 1, "": None})
    body["spec.containers"] = 1
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert response.status_code == 201, response.text
    warnings = response.headers.get_list("warning")
    assert warnings == [  # httpx reads the UTF-8 bytes
        '299 - "unknown field \\"metadata.赦\\""',
        '299 - "unknown field \\"metadata. \\""',  # a control character is a space
        '299 - "unknown field \\"metadata.\\""',
        '299 - "unknown field \\"spec.containers\\""',
    ]
    stored = api.get(f"/api/v1/namespaces/{namespace}/pods/p").json()
    known = {"name", "namespace", "uid", "creationTimestamp", "resourceVersion", "managedFields"}
    assert set(stored["metadata"]) == known
    assert "spec.containers" not in stored and stored["spec"]["containers"][0]["name"] == "c"


TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def _wrong_shape_path(namespace: str, plural: str) -> tuple[str, str]:
    group = {"deployments": "apps/v1", "replicasets": "apps/v1", "endpointslices": "discovery.k8s.io/v1"}.get(plural)
    base = f"/apis/{group}" if group else "/api/v1"
    path = f"{base}/{plural}" if plural == "namespaces" else f"{base}/namespaces/{namespace}/{plural}"
    return path, f"{namespace}-x" if plural == "namespaces" else "x"


@pytest.mark.parametrize(
    ("plural", "body", "message"),
    [
        ("namespaces", {"spec": True}, "bool into Go struct field Namespace.spec of type v1.NamespaceSpec"),
        (
            "namespaces",
            {"spec": [], "metadata": {"labels": None}},
            "array into Go struct field Namespace.spec of type v1.NamespaceSpec",
        ),
        ("deployments", {"spec": ""}, "string into Go struct field Deployment.spec of type v1.DeploymentSpec"),
        ("replicasets", {"spec": 0}, "number into Go struct field ReplicaSet.spec of type v1.ReplicaSetSpec"),
        (
            "deployments",
            {
                "spec": {
                    "selector": {"matchLabels": {"app": "a"}},
                    "template": TEMPLATE,
                    "strategy": {"rollingUpdate": "x"},
                }
            },
            "string into Go struct field DeploymentStrategy.spec.strategy.rollingUpdate of type "
            "v1.RollingUpdateDeployment",
        ),
        (
            "replicasets",
            {"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": True}, "template": TEMPLATE}},
            "bool into Go struct field LabelSelector.spec.selector.matchExpressions of type "
            "[]v1.LabelSelectorRequirement",
        ),
        (
            "deployments",
            {"spec": {"selector": {"matchLabels": {"app": "a"}, "matchExpressions": ["x", {"operator": []}]}}},
            "string into Go struct field LabelSelector.spec.selector.matchExpressions of type "
            "v1.LabelSelectorRequirement",
        ),
        (
            "services",
            {"spec": {"ports": 1}},
            "number into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort",
        ),
        (
            "endpoints",
            {"subsets": [{"ports": -871}]},
            "number into Go struct field EndpointSubset.subsets.ports of type []v1.EndpointPort",
        ),
        (
            "endpointslices",
            {"addressType": "IPv4", "ports": [{"port": "80"}], "endpoints": [{"addresses": "10.0.0.1"}]},
            "string into Go struct field EndpointPort.ports.port of type int32",  # the first of two, in body order
        ),
    ],
    ids=[
        "namespace-spec-bool",
        "namespace-spec-list",
        "deployment-spec-string",
        "replicaset-spec-number",
        "deployment-rolling-update-string",
        "selector-expressions-bool",
        "selector-expression-string-and-operator-list",
        "service-ports-number",
        "endpoints-ports-number",
        "endpointslice-port-string",
    ],
)
def test_fields_of_the_wrong_shape_are_400(
    api: httpx.Client, namespace: str, plural: str, body: dict[str, Any], message: str
) -> None:
    """Each was a 500 from defaulting or validation that took the field for an object (or a list), then a 422 from
    validation; upstream's decoder refuses them first."""
    path, name = _wrong_shape_path(namespace, plural)
    response = api.post(path, json={**body, "metadata": {**body.get("metadata", {}), "name": name}})
    status = refused(response, 400, "BadRequest")
    assert status["message"].endswith(f"json: cannot unmarshal {message}"), status["message"]
    assert api.get(f"{path}/{name}").status_code == 404


def test_a_null_label_in_a_selector_is_422(api: httpx.Client, namespace: str) -> None:
    """Null decodes (it is the zero value); validation then refuses it."""
    path, name = _wrong_shape_path(namespace, "replicasets")
    spec = {"selector": {"matchLabels": {"app": None}}, "template": TEMPLATE}
    status = refused(api.post(path, json={"metadata": {"name": name}, "spec": spec}), 422, "Invalid")
    assert "spec.selector.matchLabels[app]: Invalid value: null: must be a string" in status["message"]
    assert api.get(f"{path}/{name}").status_code == 404


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("", "json: cannot unmarshal string into Go struct field Binding.target of type v1.ObjectReference"),
        ([], "json: cannot unmarshal array into Go struct field Binding.target of type v1.ObjectReference"),
        (
            {"kind": [{}], "name": "n"},
            "json: cannot unmarshal array into Go struct field ObjectReference.target.kind of type string",
        ),
        (
            {"name": "n", "uid": 5},
            "json: cannot unmarshal number into Go struct field ObjectReference.target.uid of type types.UID",
        ),
    ],
    ids=["target-string", "target-list", "target-kind-list", "target-uid-number"],
)
def test_a_binding_of_the_wrong_shape_is_400(api: httpx.Client, namespace: str, target: Any, message: str) -> None:
    """Upstream's decoder refuses it (400); it was the 500 upstream keeps for a well-typed target it refuses."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    api.post(path, json=pod("p", {"name": "c", "image": "x"})).raise_for_status()
    for url in (f"{path}/p/binding", f"/api/v1/namespaces/{namespace}/bindings"):
        response = api.post(url, json={"metadata": {"name": "p"}, "target": target})
        body = refused(response, 400, "BadRequest")
        assert body["message"] == f'Binding in version "v1" cannot be handled as a Binding: {message}'
    assert "nodeName" not in api.get(f"{path}/p").json()["spec"]


def test_bindings_are_in_the_openapi_document(api: httpx.Client) -> None:
    """Discovery serves `bindings` and `pods/binding`; kubectl explain and schema-driven clients need the kind."""
    document = api.get("/openapi/v2").json()
    binding = document["definitions"]["io.k8s.api.core.v1.Binding"]
    assert binding["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Binding", "version": "v1"}]
    assert binding["required"] == ["target"]
    paths = document["paths"]
    assert paths["/api/v1/namespaces/{namespace}/bindings"]["post"]["operationId"] == "createCoreV1NamespacedBinding"
    pods_binding = paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert pods_binding["operationId"] == "createCoreV1NamespacedPodBinding"
    assert pods_binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SPECLESS = "specless.hostile.example.com"


@pytest.fixture
def crd(api: httpx.Client) -> Iterator[str]:
    """A CRD of this module's own (cluster-scoped: removed afterwards, whatever the test did)."""
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
    names = {"plural": "specless", "kind": "Specless"}
    spec = {"group": "hostile.example.com", "scope": "Namespaced", "names": names, "versions": [version]}
    api.post(CRDS, json={"metadata": {"name": SPECLESS}, "spec": spec}).raise_for_status()
    try:
        # the controller's last write: from here on the CRD changes only by the test's writes
        eventually(lambda: established(api.get(f"{CRDS}/{SPECLESS}").json()), 30, "the CRD established")
        yield f"{CRDS}/{SPECLESS}"
    finally:
        api.delete(f"{CRDS}/{SPECLESS}")
        eventually(lambda: api.get(f"{CRDS}/{SPECLESS}").status_code == 404, 30, "the CRD deleted")


def established(crd: dict[str, Any]) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.mark.parametrize(
    ("method", "content_type", "body"),
    [
        pytest.param("PATCH", "application/json-patch+json", [{"op": "remove", "path": "/spec"}], id="remove-spec"),
        pytest.param("PATCH", "application/merge-patch+json", {"spec": None}, id="merge-null-spec"),
        pytest.param(
            "PATCH", "application/json-patch+json", [{"op": "remove", "path": "/spec/versions"}], id="remove-versions"
        ),
        pytest.param("PUT", "application/json", None, id="put-without-spec"),
    ],
)
def test_a_crd_written_without_its_spec_is_422(
    api: httpx.Client, crd: str, method: str, content_type: str, body: Any
) -> None:
    """test_fuzz_patch_every_kind found it: the strategy read spec.versions (for status.storedVersions) before
    validation, answered a 500 (KeyError: 'spec'), and the apiserver dropped the connection after it. Upstream's
    strategy reads a Go struct that is never missing, and validation answers."""
    before = api.get(crd).json()
    if body is None:
        body = {key: value for key, value in before.items() if key != "spec"}
    response = api.request(method, crd, content=json.dumps(body), headers={"Content-Type": content_type})
    status = refused(response, 422, "Invalid")
    assert status["message"].startswith(f'CustomResourceDefinition.apiextensions.k8s.io "{SPECLESS}" is invalid: [')
    causes = {(cause.get("field"), cause["reason"]) for cause in status["details"]["causes"]}
    assert ("spec.versions", "FieldValueInvalid") in causes  # "must have exactly one version marked as storage ..."
    if "versions" not in json.dumps(body):  # the whole spec went
        assert ("spec.group", "FieldValueRequired") in causes
    assert api.get(crd).json() == before


# ---- consistent reads ----------------------------------------------------------------------------------------


class FakeStore:
    def __init__(self) -> None:
        self.rev = 10
        self.calls = 0
        self.down = False

    async def revision(self) -> int:
        self.calls += 1
        rev, down = self.rev, self.down  # what etcd answers is decided when the request arrives
        await asyncio.sleep(0.01)
        if down:
            raise StoreUnavailable("cannot connect to etcd")
        return rev


def test_revision_reads_are_shared_by_concurrent_readers() -> None:
    async def main() -> None:
        store = FakeStore()
        reader = RevisionReader(store)  # type: ignore[arg-type]
        got = await asyncio.gather(*(reader.current() for _ in range(50)))
        assert got == [10] * 50 and store.calls == 1
        first = asyncio.ensure_future(reader.current())
        await asyncio.sleep(0.001)  # its request is on its way
        store.rev = 11  # a write acknowledged while the first read is in flight: later readers must see it
        later = await asyncio.gather(*(reader.current() for _ in range(20)))
        assert await first == 10 and later == [11] * 20 and store.calls == 3
        store.down = True
        with pytest.raises(errors.ServiceUnavailable):
            await reader.current()

    asyncio.run(main())


def test_reads_without_resource_version_fail_while_etcd_is_down() -> None:
    class Cache:
        revision = 10

        async def wait_for(self, revision: int) -> bool:
            return revision <= self.revision

    async def main() -> None:
        store = FakeStore()
        reader = RevisionReader(store)  # type: ignore[arg-type]
        cache = Cache()
        await reach(cache, reader, "")  # type: ignore[arg-type]
        store.down = True
        await reach(cache, reader, "0")  # type: ignore[arg-type]  # resourceVersion=0: whatever the cache has
        await reach(cache, reader, "5")  # type: ignore[arg-type]  # the cache is past it: no etcd read
        with pytest.raises(errors.ServiceUnavailable):
            await reach(cache, reader, "")  # type: ignore[arg-type]

    asyncio.run(main())
