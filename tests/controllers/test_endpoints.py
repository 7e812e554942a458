"""The Endpoints controller (reference §5.2, vectors 30-34): pure table tests of subset building, truncation and
trigger times, then the cluster's own controller observed through the API, with pods whose status the tests set
through the `status` subresource (no node agent yet), and a second in-process controller that must write nothing
when the Endpoints are already right."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.conftest import RecordingClient, RunningCluster
from tinykube.client.informer import SharedInformers
from tinykube.client.kubeconfig import load_credentials
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.endpoints import (
    OVER_CAPACITY,
    EndpointsController,
    PodEntry,
    build_endpoints,
    repack,
    truncate,
    up_to_date,
)
from tinykube.controllers.triggers import TRIGGER_TIME, TriggerTimes, rfc3339nano

Object = dict[str, Any]
HTTP = {"name": "http", "port": 80, "targetPort": "http"}
MERGE = {"Content-Type": "application/merge-patch+json"}
Shape = set[tuple[frozenset[tuple[str, int, str]], tuple[str, ...], tuple[str, ...]]]


# ---- pure parts ------------------------------------------------------------------------------------------------


def address(ip: str, uid: str | None = None) -> Object:
    return {"ip": ip, "nodeName": "", "targetRef": {"kind": "Pod", "namespace": "ns", "name": ip, "uid": uid or ip}}


def entry(ip: str, *ports: tuple[str, int], ready: bool = True) -> PodEntry:
    return PodEntry(address(ip), ready, tuple((name, number, "TCP", "") for name, number in ports))


def ips(subset: Object, field: str = "addresses") -> list[str]:
    return [a["ip"] for a in subset.get(field) or []]


def port_names(subset: Object) -> list[str]:
    return [p.get("name", "") for p in subset.get("ports") or []]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        pytest.param(
            [entry("10.0.0.9", ("http", 8080)), entry("10.0.0.10", ("http", 8080), ready=False)],
            [(["10.0.0.9"], ["10.0.0.10"], ["http"])],
            id="ready-and-not-ready-share-a-subset",
        ),
        pytest.param(
            [entry("10.0.0.9", ("http", 8080)), entry("10.0.0.10", ("http", 8080)), entry("10.0.0.2", ("http", 8080))],
            [(["10.0.0.10", "10.0.0.2", "10.0.0.9"], [], ["http"])],
            id="addresses-sorted-as-strings",
        ),
        pytest.param(
            [entry("10.0.0.1", ("http", 8080)), entry("10.0.0.2", ("http", 9090))],
            [(["10.0.0.1"], [], ["http"]), (["10.0.0.2"], [], ["http"])],
            id="named-port-resolving-differently",
        ),
        pytest.param(
            [entry("10.0.0.1", ("http", 8080), ("metrics", 9100)), entry("10.0.0.2", ("http", 8080))],
            [(["10.0.0.1"], [], ["metrics"]), (["10.0.0.1", "10.0.0.2"], [], ["http"])],
            id="ports-grouped-by-address-set",
        ),
        pytest.param(
            [entry("10.0.0.1", ("http", 8080), ("grpc", 9000)), entry("10.0.0.2", ("http", 8080), ("grpc", 9000))],
            [(["10.0.0.1", "10.0.0.2"], [], ["grpc", "http"])],
            id="multi-port-one-subset",
        ),
        pytest.param(
            [entry("10.0.0.1"), entry("10.0.0.2", ready=False)], [(["10.0.0.1"], ["10.0.0.2"], [])], id="no-ports"
        ),
    ],
)
def test_repack(entries: list[PodEntry], expected: list[tuple[list[str], list[str], list[str]]]) -> None:
    subsets = repack(entries)
    got = sorted((ips(s), ips(s, "notReadyAddresses"), port_names(s)) for s in subsets)
    assert got == sorted(expected)
    assert all(set(s) <= {"addresses", "notReadyAddresses", "ports"} and all(s.values()) for s in subsets)


def test_repack_keeps_two_pods_sharing_an_ip_apart() -> None:
    first, second = PodEntry(address("10.0.0.1", "uid-b"), True, ()), PodEntry(address("10.0.0.1", "uid-a"), True, ())
    [subset] = repack([first, second])
    assert [a["targetRef"]["uid"] for a in subset["addresses"]] == ["uid-a", "uid-b"]


def many(prefix: str, count: int) -> list[Object]:
    return [address(f"{prefix}.{i}") for i in range(count)]


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        pytest.param([{"addresses": many("10.1", 1000)}], [(1000, 0)], id="at-capacity-untouched"),
        pytest.param(
            [{"addresses": many("10.1", 600), "notReadyAddresses": many("10.9", 5)}, {"addresses": many("10.2", 500)}],
            [(546, 0), (454, 0)],  # ceil(600/1100*1000) = 546, then what is left
            id="too-many-ready-keeps-ready-only",
        ),
        pytest.param(
            [
                {"addresses": many("10.1", 900), "notReadyAddresses": many("10.8", 60)},
                {"notReadyAddresses": many("10.9", 90)},
            ],
            [(900, 40), (0, 60)],  # 100 places left for 150 not-ready addresses, shared 40/60
            id="not-ready-share-the-rest",
        ),
        pytest.param(
            [{"addresses": many("10.1", 1001)}, {"notReadyAddresses": many("10.9", 3)}],
            [(1000, 0)],
            id="subset-left-without-addresses-dropped",
        ),
    ],
)
def test_truncate(subsets: list[Object], expected: list[tuple[int, int]]) -> None:
    kept, truncated = truncate(subsets)
    assert [(len(s.get("addresses") or []), len(s.get("notReadyAddresses") or [])) for s in kept] == expected
    assert truncated == (sum(r + n for r, n in expected) < sum(len(a) for s in subsets for a in s.values()))
    if truncated:
        assert kept[0]["addresses"] == subsets[0]["addresses"][: expected[0][0]]  # the first ones, in order


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        pytest.param(datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC), "2024-05-06T07:08:09Z", id="whole-seconds"),
        pytest.param(datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=UTC), "2024-05-06T07:08:09.12Z", id="trimmed"),
        pytest.param(
            datetime.fromisoformat("2024-05-06T09:08:09.000001+02:00"), "2024-05-06T07:08:09.000001Z", id="utc"
        ),
    ],
)
def test_rfc3339nano(moment: datetime, text: str) -> None:
    assert rfc3339nano(moment) == text


def ready_pod(name: str, since: str) -> Object:
    condition = {"type": "Ready", "status": "True", "lastTransitionTime": since}
    return {"metadata": {"name": name}, "status": {"conditions": [condition]}}


def test_trigger_times() -> None:
    times = TriggerTimes()
    svc = {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}}
    a, b = ready_pod("a", "2024-01-01T00:01:00Z"), ready_pod("b", "2024-01-01T00:02:00Z")
    assert times.observe("ns/web", svc, [a]) == datetime(2024, 1, 1, tzinfo=UTC)  # first sight: Service creation
    assert times.observe("ns/web", svc, [a]) is None  # nothing new
    b2 = ready_pod("b", "2024-01-01T00:03:00Z")
    a2 = ready_pod("a", "2024-01-01T00:04:00Z")
    assert times.observe("ns/web", svc, [a, b]) == datetime(2024, 1, 1, 0, 2, tzinfo=UTC)  # b is new
    assert times.observe("ns/web", svc, [a2, b2]) == datetime(2024, 1, 1, 0, 3, tzinfo=UTC)  # earliest change
    times.forget("ns/web")
    assert times.observe("ns/web", svc, [a2, b2]) == datetime(2024, 1, 1, tzinfo=UTC)


def scrambled(subset: Object) -> Object:
    """The same subset as another writer might store it: ports reversed, targetRefs with a resourceVersion."""
    versioned = [{**a, "targetRef": {**a["targetRef"], "resourceVersion": "7"}} for a in subset.get("addresses", [])]
    return {**subset, "ports": subset["ports"][::-1], **({"addresses": versioned} if versioned else {})}


def test_up_to_date_ignores_order_resource_version_and_trigger_time() -> None:
    svc: Object = {
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"clusterIP": "10.0.0.5"},
    }
    subsets = repack([entry("10.0.0.1", ("http", 80), ("grpc", 90)), entry("10.0.0.2", ("http", 80), ready=False)])
    desired = build_endpoints(svc, None, subsets, truncated=False, trigger=datetime.now(UTC))
    stored = build_endpoints(svc, None, subsets, truncated=False, trigger=None)
    stored["subsets"] = [scrambled(subset) for subset in reversed(stored["subsets"])]
    assert up_to_date(stored, desired)
    assert not up_to_date(stored, build_endpoints(svc, None, subsets[:1], truncated=False, trigger=None))
    assert not up_to_date(stored, build_endpoints(svc, None, subsets, truncated=True, trigger=None))
    relabelled = {**svc, "metadata": {**svc["metadata"], "labels": {"app": "other"}}}
    assert not up_to_date(stored, build_endpoints(relabelled, None, subsets, truncated=False, trigger=None))


# ---- against the cluster: helpers ------------------------------------------------------------------------------


def created(response: httpx.Response) -> Object:
    assert response.status_code in (200, 201), response.text
    body: Object = response.json()
    return body


def make_service(api: httpx.Client, namespace: str, name: str, **spec: Any) -> Object:
    labels = spec.pop("labels", {"app": name})
    body = {"metadata": {"name": name, "labels": labels}, "spec": {"ports": [HTTP], **spec}}
    return created(api.post(f"/api/v1/namespaces/{namespace}/services", json=body))


def make_pod(
    api: httpx.Client,
    namespace: str,
    name: str,
    *,
    labels: dict[str, str],
    ip: str | None = None,
    ready: bool = True,
    ports: dict[str, int] | None = None,
    phase: str = "Running",
    finalizers: list[str] | None = None,
    **spec: Any,
) -> Object:
    ports = {"http": 8080} if ports is None else ports
    container = {"name": "c", "image": "busybox", "ports": [{"name": n, "containerPort": p} for n, p in ports.items()]}
    meta = {"name": name, "labels": labels, "finalizers": finalizers or []}
    pod = created(
        api.post(
            f"/api/v1/namespaces/{namespace}/pods", json={"metadata": meta, "spec": {"containers": [container], **spec}}
        )
    )
    if ip is None:
        return pod
    return set_status(api, namespace, name, ip=ip, ready=ready, phase=phase)


def set_status(
    api: httpx.Client, namespace: str, name: str, *, ip: str, ready: bool, phase: str = "Running", since: str = ""
) -> Object:
    """What a kubelet would report: phase, IPs and the Ready condition."""
    condition = {"type": "Ready", "status": str(ready), "lastTransitionTime": since or now()}
    status = {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}], "conditions": [condition]}
    return patch(api, f"/api/v1/namespaces/{namespace}/pods/{name}/status", {"status": status})


def patch(api: httpx.Client, path: str, body: Object) -> Object:
    return created(api.patch(path, json=body, headers=MERGE))


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get_endpoints(api: httpx.Client, namespace: str, name: str) -> Object | None:
    response = api.get(f"/api/v1/namespaces/{namespace}/endpoints/{name}")
    if response.status_code == 404:
        return None
    return created(response)


def wait_endpoints(
    api: httpx.Client, namespace: str, name: str, check: Callable[[Object | None], bool], timeout: float = 30
) -> Object | None:
    """Poll until `check(endpoints)` holds (None: no such object); fail with the last state seen."""
    deadline = time.monotonic() + timeout
    while True:
        endpoints = get_endpoints(api, namespace, name)
        if check(endpoints):
            return endpoints
        if time.monotonic() > deadline:
            raise AssertionError(f"endpoints {namespace}/{name} never matched; last seen: {endpoints}")
        time.sleep(0.05)


def shape(endpoints: Object | None) -> Shape:
    """Subsets order-free: (ports, ready IPs in order, not-ready IPs in order) per subset."""
    return {
        (
            frozenset((p.get("name", ""), p["port"], p["protocol"]) for p in s.get("ports") or []),
            tuple(a["ip"] for a in s.get("addresses") or []),
            tuple(a["ip"] for a in s.get("notReadyAddresses") or []),
        )
        for s in (endpoints or {}).get("subsets") or []
    }


def wait_shape(api: httpx.Client, namespace: str, name: str, expected: Shape) -> Object:
    endpoints = wait_endpoints(api, namespace, name, lambda ep: ep is not None and shape(ep) == expected)
    assert endpoints is not None
    return endpoints


def http_port(number: int, name: str = "http") -> frozenset[tuple[str, int, str]]:
    return frozenset({(name, number, "TCP")})


NO_PORTS: frozenset[tuple[str, int, str]] = frozenset()


# ---- vectors 30-34 ---------------------------------------------------------------------------------------------


def test_vector_30_ready_not_ready_missing_port_and_terminal_pods(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    web = {"app": "web"}
    a = make_pod(api, namespace, "a", labels=web, ip="10.244.1.5", nodeName="node-1")
    make_pod(api, namespace, "b", labels=web, ip="10.244.1.6", ready=False)
    make_pod(api, namespace, "c", labels=web, ip="10.244.1.7", ports={"metrics": 9100})
    make_pod(api, namespace, "d", labels=web, ip="10.244.1.8", phase="Succeeded")

    endpoints = wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ("10.244.1.6",))})
    [subset] = endpoints["subsets"]
    assert subset["addresses"] == [
        {
            "ip": "10.244.1.5",
            "nodeName": "node-1",
            "targetRef": {"kind": "Pod", "namespace": namespace, "name": "a", "uid": a["metadata"]["uid"]},
        }
    ]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert endpoints["metadata"]["labels"] == {"app": "web"}

    patch(api, f"/api/v1/namespaces/{namespace}/services/web", {"spec": {"publishNotReadyAddresses": True}})
    wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5", "10.244.1.6"), ())})


def test_vector_31_terminating_pod_left_out_unless_publishing_not_ready(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    pod_path = f"/api/v1/namespaces/{namespace}/pods/going"
    make_pod(api, namespace, "going", labels={"app": "web"}, ip="10.244.1.5", finalizers=["tinykube.test/hold"])
    make_pod(api, namespace, "staying", labels={"app": "web"}, ip="10.244.1.9")
    wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5", "10.244.1.9"), ())})
    try:
        assert api.delete(pod_path).status_code == 200
        assert api.get(pod_path).json()["metadata"]["deletionTimestamp"]
        wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.9",), ())})

        patch(api, f"/api/v1/namespaces/{namespace}/services/web", {"spec": {"publishNotReadyAddresses": True}})
        wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5", "10.244.1.9"), ())})
    finally:
        patch(api, pod_path, {"metadata": {"finalizers": None}})
    wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.9",), ())})


def pod_ip(i: int) -> str:
    return f"10.244.{i // 200}.{i % 200 + 1}"


def make_pods_concurrently(cluster: RunningCluster, namespace: str, count: int) -> None:
    local = threading.local()
    clients: list[httpx.Client] = []

    def make(i: int) -> None:
        if not hasattr(local, "api"):
            local.api = cluster.http()
            clients.append(local.api)
        make_pod(local.api, namespace, f"p{i:04d}", labels={"app": "big"}, ip=pod_ip(i))

    try:
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(make, range(count)))
    finally:
        for client in clients:
            client.close()


def test_vector_32_truncated_at_1000_addresses(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    make_pods_concurrently(cluster, namespace, 1001)
    make_service(api, namespace, "big", selector={"app": "big"})  # after the pods: one sync, not a thousand

    def counts(ep: Object | None) -> tuple[int, int, str | None]:
        subsets = (ep or {}).get("subsets") or []
        ready = sum(len(s.get("addresses") or []) for s in subsets)
        not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
        return ready, not_ready, ((ep or {}).get("metadata", {}).get("annotations") or {}).get(OVER_CAPACITY)

    endpoints = wait_endpoints(api, namespace, "big", lambda ep: counts(ep) == (1000, 0, "truncated"))
    assert endpoints is not None
    [subset] = endpoints["subsets"]
    kept = [a["ip"] for a in subset["addresses"]]
    assert kept == sorted(pod_ip(i) for i in range(1001))[:1000]  # sorted by IP string; the last one is cut

    for i in range(6):
        set_status(api, namespace, f"p{i:04d}", ip=pod_ip(i), ready=False)
    wait_endpoints(api, namespace, "big", lambda ep: counts(ep) == (995, 5, "truncated"))

    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/p0000").status_code == 200
    wait_endpoints(api, namespace, "big", lambda ep: counts(ep) == (995, 5, None))
    assert asyncio.run(second_controller_writes(cluster, namespace)) == []


def test_vector_33_no_matching_pods_gives_endpoints_without_subsets(api: httpx.Client, namespace: str) -> None:
    svc = make_service(api, namespace, "web", selector={"app": "web"}, labels={"team": "blue"})
    endpoints = wait_endpoints(api, namespace, "web", lambda ep: ep is not None)
    assert endpoints is not None
    assert "subsets" not in endpoints
    assert endpoints["metadata"]["labels"] == {"team": "blue"}
    assert endpoints["metadata"]["annotations"][TRIGGER_TIME] == svc["metadata"]["creationTimestamp"]

    make_pod(api, namespace, "a", labels={"app": "web"})
    set_status(api, namespace, "a", ip="10.244.1.5", ready=True, since="2031-02-03T04:05:06Z")
    endpoints = wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ())})
    assert endpoints["metadata"]["annotations"][TRIGGER_TIME] == "2031-02-03T04:05:06Z"  # the pod's Ready change


def test_vector_34_headless_service_hostname_and_label(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "db", selector={"app": "db"}, clusterIP="None", ports=[])
    make_pod(api, namespace, "db-0", labels={"app": "db"}, ip="10.244.1.5", hostname="db-0", subdomain="db")
    make_pod(api, namespace, "db-x", labels={"app": "db"}, ip="10.244.1.6", hostname="db-x", subdomain="other")

    endpoints = wait_shape(api, namespace, "db", {(NO_PORTS, ("10.244.1.5", "10.244.1.6"), ())})
    assert [a.get("hostname") for a in endpoints["subsets"][0]["addresses"]] == ["db-0", None]
    assert endpoints["metadata"]["labels"] == {"app": "db", "service.kubernetes.io/headless": ""}


# ---- following changes -----------------------------------------------------------------------------------------


def test_readiness_flip_moves_the_address(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    make_pod(api, namespace, "a", labels={"app": "web"}, ip="10.244.1.5")
    wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ())})

    set_status(api, namespace, "a", ip="10.244.1.5", ready=False, since="2031-01-01T00:00:00Z")
    endpoints = wait_shape(api, namespace, "web", {(http_port(8080), (), ("10.244.1.5",))})
    assert endpoints["metadata"]["annotations"][TRIGGER_TIME] == "2031-01-01T00:00:00Z"
    set_status(api, namespace, "a", ip="10.244.1.5", ready=True)
    wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ())})

    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/a").status_code == 200
    wait_shape(api, namespace, "web", set())


def test_label_change_moves_the_pod_between_services(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "blue", selector={"color": "blue"})
    make_service(api, namespace, "green", selector={"color": "green"})
    make_pod(api, namespace, "a", labels={"color": "blue"}, ip="10.244.1.5")
    wait_shape(api, namespace, "blue", {(http_port(8080), ("10.244.1.5",), ())})
    wait_shape(api, namespace, "green", set())

    patch(api, f"/api/v1/namespaces/{namespace}/pods/a", {"metadata": {"labels": {"color": "green"}}})
    wait_shape(api, namespace, "green", {(http_port(8080), ("10.244.1.5",), ())})
    wait_shape(api, namespace, "blue", set())


def test_named_ports_resolved_per_pod(api: httpx.Client, namespace: str) -> None:
    metrics = {"name": "metrics", "port": 9100, "targetPort": "metrics"}
    make_service(api, namespace, "web", selector={"app": "web"}, ports=[HTTP, metrics])
    make_pod(api, namespace, "old", labels={"app": "web"}, ip="10.244.1.5", ports={"http": 8080, "metrics": 9100})
    make_pod(api, namespace, "new", labels={"app": "web"}, ip="10.244.1.6", ports={"http": 9090, "metrics": 9100})
    make_pod(api, namespace, "bare", labels={"app": "web"}, ip="10.244.1.7", ports={"metrics": 9100})
    wait_shape(
        api,
        namespace,
        "web",
        {
            (http_port(8080), ("10.244.1.5",), ()),
            (http_port(9090), ("10.244.1.6",), ()),
            (http_port(9100, "metrics"), ("10.244.1.5", "10.244.1.6", "10.244.1.7"), ()),
        },
    )


def test_service_deleted_deletes_its_endpoints(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    wait_endpoints(api, namespace, "web", lambda ep: ep is not None)
    assert api.delete(f"/api/v1/namespaces/{namespace}/services/web").status_code == 200
    wait_endpoints(api, namespace, "web", lambda ep: ep is None)


def test_deleted_endpoints_are_written_again(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    make_pod(api, namespace, "a", labels={"app": "web"}, ip="10.244.1.5")
    first = wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ())})
    assert api.delete(f"/api/v1/namespaces/{namespace}/endpoints/web").status_code == 200
    again = wait_shape(api, namespace, "web", {(http_port(8080), ("10.244.1.5",), ())})
    assert again["metadata"]["uid"] != first["metadata"]["uid"]


def user_endpoints(api: httpx.Client, namespace: str, name: str) -> Object:
    body = {
        "metadata": {"name": name, "labels": {"owner": "me"}},
        "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 5432, "protocol": "TCP"}]}],
    }
    return created(api.post(f"/api/v1/namespaces/{namespace}/endpoints", json=body))


def test_selectorless_service_endpoints_are_left_to_the_user(api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "ext", ports=[{"port": 5432}], labels={"app": "ext"})
    mine = user_endpoints(api, namespace, "ext")
    make_pod(api, namespace, "a", labels={"app": "ext"}, ip="10.244.1.5")
    patch(api, f"/api/v1/namespaces/{namespace}/services/ext", {"metadata": {"labels": {"changed": "yes"}}})
    # A later Service's Endpoints appearing shows the controller has been through the events above.
    make_service(api, namespace, "marker", selector={"app": "ext"})
    wait_shape(api, namespace, "marker", {(http_port(8080), ("10.244.1.5",), ())})
    assert get_endpoints(api, namespace, "ext") == mine


# ---- kubectl -------------------------------------------------------------------------------------------------


def test_kubectl_get_endpoints(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    make_service(api, namespace, "web", selector={"app": "web"})
    make_service(api, namespace, "empty", selector={"app": "nothing"})
    for last in (1, 2, 3, 10):
        make_pod(api, namespace, f"p{last}", labels={"app": "web"}, ip=f"10.244.1.{last}")
    wait_endpoints(api, namespace, "web", lambda ep: len(shape(ep)) == 1 and len(next(iter(shape(ep)))[1]) == 4)
    wait_endpoints(api, namespace, "empty", lambda ep: ep is not None)

    lines = cluster.kubectl("get", "endpoints", "-n", namespace).stdout.splitlines()
    assert re.fullmatch(r"NAME\s+ENDPOINTS\s+AGE", lines[0])
    assert re.fullmatch(r"empty\s+<none>\s+\d+s", lines[1])
    # At most three ready ip:port, sorted as strings (10.244.1.10 before 10.244.1.2), then a count.
    assert re.fullmatch(
        r"web\s+10\.244\.1\.1:8080,10\.244\.1\.10:8080,10\.244\.1\.2:8080 \+ 1 more\.\.\.\s+\d+s", lines[2]
    )


# ---- a second controller: startup, orphans, no churn -----------------------------------------------------------


async def second_controller_writes(cluster: RunningCluster, namespace: str) -> list[tuple[str, str]]:
    """Start another Endpoints controller on the namespace (as a restarted one would), let it finish its initial
    pass over every Service and Endpoints object, and return the writes it made."""
    client = RecordingClient(load_credentials(cluster.kubeconfig))
    informers = SharedInformers(client)
    controller = EndpointsController(ControllerContext(client, informers), namespace=namespace)
    task = asyncio.create_task(controller.run())
    try:
        await asyncio.wait_for(controller.started.wait(), 30)
        controller.queue.shutdown()  # workers finish the keys queued at startup, then return
        await asyncio.wait_for(task, 30)
    finally:
        task.cancel()
        await informers.stop()
        await client.close()
    return client.writes


def resource_versions(api: httpx.Client, namespace: str) -> dict[str, str]:
    listing = created(api.get(f"/api/v1/namespaces/{namespace}/endpoints"))
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in listing["items"]}


def test_second_controller_rewrites_nothing_that_is_right(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    make_service(
        api, namespace, "web", selector={"app": "web"}, ports=[HTTP, {"name": "m", "port": 1, "targetPort": "m"}]
    )
    make_pod(api, namespace, "a", labels={"app": "web"}, ip="10.244.1.5", ports={"http": 8080, "m": 9100})
    make_pod(api, namespace, "b", labels={"app": "web"}, ip="10.244.1.6", ready=False)
    make_service(api, namespace, "db", selector={"app": "db"}, clusterIP="None", ports=[])
    make_pod(api, namespace, "db-0", labels={"app": "db"}, ip="10.244.1.7", hostname="db-0", subdomain="db")
    make_service(api, namespace, "empty", selector={"app": "nothing"})
    make_service(api, namespace, "ext", ports=[{"port": 5432}])
    user_endpoints(api, namespace, "ext")
    make_service(api, namespace, "xname", type="ExternalName", externalName="example.com", selector={"app": "web"})
    wait_shape(
        api,
        namespace,
        "web",
        {(http_port(8080), ("10.244.1.5",), ("10.244.1.6",)), (http_port(9100, "m"), ("10.244.1.5",), ())},
    )
    wait_shape(api, namespace, "db", {(NO_PORTS, ("10.244.1.7",), ())})
    wait_endpoints(api, namespace, "empty", lambda ep: ep is not None)
    before = resource_versions(api, namespace)
    assert sorted(before) == ["db", "empty", "ext", "web"]  # none for the ExternalName Service

    assert asyncio.run(second_controller_writes(cluster, namespace)) == []
    assert resource_versions(api, namespace) == before


def test_orphaned_endpoints_deleted_at_startup(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    user_endpoints(api, namespace, "orphan")
    user_endpoints(api, namespace, "leader")
    patch(
        api,
        f"/api/v1/namespaces/{namespace}/endpoints/leader",
        {"metadata": {"annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}},
    )
    assert get_endpoints(api, namespace, "orphan") is not None  # the running controller only cleans up at startup

    writes = asyncio.run(second_controller_writes(cluster, namespace))
    assert writes == [("DELETE", f"/api/v1/namespaces/{namespace}/endpoints/orphan")]
    assert get_endpoints(api, namespace, "orphan") is None
    assert get_endpoints(api, namespace, "leader") is not None  # leader-election records are not Services' own
