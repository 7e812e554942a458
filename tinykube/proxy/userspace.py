"""The userspace mode of the node proxy, after upstream's old userspace proxier (pkg/proxy/userspace, removed in
Kubernetes 1.26): the proxy itself accepts every connection and copies the bytes to a backend.

- Each (Service, port) gets a *proxy port*, an ephemeral listener, and, for a Service with a nodePort, a listener
  on each node IP at the nodePort. A port that cannot be bound (in use) is logged and retried at the next full sync.
- A round-robin balancer per service port picks the backend, with ClientIP session affinity and its timeout. When
  a backend cannot be reached, the next one is tried with a longer dial timeout (upstream's 250 ms, 500 ms, 1 s,
  2 s); then the client connection is closed. With no endpoints at all, the connection is closed at once.
- In the netns dataplane, nftables rules in the node's namespace (table `ip tinykube-userspace`) send ClusterIP,
  external IP and load-balancer IP traffic to the proxy port: one lookup in the map `portals`, keyed by
  `daddr . l4proto . dport`, whatever the number of Services; a change of Services adds and deletes its elements.
- With the simulated dataplane (`netns=None`, the root namespace) there are no rules at all, listeners are on
  127.0.0.1 (made by the caller's `bind`), and only loopback endpoints are dialled: simulated pod IPs do not exist,
  and any other address would be traffic to the user's own network. A selector-less Service whose Endpoints point at
  127.0.0.1 is how a local process is exposed on `127.0.0.1:<nodePort>`.

Listeners and byte copying run on an event loop of the proxier's own thread: `sync` is called from a worker
thread and waits for the loop to apply the change, and the copying never competes with the caller's loop. In the
netns dataplane that thread enters the node's namespace when it starts (setns(2) moves the calling thread only;
the rest of the process stays where it is), checks that it is there (or the proxier is not made), and makes every
socket of the proxy itself: listeners, backend connections, UDP sessions. It ends when `cleanup()` stops the loop.
A sync touches only the service ports whose `ServicePort` changed, and writes rules only when a portal (virtual
IPs, port, proxy port) did.
UDP is relayed too (as upstream, one backend socket per client address, dropped when idle): cluster DNS needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import os
import random
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from tinykube.proxy.model import NodeConfig, ServicePort, cluster_endpoints
from tinykube.proxy.modes import Bind
from tinykube.proxy.nftables import NftError
from tinykube.proxy.syncing import SyncCounters
from tinykube.sandbox.netns import NETNS_RUN, NetnsError, enter, exec_argv

log = logging.getLogger(__name__)

T = TypeVar("T")
Address = tuple[str, int]
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Element = tuple[str, str, int]  # a key of the `portals` map: (virtual IP, protocol, port)
Target = tuple[int, str]  # what an element leads to: (proxy port, comment naming the service port)

TABLE = "ip tinykube-userspace"
NFT = shutil.which("nft") or "/usr/sbin/nft"  # absolute, as the other modes
DIAL_TIMEOUTS = (0.25, 0.5, 1.0, 2.0)  # seconds; one attempt each, on the next endpoint (upstream's)
UDP_IDLE = 1.0  # seconds without traffic before a UDP client's backend socket is dropped (upstream: 250 ms)
BUFFER = 64 * 1024
PROTOCOLS = ("tcp", "udp")
ELEMENTS_PER_LINE = 1000  # `add element` commands of a full rewrite, so that no line gets huge


def dialable(netns: str | None, ip: str) -> bool:
    """Whether the proxy may connect to `ip`: in a node namespace anything; in the root namespace (the simulated
    dataplane) loopback only."""
    return netns is not None or ipaddress.ip_address(ip).is_loopback


class RoundRobin:
    """Upstream's LoadBalancerRR for one service port: endpoints in turn; with ClientIP affinity, a client keeps
    its last endpoint while it comes back within the timeout."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoints: tuple[Address, ...] = ()
        self.affinity_timeout = 0  # seconds; 0: no affinity
        self._index = 0
        self._sticky: dict[str, tuple[Address, float]] = {}  # client IP -> (endpoint, last used)
        self._clock = clock

    def update(self, endpoints: Sequence[Address], affinity_timeout: int) -> None:
        """New endpoints (order does not matter); an unchanged set keeps the rotation and the affinities."""
        if affinity_timeout != self.affinity_timeout:
            self._sticky.clear()
        self.affinity_timeout = affinity_timeout
        now = self._clock()
        kept = set(endpoints)
        self._sticky = {
            ip: (ep, used) for ip, (ep, used) in self._sticky.items() if ep in kept and now - used < affinity_timeout
        }
        if kept != set(self.endpoints):
            # Shuffled as upstream does, so that the nodes do not all start with the same endpoint.
            self.endpoints = tuple(random.sample(sorted(kept), len(kept)))
            self._index = 0

    def next(self, client_ip: str, *, reset: bool = False) -> Address | None:
        """The endpoint for a new connection from `client_ip`; `reset` (the last one failed) skips affinity."""
        if not self.endpoints:
            return None
        now = self._clock()
        sticky = self._sticky.get(client_ip)
        if self.affinity_timeout and sticky and not reset and now - sticky[1] < self.affinity_timeout:
            self._sticky[client_ip] = (sticky[0], now)
            return sticky[0]
        endpoint = self.endpoints[self._index % len(self.endpoints)]
        self._index = (self._index + 1) % len(self.endpoints)
        if self.affinity_timeout:
            self._sticky[client_ip] = (endpoint, now)
        return endpoint


def portal_elements(port: ServicePort) -> list[Element]:
    """The `portals` map keys of a service port: each of its virtual IPs at its protocol and port."""
    return [(ip, port.protocol, port.port) for ip in (*port.cluster_ips, *port.external_ips, *port.load_balancer_ips)]


def _comment(port: ServicePort) -> str:
    return f"{port.namespace}/{port.name}:{port.port_name}"


def _elements(node_ip: str, elements: Iterable[tuple[Element, Target]]) -> str:
    return ", ".join(
        f'{ip} . {protocol} . {port} comment "{comment}" : {node_ip} . {proxy_port}'
        for (ip, protocol, port), (proxy_port, comment) in elements
    )


def render_rules(node_ip: str, portals: Mapping[Element, Target]) -> str:
    """The `nft -f -` script that (re)creates the table sending each virtual IP, protocol and port to its proxy
    port, for traffic from pods (prerouting) and from the node itself (output): one map lookup, whose miss (any
    other traffic) leaves the packet alone.

    `dnat` to the node IP rather than `redirect`: redirect rewrites to the address of the incoming interface, and
    the node's ends of the pod veths have none."""
    lines = [
        f"add table {TABLE}",
        f"delete table {TABLE}",
        f'add table {TABLE} {{ comment "rules for the tinykube userspace proxy" ; }}',
        f"add map {TABLE} portals {{ type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service ; }}",
        f"add chain {TABLE} portals",
        f"add chain {TABLE} prerouting {{ type nat hook prerouting priority -100 ; }}",
        f"add chain {TABLE} output {{ type nat hook output priority -100 ; }}",
        f"add rule {TABLE} prerouting jump portals",
        f"add rule {TABLE} output jump portals",
        f"add rule {TABLE} portals dnat ip to ip daddr . meta l4proto . th dport map @portals",
    ]
    items = sorted(portals.items())
    for i in range(0, len(items), ELEMENTS_PER_LINE):
        lines.append(f"add element {TABLE} portals {{ {_elements(node_ip, items[i : i + ELEMENTS_PER_LINE])} }}")
    return "\n".join(lines) + "\n"


def render_changes(node_ip: str, deleted: Iterable[Element], added: Mapping[Element, Target]) -> str:
    """The `nft -f -` script that deletes and then adds elements of the `portals` map (one transaction: an element
    whose target changes is deleted and added again)."""
    lines = []
    if gone := ", ".join(f"{ip} . {protocol} . {port}" for ip, protocol, port in sorted(deleted)):
        lines.append(f"delete element {TABLE} portals {{ {gone} }}")
    if added:
        lines.append(f"add element {TABLE} portals {{ {_elements(node_ip, sorted(added.items()))} }}")
    return "".join(f"{line}\n" for line in lines)


def enter_netns(netns: str) -> None:
    """Move the calling thread (only) into `netns`, and check that it is there: its network namespace must be the
    very one pinned at /run/netns/<netns>. Raises NetnsError otherwise, after which the thread must make nothing
    (the proxier's ends at once)."""
    enter(netns)
    here, there = os.stat("/proc/thread-self/ns/net"), os.stat(NETNS_RUN / netns)
    if (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
        raise NetnsError(f"setns {netns}: the thread is in net:[{here.st_ino}], not in net:[{there.st_ino}]")


@dataclass(slots=True)
class _Listener:
    port: int
    close: Callable[[], None]


@dataclass(slots=True)
class _PortState:
    """One service port: its spec, balancer, listeners, and the portal its elements in the map stand for."""

    spec: ServicePort
    balancer: RoundRobin = field(default_factory=RoundRobin)
    proxy: _Listener | None = None
    node_ports: dict[str, _Listener] = field(default_factory=dict)  # node IP -> listener at the nodePort
    portal: tuple[tuple[Element, ...], int] | None = None  # the elements it claims and their proxy port
    generation: int = 0  # the last sync that listed it

    def close_node_ports(self) -> None:
        for listener in self.node_ports.values():
            listener.close()
        self.node_ports.clear()

    def close(self) -> None:
        """Stop accepting; connections already proxied carry on (as upstream)."""
        if self.proxy is not None:
            self.proxy.close()
            self.proxy = None
        self.close_node_ports()


@dataclass(slots=True)
class _Plan:
    """What a sync writes to the kernel: a whole table (`full`), or changes to the map, or nothing (`script` "")."""

    script: str = ""
    full: bool = False
    deleted: list[Element] = field(default_factory=list)
    added: dict[Element, Target] = field(default_factory=dict)


class UserspaceProxier(SyncCounters):
    mode = "userspace"  # what /proxyMode answers

    def __init__(self, config: NodeConfig, netns: str | None, bind: Bind) -> None:
        """`netns`: the node's namespace (None: the simulated dataplane's root namespace); `bind(host, port)` makes
        a bound TCP socket there, and is used in the root namespace only: in a node namespace the proxier's thread,
        which has entered it, makes its sockets itself (bound to `host:port` as `bind` would, SO_REUSEADDR for a
        nodePort).

        Raises NetnsError (OSError when `netns` does not exist) when the thread cannot enter `netns`, and no
        proxier is made: nothing is ever opened in the wrong namespace."""
        if netns is not None and not config.node_ips:
            raise ValueError("the userspace proxy of a node namespace needs the node's IP")
        self.config = config
        self.netns = netns
        self.bind = bind
        super().__init__()
        # In the root namespace everything listens on loopback, whatever the node's addresses.
        self._host = "127.0.0.1" if netns is None else config.node_ips[0]
        self._node_ips = ["127.0.0.1"] if netns is None else list(config.node_ips)
        self._ports: dict[str, _PortState] = {}  # by ServicePort.key; touched on the loop's thread only
        self._warned: set[str] = set()  # service ports whose skipped endpoints were logged
        # The map's elements: who claims each (several service ports may share an external IP and port: the first
        # by key wins, as the first rule did), which were touched since the last plan, and what the kernel holds
        # (None: nothing yet, or unknown after a failure; the next sync rewrites the table).
        self._claims: dict[Element, dict[str, Target]] = {}
        self._touched: set[Element] = set()
        self._installed: dict[Element, Target] | None = None
        self._generation = 0  # syncs applied, to mark the service ports each one lists
        self._tasks: set[asyncio.Task[None]] = set()  # every connection being served, until it ends
        self._sync_lock = threading.Lock()
        started: Future[asyncio.AbstractEventLoop] = Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name=f"userspace proxy {netns}", daemon=True)
        self._thread.start()
        self._loop = started.result()  # raises what kept the thread from entering the namespace

    # The caller's side (any thread but the loop's)

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        """Open and close listeners to match `ports` and update the balancers of the service ports that changed; in
        a node namespace, write the map elements that changed (all the rules when `full`, or after a failure)."""
        with self._sync_lock, self.counted(full):
            try:
                plan = self._call(self._apply(list(ports), full))
                if plan.script:
                    self._nft(["-f", "-"], plan.script)
                    self._commit(plan)
            except Exception:
                self._installed = None
                raise

    def proxy_port(self, namespace: str, name: str, port_name: str, protocol: str = "tcp") -> int | None:
        """The port the proxy listens on for a service port (None: not listening)."""
        state = self._ports.get(f"{namespace}/{name}/{protocol}/{port_name}")
        return state.proxy.port if state is not None and state.proxy is not None else None

    def close(self) -> None:
        """When the agent stops: the rules lead to this process's listeners, so they go with them."""
        self.cleanup()

    def cleanup(self) -> None:
        """Close every listener and connection, remove the rules, and stop the loop (and so its thread, which
        leaves the namespace). Idempotent."""
        if self._loop.is_closed():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
        if self.netns is not None:
            try:
                self._nft(["delete", "table", *TABLE.split()])
            except NftError as err:
                if "No such file or directory" not in str(err):
                    raise
            self._installed = None

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _nft(self, args: list[str], stdin: str | None = None) -> None:
        assert self.netns is not None  # never in the root namespace
        argv = exec_argv(self.netns, [NFT, *args])
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NftError(f"nft {' '.join(args)}: {done.stderr.strip()}")

    def _commit(self, plan: _Plan) -> None:
        """What the kernel holds once nft accepted `plan`."""
        if plan.full:
            self._installed = plan.added
            return
        assert self._installed is not None
        for element in plan.deleted:
            del self._installed[element]
        self._installed.update(plan.added)

    # The loop's thread

    def _run(self, started: Future[asyncio.AbstractEventLoop]) -> None:
        """The proxier's thread: in the node's namespace (if any) before anything else, then its loop until
        `cleanup()`."""
        try:
            if self.netns is not None:
                enter_netns(self.netns)
            loop = asyncio.new_event_loop()
        except BaseException as err:
            started.set_exception(err)
            return
        started.set_result(loop)
        loop.run_forever()

    def _socket(self, kind: int) -> socket.socket:
        """A non-blocking IPv4 socket of the proxier's namespace: made on its loop's thread, the one that entered
        the namespace, and nowhere else."""
        if threading.current_thread() is not self._thread:
            raise RuntimeError("userspace proxy: sockets are made on the proxier's own thread only")
        sock = socket.socket(socket.AF_INET, kind)
        sock.setblocking(False)
        return sock

    async def _apply(self, ports: list[ServicePort], full: bool) -> _Plan:
        """One pass over `ports`: a service port whose state holds the very same object (the agent hands over the
        same one for an unchanged Service) costs a lookup; the others are compared, and only what changed is
        redone. The states that no port marked in this pass are closed (counted, so that the common sync where
        none is gone needs no second pass)."""
        self._generation = generation = self._generation + 1
        states = self._ports
        existing, marked = len(states), 0
        for port in ports:
            state = states.get(port.key)
            if state is None:
                if port.protocol in PROTOCOLS:
                    state = states[port.key] = _PortState(port, generation=generation)
                    state.balancer.update(self._backends(port), port.affinity_timeout)
                    await self._listen(state)
                    self._claim(state)
                continue
            if state.generation != generation:
                state.generation = generation
                marked += 1
            if state.spec is not port:
                await self._change(state, port)
            if full:  # what failed to bind is tried again
                await self._listen(state)
                self._claim(state)
        if marked < existing:
            for key in [key for key, state in states.items() if state.generation != generation]:
                state = states.pop(key)
                state.close()
                self._release(state)
                self._warned.discard(key)
        return self._plan(full)

    async def _change(self, state: _PortState, port: ServicePort) -> None:
        """`port` is another object than the state's: redo what differs (if anything: an equal one is only kept,
        so that the next sync finds it by identity)."""
        old, state.spec = state.spec, port
        if old == port:
            return
        if old.endpoints != port.endpoints or old.affinity_timeout != port.affinity_timeout:
            state.balancer.update(self._backends(port), port.affinity_timeout)
        if old.node_port != port.node_port:
            state.close_node_ports()
            await self._listen(state)
        self._claim(state)

    def _claim(self, state: _PortState) -> None:
        """Record the elements `state` claims now (its virtual IPs at its proxy port), if they changed."""
        portal = None
        if state.proxy is not None:
            portal = (tuple(portal_elements(state.spec)), state.proxy.port)
        if portal == state.portal:
            return
        self._release(state)
        state.portal = portal
        if portal is not None:
            elements, proxy_port = portal
            target = (proxy_port, _comment(state.spec))
            for element in elements:
                self._claims.setdefault(element, {})[state.spec.key] = target
                self._touched.add(element)

    def _release(self, state: _PortState) -> None:
        if state.portal is None:
            return
        key = state.spec.key
        for element in state.portal[0]:
            claims = self._claims.get(element)
            if claims is not None and claims.pop(key, None) is not None and not claims:
                del self._claims[element]
            self._touched.add(element)
        state.portal = None

    def _winner(self, element: Element) -> Target | None:
        claims = self._claims.get(element)
        return claims[min(claims)] if claims else None

    def _plan(self, full: bool) -> _Plan:
        touched, self._touched = self._touched, set()
        if self.netns is None:
            return _Plan()  # no rules in the root namespace
        if full or self._installed is None:
            wanted = {element: claims[min(claims)] for element, claims in self._claims.items()}
            return _Plan(render_rules(self._host, wanted), full=True, added=wanted)
        plan = _Plan()
        for element in touched:
            want, have = self._winner(element), self._installed.get(element)
            if want == have:
                continue
            if have is not None:
                plan.deleted.append(element)
            if want is not None:
                plan.added[element] = want
        plan.script = render_changes(self._host, plan.deleted, plan.added)
        return plan

    def _backends(self, port: ServicePort) -> list[Address]:
        endpoints = cluster_endpoints(port)
        usable = [(e.ip, e.port) for e in endpoints if dialable(self.netns, e.ip)]
        if len(usable) < len(endpoints) and port.key not in self._warned:
            self._warned.add(port.key)
            skipped = ", ".join(e.ip for e in endpoints if not dialable(self.netns, e.ip))
            log.warning(
                "userspace proxy: %s: endpoints outside 127.0.0.0/8 are never dialled from the host (%s)",
                port.key,
                skipped,
            )
        return usable

    async def _listen(self, state: _PortState) -> None:
        if state.proxy is None:
            state.proxy = await self._open(state, self._host, 0)
        if state.spec.node_port:
            for host in self._node_ips:
                if host not in state.node_ports and (listener := await self._open(state, host, state.spec.node_port)):
                    state.node_ports[host] = listener

    async def _open(self, state: _PortState, host: str, port: int) -> _Listener | None:
        try:
            if state.spec.protocol == "udp":
                return await self._open_udp(state, host, port)
            return await self._open_tcp(state, host, port)
        except OSError as err:
            log.warning("userspace proxy: cannot listen on %s:%d for %s: %s", host, port, state.spec.key, err)
            return None

    def _tcp_listener(self, host: str, port: int) -> socket.socket:
        if self.netns is None:
            return self.bind(host, port)
        sock = self._socket(socket.SOCK_STREAM)
        try:
            if port:  # as `bind` does; not for a kernel-chosen port, where it only makes the kernel's search slow
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (~0.6 ms a bind past 8,000 listeners)
            sock.bind((host, port))
        except BaseException:
            sock.close()
            raise
        return sock

    async def _open_tcp(self, state: _PortState, host: str, port: int) -> _Listener:
        sock = self._tcp_listener(host, port)
        try:
            server = await asyncio.start_server(functools.partial(self._accept, state), sock=sock)
        except BaseException:
            sock.close()
            raise
        return _Listener(sock.getsockname()[1], server.close)

    async def _open_udp(self, state: _PortState, host: str, port: int) -> _Listener:
        sock = self._socket(socket.SOCK_DGRAM)
        try:
            sock.bind((host, port))
            _, relay = await self._loop.create_datagram_endpoint(lambda: _UdpRelay(self, state), sock=sock)
        except BaseException:
            sock.close()
            raise
        return _Listener(sock.getsockname()[1], relay.close)

    async def _shutdown(self) -> None:
        for state in self._ports.values():
            state.close()
        self._ports.clear()
        self._claims.clear()
        self._touched.clear()
        connections = list(self._tasks)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    # TCP

    def _accept(self, state: _PortState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A new client connection. Its task is held in `_tasks` until it ends: asyncio's stream protocols hold
        their readers only weakly, so a splice waiting on a backend after its client has closed (nothing the loop
        watches leads to it then) would otherwise be a cycle the garbage collector destroys, pending."""
        task = self._loop.create_task(self._serve_tcp(state, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_tcp(self, state: _PortState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            backend = await self._connect(state, writer.get_extra_info("peername")[0])
            if backend is not None:
                await _splice((reader, writer), backend)
        finally:
            writer.close()  # also how a client is refused: no endpoint, or none reachable

    async def _connect(self, state: _PortState, client_ip: str) -> Stream | None:
        """A connection to a backend, trying the next one (affinity reset) with a longer timeout on failure."""
        for attempt, timeout in enumerate(DIAL_TIMEOUTS):
            endpoint = state.balancer.next(client_ip, reset=attempt > 0)
            if endpoint is None:
                return None
            try:
                async with asyncio.timeout(timeout):
                    return await self._dial(*endpoint)
            except (OSError, TimeoutError) as err:
                log.info("userspace proxy: %s: dial %s:%d failed: %r", state.spec.key, *endpoint, err)
        log.warning("userspace proxy: %s: failed to connect to an endpoint", state.spec.key)
        return None

    async def _dial(self, ip: str, port: int) -> Stream:
        if not dialable(self.netns, ip):  # the balancer never holds such endpoints; this is the last guard
            raise OSError(f"refusing to dial {ip} from the root namespace")
        sock = self._socket(socket.SOCK_STREAM)
        try:
            await self._loop.sock_connect(sock, (ip, port))
            return await asyncio.open_connection(sock=sock)
        except BaseException:
            sock.close()
            raise

    # UDP

    def _udp_backend(self, ip: str, port: int) -> socket.socket:
        if not dialable(self.netns, ip):
            raise OSError(f"refusing to send to {ip} from the root namespace")
        sock = self._socket(socket.SOCK_DGRAM)
        try:
            sock.connect((ip, port))  # no handshake: only fixes the peer, so replies can be told apart per client
        except BaseException:
            sock.close()
            raise
        return sock


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(BUFFER):
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()  # a half-close: the other direction may still be talking


async def _splice(client: Stream, backend: Stream) -> None:
    """Copy both ways until both sides are done; a reset on either side ends both."""
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(_pipe(client[0], backend[1]))
            group.create_task(_pipe(backend[0], client[1]))
    except* OSError:
        pass
    finally:
        backend[1].close()


class _UdpRelay(asyncio.DatagramProtocol):
    """A UDP listener of a service port. As upstream, each client address gets a socket of its own to a backend
    (chosen as for TCP), which tells replies apart; it is dropped after `UDP_IDLE` seconds without traffic."""

    def __init__(self, proxier: UserspaceProxier, state: _PortState) -> None:
        self.proxier = proxier
        self.state = state
        self.transport: asyncio.DatagramTransport | None = None
        self.sessions: dict[Address, _UdpSession] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # asyncio's own is no subclass of it

    def datagram_received(self, data: bytes, addr: Address) -> None:
        session = self.sessions.get(addr) or self._open(addr)
        if session is not None:
            session.send(data)

    def _open(self, client: Address) -> _UdpSession | None:
        endpoint = self.state.balancer.next(client[0])
        if endpoint is None:
            return None  # no endpoints: the datagram is dropped
        try:
            sock = self.proxier._udp_backend(*endpoint)
        except OSError as err:
            log.info("userspace proxy: %s: %s:%d: %s", self.state.spec.key, *endpoint, err)
            return None
        session = self.sessions[client] = _UdpSession(self, client, sock)
        return session

    def close(self) -> None:
        for session in list(self.sessions.values()):
            session.close()
        if self.transport is not None:
            self.transport.close()


class _UdpSession:
    def __init__(self, relay: _UdpRelay, client: Address, sock: socket.socket) -> None:
        self.relay = relay
        self.client = client
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.timer = self.loop.call_later(UDP_IDLE, self._expire)
        self.loop.add_reader(sock.fileno(), self._reply)

    def send(self, data: bytes) -> None:
        self.last = self.loop.time()
        try:
            self.sock.send(data)
        except BlockingIOError:
            pass  # a full buffer drops the datagram, as the network would
        except OSError:
            self.close()  # e.g. an earlier ICMP port unreachable: the next datagram picks a backend anew

    def _reply(self) -> None:
        try:
            data = self.sock.recv(BUFFER)
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        self.last = self.loop.time()
        if self.relay.transport is not None:
            self.relay.transport.sendto(data, self.client)

    def _expire(self) -> None:
        idle = self.loop.time() - self.last
        if idle >= UDP_IDLE:
            self.close()
        else:
            self.timer = self.loop.call_later(UDP_IDLE - idle, self._expire)

    def close(self) -> None:
        self.timer.cancel()
        with contextlib.suppress(ValueError, OSError):
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()
        if self.relay.sessions.get(self.client) is self:
            del self.relay.sessions[self.client]
