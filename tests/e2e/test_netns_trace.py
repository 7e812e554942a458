"""`tinykube trace` in `tinykube up --dataplane netns --nodes 2`, in nftables and iptables modes, on the seed
tutorial's echoserver Deployment (one pod): each trace is checked against what the packet really did (the echo's
`client_address=`, the verdict) and against the rules it prints (the chain names of the mode). After every trace,
no trace table and no `nft monitor` is left in any namespace of the sandbox. Every probe runs inside a sandbox
namespace (the trace's own, from the source's namespace); kubectl talks to the loopback apiserver only."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_netns_dataplane import namespaces, netns_cluster
from tinykube.client.rest import RestClient
from tinykube.trace import TraceResult, render
from tinykube.trace import trace as trace_api

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

EXTERNAL_CLIENT = "172.20.0.250"
ECHO = "k8s.gcr.io/echoserver:1.4"
# the chains each mode's trace must show, by the name the seed articles (iptables) or tinykube's table use
SERVICE_CHAINS = {
    "nftables": ["nat-prerouting", "services", "pick-"],
    "iptables": ["KUBE-SERVICES", "KUBE-SVC-", "KUBE-SEP-"],
}
MARK_CHAIN = {"nftables": "mark-for-masquerade", "iptables": "KUBE-MARK-MASQ"}


@pytest.fixture(params=["nftables", "iptables"])
def sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunningCluster, str]]:
    mode: str = request.param
    extra = ["--proxy-mode", mode] if mode != "nftables" else []
    name = f"tr{mode[:2]}{os.getpid()}"
    with netns_cluster(tmp_path_factory, name, "--nodes", "2", "--controllers", "*", *extra) as running:
        yield running, mode


def kubectl(sandbox: RunningCluster, *args: str) -> str:
    return sandbox.kubectl(*args).stdout


def trace(sandbox: RunningCluster, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """`tinykube trace …` as a user runs it; afterwards nothing of the trace may be left in the sandbox."""
    argv = [sys.executable, "-m", "tinykube.cli", "trace", "--name", sandbox.data_dir.name]
    done = subprocess.run(
        [*argv, "--data-dir", str(sandbox.data_dir), *args], capture_output=True, text=True, timeout=90
    )
    assert (done.returncode == 0) == ok, done.stderr + done.stdout
    assert_no_trace_state(sandbox)
    return done


def assert_no_trace_state(sandbox: RunningCluster) -> None:
    """No `inet tinykube-trace` table and no `nft monitor` process in any namespace of the cluster."""
    for netns in namespaces(f"tk-{sandbox.data_dir.name}."):
        listed = subprocess.run(
            ["ip", "netns", "exec", netns, "nft", "list", "tables"], capture_output=True, text=True, check=True
        ).stdout
        assert "tinykube-trace" not in listed, f"a trace table is left in {netns}"
        pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            cmdline = Path(f"/proc/{pid}/cmdline")
            with_args = cmdline.read_bytes().replace(b"\0", b" ").decode() if cmdline.exists() else ""
            assert "nft monitor" not in with_args, f"a trace monitor is left in {netns}: {with_args}"


def answered(cluster: RunningCluster, *args: str, want: str = "verdict answered") -> str | None:
    """The trace's output if it shows `want` (the proxy may still be programming the rules), else None."""
    out = trace(cluster, *args).stdout
    return out if want in out else None


def seen(text: str) -> str | None:
    found = re.search(r"^the endpoint saw the client as (\S+)$", text, re.MULTILINE)
    return found[1] if found else None


def test_trace(sandbox: tuple[RunningCluster, str]) -> None:
    cluster, mode = sandbox
    mark = MARK_CHAIN[mode]
    # the seed tutorial's app: one echoserver pod, a ClusterIP and a NodePort Service, and a client pod on the other
    # node (so the ClusterIP path crosses nodes)
    kubectl(cluster, "create", "deployment", "source-ip-app", f"--image={ECHO}")
    kubectl(cluster, "rollout", "status", "deployment/source-ip-app", "--timeout=60s")
    (app,) = json.loads(kubectl(cluster, "get", "pods", "-l", "app=source-ip-app", "-o", "json"))["items"]
    pod_node, pod_ip = app["spec"]["nodeName"], app["status"]["podIP"]
    nodes = {
        n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        for n in json.loads(kubectl(cluster, "get", "nodes", "-o", "json"))["items"]
    }
    (other,) = set(nodes) - {pod_node}
    overrides = json.dumps({"spec": {"nodeName": other}})
    kubectl(
        cluster, "run", "client", "--image=busybox", "--restart=Never", f"--overrides={overrides}", "--", "sleep", "1h"
    )
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/client", "--timeout=60s")
    client_ip = json.loads(kubectl(cluster, "get", "pod", "client", "-o", "json"))["status"]["podIP"]
    kubectl(cluster, "expose", "deployment", "source-ip-app", "--name=clusterip", "--port=80", "--target-port=8080")
    kubectl(cluster, "expose", "deployment", "source-ip-app", "--name=nodeport", "--port=80", "--target-port=8080",
            "--type=NodePort")  # fmt: skip
    kubectl(cluster, "create", "service", "clusterip", "empty", "--tcp=80:8080")
    node_port = kubectl(cluster, "get", "svc", "nodeport", "-o", "jsonpath={.spec.ports[0].nodePort}")

    # ClusterIP from a pod: resolved through the pod's resolver, DNATed to the endpoint on the other node, no SNAT
    out = eventually(lambda: answered(cluster, "client", "clusterip", "--explain"), what="the ClusterIP answers")
    assert re.search(r"^resolve clusterip via 10\.96\.0\.10 \(from the pod's /etc/resolv.conf\): 10\.96\.", out, re.M)
    assert seen(out) == client_ip  # the endpoint saw the pod's own address
    assert "SNAT    none: it came from inside the cluster CIDR" in out
    assert re.search(
        rf"^DNAT    10\.96\.\S+:80 -> {re.escape(pod_ip)}:8080 \(pod default/source-ip-app-\S+ on {pod_node}\)",
        out,
        re.M,
    )
    assert f"request in {other} [" in out and f"request in {pod_node} [" in out  # it crossed both nodes
    assert "reply   in pod default/client [" in out
    for chain in SERVICE_CHAINS[mode]:
        assert f" {chain}" in out, f"{chain} missing from\n{out}"
    assert "        # " in out and "picks" in out  # --explain

    # NodePort from the external client through the node without the endpoint: SNAT to that node's address
    out = eventually(lambda: answered(cluster, "external", f"{nodes[other]}:{node_port}"), what="the NodePort answers")
    assert seen(out) == nodes[other] and EXTERNAL_CLIENT not in (seen(out) or "")
    assert f"SNAT    masqueraded by {other} to {nodes[other]}" in out
    assert mark in out and "masquerade" in out
    assert f"request in {pod_node} [" in out  # the masqueraded packet traced on the endpoint's node too

    # externalTrafficPolicy Local: the endpoint's node keeps the client address, the other node drops
    kubectl(cluster, "patch", "svc", "nodeport", "-p", '{"spec":{"externalTrafficPolicy":"Local"}}')
    out = eventually(
        lambda: answered(cluster, "external", f"{nodes[pod_node]}:{node_port}", want=f"as {EXTERNAL_CLIENT}\n"),
        what="the client's own address through the endpoint's node",
    )
    assert "SNAT    none: externalTrafficPolicy Local" in out and mark not in out
    out = eventually(
        lambda: answered(cluster, "external", f"{nodes[other]}:{node_port}", "--timeout", "1", want="verdict dropped"),
        what="the node without the endpoint drops",
    )
    assert "-> drop" in out and seen(out) is None and "DNAT    none" in out

    # a Service without endpoints: REJECT, the client is refused
    out = trace(cluster, "client", "empty", "--explain").stdout
    assert "verdict refused: connection refused" in out
    assert "reject" in out and "REJECT" in out
    assert "icmp destination-unreachable" in out  # the answer, traced back to the pod

    # a LoadBalancer address from the external client: DNAT to the endpoint, SNAT (externalTrafficPolicy Cluster)
    kubectl(cluster, "expose", "deployment", "source-ip-app", "--name=loadbalancer", "--port=80", "--target-port=8080",
            "--type=LoadBalancer")  # fmt: skip
    lb_ip = eventually(
        lambda: kubectl(cluster, "get", "svc", "loadbalancer", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"),
        what="a load balancer address",
    )
    out = eventually(lambda: answered(cluster, "external", lb_ip), what="the load balancer answers")
    assert re.search(rf"^DNAT    {re.escape(lb_ip)}:80 -> {re.escape(pod_ip)}:8080 ", out, re.M)
    assert seen(out) in nodes.values() and "SNAT    masqueraded by " in out

    # hairpin: the echo pod through its own Service is masqueraded (else it would answer itself directly)
    echo_pod = app["metadata"]["name"]
    out = eventually(lambda: answered(cluster, echo_pod, "clusterip", "--explain"), what="the hairpin answers")
    assert seen(out) == nodes[pod_node] and "hairpin" in out
    assert f"SNAT    masqueraded by {pod_node} to {nodes[pod_node]}" in out

    # session affinity: the second connection is sent back to the endpoint the first one had
    kubectl(cluster, "expose", "deployment", "source-ip-app", "--name=sticky", "--port=80", "--target-port=8080",
            "--session-affinity=ClientIP")  # fmt: skip
    first = eventually(lambda: answered(cluster, "client", "sticky", "--explain"), what="the sticky Service answers")
    assert "session affinity (ClientIP): remembers this client" in first
    second = trace(cluster, "client", "sticky", "--explain").stdout
    assert "session affinity (ClientIP): this client had " in second and seen(second) == client_ip

    # UDP: a DNS question to the cluster DNS Service, DNATed to the server on the sandbox LAN
    out = trace(cluster, "client", "kube-dns.kube-system:53", "--proto", "udp").stdout
    assert "verdict answered: a DNS answer" in out and "rcode 0, 1 answer records" in out
    assert re.search(r"^DNAT    10\.96\.0\.10:53 -> 172\.20\.0\.1:53 ", out, re.M)

    # the Python API the web page uses
    async def api() -> TraceResult:
        client = RestClient.from_kubeconfig(cluster.kubeconfig)
        try:
            return await trace_api(client, cluster.data_dir.name, "default/client", "clusterip.default:80")
        finally:
            await client.close()

    result = asyncio.run(api())
    assert_no_trace_state(cluster)
    assert result.outcome == "answered" and result.seen_client == client_ip
    assert result.dnat is not None and (result.dnat.address, result.dnat.node) == (pod_ip, pod_node)
    assert result.snat is not None and not result.snat.masqueraded
    assert {s.direction for s in result.steps} == {"request", "reply"}
    assert "verdict answered" in render(result, explain=True)

    # mistakes are one line on stderr
    failed = trace(cluster, "nosuchpod", "clusterip", ok=False)
    assert failed.stderr == "tinykube: trace: no pod 'default/nosuchpod'\n"


@pytest.fixture
def userspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    name = f"trus{os.getpid()}"
    with netns_cluster(tmp_path_factory, name, "--nodes", "2", "--controllers", "*", "--proxy-mode", "userspace") as c:
        yield c


def test_trace_userspace(userspace: RunningCluster) -> None:
    """Userspace mode: the portal rule sends the ClusterIP to the proxy's listener, which connects to the endpoint
    itself (so the endpoint sees the node's address)."""
    kubectl(userspace, "create", "deployment", "source-ip-app", f"--image={ECHO}")
    kubectl(userspace, "rollout", "status", "deployment/source-ip-app", "--timeout=60s")
    (app,) = json.loads(kubectl(userspace, "get", "pods", "-l", "app=source-ip-app", "-o", "json"))["items"]
    kubectl(userspace, "run", "client", "--image=busybox", "--restart=Never", "--", "sleep", "1h")
    kubectl(userspace, "wait", "--for=condition=Ready", "pod/client", "--timeout=60s")
    client = json.loads(kubectl(userspace, "get", "pod", "client", "-o", "json"))
    kubectl(userspace, "expose", "deployment", "source-ip-app", "--name=clusterip", "--port=80", "--target-port=8080")
    out = eventually(lambda: answered(userspace, "client", "clusterip", "--explain"), what="the ClusterIP answers")
    node_ip = client["status"]["hostIP"]
    assert "proxy mode userspace" in out and " portals: " in out
    assert re.search(
        rf"^proxy   userspace listener {re.escape(node_ip)}:\d+ on {client['spec']['nodeName']}$", out, re.M
    )
    assert re.search(rf"^DNAT    10\.96\.\S+:80 -> {re.escape(app['status']['podIP'])}:8080 ", out, re.M)
    assert seen(out) == node_ip  # the proxy's own connection, from the client's node
