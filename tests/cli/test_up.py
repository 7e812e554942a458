"""`tinykube up` and `tinykube kubeconfig` as a user runs them: restarts keep state, errors are one line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import start_cluster, stop_cluster


def tinykube(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tinykube.cli", *args], capture_output=True, text=True, timeout=60)


def test_state_survives_a_restart_and_old_watches_expire(tmp_path: Path) -> None:
    data_dir = tmp_path / "persist"
    first = start_cluster(data_dir)
    try:
        with first.http() as api:
            # Namespaces: nothing deletes them behind the test's back (the endpoints controller deletes
            # Endpoints whose Service is missing, as upstream does, so those would race with it).
            created = api.post("/api/v1/namespaces", json={"metadata": {"name": "kept"}}).json()
            for i in range(3):  # advance the revision past the object's
                api.post("/api/v1/namespaces", json={"metadata": {"name": f"x{i}"}})
    finally:
        stop_cluster(first)
    second = start_cluster(data_dir)
    try:
        with second.http() as api:
            kept = api.get("/api/v1/namespaces/kept").json()
            assert kept["metadata"]["uid"] == created["metadata"]["uid"]
            old = created["metadata"]["resourceVersion"]
            response = api.get("/api/v1/namespaces", params={"watch": "true", "resourceVersion": old})
            assert response.status_code == 410, response.text
            assert response.json()["reason"] == "Expired"
            assert response.json()["message"].startswith(f"too old resource version: {old} (")
    finally:
        stop_cluster(second)
    assert not list(data_dir.glob("cluster.json"))


def test_kubeconfig_command_prints_the_path(tmp_path: Path) -> None:
    data_dir = tmp_path / "kc"
    running = start_cluster(data_dir)
    try:
        result = tinykube("kubeconfig", "--data-dir", str(data_dir))
        assert result.returncode == 0 and Path(result.stdout.strip()) == running.kubeconfig.resolve()
        config = running.kubeconfig.read_text()
        assert "tinykube-kc" in config and "certificate-authority-data" in config and "token:" in config
        assert json.loads((data_dir / "cluster.json").read_text())["server"].startswith("https://127.0.0.1:")
    finally:
        stop_cluster(running)


def test_kubeconfig_of_an_unknown_cluster_fails_in_one_line(tmp_path: Path) -> None:
    """It says what is missing, and names no cluster it was not asked about (not the default 'tinykube')."""
    nothing = tmp_path / "nothing"
    result = tinykube("kubeconfig", "--data-dir", str(nothing))
    assert result.returncode == 1 and result.stdout == "" and result.stderr.count("\n") == 1, result
    assert result.stderr.startswith(f"tinykube: no cluster in {nothing}: it has no cluster.json or kubeconfig")
    assert "'tinykube'" not in result.stderr


def test_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = tinykube("up", "--api-port", str(port), "--data-dir", str(tmp_path / "busy"))
    assert result.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr


def test_bad_port_flag_is_refused(tmp_path: Path) -> None:
    result = tinykube("up", "--api-port", "70000", "--data-dir", str(tmp_path / "bad"))
    assert result.returncode == 1 and "--api-port must be between 0 and 65535" in result.stderr


def test_more_nodes_than_the_cluster_cidr_has_ranges_for_is_refused(tmp_path: Path) -> None:
    result = tinykube("up", "--nodes", "300", "--data-dir", str(tmp_path / "wide"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result
    assert "--nodes 300: --cluster-cidr 10.244.0.0/16 has pod ranges (/24) for 256 nodes" in result.stderr
    result = tinykube("up", "--nodes", "5001", "--data-dir", str(tmp_path / "many"))
    assert result.returncode == 1 and "--nodes must be between 0 and 5000, not 5001" in result.stderr


def test_an_envtest_like_control_plane(tmp_path: Path) -> None:
    """What envtest runs: an apiserver without the ServiceAccount admission plugin, no controllers and no DNS, so a
    pod naming a missing ServiceAccount is stored and the only Service is `default/kubernetes`."""
    flags = ("--nodes", "0", "--controllers", "", "--dns-port", "-1", "--disable-admission-plugins", "ServiceAccount")
    running = start_cluster(tmp_path / "envtest", *flags)
    try:
        with running.http() as api:
            services = api.get("/api/v1/services").json()["items"]
            names = [(s["metadata"]["namespace"], s["metadata"]["name"]) for s in services]
            assert names == [("default", "kubernetes")]
            spec = {"serviceAccountName": "nobody", "containers": [{"name": "c", "image": "x"}]}
            body = {"metadata": {"name": "p"}, "spec": spec}
            created = api.post("/api/v1/namespaces/default/pods", json=body)
            assert created.status_code == 201, created.text
            assert "volumes" not in created.json()["spec"]  # no token volume either: that is the plugin's too
    finally:
        stop_cluster(running)


def test_an_unknown_admission_plugin_is_refused(tmp_path: Path) -> None:
    result = tinykube("up", "--disable-admission-plugins", "ServiceAccount,Bogus", "--data-dir", str(tmp_path / "x"))
    assert result.returncode == 1 and result.stderr == 'tinykube: disable-admission-plugins plugin "Bogus" is unknown\n'


def test_external_etcd_is_used_and_left_running(tmp_path: Path) -> None:
    from tinykube.store.launcher import EtcdProcess, find_etcd

    etcd = EtcdProcess(find_etcd(), tmp_path / "external" / "data")
    etcd.start()
    try:
        running = start_cluster(tmp_path / "ext", "--etcd-servers", etcd.url, "--etcd-prefix", "/other/")
        try:
            with running.http() as api:
                assert api.get("/api/v1/namespaces/default").status_code == 200
            assert not (tmp_path / "ext" / "etcd").exists()
        finally:
            stop_cluster(running)
        assert etcd.proc is not None and etcd.proc.poll() is None
    finally:
        etcd.stop()


def test_the_netns_dataplane_is_imported_only_when_asked_for() -> None:
    """`up` with simulated pods (its loopback proxy included) does without the netns runtime's imports."""
    script = (
        "import sys, tinykube.up, tinykube.wiring\n"
        "print(sorted(m for m in sys.modules if m.startswith('tinykube.node.netns')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
