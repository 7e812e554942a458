"""The DNS server's sockets: UDP and TCP on one address, names outside the zones forwarded upstream.

UDP is read straight off a non-blocking socket from the event loop's reader callback, draining every queued
datagram per wake-up: a repeated question is answered from `ResponseCache` with one lookup and one `sendto`, which
is what lets one Python process keep up with dnsperf. Everything else (a first question, TCP, forwarding) takes the
slower path through dnslib.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine
from typing import Any

from dnslib import RCODE

from tinykube.dns import wire
from tinykube.dns.answers import Answer, Answerer
from tinykube.dns.cache import Cached, ResponseCache
from tinykube.dns.metrics import DnsMetrics

log = logging.getLogger(__name__)

CLASS_IN = 1
UDP_BATCH = 256  # datagrams read per wake-up before other tasks get a turn
UPSTREAM_TIMEOUT = 2.0
TCP_IDLE_TIMEOUT = 10.0
MAX_UDP = 65535
PORT_ATTEMPTS = 20
MAX_PENDING = 1000  # questions waiting on upstreams; past it, SERVFAIL rather than unbounded tasks


def _rcode_name(rcode: int) -> str:
    return "BADVERS" if rcode == wire.BADVERS else str(RCODE.get(rcode, str(rcode)))


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
    def __init__(self, answerer: Answerer, upstreams: Upstreams, metrics: DnsMetrics, cache: ResponseCache) -> None:
        self.answerer = answerer
        self.upstreams = upstreams
        self.metrics = metrics
        self.cache = cache
        self.synced = False  # until the caches are synced, a name error is SERVFAIL (the name may yet exist)
        self._udp: socket.socket | None = None
        self._tcp: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.address: tuple[str, int] = ("", 0)

    # Life cycle

    async def start(self, host: str, port: int) -> None:
        """Listen on UDP and TCP `host:port`; port 0 picks one free for both (retrying when the UDP port the
        kernel chose is taken for TCP)."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._family = "2" if family == socket.AF_INET6 else "1"
        for attempt in range(PORT_ATTEMPTS):
            udp = socket.socket(family, socket.SOCK_DGRAM)
            try:
                udp.bind((host, port))
                bound = udp.getsockname()[1]
                self._tcp = await asyncio.start_server(self._serve_tcp, host, bound, reuse_address=True)
                break
            except OSError:
                udp.close()
                if port != 0 or attempt == PORT_ATTEMPTS - 1:
                    raise
        udp.setblocking(False)
        udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        udp.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self._udp = udp
        self.address = (host, bound)
        asyncio.get_running_loop().add_reader(udp.fileno(), self._on_udp)

    async def stop(self) -> None:
        if self._udp is not None:
            asyncio.get_running_loop().remove_reader(self._udp.fileno())
            self._udp.close()
            self._udp = None
        if self._tcp is not None:
            self._tcp.close()
            self._tcp = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # UDP

    def _on_udp(self) -> None:
        """Answer every queued datagram (up to a batch). Cache hits are counted per batch, each at the batch's
        mean time per hit: timing each one would cost a good part of what answering it does."""
        sock = self._udp
        assert sock is not None
        recv, send, lookup, clock = sock.recvfrom, sock.sendto, self.cache.get, time.perf_counter
        hits: defaultdict[tuple[str, str], int] = defaultdict(int)
        batch_started = clock()
        miss_time = 0.0
        for _ in range(UDP_BATCH):
            try:
                data, peer = recv(MAX_UDP)
            except OSError:
                break  # nothing queued (BlockingIOError), or an ICMP error reported for an earlier reply
            hit = lookup(data[2:])
            if hit is not None:
                hits[hit.labels] += 1
                with contextlib.suppress(OSError):  # send buffer full: dropped like any UDP packet; the client retries
                    send(data[:2] + hit.payload, peer)
                continue
            started = clock()
            self.metrics.cache_misses += 1
            with contextlib.suppress(OSError):
                reply = self._respond(data, tcp=False, started=started, reply=self._sender(peer))
                if reply is not None:
                    send(reply, peer)
            miss_time += clock() - started
        if hits:
            mean = (clock() - batch_started - miss_time) / sum(hits.values())
            self.metrics.observe_hits("udp", self._family, hits, mean)

    def _sender(self, peer: tuple[str, int]) -> Callable[[bytes], None]:
        """Replies that come later (forwarded questions) go out through this."""

        def send(response: bytes) -> None:
            if self._udp is not None and response:
                with contextlib.suppress(OSError):
                    self._udp.sendto(response, peer)

        return send

    # TCP

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(2), TCP_IDLE_TIMEOUT), "big")
                data = await asyncio.wait_for(reader.readexactly(size), TCP_IDLE_TIMEOUT)
                later: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
                reply = self._respond(data, tcp=True, started=time.perf_counter(), reply=later.set_result)
                if reply is None:
                    reply = await later
                if not reply:
                    return  # nothing to answer (not a query): the stream is out of step, hang up
                writer.write(len(reply).to_bytes(2, "big") + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    # Building responses

    def _respond(self, data: bytes, *, tcp: bool, started: float, reply: Callable[[bytes], object]) -> bytes | None:
        """The response to `data` if it can be given now; otherwise None, and `reply(bytes)` is called later (a
        forwarded question). A packet that gets no answer at all returns None and never calls `reply`, except
        over TCP, where `reply(b"")` ends the stream."""
        proto = "tcp" if tcp else "udp"
        try:
            query = wire.parse_query(data)
        except wire.Unanswerable:
            if tcp:
                reply(b"")
            return None
        except wire.Malformed as err:
            self.metrics.observe(proto, self._family, "other", "FORMERR", time.perf_counter() - started)
            return err.response
        try:
            answer = self._answer(query)
            if answer is None or answer.chase:  # an upstream to ask: outside our zones, or an ExternalName target
                if len(self._tasks) >= MAX_PENDING:
                    answer = wire.answer_with(RCODE.SERVFAIL)
                elif answer is None:
                    self._spawn(self._forward(data, query, tcp, started, reply))
                    return None
                else:
                    self._spawn(self._chase(query, answer, tcp, started, reply))
                    return None
            response = self._encode(query, answer, tcp=tcp, started=started)
        except Exception:
            log.exception("dns: answering %s %s failed", query.qname, query.type_name)
            self.metrics.panics += 1
            return wire.header_only(query.id, query.flags, RCODE.SERVFAIL)
        if not tcp and answer.groups and self.synced:
            labels = (query.type_name, _rcode_name(answer.rcode))
            self.cache.put(data[2:], Cached(response[2:], labels), answer.groups)
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

    def _encode(self, query: wire.Query, answer: Answer, *, tcp: bool, started: float) -> bytes:
        limit = None if tcp else query.udp_size
        response, _ = wire.encode(query, answer, limit=limit)
        proto = "tcp" if tcp else "udp"
        self.metrics.observe(
            proto, self._family, query.type_name, _rcode_name(answer.rcode), time.perf_counter() - started
        )
        return response

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forward(
        self, data: bytes, query: wire.Query, tcp: bool, started: float, reply: Callable[[bytes], object]
    ) -> None:
        upstream = await self.upstreams.ask(data, tcp=tcp)
        if upstream is None:
            reply(self._encode(query, wire.answer_with(RCODE.SERVFAIL), tcp=tcp, started=started))
            return
        rcode = upstream[3] & 0xF if len(upstream) > 3 else RCODE.SERVFAIL
        self.metrics.observe(
            "tcp" if tcp else "udp", self._family, query.type_name, _rcode_name(rcode), time.perf_counter() - started
        )
        reply(upstream)

    async def _chase(
        self, query: wire.Query, answer: Answer, tcp: bool, started: float, reply: Callable[[bytes], object]
    ) -> None:
        """An ExternalName pointing out of the cluster: its CNAME, and the target's records from upstream."""
        upstream = (
            await self.upstreams.ask(wire.question(answer.chase, query.qtype), tcp=True) if self.upstreams else None
        )
        if upstream is None or not wire.append_records(answer, upstream):
            answer.answer.clear()  # as CoreDNS: no target records, no CNAME either
            answer.authority.append(self.answerer.soa(self.answerer.zones.domain))
        answer.chase = ""
        reply(self._encode(query, answer, tcp=tcp, started=started))
