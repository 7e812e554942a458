"""The pytest plugin (entry point `pytest11`: `tinykube = tinykube.testing.plugin`).

Fixtures: `tinykube_cluster` (one `Cluster` per session — per xdist worker, each with its own ports and data dir),
`namespace` (a fresh namespace per test, deleted with its objects afterwards) and `service_account_client` (a
`kubernetes` client acting as a ServiceAccount, to test an operator's RBAC). Options: `--tinykube-keep`,
`--tinykube-dataplane`, `--tinykube-controllers`, `--tinykube-nodes`.

The cluster's process is started as soon as collection shows that a test will need it, so it boots while pytest
gets ready to run; the fixture then only waits for it. This module imports nothing heavy: it is loaded by every
pytest run of a project that has tinykube installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from tinykube.testing.cluster import Cluster

FIXTURE = "tinykube_cluster"
CLUSTER = pytest.StashKey["Cluster"]()
KEPT = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tinykube", "tinykube test cluster")
    group.addoption(
        "--tinykube-keep",
        action="store_true",
        help="leave the session's cluster running afterwards and print its kubeconfig",
    )
    group.addoption(
        "--tinykube-dataplane",
        choices=("none", "netns"),
        default="none",
        help="none: simulated pods (default); netns: pods are network namespaces running processes (root)",
    )
    group.addoption(
        "--tinykube-controllers",
        default="*",
        metavar="LIST",
        help="controllers to run, as `tinykube up --controllers`: e.g. '*,-endpoints' to test your own",
    )
    group.addoption("--tinykube-nodes", type=int, default=1, help="simulated node agents (default: 1)")


def _make_cluster(config: pytest.Config) -> Cluster:
    from tinykube.testing.cluster import Cluster

    return Cluster(
        controllers=config.getoption("tinykube_controllers"),
        dataplane=config.getoption("tinykube_dataplane"),
        nodes=config.getoption("tinykube_nodes"),
        keep=config.getoption("tinykube_keep"),
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the cluster now if a collected test needs it (an xdist controller collects nothing itself)."""
    config = session.config
    if config.option.collectonly or not any(FIXTURE in getattr(i, "fixturenames", ()) for i in session.items):
        return
    cluster = _make_cluster(config)
    cluster.spawn()
    config.stash[CLUSTER] = cluster


@pytest.fixture(scope="session")
def tinykube_cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """A running cluster (etcd, apiserver, controllers, DNS, simulated nodes) for the whole session."""
    cluster = pytestconfig.stash.get(CLUSTER, None)
    if cluster is None:  # e.g. a test that asks for the fixture with request.getfixturevalue
        cluster = pytestconfig.stash[CLUSTER] = _make_cluster(pytestconfig)
        cluster.spawn()
    try:
        yield cluster.wait_ready()
    finally:
        _finish(pytestconfig, cluster)


def _finish(config: pytest.Config, cluster: Cluster) -> None:
    if cluster.keep and cluster.server:
        config.stash.setdefault(KEPT, []).append(_kept_message(cluster))
    cluster.stop()  # with keep, closes only this process's connections
    del config.stash[CLUSTER]


def _kept_message(cluster: Cluster) -> str:
    return (
        f"tinykube cluster {cluster.name} kept running: export KUBECONFIG={cluster.kubeconfig_path}\n"
        f"  stop it with: tinykube down --data-dir {cluster.data_dir}"
    )


@pytest.fixture
def namespace(tinykube_cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test; afterwards it is deleted and waited for, with everything in it."""
    name = tinykube_cluster.create_namespace(f"t-{request.node.name}")
    try:
        yield name
    finally:
        tinykube_cluster.delete_namespace(name)


@pytest.fixture
def service_account_client(tinykube_cluster: Cluster) -> Iterator[Callable[..., ApiClient]]:
    """A factory: `service_account_client("my-operator", "ns")` is a `kubernetes` ApiClient that acts as that
    ServiceAccount (made if missing; its token from a TokenRequest), so a test shows whether the RBAC objects an
    operator ships are enough. The clients are closed after the test; `tinykube_cluster.kubeconfig_for(name, ns)`
    gives a kubeconfig instead (for kubectl or a process under test)."""
    made: list[ApiClient] = []

    def make(name: str, namespace: str = "default", *, expiration: int = 3600) -> ApiClient:
        api_client = tinykube_cluster.api_client_for(name, namespace, expiration=expiration)
        made.append(api_client)
        return api_client

    try:
        yield make
    finally:
        for api_client in made:
            api_client.close()  # type: ignore[no-untyped-call]
            api_client.rest_client.pool_manager.clear()


def pytest_unconfigure(config: pytest.Config) -> None:
    """A cluster spawned for tests that then did not ask for it (skipped, interrupted) is stopped here, kept or
    not: nobody has been told about it."""
    cluster = config.stash.get(CLUSTER, None)
    if cluster is not None:
        cluster.keep = False
        cluster.stop()


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown
def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its kept cluster's message to the controller, which prints it."""
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["tinykube_kept"] = session.config.stash.get(KEPT, [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    kept = getattr(node, "workeroutput", {}).get("tinykube_kept", [])
    node.config.stash.setdefault(KEPT, []).extend(kept)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for message in config.stash.get(KEPT, []):
        terminalreporter.write_line(message)
