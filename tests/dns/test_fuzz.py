"""Random and broken packets against a running DNS server (a real `tinykube up`), over UDP and TCP.

Bounded: a fixed seed and a few thousand cases. Each batch ends with a normal question that must be answered
correctly; every response that comes must parse, carry the ID of what it answers and an rcode that fits; packets
that must not be answered (shorter than a header, responses) are not; the process stays up and logs no traceback.
Each batch comes from a loopback address of its own: the server answers at most `MALFORMED_BURST` unreadable
packets at once from one address (tests/dns/test_hostile.py tests that limit).
"""

from __future__ import annotations

import random
import shutil
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from dnslib import QTYPE, DNSRecord

from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tests.dns.dnsutil import HOST, dns_port, packet, read_framed
from tinykube.dns.limits import MALFORMED_BURST

SEED = 20240917
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED, BADVERS = 0, 1, 2, 3, 4, 5, 16
ANSWERED = frozenset({NOERROR, FORMERR, NXDOMAIN, NOTIMP, REFUSED, BADVERS})  # SERVFAIL would be a failure inside
K8S = "kubernetes.default.svc.cluster.local."
PROBE_ID = 0xFFFF
BATCH = 200


@dataclass(frozen=True)
class Case:
    what: str
    data: bytes
    rcodes: frozenset[int] = ANSWERED  # what an answer may carry
    reply: bool | None = None  # True: must be answered; False: must not be; None: either


@dataclass
class Fuzzed:
    cluster: RunningCluster
    port: int
    log: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    data_dir = tmp_path_factory.mktemp("dnsfuzz") / "fuzz"
    cluster = start_cluster(data_dir, "--service-cluster-ip-range", "10.0.0.0/24")
    try:
        yield Fuzzed(cluster, dns_port(cluster), str(data_dir.parent / f"{data_dir.name}.log"))
    finally:
        stop_cluster(cluster)
        shutil.rmtree(data_dir, ignore_errors=True)


# ---- packets -------------------------------------------------------------------------------------------------------


def header(qid: int, flags: int = 0x0100, qd: int = 1, an: int = 0, ns: int = 0, ar: int = 0) -> bytes:
    return struct.pack("!HHHHHH", qid, flags, qd, an, ns, ar)


def question(name: bytes, qtype: int = 1, qclass: int = 1) -> bytes:
    return name + struct.pack("!HH", qtype, qclass)


def wire_name(text: str) -> bytes:
    return b"".join(bytes([len(label)]) + label.encode() for label in text.strip(".").split(".")) + b"\x00"


BASES = [
    packet(K8S, "A"),
    packet(K8S, "AAAA", edns=1232),
    packet("_https._tcp." + K8S, "SRV"),
    packet("dns-version.cluster.local.", "TXT", edns=4096),
    packet("1.0.0.10.in-addr.arpa.", "PTR"),
    packet("cluster.local.", "SOA", edns=1232),
    packet("nosuch.default.svc.cluster.local.", "MX"),
    packet("example.com.", "A"),
    packet("10-244-1-5.default.pod.cluster.local.", "A", edns=512),
]
OPT = bytes.fromhex("0000291000000000000000")  # an OPT record: root, type 41, UDP 4096, no options


def with_id(data: bytes, qid: int) -> bytes:
    return struct.pack("!H", qid) + data[2:] if len(data) >= 2 else data


def cases(rng: random.Random) -> list[Case]:
    found: list[Case] = []
    # Random bytes of random lengths (most short, some long).
    for _ in range(700):
        size = rng.choice([rng.randrange(0, 40), rng.randrange(0, 600), rng.randrange(0, 3000)])
        found.append(Case("random", rng.randbytes(size)))
    # Valid queries cut at every length: no answer without a whole header, FORMERR after it.
    for base in BASES:
        for size in range(len(base)):
            found.append(Case("truncated", base[:size], frozenset({FORMERR}), size >= 12))
    # Bit flips anywhere after the ID.
    for _ in range(1500):
        data = bytearray(rng.choice(BASES))
        for _ in range(rng.randint(1, 3)):
            bit = rng.randrange(16, len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
        found.append(Case("bitflip", bytes(data)))
    # Counts that lie.
    q = question(wire_name(K8S))
    for qd, an, ns, ar in [(0, 0, 0, 0), (2, 0, 0, 0), (3, 0, 0, 0), (0xFFFF, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0)]:
        found.append(Case("counts", header(0, qd=qd, an=an, ns=ns, ar=ar) + q, frozenset({FORMERR}), True))
    found.append(Case("counts", header(0, ar=1) + q, frozenset({FORMERR}), True))  # no OPT where one is counted
    found.append(Case("counts", header(0, ar=2) + q + OPT, frozenset({FORMERR}), True))
    found.append(Case("counts", header(0, ar=2) + q + OPT + OPT, frozenset({FORMERR}), True))  # two OPT records
    found.append(Case("counts", header(0, qd=2) + q + q, frozenset({FORMERR}), True))
    found.append(Case("counts", header(0, qd=0), frozenset({FORMERR}), True))
    # Compression: pointers to themselves, in a ring, past the end, forward into the question's type.
    for name in [b"\xc0\x0c", b"\xc0\x0e\xc0\x0c", b"\x01a\xc0\x0c", b"\xc0\xff", b"\xff\xff", b"\xc0\x10"]:
        found.append(Case("compression", header(0) + question(name), frozenset({FORMERR}), True))
    # Names: many labels (within 255 octets, past them), reserved label types, a label of 64.
    inside = ".".join(["a"] * 120) + ".cluster.local."
    found.append(Case("labels", header(0) + question(wire_name(inside)), frozenset({NXDOMAIN}), True))
    for count in (200, 5000, 20000):
        name = b"\x01a" * count + b"\x00"
        found.append(Case("labels", header(0) + question(name), frozenset({FORMERR}), True))
    found.append(Case("labels", header(0) + question(b"\x40" + b"a" * 64 + b"\x00"), frozenset({FORMERR}), True))
    found.append(Case("labels", header(0) + question(b"\x41" + b"a" * 65 + b"\x00"), frozenset({FORMERR}), True))
    found.append(Case("labels", header(0) + question(b"\x80" + b"a" * 128 + b"\x00"), frozenset({FORMERR}), True))
    # Classes other than IN: refused.
    for qclass in (0, 3, 4, 254, 255, 1234):
        found.append(Case("class", header(0) + question(wire_name(K8S), 1, qclass), frozenset({REFUSED}), True))
    # Opcodes other than QUERY: NOTIMP.
    for opcode in range(1, 16):
        flags = 0x0100 | opcode << 11
        found.append(Case("opcode", header(0, flags=flags) + q, frozenset({NOTIMP}), True))
    # Responses (QR set) get no answer, whatever else they hold.
    for base in BASES:
        flipped = bytearray(base)
        flipped[2] |= 0x80
        found.append(Case("qr", bytes(flipped), reply=False))
    found.append(Case("qr", header(0, flags=0x8000 | 5 << 11, qd=0), reply=False))
    # Odd types and EDNS: zone transfers, ANY, type 0, OPT versions and sizes.
    for qtype in (0, QTYPE.AXFR, QTYPE.IXFR, QTYPE.ANY, QTYPE.OPT, 65535):
        found.append(Case("qtype", header(0) + question(wire_name(K8S), qtype), reply=True))
    found.append(
        Case("qtype", header(0) + question(wire_name("cluster.local."), QTYPE.AXFR), frozenset({REFUSED}), True)
    )
    for version, size in [(1, 1232), (255, 1232), (0, 0), (0, 1), (0, 65535)]:
        opt = b"\x00\x00\x29" + struct.pack("!HBBHH", size, 0, version, 0, 0)
        rcodes = frozenset({BADVERS}) if version else frozenset({NOERROR})
        found.append(Case("edns", header(0, ar=1) + q + opt, rcodes, True))
    lying_option = b"\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x08\x00\x0a\x00\xff\x01\x02"  # option longer than RDATA
    found.append(Case("edns", header(0, ar=1) + q + lying_option, frozenset({FORMERR}), True))
    return found


# ---- checking ------------------------------------------------------------------------------------------------------


def full_rcode(record: DNSRecord) -> int:
    rcode = int(record.header.rcode)
    for rr in record.ar:
        if rr.rtype == QTYPE.OPT:
            rcode |= (rr.ttl >> 24) << 4
    return rcode


def check(case: Case, sent: bytes, reply: bytes) -> None:
    assert case.reply is not False, f"{case.what}: answered a packet that gets no answer: {sent[:64].hex()}"
    try:
        record = DNSRecord.parse(reply)
    except Exception as err:
        raise AssertionError(f"{case.what}: unparsable reply {reply[:64].hex()} to {sent[:64].hex()}") from err
    assert reply[:2] == sent[:2], f"{case.what}: reply carries another ID"
    assert record.header.qr == 1
    rcode = full_rcode(record)
    assert rcode in case.rcodes, f"{case.what}: rcode {rcode} to {sent[:80].hex()}"


def check_probe(reply: bytes, qid: int = PROBE_ID) -> None:
    record = DNSRecord.parse(reply)
    assert record.header.id == qid and record.header.rcode == NOERROR, record
    assert [str(rr).split() for rr in record.rr] == [[K8S, "5", "IN", "A", "10.0.0.1"]]


def source(index: int) -> str:
    """A loopback address of its own for each batch (127.0.0.1 is left to the probes)."""
    return f"127.0.{1 + index // 250}.{1 + index % 250}"


def udp_batch(port: int, batch: list[Case], first_id: int, source: str = HOST) -> int:
    """Send the batch and then a probe; read until the probe's answer (and any answer still owed). Returns how
    many of the batch were answered."""
    assert len(batch) <= MALFORMED_BURST
    sent: dict[int, tuple[Case, bytes]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((source, 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        sock.settimeout(5)
        for offset, case in enumerate(batch):
            data = with_id(case.data, first_id + offset)
            if len(data) >= 2:
                sent[first_id + offset] = (case, data)
            sock.sendto(data, (HOST, port))
        sock.sendto(packet(K8S, "A", qid=PROBE_ID), (HOST, port))
        owed = {qid for qid, (case, _) in sent.items() if case.reply}
        probed = False
        answered = 0
        deadline = time.monotonic() + 10
        while not probed or owed:
            assert time.monotonic() < deadline, f"no answer to {[sent[qid][0].what for qid in owed]}"
            reply, _ = sock.recvfrom(65535)
            (qid,) = struct.unpack("!H", reply[:2])
            if qid == PROBE_ID:
                check_probe(reply)
                probed = True
                continue
            assert qid in sent, f"a reply to nothing sent: {reply[:32].hex()}"
            check(*sent[qid], reply)
            owed.discard(qid)
            answered += 1
    return answered


def tcp_case(port: int, case: Case, qid: int, source: str = HOST) -> None:
    """The case on a connection of its own, then a probe on the same connection when it stays open."""
    data = with_id(case.data, qid)
    with socket.create_connection((HOST, port), timeout=5, source_address=(source, 0)) as sock:
        sock.sendall(struct.pack("!H", len(data)) + data)
        try:
            reply = read_framed(sock)
        except ConnectionError:
            assert case.reply is not True, f"{case.what}: connection closed, no answer to {data[:64].hex()}"
            return
        check(case, data, reply)
        probe_query = packet(K8S, "A", qid=PROBE_ID)
        sock.sendall(struct.pack("!H", len(probe_query)) + probe_query)
        check_probe(read_framed(sock))


def probe(port: int) -> None:
    """A normal question over UDP and over TCP, answered correctly."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(packet(K8S, "A", qid=PROBE_ID), (HOST, port))
        check_probe(sock.recvfrom(65535)[0])
    with socket.create_connection((HOST, port), timeout=5) as sock:
        data = packet(K8S, "A", qid=PROBE_ID)
        sock.sendall(struct.pack("!H", len(data)) + data)
        check_probe(read_framed(sock))


def assert_healthy(server: Fuzzed) -> None:
    probe(server.port)
    assert server.cluster.proc.poll() is None, "the server died"
    with open(server.log, encoding="utf-8", errors="replace") as log:
        text = log.read()
    assert "Traceback" not in text and "Exception in callback" not in text, text[-4000:]


# ---- the tests -----------------------------------------------------------------------------------------------------


def test_udp_fuzz(server: Fuzzed) -> None:
    rng = random.Random(SEED)
    todo = cases(rng)
    rng.shuffle(todo)
    assert len(todo) > 2500
    answered = 0
    for start in range(0, len(todo), BATCH):
        answered += udp_batch(server.port, todo[start : start + BATCH], 1 + start % 60000, source(start // BATCH))
        assert server.cluster.proc.poll() is None
    # Most packets carry a header (then they are answered, FORMERR at worst); the rest are short or responses.
    assert answered > len(todo) * 0.6, answered
    assert_healthy(server)


def test_tcp_fuzz(server: Fuzzed) -> None:
    rng = random.Random(SEED + 1)
    todo = cases(rng)
    rng.shuffle(todo)
    for i, case in enumerate(todo[:400]):
        tcp_case(server.port, case, 1 + i, source(100 + i // BATCH))
    assert_healthy(server)


def test_tcp_length_prefixes_that_lie(server: Fuzzed) -> None:
    query = packet(K8S, "A", qid=7)
    # Longer than what follows, then the client stops sending: the server hangs up without an answer.
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(struct.pack("!H", 300) + query)
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(100) == b""
    # Longer than what follows, and the connection held open: it waits, and meanwhile everyone else is answered.
    stalled = []
    try:
        for _ in range(20):
            sock = socket.create_connection((HOST, server.port), timeout=5)
            stalled.append(sock)
            sock.sendall(struct.pack("!H", 1000) + query)
        half = socket.create_connection((HOST, server.port), timeout=5)
        stalled.append(half)
        half.sendall(b"\x00")  # half a length prefix
        started = time.monotonic()
        for _ in range(20):
            probe(server.port)
        assert time.monotonic() - started < 10
        stalled[0].settimeout(0.3)
        with pytest.raises(TimeoutError):
            stalled[0].recv(100)
    finally:
        for sock in stalled:
            sock.close()
    # Shorter than the query: the server reads a question-less header (FORMERR), then the rest as a new frame.
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(struct.pack("!H", 12) + query)
        record = DNSRecord.parse(read_framed(sock))
        assert (record.header.id, record.header.rcode) == (7, FORMERR)
    # A zero-length frame: not a query; the stream is out of step and is closed.
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(b"\x00\x00")
        assert sock.recv(100) == b""
    # Many questions in one write: as many answers, in order.
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(b"".join(struct.pack("!H", len(q)) + q for q in (packet(K8S, "A", qid=i) for i in range(30))))
        for i in range(30):
            check_probe(read_framed(sock), qid=i)
    assert_healthy(server)
