"""Workload controllers on the netns dataplane (issue 19), with real processes in pod namespaces: the `web`
StatefulSet's pods reached by their DNS names from another pod, the `pi` Job run to completion, a DaemonSet on
both nodes behind a NodePort Service reached from the sandbox's external client, and a busy pod's real CPU in
`kubectl top` driving a HorizontalPodAutoscaler. Manifests go through kubectl; probes run inside the sandbox."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import inside, netns_cluster, pod_netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

WEB = """\
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: nginx}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: python
        command: [python3, -m, http.server, "80"]
        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 1}
"""

# A web server answering with the node its pod runs on (from the downward API).
SERVE_NODE = """\
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = os.environ['NODE'].encode()
        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(('', 8080), H).serve_forever()
"""

AGENT = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: python
        command: [python3, -c, SCRIPT]
        env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: agent}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: agent}
  ports: [{port: 80, targetPort: 8080}]
""".replace("SCRIPT", json.dumps(SERVE_NODE))  # a JSON string is a YAML double-quoted scalar


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    fast = ("--metric-resolution", "2s", "--horizontal-pod-autoscaler-sync-period", "2s")
    with netns_cluster(tmp_path_factory, f"wl{os.getpid()}", "--nodes", "2", "--controllers", "*", *fast) as running:
        yield running


@pytest.fixture
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def get(client: httpx.Client, path: str) -> Any:
    return client.get(path).json()


def test_each_web_pod_is_reached_by_its_dns_name_from_another(sandbox: RunningCluster, client: httpx.Client) -> None:
    sandbox.kubectl("apply", "-f", "-", input=WEB)
    sandbox.kubectl("rollout", "status", "statefulset/web", "--timeout=60s")
    web0 = get(client, "/api/v1/namespaces/default/pods/web-0")
    web1 = get(client, "/api/v1/namespaces/default/pods/web-1")
    fetch = (
        "import socket, urllib.request\n"
        "print(socket.gethostbyname('web-1.nginx'))\n"  # the pod's resolv.conf searches default.svc.cluster.local
        "print(urllib.request.urlopen('http://web-1.nginx.default.svc.cluster.local/', timeout=5).status)\n"
    )
    result = inside(pod_netns(sandbox, "web-0", web0["spec"]["nodeName"]), fetch)
    assert result.stdout.split() == [web1["status"]["podIP"], "200"], result.stderr


def test_the_pi_job_runs_to_completion(sandbox: RunningCluster, client: httpx.Client) -> None:
    sandbox.kubectl("create", "job", "pi", "--image=perl:5.34", "--", "perl", "-Mbignum=bpi", "-wle", "print bpi(200)")
    sandbox.kubectl("wait", "--for=condition=complete", "job/pi", "--timeout=60s")
    [pod] = get(client, "/api/v1/namespaces/default/pods?labelSelector=job-name%3Dpi")["items"]
    assert pod["status"]["phase"] == "Succeeded"
    assert sandbox.kubectl("logs", pod["metadata"]["name"]).stdout.startswith("3.14159265358979323846")


def test_a_daemon_set_on_both_nodes_behind_a_node_port(sandbox: RunningCluster, client: httpx.Client) -> None:
    sandbox.kubectl("apply", "-f", "-", input=AGENT)
    sandbox.kubectl("rollout", "status", "daemonset/agent", "--timeout=60s")
    node_port = get(client, "/api/v1/namespaces/default/services/agent")["spec"]["ports"][0]["nodePort"]
    nodes = {
        n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in get(client, "/api/v1/nodes")["items"]
    }
    external = f"tk-{sandbox.data_dir.name}.ext"
    for name, address in sorted(nodes.items()):  # Local: each node answers from its own daemon pod
        url = f"http://{address}:{node_port}/"

        def answer(url: str = url) -> str:
            code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).read().decode())"
            return inside(external, code).stdout.strip()

        assert eventually(lambda answer=answer: answer() or None, what=f"{name}'s pod answering") == name


BURN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: burn}
spec:
  replicas: 1
  selector: {matchLabels: {app: burn}}
  template:
    metadata: {labels: {app: burn}}
    spec:
      containers:
      - name: burn
        image: python
        command: [python3, -c, "import time\\nend = time.time() + 120\\nwhile time.time() < end: pass"]
        resources: {requests: {cpu: 100m}}
      - name: idle
        image: python
        command: [python3, -c, "import time; time.sleep(120)"]
        resources: {requests: {cpu: 100m}}
"""


def millicores(text: str) -> int:
    return int(text.removesuffix("m"))


def test_a_busy_pods_real_cpu_shows_in_top_and_scales_it(sandbox: RunningCluster, client: httpx.Client) -> None:
    """Each burning container spins for two minutes at most, whatever happens to the test."""
    sandbox.kubectl("apply", "-f", "-", input=BURN)
    sandbox.kubectl("rollout", "status", "deployment/burn", "--timeout=60s")

    def top() -> dict[str, int] | None:
        result = sandbox.kubectl("top", "pod", "-l", "app=burn", "--containers", "--no-headers", check=False)
        rows = [line.split() for line in result.stdout.splitlines()]
        found = {row[1]: millicores(row[2]) for row in rows if len(row) == 4}
        # a sleeping process uses next to nothing (once its start-up is out of the window)
        return found if found.get("burn", 0) >= 300 and found.get("idle", 1000) < 50 else None

    eventually(top, timeout=60, what="the burning container's CPU, and not the idle one's, in kubectl top")

    def busiest_node() -> int | None:
        result = sandbox.kubectl("top", "node", "--no-headers", check=False)  # a node needs two samples for a rate
        rows = [line.split() for line in result.stdout.splitlines()]
        return max((millicores(row[1]) for row in rows), default=0) >= 300 or None

    assert eventually(busiest_node, timeout=60, what="the busy pod's node in kubectl top node")

    sandbox.kubectl("autoscale", "deployment", "burn", "--cpu-percent=50", "--min=1", "--max=2")
    scaled = eventually(
        lambda: get(client, "/apis/apps/v1/namespaces/default/deployments/burn")["spec"]["replicas"] == 2 or None,
        timeout=60,
        what="the HPA to scale the busy Deployment up",
    )
    assert scaled
    sandbox.kubectl("delete", "hpa/burn", "deployment/burn", "--wait=false")
