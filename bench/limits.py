"""Peak RSS of the apiserver while the worst requests of at most 3 MB are processed (issue 16).

Starts a cluster (`tinykube up`, as the tests do), samples /proc/<pid>/status VmRSS every 20 ms and sends, one kind
at a time: a 3 MB JSON object (one big annotation), a 3 MB JSON of many small annotations, 3 MB of deep and wide
nesting, a copy-amplification JSON patch, a YAML alias bomb, a 3 MB YAML flow sequence, and N concurrent 3 MB bodies.
Everything is on loopback, bounded and stops by itself.

    python bench/limits.py [--concurrent 8]
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import RunningCluster, running_cluster

NAMESPACES = "/api/v1/namespaces"
LIMIT = 3 * 1024 * 1024 - 4096


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler:
    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self.stop = pid, 0.0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self.peak = rss_mb(self.pid)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def client(cluster: RunningCluster) -> httpx.Client:
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    headers = {"Authorization": f"Bearer {cluster.token}"}
    return httpx.Client(base_url=cluster.server, verify=verify, headers=headers, timeout=120)


def big_annotation(http: httpx.Client) -> int:
    body = {"metadata": {"name": "big-one", "annotations": {"a": "x" * (LIMIT - 200)}}}
    return http.post(NAMESPACES, content=json.dumps(body), params={"dryRun": "All"}).status_code


def many_annotations(http: httpx.Client) -> int:
    annotations = {f"k{i}": "" for i in range(LIMIT // 16)}
    body = {"metadata": {"name": "many", "annotations": annotations}}
    return http.post(NAMESPACES, content=json.dumps(body), params={"dryRun": "All"}).status_code


def deep_and_wide(http: httpx.Client) -> int:
    unit = "[" * 90 + "]" * 90
    body = '{"metadata":{"name":"deep"},"x":[' + ",".join([unit] * (LIMIT // (len(unit) + 1))) + "]}"
    return http.post(NAMESPACES, content=body, params={"dryRun": "All"}).status_code


def wide_list(http: httpx.Client) -> int:
    body = '{"metadata":{"name":"wide"},"x":[' + ",".join(["0"] * (LIMIT // 2)) + "]}"
    return http.post(NAMESPACES, content=body, params={"dryRun": "All"}).status_code


def copy_patch(http: httpx.Client) -> int:
    http.post(NAMESPACES, json={"metadata": {"name": "amplified", "annotations": {"a": "v" * 4000}}})
    operations = [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/c{i}"} for i in range(40)
    ]
    return http.patch(
        f"{NAMESPACES}/amplified",
        params={"dryRun": "All"},
        content=json.dumps(operations),
        headers={"Content-Type": "application/json-patch+json"},
    ).status_code


def yaml_bomb(http: httpx.Client) -> int:
    lines = ["metadata: {name: bomb}", 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
    return http.post(NAMESPACES, content="\n".join(lines), headers={"Content-Type": "application/yaml"}).status_code


def yaml_flow(http: httpx.Client) -> int:
    body = "metadata: {name: flow}\nx: [" + ",".join(["0"] * (LIMIT // 2)) + "]\n"
    return http.post(NAMESPACES, content=body, headers={"Content-Type": "application/yaml"}).status_code


def concurrent(count: int) -> Callable[[httpx.Client], int]:
    def run(http: httpx.Client) -> int:
        body = {"metadata": {"name": "big-one", "annotations": {"a": "x" * (LIMIT - 200)}}}
        raw = json.dumps(body)
        with ThreadPoolExecutor(count) as pool:
            codes = list(pool.map(lambda _: http.post(NAMESPACES, content=raw, params={"dryRun": "All"}).status_code,
                                  range(count)))  # fmt: skip
        return max(codes)

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrent", type=int, default=8)
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[httpx.Client], int]]] = [
        ("3 MB JSON, one annotation", big_annotation),
        ("3 MB JSON, 200k annotations", many_annotations),
        ("3 MB JSON nested 90 deep, 17k times", deep_and_wide),
        ("3 MB JSON, 1.5M-element list", wide_list),
        ("JSON patch, 40 copies", copy_patch),
        ("YAML alias bomb, 9^9", yaml_bomb),
        ("3 MB YAML, 1.5M-element flow list", yaml_flow),
        (f"{args.concurrent} concurrent 3 MB JSON bodies", concurrent(args.concurrent)),
    ]
    print(f"load average: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp, running_cluster(Path(tmp) / "bench") as cluster, client(cluster) as http:
        time.sleep(1)
        print(f"idle RSS: {rss_mb(cluster.proc.pid):.0f} MB")
        print(f"{'request':45} {'status':>6} {'seconds':>8} {'peak RSS MB':>12}")
        for name, case in cases:
            with Sampler(cluster.proc.pid) as sampler:
                start = time.monotonic()
                status = case(http)
                took = time.monotonic() - start
                time.sleep(0.1)
            print(f"{name:45} {status:>6} {took:>8.2f} {sampler.peak:>12.0f}", flush=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
