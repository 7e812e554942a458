"""The sandbox load balancer's choice of node for each LoadBalancer address (a pure function; the e2e seed
tutorial curls the addresses through the real routes)."""

from __future__ import annotations

from typing import Any

from tinykube.node.loadbalancer import routes

NODES = {"node-1": "172.20.0.2", "node-2": "172.20.0.3"}


def service(name: str, *ips: str, kind: str = "LoadBalancer", policy: str = "Cluster") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": name},
        "spec": {"type": kind, "externalTrafficPolicy": policy},
        "status": {"loadBalancer": {"ingress": [{"ip": ip} for ip in ips]}},
    }


def slice_of(name: str, *endpoints: tuple[str, bool]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": f"{name}-abc", "labels": {"kubernetes.io/service-name": name}},
        "endpoints": [
            {"addresses": ["10.244.0.2"], "nodeName": node, "conditions": {"ready": ready}} for node, ready in endpoints
        ],
    }


def test_every_address_of_a_cluster_policy_service_goes_to_one_node() -> None:
    found = routes([service("lb", "172.20.255.1", "172.20.255.2")], [], NODES)
    assert set(found) == {"172.20.255.1", "172.20.255.2"}
    assert len(set(found.values())) == 1 and set(found.values()) <= set(NODES.values())
    assert routes([service("lb", "172.20.255.1", "172.20.255.2")], [], NODES) == found  # stable


def test_a_local_policy_address_goes_to_a_node_with_a_ready_endpoint_or_nowhere() -> None:
    local = service("lb", "172.20.255.1", policy="Local")
    assert routes([local], [slice_of("lb", ("node-2", True))], NODES) == {"172.20.255.1": "172.20.0.3"}
    assert routes([local], [slice_of("lb", ("node-2", False))], NODES) == {}
    assert routes([local], [], NODES) == {}


def test_other_services_and_ipv6_addresses_are_not_routed() -> None:
    assert routes([service("np", "172.20.255.9", kind="NodePort"), service("v6", "fd00::1")], [], NODES) == {}
    assert routes([service("lb", "172.20.255.1")], [], {}) == {}  # no node yet
