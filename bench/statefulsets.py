"""A StatefulSet of 100 replicas in `Parallel` mode on the simulated runtime: from its create until every pod is
Ready and every pod's DNS name answers (`python statefulsets.py [REPLICAS] [RUNS]`; issue 19's target: <= 5 s).

Each run creates a headless Service and the set in a fresh namespace, then polls the set's status and asks the
cluster DNS for each `<set>-<i>.<service>.<ns>.svc.cluster.local` until all answer with the pod's address.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from common import Bench, start
from dnslib import QTYPE, DNSRecord

APPS = "/apis/apps/v1/namespaces"


def stateful_set(replicas: int) -> dict[str, object]:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    spec = {"replicas": replicas, "serviceName": "web", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "web"}}, "template": template}  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": spec}


def answers(dns: tuple[str, int], name: str) -> list[str]:
    reply = DNSRecord.parse(DNSRecord.question(name).send(*dns, timeout=2))
    return [str(r.rdata) for r in reply.rr if r.rtype == QTYPE.A]


def one_run(bench: Bench, dns: tuple[str, int], run: int, replicas: int) -> tuple[float, float]:
    """Seconds until the set reports every replica ready, and until every pod's name answers."""
    ns = f"sts-{run}"
    with bench.client() as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).raise_for_status()
        service = {"metadata": {"name": "web"}, "spec": {"clusterIP": "None", "selector": {"app": "web"}}}
        c.post(f"/api/v1/namespaces/{ns}/services", json=service).raise_for_status()
        began = time.perf_counter()
        c.post(f"{APPS}/{ns}/statefulsets", json=stateful_set(replicas)).raise_for_status()
        while (c.get(f"{APPS}/{ns}/statefulsets/web").json().get("status") or {}).get("readyReplicas") != replicas:
            time.sleep(0.02)
        ready = time.perf_counter() - began
        waiting = {f"web-{i}.web.{ns}.svc.cluster.local" for i in range(replicas)}
        while waiting:
            waiting = {name for name in waiting if not answers(dns, name)}
            if waiting:
                time.sleep(0.02)
        named = time.perf_counter() - began
        c.delete(f"/api/v1/namespaces/{ns}")  # a node holds 110 pods: the next run needs these gone
        while c.get(f"/api/v1/namespaces/{ns}").status_code != 404:
            time.sleep(0.05)
        return ready, named


def main() -> None:
    replicas = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    bench = start("--nodes", "1")
    try:
        host, port = json.loads((bench.data_dir / "cluster.json").read_text())["dns"].rsplit(":", 1)
        results = [one_run(bench, (host, int(port)), run, replicas) for run in range(runs)]
    finally:
        bench.stop()
    ready, named = zip(*results, strict=True)
    print("| benchmark | result | tail | target |\n|---|---|---|---|")
    print(f"| StatefulSet of {replicas} (Parallel): created -> all Ready ({runs} runs) | median "
          f"{statistics.median(ready):.2f} s | max {max(ready):.2f} s | |")  # fmt: skip
    print(f"| StatefulSet of {replicas} (Parallel): created -> {replicas} DNS names answer | median "
          f"{statistics.median(named):.2f} s | max {max(named):.2f} s | <= 5 s |")  # fmt: skip


if __name__ == "__main__":
    main()
