"""The seed tutorial "送信元IPを使用する" (Using Source IP, /work/shared/seeds/004_52661931e62a0d55.txt), verbatim, in
`tinykube up --dataplane netns --nodes 2`: each section's commands as the seed writes them, checked against what
the seed says they show. kubectl runs in the root namespace against the cluster's loopback apiserver; every curl and
wget runs inside a namespace of the sandbox (the external client `tk-<cluster>.ext`, a node, or a pod), so nothing
leaves the root namespace but loopback traffic.

Where tinykube legitimately differs from the seed's cluster (addresses, ports, ages, the proxy mode: nftables is
the default here, iptables there), the shape is asserted, not the value. The whole walk is one test: its steps
build on each other, and `pytest -n 2` must not split them across workers.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import RunningCluster, eventually
from tests.e2e.test_kubectl_apps import table
from tests.e2e.test_netns_dataplane import namespaces, netns_cluster, node_netns
from tests.terminal import terminal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root")

EXTERNAL_CLIENT = "172.20.0.250"  # `tk-<cluster>.ext`: the seed's client "outside the cluster" (198.51.100.79 there)
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
CLIENT_ADDRESS = re.compile(r"^client_address=(\S+)$", re.MULTILINE)  # the echoserver's line the seed greps for
SVC_HEADER = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]


@pytest.fixture
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    # the seed's cluster: `tinykube up --dataplane netns --nodes 2` (the default proxy mode, nftables)
    with netns_cluster(tmp_path_factory, f"seed{os.getpid()}", "--nodes", "2", "--controllers", "*") as running:
        yield running


def sh(sandbox: RunningCluster, line: str, *, netns: str | None = None, **variables: str) -> str:
    """One of the seed's command lines as a user's shell runs it (pipes, `$NODES`), with the cluster's kubeconfig;
    inside `netns` when given (every curl and wget), else in the root namespace (kubectl only: loopback). Its
    stdout, whatever the exit status (curl and grep fail where the seed shows nothing)."""
    return _run(sandbox, line, netns, variables).stdout


def kubectl(sandbox: RunningCluster, line: str) -> str:
    """A kubectl line of the seed, which must succeed: its stdout."""
    result = _run(sandbox, line, None, {})
    assert result.returncode == 0, f"{line}: {result.stderr}"
    return result.stdout


def _run(
    sandbox: RunningCluster, line: str, netns: str | None, variables: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    argv = ["sh", "-c", line] if netns is None else ["ip", "netns", "exec", netns, "sh", "-c", line]
    env = {**os.environ, "KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir), **variables}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def client_addresses(text: str) -> list[str]:
    return CLIENT_ADDRESS.findall(text)


def test_using_source_ip(sandbox: RunningCluster) -> None:
    pod_node = start_the_app(sandbox)
    source_ip_for_type_cluster_ip(sandbox)
    nodes = source_ip_for_type_node_port(sandbox, pod_node)
    source_ip_for_type_load_balancer(sandbox, pod_node, nodes)
    cleaning_up(sandbox)


def start_the_app(sandbox: RunningCluster) -> str:
    """前提条件: the echoserver Deployment. Returns the node its pod runs on."""
    out = kubectl(sandbox, "kubectl create deployment source-ip-app --image=k8s.gcr.io/echoserver:1.4")
    assert out == "deployment.apps/source-ip-app created\n"
    # the seed waits for nothing; a user would see the pod Running before curling it
    kubectl(sandbox, "kubectl rollout status deployment/source-ip-app --timeout=60s")
    header, rows = table(kubectl(sandbox, "kubectl get pod -o wide -l app=source-ip-app"))
    (row,) = rows
    return row[header.index("NODE")]


def source_ip_for_type_cluster_ip(sandbox: RunningCluster) -> None:
    """Type=ClusterIPを使用したServiceでの送信元IP: no SNAT from a pod to a ClusterIP."""
    ready_nodes = eventually(
        lambda: (out := kubectl(sandbox, "kubectl get nodes")).count(" Ready ") == 2 and out, what="two Ready nodes"
    )
    header, rows = table(ready_nodes)
    assert header == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:3] for row in rows] == [["node-1", "Ready", "<none>"], ["node-2", "Ready", "<none>"]]

    # "このコマンドは、問い合わせを行いたいノード上のシェルで実行してください" — a node's shell is its namespace
    node_1 = node_netns(sandbox, "node-1")
    mode = eventually(lambda: sh(sandbox, "curl http://localhost:10249/proxyMode", netns=node_1), what="proxyMode")
    assert mode == "nftables"  # the seed's kube-proxy printed iptables, its default then (tinykube's with --proxy-mode)

    out = kubectl(sandbox, "kubectl expose deployment source-ip-app --name=clusterip --port=80 --target-port=8080")
    assert out == "service/clusterip exposed\n"
    header, rows = table(kubectl(sandbox, "kubectl get svc clusterip"))
    assert header == SVC_HEADER
    ((name, kind, cluster_ip, external_ip, ports, _age),) = rows
    assert (name, kind, external_ip, ports) == ("clusterip", "ClusterIP", "<none>", "80/TCP")
    assert ipaddress.ip_address(cluster_ip) in SERVICE_CIDR

    # "同じクラスター上のPodからClusterIPにアクセスします": the seed's interactive shell, typed into a terminal
    environ = {"KUBECONFIG": str(sandbox.kubeconfig), "KUBECACHEDIR": str(sandbox.cache_dir)}
    with terminal(shlex.split("kubectl run busybox -it --image=busybox --restart=Never --rm"), environ) as tty:
        tty.wait_for("If you don't see a command prompt, try pressing enter.")
        phase = 'kubectl get pod busybox -o jsonpath="{.spec.nodeName} {.status.podIP}"'
        node, pod_ip = kubectl(sandbox, phase).split()
        # "このコマンドは、"kubectl run" のターミナルの内部で実行してください"
        tty.type("ip addr; echo END-$((1+1))")
        ip_addr = tty.wait_for("END-2").split("END-$((1+1))", 1)[1]
        assert re.findall(r"^\d+: (\w+)[@:]", ip_addr, re.MULTILINE) == ["lo", "eth0"]
        assert f"inet {pod_ip}/32 scope global eth0" in ip_addr  # a /24 in the seed's cluster: the same shape
        # "10.0.170.92" の部分をService名が"clusterip"のIPv4アドレスに置き換えてください
        tty.type(f"wget -qO - {cluster_ip}; echo END-$((2+2))")
        echoed = tty.wait_for("END-4").split("END-$((2+2))", 1)[1].replace("\r\n", "\n")
        assert "CLIENT VALUES:\nclient_address=" in echoed and "command=GET\n" in echoed
        assert client_addresses(echoed) == [pod_ip]  # always the client pod's own IP
        tty.type("exit")
        assert 'pod "busybox" deleted' in tty.wait_for("EXIT=")  # `--rm`
    assert node and "NotFound" in _run(sandbox, "kubectl get pod busybox", None, {}).stderr


def source_ip_for_type_node_port(sandbox: RunningCluster, pod_node: str) -> list[str]:
    """Type=NodePortを使用したServiceでの送信元IP: SNAT by default, the client's IP with externalTrafficPolicy
    Local (and only the endpoint's node answers). Returns $NODES."""
    out = kubectl(
        sandbox, "kubectl expose deployment source-ip-app --name=nodeport --port=80 --target-port=8080 --type=NodePort"
    )
    assert out == "service/nodeport exposed\n"
    node_port = kubectl(sandbox, 'kubectl get -o jsonpath="{.spec.ports[0].nodePort}" services nodeport')
    nodes = kubectl(
        sandbox,
        """kubectl get nodes -o jsonpath='{ $.items[*].status.addresses[?(@.type=="InternalIP")].address }'""",
    )
    assert 30000 <= int(node_port) <= 32767
    assert len(nodes.split()) == 2 and all(ipaddress.ip_address(node) for node in nodes.split())
    external = f"tk-{sandbox.data_dir.name}.ext"

    def through_each_node(loop: str, *, only: str | None = None) -> list[str]:
        variables = {"NODEPORT": node_port, "NODES": only or nodes}
        return client_addresses(sh(sandbox, loop, netns=external, **variables))

    snat = "for node in $NODES; do curl -s $node:$NODEPORT | grep -i client_address; done"
    seen = eventually(lambda: len(found := through_each_node(snat)) == 2 and found, what="both nodes answer")
    # "正しいクライアントIPではなく、クラスターのinternal IP": each node put its own address in place of the client's
    assert set(seen) <= set(nodes.split()) and EXTERNAL_CLIENT not in seen

    out = kubectl(sandbox, """kubectl patch svc nodeport -p '{"spec":{"externalTrafficPolicy":"Local"}}'""")
    assert out == "service/nodeport patched\n"
    local = "for node in $NODES; do curl --connect-timeout 1 -s $node:$NODEPORT | grep -i client_address; done"
    assert eventually(lambda: through_each_node(local) == [EXTERNAL_CLIENT], what="one answer, the client's IP")
    # ... and it is the endpoint's node that answered: the other one drops
    pod_node_ip, other_ip = node_ips(sandbox, pod_node)
    assert through_each_node(local, only=pod_node_ip) == [EXTERNAL_CLIENT]
    assert through_each_node(local, only=other_ip) == []
    return nodes.split()


def node_ips(sandbox: RunningCluster, first: str) -> tuple[str, str]:
    """The InternalIPs of node `first` and of the other node."""
    by_name = json.loads(kubectl(sandbox, "kubectl get nodes -o json"))["items"]
    ips = {
        n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        for n in by_name
    }
    (other,) = set(ips) - {first}
    return ips[first], ips[other]


def source_ip_for_type_load_balancer(sandbox: RunningCluster, pod_node: str, nodes: list[str]) -> None:
    """Type=LoadBalancerを使用したServiceでの送信元IP: SNAT by default; with externalTrafficPolicy Local a
    healthCheckNodePort tells the load balancer which nodes have an endpoint, and the client's IP is kept."""
    out = kubectl(
        sandbox,
        "kubectl expose deployment source-ip-app --name=loadbalancer --port=80 --target-port=8080 --type=LoadBalancer",
    )
    assert out == "service/loadbalancer exposed\n"
    header, rows = table(kubectl(sandbox, "kubectl get svc loadbalancer"))
    assert header == SVC_HEADER
    ((name, kind, cluster_ip, external_ip, ports, _age),) = rows
    assert (name, kind) == ("loadbalancer", "LoadBalancer") and ipaddress.ip_address(cluster_ip) in SERVICE_CIDR
    assert ipaddress.ip_address(external_ip)  # an address at once, never <pending>
    assert re.fullmatch(r"80:\d+/TCP", ports)  # the seed's (older) kubectl printed 80/TCP; v1.32 adds the NodePort

    assert curl_the_load_balancer(sandbox, external_ip) in nodes  # SNAT: a node's address, not the client's

    out = kubectl(sandbox, """kubectl patch svc loadbalancer -p '{"spec":{"externalTrafficPolicy":"Local"}}'""")
    assert out == "service/loadbalancer patched\n"
    line = kubectl(sandbox, "kubectl get svc loadbalancer -o yaml | grep -i healthCheckNodePort")
    health_port = re.fullmatch(r"  healthCheckNodePort: (\d+)\n", line)
    assert health_port, line

    # The seed's `-l run=source-ip-app` is the label `kubectl run` gave pods before Kubernetes 1.18; upstream's
    # current page says `-l app=source-ip-app`, the label `kubectl create deployment` sets.
    header, rows = table(kubectl(sandbox, "kubectl get pod -o wide -l app=source-ip-app"))
    assert header[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    ((pod, ready, status, *_rest),) = rows
    assert pod.startswith("source-ip-app-") and (ready, status) == ("1/1", "Running")
    assert rows[0][header.index("NODE")] == pod_node

    # "このコマンドは選んだノードのローカル上で実行してください": in each node's namespace. The seed's kube-proxy
    # answered in plain text ("1 Service Endpoints found"); kube-proxy has answered in JSON since 1.11.
    healthz = f"curl localhost:{health_port[1]}/healthz"
    status_code = f"curl -s -o /dev/null -w '%{{http_code}}' localhost:{health_port[1]}/healthz"
    for node in ("node-1", "node-2"):
        local = 1 if node == pod_node else 0
        body = eventually(lambda n=node: sh(sandbox, healthz, netns=node_netns(sandbox, n)), what=f"{node}'s /healthz")
        assert json.loads(body) == {
            "service": {"namespace": "default", "name": "loadbalancer"},
            "localEndpoints": local,
            "serviceProxyHealthy": True,
        }
        assert sh(sandbox, status_code, netns=node_netns(sandbox, node)) == ("200" if local else "503")

    # The sandbox's load balancer now sends the address to the node with the endpoint: the client's own address.
    assert curl_the_load_balancer(sandbox, external_ip) == EXTERNAL_CLIENT


def curl_the_load_balancer(sandbox: RunningCluster, external_ip: str) -> str:
    """The seed's `curl 203.0.113.140` from the external client: the client address the echoserver saw. (`-s
    --max-time 2` only let it be retried while the load balancer's route follows a change.)"""
    external = f"tk-{sandbox.data_dir.name}.ext"
    echoed = eventually(lambda: sh(sandbox, f"curl -s --max-time 2 {external_ip}", netns=external), what="the LB IP")
    assert echoed.startswith("CLIENT VALUES:\n")
    (address,) = client_addresses(echoed)
    return address


def cleaning_up(sandbox: RunningCluster) -> None:
    """クリーンアップ: the Services by label (`kubectl expose` copied the Deployment's `app` label to each), then the
    Deployment, whose ReplicaSet and pod the garbage collector deletes."""
    out = kubectl(sandbox, "kubectl delete svc -l app=source-ip-app")
    deleted = [f'service "{name}" deleted' for name in ("clusterip", "loadbalancer", "nodeport")]
    assert sorted(out.splitlines()) == deleted
    out = kubectl(sandbox, "kubectl delete deployment source-ip-app")
    assert out == 'deployment.apps "source-ip-app" deleted\n'
    leftovers = "kubectl get deploy,rs,pods,svc -l app=source-ip-app -o name"
    # pods are deleted gracefully (stopped by their node first), and a replacement may come and go meanwhile
    eventually(lambda: kubectl(sandbox, leftovers) == "", timeout=90, what="the ReplicaSet and pod garbage-collected")
    # and the pods' network namespaces are gone with them (only the nodes, the LAN and the client remain)
    prefix = f"tk-{sandbox.data_dir.name}."
    eventually(lambda: len(namespaces(prefix)) == 4, timeout=90, what="the pods' namespaces removed")
