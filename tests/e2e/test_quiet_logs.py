"""Ordinary events are quiet (issue 15, part 4): deleting a busy namespace and stopping the cluster are everyday
races (objects already gone, 404s and 409s on writes, creates refused in a Terminating namespace, watches closed at
shutdown). `tinykube up` logs them in one line at most, below WARNING; a traceback is only for a real bug.

The cluster is a real `tinykube up` of the test's own (two simulated nodes, every controller), whose terminal output
the test reads whole after stopping it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import eventually, running_cluster

NAMESPACES = ("quiet-a", "quiet-b", "quiet-c")
APPS = ("web", "api", "db")
REPLICAS = 3
LOUD = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")  # the `up` log format: "<date> <time> <LEVEL> <logger>: ..."


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 8080}]}]},
            },
        },
    }


def service(name: str, type_: str = "ClusterIP") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"type": type_, "selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def post(http: httpx.Client, path: str, body: dict[str, Any]) -> None:
    response = http.post(path, json=body)
    assert response.status_code == 201, response.text


def populate(http: httpx.Client, namespace: str) -> None:
    """Deployments with replicas behind Services (one a NodePort), and a bare pod in a Service of its own."""
    post(http, "/api/v1/namespaces", {"metadata": {"name": namespace}})
    for app in APPS:
        post(http, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment(app))
        kind = "NodePort" if app == "web" else "ClusterIP"
        post(http, f"/api/v1/namespaces/{namespace}/services", service(app, kind))
    bare = {
        "metadata": {"name": "bare", "labels": {"app": "bare"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    post(http, f"/api/v1/namespaces/{namespace}/pods", bare)
    post(http, f"/api/v1/namespaces/{namespace}/services", service("bare"))


def all_available(http: httpx.Client) -> bool:
    for namespace in NAMESPACES:
        items = http.get(f"/apis/apps/v1/namespaces/{namespace}/deployments").json()["items"]
        if len(items) != len(APPS) or any((d.get("status") or {}).get("availableReplicas") != REPLICAS for d in items):
            return False
        slices = http.get(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices").json()["items"]
        if sum(len(s.get("endpoints") or []) for s in slices) < len(APPS) * REPLICAS + 1:
            return False
    return True


def test_deleting_busy_namespaces_and_stopping_log_nothing_loud(tmp_path: Path) -> None:
    data_dir = tmp_path / "quiet"
    with running_cluster(data_dir, "--nodes", "2", "--controllers", "*") as cluster, cluster.http() as http:

        def nodes_ready() -> bool:
            nodes = http.get("/api/v1/nodes").json()["items"]
            return len([n for n in nodes if n["spec"].get("podCIDR")]) == 2

        eventually(nodes_ready, what="two nodes with pod CIDRs")
        for namespace in NAMESPACES:
            populate(http, namespace)
        eventually(lambda: all_available(http), timeout=60, what="every Deployment available, every Service served")

        for namespace in NAMESPACES:
            assert http.delete(f"/api/v1/namespaces/{namespace}").status_code == 200
        eventually(
            lambda: all(http.get(f"/api/v1/namespaces/{ns}").status_code == 404 for ns in NAMESPACES),
            timeout=90,
            what="the namespaces gone",
        )
    # stopped (SIGTERM, as Ctrl-C): the log now holds shutdown too
    output = (data_dir.parent / f"{data_dir.name}.log").read_text(errors="replace")
    loud = [line for line in output.splitlines() if LOUD.match(line)]
    assert not loud, "logged at WARNING or above:\n" + "\n".join(loud[:20]) + f"\n({len(loud)} lines)"
    assert "Traceback" not in output, f"{output.count('Traceback')} tracebacks:\n{output[-6000:]}"
