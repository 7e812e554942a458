"""Property-based fuzzing of the API's inputs (issue 16): whatever a client sends — bodies mutated from valid
objects, query parameters, headers, patches of every type — the answer is never a 5xx, and a 4xx changes nothing
stored. Examples are bounded so the module runs in seconds; every case found is kept in test_hostile_input.py."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)

BASE_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "fuzz", "labels": {"a": "b"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "x",
                "ports": [{"name": "http", "containerPort": 80}],
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "resources": {"requests": {"cpu": "100m"}},
            }
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
    },
}
PATHS = [
    ("metadata", "name"),
    ("metadata", "labels"),
    ("spec", "containers"),
    ("spec", "containers", 0, "name"),
    ("spec", "containers", 0, "ports"),
    ("spec", "containers", 0, "ports", 0, "containerPort"),
    ("spec", "containers", 0, "ports", 0, "protocol"),
    ("spec", "containers", 0, "env", 0, "name"),
    ("spec", "containers", 0, "volumeMounts", 0, "name"),
    ("spec", "containers", 0, "resources", "requests", "cpu"),
    ("spec", "volumes"),
    ("spec", "volumes", 0, "name"),
    ("spec", "restartPolicy"),
    ("spec", "dnsPolicy"),
    ("spec",),
    ("kind",),
]


def mutate(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    obj: Any = json.loads(json.dumps(BASE_POD))
    node = obj
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return obj


def no_5xx(response: httpx.Response) -> None:
    assert response.status_code < 500, f"{response.request.method} {response.request.url}: {response.text[:500]}"


def snapshot(api: httpx.Client, namespace: str) -> list[Any]:
    items = api.get(f"/api/v1/namespaces/{namespace}/pods", params={"resourceVersion": ""}).json()["items"]
    return sorted((i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in items)


def test_fuzz_create_bodies(api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"

    @FUZZ
    @given(st.sampled_from(PATHS), json_values, st.sampled_from(["", "Strict", "Warn", "Ignore", "Bogus"]))
    def case(field: tuple[Any, ...], value: Any, validation: str) -> None:
        before = snapshot(api, namespace)
        params = {"fieldValidation": validation, "dryRun": "All"} if validation else {"dryRun": "All"}
        response = api.post(path, json=mutate(field, value), params=params)
        no_5xx(response)
        assert snapshot(api, namespace) == before  # dry run or refused: nothing stored

    case()


def test_fuzz_query_parameters_and_headers(api: httpx.Client, namespace: str) -> None:
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=BASE_POD).raise_for_status()
    texts = st.sampled_from(["", "0", "1", "-1", "999999999", "abc", "x=y", "a in (b)", "!", "Bogus", "None"])
    params = st.dictionaries(
        st.sampled_from(
            [
                "resourceVersion",
                "resourceVersionMatch",
                "limit",
                "continue",
                "labelSelector",
                "fieldSelector",
                "includeObject",
                "timeoutSeconds",
                "propagationPolicy",
                "dryRun",
                "fieldValidation",
                "allowWatchBookmarks",
            ]
        ),
        texts | st.text(max_size=10),
        max_size=4,
    )
    accepts = st.sampled_from(
        [
            "application/json",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            "application/yaml",
            "*/*",
            "garbage;;==",
        ]
    )
    urls = st.sampled_from(
        [f"/api/v1/namespaces/{namespace}/pods", f"/api/v1/namespaces/{namespace}/pods/fuzz", "/api/v1/pods"]
    )

    @FUZZ
    @given(urls, params, accepts)
    def case(url: str, query: dict[str, str], accept: str) -> None:
        query.pop("watch", None)
        no_5xx(api.get(url, params=query, headers={"Accept": accept}))

    case()


def test_fuzz_patches(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods/fuzz"
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=BASE_POD).raise_for_status()
    pointers = st.sampled_from(["/metadata/labels/x", "/spec/containers/0/name", "/spec", "/metadata", "", "/x/0/-"])
    json_patch = st.lists(
        st.fixed_dictionaries(
            {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]), "path": pointers},
            optional={"value": json_values, "from": pointers},
        ),
        max_size=3,
    )
    merge = st.dictionaries(st.sampled_from(["metadata", "spec", "status", "kind"]), json_values, max_size=2)
    patches = st.tuples(st.just("application/json-patch+json"), json_patch) | st.tuples(
        st.sampled_from(["application/merge-patch+json", "application/strategic-merge-patch+json"]), merge
    )

    @FUZZ
    @given(patches, st.sampled_from(["", "Strict"]))
    def case(patch: tuple[str, Any], validation: str) -> None:
        before = api.get(url).json()
        params = {"fieldValidation": validation} if validation else {}
        response = api.patch(url, content=json.dumps(patch[1]), headers={"Content-Type": patch[0]}, params=params)
        no_5xx(response)
        if response.status_code >= 400:
            assert api.get(url).json() == before
        elif response.status_code == 200:
            api.put(url, json={**before, "metadata": {**before["metadata"], "resourceVersion": ""}})

    case()
