"""The REST client's connections: watches, which hold one each while they run, never starve requests (found when
50 node agents in one `tinykube up` left the leader-election renewal waiting for a free connection)."""

from __future__ import annotations

import asyncio

import pytest

from tinykube.api.resources import builtin
from tinykube.client.rest import RestClient

pytestmark = pytest.mark.anyio
CONFIGMAPS = builtin("", "v1", "configmaps")


async def test_a_request_is_served_while_more_watches_run_than_the_request_pool_holds(client: RestClient) -> None:
    async def watch() -> None:
        async for _event in client.watch(CONFIGMAPS, "default", timeoutSeconds="60"):
            pass  # nothing changes: each watch only holds its connection

    watches = [asyncio.create_task(watch()) for _ in range(120)]  # aiohttp's default pool holds 100
    try:
        await asyncio.sleep(1.0)  # every watch connected
        async with asyncio.timeout(10):
            listed = await client.request("GET", "/api/v1/namespaces/default/configmaps")
        assert listed["kind"] == "ConfigMapList"
        assert not any(task.done() for task in watches)  # all 120 still open
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
