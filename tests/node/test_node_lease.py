"""Node leases (issue 17): each node agent renews a Lease in `kube-node-lease` as the kubelet does, so `kubectl
describe node` shows it, and writes its Node status only when it changes (or every 5 minutes, as upstream).

A cluster of the module's own with one simulated node (`up`'s defaults: 40 s leases renewed every 10 s), plus agents
run in the test's process with short intervals, so renewals can be watched without waiting 10 s each."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RecordingClient, RunningCluster, eventually, running_cluster
from tinykube.client.kubeconfig import load_credentials
from tinykube.node.agent import KubeletClients, NodeAgent, NodeConfig, node_status_changed
from tinykube.node.runtime import Runtime, RuntimeHost
from tinykube.node.simulated import SimulatedRuntime

Object = dict[str, Any]
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
KUBECTL_TIME = re.compile(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d [+-]\d{4}")  # "Wed, 25 Nov 2026 01:46:37 +0000"


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("leases") / "c", "--nodes", "1", "--controllers", "*") as running:
        yield running


@pytest.fixture
def api(node_cluster: RunningCluster) -> Iterator[httpx.Client]:
    with node_cluster.http() as client:
        yield client


def lease(api: httpx.Client, name: str) -> Object | None:
    response = api.get(f"{LEASES}/{name}")
    return response.json() if response.status_code == 200 else None


def simulated(_cidr: str, host: RuntimeHost) -> Runtime:
    return SimulatedRuntime(host)


def run_agent(node_cluster: RunningCluster, config: NodeConfig, scenario: Any) -> RecordingClient:
    """Run a node agent in this process while `scenario(agent)` (a coroutine function) runs, then stop it."""
    client = RecordingClient(load_credentials(node_cluster.kubeconfig))

    async def main() -> None:
        agent = NodeAgent(KubeletClients.one(client), config, simulated)
        task = asyncio.create_task(agent.run())
        try:
            await asyncio.wait_for(agent.registered.wait(), 30)
            await scenario(agent)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()

    asyncio.run(main())
    return client


# ---- pure parts ------------------------------------------------------------------------------------------------

READY = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": "T0"}
STATUS = {"capacity": {"cpu": "4"}, "conditions": [{**READY, "lastHeartbeatTime": "T2"}]}


@pytest.mark.parametrize(
    ("found", "changed"),
    [
        pytest.param({**STATUS, "conditions": [{**READY, "lastHeartbeatTime": "T1"}]}, False, id="heartbeat-only"),
        pytest.param({**STATUS, "images": [], "phase": "x"}, False, id="fields-we-do-not-set"),
        pytest.param({**STATUS, "capacity": {"cpu": "2"}}, True, id="capacity"),
        pytest.param({**STATUS, "conditions": [{**READY, "status": "Unknown"}]}, True, id="marked-unknown"),
        pytest.param({**STATUS, "conditions": []}, True, id="condition-missing"),
        pytest.param({}, True, id="no-status"),
    ],
)
def test_node_status_changed_ignores_heartbeat_times(found: Object, changed: bool) -> None:
    assert node_status_changed(found, STATUS) is changed


# ---- the cluster's own node ------------------------------------------------------------------------------------


def test_the_node_renews_a_lease_owned_by_its_node(api: httpx.Client) -> None:
    found = eventually(lambda: lease(api, "node-1"), what="node-1's lease")
    node = api.get("/api/v1/nodes/node-1").json()
    assert found["spec"]["holderIdentity"] == "node-1"
    assert found["spec"]["leaseDurationSeconds"] == 40
    assert MICRO_TIME.fullmatch(found["spec"]["renewTime"])
    owner = {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": node["metadata"]["uid"]}
    assert found["metadata"]["ownerReferences"] == [owner]


def test_kubectl_describe_node_shows_the_lease(node_cluster: RunningCluster, api: httpx.Client) -> None:
    eventually(lambda: lease(api, "node-1"), what="node-1's lease")
    described = node_cluster.kubectl("describe", "node", "node-1").stdout
    assert "Failed to get lease" not in described
    shown = re.search(
        r"^Lease:\n  HolderIdentity:\s+(\S+)\n  AcquireTime:\s+(.+)\n  RenewTime:\s+(.+)$", described, re.M
    )
    assert shown is not None, described
    assert shown.group(1) == "node-1" and shown.group(2) == "<unset>"  # the kubelet never sets acquireTime
    assert KUBECTL_TIME.fullmatch(shown.group(3)), shown.group(3)


# ---- agents with short intervals -------------------------------------------------------------------------------


def test_renew_time_advances_until_the_agent_stops(node_cluster: RunningCluster, api: httpx.Client) -> None:
    name = f"lease-{secrets.token_hex(3)}"
    config = NodeConfig(name, "172.20.0.97", lease_duration=2)  # renewed every 0.5 s

    async def scenario(_agent: NodeAgent) -> None:
        first = await asyncio.to_thread(eventually, lambda: lease(api, name), what="the lease")

        def advanced() -> bool:
            now = lease(api, name)
            return now is not None and now["spec"]["renewTime"] > first["spec"]["renewTime"]

        await asyncio.to_thread(eventually, advanced, what="a later renewTime")

    try:
        client = run_agent(node_cluster, config, scenario)
        stopped = lease(api, name)
        assert stopped is not None
        # Created once, then renewed by updates only: one write per interval, no reads of other leases.
        writes = [(method, path) for method, path in client.writes if "/leases" in path]
        assert writes[0] == ("POST", LEASES) and len(writes) >= 2
        assert all(write == ("PUT", f"{LEASES}/{name}") for write in writes[1:]), writes
        time.sleep(1.5)  # three renew intervals: the stopped agent renews nothing more
        assert lease(api, name) == stopped
    finally:
        api.delete(f"/api/v1/nodes/{name}")


def test_status_is_written_when_it_changes_not_every_heartbeat(node_cluster: RunningCluster, api: httpx.Client) -> None:
    """Lease renewals carry liveness, so the status is computed every heartbeat but written only on a change: here
    a node-lifecycle controller marking the node Unknown, which the next heartbeat puts right."""
    name = f"status-{secrets.token_hex(3)}"
    config = NodeConfig(name, "172.20.0.96", heartbeat=0.2, lease_duration=2)
    path = f"/api/v1/nodes/{name}/status"

    def status_writes(client: RecordingClient) -> int:
        return sum(1 for method, where in client.writes if method == "PATCH" and where == path)

    async def scenario(agent: NodeAgent) -> None:
        client = agent.client
        assert isinstance(client, RecordingClient)

        def renewed(times: int) -> bool:
            return sum(1 for _, where in client.writes if where == f"{LEASES}/{name}") >= times

        await asyncio.to_thread(eventually, lambda: renewed(1), what="a renewal")
        settled = status_writes(client)  # the registration's (and any made against a lagging cache)
        await asyncio.to_thread(eventually, lambda: renewed(4), what="3 renewals more")
        assert status_writes(client) == settled  # through 7 heartbeats or more

        unknown = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "stopped posting"}
        patched = api.patch(
            path,
            json={"status": {"conditions": [unknown]}},
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        )
        assert patched.status_code == 200, patched.text

        def ready_again() -> Object | None:
            ready = next(
                c for c in api.get(f"/api/v1/nodes/{name}").json()["status"]["conditions"] if c["type"] == "Ready"
            )
            return ready if ready["status"] == "True" else None

        ready = await asyncio.to_thread(eventually, ready_again, what="Ready put back")
        assert ready["reason"] == "KubeletReady" and status_writes(client) > settled

    try:
        run_agent(node_cluster, config, scenario)
    finally:
        api.delete(f"/api/v1/nodes/{name}")
