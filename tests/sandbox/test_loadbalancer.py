"""The sandbox load balancer: its choice of node for each LoadBalancer address (a pure function), and the
incremental planning of routes from events (the e2e seed tutorial curls the addresses through the real routes)."""

from __future__ import annotations

from typing import Any

from tinykube.client.informer import SharedInformers
from tinykube.sandbox.loadbalancer import SandboxLoadBalancer, service_routes
from tinykube.sandbox.topology import NodeNet, Sandbox

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
    found = service_routes(service("lb", "172.20.255.1", "172.20.255.2"), [], NODES)
    assert set(found) == {"172.20.255.1", "172.20.255.2"}
    assert len(set(found.values())) == 1 and set(found.values()) <= set(NODES.values())
    assert service_routes(service("lb", "172.20.255.1", "172.20.255.2"), [], NODES) == found  # stable


def test_a_local_policy_address_goes_to_a_node_with_a_ready_endpoint_or_nowhere() -> None:
    local = service("lb", "172.20.255.1", policy="Local")
    assert service_routes(local, [slice_of("lb", ("node-2", True))], NODES) == {"172.20.255.1": "172.20.0.3"}
    assert service_routes(local, [slice_of("lb", ("node-2", False))], NODES) == {}
    assert service_routes(local, [], NODES) == {}


def test_other_services_and_ipv6_addresses_are_not_routed() -> None:
    assert service_routes(service("np", "172.20.255.9", kind="NodePort"), [], NODES) == {}
    assert service_routes(service("v6", "fd00::1"), [], NODES) == {}
    assert service_routes(service("lb", "172.20.255.1"), [], {}) == {}  # no node yet
    assert service_routes(None, [], NODES) == {}  # deleted


class Events:
    """A load balancer fed events by hand (no API, no namespaces): what each burst of events makes it send."""

    def __init__(self) -> None:
        sandbox = Sandbox("lbplan")
        self.lb = SandboxLoadBalancer(SharedInformers(None), sandbox)  # type: ignore[arg-type]  # never started
        self.lb.nodes_changed()
        for name, ip in NODES.items():
            sandbox.nodes[name] = NodeNet("lbplan", name, f"lbplan-{name}", ip, "10.244.0.0/24")

    def service(self, obj: dict[str, Any]) -> None:
        self.lb.services.store.put(obj)
        self.lb._service_changed(obj)

    def delete_service(self, name: str) -> None:
        obj = self.lb.services.store.delete(f"default/{name}")
        assert obj is not None
        self.lb._service_changed(obj)

    def slice(self, obj: dict[str, Any]) -> None:
        old = self.lb.slices.store.put(obj)
        self.lb._slice_changed(*([old] if old else []), obj)

    def node_joins(self, name: str, ip: str) -> None:
        self.lb.sandbox.nodes[name] = NodeNet("lbplan", name, f"lbplan-{name}", ip, "10.244.9.0/24")
        self.lb.nodes_changed()

    def sync(self) -> list[str]:
        dirty, self.lb._dirty = self.lb._dirty, set()
        return self.lb._plan(dirty)


def test_only_what_changed_is_sent_and_each_burst_once() -> None:
    events = Events()
    events.service(service("lb", "172.20.255.1"))
    events.service(service("cip", kind="ClusterIP"))
    events.service(service("lb", "172.20.255.1"))  # the same again in the burst: one route
    (first,) = events.sync()
    assert first.startswith("route replace 172.20.255.1/32 via ")
    assert events.lb.programmed == {"172.20.255.1": first.rsplit(" ", 1)[1]}

    events.service(service("cip", kind="ClusterIP"))  # other Services: nothing to do
    events.service(service("lb", "172.20.255.1"))  # unchanged: nothing to send
    assert events.sync() == []

    events.service(service("lb", "172.20.255.1", "172.20.255.2"))
    assert events.sync() == ["route replace 172.20.255.2/32 via " + events.lb.programmed["172.20.255.1"]]


def test_local_policy_follows_the_ready_endpoints_and_deletion_removes_routes() -> None:
    events = Events()
    events.service(service("web", "172.20.255.7", policy="Local"))
    assert events.sync() == []  # no ready endpoint anywhere: no route
    events.slice(slice_of("web", ("node-2", True)))
    assert events.sync() == ["route replace 172.20.255.7/32 via 172.20.0.3"]
    events.slice(slice_of("web", ("node-2", False)))
    assert events.sync() == ["route del 172.20.255.7/32"]
    events.slice(slice_of("web", ("node-1", True)))
    assert events.sync() == ["route replace 172.20.255.7/32 via 172.20.0.2"]
    events.service(service("web", kind="ClusterIP"))  # no longer a LoadBalancer
    assert events.sync() == ["route del 172.20.255.7/32"]
    events.service(service("web", "172.20.255.7"))
    events.sync()
    events.delete_service("web")
    assert events.sync() == ["route del 172.20.255.7/32"]
    assert events.lb.programmed == {}


def test_a_joining_node_looks_at_load_balancers_only() -> None:
    events = Events()
    events.service(service("cip", kind="ClusterIP"))
    events.service(service("web", "172.20.255.7", policy="Local"))
    events.sync()
    events.node_joins("node-3", "172.20.0.4")
    assert events.lb._dirty == {"default/web"}
    assert events.sync() == []  # still no ready endpoint
