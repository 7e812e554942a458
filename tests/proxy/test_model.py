"""The proxy's desired state from Services and EndpointSlices (pure)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tinykube.proxy.model import Endpoint, cluster_endpoints, local_endpoints, service_ports


def svc(name: str, **spec: Any) -> dict[str, Any]:
    base = {
        "clusterIP": "10.96.0.5",
        "clusterIPs": ["10.96.0.5"],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {**base, **spec}}


def endpoint_slice(service: str, *endpoints: dict[str, Any], port: int = 8080, name: str = "s1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        "endpoints": list(endpoints),
    }


def ep(ip: str, node: str = "n1", **conditions: bool) -> dict[str, Any]:
    return {"addresses": [ip], "nodeName": node, "conditions": conditions}


def test_ports_with_their_endpoints() -> None:
    (port,) = service_ports([svc("web")], [endpoint_slice("web", ep("10.244.0.2"), ep("10.244.1.2", "n2"))])
    assert port.key == "ns/web/tcp/http" and port.cluster_ips == ("10.96.0.5",) and port.port == 80
    assert [(e.ip, e.port, e.node) for e in port.endpoints] == [("10.244.0.2", 8080, "n1"), ("10.244.1.2", 8080, "n2")]


def test_headless_external_name_and_ipv6_get_no_rules() -> None:
    headless = svc("h", clusterIP="None", clusterIPs=["None"])
    external = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"type": "ExternalName", "externalName": "a.b"}}
    v6 = svc("v6", clusterIP="fd00::5", clusterIPs=["fd00::5"])
    assert service_ports([headless, external, v6], []) == []


def test_type_dependent_fields() -> None:
    lb = svc(
        "lb",
        type="LoadBalancer",
        externalTrafficPolicy="Local",
        internalTrafficPolicy="Local",
        healthCheckNodePort=32100,
        externalIPs=["172.20.1.1"],
        sessionAffinity="ClientIP",
        ports=[{"port": 53, "protocol": "UDP", "nodePort": 30053}],
    )
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "172.20.255.1"}]}}
    (port,) = service_ports([lb], [])
    assert (port.protocol, port.node_port, port.health_check_node_port) == ("udp", 30053, 32100)
    assert port.external_local and port.internal_local and port.affinity_timeout == 10800
    assert port.external_ips == ("172.20.1.1",) and port.load_balancer_ips == ("172.20.255.1",)


def test_slices_of_other_ports_or_families_and_duplicates() -> None:
    other_port = endpoint_slice("web", ep("10.244.0.9"), name="s2")
    other_port["ports"][0]["name"] = "metrics"
    v6 = endpoint_slice("web", ep("fd00::9"), name="s3")
    v6["addressType"] = "IPv6"
    twice = [endpoint_slice("web", ep("10.244.0.2")), endpoint_slice("web", ep("10.244.0.2"), name="s4")]
    (port,) = service_ports([svc("web")], [other_port, v6, *twice])
    assert [e.ip for e in port.endpoints] == ["10.244.0.2"]


def test_categorize_as_upstream() -> None:
    ready = Endpoint("10.0.0.1", 80, "n1", True, True, False)
    terminating = Endpoint("10.0.0.2", 80, "n2", False, True, True)
    gone = Endpoint("10.0.0.3", 80, "n1", False, False, True)
    (port,) = service_ports([svc("web")], [])
    assert cluster_endpoints(replace(port, endpoints=(ready, terminating, gone))) == (ready,)
    assert cluster_endpoints(replace(port, endpoints=(terminating, gone))) == (terminating,)  # serving + terminating
    assert local_endpoints(replace(port, endpoints=(ready, terminating)), "n2") == (terminating,)
    assert local_endpoints(replace(port, endpoints=(ready,)), "n2") == ()
