"""A real operator framework against tinykube, run as its users run it: `kopf run` (kopf from PyPI) with the
operator of `operators/webapp.py`, which turns a `WebApp` custom resource into a Deployment and a Service. The
test creates the custom resource and sees what a user would: the Service gets endpoints from the Deployment's
pods and a name in the cluster DNS, the operator's status lands on the custom resource, scaling the custom
resource scales the Deployment, and deleting it takes the Deployment and the Service along (garbage collector).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dnslib import QTYPE, DNSRecord

from tests.conftest import RunningCluster, running_cluster

OPERATOR = Path(__file__).parent / "operators" / "webapp.py"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "webapps.tinykube.example.com"},
    "spec": {
        "group": "tinykube.example.com",
        "scope": "Namespaced",
        "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp", "shortNames": ["wa"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer", "minimum": 0, "default": 2},
                                    "port": {"type": "integer", "default": 8080},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """A cluster of the module's own with a node and every controller: pods run (simulated) and get endpoints."""
    with running_cluster(tmp_path_factory.mktemp("kopf") / "c", "--nodes", "1", "--controllers", "*") as running:
        yield running


def eventually(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


@pytest.fixture
def operator(cluster: RunningCluster, api: httpx.Client, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The CRD installed, then `kopf run --standalone` watching the test's namespace; its log is returned."""
    response = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)
    assert response.status_code in (201, 409), response.text
    log = tmp_path / "kopf.log"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    command = [
        sys.executable,
        "-m",
        "kopf",
        "run",
        "--standalone",
        "--verbose",
        "--namespace",
        namespace,
        str(OPERATOR),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        eventually(lambda: proc.poll() is not None or _watching(log, namespace))
        assert proc.poll() is None, log.read_text()
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _watching(log: Path, namespace: str) -> bool:
    return (
        f"Starting the watch-stream for webapps.v1.tinykube.example.com in '{namespace}'".encode() in log.read_bytes()
    )


def test_a_kopf_operator_turns_a_custom_resource_into_a_served_service(
    cluster: RunningCluster, api: httpx.Client, namespace: str, operator: Path
) -> None:
    webapps = f"/apis/tinykube.example.com/v1/namespaces/{namespace}/webapps"
    body = {"apiVersion": "tinykube.example.com/v1", "kind": "WebApp", "metadata": {"name": "hello"},
            "spec": {"image": "nginx:1.27"}}  # fmt: skip
    assert api.post(webapps, json=body).status_code == 201

    def ready_endpoints() -> list[str]:
        slices = api.get(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                         params={"labelSelector": "kubernetes.io/service-name=hello"}).json()["items"]  # fmt: skip
        return [
            a for s in slices for e in s.get("endpoints") or [] if e["conditions"].get("ready") for a in e["addresses"]
        ]

    try:
        addresses = eventually(lambda: len(ready_endpoints()) == 2 and ready_endpoints())
    except AssertionError:
        raise AssertionError(f"no endpoints; operator log:\n{operator.read_text()}") from None
    assert len(addresses) == 2  # the schema's default of 2 replicas
    service = api.get(f"/api/v1/namespaces/{namespace}/services/hello").json()
    owner = service["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("WebApp", "hello", True)

    dns = cluster_dns(cluster)
    reply = DNSRecord.parse(DNSRecord.question(f"hello.{namespace}.svc.cluster.local").send(*dns, timeout=5))
    assert [str(r.rdata) for r in reply.rr if r.rtype == QTYPE.A] == [service["spec"]["clusterIP"]]

    status = eventually(lambda: (api.get(f"{webapps}/hello").json().get("status") or {}).get("create"))
    assert status == {"service": "hello", "clusterIP": service["spec"]["clusterIP"]}

    patch = {"spec": {"replicas": 3}}
    response = api.patch(f"{webapps}/hello", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200
    eventually(lambda: len(ready_endpoints()) == 3)

    assert api.delete(f"{webapps}/hello").status_code == 200
    eventually(lambda: api.get(f"/api/v1/namespaces/{namespace}/services/hello").status_code == 404)
    eventually(lambda: api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/hello").status_code == 404)


def cluster_dns(cluster: RunningCluster) -> tuple[str, int]:
    import json

    host, port = json.loads((cluster.data_dir / "cluster.json").read_text())["dns"].rsplit(":", 1)
    return host, int(port)
