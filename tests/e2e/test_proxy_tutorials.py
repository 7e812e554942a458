"""The seed's proxy tutorials in the netns sandbox, once per kernel proxy mode (nftables and iptables):
`tinykube up --dataplane netns --nodes 2 --proxy-mode M`, backends that answer each request with the client address
they see, everything probed from inside the sandbox (nothing is sent from the root namespace)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import (
    create,
    inside,
    netns_cluster,
    node_netns,
    pod_netns,
    ready,
    service,
    web_pod,
)
from tinykube.sandbox.topology import short_hash

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

NODE_IPS = {"node-1": "172.20.0.2", "node-2": "172.20.0.3"}
EXTERNAL_CLIENT = "172.20.0.250"  # the sandbox's external client namespace (`tk-<cluster>.ext`)

# An HTTP server whose answer is the address of the client it sees (what the proxy's NAT left of the source).
ECHO = """
import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.client_address[0].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("", int(sys.argv[1])), Echo).serve_forever()
"""


@pytest.fixture(scope="module", params=["nftables", "iptables"])
def sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    name = f"tut{request.param[:3]}{os.getpid()}"
    extra = ("--nodes", "2", "--controllers", "*", "--proxy-mode", request.param)
    with netns_cluster(tmp_path_factory, name, *extra) as running:
        yield running


@pytest.fixture
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.node.callspec.params["sandbox"])


@pytest.fixture
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def echo_pod(name: str, node: str, port: int, app: str, namespace: str = "default") -> dict[str, Any]:
    container = {"name": "echo", "image": "python", "command": ["python3", "-c", ECHO, str(port)]}
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [container]},
    }


def fetch(netns: str, url: str) -> str:
    """GET `url` from inside `netns`: the body, or the error's class (ConnectionRefusedError, TimeoutError …)."""
    code = (
        "import urllib.request\n"
        f"try: print(urllib.request.urlopen({url!r}, timeout=3).read().decode())\n"
        "except Exception as err: print(type(getattr(err, 'reason', err)).__name__)"
    )
    return inside(netns, code).stdout.strip()


def test_the_node_runs_the_mode_s_layout(sandbox: RunningCluster, mode: str) -> None:
    node = node_netns(sandbox, "node-1")
    assert fetch(node, "http://127.0.0.1:10249/proxyMode") == mode  # kube-proxy's metrics port, inside the node
    metrics = fetch(node, "http://127.0.0.1:10249/metrics").splitlines()
    assert "# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram" in metrics
    synced = [line for line in metrics if line.startswith("kubeproxy_sync_full_proxy_rules_duration_seconds_count ")]
    assert synced and int(synced[0].split()[1]) >= 1
    tables = subprocess.run(["ip", "netns", "exec", node, "nft", "list", "tables"], capture_output=True, text=True)
    saved = subprocess.run(["ip", "netns", "exec", node, "iptables-save"], capture_output=True, text=True).stdout
    if mode == "iptables":
        # kube-dns (10.96.0.10) has an endpoint, the DNS server on the LAN: its chains exist
        assert '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' in saved
        assert '"kube-system/kube-dns:dns cluster IP"' in saved and ":KUBE-SVC-" in saved
        assert "kube-proxy" not in tables.stdout
    else:
        assert "table ip kube-proxy" in tables.stdout and "KUBE-" not in saved


def test_a_pod_reaches_a_cluster_ip_and_the_backend_sees_the_pod(sandbox: RunningCluster, client: httpx.Client) -> None:
    create(client, echo_pod("echo", "node-2", 8091, "echo"))
    svc = service(client, "echo", {"app": "echo"}, ports=[{"port": 80, "targetPort": 8091}])
    create(client, web_pod("asker", "node-1", 8092))
    asker_ip = eventually(lambda: ready(client, "asker"), what="asker ready")["status"]["podIP"]
    url = f"http://{svc['spec']['clusterIP']}/"
    # no SNAT for pod -> ClusterIP: the backend on the other node sees the pod's own address
    assert eventually(lambda: fetch(pod_netns(sandbox, "asker", "node-1"), url) == asker_ip, what="ClusterIP echo")


def test_a_service_without_endpoints_refuses(sandbox: RunningCluster, client: httpx.Client) -> None:
    svc = service(client, "nobody", {"app": "nobody"}, ports=[{"port": 80}])
    create(client, web_pod("asker2", "node-1", 8093))
    eventually(lambda: ready(client, "asker2"), what="asker ready")
    url = f"http://{svc['spec']['clusterIP']}:80/"
    assert eventually(lambda: fetch(pod_netns(sandbox, "asker2", "node-1"), url) == "ConnectionRefusedError")


def test_node_ports_masquerade_until_external_traffic_policy_local(
    sandbox: RunningCluster, client: httpx.Client
) -> None:
    create(client, echo_pod("np-echo", "node-2", 8094, "np"))
    svc = service(client, "np", {"app": "np"}, type="LoadBalancer", ports=[{"port": 80, "targetPort": 8094}])
    node_port = svc["spec"]["ports"][0]["nodePort"]
    external = f"tk-{sandbox.data_dir.name}.ext"

    def via(node: str) -> str:
        return fetch(external, f"http://{NODE_IPS[node]}:{node_port}/")

    # Cluster policy: both nodes answer, and the backend sees a node's address, never the client's
    assert eventually(lambda: via("node-1") == NODE_IPS["node-1"], what="node-1 SNATs to its own LAN address")
    assert eventually(lambda: via("node-2") == NODE_IPS["node-2"], what="node-2 (the endpoint's) SNATs as well")

    patch = {"spec": {"externalTrafficPolicy": "Local"}}
    response = client.patch(
        "/api/v1/namespaces/default/services/np", json=patch, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert response.status_code == 200, response.text
    health_port = response.json()["spec"]["healthCheckNodePort"]
    # Local policy: only the node with the endpoint answers, and the client's own address is preserved
    assert eventually(lambda: via("node-2") == EXTERNAL_CLIENT, what="the client's address preserved")
    # node-1 has no endpoint of its own: dropped (a REJECT would show as ConnectionRefusedError)
    assert eventually(lambda: via("node-1") in ("timeout", "TimeoutError"), what="node-1 drops")

    health = (
        "import urllib.request, urllib.error\n"
        "try: r = urllib.request.urlopen('{}', timeout=3); print(r.status, r.read().decode())\n"
        "except urllib.error.HTTPError as e: print(e.code, e.read().decode())"
    )
    on_endpoint = inside(external, health.format(f"http://{NODE_IPS['node-2']}:{health_port}/")).stdout
    elsewhere = inside(external, health.format(f"http://{NODE_IPS['node-1']}:{health_port}/")).stdout
    assert on_endpoint.startswith("200") and '"localEndpoints": 1' in on_endpoint
    assert elsewhere.startswith("503") and '"localEndpoints": 0' in elsewhere


def test_pods_reach_services_by_name_across_namespaces_and_through_an_external_name(
    sandbox: RunningCluster, client: httpx.Client
) -> None:
    create(client, echo_pod("named", "node-2", 8095, "named"))
    service(client, "named", {"app": "named"}, ports=[{"port": 80, "targetPort": 8095}])
    alias = {
        "metadata": {"name": "alias"},
        "spec": {"type": "ExternalName", "externalName": "named.default.svc.cluster.local"},
    }
    create(client, alias, "services")
    create(client, web_pod("neighbour", "node-1", 8096))
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": "elsewhere"}}).status_code == 201
    response = client.post("/api/v1/namespaces/elsewhere/pods", json=web_pod("stranger", "node-1", 8097))
    assert response.status_code == 201, response.text
    eventually(lambda: ready(client, "named"), what="named ready")
    neighbour_ip = eventually(lambda: ready(client, "neighbour"), what="neighbour ready")["status"]["podIP"]
    stranger_ip = eventually(lambda: _ready_ip(client, "elsewhere", "stranger"), what="stranger ready")
    # the answer is the asker's own address: resolved through the cluster DNS, reached through the proxy, no SNAT
    neighbour = pod_netns(sandbox, "neighbour", "node-1")
    assert eventually(lambda: fetch(neighbour, "http://named/") == neighbour_ip, what="the search path")
    stranger = f"tk-{sandbox.data_dir.name}.node-1.{short_hash('elsewhere/stranger')}"
    for url in ("http://named.default/", "http://named.default.svc.cluster.local/", "http://alias.default/"):
        assert eventually(lambda u=url: fetch(stranger, u) == stranger_ip, what=url)


def _ready_ip(client: httpx.Client, namespace: str, name: str) -> str | None:
    pod = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
    conditions = pod.get("status", {}).get("conditions") or []
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    return str(pod["status"]["podIP"]) if ready else None
