"""A DaemonSet on 50 simulated nodes: from its create until its status reports every node's pod available
(`python daemonsets.py [NODES] [RUNS]`; issue 19's target: <= 5 s on 50 nodes).

`tinykube up --nodes N` runs N node agents with the simulated runtime in its process; each run creates a
DaemonSet in a fresh namespace and polls its status, then deletes the namespace.
"""

from __future__ import annotations

import statistics
import sys
import time

from common import Bench, start

APPS = "/apis/apps/v1/namespaces"


def daemon_set() -> dict[str, object]:
    template = {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    spec = {"selector": {"matchLabels": {"app": "agent"}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": spec}


def one_run(bench: Bench, run: int, nodes: int) -> float:
    ns = f"ds-{run}"
    with bench.client() as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).raise_for_status()
        began = time.perf_counter()
        c.post(f"{APPS}/{ns}/daemonsets", json=daemon_set()).raise_for_status()
        while (c.get(f"{APPS}/{ns}/daemonsets/agent").json().get("status") or {}).get("numberAvailable") != nodes:
            time.sleep(0.02)
        elapsed = time.perf_counter() - began
        c.delete(f"/api/v1/namespaces/{ns}")
        while c.get(f"/api/v1/namespaces/{ns}").status_code != 404:
            time.sleep(0.05)
        return elapsed


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    bench = start("--nodes", str(nodes))
    try:
        with bench.client() as c:  # every node registered and Ready before the clock starts
            while len(c.get("/api/v1/nodes").json()["items"]) < nodes:
                time.sleep(0.1)
        results = [one_run(bench, run, nodes) for run in range(runs)]
    finally:
        bench.stop()
    print("| benchmark | result | tail | target |\n|---|---|---|---|")
    print(f"| DaemonSet on {nodes} nodes: created -> all {nodes} available ({runs} runs) | median "
          f"{statistics.median(results):.2f} s | max {max(results):.2f} s | <= 5 s |")  # fmt: skip


if __name__ == "__main__":
    main()
