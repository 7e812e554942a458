"""A node agent and the scheduler run in the test's own process against the shared cluster (which runs neither):
so a test can quicken the heartbeat, and see every request the scheduler makes."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import httpx

from tests.conftest import RecordingClient, RunningCluster
from tinykube.api.resources import ResourceInfo
from tinykube.client.informer import Informer, SharedInformers
from tinykube.client.kubeconfig import load_credentials
from tinykube.client.rest import RestClient
from tinykube.controllers.context import ControllerContext
from tinykube.controllers.scheduler import Scheduler
from tinykube.node.agent import KubeletClients, NodeAgent, NodeConfig
from tinykube.node.runtime import Runtime, RuntimeHost
from tinykube.node.simulated import SimulatedRuntime


def ready_condition(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


async def poll(check: Any, what: str, timeout: float = 30) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (found := await check()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return found


def test_heartbeats_renew_the_ready_condition(cluster: RunningCluster, api: httpx.Client) -> None:
    name = f"hb-{secrets.token_hex(3)}"

    def simulated(_cidr: str, host: RuntimeHost) -> Runtime:
        return SimulatedRuntime(host)

    async def scenario() -> None:
        client = RestClient(load_credentials(cluster.kubeconfig))
        # Reported at every heartbeat (not only on a change, as by default), so the heartbeat time moves.
        config = NodeConfig(name, "172.20.0.98", heartbeat=0.3, status_report_frequency=0.3)
        agent = NodeAgent(KubeletClients.one(client), config, simulated)
        task = asyncio.create_task(agent.run())
        try:
            await asyncio.wait_for(agent.registered.wait(), 30)  # the control plane gave it a pod CIDR
            first = ready_condition(api.get(f"/api/v1/nodes/{name}").json())
            assert first["status"] == "True" and first["reason"] == "KubeletReady"

            async def renewed() -> dict[str, Any] | None:
                now = ready_condition(api.get(f"/api/v1/nodes/{name}").json())
                return now if now["lastHeartbeatTime"] != first["lastHeartbeatTime"] else None

            later = await poll(renewed, "a second heartbeat")  # times have a resolution of one second
            assert later["status"] == "True" and later["lastTransitionTime"] == first["lastTransitionTime"]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
            api.delete(f"/api/v1/nodes/{name}")

    asyncio.run(scenario())


def test_the_runtime_is_made_with_its_agent_as_host(cluster: RunningCluster, api: httpx.Client) -> None:
    """The agent hands itself to the runtime factory with the node's pod CIDR: nothing is assigned to the runtime
    afterwards."""
    name = f"host-{secrets.token_hex(3)}"
    made: list[tuple[str, RuntimeHost]] = []

    def factory(cidr: str, host: RuntimeHost) -> Runtime:
        made.append((cidr, host))
        return SimulatedRuntime(host)

    async def scenario() -> None:
        client = RestClient(load_credentials(cluster.kubeconfig))
        agent = NodeAgent(KubeletClients.one(client), NodeConfig(name, "172.20.0.97"), factory)
        task = asyncio.create_task(agent.run())
        try:
            await asyncio.wait_for(agent.registered.wait(), 30)
            cidr = api.get(f"/api/v1/nodes/{name}").json()["spec"]["podCIDR"]
            assert made == [(cidr, agent)]
            assert isinstance(agent.runtime, SimulatedRuntime) and agent.runtime.host is agent
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
            api.delete(f"/api/v1/nodes/{name}")

    asyncio.run(scenario())


class OneNamespace(SharedInformers):
    """Informers of namespaced resources see only `namespace`: the scheduler leaves other tests' pods alone."""

    def __init__(self, client: RestClient, namespace: str) -> None:
        super().__init__(client)
        self.namespace = namespace

    def informer(self, resource: ResourceInfo, *, namespace: str = "", **selectors: str) -> Informer:
        return super().informer(resource, namespace=namespace or self.namespace, **selectors)


def test_scheduler_binds_least_loaded_nodes_through_the_binding_subresource(
    cluster: RunningCluster, api: httpx.Client, namespace: str
) -> None:
    pool = secrets.token_hex(3)
    a, b = f"sched-{pool}-a", f"sched-{pool}-b"
    for node in (a, b):
        body = {"metadata": {"name": node, "labels": {"tinykube.test/pool": pool}}}
        assert api.post("/api/v1/nodes", json=body).status_code == 201
        status = {"status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"pods": "110"}}}
        headers = {"Content-Type": "application/merge-patch+json"}
        assert api.patch(f"/api/v1/nodes/{node}/status", json=status, headers=headers).status_code == 200

    def pod(name: str, **spec: Any) -> None:
        body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201

    pod("pinned-1", nodeName=a)
    pod("pinned-2", nodeName=a)
    pod("p1", nodeSelector={"tinykube.test/pool": pool})
    pod("p2", nodeSelector={"tinykube.test/pool": pool})

    async def scenario() -> list[tuple[str, str]]:
        client = RecordingClient(load_credentials(cluster.kubeconfig))
        informers = OneNamespace(client, namespace)
        task = asyncio.create_task(Scheduler(ControllerContext(client, informers)).run())

        async def both_bound() -> bool:
            found = [api.get(f"/api/v1/namespaces/{namespace}/pods/{p}").json() for p in ("p1", "p2")]
            return all(p["spec"].get("nodeName") for p in found)

        try:
            await poll(both_bound, "p1 and p2 bound")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await informers.stop()
            await client.close()
        return client.writes

    try:
        writes = asyncio.run(scenario())
        found = {p: api.get(f"/api/v1/namespaces/{namespace}/pods/{p}").json() for p in ("p1", "p2")}
        nodes = {p: found[p]["spec"]["nodeName"] for p in found}
        assert nodes == {"p1": b, "p2": b}  # a holds two pods: b has fewer even once it holds p1 or p2
        bindings = sorted(w for w in writes if w[1].endswith("/binding"))  # besides the Scheduled events
        assert bindings == [("POST", f"/api/v1/namespaces/{namespace}/pods/{p}/binding") for p in ("p1", "p2")]
    finally:
        for node in (a, b):
            api.delete(f"/api/v1/nodes/{node}")
