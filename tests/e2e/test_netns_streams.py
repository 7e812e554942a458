"""exec, attach, cp, `run -it` and port-forward on the netns dataplane (issue 21): kubectl and the Python client
through the apiserver to the node agent, commands run in the container's namespaces. Interactive sessions are
typed into a tmux terminal, as a person would."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import portforward, stream

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import netns_cluster
from tests.terminal import terminal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

SHELL = """\
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  containers:
  - name: shell
    image: busybox
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
"""

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx
        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""

# reads lines on stdin and answers each (`stdin: true`, no TTY): what `kubectl attach -i` talks to
ECHO = """\
apiVersion: v1
kind: Pod
metadata: {name: echo}
spec:
  containers:
  - name: echo
    image: busybox
    stdin: true
    command: [sh, -c, 'echo started; while read line; do echo "got:$line"; done']
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"st{os.getpid()}", "--nodes", "1", "--controllers", "*") as running:
        running.kubectl("apply", "-f", "-", input=SHELL + "---\n" + WEB + "---\n" + ECHO)
        for pod in ("shell", "echo"):
            running.kubectl("wait", "--for=condition=Ready", f"pod/{pod}", "--timeout=60s")
        yield running


@pytest.fixture(scope="module")
def api(sandbox: RunningCluster) -> k8s.CoreV1Api:
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(str(sandbox.kubeconfig), client_configuration=configuration)
    return k8s.CoreV1Api(k8s.ApiClient(configuration))


def env(sandbox: RunningCluster) -> dict[str, str]:
    return {"KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir)}


def test_exec_runs_in_the_container_and_returns_its_exit_code(sandbox: RunningCluster) -> None:
    result = sandbox.kubectl("exec", "shell", "--", "sh", "-c", "hostname; echo oops >&2; exit 3", check=False)
    assert result.returncode == 3
    assert result.stdout == "shell\n"  # its own UTS namespace
    assert "oops" in result.stderr and "command terminated with exit code 3" in result.stderr
    # its network namespace: the pod's address, not the host's
    ip = sandbox.kubectl_json("get", "pod", "shell")["status"]["podIP"]
    addresses = sandbox.kubectl("exec", "shell", "--", "ip", "-4", "-o", "addr", "show", "eth0").stdout
    assert f"inet {ip}/32" in addresses
    # its environment, as the kubelet gives it
    # (after a pause: kubectl 1.32's WebSocket client drops output that arrives before it has set up its streams,
    # "Unknown stream id 1, discarding message", kubernetes#131189, fixed in client-go 1.33)
    environment = sandbox.kubectl("exec", "shell", "--", "sh", "-c", "sleep 0.2; env").stdout
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1" in environment


def test_exec_errors_are_upstreams(sandbox: RunningCluster) -> None:
    missing = sandbox.kubectl("exec", "shell", "--", "no-such-command", check=False)
    assert missing.returncode != 0
    assert 'exec: "no-such-command": executable file not found in $PATH' in missing.stderr
    wrong = sandbox.kubectl("exec", "shell", "-c", "nope", "--", "true", check=False)
    assert "container nope is not valid for pod shell" in wrong.stderr


def test_exec_passes_stdin_through_to_its_end(sandbox: RunningCluster) -> None:
    result = sandbox.kubectl("exec", "-i", "shell", "--", "sh", "-c", "wc -l", input="a\nb\nc\n")
    assert result.stdout.strip() == "3"


def test_cp_copies_both_ways(sandbox: RunningCluster, tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("carried over\n")
    sandbox.kubectl("cp", str(source), "shell:/data/in.txt")
    assert sandbox.kubectl("exec", "shell", "--", "cat", "/data/in.txt").stdout == "carried over\n"
    sandbox.kubectl("exec", "shell", "--", "sh", "-c", "echo made inside > /data/out.txt")
    sandbox.kubectl("cp", "shell:/data/out.txt", str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_text() == "made inside\n"


def test_exec_it_is_an_interactive_terminal(sandbox: RunningCluster) -> None:
    with terminal(["kubectl", "exec", "-it", "shell", "--", "sh"], env(sandbox)) as tty:
        tty.type("echo $((6*7)); tty")
        tty.wait_for("42")
        assert "/dev/pts/" in tty.wait_for("/dev/pts/")
        tty.resize(100, 20)
        tty.type("stty size")
        tty.wait_for("20 100")
        tty.type("exit 5")
        screen = tty.wait_for("EXIT=5")
        assert "command terminated with exit code 5" in screen


def test_run_it_rm_reaches_a_service_from_inside(sandbox: RunningCluster) -> None:
    """The seed tutorial's way of testing a Service from inside the cluster, verbatim."""
    sandbox.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    command = ["kubectl", "run", "-it", "--rm", "busybox", "--image=busybox", "--restart=Never", "--", "sh"]
    with terminal(command, env(sandbox)) as tty:
        tty.wait_for("If you don't see a command prompt, try pressing enter.")
        tty.type("wget -qO- http://web")
        tty.wait_for("Welcome to nginx!")
        tty.type("exit")
        screen = tty.wait_for("EXIT=0")
        assert 'pod "busybox" deleted' in screen
    assert "NotFound" in sandbox.kubectl("get", "pod", "busybox", check=False).stderr


def test_python_client_exec(sandbox: RunningCluster, api: k8s.CoreV1Api) -> None:
    out = stream(
        api.connect_get_namespaced_pod_exec, "shell", "default",
        command=["sh", "-c", "echo out; echo err >&2"], stderr=True, stdin=False, stdout=True, tty=False,
    )  # fmt: skip
    assert out == "out\nerr\n"
    resp = stream(
        api.connect_get_namespaced_pod_exec, "shell", "default",
        command=["cat"], stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False,
    )  # fmt: skip
    resp.write_stdin("ping\n")
    assert eventually(lambda: resp.update(timeout=1) or (resp.peek_stdout() and resp.read_stdout())) == "ping\n"
    resp.close()
    failing = stream(
        api.connect_get_namespaced_pod_exec, "shell", "default",
        command=["sh", "-c", "exit 4"], stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
    )  # fmt: skip
    failing.run_forever(timeout=10)
    assert failing.returncode == 4


def test_attach_takes_stdin_and_shows_new_output(sandbox: RunningCluster, api: k8s.CoreV1Api) -> None:
    resp = stream(
        api.connect_get_namespaced_pod_attach, "echo", "default",
        stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False,
    )  # fmt: skip
    try:
        resp.write_stdin("hello\n")
        seen = ""

        def answered() -> bool:
            nonlocal seen
            resp.update(timeout=1)
            if resp.peek_stdout():
                seen += resp.read_stdout()
            return "got:hello" in seen

        eventually(answered, what="the container's answer")
        assert "started" not in seen  # what it wrote before the attach is in its log, not on the stream
    finally:
        resp.close()
    assert "got:hello" in sandbox.kubectl("logs", "echo").stdout


def test_python_client_port_forward(sandbox: RunningCluster, api: k8s.CoreV1Api) -> None:
    sandbox.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    pod = sandbox.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}").stdout
    forward = portforward(api.connect_get_namespaced_pod_portforward, pod, "default", ports="80,81")
    try:
        web: socket.socket = forward.socket(80)
        web.setblocking(True)
        web.sendall(b"GET / HTTP/1.0\r\nHost: web\r\n\r\n")
        answer = b""
        while chunk := web.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 OK") and b"Welcome to nginx!" in answer
        error = eventually(lambda: forward.error(81), what="port 81's error")
        assert "error forwarding port 81" in error and "connect: connection refused" in error
    finally:
        forward.close()


def test_debug_adds_an_ephemeral_container_in_the_pods_namespaces(sandbox: RunningCluster) -> None:
    sandbox.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    pod = sandbox.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}").stdout
    command = ["kubectl", "debug", "-it", pod, "--image=busybox", "--target=nginx", "--profile=general"]
    with terminal(command, env(sandbox)) as tty:
        tty.wait_for("If you don't see a command prompt, try pressing enter.")
        tty.type("wget -qO- http://127.0.0.1:80 | grep title; hostname")
        tty.wait_for("<title>Welcome to nginx!</title>")  # the pod's own localhost
        tty.wait_for(f"\n{pod}")
        tty.type("exit")
        tty.wait_for("EXIT=0")
    statuses = sandbox.kubectl_json("get", "pod", pod)["status"]["ephemeralContainerStatuses"]
    assert len(statuses) == 1 and statuses[0]["name"].startswith("debugger-")
    terminated = eventually(lambda: sandbox.kubectl_json("get", "pod", pod)["status"]["ephemeralContainerStatuses"][0]
                            ["state"].get("terminated"), what="the debugger's end")  # fmt: skip
    assert terminated["exitCode"] == 0
    assert sandbox.kubectl_json("get", "pod", pod)["status"]["phase"] == "Running"  # the pod itself runs on


def test_debug_node_gets_a_shell_in_the_nodes_namespace(sandbox: RunningCluster) -> None:
    command = ["kubectl", "debug", "node/node-1", "-it", "--image=busybox", "--profile=general"]
    with terminal(command, env(sandbox)) as tty:
        tty.wait_for("If you don't see a command prompt, try pressing enter.")
        tty.type("ip -4 -o addr show eth0; hostname; ls /host/etc/hostname; echo END-$((1+1))")
        screen = tty.wait_for("END-2")  # the typed line shows END-$((1+1)), what it printed END-2
        assert "inet 172.20.0.2/16" in screen  # the node's address on the sandbox LAN, not a pod's
        assert "\nnode-1\n" in screen
        tty.type("exit")
        tty.wait_for("EXIT=0")
    debuggers = [p for p in sandbox.kubectl_json("get", "pods")["items"] if p["metadata"]["name"].startswith("node-")]
    assert debuggers and all(p["status"]["podIP"] == "172.20.0.2" for p in debuggers)
    for pod in debuggers:
        sandbox.kubectl("delete", "pod", pod["metadata"]["name"])
    assert sandbox.kubectl("get", "node", "node-1").returncode == 0
    # the node's namespace outlived its hostNetwork pod: pods still reach each other through it
    assert sandbox.kubectl("exec", "shell", "--", "wget", "-qO-", "http://web").stdout.count("Welcome to nginx!") >= 1


@pytest.mark.parametrize("target", ["svc/web", "deployment/web"])
def test_kubectl_port_forward_to_a_service_or_deployment(sandbox: RunningCluster, target: str) -> None:
    """kubectl 1.32's default: SPDY tunnelled in a WebSocket (`-v=6` shows the protocol it negotiated)."""
    sandbox.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    environ = {**os.environ, **env(sandbox)}
    forward = subprocess.Popen(
        ["kubectl", "port-forward", "-v=6", target, ":80"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=environ,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> 80", line)
        assert match, line
        for _ in range(2):  # several connections over one session
            with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/", timeout=10) as answer:
                assert b"Welcome to nginx!" in answer.read()
    finally:
        forward.terminate()
        _, log = forward.communicate(timeout=10)
    assert "negotiated protocol: portforward.k8s.io" in log and "fallback" not in log.lower()
