"""Allocations and Services commit in one etcd transaction, so neither an apiserver killed in the middle of a create
storm nor a create refused after its values were picked can leave an allocation without its Service (a leak) or a
Service without its allocation (a future duplicate).

The crash case runs two real `tinykube up` processes on one etcd, SIGKILLs one of them while both take creates,
and compares three views once the other has finished: the Services and the allocation keys as etcd holds them
(the truth), and the surviving apiserver's Service list and `/debug/allocations`. The repair loop is pushed out of
the test's way (`--repair-interval 3600`), so it cannot mend what the transactions got wrong.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import ssl
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tinykube.store.etcd import EtcdStore
from tinykube.store.launcher import EtcdProcess, find_etcd

NS = "crash"
PER_APISERVER = 150  # Services each apiserver is asked to create
CREATORS = 16  # concurrent creators per apiserver (32 in all)
KILL_AFTER = 40  # A is killed once it has acknowledged this many creates
KINDS = {"clusterips": "ClusterIP", "nodeports": "NodePort", "loadbalancerips": "LoadBalancerIP"}

Held = dict[tuple[str, str], tuple[str, str, str]]  # (kind, value) -> (namespace, name, uid) of the holder


@pytest.fixture
def shared_etcd(tmp_path: Path) -> Iterator[tuple[EtcdProcess, RunningCluster, RunningCluster]]:
    """One etcd and two apiservers, A and B, on it (each with its own token and CA)."""
    etcd = EtcdProcess(find_etcd(), tmp_path / "etcd" / "data")
    etcd.start()
    running: list[RunningCluster] = []
    try:
        for name in ("a", "b"):
            running.append(start_cluster(tmp_path / name, "--etcd-servers", etcd.url, "--repair-interval", "3600"))
        yield etcd, running[0], running[1]
    finally:
        for cluster in running:
            stop_cluster(cluster)
        etcd.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)


def service(name: str, i: int) -> dict[str, Any]:
    """ClusterIP, NodePort, and NodePort with TCP and UDP on one port number (one shared nodePort) plus a second."""
    ports: list[dict[str, Any]] = [{"name": "http", "port": 80, "protocol": "TCP"}]
    spec: dict[str, Any] = {"ports": ports}
    if i % 3:
        spec["type"] = "NodePort"
    if i % 3 == 2:
        ports += [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]
    return {"metadata": {"name": name}, "spec": spec}


def values_of(svc: dict[str, Any]) -> set[tuple[str, str]]:
    spec = svc.get("spec") or {}
    held = {("ClusterIP", ip) for ip in spec.get("clusterIPs") or [] if ip != "None"}
    held |= {("NodePort", str(p["nodePort"])) for p in spec.get("ports") or [] if p.get("nodePort")}
    if spec.get("healthCheckNodePort"):
        held.add(("NodePort", str(spec["healthCheckNodePort"])))
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return held | {("LoadBalancerIP", i["ip"]) for i in ingress if i.get("ip")}


def held_by(services: list[dict[str, Any]]) -> Held:
    return {
        value: (svc["metadata"]["namespace"], svc["metadata"]["name"], svc["metadata"]["uid"])
        for svc in services
        for value in values_of(svc)
    }


def duplicates(services: list[dict[str, Any]]) -> list[tuple[str, str]]:
    counts = Counter(value for svc in services for value in values_of(svc))
    return sorted(value for value, n in counts.items() if n > 1)


def reported(report: dict[str, Any]) -> Held:
    return {
        (r["kind"], str(a["value"])): (a["namespace"], a["name"], a["uid"])
        for r in report["ranges"]
        for a in r["allocations"]
    }


def in_etcd(url: str) -> tuple[list[dict[str, Any]], Held]:
    """Every Service and every allocation key, read from etcd at one revision."""

    async def read() -> tuple[list[dict[str, Any]], Held]:
        store = EtcdStore([url])
        try:
            listed = await store.scan("services/specs/")
            keys = await store.scan("allocations/", revision=listed.revision)
        finally:
            await store.close()
        allocations: Held = {}
        for kv in keys.items:
            pool, _, value = kv.key.removeprefix("allocations/").partition("/")
            holder = orjson.loads(kv.value)
            allocations[(KINDS.get(pool, pool), value)] = (holder["namespace"], holder["name"], holder["uid"])
        return [orjson.loads(kv.value) for kv in listed.items], allocations

    return asyncio.run(read())


async def _creators(
    cluster: RunningCluster, prefix: str, outcomes: dict[str, str], on_created: Callable[[int], None]
) -> None:
    """PER_APISERVER creates from CREATORS connections; outcome per name: the status code, or "lost" when the
    connection failed (the apiserver died: the create may or may not have committed)."""
    todo = iter(range(PER_APISERVER))
    created = 0
    limits = httpx.Limits(max_connections=CREATORS)
    headers = {"Authorization": f"Bearer {cluster.token}"}
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    async with httpx.AsyncClient(
        base_url=cluster.server, headers=headers, verify=verify, limits=limits, timeout=30
    ) as client:

        async def creator() -> None:
            nonlocal created
            for i in todo:
                name = f"{prefix}-{i:04d}"
                try:
                    response = await client.post(f"/api/v1/namespaces/{NS}/services", json=service(name, i))
                except httpx.TransportError:
                    outcomes[name] = "lost"
                    return
                outcomes[name] = str(response.status_code)
                if response.status_code == 201:
                    created += 1
                    on_created(created)

        await asyncio.gather(*(creator() for _ in range(CREATORS)))


async def storm(a: RunningCluster, b: RunningCluster) -> tuple[dict[str, str], dict[str, str]]:
    outcomes_a: dict[str, str] = {}
    outcomes_b: dict[str, str] = {}

    def kill_a(created: int) -> None:
        if created == KILL_AFTER:
            a.proc.kill()  # SIGKILL: no shutdown, requests in flight on A's other connections are cut off

    await asyncio.gather(_creators(a, "a", outcomes_a, kill_a), _creators(b, "b", outcomes_b, lambda _n: None))
    a.proc.wait()
    return outcomes_a, outcomes_b


def survivor_view(b: RunningCluster, services: list[dict[str, Any]], wanted: Held) -> tuple[set[str], Held]:
    """B's Service list (uids) and allocation report once its watches have caught up with etcd (bounded wait; what
    was seen last is returned for the assertions to compare)."""
    uids = {svc["metadata"]["uid"] for svc in services}
    deadline = time.monotonic() + 15
    with b.http() as api:
        while True:
            listed = {svc["metadata"]["uid"] for svc in api.get("/api/v1/services").json()["items"]}
            report = reported(api.get("/debug/allocations").json())
            if (listed == uids and report == wanted) or time.monotonic() > deadline:
                return listed, report
            time.sleep(0.1)


def test_apiserver_killed_in_a_create_storm_leaks_nothing(
    shared_etcd: tuple[EtcdProcess, RunningCluster, RunningCluster],
) -> None:
    etcd, a, b = shared_etcd
    with b.http() as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).status_code == 201
    with a.http() as api:  # A's namespace cache must know it too
        while api.get(f"/api/v1/namespaces/{NS}").status_code != 200:
            time.sleep(0.02)

    outcomes_a, outcomes_b = asyncio.run(storm(a, b))

    assert a.proc.returncode == -9
    assert Counter(outcomes_b.values()) == {"201": PER_APISERVER}, "B's creates must all succeed"
    assert "lost" in outcomes_a.values(), "A was killed with creates in flight"
    services, allocations = in_etcd(etcd.url)
    names = {svc["metadata"]["name"] for svc in services if svc["metadata"]["namespace"] == NS}
    acknowledged = {name for name, outcome in outcomes_a.items() if outcome == "201"}
    assert acknowledged <= names, "every create A acknowledged is stored"
    assert names <= set(outcomes_a) | set(outcomes_b)
    assert len(services) == len(names) + 2  # and default/kubernetes, kube-system/kube-dns

    assert duplicates(services) == []
    wanted = held_by(services)
    assert len(wanted) > 2 * PER_APISERVER
    assert {k: v for k, v in allocations.items() if k not in wanted} == {}, "leaked allocation keys"
    assert {k: v for k, v in wanted.items() if k not in allocations} == {}, "Services without their allocation keys"
    assert allocations == wanted, "allocation keys name the Service that uses the value"

    listed, report = survivor_view(b, services, wanted)
    assert listed == {svc["metadata"]["uid"] for svc in services}
    assert {k: v for k, v in report.items() if k not in wanted} == {}, "B reports allocations no Service holds"
    assert {k: v for k, v in wanted.items() if k not in report} == {}, "B does not report allocations in use"
    assert report == wanted


# ---- a create refused after allocation ---------------------------------------------------------------------------

NODE_PORTS = ("30000", "30001")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """Two node ports and a /28: a value still reserved by a refused create would make the range run out."""
    data_dir = tmp_path_factory.mktemp("alloc-refused") / "tiny"
    running = start_cluster(
        data_dir,
        "--service-cluster-ip-range",
        "10.0.3.0/28",
        "--service-node-port-range",
        f"{NODE_PORTS[0]}-{NODE_PORTS[1]}",
        "--repair-interval",
        "3600",
    )
    try:
        yield running
    finally:
        stop_cluster(running)
        shutil.rmtree(data_dir.parent, ignore_errors=True)


@pytest.fixture
def tiny_api(tiny: RunningCluster) -> Iterator[tuple[httpx.Client, str]]:
    namespace = f"refused-{secrets.token_hex(3)}"
    with tiny.http() as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).status_code == 201
        yield api, namespace
        api.delete(f"/api/v1/namespaces/{namespace}")


HTTP = [{"name": "http", "port": 80, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("spec", "metadata", "field"),
    [
        pytest.param({"type": "NodePort", "clusterIP": "None", "ports": HTTP}, {}, "spec.clusterIPs[0]", id="headless"),
        pytest.param(
            {"type": "NodePort", "ports": [{"port": 80, "protocol": "SCTPX"}]},
            {},
            "spec.ports[0].protocol",
            id="bad-protocol",
        ),
        pytest.param(
            {"type": "NodePort", "ports": HTTP}, {"labels": {"app": "-x-"}}, "metadata.labels", id="bad-label"
        ),
    ],
)
def test_create_refused_after_allocation_leaves_nothing_allocated(
    tiny_api: tuple[httpx.Client, str], spec: dict[str, Any], metadata: dict[str, Any], field: str
) -> None:
    api, namespace = tiny_api
    url = f"/api/v1/namespaces/{namespace}/services"
    before = reported(api.get("/debug/allocations").json())
    for i in range(2 * len(NODE_PORTS) + 1):  # more refusals than the node port range has ports
        response = api.post(url, json={"metadata": {"name": f"refused-{i}", **metadata}, "spec": spec})
        assert response.status_code == 422, response.text
        assert response.json()["details"]["causes"][0]["field"].startswith(field)
    assert reported(api.get("/debug/allocations").json()) == before

    # Every node port is still free: the range serves exactly as many NodePort Services as it has ports.
    body = {"spec": {"type": "NodePort", "ports": HTTP}}
    made = [api.post(url, json={"metadata": {"name": f"ok-{i}"}, **body}) for i in range(len(NODE_PORTS))]
    try:
        assert [r.status_code for r in made] == [201] * len(NODE_PORTS), [r.text for r in made]
        assert sorted(str(r.json()["spec"]["ports"][0]["nodePort"]) for r in made) == list(NODE_PORTS)
        full = api.post(url, json={"metadata": {"name": "one-too-many"}, **body})
        assert full.status_code == 500 and "range is full" in full.json()["message"], full.text
        after = reported(api.get("/debug/allocations").json())
        assert {k: v for k, v in after.items() if k not in before} == held_by([r.json() for r in made])
    finally:
        for i in range(len(NODE_PORTS)):  # frees the ports for the next case at once (a namespace goes slowly)
            api.delete(f"{url}/ok-{i}")
