"""The LimitRanger admission plugin: a namespace's LimitRanges give pods' containers their default requests and
limits (mutating), and bound what containers, pods and PersistentVolumeClaims may ask for (validating), with
upstream's messages (`plugin/pkg/admission/limitranger`).

Containers cannot change after a pod is created, so pods are checked on create only; claims on every write (they
may grow). Comparisons are in thousandths, rounded up, unless that would overflow an int64, as upstream compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tinykube.api.podresources import container_resources, containers, pod_limits, pod_requests
from tinykube.api.quantity import MAX_MILLI_VALUE, ZERO, Quantity, resource_list
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, forbidden, is_core
from tinykube.apiserver.admission.index import NamespaceIndex
from tinykube.apiserver.registry.generic import Request

ANNOTATION = "kubernetes.io/limit-ranger"
Resources = Mapping[str, Quantity]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(limit_range: Object, kind: str) -> list[dict[str, Any]]:
    limits = _dict(limit_range.get("spec")).get("limits")
    return [i for i in limits if isinstance(i, dict) and i.get("type") == kind] if isinstance(limits, list) else []


# ---- defaults (mutating) ------------------------------------------------------------------------------------------


def default_pod_resources(limit_range: Object, pod: Object) -> None:
    """Give each container the Container defaults it lacks (`default` limits, `defaultRequest` requests) and note
    what was set in the `kubernetes.io/limit-ranger` annotation."""
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for item in _items(limit_range, "Container"):
        requests.update(_dict(item.get("defaultRequest")))
        limits.update(_dict(item.get("default")))
    spec = _dict(pod.get("spec"))
    if not (limits or requests) or not spec:
        return
    notes: list[str] = []
    for field, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(field) or []:
            if isinstance(container, dict) and isinstance(container.setdefault("resources", {}), dict):
                notes += _merge(container, requests, limits, prefix)
    if notes:
        annotations = pod["metadata"].get("annotations")
        if not isinstance(annotations, dict):
            annotations = pod["metadata"]["annotations"] = {}
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _merge(container: dict[str, Any], requests: dict[str, Any], limits: dict[str, Any], prefix: str) -> list[str]:
    resources = container["resources"]
    notes = []
    for field, defaults in (("requests", requests), ("limits", limits)):
        current = resources.get(field)
        missing = sorted(name for name in defaults if not isinstance(current, dict) or name not in current)
        if not missing:
            continue
        if not isinstance(current, dict):
            current = resources[field] = {}
        current.update((name, defaults[name]) for name in missing)
        notes.append(f"{', '.join(missing)} {field.removesuffix('s')} for {prefix} {container.get('name', '')}")
    return notes


# ---- constraints (validating) -------------------------------------------------------------------------------------


def _comparable(request: Quantity | None, limit: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """`requestLimitEnforcedValues`: milli-units when none overflows, else whole units; a missing value is 0."""
    quantities = (request or ZERO, limit or ZERO, enforced)
    whole = tuple(q.whole() for q in quantities)
    if all(value <= MAX_MILLI_VALUE for value in whole):
        return quantities[0].milli(), quantities[1].milli(), enforced.milli()
    return whole[0], whole[1], whole[2]


def _minimum(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, least = _comparable(request, limit, enforced)
    if request is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if observed_request < least:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request}"
    if limit is not None and observed_limit < least:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit}"
    return ""


def _maximum(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, most = _comparable(request, limit, enforced)
    if limit is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if observed_limit > most:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit}"
    if request is not None and observed_request > most:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return ""


def _maximum_request(kind: str, name: str, enforced: Quantity, requests: Resources) -> str:
    """For claims, whose limits are not the user's to set: the request is what is bounded."""
    request = requests.get(name)
    observed_request, _, most = _comparable(request, None, enforced)
    if request is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if observed_request > most:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return ""


def _ratio(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str:
    request, limit = requests.get(name), limits.get(name)
    observed_request, observed_limit, _ = _comparable(request, limit, enforced)
    what = f"{name} max limit to request ratio per {kind} is {enforced}"
    if request is None or observed_request == 0:
        return f"{what}, but no request is specified or request is 0"
    if limit is None or observed_limit == 0:
        return f"{what}, but no limit is specified or limit is 0"
    ratio = shown = observed_limit / observed_request
    most = float(enforced.whole())
    if enforced.whole() <= MAX_MILLI_VALUE:
        ratio, most = ratio * 1000, float(enforced.milli())
    if ratio > most:
        return f"{what}, but provided ratio is {shown:f}"
    return ""


def _bounds(kind: str, item: dict[str, Any], requests: Resources, limits: Resources) -> list[str]:
    """An item's min, then max, then maxLimitRequestRatio, each by resource name."""
    found = []
    for field, check in (("min", _minimum), ("max", _maximum), ("maxLimitRequestRatio", _ratio)):
        for name, enforced in sorted(resource_list(item.get(field)).items()):
            found.append(check(kind, name, enforced, requests, limits))
    return [message for message in found if message]


def pod_limit_errors(limit_range: Object, pod: Object) -> list[str]:
    """Container bounds for every container (init containers too), Pod bounds for the pod's totals."""
    spec = _dict(pod.get("spec"))
    found = []
    for item in _items(limit_range, "Container"):
        for container in containers(spec):
            requests, limits = container_resources(container, "requests"), container_resources(container, "limits")
            found += _bounds("Container", item, requests, limits)
    for item in _items(limit_range, "Pod"):
        found += _bounds("Pod", item, pod_requests(spec, overhead=False), pod_limits(spec, overhead=False))
    return found


def claim_limit_errors(limit_range: Object, claim: Object) -> list[str]:
    """A claim's storage request against PersistentVolumeClaim min and max."""
    requests = resource_list(_dict(_dict(_dict(claim.get("spec")).get("resources")).get("requests")))
    found = []
    for item in _items(limit_range, "PersistentVolumeClaim"):
        for name, enforced in sorted(resource_list(item.get("min")).items()):
            found.append(_minimum("PersistentVolumeClaim", name, enforced, requests, {}))
        for name, enforced in sorted(resource_list(item.get("max")).items()):
            found.append(_maximum_request("PersistentVolumeClaim", name, enforced, requests))
    return [message for message in found if message]


def aggregate(messages: list[str]) -> str:
    """`utilerrors.NewAggregate(...).Error()`: one message alone, several (without repeats) as `[a, b]`."""
    distinct = list(dict.fromkeys(messages))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


# ---- the plugin ---------------------------------------------------------------------------------------------------


class LimitRanger(Plugin):
    name = "LimitRanger"

    def __init__(self, limit_ranges: NamespaceIndex) -> None:
        self.limit_ranges = limit_ranges

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods", "persistentvolumeclaims")

    def _ranges(self, req: Request, old: Object | None) -> list[Object]:
        """The namespace's LimitRanges, when they apply: not to subresources, to pods on create only (containers are
        immutable), never to an object being deleted."""
        if req.subresource or (old is not None and (req.resource.plural == "pods" or _deleting(old))):
            return []
        return self.limit_ranges.objects(req.namespace)

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        if req.resource.plural == "pods":
            for limit_range in self._ranges(req, old):
                default_pod_resources(limit_range, obj)

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        check = pod_limit_errors if req.resource.plural == "pods" else claim_limit_errors
        for limit_range in self._ranges(req, old):
            messages = check(limit_range, obj)
            if messages:
                raise forbidden(req, obj, aggregate(messages))


def _deleting(obj: Object) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))
