"""The EndpointSlice controller against a real cluster (`tinykube up` runs it): vectors 30-34, packing, minimal
churn, dual-stack, placeholders, ownership and cleanup, restarts, and what `kubectl get endpointslices` shows.

There is no node agent yet: tests create Pods through the API and set their status through the status subresource,
as a kubelet would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster
from tinykube.api.resources import ResourceInfo
from tinykube.client.informer import SharedInformers
from tinykube.client.kubeconfig import Credentials, load_credentials
from tinykube.client.rest import RestClient
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.endpointslice import (
    EndpointSliceController,
    Expectations,
    desired_groups,
)

Object = dict[str, Any]
T = TypeVar("T")

MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SERVICE_NAME = "kubernetes.io/service-name"
CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS = "service.kubernetes.io/headless"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
HOLD = "tinykube.test/hold"
GENERATED = re.compile(r"^web-[bcdfghjklmnpqrstvwxz2456789]{5}$")
HTTP_CONTAINER = [{"name": "c", "image": "busybox", "ports": [{"name": "http", "containerPort": 8080}]}]


# ---- helpers ---------------------------------------------------------------------------------------------------


def service(name: str, *, selector: dict[str, str] | None, **spec: Any) -> Object:
    body: Object = {"metadata": {"name": name}, "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    if selector is not None:
        body["spec"]["selector"] = selector
    body["spec"].update(spec)
    return body


def create_service(api: httpx.Client, ns: str, body: Object) -> Object:
    response = api.post(f"/api/v1/namespaces/{ns}/services", json=body)
    assert response.status_code == 201, response.text
    result: Object = response.json()
    return result


def pod_body(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    containers: list[Object] | None = None,
    finalizers: list[str] | None = None,
    **spec: Any,
) -> Object:
    metadata: Object = {"name": name, "labels": {"app": "web"} if labels is None else labels}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {"metadata": metadata, "spec": {"containers": containers or HTTP_CONTAINER, **spec}}


def pod_status(ips: Iterable[str], *, ready: bool = True, phase: str = "Running", stamp: str | None = None) -> Object:
    ips = list(ips)
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    if stamp:
        condition["lastTransitionTime"] = stamp
    return {
        "status": {
            "phase": phase,
            "podIP": ips[0],
            "podIPs": [{"ip": ip} for ip in ips],
            "conditions": [condition],
        }
    }


def set_status(api: httpx.Client, ns: str, name: str, status: Object) -> None:
    response = api.patch(
        f"/api/v1/namespaces/{ns}/pods/{name}/status",
        content=httpx.Request("PATCH", "/", json=status).content,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text


def run_pod(api: httpx.Client, ns: str, body: Object, ips: Iterable[str] | str, **status: Any) -> None:
    response = api.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert response.status_code == 201, response.text
    set_status(api, ns, body["metadata"]["name"], pod_status([ips] if isinstance(ips, str) else ips, **status))


def run_pods(cluster: RunningCluster, ns: str, count: int, *, labels: dict[str, str] | None = None) -> None:
    """`count` ready pods `pod-<i>` at 10.244.x.y, created concurrently (it is setup, not the thing tested)."""

    async def one(client: httpx.AsyncClient, limit: asyncio.Semaphore, i: int) -> None:
        async with limit:
            name = f"pod-{i}"
            response = await client.post(f"/api/v1/namespaces/{ns}/pods", json=pod_body(name, labels=labels))
            assert response.status_code == 201, response.text
            response = await client.patch(
                f"/api/v1/namespaces/{ns}/pods/{name}/status",
                content=httpx.Request("PATCH", "/", json=pod_status([ip(i)])).content,
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert response.status_code == 200, response.text

    async def main() -> None:
        verify = ssl.create_default_context(cafile=str(cluster.ca_file))
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with httpx.AsyncClient(base_url=cluster.server, verify=verify, headers=headers, timeout=60) as client:
            limit = asyncio.Semaphore(16)
            await asyncio.gather(*(one(client, limit, i) for i in range(count)))

    asyncio.run(main())


def ip(i: int) -> str:
    return f"10.244.{i // 200}.{i % 200 + 2}"


def slices(api: httpx.Client, ns: str, svc: str, managed_by: str = CONTROLLER) -> list[Object]:
    response = api.get(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        params={"labelSelector": f"{SERVICE_NAME}={svc},{MANAGED_BY}={managed_by}"},
    )
    assert response.status_code == 200, response.text
    items: list[Object] = response.json()["items"]
    return items


def endpoints_of(items: list[Object]) -> dict[str, Object]:
    """Endpoints by pod name (each pod in at most one slice of a family)."""
    found: dict[str, Object] = {}
    for item in items:
        for endpoint in item.get("endpoints") or []:
            name = endpoint["targetRef"]["name"]
            assert name not in found, f"{name} is in two slices"
            found[name] = {**endpoint, "slice": item["metadata"]["name"], "ports": item.get("ports")}
    return found


def sizes(items: list[Object]) -> list[int]:
    return sorted((len(item.get("endpoints") or []) for item in items), reverse=True)


def settled(api: httpx.Client, ns: str, svc: str, check: Callable[[list[Object]], Any]) -> list[Object]:
    """The Service's managed slices, once `check` holds for them."""

    def probe() -> tuple[list[Object]] | None:
        items = slices(api, ns, svc)
        return (items,) if check(items) else None

    return eventually(probe, what=f"slices of {svc}")[0]


# ---- pure pieces ---------------------------------------------------------------------------------------------------


def test_expectations_hold_a_service_until_the_cache_shows_our_writes() -> None:
    clock = [100.0]
    expectations = Expectations(ttl=10.0, clock=lambda: clock[0])
    written = {"metadata": {"name": "web-abcde", "resourceVersion": "42"}}
    old = {"metadata": {"name": "web-abcde", "resourceVersion": "41"}}
    expectations.wrote("ns/web", written)
    expectations.deleted("ns/web", "web-gone1")
    gone = {"metadata": {"name": "web-gone1", "resourceVersion": "7"}}
    assert expectations.stale("ns/web", {"web-gone1": gone})  # the create is not in the cache yet
    assert expectations.stale("ns/web", {"web-abcde": old, "web-gone1": gone})
    assert expectations.stale("ns/web", {"web-abcde": written, "web-gone1": gone})  # the delete not seen yet
    assert not expectations.stale("ns/web", {"web-abcde": written})
    assert not expectations.stale("ns/other", {})

    expectations.wrote("ns/web", {"metadata": {"name": "web-fghij", "resourceVersion": "50"}})
    expectations.gone("ns/web", "web-fghij")  # someone deleted it before we saw it: nothing to wait for
    assert not expectations.stale("ns/web", {})
    expectations.wrote("ns/web", {"metadata": {"name": "web-klmno", "resourceVersion": "60"}})
    clock[0] += 11  # never seen, never seen deleted: after the TTL it no longer blocks
    assert not expectations.stale("ns/web", {})


def test_desired_groups_resolve_ports_per_pod_and_skip_ineligible_pods() -> None:
    svc = service("web", selector={"app": "web"}, ipFamilies=["IPv4", "IPv6"])
    svc["metadata"].update(namespace="ns", uid="s")

    def pod(name: str, ips: list[str], containers: list[Object], **status: Any) -> Object:
        body = pod_body(name, containers=containers, nodeName="n1")
        body["metadata"].update(namespace="ns", uid=f"uid-{name}")
        return {**body, **pod_status(ips, **status)}

    other = [{"name": "c", "image": "busybox", "ports": [{"name": "http", "containerPort": 9090}]}]
    udp = [{"name": "c", "image": "busybox", "ports": [{"name": "http", "containerPort": 8080, "protocol": "UDP"}]}]
    pods = [
        pod("a", ["10.0.0.1", "fd00::1"], HTTP_CONTAINER),
        pod("b", ["10.0.0.2"], other),
        pod("c", ["10.0.0.3"], udp),  # the port's protocol differs: not a match
        pod("d", ["10.0.0.4"], HTTP_CONTAINER, phase="Failed"),
    ]
    groups = desired_groups(svc, pods, lambda node: {"n1": "zone-1"}.get(node))
    shape = sorted(
        (g.address_type, [p["port"] for p in g.ports], [e["targetRef"]["name"] for e in g.endpoints]) for g in groups
    )
    assert shape == [("IPv4", [], ["c"]), ("IPv4", [8080], ["a"]), ("IPv4", [9090], ["b"]), ("IPv6", [8080], ["a"])]
    (a6,) = [g.endpoints[0] for g in groups if g.address_type == "IPv6"]
    assert a6 == {
        "addresses": ["fd00::1"],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "uid-a"},
        "nodeName": "n1",
        "zone": "zone-1",
    }


# ---- vectors 30-34 ------------------------------------------------------------------------------------------------


def test_vector_30_ports_conditions_and_a_separate_slice_for_a_pod_without_the_port(
    api: httpx.Client, namespace: str
) -> None:
    ns = namespace
    create_service(api, ns, service("web", selector={"app": "web"}))
    run_pod(api, ns, pod_body("a", nodeName="node-1"), "10.244.1.5")
    run_pod(api, ns, pod_body("b"), "10.244.1.6", ready=False)
    metrics = [{"name": "c", "image": "busybox", "ports": [{"name": "metrics", "containerPort": 9090}]}]
    run_pod(api, ns, pod_body("c", containers=metrics), "10.244.1.7")
    run_pod(api, ns, pod_body("d"), "10.244.1.8", phase="Succeeded")

    items = settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a", "b", "c"})
    assert len(items) == 2
    found = endpoints_of(items)
    a, b, c = found["a"], found["b"], found["c"]
    assert a["slice"] == b["slice"] != c["slice"]
    assert a["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert c["ports"] == []
    assert a["addresses"] == ["10.244.1.5"] and b["addresses"] == ["10.244.1.6"]
    assert a["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert b["conditions"] == {"ready": False, "serving": False, "terminating": False}
    assert a["nodeName"] == "node-1" and "nodeName" not in b
    pod_a = api.get(f"/api/v1/namespaces/{ns}/pods/a").json()
    assert a["targetRef"] == {"kind": "Pod", "namespace": ns, "name": "a", "uid": pod_a["metadata"]["uid"]}
    for item in items:
        assert item["addressType"] == "IPv4"

    # publishNotReadyAddresses: every endpoint is ready; serving still tells the truth
    response = api.patch(
        f"/api/v1/namespaces/{ns}/services/web",
        content=b'{"spec":{"publishNotReadyAddresses":true}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    items = settled(api, ns, "web", lambda items: endpoints_of(items).get("b", {}).get("conditions", {}).get("ready"))
    assert endpoints_of(items)["b"]["conditions"] == {"ready": True, "serving": False, "terminating": False}


def test_vector_31_a_terminating_pod_stays_with_terminating_true(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    create_service(api, ns, service("web", selector={"app": "web"}))
    run_pod(api, ns, pod_body("a"), "10.244.1.5")
    run_pod(api, ns, pod_body("held", finalizers=[HOLD]), "10.244.1.9")
    settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a", "held"})

    assert api.delete(f"/api/v1/namespaces/{ns}/pods/held").status_code == 200  # stays: it has a finalizer
    items = settled(api, ns, "web", lambda items: endpoints_of(items)["held"]["conditions"]["terminating"])
    assert endpoints_of(items)["held"]["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert endpoints_of(items)["a"]["conditions"] == {"ready": True, "serving": True, "terminating": False}

    response = api.patch(
        f"/api/v1/namespaces/{ns}/pods/held",
        content=b'{"metadata":{"finalizers":null}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a"})


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        pytest.param(250, [100, 100, 50], id="250-pods"),
        pytest.param(1001, [100] * 10 + [1], id="1001-pods"),
    ],
)
def test_vector_32_packing(
    cluster: RunningCluster, api: httpx.Client, namespace: str, count: int, expected: list[int]
) -> None:
    run_pods(cluster, namespace, count)  # all running before the Service exists: one sync sees them all
    create_service(api, namespace, service("web", selector={"app": "web"}))
    items = settled(api, namespace, "web", lambda items: sum(sizes(items)) == count)
    assert sizes(items) == expected
    assert len(endpoints_of(items)) == count
    assert all(GENERATED.match(item["metadata"]["name"]) for item in items)


def test_vector_33_a_selector_matching_nothing_gets_one_placeholder(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    svc = create_service(api, ns, service("web", selector={"app": "web"}))
    (placeholder,) = settled(api, ns, "web", lambda items: len(items) == 1)
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []
    assert placeholder["addressType"] == "IPv4"
    assert GENERATED.match(placeholder["metadata"]["name"])
    assert placeholder["metadata"]["labels"] == {SERVICE_NAME: "web", MANAGED_BY: CONTROLLER}
    assert placeholder["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "web",
            "uid": svc["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert TRIGGER in placeholder["metadata"]["annotations"]

    # the first pod goes into the placeholder (updated, not replaced) ...
    run_pod(api, ns, pod_body("a"), "10.244.1.5")
    (item,) = settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a"} and len(items) == 1)
    assert item["metadata"]["name"] == placeholder["metadata"]["name"]
    assert item["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    # ... and when the last one goes, the slice becomes the placeholder again
    assert api.delete(f"/api/v1/namespaces/{ns}/pods/a").status_code == 200
    (item,) = settled(api, ns, "web", lambda items: len(items) == 1 and not items[0]["endpoints"])
    assert item["metadata"]["name"] == placeholder["metadata"]["name"] and item["ports"] == []


def test_vector_34_headless_hostname_and_label(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    create_service(
        api, ns, service("db", selector={"app": "db"}, clusterIP="None", ports=[{"name": "pg", "port": 5432}])
    )
    run_pod(api, ns, pod_body("db-0", labels={"app": "db"}, hostname="db-0", subdomain="db"), "10.244.1.5")
    run_pod(api, ns, pod_body("other", labels={"app": "db"}, hostname="other", subdomain="elsewhere"), "10.244.2.6")
    items = settled(api, ns, "db", lambda items: set(endpoints_of(items)) == {"db-0", "other"})
    found = endpoints_of(items)
    assert found["db-0"]["hostname"] == "db-0"
    assert "hostname" not in found["other"]  # subdomain names another Service
    assert all(item["metadata"]["labels"][HEADLESS] == "" for item in items)
    assert found["db-0"]["ports"] == [{"name": "pg", "port": 5432, "protocol": "TCP"}]


def test_headless_without_ports_publishes_slices_without_ports(api: httpx.Client, namespace: str) -> None:
    body = service("db", selector={"app": "db"}, clusterIP="None")
    del body["spec"]["ports"]
    create_service(api, namespace, body)
    run_pod(api, namespace, pod_body("db-0", labels={"app": "db"}), "10.244.1.5")
    (item,) = settled(api, namespace, "db", lambda items: set(endpoints_of(items)) == {"db-0"})
    assert item["ports"] == [] and item["metadata"]["labels"][HEADLESS] == ""


# ---- churn ---------------------------------------------------------------------------------------------------


def test_a_readiness_flip_rewrites_exactly_one_slice(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    ns = namespace
    run_pods(cluster, ns, 250)
    create_service(api, ns, service("web", selector={"app": "web"}))
    items = settled(api, ns, "web", lambda items: sum(sizes(items)) == 250)
    before = {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}
    holder = endpoints_of(items)["pod-123"]["slice"]

    set_status(api, ns, "pod-123", pod_status([ip(123)], ready=False))
    settled(api, ns, "web", lambda items: not endpoints_of(items)["pod-123"]["conditions"]["ready"])
    # Flip it back: syncs of one Service run one after another, so once this one shows, the first is complete.
    set_status(api, ns, "pod-123", pod_status([ip(123)], ready=True))
    items = settled(api, ns, "web", lambda items: endpoints_of(items)["pod-123"]["conditions"]["ready"])

    after = {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}
    assert after.keys() == before.keys()
    assert [name for name in after if after[name] != before[name]] == [holder]
    assert endpoints_of(items)["pod-123"]["slice"] == holder


def test_a_rolling_replacement_writes_in_proportion_to_the_pods_replaced(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    ns = namespace
    run_pods(cluster, ns, 150)
    create_service(api, ns, service("web", selector={"app": "web"}))
    items = settled(api, ns, "web", lambda items: sum(sizes(items)) == 150)
    since = str(max(int(item["metadata"]["resourceVersion"]) for item in items))
    replaced = 10
    for i in range(replaced):
        assert api.delete(f"/api/v1/namespaces/{ns}/pods/pod-{i}").status_code == 200
        run_pod(api, ns, pod_body(f"new-{i}"), f"10.245.0.{i + 2}")
    new = {f"new-{i}" for i in range(replaced)}
    items = settled(api, ns, "web", lambda items: new <= set(endpoints_of(items)) and sum(sizes(items)) == 150)
    assert sizes(items) == [100, 50]
    # each replacement is a removal and an addition: at most one write each, never a repack of every slice
    writes = slice_writes(api, ns, since)
    assert 1 <= len(writes) <= 2 * replaced
    assert {kind for kind, _ in writes} == {"MODIFIED"}


def slice_writes(api: httpx.Client, ns: str, since: str) -> list[tuple[str, str]]:
    """Every write to the namespace's managed slices after `since`, replayed by a watch that ends after a second."""
    params = {
        "watch": "true",
        "resourceVersion": since,
        "labelSelector": f"{MANAGED_BY}={CONTROLLER}",
        "timeoutSeconds": "1",
    }
    writes: list[tuple[str, str]] = []
    with api.stream("GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", params=params) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line:
                event = json.loads(line)
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    writes.append((event["type"], event["object"]["metadata"]["name"]))
    return writes


# ---- dual-stack ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dual_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("dualstack") / "dual"
    running = start_cluster(data_dir, "--service-cluster-ip-range", "10.96.0.0/16,fd00:10::/112")
    try:
        yield running
    finally:
        stop_cluster(running)


def test_dual_stack_services_get_a_slice_set_per_family(dual_stack: RunningCluster) -> None:
    with dual_stack.http() as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": "dual"}}).status_code == 201
        create_service(api, "dual", service("web", selector={"app": "web"}, ipFamilyPolicy="RequireDualStack"))
        create_service(api, "dual", service("v6", selector={"app": "web"}, ipFamilies=["IPv6"]))
        run_pod(api, "dual", pod_body("a"), ["10.244.1.5", "fd00:10:244::5"])
        run_pod(api, "dual", pod_body("b"), ["10.244.1.6", "fd00:10:244:0:0:0:0:6"])
        run_pod(api, "dual", pod_body("v4-only"), "10.244.1.7")

        def by_family(items: list[Object]) -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for item in items:
                out.setdefault(item["addressType"], []).extend(a for e in item["endpoints"] for a in e["addresses"])
            return {family: sorted(addresses) for family, addresses in out.items()}

        expected = {
            "IPv4": ["10.244.1.5", "10.244.1.6", "10.244.1.7"],
            "IPv6": ["fd00:10:244::5", "fd00:10:244::6"],  # re-stringified; the IPv4-only pod is not in this family
        }
        items = settled(api, "dual", "web", lambda items: by_family(items) == expected)
        assert sorted(item["addressType"] for item in items) == ["IPv4", "IPv6"]
        items = settled(api, "dual", "v6", lambda items: by_family(items) == {"IPv6": expected["IPv6"]})
        assert [item["addressType"] for item in items] == ["IPv6"]
        # no endpoints in either family: a placeholder for each
        create_service(api, "dual", service("empty", selector={"app": "none"}, ipFamilyPolicy="RequireDualStack"))
        items = settled(api, "dual", "empty", lambda items: len(items) == 2)
        assert sorted((i["addressType"], i["endpoints"], i["ports"]) for i in items) == [
            ("IPv4", [], []),
            ("IPv6", [], []),
        ]


# ---- ownership, labels, lifecycle ---------------------------------------------------------------------------------


def test_labels_annotation_zone_and_cleanup_with_the_service(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    node = f"{ns}-node"
    response = api.post(
        "/api/v1/nodes", json={"metadata": {"name": node, "labels": {"topology.kubernetes.io/zone": "zone-a"}}}
    )
    assert response.status_code == 201, response.text
    late = f"{ns}-late"
    try:
        body = service("web", selector={"app": "web"})
        body["metadata"]["labels"] = {"team": "shop", SERVICE_NAME: "spoofed", MANAGED_BY: "someone"}
        svc = create_service(api, ns, body)
        run_pod(api, ns, pod_body("a", nodeName=node), "10.244.1.5", stamp="2024-05-01T10:00:00Z")
        run_pod(api, ns, pod_body("b", nodeName=late), "10.244.1.6", stamp="2024-05-01T10:00:01.5Z")
        items = settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a", "b"})
        (item,) = items
        assert item["metadata"]["labels"] == {"team": "shop", SERVICE_NAME: "web", MANAGED_BY: CONTROLLER}
        assert item["metadata"]["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]
        # the trigger time is the Ready transition of the pod whose change was published last
        assert item["metadata"]["annotations"][TRIGGER] in ("2024-05-01T10:00:00Z", "2024-05-01T10:00:01.5Z")
        found = endpoints_of(items)
        assert found["a"]["zone"] == "zone-a" and found["a"]["nodeName"] == node
        assert "zone" not in found["b"]  # its Node does not exist (yet)

        response = api.post(
            "/api/v1/nodes", json={"metadata": {"name": late, "labels": {"topology.kubernetes.io/zone": "zone-b"}}}
        )
        assert response.status_code == 201, response.text
        settled(api, ns, "web", lambda items: endpoints_of(items)["b"].get("zone") == "zone-b")

        assert api.delete(f"/api/v1/namespaces/{ns}/services/web").status_code == 200
        settled(api, ns, "web", lambda items: not items)
    finally:
        api.delete(f"/api/v1/nodes/{node}")
        api.delete(f"/api/v1/nodes/{late}")


def test_a_service_created_again_under_the_same_name_gets_its_own_slices(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    run_pod(api, ns, pod_body("a"), "10.244.1.5")
    create_service(api, ns, service("web", selector={"app": "web"}))
    settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a"})
    assert api.delete(f"/api/v1/namespaces/{ns}/services/web").status_code == 200
    again = create_service(api, ns, service("web", selector={"app": "web"}))
    uid = again["metadata"]["uid"]
    (item,) = settled(
        api, ns, "web", lambda items: len(items) == 1 and items[0]["metadata"]["ownerReferences"][0]["uid"] == uid
    )
    assert set(endpoints_of([item])) == {"a"}


def test_a_slice_deleted_by_someone_else_comes_back(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    run_pod(api, ns, pod_body("a"), "10.244.1.5")
    create_service(api, ns, service("web", selector={"app": "web"}))
    (item,) = settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a"})
    name = item["metadata"]["name"]
    assert api.delete(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/{name}").status_code == 200
    (item,) = settled(api, ns, "web", lambda items: len(items) == 1 and items[0]["metadata"]["name"] != name)
    assert set(endpoints_of([item])) == {"a"}


def test_selectorless_and_external_name_services_get_no_managed_slices(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    create_service(api, ns, service("ext", selector=None))
    create_service(
        api, ns, {"metadata": {"name": "cname"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}
    )
    create_service(
        api, ns, service("web", selector={"app": "web"})
    )  # a marker: once it has its slice, the others had their sync
    settled(api, ns, "web", lambda items: len(items) == 1)
    assert slices(api, ns, "ext") == [] and slices(api, ns, "cname") == []


def test_a_service_being_deleted_gets_no_new_slices(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    body = service("web", selector={"app": "web"})
    body["metadata"]["finalizers"] = [HOLD]
    create_service(api, ns, body)
    run_pod(api, ns, pod_body("a"), "10.244.1.5")
    (item,) = settled(api, ns, "web", lambda items: set(endpoints_of(items)) == {"a"})
    assert api.delete(f"/api/v1/namespaces/{ns}/services/web").status_code == 200
    # a new port group would need a new slice, which is not made; a readiness change is still published in place
    metrics = [{"name": "c", "image": "busybox", "ports": [{"name": "metrics", "containerPort": 9090}]}]
    run_pod(api, ns, pod_body("no-port", containers=metrics), "10.244.1.6")
    set_status(api, ns, "a", pod_status(["10.244.1.5"], ready=False))
    (item,) = settled(api, ns, "web", lambda items: not endpoints_of(items)["a"]["conditions"]["ready"])
    assert set(endpoints_of([item])) == {"a"}
    response = api.patch(
        f"/api/v1/namespaces/{ns}/services/web",
        content=b'{"metadata":{"finalizers":null}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    settled(api, ns, "web", lambda items: not items)


# ---- restarts --------------------------------------------------------------------------------------------------


class CountingClient(RestClient):
    """The real client, remembering the slice writes it sent."""

    def __init__(self, creds: Credentials) -> None:
        super().__init__(creds)
        self.writes: list[tuple[str, str, str]] = []

    def _note(self, verb: str, resource: ResourceInfo, namespace: str, name: str) -> None:
        if resource.plural == "endpointslices":
            self.writes.append((verb, namespace, name))

    async def create(self, resource: ResourceInfo, namespace: str, obj: Object) -> Object:
        self._note("create", resource, namespace, obj["metadata"].get("generateName", ""))
        return await super().create(resource, namespace, obj)

    async def update(self, resource: ResourceInfo, namespace: str, obj: Object, subresource: str = "") -> Object:
        self._note("update", resource, namespace, obj["metadata"]["name"])
        return await super().update(resource, namespace, obj, subresource)

    async def delete(self, resource: ResourceInfo, namespace: str, name: str) -> Any:
        self._note("delete", resource, namespace, name)
        return await super().delete(resource, namespace, name)


@contextlib.asynccontextmanager
async def controller_instance(cluster: RunningCluster) -> AsyncIterator[tuple[EndpointSliceController, CountingClient]]:
    client = CountingClient(load_credentials(cluster.kubeconfig))
    informers = SharedInformers(client)
    controller = EndpointSliceController(ControllerContext(client, informers))
    task = asyncio.create_task(controller.run())
    try:
        yield controller, client
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await informers.stop()
        await client.close()


async def until_idle(controller: EndpointSliceController, timeout: float = 60.0) -> None:
    """Until every informer synced and the queue stayed empty for a while."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 10:
        assert time.monotonic() < deadline, "controller never became idle"
        quiet = quiet + 1 if controller.idle() else 0
        await asyncio.sleep(0.02)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_second_instance_writes_nothing_when_slices_are_correct(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    ns = namespace
    await asyncio.to_thread(run_pods, cluster, ns, 250)
    create_service(api, ns, service("web", selector={"app": "web"}))
    create_service(api, ns, service("empty", selector={"app": "nothing"}))
    create_service(api, ns, service("db", selector={"app": "web"}, clusterIP="None"))
    await asyncio.to_thread(settled, api, ns, "web", lambda items: sum(sizes(items)) == 250)
    await asyncio.to_thread(settled, api, ns, "db", lambda items: sum(sizes(items)) == 250)
    await asyncio.to_thread(settled, api, ns, "empty", lambda items: len(items) == 1)
    async with controller_instance(cluster) as (controller, client):
        await until_idle(controller)
        assert [w for w in client.writes if w[1] == ns] == []


@pytest.fixture(scope="module")
def no_slice_controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("noslices") / "noslices"
    running = start_cluster(data_dir, "--controllers", "*,-endpointslice,-scheduler")
    try:
        yield running
    finally:
        stop_cluster(running)


@pytest.mark.anyio
async def test_a_restart_converges_with_only_the_writes_needed(no_slice_controller: RunningCluster) -> None:
    cluster = no_slice_controller
    with cluster.http() as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": "restart"}}).status_code == 201
        await asyncio.to_thread(run_pods, cluster, "restart", 250)
        create_service(api, "restart", service("web", selector={"app": "web"}))
        async with controller_instance(cluster) as (controller, client):
            await until_idle(controller)
            # kube-system's kube-dns (selecting its pods) gets a slice of its own: count this namespace's writes
            assert sorted(verb for verb, ns, *_ in client.writes if ns == "restart") == ["create"] * 3
        items = slices(api, "restart", "web")
        assert sizes(items) == [100, 100, 50]
        holder = endpoints_of(items)["pod-7"]["slice"]

        async with controller_instance(cluster) as (controller, client):  # nothing changed meanwhile
            await until_idle(controller)
            assert client.writes == []

        set_status(api, "restart", "pod-7", pod_status([ip(7)], ready=False))  # while no controller runs
        async with controller_instance(cluster) as (controller, client):
            await until_idle(controller)
            assert client.writes == [("update", "restart", holder)]
        assert not endpoints_of(slices(api, "restart", "web"))["pod-7"]["conditions"]["ready"]


# ---- kubectl -----------------------------------------------------------------------------------------------------


def test_kubectl_get_endpointslices_looks_upstream(cluster: RunningCluster, api: httpx.Client, namespace: str) -> None:
    ns = namespace
    create_service(api, ns, service("web", selector={"app": "web"}))
    create_service(api, ns, service("empty", selector={"app": "nothing"}))
    for i in range(5):
        run_pod(api, ns, pod_body(f"p{i}"), f"10.244.1.{i + 5}")
    settled(api, ns, "web", lambda items: len(endpoints_of(items)) == 5)
    settled(api, ns, "empty", lambda items: len(items) == 1)
    lines = cluster.kubectl("get", "endpointslices", "-n", ns).stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    rows = {
        re.split(r"\s{2,}", line.strip())[0].rsplit("-", 1)[0]: re.split(r"\s{2,}", line.strip()) for line in lines[1:]
    }
    assert rows["web"][1:4] == ["IPv4", "8080", "10.244.1.5,10.244.1.6,10.244.1.7 + 2 more..."]
    assert rows["empty"][1:4] == ["IPv4", "<unset>", "<unset>"]
    wide = cluster.kubectl("get", "endpointslices", "-n", ns, "-l", f"{SERVICE_NAME}=web", "-o", "name").stdout
    assert re.fullmatch(r"endpointslice\.discovery\.k8s\.io/web-[a-z0-9]{5}\n", wide)
