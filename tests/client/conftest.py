"""Fixtures of the client tests: anyio on asyncio, and a REST client of the module's cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.conftest import RunningCluster
from tinykube.client.rest import RestClient


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(cluster: RunningCluster) -> AsyncIterator[RestClient]:
    rest = RestClient.from_kubeconfig(cluster.kubeconfig)
    try:
        yield rest
    finally:
        await rest.close()
