"""The DNS wire parser under hostile input, in-process: every kind of malformed packet is FORMERR or no answer, in
bounded time; Hypothesis over random bytes and over mutations of valid queries (no exception but the two the
server handles, bounded time per packet, and what is accepted can be answered); the per-source limit of what fails
to parse. The cases Hypothesis found are kept at the end as explicit regression tests."""

from __future__ import annotations

import struct
import time

import pytest
from dnslib import EDNS0, QTYPE, RCODE, DNSRecord
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.dns import garbage
from tinykube.dns import wire
from tinykube.dns.answers import Answer
from tinykube.dns.limits import SourceLimiter

# CPU time per packet (the thread's, so that being descheduled on a shared machine does not count): the bounded
# parser takes microseconds (tens for the worst packets); dnslib took milliseconds on a pointer chain before raising
# RecursionError. The bound is generous all the same.
BUDGET = 0.05


def outcome(data: bytes) -> tuple[str, int | None, float]:
    """("query" | "formerr" | "notimp" | "nothing", the response's ID if any, CPU seconds); any other exception
    fails."""
    started = time.thread_time()
    try:
        query = wire.parse_query(data)
    except wire.Unanswerable:
        return "nothing", None, time.thread_time() - started
    except wire.Malformed as err:
        elapsed = time.thread_time() - started
        reply = DNSRecord.parse(err.response)
        assert reply.header.qr == 1 and reply.questions == [] and reply.rr == []
        name = {RCODE.FORMERR: "formerr", RCODE.NOTIMP: "notimp"}[reply.header.rcode]
        return name, reply.header.id, elapsed
    elapsed = time.thread_time() - started
    response, _ = wire.encode(query, Answer(RCODE.NXDOMAIN), limit=query.udp_size)  # what is read can be answered
    echoed = DNSRecord.parse(response)
    assert echoed.header.id == query.id and echoed.q.qname == query.question_name
    return "query", query.id, elapsed


# ---- every kind of garbage -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(garbage.KINDS))
def test_each_kind_of_garbage_is_formerr_or_nothing_in_bounded_time(kind: str) -> None:
    for qid in range(1, 41):
        data = garbage.KINDS[kind](qid)
        result, reply_id, seconds = outcome(data)
        expected = garbage.EXPECTED[kind]
        if expected == garbage.FORMERR:
            assert (result, reply_id) == ("formerr", qid), data[:80].hex()
        elif expected == garbage.NOTHING:
            assert result == "nothing"
        else:
            assert result in ("formerr", "notimp", "nothing")
        assert seconds < BUDGET, (kind, seconds)


@pytest.mark.parametrize("hops", [126, 127, 200, 990, 1000, 5000, 16000])
def test_pointer_chains_are_formerr_at_any_length(hops: int) -> None:
    """dnslib recursed once per pointer: past ~1,000 RecursionError escaped, and a chain just short of it was read."""
    data = garbage.pointer_chain(7, hops)
    result, reply_id, seconds = outcome(data)
    assert (result, reply_id) == ("formerr", 7)
    assert seconds < BUDGET


def test_a_chain_of_pointers_within_the_limit_is_read() -> None:
    """Up to 126 pointers in one name, as miekg/dns follows."""
    assert outcome(garbage.pointer_chain(7, 125))[0] == "query"  # 125 in the chain and the owner's own pointer


def test_pointer_loops_of_any_size_are_formerr() -> None:
    for ring in (1, 2, 3, 10, 100, 1000):
        assert outcome(garbage.pointer_loop(9, ring))[:2] == ("formerr", 9), ring


def test_compression_in_a_valid_query_is_read() -> None:
    """An OPT record owned by a pointer to the question's root label (compressed, but the root) is read."""
    name = garbage.wire_name("a.cluster.local.")
    data = garbage.header(5, ar=1) + name + struct.pack("!HH", 1, 1)
    pointer_to_root = struct.pack("!H", 0xC000 | (12 + len(name) - 1))
    data += pointer_to_root + struct.pack("!HHIH", 41, 1232, 0, 0)
    query = wire.parse_query(data)
    assert (query.qname, query.edns, query.udp_size) == ("a.cluster.local.", True, 1232)


def test_two_additional_records_at_most_as_miekg_dns() -> None:
    question = garbage.wire_name(garbage.K8S) + struct.pack("!HH", 1, 1)
    tsig_like = garbage.record(b"\x03key\x00", 250, b"\x00" * 20, rclass=255)
    opt = garbage.record(b"\x00", 41, b"", rclass=1232)
    assert wire.parse_query(garbage.header(1, ar=2) + question + opt + tsig_like).edns
    with pytest.raises(wire.Malformed):
        wire.parse_query(garbage.header(1, ar=3) + question + opt + tsig_like + tsig_like)


def test_edns_options_must_fill_the_record() -> None:
    question = garbage.wire_name(garbage.K8S) + struct.pack("!HH", 1, 1)
    cookie = struct.pack("!HH", 10, 8) + b"\x01" * 8
    ok = garbage.header(1, ar=1) + question + garbage.record(b"\x00", 41, cookie * 3, rclass=1232)
    assert wire.parse_query(ok).udp_size == 1232
    for rdata in (cookie[:-1], cookie + b"\x00", cookie * (wire.MAX_EDNS_OPTIONS + 1)):
        with pytest.raises(wire.Malformed):
            wire.parse_query(garbage.header(1, ar=1) + question + garbage.record(b"\x00", 41, rdata, rclass=1232))


# ---- Hypothesis ----------------------------------------------------------------------------------------------------

VALID = [
    garbage.query(1),
    garbage.query(2, "_https._tcp." + garbage.K8S, QTYPE.SRV),
    garbage.query(3, "1.0.0.10.in-addr.arpa.", QTYPE.PTR),
]
with_edns = DNSRecord.question("nosuch.default.svc.cluster.local.", "AAAA")
with_edns.add_ar(EDNS0(udp_len=1232, flags="do"))
VALID.append(bytes(with_edns.pack()))
VALID.append(garbage.label_chain(4, 100))  # chains within the limits are valid too
VALID.append(garbage.pointer_chain(5, 100))

FAST = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def check(data: bytes) -> None:
    result, reply_id, seconds = outcome(data)
    assert seconds < BUDGET, seconds
    if len(data) < 12 or data[2] & 0x80:
        assert result == "nothing"
    else:
        assert result != "nothing" and reply_id == struct.unpack_from("!H", data)[0]


@FAST
@given(st.binary(max_size=2048))
@example(b"")
@example(b"\x00" * 12)
def test_random_bytes(data: bytes) -> None:
    check(data)


@FAST
@given(st.binary(min_size=12, max_size=600).map(lambda tail: b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00" + tail))
def test_random_bytes_after_a_plausible_header(data: bytes) -> None:
    check(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid query with a few bytes flipped, set, cut, inserted or deleted, or a compression pointer written in."""
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete", "pointer"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set":
            data[at] = draw(st.sampled_from([0, 1, 0x3F, 0x40, 0x80, 0xC0, 0xFF]))
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            target = draw(st.integers(0, max(0, len(data) + 4)))
            data[at : at + 2] = struct.pack("!H", 0xC000 | target)
    return bytes(data)


@FAST
@given(mutated())
def test_mutated_valid_queries(data: bytes) -> None:
    check(data)


@FAST
@given(st.sampled_from(VALID))
def test_valid_queries_agree_with_dnslib(data: bytes) -> None:
    query = wire.parse_query(data)
    record = DNSRecord.parse(data)
    assert (query.question_name, query.qtype, query.qclass) == (record.q.qname, record.q.qtype, record.q.qclass)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(st.binary(min_size=1, max_size=20).filter(lambda b: b"\x00" not in b), min_size=0, max_size=6),
    st.integers(0, 65535),
    st.sampled_from([None, 0, 512, 1232, 4096, 65535]),
)
def test_names_read_back_as_written(labels: list[bytes], qtype: int, edns: int | None) -> None:
    """Any name of UTF-8 labels is read back label for label, as dnslib reads it; others are FORMERR (dnslib could
    not read back the question echoed in our reply)."""
    name = b"".join(bytes([len(label)]) + label for label in labels) + b"\x00"
    data = garbage.header(1, ar=0 if edns is None else 1) + name + struct.pack("!HH", qtype, 1)
    if edns is not None:
        data += garbage.record(b"\x00", 41, b"", rclass=edns)
    try:
        for label in labels:
            label.decode()
    except UnicodeDecodeError:
        with pytest.raises(wire.Malformed):
            wire.parse_query(data)
        return
    query = wire.parse_query(data)
    assert list(query.question_name.label) == labels and query.qtype == qtype
    assert query.udp_size == (min(max(512, edns), 65507) if edns is not None else 512)
    assert DNSRecord.parse(data).q.qname == query.question_name


# ---- the limit per source ------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_source_gets_its_burst_then_its_rate() -> None:
    clock = Clock()
    limiter = SourceLimiter(rate=10, burst=20, clock=clock)
    assert not limiter.blocked("a")
    assert [limiter.charge("a") for _ in range(25)] == [True] * 20 + [False] * 5
    assert limiter.blocked("a") and not limiter.blocked("b")
    clock.now += 0.1  # one token back
    assert not limiter.blocked("a")
    assert limiter.charge("a") and not limiter.charge("a")
    clock.now += 10  # full again: forgotten
    assert not limiter.blocked("a") and len(limiter) == 0


def test_the_table_of_sources_is_bounded() -> None:
    clock = Clock()
    limiter = SourceLimiter(rate=1, burst=5, max_sources=100, clock=clock)
    for i in range(1000):
        limiter.charge(f"10.0.{i // 256}.{i % 256}")
        assert len(limiter) <= 100
    clock.now += 60  # all full again: the next new source makes room by forgetting them
    limiter.charge("192.0.2.1")
    assert len(limiter) <= 100


# ---- regressions found by the tests above --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hexdata", "result"),
    [
        # A non-UTF-8 label (a bit flip in "cluster"): dnslib could not read back the question echoed in our reply,
        # so FORMERR, as before this parser. (Found by test_fuzz.py's bit flips.)
        (
            "002201000001000000000000066e6f737563680764656661756c740373766307636cf572746572056c6f63616c00000f0001",
            "formerr",
        ),
        # An OPT record whose options leave 1-3 octets over: FORMERR, as miekg/dns (dnslib ignored them).
        (
            "000101000001000000000001" + "00" + "00010001" + "00" + "0029" + "1000" + "00000000" + "0002" + "000a",
            "formerr",
        ),
        # A pointer to the pointer's own second octet.
        ("000101000001000000000000" + "c00d" + "00010001", "formerr"),
        # A question for the root of type 0 and class 0: read (the server answers REFUSED for class 0).
        ("000101000001000000000000" + "00" + "00000000", "query"),
    ],
)
def test_regressions(hexdata: str, result: str) -> None:
    assert outcome(bytes.fromhex(hexdata))[0] == result
