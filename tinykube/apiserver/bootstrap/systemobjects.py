"""What every cluster has from its first second: the system namespaces (each with its `default` ServiceAccount),
the system Services and the default RBAC policy (`kinds/rbac/bootstrap_policy.py`).

`default/kubernetes` gets the first address of the primary service range and `kube-system/kube-dns` the tenth,
as kubeadm clusters have them. Both are (re)created if missing, at start-up and on every repair pass, as
upstream's bootstrap controller keeps `kubernetes` in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import by_path
from tinykube.apiserver.allocators.services import ServicePools
from tinykube.apiserver.kinds.rbac.bootstrap_policy import cluster_role_bindings, cluster_roles
from tinykube.apiserver.registry import Registry, Request
from tinykube.apiserver.storage.watchcache import CachedObject

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICES = by_path("", "v1", "services")
SERVICE_ACCOUNTS = by_path("", "v1", "serviceaccounts")
CLUSTER_ROLES = by_path("rbac.authorization.k8s.io", "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = by_path("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")
# upstream's `systemPriorityClasses` (pkg/apis/scheduling), created by its scheduling/bootstrap-system-priority-classes
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
)


def system_services(pools: ServicePools, api_port: int, *, dns: bool = True) -> list[dict[str, Any]]:
    """`default/kubernetes`, and `kube-system/kube-dns` when the cluster runs its DNS server (kubeadm's DNS addon
    makes it, not the apiserver: an API-only cluster, as envtest's, has none)."""
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
    kube_dns = {
        "metadata": {
            "name": "kube-dns",
            "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
        },
        "spec": {
            # As kubeadm's: it selects the DNS server's pods (tinykube's node agent publishes its mirror pod).
            "selector": {"k8s-app": "kube-dns"},
            "clusterIP": primary.at(9),
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    }
    return [kubernetes, kube_dns] if dns else [kubernetes]


async def ensure_namespaces(registry: Registry) -> None:
    assert NAMESPACES is not None
    for name in SYSTEM_NAMESPACES:
        with contextlib.suppress(errors.AlreadyExists):
            await registry.create(Request(NAMESPACES), {"metadata": {"name": name}})


async def ensure_system_services(registry: Registry, pools: ServicePools, api_port: int, *, dns: bool) -> None:
    assert SERVICES is not None
    for svc in system_services(pools, api_port, dns=dns):
        meta = svc["metadata"]
        request = Request(SERVICES, meta["namespace"], meta["name"])
        found = registry.cache(SERVICES).get(f"{meta['namespace']}/{meta['name']}")
        if found is not None:
            await _select_dns_pods(registry, found, svc)
            continue
        try:
            await registry.create(request, svc)
        except errors.AlreadyExists:
            pass
        except errors.ApiError as err:  # e.g. its address is held by a user's Service: say so, keep serving
            log.warning("cannot create %s/%s: %s", meta["namespace"], meta["name"], err)


async def _select_dns_pods(registry: Registry, found: CachedObject, wanted: dict[str, Any]) -> None:
    """A kube-dns of a data dir from before its DNS server was a pod is selectorless: give it the selector (once)."""
    assert SERVICES is not None
    obj = found.obj
    if "selector" not in wanted["spec"] or (obj.get("spec") or {}).get("selector"):
        return
    meta = obj["metadata"]
    updated = {**obj, "spec": {**obj["spec"], "selector": wanted["spec"]["selector"]}}
    try:
        await registry.update(Request(SERVICES, meta["namespace"], meta["name"]), updated)
    except errors.ApiError as err:
        log.warning("cannot give %s/%s its selector: %s", meta["namespace"], meta["name"], err)


async def ensure_bootstrap_policy(registry: Registry) -> None:
    """The default ClusterRoles and ClusterRoleBindings that are missing, created together (a new cluster's
    forty-odd writes would otherwise queue up in front of readiness). An existing object is left as it is: unlike
    upstream's reconciler, changed defaults are not put back."""
    assert CLUSTER_ROLES is not None and CLUSTER_ROLE_BINDINGS is not None
    wanted = [(CLUSTER_ROLES, role) for role in cluster_roles()]
    wanted += [(CLUSTER_ROLE_BINDINGS, binding) for binding in cluster_role_bindings()]
    missing = [(r, obj) for r, obj in wanted if registry.cache(r).get(obj["metadata"]["name"]) is None]
    await asyncio.gather(*(_create_quietly(registry, Request(r), obj) for r, obj in missing))


async def ensure_priority_classes(registry: Registry) -> None:
    """`system-node-critical` and `system-cluster-critical`, if missing (a changed one is left as it is)."""
    assert PRIORITY_CLASSES is not None
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        if registry.cache(PRIORITY_CLASSES).get(name) is None:
            obj = {"metadata": {"name": name}, "value": value, "description": description}
            await _create_quietly(registry, Request(PRIORITY_CLASSES), obj)


async def ensure_default_service_accounts(registry: Registry) -> None:
    """`default` in each system namespace, made with the namespaces. The serviceaccount controller makes it in every
    other namespace (and again here if deleted); making these now keeps a new cluster complete when it is ready."""
    assert SERVICE_ACCOUNTS is not None
    missing = [ns for ns in SYSTEM_NAMESPACES if registry.cache(SERVICE_ACCOUNTS).get(f"{ns}/default") is None]
    await asyncio.gather(
        *(_create_quietly(registry, Request(SERVICE_ACCOUNTS, ns), {"metadata": {"name": "default"}}) for ns in missing)
    )


async def _create_quietly(registry: Registry, request: Request, obj: dict[str, Any]) -> None:
    try:
        await registry.create(request, obj)
    except errors.AlreadyExists:
        pass  # another apiserver of the cluster made it first
    except errors.ApiError as err:
        log.warning("cannot create %s %s: %s", request.resource.kind, obj["metadata"]["name"], err)
