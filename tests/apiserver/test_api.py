"""The REST API over HTTPS against a real `tinykube up`: Status errors, concurrency, lists, watches, metadata."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster

EP = "/api/v1/namespaces/{ns}/endpoints"


def endpoints(ns: str, name: str = "", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, **meta} if name else meta}


def status(response: httpx.Response, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["reason"] == reason
    assert body["code"] == code
    return body


def test_requests_without_valid_token_are_unauthorized(cluster: RunningCluster) -> None:
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    with httpx.Client(base_url=cluster.server, verify=verify) as anonymous:  # system:anonymous, refused by RBAC
        status(anonymous.get("/api/v1/namespaces"), 403, "Forbidden")
        assert anonymous.get("/readyz").text == "ok"
    with cluster.http(headers={"Authorization": "Bearer wrong"}) as wrong:
        status(wrong.get("/api/v1/namespaces"), 401, "Unauthorized")
        status(wrong.get("/readyz"), 401, "Unauthorized")


def test_system_namespaces_exist(api: httpx.Client) -> None:
    names = {n["metadata"]["name"] for n in api.get("/api/v1/namespaces").json()["items"]}
    assert {"default", "kube-system", "kube-public"} <= names


def test_create_sets_system_metadata(api: httpx.Client, namespace: str) -> None:
    response = api.post(EP.format(ns=namespace), json=endpoints(namespace, "a", labels={"x": "y"}))
    assert response.status_code == 201
    meta = response.json()["metadata"]
    assert meta["namespace"] == namespace and meta["labels"] == {"x": "y"}
    assert len(meta["uid"]) == 36 and meta["creationTimestamp"].endswith("Z") and int(meta["resourceVersion"]) > 0
    got = api.get(f"{EP.format(ns=namespace)}/a").json()
    assert got["metadata"] == meta


def test_generate_name(api: httpx.Client, namespace: str) -> None:
    made = [api.post(EP.format(ns=namespace), json=endpoints(namespace, generateName="web-")).json() for _ in range(3)]
    names = {m["metadata"]["name"] for m in made}
    assert len(names) == 3 and all(n.startswith("web-") and len(n) == 9 for n in names)


def test_a_generated_name_is_there_for_the_strategy(api: httpx.Client, namespace: str) -> None:
    """Upstream's store names the object before PrepareForCreate: a Job's strategy labels its template with the
    Job's name. The name came after, and every Job with a generateName was refused (422, `job-name` must be the
    name); test_fuzz_create_every_kind found it."""
    pod = {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
    job = {"metadata": {"generateName": "gen-"}, "spec": {"suspend": True, "template": {"spec": pod}}}
    response = api.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=job)
    assert response.status_code == 201, response.text
    created = response.json()
    name = created["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == 9
    labels = created["spec"]["template"]["metadata"]["labels"]
    assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == name
    [entry] = created["metadata"]["managedFields"]
    assert "f:generateName" in entry["fieldsV1"]["f:metadata"]
    assert "f:name" not in entry["fieldsV1"]["f:metadata"]  # named by the store, not by the client


@pytest.mark.parametrize(
    ("body", "content_type", "code", "reason", "message"),
    [
        pytest.param(b"{nope", "application/json", 400, "BadRequest", "json parse error", id="malformed-json"),
        pytest.param(b"a: [", "application/yaml", 400, "BadRequest", "yaml parse error", id="malformed-yaml"),
        pytest.param(b"[1,2]", "application/json", 400, "BadRequest", "must be a JSON object", id="not-an-object"),
        pytest.param(
            json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}).encode(),
            "application/json",
            400,
            "BadRequest",
            "cannot be handled as a Endpoints",
            id="wrong-kind",
        ),
        pytest.param(
            json.dumps({"apiVersion": "apps/v1", "kind": "Endpoints", "metadata": {"name": "p"}}).encode(),
            "application/json",
            400,
            "BadRequest",
            "cannot be handled",
            id="wrong-api-version",
        ),
        pytest.param(
            json.dumps({"metadata": {"name": "p", "namespace": "elsewhere"}}).encode(),
            "application/json",
            400,
            "BadRequest",
            "does not match the namespace",
            id="namespace-mismatch",
        ),
        pytest.param(
            json.dumps({"metadata": {}}).encode(),
            "application/json",
            422,
            "Invalid",
            "metadata.name: Required value: name or generateName is required",
            id="no-name",
        ),
        pytest.param(
            b" " * (3 * 1024 * 1024 + 1),
            "application/json",
            413,
            "RequestEntityTooLarge",
            "limit is 3145728",
            id="too-large",
        ),
    ],
)
def test_bad_create_bodies(
    api: httpx.Client, namespace: str, body: bytes, content_type: str, code: int, reason: str, message: str
) -> None:
    before = api.get(EP.format(ns=namespace)).json()["items"]
    response = api.post(EP.format(ns=namespace), content=body, headers={"Content-Type": content_type})
    assert message in status(response, code, reason)["message"]
    assert api.get(EP.format(ns=namespace)).json()["items"] == before


def test_invalid_name_gets_upstream_422(api: httpx.Client, namespace: str) -> None:
    body = status(api.post(EP.format(ns=namespace), json=endpoints(namespace, "Bad_Name")), 422, "Invalid")
    assert body["message"].startswith('Endpoints "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": ')
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueInvalid"


def test_already_exists_and_not_found(api: httpx.Client, namespace: str) -> None:
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "dup"))
    body = status(api.post(EP.format(ns=namespace), json=endpoints(namespace, "dup")), 409, "AlreadyExists")
    assert body["message"] == 'endpoints "dup" already exists'
    assert body["details"] == {"name": "dup", "kind": "endpoints"}
    body = status(api.get(f"{EP.format(ns=namespace)}/nosuch"), 404, "NotFound")
    assert body["message"] == 'endpoints "nosuch" not found'


def test_create_in_missing_namespace_is_refused(api: httpx.Client) -> None:
    body = status(api.post(EP.format(ns="does-not-exist"), json=endpoints("x", "a")), 404, "NotFound")
    assert body["message"] == 'namespaces "does-not-exist" not found'


def test_stale_update_conflicts_and_keeps_the_stored_object(api: httpx.Client, namespace: str) -> None:
    created = api.post(EP.format(ns=namespace), json=endpoints(namespace, "c", labels={"v": "1"})).json()
    fresh = {**created, "metadata": {**created["metadata"], "labels": {"v": "2"}}}
    assert api.put(f"{EP.format(ns=namespace)}/c", json=fresh).status_code == 200
    stale = {**created, "metadata": {**created["metadata"], "labels": {"v": "3"}}}
    body = status(api.put(f"{EP.format(ns=namespace)}/c", json=stale), 409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on endpoints "c": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert api.get(f"{EP.format(ns=namespace)}/c").json()["metadata"]["labels"] == {"v": "2"}


def test_name_mismatch_between_url_and_body(api: httpx.Client, namespace: str) -> None:
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "m"))
    body = status(api.put(f"{EP.format(ns=namespace)}/m", json=endpoints(namespace, "other")), 400, "BadRequest")
    assert body["message"] == "the name of the object (other) does not match the name on the URL (m)"


def test_dry_run_stores_nothing(api: httpx.Client, namespace: str) -> None:
    response = api.post(EP.format(ns=namespace), params={"dryRun": "All"}, json=endpoints(namespace, "dry"))
    assert response.status_code == 201 and response.json()["metadata"]["name"] == "dry"
    status(api.get(f"{EP.format(ns=namespace)}/dry"), 404, "NotFound")


def test_finalizers_hold_deletion(api: httpx.Client, namespace: str) -> None:
    url = f"{EP.format(ns=namespace)}/f"
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "f", finalizers=["example.com/hold"]))
    deleting = api.delete(url)
    assert deleting.status_code in (200, 202)
    held = api.get(url).json()
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == ["example.com/hold"]
    released = api.patch(
        url, json={"metadata": {"finalizers": None}}, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert released.status_code == 200, released.text
    status(api.get(url), 404, "NotFound")


def test_delete_returns_status_or_object_as_upstream(api: httpx.Client, namespace: str) -> None:
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "d"))
    gone = api.delete(f"{EP.format(ns=namespace)}/d").json()
    assert gone["kind"] == "Status" and gone["status"] == "Success" and gone["details"]["name"] == "d"
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    api.post(f"/api/v1/namespaces/{namespace}/services", json=svc)
    deleted = api.delete(f"/api/v1/namespaces/{namespace}/services/s").json()
    assert deleted["kind"] == "Service" and deleted["metadata"]["name"] == "s"


def test_apply_patch_needs_a_field_manager(api: httpx.Client, namespace: str) -> None:
    """Server-side apply (tests/apiserver/test_server_side_apply.py): the one PATCH type that needs `fieldManager`."""
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "ap"))
    url, headers = f"{EP.format(ns=namespace)}/ap", {"Content-Type": "application/apply-patch+yaml"}
    config = b"apiVersion: v1\nkind: Endpoints\nmetadata: {name: ap, labels: {a: b}}\n"
    status(api.patch(url, content=config, headers=headers), 422, "Invalid")
    applied = api.patch(url, content=config, headers=headers, params={"fieldManager": "me"})
    assert applied.status_code == 200 and applied.json()["metadata"]["labels"] == {"a": "b"}


def test_list_selectors_and_pagination(api: httpx.Client, namespace: str) -> None:
    for i in range(7):
        api.post(
            EP.format(ns=namespace), json=endpoints(namespace, f"p{i}", labels={"parity": "odd" if i % 2 else "even"})
        )
    url = EP.format(ns=namespace)
    odd = api.get(url, params={"labelSelector": "parity=odd"}).json()["items"]
    assert [o["metadata"]["name"] for o in odd] == ["p1", "p3", "p5"]
    setbased = api.get(url, params={"labelSelector": "parity in (even),parity notin (odd)"}).json()["items"]
    assert len(setbased) == 4
    named = api.get(url, params={"fieldSelector": "metadata.name=p2"}).json()["items"]
    assert [o["metadata"]["name"] for o in named] == ["p2"]
    status(api.get(url, params={"fieldSelector": "spec.bogus=1"}), 400, "BadRequest")
    names, token = [], ""
    while True:
        page = api.get(url, params={"limit": 3, **({"continue": token} if token else {})}).json()
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"p{i}" for i in range(7)]


def test_paginated_list_is_a_consistent_snapshot(api: httpx.Client, namespace: str) -> None:
    url = EP.format(ns=namespace)
    for i in range(4):
        api.post(url, json=endpoints(namespace, f"s{i}"))
    first = api.get(url, params={"limit": 2}).json()
    api.delete(f"{url}/s3")
    api.post(url, json=endpoints(namespace, "s9"))
    second = api.get(url, params={"limit": 2, "continue": first["metadata"]["continue"]}).json()
    assert [o["metadata"]["name"] for o in second["items"]] == ["s2", "s3"]


def test_a_continue_past_compaction_goes_on_inconsistently(tmp_path: Path) -> None:
    """Upstream's answer once etcd compacted the first page's revision away: 410 with a token in the Status that
    continues from the same key at the latest revision, with a remainingItemCount counted from that key."""
    cluster = start_cluster(tmp_path / "c", "--nodes", "0", "--etcd-compaction-interval", "0.5")
    try:
        with cluster.http() as api:
            url = "/api/v1/namespaces/default/podtemplates"
            template = {"containers": [{"name": "c", "image": "x"}]}
            for i in range(10):
                body = {"metadata": {"name": f"t{i}"}, "template": {"spec": template}}
                api.post(url, json=body).raise_for_status()
            first = api.get(url, params={"limit": 3}).json()
            assert first["metadata"]["remainingItemCount"] == 7
            api.delete(f"{url}/t9").raise_for_status()  # a change the inconsistent rest will show

            def expired() -> httpx.Response | None:
                response = api.get(url, params={"limit": 3, "continue": first["metadata"]["continue"]})
                return response if response.status_code == 410 else None

            refused = eventually(expired, timeout=20).json()
            assert refused["reason"] == "Expired"
            assert "use the continue token in this response" in refused["message"]
            token = refused["metadata"]["continue"]
            second = api.get(url, params={"limit": 3, "continue": token}).json()
            assert [i["metadata"]["name"] for i in second["items"]] == ["t3", "t4", "t5"]
            assert second["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
            assert second["metadata"]["remainingItemCount"] == 3  # t6 t7 t8: t9 is gone at the latest revision
            third = api.get(url, params={"limit": 3, "continue": second["metadata"]["continue"]}).json()
            assert [i["metadata"]["name"] for i in third["items"]] == ["t6", "t7", "t8"]
            assert "continue" not in third["metadata"] and "remainingItemCount" not in third["metadata"]
            zero = base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":0,"start":"t1"}').decode()
            assert status(api.get(url, params={"continue": zero}), 400, "BadRequest")["message"] == (
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            )
    finally:
        stop_cluster(cluster)


def test_cross_namespace_list(api: httpx.Client, namespace: str) -> None:
    api.post(EP.format(ns=namespace), json=endpoints(namespace, "everywhere"))
    items = api.get("/api/v1/endpoints").json()["items"]
    assert any(i["metadata"]["namespace"] == namespace for i in items)


def watch_lines(api: httpx.Client, url: str, params: dict[str, str], out: list[dict[str, Any]]) -> threading.Thread:
    def run() -> None:
        with api.stream("GET", url, params={"watch": "true", **params}) as response:
            for line in response.iter_lines():
                if line:
                    out.append(json.loads(line))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_watch_streams_events_and_resumes(api: httpx.Client, namespace: str) -> None:
    url = EP.format(ns=namespace)
    created = api.post(url, json=endpoints(namespace, "w", labels={"a": "1"})).json()
    events: list[dict[str, Any]] = []
    thread = watch_lines(
        api, url, {"resourceVersion": created["metadata"]["resourceVersion"], "timeoutSeconds": "2"}, events
    )
    time.sleep(0.3)
    updated = api.patch(
        f"{url}/w", json={"metadata": {"labels": {"a": "2"}}}, headers={"Content-Type": "application/merge-patch+json"}
    ).json()
    api.delete(f"{url}/w")
    thread.join(10)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    resumed: list[dict[str, Any]] = []
    watch_lines(
        api, url, {"resourceVersion": updated["metadata"]["resourceVersion"], "timeoutSeconds": "1"}, resumed
    ).join(10)
    assert [e["type"] for e in resumed] == ["DELETED"]


def test_watch_without_resource_version_starts_with_current_state(api: httpx.Client, namespace: str) -> None:
    url = EP.format(ns=namespace)
    api.post(url, json=endpoints(namespace, "existing"))
    events: list[dict[str, Any]] = []
    watch_lines(api, url, {"timeoutSeconds": "1", "allowWatchBookmarks": "true"}, events).join(10)
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "existing"
    assert events[-1]["type"] == "BOOKMARK" and int(events[-1]["object"]["metadata"]["resourceVersion"]) > 0


def test_label_filtered_watch_sees_objects_leave_the_selection(api: httpx.Client, namespace: str) -> None:
    url = EP.format(ns=namespace)
    obj = api.post(url, json=endpoints(namespace, "sel", labels={"tier": "web"})).json()
    events: list[dict[str, Any]] = []
    thread = watch_lines(
        api,
        url,
        {"resourceVersion": obj["metadata"]["resourceVersion"], "labelSelector": "tier=web", "timeoutSeconds": "2"},
        events,
    )
    time.sleep(0.3)
    patch = {"Content-Type": "application/merge-patch+json"}
    api.patch(f"{url}/sel", json={"metadata": {"labels": {"tier": "db"}}}, headers=patch)
    api.patch(f"{url}/sel", json={"metadata": {"labels": {"tier": "web"}}}, headers=patch)
    thread.join(10)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_deleting_a_namespace_deletes_its_objects(api: httpx.Client) -> None:
    api.post("/api/v1/namespaces", json={"metadata": {"name": "doomed"}})
    api.post(EP.format(ns="doomed"), json=endpoints("doomed", "inside"))
    terminating = api.delete("/api/v1/namespaces/doomed").json()
    assert terminating["status"]["phase"] == "Terminating"
    body = status(api.post(EP.format(ns="doomed"), json=endpoints("doomed", "late")), 403, "Forbidden")
    assert "because it is being terminated" in body["message"]
    deadline = time.monotonic() + 20
    while api.get("/api/v1/namespaces/doomed").status_code != 404:
        assert time.monotonic() < deadline, "namespace was not finalized"
        time.sleep(0.05)
    assert api.get(EP.format(ns="doomed")).json()["items"] == []


def test_discovery_documents(api: httpx.Client) -> None:
    assert api.get("/api").json()["versions"] == ["v1"]
    groups = api.get("/apis").json()["groups"]
    assert any(g["name"] == "discovery.k8s.io" for g in groups)
    apps = api.get("/apis/apps").json()
    assert (apps["kind"], apps["name"], apps["preferredVersion"]["groupVersion"]) == ("APIGroup", "apps", "apps/v1")
    missing = api.get("/apis/example.com")
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert resources["services"]["shortNames"] == ["svc"] and "services/status" in resources
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    aggregated = api.get("/api", headers={"Accept": accept})
    assert "as=APIGroupDiscoveryList" in aggregated.headers["content-type"]
    assert aggregated.json()["kind"] == "APIGroupDiscoveryList"
    assert api.get("/version").json()["minor"] == "32"


def test_table_response(api: httpx.Client, namespace: str) -> None:
    api.post(
        f"/api/v1/namespaces/{namespace}/services", json={"metadata": {"name": "t"}, "spec": {"ports": [{"port": 80}]}}
    )
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    table = api.get(f"/api/v1/namespaces/{namespace}/services", headers={"Accept": accept}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:6] == [
        "Name",
        "Type",
        "Cluster-IP",
        "External-IP",
        "Port(s)",
        "Age",
    ]
    assert table["rows"][0]["cells"][0] == "t"


def test_a_list_at_another_resource_s_revision_answers_at_once(api: httpx.Client, namespace: str) -> None:
    """A resourceVersion read from one resource, used on another whose objects did not change since: the watch
    cache learns from etcd's progress report that it is current (upstream's consistent reads), not from events."""
    created = api.post(
        f"/api/v1/namespaces/{namespace}/services", json={"metadata": {"name": "rv"}, "spec": {"ports": [{"port": 80}]}}
    )
    revision = int(created.json()["metadata"]["resourceVersion"])
    listed = api.get("/apis/apps/v1/replicasets", params={"resourceVersion": str(revision), "limit": "1"})
    assert listed.status_code == 200, listed.text  # without the progress report: 504 after 3 s
    assert int(listed.json()["metadata"]["resourceVersion"]) >= revision
    too_far = api.get("/apis/apps/v1/replicasets", params={"resourceVersion": str(revision + 10**9)})
    assert too_far.status_code == 504 and too_far.json()["reason"] == "Timeout"
    assert too_far.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_delete_options_propagation_is_validated_and_read_from_the_query_too(api: httpx.Client, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/endpoints"
    api.post(url, json={"metadata": {"name": "kept"}})
    wrong = api.request("DELETE", f"{url}/kept", json={"propagationPolicy": "Sideways"})
    assert wrong.status_code == 422 and wrong.json()["reason"] == "Invalid"
    assert wrong.json()["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": '
        'supported values: "Foreground", "Background", "Orphan", "nil"'
    )
    both = api.request("DELETE", f"{url}/kept", json={"propagationPolicy": "Orphan", "orphanDependents": True})
    assert both.status_code == 422 and "cannot be both set" in both.json()["message"]
    assert api.get(f"{url}/kept").status_code == 200  # nothing deleted by the refused requests

    kept = api.delete(f"{url}/kept", params={"propagationPolicy": "Orphan"})  # as `?propagationPolicy=` in the URL
    assert kept.status_code == 200 and kept.json()["metadata"]["finalizers"] == ["orphan"]


JOB_DELETE_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove '
    'them or set propagationPolicy=Orphan to suppress this warning"'
)


def test_jobs_and_replication_controllers_orphan_by_default(api: httpx.Client, namespace: str) -> None:
    """Upstream's DefaultGarbageCollectionPolicy: batch/v1 Jobs and v1 ReplicationControllers keep their pods when a
    DELETE names no propagation policy (the `orphan` finalizer), and a Job's DELETE warns about it; apps/v1 kinds
    delete at once. (The official Python client's e2e tests pass propagationPolicy=Background for that reason.)"""
    pod_template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    job_spec = {"template": {**pod_template, "spec": {**pod_template["spec"], "restartPolicy": "Never"}}}
    for name in ("default", "background", "orphan"):
        assert api.post(jobs, json={"metadata": {"name": name}, "spec": job_spec}).status_code == 201

    by_default = api.delete(f"{jobs}/default")
    assert by_default.status_code == 200 and by_default.headers.get_list("warning") == [JOB_DELETE_WARNING]
    assert by_default.json()["kind"] == "Job"  # not gone yet: the garbage collector orphans its pods first
    assert by_default.json()["metadata"]["finalizers"] == ["orphan"]
    assert by_default.json()["metadata"]["deletionTimestamp"]
    eventually(lambda: api.get(f"{jobs}/default").status_code == 404, 10, "the job gone")

    background = api.delete(f"{jobs}/background", params={"propagationPolicy": "Background"})
    assert background.json()["kind"] == "Status" and "warning" not in background.headers
    orphan = api.request("DELETE", f"{jobs}/orphan", json={"propagationPolicy": "Orphan"})
    assert orphan.json()["metadata"]["finalizers"] == ["orphan"] and "warning" not in orphan.headers

    rcs = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    rc_spec = {"replicas": 0, "selector": {"app": "x"}, "template": pod_template}
    assert api.post(rcs, json={"metadata": {"name": "rc"}, "spec": rc_spec}).status_code == 201
    rc = api.delete(f"{rcs}/rc")
    assert rc.json()["metadata"]["finalizers"] == ["orphan"] and "warning" not in rc.headers

    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    deployment_spec = {"selector": {"matchLabels": {"app": "x"}}, "template": pod_template}
    assert api.post(deployments, json={"metadata": {"name": "d"}, "spec": deployment_spec}).status_code == 201
    assert api.delete(f"{deployments}/d").json()["kind"] == "Status"  # apps/v1: in the background, gone at once


def test_propagation_finalizers_follow_the_delete_options(api: httpx.Client, namespace: str) -> None:
    """An explicit policy replaces the other propagation finalizer (upstream's deletionFinalizersForGarbageCollection);
    Events take none (their policy is Unsupported)."""
    maps = f"/api/v1/namespaces/{namespace}/configmaps"
    api.post(maps, json={"metadata": {"name": "fg", "finalizers": ["example.com/keep", "foregroundDeletion"]}})
    orphaned = api.request("DELETE", f"{maps}/fg", json={"propagationPolicy": "Orphan"})
    assert orphaned.json()["metadata"]["finalizers"] == ["example.com/keep", "orphan"]
    api.post(maps, json={"metadata": {"name": "bg", "finalizers": ["orphan"]}})
    assert api.delete(f"{maps}/bg", params={"propagationPolicy": "Background"}).json()["kind"] == "Status"
    assert api.get(f"{maps}/bg").status_code == 404
    api.patch(
        f"{maps}/fg", json={"metadata": {"finalizers": None}}, headers={"Content-Type": "application/merge-patch+json"}
    )

    events = f"/api/v1/namespaces/{namespace}/events"
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}}
    assert api.post(events, json=event).status_code == 201
    assert api.delete(f"{events}/e", params={"propagationPolicy": "Foreground"}).json()["kind"] == "Status"


def test_pod_gets_upstream_v1_defaults(api: httpx.Client, namespace: str) -> None:
    """SetDefaults_* of core/v1 for what a PodSpec nests: init containers, probes, lifecycle hooks, fieldRefs,
    volumes, and (pods only) requests from limits."""
    container = {
        "name": "app",
        "image": "nginx:1.27",
        "resources": {"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
        "livenessProbe": {"httpGet": {"port": 8080}},
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5, "failureThreshold": 1},
        "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    }
    spec = {
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [container],
        "volumes": [
            {"name": "scratch"},
            {"name": "config", "configMap": {"name": "c"}},
            {"name": "keys", "secret": {"secretName": "s", "defaultMode": 256}},
            {"name": "host", "hostPath": {"path": "/tmp"}},
        ],
    }
    response = api.post(
        f"/api/v1/namespaces/{namespace}/pods", json={"metadata": {"name": "p"}, "spec": spec}, params={"dryRun": "All"}
    )
    assert response.status_code == 201, response.text
    got = response.json()["spec"]
    init, app = got["initContainers"][0], got["containers"][0]
    assert init["imagePullPolicy"] == "Always"  # untagged: latest
    assert init["terminationMessagePolicy"] == "File" and init["terminationMessagePath"] == "/dev/termination-log"
    assert app["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}  # the given request kept
    assert app["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert app["readinessProbe"]["periodSeconds"] == 5 and app["readinessProbe"]["failureThreshold"] == 1
    assert "initialDelaySeconds" not in app["readinessProbe"]  # zero, omitted as upstream
    assert app["lifecycle"]["preStop"]["httpGet"] == {"port": 8080, "path": "/stop", "scheme": "HTTP"}
    assert app["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "metadata.name"}
    volumes = {v["name"]: v for v in got["volumes"]}
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert volumes["config"]["configMap"] == {"name": "c", "defaultMode": 420}
    assert volumes["keys"]["secret"]["defaultMode"] == 256
    assert volumes["host"]["hostPath"] == {"path": "/tmp", "type": ""}

    # A pod template is defaulted alike, but its requests stay as written (upstream: SetDefaults_Pod only).
    template = {"metadata": {"labels": {"app": "p"}}, "spec": spec}
    deployment = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "p"}}, "template": template}}
    response = api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=deployment, params={"dryRun": "All"})
    assert response.status_code == 201, response.text
    templated = response.json()["spec"]["template"]["spec"]["containers"][0]
    assert templated["resources"]["requests"] == {"cpu": "100m"}
    assert templated["livenessProbe"]["timeoutSeconds"] == 1


def test_the_system_namespaces_may_not_be_deleted(api: httpx.Client) -> None:
    for name in ("default", "kube-system", "kube-public"):
        response = api.delete(f"/api/v1/namespaces/{name}")
        assert response.status_code == 403, response.text
        assert response.json()["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        assert "deletionTimestamp" not in api.get(f"/api/v1/namespaces/{name}").json()["metadata"]
