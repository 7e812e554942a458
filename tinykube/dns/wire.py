"""DNS messages on the wire: reading queries (with their EDNS0 options) and writing responses that fit.

Queries are read by a small parser of our own rather than dnslib's: dnslib follows compression pointers by
recursion with no bound on their number (a packet made of a chain of a few thousand pointers raised RecursionError
after ~4 ms of work, and a chain just short of that was accepted), reads every record the counts announce, and
builds objects for all of them. `parse_query` looks at the header, the one question and at most two additional
records (miekg/dns's `DefaultMsgAcceptFunc`, what CoreDNS runs, rejects a query with more), follows at most 126
pointers per name (miekg/dns's limit), each pointing before the part of the name that led to it (so loops cannot
be written), and reads at most 64 EDNS options: its work is bounded whatever the packet's size. Replies are still
written with dnslib.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import Any

from dnslib import EDNS0, QTYPE, RCODE, RR, DNSBuffer, DNSHeader, DNSLabel, DNSQuestion, DNSRecord

from tinykube.dns.answers import Answer

HEADER = struct.Struct("!HHHHHH")
OPCODE_QUERY = 0
ADVERTISED_UDP_SIZE = 1232  # the DNS Flag Day 2020 size: no IP fragmentation on any common path
MIN_UDP_SIZE = 512
MAX_UDP_SIZE = 65507  # the most an IPv4 datagram carries: a larger size advertised cannot be sent (EMSGSIZE)
MAX_TCP_SIZE = 65535  # what the two-byte length prefix of a DNS message over TCP can say
MAX_POINTER = 0x3FFF  # a compression pointer holds a 14-bit offset
BADVERS = 16  # an extended rcode: 1 in the OPT record's upper bits
DO_BIT = 0x8000  # "DNSSEC OK", in the OPT record's TTL
MAX_LABEL = 63  # RFC 1035 2.3.4: octets in a label,
MAX_NAME = 255  # and in a whole name on the wire
MAX_POINTERS = 126  # compression pointers followed in one name: miekg/dns's (255 + 1) / 2 - 2
MAX_ADDITIONAL = 2  # records in a query's additional section (OPT, and TSIG or SIG(0)), as miekg/dns accepts
MAX_EDNS_OPTIONS = 64  # options read from an OPT record; a query carries a handful (cookie, padding, subnet...)
TYPE_OPT = 41
HEADER_SIZE = 12


class Unanswerable(Exception):
    """A packet that gets no answer: too short to carry an ID, or itself a response (answering would loop)."""


@dataclass(frozen=True, slots=True)
class Query:
    id: int
    flags: int
    rd: bool
    qname: str  # as asked (case kept, final dot)
    qtype: int
    qclass: int
    edns: bool
    edns_version: int
    udp_size: int  # what the client can take over UDP
    dnssec_ok: bool = False  # the OPT record's DO bit, echoed in the response (RFC 3225 3, as CoreDNS)
    question_name: DNSLabel | None = None  # the name as read, echoed byte for byte (`qname` cannot always say it)

    @property
    def type_name(self) -> str:
        return str(QTYPE.get(self.qtype, f"TYPE{self.qtype}"))


class Malformed(Exception):
    """A packet with a header but no query we can read: answered with `rcode` and no question."""

    def __init__(self, message_id: int, flags: int, rcode: int) -> None:
        super().__init__(RCODE.get(rcode))
        self.response = header_only(message_id, flags, rcode)


def header_only(message_id: int, flags: int, rcode: int) -> bytes:
    opcode_rd = flags & 0x7900  # opcode and RD, echoed
    return HEADER.pack(message_id, 0x8000 | opcode_rd | rcode, 0, 0, 0, 0)


def parse_query(data: bytes) -> Query:
    """The query in `data`. Raises `Unanswerable` for what gets no answer, `Malformed` (carrying the FORMERR or
    NOTIMP response) for a query that cannot be read; nothing else, and in bounded time."""
    data = bytes(data)  # labels are sliced out of it, and must be hashable (dnslib keys compression on them)
    if len(data) < HEADER_SIZE:
        raise Unanswerable("shorter than a header")
    message_id, flags, qdcount, ancount, nscount, arcount = HEADER.unpack_from(data)
    if flags & 0x8000:
        raise Unanswerable("a response")
    if (flags >> 11) & 0xF != OPCODE_QUERY:
        raise Malformed(message_id, flags, RCODE.NOTIMP)
    if qdcount != 1 or ancount or nscount or arcount > MAX_ADDITIONAL:
        raise Malformed(message_id, flags, RCODE.FORMERR)
    try:
        labels, offset = read_name(data, HEADER_SIZE)
        for label in labels:
            label.decode()  # as dnslib reads names: it cannot read back a reply that echoes a label in another code
        qtype, qclass = QUESTION_TAIL.unpack_from(data, offset)
        offset += QUESTION_TAIL.size
        opt: tuple[int, int] | None = None  # (class, ttl) of the OPT record: the UDP size, the version and flags
        for _ in range(arcount):
            owner, offset = read_name(data, offset)
            rtype, rclass, ttl, rdlength = RECORD_TAIL.unpack_from(data, offset)
            offset += RECORD_TAIL.size
            end = offset + rdlength
            if end > len(data):
                raise BadWire("record data past the end")
            if rtype == TYPE_OPT:
                if opt is not None or owner:
                    raise BadWire("a second OPT record, or one not owned by the root")
                _check_options(data, offset, end)
                opt = (rclass, ttl)
            offset = end
    except (BadWire, struct.error, UnicodeDecodeError) as err:
        raise Malformed(message_id, flags, RCODE.FORMERR) from err
    qname = DNSLabel(labels)
    return Query(
        id=message_id,
        flags=flags,
        rd=bool(flags & 0x0100),
        qname=_text(qname),
        qtype=qtype,
        qclass=qclass,
        edns=opt is not None,
        edns_version=(opt[1] >> 16) & 0xFF if opt else 0,
        udp_size=min(max(MIN_UDP_SIZE, opt[0]), MAX_UDP_SIZE) if opt else MIN_UDP_SIZE,
        dnssec_ok=bool(opt[1] & DO_BIT) if opt else False,
        question_name=qname,
    )


QUESTION_TAIL = struct.Struct("!HH")  # type, class
RECORD_TAIL = struct.Struct("!HHIH")  # type, class, TTL, RDATA length
OPTION_HEAD = struct.Struct("!HH")  # code, length


class BadWire(ValueError):
    """Bytes that are not a DNS message (a name or record that cannot be read, or past a limit)."""


def read_name(data: bytes, offset: int) -> tuple[list[bytes], int]:
    """The labels of the name at `offset` and the offset just after it. At most `MAX_POINTERS` compression pointers
    are followed, each to a place before the labels that led to it (where the name began, or the last pointer's
    target): the places visited only go down, so no name loops, and a name is at most 255 octets (RFC 1035)."""
    labels: list[bytes] = []
    size = 1  # the root label's length octet
    after = -1  # where the name ends in the message: just past its first pointer, if it has one
    lowest = offset  # a pointer must point below this
    pointers = 0
    end = len(data)
    while True:
        if offset >= end:
            raise BadWire("name past the end")
        length = data[offset]
        if length == 0:
            return labels, (offset + 1 if after < 0 else after)
        if length >= 0xC0:
            if offset + 1 >= end:
                raise BadWire("pointer past the end")
            target = (length & 0x3F) << 8 | data[offset + 1]
            pointers += 1
            if target >= lowest or pointers > MAX_POINTERS:
                raise BadWire("compression pointer that does not point back, or too many")
            if after < 0:
                after = offset + 2
            offset = lowest = target
            continue
        if length > MAX_LABEL:
            raise BadWire("reserved label type")  # 0x40 and 0x80: extended and binary labels, never used
        size += length + 1
        if size > MAX_NAME or offset + 1 + length > end:
            raise BadWire("name longer than 255 octets, or past the end")
        labels.append(data[offset + 1 : offset + 1 + length])
        offset += 1 + length


def _check_options(data: bytes, offset: int, end: int) -> None:
    """The options of an OPT record fill its RDATA exactly (RFC 6891 6.1.2), and there are not too many."""
    for _ in range(MAX_EDNS_OPTIONS):
        if offset == end:
            return
        if offset + OPTION_HEAD.size > end:
            raise BadWire("EDNS option header past the record")
        _, length = OPTION_HEAD.unpack_from(data, offset)
        offset += OPTION_HEAD.size + length
        if offset > end:
            raise BadWire("EDNS option past the record")
    if offset != end:
        raise BadWire("too many EDNS options")


def _text(name: DNSLabel) -> str:
    """The name as text for lookups. dnslib leaves a "." inside a label as it is, which would read as two labels
    (`[kubernetes.default].svc...` as `kubernetes.default.svc...`): such a dot is escaped, so it matches nothing."""
    text = str(name)
    if any(b"." in label for label in name.label):
        text = "".join(str(DNSLabel([label]))[:-1].replace(".", "\\.") + "." for label in name.label)
    return text


def encode(query: Query, answer: Answer, *, limit: int | None) -> tuple[bytes, bool]:
    """The response; over UDP (`limit` set) one that does not fit is sent with TC set and no records, so the
    client asks again over TCP. Over TCP (`limit` None) one past 65535 bytes keeps the records that fit, with TC
    set, as CoreDNS does (miekg/dns `Msg.Truncate`). Returns the bytes and whether they were truncated."""
    data = _pack(_message(query, answer, records=True))
    if len(data) <= (limit or MAX_TCP_SIZE):
        return data, False
    if limit is None:
        return _fill(query, answer), True
    message = _message(query, answer, records=False)
    message.header.tc = 1
    return _pack(message), True


def _fill(query: Query, answer: Answer) -> bytes:
    """The response with as many of its records as fit over TCP (answer first, then authority, then additional):
    the most that fit is found by bisection, as a record never makes a message shorter."""
    records = [*answer.answer, *answer.authority, *answer.additional]
    fits, too_many = 0, len(records)
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        if len(_pack(_message(query, _first(answer, middle), records=True))) <= MAX_TCP_SIZE:
            fits = middle
        else:
            too_many = middle
    message = _message(query, _first(answer, fits), records=True)
    message.header.tc = 1
    return _pack(message)


def _first(answer: Answer, count: int) -> Answer:
    """`answer` with only its first `count` records, counted through the answer, authority, additional sections."""
    kept = []
    for section in (answer.answer, answer.authority, answer.additional):
        kept.append(section[:count])
        count = max(0, count - len(section))
    return replace(answer, answer=kept[0], authority=kept[1], additional=kept[2])


class _Offsets(dict[Any, int]):
    """Where names were written, for compression: dnslib keeps every offset, but writes a pointer to one past
    16383 with its high bits masked off (a pointer to the wrong name; seen in SRV answers of a few hundred
    dual-stack endpoints). Names written that far are not offered for compression."""

    def __setitem__(self, key: Any, offset: int) -> None:
        if offset <= MAX_POINTER:
            super().__setitem__(key, offset)


def _pack(message: DNSRecord) -> bytes:
    """`message.pack()`, compressing names only where a pointer can reach them."""
    data: bytes = message.pack()
    if len(data) <= MAX_POINTER:
        return data  # no name was written out of a pointer's reach (the common case, packed once)
    message.set_header_qa()
    buffer = DNSBuffer()
    buffer.names = _Offsets()
    message.header.pack(buffer)
    for section in (message.questions, message.rr, message.auth, message.ar):
        for item in section:
            item.pack(buffer)
    return bytes(buffer.data)


def _message(query: Query, answer: Answer, *, records: bool) -> DNSRecord:
    rcode = answer.rcode
    header = DNSHeader(id=query.id, qr=1, aa=int(answer.authoritative), rd=int(query.rd), ra=0, rcode=rcode & 0xF)
    qname = query.question_name if query.question_name is not None else query.qname
    message = DNSRecord(header, q=DNSQuestion(qname, query.qtype, query.qclass))
    if records:
        for rr in answer.answer:
            message.add_answer(rr)
        for rr in answer.authority:
            message.add_auth(rr)
        for rr in answer.additional:
            message.add_ar(rr)
    if query.edns:
        message.add_ar(EDNS0(udp_len=ADVERTISED_UDP_SIZE, ext_rcode=rcode >> 4, flags="do" if query.dnssec_ok else ""))
    return message


def answer_with(rcode: int) -> Answer:
    return Answer(rcode, authoritative=False)


def append_records(answer: Answer, upstream: bytes) -> bool:
    """Add an upstream answer's records (an ExternalName target's A/AAAA); False if it has none to give."""
    try:
        reply = DNSRecord.parse(upstream)
    except Exception:  # dnslib raises many kinds (RecursionError on a pointer chain): any is a reply we cannot use
        return False
    if reply.header.rcode != RCODE.NOERROR or not reply.rr:
        return False
    answer.answer.extend(rr for rr in reply.rr if isinstance(rr, RR))
    return True


def question(name: str, qtype: int) -> bytes:
    packed: bytes = DNSRecord.question(name, QTYPE.get(qtype)).pack()
    return packed
