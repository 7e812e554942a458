"""`tinykube proxy --cleanup` against a running netns cluster: the rules go, and the proxy puts them back at its
next sync (a Service change finds the table missing, so a full sync follows)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import netns_cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"pc{os.getpid()}", "--nodes", "1") as running:
        yield running


def tables(cluster: RunningCluster) -> str:
    node = f"tk-{cluster.data_dir.name}.node-1"
    return subprocess.run(["ip", "netns", "exec", node, "nft", "list", "tables"], capture_output=True, text=True).stdout


def proxy_cleanup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tinykube.cli", "proxy", "--cleanup", *args], capture_output=True, text=True, timeout=60
    )


def test_cleanup_removes_the_rules_and_the_proxy_restores_them(cluster: RunningCluster) -> None:
    name = cluster.data_dir.name
    eventually(lambda: "table ip kube-proxy" in tables(cluster), what="the proxy's table")
    done = proxy_cleanup("--name", name, "--node", "node-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tk-{name}.node-1: nftables table ip kube-proxy"
    assert "kube-proxy" not in tables(cluster)
    again = proxy_cleanup("--name", name)
    assert again.stdout.strip() == f"tk-{name}.node-1: nothing to remove"

    with cluster.http() as api:
        service = {"metadata": {"name": "after-cleanup"}, "spec": {"ports": [{"port": 80}]}}
        assert api.post("/api/v1/namespaces/default/services", json=service).status_code == 201
    eventually(lambda: "table ip kube-proxy" in tables(cluster), what="the table programmed again")


def test_cleanup_of_an_unknown_node_fails_in_one_line(cluster: RunningCluster) -> None:
    done = proxy_cleanup("--name", cluster.data_dir.name, "--node", "node-9")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "no network namespace" in done.stderr
