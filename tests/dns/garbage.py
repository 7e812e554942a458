"""Malformed DNS packets of every kind, for the tests and for `bench/dns_garbage.py`.

Each maker takes an ID and returns the packet; `KINDS` names them all, and `EXPECTED` says what the server owes each:
FORMERR (the header is readable), or nothing (no whole header, or a response).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

FORMERR = "FORMERR"
NOTHING = "nothing"
K8S = "kubernetes.default.svc.cluster.local."


def header(qid: int, flags: int = 0x0100, qd: int = 1, an: int = 0, ns: int = 0, ar: int = 0) -> bytes:
    return struct.pack("!HHHHHH", qid, flags, qd, an, ns, ar)


def wire_name(text: str) -> bytes:
    return b"".join(bytes([len(label)]) + label.encode() for label in text.strip(".").split(".")) + b"\x00"


def query(qid: int, name: str = K8S, qtype: int = 1) -> bytes:
    return header(qid) + wire_name(name) + struct.pack("!HH", qtype, 1)


def record(owner: bytes, rtype: int, rdata: bytes, rclass: int = 1, ttl: int = 0) -> bytes:
    return owner + struct.pack("!HHIH", rtype, rclass, ttl, len(rdata)) + rdata


QUESTION_END = 12 + 1 + 4  # a question for the root name ends here: RR 1 starts at 17, its RDATA at 17 + 11
RDATA = QUESTION_END + 11


def pointer_chain(qid: int, hops: int = 5000) -> bytes:
    """The packet of the report: `hops` compression pointers in a row, each pointing at the one before it (inside the
    RDATA of an additional record), and a second record owned by the last of them. dnslib followed them by
    recursion: RecursionError past ~1,000, after milliseconds of work."""
    chain = bytearray()
    previous = 12  # the question's root name
    for i in range(hops):
        chain += struct.pack("!H", 0xC000 | previous)
        previous = RDATA + 2 * i
    return (
        header(qid, ar=2)
        + b"\x00"
        + struct.pack("!HH", 1, 1)
        + record(b"\x00", 10, bytes(chain))  # type NULL: any bytes
        + record(struct.pack("!H", 0xC000 | previous), 1, b"\x7f\x00\x00\x01")
    )


def label_chain(qid: int, hops: int = 200) -> bytes:
    """Pointers each preceded by a label: every hop makes the name longer (past 255 octets after 127 of them)."""
    chain = bytearray()
    previous = 12
    for i in range(hops):
        chain += b"\x01a" + struct.pack("!H", 0xC000 | previous)
        previous = RDATA + 4 * i
    return (
        header(qid, ar=2)
        + b"\x00"
        + struct.pack("!HH", 1, 1)
        + record(b"\x00", 10, bytes(chain))
        + record(struct.pack("!H", 0xC000 | previous), 1, b"\x7f\x00\x00\x01")
    )


def pointer_loop(qid: int, ring: int = 2) -> bytes:
    """Pointers in a ring (each to the next, the last to the first) as the question's name."""
    base = 12
    name = b"".join(struct.pack("!H", 0xC000 | base + 2 * ((i + 1) % ring)) for i in range(ring))
    return header(qid) + name + struct.pack("!HH", 1, 1)


def self_pointer(qid: int) -> bytes:
    return header(qid) + b"\xc0\x0c" + struct.pack("!HH", 1, 1)


def label_loop(qid: int) -> bytes:
    """`a` then a pointer back to it: a.a.a... for ever, if nothing stops it."""
    return header(qid) + b"\x01a\xc0\x0c" + struct.pack("!HH", 1, 1)


def forward_pointer(qid: int) -> bytes:
    return header(qid) + b"\xc0\x20" + struct.pack("!HH", 1, 1) + b"\x00" * 32


def pointer_past_end(qid: int) -> bytes:
    return header(qid) + b"\xff\xff" + struct.pack("!HH", 1, 1)


def short_header(qid: int) -> bytes:
    return header(qid)[: 2 + qid % 10]


def truncated_question(qid: int) -> bytes:
    data = query(qid)
    return data[: 12 + qid % (len(data) - 12)]


def reserved_label_type(qid: int) -> bytes:
    kind = (0x40, 0x80)[qid % 2]
    return header(qid) + bytes([kind | 5]) + b"a" * 70 + b"\x00" + struct.pack("!HH", 1, 1)


def label_past_end(qid: int) -> bytes:
    return header(qid) + b"\x3fabc"


def long_name(qid: int) -> bytes:
    return header(qid) + b"\x01a" * 200 + b"\x00" + struct.pack("!HH", 1, 1)


def counts_that_lie(qid: int) -> bytes:
    body = wire_name(K8S) + struct.pack("!HH", 1, 1)
    qd, an, ns, ar = [(0, 0, 0, 0), (2, 0, 0, 0), (0xFFFF, 0, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0), (1, 0, 0, 3)][qid % 6]
    return header(qid, qd=qd, an=an, ns=ns, ar=ar) + body


def additional_missing(qid: int) -> bytes:
    return header(qid, ar=2) + wire_name(K8S) + struct.pack("!HH", 1, 1)


def oversized(qid: int) -> bytes:
    """A readable header and 64 KB of noise: FORMERR, and no more work than a small packet."""
    noise = random.Random(qid).randbytes(65_000)
    return header(qid) + noise


def edns_garbage(qid: int) -> bytes:
    question = wire_name(K8S) + struct.pack("!HH", 1, 1)
    opt = struct.pack("!HHIH", 41, 4096, 0, 0)
    bad = [
        b"\x00" + struct.pack("!HHIH", 41, 4096, 0, 8) + struct.pack("!HH", 10, 0xFF) + b"\x01\x02",  # option lies
        b"\x00" + struct.pack("!HHIH", 41, 4096, 0, 2) + b"\x00\x0a",  # half an option header
        b"\x00" + struct.pack("!HHIH", 41, 4096, 0, 400) + b"\x00" * 4,  # RDATA past the end
        b"\x00" + struct.pack("!HHIH", 41, 4096, 0, 4 * 100) + b"\x00\x0c\x00\x00" * 100,  # 100 options
        b"\x01a\x00" + opt,  # not owned by the root
    ]
    if qid % 6 == 5:
        return header(qid, ar=2) + question + b"\x00" + opt + b"\x00" + opt  # two OPT records
    return header(qid, ar=1) + question + bad[qid % 5]


def response(qid: int) -> bytes:
    data = bytearray(query(qid))
    data[2] |= 0x80
    return bytes(data)


def random_bytes(qid: int) -> bytes:
    rng = random.Random(qid)
    return struct.pack("!H", qid) + rng.randbytes(rng.randrange(0, 1500))


KINDS: dict[str, Callable[[int], bytes]] = {
    "pointer_chain": pointer_chain,
    "label_chain": label_chain,
    "pointer_loop": pointer_loop,
    "self_pointer": self_pointer,
    "label_loop": label_loop,
    "forward_pointer": forward_pointer,
    "pointer_past_end": pointer_past_end,
    "short_header": short_header,
    "truncated_question": truncated_question,
    "reserved_label_type": reserved_label_type,
    "label_past_end": label_past_end,
    "long_name": long_name,
    "counts_that_lie": counts_that_lie,
    "additional_missing": additional_missing,
    "oversized": oversized,
    "edns_garbage": edns_garbage,
    "response": response,
    "random_bytes": random_bytes,
}
EXPECTED = {kind: FORMERR for kind in KINDS} | {"short_header": NOTHING, "response": NOTHING, "random_bytes": ""}


def mixed(count: int, seed: int = 1) -> list[bytes]:
    """`count` packets of all kinds in turn (IDs from 1), the big ones fewer: the 10 KB chain one in 20, the 64 KB
    one in 200."""
    rng = random.Random(seed)
    light = [kind for kind in KINDS if kind not in ("pointer_chain", "oversized")]
    packets = []
    for i in range(count):
        if i % 200 == 199:
            kind = "oversized"
        elif i % 20 == 0:
            kind = "pointer_chain"
        else:
            kind = rng.choice(light)
        packets.append(KINDS[kind](1 + i % 65535))
    return packets
