"""FROM and TO: parsing them, finding the source in the sandbox, and turning the target into an address and port
the way the source would (a pod asks the cluster DNS through its own resolv.conf; a node and the external client,
which have no cluster resolver, ask the cluster DNS server directly), then matching that destination to the
Service it belongs to (ClusterIP, NodePort or LoadBalancer address) and its endpoints."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tinykube.api.resources import builtin
from tinykube.sandbox.netns import exec_argv
from tinykube.sandbox.topology import EXTERNAL_IP, netns_prefix, short_hash
from tinykube.trace.model import Endpoint, Resolution, TraceError

if TYPE_CHECKING:
    from tinykube.client.rest import RestClient

CLUSTER_DOMAIN = "cluster.local"
PODS = builtin("", "v1", "pods")
NODES = builtin("", "v1", "nodes")
SERVICES = builtin("", "v1", "services")
SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")


def parse_source(text: str) -> tuple[str, str]:
    """`external` -> ("external", ""); `node/node-1` -> ("node", "node-1"); `ns/name` or `name` -> ("pod",
    "ns/name")."""
    text = text.strip()
    if text in ("external", "ext"):
        return "external", ""
    if text.startswith(("node/", "nodes/")):
        return "node", text.split("/", 1)[1]
    if text.count("/") > 1 or not text or text.endswith("/") or text.startswith("/"):
        raise TraceError(f"source {text!r}: give a pod (ns/name or name), node/NAME, or external")
    return "pod", text if "/" in text else f"default/{text}"


def parse_target(text: str) -> tuple[str, int | None]:
    """`web`, `web.ns:8080`, `10.96.0.20:80`, `172.20.0.2:30080` -> (host, port or None)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = port, ""
    if not host:
        raise TraceError(f"target {text!r}: give a Service name, DNS name or address, with :PORT if needed")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise TraceError(f"target {text!r}: {port!r} is not a port")
    return host, int(port) if port else None


def is_address(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def fqdn(name: str, namespace: str = "default") -> str:
    """What the cluster search path makes of a short name: `web` -> web.default.svc.cluster.local."""
    name = name.rstrip(".")
    if name.endswith(f".{CLUSTER_DOMAIN}"):
        return name
    parts = name.split(".")
    if len(parts) == 1:
        return f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}"
    if len(parts) == 2:
        return f"{name}.svc.{CLUSTER_DOMAIN}"
    if parts[-1] in ("svc", "pod"):
        return f"{name}.{CLUSTER_DOMAIN}"
    return name


@dataclass(frozen=True, slots=True)
class Backend:
    """One endpoint of the Service: its address and port, its pod and node."""

    ip: str
    port: int
    node: str | None
    pod: str | None
    ready: bool


@dataclass
class Target:
    destination: str
    port: int
    kind: str  # "ClusterIP", "NodePort", "LoadBalancer", "pod", "address"
    resolution: Resolution | None = None
    service: dict[str, Any] | None = None
    service_port: dict[str, Any] | None = None
    backends: list[Backend] = field(default_factory=list)

    @property
    def service_name(self) -> str | None:
        if self.service is None:
            return None
        meta = self.service["metadata"]
        return f"{meta.get('namespace', 'default')}/{meta['name']}"

    @property
    def traffic_policy(self) -> str:
        return str((self.service or {}).get("spec", {}).get("externalTrafficPolicy") or "Cluster")


@dataclass
class ClusterView:
    """The objects a trace needs, read once."""

    cluster: str
    nodes: dict[str, str]  # name -> InternalIP
    services: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    pods: list[dict[str, Any]]

    @property
    def prefix(self) -> str:
        return netns_prefix(self.cluster)

    def node_netns(self, node: str) -> str:
        return f"{self.prefix}{node}"

    def node_of_ip(self, ip: str) -> str | None:
        return next((name for name, address in self.nodes.items() if address == ip), None)

    def pod_by_ip(self, ip: str) -> dict[str, Any] | None:
        return next((p for p in self.pods if (p.get("status") or {}).get("podIP") == ip), None)

    def dns_server(self) -> str:
        """The cluster DNS server's address on the sandbox LAN (kube-dns's endpoint), else its ClusterIP."""
        for slc in self.slices:
            meta = slc["metadata"]
            if meta.get("namespace") == "kube-system" and _service_of(slc) == "kube-dns":
                for endpoint in slc.get("endpoints") or []:
                    return str(endpoint["addresses"][0])
        for svc in self.services:
            if (svc["metadata"].get("namespace"), svc["metadata"]["name"]) == ("kube-system", "kube-dns"):
                return str(svc["spec"]["clusterIP"])
        raise TraceError("the cluster has no kube-dns Service to resolve names with")


def _service_of(slc: dict[str, Any]) -> str | None:
    labels = slc["metadata"].get("labels") or {}
    name = labels.get("kubernetes.io/service-name")
    return str(name) if name is not None else None


async def read_view(client: RestClient, cluster: str) -> ClusterView:
    nodes = {}
    for node in (await client.list(NODES))["items"]:
        addresses = (node.get("status") or {}).get("addresses") or []
        internal = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None)
        if internal:
            nodes[node["metadata"]["name"]] = str(internal)
    services = (await client.list(SERVICES))["items"]
    slices = (await client.list(SLICES))["items"]
    pods = (await client.list(PODS))["items"]
    return ClusterView(cluster, nodes, services, slices, pods)


def find_source(view: ClusterView, text: str) -> Endpoint:
    kind, name = parse_source(text)
    if kind == "external":
        return Endpoint("external", "external", f"{view.prefix}ext", EXTERNAL_IP)
    if kind == "node":
        if name not in view.nodes:
            raise TraceError(f"no node {name!r} (nodes: {', '.join(sorted(view.nodes)) or 'none'})")
        return Endpoint("node", name, view.node_netns(name), view.nodes[name], node=name)
    namespace, pod_name = name.split("/", 1)
    pod = next(
        (p for p in view.pods if (p["metadata"].get("namespace"), p["metadata"]["name"]) == (namespace, pod_name)),
        None,
    )
    if pod is None:
        raise TraceError(f"no pod {name!r}")
    node = (pod.get("spec") or {}).get("nodeName")
    ip = (pod.get("status") or {}).get("podIP")
    if not node or not ip:
        raise TraceError(f"pod {name!r} has no address yet (not running on a node)")
    if (pod.get("spec") or {}).get("hostNetwork"):
        return Endpoint("pod", name, view.node_netns(str(node)), str(ip), node=str(node))
    return Endpoint("pod", name, f"{view.node_netns(str(node))}.{short_hash(name)}", str(ip), node=str(node))


_RESOLVE = r"""
import json, socket, sys
name, server = sys.argv[1], sys.argv[2]
out = {"answers": [], "server": server}
try:
    if server == "-":
        conf = open("/etc/resolv.conf").read().split()
        out["server"] = conf[conf.index("nameserver") + 1] if "nameserver" in conf else "?"
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
        out["answers"] = sorted({i[4][0] for i in infos})
    else:
        from dnslib import DNSRecord, QTYPE
        answer = DNSRecord.parse(DNSRecord.question(name).send(server, 53, timeout=3))
        out["answers"] = [str(r.rdata) for r in answer.rr if r.rtype == QTYPE.A]
except (OSError, ValueError) as err:
    out["error"] = str(err)
print(json.dumps(out))
"""


def resolve_name(view: ClusterView, source: Endpoint, name: str) -> Resolution:
    """The name's A records as the source resolves them."""
    if source.kind == "pod":
        query, server, how = name, "-", "from the pod's /etc/resolv.conf"
    else:
        query, server = fqdn(name), view.dns_server()
        who = "the external client" if source.kind == "external" else "a node"
        how = f"the cluster DNS server, asked directly: {who} has no cluster resolver"
    assert source.netns is not None
    argv = exec_argv(source.netns, [sys.executable, "-c", _RESOLVE, query, server])
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise TraceError(f"cannot resolve {name!r} from {source.name}: {done.stderr.strip()[-200:]}") from None
    if not found["answers"]:
        raise TraceError(f"{query!r} does not resolve from {source.name}: {found.get('error') or 'no A record'}")
    return Resolution(query, list(found["answers"]), f"{found['server']} ({how})")


def find_target(view: ClusterView, source: Endpoint, text: str) -> Target:
    host, port = parse_target(text)
    resolution = None
    if not is_address(host):
        resolution = resolve_name(view, source, host)
        host = resolution.answers[0]
    target = match_service(view, host, port)
    if resolution is not None and target.service_name:
        resolution = Resolution(resolution.query, resolution.answers, resolution.server, target.service_name)
    target.resolution = resolution
    return target


def match_service(view: ClusterView, ip: str, port: int | None) -> Target:
    """The Service (and port) a destination belongs to, with its endpoints; or a plain address."""
    for svc in view.services:
        spec = svc.get("spec") or {}
        ports = spec.get("ports") or []
        ingress = [i.get("ip") for i in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]
        for kind, addresses, key in (
            ("ClusterIP", spec.get("clusterIPs") or [spec.get("clusterIP")], "port"),
            ("LoadBalancer", ingress, "port"),
            (
                "NodePort",
                list(view.nodes.values()) if spec.get("type") in ("NodePort", "LoadBalancer") else [],
                "nodePort",
            ),
        ):
            if ip not in addresses:
                continue
            for svc_port in ports:
                if (port is None and kind != "NodePort") or svc_port.get(key) == port:
                    chosen = int(svc_port[key])
                    return Target(ip, chosen, kind, None, svc, svc_port, backends(view, svc, svc_port))
    if port is None:
        raise TraceError(f"{ip} is no Service address with a known port: give {ip}:PORT")
    pod = view.pod_by_ip(ip)
    if pod is not None:
        meta = pod["metadata"]
        backend = Backend(
            ip, port, (pod.get("spec") or {}).get("nodeName"), f"{meta.get('namespace')}/{meta['name']}", True
        )
        return Target(ip, port, "pod", backends=[backend])
    return Target(ip, port, "address")


def backends(view: ClusterView, svc: dict[str, Any], svc_port: dict[str, Any]) -> list[Backend]:
    meta = svc["metadata"]
    found = []
    for slc in view.slices:
        if slc["metadata"].get("namespace") != meta.get("namespace") or _service_of(slc) != meta["name"]:
            continue
        port = next((p for p in slc.get("ports") or [] if p.get("name", "") == svc_port.get("name", "")), None)
        if port is None:
            continue
        for endpoint in slc.get("endpoints") or []:
            ref = endpoint.get("targetRef") or {}
            pod = f"{ref.get('namespace', meta.get('namespace'))}/{ref['name']}" if ref.get("name") else None
            ready = (endpoint.get("conditions") or {}).get("ready") is not False
            for address in endpoint.get("addresses") or []:
                found.append(Backend(str(address), int(port["port"]), endpoint.get("nodeName"), pod, ready))
    return found
