"""The userspace mode of the node proxy, after upstream's old userspace proxier (pkg/proxy/userspace, removed in
Kubernetes 1.26): the proxy itself accepts every connection and copies the bytes to a backend.

- Each (Service, port) gets a *proxy port*, an ephemeral listener, and, for a Service with a nodePort, a listener
  on each node IP at the nodePort. A port that cannot be bound (in use) is logged and retried at the next full sync.
- A round-robin balancer per service port picks the backend, with ClientIP session affinity and its timeout. When
  a backend cannot be reached, the next one is tried with a longer dial timeout (upstream's 250 ms, 500 ms, 1 s,
  2 s); then the client connection is closed. With no endpoints at all, the connection is closed at once.
- In the netns dataplane, nftables rules in the node's namespace (table `ip tinykube-userspace`) send ClusterIP,
  external IP and load-balancer IP traffic to the proxy port, and backends are dialled from that namespace.
- With the simulated dataplane (`netns=None`, the root namespace) there are no rules at all, listeners are on
  127.0.0.1, and only loopback endpoints are dialled: simulated pod IPs do not exist, and any other address would
  be traffic to the user's own network. A selector-less Service whose Endpoints point at 127.0.0.1 is how a local
  process is exposed on `127.0.0.1:<nodePort>`.

Listeners and byte copying run on an event loop of the proxier's own thread: `sync` is called from a worker
thread and waits for the loop to apply the change, and the copying never competes with the caller's loop.
UDP is relayed too (as upstream, one backend socket per client address, dropped when idle): cluster DNS needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import random
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from tinykube.node.netns import NetnsError, exec_argv, socket_in
from tinykube.proxy.model import NodeConfig, ServicePort, cluster_endpoints
from tinykube.proxy.modes import Bind
from tinykube.proxy.nftables import NftError

log = logging.getLogger(__name__)

T = TypeVar("T")
Address = tuple[str, int]
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]

TABLE = "ip tinykube-userspace"
NFT = shutil.which("nft") or "/usr/sbin/nft"  # absolute, as the other modes
DIAL_TIMEOUTS = (0.25, 0.5, 1.0, 2.0)  # seconds; one attempt each, on the next endpoint (upstream's)
UDP_IDLE = 1.0  # seconds without traffic before a UDP client's backend socket is dropped (upstream: 250 ms)
BUFFER = 64 * 1024
PROTOCOLS = ("tcp", "udp")


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


def render_rules(node_ip: str, portals: Iterable[tuple[ServicePort, int]]) -> str:
    """The `nft -f -` script that (re)creates the table sending each service port's virtual IPs to its proxy port,
    for traffic from pods (prerouting) and from the node itself (output).

    `dnat` to the node IP rather than `redirect`: redirect rewrites to the address of the incoming interface, and
    the node's ends of the pod veths have none."""
    lines = [
        f"add table {TABLE}",
        f"delete table {TABLE}",
        f'add table {TABLE} {{ comment "rules for the tinykube userspace proxy" ; }}',
        f"add chain {TABLE} portals",
        f"add chain {TABLE} prerouting {{ type nat hook prerouting priority -100 ; }}",
        f"add chain {TABLE} output {{ type nat hook output priority -100 ; }}",
        f"add rule {TABLE} prerouting jump portals",
        f"add rule {TABLE} output jump portals",
    ]
    for port, proxy_port in portals:
        comment = f"{port.namespace}/{port.name}:{port.port_name}"
        for ip in (*port.cluster_ips, *port.external_ips, *port.load_balancer_ips):
            lines.append(
                f"add rule {TABLE} portals ip daddr {ip} {port.protocol} dport {port.port} "
                f'dnat to {node_ip}:{proxy_port} comment "{comment}"'
            )
    return "\n".join(lines) + "\n"


@dataclass(slots=True)
class _Listener:
    port: int
    close: Callable[[], None]


@dataclass(slots=True)
class _PortState:
    """One service port: its spec, balancer and listeners."""

    spec: ServicePort
    balancer: RoundRobin = field(default_factory=RoundRobin)
    proxy: _Listener | None = None
    node_ports: dict[str, _Listener] = field(default_factory=dict)  # node IP -> listener at the nodePort

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


class UserspaceProxier:
    mode = "userspace"  # what /proxyMode answers

    def __init__(self, config: NodeConfig, netns: str | None, bind: Bind) -> None:
        """`netns`: the node's namespace (None: the simulated dataplane's root namespace); `bind(host, port)` makes
        a bound TCP socket there."""
        if netns is not None and not config.node_ips:
            raise ValueError("the userspace proxy of a node namespace needs the node's IP")
        self.config = config
        self.netns = netns
        self.bind = bind
        self.syncs = 0
        self.failures = 0
        self.last_duration = 0.0  # seconds the last sync took
        # In the root namespace everything listens on loopback, whatever the node's addresses.
        self._host = "127.0.0.1" if netns is None else config.node_ips[0]
        self._node_ips = ["127.0.0.1"] if netns is None else list(config.node_ips)
        self._ports: dict[str, _PortState] = {}  # by ServicePort.key; touched on the loop's thread only
        self._warned: set[str] = set()  # service ports whose skipped endpoints were logged
        self._rules: str | None = None  # the script nft last accepted (None: none, or unknown after a failure)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"userspace proxy {netns}", daemon=True)
        self._thread.start()

    # The caller's side (any thread but the loop's)

    def sync(self, ports: Iterable[ServicePort], *, full: bool = False) -> None:
        """Open and close listeners to match `ports` and update the balancers; in a node namespace, rewrite the
        rules when they changed (or when `full`)."""
        start = time.monotonic()
        try:
            script = self._call(self._apply(list(ports), full))
            if self.netns is not None and (full or script != self._rules):
                self._nft(["-f", "-"], script)
                self._rules = script
        except Exception:
            self.failures += 1
            self._rules = None
            raise
        finally:
            self.syncs += 1
            self.last_duration = time.monotonic() - start

    def proxy_port(self, namespace: str, name: str, port_name: str, protocol: str = "tcp") -> int | None:
        """The port the proxy listens on for a service port (None: not listening)."""
        state = self._ports.get(f"{namespace}/{name}/{protocol}/{port_name}")
        return state.proxy.port if state is not None and state.proxy is not None else None

    def cleanup(self) -> None:
        """Close every listener and connection, remove the rules, and stop the loop. Idempotent."""
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
            self._rules = None

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _nft(self, args: list[str], stdin: str | None = None) -> None:
        assert self.netns is not None  # never in the root namespace
        argv = exec_argv(self.netns, [NFT, *args])
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise NftError(f"nft {' '.join(args)}: {done.stderr.strip()}")

    # The loop's side

    async def _apply(self, ports: list[ServicePort], full: bool) -> str:
        wanted = {p.key: p for p in ports if p.protocol in PROTOCOLS}
        for key in self._ports.keys() - wanted.keys():
            self._ports.pop(key).close()
            self._warned.discard(key)
        for key, port in wanted.items():
            state = self._ports.get(key)
            new = state is None
            moved = state is not None and state.spec.node_port != port.node_port
            if state is None:
                state = self._ports[key] = _PortState(port)
            elif moved:
                state.close_node_ports()
            state.spec = port
            state.balancer.update(self._backends(port), port.affinity_timeout)
            if new or moved or full:  # at a full sync, what failed to bind is tried again
                await self._listen(state)
        if self.netns is None:
            return ""  # no rules in the root namespace
        portals = [(s.spec, s.proxy.port) for s in self._ports.values() if s.proxy is not None]
        return render_rules(self._host, sorted(portals, key=lambda p: p[0].key))

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

    async def _open_tcp(self, state: _PortState, host: str, port: int) -> _Listener:
        sock = self.bind(host, port)
        try:
            server = await asyncio.start_server(functools.partial(self._serve_tcp, state), sock=sock)
        except BaseException:
            sock.close()
            raise
        return _Listener(sock.getsockname()[1], server.close)

    async def _open_udp(self, state: _PortState, host: str, port: int) -> _Listener:
        sock = self._udp_socket()
        try:
            sock.bind((host, port))
            _, relay = await self._loop.create_datagram_endpoint(lambda: _UdpRelay(self, state), sock=sock)
        except BaseException:
            sock.close()
            raise
        return _Listener(sock.getsockname()[1], relay.close)

    def _udp_socket(self) -> socket.socket:
        if self.netns is not None:
            return socket_in(self.netns, socket.AF_INET, socket.SOCK_DGRAM)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        return sock

    async def _shutdown(self) -> None:
        for state in self._ports.values():
            state.close()
        self._ports.clear()
        current = asyncio.current_task()
        connections = [task for task in asyncio.all_tasks() if task is not current]
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    # TCP

    async def _serve_tcp(self, state: _PortState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            backend = await self._connect(state, writer.get_extra_info("peername")[0])
            if backend is not None:
                await _splice((reader, writer), backend)
        except asyncio.CancelledError:
            pass  # cleanup() ends the connection (and Python 3.11's stream server logs a cancelled handler)
        finally:
            writer.close()  # also how a client is refused: no endpoint, or none reachable

    async def _connect(self, state: _PortState, client_ip: str) -> Stream | None:
        """A connection to a backend, trying the next one (affinity reset) with a longer timeout on failure."""
        for attempt, timeout in enumerate(DIAL_TIMEOUTS):
            endpoint = state.balancer.next(client_ip, reset=attempt > 0)
            if endpoint is None:
                return None
            try:
                return await asyncio.wait_for(self._dial(*endpoint), timeout)
            except (OSError, TimeoutError, NetnsError) as err:
                log.info("userspace proxy: %s: dial %s:%d failed: %r", state.spec.key, *endpoint, err)
        log.warning("userspace proxy: %s: failed to connect to an endpoint", state.spec.key)
        return None

    async def _dial(self, ip: str, port: int) -> Stream:
        if not dialable(self.netns, ip):  # the balancer never holds such endpoints; this is the last guard
            raise OSError(f"refusing to dial {ip} from the root namespace")
        if self.netns is None:
            return await asyncio.open_connection(ip, port)
        sock = socket_in(self.netns)  # non-blocking, and in the node's namespace whichever thread uses it
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
        sock = self._udp_socket()
        sock.connect((ip, port))  # no handshake: only fixes the peer, so replies can be told apart per client
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
        except (OSError, NetnsError) as err:
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
