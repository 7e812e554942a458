"""The netns dataplane's topology: a cluster sandbox of network namespaces, and a pod's plumbing into its node.

    tk-<cluster>.lan       bridge br0 172.20.0.1/16 — the "LAN" every node and the external client sit on
    tk-<cluster>.ext       eth0 172.20.0.250/16      — an external client (NodePorts, load balancer IPs)
    tk-<cluster>.<node>    eth0 <node ip>/16; routes: other nodes' pod CIDRs via their node IPs, each local pod's
                           /32 to its veth, the service CIDR via lo (so node → ClusterIP works once a proxy DNATs)
    tk-<cluster>.<node>.<hash of pod key>
                           eth0 <pod ip>/32, default via 169.254.1.1 (a permanent neighbour entry for the node
                           side's fixed MAC, as Calico does), /etc/netns/<name>/resolv.conf

The "." after the cluster name keeps clusters apart (cluster names have none), so `remove_sandbox(cluster)` can
find everything of one cluster by prefix from a fresh process. Nothing is ever configured in the root namespace:
veth pairs are created inside a sandbox namespace with their peer moved straight into another one.

The process that made (or took over) a sandbox owns it while it lives: it holds an abstract unix socket bound in the
LAN namespace (abstract names are per network namespace, and the kernel drops the name with the process). A
sandbox nobody holds is what a killed `tinykube up` left behind: `create(adopt=True)` takes it over as it is —
nodes, pods and the processes running in them — rather than refusing it.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import socket
from dataclasses import dataclass

from tinykube.sandbox import netns

LAN_CIDR = "172.20.0.0/16"
LAN_GATEWAY = "172.20.0.1"  # the bridge's address
EXTERNAL_IP = "172.20.0.250"
POD_GATEWAY = "169.254.1.1"  # link-local next hop every pod routes through
NODE_SIDE_MAC = "ee:ee:ee:ee:ee:ee"  # the node end of every pod veth (each is its own link, so one MAC does)
BRIDGE = "br0"
RESERVED = ("lan", "ext")
OWNER = "\0tinykube-sandbox-owner"  # abstract unix socket the owning process holds in the LAN namespace
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class SandboxError(Exception):
    """The sandbox cannot be made as asked (a name in use, an invalid name)."""


def netns_prefix(cluster: str) -> str:
    return f"tk-{cluster}."


def short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def node_address(index: int) -> str:
    """node-N's IP on the LAN (node-1 is 172.20.0.2), stepping over the external client's."""
    address = ipaddress.IPv4Network(LAN_CIDR).network_address + index + 1
    return str(address + 1 if address >= ipaddress.IPv4Address(EXTERNAL_IP) else address)


def _check_name(kind: str, name: str) -> None:
    if not _NAME.match(name) or len(name) > 63:
        raise SandboxError(f"{kind} name {name!r}: lowercase letters, digits and '-' only (at most 63)")


@dataclass(frozen=True, slots=True)
class PodNet:
    netns: str
    veth: str  # the node-side end, in the node's namespace
    ip: str


@dataclass(frozen=True, slots=True)
class NodeNet:
    cluster: str
    name: str
    netns: str
    ip: str
    pod_cidr: str

    def pod(self, key: str, ip: str) -> PodNet:
        digest = short_hash(key)
        return PodNet(netns=f"{self.netns}.{digest}", veth=f"veth{digest}", ip=ip)


class Sandbox:
    """One cluster's namespaces. `create()` makes the LAN and the external client, `add_node()` a node,
    `destroy()` removes everything carrying the cluster's prefix (pods included)."""

    def __init__(self, cluster: str, service_cidr: str = "10.96.0.0/16") -> None:
        _check_name("cluster", cluster)
        self.cluster = cluster
        self.service_cidr = service_cidr
        self.prefix = netns_prefix(cluster)
        self.lan = f"{self.prefix}lan"
        self.external = f"{self.prefix}ext"
        self.nodes: dict[str, NodeNet] = {}
        self.adopted = False  # taken over from a process that died without removing it
        self._owner: socket.socket | None = None

    def create(self, *, adopt: bool = False) -> None:
        """Make the LAN and the external client. With `adopt`, a sandbox of this cluster that no living process
        owns (its `tinykube up` was killed) is taken over instead; one still owned is refused either way."""
        leftovers = netns.list_netns(self.prefix)
        if leftovers:
            if adopt and self._claim():
                if self._intact():
                    self._adopt()
                    return
                self._release()
            owned = "in use by a running process" if self._held() else "left behind"
            raise SandboxError(
                f"cluster {self.cluster!r} already has namespaces ({', '.join(leftovers[:3])}…), {owned}; "
                f"`tinykube down --name {self.cluster}` removes them"
            )
        try:
            netns.ip("netns", "add", self.lan)
            netns.ip_batch(
                self.lan,
                ["link set lo up", f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up",
                 f"addr add {LAN_GATEWAY}/16 dev {BRIDGE}"],
            )  # fmt: skip
            self._plug(self.external, "vext", EXTERNAL_IP)
            # The LAN routes between its hosts and the pod networks behind the nodes, so the external client (and
            # the DNS listener on the LAN) reach pods the way a machine next to a cluster's nodes would.
            netns.write_sysctl(self.lan, "net.ipv4.ip_forward", "1")
            netns.ip("route", "add", "default", "via", LAN_GATEWAY, netns=self.external)
            if not self._claim():
                raise SandboxError(f"cluster {self.cluster!r}: cannot hold the sandbox's owner socket")
        except Exception:
            self.destroy()
            raise

    # Ownership and adoption

    def _bind_owner(self) -> socket.socket | None:
        """The owner socket, bound in the LAN namespace; None if another process holds it (or there is no LAN)."""
        try:
            sock = netns.socket_in(self.lan, socket.AF_UNIX, socket.SOCK_STREAM)
        except (OSError, netns.NetnsError):
            return None
        try:
            sock.bind(OWNER)
        except OSError:
            sock.close()
            return None
        return sock

    def _claim(self) -> bool:
        if self._owner is None:
            self._owner = self._bind_owner()
        return self._owner is not None

    def _held(self) -> bool:
        """Whether some process (this one included) owns the LAN namespace of this cluster."""
        if self._owner is not None:
            return True
        probe = self._bind_owner()
        if probe is None:
            return netns.exists(self.lan)
        probe.close()
        return False

    def _release(self) -> None:
        if self._owner is not None:
            self._owner.close()
            self._owner = None

    def _intact(self) -> bool:
        """The LAN's bridge and the external client are there, as `create` made them."""
        if not netns.exists(self.external):
            return False
        return BRIDGE in netns.ip("-o", "link", "show", "dev", BRIDGE, netns=self.lan, check=False)

    def _adopt(self) -> None:
        """Take the sandbox over. Load balancer routes (/32 via a node) are dropped: the load balancer programs
        every Service's afresh, and those of Services deleted meanwhile must not stay."""
        self.adopted = True
        for namespace in (self.external, self.lan):
            shown = json.loads(netns.ip("-j", "route", "show", netns=namespace) or "[]")
            stale = [f"route del {r['dst']}/32" for r in shown if r.get("gateway") and _address(r.get("dst", ""))]
            if stale:
                netns.ip("-force", "-batch", "-", netns=namespace, stdin="\n".join(stale) + "\n", check=False)

    # Nodes

    def add_node(self, name: str, ip: str, pod_cidr: str) -> NodeNet:
        """A node's namespace on the LAN. In an adopted sandbox the node's namespace (and its pods') is kept when it
        has the node's address; the routes and settings below are (re)applied either way."""
        _check_name("node", name)
        if name in RESERVED or name in self.nodes:
            raise SandboxError(f"node name {name!r} is reserved or in use")
        node = NodeNet(self.cluster, name, f"{self.prefix}{name}", ip, pod_cidr)
        if not (self.adopted and self._keeps(node)):
            self._plug(node.netns, f"vn{short_hash(name)}", ip)
        netns.write_sysctl(node.netns, "net.ipv4.ip_forward", "1")
        # A node routes pods' packets back out the links they came in on; redirects would use up the kernel's ICMP
        # rate limit and swallow the port-unreachable a Service without endpoints answers with.
        for conf in ("all", "default"):
            netns.write_sysctl(node.netns, f"net.ipv4.conf.{conf}.send_redirects", "0")
        netns.ip("route", "replace", self.service_cidr, "dev", "lo", "src", ip, netns=node.netns)
        for other in self.nodes.values():
            netns.ip("route", "replace", other.pod_cidr, "via", other.ip, netns=node.netns)
            netns.ip("route", "replace", pod_cidr, "via", ip, netns=other.netns)
        # The LAN reaches pods too: what listens there for them (the DNS server) must be able to answer.
        netns.ip("route", "replace", pod_cidr, "via", ip, netns=self.lan)
        self.nodes[name] = node
        return node

    def _keeps(self, node: NodeNet) -> bool:
        """An adopted node namespace with the node's address is kept; one without (or half made) is removed, with
        its pods, to be made afresh."""
        if netns.exists(node.netns):
            shown = netns.ip("-o", "addr", "show", "dev", "eth0", netns=node.netns, check=False)
            if f" {node.ip}/16 " in shown:
                return True
        for name in sorted(netns.list_netns(f"{node.netns}."), key=lambda n: -n.count(".")):
            netns.delete(name)
        netns.delete(node.netns)
        return False

    def _plug(self, name: str, lan_end: str, ip: str) -> None:
        """A namespace `name` on the LAN: a veth from the bridge, `eth0` with `ip`."""
        netns.ip("netns", "add", name)
        netns.ip_batch(
            self.lan,
            [f"link add {lan_end} type veth peer name eth0 netns {name}", f"link set {lan_end} master {BRIDGE}",
             f"link set {lan_end} up"],
        )  # fmt: skip
        netns.ip_batch(name, ["link set lo up", f"addr add {ip}/16 dev eth0", "link set eth0 up"])

    def destroy(self) -> list[str]:
        self.nodes.clear()
        try:
            return remove_sandbox(self.cluster)
        finally:
            self._release()


def _address(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def remove_sandbox(cluster: str) -> list[str]:
    """Remove every namespace and /etc/netns entry of `cluster` (pods first), killing what runs in them; works
    from a fresh process. Returns the names removed. A name no sandbox can have (a simulated cluster's, say
    `a.node-1`) removes nothing: its prefix could be another cluster's."""
    if not _NAME.match(cluster) or len(cluster) > 63:
        return []
    prefix = netns_prefix(cluster)
    names = sorted(netns.list_netns(prefix), key=lambda name: -name.count("."))  # pods, then nodes, then the LAN
    return [name for name in names if netns.delete(name)]


# Pods


def attach_pod(node: NodeNet, pod: PodNet, resolv: str, hosts: str) -> None:
    """Make the pod's namespace, its resolv.conf and hosts (which `ip netns exec` binds over /etc), and the veth to
    its node with routes both ways."""
    netns.ip("netns", "add", pod.netns)
    etc = netns.NETNS_ETC / pod.netns
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "resolv.conf").write_text(resolv)
    (etc / "hosts").write_text(hosts)
    netns.ip_batch(
        node.netns,
        [f"link add {pod.veth} address {NODE_SIDE_MAC} type veth peer name eth0 netns {pod.netns}",
         f"link set {pod.veth} up", f"route replace {pod.ip}/32 dev {pod.veth} scope link"],
    )  # fmt: skip
    netns.ip_batch(
        pod.netns,
        ["link set lo up", f"addr add {pod.ip}/32 dev eth0", "link set eth0 up",
         f"neigh replace {POD_GATEWAY} lladdr {NODE_SIDE_MAC} dev eth0 nud permanent",
         f"route add {POD_GATEWAY} dev eth0 scope link", f"route add default via {POD_GATEWAY} dev eth0"],
    )  # fmt: skip


def detach_pod(node: NodeNet, pod: PodNet) -> None:
    """Remove the pod's veth (its route goes with it), namespace and /etc/netns entry. Idempotent."""
    if netns.exists(node.netns):
        netns.ip("link", "del", pod.veth, netns=node.netns, check=False)
    netns.delete(pod.netns)
