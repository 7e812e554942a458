"""Shared fixtures: a real `tinykube up` (real etcd, HTTPS, bearer token) per test session (per xdist worker)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml

from tinykube.api.inprocess import CHECK_ENV
from tinykube.client.rest import RestClient
from tinykube.store.launcher import EtcdProcess, find_etcd

T = TypeVar("T")


@dataclass
class RunningCluster:
    data_dir: Path
    kubeconfig: Path
    server: str
    token: str
    ca_file: Path
    proc: subprocess.Popen[bytes]
    cache_dir: Path

    @property
    def shared_changes(self) -> Path:
        """Where the cluster writes the shared cached objects a component changed (`tinykube.api.inprocess`)."""
        return shared_changes_file(self.data_dir)

    def http(self, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        verify = ssl.create_default_context(cafile=str(self.ca_file))
        return httpx.Client(base_url=self.server, verify=verify, headers=headers, timeout=30, **kwargs)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        environ = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.cache_dir), **(env or {})}
        result = subprocess.run(
            ["kubectl", *args], input=input, capture_output=True, text=True, env=environ, timeout=60
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)


def shared_changes_file(data_dir: Path) -> Path:
    return data_dir.parent / f"{data_dir.name}.shared-changes"


def start_cluster(data_dir: Path, *extra: str) -> RunningCluster:
    """Run the real CLI, as a user would, and wait until /readyz is green. Its components are held to leaving the
    objects they share with the apiserver's cache as they got them: `stop_cluster` fails if one did not."""
    kubeconfig = data_dir / "kubeconfig"
    log = open(data_dir.parent / f"{data_dir.name}.log", "wb")  # noqa: SIM115 - kept for the child's lifetime
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tinykube.cli",
            "up",
            "--api-port",
            "0",
            "--dns-port",
            "0",
            # No node agent and no scheduler: tests set pod status themselves (the node tests start their own).
            "--nodes",
            "0",
            "--controllers",
            "*,-scheduler",
            "--data-dir",
            str(data_dir),
            "--name",
            data_dir.name,
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, CHECK_ENV: str(shared_changes_file(data_dir))},
    )
    deadline = time.monotonic() + 60
    while not (data_dir / "cluster.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"tinykube up failed:\n{(data_dir.parent / f'{data_dir.name}.log').read_text()}")
        time.sleep(0.02)
    config = yaml.safe_load(kubeconfig.read_text())
    ca_file = data_dir / "pki" / "ca.crt"
    cluster = RunningCluster(
        data_dir,
        kubeconfig,
        config["clusters"][0]["cluster"]["server"],
        config["users"][0]["user"]["token"],
        ca_file,
        proc,
        data_dir / "kubectl-cache",
    )
    with cluster.http() as client:
        while client.get("/readyz").status_code != 200:
            time.sleep(0.02)
    return cluster


def stop_cluster(cluster: RunningCluster) -> None:
    if cluster.proc.poll() is None:
        cluster.proc.send_signal(signal.SIGTERM)
        try:
            cluster.proc.wait(30)
        except subprocess.TimeoutExpired:
            cluster.proc.kill()
            cluster.proc.wait()
    if cluster.shared_changes.exists():
        changed = cluster.shared_changes.read_text()
        raise AssertionError(f"a component changed objects it shares with the watch cache:\n{changed}")


@contextlib.contextmanager
def running_cluster(data_dir: Path, *extra: str) -> Iterator[RunningCluster]:
    """`start_cluster`, stopped afterwards whatever happens: the body of a module's own cluster fixture."""
    running = start_cluster(data_dir, *extra)
    try:
        yield running
    finally:
        stop_cluster(running)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("clusters") / "test"
    running = start_cluster(data_dir)
    try:
        yield running
    finally:
        stop_cluster(running)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def api(cluster: RunningCluster) -> Iterator[httpx.Client]:
    with cluster.http() as client:
        yield client


@contextlib.contextmanager
def fresh_namespace(api: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace named after the test, deleted afterwards (on any cluster's client)."""
    readable = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"t-{readable}-{secrets.token_hex(3)}"  # unique: a namespace of the same test may still be terminating
    response = api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert response.status_code == 201, response.text
    try:
        yield name
    finally:
        api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def namespace(api: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test on the shared cluster, deleted afterwards."""
    with fresh_namespace(api, request) as name:
        yield name


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A bare etcd of the module's own (tests give their keys a prefix of their own)."""
    process = EtcdProcess(find_etcd(), tmp_path_factory.mktemp("etcd") / "data")
    process.start()
    try:
        yield process.url
    finally:
        process.stop()


def eventually(probe: Callable[[], T | None], timeout: float = 30.0, what: str = "condition") -> T:
    """Poll `probe` until it returns something truthy (no timing is asserted: the deadline only bounds a hang)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


class RecordingClient(RestClient):
    """The REST client, noting every request that could write."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writes: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        if method != "GET":
            self.writes.append((method, path))
        return await super().request(method, path, body, **params)


def interrupt(proc: subprocess.Popen[Any], timeout: float = 30) -> int | None:
    """SIGINT (Ctrl-C), then SIGKILL if `proc` is still there `timeout` s later; the status it ended with after
    SIGINT (or had already), None if it had to be killed."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def readline(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    """One line of `proc`'s output, or fail after `timeout` seconds (read in a thread)."""
    assert proc.stdout is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    assert box, f"no line within {timeout}s"
    return box[0]
