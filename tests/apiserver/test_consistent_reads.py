"""Consistent reads against a real etcd that stops answering (issue 16): a GET or LIST without a resourceVersion
fails with a 5xx Status while etcd is unreachable, as upstream's do, while `resourceVersion=0` is still served from
the watch cache; and once etcd is back, reads without a resourceVersion see it again."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import RunningCluster, running_cluster
from tinykube.store.launcher import EtcdProcess, find_etcd

ENDPOINTS = "/api/v1/namespaces/default/endpoints"


@pytest.fixture
def external(tmp_path: Path) -> Iterator[tuple[EtcdProcess, RunningCluster]]:
    etcd = EtcdProcess(find_etcd(), tmp_path / "etcd" / "data")
    etcd.start()
    try:
        with running_cluster(tmp_path / "c", "--etcd-servers", etcd.url) as cluster:
            yield etcd, cluster
    finally:
        if etcd.proc is not None and etcd.proc.poll() is None:
            os.kill(etcd.proc.pid, signal.SIGCONT)  # a stopped etcd ignores the SIGTERM of stop()
        etcd.stop()


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code in (503, 504), response.text
    status = response.json()
    assert status["kind"] == "Status" and status["code"] == response.status_code
    assert status["reason"] in ("ServiceUnavailable", "Timeout"), status


def test_reads_without_resource_version_fail_while_etcd_is_unreachable(
    external: tuple[EtcdProcess, RunningCluster],
) -> None:
    etcd, cluster = external
    assert etcd.proc is not None
    with cluster.http() as api:
        created = api.post(ENDPOINTS, json={"metadata": {"name": "kept"}})
        assert created.status_code == 201, created.text
        assert api.get(f"{ENDPOINTS}/kept").status_code == 200

        os.kill(etcd.proc.pid, signal.SIGSTOP)  # silent: no refused connection, just no answer
        try:
            assert_unavailable(api.get(f"{ENDPOINTS}/kept"))
            assert_unavailable(api.get(ENDPOINTS))
            cached = api.get(f"{ENDPOINTS}/kept", params={"resourceVersion": "0"})
            assert cached.status_code == 200 and cached.json()["metadata"]["name"] == "kept"
            listed = api.get(ENDPOINTS, params={"resourceVersion": "0"})
            assert listed.status_code == 200 and "kept" in {i["metadata"]["name"] for i in listed.json()["items"]}
        finally:
            os.kill(etcd.proc.pid, signal.SIGCONT)

        back = api.get(f"{ENDPOINTS}/kept")  # the client waits out the apiserver's reconnection, if any
        assert back.status_code == 200, back.text
        assert back.json()["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]

        etcd.proc.kill()  # gone: connections refused
        etcd.proc.wait()
        assert_unavailable(api.get(f"{ENDPOINTS}/kept"))
        assert api.get(f"{ENDPOINTS}/kept", params={"resourceVersion": "0"}).status_code == 200
