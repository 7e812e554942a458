"""What every cluster has from its first second: the system namespaces and the system Services.

`default/kubernetes` gets the first address of the primary service range and `kube-system/kube-dns` the tenth,
as kubeadm clusters have them. Both are (re)created if missing, at start-up and on every repair pass, as
upstream's bootstrap controller keeps `kubernetes` in place.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import by_path
from tinykube.apiserver.allocators.services import ServicePools
from tinykube.apiserver.registry import Registry, Request

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICES = by_path("", "v1", "services")


def system_services(pools: ServicePools, api_port: int) -> list[dict[str, Any]]:
    primary = pools.cluster_ips[0].range
    kubernetes = {
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": primary.at(0),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_port}],
        },
    }
    dns = {
        "metadata": {
            "name": "kube-dns",
            "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
        },
        "spec": {
            # Selectorless: tinykube's DNS server is not a pod, it publishes its own endpoints.
            "clusterIP": primary.at(9),
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    }
    return [kubernetes, dns]


async def ensure_namespaces(registry: Registry) -> None:
    assert NAMESPACES is not None
    for name in SYSTEM_NAMESPACES:
        with contextlib.suppress(errors.AlreadyExists):
            await registry.create(Request(NAMESPACES), {"metadata": {"name": name}})


async def ensure_system_services(registry: Registry, pools: ServicePools, api_port: int) -> None:
    assert SERVICES is not None
    for svc in system_services(pools, api_port):
        meta = svc["metadata"]
        request = Request(SERVICES, meta["namespace"], meta["name"])
        if registry.cache(SERVICES).get(f"{meta['namespace']}/{meta['name']}") is not None:
            continue
        try:
            await registry.create(request, svc)
        except errors.AlreadyExists:
            pass
        except errors.ApiError as err:  # e.g. its address is held by a user's Service: say so, keep serving
            log.warning("cannot create %s/%s: %s", meta["namespace"], meta["name"], err)
