"""API-machinery answers that real clients (the conformance suite, controller-runtime's envtest suites, client
libraries) found unlike kube-apiserver's: each test names the upstream behaviour it holds tinykube to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

CM = "/api/v1/namespaces/{ns}/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _configmaps(api: httpx.Client, ns: str, count: int) -> None:
    for i in range(count):
        response = api.post(CM.format(ns=ns), json={"metadata": {"name": f"cm-{i}", "labels": {"set": "x"}}})
        assert response.status_code == 201, response.text


def _names(api: httpx.Client, ns: str) -> set[str]:
    return {item["metadata"]["name"] for item in api.get(CM.format(ns=ns)).json()["items"]}


def test_deletecollection_dry_run_in_body_deletes_nothing(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 3)
    before = _names(api, namespace)
    response = api.request(
        "DELETE", CM.format(ns=namespace), json={"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    )
    assert response.status_code == 200, response.text
    assert {i["metadata"]["name"] for i in response.json()["items"]} >= {"cm-0", "cm-1", "cm-2"}
    assert _names(api, namespace) == before


def test_deletecollection_with_an_unsupported_dry_run_in_body_is_invalid(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 1)
    response = api.request("DELETE", CM.format(ns=namespace), json={"dryRun": ["Some"]})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "dryRun"
    assert "cm-0" in _names(api, namespace)


def test_deletecollection_takes_preconditions_from_the_body(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 1)
    response = api.request("DELETE", CM.format(ns=namespace), json={"preconditions": {"uid": "not-this-one"}})
    assert response.status_code == 409, response.text
    assert "cm-0" in _names(api, namespace)


@pytest.mark.parametrize("path", ["/api/", "/apis/", "/api/v1/", "/apis/apps/", "/apis/apps/v1/"])
def test_discovery_is_served_with_a_trailing_slash(api: httpx.Client, path: str) -> None:
    with_slash, without = api.get(path), api.get(path.rstrip("/"))
    assert with_slash.status_code == 200, with_slash.text
    assert with_slash.json() == without.json()


def test_built_in_list_items_carry_no_kind_nor_api_version(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 2)
    listed = api.get(CM.format(ns=namespace)).json()
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert all("kind" not in item and "apiVersion" not in item for item in listed["items"])
    one = api.get(CM.format(ns=namespace) + "/cm-0").json()
    assert one["kind"] == "ConfigMap" and one["apiVersion"] == "v1"  # a single object keeps them
    assert {k: v for k, v in one.items() if k not in ("kind", "apiVersion")} in listed["items"]


def test_a_limited_list_counts_the_items_left_on_every_page(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 7)
    total = len(_names(api, namespace))  # with kube-root-ca.crt, when the publisher has written it
    seen, token, pages = 0, "", 0
    while True:
        params = {"limit": "3", **({"continue": token} if token else {})}
        page = api.get(CM.format(ns=namespace), params=params).json()
        seen += len(page["items"])
        token = page["metadata"].get("continue", "")
        pages += 1
        if not token:
            assert "remainingItemCount" not in page["metadata"]
            break
        assert page["metadata"]["remainingItemCount"] == total - seen
    assert seen == total and pages >= 3


def test_a_filtered_limited_list_has_no_remaining_count(api: httpx.Client, namespace: str) -> None:
    _configmaps(api, namespace, 4)
    page = api.get(CM.format(ns=namespace), params={"limit": "2", "labelSelector": "set=x"}).json()
    assert page["metadata"]["continue"] and "remainingItemCount" not in page["metadata"]


@pytest.fixture
def service(api: httpx.Client, namespace: str) -> str:
    body = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    response = api.post(f"/api/v1/namespaces/{namespace}/services", json=body)
    assert response.status_code == 201, response.text
    return f"/api/v1/namespaces/{namespace}/services/web"


def _merge(api: httpx.Client, path: str, patch: dict[str, Any]) -> httpx.Response:
    return api.patch(path, json=patch, headers={"Content-Type": "application/merge-patch+json"})


def test_a_status_patch_of_a_service_keeps_the_metadata_it_carries(api: httpx.Client, service: str) -> None:
    patch = {"metadata": {"annotations": {"patched": "yes"}}, "spec": {"type": "NodePort"}}
    response = _merge(api, service + "/status", patch)
    assert response.status_code == 200, response.text
    stored = api.get(service).json()
    assert stored["metadata"]["annotations"] == {"patched": "yes"}
    assert stored["spec"]["type"] == "ClusterIP"  # the spec is still reset


def test_a_status_patch_of_a_namespace_keeps_the_metadata_it_carries(api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}"
    response = _merge(api, path + "/status", {"metadata": {"annotations": {"patched": "yes"}}})
    assert response.status_code == 200, response.text
    assert api.get(path).json()["metadata"]["annotations"] == {"patched": "yes"}


def test_a_status_patch_of_a_deployment_keeps_its_labels(api: httpx.Client, namespace: str) -> None:
    """Kinds whose upstream status strategy resets more than spec still do: a Deployment's keeps its labels."""
    body = {
        "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert api.post(path, json=body).status_code == 201
    response = _merge(api, path + "/d/status", {"metadata": {"labels": {"app": "changed"}}})
    assert response.status_code == 200, response.text
    assert api.get(path + "/d").json()["metadata"]["labels"] == {"app": "d"}


def test_a_cluster_scoped_create_clears_the_namespace_in_its_body(api: httpx.Client) -> None:
    body = {"metadata": {"name": "reader-of-nothing", "namespace": "default"}, "rules": []}
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    response = api.post(path, json=body)
    try:
        assert response.status_code == 201, response.text
        assert "namespace" not in response.json()["metadata"]
        updated = api.put(
            path + "/reader-of-nothing",
            json={**response.json(), "metadata": {**response.json()["metadata"], "namespace": "kube-system"}},
        )
        assert updated.status_code == 200, updated.text
        assert "namespace" not in updated.json()["metadata"]
    finally:
        api.delete(path + "/reader-of-nothing")


@pytest.fixture
def node(api: httpx.Client) -> Iterator[str]:
    body = {
        "metadata": {"name": "zeros-node"},
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
    }
    response = api.post("/api/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    yield "/api/v1/nodes/zeros-node"
    api.delete("/api/v1/nodes/zeros-node")


def test_a_patch_to_zero_values_drops_them_as_go_omitempty_does(api: httpx.Client, node: str) -> None:
    response = _merge(api, node, {"spec": {"unschedulable": False, "taints": []}})
    assert response.status_code == 200, response.text
    # the patch's own answer: a later read may already show the node lifecycle controller's unschedulable taint,
    # added for the state the node was created in
    spec = response.json()["spec"]
    assert "unschedulable" not in spec and "taints" not in spec


def test_zero_values_upstream_always_writes_are_kept(api: httpx.Client, namespace: str) -> None:
    """A pointer field (`automountServiceAccountToken`) and a field without omitempty keep their zero."""
    body = {"metadata": {"name": "p"}, "automountServiceAccountToken": False}
    response = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["automountServiceAccountToken"] is False


def test_a_table_of_a_review_is_not_acceptable(api: httpx.Client) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    response = api.post(path, json=review, headers={"Accept": TABLE})
    assert response.status_code == 406, response.text
    assert response.json()["reason"] == "NotAcceptable"
    assert api.post(path, json=review).status_code == 201


@pytest.mark.parametrize(
    "name", ["resourcequotas", "services.nodeports", "services.loadbalancers", "count/deployments.apps"]
)
def test_a_quota_takes_every_standard_resource_name(api: httpx.Client, namespace: str, name: str) -> None:
    body = {"metadata": {"name": "q"}, "spec": {"hard": {name: "1"}}}
    response = api.post(f"/api/v1/namespaces/{namespace}/resourcequotas", json=body)
    assert response.status_code == 201, response.text


def test_a_quota_refuses_an_unknown_unprefixed_name(api: httpx.Client, namespace: str) -> None:
    body = {"metadata": {"name": "q"}, "spec": {"hard": {"quotas": "1"}}}
    response = api.post(f"/api/v1/namespaces/{namespace}/resourcequotas", json=body)
    assert response.status_code == 422, response.text


def _event(name: str, controller: str, *, regarding: dict[str, str]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event, as a controller using the new API writes one."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-12-02T10:00:00.000000Z",
        "reportingController": controller,
        "reportingInstance": controller.rpartition("/")[2] + "-1",
        "action": "Made",
        "reason": "Made",
        "type": "Normal",
        "regarding": regarding,
    }


def test_an_event_written_through_events_k8s_io_is_found_by_its_source(api: httpx.Client, namespace: str) -> None:
    event = _event("e1", "example.com/ctl", regarding={"kind": "Pod", "name": "p", "namespace": namespace})
    response = api.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=event)
    assert response.status_code == 201, response.text
    core = f"/api/v1/namespaces/{namespace}/events"
    for selector in ("source=example.com/ctl", "reportingComponent=example.com/ctl"):
        found = api.get(core, params={"fieldSelector": selector}).json()["items"]
        assert [e["metadata"]["name"] for e in found] == ["e1"], selector
    assert api.get(core, params={"fieldSelector": "source=other"}).json()["items"] == []


def test_certificate_signing_requests_are_selected_by_signer_name(api: httpx.Client) -> None:
    path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    response = api.get(path, params={"fieldSelector": "spec.signerName=example.com/none"})
    assert response.status_code == 200, response.text
    assert response.json()["items"] == []


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "pause"}], **spec}}


def test_a_pod_with_invalid_sysctl_names_is_refused(api: httpx.Client, namespace: str) -> None:
    sysctls = [{"name": "foo-", "value": "1"}, {"name": "bar..", "value": "1"}, {"name": "kernel.shmmax", "value": "1"}]
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("p", securityContext={"sysctls": sysctls}))
    assert response.status_code == 422, response.text
    message = response.json()["message"]
    assert 'Invalid value: "foo-"' in message and 'Invalid value: "bar.."' in message
    assert "kernel.shmmax" not in message


@pytest.fixture
def runtime_class(api: httpx.Client) -> Iterator[str]:
    name = "with-overhead"
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
        "scheduling": {"nodeSelector": {"sandbox": "yes"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]},
    }
    response = api.post("/apis/node.k8s.io/v1/runtimeclasses", json=body)
    assert response.status_code in (201, 409), response.text
    yield name
    api.delete(f"/apis/node.k8s.io/v1/runtimeclasses/{name}")


def test_a_pod_naming_a_missing_runtime_class_is_forbidden(api: httpx.Client, namespace: str) -> None:
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("p", runtimeClassName="no-such-class"))
    assert response.status_code == 403, response.text
    assert 'pod rejected: RuntimeClass "no-such-class" not found' in response.json()["message"]


def test_a_pod_takes_its_runtime_class_overhead_and_scheduling(
    api: httpx.Client, namespace: str, runtime_class: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/pods"
    response = api.post(path, json=_pod("p", runtimeClassName=runtime_class))
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"sandbox": "yes"}
    assert {"key": "sandbox", "operator": "Exists"} in spec["tolerations"]
    conflicting = _pod("q", runtimeClassName=runtime_class, overhead={"cpu": "1"})
    refused = api.post(path, json=conflicting)
    assert refused.status_code == 403, refused.text
    assert "Overhead doesn't match" in refused.json()["message"]


def _apply(api: httpx.Client, path: str, config: dict[str, Any]) -> httpx.Response:
    return api.patch(
        path, params={"fieldManager": "numbers"}, json=config, headers={"Content-Type": "application/apply-patch+yaml"}
    )


def test_server_side_apply_takes_quantities_given_as_numbers(api: httpx.Client, namespace: str) -> None:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"pods": 100}}}
    response = _apply(api, f"/api/v1/namespaces/{namespace}/resourcequotas/q", quota)
    assert response.status_code == 201, response.text
    pod = {"apiVersion": "v1", "kind": "Pod", **_pod("p")}
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": 1000000}}
    response = _apply(api, f"/api/v1/namespaces/{namespace}/pods/p", pod)
    assert response.status_code == 201, response.text


def test_strict_validation_reports_duplicate_and_unknown_fields_together(api: httpx.Client, namespace: str) -> None:
    body = b'{"metadata": {"name": "dup", "name": "dup"}, "data": {"a": "b"}, "bogus": 1}'
    response = api.post(
        CM.format(ns=namespace),
        params={"fieldValidation": "Strict"},
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith("strict decoding error: ")
    assert 'duplicate field "metadata.name"' in message and 'unknown field "bogus"' in message
    assert api.get(CM.format(ns=namespace) + "/dup").status_code == 404


def test_the_kubernetes_service_has_endpoints_and_a_slice_pointing_at_the_apiserver(api: httpx.Client) -> None:
    endpoints = api.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert endpoints.status_code == 200, endpoints.text
    (subset,) = endpoints.json()["subsets"]
    (address,) = subset["addresses"]
    assert subset["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    slices = api.get(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        params={"labelSelector": "kubernetes.io/service-name=kubernetes"},
    ).json()["items"]
    assert [s["endpoints"][0]["addresses"] for s in slices] == [[address["ip"]]]


def test_events_k8s_io_selects_by_its_own_field_labels(api: httpx.Client, namespace: str) -> None:
    event = _event("e2", "example.com/other", regarding={"kind": "Pod", "name": "q", "namespace": namespace})
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    assert api.post(path, json=event).status_code == 201
    for selector in ("reportingController=example.com/other", "regarding.name=q"):
        found = api.get(path, params={"fieldSelector": selector}).json()["items"]
        assert [e["metadata"]["name"] for e in found] == ["e2"], selector
    refused = api.get(path, params={"fieldSelector": "source=example.com/other"})
    assert refused.status_code == 400 and refused.json()["message"] == "field label not supported: source"


def test_an_apply_with_a_key_twice_is_refused_under_strict_validation(api: httpx.Client, namespace: str) -> None:
    body = b"\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\ndata:\n  a: one\n  a: two\n"
    response = api.patch(
        CM.format(ns=namespace) + "/twice",
        params={"fieldManager": "m", "fieldValidation": "Strict"},
        content=body,
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["message"] == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 8: key "a" already set in map'
    )
    warned = api.patch(
        CM.format(ns=namespace) + "/twice",
        params={"fieldManager": "m"},
        content=body,
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert warned.status_code == 201 and "line 8" in warned.headers["warning"]
