"""The slice planner, pure: packing, minimal churn, placeholders, recycling and mirroring, against a small faithful
model of slice storage (names generated on create, resourceVersions checked on update)."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from typing import Any

import pytest

from tinykube.controllers.slicepacking import (
    Group,
    Plan,
    SliceTemplate,
    endpoint_key,
    plan_mirror,
    plan_service,
    port_key,
    same_endpoint,
)

Object = dict[str, Any]

UID = "0b7a5c1e-svc"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
HTTP = [{"name": "http", "port": 8080, "protocol": "TCP"}]
LABELS = {
    "app": "web",
    "kubernetes.io/service-name": "web",
    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
}


def template(
    *, uid: str = UID, labels: dict[str, str] | None = None, stamp: str | None = "2024-05-01T10:00:00Z"
) -> SliceTemplate:
    return SliceTemplate(
        namespace="ns",
        generate_name="web-",
        labels=LABELS if labels is None else labels,
        owner={"apiVersion": "v1", "kind": "Service", "name": "web", "uid": uid, "controller": True},
        stamp={TRIGGER: stamp},
    )


def ep(i: int, *, ready: bool = True, family: str = "IPv4") -> Object:
    address = f"10.244.{i // 250}.{i % 250 + 1}" if family == "IPv4" else f"fd00::{i + 1:x}"
    return {
        "addresses": [address],
        "conditions": {"ready": ready, "serving": ready, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": f"pod-{i}", "uid": f"uid-{i}"},
        "nodeName": "node-1",
    }


def eps(indices: Iterable[int], **kwargs: Any) -> list[Object]:
    return [ep(i, **kwargs) for i in indices]


class Storage:
    """Slices as the apiserver keeps them: a create gets `generateName` + a suffix and a resourceVersion; an update
    must name an existing slice at its current resourceVersion; a delete must name an existing slice."""

    def __init__(self) -> None:
        self.items: dict[str, Object] = {}
        self.revision = 0
        self.writes = 0

    def slices(self) -> list[Object]:
        return [copy.deepcopy(s) for s in self.items.values()]

    def apply(self, plan: Plan) -> None:
        for obj in plan.create:
            assert "name" not in obj["metadata"] and obj["metadata"]["generateName"]
            self._put(obj, f"{obj['metadata']['generateName']}{len(self.items) + self.writes:05d}")
        for obj in plan.update:
            name = obj["metadata"]["name"]
            assert obj["metadata"]["resourceVersion"] == self.items[name]["metadata"]["resourceVersion"]
            assert obj["addressType"] == self.items[name]["addressType"], "addressType is immutable"
            self._put(obj, name)
        for obj in plan.delete:
            del self.items[obj["metadata"]["name"]]
            self.writes += 1

    def _put(self, obj: Object, name: str) -> None:
        self.revision += 1
        self.writes += 1
        stored = copy.deepcopy(obj)
        stored["metadata"].pop("generateName", None)
        stored["metadata"].update(name=name, resourceVersion=str(self.revision))
        self.items[name] = stored

    def sizes(self) -> list[int]:
        return sorted((len(s["endpoints"]) for s in self.items.values()), reverse=True)

    def holding(self, endpoint: Object) -> str:
        (name,) = [
            n for n, s in self.items.items() if any(endpoint_key(e) == endpoint_key(endpoint) for e in s["endpoints"])
        ]
        return name


def plan(
    storage: Storage,
    groups: list[Group],
    *,
    families: list[str] | None = None,
    max_endpoints: int = 100,
    tmpl: SliceTemplate | None = None,
) -> Plan:
    return plan_service(
        storage.slices(),
        groups,
        tmpl or template(),
        address_types=families or ["IPv4"],
        max_endpoints=max_endpoints,
    )


def converge(storage: Storage, groups: list[Group], **kwargs: Any) -> Plan:
    """Plan and apply; then a second plan must find nothing left to do."""
    first = plan(storage, groups, **kwargs)
    storage.apply(first)
    assert len(plan(storage, groups, **kwargs)) == 0, "a second sync of the same state must write nothing"
    return first


def web(endpoints: list[Object], ports: list[Object] | None = None, family: str = "IPv4") -> list[Group]:
    return [Group(family, HTTP if ports is None else ports, endpoints)]


# ---- packing -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "max_endpoints", "sizes"),
    [
        pytest.param(250, 100, [100, 100, 50], id="250-to-100-100-50"),
        pytest.param(1001, 100, [100] * 10 + [1], id="1001-to-11-slices"),
        pytest.param(100, 100, [100], id="exactly-full"),
        pytest.param(25, 10, [10, 10, 5], id="max-flag-10"),
        pytest.param(1, 100, [1], id="one"),
    ],
)
def test_fresh_endpoints_are_packed_into_full_slices(count: int, max_endpoints: int, sizes: list[int]) -> None:
    storage = Storage()
    first = converge(storage, web(eps(range(count))), max_endpoints=max_endpoints)
    assert (len(first.create), len(first.update), len(first.delete)) == (len(sizes), 0, 0)
    assert storage.sizes() == sizes
    created = first.create[0]
    assert created["metadata"]["generateName"] == "web-"
    assert created["metadata"]["labels"] == LABELS
    assert created["metadata"]["ownerReferences"][0]["uid"] == UID
    assert created["metadata"]["annotations"] == {TRIGGER: "2024-05-01T10:00:00Z"}
    assert created["addressType"] == "IPv4" and created["ports"] == HTTP


def test_correct_slices_are_not_written_whatever_their_order() -> None:
    storage = Storage()
    converge(storage, web(eps(range(250))))
    shuffled = Storage()
    rng = random.Random(4)
    for slice_ in storage.slices():
        rng.shuffle(slice_["endpoints"])
        slice_["metadata"]["annotations"] = {TRIGGER: "2020-01-01T00:00:00Z"}  # trigger time is never compared
        for endpoint in slice_["endpoints"]:
            endpoint["targetRef"]["resourceVersion"] = "77"  # ignored, as upstream
        shuffled.items[slice_["metadata"]["name"]] = slice_
    desired = eps(range(250))
    rng.shuffle(desired)
    assert len(plan(shuffled, web(desired), tmpl=template(stamp="2030-01-01T00:00:00Z"))) == 0


def test_a_readiness_flip_rewrites_exactly_one_slice() -> None:
    storage = Storage()
    converge(storage, web(eps(range(250))))
    before = {n: s["metadata"]["resourceVersion"] for n, s in storage.items.items()}
    flipped = [ep(i, ready=i != 123) for i in range(250)]
    step = converge(storage, web(flipped))
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)
    holder = storage.holding(ep(123))
    assert step.update[0]["metadata"]["name"] == holder
    changed = [n for n, s in storage.items.items() if s["metadata"]["resourceVersion"] != before[n]]
    assert changed == [holder]
    (endpoint,) = [e for e in storage.items[holder]["endpoints"] if endpoint_key(e) == endpoint_key(ep(123))]
    assert endpoint["conditions"] == {"ready": False, "serving": False, "terminating": False}
    assert storage.sizes() == [100, 100, 50]


def test_a_rolling_replacement_of_p_pods_costs_p_writes() -> None:
    storage = Storage()
    current = list(range(250))
    converge(storage, web(eps(current)))
    writes = storage.writes
    replaced = 60
    for step in range(replaced):  # one pod at a time: the old one goes, its replacement comes
        current.remove(step * 4)
        current.append(1000 + step)
        converge(storage, web(eps(current)))
    assert storage.writes - writes == replaced
    assert storage.sizes() == [100, 100, 50]


def test_a_batch_replacement_writes_only_the_slices_it_touches() -> None:
    storage = Storage()
    converge(storage, web(eps(range(250))))
    gone = set(range(0, 30))  # all in the first chunk of 100
    holders = {storage.holding(ep(i)) for i in gone}
    step = converge(storage, web(eps([i for i in range(250) if i not in gone] + list(range(2000, 2030)))))
    assert len(step) == len(holders) == 1 and not step.create
    assert storage.sizes() == [100, 100, 50]


def test_new_endpoints_fill_a_slice_being_written_anyway() -> None:
    storage = Storage()
    converge(storage, web(eps(range(160))))  # 100 + 60
    small = storage.holding(ep(150))
    desired = [ep(i, ready=i != 150) for i in range(160)] + eps(range(500, 530))
    step = converge(storage, web(desired))
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)
    assert step.update[0]["metadata"]["name"] == small
    assert storage.sizes() == [100, 90]


@pytest.mark.parametrize(
    ("added", "writes", "sizes"),
    [
        pytest.param(20, (0, 1, 0), [100, 80], id="fits-in-the-fullest-slice-with-room"),
        pytest.param(40, (0, 1, 0), [100, 100], id="exactly-fills-it"),
        pytest.param(50, (1, 0, 0), [100, 60, 50], id="does-not-fit-new-slice"),
        pytest.param(130, (1, 1, 0), [100, 100, 90], id="full-new-slice-then-rest-fills-old"),
    ],
)
def test_new_endpoints_go_to_an_untouched_slice_that_can_take_them(
    added: int, writes: tuple[int, int, int], sizes: list[int]
) -> None:
    storage = Storage()
    converge(storage, web(eps(range(160))))
    step = converge(storage, web(eps([*range(160), *range(500, 500 + added)])))
    assert (len(step.create), len(step.update), len(step.delete)) == writes
    assert storage.sizes() == sizes


def test_an_emptied_slice_is_deleted_and_the_others_untouched() -> None:
    storage = Storage()
    converge(storage, web(eps(range(250))))
    last = storage.holding(ep(249))
    emptied = {i for i in range(250) if storage.holding(ep(i)) == last}
    step = converge(storage, web(eps(i for i in range(250) if i not in emptied)))
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 0, 1)
    assert step.delete[0]["metadata"]["name"] == last
    assert storage.sizes() == [100, 100]


def test_an_endpoint_listed_twice_is_kept_once() -> None:
    storage = Storage()
    converge(storage, web(eps(range(10))))
    (name,) = storage.items
    storage.items["web-dup"] = {**copy.deepcopy(storage.items[name]), "endpoints": eps([3])}
    storage.items["web-dup"]["metadata"]["name"] = "web-dup"
    converge(storage, web(eps(range(10))))
    assert storage.sizes() == [10]


# ---- port groups and families ------------------------------------------------------------------------------------


def test_pods_resolving_ports_differently_get_their_own_slices() -> None:
    storage = Storage()
    other = [{"name": "http", "port": 9090, "protocol": "TCP"}]
    groups = [Group("IPv4", HTTP, eps(range(3))), Group("IPv4", other, eps([7])), Group("IPv4", [], eps([8]))]
    converge(storage, groups)
    by_ports = {port_key(s["ports"]): len(s["endpoints"]) for s in storage.items.values()}
    assert by_ports == {port_key(HTTP): 3, port_key(other): 1, (): 1}


def test_port_order_and_defaults_do_not_matter() -> None:
    two = [{"name": "a", "port": 1, "protocol": "TCP"}, {"name": "b", "port": 2, "protocol": "UDP"}]
    assert port_key(two) == port_key([{"name": "b", "port": 2, "protocol": "UDP"}, {"name": "a", "port": 1}])
    assert port_key([{"port": 80}]) == port_key([{"name": "", "port": 80, "protocol": "TCP"}])
    assert port_key([{"port": 80, "appProtocol": "http"}]) != port_key([{"port": 80}])


def test_each_family_gets_its_own_slices() -> None:
    storage = Storage()
    groups = [Group("IPv4", HTTP, eps(range(120))), Group("IPv6", HTTP, eps(range(120), family="IPv6"))]
    converge(storage, groups, families=["IPv4", "IPv6"])
    sizes = sorted((s["addressType"], len(s["endpoints"])) for s in storage.items.values())
    assert sizes == [("IPv4", 20), ("IPv4", 100), ("IPv6", 20), ("IPv6", 100)]


def test_slices_of_a_family_the_service_dropped_are_deleted() -> None:
    storage = Storage()
    converge(
        storage,
        [Group("IPv4", HTTP, eps(range(3))), Group("IPv6", HTTP, eps(range(3), family="IPv6"))],
        families=["IPv4", "IPv6"],
    )
    step = converge(storage, web(eps(range(3))), families=["IPv4"])
    assert [s["addressType"] for s in step.delete] == ["IPv6"] and not step.create and not step.update


def test_a_changed_port_reuses_the_slice_instead_of_create_and_delete() -> None:
    storage = Storage()
    converge(storage, web(eps(range(10))))
    (name,) = storage.items
    step = converge(storage, web(eps(range(10)), ports=[{"name": "http", "port": 9999, "protocol": "TCP"}]))
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)
    assert list(storage.items) == [name] and storage.items[name]["ports"][0]["port"] == 9999


# ---- placeholder ---------------------------------------------------------------------------------------------


def test_no_endpoints_keeps_one_placeholder_slice() -> None:
    storage = Storage()
    step = converge(storage, [])
    (placeholder,) = step.create
    assert placeholder["endpoints"] == [] and placeholder["ports"] == [] and placeholder["addressType"] == "IPv4"
    assert placeholder["metadata"]["labels"] == LABELS


def test_each_family_without_endpoints_gets_a_placeholder() -> None:
    storage = Storage()
    step = converge(storage, [], families=["IPv6", "IPv4"])
    assert sorted(s["addressType"] for s in step.create) == ["IPv4", "IPv6"]
    step = converge(storage, web(eps(range(3))), families=["IPv6", "IPv4"])
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)
    assert sorted((s["addressType"], len(s["endpoints"])) for s in storage.items.values()) == [("IPv4", 3), ("IPv6", 0)]


def test_the_placeholder_becomes_the_first_slice_and_comes_back_when_all_go() -> None:
    storage = Storage()
    converge(storage, [])
    (placeholder,) = storage.items
    step = converge(storage, web(eps(range(250))))
    assert (len(step.create), len(step.update), len(step.delete)) == (2, 1, 0)
    assert placeholder in storage.items and storage.sizes() == [100, 100, 50]
    step = converge(storage, [])
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 2)
    (only,) = storage.items.values()
    assert only["endpoints"] == [] and only["ports"] == []


def test_pods_without_ports_share_the_placeholders_port_list_but_not_its_emptiness() -> None:
    storage = Storage()
    converge(storage, [])
    step = converge(storage, [Group("IPv4", [], eps([1]))])
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)
    assert storage.sizes() == [1]


# ---- ownership, labels, annotations ----------------------------------------------------------------------------


def test_slices_of_another_owner_are_deleted_not_reused() -> None:
    storage = Storage()
    converge(storage, web(eps(range(5))), tmpl=template(uid="old-service-uid"))
    (old,) = storage.items
    step = converge(storage, web(eps(range(5))))
    assert (len(step.create), len(step.update), len(step.delete)) == (1, 0, 1)
    assert step.delete[0]["metadata"]["name"] == old
    (new,) = storage.items.values()
    assert new["metadata"]["ownerReferences"][0]["uid"] == UID


def test_a_label_change_rewrites_every_slice() -> None:
    storage = Storage()
    converge(storage, web(eps(range(150))))
    step = converge(storage, web(eps(range(150))), tmpl=template(labels={**LABELS, "tier": "front"}))
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 2, 0)
    assert all(s["metadata"]["labels"]["tier"] == "front" for s in storage.items.values())


def test_the_trigger_time_is_stamped_on_what_is_written_and_removed_when_unknown() -> None:
    storage = Storage()
    converge(storage, web(eps(range(150))))
    step = converge(storage, web(eps(range(151))), tmpl=template(stamp=None))
    (written,) = step.update
    assert "annotations" not in written["metadata"]
    untouched = [s for s in storage.items.values() if s["metadata"]["name"] != written["metadata"]["name"]]
    assert [s["metadata"]["annotations"][TRIGGER] for s in untouched] == ["2024-05-01T10:00:00Z"]


@pytest.mark.parametrize(
    ("change", "same"),
    [
        pytest.param({}, True, id="identical"),
        pytest.param(
            {"conditions": {"ready": True, "serving": True, "terminating": False, "extra": None}},
            True,
            id="unset-condition",
        ),
        pytest.param({"zone": None}, True, id="unset-zone"),
        pytest.param({"zone": "a"}, False, id="zone"),
        pytest.param({"hostname": "web-0"}, False, id="hostname"),
        pytest.param({"nodeName": "node-2"}, False, id="node"),
        pytest.param({"conditions": {"ready": True, "serving": True, "terminating": True}}, False, id="terminating"),
    ],
)
def test_endpoint_comparison(change: Object, same: bool) -> None:
    assert same_endpoint(ep(1), {**ep(1), **change}) is same


# ---- mirroring -------------------------------------------------------------------------------------------------


def mirror_template(annotations: dict[str, str] | None = None, uid: str = "ep-uid") -> SliceTemplate:
    return SliceTemplate(
        namespace="ns",
        generate_name="ext-",
        labels={"kubernetes.io/service-name": "ext"},
        owner={"apiVersion": "v1", "kind": "Endpoints", "name": "ext", "uid": uid, "controller": True},
        annotations=annotations or {},
    )


def mirror(storage: Storage, groups: list[Group], tmpl: SliceTemplate | None = None) -> Plan:
    step = plan_mirror(storage.slices(), groups, tmpl or mirror_template())
    storage.apply(step)
    assert len(plan_mirror(storage.slices(), groups, tmpl or mirror_template())) == 0
    return step


def test_mirroring_writes_one_slice_per_group_and_nothing_when_unchanged() -> None:
    storage = Storage()
    pg = [{"name": "", "port": 5432, "protocol": "TCP"}]
    step = mirror(storage, [Group("IPv4", pg, eps(range(150))), Group("IPv6", pg, eps([1], family="IPv6"))])
    assert len(step.create) == 2 and storage.sizes() == [150, 1]


def test_mirroring_updates_in_place_and_removes_extra_slices() -> None:
    storage = Storage()
    pg = [{"name": "", "port": 5432, "protocol": "TCP"}]
    mirror(storage, [Group("IPv4", pg, eps(range(3)))])
    (name,) = storage.items
    extra = copy.deepcopy(storage.items[name])
    extra["metadata"]["name"] = "ext-extra"
    storage.items["ext-extra"] = extra
    step = mirror(storage, [Group("IPv4", pg, eps(range(4)))])
    assert [s["metadata"]["name"] for s in step.update] == [name]
    assert [s["metadata"]["name"] for s in step.delete] == ["ext-extra"]


def test_mirroring_follows_annotations_and_reuses_slices_for_new_ports() -> None:
    storage = Storage()
    mirror(storage, [Group("IPv4", [{"port": 1}], eps(range(3)))])
    step = mirror(storage, [Group("IPv4", [{"port": 1}], eps(range(3)))], mirror_template({"team": "db"}))
    assert len(step.update) == 1 and step.update[0]["metadata"]["annotations"] == {"team": "db"}
    step = mirror(storage, [Group("IPv4", [{"port": 2}], eps(range(3)))])
    assert (len(step.create), len(step.update), len(step.delete)) == (0, 1, 0)


def test_mirrored_slices_of_a_replaced_endpoints_object_are_replaced() -> None:
    storage = Storage()
    mirror(storage, [Group("IPv4", [{"port": 1}], eps(range(3)))])
    step = mirror(storage, [Group("IPv4", [{"port": 1}], eps(range(3)))], mirror_template(uid="new-uid"))
    assert (len(step.create), len(step.update), len(step.delete)) == (1, 0, 1)
