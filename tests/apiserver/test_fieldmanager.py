"""managedFields bookkeeping and server-side apply without HTTP: `tinykube.apiserver.schema.fieldmanager` over the
served schemas, against what kube-apiserver 1.32 records and answers."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

from tinykube.api import errors
from tinykube.api.resources import by_path
from tinykube.apiserver.schema import fieldmanager as fm
from tinykube.apiserver.schema.fieldmanager import Write

DEPLOYMENTS = by_path("apps", "v1", "deployments")
CONFIGMAPS = by_path("", "v1", "configmaps")
assert DEPLOYMENTS is not None and CONFIGMAPS is not None

# kubectl create deployment web --image=nginx, as the apiserver sees it after defaulting
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "Always",
                    }
                ],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "securityContext": {},
                "schedulerName": "default-scheduler",
            },
        },
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
}


def deployment_write(manager: str, subresource: str = "") -> Write:
    return Write(DEPLOYMENTS, manager, subresource, has_status=True, time="2024-05-01T10:00:00Z")


def created(obj: dict[str, Any], manager: str = "kubectl-create") -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"] |= {"uid": "u1", "creationTimestamp": "2024-05-01T10:00:00Z", "generation": 1}
    fm.update(deployment_write(manager), None, obj)
    return obj


def entries(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"].get("managedFields", [])]


def fields_of(obj: dict[str, Any], manager: str, operation: str = "Update") -> dict[str, Any]:
    for entry in obj["metadata"]["managedFields"]:
        if (entry["manager"], entry["operation"]) == (manager, operation):
            return dict(entry["fieldsV1"])
    raise AssertionError(f"no entry of {manager}")


# ---- updates -------------------------------------------------------------------------------------------------------


def test_a_create_records_an_update_entry_as_upstream() -> None:
    obj = created(DEPLOYMENT)
    entry = obj["metadata"]["managedFields"][0]
    assert json.dumps(entry) == json.dumps(
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2024-05-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:progressDeadlineSeconds": {},
                    "f:replicas": {},
                    "f:revisionHistoryLimit": {},
                    "f:selector": {},
                    "f:strategy": {
                        "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                        "f:type": {},
                    },
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"nginx"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:imagePullPolicy": {},
                                    "f:name": {},
                                    "f:resources": {},
                                    "f:terminationMessagePath": {},
                                    "f:terminationMessagePolicy": {},
                                }
                            },
                            "f:dnsPolicy": {},
                            "f:restartPolicy": {},
                            "f:schedulerName": {},
                            "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {},
                        },
                    },
                },
            },
        }
    )


def test_an_update_takes_the_fields_whose_value_it_changes() -> None:
    old = created(DEPLOYMENT)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["metadata"]["labels"]["tier"] = "front"
    fm.update(deployment_write("kubectl-edit"), old, new)
    assert entries(new) == [("kubectl-create", "Update", ""), ("kubectl-edit", "Update", "")]
    assert fields_of(new, "kubectl-edit") == {
        "f:metadata": {"f:labels": {"f:tier": {}}},
        "f:spec": {"f:replicas": {}},
    }
    assert "f:replicas" not in fields_of(new, "kubectl-create")["f:spec"]
    # the same value again moves nothing; nor does a write that changes nothing at all
    again = copy.deepcopy(new)
    fm.update(deployment_write("someone"), new, again)
    assert again["metadata"]["managedFields"] == new["metadata"]["managedFields"]


def test_removed_fields_are_nobodys_and_empty_entries_go() -> None:
    old = created(DEPLOYMENT)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 2
    fm.update(deployment_write("scaler"), old, new)
    newer = copy.deepcopy(new)
    del newer["spec"]["replicas"]
    fm.update(deployment_write("other"), new, newer)
    assert entries(newer) == [("kubectl-create", "Update", "")]  # scaler owned only what was removed
    assert "f:replicas" not in fields_of(newer, "kubectl-create")["f:spec"]


def test_status_writes_are_recorded_with_their_subresource_and_never_own_spec() -> None:
    old = created(DEPLOYMENT)
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    fm.update(deployment_write("kube-controller-manager", "status"), old, new)
    assert entries(new) == [("kube-controller-manager", "Update", "status"), ("kubectl-create", "Update", "")]
    entry = new["metadata"]["managedFields"][0]
    assert entry["fieldsV1"] == {
        "f:status": {
            "f:conditions": {".": {}, 'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
            "f:replicas": {},
        }
    }
    # and a main resource write never owns status (where there is a status subresource)
    assert fm.record_update(deployment_write("x"), {"status": {}}, {"status": {"replicas": 1}}, {}) == {}


def test_managed_fields_reset_by_an_empty_list_and_kept_when_invalid() -> None:
    old = created(DEPLOYMENT)
    for reset in ([], [{}]):
        new = copy.deepcopy(old)
        new["metadata"]["managedFields"] = reset
        new["spec"]["replicas"] = 5
        fm.update(deployment_write("kubectl-patch"), old, new)
        assert "managedFields" not in new["metadata"]  # and an untracked object stays untracked
    for invalid in ([{"manager": "x", "operation": "Bogus"}], [{"operation": "Update", "apiVersion": "v1"}], "x"):
        new = copy.deepcopy(old)
        new["metadata"]["managedFields"] = invalid
        fm.update(deployment_write("kubectl-patch"), old, new)
        assert new["metadata"]["managedFields"] == old["metadata"]["managedFields"]  # the live object's


def test_managed_fields_a_client_sets_are_taken() -> None:
    old = created(DEPLOYMENT)
    new = copy.deepcopy(old)
    new["metadata"]["managedFields"][0]["manager"] = "renamed"
    fm.update(deployment_write("kubectl-patch"), old, new)
    assert entries(new) == [("renamed", "Update", "")]


def test_at_most_ten_update_managers() -> None:
    obj = created(DEPLOYMENT)
    for i in range(12):
        new = copy.deepcopy(obj)
        new["metadata"]["labels"][f"l{i}"] = "x"
        write = deployment_write(f"m{i:02}")
        write.time = f"2024-05-01T10:{i + 1:02}:00Z"
        fm.update(write, obj, new)
        obj = new
    managers = [e[0] for e in entries(obj)]
    assert len(managers) == 10
    assert managers[0] == "ancient-changes"  # the oldest three, merged
    assert fields_of(obj, "ancient-changes")["f:metadata"]["f:labels"].keys() >= {"f:l0", "f:l1"}


# ---- apply ---------------------------------------------------------------------------------------------------------


def cm_write(manager: str) -> Write:
    return Write(CONFIGMAPS, manager, time="2024-05-01T10:00:00Z")


def cm(data: dict[str, str] | None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c", "namespace": "ns"}
    if labels:
        meta["labels"] = labels
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    return obj if data is None else {**obj, "data": data}


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", "u1")
    return obj


def apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, force: bool = False) -> dict[str, Any]:
    return stored(fm.apply(cm_write(manager), live, config, force=force))


def test_apply_owns_what_it_sets_and_removes_what_it_stops_setting() -> None:
    obj = apply(None, cm({"a": "1", "b": "2"}, app="x"), "m1")
    assert entries(obj) == [("m1", "Apply", "")]
    assert fields_of(obj, "m1", "Apply") == {
        "f:data": {"f:a": {}, "f:b": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
    }
    obj = apply(obj, cm({"a": "1"}), "m1")
    assert obj["data"] == {"a": "1"} and "labels" not in obj["metadata"]


def test_shared_fields_stay_while_someone_owns_them() -> None:
    obj = apply(None, cm({"a": "1", "b": "2"}), "m1")
    obj = apply(obj, cm({"a": "1", "c": "3"}), "m2")  # same value: shared, no conflict
    assert obj["data"] == {"a": "1", "b": "2", "c": "3"}
    obj = apply(obj, cm(None), "m1")
    assert obj["data"] == {"a": "1", "c": "3"}  # m2 still owns a
    assert entries(obj) == [("m2", "Apply", "")]  # m1 owns nothing any more


def test_conflicts_are_upstreams_409_and_force_takes_ownership() -> None:
    obj = apply(None, cm({"a": "1", "b": "2"}), "m1")
    with pytest.raises(errors.Conflict) as raised:
        apply(obj, cm({"a": "9"}), "m2")
    assert raised.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "m1": .data.a',
        "reason": "Conflict",
        "details": {
            "causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "m1"', "field": ".data.a"}]
        },
        "code": 409,
    }
    with pytest.raises(errors.Conflict) as raised:
        apply(obj, cm({"a": "9", "b": "9"}), "m2")
    assert raised.value.message == 'Apply failed with 2 conflicts: conflicts with "m1":\n- .data.a\n- .data.b'
    forced = apply(obj, cm({"a": "9"}), "m2", force=True)
    assert forced["data"] == {"a": "9", "b": "2"}
    assert fields_of(forced, "m1", "Apply") == {"f:data": {"f:b": {}}}


def test_an_update_manager_is_named_with_its_version_in_conflicts() -> None:
    obj = apply(None, cm({"a": "1"}), "m1")
    new = copy.deepcopy(obj)
    new["data"]["a"] = "2"
    fm.update(cm_write("kubectl-edit"), obj, new)
    with pytest.raises(errors.Conflict) as raised:
        apply(new, cm({"a": "3"}), "m1")
    assert raised.value.message == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'


def test_an_untracked_object_is_owned_before_the_first_apply() -> None:
    live = stored(cm({"a": "1", "b": "2"}))
    with pytest.raises(errors.Conflict) as raised:
        apply(live, cm({"a": "9"}), "m1")
    assert raised.value.message == 'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a'
    obj = apply(live, cm({"a": "1"}), "m1")
    assert entries(obj) == [("m1", "Apply", ""), ("before-first-apply", "Update", "")]


def test_kubectl_takes_over_from_client_side_apply() -> None:
    last = cm({"a": "1"})
    live = stored(cm({"a": "1", "b": "2"}))
    live["metadata"]["annotations"] = {fm.LAST_APPLIED: json.dumps(last)}
    fm.update(cm_write("kubectl-client-side-apply"), None, live)
    # a field client-side apply last applied, unchanged since: kubectl forces it; another manager may not
    with pytest.raises(errors.Conflict):
        apply(live, cm({"a": "5"}), "other")
    obj = apply(live, cm({"a": "5"}), "kubectl")
    assert obj["data"]["a"] == "5"
    assert json.loads(obj["metadata"]["annotations"][fm.LAST_APPLIED]) == cm({"a": "5"})  # kept in step
    # one that changed since (b is not in the annotation) conflicts all the same
    with pytest.raises(errors.Conflict) as raised:
        apply(obj, cm({"a": "5", "b": "3"}), "kubectl")
    assert raised.value.message.endswith(": .data.b")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param({**cm({}), "kind": "Secret"}, "invalid object type: /v1, Kind=Secret", id="kind"),
        pytest.param({**cm({}), "apiVersion": "apps/v1"}, "invalid object type: apps/v1, Kind=ConfigMap", id="version"),
        pytest.param({"metadata": {"name": "c"}}, "invalid object type: /, Kind=", id="none"),
        pytest.param(
            {**cm({}), "metadata": {"name": "c", "managedFields": []}},
            "metadata.managedFields must be nil",
            id="managed-fields",
        ),
        pytest.param(
            {**cm({}), "spec": {"x": 1}},
            "failed to create typed patch object (ns/c; /v1, Kind=ConfigMap): .spec: field not declared in schema",
            id="unknown-field",
        ),
        pytest.param(
            {**cm({}), "data": {"a": 1}},
            "failed to create typed patch object (ns/c; /v1, Kind=ConfigMap): .data.a: expected string, got number",
            id="wrong-type",
        ),
    ],
)
def test_configurations_upstream_refuses(config: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.BadRequest) as raised:
        fm.apply(cm_write("m"), None, config, force=False)
    assert raised.value.message == message


def test_decoding_a_configuration() -> None:
    assert fm.decode_config(b"apiVersion: v1\nkind: ConfigMap\n") == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert fm.decode_config(b'{"a": 1}') == {"a": 1}
    assert fm.decode_config(b"") == {}
    with pytest.raises(errors.BadRequest) as raised:
        fm.decode_config(b"- a\n- b\n")
    assert raised.value.message == (
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go "
        "value of type map[string]interface {}"
    )
    with pytest.raises(errors.BadRequest) as raised:
        fm.decode_config(b"a: [")
    assert raised.value.message.startswith("error decoding YAML: ")


@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        ("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl"),
        ("OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
        ("python-httpx/0.27.0", "python-httpx"),
        ("", ""),
        ("a\x00b/c", "ab"),
        ("x" * 200, "x" * 128),
    ],
)
def test_the_default_manager_is_the_user_agents_product(user_agent: str, manager: str) -> None:
    assert fm.manager_from_user_agent(user_agent) == manager


def test_manager_names_are_checked() -> None:
    assert fm.validate_manager("kubectl", "fieldManager") == []
    assert [str(e) for e in fm.validate_manager("x" * 129, "fieldManager")] == [
        "fieldManager: Too long: may not be more than 128 bytes"
    ]
    assert [str(e) for e in fm.validate_manager("a\nb", "fieldManager")] == [
        'fieldManager: Invalid value: "a\\nb": invalid character U+000A (at position 1)'
    ]


# ---- properties ----------------------------------------------------------------------------------------------------

_keys = st_.sampled_from(["a", "b", "c", "d"])
_values = st_.sampled_from(["1", "2"])
configs = st_.builds(
    lambda data, labels: cm(data, **labels),
    st_.dictionaries(_keys, _values, max_size=4),
    st_.dictionaries(_keys, _values, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(configs)
def test_applying_the_same_configuration_twice_changes_nothing(config: dict[str, Any]) -> None:
    once = apply(None, config, "m1")
    assert apply(once, config, "m1") == once


@settings(max_examples=150, deadline=None)
@given(configs, _keys)
def test_a_field_no_longer_applied_is_removed(config: dict[str, Any], key: str) -> None:
    config["data"][key] = "x"
    once = apply(None, config, "m1")
    without = copy.deepcopy(config)
    del without["data"][key]
    assert key not in (apply(once, without, "m1").get("data") or {})


@settings(max_examples=150, deadline=None)
@given(configs, configs)
def test_another_managers_fields_survive_an_apply(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    obj = apply(None, theirs, "them")
    theirs_data = dict(obj.get("data") or {})
    obj = apply(obj, mine, "me", force=True)
    obj = apply(obj, cm(None), "me")  # I give up everything
    kept = {k: v for k, v in theirs_data.items() if k not in mine["data"]}  # what I never forced
    assert kept.items() <= (obj.get("data") or {}).items()
