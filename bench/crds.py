"""Custom resources against built-in objects of the same size, in the same run (`python crds.py`; needs wrk).

A CRD with a schema of 30 fields (strings with patterns and enums, integers with bounds, booleans, a nested
object, a list) and a CEL rule; its objects are compared with ConfigMaps holding the same 30 values as strings:
create (16 concurrent clients), single-object GET (8 connections), and LIST of 10,000. Then how long a new CRD
takes to be Established (its status condition) and served (the first create of one of its objects succeeds).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import sys
import time
from typing import Any

import httpx
from api import wrk
from common import Bench, start

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "bench.example.com"
PREFIX = f"/apis/{GROUP}/v1"


def _schema() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for i in range(10):
        fields[f"name{i}"] = {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9-]+$"}
        fields[f"count{i}"] = {"type": "integer", "minimum": 0, "maximum": 1000}
    for i in range(5):
        fields[f"flag{i}"] = {"type": "boolean"}
    fields["mode"] = {"type": "string", "enum": ["fast", "safe", "off"], "default": "safe"}
    fields["minReplicas"] = {"type": "integer", "minimum": 0}
    fields["maxReplicas"] = {"type": "integer", "minimum": 0}
    fields["owner"] = {"type": "object", "properties": {"team": {"type": "string"}, "email": {"type": "string"}}}
    fields["tags"] = {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
    spec = {
        "type": "object",
        "properties": fields,
        "x-kubernetes-validations": [{"rule": "self.minReplicas <= self.maxReplicas", "message": "min above max"}],
    }
    return {"type": "object", "properties": {"spec": spec}}


def crd(plural: str = "widgets", kind: str = "Widget") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": _schema()}}],
        },
    }


def spec_values(i: int = 0) -> dict[str, Any]:
    values: dict[str, Any] = {f"name{k}": f"value-{k}-{i}" for k in range(10)}
    values |= {f"count{k}": k * 7 for k in range(10)}
    values |= {f"flag{k}": k % 2 == 0 for k in range(5)}
    values |= {"mode": "fast", "minReplicas": 1, "maxReplicas": 3, "tags": ["a", "b"]}
    values["owner"] = {"team": "infra", "email": "infra@example.com"}
    return values


def configmap_data(i: int = 0) -> dict[str, str]:
    return {key: json.dumps(value) for key, value in spec_values(i).items()}


def wait_served(c: httpx.Client, name: str, plural: str) -> tuple[float, float]:
    """Seconds from now until the CRD is Established, and until one of its objects can be created."""
    began = time.perf_counter()
    established = 0.0
    while not established:
        status = c.get(f"{CRDS}/{name}").json().get("status") or {}
        if any(x["type"] == "Established" and x["status"] == "True" for x in status.get("conditions") or []):
            established = time.perf_counter() - began
    body = {"metadata": {"name": "first"}, "spec": spec_values()}
    while c.post(f"{PREFIX}/namespaces/default/{plural}", json=body).status_code != 201:
        pass
    return established, time.perf_counter() - began


def bench_established(bench: Bench, runs: int = 10) -> str:
    established, served = [], []
    with bench.client() as c:
        for i in range(runs):
            body = crd(f"things{i}", f"Thing{i}")
            began = time.perf_counter()
            assert c.post(CRDS, json=body).status_code == 201
            post = time.perf_counter() - began
            e, s = wait_served(c, body["metadata"]["name"], f"things{i}")
            established.append(post + e)
            served.append(post + s)
    return (
        f"| CRD created -> Established ({runs} CRDs) | median {statistics.median(established) * 1000:.0f} ms | "
        f"max {max(established) * 1000:.0f} ms | <= 100 ms |\n"
        f"| CRD created -> first object created | median {statistics.median(served) * 1000:.0f} ms | "
        f"max {max(served) * 1000:.0f} ms | |"
    )


def bench_create(bench: Bench) -> str:
    with bench.client() as c:
        for ns in ("bench-cr", "bench-cm"):
            c.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
    spec, data = '"spec":' + json.dumps(spec_values()), '"data":' + json.dumps(configmap_data())
    cr, cr_p99 = wrk(bench, "/", connections=16, seconds=10, script="create.lua", WRK_NS="bench-cr",
                     WRK_PREFIX=PREFIX, WRK_RESOURCE="widgets", WRK_SPEC=spec)  # fmt: skip
    cm, cm_p99 = wrk(bench, "/", connections=16, seconds=10, script="create.lua", WRK_NS="bench-cm",
                     WRK_RESOURCE="configmaps", WRK_SPEC=data)  # fmt: skip
    return (
        f"| create, 16 clients: custom resource / ConfigMap of the same values | {cr:,.0f}/s / {cm:,.0f}/s "
        f"({cr / cm:.0%}) | p99 {cr_p99} / {cm_p99} | same rate |"
    )


def bench_get(bench: Bench) -> str:
    cr, cr_p99 = wrk(bench, f"{PREFIX}/namespaces/default/widgets/first", connections=8, seconds=10)
    cm_path = "/api/v1/namespaces/default/configmaps"
    with bench.client() as c:
        c.post(cm_path, json={"metadata": {"name": "first"}, "data": configmap_data()})
    cm, cm_p99 = wrk(bench, f"{cm_path}/first", connections=8, seconds=10)
    return (
        f"| GET, 8 connections: custom resource / ConfigMap | {cr:,.0f}/s / {cm:,.0f}/s ({cr / cm:.0%}) "
        f"| p99 {cr_p99} / {cm_p99} | same rate |"
    )


async def _fill(bench: Bench, path: str, make: Any, count: int) -> None:
    ctx = ssl.create_default_context(cafile=str(bench.ca))
    headers = {"Authorization": f"Bearer {bench.token}"}
    async with httpx.AsyncClient(base_url=bench.server, verify=ctx, headers=headers, timeout=60) as c:
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with sem:
                (await c.post(path, json=make(i))).raise_for_status()

        await asyncio.gather(*(one(i) for i in range(count)))


def bench_list(bench: Bench, count: int = 10_000) -> str:
    with bench.client() as c:
        for ns in ("list-cr", "list-cm"):
            c.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
    cr_path, cm_path = f"{PREFIX}/namespaces/list-cr/widgets", "/api/v1/namespaces/list-cm/configmaps"
    began = time.perf_counter()
    asyncio.run(_fill(bench, cr_path, lambda i: {"metadata": {"name": f"w-{i:05d}"}, "spec": spec_values(i)}, count))
    cr_fill = time.perf_counter() - began
    began = time.perf_counter()
    asyncio.run(_fill(bench, cm_path, lambda i: {"metadata": {"name": f"c-{i:05d}"}, "data": configmap_data(i)}, count))
    cm_fill = time.perf_counter() - began
    medians = []
    with bench.client() as c:
        for path in (cr_path, cm_path):
            times = []
            for _ in range(10):
                t = time.perf_counter()
                r = c.get(path)
                times.append(time.perf_counter() - t)
                assert len(r.json()["items"]) == count
            medians.append(statistics.median(times))
    return (
        f"| {count:,} created by 32 clients: custom resources / ConfigMaps | {count / cr_fill:,.0f}/s / "
        f"{count / cm_fill:,.0f}/s | | |\n"
        f"| LIST of {count:,}: custom resources / ConfigMaps | median {medians[0] * 1000:.0f} ms / "
        f"{medians[1] * 1000:.0f} ms | | <= 200 ms |"
    )


def main() -> None:
    bench = start()
    try:
        with bench.client() as c:
            assert c.post(CRDS, json=crd()).status_code == 201
            wait_served(c, f"widgets.{GROUP}", "widgets")
        rows = [bench_established(bench), bench_create(bench), bench_get(bench), bench_list(bench)]
    finally:
        bench.stop()
    print("| benchmark | result | tail | target |\n|---|---|---|---|")
    print("\n".join(rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
