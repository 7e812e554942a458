"""1,000 Jobs of one completion each on the simulated runtime, from the first create until every one is Complete
(`python jobs.py [JOBS] [NODES]`; issue 19's target: <= 30 s for 1,000).

The Jobs are created by 16 concurrent clients; their pods run for `tinykube.io/run-seconds: "0"` (they end as soon
as they start), so what is measured is the controllers' and the node agent's work per Job: a pod created,
scheduled, started, ended, counted (three status writes) and its finalizer removed.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import time

import httpx
from common import Bench, start

BATCH = "/apis/batch/v1/namespaces/bench/jobs"


def job(i: int) -> dict[str, object]:
    template = {
        "metadata": {"annotations": {"tinykube.io/run-seconds": "0"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"job-{i:04d}"},
        "spec": {"template": template},
    }


async def create_all(bench: Bench, count: int) -> float:
    ctx = ssl.create_default_context(cafile=str(bench.ca))
    headers = {"Authorization": f"Bearer {bench.token}"}
    async with httpx.AsyncClient(base_url=bench.server, verify=ctx, headers=headers, timeout=60) as c:
        sem = asyncio.Semaphore(16)

        async def one(i: int) -> None:
            async with sem:
                (await c.post(BATCH, json=job(i))).raise_for_status()

        began = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(count)))
        return time.perf_counter() - began


def complete(bench: Bench) -> int:
    with bench.client() as c:
        items = c.get(BATCH).json()["items"]
    return sum(
        1
        for j in items
        if any(
            x["type"] == "Complete" and x["status"] == "True" for x in (j.get("status") or {}).get("conditions") or []
        )
    )


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    nodes = sys.argv[2] if len(sys.argv) > 2 else "1"
    bench = start("--nodes", nodes)
    try:
        with bench.client() as c:
            c.post("/api/v1/namespaces", json={"metadata": {"name": "bench"}}).raise_for_status()
        began = time.perf_counter()
        created = asyncio.run(create_all(bench, count))
        done = 0
        while done < count and time.perf_counter() - began < 300:
            time.sleep(0.5)
            done = complete(bench)
        elapsed = time.perf_counter() - began
    finally:
        bench.stop()
    print("| benchmark | result | target |\n|---|---|---|")
    print(f"| {count:,} Jobs created by 16 clients | {created:.1f} s ({count / created:,.0f}/s) | |")
    print(f"| {count:,} Jobs of one completion each, first create -> {done:,} Complete ({nodes} node(s)) "
          f"| {elapsed:.1f} s | <= 30 s for 1,000 |")  # fmt: skip


if __name__ == "__main__":
    main()
