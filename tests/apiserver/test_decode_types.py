"""A body whose fields have the wrong JSON type is refused as upstream's decoder refuses it, for every kind
(`tinykube.apiserver.schema.decodetypes`): 400 for a create or an update, 422 for a patch's result, nothing stored;
null and the values Go converts are accepted. Table tests against the real apiserver, the decoder's rules without
HTTP, a property over several kinds, and `kubectl apply`."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import RunningCluster
from tinykube.api import errors
from tinykube.api.resources import RESOURCES, ResourceInfo
from tinykube.apiserver.schema import decodetypes
from tinykube.apiserver.schema.decodetypes import Source

Object = dict[str, Any]
JSON = {"Content-Type": "application/json"}


def resource(api_version: str, kind: str) -> ResourceInfo:
    return next(r for r in RESOURCES if r.api_version == api_version and r.kind == kind)


def collection(info: ResourceInfo, namespace: str) -> str:
    base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    return f"{base}/namespaces/{namespace}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"


def refused(response: httpx.Response, code: int, reason: str) -> Object:
    assert response.status_code == code, response.text
    body: Object = response.json()
    assert (body["kind"], body["code"], body["reason"]) == ("Status", code, reason)
    return body


# ---- valid objects of several kinds --------------------------------------------------------------------------------

TEMPLATE: Object = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "command": ["sleep", "3600"],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
        "terminationGracePeriodSeconds": 5,
        "enableServiceLinks": False,
    },
}
VALID: dict[tuple[str, str], Object] = {
    ("v1", "Pod"): {"metadata": {"labels": {"app": "a"}}, "spec": TEMPLATE["spec"]},
    ("apps/v1", "Deployment"): {
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "a"}},
            "template": TEMPLATE,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        }
    },
    ("v1", "Service"): {
        "spec": {"selector": {"app": "a"}, "ports": [{"name": "web", "port": 80, "targetPort": 8080}]},
    },
    ("v1", "ConfigMap"): {"data": {"k": "v"}, "immutable": False},
    ("rbac.authorization.k8s.io/v1", "Role"): {
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    },
    ("batch/v1", "Job"): {
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}},
        }
    },
    ("policy/v1", "PodDisruptionBudget"): {
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}},
    },
    ("coordination.k8s.io/v1", "Lease"): {
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": "2024-01-01T00:00:00.000000Z"},
    },
}
# Where Go's decoder takes another JSON type than the field's usual one: quantities take numbers, int-or-string
# fields both. (Paths with list indices as written; the last key names the field.)
QUANTITY_FIELDS = {"cpu", "memory"}
INT_OR_STRING_FIELDS = {"maxSurge", "maxUnavailable", "minAvailable", "targetPort"}


def valid(key: tuple[str, str], name: str) -> Object:
    api_version, kind = key
    body = copy.deepcopy(VALID[key])
    body["metadata"] = {**body.get("metadata", {}), "name": name}
    return {"apiVersion": api_version, "kind": kind, **body}


def paths(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every field, list element and map value of a body (not the object itself)."""
    if prefix:
        yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in children:
        yield from paths(item, (*prefix, key))


def json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


OTHER_VALUES: list[Any] = ["x", 7, True, [], ["x"], {}, {"a": "b"}, None]


def accepted_by_go(path: tuple[str | int, ...], original: Any, replacement: Any) -> bool:
    """Whether Go's decoder takes `replacement` where the valid body had `original` (the oracle of the property,
    written from Go's rules, not from the implementation)."""
    field = next((step for step in reversed(path) if isinstance(step, str)), "")
    if replacement is None:
        return True
    if field in QUANTITY_FIELDS and path[-1] == field:  # a number is a quantity's literal
        return isinstance(replacement, int | float) and not isinstance(replacement, bool)
    if field in INT_OR_STRING_FIELDS:
        return isinstance(replacement, str) or (isinstance(replacement, int) and not isinstance(replacement, bool))
    return False


@st.composite
def mutated(draw: st.DrawFn) -> tuple[tuple[str, str], tuple[str | int, ...], Any]:
    """A kind, a field of its valid body, and a value of another JSON type for it (or null)."""
    key = draw(st.sampled_from(sorted(VALID)))
    body = valid(key, "x")
    path = draw(st.sampled_from(list(paths(body))))
    original: Any = body
    for step in path:
        original = original[step]
    replacement = draw(st.sampled_from([v for v in OTHER_VALUES if v is None or json_kind(v) != json_kind(original)]))
    return key, path, replacement


_names = itertools.count()


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(case=mutated())
def test_a_field_of_another_json_type_is_refused_and_nothing_is_stored(
    api: httpx.Client, namespace: str, case: tuple[tuple[str, str], tuple[str | int, ...], Any]
) -> None:
    key, path, replacement = case
    info = resource(*key)
    name = f"m{next(_names)}"
    body = valid(key, name)
    original: Any = body
    for step in path[:-1]:
        original = original[step]
    was, original[path[-1]] = original[path[-1]], replacement
    url = collection(info, namespace)
    response = api.post(url, json=body)
    if accepted_by_go(path, was, replacement):
        assert response.status_code in (201, 422), (path, replacement, response.text)  # validation may still refuse
    else:
        status = refused(response, 400, "BadRequest")
        assert "cannot be handled as a" in status["message"] or "unrecognized" in status["message"], status
    if response.status_code != 201:
        assert api.get(f"{url}/{name}").status_code == 404, (path, replacement)


def test_the_property_objects_are_valid(api: httpx.Client, namespace: str) -> None:
    """The property's baseline: each unmutated body is created."""
    for key in VALID:
        response = api.post(collection(resource(*key), namespace), json=valid(key, "base"))
        assert response.status_code == 201, (key, response.text)


# ---- creates: upstream's messages ----------------------------------------------------------------------------------


def handled(kind: str, detail: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: {detail}'


@pytest.mark.parametrize(
    ("key", "change", "message"),
    [
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": "c", "image": 1}]}},
            "json: cannot unmarshal number into Go struct field Container.spec.containers.image of type string",
            id="pod-image-number",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": "x"},
            "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
            id="pod-spec-string",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": {"name": "c"}}},
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
            id="pod-containers-object",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": ["c"]}},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type v1.Container",
            id="pod-container-string",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": "c", "image": "x", "env": [{"name": "A", "value": 8080}]}]}},
            "json: cannot unmarshal number into Go struct field EnvVar.spec.containers.env.value of type string",
            id="env-value-number",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "protocol": 6}]}]}},
            "json: cannot unmarshal number into Go struct field ContainerPort.spec.containers.ports.protocol of type "
            "v1.Protocol",
            id="named-string-type",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": {"labels": ["a"]}},
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
            id="labels-array",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": {"labels": {"a": True}}},
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
            id="label-value-bool",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": True}}}]}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="quantity-bool",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": "1"}}]}},
            "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers.resources.limits "
            "of type v1.ResourceList",
            id="resource-list-string",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": {"name": 5}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
            id="name-number",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": "x"},
            "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta",
            id="metadata-string",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": {"creationTimestamp": 5}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string",
            id="time-number",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"metadata": {"creationTimestamp": "yesterday"}},
            'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"',
            id="time-word",
        ),
        pytest.param(
            ("apps/v1", "Deployment"),
            {"spec": {"replicas": "3"}},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            id="replicas-string",
        ),
        pytest.param(
            ("apps/v1", "Deployment"),
            {"spec": {"replicas": 1.5}},
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
            id="replicas-fraction",
        ),
        pytest.param(
            ("apps/v1", "Deployment"),
            {"spec": {"replicas": 2**31}},
            "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32",
            id="replicas-overflow",
        ),
        pytest.param(
            ("apps/v1", "Deployment"),
            {"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}},
            "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate."
            "maxSurge of type int32",
            id="int-or-string-bool",
        ),
        pytest.param(
            ("rbac.authorization.k8s.io/v1", "Role"),
            {"rules": {}},
            "json: cannot unmarshal object into Go struct field Role.rules of type []v1.PolicyRule",
            id="role-rules-object",
        ),
        pytest.param(
            ("batch/v1", "Job"),
            {"spec": {"suspend": "yes"}},
            "json: cannot unmarshal string into Go struct field JobSpec.spec.suspend of type bool",
            id="bool-string",
        ),
        pytest.param(
            ("batch/v1", "Job"),
            {"spec": {"activeDeadlineSeconds": 2**63}},
            "json: cannot unmarshal number 9223372036854775808 into Go struct field JobSpec.spec.activeDeadlineSeconds "
            "of type int64",
            id="int64-overflow",
        ),
        pytest.param(
            ("v1", "Secret"),
            {"data": {"k": "not base64!"}},
            "illegal base64 data at input byte 3",
            id="bytes-not-base64",
        ),
        pytest.param(
            ("v1", "Secret"),
            {"data": {"k": 5}},
            "json: cannot unmarshal number into Go struct field Secret.data of type []uint8",
            id="bytes-number",
        ),
        pytest.param(
            ("coordination.k8s.io/v1", "Lease"),
            {"spec": {"renewTime": "2024-01-01T00:00:00Z"}},
            'parsing time "2024-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
            id="micro-time-without-micros",
        ),
        pytest.param(
            ("v1", "Pod"),
            {
                "spec": {
                    "containers": [
                        {"name": "c", "image": 1, "resources": {"requests": {"cpu": "lots"}}},
                    ]
                }
            },
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="self-decoding-error-wins-over-an-earlier-type-error",
        ),
        pytest.param(
            ("v1", "Pod"),
            {"spec": {"containers": [{"name": 1, "image": 2}]}},
            "json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string",
            id="first-type-error-in-body-order",
        ),
    ],
)
def test_a_create_of_the_wrong_type_is_400_and_stores_nothing(
    api: httpx.Client, namespace: str, key: tuple[str, str], change: Object, message: str
) -> None:
    api_version, kind = key
    body: Object = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    body.update({k: ({"name": "x", **v} if k == "metadata" and isinstance(v, dict) else v) for k, v in change.items()})
    url = collection(resource(*key), namespace)
    status = refused(api.post(url, json=body), 400, "BadRequest")
    assert status["message"] == handled(kind, message)
    assert api.get(f"{url}/x").status_code == 404


def test_a_kind_of_the_wrong_type_cannot_even_be_recognized(api: httpx.Client, namespace: str) -> None:
    raw = b'{"kind":5,"apiVersion":"v1","metadata":{"name":"x"}}'
    status = refused(api.post(f"/api/v1/namespaces/{namespace}/pods", content=raw, headers=JSON), 400, "BadRequest")
    assert status["message"] == (
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: "
        'json: cannot unmarshal number into Go struct field .kind of type string ({"kind":5,"apiVersion":"v1","m ...)'
    )


def test_null_is_the_zero_value(api: httpx.Client, namespace: str) -> None:
    """Go's decoder takes null for any field: a Deployment's replicas default as if absent; null kind, apiVersion and
    metadata fields are no value at all."""
    body = valid(("apps/v1", "Deployment"), "d")
    body["spec"]["replicas"] = None
    body["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = None
    body["kind"] = body["apiVersion"] = body["metadata"]["namespace"] = None
    body["metadata"]["creationTimestamp"] = None
    response = api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["replicas"] == 1


def test_a_review_of_the_wrong_type_is_400(api: httpx.Client) -> None:
    """The answered kinds decode their bodies too."""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": 5}}
    status = refused(api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=body), 400, "BadRequest")
    assert status["message"] == handled(
        "SubjectAccessReview",
        "json: cannot unmarshal number into Go struct field SubjectAccessReviewSpec.spec.user of type string",
    )


# ---- YAML bodies -----------------------------------------------------------------------------------------------------


def test_yaml_whole_floats_are_integers_and_errors_come_in_key_order(api: httpx.Client, namespace: str) -> None:
    """A YAML body is converted to JSON before decoding: `3.0` becomes `3`, and the keys are sorted, so the first
    error is the first in key order, not in the document."""
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    body = valid(("apps/v1", "Deployment"), "y")
    body["spec"]["replicas"] = 3.0
    made = api.post(url, content=yaml.safe_dump(body, sort_keys=False), headers={"Content-Type": "application/yaml"})
    assert made.status_code == 201, made.text
    assert made.json()["spec"]["replicas"] == 3 and "3.0" not in made.text
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: z}\nspec:\n  selector: 1\n  paused: x\n"
    status = refused(api.post(url, content=text, headers={"Content-Type": "application/yaml"}), 400, "BadRequest")
    assert status["message"] == handled(
        "Deployment", "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"
    )
    as_json = {"metadata": {"name": "z"}, "spec": {"selector": 1, "paused": "x"}}
    status = refused(api.post(url, json=as_json), 400, "BadRequest")
    assert "DeploymentSpec.spec.selector of type v1.LabelSelector" in status["message"]


# ---- updates and patches ---------------------------------------------------------------------------------------------


@pytest.fixture
def deployment(api: httpx.Client, namespace: str) -> tuple[str, Object]:
    url = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    made = api.post(url, json=valid(("apps/v1", "Deployment"), "d"))
    assert made.status_code == 201, made.text
    return f"{url}/d", made.json()


def unchanged(api: httpx.Client, url: str, before: Object) -> None:
    """The refused write changed nothing (the controller may have written the status meanwhile: not compared)."""
    now = api.get(url).json()
    assert (now["spec"], now["metadata"]["generation"]) == (before["spec"], before["metadata"]["generation"])


def test_an_update_of_the_wrong_type_is_400(api: httpx.Client, deployment: tuple[str, Object]) -> None:
    url, made = deployment
    body = copy.deepcopy(made)
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    status = refused(api.put(url, json=body), 400, "BadRequest")
    assert status["message"] == handled(
        "Deployment",
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports."
        "containerPort of type int32",
    )
    unchanged(api, url, made)


def patch(api: httpx.Client, url: str, body: Any, content_type: str) -> httpx.Response:
    return api.patch(url, content=json.dumps(body), headers={"Content-Type": content_type})


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/merge-patch+json", {"spec": {"replicas": "3"}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": "3"}]),
    ],
    ids=["merge", "json"],
)
def test_a_json_or_merge_patch_of_the_wrong_type_is_422_quoting_the_object(
    api: httpx.Client, deployment: tuple[str, Object], content_type: str, body: Any
) -> None:
    """Upstream decodes the patched object and answers `NewInvalid` with no kind and no name, the whole patched
    object as the value."""
    url, made = deployment
    status = refused(patch(api, url, body, content_type), 422, "Invalid")
    detail = "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert status["message"].endswith(f'}}": {detail}')
    assert '\\"replicas\\":\\"3\\"' in status["message"]
    (cause,) = status["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
    assert cause["message"].endswith(detail)
    unchanged(api, url, made)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"spec": {"replicas": "3"}}, "unrecognized type: int32"),
        ({"spec": {"paused": 1}}, "unrecognized type: bool"),
        ({"spec": {"template": {"spec": {"hostname": 1}}}}, "cannot convert int64 to string"),
        ({"spec": {"replicas": 1.5}}, "cannot convert float64 to int32"),
        ({"spec": {"selector": "x"}}, "cannot restore struct from: string"),
        ({"metadata": {"finalizers": "x"}}, "cannot restore slice from string"),
        ({"metadata": {"labels": ["x"]}}, "cannot restore map from slice"),
        (
            {"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}},
            "json: cannot unmarshal bool into Go value of type int32",
        ),
    ],
    ids=["int", "bool", "string", "fraction", "struct", "slice", "map", "int-or-string"],
)
def test_a_strategic_merge_patch_of_the_wrong_type_is_422_in_the_converters_words(
    api: httpx.Client, deployment: tuple[str, Object], body: Object, detail: str
) -> None:
    """The strategic merge patch's result is converted from a map, not decoded: other words, the patch quoted as Go
    prints a map."""
    url, made = deployment
    status = refused(patch(api, url, body, "application/strategic-merge-patch+json"), 422, "Invalid")
    printed = json.dumps(golang_v(body))
    assert status["message"] == f' "" is invalid: patch: Invalid value: {printed}: {detail}'
    unchanged(api, url, made)


def golang_v(value: Any) -> str:
    """Go's `%v` of a small JSON value (independently of `tinykube.api.golang`, for the test)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{golang_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(golang_v(v) for v in value) + "]"
    return {True: "true", False: "false"}.get(value, str(value)) if isinstance(value, bool) else str(value)


def test_a_strategic_merge_patch_takes_whole_floats(api: httpx.Client, deployment: tuple[str, Object]) -> None:
    """The converter converts a whole float64 to an int32 (Go's `ConvertibleTo`), so `3.0` is 3."""
    url, _ = deployment
    response = patch(api, url, {"spec": {"replicas": 3.0}}, "application/strategic-merge-patch+json")
    assert response.status_code == 200, response.text
    assert response.json()["spec"]["replicas"] == 3 and api.get(url).json()["spec"]["replicas"] == 3


def test_a_scale_of_the_wrong_type_is_refused(api: httpx.Client, deployment: tuple[str, Object]) -> None:
    url, made = deployment
    scale = api.get(f"{url}/scale").json()
    scale["spec"]["replicas"] = "5"
    status = refused(api.put(f"{url}/scale", json=scale), 400, "BadRequest")
    assert status["message"] == handled(
        "Scale", "json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
    )
    response = patch(api, f"{url}/scale", {"spec": {"replicas": "5"}}, "application/merge-patch+json")
    refused(response, 422, "Invalid")
    unchanged(api, url, made)


# ---- kubectl -------------------------------------------------------------------------------------------------------


def test_kubectl_apply_of_a_wrong_type_prints_upstreams_error(cluster: RunningCluster, namespace: str) -> None:
    manifest = yaml.safe_dump(valid(("apps/v1", "Deployment"), "web") | {"metadata": {"name": "web"}})
    wrong = manifest.replace("replicas: 2", "replicas: '3'")
    assert wrong != manifest
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=wrong, check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot be handled '
        "as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type "
        "int32"
    )
    assert cluster.kubectl("get", "deployment", "web", "-n", namespace, check=False).returncode != 0


# ---- the decoder's rules, without HTTP -------------------------------------------------------------------------------

DEPLOYMENTS = resource("apps/v1", "Deployment")
PODS = resource("v1", "Pod")
CONFIGMAPS = resource("v1", "ConfigMap")


@pytest.mark.parametrize(
    ("info", "obj", "source", "problem"),
    [
        pytest.param(DEPLOYMENTS, {"spec": {"replicas": 3.0}}, Source.JSON, "number 3.0", id="json-whole-float"),
        pytest.param(DEPLOYMENTS, {"spec": {"replicas": 3.0}}, Source.YAML, None, id="yaml-whole-float"),
        pytest.param(DEPLOYMENTS, {"spec": {"replicas": 3.0}}, Source.STRATEGIC, None, id="converted-whole-float"),
        pytest.param(
            DEPLOYMENTS, {"spec": {"replicas": 2**32 + 7}}, Source.STRATEGIC, None, id="converted-overflow-wraps"
        ),
        pytest.param(CONFIGMAPS, {"binaryData": {"k": [104, 105]}}, Source.JSON, None, id="bytes-as-an-array"),
        pytest.param(CONFIGMAPS, {"binaryData": {"k": [256]}}, Source.JSON, "number 256 into", id="byte-out-of-range"),
        pytest.param(PODS, {"spec": {"overhead": {"cpu": 1.5}}}, Source.JSON, None, id="quantity-number"),
        pytest.param(PODS, {"spec": {"bogus": 1, "hostname": None}}, Source.JSON, None, id="unknown-and-null"),
        pytest.param(
            resource("apps/v1", "ControllerRevision"),
            {"data": [1, "x", {}], "revision": 1},
            Source.JSON,
            None,
            id="raw-extension",
        ),
        pytest.param(
            PODS,
            {"metadata": {"managedFields": [{"fieldsV1": {"f:x": {}}, "time": "x"}]}},
            Source.JSON,
            "parsing time",
            id="fields-v1-anything-time-not",
        ),
    ],
)
def test_decoder_rules(info: ResourceInfo, obj: Object, source: Source, problem: str | None) -> None:
    found = decodetypes.problem(info, obj, source)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found, found


def test_accepted_values_are_stored_as_go_writes_them() -> None:
    yaml_body: Object = {"spec": {"replicas": 3.0}}
    assert decodetypes.problem(DEPLOYMENTS, yaml_body, Source.YAML) is None and yaml_body["spec"]["replicas"] == 3
    converted: Object = {"spec": {"replicas": 2**32 + 7}}
    decodetypes.problem(DEPLOYMENTS, converted, Source.STRATEGIC)
    assert converted["spec"]["replicas"] == 7  # Go's int64 -> int32 conversion keeps the low bits
    bytes_body: Object = {"binaryData": {"k": [104, 105]}}
    decodetypes.problem(CONFIGMAPS, bytes_body)
    assert bytes_body["binaryData"]["k"] == "aGk="


def test_a_custom_kind_is_not_walked() -> None:
    crd = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True)
    assert decodetypes.problem(crd, {"spec": 1}) is None


def test_every_served_kind_compiles() -> None:
    """Each kind's definition compiles (self-references included) and takes its own empty object."""
    for info in RESOURCES:
        assert decodetypes.problem(info, {"metadata": {}}) is None, info


def test_the_messages_are_bad_requests() -> None:
    with pytest.raises(errors.BadRequest) as caught:
        decodetypes.check(DEPLOYMENTS, {"spec": {"replicas": "3"}})
    assert caught.value.code == 400
    with pytest.raises(errors.Invalid) as invalid:
        decodetypes.check(
            DEPLOYMENTS, {"spec": {"replicas": "3"}}, Source.STRATEGIC, patch=b'{"spec":{"replicas":"3"}}'
        )
    assert invalid.value.message == ' "" is invalid: patch: Invalid value: "map[spec:map[replicas:3]]": ' + (
        "unrecognized type: int32"
    )
