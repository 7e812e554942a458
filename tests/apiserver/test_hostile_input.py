"""Issue 16: bad input is a 4xx Status, never a 500 or a 201 for an invalid object; reads are consistent with etcd."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest

from tinykube.api import errors
from tinykube.apiserver.consistency import RevisionReader, reach
from tinykube.apiserver.fieldvalidation import duplicate_fields
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
    token = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 999999999, "start": ""}).encode())
    refused(api.get(path, params={"limit": "1", "continue": token.decode()}), 504, "Timeout")
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
        (
            {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}]},
            'spec.containers[0].resources.requests[cpu]: Invalid value: "lots": quantities must match the regular '
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        ({"containers": "nope"}, 'spec.containers: Invalid value: "nope": must be a list'),
        (  # found by test_fuzz_api: a 500 (unhashable list)
            {"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": [None], "mountPath": "/d"}]}]},
            "spec.containers[0].volumeMounts[0].name: Invalid value: [null]: must be a string",
        ),
    ],
)
def test_invalid_pods_are_422(api: httpx.Client, namespace: str, spec: dict[str, Any], message: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    status = refused(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 422, "Invalid")
    assert status["message"] == f'Pod "p" is invalid: {message}'
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


def test_nested_label_value_is_422(api: httpx.Client, namespace: str) -> None:
    value = '{"a":' * 60 + '"x"' + "}" * 60
    raw = '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"n","labels":{"a":' + value + "}}}"
    response = api.post(
        f"/api/v1/namespaces/{namespace}/endpoints", content=raw, headers={"Content-Type": "application/json"}
    )
    refused(response, 422, "Invalid")
    assert errors.go_value(json.loads(value)).startswith('{"a":{"a":')


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
