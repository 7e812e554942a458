#!/usr/bin/env python3
"""The Kubernetes conformance suite, and controller-runtime's envtest suites, run against tinykube.

    tools/conformance.py build                      # e2e.test + ginkgo into the cache (once)
    tools/conformance.py run [--selection api]      # build if missing, start a cluster, run, report
    tools/conformance.py run --selection smoke      # the short CI subset; exits 1 below its pass floor
    tools/conformance.py report <report.json>       # the report of an earlier run's ginkgo JSON
    tools/conformance.py list [--selection api]     # the specs a selection runs (dry run, no cluster)
    tools/conformance.py envtest                    # controller-runtime's suites, each on a fresh cluster

`e2e.test` is built for the minor version tinykube serves from the Go module proxy: a generated module
`local/e2ebuild` (in ~/.cache/tinykube/conformance/<version>/, never committed) requires k8s.io/kubernetes at
the served patch, and replaces each `k8s.io/*` staging module (the `=> ./staging/...` lines of kubernetes'
own go.mod) by its published `v0.<minor>.<patch>`: the newest patch the proxy serves that is not past the
target, since the proxy does not serve every patch of every staging module.

Selections (the rule for each is beside its definition below):
  api    every conformance spec that needs no running container, network or webhook server: runs on the
         simulated dataplane (`tinykube up --nodes 2`).
  all    the whole conformance focus (for the netns dataplane, once containers are real).
  smoke  a short subset of api for CI; its pass count is a floor that may only rise (SMOKE_FLOOR below).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

KUBERNETES_VERSION = "v1.32.13"  # the minor tinykube serves (1.32), at its newest patch
GINKGO_VERSION = "v2.21.0"  # the ginkgo kubernetes v1.32 is built with
CONTROLLER_RUNTIME_VERSION = "v0.20.4"  # controller-runtime for kubernetes 1.32
CACHE = Path(os.environ.get("TINYKUBE_CONFORMANCE_CACHE", Path.home() / ".cache" / "tinykube" / "conformance"))
GOFLAGS = os.environ.get("GOFLAGS", "-p=2")
FOCUS = r"\[Conformance\]"


def log(msg: str) -> None:
    print(f"[conformance {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------------
# Building e2e.test from the module proxy


def go_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["GOFLAGS"] = GOFLAGS
    env["GOBIN"] = str(cache / "bin")
    env.setdefault("GOTOOLCHAIN", "local")
    return env


def go(args: Sequence[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["go", *args], cwd=cwd, env=env, text=True, capture_output=True, check=check)


def staging_modules(kubernetes_gomod: str) -> list[str]:
    """The k8s.io/* modules kubernetes' go.mod replaces by a folder of its own staging tree."""
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", kubernetes_gomod, re.M)))


def staging_version(kubernetes_version: str) -> tuple[int, int]:
    """v1.32.13 -> (32, 13): the staging modules are published as v0.<minor>.<patch>."""
    m = re.fullmatch(r"v1\.(\d+)\.(\d+)", kubernetes_version)
    if not m:
        raise SystemExit(f"not a kubernetes release version: {kubernetes_version}")
    return int(m.group(1)), int(m.group(2))


def candidate_patches(listed: Iterable[str], minor: int, patch: int) -> list[str]:
    """The published v0.<minor>.N (N <= patch, no pre-release) of a staging module, newest first."""
    found = []
    for v in listed:
        m = re.fullmatch(rf"v0\.{minor}\.(\d+)", v)
        if m and int(m.group(1)) <= patch:
            found.append(int(m.group(1)))
    return [f"v0.{minor}.{n}" for n in sorted(found, reverse=True)]


def resolve_staging(module: str, minor: int, patch: int, work: Path, env: dict[str, str]) -> str:
    """The newest patch of `module` the proxy serves that is not past the target."""
    listed = go(["list", "-m", "-versions", module], work, env, check=False).stdout.split()[1:]
    tries = candidate_patches(listed, minor, patch) or [f"v0.{minor}.{n}" for n in range(patch, -1, -1)]
    for version in tries:
        got = go(["mod", "download", "-json", f"{module}@{version}"], work, env, check=False)
        if got.returncode == 0:
            return version
        log(f"{module}@{version} not served: {got.stdout.strip().splitlines()[-1:] or got.stderr.strip()}")
    raise SystemExit(f"no v0.{minor}.N (N <= {patch}) of {module} is served by the module proxy")


def e2ebuild_gomod(kubernetes_version: str, replaces: dict[str, str], go_version: str) -> str:
    lines = [
        "// Generated by tinykube's tools/conformance.py: e2e.test of kubernetes from the module proxy.",
        "module local/e2ebuild",
        "",
        f"go {go_version}",
        "",
        f"require k8s.io/kubernetes {kubernetes_version}",
        "",
        "replace (",
    ]
    lines += [f"\t{mod} => {mod} {ver}" for mod, ver in sorted(replaces.items())]
    lines += [")", ""]
    return "\n".join(lines)


def build_dir(version: str) -> Path:
    return CACHE / version


def e2e_binary(version: str) -> Path:
    return build_dir(version) / "e2e.test"


def ginkgo_binary() -> Path:
    return CACHE / "bin" / "ginkgo"


def prepare_module(version: str) -> Path:
    """Write local/e2ebuild for `version` (go.mod with the staging replaces, go.sum by `go mod tidy`)."""
    work = build_dir(version) / "e2ebuild"
    work.mkdir(parents=True, exist_ok=True)
    env = go_env(CACHE)
    if (work / "go.mod").exists():
        return work
    got = go(["mod", "download", "-json", f"k8s.io/kubernetes@{version}"], work, env)
    gomod_path = json.loads(got.stdout)["GoMod"]
    kubernetes_gomod = Path(gomod_path).read_text()
    go_line = re.search(r"^go\s+(\S+)", kubernetes_gomod, re.M)
    minor, patch = staging_version(version)
    replaces = {}
    for module in staging_modules(kubernetes_gomod):
        replaces[module] = resolve_staging(module, minor, patch, work, env)
        log(f"{module} => {replaces[module]}")
    (work / "go.mod").write_text(e2ebuild_gomod(version, replaces, go_line.group(1) if go_line else "1.23"))
    return work


def build(version: str = KUBERNETES_VERSION) -> tuple[Path, Path]:
    """e2e.test and ginkgo, built into the cache when missing."""
    env = go_env(CACHE)
    ginkgo = ginkgo_binary()
    if not ginkgo.exists():
        log(f"go install ginkgo {GINKGO_VERSION}")
        t0 = time.monotonic()
        CACHE.mkdir(parents=True, exist_ok=True)
        go(["install", f"github.com/onsi/ginkgo/v2/ginkgo@{GINKGO_VERSION}"], CACHE, env)
        log(f"ginkgo built in {time.monotonic() - t0:.0f}s")
    binary = e2e_binary(version)
    if not binary.exists():
        t0 = time.monotonic()
        work = prepare_module(version)
        log(f"go test -c k8s.io/kubernetes/test/e2e ({GOFLAGS})")
        tmp = binary.with_suffix(".tmp")
        got = subprocess.run(
            # -mod=mod: go.sum is written as the build resolves the suite's (test) imports
            ["go", "test", "-mod=mod", "-c", "-vet=off", "-o", str(tmp), "k8s.io/kubernetes/test/e2e"],
            cwd=work,
            env=env,
        )
        if got.returncode != 0:
            raise SystemExit("building e2e.test failed")
        tmp.rename(binary)
        log(f"e2e.test built in {time.monotonic() - t0:.0f}s")
    return binary, ginkgo


# --------------------------------------------------------------------------------------------------------------
# Selections: what of the conformance focus a run asks ginkgo to skip. Each rule is a regular expression that
# RE2 (ginkgo's --ginkgo.skip) and Python read alike, matched against the spec's full text.

# The api selection leaves out every spec that needs what the simulated dataplane does not have: a webhook or
# API server running in a pod; traffic to or between pods (the pod network, Services' data path, DNS, the
# apiserver's proxy to pods); exec into or logs of a container; or a container whose command's outcome is
# checked (its output, exit code, the files it sees, probes answering). Specs that only need pods to be
# scheduled, to be Running/Ready and to go away stay in: the simulated node agent does that.
API_SKIP: tuple[tuple[str, str], ...] = (
    (r"AdmissionWebhook", "a webhook server in a pod"),
    (r"CustomResourceConversionWebhook", "a conversion webhook server in a pod"),
    (r"CustomResourceFieldSelectors", "a conversion webhook server in a pod (its CRD converts by webhook)"),
    (r"\[sig-api-machinery\] Aggregator ", "the sample API server in a pod"),
    (r"\[sig-network\] (DNS|Networking|Proxy|HostPort) ", "the pod network, DNS or the proxy to pods"),
    (
        r"Services should (be able to change the type|be able to create a functioning NodePort|serve )",
        "traffic to a Service from an exec pod",
    ),
    (r"session affinity", "traffic to a Service from an exec pod"),
    (r"should serve a basic image on each replica", "the apiserver's proxy to the pods' servers"),
    (r"Guestbook application", "traffic between the guestbook's pods"),
    (r"Kubectl client Update Demo", "the apiserver's proxy to the pods' servers"),
    (r"Kubectl logs", "container logs"),
    (r"Kubectl expose", "container logs (it waits for the server's log line)"),
    (r"over websockets", "exec and logs over websockets"),
    (r"ServiceAccounts should mount", "exec or logs to read the mounted token"),
    (r"ServiceAccountIssuerDiscovery", "a pod that validates its token and exits"),
    (r"Ephemeral Containers ", "exec into the ephemeral container"),
    (r"Pods should contain environment variables for services", "a container's output"),
    (r"StatefulSet .*(unhealthy|rolling updates and roll backs)", "exec to break the pods' readiness probe"),
    (
        r"\[sig-node\] (Container Lifecycle Hook|Container Runtime|Containers|Downward API|InitContainer|Kubelet"
        r"|KubeletManagedEtcHosts|PreStop|Probing container|Security Context|Variable Expansion) ",
        "a container's command, output, exit code, files or probes",
    ),
    (r"\[sig-node\] (ConfigMap|Secrets) should be consumable", "a container's output"),
    (r"Sysctls .*should support sysctls", "a container's output"),
    (
        r"\[sig-storage\] (ConfigMap|Secrets) (should be (consumable|able to mount)|optional updates|updates should"
        r"|binary data)",
        "the files a container reads from its volume",
    ),
    (
        r"\[sig-storage\] (Projected \w+|Downward API volume|EmptyDir volumes|Subpath) ",
        "the files a container reads from its volume",
    ),
    (r"Job should run a job to completion when tasks sometimes fail", "a container's command failing by chance"),
    (r"Job should allow to use the pod failure policy on exit code", "a container's exit code"),
)

# Specs of the selections that never end on tinykube: they poll without a deadline for something tinykube does
# not do yet, and would hold a parallel process (and every [Serial] spec after them) until the suite's timeout.
# A run leaves them out and reports each as failed, with its reason.
HANGS: tuple[tuple[str, str], ...] = (
    (
        r"ValidatingAdmissionPolicy .*should (validate against a Deployment|allow expressions to refer variables)",
        "ValidatingAdmissionPolicies are not enforced yet (the admission issue): it waits for a denial forever",
    ),
)

LEFT_OUT = "left out of the run, it never ends: "  # the failure message of a HANGS spec

# The smoke selection: api specs that are quick (no waiting on controllers for minutes) and cover discovery,
# CRUD, watch, CRDs, field validation, quota and the core kinds; run in CI, its pass count a floor.
SMOKE_FOCUS = (
    r"\[sig-api-machinery\] (Discovery|server version|Watchers|FieldValidation|AggregatedDiscovery"
    r"|Servers with support for Table|CustomResourceDefinition resources|API priority and fairness) ",
    r"\[sig-node\] (PodTemplates|Lease|ConfigMap|Secrets) ",
    r"\[sig-instrumentation\] ",
    r"\[sig-storage\] (CSIInlineVolumes|CSINodes|CSIStorageCapacity|StorageClasses|VolumeAttachment) ",
    r"\[sig-network\] (Ingress API|IngressClass API) ",
    r"\[sig-scheduling\] LimitRange ",
    r"\[sig-auth\] (SubjectReview|Certificates API) ",
)
SMOKE_FLOOR_FILE = Path(__file__).with_name("conformance_smoke_floor.txt")


@dataclass(frozen=True)
class Selection:
    name: str
    focus: str
    skip: str  # "" for none
    also: str = ""  # a second focus (`run --focus`): the part of the selection that matches it too

    def selects(self, text: str) -> bool:
        focused = bool(re.search(self.focus, text)) and (not self.also or bool(re.search(self.also, text)))
        return focused and not (self.skip and re.search(self.skip, text))


def selection(name: str) -> Selection:
    api_skip = "|".join(rule for rule, _ in API_SKIP)
    if name == "all":
        return Selection("all", FOCUS, "")
    if name == "api":
        return Selection("api", FOCUS, api_skip)
    if name == "smoke":
        return Selection("smoke", rf"(?:{'|'.join(SMOKE_FOCUS)}).*\[Conformance\]", api_skip)
    raise SystemExit(f"unknown selection {name!r} (api, all, smoke)")


def go_literal(text: str) -> str:
    """`text` as a Go regexp matching it literally (RE2 refuses Python's escapes of letters and spaces)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def list_specs(binary: Path) -> list[str]:
    """The full text of every spec e2e.test holds (its --list-tests: `file:line: text` per line)."""
    out = subprocess.run([str(binary), "--list-tests"], text=True, capture_output=True, check=True).stdout
    return [m.group(1) for line in out.splitlines() if (m := re.match(r"\s*\S+:\d+: (.*\S)\s*$", line))]


# --------------------------------------------------------------------------------------------------------------
# The report, from ginkgo's JSON report


@dataclass
class SpecResult:
    text: str
    state: str  # passed, failed, skipped, pending, panicked, timedout, interrupted, aborted
    message: str = ""
    seconds: float = 0.0

    @property
    def sig(self) -> str:
        m = re.search(r"\[(sig-[\w-]+)\]", self.text)
        return m.group(1) if m else "(none)"

    @property
    def first_line(self) -> str:
        """The failure message's first line; with a short one (a gomega description such as "should be
        forbidden"), the line after it too, which says what was found."""
        lines = [line.strip() for line in self.message.splitlines() if line.strip()]
        if not lines:
            return ""
        if len(lines) > 1 and len(lines[0]) < 60:
            return f"{lines[0]} / {lines[1]}"
        return lines[0]


def outcome(spec: SpecResult) -> str:
    """passed; failed (failed, panicked, timed out); skipped (by the spec itself, at run time: it says why);
    not run (an interrupt, the suite's timeout or an abort came first: skipped without a word, or interrupted)."""
    if spec.state == "passed":
        return "passed"
    if spec.state in ("skipped", "pending"):
        return "skipped" if spec.message else "not run"
    if spec.state in ("interrupted", "aborted"):
        return "not run"
    return "failed"


@dataclass
class Report:
    selection: str
    version: str
    specs: list[SpecResult] = field(default_factory=list)
    seconds: float = 0.0
    suite_failures: list[str] = field(default_factory=list)  # BeforeSuite/AfterSuite failures

    def counts(self, specs: Iterable[SpecResult] | None = None) -> dict[str, int]:
        c = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0}
        for s in self.specs if specs is None else specs:
            c[outcome(s)] += 1
        return c

    def by_sig(self) -> dict[str, dict[str, int]]:
        sigs = sorted({s.sig for s in self.specs})
        return {sig: self.counts(s for s in self.specs if s.sig == sig) for sig in sigs}

    def failures(self) -> list[SpecResult]:
        return sorted((s for s in self.specs if outcome(s) == "failed"), key=lambda s: s.text)

    def not_run(self) -> list[SpecResult]:
        return sorted((s for s in self.specs if outcome(s) == "not run"), key=lambda s: s.text)


def parse_ginkgo_json(data: object, chosen: Selection | None = None) -> tuple[list[SpecResult], list[str]]:
    """Spec results from ginkgo's --json-report (a list of suite reports). Specs that the focus/skip filtered
    out are left out (with `chosen`, exactly those it does not select); suite-level nodes go to the second list."""
    specs: list[SpecResult] = []
    suite_failures: list[str] = []
    suites = data if isinstance(data, list) else [data]
    for suite in suites:
        for r in suite.get("SpecReports") or []:
            leaf_type = r.get("LeafNodeType", "")
            texts = [*(r.get("ContainerHierarchyTexts") or []), r.get("LeafNodeText", "")]
            text = " ".join(t for t in texts if t)
            state = r.get("State", "")
            message = (r.get("Failure") or {}).get("Message", "")
            if leaf_type != "It":
                if state not in ("passed", "skipped"):
                    suite_failures.append(f"{leaf_type}: {message.strip().splitlines()[0] if message else state}")
                continue
            if chosen is not None and not chosen.selects(text):
                continue
            if chosen is None and state == "skipped" and not message:
                continue  # filtered out by focus/skip
            specs.append(SpecResult(text, state, message, (r.get("RunTime") or 0) / 1e9))
    return specs, suite_failures


def markdown(report: Report) -> str:
    c = report.counts()
    total = len(report.specs)
    left_out = sum(1 for s in report.specs if s.message.startswith(LEFT_OUT))
    ran = c["passed"] + c["failed"] - left_out
    pct = f" ({100 * c['passed'] / total:.0f} %)" if total else ""
    lines = [
        f"Conformance {report.version}, selection `{report.selection}`: **{c['passed']} of {total} pass**{pct}"
        f"; {c['failed']} fail, {c['skipped']} skipped at run time, {c['not run']} not run (interrupted);"
        f" {ran} ran in {report.seconds / 60:.0f} min" + (f" ({left_out} left out: they hang)." if left_out else "."),
        "",
        "| SIG | passed | failed | skipped | not run | total |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for sig, n in report.by_sig().items():
        row = f"| {n['passed']} | {n['failed']} | {n['skipped']} | {n['not run']} | {sum(n.values())} |"
        lines.append(f"| {sig} {row}")
    lines.append(f"| **all** | {c['passed']} | {c['failed']} | {c['skipped']} | {c['not run']} | {total} |")
    if report.suite_failures:
        lines += ["", "Suite-level failures:", ""] + [f"- {f}" for f in report.suite_failures]
    if report.not_run():
        lines += ["", "Not run (the run was interrupted first):", ""] + [f"- {s.text}" for s in report.not_run()]
    fails = report.failures()
    if fails:
        lines += ["", "Failures (spec, then the first line of its failure message):", ""]
        for s in fails:
            lines.append(f"- {s.text}  \n  `{s.state}`: {s.first_line.replace('`', chr(39))}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------------------
# A cluster to run against


REPO = Path(__file__).resolve().parent.parent


class Cluster:
    """`tinykube up` of this tree in a temporary data dir; stopped (SIGINT, then SIGTERM, then SIGKILL) on exit."""

    def __init__(self, name: str, nodes: int, flags: Sequence[str] = ("--dns-port", "0")) -> None:
        self.name = name
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"tinykube-{name}-"))
        cmd = [sys.executable, "-m", "tinykube.cli", "up", "--nodes", str(nodes), "--api-port", "0", *flags]
        cmd += ["--name", name, "--data-dir", str(self.data_dir)]
        env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep))
        self.env = env
        self.log_path = self.data_dir / "up.log"
        self.log_file = self.log_path.open("wb")
        log(f"starting: {' '.join(cmd)}")
        # its own session: a Ctrl-C of the tool reaches ginkgo first (run_interruptibly), then stop() stops it
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=self.log_file, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
        self.kubeconfig = ""

    def wait_ready(self, nodes: int, timeout: float = 180.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"tinykube up exited {self.proc.returncode}; see {self.log_path}")
            got = subprocess.run(
                [sys.executable, "-m", "tinykube.cli", "kubeconfig", "--data-dir", str(self.data_dir)],
                env=self.env,
                text=True,
                capture_output=True,
                cwd=REPO,
            )
            if got.returncode == 0 and got.stdout.strip() and (self.data_dir / "cluster.json").exists():
                self.kubeconfig = got.stdout.strip()
                if self._nodes_ready() >= nodes and self._default_sa():
                    log(f"cluster {self.name} ready: KUBECONFIG={self.kubeconfig}")
                    return self.kubeconfig
            time.sleep(1)
        raise SystemExit(f"cluster {self.name} not ready in {timeout:.0f}s; see {self.log_path}")

    def _kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, *args], text=True, capture_output=True)

    def _nodes_ready(self) -> int:
        got = self._kubectl("get", "nodes", "-o", "json")
        if got.returncode != 0:
            return 0
        ready = 0
        for node in json.loads(got.stdout).get("items", []):
            conds = node.get("status", {}).get("conditions") or []
            ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        return ready

    def _default_sa(self) -> bool:
        return self._kubectl("get", "serviceaccount", "default", "-n", "default").returncode == 0

    def stop(self) -> None:
        for sig, wait in ((signal.SIGINT, 30), (signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                log(f"tinykube up (pid {self.proc.pid}) still running {wait}s after {sig.name}")
        self.log_file.close()
        left = leftover_processes(self.data_dir)
        if left:
            log(f"left running after stop, killing: {left}")
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        log(f"cluster {self.name} stopped (log kept in {self.log_path})")

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def leftover_processes(data_dir: Path) -> list[int]:
    """Processes whose command line names the cluster's data dir (etcd, a node agent) that outlived `up`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(data_dir) in cmdline:
            found.append(int(proc.name))
    return found


# --------------------------------------------------------------------------------------------------------------
# Running the suite


def run(
    chosen: Selection, kubeconfig: str | None, out_dir: Path, timeout: str, nodes: int, version: str, focus: str = ""
) -> Report:
    binary, ginkgo = build(version)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_specs = list_specs(binary)
    if focus:  # a part of the selection only (its report counts that part)
        chosen = Selection(chosen.name, chosen.focus, chosen.skip, focus)
    selected = [t for t in all_specs if chosen.selects(t)]
    hanging = {t: reason for t in selected for rule, reason in HANGS if re.search(rule, t)}
    log(f"selection {chosen.name}: {len(selected)} specs of {len(all_specs)} ({len(hanging)} left out: they hang)")
    (out_dir / "selected.txt").write_text("\n".join(selected) + "\n")
    cluster = None
    try:
        if kubeconfig is None:
            cluster = Cluster(f"conf-{chosen.name}", nodes=2)
            kubeconfig = cluster.wait_ready(nodes=2)
        kubectl = shutil.which("kubectl") or "kubectl"
        # the JSON report is the ginkgo CLI's (it merges the parallel processes' reports into one)
        cmd = [str(ginkgo), f"--nodes={nodes}", f"--timeout={timeout}", "--no-color"]
        cmd += [f"--output-dir={out_dir}", "--json-report=report.json", str(binary), "--"]
        cmd += [f"--kubeconfig={kubeconfig}", "--provider=skeleton", f"--kubectl-path={kubectl}"]
        # ginkgo ORs several focus flags: a part of the selection is focused as the alternation of its texts
        focus = "|".join(go_literal(t) for t in selected) if chosen.also else chosen.focus
        cmd += [f"--report-dir={out_dir}", f"--ginkgo.focus={focus}"]
        skip = "|".join(filter(None, (chosen.skip, *(rule for rule, _ in HANGS))))
        cmd.append(f"--ginkgo.skip={skip}")
        log("running: " + " ".join(cmd[:6]) + " -- ... (full command in " + str(out_dir / "command.txt") + ")")
        (out_dir / "command.txt").write_text(shlex.join(cmd) + "\n")
        t0 = time.monotonic()
        with (out_dir / "ginkgo.log").open("wb") as out:
            run_interruptibly(cmd, out, out_dir)
        seconds = time.monotonic() - t0
    finally:
        if cluster is not None:
            cluster.stop()
    report = load_report(out_dir / "report.json", chosen, version, seconds)
    return report


def run_interruptibly(cmd: list[str], out: IO[bytes], cwd: Path) -> int:
    """Run ginkgo in its own session; an interrupt of the tool (Ctrl-C, SIGTERM) is passed on as one SIGINT to its
    process group, so that ginkgo stops the running specs, writes its report and ends before the cluster stops."""
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        log("interrupted: ginkgo is asked to stop (SIGINT) and write its report")
        os.killpg(proc.pid, signal.SIGINT)  # ginkgo's parallel processes each handle the interrupt, as on a terminal
        try:
            return proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            return proc.wait()


def sigterm_as_interrupt() -> None:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def load_report(path: Path, chosen: Selection, version: str, seconds: float | None = None) -> Report:
    if not path.exists():
        raise SystemExit(f"no ginkgo JSON report at {path} (see ginkgo.log beside it)")
    data = json.loads(path.read_text())
    specs, suite_failures = parse_ginkgo_json(data, chosen)
    specs = [left_out_if_hanging(s) for s in specs]
    if seconds is None:
        suites = data if isinstance(data, list) else [data]
        seconds = sum((s.get("RunTime") or 0) / 1e9 for s in suites)
    return Report(chosen.name, version, specs, seconds, suite_failures)


def left_out_if_hanging(spec: SpecResult) -> SpecResult:
    """A HANGS spec (ginkgo's report has it as skipped) as the failure it is, with its reason."""
    for rule, reason in HANGS:
        if re.search(rule, spec.text):
            return SpecResult(spec.text, "failed", f"{LEFT_OUT}{reason}")
    return spec


def smoke_floor() -> int:
    try:
        return int(SMOKE_FLOOR_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


# --------------------------------------------------------------------------------------------------------------
# controller-runtime's envtest suites, each against a fresh API-only tinykube (envtest gives each suite a fresh
# apiserver; USE_EXISTING_CLUSTER=true makes it use the cluster KUBECONFIG names instead of starting one)

# What envtest's control plane is: an apiserver (without the ServiceAccount admission plugin) and etcd, no
# controllers, no DNS and so no kube-dns Service, no nodes.
ENVTEST_CLUSTER = ("--controllers", "", "--dns-port", "-1", "--disable-admission-plugins", "ServiceAccount")
ENVTEST_SUITES = ("client", "cache", "builder", "controller", "manager", "source", "handler", "cluster", "envtest")


def controller_runtime_source(version: str = CONTROLLER_RUNTIME_VERSION) -> Path:
    """A writable copy of controller-runtime's module (its own go.mod and go.sum, so its tests build as upstream's
    CI builds them), in the cache."""
    src = CACHE / f"controller-runtime-{version}" / "src"
    if (src / "go.mod").exists():
        return src
    env = go_env(CACHE)
    CACHE.mkdir(parents=True, exist_ok=True)
    got = go(["mod", "download", "-json", f"sigs.k8s.io/controller-runtime@{version}"], CACHE, env)
    shutil.copytree(json.loads(got.stdout)["Dir"], src.with_suffix(".tmp"), dirs_exist_ok=True)
    for path in src.with_suffix(".tmp").rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    src.with_suffix(".tmp").chmod(0o755)
    src.with_suffix(".tmp").rename(src)
    return src


def build_envtest(suites: Sequence[str]) -> dict[str, Path]:
    src = controller_runtime_source()
    env = go_env(CACHE)
    binaries = {}
    for suite in suites:
        binary = src.parent / "bin" / f"{suite}.test"
        if not binary.exists():
            binary.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            got = subprocess.run(
                ["go", "test", "-c", "-vet=off", "-o", str(binary), f"./pkg/{suite}"], cwd=src, env=env
            )
            if got.returncode != 0:
                raise SystemExit(f"building controller-runtime's pkg/{suite} tests failed")
            log(f"pkg/{suite}.test built in {time.monotonic() - t0:.0f}s")
        binaries[suite] = binary
    return binaries


@dataclass
class SuiteResult:
    suite: str
    exit_code: int
    specs: list[SpecResult]
    go_failures: list[str]  # `--- FAIL: TestX` of plain Go tests
    seconds: float


def run_envtest(suites: Sequence[str], out_dir: Path, timeout: str) -> list[SuiteResult]:
    binaries = build_envtest(suites)
    src = controller_runtime_source()
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for suite in suites:
        with Cluster(f"conf-envtest-{suite}", nodes=0, flags=ENVTEST_CLUSTER) as cluster:
            kubeconfig = cluster.wait_ready(nodes=0)
            json_path = out_dir / f"{suite}.json"
            env = dict(os.environ, USE_EXISTING_CLUSTER="true", KUBECONFIG=kubeconfig)
            cmd = [str(binaries[suite]), "-test.v", f"-test.timeout={timeout}", f"-ginkgo.json-report={json_path}"]
            log(f"pkg/{suite}: {shlex.join(cmd)}")
            t0 = time.monotonic()
            with (out_dir / f"{suite}.log").open("wb") as out:
                proc = subprocess.Popen(
                    cmd, cwd=src / "pkg" / suite, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
                try:
                    code = proc.wait()
                except KeyboardInterrupt:
                    os.killpg(proc.pid, signal.SIGINT)
                    code = proc.wait(60)
                    raise
            seconds = time.monotonic() - t0
        specs: list[SpecResult] = []
        if json_path.exists():
            specs, suite_failures = parse_ginkgo_json(json.loads(json_path.read_text()))
            specs += [SpecResult(f"(suite) {f}", "failed", f) for f in suite_failures]
        text = (out_dir / f"{suite}.log").read_text(errors="replace")
        go_failures = sorted(set(re.findall(r"^\s*--- FAIL: (\S+)", text, re.M)))
        result = SuiteResult(suite, code, specs, go_failures, seconds)
        c = Report("envtest", CONTROLLER_RUNTIME_VERSION, specs).counts()
        log(f"pkg/{suite}: exit {code}, {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped")
        results.append(result)
    return results


def envtest_markdown(results: Sequence[SuiteResult]) -> str:
    lines = [
        f"controller-runtime {CONTROLLER_RUNTIME_VERSION} envtest suites, each against a fresh "
        f"`tinykube up --nodes 0 {shlex.join(ENVTEST_CLUSTER)}` (USE_EXISTING_CLUSTER=true):",
        "",
        "| suite | passed | failed | skipped | exit | minutes |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0}
    for r in results:
        c = Report("envtest", CONTROLLER_RUNTIME_VERSION, r.specs).counts()
        for k in total:
            total[k] += c[k]
        lines.append(
            f"| pkg/{r.suite} | {c['passed']} | {c['failed']} | {c['skipped']} | {r.exit_code} | {r.seconds / 60:.1f} |"
        )
    lines.append(f"| **all** | {total['passed']} | {total['failed']} | {total['skipped']} | | |")
    for r in results:
        fails = Report("envtest", CONTROLLER_RUNTIME_VERSION, r.specs).failures()
        if fails or r.go_failures:
            lines += ["", f"pkg/{r.suite} failures:", ""]
            lines += [f"- {s.text}  \n  `{s.state}`: {s.first_line.replace('`', chr(39))}" for s in fails]
            lines += [f"- (go test) `--- FAIL: {name}`" for name in r.go_failures]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", default=KUBERNETES_VERSION, help=f"kubernetes release ({KUBERNETES_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build e2e.test and ginkgo into the cache (when missing)")
    p_list = sub.add_parser("list", help="the specs of a selection")
    p_run = sub.add_parser("run", help="run a selection and report")
    p_rep = sub.add_parser("report", help="the report of an earlier run's ginkgo JSON")
    for p in (p_list, p_run, p_rep):
        p.add_argument("--selection", default="api", choices=("api", "all", "smoke"))
    p_run.add_argument("--kubeconfig", help="run against this cluster instead of starting one")
    p_run.add_argument(
        "--nodes", type=int, default=4, help="ginkgo's parallel processes (default 4: specs mostly wait)"
    )
    p_run.add_argument("--timeout", default="4h", help="ginkgo's suite timeout (default 4h)")
    p_run.add_argument("--out", type=Path, help="where the JSON report and logs go (default: a temporary dir)")
    p_run.add_argument("--markdown", type=Path, help="also write the report here")
    p_run.add_argument("--focus", default="", help="run only the selection's specs that also match this regex")
    p_env = sub.add_parser("envtest", help="controller-runtime's envtest suites, each on a fresh cluster")
    p_env.add_argument("suites", nargs="*", default=list(ENVTEST_SUITES), help=f"of {', '.join(ENVTEST_SUITES)}")
    p_env.add_argument("--out", type=Path, help="where the reports and logs go (default: a temporary dir)")
    p_env.add_argument("--timeout", default="30m", help="each suite's go test timeout (default 30m)")
    p_env.add_argument("--markdown", type=Path)
    p_rep.add_argument("json", type=Path)
    p_rep.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    sigterm_as_interrupt()
    if args.command == "build":
        build(args.version)
        return 0
    if args.command == "envtest":
        out = args.out or Path(tempfile.mkdtemp(prefix="conformance-envtest-"))
        text = envtest_markdown(run_envtest(args.suites, out, args.timeout))
        print(text)
        if args.markdown:
            args.markdown.write_text(text)
        log(f"logs and JSON reports: {out}")
        return 0
    chosen = selection(args.selection)
    if args.command == "list":
        binary, _ = build(args.version)
        for text in list_specs(binary):
            if chosen.selects(text):
                print(text)
        return 0
    if args.command == "report":
        report = load_report(args.json, chosen, args.version)
    else:
        out = args.out or Path(tempfile.mkdtemp(prefix=f"conformance-{chosen.name}-"))
        report = run(chosen, args.kubeconfig, out, args.timeout, args.nodes, args.version, args.focus)
        log(f"ginkgo's output and JSON report: {out}")
    text = markdown(report)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if chosen.name == "smoke":
        floor, passed = smoke_floor(), report.counts()["passed"]
        if passed < floor:
            log(f"smoke: {passed} passed, below the floor of {floor} ({SMOKE_FLOOR_FILE.name})")
            return 1
        log(f"smoke: {passed} passed (floor {floor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
