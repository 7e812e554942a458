"""The userspace proxier: its balancer as pure logic, then real listeners and real connections on loopback (no root),
with backends that answer their own name; and (root only) its nftables rules carrying a pod's ClusterIP traffic to
the proxy port inside a throwaway node namespace.

Nothing here creates a socket towards a non-loopback address from the root namespace: where a test checks that such
an endpoint is never dialled, the dial is recorded before the proxier's own guard would refuse it."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import re
import socket
import struct
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import eventually
from tinykube.proxy import userspace
from tinykube.proxy.model import Endpoint, NodeConfig, ServicePort
from tinykube.proxy.modes import Bind
from tinykube.proxy.userspace import (
    RoundRobin,
    UserspaceProxier,
    dialable,
    portal_elements,
    render_changes,
    render_rules,
)
from tinykube.sandbox import netns

CONFIG = NodeConfig(node_name="", node_ips=["127.0.0.1"], cluster_cidr="10.244.0.0/16", service_cidrs=["10.96.0.0/16"])
A, B, C = ("127.0.0.1", 8001), ("127.0.0.1", 8002), ("127.0.0.1", 8003)


def loopback_bind(_host: str, port: int) -> socket.socket:
    """As `tinykube up` binds for the simulated dataplane: loopback whatever host is asked."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def ep(ip: str, port: int, *, ready: bool = True) -> Endpoint:
    return Endpoint(ip=ip, port=port, node="", ready=ready, serving=ready, terminating=False)


def svc(name: str, *endpoints: Endpoint, **changes: Any) -> ServicePort:
    port = ServicePort(
        namespace="ns1",
        name=name,
        port_name="http",
        protocol="tcp",
        port=80,
        cluster_ips=("10.96.0.10",),
        endpoints=endpoints,
    )
    return dataclasses.replace(port, **changes)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ask(port: int, message: str = "hello") -> str:
    """One TCP exchange through the proxy: the whole answer, or "" when the proxy closes (EOF or reset)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(f"{message}\n".encode())
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        except ConnectionResetError:  # closed by the proxy before it read our line
            return ""
    return answer.decode()


def ask_udp(port: int, message: str = "hello") -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(message.encode(), ("127.0.0.1", port))
        return sock.recv(4096).decode()


class Backends:
    """Servers on 127.0.0.1 that answer `<name> <what they were sent>`, on an event loop of their own thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.accepted: Counter[str] = Counter()
        self.closers: list[Any] = []

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def tcp(self, name: str) -> Endpoint:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.accepted[name] += 1
            line = await reader.readline()
            writer.write(f"{name} {line.decode()}".encode())
            await writer.drain()
            writer.close()

        async def start() -> asyncio.Server:
            return await asyncio.start_server(answer, "127.0.0.1", 0)

        server = self._run(start())
        self.closers.append(server.close)
        return ep("127.0.0.1", server.sockets[0].getsockname()[1])

    def tcp_held(self, name: str) -> tuple[Endpoint, Any]:
        """A server that reads each connection to its end, then holds it open until `release()`: the proxy's
        splice waits on it meanwhile. Returns the endpoint and `release`."""
        released = asyncio.Event()

        async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.accepted[name] += 1
            await reader.read()  # up to the EOF the proxy passes on
            self.accepted[f"{name} eof"] += 1
            await released.wait()
            writer.close()

        async def start() -> asyncio.Server:
            return await asyncio.start_server(hold, "127.0.0.1", 0)

        server = self._run(start())
        self.closers.append(server.close)
        return ep("127.0.0.1", server.sockets[0].getsockname()[1]), lambda: self.loop.call_soon_threadsafe(released.set)

    def udp(self, name: str) -> Endpoint:
        class Answer(asyncio.DatagramProtocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.transport = transport

            def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
                self.transport.sendto(f"{name} {data.decode()}".encode(), addr)  # type: ignore[attr-defined]

        async def start() -> asyncio.DatagramTransport:
            transport, _ = await self.loop.create_datagram_endpoint(Answer, local_addr=("127.0.0.1", 0))
            return transport

        transport = self._run(start())
        self.closers.append(transport.close)
        return ep("127.0.0.1", transport.get_extra_info("sockname")[1], ready=True)

    def close(self) -> None:
        for close in self.closers:
            self.loop.call_soon_threadsafe(close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def backends() -> Iterator[Backends]:
    made = Backends()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def proxier() -> Iterator[UserspaceProxier]:
    made = UserspaceProxier(CONFIG, None, loopback_bind)
    try:
        yield made
    finally:
        made.cleanup()


@pytest.fixture
def dials(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every backend address the proxier sets out to dial over TCP, recorded before its own loopback guard."""
    seen: list[tuple[str, int]] = []
    original = UserspaceProxier._dial

    async def recording(self: UserspaceProxier, ip: str, port: int) -> Any:
        seen.append((ip, port))
        return await original(self, ip, port)

    monkeypatch.setattr(UserspaceProxier, "_dial", recording)
    return seen


# ---------------------------------------------------------------------------------------------------------------
# The balancer (pure)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_round_robin_takes_endpoints_in_turn() -> None:
    balancer = RoundRobin()
    balancer.update([A, B, C], 0)
    picks = [balancer.next("10.244.0.5") for _ in range(6)]
    assert picks[:3] == list(balancer.endpoints) and picks[3:] == picks[:3]
    assert set(picks) == {A, B, C}


def test_round_robin_without_endpoints_gives_none() -> None:
    balancer = RoundRobin()
    assert balancer.next("10.244.0.5") is None
    balancer.update([A], 0)
    balancer.update([], 0)
    assert balancer.next("10.244.0.5") is None


def test_client_ip_affinity_holds_until_the_timeout() -> None:
    clock = Clock()
    balancer = RoundRobin(clock)
    balancer.update([A, B], 60)
    first = balancer.next("10.244.0.5")
    other = balancer.next("10.244.0.6")  # another client takes the next endpoint
    assert other != first
    clock.now += 59
    assert [balancer.next("10.244.0.5") for _ in range(3)] == [first] * 3  # each use renews the timeout
    assert balancer.next("10.244.0.7") == first  # the rotation goes on meanwhile: next comes `other`
    clock.now += 60
    assert balancer.next("10.244.0.5") == other  # expired: round-robin again


def test_a_failed_endpoint_resets_affinity() -> None:
    balancer = RoundRobin(Clock())
    balancer.update([A, B], 60)
    first = balancer.next("10.244.0.5")
    second = balancer.next("10.244.0.5", reset=True)
    assert second != first
    assert balancer.next("10.244.0.5") == second  # the client now sticks to the one that worked


def test_an_unchanged_set_keeps_rotation_and_affinity_a_removed_endpoint_drops_it() -> None:
    balancer = RoundRobin(Clock())
    balancer.update([A, B, C], 60)
    sticky = balancer.next("10.244.0.5")
    order = balancer.endpoints
    balancer.update([C, B, A], 60)  # the same endpoints in another order
    assert balancer.endpoints == order and balancer.next("10.244.0.5") == sticky
    balancer.update([e for e in (A, B, C) if e != sticky], 60)
    assert balancer.next("10.244.0.5") != sticky


@pytest.mark.parametrize(
    ("netns_name", "ip", "expected"),
    [
        pytest.param(None, "127.0.0.1", True, id="root-loopback"),
        pytest.param(None, "127.3.2.1", True, id="root-loopback-range"),
        pytest.param(None, "10.244.0.5", False, id="root-pod-ip"),
        pytest.param(None, "192.168.1.20", False, id="root-lan"),
        pytest.param("tk-c.node-1", "10.244.0.5", True, id="node-namespace"),
    ],
)
def test_only_loopback_is_dialable_from_the_root_namespace(netns_name: str | None, ip: str, expected: bool) -> None:
    assert dialable(netns_name, ip) is expected


def test_rules_send_virtual_ips_to_the_proxy_port_through_one_map() -> None:
    port = svc("web", cluster_ips=("10.96.0.10",), external_ips=("192.0.2.7",), load_balancer_ips=("172.20.255.1",))
    dns = svc("dns", cluster_ips=("10.96.0.53",), protocol="udp", port=53, port_name="dns")
    assert portal_elements(port) == [("10.96.0.10", "tcp", 80), ("192.0.2.7", "tcp", 80), ("172.20.255.1", "tcp", 80)]
    portals = {e: (41000, "ns1/web:http") for e in portal_elements(port)} | {("10.96.0.53", "udp", 53): (41001, "d")}
    lines = render_rules("172.20.0.2", portals).splitlines()
    assert lines[:3] == [
        "add table ip tinykube-userspace",
        "delete table ip tinykube-userspace",
        'add table ip tinykube-userspace { comment "rules for the tinykube userspace proxy" ; }',
    ]
    assert "add chain ip tinykube-userspace prerouting { type nat hook prerouting priority -100 ; }" in lines
    assert "add chain ip tinykube-userspace output { type nat hook output priority -100 ; }" in lines
    rules = [line for line in lines if line.startswith("add rule ip tinykube-userspace")]
    assert rules == [
        "add rule ip tinykube-userspace prerouting jump portals",
        "add rule ip tinykube-userspace output jump portals",
        "add rule ip tinykube-userspace portals dnat ip to ip daddr . meta l4proto . th dport map @portals",
    ]  # one lookup whatever the number of Services
    elements = [line for line in lines if line.startswith("add element")]
    assert elements == [
        "add element ip tinykube-userspace portals { "
        '10.96.0.10 . tcp . 80 comment "ns1/web:http" : 172.20.0.2 . 41000, '
        '10.96.0.53 . udp . 53 comment "d" : 172.20.0.2 . 41001, '
        '172.20.255.1 . tcp . 80 comment "ns1/web:http" : 172.20.0.2 . 41000, '
        '192.0.2.7 . tcp . 80 comment "ns1/web:http" : 172.20.0.2 . 41000 }'
    ]
    assert dns.protocol == "udp"


def test_a_large_table_is_written_in_lines_of_bounded_length() -> None:
    portals = {(f"10.96.{i // 250}.{i % 250 + 1}", "tcp", 80): (40000 + i, f"ns/s{i}:") for i in range(2500)}
    lines = [line for line in render_rules("10.244.0.1", portals).splitlines() if line.startswith("add element")]
    assert len(lines) == 3 and sum(line.count(" : ") for line in lines) == 2500


def test_changes_delete_then_add_elements() -> None:
    script = render_changes("10.244.0.1", [("10.96.0.11", "tcp", 80)], {("10.96.0.11", "tcp", 80): (41002, "ns1/b:")})
    assert script == (
        "delete element ip tinykube-userspace portals { 10.96.0.11 . tcp . 80 }\n"
        'add element ip tinykube-userspace portals { 10.96.0.11 . tcp . 80 comment "ns1/b:" : 10.244.0.1 . 41002 }\n'
    )
    assert render_changes("10.244.0.1", [], {}) == ""


# ---------------------------------------------------------------------------------------------------------------
# Real connections on loopback


def test_connections_go_round_robin(proxier: UserspaceProxier, backends: Backends) -> None:
    proxier.sync([svc("web", backends.tcp("b1"), backends.tcp("b2"))], full=True)
    port = proxier.proxy_port("ns1", "web", "http")
    assert port is not None
    answers = [ask(port, f"n{i}") for i in range(4)]
    assert all(answer.endswith(f" n{i}\n") for i, answer in enumerate(answers))  # both ways through the proxy
    names = [answer.split()[0] for answer in answers]
    assert {names[0], names[1]} == {"b1", "b2"} and names[2:] == names[:2]  # in turn
    assert proxier.syncs == 1 and proxier.failures == 0


def test_a_backend_that_is_down_is_retried_on_the_next(
    proxier: UserspaceProxier, backends: Backends, dials: list[tuple[str, int]]
) -> None:
    with socket.socket() as closed:  # bound but not listening: connecting to it is refused
        closed.bind(("127.0.0.1", 0))
        down = ep("127.0.0.1", closed.getsockname()[1])
        proxier.sync([svc("web", down, backends.tcp("up"))])
        port = proxier.proxy_port("ns1", "web", "http")
        assert port is not None
        assert [ask(port) for _ in range(4)] == ["up hello\n"] * 4
    assert (down.ip, down.port) in dials  # the dead one was tried, and the client never noticed


def test_when_no_backend_answers_the_client_is_closed(proxier: UserspaceProxier, dials: list[tuple[str, int]]) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        proxier.sync([svc("web", ep("127.0.0.1", closed.getsockname()[1]))])
        port = proxier.proxy_port("ns1", "web", "http")
        assert port is not None
        assert ask(port) == ""
    assert len(dials) == len(userspace.DIAL_TIMEOUTS)  # one try per dial timeout, then give up


def test_a_service_without_endpoints_is_refused(proxier: UserspaceProxier, dials: list[tuple[str, int]]) -> None:
    proxier.sync([svc("empty"), svc("unready", ep("127.0.0.1", 9, ready=False))])
    for name in ("empty", "unready"):
        port = proxier.proxy_port("ns1", name, "http")
        assert port is not None and ask(port) == ""
    assert dials == []


def test_client_ip_affinity_keeps_a_client_on_one_backend(proxier: UserspaceProxier, backends: Backends) -> None:
    proxier.sync([svc("sticky", backends.tcp("b1"), backends.tcp("b2"), affinity_timeout=10800)])
    port = proxier.proxy_port("ns1", "sticky", "http")
    assert port is not None
    answers = {ask(port) for _ in range(5)}
    assert len(answers) == 1 and answers <= {"b1 hello\n", "b2 hello\n"}


def test_listeners_follow_the_service_ports(proxier: UserspaceProxier, backends: Backends) -> None:
    a, b = svc("a", backends.tcp("a")), svc("b", backends.tcp("b"))
    proxier.sync([a, b])
    port_a, port_b = proxier.proxy_port("ns1", "a", "http"), proxier.proxy_port("ns1", "b", "http")
    assert port_a and port_b and port_a != port_b
    assert ask(port_b) == "b hello\n"
    proxier.sync([a])
    assert proxier.proxy_port("ns1", "b", "http") is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port_b), timeout=5).close()
    assert proxier.proxy_port("ns1", "a", "http") == port_a and ask(port_a) == "a hello\n"
    proxier.sync([a, b])
    assert ask(proxier.proxy_port("ns1", "b", "http") or 0) == "b hello\n"


def test_endpoint_changes_only_update_the_balancer(proxier: UserspaceProxier, backends: Backends) -> None:
    node_port = free_port()
    proxier.sync([svc("web", backends.tcp("old"), node_port=node_port)])
    port = proxier.proxy_port("ns1", "web", "http")
    assert port is not None and ask(node_port) == "old hello\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as held:  # open across the change
        eventually(lambda: backends.accepted["old"] == 2, what="the held connection at its backend")
        proxier.sync([svc("web", backends.tcp("new"), node_port=node_port)])
        assert proxier.proxy_port("ns1", "web", "http") == port  # the same listener, not a new one
        assert ask(port) == "new hello\n" and ask(node_port) == "new hello\n"
        held.sendall(b"still here\n")
        assert held.recv(4096) == b"old still here\n"  # a connection in flight keeps its backend


def test_a_sync_touches_only_the_ports_that_changed(
    proxier: UserspaceProxier, backends: Backends, monkeypatch: pytest.MonkeyPatch
) -> None:
    updated: list[RoundRobin] = []
    original = RoundRobin.update

    def recording(self: RoundRobin, endpoints: Any, affinity_timeout: int) -> None:
        updated.append(self)
        original(self, endpoints, affinity_timeout)

    monkeypatch.setattr(RoundRobin, "update", recording)
    ports = [svc(name, backends.tcp(name), cluster_ips=(f"10.96.0.{i}",)) for i, name in enumerate("abc", 10)]
    proxier.sync(ports)
    assert len(updated) == 3
    listening = [proxier.proxy_port("ns1", name, "http") for name in "abc"]
    balancers = {name: proxier._ports[p.key].balancer for name, p in zip("abc", ports, strict=True)}
    updated.clear()
    proxier.sync(ports)  # the very same objects
    proxier.sync([ports[0], dataclasses.replace(ports[1]), ports[2]])  # an equal copy
    assert updated == []
    assert proxier._ports[ports[1].key].spec is not ports[1]  # the copy is kept: the next sync finds it by identity
    proxier.sync([ports[0], svc("b", backends.tcp("b2"), cluster_ips=("10.96.0.11",)), ports[2]])
    assert updated == [balancers["b"]]  # the changed one alone
    assert [proxier.proxy_port("ns1", name, "http") for name in "abc"] == listening  # no listener reopened
    assert ask(listening[1] or 0) == "b2 hello\n" and ask(listening[0] or 0) == "a hello\n"
    updated.clear()
    proxier.sync(ports[:2], full=False)  # c removed, the others untouched
    assert updated == [balancers["b"]] and proxier.proxy_port("ns1", "c", "http") is None


def test_sockets_are_made_on_the_proxiers_thread_only(proxier: UserspaceProxier) -> None:
    with pytest.raises(RuntimeError, match="own thread"):
        proxier._socket(socket.SOCK_STREAM)


def test_a_node_port_is_served_on_loopback(proxier: UserspaceProxier, backends: Backends) -> None:
    node_port = free_port()
    proxier.sync([svc("web", backends.tcp("b1"), node_port=node_port)])
    assert ask(node_port) == "b1 hello\n"
    proxier.sync([svc("web", backends.tcp("b1"))])  # no longer a NodePort Service
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", node_port), timeout=5).close()


def test_a_port_in_use_is_logged_and_retried_at_a_full_sync(
    proxier: UserspaceProxier, backends: Backends, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    with blocker, caplog.at_level(logging.WARNING, logger=userspace.__name__):
        proxier.sync([svc("web", backends.tcp("web"), node_port=taken), svc("other", backends.tcp("other"))])
        assert f"cannot listen on 127.0.0.1:{taken} for ns1/web/tcp/http" in caplog.text
        assert ask(proxier.proxy_port("ns1", "web", "http") or 0) == "web hello\n"  # the rest is served
        assert ask(proxier.proxy_port("ns1", "other", "http") or 0) == "other hello\n"
    proxier.sync([svc("web", backends.tcp("web"), node_port=taken), svc("other", backends.tcp("other"))], full=True)
    assert ask(taken) == "web hello\n"


def test_non_loopback_endpoints_are_never_dialled(
    proxier: UserspaceProxier, backends: Backends, dials: list[tuple[str, int]], caplog: pytest.LogCaptureFixture
) -> None:
    pods = [ep("10.244.1.5", 8080), ep("192.168.1.20", 8080)]  # simulated pod IPs; an address on the user's LAN
    with caplog.at_level(logging.WARNING, logger=userspace.__name__):
        proxier.sync([svc("remote", *pods), svc("mixed", pods[0], backends.tcp("local"))])
        proxier.sync([svc("remote", *pods), svc("mixed", pods[0], backends.tcp("local"))], full=True)
    remote, mixed = proxier.proxy_port("ns1", "remote", "http"), proxier.proxy_port("ns1", "mixed", "http")
    assert remote and mixed
    assert ask(remote) == ""  # refused: nothing it could reach
    assert [ask(mixed) for _ in range(4)] == ["local hello\n"] * 4
    assert dials and all(ip == "127.0.0.1" for ip, _ in dials)
    skipped = [r.getMessage() for r in caplog.records if "never dialled" in r.getMessage()]
    assert len(skipped) == 2  # once per service port, not once per sync
    assert "10.244.1.5, 192.168.1.20" in skipped[0] or "10.244.1.5, 192.168.1.20" in skipped[1]


def test_the_dial_guard_refuses_non_loopback(proxier: UserspaceProxier, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence, below the balancer: a non-loopback address never gets a socket."""
    opened: list[Any] = []

    async def no_connection(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(asyncio, "open_connection", no_connection)
    monkeypatch.setattr(proxier, "_socket", no_connection)
    with pytest.raises(OSError, match=r"refusing to dial 10\.244\.0\.5"):
        proxier._call(proxier._dial("10.244.0.5", 80))
    with pytest.raises(OSError, match=r"refusing to send to 10\.244\.0\.5"):
        proxier._udp_backend("10.244.0.5", 53)
    assert opened == []


def test_udp_is_relayed_per_client(proxier: UserspaceProxier, backends: Backends) -> None:
    node_port = free_port()
    port = svc("dns", backends.udp("d1"), backends.udp("d2"), protocol="udp", port=53, port_name="dns")
    proxier.sync([dataclasses.replace(port, node_port=node_port)])
    proxy_port = proxier.proxy_port("ns1", "dns", "dns", "udp")
    assert proxy_port is not None and proxier.proxy_port("ns1", "dns", "dns") is None  # no TCP listener
    answers = [ask_udp(proxy_port, "q") for _ in range(4)]  # a fresh client socket, so a fresh session, each time
    assert sorted(answers) == ["d1 q", "d1 q", "d2 q", "d2 q"]
    assert ask_udp(node_port, "q") in ("d1 q", "d2 q")


def test_no_rules_and_no_nft_in_the_root_namespace(
    proxier: UserspaceProxier, backends: Backends, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: ran.append(args))
    proxier.sync([svc("web", backends.tcp("b1"))], full=True)
    proxier.cleanup()
    assert ran == []


def test_clients_that_close_at_once_leave_no_task_pending(
    proxier: UserspaceProxier, backends: Backends, caplog: pytest.LogCaptureFixture
) -> None:
    """Connect-and-close clients (as a connect() probe): each splice then waits on its backend alone, and the tasks
    must stay referenced until the backend ends (asyncio's stream protocols hold their readers weakly: a collected
    cycle of pending tasks is logged as "Task was destroyed but it is pending!") and then all finish."""
    endpoint, release = backends.tcp_held("held")
    proxier.sync([svc("web", endpoint)])
    port = proxier.proxy_port("ns1", "web", "http")
    assert port is not None
    count = 40
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for _ in range(count):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()  # FIN right after connect
        eventually(lambda: backends.accepted["held eof"] == count, what="every client's EOF passed to the backend")
        gc.collect()  # what the collector would find sooner or later: nothing may be left only in a cycle
        release()
        eventually(lambda: not proxier._tasks, what="every connection's task finished")
        gc.collect()
    destroyed = [r.getMessage() for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
    assert destroyed == []
    assert backends.accepted["held"] == count


def test_clients_that_reset_at_once_leave_no_task_pending(
    proxier: UserspaceProxier, backends: Backends, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint, release = backends.tcp_held("held")
    release()
    proxier.sync([svc("web", endpoint)])
    port = proxier.proxy_port("ns1", "web", "http")
    assert port is not None
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for _ in range(40):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # RST right after connect, before or while the proxy dials
        eventually(lambda: backends.accepted["held"] == 40, what="every connection dialled")
        gc.collect()
        eventually(lambda: not proxier._tasks, what="every connection's task finished")
        gc.collect()
    assert not [r for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
    assert not [r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR]


def test_cleanup_closes_listeners_and_connections(backends: Backends) -> None:
    proxier = UserspaceProxier(CONFIG, None, loopback_bind)
    proxier.sync([svc("web", backends.tcp("b1"))])
    port = proxier.proxy_port("ns1", "web", "http")
    assert port is not None
    held = socket.create_connection(("127.0.0.1", port), timeout=5)
    with held:
        held.sendall(b"x")  # not a whole line: the backend waits, the connection stays open
        eventually(lambda: backends.accepted["b1"] == 1, what="the connection at its backend")
        proxier.cleanup()
        proxier.cleanup()  # idempotent
        assert held.recv(4096) == b""  # the proxy closed it
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


# ---------------------------------------------------------------------------------------------------------------
# In a node namespace (root): a pod's ClusterIP traffic reaches the proxy port through the nftables rules


root_only = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/sbin/nft"), reason="needs root and nft")
NODE_CONFIG = NodeConfig(node_name="node-1", node_ips=["10.244.0.1"], cluster_cidr="", service_cidrs=["10.96.0.0/16"])


@pytest.fixture
def node_and_pod() -> Iterator[tuple[str, str]]:
    """A node namespace and a pod namespace joined by a veth (the node end without an address, as in the sandbox,
    which is why the rules dnat to the node IP rather than `redirect`)."""
    node, pod = f"tkustest-{os.getpid()}", f"tkustest-{os.getpid()}-pod"
    for name in (node, pod):
        netns.delete(name)
        netns.ip("netns", "add", name)
    try:
        netns.ip_batch(
            node,
            [
                "link set lo up",
                "addr add 10.244.0.1/32 dev lo",  # the node IP, on no link towards the pod
                f"link add veth-n type veth peer name veth-p netns {pod}",
                "link set veth-n up",
                "route add 10.244.0.2/32 dev veth-n",
                "route add 10.96.0.0/16 dev lo src 10.244.0.1",  # as the sandbox: node -> ClusterIP stays local
            ],
        )
        netns.ip_batch(
            pod,
            [
                "link set lo up",
                "addr add 10.244.0.2/32 dev veth-p",
                "link set veth-p up",
                "route add 10.244.0.1/32 dev veth-p",
                "route add default via 10.244.0.1 dev veth-p",
            ],
        )
        netns.write_sysctl(node, "net.ipv4.ip_forward", "1")
        yield node, pod
    finally:
        for name in (node, pod):
            netns.delete(name)


def _node_bind(node: str) -> Bind:
    def bind(host: str, port: int) -> socket.socket:
        sock = netns.socket_in(node)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return sock

    return bind


def _serve_once(sock: socket.socket, name: str) -> None:
    conn, _ = sock.accept()
    with conn:
        conn.sendall(name.encode())


@root_only
def test_pod_traffic_to_a_cluster_ip_reaches_a_backend_through_the_proxy(node_and_pod: tuple[str, str]) -> None:
    node, pod = node_and_pod
    backend = netns.socket_in(pod)  # the pod is also the backend: the proxy dials it from the node namespace
    backend.setblocking(True)
    backend.bind(("10.244.0.2", 8080))
    backend.listen(8)
    proxier = UserspaceProxier(NODE_CONFIG, node, _node_bind(node))
    try:
        proxier.sync([svc("web", ep("10.244.0.2", 8080)), svc("empty", cluster_ips=("10.96.0.11",))], full=True)
        listed = subprocess.run(
            netns.exec_argv(node, ["nft", "list", "table", "ip", "tinykube-userspace"]),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        web_port = proxier.proxy_port("ns1", "web", "http")
        assert f'10.96.0.10 . tcp . 80 comment "ns1/web:http" : 10.244.0.1 . {web_port}' in listed
        for source in (pod, node):  # from a pod (prerouting) and from the node itself (output)
            threading.Thread(target=_serve_once, args=(backend, f"hi {source}"), daemon=True).start()
            client = netns.socket_in(source)
            client.setblocking(True)
            client.settimeout(5)
            with client:
                client.connect(("10.96.0.10", 80))
                assert client.recv(100) == f"hi {source}".encode()
        client = netns.socket_in(pod)
        client.setblocking(True)
        client.settimeout(5)
        with client:  # no endpoints: the proxy accepts, then closes
            client.connect(("10.96.0.11", 80))
            assert client.recv(100) == b""
    finally:
        proxier.cleanup()
        backend.close()
    gone = subprocess.run(netns.exec_argv(node, ["nft", "list", "tables"]), capture_output=True, text=True, check=True)
    assert "tinykube-userspace" not in gone.stdout


def _map(node: str) -> dict[tuple[str, str, int], int]:
    """The `portals` map in the node namespace: (virtual IP, protocol, port) -> proxy port."""
    listed = subprocess.run(
        netns.exec_argv(node, ["nft", "list", "map", "ip", "tinykube-userspace", "portals"]),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.findall(r'([\d.]+) \. (tcp|udp) \. (\d+) comment "[^"]*" : 10\.244\.0\.1 \. (\d+)', listed)
    return {(ip, protocol, int(port)): int(proxy) for ip, protocol, port, proxy in found}


@root_only
def test_a_change_writes_only_its_map_elements(node_and_pod: tuple[str, str]) -> None:
    node, _ = node_and_pod
    proxier = UserspaceProxier(NODE_CONFIG, node, _node_bind(node))
    scripts: list[str] = []
    write = proxier._nft

    def recording(args: list[str], stdin: str | None = None) -> None:
        scripts.append(stdin or " ".join(args))
        write(args, stdin)

    proxier._nft = recording  # type: ignore[method-assign]

    def port_of(name: str) -> int:
        found = proxier.proxy_port("ns1", name, "http")
        assert found is not None
        return found

    try:
        web, empty = svc("web", ep("10.244.0.2", 8080)), svc("empty", cluster_ips=("10.96.0.11",))
        proxier.sync([web, empty], full=True)
        assert scripts[-1].startswith("add table") and "delete table" in scripts[-1]
        expected = {("10.96.0.10", "tcp", 80): port_of("web"), ("10.96.0.11", "tcp", 80): port_of("empty")}
        assert _map(node) == expected
        scripts.clear()

        web = svc("web", ep("10.244.0.2", 8080), ep("10.244.0.2", 8081))  # endpoints only: no rule to write
        proxier.sync([web, empty])
        assert scripts == [] and _map(node) == expected

        new = svc("new", ep("10.244.0.2", 8080), cluster_ips=("10.96.0.12",))
        proxier.sync([web, empty, new])
        element = f'10.96.0.12 . tcp . 80 comment "ns1/new:http" : 10.244.0.1 . {port_of("new")}'
        assert scripts == [f"add element ip tinykube-userspace portals {{ {element} }}\n"]
        expected[("10.96.0.12", "tcp", 80)] = port_of("new")
        assert _map(node) == expected

        proxier.sync([web, new])
        assert scripts[-1] == "delete element ip tinykube-userspace portals { 10.96.0.11 . tcp . 80 }\n"
        del expected[("10.96.0.11", "tcp", 80)]
        assert _map(node) == expected

        # Two Services sharing an external IP and port: the first by name has it, the other when it goes.
        a = svc("a", cluster_ips=("10.96.0.21",), external_ips=("192.0.2.7",))
        b = svc("b", cluster_ips=("10.96.0.22",), external_ips=("192.0.2.7",))
        proxier.sync([web, new, b, a])
        expected |= {("10.96.0.21", "tcp", 80): port_of("a"), ("10.96.0.22", "tcp", 80): port_of("b")}
        assert _map(node) == expected | {("192.0.2.7", "tcp", 80): port_of("a")}
        proxier.sync([web, new, b])
        assert scripts[-1].startswith("delete element") and "add element" in scripts[-1]  # one transaction
        del expected[("10.96.0.21", "tcp", 80)]
        assert _map(node) == expected | {("192.0.2.7", "tcp", 80): port_of("b")}
        expected[("192.0.2.7", "tcp", 80)] = port_of("b")

        # A failed write leaves the kernel's state unknown: the next sync rewrites the table.
        proxier._nft = lambda args, stdin=None: (_ for _ in ()).throw(userspace.NftError("injected"))  # type: ignore[method-assign]
        with pytest.raises(userspace.NftError):
            proxier.sync([web, new])
        proxier._nft = recording  # type: ignore[method-assign]
        proxier.sync([web, new])
        assert scripts[-1].startswith("add table") and "delete table" in scripts[-1]
        assert _map(node) == {k: v for k, v in expected.items() if k[0] in ("10.96.0.10", "10.96.0.12")}
    finally:
        proxier.cleanup()


def _thread_netns(thread: threading.Thread) -> int:
    return os.stat(f"/proc/self/task/{thread.native_id}/ns/net").st_ino


@root_only
def test_the_proxiers_thread_enters_the_node_namespace_and_makes_the_sockets_there(
    node_and_pod: tuple[str, str],
) -> None:
    node, _ = node_and_pod
    made: list[Any] = []
    proxier = UserspaceProxier(NODE_CONFIG, node, lambda *args: made.append(args))  # type: ignore[arg-type,func-returntype]
    try:
        assert _thread_netns(proxier._thread) == os.stat(netns.NETNS_RUN / node).st_ino
        assert _thread_netns(threading.current_thread()) != os.stat(netns.NETNS_RUN / node).st_ino  # this one stays
        node_port = 30080
        web = svc("web", ep("10.244.0.2", 8080), node_port=node_port)
        proxier.sync([web], full=True)
        proxier.sync([web, svc("dns", ep("10.244.0.2", 53), protocol="udp", port=53, port_name="dns")])
        assert made == []  # `bind` is for the root namespace only
        listening = subprocess.run(
            netns.exec_argv(node, ["ss", "-Hltun"]), capture_output=True, text=True, check=True
        ).stdout
        assert f"10.244.0.1:{proxier.proxy_port('ns1', 'web', 'http')} " in listening
        assert f"10.244.0.1:{node_port} " in listening
        assert f"10.244.0.1:{proxier.proxy_port('ns1', 'dns', 'dns', 'udp')} " in listening
        root = subprocess.run(["ss", "-Hltun"], capture_output=True, text=True, check=True).stdout  # read only
        assert "10.244.0.1:" not in root
    finally:
        proxier.cleanup()
    assert not proxier._thread.is_alive()  # the namespace is no longer held by the proxy's thread


@root_only
def test_a_proxier_that_cannot_enter_its_namespace_is_not_made(
    node_and_pod: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    node, _ = node_and_pod
    before = threading.active_count()
    with pytest.raises(OSError):
        UserspaceProxier(NODE_CONFIG, f"{node}-missing", _node_bind(node))
    monkeypatch.setattr(userspace, "enter", lambda name: None)  # setns "succeeds" but the thread stays in root
    with pytest.raises(netns.NetnsError, match=r"the thread is in net:\[\d+\], not in"):
        UserspaceProxier(NODE_CONFIG, node, _node_bind(node))
    eventually(lambda: threading.active_count() == before, what="the proxier's thread gone")
