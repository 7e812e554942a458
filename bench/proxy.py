"""Node proxy, the three modes side by side (issue 7): full sync at 10,000 Services, one endpoint change, and
new-connection latency through each mode's rules.

Everything happens in throwaway network namespaces `tkbench-<pid>-*` (root only): the root namespace gets no
rules, routes, addresses or links, and no traffic leaves loopback except inside those namespaces. The timed
connections are made by a process of ours started inside each client namespace (`ip netns exec`).

The modes, one after another in the same run and on the same topology: nftables (`NftablesProxier` and its
long-lived libnftables session, `NftRunner`), iptables (`IptablesProxier`: iptables-save / iptables-restore of the
host, here the nf_tables backend) and userspace (`UserspaceProxier`: a listener per service port in the node
namespace, made as the netns dataplane makes them, and an nft table `ip tinykube-userspace` DNATing each ClusterIP
to its listener). A mode may be measured at fewer Services than N (LIMITS, or `mode:Services` in the arguments);
the output says so wherever it is.

(1) Full sync: N ServicePorts (default 10,000; ClusterIP 10.96.x.y, TCP 80) with E ready endpoints each (default
    10) built in memory; `proxier.sync(ports, full=True)` into a fresh namespace: its total (`last_duration`) and
    the part spent writing the rules (nftables: the session's transaction; iptables: iptables-save and
    iptables-restore; userspace: `nft -f -`); the rest is Python (planning, rendering; for userspace, opening the
    listeners). Three runs for nftables and iptables (the first two in a bare namespace, the third in the
    topology's node namespace that (2) and (3) then use), one for userspace. The nftables session is started
    before the timed sync (its start is reported on its own). Each full sync is bounded by SYNC_TIMEOUT: the
    processes in its namespace (nft session, iptables-restore) are then killed and the run counts as missed. What
    the kernel holds afterwards is counted. A 100-Service table is loaded the same way into a second topology.
(2) One change: with a table loaded, 100 `sync()` calls each adding or removing (alternately) one endpoint of the
    middle Service, every other ServicePort object staying the very same (as the agent hands them over); p50/p99
    of the sync and of its rule writing. At N Services and at 100 (at most INCREMENTAL_BUDGET seconds each).
(3) New connections: per mode and table size a topology of namespaces `node` (the proxy's table; forwarding on),
    `pod` (a process answering one byte with that byte on 10.244.0.2:8080-8089, then closing) and `client`
    (10.243.0.2), each joined to the node by a veth. The first and the last Service lead to the pod's 10 ports.
    From the client namespace: `connect()` alone, and a round trip (connect, send a byte, receive the answer), to
    the first ClusterIP, the last ClusterIP and the pod IP directly (no Service). The nftables and iptables
    measurements (both table sizes, both kinds) are interleaved, each round in a fresh random order, WARMUP + K
    each (K default 2,000); then the userspace ones the same way (its proxy runs in this process, and its work
    after one probe would overlap the next). p50/p99, the last/first ratio, and the pod IP at N vs at 100
    Services. For userspace, `connect()` completes at the proxy, which accepts; the round trip reaches the pod.

`python proxy.py [Services 10000] [endpoints 10] [connects 2000] [modes nftables,iptables,userspace]`, a mode
optionally as `mode:Services`. Root only. The whole run is bounded by DEADLINE (SIGALRM); SIGTERM and the deadline
clean up like a normal end. Exits 1 if an nftables target is missed, 3 if interrupted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Protocol

from common import percentile

from tinykube.proxy.iptables import IptablesProxier, IptablesRunner
from tinykube.proxy.model import Endpoint, NodeConfig, ServicePort
from tinykube.proxy.nftables import NftablesProxier, NftRunner
from tinykube.proxy.userspace import NFT as USERSPACE_NFT
from tinykube.proxy.userspace import TABLE as USERSPACE_TABLE
from tinykube.proxy.userspace import UserspaceProxier
from tinykube.sandbox import netns

PREFIX = f"tkbench-{os.getpid()}"
NODE_IP, POD_IP, CLIENT_IP, CLIENT_GW = "10.244.0.1", "10.244.0.2", "10.243.0.2", "10.243.0.1"
POD_PORTS = tuple(range(8080, 8090))
CONFIG = NodeConfig(
    node_name="node-1", node_ips=[NODE_IP], cluster_cidr="10.244.0.0/14", service_cidrs=["10.96.0.0/16"]
)
MODES = ("nftables", "iptables", "userspace")
RUNS = {"nftables": 3, "iptables": 3, "userspace": 1}  # full syncs of the large table per mode
# Services a mode is measured at, at most, unless the modes argument says otherwise (`iptables:5000`). None now:
# the iptables mode lays its restore input out so that iptables-nft-restore stays near-linear (bench/README.md).
LIMITS: dict[str, int] = {}
FULL_TARGET = 2.0  # seconds, full sync of 10,000 Services x 10 endpoints (nftables)
INCREMENTAL_TARGET = 0.020  # seconds, p99 of one change (nftables)
RATIO_TARGET = 0.10  # last vs first ClusterIP, and pod IP at N vs 100 Services (nftables)
SMALL = 100  # Services of the comparison table
INCREMENTAL_SYNCS = 100
INCREMENTAL_BUDGET = 120  # seconds: fewer syncs when a mode's one change is that slow
WARMUP = 100  # connects per measurement, discarded
DEADLINE = 40 * 60  # seconds for the whole run (SIGALRM)
SYNC_TIMEOUT = 180  # seconds for one full sync in (1)
FIRST_EXTRA = (10 << 24) | (244 << 16) | (1 << 8)  # 10.244.1.0: endpoints of the Services other than first/last


class Interrupted(Exception):
    pass


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signal.Signals(signum).name)


# ---------------------------------------------------------------------------------------------------------------
# Desired state


def cluster_ip(i: int) -> str:
    return f"10.96.{i // 250}.{i % 250 + 1}"


def address(value: int) -> str:
    return socket.inet_ntoa(value.to_bytes(4, "big"))


def service(i: int, endpoints: tuple[Endpoint, ...]) -> ServicePort:
    return ServicePort(
        namespace="bench",
        name=f"s{i:05d}",
        port_name="http",
        protocol="tcp",
        port=80,
        cluster_ips=(cluster_ip(i),),
        external_ips=(),
        load_balancer_ips=(),
        node_port=0,
        external_local=False,
        internal_local=False,
        affinity_timeout=0,
        health_check_node_port=0,
        endpoints=endpoints,
    )


def ports(count: int, per: int) -> list[ServicePort]:
    """`count` Services of `per` endpoints each; the first and the last lead to the pod's listeners, the others to
    distinct addresses in the cluster CIDR (10.244.1.0 on), spread over 10 nodes."""
    found = []
    for i in range(count):
        if i in (0, count - 1):
            eps = tuple(Endpoint(POD_IP, p, "node-1", True, True, False) for p in POD_PORTS[:per])
        else:
            eps = tuple(
                Endpoint(address(FIRST_EXTRA + i * per + e), 8080, f"node-{e % 10 + 1}", True, True, False)
                for e in range(per)
            )
        found.append(service(i, eps))
    return found


# ---------------------------------------------------------------------------------------------------------------
# Namespaces


class Namespaces:
    """Every namespace this run creates, deleted by `close()` (which the caller runs in a `finally`)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def add(self, suffix: str) -> str:
        name = f"{PREFIX}-{suffix}"
        netns.delete(name)
        self.made.append(name)
        netns.ip("netns", "add", name)
        netns.ip("link", "set", "lo", "up", netns=name)
        return name

    def drop(self, name: str) -> None:
        netns.delete(name)
        if name in self.made:
            self.made.remove(name)

    def close(self) -> None:
        for name in reversed(self.made):
            netns.delete(name)
        self.made.clear()


@dataclasses.dataclass(frozen=True)
class Topology:
    node: str
    pod: str
    client: str


def topology(spaces: Namespaces, tag: str) -> Topology:
    """node <-veth-> pod, node <-veth-> client; all configuration done inside the new namespaces."""
    node, pod, client = spaces.add(f"{tag}-node"), spaces.add(f"{tag}-pod"), spaces.add(f"{tag}-client")
    for key in ("net.ipv4.conf.all.send_redirects", "net.ipv4.conf.default.send_redirects"):
        netns.write_sysctl(node, key, "0")
    netns.write_sysctl(node, "net.ipv4.ip_forward", "1")
    netns.ip_batch(
        node,
        [
            f"link add veth-p type veth peer name veth-n netns {pod}",
            f"link add veth-c type veth peer name veth-n netns {client}",
            f"addr add {NODE_IP}/24 dev veth-p",
            f"addr add {CLIENT_GW}/24 dev veth-c",
            "link set veth-p up",
            "link set veth-c up",
        ],
    )
    netns.ip_batch(pod, [f"addr add {POD_IP}/24 dev veth-n", "link set veth-n up", f"route add default via {NODE_IP}"])
    netns.ip_batch(
        client, [f"addr add {CLIENT_IP}/24 dev veth-n", "link set veth-n up", f"route add default via {CLIENT_GW}"]
    )
    return Topology(node, pod, client)


def bare(spaces: Namespaces, tag: str) -> str:
    """A namespace holding only the node IP (on its loopback: the userspace mode listens on it)."""
    name = spaces.add(tag)
    netns.ip("addr", "add", f"{NODE_IP}/32", "dev", "lo", netns=name)
    return name


# ---------------------------------------------------------------------------------------------------------------
# The pod: one process answering a byte with that byte


POD_SERVER = r"""
import selectors, socket, sys
sel = selectors.DefaultSelector()
for port in sys.argv[2:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], int(port)))
    s.listen(4096)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, "listen")
sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        if key.data == "stdin":
            sys.exit(0)  # the bench closed our stdin (or died)
        if key.data == "listen":
            try:
                conn, _ = key.fileobj.accept()
            except OSError:
                continue
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ, "conn")
            continue
        conn = key.fileobj
        try:
            data = conn.recv(1)
            if data:
                conn.send(data)
        except OSError:
            pass
        sel.unregister(conn)
        conn.close()
"""


CLIENT = r"""
import socket, sys, time
for line in sys.stdin:
    kind, ip, port = line.split()
    sock = socket.socket()
    sock.settimeout(3)
    try:
        start = time.perf_counter_ns()
        sock.connect((ip, int(port)))
        if kind == "rtt":
            sock.sendall(b"x")
            if sock.recv(1) != b"x":
                raise OSError("no answer")
        answer = str(time.perf_counter_ns() - start)
    except OSError as err:
        answer = "fail " + (type(err).__name__ + " " + str(err)).replace("\n", " ")
    finally:
        sock.close()
    sys.stdout.write(answer + "\n")
    sys.stdout.flush()
"""


class Child:
    """A Python process of ours inside one of our namespaces, talking over its stdin/stdout; `close()` ends it (by
    closing its stdin, else by its pid)."""

    def __init__(self, name: str, script: str, *args: str) -> None:
        argv = netns.exec_argv(name, [sys.executable, "-c", script, *args])
        self.netns = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def close(self) -> None:
        if self.proc.stdin:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


class PodServer(Child):
    """The pod's server: answers one byte with that byte on each of the pod's ports, then closes."""

    def __init__(self, pod: str) -> None:
        super().__init__(pod, POD_SERVER, POD_IP, *map(str, POD_PORTS))
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as waiting:  # epoll: descriptors may be above 1024 (userspace listeners)
            waiting.register(self.proc.stdout, selectors.EVENT_READ)
            ready = waiting.select(20)
        if not ready or self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"pod server in {pod} did not start")


class Client(Child):
    """The client namespace's process: one timed connection per request (the bench waits for each answer), so
    that the timing shares no interpreter (GIL) with the bench or the userspace proxy."""

    def __init__(self, client: str) -> None:
        super().__init__(client, CLIENT)

    def probe(self, kind: str, ip: str, port: int) -> float | str:
        """Seconds, or why it failed."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{kind} {ip} {port}\n")
        answer = self.proc.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"the client process in {self.netns} exited")
        return answer[5:] if answer.startswith("fail ") else int(answer) / 1e9


# ---------------------------------------------------------------------------------------------------------------
# The proxiers, with their kernel writes timed


class Proxier(Protocol):
    failures: int
    last_duration: float

    def sync(self, ports: list[ServicePort], *, full: bool = False) -> None: ...


class TimedNftRunner(NftRunner):
    """NftRunner (the libnftables session), adding up the time its transactions take."""

    spent = 0.0

    def apply(self, script: str) -> None:
        start = time.perf_counter()
        try:
            super().apply(script)
        finally:
            self.spent += time.perf_counter() - start


class TimedIptablesRunner(IptablesRunner):
    """IptablesRunner, adding up the time iptables-save and iptables-restore take."""

    spent = 0.0

    def save(self) -> str:
        start = time.perf_counter()
        try:
            return super().save()
        finally:
            self.spent += time.perf_counter() - start

    def restore(self, text: str) -> None:
        start = time.perf_counter()
        try:
            super().restore(text)
        finally:
            self.spent += time.perf_counter() - start


class TimedUserspace(UserspaceProxier):
    """UserspaceProxier, adding up the time its `nft` commands take."""

    spent = 0.0

    def _nft(self, args: list[str], stdin: str | None = None) -> None:
        start = time.perf_counter()
        try:
            super()._nft(args, stdin)
        finally:
            self.spent += time.perf_counter() - start


@dataclasses.dataclass
class Synced:
    total: float  # the proxier's last_duration
    kernel: float  # of which writing to the kernel
    timeout: bool = False


class Node:
    """One mode's proxier programming one namespace."""

    def __init__(self, mode: str, name: str) -> None:
        self.mode, self.netns = mode, name
        self.session_start = 0.0
        self.proxier: Proxier
        self.clock: TimedNftRunner | TimedIptablesRunner | TimedUserspace
        if mode == "nftables":
            runner = TimedNftRunner(name)
            start = time.perf_counter()
            runner.run("list tables\n")  # starts the session (the agent's is long-lived)
            self.session_start = time.perf_counter() - start
            self.proxier = NftablesProxier(CONFIG, runner)
            self.clock = runner
        elif mode == "iptables":
            self.clock = TimedIptablesRunner(name)
            self.proxier = IptablesProxier(CONFIG, self.clock)
        else:
            proxier = TimedUserspace(CONFIG, name, self._bind)
            self.proxier = self.clock = proxier

    def _bind(self, host: str, port: int) -> socket.socket:
        """As the netns dataplane's: a TCP socket made in (and bound inside) the node namespace."""
        sock = netns.socket_in(self.netns, socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return sock

    def sync(self, table: list[ServicePort], *, full: bool = False, timeout: float | None = None) -> Synced:
        """One sync; with `timeout`, the processes in the namespace (nft session, iptables-restore) are killed when
        it runs out, and the sync counts as timed out (its figures are then lower bounds)."""
        self.clock.spent = 0.0
        with watchdog(self.netns, timeout) as fired:
            try:
                self.proxier.sync(table, full=full)
            except Exception:
                if not fired.is_set():
                    raise
        return Synced(self.proxier.last_duration, self.clock.spent, fired.is_set())

    def check(self, table: list[ServicePort]) -> str:
        """What the kernel (or the proxy) holds after a full sync, counted."""
        if isinstance(self.clock, TimedNftRunner):
            ips = self.clock.run("list set ip kube-proxy cluster-ips\n").count("10.96.")
            listing = self.clock.run("list map ip kube-proxy endpoint-addresses\n")
            picks = listing.partition("elements = {")[2].count(" : ")  # not the `type … : …` line
            return f"{ips:,} ClusterIPs, {picks:,} endpoint elements"
        if isinstance(self.clock, TimedIptablesRunner):
            dnats = self.clock.save().count("-j DNAT")
            return f"{dnats:,} DNAT rules"
        assert isinstance(self.proxier, UserspaceProxier)
        listening = sum(self.proxier.proxy_port(p.namespace, p.name, p.port_name) is not None for p in table)
        argv = netns.exec_argv(self.netns, [USERSPACE_NFT, "list", "map", *USERSPACE_TABLE.split(), "portals"])
        listing = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
        portals = listing.partition("elements = {")[2].count(" : ")  # not the `type … : …` line
        return f"{listening:,} listeners, {portals:,} portal map elements"

    def close(self) -> None:
        if isinstance(self.clock, TimedNftRunner):
            self.clock.close()
        elif isinstance(self.clock, TimedUserspace):
            self.clock.cleanup()


@contextlib.contextmanager
def watchdog(name: str, seconds: float | None) -> Iterator[threading.Event]:
    """Kills the processes in our namespace `name` if the block lasts longer than `seconds` (None: no limit)."""
    fired = threading.Event()

    def fire() -> None:
        fired.set()
        netns.kill_all(name, signal.SIGKILL)

    timer = threading.Timer(seconds, fire) if seconds else None
    if timer:
        timer.daemon = True
        timer.start()
    try:
        yield fired
    finally:
        if timer:
            timer.cancel()


# ---------------------------------------------------------------------------------------------------------------
# (2) one change


@dataclasses.dataclass
class Changes:
    total: list[float]
    kernel: list[float]


def incremental(node: Node, table: list[ServicePort]) -> Changes:
    """100 syncs, each adding or removing one endpoint of the middle Service; every other port object unchanged."""
    middle = len(table) // 2
    base = table[middle]
    extra = Endpoint("10.247.255.1", 8080, "node-2", True, True, False)
    grown = dataclasses.replace(base, endpoints=(*base.endpoints, extra))
    found = Changes([], [])
    current = list(table)
    deadline = time.monotonic() + INCREMENTAL_BUDGET
    for i in range(INCREMENTAL_SYNCS):
        if time.monotonic() > deadline and i % 2 == 0:
            break
        current[middle] = grown if i % 2 == 0 else base
        synced = node.sync(current)
        found.total.append(synced.total)
        found.kernel.append(synced.kernel)
    return found


# ---------------------------------------------------------------------------------------------------------------
# (3) connections


@dataclasses.dataclass(frozen=True)
class Probe:
    mode: str
    size: int
    target: str  # "first", "last" or "pod"
    kind: str  # "connect" or "rtt"
    address: str
    client: Client = dataclasses.field(compare=False, hash=False)

    @property
    def key(self) -> tuple[str, int, str, str]:
        return self.mode, self.size, self.target, self.kind


@dataclasses.dataclass
class Samples:
    values: list[float] = dataclasses.field(default_factory=list)
    failed: int = 0
    error: str = ""  # the first failure


def measure(probes: list[Probe], count: int) -> dict[tuple[str, int, str, str], Samples]:
    """WARMUP + `count` rounds; each round every probe once, in a freshly shuffled order (so that no probe always
    follows the same one). A probe is one timed connect() (to a ClusterIP's port 80, or a random one of the pod's
    ports), or connect + send one byte + receive the answer, by the probe's client process."""
    found = {probe.key: Samples() for probe in probes}
    rng = random.Random(7)
    order = list(probes)
    for i in range(WARMUP + count):
        rng.shuffle(order)
        for probe in order:
            port = rng.choice(POD_PORTS) if probe.target == "pod" else 80
            result = probe.client.probe(probe.kind, probe.address, port)
            samples = found[probe.key]
            if isinstance(result, str):
                samples.failed += 1
                samples.error = samples.error or result
            elif i >= WARMUP:
                samples.values.append(result)
    return found


# ---------------------------------------------------------------------------------------------------------------
# Report


def ms(value: float) -> str:
    return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"


def us(value: float) -> str:
    return f"{value * 1e6:.0f} µs"


def p50_p99(values: list[float], unit: str = "ms") -> str:
    fmt = us if unit == "us" else ms
    if not values:
        return "—"
    return f"{fmt(percentile(values, 50))} / {fmt(percentile(values, 99))}"


@dataclasses.dataclass
class Row:
    what: str
    results: dict[str, str]
    target: str = ""
    verdict: str = ""


@dataclasses.dataclass
class Report:
    modes: tuple[str, ...]
    rows: list[Row] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)

    def add(self, what: str, results: dict[str, str], target: str = "", ok: bool | None = None) -> None:
        """A row; `ok` is the nftables column's verdict against `target` (None: no target)."""
        verdict = "" if ok is None else ("met" if ok else "**MISSED**")
        if ok is False:
            self.failed.append(what)
        self.rows.append(Row(what, results, target, verdict))
        cells = "; ".join(f"{mode}: {results.get(mode, '—')}" for mode in self.modes)
        print(f"  {what}: {cells}{' | ' + target if target else ''}{' — ' + verdict if verdict else ''}", flush=True)

    def table(self) -> str:
        head = ["measurement", *self.modes, "target (nftables)", "verdict"]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in self.rows:
            cells = [row.what, *(row.results.get(m, "—") for m in self.modes), row.target, row.verdict]
            out.append("| " + " | ".join(cells) + " |")
        return "\n".join(out)


def raise_nofile(needed: int) -> None:
    """Enough descriptors for the userspace mode's listeners (root may raise the hard limit too)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        hard = needed
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def parse() -> tuple[int, int, int, dict[str, int]]:
    """The arguments; the modes with the Services each is measured at."""
    usage = (
        f"usage: proxy.py [Services > {SMALL}, 10000] [endpoints 1-{len(POD_PORTS)}, 10] [connects, 2000] "
        f"[modes, {','.join(MODES)}; `mode:Services` to measure a mode at another size]"
    )
    args = sys.argv[1:]
    try:
        count = int(args[0]) if len(args) > 0 else 10_000
        per = int(args[1]) if len(args) > 1 else 10
        connects = int(args[2]) if len(args) > 2 else 2000
        sizes = {}
        for item in args[3].split(",") if len(args) > 3 else MODES:
            mode, _, size = item.partition(":")
            sizes[mode] = int(size) if size else min(count, LIMITS.get(mode, count))
    except ValueError:
        sys.exit(usage)
    if any(m not in MODES or s <= SMALL for m, s in sizes.items()) or count <= SMALL or connects < 1:
        sys.exit(usage)
    if not 1 <= per <= len(POD_PORTS):
        sys.exit(usage)
    return count, per, connects, sizes


# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Loaded:
    """A mode's proxier holding a table in a topology, with its pod server."""

    size: int
    table: list[ServicePort]
    node: Node
    topo: Topology


class Run:
    def __init__(self, count: int, per: int, connects: int, sizes: dict[str, int]) -> None:
        self.count, self.per, self.connects = count, per, connects
        self.modes = modes = tuple(sizes)
        self.sizes = sizes  # Services each mode is measured at: `count` unless limited
        self.report = Report(modes)
        self.spaces = Namespaces()
        self.nodes: list[Node] = []  # closed in `close()`
        self.children: list[Child] = []  # pod servers and clients
        self.loaded: dict[str, list[Loaded]] = {mode: [] for mode in modes}
        self.tables: dict[int, list[ServicePort]] = {}

    def table(self, size: int) -> list[ServicePort]:
        if size not in self.tables:
            self.tables[size] = ports(size, self.per)
        return self.tables[size]

    def node(self, mode: str, name: str) -> Node:
        node = Node(mode, name)
        self.nodes.append(node)
        return node

    def release(self, node: Node) -> None:
        self.nodes.remove(node)
        node.close()

    def load(self, mode: str, size: int, tag: str) -> tuple[Loaded, Synced]:
        topo = topology(self.spaces, tag)
        self.children.append(PodServer(topo.pod))
        node = self.node(mode, topo.node)
        synced = node.sync(self.table(size), full=True, timeout=SYNC_TIMEOUT)
        loaded = Loaded(size, self.table(size), node, topo)
        if not synced.timeout:
            self.loaded[mode].append(loaded)
        return loaded, synced

    # (1)

    def full_syncs(self) -> None:
        results: dict[str, list[Synced]] = {}
        checks: dict[str, str] = {}
        starts: dict[str, str] = {}
        small: dict[str, str] = {}
        for mode in self.modes:
            size, runs = self.sizes[mode], RUNS[mode]
            print(f"(1) {mode}: full sync of {size:,} Services x {self.per} endpoints, {runs} run(s)", flush=True)
            found = results[mode] = []
            for run in range(runs):
                if run < runs - 1:
                    name = bare(self.spaces, f"{mode[:3]}-full{run}")
                    node = self.node(mode, name)
                    try:
                        synced = node.sync(self.table(size), full=True, timeout=SYNC_TIMEOUT)
                        if mode == "nftables":
                            starts[mode] = f"{node.session_start * 1000:.0f} ms"
                    finally:
                        self.release(node)
                        self.spaces.drop(name)
                else:
                    loaded, synced = self.load(mode, size, f"{mode[:3]}-big")
                    if not synced.timeout:
                        checks[mode] = loaded.node.check(loaded.table)
                found.append(synced)
                print(f"    run {run + 1}: {synced.total:.2f} s (writing the rules {synced.kernel:.2f} s)", flush=True)
                if synced.timeout:
                    break
            _, synced = self.load(mode, SMALL, f"{mode[:3]}-small")
            small[mode] = f"{ms(synced.total)} (writing the rules {ms(synced.kernel)})"

        label = f"{self.count:,} Services x {self.per} endpoints"
        cells = {}
        for mode, synced_runs in results.items():
            text = ", ".join(f"{'> ' if r.timeout else ''}{r.total:.2f} s" for r in synced_runs)
            if self.sizes[mode] != self.count:
                text += f" (at {self.sizes[mode]:,} Services)"
            cells[mode] = text + (f" (killed after {SYNC_TIMEOUT} s)" if synced_runs[-1].timeout else "")
        nft = results.get("nftables")
        self.report.add(
            f"(1) full sync, {label}",
            cells,
            f"<= {FULL_TARGET:.0f} s each" if nft else "",
            all(not r.timeout and r.total <= FULL_TARGET for r in nft) if nft else None,
        )
        self.report.add(
            "    of which writing the rules (nft session / iptables-save + -restore / nft -f)",
            {m: ", ".join(f"{r.kernel:.2f} s" for r in rs) for m, rs in results.items()},
        )
        self.report.add(
            "    of which Python (plan, render; userspace: listeners)",
            {m: ", ".join(f"{r.total - r.kernel:.2f} s" for r in rs) for m, rs in results.items()},
        )
        self.report.add("    programmed (counted after the last run)", checks)
        if starts:
            self.report.add("    nft session start (before the sync, not in it)", starts)
        self.report.add(f"    full sync, {SMALL} Services", small)

    # (2)

    def changes(self) -> None:
        found: dict[int, dict[str, Changes]] = {}
        for mode in self.modes:
            for loaded in self.loaded[mode]:
                print(f"(2) {mode}: {INCREMENTAL_SYNCS} one-endpoint changes at {loaded.size:,} Services", flush=True)
                found.setdefault(loaded.size, {})[mode] = incremental(loaded.node, loaded.table)
                assert loaded.node.proxier.failures == 0, (mode, loaded.node.proxier.failures)
        big = {m: self.sizes[m] for m in self.modes}
        rows: list[tuple[str, dict[str, Changes]]] = [
            (f"{self.count:,} Services", {m: found[big[m]][m] for m in self.modes if m in found.get(big[m], {})}),
            (f"{SMALL} Services", found.get(SMALL, {})),
        ]
        for label, per_mode in rows:
            large = label != f"{SMALL} Services"
            nft = per_mode.get("nftables")
            p99 = percentile(nft.total, 99) if nft else None
            self.report.add(
                f"(2) one endpoint change, {label}: sync p50 / p99",
                {m: p50_p99(c.total) + self._size_note(m, large) for m, c in per_mode.items()},
                f"p99 <= {INCREMENTAL_TARGET * 1000:.0f} ms" if large and nft else "",
                p99 <= INCREMENTAL_TARGET if large and p99 is not None else None,
            )
            self.report.add(
                "    of which writing the rules p50 / p99",
                {
                    m: p50_p99(c.kernel) + f" ({len(c.kernel)} syncs)" * (len(c.kernel) != INCREMENTAL_SYNCS)
                    for m, c in per_mode.items()
                },
            )
        ratios = {}
        for mode in self.modes:
            at_big, at_small = found.get(big[mode], {}).get(mode), found.get(SMALL, {}).get(mode)
            if at_big and at_small:
                ratios[mode] = f"{percentile(at_big.total, 50) / percentile(at_small.total, 50):.2f}"
        self.report.add(f"    sync p50, {self.count:,} / {SMALL} Services", ratios)

    def _size_note(self, mode: str, large: bool) -> str:
        return f" (at {self.sizes[mode]:,})" if large and self.sizes[mode] != self.count else ""

    # (3)

    def connections(self) -> None:
        # The kernel modes side by side; the userspace mode on its own: its proxy runs in this process, and its work
        # after a probe (closing the spliced connections) would overlap the next probe.
        phases = [[m for m in self.modes if m != "userspace"], [m for m in self.modes if m == "userspace"]]
        found: dict[tuple[str, int, str, str], Samples] = {}
        for phase in phases:
            probes = []
            for mode in phase:
                for loaded in self.loaded[mode]:
                    client = Client(loaded.topo.client)
                    self.children.append(client)
                    addresses = {"first": cluster_ip(0), "last": cluster_ip(loaded.size - 1), "pod": POD_IP}
                    for kind in ("connect", "rtt"):
                        for target, ip in addresses.items():
                            probes.append(Probe(mode, loaded.size, target, kind, ip, client))
            if not probes:
                continue
            print(
                f"(3) {', '.join(phase)}: {len(probes)} measurements interleaved, {WARMUP} + {self.connects} each "
                f"(load average {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            start = time.perf_counter()
            found.update(measure(probes, self.connects))
            print(f"    took {time.perf_counter() - start:.0f} s", flush=True)

        def values(mode: str, size: int, target: str, kind: str) -> list[float]:
            return found.get((mode, size, target, kind), Samples()).values

        for kind, title in (("connect", "connect()"), ("rtt", "round trip (connect, 1 byte each way)")):
            for large in (True, False):
                sizes = {m: self.sizes[m] if large else SMALL for m in self.modes}
                label = f"{self.count:,}" if large else f"{SMALL}"
                names = {"first": "ClusterIP of Service 1", "last": "ClusterIP of the last Service", "pod": "pod IP"}
                for target in ("first", "last", "pod"):
                    cells = {}
                    for m in self.modes:
                        samples = found.get((m, sizes[m], target, kind))
                        if samples is None:
                            continue
                        cells[m] = p50_p99(samples.values, "us") + self._size_note(m, large)
                        if samples.failed:
                            cells[m] += f" ({samples.failed} failed: {samples.error})"
                    self.report.add(f"(3) {title}, {label}-Service table, {names[target]}: p50 / p99", cells)
                ratios, ok = {}, None
                for m in self.modes:
                    first, last = values(m, sizes[m], "first", kind), values(m, sizes[m], "last", kind)
                    if first and last:
                        ratio = percentile(last, 50) / percentile(first, 50)
                        ratios[m] = f"{ratio:.3f} ({percentile(last, 99) / percentile(first, 99):.3f})"
                        if m == "nftables" and large and kind == "connect":
                            ok = abs(ratio - 1) <= RATIO_TARGET
                self.report.add(
                    "    last / first ClusterIP: p50 ratio (p99 ratio)",
                    ratios,
                    f"p50 within {RATIO_TARGET:.0%}" if ok is not None else "",
                    ok,
                )
            ratios, ok = {}, None
            for m in self.modes:
                at_big, at_small = values(m, self.sizes[m], "pod", kind), values(m, SMALL, "pod", kind)
                if at_big and at_small:
                    ratio = percentile(at_big, 50) / percentile(at_small, 50)
                    ratios[m] = f"{ratio:.3f} ({percentile(at_big, 99) / percentile(at_small, 99):.3f})"
                    if m == "nftables" and kind == "connect":
                        ok = abs(ratio - 1) <= RATIO_TARGET
            self.report.add(
                f"    pod IP (no Service), {title}: {self.count:,}- / {SMALL}-Service table, p50 ratio (p99 ratio)",
                ratios,
                f"p50 within {RATIO_TARGET:.0%}" if ok is not None else "",
                ok,
            )

    def close(self) -> None:
        """Everything this run made, whatever happened; errors are printed, not raised."""
        for node in reversed(self.nodes):
            try:
                node.close()
            except Exception as err:
                print(f"closing the {node.mode} proxier of {node.netns}: {err!r}", file=sys.stderr)
        for child in self.children:
            try:
                child.close()
            except Exception as err:
                print(f"stopping a process in {child.netns}: {err!r}", file=sys.stderr)
        self.spaces.close()


def main() -> int:
    count, per, connects, sizes = parse()
    if os.geteuid() != 0:
        print("root only (network namespaces)", file=sys.stderr)
        return 2
    if "userspace" in sizes:
        raise_nofile(sizes["userspace"] + SMALL + 4096)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    run = Run(count, per, connects, sizes)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGALRM, _interrupt)
    signal.alarm(DEADLINE)
    try:
        run.full_syncs()
        run.changes()
        run.connections()
    except Interrupted as err:
        print(f"interrupted by {err}", file=sys.stderr)
        return 3
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # cleanup is not interrupted
        run.close()
        left = netns.list_netns(PREFIX)
        print(f"namespaces left: {left or 'none'}", flush=True)
    print(f"\nload average at end: {os.getloadavg()}\n")
    print(run.report.table())
    if run.report.failed:
        print("\nMISSED (nftables): " + "; ".join(run.report.failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
