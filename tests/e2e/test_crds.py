"""CustomResourceDefinitions against the real apiserver, as an operator's author would use them: kubectl (apply,
get with printer columns, patch, scale, explain, api-resources, short names) and the Python client's dynamic
client; establishment, schema validation and defaulting, status and scale subresources, several versions,
field selectors, watches, and deletion of a CRD, a namespace or an owner taking its custom resources along.

Each test makes CRDs in a group of its own (CRDs are cluster-wide and the cluster is shared)."""

from __future__ import annotations

import copy
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import dynamic

if TYPE_CHECKING:
    from tests.conftest import RunningCluster
    from tests.e2e.conftest import Kubectl

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "cronSpec": {"type": "string", "pattern": r"^(\S+ ){4}\S+$"},
                "image": {"type": "string"},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "color": {"type": "string", "enum": ["red", "green", "blue"]},
                "maxReplicas": {"type": "integer"},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
                    "message": "replicas must not exceed maxReplicas",
                }
            ],
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
                "phase": {"type": "string"},
            },
        },
    },
}


def crd_manifest(
    group: str, *, versions: list[dict[str, Any]] | None = None, scope: str = "Namespaced"
) -> dict[str, Any]:
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        "selectableFields": [{"jsonPath": ".spec.color"}],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"crontabs.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "plural": "crontabs",
                "singular": "crontab",
                "kind": "CronTab",
                "shortNames": [f"ct{group[1:7]}"],
                "categories": [f"cat{group[1:7]}"],
            },
            "versions": versions or [version],
        },
    }


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def established(api: httpx.Client, name: str) -> dict[str, Any] | None:
    crd = api.get(f"{CRDS}/{name}").json()
    conditions = {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}
    if conditions.get("Established", {}).get("status") == "True":
        return crd
    return None


@pytest.fixture
def make_crd(api: httpx.Client) -> Iterator[Callable[..., dict[str, Any]]]:
    """Create a CRD in a fresh group and wait until it is Established; every one is deleted afterwards."""
    made: list[str] = []

    def make(**kwargs: Any) -> dict[str, Any]:
        group = f"t{secrets.token_hex(4)}.example.com"
        body = crd_manifest(group, **kwargs)
        response = api.post(CRDS, json=body)
        assert response.status_code == 201, response.text
        made.append(body["metadata"]["name"])
        crd = wait_for(lambda: established(api, body["metadata"]["name"]))
        # served once established: discovery lists it
        wait_for(lambda: api.get(f"/apis/{group}/{crd['spec']['versions'][0]['name']}").status_code == 200)
        return crd

    yield make
    for name in made:
        api.delete(f"{CRDS}/{name}")


def cr_path(crd: dict[str, Any], namespace: str, name: str = "", version: str = "v1") -> str:
    base = f"/apis/{crd['spec']['group']}/{version}/namespaces/{namespace}/crontabs"
    return f"{base}/{name}" if name else base


def crontab(crd: dict[str, Any], name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{crd['spec']['group']}/{version}",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", "image": "my-cron-image", **spec},
    }


# ---- the CRD itself ---------------------------------------------------------------------------------------------


def test_a_crd_is_established_with_its_names_accepted_and_storage_version_recorded(
    api: httpx.Client, make_crd: Any
) -> None:
    crd = make_crd()
    status = crd["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert status["acceptedNames"]["kind"] == "CronTab"
    assert status["acceptedNames"]["listKind"] == "CronTabList"
    assert status["storedVersions"] == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" not in (crd["metadata"].get("finalizers") or [])


def test_an_invalid_crd_is_refused_with_upstream_s_messages(api: httpx.Client) -> None:
    body = crd_manifest("bad.example.com")
    body["metadata"]["name"] = "wrong.bad.example.com"
    response = api.post(CRDS, json=body)
    assert response.status_code == 422
    assert (
        'metadata.name: Invalid value: "wrong.bad.example.com": must be spec.names.plural+"."+spec.group'
        in response.json()["message"]
    )
    body = crd_manifest("bad.example.com")
    body["spec"]["versions"][0]["storage"] = False
    response = api.post(CRDS, json=body)
    assert response.status_code == 422
    assert "must have exactly one version marked as storage version" in response.json()["message"]


def test_a_webhook_conversion_is_refused_with_a_clear_message(api: httpx.Client) -> None:
    body = crd_manifest("hook.example.com")
    body["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://example.com/convert"}},
    }
    response = api.post(CRDS, json=body)
    assert response.status_code == 422, response.text
    assert "spec.conversion.strategy" in response.json()["message"]
    assert "Webhook" in response.json()["message"]


def test_a_kind_taken_in_the_group_is_not_accepted(api: httpx.Client, make_crd: Any) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    other = crd_manifest(group)
    other["metadata"]["name"] = f"othertabs.{group}"
    other["spec"]["names"] = {
        "plural": "othertabs",
        "singular": "othertab",
        "kind": "CronTab",
        "listKind": "OtherTabList",
    }
    assert api.post(CRDS, json=other).status_code == 201
    try:

        def not_accepted() -> dict[str, Any] | None:
            got = api.get(f"{CRDS}/othertabs.{group}").json()
            found = {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}
            return found.get("NamesAccepted") if found.get("NamesAccepted", {}).get("status") == "False" else None

        condition = wait_for(not_accepted)
        assert condition["reason"] == "KindConflict"
        assert condition["message"] == '"CronTab" is already in use'
        assert api.get(f"/apis/{group}/v1/othertabs").status_code == 404
    finally:
        api.delete(f"{CRDS}/othertabs.{group}")


# ---- custom resources with kubectl ------------------------------------------------------------------------------


def test_kubectl_applies_gets_and_prints_the_crd_s_columns(kubectl: Kubectl, make_crd: Any) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    kubectl.apply(json.dumps(crontab(crd, "my-new-cron-object")))
    lines = kubectl("get", f"crontabs.{group}").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert lines[1].split()[:6] == ["my-new-cron-object", "*", "*", "*", "*", "*/5"]
    assert lines[1].split()[6] == "1"  # defaulted from the schema
    short = crd["spec"]["names"]["shortNames"][0]
    assert "my-new-cron-object" in kubectl("get", short).stdout
    assert "my-new-cron-object" in kubectl("get", crd["spec"]["names"]["categories"][0]).stdout
    got = kubectl.json("get", f"crontab.{group}", "my-new-cron-object")
    assert got["spec"]["replicas"] == 1
    assert got["metadata"]["generation"] == 1
    kubectl("patch", f"crontabs.{group}", "my-new-cron-object", "--type=merge", "-p", '{"spec":{"image":"other"}}')
    kubectl(
        "patch",
        f"crontabs.{group}",
        "my-new-cron-object",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":4}]',
    )
    got = kubectl.json("get", f"crontabs.{group}", "my-new-cron-object")
    assert (got["spec"]["image"], got["spec"]["replicas"], got["metadata"]["generation"]) == ("other", 4, 3)
    refused = kubectl.fail("patch", f"crontabs.{group}", "my-new-cron-object", "-p", '{"spec":{"image":"x"}}')
    assert "application/merge-patch+json" in refused.stderr  # strategic merge is not for custom resources
    kubectl("delete", f"crontabs.{group}", "my-new-cron-object")
    assert "No resources found" in kubectl("get", f"crontabs.{group}").stderr


def test_kubectl_reports_unknown_fields_and_schema_violations(kubectl: Kubectl, make_crd: Any) -> None:
    crd = make_crd()
    bad = crontab(crd, "typo")
    bad["spec"]["imagee"] = "x"
    failed = kubectl.fail("apply", "-f", str(kubectl.manifest("typo.json", json.dumps(bad))))
    assert 'unknown field "spec.imagee"' in failed.stderr
    wrong = crontab(crd, "wrong", replicas="three", color="purple")
    failed = kubectl.fail("apply", "-f", str(kubectl.manifest("wrong.json", json.dumps(wrong))))
    assert 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer' in failed.stderr
    assert 'spec.color: Unsupported value: "purple"' in failed.stderr
    over = crontab(crd, "over", replicas=5, maxReplicas=2)
    failed = kubectl.fail("apply", "-f", str(kubectl.manifest("over.json", json.dumps(over))))
    assert "replicas must not exceed maxReplicas" in failed.stderr


def test_kubectl_scale_and_the_scale_subresource(
    api: httpx.Client, kubectl: Kubectl, make_crd: Any, namespace: str
) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    assert api.post(cr_path(crd, namespace), json=crontab(crd, "scaled")).status_code == 201
    status = {"status": {"replicas": 2, "selector": "app=cron"}}
    response = api.patch(
        cr_path(crd, namespace, "scaled") + "/status", content=json.dumps(status),
        headers={"Content-Type": "application/merge-patch+json"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    kubectl("scale", f"crontabs.{group}/scaled", "--replicas=3")
    scale = api.get(cr_path(crd, namespace, "scaled") + "/scale").json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": "app=cron"}
    assert api.get(cr_path(crd, namespace, "scaled")).json()["spec"]["replicas"] == 3


def test_the_status_subresource_owns_status(api: httpx.Client, make_crd: Any, namespace: str) -> None:
    crd = make_crd()
    body = crontab(crd, "stat")
    body["status"] = {"phase": "ignored"}
    created = api.post(cr_path(crd, namespace), json=body).json()
    assert "status" not in created  # dropped on create with a status subresource
    created["status"] = {"phase": "Running"}
    updated = api.put(cr_path(crd, namespace, "stat") + "/status", json=created).json()
    assert updated["status"] == {"phase": "Running"}
    assert updated["metadata"]["generation"] == 1  # a status write is no new generation
    updated["status"] = {"phase": "Lost"}
    updated["spec"]["image"] = "new"
    again = api.put(cr_path(crd, namespace, "stat"), json=updated).json()
    assert again["status"] == {"phase": "Running"} and again["spec"]["image"] == "new"
    assert again["metadata"]["generation"] == 2


def test_field_selectors_on_metadata_and_selectable_fields(api: httpx.Client, make_crd: Any, namespace: str) -> None:
    crd = make_crd()
    for name, color in (("a", "red"), ("b", "blue"), ("c", "red")):
        assert api.post(cr_path(crd, namespace), json=crontab(crd, name, color=color)).status_code == 201
    red = api.get(cr_path(crd, namespace), params={"fieldSelector": "spec.color=red"}).json()
    assert [i["metadata"]["name"] for i in red["items"]] == ["a", "c"]
    named = api.get(cr_path(crd, namespace), params={"fieldSelector": "metadata.name=b"}).json()
    assert [i["metadata"]["name"] for i in named["items"]] == ["b"]
    refused = api.get(cr_path(crd, namespace), params={"fieldSelector": "spec.image=x"})
    assert refused.status_code == 400


def test_several_versions_are_served_with_the_apiversion_rewritten(
    api: httpx.Client, make_crd: Any, namespace: str
) -> None:
    v1 = crd_manifest("x")["spec"]["versions"][0]
    v1beta1 = {**copy.deepcopy(v1), "name": "v1beta1", "storage": False, "deprecated": True}
    crd = make_crd(versions=[v1beta1, v1])
    created = api.post(cr_path(crd, namespace, version="v1beta1"), json=crontab(crd, "old", version="v1beta1"))
    assert created.status_code == 201, created.text
    assert f"{crd['spec']['group']}/v1beta1 CronTab is deprecated" in created.headers.get("warning", "")
    as_v1 = api.get(cr_path(crd, namespace, "old")).json()
    assert as_v1["apiVersion"] == f"{crd['spec']['group']}/v1", as_v1
    as_beta = api.get(cr_path(crd, namespace, "old", version="v1beta1")).json()
    assert as_beta["apiVersion"] == f"{crd['spec']['group']}/v1beta1"
    listed = api.get(cr_path(crd, namespace, version="v1beta1")).json()
    assert listed["apiVersion"] == f"{crd['spec']['group']}/v1beta1"
    assert [i["apiVersion"] for i in listed["items"]] == [f"{crd['spec']['group']}/v1beta1"]
    group = api.get(f"/apis/{crd['spec']['group']}").json()
    assert group["preferredVersion"]["version"] == "v1"


def test_discovery_and_explain_know_the_custom_resource(kubectl: Kubectl, make_crd: Any) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    listed = kubectl("api-resources", f"--api-group={group}", "-o", "wide").stdout
    row = listed.splitlines()[1].split()
    assert row[:5] == ["crontabs", crd["spec"]["names"]["shortNames"][0], f"{group}/v1", "true", "CronTab"]
    explained = kubectl("explain", f"crontabs.{group}.spec").stdout
    assert "cronSpec" in explained and "replicas" in explained


def test_a_crd_without_a_schema_takes_any_fields_in_kubectl(api: httpx.Client, kubectl: Kubectl, make_crd: Any) -> None:
    """A root `x-kubernetes-preserve-unknown-fields` schema is published in OpenAPI v2 as a bare object, as upstream
    does: kubectl validates client-side from v2 and would refuse fields beside any properties listed."""
    version = {**crd_manifest("x")["spec"]["versions"][0], "subresources": {}, "additionalPrinterColumns": []}
    version["schema"] = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    del version["selectableFields"]
    crd = make_crd(versions=[version])
    group = crd["spec"]["group"]
    name = f"{'.'.join(reversed(group.split('.')))}.v1.CronTab"
    definition = api.get("/openapi/v2").json()["definitions"][name]
    assert definition == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": "CronTab", "version": "v1"}],
    }
    random = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "any"}, "a": {"b": [{"c": "d"}]}}
    kubectl("create", "-f", "-", input=json.dumps(random))
    kubectl("delete", f"crontabs.{group}", "any")
    kubectl("apply", "-f", "-", input=json.dumps(random))
    assert kubectl.json("get", f"crontabs.{group}", "any")["a"] == {"b": [{"c": "d"}]}
    explained = kubectl("explain", f"crontabs.{group}").stdout
    assert "DESCRIPTION:" in explained and "<empty>" in explained


def test_a_crd_change_takes_effect_without_a_restart(
    api: httpx.Client, kubectl: Kubectl, make_crd: Any, namespace: str
) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    assert api.post(cr_path(crd, namespace), json=crontab(crd, "live")).status_code == 201
    crd["spec"]["versions"][0]["additionalPrinterColumns"].insert(
        0, {"name": "Image", "type": "string", "jsonPath": ".spec.image"}
    )
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["owner"] = {"type": "string", "default": "nobody"}
    assert api.put(f"{CRDS}/{crd['metadata']['name']}", json=crd).status_code == 200

    def new_columns() -> list[str] | None:
        header = kubectl("get", f"crontabs.{group}").stdout.splitlines()[0].split()
        return header if "IMAGE" in header else None

    assert wait_for(new_columns) == ["NAME", "IMAGE", "SPEC", "REPLICAS", "AGE"]
    assert api.get(cr_path(crd, namespace, "live")).json()["spec"]["owner"] == "nobody"  # defaulted on read


# ---- deletion ---------------------------------------------------------------------------------------------------


def test_deleting_a_crd_deletes_its_resources_and_ends_its_watches(
    api: httpx.Client, cluster: RunningCluster, make_crd: Any, namespace: str
) -> None:
    crd = make_crd()
    for name in ("one", "two"):
        assert api.post(cr_path(crd, namespace), json=crontab(crd, name)).status_code == 201
    ended = threading.Event()

    def watch() -> None:
        with cluster.http() as client, client.stream("GET", cr_path(crd, namespace), params={"watch": "1"}) as stream:
            for _line in stream.iter_lines():
                pass
        ended.set()

    threading.Thread(target=watch, daemon=True).start()
    time.sleep(0.2)
    deleted = api.delete(f"{CRDS}/{crd['metadata']['name']}")
    assert deleted.status_code == 200
    wait_for(lambda: api.get(f"{CRDS}/{crd['metadata']['name']}").status_code == 404)
    assert api.get(cr_path(crd, namespace)).status_code == 404
    assert ended.wait(10)
    # a CRD of the same name afterwards starts empty
    again = crd_manifest(crd["spec"]["group"])
    assert api.post(CRDS, json=again).status_code == 201
    try:
        wait_for(lambda: established(api, again["metadata"]["name"]))
        wait_for(lambda: api.get(cr_path(crd, namespace)).status_code == 200)
        assert api.get(cr_path(crd, namespace)).json()["items"] == []
    finally:
        api.delete(f"{CRDS}/{again['metadata']['name']}")


def test_namespace_deletion_and_the_garbage_collector_cover_custom_resources(
    api: httpx.Client, make_crd: Any, extra_namespaces: Any, namespace: str
) -> None:
    crd = make_crd()
    doomed = extra_namespaces("doomed")
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": doomed}}).status_code == 201
    assert api.post(cr_path(crd, doomed), json=crontab(crd, "in-doomed")).status_code == 201
    assert api.delete(f"/api/v1/namespaces/{doomed}").status_code == 200
    wait_for(lambda: api.get(f"/api/v1/namespaces/{doomed}").status_code == 404, timeout=20)
    # an owner custom resource takes its dependent ConfigMap along, and the other way round
    owner = api.post(cr_path(crd, namespace), json=crontab(crd, "owner")).json()
    ref = {"apiVersion": owner["apiVersion"], "kind": "CronTab", "name": "owner", "uid": owner["metadata"]["uid"]}
    cm = {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=cm).status_code == 201
    parent = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json={"metadata": {"name": "parent"}}).json()
    child = crontab(crd, "child")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": parent["metadata"]["uid"]}
    ]
    assert api.post(cr_path(crd, namespace), json=child).status_code == 201
    assert api.delete(cr_path(crd, namespace, "owner")).status_code == 200
    wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/configmaps/dependent").status_code == 404)
    assert api.delete(f"/api/v1/namespaces/{namespace}/configmaps/parent").status_code == 200
    wait_for(lambda: api.get(cr_path(crd, namespace, "child")).status_code == 404)


# ---- the Python client ------------------------------------------------------------------------------------------


def test_the_dynamic_client_creates_lists_and_watches(k8s_client: k8s.ApiClient, make_crd: Any, namespace: str) -> None:
    crd = make_crd()
    group = crd["spec"]["group"]
    dyn = dynamic.DynamicClient(k8s_client)
    crontabs = dyn.resources.get(api_version=f"{group}/v1", kind="CronTab")
    created = crontabs.create(body=crontab(crd, "dyn"), namespace=namespace)
    assert created.spec.replicas == 1
    listed = crontabs.get(namespace=namespace)
    assert [i.metadata.name for i in listed.items] == ["dyn"]
    events = []
    for event in crontabs.watch(namespace=namespace, timeout=2, resource_version=listed.metadata.resourceVersion):
        events.append(event)
        break
    crontabs.patch(
        body={"spec": {"image": "b"}}, name="dyn", namespace=namespace, content_type="application/merge-patch+json"
    )
    assert crontabs.get(name="dyn", namespace=namespace).spec.image == "b"
    crontabs.delete(name="dyn", namespace=namespace)


def test_a_yaml_integer_beyond_int64_is_a_number_not_a_server_error(
    api: httpx.Client, make_crd: Any, namespace: str
) -> None:
    """YAML reaches upstream's decoder as JSON, where such an integer is a float64 (found by Hypothesis: a 500)."""
    crd = make_crd()
    body = f"apiVersion: {crd['spec']['group']}/v1\nkind: CronTab\nmetadata: {{name: big}}\n"
    headers = {"Content-Type": "application/yaml"}
    refused = api.post(
        cr_path(crd, namespace), content=body + "spec: {replicas: 18446744073709551616}\n", headers=headers
    )
    assert refused.status_code == 422, refused.text
    assert "spec.replicas in body must be of type integer" in refused.json()["message"]
    assert api.get(cr_path(crd, namespace, "big")).status_code == 404
