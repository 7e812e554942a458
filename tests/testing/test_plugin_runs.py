"""The plugin from the outside: pytest runs of a user's test module (in a directory of its own, so that only the
plugin's fixtures exist there) under xdist, with a failing test, with `--tinykube-controllers`, and with
`--tinykube-keep` — after which the kept cluster shows what the `namespace` fixture left behind: nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

USER_TESTS = """
import json, os
import pytest

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}

def record(request, cluster, **more):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    seen = {"worker": worker, "server": cluster.server, "dns": cluster.dns_address[1],
            "data_dir": str(cluster.data_dir), **more}
    path = os.path.join(os.environ["RECORDS"], request.node.name + ".json")
    with open(path, "w") as f:
        json.dump(seen, f)

@pytest.mark.parametrize("n", range(4))
def test_objects_in_my_namespace(tinykube_cluster, namespace, request, n):
    tinykube_cluster.apply([SERVICE, POD], namespace=namespace)
    endpoints = tinykube_cluster.wait_for("endpoints", "web", lambda e: e.get("subsets"), namespace=namespace)
    slices = tinykube_cluster.list("endpointslices", namespace=namespace)
    record(request, tinykube_cluster, namespace=namespace, slices=len(slices),
           addresses=len(endpoints["subsets"][0]["addresses"]))

def test_fails(tinykube_cluster):
    assert tinykube_cluster.get("namespace", "no-such-namespace") is not None
"""


NETNS_USER_TESTS = """
import subprocess

ECHO = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "echo"},
        "spec": {"containers": [{"name": "e", "image": "k8s.gcr.io/echoserver:1.4"}]}}

def test_a_real_pod_answers_inside_the_sandbox(tinykube_cluster, namespace):
    tinykube_cluster.apply(ECHO, namespace=namespace)
    pod = tinykube_cluster.wait_for("pod", "echo", "Ready", timeout=30, namespace=namespace)
    client = f"tk-{tinykube_cluster.name}.ext"  # the sandbox's external client: nothing leaves the root namespace
    url = f"http://{pod['status']['podIP']}:8080/"
    # Ready once it runs (no readiness probe): the server may still be starting, so curl retries a refusal.
    curl = ["curl", "-s", "--retry", "10", "--retry-connrefused", "--retry-delay", "1", url]
    answer = subprocess.run(["ip", "netns", "exec", client, *curl], capture_output=True, text=True)
    assert "client_address=172.20.0.250" in answer.stdout, answer
"""


def _run(tmp_path: Path, *args: str, tests: str = USER_TESTS) -> subprocess.CompletedProcess[str]:
    """pytest on a user's test module in tmp_path, as a user's project (the plugin comes from its entry point)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_users_module.py").write_text(tests)
    (tmp_path / "records").mkdir()
    plugin = (
        [] if any(e.name == "tinykube" for e in entry_points(group="pytest11")) else ["-p", "tinykube.testing.plugin"]
    )
    env = {**os.environ, "RECORDS": str(tmp_path / "records")}
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")]
    return subprocess.run(
        [*command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _records(tmp_path: Path) -> list[dict[str, str | int]]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "records").glob("*.json"))]


def test_each_xdist_worker_gets_its_own_cluster_stopped_even_after_a_failure(tmp_path: Path) -> None:
    result = _run(tmp_path, "-n", "2", "--tinykube-controllers", "*,-endpointslice")
    assert re.search(r"\b1 failed, 4 passed\b", result.stdout), result.stdout + result.stderr
    records = _records(tmp_path)
    assert len(records) == 4
    workers = {r["worker"] for r in records}
    assert workers == {"gw0", "gw1"}, records  # both workers ran some (pytest-xdist's load scheduling)
    for field in ("server", "dns", "data_dir"):
        assert len({r[field] for r in records}) == 2, (field, records)  # one cluster per worker, nothing shared
    assert all(r["addresses"] == 1 and r["slices"] == 0 for r in records), records  # no endpointslice controller
    assert not any(Path(str(r["data_dir"])).exists() for r in records)  # stopped and removed


def test_keep_leaves_the_cluster_running_and_the_namespace_fixture_left_nothing(tmp_path: Path) -> None:
    result = _run(tmp_path, "--tinykube-keep", "-k", "objects_in_my_namespace and 0")
    assert re.search(r"\b1 passed\b", result.stdout), result.stdout + result.stderr
    found = re.search(
        r"kept running: export KUBECONFIG=(\S+)\n\s+stop it with: tinykube down --data-dir (\S+)", result.stdout
    )
    assert found, result.stdout
    kubeconfig, data_dir = found.group(1), Path(found.group(2))
    try:
        (record,) = _records(tmp_path)
        env = {**os.environ, "KUBECONFIG": kubeconfig}

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60, check=False)

        assert "NotFound" in kubectl("get", "namespace", str(record["namespace"])).stderr
        leftovers = kubectl("get", "services,pods,endpoints,endpointslices", "-A", "-o", "name")
        assert leftovers.returncode == 0 and "web" not in leftovers.stdout, leftovers
    finally:
        down = [sys.executable, "-m", "tinykube.cli", "down", "--data-dir", str(data_dir)]
        subprocess.run(down, capture_output=True, timeout=60, check=False)
        stopped = not (data_dir / "cluster.json").exists()
        shutil.rmtree(data_dir.parent if data_dir.parent.name.startswith("tinykube-test-") else data_dir)
    assert stopped


@pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")
def test_the_netns_dataplane_runs_real_pods_and_removes_its_namespaces(tmp_path: Path) -> None:
    before = set(_sandbox_namespaces())
    result = _run(tmp_path, "--tinykube-dataplane", "netns", tests=NETNS_USER_TESTS)
    assert re.search(r"\b1 passed\b", result.stdout), result.stdout + result.stderr
    assert set(_sandbox_namespaces()) <= before  # the cluster's sandbox went with it


def _sandbox_namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith("tk-test-")]
