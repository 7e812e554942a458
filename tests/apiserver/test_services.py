"""Service allocation through the real API: the reference's test vectors 1-27 (service CIDR 10.0.0.0/24, node
ports 30000-32767), type transitions, dual-stack, the built-in load balancer and the allocator metrics.

Each cluster here is a real `tinykube up` with its own ranges; every test works in its own namespace.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, start_cluster, stop_cluster
from tinykube.apiserver.allocators.ranges import IPRange, PortRange

NS = "/api/v1/namespaces"


def _cluster(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[RunningCluster]:
    data_dir: Path = tmp_path_factory.mktemp("svc") / name
    running = start_cluster(data_dir, *flags)
    try:
        yield running
    finally:
        stop_cluster(running)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def main_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    yield from _cluster(
        tmp_path_factory,
        "svc-main",
        "--service-cluster-ip-range",
        "10.0.0.0/24",
        "--loadbalancer-ip-range",
        "172.20.255.0/29",
    )


@pytest.fixture(scope="module")
def dual_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    yield from _cluster(tmp_path_factory, "svc-dual", "--service-cluster-ip-range", "10.0.1.0/24,fd00:10::/112")


@pytest.fixture(scope="module")
def tiny_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    yield from _cluster(
        tmp_path_factory,
        "svc-tiny",
        "--service-cluster-ip-range",
        "10.0.2.0/28",
        "--service-node-port-range",
        "30000-30003",
        "--loadbalancer-ip-range",
        "172.20.255.0/30",
    )


class Api:
    """An HTTP client bound to one namespace of one cluster."""

    def __init__(self, http: httpx.Client, namespace: str) -> None:
        self.http = http
        self.ns = namespace

    def path(self, name: str = "") -> str:
        return f"{NS}/{self.ns}/services" + (f"/{name}" if name else "")

    def create(self, body: dict[str, Any], **params: str) -> httpx.Response:
        return self.http.post(self.path(), json=body, params=params)

    def created(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.create(body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def get(self, name: str) -> dict[str, Any]:
        response = self.http.get(self.path(name))
        assert response.status_code == 200, response.text
        return dict(response.json())

    def put(self, obj: dict[str, Any]) -> httpx.Response:
        return self.http.put(self.path(obj["metadata"]["name"]), json=obj)

    def allocations(self, kind: str) -> dict[str, dict[str, Any]]:
        """value -> holder, for every range of `kind` (ClusterIP, NodePort, LoadBalancerIP)."""
        ranges = self.http.get("/debug/allocations").json()["ranges"]
        return {a["value"]: a for r in ranges if r["kind"] == kind for a in r["allocations"]}


def _api(cluster: RunningCluster) -> Iterator[Api]:
    with cluster.http() as http:
        namespace = f"svc-{secrets.token_hex(4)}"
        assert http.post(NS, json={"metadata": {"name": namespace}}).status_code == 201
        yield Api(http, namespace)
        http.delete(f"{NS}/{namespace}")


@pytest.fixture
def api(main_cluster: RunningCluster) -> Iterator[Api]:
    yield from _api(main_cluster)


@pytest.fixture
def dual(dual_cluster: RunningCluster) -> Iterator[Api]:
    yield from _api(dual_cluster)


@pytest.fixture
def tiny(tiny_cluster: RunningCluster) -> Iterator[Api]:
    yield from _api(tiny_cluster)


def svc(name: str = "foo", **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


def failure(response: httpx.Response, code: int) -> dict[str, Any]:
    assert response.status_code == code, response.text
    status = dict(response.json())
    assert status["kind"] == "Status" and status["status"] == "Failure"
    return status


def invalid_message(response: httpx.Response) -> str:
    status = failure(response, 422)
    assert status["reason"] == "Invalid"
    return str(status["message"])


# ---- vectors 1-5: ClusterIP allocation -------------------------------------------------------------------------


def test_create_allocates_from_the_upper_band_with_upstream_defaults(api: Api) -> None:
    spec = api.created(svc())["spec"]
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert ipaddress.ip_address("10.0.0.17") <= ip <= ipaddress.ip_address("10.0.0.254")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "targetPort": 80, "protocol": "TCP"}]
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert "externalTrafficPolicy" not in spec
    holder = api.allocations("ClusterIP")[spec["clusterIP"]]
    assert (holder["namespace"], holder["name"]) == (api.ns, "foo")


@pytest.mark.parametrize("ip", ["10.1.0.5", "10.0.0.0", "10.0.0.255"])
def test_requested_ip_outside_the_range(api: Api, ip: str) -> None:
    status = failure(api.create(svc(clusterIP=ip)), 422)
    assert status["message"] == (
        f'Service "foo" is invalid: spec.clusterIPs: Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: '
        f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is 10.0.0.0/24"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: []string{{"{ip}"}}: failed to allocate IP {ip}: the provided IP ({ip}) is not '
            "in the valid range. The range of valid IPs is 10.0.0.0/24",
            "field": "spec.clusterIPs",
        }
    ]


def test_requested_ip_already_allocated(api: Api) -> None:
    # kube-system/kube-dns holds the tenth address
    assert invalid_message(api.create(svc(clusterIP="10.0.0.10"))) == (
        'Service "foo" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.10"}: '
        "failed to allocate IP 10.0.0.10: provided IP is already allocated"
    )


def test_requested_ip_is_honoured(api: Api) -> None:
    assert api.created(svc(clusterIP="10.0.0.5"))["spec"]["clusterIPs"] == ["10.0.0.5"]


def _fill(api: Api, body: Callable[[str], dict[str, Any]], limit: int) -> httpx.Response:
    """Create Services until one fails (other tests share the tiny ranges, so the count varies)."""
    for i in range(limit):
        response = api.create(body(f"fill{i}"))
        if response.status_code != 201:
            return response
    raise AssertionError(f"{limit} creates and the range is still not full")


def test_full_ranges(tiny: Api) -> None:
    """10.0.2.0/28 holds 14 addresses; node ports 30000-30003 hold 4."""
    status = failure(_fill(tiny, lambda name: svc(name), 15), 500)
    assert status["reason"] == "InternalError"
    assert status["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"
    assert len(_held(tiny, "ClusterIP")) == len(tiny.http.get(tiny.path()).json()["items"])
    for item in tiny.http.get(tiny.path()).json()["items"]:
        assert tiny.http.delete(tiny.path(item["metadata"]["name"])).status_code == 200
    status = failure(_fill(tiny, lambda name: svc(name, type="NodePort"), 5), 500)
    assert status["message"] == "Internal error occurred: failed to allocate a nodePort: range is full"
    assert len(_held(tiny, "NodePort")) == len(tiny.http.get(tiny.path()).json()["items"])  # nothing leaked


def test_static_band_is_used_when_the_dynamic_band_is_full(tiny: Api) -> None:
    """A /28 has no static band (16 addresses or fewer): every free address is dynamic."""
    ip = tiny.created(svc())["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.2.0/28")


# ---- vectors 6-9 and 20: node ports ----------------------------------------------------------------------------


def test_node_port_outside_the_range(api: Api) -> None:
    body = svc(type="NodePort", ports=[{"port": 80, "nodePort": 40000}])
    assert invalid_message(api.create(body)) == (
        'Service "foo" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the valid '
        "range. The range of valid ports is 30000-32767"
    )


def test_node_port_already_allocated(api: Api) -> None:
    api.created(svc("first", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
    body = svc(type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    assert invalid_message(api.create(body)) == (
        'Service "foo" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated'
    )


def test_tcp_and_udp_on_one_port_share_a_node_port(api: Api) -> None:
    ports = [{"name": "dns-tcp", "port": 53, "protocol": "TCP"}, {"name": "dns-udp", "port": 53, "protocol": "UDP"}]
    spec = api.created(svc(type="NodePort", ports=ports))["spec"]
    first, second = (p["nodePort"] for p in spec["ports"])
    assert first == second and 30086 <= first <= 32767
    held = [v for v, h in api.allocations("NodePort").items() if h["namespace"] == api.ns]
    assert held == [str(first)]  # counted once


def test_node_port_on_a_cluster_ip_service_is_forbidden(api: Api) -> None:
    status = failure(api.create(svc(ports=[{"port": 80, "nodePort": 30080}])), 422)
    assert status["message"] == (
        "Service \"foo\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    )
    assert status["details"]["causes"][0]["message"] == "Forbidden: may not be used when `type` is 'ClusterIP'"


def test_load_balancer_with_local_traffic_policy_gets_a_health_check_port(api: Api) -> None:
    spec = api.created(svc(type="LoadBalancer", externalTrafficPolicy="Local"))["spec"]
    assert 30000 <= spec["healthCheckNodePort"] <= 32767
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert str(spec["healthCheckNodePort"]) in api.allocations("NodePort")
    node_port = api.created(svc("np", type="NodePort", externalTrafficPolicy="Local"))["spec"]
    assert "healthCheckNodePort" not in node_port


def test_load_balancer_without_node_ports(api: Api) -> None:
    spec = api.created(svc(type="LoadBalancer", allocateLoadBalancerNodePorts=False))["spec"]
    assert "nodePort" not in spec["ports"][0]


# ---- vectors 10-19: validation through the API -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body, message",
    [
        pytest.param(
            svc("Redis_Master"),
            'Service "Redis_Master" is invalid: metadata.name: Invalid value: "Redis_Master": a DNS-1035 label must '
            "consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with "
            "an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
            "'[a-z]([-a-z0-9]*[a-z0-9])?')",
            id="10-name",
        ),
        pytest.param(
            svc(ports=[{"name": "http", "port": 80}, {"port": 443}]),
            'Service "foo" is invalid: spec.ports[1].name: Required value',
            id="11-port-name-required",
        ),
        pytest.param(
            svc(ports=[{"name": "http", "port": 80}, {"name": "http", "port": 81}]),
            'Service "foo" is invalid: spec.ports[1].name: Duplicate value: "http"',
            id="12-port-name-duplicate",
        ),
        pytest.param(
            svc(ports=[{"port": 0}]),
            'Service "foo" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, '
            "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive]",
            id="13-port-zero",
        ),
        pytest.param(
            svc(ports=[{"port": 80, "protocol": "ICMP"}]),
            'Service "foo" is invalid: spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", '
            '"TCP", "UDP"',
            id="14-protocol",
        ),
        pytest.param(
            svc(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}}),
            'Service "foo" is invalid: spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be '
            "greater than 0 and less than 86400",
            id="15-affinity-timeout",
        ),
        pytest.param(
            svc(type="ExternalName", externalName="my_db"),
            'Service "foo" is invalid: spec.externalName: Invalid value: "my_db": a lowercase RFC 1123 subdomain must '
            "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="16-external-name",
        ),
        pytest.param(
            svc(type="ExternalName", externalName="db.example.com", clusterIP="10.0.0.5"),
            'Service "foo" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services',
            id="17-external-name-cluster-ip",
        ),
        pytest.param(
            svc(externalTrafficPolicy="Local"),
            'Service "foo" is invalid: spec.externalTrafficPolicy: Invalid value: "Local": may only be set for '
            "externally-accessible services",
            id="19-traffic-policy",
        ),
    ],
)
def test_validation_messages(api: Api, body: dict[str, Any], message: str) -> None:
    assert invalid_message(api.create(body)) == message
    assert _held(api, "ClusterIP") == _held(api, "NodePort") == []


def test_session_affinity_timeouts(api: Api) -> None:
    config = {"clientIP": {"timeoutSeconds": 86400}}
    assert api.created(svc("max", sessionAffinity="ClientIP", sessionAffinityConfig=config))
    spec = api.created(svc("default", sessionAffinity="ClientIP"))["spec"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_external_name_with_trailing_dot(api: Api) -> None:
    spec = api.created(svc(type="ExternalName", externalName="db.example.com.", ports=[]))["spec"]
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
        assert field not in spec


def test_headless_node_port_is_refused_and_rolled_back(api: Api) -> None:
    body = svc(type="NodePort", clusterIP="None")
    assert invalid_message(api.create(body)) == (
        'Service "foo" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to \'None\' for '
        "NodePort services"
    )
    assert _held(api, "NodePort") == []


def test_headless_service(api: Api) -> None:
    spec = api.created(svc(clusterIP="None", selector={"app": "db"}))["spec"]
    assert spec["clusterIPs"] == ["None"]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"


def test_headless_selectorless_service_requires_dual_stack_by_default(api: Api) -> None:
    spec = api.created(svc(clusterIP="None"))["spec"]
    assert spec["ipFamilyPolicy"] == "RequireDualStack"
    assert spec["ipFamilies"] == ["IPv4", "IPv6"]


# ---- vectors 21-25: updates, delete, dry-run -------------------------------------------------------------------


def test_cluster_ip_is_immutable(api: Api) -> None:
    created = api.created(svc(clusterIP="10.0.0.20"))
    created["spec"]["clusterIP"] = "10.0.0.21"
    assert invalid_message(api.put(created)) == (
        'Service "foo" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.0.0.21"}: may not change once set'
    )
    assert "10.0.0.21" not in api.allocations("ClusterIP")


def test_update_without_allocated_values_keeps_them(api: Api) -> None:
    """Old clients send updates without clusterIP or nodePorts: the Service keeps what it has."""
    created = api.created(svc(type="NodePort", ports=[{"name": "http", "port": 80}]))
    body = svc(type="NodePort", ports=[{"name": "http", "port": 80}])
    body["metadata"]["labels"] = {"changed": "yes"}
    response = api.put(body)
    assert response.status_code == 200, response.text
    spec = response.json()["spec"]
    assert spec["clusterIP"] == created["spec"]["clusterIP"]
    assert spec["ports"][0]["nodePort"] == created["spec"]["ports"][0]["nodePort"]


def test_node_port_to_cluster_ip_releases_the_node_ports(api: Api) -> None:
    created = api.created(svc(type="NodePort"))
    node_port = str(created["spec"]["ports"][0]["nodePort"])
    assert node_port in api.allocations("NodePort")
    created["spec"]["type"] = "ClusterIP"
    response = api.put(created)
    assert response.status_code == 200, response.text
    spec = response.json()["spec"]
    assert "nodePort" not in spec["ports"][0]
    assert "externalTrafficPolicy" not in spec
    assert node_port not in api.allocations("NodePort")


def test_cluster_ip_to_external_name_frees_the_ip(api: Api) -> None:
    created = api.created(svc())
    ip = created["spec"]["clusterIP"]
    created["spec"]["type"] = "ExternalName"
    created["spec"]["externalName"] = "db.example.com"
    response = api.put(created)
    assert response.status_code == 200, response.text
    spec = response.json()["spec"]
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert field not in spec
    assert ip not in api.allocations("ClusterIP")


def test_delete_returns_the_service_and_frees_everything(api: Api) -> None:
    created = api.created(svc(type="NodePort"))
    ip, node_port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    endpoints = {"metadata": {"name": "foo"}, "subsets": []}
    assert api.http.post(f"{NS}/{api.ns}/endpoints", json=endpoints).status_code == 201
    response = api.http.delete(api.path("foo"))
    assert response.status_code == 200
    assert response.json()["kind"] == "Service" and response.json()["spec"]["clusterIP"] == ip
    assert api.http.get(f"{NS}/{api.ns}/endpoints/foo").status_code == 404
    again = api.created(svc("bar", type="NodePort", clusterIP=ip, ports=[{"port": 80, "nodePort": node_port}]))
    assert again["spec"]["clusterIP"] == ip


def test_dry_run_allocates_nothing(api: Api) -> None:
    response = api.create(svc(), dryRun="All")
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["clusterIP"] == "10.0.0.0"
    response = api.create(svc(type="NodePort"), dryRun="All")
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["ports"][0]["nodePort"] == 32769
    assert api.http.get(api.path("foo")).status_code == 404
    assert _held(api, "ClusterIP") == _held(api, "NodePort") == []


# ---- type transitions --------------------------------------------------------------------------------------------


def _update(api: Api, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = api.get(name)
    change(obj["spec"])
    response = api.put(obj)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _held(api: Api, kind: str) -> list[str]:
    return sorted(v for v, h in api.allocations(kind).items() if h["namespace"] == api.ns)


def test_type_transitions_allocate_and_release(api: Api) -> None:
    ip = api.created(svc())["spec"]["clusterIP"]
    assert _held(api, "ClusterIP") == [ip] and _held(api, "NodePort") == []

    obj = _update(api, "foo", lambda s: s.update(type="NodePort"))
    node_port = str(obj["spec"]["ports"][0]["nodePort"])
    assert obj["spec"]["clusterIP"] == ip and obj["spec"]["externalTrafficPolicy"] == "Cluster"
    assert _held(api, "NodePort") == [node_port]

    obj = _update(api, "foo", lambda s: s.update(type="LoadBalancer"))
    assert str(obj["spec"]["ports"][0]["nodePort"]) == node_port
    ingress = obj["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert _held(api, "LoadBalancerIP") == [ingress]

    obj = _update(api, "foo", lambda s: s.update(type="ExternalName", externalName="db.example.com"))
    assert "clusterIP" not in obj["spec"] and obj["status"]["loadBalancer"] == {}
    assert _held(api, "ClusterIP") == _held(api, "NodePort") == _held(api, "LoadBalancerIP") == []

    obj = _update(api, "foo", lambda s: (s.update(type="ClusterIP"), s.pop("externalName")))
    assert _held(api, "ClusterIP") == [obj["spec"]["clusterIP"]]
    assert obj["spec"]["ipFamilies"] == ["IPv4"]


def test_health_check_port_follows_the_traffic_policy(api: Api) -> None:
    api.created(svc(type="LoadBalancer"))
    obj = _update(api, "foo", lambda s: s.update(externalTrafficPolicy="Local"))
    hc = str(obj["spec"]["healthCheckNodePort"])
    assert hc in _held(api, "NodePort")
    obj = _update(api, "foo", lambda s: s.update(externalTrafficPolicy="Cluster"))
    assert "healthCheckNodePort" not in obj["spec"]
    assert hc not in _held(api, "NodePort")


# ---- the built-in load balancer ----------------------------------------------------------------------------------


def test_load_balancer_ingress_is_assigned_at_once_and_released(api: Api) -> None:
    created = api.created(svc(type="LoadBalancer"))
    ingress = created["status"]["loadBalancer"]["ingress"]
    assert len(ingress) == 1 and ingress[0]["ipMode"] == "VIP"
    assert ipaddress.ip_address(ingress[0]["ip"]) in ipaddress.ip_network("172.20.255.0/29")
    assert api.get("foo")["status"] == created["status"]
    api.http.delete(api.path("foo"))
    assert ingress[0]["ip"] not in api.allocations("LoadBalancerIP")


def test_load_balancer_ip_is_honoured(api: Api) -> None:
    status = api.created(svc(type="LoadBalancer", loadBalancerIP="172.20.255.6"))["status"]
    assert status["loadBalancer"]["ingress"][0]["ip"] == "172.20.255.6"


def test_load_balancer_pool_exhausted_reports_an_event(tiny: Api) -> None:
    """The tiny pool 172.20.255.0/30 has two addresses."""
    for name in ("a", "b"):
        assert tiny.created(svc(name, type="LoadBalancer"))["status"]["loadBalancer"]["ingress"]
    pending = tiny.created(svc("c", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert pending["status"]["loadBalancer"] == {}
    events = _wait_for_events(tiny, "c")
    assert events[0]["reason"] == "LoadBalancerPoolExhausted" and events[0]["type"] == "Warning"
    assert tiny.http.delete(tiny.path("a")).status_code == 200
    deadline = time.monotonic() + 10  # the freed address goes to the waiting Service without anyone asking
    while not tiny.get("c")["status"]["loadBalancer"].get("ingress") and time.monotonic() < deadline:
        time.sleep(0.05)
    ingress = tiny.get("c")["status"]["loadBalancer"]["ingress"]
    assert len(ingress) == 1 and ipaddress.ip_address(ingress[0]["ip"]) in ipaddress.ip_network("172.20.255.0/30")


def _wait_for_events(api: Api, name: str) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]]:
        events = api.http.get(f"{NS}/{api.ns}/events").json()["items"]
        return [e for e in events if e["involvedObject"]["name"] == name]

    return eventually(found, 10, f"an event for {name}")


# ---- dual-stack ----------------------------------------------------------------------------------------------


def test_dual_stack_families(dual: Api) -> None:
    single = dual.created(svc("single"))["spec"]
    assert single["ipFamilies"] == ["IPv4"] and len(single["clusterIPs"]) == 1
    prefer = dual.created(svc("prefer", ipFamilyPolicy="PreferDualStack"))["spec"]
    assert prefer["ipFamilies"] == ["IPv4", "IPv6"]
    v4, v6 = (ipaddress.ip_address(ip) for ip in prefer["clusterIPs"])
    assert v4 in ipaddress.ip_network("10.0.1.0/24") and v6 in ipaddress.ip_network("fd00:10::/112")
    v6_first = dual.created(svc("v6", ipFamilyPolicy="RequireDualStack", ipFamilies=["IPv6", "IPv4"]))["spec"]
    assert ipaddress.ip_address(v6_first["clusterIP"]).version == 6
    only_v6 = dual.created(svc("onlyv6", ipFamilies=["IPv6"]))["spec"]
    assert only_v6["ipFamilyPolicy"] == "SingleStack" and ":" in only_v6["clusterIP"]
    assert set(prefer["clusterIPs"]) <= set(dual.allocations("ClusterIP"))


def test_dual_stack_upgrade_and_downgrade(dual: Api) -> None:
    ip = dual.created(svc())["spec"]["clusterIP"]
    obj = _update(dual, "foo", lambda s: s.update(ipFamilyPolicy="RequireDualStack"))
    assert obj["spec"]["clusterIPs"][0] == ip and len(obj["spec"]["clusterIPs"]) == 2
    assert obj["spec"]["ipFamilies"] == ["IPv4", "IPv6"]
    secondary = obj["spec"]["clusterIPs"][1]
    assert secondary in _held(dual, "ClusterIP")
    obj = _update(dual, "foo", lambda s: s.update(ipFamilyPolicy="SingleStack", clusterIPs=[ip]))
    assert obj["spec"]["clusterIPs"] == [ip] and obj["spec"]["ipFamilies"] == ["IPv4"]
    assert secondary not in _held(dual, "ClusterIP")


def test_dual_stack_downgrade_needs_single_stack(dual: Api) -> None:
    obj = dual.created(svc(ipFamilyPolicy="RequireDualStack"))
    obj["spec"]["clusterIPs"] = obj["spec"]["clusterIPs"][:1]
    message = invalid_message(dual.put(obj))
    assert "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be 'SingleStack'" in message


def test_dual_stack_refused_on_a_single_stack_cluster(api: Api) -> None:
    assert invalid_message(api.create(svc(ipFamilyPolicy="RequireDualStack"))) == (
        'Service "foo" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not '
        "configured for dual-stack services"
    )
    assert invalid_message(api.create(svc(clusterIP="fd00::5"))) == (
        'Service "foo" is invalid: spec.clusterIPs[0]: Invalid value: []string{"fd00::5"}: IPv6 is not configured '
        "on this cluster"
    )
    assert invalid_message(api.create(svc(ipFamilies=["IPv6"]))) == (
        'Service "foo" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'
    )
    prefer = api.created(svc(ipFamilyPolicy="PreferDualStack"))["spec"]
    assert prefer["ipFamilies"] == ["IPv4"]


# ---- vectors 26-27, system Services, inspection ------------------------------------------------------------------


def test_system_services_hold_the_first_and_tenth_address(api: Api) -> None:
    assert api.http.get(f"{NS}/default/services/kubernetes").json()["spec"]["clusterIP"] == "10.0.0.1"
    assert api.http.get(f"{NS}/kube-system/services/kube-dns").json()["spec"]["clusterIP"] == "10.0.0.10"


def test_allocations_document_and_upstream_bitmap(tiny_cluster: RunningCluster) -> None:
    """Vector 26: with offsets 0 (.1) and 9 (.10) allocated, upstream's bitmap is 0x02 0x01."""
    with tiny_cluster.http() as http:
        ranges = {r["kind"]: r for r in http.get("/debug/allocations").json()["ranges"]}
    cluster_ips = ranges["ClusterIP"]
    assert cluster_ips["range"] == "10.0.2.0/28" and cluster_ips["size"] == 14
    holders = {a["value"]: a["name"] for a in cluster_ips["allocations"]}
    assert (holders["10.0.2.1"], holders["10.0.2.10"]) == ("kubernetes", "kube-dns")
    if cluster_ips["used"] == 2:  # only when no other test holds addresses at this moment
        assert base64.b64decode(cluster_ips["data"]) == bytes([0x02, 0x01])
    assert ranges["NodePort"]["range"] == "30000-30003" and ranges["NodePort"]["size"] == 4


def test_bitmap_encoding() -> None:
    from tinykube.apiserver.allocators.ranges import bitmap

    assert bitmap([0, 9]) == bytes([0x02, 0x01])
    assert bitmap([]) == b""


@pytest.mark.parametrize(
    "cidr, band",
    [("10.0.0.0/24", 16), ("10.0.0.0/28", 0), ("10.0.0.0/27", 16), ("10.0.0.0/12", 256), ("10.0.0.0/20", 256)],
)
def test_static_band_sizes(cidr: str, band: int) -> None:
    assert IPRange.parse(cidr).static_band == band


def test_port_static_band_sizes() -> None:
    assert PortRange.parse("30000-32767").static_band == 86
    assert PortRange.parse("30000-30015").static_band == 0


def test_allocator_metrics(api: Api) -> None:
    api.created(svc())
    text = api.http.get("/metrics").text
    assert 'kube_apiserver_clusterip_allocator_allocated_ips{cidr="10.0.0.0/24"}' in text
    assert 'kube_apiserver_clusterip_allocator_available_ips{cidr="10.0.0.0/24"}' in text
    assert 'kube_apiserver_clusterip_allocator_allocation_total{cidr="10.0.0.0/24",scope="dynamic"}' in text
    assert 'kube_apiserver_clusterip_allocator_allocation_errors_total{cidr="10.0.0.0/24",scope="static"}' in text
    assert "kube_apiserver_nodeport_allocator_allocated_ports " in text
    assert 'kube_apiserver_nodeport_allocator_allocation_total{scope="dynamic"}' in text
    used = int(text.split('kube_apiserver_clusterip_allocator_allocated_ips{cidr="10.0.0.0/24"} ')[1].split()[0])
    assert used == len(api.allocations("ClusterIP"))
