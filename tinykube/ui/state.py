"""The picture's model: what the page draws, built from the informers' caches, and the difference between two.

A snapshot is a flat dict of elements by id (`node/node-1`, `pod/default/web-1`, `svc/default/web`,
`edge/default/web/default/web-1`), each a small JSON-able dict with only what the page shows, so a status write
that changes nothing drawn produces no difference at all. The page gets one full snapshot when it connects, then
`diff(old, new)` — `{"put": [changed or new elements], "delete": [ids gone]}` — as the cluster changes.

Pure: no I/O, testable without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Object = dict[str, Any]
Element = dict[str, Any]
Snapshot = dict[str, Element]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def _ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _node_ip(node: Object) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address", ""))
    return ""


def node_element(node: Object) -> Element:
    meta, spec = node["metadata"], node.get("spec") or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return {
        "id": f"node/{meta['name']}",
        "kind": "node",
        "name": meta["name"],
        "ip": _node_ip(node),
        "podCIDR": spec.get("podCIDR", ""),
        "ready": ready,
    }


def pod_element(pod: Object) -> Element:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return {
        "id": f"pod/{meta.get('namespace', '')}/{meta['name']}",
        "kind": "pod",
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "node": spec.get("nodeName", ""),
        "ip": status.get("podIP", ""),
        "phase": status.get("phase", "Pending"),
        "ready": _ready(pod),
        "terminating": bool(meta.get("deletionTimestamp")),
    }


def service_element(service: Object) -> Element:
    meta, spec = service["metadata"], service.get("spec") or {}
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ports = [
        {
            "name": p.get("name", ""),
            "protocol": p.get("protocol", "TCP"),
            "port": p.get("port"),
            "targetPort": p.get("targetPort", p.get("port")),
            "nodePort": p.get("nodePort"),
        }
        for p in spec.get("ports") or []
    ]
    return {
        "id": f"svc/{meta['namespace']}/{meta['name']}",
        "kind": "service",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "type": spec.get("type", "ClusterIP"),
        "clusterIP": spec.get("clusterIP", ""),
        "externalName": spec.get("externalName", ""),
        "ports": ports,
        "loadBalancer": [i.get("ip") or i.get("hostname", "") for i in ingress],
        "externalTrafficPolicy": spec.get("externalTrafficPolicy", ""),
    }


def _edges(slices: Iterable[Object], pods_by_ip: dict[tuple[str, str], str]) -> list[Element]:
    """One edge per (Service, endpoint): to the pod it names (targetRef) or whose IP it has, else to the bare
    address (`addr/172.20.0.1`: the apiserver and DNS on the LAN); `ready` as the endpoint's condition (unset is
    ready)."""
    found: dict[str, Element] = {}
    for piece in slices:
        meta = piece["metadata"]
        namespace = meta.get("namespace", "")
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not service:
            continue
        for endpoint in piece.get("endpoints") or []:
            ref = endpoint.get("targetRef") or {}
            addresses = endpoint.get("addresses") or []
            target = ""
            if ref.get("kind") == "Pod" and ref.get("name"):
                target = f"pod/{ref.get('namespace') or namespace}/{ref['name']}"
            elif addresses:  # a pod's address without a targetRef, else an address of no pod (the apiserver's)
                target = pods_by_ip.get((namespace, addresses[0]), f"addr/{addresses[0]}")
            if not target:
                continue
            ready = (endpoint.get("conditions") or {}).get("ready") is not False
            edge_id = f"edge/{namespace}/{service}/{target.split('/', 1)[1]}"
            previous = found.get(edge_id)
            found[edge_id] = {
                "id": edge_id,
                "kind": "edge",
                "service": f"svc/{namespace}/{service}",
                "target": target,
                "address": addresses[0] if addresses else "",
                "ready": ready or bool(previous and previous["ready"]),  # an address in two slices: either counts
            }
    return list(found.values())


def snapshot(
    nodes: Iterable[Object], pods: Iterable[Object], services: Iterable[Object], slices: Iterable[Object]
) -> Snapshot:
    """Every element the page draws, by id."""
    elements: list[Element] = [node_element(n) for n in nodes]
    pod_elements = [pod_element(p) for p in pods]
    elements += pod_elements
    elements += [service_element(s) for s in services]
    pods_by_ip = {(p["namespace"], p["ip"]): p["id"] for p in pod_elements if p["ip"]}
    elements += _edges(slices, pods_by_ip)
    return {element["id"]: element for element in elements}


def diff(old: Snapshot, new: Snapshot) -> dict[str, list[Any]]:
    """What turns `old` into `new`: elements to put (new or changed, whole) and ids to delete."""
    put = [element for key, element in new.items() if old.get(key) != element]
    delete = sorted(key for key in old if key not in new)
    return {"put": put, "delete": delete}


def apply(base: Snapshot, change: dict[str, list[Any]]) -> Snapshot:
    """`base` with `change` applied (what the page does with each event; the tests check the round trip)."""
    result = {key: element for key, element in base.items() if key not in set(change["delete"])}
    for element in change["put"]:
        result[element["id"]] = element
    return result


def service_at(elements: Snapshot, address: str, port: int) -> str:
    """The id of the Service a connection to `address:port` reaches: by ClusterIP or LoadBalancer address and
    port, or by NodePort on a node's address; "" for none."""
    node_ips = {e["ip"] for e in elements.values() if e["kind"] == "node"}
    for element in sorted(elements.values(), key=lambda e: e["id"]):
        if element["kind"] != "service":
            continue
        for p in element["ports"]:
            if address in (element["clusterIP"], *element["loadBalancer"]) and p["port"] == port:
                return str(element["id"])
            if address in node_ips and p["nodePort"] == port:
                return str(element["id"])
    return ""


def trace_path(result: Any, elements: Snapshot | None = None) -> list[dict[str, str]]:
    """The hops a `tinykube.trace` result (`TraceResult`) draws on the picture, in order, by element id: the source
    (a pod, a node or the external client), the Service it reached, the endpoint the DNAT chose (its pod, or the
    bare address); each with a label."""
    source = result.source
    ids = {"pod": f"pod/{source.name}", "node": f"node/{source.name}", "external": "external"}
    hops = [{"id": ids.get(source.kind, f"addr/{source.ip}"), "label": f"from {source.ip}"}]
    resolution = result.resolution
    service = f"svc/{resolution.service}" if resolution is not None and resolution.service else ""
    service = service or service_at(elements or {}, result.destination, result.port)
    if service:
        hops.append({"id": service, "label": f"{result.destination}:{result.port}"})
    if result.dnat is not None:
        dnat = result.dnat
        snat = result.snat
        label = f"DNAT {dnat.address}:{dnat.port}"
        if snat is not None and snat.masqueraded:
            label += f", SNAT {snat.address or 'by ' + str(snat.node)}"
        hops.append({"id": f"pod/{dnat.pod}" if dnat.pod else f"addr/{dnat.address}", "label": label})
    return hops
