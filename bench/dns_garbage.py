"""DNS latency at 10,000 qps while malformed packets arrive: tinykube (in `tinykube up`, and `tinykube dns` as a
process of its own) and knotd, in the same run.

One `tinykube up --dns-metrics-port 0`; N ClusterIP Services (default 1,000) with a named port, created through the
API as in `dns.py`; knotd serving the same records from a zone file on a free loopback port, and `tinykube dns`
against the same cluster; `dnsperf -Q 10000 -v` asking A and SRV for all of them (each server warmed first with one
pass, so tinykube answers from its response cache, as in `dns.py` (2)). Per round, for each of four conditions of
S seconds, against each server in turn:

- `none`: dnsperf alone;
- `to a sink`: the sender below running, but sending to a socket of its own (read and dropped): what the sender
  itself costs the machine (CPU, wakeups, loopback copies), for comparison;
- `spread`: dnsperf while a sender in this process sends `RATE` malformed packets per second (default 1,000) from
  20 loopback addresses (127.0.100.1-20): 50/s from each, under the server's per-source limit of 100/s, so tinykube
  parses every one and answers FORMERR (the most work garbage can cost it);
- `one source`: the same packets from 127.0.100.100 alone: past the burst the limit drops most of them unparsed.

The packets are `tests/dns/garbage.py`'s `mixed()`, made once before the runs: every kind of malformed packet in
turn (pointer loops and rings, labels and pointers past 255 octets, the report's chain of 5,000 pointers (10 KB, one
packet in 20), truncated headers and questions, reserved label types, long names, counts that lie, EDNS garbage,
responses, random bytes, 64 KB of noise one in 200). The sender is a thread of this process, sending what is due
every millisecond (not in bursts); it stops by itself after S seconds (at most RATE x S packets) and counts the
replies it gets.

Reported per server and condition: dnsperf's per-query p50/p99/max (median over the rounds of p99, the target's
figure), lost queries, garbage sent and answered; for tinykube, `tinykube_dns_malformed_total` over the run.
Target (issue 16): tinykube's p99 <= 2 ms at 10,000 qps with 1,000 malformed packets/s. Exits 1 when it is missed
or a query is lost.

`python dns_garbage.py [Services, 1000] [seconds per run, 10] [rounds, 3] [garbage per second, 1000]`
Everything runs on 127.0.0.1 (the garbage from other 127/8 addresses); every process started here is stopped by
its PID.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvloop
from common import percentile, start, stop, temporary_dir

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # for tests/dns/garbage.py, the packets the tests use too
from tests.dns.garbage import mixed  # noqa: E402


def _bench_dns() -> Any:
    """bench/dns.py, loaded under another name (a module called `dns` would shadow dnspython's, if installed)."""
    spec = importlib.util.spec_from_file_location("bench_dns", HERE / "dns.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_dns"] = module
    spec.loader.exec_module(module)
    return module


bd = _bench_dns()

LOAD_QPS = 10_000
TARGET_P99_MS = 2.0
SPREAD_SOURCES = [f"127.0.100.{i}" for i in range(1, 21)]
ONE_SOURCE = ["127.0.100.100"]
SINK = "to a sink"
CONDITIONS = {"none": [], SINK: SPREAD_SOURCES, "spread": SPREAD_SOURCES, "one source": ONE_SOURCE}
UP_LABEL = "tinykube (DNS in `tinykube up`)"
OWN_LABEL = "`tinykube dns` (own process)"
TICK = 0.001  # the sender sends what is due every TICK seconds: one packet a tick at 1,000/s, not bursts


class GarbageSender(threading.Thread):
    """`rate` packets/s to 127.0.0.1:`port` for `seconds`, round-robin over `sources`, then stops; counts replies.
    `port` 0: to a socket of its own, read and dropped (the control)."""

    def __init__(self, port: int, sources: list[str], rate: int, seconds: float, packets: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.sink: socket.socket | None = None
        if port == 0:
            self.sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sink.bind(("127.0.0.1", 0))
            self.sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self.sink.setblocking(False)
            port = self.sink.getsockname()[1]
        self.port, self.rate, self.seconds, self.packets = port, rate, seconds, packets
        self.socks = []
        for source in sources:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((source, 0))
            sock.setblocking(False)
            self.socks.append(sock)
        self.sent = 0
        self.replies = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        began = time.monotonic()
        limit = int(self.rate * self.seconds)
        tick = 0
        try:
            while self.sent < limit and time.monotonic() < began + self.seconds:
                tick += 1
                due = began + tick * TICK
                while self.sent < min(limit, int(tick * TICK * self.rate)):
                    sock = self.socks[self.sent % len(self.socks)]
                    with contextlib.suppress(OSError):  # send buffer full: lost, as UDP may be
                        sock.sendto(self.packets[self.sent % len(self.packets)], ("127.0.0.1", self.port))
                    self.sent += 1
                if tick % 20 == 0:
                    self._drain()
                time.sleep(max(0.0, due - time.monotonic()))
            end = time.monotonic() + 0.5  # replies still on their way
            while time.monotonic() < end:
                self._drain()
                time.sleep(0.01)
        finally:
            for sock in self.socks:
                sock.close()
            if self.sink is not None:
                self.sink.close()
            self.stopped.set()

    def _drain(self) -> None:
        while self.sink is not None:
            try:
                self.sink.recv(65535)
            except OSError:
                break
        for sock in self.socks:
            while True:
                try:
                    sock.recv(65535)
                except OSError:
                    break
                self.replies += 1


def malformed_counts(metrics: str) -> dict[str, int]:
    text = httpx.get(f"http://{metrics}/metrics", timeout=10).text
    return {k: int(float(v)) for k, v in re.findall(r'tinykube_dns_malformed_total\{result="(\w+)"\} (\S+)', text)}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def run_one(
    port: int, pid: int, queries: Path, seconds: int, sources: list[str], rate: int, packets: list[bytes], sink: bool
) -> dict[str, Any]:
    sender = GarbageSender(0 if sink else port, sources, rate, seconds, packets) if sources else None
    cpu = cpu_seconds(pid)
    if sender is not None:
        sender.start()
    try:
        run: dict[str, Any] = bd.dnsperf(port, queries, "-l", str(seconds), "-Q", str(LOAD_QPS), "-v")
    finally:
        if sender is not None:
            sender.join(seconds + 30)
    run["cpu"] = (cpu_seconds(pid) - cpu) / seconds  # of one core, over the run
    run["garbage_sent"] = sender.sent if sender else 0
    run["garbage_replies"] = sender.replies if sender else 0
    return run


def main(count: int = 1000, seconds: int = 10, rounds: int = 3, rate: int = 1000) -> int:
    failed: list[str] = []
    rows: list[str] = []
    print(f"load average at the start: {bd.load_average()}", file=sys.stderr, flush=True)
    packets = mixed(2000, seed=16)
    with temporary_dir("tinykube-bench-dns-garbage-") as workdir:
        bench = start("--dns-metrics-port", "0", data_dir=workdir / "cluster")
        knot: subprocess.Popen[bytes] | None = None
        standalone: subprocess.Popen[bytes] | None = None
        try:
            port, metrics = bd.dns_address(bench)
            with bench.client() as c:
                c.post("/api/v1/namespaces", json={"metadata": {"name": bd.NS}}).raise_for_status()
                while c.get(f"/api/v1/namespaces/{bd.NS}").status_code != 200:
                    time.sleep(0.01)
            _, last = uvloop.run(bd.load_services(bench, count))
            with bench.client() as c:
                listed = c.get("/api/v1/services").json()["items"]
            ips = {(s["metadata"]["namespace"], s["metadata"]["name"]): s["spec"]["clusterIP"] for s in listed}
            ours = bd.Resolver(port)
            want = (0, {ips[(bd.NS, last)]})
            bd.answered(ours.wait_for(bd.fqdn(last), "A", want, 30, 0.01), f"tinykube: {last}")
            ours.close()
            queries = workdir / "queries.txt"
            bd.query_file(queries, count)
            knot, knot_port = bd.start_knot(workdir / "knot", bd.zone_file(listed))
            theirs = bd.Resolver(knot_port)
            bd.answered(theirs.wait_for(bd.fqdn("s00000"), "A", (0, {ips[(bd.NS, "s00000")]}), 20, 0.05), "knotd")
            theirs.close()
            standalone, own_port = bd.start_standalone(bench, workdir / "dns.log")
            own = bd.Resolver(own_port)
            bd.answered(own.wait_for(bd.fqdn(last), "A", want, 60, 0.05), "tinykube dns")
            own.close()
            knot_label = f"knotd {bd.knot_version()}"
            targets = {knot_label: knot_port, UP_LABEL: port, OWN_LABEL: own_port}
            pids = {knot_label: knot.pid, UP_LABEL: bench.proc.pid, OWN_LABEL: standalone.pid}
            for target in targets.values():
                bd.dnsperf(target, queries, "-n", "1", "-q", "100", timeout=300)
            print(f"{count} Services; load average {bd.load_average()}", file=sys.stderr, flush=True)

            runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
            before = malformed_counts(metrics)
            for r in range(rounds):
                for condition, sources in CONDITIONS.items():  # the servers alternate: the machine's noise hits all
                    for label, target in targets.items():
                        run = run_one(target, pids[label], queries, seconds, sources, rate, packets, condition == SINK)
                        runs.setdefault((label, condition), []).append(run)
                        print(
                            f"round {r + 1} {label} / {condition}: {bd.spread(run)}, CPU {run['cpu']:.0%}, "
                            f"garbage sent {run['garbage_sent']}, replies {run['garbage_replies']}; "
                            f"load average {bd.load_average()}",
                            file=sys.stderr,
                            flush=True,
                        )
            after = malformed_counts(metrics)
        finally:
            for proc in (knot, standalone):
                if proc is not None:
                    bd.end(proc)
            stop(bench.proc)
    print(f"load average at the end: {bd.load_average()}", file=sys.stderr)

    for (label, condition), rs in sorted(runs.items(), key=lambda item: list(targets).index(item[0][0])):
        p99s = [percentile(r["latencies_ms"], 99) for r in rs]
        median = statistics.median(p99s)
        lost = sum(r["lost"] for r in rs)
        sent = sum(r["garbage_sent"] for r in rs)
        replies = sum(r["garbage_replies"] for r in rs)
        if condition == SINK:
            garbage = f"{sent:,} malformed packets sent to the sink"
        else:
            garbage = f"{sent:,} malformed sent, {replies:,} answered" if sent else "no malformed packets"
        rows.append(
            f"| {label}, {condition} | median p99 **{median:.3f} ms** | p99 {' / '.join(f'{p:.3f}' for p in p99s)} "
            f"ms; p50 {statistics.median(percentile(r['latencies_ms'], 50) for r in rs):.3f} ms; "
            f"max {max(max(r['latencies_ms']) for r in rs):.1f} ms; {lost:.0f} lost; server CPU "
            f"{statistics.median(r['cpu'] for r in rs):.0%} of a core; {garbage} |"
        )
        if label == UP_LABEL:
            if median > TARGET_P99_MS and condition != SINK:
                failed.append(f"tinykube, {condition}: median p99 {median:.3f} ms (target <= {TARGET_P99_MS} ms)")
            if lost:
                failed.append(f"tinykube, {condition}: {lost:.0f} queries lost")
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    rows.append(f"| `tinykube up`: tinykube_dns_malformed_total over the runs | {delta} | |")
    print(f"| server, malformed packets ({rate:,}/s, {seconds} s runs, {rounds} rounds) | result | details |")
    print("|---|---|---|")
    print("\n".join(rows))
    for problem in failed:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:5])))
