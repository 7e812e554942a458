"""A pod's effective requests and limits, as upstream's `resourcehelper.PodRequests` and `PodLimits` compute them
for ResourceQuota and LimitRange.

App containers and sidecars (init containers with `restartPolicy: Always`) run together, so they add up; an ordinary
init container runs alone beside the sidecars started before it, so the pod needs the larger of the two sums. The
pod overhead (from its RuntimeClass) comes on top of every request, and on top of the limits the pod has.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.jsonshape import dicts
from tinykube.api.quantity import ResourceList, add, maximum, resource_list


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The app containers, then the init containers (the order of upstream's loops and messages)."""
    return [*dicts(spec.get("containers")), *dicts(spec.get("initContainers"))]


def container_resources(container: dict[str, Any], field: str) -> ResourceList:
    """A container's `requests` or `limits`, parsed."""
    resources = container.get("resources")
    return resource_list(resources.get(field)) if isinstance(resources, dict) else {}


def _totals(spec: dict[str, Any], field: str) -> ResourceList:
    total: ResourceList = {}
    for container in dicts(spec.get("containers")):
        total = add(total, container_resources(container, field))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in dicts(spec.get("initContainers")):
        own = container_resources(container, field)
        if container.get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            running = sidecars
        else:
            running = add(own, sidecars)
        init_peak = maximum(init_peak, running)
    return maximum(total, init_peak)


def pod_requests(spec: dict[str, Any], *, overhead: bool = True) -> ResourceList:
    requests = _totals(spec, "requests")
    return add(requests, resource_list(spec.get("overhead"))) if overhead else requests


def pod_limits(spec: dict[str, Any], *, overhead: bool = True) -> ResourceList:
    limits = _totals(spec, "limits")
    if overhead:
        extra = resource_list(spec.get("overhead"))
        limits = {name: value + extra[name] if name in extra else value for name, value in limits.items()}
    return limits
