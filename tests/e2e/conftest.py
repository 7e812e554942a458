"""Fixtures for the end-to-end tests: the machine's kubectl and the `kubernetes` Python client against the
session's real cluster (tests/conftest.py), each test in its own namespace."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

if TYPE_CHECKING:
    from tests.conftest import RunningCluster


@dataclass
class Kubectl:
    """kubectl bound to one cluster and one namespace (`-n` is added to every command)."""

    cluster: RunningCluster
    namespace: str
    workdir: Path

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run and require success."""
        return self.cluster.kubectl("-n", self.namespace, *args, input=input, env=env)

    def fail(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run and require failure; the result carries kubectl's stderr."""
        result = self.cluster.kubectl("-n", self.namespace, *args, input=input, check=False)
        assert result.returncode != 0, f"kubectl {' '.join(args)} unexpectedly succeeded:\n{result.stdout}"
        return result

    def at(self, namespace: str) -> Kubectl:
        """The same kubectl in another namespace."""
        return dataclasses.replace(self, namespace=namespace)

    def json(self, *args: str) -> Any:
        return json.loads(self("-o", "json", *args).stdout)

    def manifest(self, name: str, text: str) -> Path:
        """Write a manifest file (so kubectl's messages name a file, as they do for users)."""
        path = self.workdir / name
        path.write_text(text)
        return path

    def apply(self, text: str, *args: str, name: str = "manifest.yaml") -> subprocess.CompletedProcess[str]:
        return self("apply", "-f", str(self.manifest(name, text)), *args)

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig), "KUBECACHEDIR": str(self.cluster.cache_dir)}


@pytest.fixture
def kubectl(cluster: RunningCluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, namespace, tmp_path)


@dataclass
class Background:
    """A long-running kubectl (e.g. `get -w`) whose stdout lines are collected by a reader thread."""

    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def start(self) -> Background:
        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self._queue.put(line.rstrip("\n"))
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()
        return self

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 15) -> str:
        """The first new line matching `predicate` (earlier lines stay in `lines`)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                self._queue.put(None)
                break
            self.lines.append(line)
            if predicate(line):
                return line
        stderr = ""
        if self.proc.poll() is not None and self.proc.stderr is not None:
            stderr = self.proc.stderr.read()
        raise AssertionError(f"no matching line within {timeout}s; got {self.lines!r}; stderr {stderr!r}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def background(kubectl: Kubectl) -> Iterator[Callable[..., Background]]:
    """Start kubectl in the background in the test's namespace; every process is killed at teardown."""
    started: list[Background] = []

    def start(*args: str) -> Background:
        proc = subprocess.Popen(
            ["kubectl", "-n", kubectl.namespace, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=kubectl.env(),
        )
        started.append(Background(proc).start())
        return started[-1]

    yield start
    for job in started:
        job.stop()


@pytest.fixture
def extra_namespaces(api: httpx.Client, namespace: str) -> Iterator[Callable[[str], str]]:
    """Names for namespaces a test creates itself (unique per test); whatever exists is deleted afterwards."""
    names: list[str] = []

    def make(suffix: str) -> str:
        names.append(f"{namespace[:50]}-{suffix}")
        return names[-1]

    yield make
    for name in names:
        api.delete(f"/api/v1/namespaces/{name}")


NODE_STATUS = {
    "addresses": [{"type": "InternalIP", "address": "192.0.2.10"}, {"type": "Hostname", "address": "node-a"}],
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": "2024-01-01T00:00:00Z",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    ],
    "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
    "nodeInfo": {
        "kubeletVersion": "v1.32.0",
        "osImage": "Debian GNU/Linux 12 (bookworm)",
        "kernelVersion": "6.1.0-test",
        "containerRuntimeVersion": "containerd://1.7.0",
        "architecture": "amd64",
        "operatingSystem": "linux",
        "machineID": "m",
        "systemUUID": "s",
        "bootID": "b",
        "kubeProxyVersion": "",
    },
}


@pytest.fixture
def node(api: httpx.Client, namespace: str) -> Iterator[str]:
    """A Node (cluster-scoped, so named after the test's namespace) with a kubelet-like status."""
    name = f"node-{namespace}"[:63].rstrip("-")
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/control-plane": "",
            },
        },
        "spec": {"podCIDR": "10.244.1.0/24"},
    }
    response = api.post("/api/v1/nodes", json=body)
    assert response.status_code == 201, response.text
    # status goes through /status: the fixture must not depend on what create keeps (a test checks that)
    response = api.patch(
        f"/api/v1/nodes/{name}/status",
        json={"status": NODE_STATUS},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    yield name
    api.delete(f"/api/v1/nodes/{name}")


# ---- the Python client -------------------------------------------------------------------------------------


@pytest.fixture
def k8s_client(cluster: RunningCluster) -> Iterator[k8s.ApiClient]:
    """An ApiClient of its own from the cluster's kubeconfig; the library's global default stays untouched."""
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    api_client = k8s.ApiClient(configuration)
    try:
        yield api_client
    finally:
        api_client.close()  # the thread pool only: the library leaves its keep-alive connections open
        # an idle TLS connection left open stalls the cluster's shutdown (uvicorn waits for it), so close them
        api_client.rest_client.pool_manager.clear()


@pytest.fixture
def core_v1(k8s_client: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(k8s_client)


@pytest.fixture
def discovery_v1(k8s_client: k8s.ApiClient) -> k8s.DiscoveryV1Api:
    return k8s.DiscoveryV1Api(k8s_client)
