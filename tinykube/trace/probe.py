"""The one real connection a trace makes: a short Python run inside the source's namespace (`ip netns exec`, so a
pod's own resolv.conf applies), bound to the trace's fixed client port. TCP: connect, send an HTTP GET, read the
answer (tinykube's echoserver answers `client_address=…`, the address the endpoint saw). UDP: one datagram, one
answer awaited."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass

from tinykube.sandbox.netns import exec_argv

CLIENT_ADDRESS = re.compile(r"^client_address=(\S+)", re.MULTILINE)
PORTS = (41000, 48999)  # the fixed client port is picked at random here, so two traces rarely share a port

_CODE = r"""
import errno, json, socket, sys
host, port, sport, proto, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
out = {"outcome": "answered", "reply": "", "body": ""}
kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
s = socket.socket(socket.AF_INET, kind)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.settimeout(timeout)
try:
    s.bind(("0.0.0.0", sport))
    s.connect((host, port))
    if proto == "tcp":
        head = "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nUser-Agent: tinykube-trace\r\n\r\n"
        s.sendall((head % host).encode())
    elif port == 53:  # a real question, so a DNS server answers
        name = b"".join(bytes([len(p)]) + p for p in b"kubernetes.default.svc.cluster.local".split(b".")) + b"\0"
        s.send(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + name + b"\x00\x01\x00\x01")
    else:
        s.send(b"tinykube trace\n")
    data = b""
    while len(data) < 65536:
        chunk = s.recv(65536)
        data += chunk
        if not chunk or proto == "udp":
            break
    if proto == "udp" and port == 53 and len(data) >= 12:
        rcode, count = data[3] & 15, data[6] * 256 + data[7]
        out["reply"] = f"a DNS answer ({len(data)} bytes, rcode {rcode}, {count} answer records)"
    else:
        text = data.decode("utf-8", "replace")
        out["body"] = text
        first = text.splitlines()[0] if text else "(connection closed without an answer)"
        out["reply"] = "".join(c if c.isprintable() else "?" for c in first)[:200]
except ConnectionRefusedError:
    out["outcome"] = "refused"
    out["reply"] = "connection refused"
except socket.timeout:
    out["outcome"] = "timed out" if not out["reply"] else "answered"
    out["reply"] = out["reply"] or "no answer"
except OSError as err:
    out["outcome"] = "dropped" if err.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH) else "error"
    out["reply"] = f"{err.strerror or err}"
finally:
    s.close()
print(json.dumps(out))
"""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    outcome: str  # "answered" | "refused" | "dropped" | "timed out" | "error"
    reply: str  # the answer's first line, or what went wrong
    body: str  # the whole answer
    seen_client: str | None  # the echoserver's client_address=


def pick_port() -> int:
    return random.randint(*PORTS)


def probe(netns: str, host: str, port: int, sport: int, proto: str = "tcp", timeout: float = 2.0) -> ProbeResult:
    """One connection attempt from `netns` to host:port from client port `sport`."""
    argv = exec_argv(netns, [sys.executable, "-c", _CODE, host, str(port), str(sport), proto, str(timeout)])
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout + 20)
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return ProbeResult("error", done.stderr.strip()[-300:] or "the probe printed nothing", "", None)
    body = str(found.get("body", ""))
    seen = CLIENT_ADDRESS.search(body)
    return ProbeResult(str(found["outcome"]), str(found["reply"]), body, seen[1] if seen else None)
