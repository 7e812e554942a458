"""The pytest plugin's costs: `Cluster` start-up (what the `tinykube_cluster` fixture waits for at most, once per
session) and `Cluster.reset()` after a small test's worth of objects.

    python fixture.py [RUNS] [RESETS]     # defaults: 7 start-ups, 20 resets

Each start-up runs in a fresh Python process, as a pytest session would, and counts from before
`import tinykube.testing` to a cluster ready for requests (the fixture itself starts the process while pytest
collects, so a session usually waits less). Each reset follows a namespace with a Service and 3 pods, a Service
and a pod added to `default`, and a label put on `default`, all created and made ready first (not timed).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

from tinykube.testing import Cluster

START = """
import json, time
began = time.perf_counter()
from tinykube.testing import Cluster
with Cluster() as cluster:
    print(json.dumps(time.perf_counter() - began))
"""


def _pod(name: str) -> dict[str, object]:
    spec = {"containers": [{"name": "c", "image": "nginx"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec}


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def startups(runs: int) -> list[float]:
    took = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, check=True, timeout=120)
        took.append(float(json.loads(out.stdout)))
    return took


def _workload(cluster: Cluster) -> None:
    http = cluster.http
    assert http.post("/api/v1/namespaces", json={"metadata": {"name": "work"}}).status_code == 201
    for namespace, pods in (("work", ("a", "b", "c")), ("default", ("d",))):
        assert http.post(f"/api/v1/namespaces/{namespace}/services", json=SERVICE).status_code == 201
        for name in pods:
            assert http.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod(name)).status_code == 201
    patch = {"metadata": {"labels": {"touched": "yes"}}}
    http.patch("/api/v1/namespaces/default", json=patch, headers={"Content-Type": "application/merge-patch+json"})
    cluster.wait_for("endpointslice", None, _three_ready, namespace="work", selector="kubernetes.io/service-name=web")


def _three_ready(slices: list[dict[str, Any]]) -> bool:
    return sum(len(s.get("endpoints") or []) for s in slices) == 3


def resets(count: int) -> list[float]:
    took = []
    with Cluster() as cluster:
        for _ in range(count):
            _workload(cluster)
            began = time.perf_counter()
            cluster.reset()
            took.append(time.perf_counter() - began)
    return took


def _report(what: str, took: list[float]) -> None:
    print(f"{what}: median {statistics.median(took) * 1000:.0f} ms, max {max(took) * 1000:.0f} ms ({len(took)} runs)")


def main(runs: int = 7, count: int = 20) -> None:
    _report("Cluster start-up (fresh process, import to ready)", startups(runs))
    _report("Cluster.reset() after a test's worth of objects", resets(count))


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
