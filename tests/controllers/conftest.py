"""A module's own cluster with every controller and simulated nodes, and a client and a fresh namespace per test
on it: the workload controllers' tests (`cluster = controllers_cluster("--nodes", "2")` in a module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, fresh_namespace, running_cluster


def controllers_cluster(*extra: str) -> Callable[..., Any]:
    """A module-scoped `cluster` fixture: `tinykube up --controllers '*'` with `extra` (such as `--nodes 3`)."""

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
        with running_cluster(tmp_path_factory.mktemp("controllers") / "c", *extra, "--controllers", "*") as running:
            yield running

    return cluster


@pytest.fixture
def client(cluster: RunningCluster) -> Iterator[httpx.Client]:
    with cluster.http() as http:
        yield http


@pytest.fixture
def ns(client: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(client, request) as name:
        yield name
