"""RBAC authorization against a real `tinykube up` (`python rbac.py [SECONDS [BINDINGS_PER_NS]]`; needs wrk).

Two clusters run side by side: A with RBAC (the default) and B with `--authorization-mode AlwaysAllow`, the
reference. In each, a ServiceAccount `reader` in `bench-rbac` is allowed `get` on ConfigMaps by a RoleBinding to a
Role, and a ConfigMap `bench-get` is read with `wrk` (2 threads, 16 connections, as api.py's GET but with more
connections): on A as the administrator (system:masters, allowed before RBAC is asked) and as the ServiceAccount
(the RBAC path), on B as the ServiceAccount (authentication as on A, no RBAC). The three alternate, three rounds,
so the machine's drift reaches all of them alike. Besides the rate and p99, the CPU of A's and B's `up` process per
request (from /proc, all its threads) is reported: the noise of other jobs moves it less than the rate.

Then 10,000 RoleBindings (100 in each of 100 namespaces, the ServiceAccount's own among them), 900 Roles, 100
ClusterRoles and 100 ClusterRoleBindings are created in both clusters, their subjects other ServiceAccounts, users
and groups, and the GETs are measured again: a decision should cost the rules of the user's own bindings, so the
rate must stay what it was (as B's does). How long a new RoleBinding takes to be in force is measured before and
after: a fresh ServiceAccount is refused, its RoleBinding is written, and its GET is repeated until allowed. The
ServiceAccount's first GETs after the fill are timed too: the first is where the index catches up with the fill.
Last, with py-spy installed, A's `up` process is sampled during one more RBAC run (and B's during a reference run)
to report the share of CPU spent in the authorization filter (outside the handlers it hands on to).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import uvloop
from common import Bench, Connection, start, stop, temporary_dir

NS = "bench-rbac"
CM_PATH = f"/api/v1/namespaces/{NS}/configmaps/bench-get"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
NAMESPACES = [NS] + [f"rbac-{i:02d}" for i in range(1, 100)]
BINDINGS_PER_NAMESPACE = 100
ROLES_PER_NAMESPACE = 9
CLUSTER_ROLES = 100
CLUSTER_BINDINGS = 100
CONNECTIONS = 16
REPO = Path(__file__).resolve().parent.parent


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Run:
    label: str
    rate: float
    p99: str
    requests: int
    cpu_us: float  # CPU of the `up` process per request
    load: str


def wrk(bench: Bench, token: str, label: str, seconds: int) -> Run:
    cmd = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-H", f"Authorization: Bearer {token}"]
    before = cpu_seconds(bench.proc.pid)
    out = subprocess.run([*cmd, bench.server + CM_PATH], capture_output=True, text=True, timeout=seconds + 60).stdout
    cpu = cpu_seconds(bench.proc.pid) - before
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{label}: wrk saw {errors.group(1)} failed requests")
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"^\s*99%\s+(\S+)", out, re.M).group(1)  # type: ignore[union-attr]
    run = Run(label, rate, p99, requests, cpu / max(requests, 1) * 1e6, load())
    print(f"  {label}: {rate:,.0f}/s p99 {p99}, {run.cpu_us:.0f} µs CPU/request, load {run.load}", flush=True)
    return run


# ---- objects ------------------------------------------------------------------------------------------------------


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    kind = "Role" if namespace else "ClusterRole"
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def binding(name: str, ref_kind: str, ref_name: str, subjects: list[dict[str, str]], namespace: str = "") -> Any:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": ref,
        "subjects": subjects,
    }


def sa_subject(name: str, namespace: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def other_subjects(i: int, namespace: str) -> list[dict[str, str]]:
    """Subjects that are not the benchmark's ServiceAccount nor any of its groups."""
    group = "rbac.authorization.k8s.io"
    return [
        sa_subject(f"sa-{i:05d}", namespace),
        {"apiGroup": group, "kind": "User", "name": f"user-{i:05d}@example.com"},
        {"apiGroup": group, "kind": "Group", "name": f"team-{i % 50:02d}"},
    ]


def population() -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """(namespaces, roles and cluster roles) first, then the bindings, as (collection path, body)."""
    first: list[tuple[str, dict[str, Any]]] = []
    bindings: list[tuple[str, dict[str, Any]]] = []
    resources = ["configmaps", "secrets", "pods", "services", "endpoints", "deployments", "jobs", "leases", "events"]
    for ns in NAMESPACES[1:]:
        first.append(("/api/v1/namespaces", {"metadata": {"name": ns}}))
    for c in range(CLUSTER_ROLES):
        rules = [
            {"apiGroups": ["", "apps"], "resources": [resources[c % 9]], "verbs": ["get", "list", "watch"]},
            {"nonResourceURLs": [f"/bench/{c}"], "verbs": ["get"]},
        ]
        first.append((f"{RBAC}/clusterroles", role(f"bench-cr-{c:03d}", rules)))
    for ns in NAMESPACES:
        for r in range(ROLES_PER_NAMESPACE):
            rules = [
                {"apiGroups": [""], "resources": [resources[r]], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [f"cm-{r}"], "verbs": ["*"]},
            ]
            first.append((f"{RBAC}/namespaces/{ns}/roles", role(f"role-{r}", rules, ns)))
    i = 0
    for ns in NAMESPACES:
        for b in range(BINDINGS_PER_NAMESPACE):
            ref = ("Role", f"role-{b % ROLES_PER_NAMESPACE}") if b % 2 else ("ClusterRole", f"bench-cr-{b:03d}")
            body = binding(f"rb-{b:03d}", *ref, other_subjects(i, ns), ns)
            bindings.append((f"{RBAC}/namespaces/{ns}/rolebindings", body))
            i += 1
    for c in range(CLUSTER_BINDINGS):
        body = binding(f"bench-crb-{c:03d}", "ClusterRole", f"bench-cr-{c:03d}", other_subjects(i, NAMESPACES[c]))
        bindings.append((f"{RBAC}/clusterrolebindings", body))
        i += 1
    return first, bindings


async def _create_all(bench: Bench, items: list[tuple[str, dict[str, Any]]], workers: int = 32) -> None:
    queue = list(reversed(items))

    async def worker() -> None:
        connection = Connection(bench)
        try:
            while queue:
                path, body = queue.pop()
                status, payload = await connection.exchange("POST", path, orjson.dumps(body))
                if status not in (201, 409):
                    raise RuntimeError(f"POST {path}: {status} {payload[:300]!r}")
        finally:
            await connection.close()

    await asyncio.gather(*(worker() for _ in range(workers)))


def fill(bench: Bench) -> tuple[int, float]:
    first, bindings = population()
    began = time.perf_counter()
    uvloop.run(asyncio.wait_for(_create_all(bench, first), 600))
    uvloop.run(asyncio.wait_for(_create_all(bench, bindings), 600))
    return len(first) + len(bindings), time.perf_counter() - began


async def _setup(bench: Bench, account: str, bind: bool = True) -> str:
    """The ServiceAccount (and, with `bind`, its RoleBinding to `cm-reader`); its token."""
    admin = Connection(bench)
    try:
        for path, body in (
            ("/api/v1/namespaces", {"metadata": {"name": NS}}),
            (f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "bench-get"}, "data": {"k": "v"}}),
            (
                f"{RBAC}/namespaces/{NS}/roles",
                role("cm-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}], NS),
            ),
            (f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": account}}),
        ):
            status, payload = await admin.exchange("POST", path, orjson.dumps(body))
            if status not in (201, 409):
                raise RuntimeError(f"POST {path}: {status} {payload[:300]!r}")
        if bind:
            body = binding(account, "Role", "cm-reader", [sa_subject(account, NS)], NS)
            await admin.request("POST", f"{RBAC}/namespaces/{NS}/rolebindings", orjson.dumps(body))
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        path = f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token"
        return str((await admin.request("POST", path, orjson.dumps(request)))["status"]["token"])
    finally:
        await admin.close()


def setup(bench: Bench, account: str = "reader") -> str:
    return uvloop.run(_setup(bench, account))


async def _in_force(bench: Bench, trials: int, tag: str) -> list[tuple[float, float, int]]:
    """(the binding's write, write -> first allowed GET, GETs it took) per fresh ServiceAccount."""
    results = []
    admin = Connection(bench)
    try:
        for k in range(trials):
            account = f"late-{tag}-{k:02d}"
            token = await _setup(bench, account, bind=False)
            reader = Connection(dataclasses.replace(bench, token=token))
            try:
                status, _ = await reader.exchange("GET", CM_PATH)
                if status != 403:
                    raise RuntimeError(f"{account} before its binding: {status}, not 403")
                body = orjson.dumps(binding(account, "Role", "cm-reader", [sa_subject(account, NS)], NS))
                began = time.perf_counter()
                await admin.request("POST", f"{RBAC}/namespaces/{NS}/rolebindings", body)
                written = time.perf_counter()
                tries = 0
                while True:
                    tries += 1
                    status, _ = await reader.exchange("GET", CM_PATH)
                    if status == 200:
                        break
                    if status != 403 or time.perf_counter() - began > 10:
                        raise RuntimeError(f"{account} after its binding: {status}")
                allowed = time.perf_counter()
                results.append((written - began, allowed - began, tries))
            finally:
                await reader.close()
    finally:
        await admin.close()
    return results


def in_force(bench: Bench, trials: int, tag: str) -> str:
    results = uvloop.run(asyncio.wait_for(_in_force(bench, trials, tag), 300))
    writes = [w * 1000 for w, _, _ in results]
    allowed = [a * 1000 for _, a, _ in results]
    tries = max(t for _, _, t in results)
    return (
        f"write median {statistics.median(writes):.1f} ms; write -> allowed median {statistics.median(allowed):.1f} "
        f"ms, max {max(allowed):.1f} ms; GETs until allowed: at most {tries} ({trials} bindings)"
    )


async def _first_decisions(bench: Bench, token: str) -> list[float]:
    reader = Connection(dataclasses.replace(bench, token=token))
    try:
        await reader.open()
        times = []
        for _ in range(3):
            began = time.perf_counter()
            status, _ = await reader.exchange("GET", CM_PATH)
            times.append(time.perf_counter() - began)
            if status != 200:
                raise RuntimeError(f"GET as the ServiceAccount after the fill: {status}")
        return times
    finally:
        await reader.close()


def first_decisions(bench: Bench, token: str) -> str:
    """The ServiceAccount's first GETs after the fill: the first is where the index catches up with the fill's
    events (or rebuilds, if more came than the watch cache's window holds), as no request before it was put to
    RBAC (the administrator's are allowed before)."""
    times = uvloop.run(_first_decisions(bench, token))
    return "first GETs as the ServiceAccount after the fill: " + " / ".join(f"{t * 1000:.1f} ms" for t in times)


# ---- py-spy -------------------------------------------------------------------------------------------------------


def _await_lines(relative: str) -> set[int]:
    """The lines of a middleware's `await self.app(...)`: a sample stopped there is in what it hands on to."""
    lines = (REPO / relative).read_text().splitlines()
    return {n for n, line in enumerate(lines, 1) if "await self.app(" in line}


def _short(file: str) -> str:
    return file[file.index("tinykube/") :] if "tinykube/" in file else file


FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def profile_shares(raw: Path) -> tuple[int, dict[str, int], Counter[str]]:
    """From py-spy's raw (collapsed) output: the event loop's samples (the thread the API is served on: a pool
    thread blocked in its queue's `get` is sampled as busy), those in each middleware's own code (the outermost
    frame of its file not at an `await self.app(`), and the samples in each function called by the authorization
    filter (inclusive)."""
    middlewares = {
        "authorization": (
            "tinykube/apiserver/auth/authorization.py",
            _await_lines("tinykube/apiserver/auth/authorization.py"),
        ),
        "authentication": (
            "tinykube/apiserver/auth/authentication.py",
            _await_lines("tinykube/apiserver/auth/authentication.py"),
        ),
    }
    total = 0
    own: dict[str, int] = dict.fromkeys(middlewares, 0)
    where: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        if "Runner.run (" not in stack:
            continue
        total += count
        frames = [m.groups() for f in stack.split(";") if (m := FRAME.match(f))]
        for name, (suffix, awaits) in middlewares.items():
            mine = [(fn, file, int(n)) for fn, file, n in frames if file.endswith(suffix)]
            if not mine or mine[0][2] in awaits:
                continue
            own[name] += count
            if name == "authorization":
                outer = frames.index(next(f for f in frames if f[1].endswith(suffix)))
                functions = {f"{fn} ({_short(file)})" for fn, file, _ in frames[outer + 1 :]}
                where.update(dict.fromkeys(functions, count))
    return total, own, where


def profile(bench: Bench, token: str, label: str, seconds: int, out_dir: Path) -> tuple[Run, str]:
    raw = out_dir / f"{label.split()[0]}.txt"
    spy = subprocess.Popen(
        [
            "py-spy",
            "record",
            "-p",
            str(bench.proc.pid),
            "-r",
            "100",
            "-d",
            str(seconds + 2),
            "-f",
            "raw",
            "-o",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(1)
        run = wrk(bench, token, label, seconds)
        spy.wait(seconds + 60)
    finally:
        stop(spy)
    if not raw.exists():
        return run, f"{label}: py-spy wrote nothing"
    total, own, where = profile_shares(raw)
    top = "; ".join(f"{k} {v / total:.1%}" for k, v in where.most_common(8))
    summary = (
        f"{label}: {total} samples; authorization filter {own['authorization'] / total:.1%}, authentication "
        f"{own['authentication'] / total:.1%}" + (f"; in the filter (inclusive): {top}" if top else "")
    )
    return run, summary


# ---- the run ------------------------------------------------------------------------------------------------------


def settle(bench: Bench, limit: float = 60) -> float:
    """Wait until the `up` process is under 5 % of a core for 0.5 s (its controllers done with the new objects);
    the seconds it took (at most `limit`)."""
    began = time.perf_counter()
    while time.perf_counter() - began < limit:
        before = cpu_seconds(bench.proc.pid)
        time.sleep(0.5)
        if cpu_seconds(bench.proc.pid) - before < 0.025:
            break
    return time.perf_counter() - began


def rounds(a: Bench, b: Bench, tokens: dict[str, str], seconds: int, phase: str, count: int = 3) -> list[Run]:
    runs = []
    for _ in range(count):
        runs.append(wrk(a, a.token, f"{phase} (a) admin", seconds))
        runs.append(wrk(a, tokens["a"], f"{phase} (b) SA, RBAC", seconds))
        runs.append(wrk(b, tokens["b"], f"{phase} (c) SA, AlwaysAllow", seconds))
    return runs


def row(runs: list[Run], label: str) -> tuple[str, float, float]:
    mine = [r for r in runs if r.label == label]
    rate = statistics.median(r.rate for r in mine)
    cpu = statistics.median(r.cpu_us for r in mine)
    rates = " / ".join(f"{r.rate:,.0f}" for r in mine)
    p99s = " / ".join(r.p99 for r in mine)
    cpus = " / ".join(f"{r.cpu_us:.0f}" for r in mine)
    loads = ", ".join(r.load.split("/")[0] for r in mine)
    return f"| {label} | {rates}/s | {p99s} | {cpus} µs | {loads} |", rate, cpu


def main() -> None:
    global BINDINGS_PER_NAMESPACE
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    if len(sys.argv) > 2:  # a smaller population, for trying the script out
        BINDINGS_PER_NAMESPACE = int(sys.argv[2])
    if not shutil.which("wrk"):
        raise SystemExit("bench/rbac.py needs wrk (apt-get install wrk)")
    print(f"load average at start: {load()}", flush=True)
    lines: list[str] = []
    with temporary_dir("tinykube-rbac-") as tmp:
        a = start(data_dir=tmp / "rbac")
        try:
            b = start("--authorization-mode", "AlwaysAllow", data_dir=tmp / "always")
            try:
                tokens = {"a": setup(a), "b": setup(b)}
                settle(a), settle(b)
                before_force = in_force(a, 20, "empty")
                print(f"  in force, no other bindings: {before_force}", flush=True)
                runs = rounds(a, b, tokens, seconds, "before")
                for bench in (a, b):
                    made, took = fill(bench)
                    print(f"  filled {made:,} objects in {took:.1f} s ({made / took:,.0f}/s), load {load()}")
                for bench in (a, b):
                    print(f"  settled in {settle(bench):.1f} s", flush=True)
                first = first_decisions(a, tokens["a"])
                print(f"  {first}", flush=True)
                wrk(a, tokens["a"], "warm-up after the fill", 2)
                runs += rounds(a, b, tokens, seconds, "after")
                after_force = in_force(a, 20, "full")
                print(f"  in force, 10,000 other bindings: {after_force}", flush=True)
                spy = []
                if shutil.which("py-spy"):
                    for bench, token, label in ((a, tokens["a"], "A SA, RBAC"), (b, tokens["b"], "B SA, AlwaysAllow")):
                        _run, summary = profile(bench, token, label, seconds, tmp)
                        spy.append(summary)
                        print(f"  py-spy {summary}", flush=True)
            finally:
                b.stop()
        finally:
            a.stop()
    lines.append("| GET one ConfigMap, 16 connections | rate per run | p99 per run | `up` CPU per request | load |")
    lines.append("|---|---|---|---|---|")
    medians: dict[str, tuple[float, float]] = {}
    for phase in ("before", "after"):
        for who in ("(a) admin", "(b) SA, RBAC", "(c) SA, AlwaysAllow"):
            text, rate, cpu = row(runs, f"{phase} {who}")
            lines.append(text)
            medians[f"{phase} {who}"] = (rate, cpu)
    print("\n".join(lines))
    for phase in ("before", "after"):
        rbac, ref = medians[f"{phase} (b) SA, RBAC"], medians[f"{phase} (c) SA, AlwaysAllow"]
        print(f"{phase}: RBAC / AlwaysAllow rate {rbac[0] / ref[0]:.2f}, CPU per request {rbac[1] / ref[1]:.2f}")
    growth = {}
    for who in ("(b) SA, RBAC", "(c) SA, AlwaysAllow", "(a) admin"):
        then, now = medians[f"before {who}"], medians[f"after {who}"]
        growth[who] = (now[0] / then[0], now[1] / then[1])
        print(f"{who}: after / before rate {growth[who][0]:.2f}, CPU per request {growth[who][1]:.2f}")
    rbac, ref = growth["(b) SA, RBAC"], growth["(c) SA, AlwaysAllow"]
    flat = f"rate {rbac[0] / ref[0]:.2f}, CPU per request {rbac[1] / ref[1]:.2f}"
    print(f"RBAC's after / before over AlwaysAllow's (1 = flat): {flat}")
    print(first)
    print(f"new RoleBinding in force, no other bindings: {before_force}")
    print(f"new RoleBinding in force, 10,000 other bindings: {after_force}")
    for summary in spy:
        print(f"py-spy {summary}")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
