"""The config kinds — ConfigMaps, Secrets, ServiceAccounts, PodTemplates, LimitRanges, ResourceQuotas — as
kube-apiserver 1.32 defaults, validates and prints them: the strategies called with plain dicts, then a few round
trips through a real apiserver (the tests that take the `api` or `cluster` fixture).

Quantities are stored in canonical form, so the Go renderings in field errors are those of the canonical form; the
tests give canonical quantities where they check a rendering.

Expected messages are upstream's, field paths included (`[]` is the path of a whole-ConfigMap error, upstream's
rendering of an empty path).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import kubernetes.client as k8s
import pytest

from tests.apiserver.kinds import created, strategy, updated
from tests.conftest import RunningCluster
from tinykube.api import errors, quantity
from tinykube.api.resources import STORED, by_path
from tinykube.apiserver.kinds.printers import PRINTERS, table
from tinykube.apiserver.schema import decodetypes

NOW = datetime(2025, 1, 1, tzinfo=UTC)
CREATED = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def obj(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "namespace": "ns", "creationTimestamp": CREATED}, **fields}


def bad_request(plural: str, body: dict[str, Any]) -> str:
    with pytest.raises(errors.BadRequest) as caught:
        created(plural, body)
    return caught.value.message


# ---- Quantity ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        pytest.param("1000m", "1", id="milli-to-unit"),
        pytest.param("0.5", "500m", id="fraction-to-milli"),
        pytest.param("1.5", "1500m", id="fraction"),
        pytest.param("1.5k", "1500", id="kilo-fraction"),
        pytest.param("1Gi", "1Gi", id="binary"),
        pytest.param("1024Mi", "1Gi", id="binary-promoted"),
        pytest.param("0.5Gi", "512Mi", id="binary-fraction"),
        pytest.param("1023Ki", "1023Ki", id="binary-kept"),
        pytest.param("100", "100", id="plain"),
        pytest.param("1e3", "1e3", id="exponent"),
        pytest.param("12e2", "1200", id="exponent-normalized"),
        pytest.param("0.1m", "100u", id="micro"),
        pytest.param("1n", "1n", id="nano"),
        pytest.param("0.1n", "1n", id="rounded-up-to-nano"),
        pytest.param("-1", "-1", id="negative"),
        pytest.param(2, "2", id="json-number"),
        pytest.param(0.25, "250m", id="json-float"),
        pytest.param(None, "0", id="null"),
        pytest.param(" 3 ", "3", id="trimmed"),
    ],
)
def test_quantity_canonical_form(raw: Any, canonical: str) -> None:
    assert str(quantity.parse_quantity(raw)) == canonical


FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param("", FORMAT_WRONG, id="empty"),
        pytest.param("abc", FORMAT_WRONG, id="letters"),
        pytest.param("1.2.3", FORMAT_WRONG, id="two-points"),
        pytest.param(True, FORMAT_WRONG, id="bool"),
        pytest.param("1e", "unable to parse quantity's suffix", id="bare-exponent"),
        pytest.param("1Zi", FORMAT_WRONG, id="unknown-letter"),
        pytest.param("1-", "unable to parse quantity's suffix", id="sign-suffix"),
    ],
)
def test_quantity_errors_are_upstreams(raw: Any, message: str) -> None:
    with pytest.raises(quantity.QuantityError) as caught:
        quantity.parse_quantity(raw)
    assert str(caught.value) == message


def test_quantity_go_rendering_follows_the_parse() -> None:
    """Field errors show a parsed Quantity as Go's %#v: the int64 fast path, and the input kept when canonical."""
    assert quantity.parse_quantity("500m").go == (
        "resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, "
        's:"500m", Format:"DecimalSI"}'
    )
    assert quantity.parse_quantity("1.5").go == (
        "resource.Quantity{i:resource.int64Amount{value:15, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, "
        's:"", Format:"DecimalSI"}'
    )
    assert "Dec:(*inf.Dec)(0xc000000000)" in quantity.parse_quantity("0.5Gi").go


# ---- ConfigMap ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "message"),
    [
        pytest.param(
            "a b",
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' "
            "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
            "'[-._a-zA-Z0-9]+')",
            id="space",
        ),
        pytest.param(".", "data[.]: Invalid value: \".\": must not be '.'", id="dot"),
        pytest.param("..", "data[..]: Invalid value: \"..\": must not be '..'", id="dotdot"),
        pytest.param("..x", "data[..x]: Invalid value: \"..x\": must not start with '..'", id="dotdot-prefix"),
        pytest.param(
            "k" * 254,
            f'data[{"k" * 254}]: Invalid value: "{"k" * 254}": must be no more than 253 characters',
            id="long",
        ),
    ],
)
def test_configmap_key_names(key: str, message: str) -> None:
    _, errs = created("configmaps", obj(data={key: "v"}))
    assert errs == [message]


def test_configmap_good_keys_and_values_pass() -> None:
    body, errs = created(
        "configmaps", obj(data={"game.properties": "a=b", "UI_1": "x"}, binaryData={"b-1": b64("\x00")})
    )
    assert errs == []
    assert body["binaryData"] == {"b-1": "AA=="}


def test_configmap_key_in_both_data_and_binary_data() -> None:
    _, errs = created("configmaps", obj(data={"k": "v"}, binaryData={"k": b64("v")}))
    assert errs == ['data[k]: Invalid value: "k": duplicate of key present in binaryData']


def test_configmap_total_size_is_one_mebibyte() -> None:
    half = "x" * (512 * 1024)
    _, errs = created("configmaps", obj(data={"a": half}, binaryData={"b": b64(half)}))
    assert errs == []
    _, errs = created("configmaps", obj(data={"a": half, "c": "!"}, binaryData={"b": b64(half)}))
    assert errs == ["[]: Too long: may not be more than 1048576 bytes"]


def test_configmap_binary_data_must_be_base64() -> None:
    message = bad_request("configmaps", obj(binaryData={"k": "not base64"}))
    assert message == 'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at input byte 3'


def test_configmap_data_of_the_wrong_type_is_a_decode_error() -> None:
    """Refused by the decoding every kind shares (`decodetypes`), before the strategy sees it."""
    configmaps = next(r for r in STORED if r.plural == "configmaps")
    with pytest.raises(errors.BadRequest) as caught:
        decodetypes.check(configmaps, obj(data={"k": 5}))
    assert caught.value.message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )


def test_immutable_configmap_keeps_its_data_and_stays_immutable() -> None:
    old, _ = created("configmaps", obj(data={"k": "v"}, binaryData={"b": b64("1")}, immutable=True))
    _, errs = updated("configmaps", {**old, "data": {"k": "changed"}, "binaryData": {"b": b64("2")}}, old)
    assert errs == [
        "data: Forbidden: field is immutable when `immutable` is set",
        "binaryData: Forbidden: field is immutable when `immutable` is set",
    ]
    _, errs = updated("configmaps", {**old, "immutable": False}, old)
    assert errs == ["immutable: Forbidden: field is immutable when `immutable` is set"]
    _, errs = updated("configmaps", {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}, old)
    assert errs == []


def test_mutable_configmap_may_change_and_become_immutable() -> None:
    old, _ = created("configmaps", obj(data={"k": "v"}))
    _, errs = updated("configmaps", {**old, "data": {"k": "w"}, "immutable": True}, old)
    assert errs == []


# ---- Secret -------------------------------------------------------------------------------------------------------


def test_secret_type_defaults_to_opaque() -> None:
    body, errs = created("secrets", obj(data={"a": b64("1")}))
    assert (body["type"], errs) == ("Opaque", [])


def test_secret_string_data_is_merged_into_data_and_not_stored() -> None:
    body, _ = created("secrets", obj(data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": "é"}))
    assert "stringData" not in body
    assert body["data"] == {"a": b64("new"), "b": b64("kept"), "c": b64("é")}


def test_secret_data_is_stored_as_canonical_base64() -> None:
    body, _ = created("secrets", obj(data={"a": "YWJj\nZA==", "b": "YR=="}))
    assert body["data"] == {"a": b64("abcd"), "b": b64("a")}


def test_secret_data_must_be_base64() -> None:
    message = bad_request("secrets", obj(data={"password": "hunter2!"}))
    assert message == 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 7'


def test_secret_type_is_immutable() -> None:
    old, _ = created("secrets", obj(data={"a": b64("1")}))
    _, errs = updated("secrets", {**old, "type": "example.com/other"}, old)
    assert errs == ['type: Invalid value: "example.com/other": field is immutable']
    _, errs = updated("secrets", {k: v for k, v in old.items() if k != "type"}, old)
    assert errs == [], "an update without a type is defaulted to the same Opaque"


def test_immutable_secret() -> None:
    old, _ = created("secrets", obj(data={"a": b64("1")}, immutable=True))
    _, errs = updated("secrets", {**old, "stringData": {"a": "2"}}, old)
    assert errs == ["data: Forbidden: field is immutable when `immutable` is set"]
    _, errs = updated("secrets", {**old, "immutable": None}, old)
    assert errs == ["immutable: Forbidden: field is immutable when `immutable` is set"]


def test_secret_size_is_bounded() -> None:
    _, errs = created("secrets", obj(stringData={"a": "x" * (1024 * 1024 + 1)}))
    assert errs == ["data: Too long: may not be more than 1048576 bytes"]


DOCKER_CONFIG = json.dumps({"auths": {"registry.example": {"auth": b64("u:p")}}})


@pytest.mark.parametrize(
    ("kind", "data", "annotations", "expected"),
    [
        pytest.param("kubernetes.io/tls", {"tls.crt": "c", "tls.key": "k"}, {}, [], id="tls"),
        pytest.param(
            "kubernetes.io/tls",
            {},
            {},
            ["data[tls.crt]: Required value", "data[tls.key]: Required value"],
            id="tls-missing",
        ),
        pytest.param("kubernetes.io/dockerconfigjson", {".dockerconfigjson": DOCKER_CONFIG}, {}, [], id="docker"),
        pytest.param(
            "kubernetes.io/dockerconfigjson", {}, {}, ["data[.dockerconfigjson]: Required value"], id="docker-missing"
        ),
        pytest.param(
            "kubernetes.io/dockerconfigjson",
            {".dockerconfigjson": "nope"},
            {},
            [
                'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
                "invalid character 'o' in literal null (expecting 'u')"
            ],
            id="docker-not-json",
        ),
        pytest.param(
            "kubernetes.io/dockerconfigjson",
            {".dockerconfigjson": "{"},
            {},
            ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input'],
            id="docker-truncated",
        ),
        pytest.param(
            "kubernetes.io/dockerconfigjson",
            {".dockerconfigjson": "[]"},
            {},
            [
                'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
                "json: cannot unmarshal array into Go value of type map[string]interface {}"
            ],
            id="docker-not-an-object",
        ),
        pytest.param(
            "kubernetes.io/dockercfg",
            {".dockercfg": "x"},
            {},
            [
                'data[.dockercfg]: Invalid value: "<secret contents redacted>": '
                "invalid character 'x' looking for beginning of value"
            ],
            id="dockercfg-garbage",
        ),
        pytest.param("kubernetes.io/basic-auth", {"username": ""}, {}, [], id="basic-auth-username-only"),
        pytest.param(
            "kubernetes.io/basic-auth",
            {},
            {},
            ["data[username]: Required value", "data[password]: Required value"],
            id="basic-auth-missing",
        ),
        pytest.param(
            "kubernetes.io/ssh-auth",
            {"ssh-privatekey": ""},
            {},
            ["data[ssh-privatekey]: Required value"],
            id="ssh-empty",
        ),
        pytest.param(
            "kubernetes.io/service-account-token",
            {},
            {},
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            id="token-unannotated",
        ),
        pytest.param(
            "kubernetes.io/service-account-token", {}, {"kubernetes.io/service-account.name": "default"}, [], id="token"
        ),
        pytest.param("example.com/custom", {}, {}, [], id="custom-type"),
    ],
)
def test_secret_types_require_their_keys(
    kind: str, data: dict[str, str], annotations: dict[str, str], expected: list[str]
) -> None:
    body = obj(type=kind, stringData=data)
    body["metadata"]["annotations"] = annotations
    _, errs = created("secrets", body)
    assert errs == expected


def test_secret_errors_aggregate_as_upstream() -> None:
    body, _ = created("secrets", obj(type="kubernetes.io/tls", stringData={"bad key": "v"}))
    found = strategy("secrets").validate(body, None)
    message = errors.invalid_object("Secret", "x", found).message
    assert message == (
        'Secret "x" is invalid: [data[bad key]: Invalid value: "bad key": a valid config key must consist of '
        "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
        "validation is '[-._a-zA-Z0-9]+'), data[tls.crt]: Required value, data[tls.key]: Required value]"
    )


# ---- ServiceAccount and PodTemplate -------------------------------------------------------------------------------


def test_service_account_secret_references_keep_their_names_only() -> None:
    body, errs = created("serviceaccounts", obj(secrets=[{"name": "tok", "namespace": "elsewhere", "uid": "1"}, {}]))
    assert (body["secrets"], errs) == ([{"name": "tok"}, {}], [])
    body, errs = updated("serviceaccounts", {**body, "secrets": [{"name": "tok", "kind": "Secret"}]}, body)
    assert (body["secrets"], errs) == ([{"name": "tok"}], [])


def test_pod_template_is_defaulted_as_a_pod() -> None:
    body, errs = created("podtemplates", obj(template={"spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    assert errs == []
    template = body["template"]
    assert template["metadata"] == {"creationTimestamp": None}
    assert template["spec"]["restartPolicy"] == "Always"
    assert template["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert template["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"


def test_pod_template_validation_paths() -> None:
    template = {"metadata": {"labels": {"bad key": "v"}}, "spec": {"containers": []}}
    _, errs = created("podtemplates", obj(template=template))
    assert errs[-1] == "template.spec.containers: Required value"
    assert errs[0].startswith('template.labels: Invalid value: "bad key": name part must consist of')


def test_pod_template_changes_are_generations() -> None:
    chosen = strategy("podtemplates")
    old, _ = created("podtemplates", obj(template={"spec": {"containers": [{"name": "c", "image": "a"}]}}))
    new, _ = updated("podtemplates", {**old, "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}}}, old)
    assert chosen.tracks_generation
    assert chosen.bumps_generation(new, old)
    assert not chosen.bumps_generation({**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}, old)


# ---- LimitRange ---------------------------------------------------------------------------------------------------


def limits(*items: dict[str, Any]) -> dict[str, Any]:
    return obj(spec={"limits": list(items)})


def test_container_limit_defaults() -> None:
    """A Container limit defaults its limit to max, and its request to the limit or to min."""
    body, errs = created(
        "limitranges",
        limits({"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "memory": 0.5}}),
    )
    assert errs == []
    item = body["spec"]["limits"][0]
    assert item["default"] == {"cpu": "2", "memory": "1Gi"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "1Gi"}
    assert item["min"] == {"cpu": "100m", "memory": "500m"}, "quantities are stored canonical"


def test_pod_limits_are_not_defaulted_and_take_no_defaults() -> None:
    body, errs = created("limitranges", limits({"type": "Pod", "max": {"cpu": "2"}, "default": {"cpu": "1"}}))
    assert "defaultRequest" not in body["spec"]["limits"][0]
    assert errs == ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]


def test_limit_order_is_checked_with_go_renderings() -> None:
    _, errs = created("limitranges", limits({"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "1500m"}}))
    min_value = (
        "resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, "
        's:"1500m", Format:"DecimalSI"}'
    )
    assert f"spec.limits[0].min[cpu]: Invalid value: {min_value}: min value 1500m is greater than max value 1" in errs


def test_limit_range_names_and_types() -> None:
    _, errs = created(
        "limitranges",
        limits(
            {"type": "Pod", "max": {"storage": "1Gi", "example.com/gpu": "1"}},
            {"type": "Pod"},
            {"type": "Bogus"},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
        ),
    )
    assert errs == [
        'spec.limits[0].max[storage]: Invalid value: "storage": must be a standard resource for containers',
        'spec.limits[1].type: Duplicate value: "Pod"',
        'spec.limits[2].type: Invalid value: "Bogus": must be a standard limit type or fully qualified',
        "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither "
        "was provided",
    ]


def test_limit_request_ratio() -> None:
    _, errs = created("limitranges", limits({"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}))
    assert [e.split(": ", 1)[0] for e in errs] == ["spec.limits[0].maxLimitRequestRatio[cpu]"]
    assert errs[0].endswith("ratio 500m is less than 1")
    _, errs = created(
        "limitranges",
        limits({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}),
    )
    assert errs[0].endswith("ratio 3 is greater than max/min = 2.000000")


def test_limit_range_quantity_that_does_not_parse_is_a_decode_error() -> None:
    message = bad_request("limitranges", limits({"type": "Container", "max": {"cpu": "lots"}}))
    assert message == (
        'LimitRange in version "v1" cannot be handled as a LimitRange: quantities must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


# ---- ResourceQuota ------------------------------------------------------------------------------------------------


def quota(hard: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return obj(spec={"hard": hard, **spec})


def test_quota_status_is_not_set_on_create_and_quantities_are_canonical() -> None:
    body, errs = created("resourcequotas", {**quota({"requests.cpu": "1000m", "pods": 10}), "status": {"used": {}}})
    assert errs == []
    assert "status" not in body
    assert body["spec"]["hard"] == {"requests.cpu": "1", "pods": "10"}
    assert strategy("resourcequotas").has_status


def test_quota_resource_names() -> None:
    _, errs = created("resourcequotas", quota({"foo": "1", "storage": "1Gi", "count/deployments.apps": "2"}))
    assert errs == [
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota',
        'spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota',
    ]


def test_quota_values() -> None:
    _, errs = created("resourcequotas", quota({"pods": "1500m", "requests.memory": "-1Gi", "example.com/gpu": "0.5"}))
    pods = (
        "resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, "
        's:"1500m", Format:"DecimalSI"}'
    )
    assert errs[0] == f"spec.hard[pods]: Invalid value: {pods}: must be an integer"
    assert errs[1] == 'spec.hard[requests.memory]: Invalid value: "-1Gi": must be greater than or equal to 0'
    assert errs[2].startswith("spec.hard[example.com/gpu]: Invalid value: resource.Quantity{")
    assert errs[2].endswith(": must be an integer")


def test_quota_scopes() -> None:
    _, errs = created("resourcequotas", quota({"pods": "1", "services": "1"}, scopes=["BestEffort", "NotBestEffort"]))
    rendered = '[]core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}'
    assert errs == [
        f"spec.scopes: Invalid value: {rendered}: unsupported scope applied to resource",
        f"spec.scopes: Invalid value: {rendered}: unsupported scope applied to resource",
        f"spec.scopes: Invalid value: {rendered}: conflicting scopes",
    ]
    _, errs = created("resourcequotas", quota({"pods": "1"}, scopes=["Sometimes"]))
    assert errs == ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"Sometimes"}: unsupported scope']


def test_quota_scope_selector() -> None:
    selector = {
        "matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In"},
            {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
        ]
    }
    _, errs = created("resourcequotas", quota({"pods": "1"}, scopeSelector=selector))
    assert errs == [
        "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is "
        "'In' or 'NotIn' for scope selector",
        "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any of "
        "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
        "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
    ]


def test_quota_status_writes_are_decoded_too() -> None:
    chosen = strategy("resourcequotas")
    old, _ = created("resourcequotas", quota({"pods": "10", "requests.cpu": "2"}))
    new = {
        **old,
        "status": {"hard": {"pods": "10", "requests.cpu": "2000m"}, "used": {"pods": 3, "requests.cpu": "0.5"}},
    }
    chosen.prepare_status_update(new, old)
    assert new["status"] == {"hard": {"pods": "10", "requests.cpu": "2"}, "used": {"pods": "3", "requests.cpu": "500m"}}
    assert chosen.validate(new, old) == []
    with pytest.raises(errors.BadRequest):
        chosen.prepare_status_update({**old, "status": {"used": {"pods": "three"}}}, old)


def test_quota_scopes_are_immutable() -> None:
    old, _ = created("resourcequotas", quota({"pods": "1"}, scopes=["Terminating"]))
    _, errs = updated("resourcequotas", {**old, "spec": {**old["spec"], "scopes": ["NotTerminating"]}}, old)
    assert errs == ['spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotTerminating"}: field is immutable']
    _, errs = updated("resourcequotas", {**old, "spec": {**old["spec"], "hard": {"pods": "2"}}}, old)
    assert errs == []


# ---- printing -----------------------------------------------------------------------------------------------------


def rows(plural: str, *objects: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    resource = by_path("", "v1", plural)
    assert resource is not None
    answer = table(resource, list(objects), now=NOW)
    return [c["name"] for c in answer["columnDefinitions"]], [row["cells"] for row in answer["rows"]]


def test_configmap_and_secret_rows() -> None:
    assert rows("configmaps", obj(data={"a": "1"}, binaryData={"b": "Ag=="})) == (
        ["Name", "Data", "Age"],
        [["x", 2, "5m"]],
    )
    assert rows("secrets", obj(type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})) == (
        ["Name", "Type", "Data", "Age"],
        [["x", "kubernetes.io/tls", 2, "5m"]],
    )


def test_service_account_and_pod_template_rows() -> None:
    assert rows("serviceaccounts", obj(secrets=[{"name": "a"}])) == (["Name", "Secrets", "Age"], [["x", 1, "5m"]])
    template = {
        "metadata": {"labels": {"b": "2", "a": "1"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}]},
    }
    assert rows("podtemplates", obj(template=template)) == (
        ["Name", "Containers", "Images", "Pod Labels"],
        [["x", "web,log", "nginx,busybox", "a=1,b=2"]],
    )


def test_limit_range_rows_are_the_generic_ones() -> None:
    assert rows("limitranges", obj()) == (["Name", "Created At"], [["x", CREATED]])


def test_resource_quota_rows() -> None:
    status = {
        "hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi", "limits.memory": "2Gi"},
        "used": {"pods": "3", "limits.cpu": "500m"},
    }
    assert rows("resourcequotas", obj(status=status)) == (
        ["Name", "Age", "Request", "Limit"],
        [["x", "5m", "pods: 3/10, requests.memory: 0/1Gi", "limits.cpu: 500m/2, limits.memory: 0/2Gi"]],
    )


@pytest.mark.parametrize(
    ("printer", "column", "model", "field"),
    [
        ("configmaps", "Data", "V1ConfigMap", "data"),
        ("secrets", "Type", "V1Secret", "type"),
        ("secrets", "Data", "V1Secret", "data"),
        ("serviceaccounts", "Secrets", "V1ServiceAccount", "secrets"),
    ],
)
def test_column_descriptions_are_the_field_descriptions(printer: str, column: str, model: str, field: str) -> None:
    columns = {c.name: c for c in PRINTERS[printer].columns}
    assert columns[column].description == getattr(k8s, model).model_fields[field].description


# ---- against a real apiserver -------------------------------------------------------------------------------------


def url(ns: str, plural: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/{plural}" + (f"/{name}" if name else "")


def test_immutable_configmap_over_http(api: httpx.Client, namespace: str) -> None:
    body = {"metadata": {"name": "cfg"}, "data": {"k": "v"}, "immutable": True}
    assert api.post(url(namespace, "configmaps"), json=body).status_code == 201
    response = api.patch(
        url(namespace, "configmaps", "cfg"),
        json={"data": {"k": "w"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["message"] == (
        'ConfigMap "cfg" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )


def test_secret_over_http(api: httpx.Client, namespace: str) -> None:
    response = api.post(url(namespace, "secrets"), json={"metadata": {"name": "s"}, "stringData": {"password": "pw"}})
    assert response.status_code == 201, response.text
    stored = api.get(url(namespace, "secrets", "s")).json()
    assert (stored["type"], stored["data"], "stringData" in stored) == ("Opaque", {"password": b64("pw")}, False)
    response = api.post(url(namespace, "secrets"), json={"metadata": {"name": "t"}, "data": {"password": "pw!"}})
    assert response.status_code == 400
    assert response.json()["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 2'
    )


def test_kubectl_generators_and_jsonpath(cluster: RunningCluster, namespace: str) -> None:
    cluster.kubectl("create", "configmap", "game", "--from-literal=lives=3", "-n", namespace)
    cluster.kubectl("create", "secret", "generic", "db", "--from-literal=password=s3cret", "-n", namespace)
    registry = ["--docker-server=registry.example", "--docker-username=u", "--docker-password=p"]
    cluster.kubectl("create", "secret", "docker-registry", "pull", *registry, "-n", namespace)
    pulled = cluster.kubectl_json("get", "secret", "pull", "-n", namespace)
    assert pulled["type"] == "kubernetes.io/dockerconfigjson"
    assert (
        json.loads(base64.b64decode(pulled["data"][".dockerconfigjson"]))["auths"]["registry.example"]["username"]
        == "u"
    )
    lives = cluster.kubectl("get", "configmap", "game", "-n", namespace, "-o", "jsonpath={.data.lives}").stdout
    password = cluster.kubectl("get", "secret", "db", "-n", namespace, "-o", "jsonpath={.data.password}").stdout
    assert (lives, base64.b64decode(password).decode()) == ("3", "s3cret")
    table = cluster.kubectl("get", "secret", "db", "-n", namespace).stdout.split()
    assert table[:6] == ["NAME", "TYPE", "DATA", "AGE", "db", "Opaque"]


def test_quota_table_over_kubectl(cluster: RunningCluster, namespace: str) -> None:
    manifest = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n  hard:\n    pods: '10'\n"
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest)
    assert cluster.kubectl("get", "quota", "q", "-n", namespace).stdout.split()[:4] == [
        "NAME",
        "AGE",
        "REQUEST",
        "LIMIT",
    ]
    hard = cluster.kubectl("get", "quota", "q", "-n", namespace, "-o", "jsonpath={.spec.hard.pods}").stdout
    assert hard == "10"
