"""kubectl's SPDY paths end to end on the netns dataplane: exec with the WebSocket switched off
(`KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`: a raw `Upgrade: SPDY/3.1` relayed by the apiserver to the node agent),
port-forward over raw SPDY (`KUBECTL_PORT_FORWARD_WEBSOCKETS=false`) and with kubectl's default (SPDY tunnelled in
a WebSocket, or its fallback)."""

from __future__ import annotations

import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest

from tests.conftest import RunningCluster
from tests.e2e.test_netns_dataplane import netns_cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  containers:
  - {name: shell, image: busybox, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: web
    image: python
    command: [python3, -m, http.server, "8080"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
"""

NO_WEBSOCKETS = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false", "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"sp{os.getpid()}", "--nodes", "1", "--controllers", "*") as running:
        running.kubectl("apply", "-f", "-", input=PODS)
        for pod in ("shell", "web"):
            running.kubectl("wait", "--for=condition=Ready", f"pod/{pod}", "--timeout=60s")
        yield running


def test_exec_over_spdy_returns_output_and_exit_code(sandbox: RunningCluster) -> None:
    script = "echo out; echo oops >&2; exit 3"
    result = sandbox.kubectl("exec", "shell", "--", "sh", "-c", script, check=False, env=NO_WEBSOCKETS)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "out\n"
    assert "oops" in result.stderr and "command terminated with exit code 3" in result.stderr


def test_exec_over_spdy_passes_stdin_to_its_end(sandbox: RunningCluster) -> None:
    text = "".join(f"line {i}\n" for i in range(2000))
    result = sandbox.kubectl("exec", "-i", "shell", "--", "sh", "-c", "cat; echo done", input=text, env=NO_WEBSOCKETS)
    assert result.stdout == text + "done\n"


@pytest.mark.parametrize("env", [NO_WEBSOCKETS, {}], ids=["raw-spdy", "default"])
def test_port_forward(sandbox: RunningCluster, env: dict[str, str]) -> None:
    environ = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir), **env}
    forward = subprocess.Popen(
        ["kubectl", "port-forward", "pod/web", ":8080", ":9"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    try:
        assert forward.stdout is not None
        ports = []
        for _ in range(2):
            line = forward.stdout.readline()
            match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
            assert match, line
            ports.append(int(match.group(1)))
            forward.stdout.readline()  # the [::1] line
        for _ in range(3):  # several connections over one session
            with urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/", timeout=10) as answer:
                assert answer.status == 200 and b"Directory listing" in answer.read()
        with pytest.raises(OSError):  # nothing listens on port 9 in the pod: the error comes back on its stream
            urllib.request.urlopen(f"http://127.0.0.1:{ports[1]}/", timeout=10).read()
    finally:
        forward.terminate()
        _, err = forward.communicate(timeout=10)
    assert "error forwarding port 9 to pod" in err
    assert "dial tcp4 127.0.0.1:9: connect: connection refused" in err
