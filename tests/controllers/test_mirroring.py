"""EndpointSlice mirroring: what an Endpoints object mirrors to (pure), and the controller against a real cluster
(vector 35, skip-mirror, selector and deletion, labels and annotations, caps and their Events)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import pytest

from tests.conftest import eventually
from tests.controllers.test_endpointslice import slices
from tinykube.controllers.endpointslicemirroring import mirror_groups, mirror_template, should_mirror
from tinykube.controllers.slicepacking import port_key

Object = dict[str, Any]
T = TypeVar("T")

MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SERVICE_NAME = "kubernetes.io/service-name"
MIRRORING = "endpointslicemirroring-controller.k8s.io"
SKIP = "endpointslice.kubernetes.io/skip-mirror"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PG = [{"port": 5432}]


def endpoints(name: str = "ext", *subsets: Object, labels: dict[str, str] | None = None, **annotations: str) -> Object:
    meta: Object = {"name": name, "namespace": "ns", "uid": "ep-uid", "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta, "subsets": list(subsets)}


def subset(*ips: str, not_ready: tuple[str, ...] = (), ports: list[Object] | None = None) -> Object:
    return {
        "addresses": [{"ip": ip} for ip in ips],
        "notReadyAddresses": [{"ip": ip} for ip in not_ready],
        "ports": PG if ports is None else ports,
    }


# ---- pure: what is mirrored ------------------------------------------------------------------------------------


def test_ready_and_not_ready_addresses_become_ready_true_and_false() -> None:
    mirror = mirror_groups(endpoints("ext", subset("10.1.2.3", not_ready=("10.1.2.4",))))
    (group,) = mirror.groups
    assert group.address_type == "IPv4"
    assert group.ports == [{"name": "", "port": 5432, "protocol": "TCP"}]
    assert group.endpoints == [
        {"addresses": ["10.1.2.3"], "conditions": {"ready": True}},
        {"addresses": ["10.1.2.4"], "conditions": {"ready": False}},
    ]
    assert (mirror.invalid, mirror.skipped) == (0, 0)


def test_address_details_are_carried_over() -> None:
    address = {
        "ip": "10.1.2.3",
        "hostname": "db-0",
        "nodeName": "node-1",
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": "db-0", "uid": "u"},
    }
    (group,) = mirror_groups(endpoints("ext", {"addresses": [address], "ports": PG})).groups
    assert group.endpoints == [
        {
            "addresses": ["10.1.2.3"],
            "conditions": {"ready": True},
            "hostname": "db-0",
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": "db-0", "uid": "u"},
            "nodeName": "node-1",
        }
    ]


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        pytest.param([subset("10.0.0.1", "fd00::1")], [("IPv4", 1), ("IPv6", 1)], id="families-split"),
        pytest.param(
            [subset("10.0.0.1"), subset("10.0.0.2", ports=[{"port": 80, "name": "http"}])],
            [("IPv4", 1), ("IPv4", 1)],
            id="subsets-with-other-ports",
        ),
        pytest.param([subset("10.0.0.1"), subset("10.0.0.2")], [("IPv4", 2)], id="same-ports-merge"),
        pytest.param([subset(ports=[])], [], id="no-addresses-no-slice"),
    ],
)
def test_one_group_per_ports_and_family(subsets: list[Object], expected: list[tuple[str, int]]) -> None:
    groups = mirror_groups(endpoints("ext", *subsets)).groups
    assert sorted((g.address_type, len(g.endpoints)) for g in groups) == expected
    assert len({g.key for g in groups}) == len(groups)


def test_ips_are_restringified_and_invalid_ones_counted() -> None:
    mirror = mirror_groups(endpoints("ext", subset("fd00:0:0::0:1", "not-an-ip", "010.1.2.3", "10.1.2.3")))
    assert [e["addresses"] for g in mirror.groups for e in g.endpoints] == [["fd00::1"], ["10.1.2.3"]]
    assert mirror.invalid == 2


def test_at_most_max_addresses_per_subset_ready_first() -> None:
    big = subset(*(f"10.0.{i // 250}.{i % 250}" for i in range(6)), not_ready=("10.9.0.1", "10.9.0.2"))
    mirror = mirror_groups(endpoints("ext", big, subset("10.8.0.1", ports=[{"port": 1}])), max_per_subset=5)
    by_ports = {port_key(g.ports): g.endpoints for g in mirror.groups}
    assert len(by_ports[port_key(PG)]) == 5 and all(e["conditions"]["ready"] for e in by_ports[port_key(PG)])
    assert len(by_ports[port_key([{"port": 1}])]) == 1  # the cap is per subset
    assert mirror.skipped == 3


def test_template_labels_annotations_and_owner() -> None:
    ep = endpoints(
        "ext",
        labels={"team": "db", MANAGED_BY: "someone", SERVICE_NAME: "other"},
        **{"note": "kept", TRIGGER: "2024-01-01T00:00:00Z", LAST_APPLIED: "{}"},
    )
    template = mirror_template(ep)
    assert dict(template.labels) == {"team": "db", SERVICE_NAME: "ext", MANAGED_BY: MIRRORING}
    assert template.annotations == {"note": "kept"}
    assert template.generate_name == "ext-"
    assert template.owner == {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "name": "ext",
        "uid": "ep-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }


@pytest.mark.parametrize(
    ("svc_spec", "labels", "annotations", "mirrored"),
    [
        pytest.param({"ports": PG}, {}, {}, True, id="selectorless"),
        pytest.param({"selector": {}, "ports": PG}, {}, {}, False, id="empty-selector-is-a-selector"),
        pytest.param({"ports": PG}, {SKIP: "true"}, {}, False, id="skip-mirror"),
        pytest.param({"ports": PG}, {SKIP: "false"}, {}, True, id="skip-mirror-false"),
        pytest.param({"ports": PG}, {}, {"control-plane.alpha.kubernetes.io/leader": "x"}, False, id="leader-election"),
    ],
)
def test_should_mirror(svc_spec: Object, labels: dict[str, str], annotations: dict[str, str], mirrored: bool) -> None:
    svc = {"metadata": {"name": "ext", "namespace": "ns"}, "spec": svc_spec}
    assert should_mirror(svc, endpoints("ext", labels=labels, **annotations)) is mirrored


def test_no_mirroring_without_service_or_endpoints_or_while_the_service_is_deleted() -> None:
    svc: Object = {"metadata": {"name": "ext", "namespace": "ns"}, "spec": {"ports": PG}}
    assert not should_mirror(None, endpoints("ext"))
    assert not should_mirror(svc, None)
    deleting = {**svc, "metadata": {**svc["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
    assert not should_mirror(deleting, endpoints("ext"))


# ---- against the cluster ---------------------------------------------------------------------------------------


def mirrored(api: httpx.Client, ns: str, name: str, managed_by: str = MIRRORING) -> list[Object]:
    return slices(api, ns, name, managed_by)


def settled(api: httpx.Client, ns: str, name: str, check: Callable[[list[Object]], Any]) -> list[Object]:
    def probe() -> tuple[list[Object]] | None:
        items = mirrored(api, ns, name)
        return (items,) if check(items) else None

    return eventually(probe, what=f"mirrored slices of {name}")[0]


def post(api: httpx.Client, path: str, body: Object) -> Object:
    response = api.post(path, json=body)
    assert response.status_code == 201, response.text
    result: Object = response.json()
    return result


def merge_patch(api: httpx.Client, path: str, patch: bytes) -> None:
    response = api.patch(path, content=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.text


def selectorless(api: httpx.Client, ns: str, name: str = "ext") -> Object:
    return post(
        api, f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": name}, "spec": {"ports": [{"port": 5432}]}}
    )


def user_endpoints(api: httpx.Client, ns: str, body: Object) -> Object:
    body = {key: value for key, value in body.items() if key not in ("apiVersion", "kind")}
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k in ("name", "labels", "annotations")}
    return post(api, f"/api/v1/namespaces/{ns}/endpoints", body)


def test_vector_35_mirrored_then_skip_mirror_deletes(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    selectorless(api, ns)
    ep = user_endpoints(api, ns, endpoints("ext", subset("10.1.2.3")))
    (item,) = settled(api, ns, "ext", lambda items: len(items) == 1)
    assert item["metadata"]["labels"] == {SERVICE_NAME: "ext", MANAGED_BY: MIRRORING}
    assert item["metadata"]["name"].startswith("ext-") and len(item["metadata"]["name"]) == len("ext-") + 5
    assert item["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "name": "ext",
            "uid": ep["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert item["addressType"] == "IPv4"
    assert item["endpoints"] == [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}]
    assert item["ports"] == [{"name": "", "port": 5432, "protocol": "TCP"}]
    assert mirrored(api, ns, "ext", managed_by="endpointslice-controller.k8s.io") == []

    merge_patch(
        api, f"/api/v1/namespaces/{ns}/endpoints/ext", f'{{"metadata":{{"labels":{{"{SKIP}":"true"}}}}}}'.encode()
    )
    settled(api, ns, "ext", lambda items: not items)
    merge_patch(
        api, f"/api/v1/namespaces/{ns}/endpoints/ext", f'{{"metadata":{{"labels":{{"{SKIP}":null}}}}}}'.encode()
    )
    settled(api, ns, "ext", lambda items: len(items) == 1)


def test_changes_are_mirrored_in_place_with_labels_and_annotations(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    selectorless(api, ns)
    body = endpoints("ext", subset("10.1.2.3"), labels={"team": "db"}, note="hello", **{LAST_APPLIED: "{}"})
    user_endpoints(api, ns, body)
    (first,) = settled(api, ns, "ext", lambda items: len(items) == 1)
    assert first["metadata"]["labels"]["team"] == "db"
    assert first["metadata"]["annotations"] == {"note": "hello"}

    patch = json.dumps({"subsets": [subset("10.1.2.3", not_ready=("10.1.2.4",))]}).encode()
    merge_patch(api, f"/api/v1/namespaces/{ns}/endpoints/ext", patch)
    (item,) = settled(api, ns, "ext", lambda items: len(items) == 1 and len(items[0]["endpoints"]) == 2)
    assert item["metadata"]["name"] == first["metadata"]["name"]
    assert sorted((e["addresses"][0], e["conditions"]["ready"]) for e in item["endpoints"]) == [
        ("10.1.2.3", True),
        ("10.1.2.4", False),
    ]
    merge_patch(api, f"/api/v1/namespaces/{ns}/endpoints/ext", b'{"metadata":{"annotations":{"note":"bye"}}}')
    settled(api, ns, "ext", lambda items: items and items[0]["metadata"]["annotations"] == {"note": "bye"})


def test_subsets_and_families_get_their_own_slices(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    selectorless(api, ns)
    http = [{"name": "http", "port": 80}]
    user_endpoints(api, ns, endpoints("ext", subset("10.1.2.3", "fd00::3"), subset("10.1.2.4", ports=http)))
    items = settled(api, ns, "ext", lambda items: len(items) == 3)
    shapes = sorted(
        (i["addressType"], i["ports"][0]["port"], [e["addresses"][0] for e in i["endpoints"]]) for i in items
    )
    assert shapes == [("IPv4", 80, ["10.1.2.4"]), ("IPv4", 5432, ["10.1.2.3"]), ("IPv6", 5432, ["fd00::3"])]


def test_a_selector_or_deletion_ends_mirroring(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    selectorless(api, ns)
    user_endpoints(api, ns, endpoints("ext", subset("10.1.2.3")))
    settled(api, ns, "ext", lambda items: len(items) == 1)
    merge_patch(api, f"/api/v1/namespaces/{ns}/services/ext", b'{"spec":{"selector":{"app":"db"}}}')
    settled(api, ns, "ext", lambda items: not items)

    selectorless(api, ns, "gone")
    user_endpoints(api, ns, endpoints("gone", subset("10.1.2.5")))
    settled(api, ns, "gone", lambda items: len(items) == 1)
    assert api.delete(f"/api/v1/namespaces/{ns}/services/gone").status_code == 200
    settled(api, ns, "gone", lambda items: not items)

    user_endpoints(api, ns, endpoints("late", subset("10.1.2.6")))  # no Service yet: nothing to mirror for
    selectorless(api, ns, "late")
    settled(api, ns, "late", lambda items: len(items) == 1)
    assert api.delete(f"/api/v1/namespaces/{ns}/endpoints/late").status_code == 200
    settled(api, ns, "late", lambda items: not items)


def test_over_the_cap_and_invalid_addresses_are_reported(api: httpx.Client, namespace: str) -> None:
    ns = namespace
    selectorless(api, ns)
    ips = [f"10.1.{i // 250}.{i % 250 + 1}" for i in range(1003)]
    user_endpoints(api, ns, endpoints("ext", subset(*ips, "not-an-ip")))
    (item,) = settled(api, ns, "ext", lambda items: len(items) == 1)
    assert len(item["endpoints"]) == 1000

    def events() -> dict[str, str] | None:
        listed = api.get(f"/api/v1/namespaces/{ns}/events").json()["items"]
        found = {e["reason"]: e["message"] for e in listed if e["involvedObject"]["name"] == "ext"}
        return found if {"TooManyAddressesToMirror", "InvalidIPAddress"} <= found.keys() else None

    found = eventually(events, what="events")
    assert found["TooManyAddressesToMirror"] == (
        "A max of 1000 addresses can be mirrored to EndpointSlices per Endpoints subset. 3 addresses were skipped"
    )
    assert found["InvalidIPAddress"] == "Skipped 1 invalid IP addresses when mirroring to EndpointSlices"
