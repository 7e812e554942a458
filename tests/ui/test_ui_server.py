"""The live picture's server on a simulated cluster (no root, no browser): the token, the event stream, a
Service's details."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import RunningCluster, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("ui") / "ui", "--ui-port", "0") as running:
        yield running


def address(cluster: RunningCluster) -> str:
    found: str = json.loads(Path(cluster.data_dir / "cluster.json").read_text())["ui"]
    return found


def test_the_stream_starts_with_a_snapshot_and_details_answer(cluster: RunningCluster) -> None:
    ui = address(cluster)
    headers = {"Authorization": f"Bearer {cluster.token}"}
    assert httpx.get(ui + "events").status_code == 401
    with httpx.stream("GET", ui + "events", headers=headers, timeout=10) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "event: snapshot"
        first = json.loads(next(lines).removeprefix("data: "))
    assert first["meta"]["dataplane"] == "none" and first["meta"]["lan"] is None
    ids = {element["id"] for element in first["elements"]}
    assert {"svc/default/kubernetes", "svc/kube-system/kube-dns"} <= ids
    details = httpx.get(ui + "api/services/default/kubernetes", headers=headers).json()
    assert details["dns"]["queries"][0]["records"][0].split()[-1] == "10.96.0.1"
    assert ["KUBERNETES_SERVICE_HOST", "10.96.0.1"] in details["env"]["own"]
    assert details["rules"]["error"] == "no kernel rules: pods are simulated"
    assert httpx.get(ui + "api/services/default/nope", headers=headers).status_code == 404
    for name in ("app.js", "style.css"):
        assert httpx.get(f"{ui}static/{name}", headers=headers).status_code == 200
    assert httpx.get(f"{ui}static/../server.py", headers=headers).status_code == 404


def test_a_new_service_comes_as_a_diff(cluster: RunningCluster) -> None:
    ui = address(cluster)
    with httpx.stream("GET", ui + "events", headers={"Authorization": f"Bearer {cluster.token}"}, timeout=10) as stream:
        lines = stream.iter_lines()
        assert next(lines) == "event: snapshot"
        next(lines)
        with cluster.http() as api:
            service = {"metadata": {"name": "fresh"}, "spec": {"ports": [{"port": 80}]}}
            assert api.post("/api/v1/namespaces/default/services", json=service).status_code == 201
        for line in lines:
            if line.startswith("data: "):
                change = json.loads(line.removeprefix("data: "))
                if any(element["id"] == "svc/default/fresh" for element in change["put"]):
                    break
        fresh = next(e for e in change["put"] if e["id"] == "svc/default/fresh")
        assert fresh["clusterIP"].startswith("10.96.") and fresh["ports"][0]["port"] == 80
