"""The DNS server's sockets: UDP and TCP on one address, names outside the zones forwarded upstream.

UDP is read straight off a non-blocking socket from the event loop's reader callback, draining every queued
datagram per wake-up: a repeated question is answered from `ResponseCache` with one lookup and one `sendto`, which
is what lets one Python process keep up with dnsperf. Everything else (a first question, TCP, forwarding) takes the
slower path: `wire.parse_query` (bounded work per packet) and dnslib for the response.

Hostile input: what fails to parse is answered FORMERR (NOTIMP for another opcode) when its header is readable, and
nothing otherwise, as CoreDNS does; it is charged to its source address (`limits.SourceLimiter`), and a source over
its limit has its uncached packets dropped before parsing. TCP connections have CoreDNS's read, idle and write
timeouts and a cap in all and per source address.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple

from dnslib import RCODE

from tinykube.dns import wire
from tinykube.dns.answers import Answer, Answerer
from tinykube.dns.cache import Cached, ResponseCache
from tinykube.dns.limits import SourceLimiter
from tinykube.dns.metrics import DnsMetrics

log = logging.getLogger(__name__)

CLASS_IN = 1
UDP_BATCH = 256  # datagrams read per wake-up before other tasks get a turn
UPSTREAM_TIMEOUT = 2.0
TCP_READ_TIMEOUT = 3.0  # a new connection's first query, length prefix and message, must arrive within (CoreDNS: 3 s)
TCP_IDLE_TIMEOUT = 10.0  # and each later one (CoreDNS and knot: 10 s)
TCP_WRITE_TIMEOUT = 5.0  # a response the client does not read within this ends the connection (CoreDNS: 5 s)
MAX_TCP_CLIENTS = 512  # connections at once; past it, or past the per-source cap, a new one is closed at once
MAX_TCP_PER_SOURCE = 64
MAX_UDP = 65535
MAX_CACHED_QUERY = 512  # longer queries are not looked up in (nor put in) the response cache: no hashing 64 KB
PORT_ATTEMPTS = 20
MAX_PENDING = 1000  # questions waiting on upstreams; past it, SERVFAIL rather than unbounded tasks


def _rcode_name(rcode: int) -> str:
    return "BADVERS" if rcode == wire.BADVERS else str(RCODE.get(rcode, str(rcode)))


class Via(NamedTuple):
    """How a query came: the `proto` and `family` labels of its metrics."""

    proto: str  # udp, tcp
    family: str  # 1 (IPv4), 2 (IPv6), as CoreDNS labels them

    @property
    def tcp(self) -> bool:
        return self.proto == "tcp"


class Upstreams:
    """Resolvers names outside the cluster go to, tried in order; each query on a fresh socket."""

    def __init__(self, addresses: list[tuple[str, int]]) -> None:
        self.addresses = addresses

    def __bool__(self) -> bool:
        return bool(self.addresses)

    async def ask(self, data: bytes, *, tcp: bool) -> bytes | None:
        for host, port in self.addresses:
            with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError):
                reply = await asyncio.wait_for(self._udp(host, port, data), UPSTREAM_TIMEOUT)
                if tcp and len(reply) > 2 and reply[2] & 0x02:  # truncated, and this client can take it whole
                    reply = await asyncio.wait_for(self._tcp(host, port, data), UPSTREAM_TIMEOUT)
                return reply
        return None

    @staticmethod
    async def _udp(host: str, port: int, data: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[bytes] = loop.create_future()

        class Protocol(asyncio.DatagramProtocol):
            def datagram_received(self, payload: bytes, addr: tuple[str, int]) -> None:
                if payload[:2] == data[:2] and not reply.done():
                    reply.set_result(payload)

            def error_received(self, exc: Exception) -> None:
                if not reply.done():
                    reply.set_exception(exc)

        transport, _ = await loop.create_datagram_endpoint(Protocol, remote_addr=(host, port))
        try:
            transport.sendto(data)
            return await reply
        finally:
            transport.close()

    @staticmethod
    async def _tcp(host: str, port: int, data: bytes) -> bytes:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(len(data).to_bytes(2, "big") + data)
            size = int.from_bytes(await reader.readexactly(2), "big")
            return await reader.readexactly(size)
        finally:
            writer.close()


class DnsServer:
    def __init__(
        self,
        answerer: Answerer,
        upstreams: Upstreams,
        metrics: DnsMetrics,
        cache: ResponseCache,
        limiter: SourceLimiter | None = None,
    ) -> None:
        self.answerer = answerer
        self.upstreams = upstreams
        self.metrics = metrics
        self.cache = cache
        self.limiter = limiter or SourceLimiter()
        self._tcp_clients: defaultdict[str, int] = defaultdict(int)  # open connections per source address
        self._tcp_open = 0
        self.synced = False  # until the caches are synced, a name error is SERVFAIL (the name may yet exist)
        self._udp: list[socket.socket] = []
        self._tcp: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.address: tuple[str, int] = ("", 0)

    # Life cycle

    async def start(self, host: str, port: int) -> None:
        """Listen on UDP and TCP `host:port`; port 0 picks one free for both (retrying when the UDP port the
        kernel chose is taken for TCP)."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        for attempt in range(PORT_ATTEMPTS):
            udp, tcp = socket.socket(family, socket.SOCK_DGRAM), socket.socket(family, socket.SOCK_STREAM)
            try:
                udp.bind((host, port))
                bound = udp.getsockname()[1]
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((host, bound))
                break
            except OSError:
                udp.close()
                tcp.close()
                if port != 0 or attempt == PORT_ATTEMPTS - 1:
                    raise
        await self.listen(udp, tcp)
        self.address = (host, bound)

    async def listen(self, udp: socket.socket, tcp: socket.socket) -> None:
        """Serve on bound sockets too (e.g. ones made inside a network namespace, where pods can reach them)."""
        udp.setblocking(False)
        udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        udp.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        family = "2" if udp.family == socket.AF_INET6 else "1"
        tcp.setblocking(False)
        tcp.listen(128)
        self._tcp.append(await asyncio.start_server(self._serve_tcp, sock=tcp))
        self._udp.append(udp)
        asyncio.get_running_loop().add_reader(udp.fileno(), self._on_udp, udp, family)

    async def stop(self) -> None:
        loop = asyncio.get_running_loop()
        for udp in self._udp:
            loop.remove_reader(udp.fileno())
            udp.close()
        for tcp in self._tcp:
            tcp.close()
        self._udp, self._tcp = [], []
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # UDP

    def _on_udp(self, sock: socket.socket, family: str) -> None:
        """Answer every queued datagram (up to a batch). Cache hits are counted per batch, each at the batch's
        mean time per hit: timing each one would cost a good part of what answering it does."""
        recv, send, lookup, clock = sock.recvfrom, sock.sendto, self.cache.get, time.perf_counter
        blocked = self.limiter.blocked
        hits: defaultdict[tuple[str, str], int] = defaultdict(int)
        batch_started = clock()
        miss_time = 0.0
        for _ in range(UDP_BATCH):
            try:
                data, peer = recv(MAX_UDP)
            except OSError:
                break  # nothing queued (BlockingIOError), or an ICMP error reported for an earlier reply
            if len(data) <= MAX_CACHED_QUERY:
                hit = lookup(data[2:])
                if hit is not None:
                    hits[hit.labels] += 1
                    with contextlib.suppress(OSError):  # send buffer full: dropped like any UDP packet
                        send(data[:2] + hit.payload, peer)
                    continue
            started = clock()
            if blocked(peer[0]):  # this source sent too much garbage lately: dropped unparsed
                self.metrics.malformed["dropped"] += 1
                miss_time += clock() - started
                continue
            self.metrics.cache_misses += 1
            with contextlib.suppress(OSError):
                reply = self._respond(data, Via("udp", family), started, self._sender(sock, peer), peer[0])
                if reply is not None:
                    send(reply, peer)
            miss_time += clock() - started
        if hits:
            mean = (clock() - batch_started - miss_time) / sum(hits.values())
            self.metrics.observe_hits("udp", family, hits, mean)

    def _sender(self, sock: socket.socket, peer: tuple[str, int]) -> Callable[[bytes], None]:
        """Replies that come later (forwarded questions) go out through this."""

        def send(response: bytes) -> None:
            if response and sock.fileno() != -1:
                with contextlib.suppress(OSError):
                    sock.sendto(response, peer)

        return send

    # TCP

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("",)
        source = str(peer[0])
        via = Via("tcp", "2" if ":" in source else "1")
        clients = self._tcp_clients
        if (
            clients.get(source, 0) >= MAX_TCP_PER_SOURCE
            or self._tcp_open >= MAX_TCP_CLIENTS
            or self.limiter.blocked(source)
        ):
            self.metrics.malformed["refused"] += 1
            writer.transport.abort()
            return
        clients[source] += 1
        self._tcp_open += 1
        try:
            timeout = TCP_READ_TIMEOUT
            while True:
                async with asyncio.timeout(timeout):
                    size = int.from_bytes(await reader.readexactly(2), "big")
                    data = await reader.readexactly(size)
                timeout = TCP_IDLE_TIMEOUT
                if self.limiter.blocked(source):
                    self.metrics.malformed["dropped"] += 1
                    return
                later: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
                reply = self._respond(data, via, time.perf_counter(), later.set_result, source)
                if reply is None:
                    reply = await later
                if not reply:
                    return  # nothing to answer (not a query, or over the limit): the stream is out of step, hang up
                writer.write(len(reply).to_bytes(2, "big") + reply)
                async with asyncio.timeout(TCP_WRITE_TIMEOUT):
                    await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass
        finally:
            self._tcp_open -= 1
            clients[source] -= 1
            if not clients[source]:
                del clients[source]
            if writer.transport.get_write_buffer_size():
                writer.transport.abort()  # a client that does not read: nothing more to wait for
            else:
                writer.close()

    # Building responses

    def _respond(
        self, data: bytes, via: Via, started: float, reply: Callable[[bytes], object], source: str
    ) -> bytes | None:
        """The response to `data` if it can be given now; otherwise None, and `reply(bytes)` is called later (a
        forwarded question). A packet that gets no answer at all returns None and never calls `reply`, except
        over TCP, where `reply(b"")` ends the stream."""
        try:
            query = wire.parse_query(data)
        except Exception as err:  # Unanswerable or Malformed; anything else would be a bug in the parser
            response = self._malformed(data, via, started, source, err)
            if response is None and via.tcp:
                reply(b"")
            return response
        try:
            answer = self._answer(query)
            if answer is None or answer.chase:  # an upstream to ask: outside our zones, or an ExternalName target
                if len(self._tasks) >= MAX_PENDING:
                    answer = wire.answer_with(RCODE.SERVFAIL)
                elif answer is None:
                    self._spawn(self._forward(data, query, via, started, reply))
                    return None
                else:
                    self._spawn(self._chase(query, answer, via, started, reply))
                    return None
            response = self._encode(query, answer, via, started)
        except Exception:
            log.exception("dns: answering %s %s failed", query.qname, query.type_name)
            self.metrics.panics += 1
            return wire.header_only(query.id, query.flags, RCODE.SERVFAIL)
        if not via.tcp and answer.groups and self.synced and len(data) <= MAX_CACHED_QUERY:
            labels = (query.type_name, _rcode_name(answer.rcode))
            self.cache.put(data[2:], Cached(response[2:], labels), answer.groups)
        return response

    def _malformed(self, data: bytes, via: Via, started: float, source: str, err: Exception) -> bytes | None:
        """What a packet that cannot be answered normally gets: FORMERR or NOTIMP when its header is readable (as
        CoreDNS), nothing otherwise; and nothing at all once its source is over the limit."""
        if not self.limiter.charge(source):
            self.metrics.malformed["dropped"] += 1
            return None
        log.debug("dns: unreadable %s packet of %d bytes from %s: %r", via.proto, len(data), source, err)
        if isinstance(err, wire.Malformed):
            response = err.response
        elif not isinstance(err, wire.Unanswerable) and len(data) >= wire.HEADER_SIZE and not data[2] & 0x80:
            message_id, flags = wire.HEADER.unpack_from(data)[:2]
            response = wire.header_only(message_id, flags, RCODE.FORMERR)
        else:
            self.metrics.malformed["ignored"] += 1
            return None
        self.metrics.malformed["answered"] += 1
        self.metrics.observe(*via, "other", _rcode_name(response[3] & 0xF), time.perf_counter() - started)
        return response

    def _answer(self, query: wire.Query) -> Answer | None:
        if query.edns_version > 0:
            return wire.answer_with(wire.BADVERS)
        if query.qclass != CLASS_IN:
            return wire.answer_with(RCODE.REFUSED)
        answer = self.answerer.answer(query.qname, query.qtype)
        if answer is None:
            return None if self.upstreams else wire.answer_with(RCODE.REFUSED)
        if answer.rcode == RCODE.NXDOMAIN and not self.synced:
            return wire.answer_with(RCODE.SERVFAIL)
        return answer

    def _encode(self, query: wire.Query, answer: Answer, via: Via, started: float) -> bytes:
        response, _ = wire.encode(query, answer, limit=None if via.tcp else query.udp_size)
        self.metrics.observe(*via, query.type_name, _rcode_name(answer.rcode), time.perf_counter() - started)
        return response

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forward(
        self, data: bytes, query: wire.Query, via: Via, started: float, reply: Callable[[bytes], object]
    ) -> None:
        upstream = await self.upstreams.ask(data, tcp=via.tcp)
        if upstream is None:
            reply(self._encode(query, wire.answer_with(RCODE.SERVFAIL), via, started))
            return
        rcode = upstream[3] & 0xF if len(upstream) > 3 else RCODE.SERVFAIL
        self.metrics.observe(*via, query.type_name, _rcode_name(rcode), time.perf_counter() - started)
        reply(upstream)

    async def _chase(
        self, query: wire.Query, answer: Answer, via: Via, started: float, reply: Callable[[bytes], object]
    ) -> None:
        """An ExternalName pointing out of the cluster: its CNAME, and the target's records from upstream."""
        upstream = (
            await self.upstreams.ask(wire.question(answer.chase, query.qtype), tcp=True) if self.upstreams else None
        )
        if upstream is None or not wire.append_records(answer, upstream):
            answer.answer.clear()  # as CoreDNS: no target records, no CNAME either
            answer.authority.append(self.answerer.soa(self.answerer.zones.domain))
        answer.chase = ""
        reply(self._encode(query, answer, via, started))
