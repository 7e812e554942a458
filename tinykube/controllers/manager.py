"""The controller manager: the registry of controllers by name, which of them run (`--controllers`, as
kube-controller-manager's flag) and their start, sharing one REST client and one set of informers.

Nothing below imports this module: it imports every controller (when the names are first asked for, so that the
command line's flags need no client), and the controllers take what they share from `context`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from tinykube.controllers.context import ControllerContext, ControllerSettings

if TYPE_CHECKING:  # the command line lists the controllers without loading the client
    from tinykube.client.informer import SharedInformers
    from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)


class Controller(Protocol):
    """Runs until cancelled; registers its informer handlers, starts the informers, waits for them to sync, then
    reconciles (the one loop for that: `tinykube.client.controller.run_controller`). A controller must converge
    from any state (level-triggered), so restarts need no manual step."""

    async def run(self) -> None: ...


Factory = Callable[[ControllerContext], Controller]


def _factories() -> dict[str, Factory]:
    from tinykube.controllers.clusterroleaggregation import ClusterRoleAggregationController
    from tinykube.controllers.cronjob import CronJobController
    from tinykube.controllers.csrsigning import CsrSigningController
    from tinykube.controllers.daemonset import DaemonSetController
    from tinykube.controllers.deployment import DeploymentController
    from tinykube.controllers.disruption import DisruptionController
    from tinykube.controllers.endpoints import EndpointsController
    from tinykube.controllers.endpointslice import EndpointSliceController
    from tinykube.controllers.endpointslicemirroring import EndpointSliceMirroringController
    from tinykube.controllers.garbagecollector import GarbageCollector
    from tinykube.controllers.job import JobController
    from tinykube.controllers.namespace import NamespaceController
    from tinykube.controllers.nodeipam import NodeIpamController
    from tinykube.controllers.nodelifecycle import NodeLifecycleController
    from tinykube.controllers.podautoscaler import HorizontalPodAutoscalerController
    from tinykube.controllers.replicaset import REPLICATION_CONTROLLERS, ReplicaSetController
    from tinykube.controllers.resourcequota import ResourceQuotaController
    from tinykube.controllers.rootcacertpublisher import RootCACertPublisher
    from tinykube.controllers.scheduler import Scheduler
    from tinykube.controllers.serviceaccount import ServiceAccountsController
    from tinykube.controllers.statefulset import StatefulSetController
    from tinykube.controllers.tainteviction import TaintEvictionController
    from tinykube.controllers.ttlafterfinished import TtlAfterFinishedController
    from tinykube.controllers.volumes import VolumeController

    return {
        "namespace": lambda ctx: NamespaceController(ctx.client),
        "endpoints": EndpointsController,
        "endpointslice": EndpointSliceController,
        "endpointslicemirroring": EndpointSliceMirroringController,
        "nodeipam": lambda ctx: NodeIpamController(ctx, ctx.settings.cluster_cidr),
        "nodelifecycle": NodeLifecycleController,
        "taint-eviction-controller": TaintEvictionController,
        "replicaset": ReplicaSetController,
        "replicationcontroller": lambda ctx: ReplicaSetController(ctx, resource=REPLICATION_CONTROLLERS),
        "resourcequota": ResourceQuotaController,
        "deployment": DeploymentController,
        "statefulset": StatefulSetController,
        "daemonset": DaemonSetController,
        "job": JobController,
        "cronjob": CronJobController,
        "ttl-after-finished": TtlAfterFinishedController,
        "garbagecollector": GarbageCollector,
        "disruption": DisruptionController,
        "horizontalpodautoscaling": HorizontalPodAutoscalerController,
        "root-ca-cert-publisher": RootCACertPublisher,
        "persistentvolume": VolumeController,
        "scheduler": Scheduler,
        "serviceaccount": ServiceAccountsController,
        "clusterrole-aggregation": ClusterRoleAggregationController,
        "csrsigning": CsrSigningController,
    }


def known_controllers() -> list[str]:
    return sorted(_factories())


def select_controllers(spec: str) -> list[str]:
    """`*` (all), names, and `-name` to leave one out, comma-separated: `*,-endpointslice`."""
    known = known_controllers()
    chosen: set[str] = set()
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name = item.removeprefix("-")
        if item == "*":
            chosen.update(known)
        elif name not in known:
            raise ValueError(f"unknown controller {name!r} (known: {', '.join(known)})")
        elif item.startswith("-"):
            chosen.discard(name)
        else:
            chosen.add(name)
    return sorted(chosen)


async def run_controllers(
    client: RestClient,
    names: list[str],
    *,
    settings: ControllerSettings | None = None,
    informers: SharedInformers | None = None,
) -> None:
    """Run the named controllers until cancelled, on `informers` if given (their owner stops them, and they may be
    run on again: the controllers' handlers leave with them)."""
    from tinykube.client.informer import HandlerScope, SharedInformers

    owned = informers is None
    informers = informers or SharedInformers(client)
    ctx = ControllerContext(client, informers, settings or ControllerSettings())
    factories = _factories()
    with HandlerScope() as handlers:  # the tasks inherit it: what they register is theirs
        tasks = [asyncio.create_task(factories[name](ctx).run(), name=f"{name}-controller") for name in names]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        handlers.close()
        if owned:
            await informers.stop()
