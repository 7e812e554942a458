"""Node proxy, nftables mode: full and incremental syncs at 10,000 Services, and new-connection latency through
the table (issue 7).

Everything happens in throwaway network namespaces `tkbench-<pid>-*` (root only): the root namespace gets no
rules, routes, addresses or links, and no traffic leaves loopback except inside those namespaces.

(1) Full sync: N ServicePorts (default 10,000, ClusterIP, TCP 80) with E endpoints each (default 10) built in
    memory; `NftablesProxier.sync(ports, full=True)` into a fresh namespace, three runs (a fresh namespace and
    proxier each). Reported: the sync's total (`last_duration`), the nft apply part (the bench's runner does what
    `NftRunner.apply` does, `ip netns exec NS nft -f -`, timed and with a timeout) and the rest (plan + render, in
    Python); plus `plan()` and `render_full()` timed on their own, and the script's size.
(2) Incremental sync: with an M-Service table loaded (M: 4th argument, default N), 100 `sync()` calls each
    changing one endpoint of the middle Service (alternately adding an 11th endpoint and removing it again); per
    sync the total and the nft apply part, p50/p99. The same with a 100-Service table, to show whether the cost
    depends on the table's size; and `plan()` / `render_diff()` of one change timed on their own at both sizes.
(3) Connection latency: namespaces `node` (the proxy table), `pod` (listeners on 10.244.0.2:8080-8089, joined to
    the node by a veth) and `client` (10.243.0.2, joined to the node by another veth; its default route is the
    node). The first and the last Service's 10 endpoints are the pod's 10 ports. From the client namespace,
    TCP connect() to the first ClusterIP, the last ClusterIP and the pod IP directly (no Service: the proxy's
    map lookups still run, nothing matches), K connects each (default 2,000), interleaved in rotating order after a
    warm-up; p50/p99 of the connect() call, and the last/first ratio. The same with the 100-Service table (K/2
    each; the pod IP there being the "small table" baseline for non-service traffic).

`python proxy.py [Services, 10000] [endpoints each, 10] [connects per target, 2000] [Services of the table for
(2) and (3), default the first]`. Each nft apply is killed after APPLY_TIMEOUT (150 s); a full sync that is killed
counts as missed and ends (1). Root only.
Exits 1 if a target is missed. The iptables mode does not exist in tinykube yet, so nothing compares with it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from common import percentile

from tinykube.node import netns
from tinykube.proxy.model import Endpoint, ServicePort
from tinykube.proxy.nftables import (
    NFT,
    NftablesProxier,
    NftError,
    NftRunner,
    NodeConfig,
    plan,
    render_diff,
    render_full,
)

PREFIX = f"tkbench-{os.getpid()}"
NODE_IP, POD_IP, CLIENT_IP, CLIENT_GW = "10.244.0.1", "10.244.0.2", "10.243.0.2", "10.243.0.1"
POD_PORTS = tuple(range(8080, 8090))
CONFIG = NodeConfig(
    node_name="node-1", node_ips=[NODE_IP], cluster_cidr="10.244.0.0/14", service_cidrs=["10.96.0.0/16"]
)
FULL_TARGET = 2.0  # seconds, full sync of 10,000 Services x 10 endpoints
INCREMENTAL_TARGET = 0.020  # seconds, p99 of one change
RATIO_TARGET = 0.10  # last vs first ClusterIP connect latency
SMALL = 100  # Services of the comparison table
INCREMENTAL_SYNCS = 100
WARMUP = 100  # connects per target, discarded
DEADLINE = 25 * 60  # seconds for the whole run (SIGALRM)
APPLY_TIMEOUT = 150  # seconds for the nft apply of one full sync in (1)
FIRST_EXTRA = ipaddress.ip_address("10.244.1.0")


class Interrupted(Exception):
    pass


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signal.Signals(signum).name)


# ---------------------------------------------------------------------------------------------------------------
# Desired state


def cluster_ip(i: int) -> str:
    return f"10.96.{i // 250}.{i % 250 + 1}"


def service(i: int, endpoints: tuple[Endpoint, ...]) -> ServicePort:
    return ServicePort(
        namespace="bench",
        name=f"s{i:05d}",
        port_name="http",
        protocol="tcp",
        port=80,
        cluster_ips=(cluster_ip(i),),
        external_ips=(),
        load_balancer_ips=(),
        node_port=0,
        external_local=False,
        internal_local=False,
        affinity_timeout=0,
        health_check_node_port=0,
        endpoints=endpoints,
    )


def ports(count: int, per: int) -> list[ServicePort]:
    """`count` Services of `per` endpoints each; the first and the last lead to the pod's listeners, the others to
    distinct addresses in the cluster CIDR (10.244.1.0 on), spread over 10 nodes."""
    found = []
    for i in range(count):
        if i in (0, count - 1):
            eps = tuple(Endpoint(POD_IP, p, "node-1", True, True, False) for p in POD_PORTS[:per])
        else:
            eps = tuple(
                Endpoint(str(FIRST_EXTRA + i * per + e), 8080, f"node-{e % 10 + 1}", True, True, False)
                for e in range(per)
            )
        found.append(service(i, eps))
    return found


# ---------------------------------------------------------------------------------------------------------------
# Namespaces


class Namespaces:
    """Every namespace this run creates, deleted by `close()` (which the caller runs in a `finally`)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def add(self, suffix: str) -> str:
        name = f"{PREFIX}-{suffix}"
        netns.delete(name)
        self.made.append(name)
        netns.ip("netns", "add", name)
        netns.ip("link", "set", "lo", "up", netns=name)
        return name

    def drop(self, name: str) -> None:
        netns.delete(name)
        if name in self.made:
            self.made.remove(name)

    def close(self) -> None:
        for name in reversed(self.made):
            netns.delete(name)
        self.made.clear()


def topology(spaces: Namespaces) -> tuple[str, str, str]:
    """node <-veth-> pod, node <-veth-> client; all configuration done inside the new namespaces."""
    node, pod, client = spaces.add("node"), spaces.add("pod"), spaces.add("client")
    for key in ("net.ipv4.conf.all.send_redirects", "net.ipv4.conf.default.send_redirects"):
        netns.write_sysctl(node, key, "0")
    netns.write_sysctl(node, "net.ipv4.ip_forward", "1")
    netns.ip_batch(
        node,
        [
            f"link add veth-p type veth peer name veth-n netns {pod}",
            f"link add veth-c type veth peer name veth-n netns {client}",
            f"addr add {NODE_IP}/24 dev veth-p",
            f"addr add {CLIENT_GW}/24 dev veth-c",
            "link set veth-p up",
            "link set veth-c up",
        ],
    )
    netns.ip_batch(pod, [f"addr add {POD_IP}/24 dev veth-n", "link set veth-n up", f"route add default via {NODE_IP}"])
    netns.ip_batch(
        client, [f"addr add {CLIENT_IP}/24 dev veth-n", "link set veth-n up", f"route add default via {CLIENT_GW}"]
    )
    return node, pod, client


# ---------------------------------------------------------------------------------------------------------------
# Timing


class TimedRunner:
    """NftRunner's `apply` (`ip netns exec NS nft -f -`, which execs nft) bounded by `timeout`, remembering how long
    the last one took."""

    def __init__(self, name: str, timeout: float = 120) -> None:
        self.inner = NftRunner(name)
        self.timeout = timeout
        self.last = 0.0

    def apply(self, script: str) -> None:
        start = time.perf_counter()
        try:
            done = subprocess.run(
                netns.exec_argv(self.inner.netns or "", [NFT, "-f", "-"]),
                input=script,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        finally:
            self.last = time.perf_counter() - start
        if done.returncode != 0:
            raise NftError(done.stderr.strip())


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def full_sync_runs(spaces: Namespaces, table: list[ServicePort], runs: int = 3) -> list[dict[str, float]]:
    """Each run into a fresh namespace; a run whose nft apply exceeds APPLY_TIMEOUT is recorded with `timeout` set
    (total and apply then being lower bounds) and ends the series."""
    results = []
    for run in range(runs):
        name = spaces.add(f"full{run}")
        try:
            runner = TimedRunner(name, APPLY_TIMEOUT)
            proxier = NftablesProxier(CONFIG, runner)
            try:
                proxier.sync(table, full=True)
            except subprocess.TimeoutExpired:
                results.append({"total": proxier.last_duration, "apply": runner.last, "rules": -1, "timeout": 1})
                break
            rules = runner.inner.dump().count("dnat to")
            results.append({"total": proxier.last_duration, "apply": runner.last, "rules": rules, "timeout": 0})
        finally:
            spaces.drop(name)
    return results


def incremental(proxier: NftablesProxier, runner: TimedRunner, table: list[ServicePort]) -> dict[str, list[float]]:
    """100 syncs, each adding or removing one endpoint of the middle Service."""
    middle = len(table) // 2
    base = table[middle]
    extra = Endpoint("10.247.255.1", 8080, "node-2", True, True, False)
    grown = dataclasses.replace(base, endpoints=(*base.endpoints, extra))
    totals, applies = [], []
    current = list(table)
    for i in range(INCREMENTAL_SYNCS):
        current[middle] = grown if i % 2 == 0 else base
        start = time.perf_counter()
        proxier.sync(current)
        totals.append(time.perf_counter() - start)
        applies.append(runner.last)
    return {"total": totals, "apply": applies}


def python_parts(table: list[ServicePort]) -> dict[str, float]:
    """plan() of the whole table and render_diff() of one endpoint change, on their own (median of 5)."""
    middle = len(table) // 2
    changed = list(table)
    extra = Endpoint("10.247.255.1", 8080, "node-2", True, True, False)
    changed[middle] = dataclasses.replace(table[middle], endpoints=(*table[middle].endpoints, extra))
    old = plan(CONFIG, table)
    new = plan(CONFIG, changed)
    plans = [timed(lambda: plan(CONFIG, changed))[0] for _ in range(5)]
    diffs = [timed(lambda: render_diff(old, new))[0] for _ in range(5)]
    renders = [timed(lambda: render_full(new))[0] for _ in range(3)]
    return {
        "plan": statistics.median(plans),
        "diff": statistics.median(diffs),
        "render_full": statistics.median(renders),
        "diff_lines": render_diff(old, new).count("\n"),
        "full_lines": render_full(new).count("\n"),
    }


# ---------------------------------------------------------------------------------------------------------------
# Connections


@dataclasses.dataclass
class Listeners:
    sockets: list[socket.socket]
    threads: list[threading.Thread]
    stop: threading.Event

    def close(self) -> None:
        self.stop.set()
        for sock in self.sockets:
            sock.close()
        for thread in self.threads:
            thread.join(2)


def listen(pod: str) -> Listeners:
    def make() -> list[socket.socket]:
        made = []
        for port in POD_PORTS:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((POD_IP, port))
            sock.listen(1024)
            sock.settimeout(0.2)
            made.append(sock)
        return made

    sockets = netns.run_in(pod, make)
    stop = threading.Event()

    def serve(sock: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (TimeoutError, OSError):
                continue
            conn.close()

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in sockets]
    for thread in threads:
        thread.start()
    return Listeners(sockets, threads, stop)


def connect_latencies(client: str, targets: dict[str, str], count: int) -> dict[str, list[float]]:
    """From inside `client` (one thread that entered it): `count` timed connect() calls per target, interleaved in
    rotating order; each connection to a random one of the pod's ports, closed at once."""

    def measure() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {label: [] for label in targets}
        labels = list(targets)
        rng = random.Random(7)
        for i in range(WARMUP + count):
            order = labels[i % len(labels) :] + labels[: i % len(labels)]
            for label in order:
                sock = socket.socket()
                sock.settimeout(3)
                port = 80 if targets[label].startswith("10.96.") else rng.choice(POD_PORTS)
                try:
                    start = time.perf_counter_ns()
                    sock.connect((targets[label], port))
                    elapsed = (time.perf_counter_ns() - start) / 1e9
                finally:
                    sock.close()
                if i >= WARMUP:
                    found[label].append(elapsed)
        return found

    return netns.run_in(client, measure)


# ---------------------------------------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value * 1000:.2f} ms"


def us(value: float) -> str:
    return f"{value * 1e6:.0f} us"


@dataclasses.dataclass
class Report:
    rows: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)

    def add(self, what: str, result: str, target: str = "", ok: bool | None = None) -> None:
        if ok is not None:
            target += " — " + ("met" if ok else "MISSED")
            if not ok:
                self.failed.append(what)
        self.rows.append((what, result, target))
        print(f"  {what}: {result} {target}", flush=True)

    def table(self) -> str:
        out = ["| benchmark | result | target |", "|---|---|---|"]
        out += [f"| {w} | {r} | {t} |" for w, r, t in self.rows]
        return "\n".join(out)


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    connects = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    scale = int(sys.argv[4]) if len(sys.argv) > 4 else count  # Services of the table for (2) and (3)
    if os.geteuid() != 0:
        print("root only (network namespaces)", file=sys.stderr)
        return 2
    print(f"load average at start: {os.getloadavg()}", flush=True)
    report = Report()
    spaces = Namespaces()
    listeners: Listeners | None = None
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGALRM, _interrupt)
    signal.alarm(DEADLINE)
    try:
        big, small = ports(count, per), ports(SMALL, per)
        loaded = big if scale == count else ports(scale, per)
        label = f"{count:,} Services x {per} endpoints"

        print(f"(1) full sync, {label}", flush=True)
        parts = python_parts(big)
        runs = full_sync_runs(spaces, big)
        totals = [r["total"] for r in runs]
        report.add(
            f"full sync, {label} ({len(runs)} runs)",
            ", ".join(f"{'> ' if r['timeout'] else ''}{r['total']:.2f} s" for r in runs),
            f"<= {FULL_TARGET:.0f} s each",
            all(t <= FULL_TARGET for t in totals),
        )
        report.add(
            "  of which nft apply",
            ", ".join(f"{'> ' if r['timeout'] else ''}{r['apply']:.2f} s" for r in runs)
            + (f" (killed after {APPLY_TIMEOUT} s)" if runs[-1]["timeout"] else ""),
        )
        report.add("  of which plan + render (Python)", ", ".join(f"{r['total'] - r['apply']:.2f} s" for r in runs))
        report.add(
            "  plan() / render_full() alone",
            f"{parts['plan']:.2f} s / {parts['render_full']:.2f} s ({parts['full_lines']:,} script lines)",
        )
        report.add("  dnat rules in the kernel after the sync", ", ".join(str(int(r["rules"])) for r in runs))

        node, pod, client = topology(spaces)
        listeners = listen(pod)
        first_last: dict[int, dict[str, list[float]]] = {}
        for size, table in ((SMALL, small), (scale, loaded)):
            runner = TimedRunner(node, APPLY_TIMEOUT)
            proxier = NftablesProxier(CONFIG, runner)
            proxier.sync(table, full=True)
            print(f"(2) incremental syncs at {size:,} Services (loaded in {proxier.last_duration:.2f} s)", flush=True)
            inc = incremental(proxier, runner, table)
            p99 = percentile(inc["total"], 99)
            checks = (
                {"target": f"p99 <= {INCREMENTAL_TARGET * 1000:.0f} ms", "ok": p99 <= INCREMENTAL_TARGET}
                if size == scale
                else {}
            )
            report.add(
                f"one endpoint change, {size:,} Services: sync() p50 / p99",
                f"{ms(percentile(inc['total'], 50))} / {ms(p99)}",
                **checks,
            )
            report.add(
                "  of which nft apply p50 / p99",
                f"{ms(percentile(inc['apply'], 50))} / {ms(percentile(inc['apply'], 99))}",
            )
            sub = python_parts(table)
            report.add(
                "  plan() of all ports / render_diff() alone",
                f"{ms(sub['plan'])} / {ms(sub['diff'])} ({sub['diff_lines']} script lines)",
            )
            assert proxier.full_syncs == 1 and proxier.failures == 0, (proxier.full_syncs, proxier.failures)

            each = connects if size == scale else connects // 2
            print(f"(3) connect latency at {size:,} Services, {each} each", flush=True)
            lat = connect_latencies(client, {"first": cluster_ip(0), "last": cluster_ip(size - 1), "pod": POD_IP}, each)
            first_last[size] = lat
            for target in ("first", "last", "pod"):
                what = {"first": "ClusterIP of Service 1", "last": f"ClusterIP of Service {size:,}", "pod": "pod IP"}
                report.add(
                    f"connect() {what[target]}, {size:,}-Service table: p50 / p99",
                    f"{us(percentile(lat[target], 50))} / {us(percentile(lat[target], 99))}",
                )
            ratio = percentile(lat["last"], 50) / percentile(lat["first"], 50)
            ratio99 = percentile(lat["last"], 99) / percentile(lat["first"], 99)
            report.add(
                f"  last / first, {size:,} Services: p50 ratio (p99 ratio)",
                f"{ratio:.3f} ({ratio99:.3f})",
                **(
                    {"target": f"within {RATIO_TARGET:.0%}", "ok": abs(ratio - 1) <= RATIO_TARGET}
                    if size == scale
                    else {}
                ),
            )
        pod_ratio = percentile(first_last[scale]["pod"], 50) / percentile(first_last[SMALL]["pod"], 50)
        report.add(f"pod IP p50, {scale:,} vs {SMALL}-Service table", f"{pod_ratio:.3f}")
        report.add("compared with the iptables mode", "not measured: tinykube has no iptables mode yet")
    except Interrupted as err:
        print(f"interrupted by {err}", file=sys.stderr)
        return 3
    finally:
        signal.alarm(0)
        if listeners:
            listeners.close()
        spaces.close()
        left = netns.list_netns(PREFIX)
        print(f"namespaces left: {left or 'none'}", flush=True)
    print(f"\nload average at end: {os.getloadavg()}\n")
    print(report.table())
    if report.failed:
        print("\nMISSED: " + "; ".join(report.failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
