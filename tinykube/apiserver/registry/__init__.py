"""Per-resource storage strategies (defaulting, validation, allocation) behind one generic, HTTP-free registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinykube.api.resources import STORED, by_path
from tinykube.apiserver.registry import (
    admissionregistration,
    apiextensions,
    apps,
    autoscaling,
    batch,
    certificates,
    cluster,
    config,
    core,
    flowcontrol,
    networking,
    rbac,
    storage,
    workloads,
)
from tinykube.apiserver.registry.generic import Registry, Request, Strategy
from tinykube.apiserver.registry.service import ServiceStrategy

if TYPE_CHECKING:  # the allocators build on the registry's Allocation, so they are imported by the app
    from tinykube.apiserver.allocators.services import ServicePools

__all__ = ["KIND_STRATEGIES", "Registry", "Request", "Strategy", "strategies"]

# Each family's strategy classes by plural (Services aside: theirs needs the allocation pools).
KIND_STRATEGIES: dict[str, type[Strategy]] = {
    **core.STRATEGIES,
    **apps.STRATEGIES,
    **config.STRATEGIES,
    **storage.STRATEGIES,
    **workloads.STRATEGIES,
    **batch.STRATEGIES,
    **autoscaling.STRATEGIES,
    **cluster.STRATEGIES,
    **certificates.STRATEGIES,
    **networking.STRATEGIES,
    **admissionregistration.STRATEGIES,
    **apiextensions.STRATEGIES,
    **flowcontrol.STRATEGIES,
    **rbac.STRATEGIES,
}


def strategies(service_pools: ServicePools, event_ttl: float = 3600.0) -> dict[str, Strategy]:
    found = {r.key: KIND_STRATEGIES.get(r.plural, Strategy)(r) for r in STORED}
    services = by_path("", "v1", "services")
    assert services is not None
    found["services"] = ServiceStrategy(services, service_pools)
    found["events"].ttl = event_ttl  # upstream's --event-ttl
    return found
