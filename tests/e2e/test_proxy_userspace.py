"""`--proxy-mode userspace` end to end.

Without root (the simulated dataplane): a local process is exposed on `127.0.0.1:<nodePort>` through a selector-less
NodePort Service whose Endpoints point at 127.0.0.1, and a Service whose endpoints are anywhere else is refused
(nothing is ever sent there). With root (the netns dataplane): a pod reaches a ClusterIP Service, over TCP and over
UDP (the cluster DNS), through the proxy in its node's namespace, and the LAN's external client reaches its nodePort;
nothing is sent from the root namespace.
"""

from __future__ import annotations

import http.server
import os
import secrets
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, running_cluster
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

# ---- the simulated dataplane: no root ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    data_dir = tmp_path_factory.mktemp("userspace") / f"us{os.getpid()}"
    with running_cluster(data_dir, "--proxy-mode", "userspace") as running:
        yield running


@pytest.fixture
def api(loopback: RunningCluster) -> Iterator[httpx.Client]:
    with loopback.http() as client:
        yield client


@pytest.fixture
def local_server() -> Iterator[tuple[int, str]]:
    """A process of the user's own on 127.0.0.1 (an HTTP server answering a token): its port and the token."""
    token = f"hello from the laptop {secrets.token_hex(4)}"

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = token.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], token
    finally:
        server.shutdown()
        server.server_close()


def cluster_log(cluster: RunningCluster) -> str:
    return (cluster.data_dir.parent / f"{cluster.data_dir.name}.log").read_text(errors="replace")


def expose(api: httpx.Client, name: str, ip: str, port: int) -> int:
    """A selector-less NodePort Service and its hand-written Endpoints (`ip:port`); returns the nodePort that
    the API chose."""
    service = {"metadata": {"name": name}, "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}}
    created = api.post("/api/v1/namespaces/default/services", json=service)
    assert created.status_code == 201, created.text
    endpoints = {
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": port}]}],
    }
    response = api.post("/api/v1/namespaces/default/endpoints", json=endpoints)
    assert response.status_code == 201, response.text
    node_port: int = created.json()["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767
    return node_port


def fetch(port: int) -> str | None:
    """GET http://127.0.0.1:<port>/: the body, or None while the proxy does not serve it (yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            body: str = response.read().decode()
            return body
    except OSError:  # refused before the listener exists; closed by the proxy before the endpoints arrive
        return None


def test_a_local_process_is_reached_on_its_node_port(
    loopback: RunningCluster, api: httpx.Client, local_server: tuple[int, str]
) -> None:
    port, token = local_server
    for attempt in range(3):  # the random nodePort may be taken on this machine: then another Service
        node_port = expose(api, f"laptop-{attempt}", "127.0.0.1", port)
        in_use = f"cannot listen on 127.0.0.1:{node_port}"
        found = eventually(
            lambda np=node_port, msg=in_use: fetch(np) or (msg in cluster_log(loopback) and "in use"),
            what=f"an answer on 127.0.0.1:{node_port}",
        )
        if found != "in use":
            assert found == token
            return
    pytest.fail("every nodePort tried was in use")


def test_a_service_with_non_loopback_endpoints_is_refused(loopback: RunningCluster, api: httpx.Client) -> None:
    node_port = expose(api, "remote", "10.244.7.7", 8080)  # a simulated pod IP: no such host, and never dialled
    # The proxy says once that it skips the endpoint: from then on it knows it, and has no other.
    eventually(lambda: "default/remote/tcp/http: endpoints outside 127.0.0.0/8" in cluster_log(loopback))

    def refused() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", node_port), timeout=5) as client:
                client.sendall(b"GET / HTTP/1.0\r\n\r\n")
                return client.recv(4096) == b""  # accepted, then closed without a byte
        except ConnectionResetError:
            return True  # closed before our request was read
        except ConnectionRefusedError:
            return False  # no listener yet (or the nodePort is taken: the test then times out and says so)

    assert eventually(refused, what=f"127.0.0.1:{node_port} accepting and closing")


# ---- the netns dataplane: root -----------------------------------------------------------------------------------

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    extra = ("--nodes", "2", "--controllers", "*", "--proxy-mode", "userspace")
    with netns_cluster(tmp_path_factory, f"eus{os.getpid()}", *extra) as running:
        yield running


@pytest.fixture
def client(sandbox: RunningCluster) -> Iterator[httpx.Client]:
    with sandbox.http() as http:
        yield http


def get_many(netns: str, url: str, count: int) -> list[str]:
    """`count` GETs of `url` from inside `netns`, each on a new connection: the bodies, or the errors' names."""
    code = (
        "import urllib.request\n"
        f"for _ in range({count}):\n"
        f"    try: print(urllib.request.urlopen({url!r}, timeout=5).read().decode())\n"
        "    except Exception as err: print(type(getattr(err, 'reason', err)).__name__)"
    )
    return inside(netns, code).stdout.split()


@root_only
def test_a_cluster_ip_and_a_node_port_served_by_two_pods(
    sandbox: RunningCluster, client: httpx.Client, tmp_path: Path
) -> None:
    for name, node in (("echo-1", "node-1"), ("echo-2", "node-2")):
        root = tmp_path / name
        root.mkdir()
        (root / "who").write_text(name)  # what http.server answers for /who: which backend it was
        pod = web_pod(name, node, 8080, workingDir=str(root))
        pod["metadata"]["labels"] = {"app": "echo"}
        create(client, pod)
    svc = service(client, "echo", {"app": "echo"}, type="NodePort", ports=[{"port": 80, "targetPort": 8080}])
    create(client, web_pod("asker", "node-1", 8081))
    for name in ("echo-1", "echo-2", "asker"):
        eventually(lambda n=name: ready(client, n), what=f"{name} ready")
    asker = pod_netns(sandbox, "asker", "node-1")
    url = f"http://{svc['spec']['clusterIP']}/who"
    eventually(lambda: set(get_many(asker, url, 2)) == {"echo-1", "echo-2"}, what="answers from both backends")
    answers = get_many(asker, url, 6)  # the proxy has both endpoints now: they take turns
    assert answers.count("echo-1") == answers.count("echo-2") == 3, answers
    # The nodePort on each node IP, from the external client on the LAN
    external, node_port = f"tk-{sandbox.data_dir.name}.ext", svc["spec"]["ports"][0]["nodePort"]
    for node_ip in ("172.20.0.2", "172.20.0.3"):
        assert set(get_many(external, f"http://{node_ip}:{node_port}/who", 2)) == {"echo-1", "echo-2"}
    mode = "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:10249/proxyMode').read().decode())"
    assert inside(node_netns(sandbox, "node-1"), mode).stdout.strip() == "userspace"


@root_only
def test_a_pod_asks_the_cluster_dns_through_the_proxy_over_udp(sandbox: RunningCluster, client: httpx.Client) -> None:
    create(client, web_pod("dns-asker", "node-2", 8082))
    eventually(lambda: ready(client, "dns-asker"), what="dns-asker ready")
    question = "DNSRecord.question('kubernetes.default.svc.cluster.local')"
    ask = (
        "from dnslib import DNSRecord\n"
        f"try: print(DNSRecord.parse({question}.send('10.96.0.10', 53, timeout=3)).a.rdata)\n"
        "except Exception as err: print(type(err).__name__)"
    )
    asker = pod_netns(sandbox, "dns-asker", "node-2")
    assert eventually(lambda: inside(asker, ask).stdout.strip() == "10.96.0.1", what="an answer via the kube-dns IP")
