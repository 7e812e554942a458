"""Fixtures of the node tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, fresh_namespace, running_cluster
from tests.sandbox.conftest import two_node_sandbox
from tinykube.sandbox.topology import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A two-node sandbox per test module (root only)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    with two_node_sandbox() as box:
        yield box


def simulated_cluster(name: str) -> Callable[..., Any]:
    """A module-scoped `sim` fixture: a cluster with one simulated node and every controller (`sim =
    simulated_cluster("x")` in a module); `client` and `ns` below work on it."""

    @pytest.fixture(scope="module")
    def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
        with running_cluster(tmp_path_factory.mktemp(name) / "c", "--nodes", "1", "--controllers", "*") as running:
            yield running

    return sim


@pytest.fixture
def client(sim: RunningCluster) -> Iterator[httpx.Client]:
    with sim.http() as http:
        yield http


@pytest.fixture
def ns(client: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(client, request) as name:
        yield name


def read(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def phase_is(client: httpx.Client, ns: str, name: str, phase: str) -> dict[str, Any] | None:
    found = read(client, ns, name)
    return found if (found.get("status") or {}).get("phase") == phase else None
