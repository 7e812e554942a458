"""The README's first minutes, as a new user runs them: `tinykube kubeconfig` prints a path or says in one line what
is missing (exit status 1), the quick start's shell lines stop there rather than go on against `~/.kube/config`'s
cluster, the Python client snippet finds the kubeconfig by itself, and `tinykube status` tells the ports that
`--api-port 0 --dns-port 0` chose. Each runs in a home of its own (XDG_DATA_HOME, so the default data dirs are the
test's), with `tinykube` on PATH."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dnslib import DNSRecord

from tests.conftest import RunningCluster, start_cluster, stop_cluster

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(after: str, language: str) -> str:
    """The first ```language block after the text `after` in the README."""
    text = README.read_text()
    assert after in text, f"README has no {after!r}"
    return text.split(after, 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def quick_start_until_first_kubectl() -> str:
    """The kubectl quick start's lines from after `tinykube up` to its first kubectl command (comments dropped)."""
    lines = []
    for line in readme_block("## kubectl quick start", "sh").splitlines():
        command = line.split("  #", 1)[0].strip()
        if command.startswith("tinykube up"):
            continue
        lines.append(command)
        if command.startswith("kubectl"):
            break
    return "\n".join(lines)


def home(root: Path) -> dict[str, str]:
    """The environment of a user whose tinykube state lives under `root`, with `tinykube` on PATH."""
    bindir = root / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    wrapper = bindir / "tinykube"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m tinykube.cli "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "XDG_DATA_HOME": str(root / "share"), "PATH": f"{bindir}:{os.environ['PATH']}"}
    env["KUBECACHEDIR"] = str(root / "kube-cache")
    env.pop("KUBECONFIG", None)
    return env


def tinykube(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tinykube.cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env=env)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1 and result.stdout == "", result
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tinykube: "), result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], RunningCluster]]:
    """A user's default cluster ('tinykube' in the default data dir), on free ports (simulated: nothing on the
    machine is named after it)."""
    root = tmp_path_factory.mktemp("home")
    env = home(root)
    data_dir = root / "share" / "tinykube" / "tinykube"
    data_dir.parent.mkdir(parents=True)
    running = start_cluster(data_dir)
    try:
        yield env, running
    finally:
        stop_cluster(running)


def test_quick_start_stops_where_there_is_no_cluster(tmp_path: Path) -> None:
    env = home(tmp_path)
    lines = quick_start_until_first_kubectl()
    assert "KUBECONFIG=$(tinykube kubeconfig)" in lines
    # A script under `set -e` stops at the assignment; kubectl (here a stand-in) never runs.
    stopped = bash(f'set -e\nkubectl() {{ echo "kubectl ran: KUBECONFIG=$KUBECONFIG"; }}\n{lines}\necho end', env)
    assert stopped.returncode == 1 and stopped.stdout == "", stopped
    assert stopped.stderr.count("\n") == 1, stopped.stderr
    assert stopped.stderr.startswith("tinykube: no cluster 'tinykube': ")
    assert "no cluster.json or kubeconfig" in stopped.stderr and "tinykube up" in stopped.stderr
    # Typed line by line, the assignment's status is tinykube's: `&&` after it goes no further.
    first = lines.splitlines()[0]
    assert bash(f"{first} && echo went-on; echo status=$?", env).stdout == "status=1\n"
    # The form the README warns about: `export` succeeds whatever the substitution printed.
    assert bash("export KUBECONFIG=$(tinykube kubeconfig); echo status=$?", env).stdout == "status=0\n"


def test_quick_start_and_python_client_reach_the_default_cluster(
    user: tuple[dict[str, str], RunningCluster],
) -> None:
    env, running = user
    shell = bash(f"set -e\n{quick_start_until_first_kubectl()}\necho KUBECONFIG=$KUBECONFIG", env)
    assert shell.returncode == 0, shell.stderr
    assert "kube-system" in shell.stdout and f"KUBECONFIG={running.kubeconfig.resolve()}\n" in shell.stdout

    snippet = readme_block("The official Python client works the same way", "python")
    assert "/root/" not in snippet and "tinykube" in snippet
    client = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=60, env=env)
    assert client.returncode == 0, client.stderr
    assert "'default'" in client.stdout and "'kube-system'" in client.stdout


def test_kubeconfig_refuses_a_name_the_data_dir_disagrees_with(user: tuple[dict[str, str], RunningCluster]) -> None:
    env, running = user
    refused = one_line(tinykube("kubeconfig", "--data-dir", str(running.data_dir), "--name", "other", env=env))
    assert f"--name other and --data-dir {running.data_dir} disagree" in refused
    assert "records cluster 'tinykube'" in refused
    # --name alone finds that name's default data dir: nothing there.
    missing = one_line(tinykube("kubeconfig", "--name", "other", env=env))
    assert missing.startswith("tinykube: no cluster 'other': ")


def test_kubeconfig_whose_file_is_gone_fails(user: tuple[dict[str, str], RunningCluster]) -> None:
    env, running = user
    aside = running.data_dir / "kubeconfig.aside"
    running.kubeconfig.rename(aside)
    try:
        failed = one_line(tinykube("kubeconfig", env=env))
    finally:
        aside.rename(running.kubeconfig)
    assert f"has no kubeconfig: {running.kubeconfig.resolve()}" in failed and "is gone" in failed


def test_status_tells_the_ports_up_chose(user: tuple[dict[str, str], RunningCluster]) -> None:
    env, running = user
    result = tinykube("status", env=env)
    assert result.returncode == 0 and result.stderr == "", result
    rows = dict(line.split(None, 1) for line in result.stdout.splitlines())
    recorded = json.loads((running.data_dir / "cluster.json").read_text())
    assert rows["cluster"] == "tinykube" and rows["pid"] == str(running.proc.pid)
    assert rows["apiserver"] == running.server == recorded["server"]
    assert rows["kubeconfig"] == str(running.kubeconfig.resolve())
    assert rows["data-dir"] == str(running.data_dir.resolve())
    with running.http() as api:
        assert api.get("/readyz").status_code == 200
    host, port = rows["dns"].rsplit(":", 1)
    answer = DNSRecord.parse(
        DNSRecord.question("kubernetes.default.svc.cluster.local").send(host, int(port), timeout=5)
    )
    assert [str(record.rdata) for record in answer.rr] == ["10.96.0.1"]


def test_a_stopped_cluster(tmp_path: Path) -> None:
    """Its kubeconfig is still its own (printed, with a note on stderr); `status` says it is not running."""
    data_dir = tmp_path / "stopped"
    stop_cluster(start_cluster(data_dir))
    kubeconfig = tinykube("kubeconfig", "--data-dir", str(data_dir))
    assert kubeconfig.returncode == 0 and kubeconfig.stdout == f"{(data_dir / 'kubeconfig').resolve()}\n"
    assert (
        kubeconfig.stderr
        == f"tinykube: cluster in {data_dir} is not running (its kubeconfig serves again once it does)\n"
    )
    status = one_line(tinykube("status", "--data-dir", str(data_dir)))
    assert f"is not running (no cluster.json in {data_dir})" in status


def test_busy_dns_port_says_how_to_choose_another(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        result = tinykube("up", "--api-port", "0", "--dns-port", str(port), "--data-dir", str(tmp_path / "busy"))
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert f"cannot listen on 127.0.0.1:{port} for DNS" in result.stderr
    assert "choose another --dns-port; 0 picks a free one" in result.stderr
    shutil.rmtree(tmp_path / "busy", ignore_errors=True)
