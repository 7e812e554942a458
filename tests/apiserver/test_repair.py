"""The repair loops against a real etcd whose state the tests corrupt on purpose (vectors 28 and 29 and the
NodePort equivalents): Services and allocation keys are written directly, as a bad restore or a hand edit would.
An end-to-end test then shows a running apiserver repairing on its own."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import start_cluster, stop_cluster
from tinykube.apiserver.allocators.index import AllocationIndex, Holder
from tinykube.apiserver.allocators.pool import Pool
from tinykube.apiserver.allocators.ranges import IPRange, PortRange
from tinykube.apiserver.allocators.repair import Repair
from tinykube.apiserver.allocators.services import ServicePools
from tinykube.store.etcd import EtcdStore


class World:
    """A store under its own prefix, the pools of 10.0.0.0/24 and 30000-32767, and a repair that records events."""

    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        index = AllocationIndex(store)
        self.pools = ServicePools(
            [Pool("clusterips", IPRange.parse("10.0.0.0/24"), index)],
            Pool("nodeports", PortRange.parse("30000-32767"), index),
            Pool("loadbalancerips", IPRange.parse("172.20.255.0/29"), index),
        )
        self.events: list[tuple[str, str, str, str, str]] = []  # (service, reason, message, component, action)
        self.repair = Repair(store, self.pools, self._record)

    def _record(self, svc: dict[str, Any], reason: str, message: str, component: str, action: str) -> None:
        self.events.append((svc["metadata"]["name"], reason, message, component, action))

    async def service(self, name: str, uid: str = "", **spec: Any) -> None:
        body = {"metadata": {"name": name, "namespace": "default", "uid": uid or name}, "spec": spec}
        await self.store.create(f"services/specs/default/{name}", orjson.dumps(body))

    async def allocate(self, pool: str, value: str, holder: str) -> None:
        await self.store.create(f"allocations/{pool}/{value}", Holder("default", holder, holder).encode())

    async def allocated(self, pool: str) -> set[str]:
        listed = await self.store.scan(f"allocations/{pool}/")
        return {kv.key.rsplit("/", 1)[1] for kv in listed.items}


def run(etcd: str, scenario: Callable[[World], Awaitable[None]]) -> None:
    async def main() -> None:
        store = EtcdStore([etcd], prefix=f"/repair-{secrets.token_hex(4)}/")
        await store.connect()
        try:
            await scenario(World(store))
        finally:
            await store.close()

    asyncio.run(main())


def test_leaked_ip_is_released_on_the_third_pass(etcd: str) -> None:
    """Vector 28, first half: an allocation no Service uses survives passes 1 and 2 and is freed by pass 3."""

    async def scenario(w: World) -> None:
        await w.allocate("clusterips", "10.0.0.50", "gone")
        for expected in ({"10.0.0.50"}, {"10.0.0.50"}, set()):
            await w.repair.run_once()
            assert await w.allocated("clusterips") == expected
        assert w.events == []  # leaks are logged, not reported on any Service

    run(etcd, scenario)


def test_missing_allocation_is_marked_with_a_warning(etcd: str) -> None:
    """Vector 28, second half."""

    async def scenario(w: World) -> None:
        await w.service("web", clusterIP="10.0.0.60", clusterIPs=["10.0.0.60"])
        report = await w.repair.run_once()
        assert report.marked == ["allocations/clusterips/10.0.0.60"]
        assert await w.allocated("clusterips") == {"10.0.0.60"}
        assert w.events == [
            (
                "web",
                "ClusterIPNotAllocated",
                "Cluster IP [IPv4]:10.0.0.60 is not allocated; repairing",
                "ipallocator-repair-controller",
                "ClusterIPAllocation",
            )
        ]
        await w.repair.run_once()
        assert len(w.events) == 1  # repaired once, quiet afterwards

    run(etcd, scenario)


def test_duplicate_ip_is_reported_on_every_pass_and_left_alone(etcd: str) -> None:
    """Vector 29: the Service the allocation names keeps it; the other is reported each pass."""

    async def scenario(w: World) -> None:
        await w.service("a", clusterIP="10.0.0.70", clusterIPs=["10.0.0.70"])
        await w.service("b", clusterIP="10.0.0.70", clusterIPs=["10.0.0.70"])
        await w.allocate("clusterips", "10.0.0.70", "a")
        before = await w.store.scan("")
        for _ in range(2):
            await w.repair.run_once()
        duplicate = "Cluster IP [IPv4]:10.0.0.70 was assigned to multiple services; please recreate service"
        assert [(e[0], e[1], e[2]) for e in w.events] == [("b", "ClusterIPAlreadyAllocated", duplicate)] * 2
        assert (await w.store.scan("")).items == before.items  # nothing changed

    run(etcd, scenario)


def test_out_of_range_and_invalid_ips_are_reported(etcd: str) -> None:
    async def scenario(w: World) -> None:
        await w.service("far", clusterIP="10.1.0.5", clusterIPs=["10.1.0.5"])
        await w.service("v6", clusterIP="fd00::5", clusterIPs=["fd00::5"])
        await w.service("junk", clusterIP="not-an-ip", clusterIPs=["not-an-ip"])
        await w.repair.run_once()
        assert sorted((e[0], e[1], e[2]) for e in w.events) == [
            (
                "far",
                "ClusterIPOutOfRange",
                "Cluster IP [IPv4]:10.1.0.5 is not within the service CIDR 10.0.0.0/24; please recreate service",
            ),
            ("junk", "ClusterIPNotValid", "Cluster IP not-an-ip is not a valid IP; please recreate service"),
            (
                "v6",
                "ClusterIPNotValid",
                "Cluster IP fd00::5(IPv6) is of ip family that is no longer configured on cluster; please recreate "
                "service",
            ),
        ]
        assert await w.allocated("clusterips") == set()

    run(etcd, scenario)


def test_node_port_repairs(etcd: str) -> None:
    async def scenario(w: World) -> None:
        dns = [
            {"port": 53, "protocol": "TCP", "nodePort": 30053},
            {"port": 53, "protocol": "UDP", "nodePort": 30053},
        ]
        await w.service("dns", type="NodePort", ports=dns)  # one nodePort on two protocols: counted once
        await w.service("web", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
        await w.service("copy", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
        await w.service("far", type="NodePort", ports=[{"port": 80, "nodePort": 40000}])
        await w.service("lb", type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30100)
        await w.allocate("nodeports", "30080", "web")
        await w.allocate("nodeports", "30999", "gone")
        await w.repair.run_once()
        reported = sorted((e[0], e[1], e[2], e[3], e[4]) for e in w.events)
        component, action = "portallocator-repair-controller", "PortAllocation"
        assert reported == [
            (
                "copy",
                "PortAlreadyAllocated",
                "Port 30080 was assigned to multiple services; please recreate service",
                component,
                action,
            ),
            ("dns", "PortNotAllocated", "Port 30053 is not allocated; repairing", component, action),
            (
                "far",
                "PortOutOfRange",
                "Port 40000 is not within the port range 30000-32767; please recreate service",
                component,
                action,
            ),
            ("lb", "PortNotAllocated", "Port 30100 is not allocated; repairing", component, action),
        ]
        assert await w.allocated("nodeports") == {"30053", "30080", "30100", "30999"}
        await w.repair.run_once()
        await w.repair.run_once()
        assert await w.allocated("nodeports") == {"30053", "30080", "30100"}  # the leak went on pass 3

    run(etcd, scenario)


def test_leak_countdown_restarts_when_the_value_is_used_or_reallocated(etcd: str) -> None:
    async def scenario(w: World) -> None:
        await w.allocate("clusterips", "10.0.0.80", "gone")
        await w.allocate("clusterips", "10.0.0.81", "gone")
        await w.repair.run_once()
        await w.repair.run_once()
        # 10.0.0.80 becomes used; 10.0.0.81 is re-allocated (its key rewritten) just before pass 3
        await w.service("back", clusterIP="10.0.0.80", clusterIPs=["10.0.0.80"])
        await w.store.delete("allocations/clusterips/10.0.0.81")
        await w.allocate("clusterips", "10.0.0.81", "new")
        await w.repair.run_once()
        assert await w.allocated("clusterips") == {"10.0.0.80", "10.0.0.81"}
        await w.store.delete("services/specs/default/back")
        for _ in range(2):
            await w.repair.run_once()
        assert await w.allocated("clusterips") == {"10.0.0.80"}  # 10.0.0.81's own three passes are over
        await w.repair.run_once()
        assert await w.allocated("clusterips") == set()

    run(etcd, scenario)


def test_running_apiserver_repairs_on_its_own(etcd: str, tmp_path: Path) -> None:
    """A cluster with a short --repair-interval: a leaked key goes after three passes, a deleted record comes
    back with a Warning Event on its Service that kubectl shows."""
    prefix = f"/e2e-{secrets.token_hex(4)}/"
    data_dir = tmp_path / "repairing"
    cluster = start_cluster(
        data_dir, "--etcd-servers", etcd, "--etcd-prefix", prefix, "--repair-interval", "0.3",
        "--service-cluster-ip-range", "10.0.0.0/24",
    )  # fmt: skip

    async def corrupt() -> None:
        store = EtcdStore([etcd], prefix=prefix)
        await store.connect()
        try:
            await store.create("allocations/clusterips/10.0.0.50", Holder("default", "gone", "gone").encode())
            await store.delete("allocations/clusterips/10.0.0.1")  # the record of default/kubernetes
        finally:
            await store.close()

    try:
        asyncio.run(corrupt())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with cluster.http() as http:
                ranges = http.get("/debug/allocations").json()["ranges"]
            values = {a["value"] for r in ranges if r["kind"] == "ClusterIP" for a in r["allocations"]}
            if "10.0.0.50" not in values and "10.0.0.1" in values:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"not repaired: {sorted(values)}")
        described = cluster.kubectl("describe", "service", "kubernetes", "-n", "default").stdout
        assert "ClusterIPNotAllocated" in described
        assert "Cluster IP [IPv4]:10.0.0.1 is not allocated; repairing" in described
    finally:
        stop_cluster(cluster)
        shutil.rmtree(data_dir, ignore_errors=True)
