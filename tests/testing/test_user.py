"""The plugin as a user meets it: a Service with a selector and pods, the EndpointSlice and the DNS answer it
gets, the environment a pod is given, kubectl, the official client, and reset()."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client as k8s

from tinykube.testing import Cluster, ClusterError


def _pod(name: str, *, ready: bool = True) -> dict[str, Any]:
    """The simulated node runs every pod bound to it; `tinykube.io/ready: "false"` keeps one not ready."""
    annotations = {} if ready else {"tinykube.io/ready": "false"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}, "annotations": annotations},
        "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 8080}]}]},
    }


WEB = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
}


def _slice_endpoints(slices: list[dict[str, Any]]) -> dict[str, bool]:
    return {e["targetRef"]["name"]: e["conditions"]["ready"] for s in slices for e in s.get("endpoints") or []}


def test_service_gets_endpointslice_and_dns_answer(tinykube_cluster: Cluster, namespace: str) -> None:
    c = tinykube_cluster
    c.apply([WEB, _pod("web-1"), _pod("web-2"), _pod("web-3", ready=False)], namespace=namespace)
    slices = c.wait_for(
        "EndpointSlice",
        None,
        lambda items: _slice_endpoints(items) == {"web-1": True, "web-2": True, "web-3": False},
        namespace=namespace,
        selector="kubernetes.io/service-name=web",
    )
    pod_ips = {c.wait_for("pod", n, "Ready", namespace=namespace)["status"]["podIP"] for n in ("web-1", "web-2")}
    ready = {e["addresses"][0] for s in slices for e in s["endpoints"] if e["conditions"]["ready"]}
    assert ready == pod_ips
    assert [p["port"] for s in slices for p in s["ports"]] == [8080]

    cluster_ip = c.get("service", "web", namespace=namespace)["spec"]["clusterIP"]
    answer = c.dns_query(f"web.{namespace}.svc.cluster.local", "A")
    assert (answer.rcode, answer.records) == ("NOERROR", [cluster_ip])
    srv = c.dns_query(f"_http._tcp.web.{namespace}.svc.cluster.local", "SRV")
    assert srv.records == [f"0 100 80 web.{namespace}.svc.cluster.local."]
    assert c.dns_query(f"nothing.{namespace}.svc.cluster.local").rcode == "NXDOMAIN"


def test_env_for_gives_the_service_variables(tinykube_cluster: Cluster, namespace: str) -> None:
    c = tinykube_cluster
    c.apply([WEB, _pod("client")], namespace=namespace)
    ip = c.get("service", "web", namespace=namespace)["spec"]["clusterIP"]
    env = c.env_for("client", namespace=namespace)
    assert env["WEB_SERVICE_HOST"] == ip
    assert env["WEB_SERVICE_PORT_HTTP"] == "80"
    assert env["WEB_PORT_80_TCP"] == f"tcp://{ip}:80"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    # a pod that does not exist yet, in a namespace without the Service, gets only default/kubernetes's
    assert not any(k.startswith("WEB_") for k in c.env_for(_pod("elsewhere"), namespace="default"))


def test_kubectl_text_json_and_errors(tinykube_cluster: Cluster, namespace: str) -> None:
    c = tinykube_cluster
    c.kubectl("-n", namespace, "create", "service", "clusterip", "api", "--tcp=443:8443")
    assert c.kubectl("-n", namespace, "get", "svc", "api", "-o", "json")["spec"]["ports"][0]["port"] == 443
    assert c.kubectl("-n", namespace, "get", "svc", "-ojsonpath={.items[0].metadata.name}") == "api"
    assert "api" in c.kubectl("-n", namespace, "get", "svc")
    with pytest.raises(ClusterError, match="NotFound"):
        c.kubectl("-n", namespace, "get", "svc", "missing")


def test_official_client(tinykube_cluster: Cluster, namespace: str) -> None:
    core = k8s.CoreV1Api(tinykube_cluster.api_client)
    core.create_namespaced_service(namespace, WEB)
    assert [s.metadata.name for s in core.list_namespaced_service(namespace).items] == ["web"]


def test_wait_for_times_out_with_what_it_saw(tinykube_cluster: Cluster, namespace: str) -> None:
    with pytest.raises(TimeoutError, match="last: None"):
        tinykube_cluster.wait_for("service", "never", "exists", timeout=0.1, namespace=namespace)


def test_reset_returns_to_the_initial_state(tinykube_cluster: Cluster) -> None:
    c = tinykube_cluster
    before = {kind: _names(c.list(kind)) for kind in ("namespaces", "services", "pods", "endpointslices")}
    c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}})
    c.apply([WEB, _pod("web-1")], namespace="scratch")
    c.apply([WEB, _pod("web-1")], namespace="default")  # added to an initial namespace
    c.kubectl("label", "namespace", "default", "touched=yes")  # an initial object changed
    c.kubectl("delete", "namespace", "kube-node-lease", "--wait=false")  # ... and one deleted
    c.wait_for("endpointslice", None, lambda items: len(items) == 1, namespace="scratch")

    c.reset()

    after = {kind: _names(c.list(kind)) for kind in ("namespaces", "services", "pods", "endpointslices")}
    assert after == before
    assert "touched" not in c.get("namespace", "default")["metadata"]["labels"]
    assert c.get("namespace", "kube-node-lease")["status"]["phase"] == "Active"
    assert c.dns_query("web.scratch.svc.cluster.local").rcode == "NXDOMAIN"
    # the cluster still works afterwards, and the freed ClusterIPs and names can be used again
    c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}})
    c.apply(WEB, namespace="scratch")
    # DNS follows the API through its watch, as CoreDNS does: the name appears moments after the write
    deadline = time.monotonic() + 5
    while (rcode := c.dns_query("web.scratch.svc.cluster.local").rcode) != "NOERROR" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rcode == "NOERROR"
    c.reset()


def _names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}" for i in items)
