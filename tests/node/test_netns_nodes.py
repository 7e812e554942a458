"""The nodes of a netns sandbox: the runtime factory makes the node's namespace and its runtime, and nothing else;
what waits for the node (its proxy, in `tinykube/wiring.py`) learns of it through `joined` (root only)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from tests.sandbox.conftest import two_node_sandbox
from tinykube.api.resources import builtin
from tinykube.client.informer import SharedInformers
from tinykube.node.netns_nodes import NetnsNodes
from tinykube.node.netns_runtime import NetnsRuntime
from tinykube.node.runtime import DetachedHost
from tinykube.sandbox import netns
from tinykube.sandbox.topology import node_address

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

SERVICES = builtin("", "v1", "services")


def test_making_a_runtime_makes_the_node_and_only_the_node(tmp_path: Path) -> None:
    with two_node_sandbox() as box:
        services = SharedInformers(None).informer(SERVICES)  # type: ignore[arg-type]  # never started
        nodes = NetnsNodes(box, services, tmp_path, domain="cluster.local")

        async def scenario() -> None:
            make = nodes.runtime_for("node-3", node_address(3), dns_ip="10.96.0.10")
            joined = asyncio.create_task(nodes.joined("node-3"))
            await asyncio.sleep(0.05)
            assert not joined.done()  # no namespace before the agent knows its pod CIDR
            assert "node-3" not in box.nodes
            tasks, threads = asyncio.all_tasks(), threading.active_count()
            runtime = make("10.244.3.0/24", DetachedHost())
            assert asyncio.all_tasks() == tasks and threading.active_count() == threads  # no proxy started
            node = await asyncio.wait_for(joined, 1)
            assert node is box.nodes["node-3"] and netns.exists(node.netns)
            assert isinstance(runtime, NetnsRuntime) and runtime.node is node
            assert await nodes.joined("node-3") is node  # for whoever asks later, too

        asyncio.run(scenario())
