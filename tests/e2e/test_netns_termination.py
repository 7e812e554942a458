"""Graceful termination with real processes (issue 20): a deleted pod's preStop hook runs while it still serves,
then SIGTERM, then SIGKILL once the grace period is over; and a rolling update of a Deployment behind a NodePort
Service loses no request from a client looping in the sandbox, because a terminating pod leaves the Service's
endpoints while its preStop hook keeps it serving. Clients run inside the sandbox."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import netns_cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

# A server that says which pod answered, and notes SIGTERM in a file before it exits.
SERVE = """
import http.server, os, signal, sys
def term(*_):
    with open(os.environ["NOTES"], "a") as notes:
        notes.write("term\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
class Name(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = os.environ["POD"].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("", 8080), Name).serve_forever()
"""

# Loops GETs (a new connection each) until the stop file appears or a minute passed; prints the tally.
CLIENT = """
import json, os, sys, time, urllib.request
url, stop = sys.argv[1], sys.argv[2]
ok, failed, errors = 0, 0, []
end = time.time() + 60
while time.time() < end and not os.path.exists(stop):
    try:
        urllib.request.urlopen(url, timeout=2).read(); ok += 1
    except Exception as err:
        failed += 1; errors.append(repr(err))
    time.sleep(0.02)
print(json.dumps({"ok": ok, "failed": failed, "errors": errors[:5]}))
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with netns_cluster(tmp_path_factory, f"gt{os.getpid()}", "--nodes", "2", "--controllers", "*") as running:
        yield running


@pytest.fixture
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def server_pod(name: str, notes: Path, grace: int, pre_stop: list[str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "web",
        "image": "python",
        "command": [sys.executable, "-c", SERVE],
        "env": [{"name": "NOTES", "value": str(notes)}, {"name": "POD", "value": name}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    if pre_stop:
        container["lifecycle"] = {"preStop": {"exec": {"command": pre_stop}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": grace},
    }


def test_pre_stop_then_sigterm(sandbox: RunningCluster, client: httpx.Client, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    hook = ["sh", "-c", f"echo prestop >> {notes}; sleep 1; echo slept >> {notes}"]
    client.post("/api/v1/namespaces/default/pods", json=server_pod("hooked", notes, 30, hook))
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/hooked", "--timeout=60s")
    began = time.monotonic()
    sandbox.kubectl("delete", "pod", "hooked", "--timeout=60s")
    assert notes.read_text().split() == ["prestop", "slept", "term"]  # the hook ran whole, then SIGTERM
    assert time.monotonic() - began < 20  # the process ended on SIGTERM: the 30 s were not waited out
    events = client.get("/api/v1/namespaces/default/events", params={"fieldSelector": "involvedObject.name=hooked"})
    assert ("Killing", "Stopping container web") in {(e["reason"], e["message"]) for e in events.json()["items"]}


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    stubborn = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stubborn"},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "c", "image": "python", "command": [sys.executable, "-c", STUBBORN]}],
        },
    }
    client.post("/api/v1/namespaces/default/pods", json=stubborn)
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/stubborn", "--timeout=60s")
    began = time.monotonic()
    sandbox.kubectl("delete", "pod", "stubborn", "--wait=false")
    terminating = client.get("/api/v1/namespaces/default/pods/stubborn").json()
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 2
    eventually(lambda: client.get("/api/v1/namespaces/default/pods/stubborn").status_code == 404, timeout=30)
    assert time.monotonic() - began >= 1.5  # it was given its grace period before SIGKILL


STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(1)"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: rolling}
spec:
  replicas: 2
  selector: {matchLabels: {app: rolling}}
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: rolling}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: web
        image: python
        command: [PYTHON, -c, SERVE]
        env:
        - {name: NOTES, value: /dev/null}
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
        lifecycle: {preStop: {exec: {command: [sleep, "3"]}}}
---
apiVersion: v1
kind: Service
metadata: {name: rolling}
spec:
  type: NodePort
  selector: {app: rolling}
  ports: [{port: 80, targetPort: 8080}]
""".replace("PYTHON", sys.executable).replace("SERVE", json.dumps(SERVE))


def test_a_rolling_update_loses_no_request(sandbox: RunningCluster, client: httpx.Client, tmp_path: Path) -> None:
    sandbox.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    sandbox.kubectl("rollout", "status", "deployment/rolling", "--timeout=60s")
    node_port = client.get("/api/v1/namespaces/default/services/rolling").json()["spec"]["ports"][0]["nodePort"]
    url = f"http://172.20.0.2:{node_port}/"
    external = f"tk-{sandbox.data_dir.name}.ext"
    probe = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=2).status)"

    def answers() -> bool:
        run = ["ip", "netns", "exec", external, sys.executable, "-c", probe]
        return subprocess.run(run, capture_output=True, text=True, timeout=10).stdout.strip() == "200"

    eventually(answers, what="the Service answering from the external client")
    stop = tmp_path / "stop"
    loop = subprocess.Popen(
        ["ip", "netns", "exec", external, sys.executable, "-c", CLIENT, url, str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        before = {p["metadata"]["name"] for p in pods(client)}
        sandbox.kubectl("rollout", "restart", "deployment/rolling")
        sandbox.kubectl("rollout", "status", "deployment/rolling", "--timeout=90s")
        eventually(lambda: not before & {p["metadata"]["name"] for p in pods(client)}, timeout=60, what="old pods gone")
        time.sleep(1)
    finally:
        stop.touch()
        out, _ = loop.communicate(timeout=70)
    tally = json.loads(out)
    assert tally["failed"] == 0, tally
    assert tally["ok"] > 20, tally


def pods(client: httpx.Client) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.get(
        "/api/v1/namespaces/default/pods", params={"labelSelector": "app=rolling"}
    ).json()["items"]
    return items


def test_a_startup_probe_holds_readiness_and_restarts_a_container_that_never_starts(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    flag = tmp_path / "started"
    slow = server_pod("slow", tmp_path / "notes", 5)
    container = slow["spec"]["containers"][0]
    container["startupProbe"] = {
        "exec": {"command": ["test", "-e", str(flag)]},
        "periodSeconds": 1,
        "failureThreshold": 30,
    }
    client.post("/api/v1/namespaces/default/pods", json=slow)

    def status() -> dict[str, Any]:
        found: dict[str, Any] = client.get("/api/v1/namespaces/default/pods/slow").json()["status"]
        return found

    running = eventually(
        lambda: (s := status()).get("containerStatuses") and s["containerStatuses"][0]["state"].get("running") and s
    )
    time.sleep(2)  # the server listens, but its startup probe has not passed: neither started nor ready
    held = status()["containerStatuses"][0]
    assert running and (held["started"], held["ready"]) == (False, False)
    flag.touch()
    eventually(
        lambda: (c := status()["containerStatuses"][0])["started"] and c["ready"], timeout=20, what="started and ready"
    )

    never = server_pod("never", tmp_path / "notes", 1)
    never["spec"]["containers"][0]["startupProbe"] = {
        "exec": {"command": ["false"]},
        "periodSeconds": 1,
        "failureThreshold": 2,
    }
    client.post("/api/v1/namespaces/default/pods", json=never)
    restarted = eventually(
        lambda: (
            (c := client.get("/api/v1/namespaces/default/pods/never").json()["status"].get("containerStatuses"))
            and c[0]["restartCount"] >= 1
        ),
        timeout=40,
        what="the container killed by its startup probe and restarted",
    )
    assert restarted
    reasons = {
        (e["reason"], e["message"])
        for e in client.get(
            "/api/v1/namespaces/default/events", params={"fieldSelector": "involvedObject.name=never"}
        ).json()["items"]
    }
    assert ("Unhealthy", "Startup probe failed: ") in reasons  # `false` says nothing
    assert ("Killing", "Container web failed startup probe, will be restarted") in reasons
    for name in ("slow", "never"):
        sandbox.kubectl("delete", "pod", name, "--grace-period=1", "--wait=false")


def test_a_container_gets_its_config_map_and_secret_once_they_exist(
    sandbox: RunningCluster, client: httpx.Client
) -> None:
    printer = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "printer"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": ["sh", "-c", 'echo "mode=$APP_MODE password=$PASSWORD"'],
                    "envFrom": [{"configMapRef": {"name": "app"}, "prefix": "APP_"}],
                    "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "app", "key": "password"}}}],
                }
            ],
        },
    }
    client.post("/api/v1/namespaces/default/pods", json=printer)

    def waiting() -> str:
        statuses = client.get("/api/v1/namespaces/default/pods/printer").json()["status"].get("containerStatuses")
        return str((statuses or [{}])[0].get("state", {}).get("waiting", {}).get("message", ""))

    assert eventually(waiting) == 'configmap "app" not found'
    sandbox.kubectl("create", "configmap", "app", "--from-literal=MODE=fast")
    sandbox.kubectl("create", "secret", "generic", "app", "--from-literal=password=hunter2")
    eventually(
        lambda: client.get("/api/v1/namespaces/default/pods/printer").json()["status"]["phase"] == "Succeeded",
        timeout=40,
        what="the container to run once its sources exist",
    )
    assert sandbox.kubectl("logs", "printer").stdout == "mode=fast password=hunter2\n"


def test_a_pod_has_its_own_hostname_and_hosts_file(sandbox: RunningCluster, client: httpx.Client) -> None:
    script = (
        "import socket; print(socket.gethostname()); print(socket.gethostbyname('db.example'));"
        "print(open('/etc/hosts').read().splitlines()[7])"
    )
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "named"},
        "spec": {
            "restartPolicy": "Never",
            "hostname": "alpha",
            "subdomain": "crew",
            "hostAliases": [{"ip": "10.1.2.3", "hostnames": ["db.example"]}],
            "containers": [{"name": "c", "image": "python", "command": [sys.executable, "-c", script]}],
        },
    }
    client.post("/api/v1/namespaces/default/pods", json=manifest)
    done = eventually(
        lambda: (
            (p := client.get("/api/v1/namespaces/default/pods/named").json())["status"].get("phase") == "Succeeded"
            and p
        ),
        timeout=40,
    )
    ip = done["status"]["podIP"]
    assert sandbox.kubectl("logs", "named").stdout.splitlines() == [
        "alpha",
        "10.1.2.3",
        f"{ip}\talpha.crew.default.svc.cluster.local\talpha",
    ]
    assert socket.gethostname() != "alpha"  # the machine's own name is untouched


def test_volumes_are_mounted_and_config_maps_update_in_place(sandbox: RunningCluster, client: httpx.Client) -> None:
    sandbox.kubectl("create", "configmap", "site", "--from-literal=greeting=hello")
    sandbox.kubectl("create", "secret", "generic", "site", "--from-literal=password=hunter2")
    script = "\n".join([
        "import os, time",
        "base = '/var/run/secrets/kubernetes.io/serviceaccount'",
        "names = sorted(n for n in os.listdir(base) if not n.startswith('..'))",
        "print(names, open(base + '/namespace').read(), len(open(base + '/token').read()) > 100)",
        "mode = oct(os.stat('/etc/secret/password').st_mode & 0o777)",
        "print(open('/etc/site/greeting').read(), open('/etc/secret/password').read(), mode)",
        "open('/shared/note', 'w').write('from main')",
        "try:\n    open('/etc/site/x', 'w')\nexcept OSError as err:\n    print('read-only', err.errno)",
        "while True:\n    print('now', open('/etc/site/greeting').read(), flush=True)\n    time.sleep(1)",
    ])  # fmt: skip
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mounted"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "volumes": [
                {"name": "site", "configMap": {"name": "site"}},
                {"name": "secret", "secret": {"secretName": "site", "defaultMode": 0o400}},
                {"name": "shared", "emptyDir": {"medium": "Memory"}},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "python",
                    "command": [sys.executable, "-c", script],
                    "volumeMounts": [
                        {"name": "site", "mountPath": "/etc/site", "readOnly": True},
                        {"name": "secret", "mountPath": "/etc/secret"},
                        {"name": "shared", "mountPath": "/shared"},
                    ],
                },
                {
                    "name": "side",
                    "image": "busybox",
                    "command": ["sh", "-c", "sleep 1; cat /data/note; echo; sleep 3600"],
                    "volumeMounts": [{"name": "shared", "mountPath": "/data"}],
                },
            ],
        },
    }
    assert client.post("/api/v1/namespaces/default/pods", json=manifest).status_code == 201
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/mounted", "--timeout=60s")
    logs = eventually(lambda: "now hello" in (out := sandbox.kubectl("logs", "mounted", "-c", "main").stdout) and out)
    lines = logs.splitlines()
    assert lines[0] == "['ca.crt', 'namespace', 'token'] default True"
    assert lines[1] == "hello hunter2 0o400"
    assert lines[2] == "read-only 30"  # EROFS
    assert eventually(lambda: sandbox.kubectl("logs", "mounted", "-c", "side").stdout.strip()) == "from main"
    assert not Path("/etc/site").exists() and not Path("/shared").exists()  # nothing made on the host
    uid = client.get("/api/v1/namespaces/default/pods/mounted").json()["metadata"]["uid"]
    memory = Path(f"/dev/shm/tinykube-{uid}/shared")
    assert (memory / "note").read_text() == "from main"  # the memory-backed emptyDir, on the node's tmpfs
    patch = {"data": {"greeting": "bonjour"}}
    client.patch(
        "/api/v1/namespaces/default/configmaps/site",
        json=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    eventually(
        lambda: "now bonjour" in sandbox.kubectl("logs", "mounted", "-c", "main").stdout,
        timeout=40,
        what="the ConfigMap's update seen through the mount",
    )
    sandbox.kubectl("delete", "pod", "mounted", "--timeout=60s")
    # gone with the pod (the kubelet, too, cleans up a deleted pod's volumes on its own time)
    eventually(lambda: not memory.parent.exists(), what="the memory-backed emptyDir removed")

    missing = {**manifest, "metadata": {"name": "unmounted"}}
    missing["spec"] = {**manifest["spec"], "volumes": [{"name": "site", "configMap": {"name": "absent"}}]}
    missing["spec"]["containers"] = [
        {**manifest["spec"]["containers"][0], "volumeMounts": [{"name": "site", "mountPath": "/etc/site"}]}
    ]
    assert client.post("/api/v1/namespaces/default/pods", json=missing).status_code == 201
    failed = eventually(
        lambda: [
            e["message"]
            for e in client.get(
                "/api/v1/namespaces/default/events", params={"fieldSelector": "involvedObject.name=unmounted"}
            ).json()["items"]
            if e["reason"] == "FailedMount"
        ]
    )
    assert failed == ['MountVolume.SetUp failed for volume "site" : configmap "absent" not found']
    waiting = client.get("/api/v1/namespaces/default/pods/unmounted").json()["status"]["containerStatuses"][0]["state"]
    assert waiting == {"waiting": {"reason": "ContainerCreating"}}
    sandbox.kubectl("delete", "pod", "unmounted", "--wait=false")


def test_a_terminating_endpoint_still_serves_when_no_ready_one_is_left(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    """externalTrafficPolicy: Local with the node's only endpoint terminating (its preStop hook holds it serving):
    the proxy falls back to it, as upstream's, rather than drop the traffic."""
    last = server_pod("last", tmp_path / "notes", 30, ["sleep", "20"])
    last["metadata"]["labels"] = {"app": "last"}
    last["spec"]["nodeName"] = "node-1"
    client.post("/api/v1/namespaces/default/pods", json=last)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "last"},
        "spec": {
            "type": "NodePort",
            "externalTrafficPolicy": "Local",
            "selector": {"app": "last"},
            "ports": [{"port": 80, "targetPort": 8080}],
        },
    }
    client.post("/api/v1/namespaces/default/services", json=service)
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/last", "--timeout=60s")
    node_port = client.get("/api/v1/namespaces/default/services/last").json()["spec"]["ports"][0]["nodePort"]
    external = f"tk-{sandbox.data_dir.name}.ext"
    url = f"http://172.20.0.2:{node_port}/"
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=2).read().decode())"

    def answer() -> str:
        run = ["ip", "netns", "exec", external, sys.executable, "-c", fetch]
        return subprocess.run(run, capture_output=True, text=True, timeout=10).stdout.strip()

    assert eventually(lambda: answer() == "last", what="the Service answering")
    sandbox.kubectl("delete", "pod", "last", "--wait=false")

    def conditions() -> dict[str, Any] | None:
        slices = client.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            params={"labelSelector": "kubernetes.io/service-name=last"},
        ).json()["items"]
        endpoints = [e for s in slices for e in s.get("endpoints") or []]
        return endpoints[0]["conditions"] if endpoints else None

    assert eventually(lambda: (c := conditions()) and c["terminating"] and c) == {
        "ready": False,
        "serving": True,
        "terminating": True,
    }
    time.sleep(1)  # the proxies have had the slice's change
    assert answer() == "last"  # served by the terminating endpoint: no ready one is left on the node
    sandbox.kubectl("delete", "pod", "last", "--grace-period=0", "--force")
    sandbox.kubectl("delete", "service", "last")
