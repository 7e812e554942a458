"""The official `kubernetes` Python client (v37) against a real `tinykube up`: typed CRUD, selectors, errors and
watches, as an operator or controller written in Python would use them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException


def _service(
    name: str, *, labels: dict[str, str] | None = None, port: int = 80, selector: dict[str, str] | None = None
) -> k8s.V1Service:
    return k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1ServiceSpec(
            selector=selector or {"app": name}, ports=[k8s.V1ServicePort(name="http", port=port, target_port=8080)]
        ),
    )


def _names(items: list[Any]) -> list[str]:
    return sorted(item.metadata.name for item in items)


# ---- Namespaces --------------------------------------------------------------------------------------------


@pytest.fixture
def namespace_name(core_v1: k8s.CoreV1Api, namespace: str) -> Iterator[str]:
    """A name for a namespace the test creates itself; deleted afterwards if it is still there."""
    name = f"{namespace[:50]}-own"
    yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as err:
        assert err.status == 404


def test_namespace_crud(core_v1: k8s.CoreV1Api, namespace_name: str) -> None:
    created = core_v1.create_namespace(
        k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace_name, labels={"team": "blue"}))
    )
    assert created.status.phase == "Active"
    assert created.spec.finalizers == ["kubernetes"]
    assert created.metadata.labels == {"team": "blue", "kubernetes.io/metadata.name": namespace_name}

    read = core_v1.read_namespace(namespace_name)
    assert read.metadata.uid == created.metadata.uid
    read.metadata.labels["team"] = "red"
    replaced = core_v1.replace_namespace(namespace_name, read)
    assert replaced.metadata.labels["team"] == "red"
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    patched = core_v1.patch_namespace(namespace_name, {"metadata": {"annotations": {"owner": "alice"}}})
    assert patched.metadata.annotations == {"owner": "alice"}
    listed = core_v1.list_namespace(label_selector="team=red")
    assert _names(listed.items) == [namespace_name]
    by_field = core_v1.list_namespace(field_selector=f"metadata.name={namespace_name}")
    assert _names(by_field.items) == [namespace_name]

    core_v1.delete_namespace(namespace_name)
    deadline = time.monotonic() + 15
    while True:
        try:
            core_v1.read_namespace(namespace_name)
        except ApiException as err:
            assert err.status == 404
            break
        assert time.monotonic() < deadline, "the namespace was never finalized"
        time.sleep(0.05)


def test_delete_namespace_returns_terminating_namespace(core_v1: k8s.CoreV1Api, namespace_name: str) -> None:
    core_v1.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace_name)))
    core_v1.create_namespaced_service(namespace_name, _service("web"))
    answer = core_v1.delete_namespace(namespace_name)
    # upstream answers with the Namespace itself, Terminating (the client hands it over as a plain dict)
    assert answer["kind"] == "Namespace"
    assert answer["status"]["phase"] == "Terminating"
    assert answer["metadata"]["deletionTimestamp"]
    deadline = time.monotonic() + 15
    while True:
        try:
            core_v1.read_namespace(namespace_name)
        except ApiException as err:
            assert err.status == 404
            break
        assert time.monotonic() < deadline, "the namespace was never finalized"
        time.sleep(0.05)
    assert core_v1.list_namespaced_service(namespace_name).items == []


# ---- Services ----------------------------------------------------------------------------------------------


def test_service_crud(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_service(namespace, _service("web", labels={"app": "web"}))
    assert created.metadata.namespace == namespace
    assert created.metadata.uid
    assert created.spec.type == "ClusterIP"
    assert created.spec.session_affinity == "None"
    assert [(p.port, p.target_port, p.protocol) for p in created.spec.ports] == [(80, 8080, "TCP")]

    read = core_v1.read_namespaced_service("web", namespace)
    assert read.metadata.resource_version == created.metadata.resource_version
    read.spec.ports[0].port = 81
    read.metadata.labels["tier"] = "front"
    replaced = core_v1.replace_namespaced_service("web", namespace, read)
    assert replaced.spec.ports[0].port == 81
    assert replaced.metadata.labels == {"app": "web", "tier": "front"}
    assert replaced.metadata.uid == created.metadata.uid
    assert replaced.metadata.creation_timestamp == created.metadata.creation_timestamp

    patched = core_v1.patch_namespaced_service("web", namespace, {"spec": {"selector": {"app": "web2"}}})
    assert patched.spec.selector == {"app": "web2"}
    # a strategic merge patch (the client's default for dicts) merges ports by their key
    patched = core_v1.patch_namespaced_service(
        "web", namespace, {"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}
    )
    assert sorted(p.port for p in patched.spec.ports) == [81, 443]
    json_patched = core_v1.patch_namespaced_service(
        "web", namespace, [{"op": "replace", "path": "/spec/sessionAffinity", "value": "ClientIP"}]
    )
    assert json_patched.spec.session_affinity == "ClientIP"

    status = core_v1.read_namespaced_service_status("web", namespace)
    assert status.metadata.name == "web"

    deleted = core_v1.delete_namespaced_service("web", namespace)
    assert deleted.metadata.name == "web"  # services answer DELETE with the object, as upstream
    with pytest.raises(ApiException) as err:
        core_v1.read_namespaced_service("web", namespace)
    assert err.value.status == 404


def test_service_list_selectors(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(namespace, _service("web", labels={"app": "web", "tier": "front"}))
    core_v1.create_namespaced_service(namespace, _service("api", labels={"app": "api", "tier": "back"}))
    core_v1.create_namespaced_service(namespace, _service("db", labels={"app": "db"}))

    def names(**kwargs: Any) -> list[str]:
        return _names(core_v1.list_namespaced_service(namespace, **kwargs).items)

    assert names() == ["api", "db", "web"]
    assert names(label_selector="app=web") == ["web"]
    assert names(label_selector="tier in (front,back)") == ["api", "web"]
    assert names(label_selector="!tier") == ["db"]
    assert names(label_selector="tier,app!=api") == ["web"]
    assert names(field_selector="metadata.name=db") == ["db"]
    assert names(field_selector="metadata.name!=db", label_selector="tier") == ["api", "web"]
    everywhere = core_v1.list_service_for_all_namespaces(field_selector=f"metadata.namespace={namespace}")
    assert _names(everywhere.items) == ["api", "db", "web"]

    page = core_v1.list_namespaced_service(namespace, limit=2)
    assert len(page.items) == 2 and page.metadata._continue
    rest = core_v1.list_namespaced_service(namespace, limit=2, _continue=page.metadata._continue)
    assert _names(page.items + rest.items) == ["api", "db", "web"]
    assert not rest.metadata._continue


@pytest.mark.parametrize(
    "call, status, reason",
    [
        pytest.param(lambda v1, ns: v1.read_namespaced_service("nosuch", ns), 404, "NotFound", id="read-missing"),
        pytest.param(lambda v1, ns: v1.delete_namespaced_service("nosuch", ns), 404, "NotFound", id="delete-missing"),
        pytest.param(lambda v1, ns: v1.patch_namespaced_service("nosuch", ns, {}), 404, "NotFound", id="patch-missing"),
        pytest.param(
            lambda v1, ns: v1.create_namespaced_service("no-such-namespace", _service("web")),
            404,
            "NotFound",
            id="missing-namespace",
        ),
        pytest.param(
            lambda v1, ns: v1.create_namespaced_service(ns, _service("Bad_Name")), 422, "Invalid", id="invalid-name"
        ),
        pytest.param(
            lambda v1, ns: [v1.create_namespaced_service(ns, _service("web")) for _ in range(2)],
            409,
            "AlreadyExists",
            id="already-exists",
        ),
    ],
)
def test_service_errors(
    core_v1: k8s.CoreV1Api, namespace: str, call: Callable[[k8s.CoreV1Api, str], Any], status: int, reason: str
) -> None:
    with pytest.raises(ApiException) as err:
        call(core_v1, namespace)
    assert err.value.status == status
    body = json.loads(err.value.body)
    assert (body["kind"], body["status"], body["reason"], body["code"]) == ("Status", "Failure", reason, status)


def test_stale_replace_is_a_conflict(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    stale = core_v1.create_namespaced_service(namespace, _service("web"))
    fresh = core_v1.read_namespaced_service("web", namespace)
    fresh.metadata.labels = {"writer": "first"}
    core_v1.replace_namespaced_service("web", namespace, fresh)

    stale.metadata.labels = {"writer": "second"}
    with pytest.raises(ApiException) as err:
        core_v1.replace_namespaced_service("web", namespace, stale)
    assert err.value.status == 409
    assert "the object has been modified; please apply your changes to the latest version" in err.value.body
    assert core_v1.read_namespaced_service("web", namespace).metadata.labels == {"writer": "first"}


# ---- Endpoints and EndpointSlices ----------------------------------------------------------------------------


def test_endpoints_crud(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    body = k8s.V1Endpoints(
        metadata=k8s.V1ObjectMeta(name="web", labels={"app": "web"}),
        subsets=[
            k8s.V1EndpointSubset(
                addresses=[k8s.V1EndpointAddress(ip="10.0.0.1")],
                ports=[k8s.CoreV1EndpointPort(name="http", port=8080, protocol="TCP")],
            )
        ],
    )
    created = core_v1.create_namespaced_endpoints(namespace, body)
    assert [a.ip for a in created.subsets[0].addresses] == ["10.0.0.1"]

    read = core_v1.read_namespaced_endpoints("web", namespace)
    read.subsets[0].addresses.append(k8s.V1EndpointAddress(ip="10.0.0.2"))
    read.subsets[0].not_ready_addresses = [k8s.V1EndpointAddress(ip="10.0.0.3")]
    replaced = core_v1.replace_namespaced_endpoints("web", namespace, read)
    assert [a.ip for a in replaced.subsets[0].addresses] == ["10.0.0.1", "10.0.0.2"]
    assert [a.ip for a in replaced.subsets[0].not_ready_addresses] == ["10.0.0.3"]

    patched = core_v1.patch_namespaced_endpoints("web", namespace, {"metadata": {"labels": {"synced": "yes"}}})
    assert patched.metadata.labels == {"app": "web", "synced": "yes"}
    assert _names(core_v1.list_namespaced_endpoints(namespace, label_selector="synced=yes").items) == ["web"]

    core_v1.delete_namespaced_endpoints("web", namespace)
    assert core_v1.list_namespaced_endpoints(namespace).items == []


def test_endpoints_replace_creates(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Endpoints allow create-on-update, as upstream (the endpoints controller relies on it)."""
    body = k8s.V1Endpoints(
        metadata=k8s.V1ObjectMeta(name="made-by-put"),
        subsets=[
            k8s.V1EndpointSubset(
                addresses=[k8s.V1EndpointAddress(ip="10.0.0.9")], ports=[k8s.CoreV1EndpointPort(port=80)]
            )
        ],
    )
    made = core_v1.replace_namespaced_endpoints("made-by-put", namespace, body)
    assert made.metadata.uid
    assert core_v1.read_namespaced_endpoints("made-by-put", namespace).subsets[0].addresses[0].ip == "10.0.0.9"


def test_endpoint_slices(discovery_v1: k8s.DiscoveryV1Api, namespace: str) -> None:
    def slice_for(service: str, suffix: str, ip: str) -> k8s.V1EndpointSlice:
        return k8s.V1EndpointSlice(
            metadata=k8s.V1ObjectMeta(name=f"{service}-{suffix}", labels={"kubernetes.io/service-name": service}),
            address_type="IPv4",
            endpoints=[
                k8s.V1Endpoint(
                    addresses=[ip], conditions=k8s.V1EndpointConditions(ready=True), node_name="node-a", zone="zone-a"
                )
            ],
            ports=[k8s.DiscoveryV1EndpointPort(name="http", port=8080, protocol="TCP")],
        )

    created = discovery_v1.create_namespaced_endpoint_slice(namespace, slice_for("web", "a1", "10.0.0.1"))
    assert created.address_type == "IPv4"
    assert created.endpoints[0].addresses == ["10.0.0.1"]
    assert created.endpoints[0].conditions.ready is True
    assert created.endpoints[0].zone == "zone-a"
    discovery_v1.create_namespaced_endpoint_slice(namespace, slice_for("web", "b2", "10.0.0.2"))
    discovery_v1.create_namespaced_endpoint_slice(namespace, slice_for("api", "c3", "10.0.0.3"))

    mine = discovery_v1.list_namespaced_endpoint_slice(namespace, label_selector="kubernetes.io/service-name=web")
    assert _names(mine.items) == ["web-a1", "web-b2"]
    assert sorted(e.addresses[0] for s in mine.items for e in s.endpoints) == ["10.0.0.1", "10.0.0.2"]
    everywhere = discovery_v1.list_endpoint_slice_for_all_namespaces(field_selector=f"metadata.namespace={namespace}")
    assert _names(everywhere.items) == ["api-c3", "web-a1", "web-b2"]

    with pytest.raises(ApiException) as err:
        discovery_v1.create_namespaced_endpoint_slice(
            namespace, k8s.V1EndpointSlice(metadata=k8s.V1ObjectMeta(name="bad"), address_type="IPv5", endpoints=[])
        )
    assert err.value.status == 422
    assert 'addressType: Unsupported value: "IPv5"' in json.loads(err.value.body)["message"]

    discovery_v1.delete_namespaced_endpoint_slice("web-a1", namespace)
    left = discovery_v1.list_namespaced_endpoint_slice(namespace)
    assert _names(left.items) == ["api-c3", "web-b2"]


# ---- watch ---------------------------------------------------------------------------------------------------


def _changes(core_v1: k8s.CoreV1Api, namespace: str, delay: float = 0.3) -> threading.Thread:
    """In the background: create `second`, change it, delete it."""

    def run() -> None:
        time.sleep(delay)
        core_v1.create_namespaced_service(namespace, _service("second"))
        core_v1.patch_namespaced_service("second", namespace, {"metadata": {"labels": {"changed": "yes"}}})
        core_v1.delete_namespaced_service("second", namespace)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _collect(
    stream: Iterator[dict[str, Any]], watcher: watch.Watch, last: tuple[str, str]
) -> list[tuple[str, str, Any]]:
    seen = []
    for event in stream:
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, obj))
        if (event["type"], obj.metadata.name) == last:
            watcher.stop()
    return seen


def test_watch_sees_added_modified_deleted(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(namespace, _service("first"))
    watcher = watch.Watch()
    stream = watcher.stream(core_v1.list_namespaced_service, namespace, timeout_seconds=10)
    changes = _changes(core_v1, namespace)
    seen = _collect(stream, watcher, ("DELETED", "second"))
    changes.join(10)
    assert [(kind, name) for kind, name, _ in seen] == [
        ("ADDED", "first"),
        ("ADDED", "second"),
        ("MODIFIED", "second"),
        ("DELETED", "second"),
    ]
    objects = [obj for _, _, obj in seen]
    assert all(isinstance(obj, k8s.V1Service) for obj in objects)
    assert objects[2].metadata.labels == {"changed": "yes"}
    versions = [int(obj.metadata.resource_version) for obj in objects[1:]]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_watch_resumes_from_resource_version(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    watcher = watch.Watch()
    stream = watcher.stream(core_v1.list_namespaced_service, namespace, timeout_seconds=10)
    changes = _changes(core_v1, namespace, delay=0.1)
    first_pass = _collect(stream, watcher, ("DELETED", "second"))
    changes.join(10)
    added = next(obj for kind, _, obj in first_pass if kind == "ADDED")

    # resuming after the ADDED event replays only what happened after it
    watcher = watch.Watch()
    stream = watcher.stream(
        core_v1.list_namespaced_service, namespace, resource_version=added.metadata.resource_version, timeout_seconds=10
    )
    resumed = _collect(stream, watcher, ("DELETED", "second"))
    assert [(kind, name) for kind, name, _ in resumed] == [("MODIFIED", "second"), ("DELETED", "second")]
    assert [obj.metadata.resource_version for _, _, obj in resumed] == [
        obj.metadata.resource_version for _, _, obj in first_pass[1:]
    ]


def test_watch_with_selectors(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    watcher = watch.Watch()
    stream = watcher.stream(core_v1.list_namespaced_service, namespace, label_selector="app=web", timeout_seconds=10)

    def run() -> None:
        time.sleep(0.2)
        core_v1.create_namespaced_service(namespace, _service("other", labels={"app": "other"}))
        core_v1.create_namespaced_service(namespace, _service("web", labels={"app": "web"}))
        core_v1.patch_namespaced_service("web", namespace, {"metadata": {"labels": {"app": "moved"}}})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    seen = _collect(stream, watcher, ("DELETED", "web"))
    thread.join(10)
    # leaving the selection is seen as DELETED, as upstream's watch cache reports it
    assert [(kind, name) for kind, name, _ in seen] == [("ADDED", "web"), ("DELETED", "web")]


def test_watch_ends_at_timeout(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_service(namespace, _service("only"))
    started = time.monotonic()
    events = list(watch.Watch().stream(core_v1.list_namespaced_service, namespace, timeout_seconds=1))
    assert 0.9 < time.monotonic() - started < 8
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "only")]
