"""The live picture's model (tinykube/ui/state.py), a Service's details and the rules' marking, without a cluster."""

from __future__ import annotations

from typing import Any

from tinykube.ui import details, rules, state


def node(name: str, ip: str, cidr: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"podCIDR": cidr},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, node_name: str, ip: str, ready: bool, rv: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
        "spec": {"nodeName": node_name},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def service(name: str = "web", ip: str = "10.96.0.50", node_port: int | None = 30080) -> dict[str, Any]:
    port: dict[str, Any] = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
    if node_port:
        port["nodePort"] = node_port
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": "NodePort" if node_port else "ClusterIP",
            "clusterIP": ip,
            "clusterIPs": [ip],
            "ports": [port],
        },
    }


def endpoint_slice(service_name: str, *endpoints: tuple[str, str | None, bool]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{service_name}-abc",
            "namespace": "default",
            "labels": {state.SERVICE_NAME_LABEL: service_name},
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [address],
                "conditions": {"ready": ready},
                **({"targetRef": {"kind": "Pod", "name": pod_name, "namespace": "default"}} if pod_name else {}),
            }
            for address, pod_name, ready in endpoints
        ],
    }


NODES = [node("node-1", "172.20.0.2", "10.244.0.0/24"), node("node-2", "172.20.0.3", "10.244.1.0/24")]


def test_snapshot_has_every_element_by_id() -> None:
    pods = [pod("a", "node-1", "10.244.0.2", True), pod("b", "node-2", "10.244.1.2", False)]
    slices = [endpoint_slice("web", ("10.244.0.2", "a", True), ("10.244.1.2", None, False), ("172.20.0.1", None, True))]
    found = state.snapshot(NODES, pods, [service()], slices)
    assert set(found) == {
        "node/node-1",
        "node/node-2",
        "pod/default/a",
        "pod/default/b",
        "svc/default/web",
        "edge/default/web/default/a",
        "edge/default/web/default/b",  # no targetRef: found by its address
        "edge/default/web/172.20.0.1",  # no pod has it: the bare address (the apiserver's, say)
    }
    assert found["node/node-1"] == {
        "id": "node/node-1", "kind": "node", "name": "node-1", "ip": "172.20.0.2", "podCIDR": "10.244.0.0/24",
        "ready": True,
    }  # fmt: skip
    assert found["pod/default/b"]["ready"] is False and found["pod/default/b"]["node"] == "node-2"
    assert found["svc/default/web"]["ports"][0]["nodePort"] == 30080
    assert found["edge/default/web/default/a"]["ready"] is True
    assert found["edge/default/web/default/b"]["ready"] is False
    assert found["edge/default/web/172.20.0.1"]["target"] == "addr/172.20.0.1"


def test_diff_sends_only_what_the_page_draws() -> None:
    before = state.snapshot(NODES, [pod("a", "node-1", "10.244.0.2", False)], [service()], [])
    # a new resourceVersion that changes nothing drawn: no difference
    same = state.snapshot(NODES, [pod("a", "node-1", "10.244.0.2", False, rv="2")], [service()], [])
    assert state.diff(before, same) == {"put": [], "delete": []}
    after = state.snapshot(
        NODES,
        [pod("a", "node-1", "10.244.0.2", True), pod("c", "node-2", "10.244.1.3", False)],
        [],
        [endpoint_slice("web", ("10.244.0.2", "a", True))],
    )
    change = state.diff(before, after)
    assert sorted(e["id"] for e in change["put"]) == ["edge/default/web/default/a", "pod/default/a", "pod/default/c"]
    assert change["delete"] == ["svc/default/web"]
    assert state.apply(before, change) == after
    assert state.apply(after, state.diff(after, before)) == before


def test_an_address_in_two_slices_is_one_edge_ready_if_either_is() -> None:
    one = endpoint_slice("web", ("10.244.0.2", "a", False))
    other = endpoint_slice("web", ("10.244.0.2", "a", True))
    other["metadata"]["name"] = "web-def"
    found = state.snapshot([], [pod("a", "node-1", "10.244.0.2", True)], [service()], [one, other])
    assert [e for e in found.values() if e["kind"] == "edge"] == [
        {"id": "edge/default/web/default/a", "kind": "edge", "service": "svc/default/web", "target": "pod/default/a",
         "address": "10.244.0.2", "ready": True},
    ]  # fmt: skip


def test_details_answer_as_the_cluster_dns_and_the_kubelet() -> None:
    web = service()
    namespaces = [{"metadata": {"name": "default"}}]
    slices = [endpoint_slice("web", ("10.244.0.2", "a", True))]
    found = details.dns_records(web, [web], slices, namespaces)
    assert found["short"] == ["web", "web.default", "web.default.svc"]
    a, srv = found["queries"]
    assert (a["name"], a["type"], a["rcode"]) == ("web.default.svc.cluster.local", "A", "NOERROR")
    assert a["records"][0].split() == ["web.default.svc.cluster.local.", "5", "IN", "A", "10.96.0.50"]
    assert srv["name"] == "_http._tcp.web.default.svc.cluster.local"
    assert srv["records"][0].split()[3:] == ["SRV", "0", "100", "80", "web.default.svc.cluster.local."]
    env = details.environment(web, [web])
    assert ["WEB_SERVICE_HOST", "10.96.0.50"] in env["own"]
    assert ["WEB_PORT_80_TCP", "tcp://10.96.0.50:80"] in env["all"]


NFT = """\
table ip kube-proxy {
    map service-ips {
        elements = { 10.96.0.10 . udp . 53 : goto pick-udp-53-1-1,
                 10.96.0.50 . tcp . 80 : goto pick-tcp-80-1-2 }
    }
    map service-nodeports {
        elements = { tcp . 30080 : goto external-pick-tcp-80-1-2 }
    }
    map nodeport-endpoint-addresses {
        elements = { 30080 . 0x00140001 : 10.244.0.2 . 8080 }
    }
    chain pick-udp-53-1-1 {
        ct mark set numgen random mod 1 offset 868353
    }
    chain pick-tcp-80-1-2 {
        ct mark set numgen random mod 2 offset 1310721
    }
    chain external-pick-tcp-80-1-2 {
        jump mark-for-masquerade
        goto pick-tcp-80-1-2
    }
}"""

IPTABLES = """\
*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-ABC - [0:0]
:KUBE-SEP-ONE - [0:0]
:KUBE-SVC-DNS - [0:0]
-A KUBE-SERVICES -d 10.96.0.50/32 -p tcp -m comment --comment "default/web:http cluster IP" --dport 80 -j KUBE-SVC-ABC
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -j KUBE-SVC-DNS
-A KUBE-SVC-ABC -m comment --comment "default/web:http -> 10.244.0.2:8080" -j KUBE-SEP-ONE
-A KUBE-SEP-ONE -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 10.244.0.2:8080
COMMIT"""


def test_rules_mark_the_services_lines_and_its_chains() -> None:
    lines = NFT.splitlines()
    marked = [line.strip() for line, hit in zip(lines, rules.highlight(lines, service()), strict=True) if hit]
    assert marked == [
        "10.96.0.50 . tcp . 80 : goto pick-tcp-80-1-2 }",
        "elements = { tcp . 30080 : goto external-pick-tcp-80-1-2 }",
        "elements = { 30080 . 0x00140001 : 10.244.0.2 . 8080 }",
        "chain pick-tcp-80-1-2 {",
        "ct mark set numgen random mod 2 offset 1310721",
        "}",
        "chain external-pick-tcp-80-1-2 {",
        "jump mark-for-masquerade",
        "goto pick-tcp-80-1-2",
        "}",
    ]
    lines = IPTABLES.splitlines()
    marked = [line for line, hit in zip(lines, rules.highlight(lines, service(node_port=None)), strict=True) if hit]
    assert marked == [
        ":KUBE-SVC-ABC - [0:0]",
        ":KUBE-SEP-ONE - [0:0]",
        lines[5],
        lines[7],
        lines[8],
    ]
    assert rules.command_for("iptables") == ["iptables-save", "-t", "nat"]


def test_a_trace_path_goes_source_service_endpoint() -> None:
    from types import SimpleNamespace as Obj

    elements = state.snapshot(NODES, [pod("a", "node-2", "10.244.1.2", True)], [service()], [])
    result = Obj(
        source=Obj(kind="external", name="external", ip="172.20.0.250"),
        resolution=None,  # an address asked for: the Service is found by its NodePort on a node's address
        destination="172.20.0.2",
        port=30080,
        dnat=Obj(address="10.244.1.2", port=8080, pod="default/a"),
        snat=Obj(masqueraded=True, address="172.20.0.2", node="node-1"),
    )
    assert state.trace_path(result, elements) == [
        {"id": "external", "label": "from 172.20.0.250"},
        {"id": "svc/default/web", "label": "172.20.0.2:30080"},
        {"id": "pod/default/a", "label": "DNAT 10.244.1.2:8080, SNAT 172.20.0.2"},
    ]
    result.source = Obj(kind="pod", name="default/a", ip="10.244.1.2")
    result.resolution = Obj(service="default/web")
    result.destination, result.port, result.dnat, result.snat = "10.96.0.50", 80, None, None
    assert [hop["id"] for hop in state.trace_path(result)] == ["pod/default/a", "svc/default/web"]
