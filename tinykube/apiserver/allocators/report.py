"""The pools as seen from outside: Prometheus metrics with upstream's names, and the allocations document served
at `/debug/allocations` (per range: size, used, free, and which object holds each value)."""

from __future__ import annotations

import base64
from typing import Any

from tinykube.apiserver.allocators.pool import Pool
from tinykube.apiserver.allocators.ranges import bitmap
from tinykube.apiserver.allocators.services import ServicePools

KINDS = {"clusterips": "ClusterIP", "nodeports": "NodePort", "loadbalancerips": "LoadBalancerIP"}


def allocations(pools: ServicePools) -> dict[str, Any]:
    ranges = []
    for pool in pools.all():
        used = pool.used()
        ranges.append(
            {
                "kind": KINDS.get(pool.name, pool.name),
                "range": str(pool.range),
                "family": pool.range.family or None,
                "size": pool.range.size,
                "used": len(used),
                "free": pool.range.size - len(used),
                # what upstream's RangeAllocation object would hold for the same allocations
                "data": base64.b64encode(
                    bitmap([o for v in used if (o := pool.range.offset_of(v)) is not None])
                ).decode(),
                "allocations": [
                    {"value": value, "kind": h.kind, "namespace": h.namespace, "name": h.name, "uid": h.uid}
                    for value, h in sorted(used.items(), key=lambda item: pool.range.offset_of(item[0]) or 0)
                ],
            }
        )
    return {"kind": "AllocationList", "apiVersion": "tinykube.io/v1", "ranges": ranges}


def _family(prefix: str, unit: str, pools: list[tuple[Pool, str]]) -> list[str]:
    """One metric family per name, a sample per pool (`label` is its `cidr="…"`, empty for node ports)."""
    used = {id(pool): len(pool.used()) for pool, _ in pools}

    def labels(label: str, scope: str = "") -> str:
        parts = [p for p in (label, f'scope="{scope}"' if scope else "") if p]
        return "{" + ",".join(parts) + "}" if parts else ""

    lines = [
        f"# HELP {prefix}_allocated_{unit} Gauge measuring the number of allocated {unit} for Services",
        f"# TYPE {prefix}_allocated_{unit} gauge",
        *(f"{prefix}_allocated_{unit}{labels(label)} {used[id(pool)]}" for pool, label in pools),
        f"# HELP {prefix}_available_{unit} Gauge measuring the number of available {unit} for Services",
        f"# TYPE {prefix}_available_{unit} gauge",
        *(f"{prefix}_available_{unit}{labels(label)} {pool.range.size - used[id(pool)]}" for pool, label in pools),
    ]
    for name, counter, what in (
        ("allocation_total", "allocations", "Number of"),
        ("allocation_errors_total", "errors", "Number of errors in"),
    ):
        lines += [f"# HELP {prefix}_{name} {what} {unit} allocations on Services", f"# TYPE {prefix}_{name} counter"]
        for pool, label in pools:
            counts = getattr(pool, counter)
            lines += [f"{prefix}_{name}{labels(label, scope)} {counts[scope]}" for scope in ("dynamic", "static")]
    return lines


def metrics(pools: ServicePools) -> list[str]:
    cluster_ips = [(pool, f'cidr="{pool.range}"') for pool in pools.cluster_ips]
    return [
        *_family("kube_apiserver_clusterip_allocator", "ips", cluster_ips),
        *_family("kube_apiserver_nodeport_allocator", "ports", [(pools.node_ports, "")]),
    ]
