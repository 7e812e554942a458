"""Issue 17: Events expire `--event-ttl` after their last write, as upstream's (an etcd lease on the key), and the
expiry reaches watchers as a DELETED event; other kinds never expire."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, running_cluster

EVENTS = "/api/v1/namespaces/default/events"


@pytest.fixture(scope="module")
def short_ttl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("ttl") / "c", "--event-ttl", "2") as cluster:
        yield cluster


def event(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m"}


def test_an_event_goes_after_the_ttl_and_watchers_see_it_go(short_ttl: RunningCluster) -> None:
    with short_ttl.http() as api:
        created = api.post(EVENTS, json=event("short-lived"))
        assert created.status_code == 201, created.text
        kept = api.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "kept"}})
        assert kept.status_code == 201, kept.text
        rv = created.json()["metadata"]["resourceVersion"]
        deadline = time.monotonic() + 30  # bounds a hang; the TTL (2 s, plus etcd's lease granularity) is shorter
        with api.stream("GET", EVENTS, params={"watch": "true", "resourceVersion": rv, "timeoutSeconds": "30"}) as w:
            for line in w.iter_lines():
                if '"DELETED"' in line and "short-lived" in line:
                    break
                assert time.monotonic() < deadline, "the event was not deleted"
        assert api.get(f"{EVENTS}/short-lived").status_code == 404
        assert api.get("/api/v1/namespaces/default/configmaps/kept").status_code == 200


def test_the_ttl_must_be_positive(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tinykube.cli", "up", "--event-ttl", "0", "--data-dir", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "--event-ttl must be at least 1 second" in result.stderr
