"""Every built-in kind's storage strategy, by plural: the one place that gathers the API groups' homes
(`kinds/<group>`) for the generic registry. Adding a kind means its strategy class in its group's module, a row in
that module's STRATEGIES and one in the resource table (`tinykube/api/resources.py`); a kind without a strategy of
its own is stored with the generic `Strategy`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinykube.api.resources import STORED, by_path
from tinykube.apiserver.kinds.admissionregistration import strategy as admissionregistration
from tinykube.apiserver.kinds.apiextensions import strategy as apiextensions
from tinykube.apiserver.kinds.apiregistration import strategy as apiregistration
from tinykube.apiserver.kinds.apps import deployments
from tinykube.apiserver.kinds.apps import strategy as apps
from tinykube.apiserver.kinds.autoscaling import strategy as autoscaling
from tinykube.apiserver.kinds.batch import strategy as batch
from tinykube.apiserver.kinds.certificates import strategy as certificates
from tinykube.apiserver.kinds.coordination import strategy as coordination
from tinykube.apiserver.kinds.core import config, pods, quotas, replicationcontrollers, volumes
from tinykube.apiserver.kinds.core import strategy as core
from tinykube.apiserver.kinds.core.services import ServiceStrategy
from tinykube.apiserver.kinds.discovery import strategy as discovery
from tinykube.apiserver.kinds.flowcontrol import strategy as flowcontrol
from tinykube.apiserver.kinds.networking import strategy as networking
from tinykube.apiserver.kinds.node import strategy as node
from tinykube.apiserver.kinds.policy import strategy as policy
from tinykube.apiserver.kinds.rbac import strategy as rbac
from tinykube.apiserver.kinds.scheduling import strategy as scheduling
from tinykube.apiserver.kinds.storage import strategy as storage
from tinykube.apiserver.registry.generic import Strategy

if TYPE_CHECKING:  # the allocators build on the registry's Allocation, so they are imported by the app
    from tinykube.apiserver.allocators.services import ServicePools

__all__ = ["KIND_STRATEGIES", "strategies"]

# Each group's strategy classes by plural (Services aside: theirs needs the allocation pools).
KIND_STRATEGIES: dict[str, type[Strategy]] = {
    **core.STRATEGIES,
    **pods.STRATEGIES,
    **config.STRATEGIES,
    **quotas.STRATEGIES,
    **volumes.STRATEGIES,
    **replicationcontrollers.STRATEGIES,
    **admissionregistration.STRATEGIES,
    **apiextensions.STRATEGIES,
    **apiregistration.STRATEGIES,
    **deployments.STRATEGIES,
    **apps.STRATEGIES,
    **autoscaling.STRATEGIES,
    **batch.STRATEGIES,
    **certificates.STRATEGIES,
    **coordination.STRATEGIES,
    **discovery.STRATEGIES,
    **flowcontrol.STRATEGIES,
    **networking.STRATEGIES,
    **node.STRATEGIES,
    **policy.STRATEGIES,
    **rbac.STRATEGIES,
    **scheduling.STRATEGIES,
    **storage.STRATEGIES,
}


def strategies(service_pools: ServicePools, event_ttl: float = 3600.0) -> dict[str, Strategy]:
    found = {r.key: KIND_STRATEGIES.get(r.plural, Strategy)(r) for r in STORED}
    services = by_path("", "v1", "services")
    assert services is not None
    found["services"] = ServiceStrategy(services, service_pools)
    found["events"].ttl = event_ttl  # upstream's --event-ttl
    return found
