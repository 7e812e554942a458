"""Helpers of the DNS tests: asking the server (dnslib over UDP/TCP, or the real `dig`), reading answers as
normalised zone-file lines, a small real upstream resolver on 127.0.0.1, and writing the cluster objects DNS reads."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from dnslib import EDNS0, QTYPE, RCODE, RR, DNSRecord
from dnslib.server import BaseResolver, DNSLogger, DNSServer

from tests.conftest import RunningCluster

Object = dict[str, Any]
HOST = "127.0.0.1"


def dns_port(cluster: RunningCluster, key: str = "dns") -> int:
    """The port of the cluster's DNS server (`dns`) or of its metrics (`dns_metrics`), from cluster.json."""
    state = json.loads((cluster.data_dir / "cluster.json").read_text())
    host, _, port = state[key].rpartition(":")
    assert host == HOST, state
    return int(port)


# ---- asking --------------------------------------------------------------------------------------------------------


def packet(name: str, qtype: str | int = "A", *, edns: int | None = None, version: int = 0, qid: int = 4242) -> bytes:
    """A query; `edns` adds an OPT record advertising that UDP size (and EDNS `version`)."""
    record = DNSRecord.question(name, qtype if isinstance(qtype, str) else QTYPE.get(qtype))
    record.header.id = qid
    if edns is not None:
        record.add_ar(EDNS0(udp_len=edns, version=version))
    data: bytes = record.pack()
    return data


def exchange_udp(port: int, data: bytes, timeout: float = 3.0) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(data, (HOST, port))
        while True:
            reply, _ = sock.recvfrom(65535)
            if reply[:2] == data[:2]:
                return reply


def exchange_tcp(port: int, data: bytes, timeout: float = 3.0) -> bytes:
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(struct.pack("!H", len(data)) + data)
        return read_framed(sock)


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = b""
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError(f"closed after {len(chunks)} of {size} bytes")
        chunks += chunk
    return chunks


def read_framed(sock: socket.socket) -> bytes:
    (size,) = struct.unpack("!H", read_exactly(sock, 2))
    return read_exactly(sock, size)


def ask(port: int, name: str, qtype: str | int = "A", *, tcp: bool = False, edns: int | None = None) -> DNSRecord:
    data = packet(name, qtype, edns=edns)
    reply = DNSRecord.parse(exchange_tcp(port, data) if tcp else exchange_udp(port, data))
    assert reply.header.id == 4242 and reply.header.qr == 1, reply
    return reply


# ---- reading answers -----------------------------------------------------------------------------------------------


def zone_line(text: str) -> str:
    """One record as a canonical zone-file line: single spaces, the SOA serial masked (it is a time)."""
    fields = text.split()
    if len(fields) > 6 and fields[3] == "SOA":
        fields[6] = "<serial>"
    return " ".join(fields)


def lines(records: Iterable[str]) -> set[str]:
    return {zone_line(text) for text in records}


@dataclass
class Reply:
    rcode: str
    flags: set[str]
    answer: set[str] = field(default_factory=set)
    authority: set[str] = field(default_factory=set)
    additional: set[str] = field(default_factory=set)  # OPT left out: see `opt`
    opt: str | None = None  # "udp=<size> version=<v> rcode=<extended>" when the reply carries an OPT record
    question: str = ""


def reply_of(record: DNSRecord) -> Reply:
    header = record.header
    flags = {name for name in ("qr", "aa", "tc", "rd", "ra") if getattr(header, name)}
    opt = None
    additional = set()
    for rr in record.ar:
        if rr.rtype == QTYPE.OPT:
            opt = f"udp={rr.rclass} version={(rr.ttl >> 16) & 0xFF} rcode={rr.ttl >> 24}"
        else:
            additional.add(zone_line(str(rr)))
    return Reply(
        rcode=str(RCODE.get(header.rcode)),
        flags=flags,
        answer=lines(str(rr) for rr in record.rr),
        authority=lines(str(rr) for rr in record.auth),
        additional=additional,
        opt=opt,
        question=" ".join(str(q) for q in record.questions).lstrip(";"),
    )


DIG_STATUS = re.compile(r"status: (\w+)")
DIG_FLAGS = re.compile(r";; flags: ([a-z ]*);")
DIG_EDNS = re.compile(r"; EDNS: version: (\d+), flags:.*; udp: (\d+)")


def dig(port: int, name: str, qtype: str, *options: str) -> Reply:
    """Ask with the real `dig` binary and read its output back into a `Reply`."""
    result = subprocess.run(
        ["dig", f"@{HOST}", "-p", str(port), "+time=3", "+tries=1", "+nocookie", "+noadflag", *options, name, qtype],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reply = Reply(rcode="", flags=set())
    section = ""
    for line in result.stdout.splitlines():
        if match := DIG_STATUS.search(line):
            reply.rcode = match.group(1)
        elif match := DIG_FLAGS.search(line):
            reply.flags = set(match.group(1).split())
        elif match := DIG_EDNS.search(line):
            reply.opt = f"udp={match.group(2)} version={match.group(1)} rcode=0"
        elif line.startswith(";; ") and line.endswith(" SECTION:"):
            section = line[3:].split()[0]
        elif line.startswith(";") or not line.strip():
            continue
        elif section == "ANSWER":
            reply.answer.add(zone_line(line))
        elif section == "AUTHORITY":
            reply.authority.add(zone_line(line))
        elif section == "ADDITIONAL":
            reply.additional.add(zone_line(line))
    assert reply.rcode, result.stdout
    return reply


# ---- a real upstream resolver --------------------------------------------------------------------------------------


class FixedResolver(BaseResolver):  # type: ignore[misc]
    """Authoritative for a few names: what it has it answers, the rest is NXDOMAIN. Counts what it was asked."""

    def __init__(self, zone: str) -> None:
        self.records = RR.fromZone(zone)
        self.asked: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def resolve(self, request: DNSRecord, handler: Any) -> DNSRecord:
        reply = request.reply()
        qname, qtype = request.q.qname, request.q.qtype
        with self.lock:
            self.asked.append((str(qname).lower(), str(QTYPE.get(qtype))))
        names = [rr for rr in self.records if rr.rname == qname]
        if not names:
            reply.header.rcode = RCODE.NXDOMAIN
        for rr in names:
            if rr.rtype == qtype:
                reply.add_answer(rr)
        return reply


@contextmanager
def upstream_server(zone: str) -> Iterator[tuple[int, FixedResolver]]:
    """A dnslib DNS server on 127.0.0.1, UDP and TCP on one free port."""
    resolver = FixedResolver(zone)
    quiet = DNSLogger(logf=lambda _text: None)
    for attempt in range(20):  # the free UDP port the kernel picks may be taken for TCP: pick again
        udp = DNSServer(resolver, address=HOST, port=0, logger=quiet)
        port = udp.server.server_address[1]
        try:
            tcp = DNSServer(resolver, address=HOST, port=port, tcp=True, logger=quiet)
            break
        except OSError:
            udp.server.server_close()
            if attempt == 19:
                raise
    udp.start_thread()
    tcp.start_thread()
    try:
        yield port, resolver
    finally:
        for server in (udp, tcp):
            server.stop()
            server.server.server_close()


# ---- cluster objects -----------------------------------------------------------------------------------------------


def create(api: httpx.Client, path: str, body: Object) -> Object:
    response = api.post(path, json=body)
    assert response.status_code == 201, response.text
    result: Object = response.json()
    return result


def create_namespace(api: httpx.Client, name: str) -> None:
    create(api, "/api/v1/namespaces", {"metadata": {"name": name}})


def create_service(api: httpx.Client, ns: str, name: str, **spec: Any) -> Object:
    return create(api, f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": name}, "spec": spec})


def endpoint(address: str, hostname: str | None = None, *, ready: bool | None = True) -> Object:
    item: Object = {"addresses": [address]}
    if ready is not None:
        item["conditions"] = {"ready": ready}
    if hostname:
        item["hostname"] = hostname
    return item


def create_slice(
    api: httpx.Client,
    ns: str,
    service: str,
    name: str,
    endpoints: list[Object],
    ports: list[Object],
    address_type: str = "IPv4",
) -> Object:
    """An EndpointSlice of our own for a selectorless Service (no controller manages it)."""
    body = {
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": service}},
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    }
    return create(api, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", body)


def pod_body(name: str, labels: dict[str, str], **spec: Any) -> Object:
    container = {"name": "c", "image": "busybox", "ports": [{"name": "pg", "containerPort": 5432}]}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [container], **spec}}


def set_pod_status(api: httpx.Client, ns: str, name: str, address: str, *, ready: bool) -> None:
    status = {
        "status": {
            "phase": "Running",
            "podIP": address,
            "podIPs": [{"ip": address}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        }
    }
    response = api.patch(
        f"/api/v1/namespaces/{ns}/pods/{name}/status",
        content=json.dumps(status).encode(),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text


def run_pod(api: httpx.Client, ns: str, body: Object, address: str, *, ready: bool = True) -> None:
    create(api, f"/api/v1/namespaces/{ns}/pods", body)
    set_pod_status(api, ns, body["metadata"]["name"], address, ready=ready)
