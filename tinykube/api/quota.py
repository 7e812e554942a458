"""Quota accounting shared by the ResourceQuota admission plugin and the quota controller: what an object of each
resource uses, which quotas it counts against (resource names and scopes), and the `ResourceList` arithmetic quota
needs. Pure functions over JSON objects.

The evaluators are upstream's (`pkg/quota/v1/evaluator/core`, `apiserver/pkg/quota/v1/generic`): every resource is
counted as `count/<resource>[.<group>]`; ConfigMaps, Secrets, ResourceQuotas and ReplicationControllers also under
their legacy names; pods add compute resources and scopes; Services add node ports and load balancers;
PersistentVolumeClaims add storage, per StorageClass too.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list
from tinykube.api.meta import parse_time
from tinykube.api.podresources import container_resources, containers, pod_limits, pod_requests
from tinykube.api.quantity import ZERO, Quantity, ResourceList, add, count, resource_list

Object = dict[str, Any]
CREATE, UPDATE = "CREATE", "UPDATE"

TERMINATING, NOT_TERMINATING = "Terminating", "NotTerminating"
BEST_EFFORT, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
PRIORITY_CLASS, CROSS_NAMESPACE_POD_AFFINITY = "PriorityClass", "CrossNamespacePodAffinity"
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"


def object_count_name(group: str, plural: str) -> str:
    """`count/<resource>` for the core group, `count/<resource>.<group>` for the others."""
    return f"count/{plural}.{group}" if group else f"count/{plural}"


# ---- scopes -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeRequirement:
    scope: str
    operator: str = "Exists"
    values: tuple[str, ...] = ()


def scope_requirements(quota: Object) -> list[ScopeRequirement]:
    """`spec.scopes` (each an `Exists`) and `spec.scopeSelector.matchExpressions`: an object counts against the
    quota only if it matches every one."""
    spec = as_dict(quota.get("spec"))
    found = [ScopeRequirement(str(scope)) for scope in as_list(spec.get("scopes"))]
    for expr in as_list(as_dict(spec.get("scopeSelector")).get("matchExpressions")):
        if isinstance(expr, dict):
            values = tuple(str(v) for v in as_list(expr.get("values")))
            found.append(ScopeRequirement(str(expr.get("scopeName", "")), str(expr.get("operator", "")), values))
    return found


def _label_requirement(value: str, requirement: ScopeRequirement) -> bool:
    """A scope selector is a label selector over `{scope: value}`: the key is always there."""
    if requirement.operator == "In":
        return value in requirement.values
    if requirement.operator == "NotIn":
        return value not in requirement.values
    return requirement.operator == "Exists"


# ---- evaluators ---------------------------------------------------------------------------------------------------


class Evaluator:
    """Upstream's object-count evaluator, which every resource has: creates count one object. Objects of a resource
    without scopes of its own never match a scoped quota."""

    def __init__(self, group: str, plural: str, alias: str = "") -> None:
        self.group = group
        self.plural = plural
        self.count_name = object_count_name(group, plural)
        self.resources: tuple[str, ...] = (self.count_name, alias) if alias else (self.count_name,)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.count_name}>"

    def handles(self, operation: str) -> bool:
        """Whether an operation can change what this resource uses (object counts change on create only)."""
        return operation == CREATE

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if name in self.resources]

    def matches_scope(self, requirement: ScopeRequirement, obj: Object) -> bool:
        return False

    def constraints(self, required: Iterable[str], obj: Object) -> str:
        """Why `obj` cannot be charged against a quota limiting `required` ("" when it can)."""
        return ""

    def usage(self, obj: Object, now: float) -> ResourceList:
        return {name: count(1) for name in self.resources}

    def replenishes(self, old: Object, new: Object, now: float) -> bool:
        """Whether an update frees quota, so the controller must recount (a deletion always does)."""
        return False

    def matches(self, hard: Iterable[str], requirements: Iterable[ScopeRequirement], obj: Object) -> bool:
        """`generic.Matches`: the quota limits something of this resource, and `obj` is in every scope."""
        return bool(self.matching_resources(hard)) and all(self.matches_scope(r, obj) for r in requirements)


# pods -----------------------------------------------------------------------------------------------------------------

_POD_RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
)
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
# Upstream calls it a mistake, kept for compatibility: a quota on these makes every container state them.
_MUST_SPECIFY = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})
_COMPUTE = ("cpu", "memory", "ephemeral-storage")


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """An extended resource (`example.com/gpu`): quota counts its requests only, as `requests.<name>`."""
    return not _native(name) and not name.startswith("requests.")


def quota_v1_pod(pod: Object, now: float) -> bool:
    """Whether a pod is charged for compute and `pods`: not finished, and not past its deletion's grace period
    (a pod stuck terminating on a lost node must not block its replacement)."""
    if as_dict(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = as_dict(pod.get("metadata"))
    deleted, grace = parse_time(meta.get("deletionTimestamp")), meta.get("deletionGracePeriodSeconds")
    return not (deleted is not None and isinstance(grace, int) and now > deleted.timestamp() + grace)


def _compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """`podComputeUsageHelper`: a request of cpu counts as `cpu` and `requests.cpu`, a limit as `limits.cpu`."""
    result: ResourceList = {"pods": count(1)}
    for name in _COMPUTE:
        if name in requests:
            result[name] = result[f"requests.{name}"] = requests[name]
        if name in limits:
            result[f"limits.{name}"] = limits[name]
    for name, quantity in requests.items():
        if name.startswith("hugepages-"):
            result[name] = result[f"requests.{name}"] = quantity
        elif _extended(name):
            result[f"requests.{name}"] = quantity
    return result


def best_effort(spec: Object) -> bool:
    """QoS class BestEffort: no container requests or limits any cpu or memory."""
    for container in containers(spec):
        for field in ("requests", "limits"):
            quantities = container_resources(container, field)
            if any(quantities.get(name, ZERO).nanos > 0 for name in ("cpu", "memory")):
                return False
    return True


def _cross_namespace(terms: Any, *, weighted: bool) -> bool:
    for term in as_list(terms):
        term = as_dict(as_dict(term).get("podAffinityTerm")) if weighted else as_dict(term)
        if term.get("namespaces") or term.get("namespaceSelector") is not None:
            return True
    return False


def uses_cross_namespace_affinity(spec: Object) -> bool:
    affinity = as_dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = as_dict(affinity.get(kind))
        if _cross_namespace(rules.get("requiredDuringSchedulingIgnoredDuringExecution"), weighted=False):
            return True
        if _cross_namespace(rules.get("preferredDuringSchedulingIgnoredDuringExecution"), weighted=True):
            return True
    return False


class PodEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "pods")
        self.resources = (self.count_name, *_POD_RESOURCES)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if self._tracks(name)]

    def _tracks(self, name: str) -> bool:
        """Its own resources, hugepages, and extended resources' requests (`requests.example.com/gpu`)."""
        if name in self.resources or name.startswith(_POD_PREFIXES):
            return True
        return name.startswith("requests.") and not _native(name)

    def matches_scope(self, requirement: ScopeRequirement, obj: Object) -> bool:
        spec = as_dict(obj.get("spec"))
        scope = requirement.scope
        if scope in (TERMINATING, NOT_TERMINATING):
            deadline = spec.get("activeDeadlineSeconds")
            terminating = isinstance(deadline, int) and deadline >= 0
            return terminating == (scope == TERMINATING)
        if scope in (BEST_EFFORT, NOT_BEST_EFFORT):
            return best_effort(spec) == (scope == BEST_EFFORT)
        if scope == PRIORITY_CLASS:
            name = str(spec.get("priorityClassName") or "")
            return bool(name) if requirement.operator == "Exists" else _label_requirement(name, requirement)
        if scope == CROSS_NAMESPACE_POD_AFFINITY:
            return uses_cross_namespace_affinity(spec)
        return False

    def constraints(self, required: Iterable[str], obj: Object) -> str:
        """Every container must state what a compute quota limits: "must specify limits.cpu for: a,b; ..."."""
        wanted = _MUST_SPECIFY.intersection(required)
        missing: dict[str, set[str]] = {}
        for container in containers(as_dict(obj.get("spec"))):
            stated = _compute_usage(
                container_resources(container, "requests"), container_resources(container, "limits")
            )
            for name in wanted - stated.keys():
                missing.setdefault(name, set()).add(str(container.get("name", "")))
        if not missing:
            return ""
        parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
        return "must specify " + "; ".join(parts)

    def usage(self, obj: Object, now: float) -> ResourceList:
        """`count/pods` always; `pods` and compute only while the pod is charged (`quota_v1_pod`)."""
        result: ResourceList = {self.count_name: count(1)}
        if not quota_v1_pod(obj, now):
            return result
        spec = as_dict(obj.get("spec"))
        return add(result, _compute_usage(pod_requests(spec), pod_limits(spec)))

    def replenishes(self, old: Object, new: Object, now: float) -> bool:
        return quota_v1_pod(old, now) and not quota_v1_pod(new, now)


# services ---------------------------------------------------------------------------------------------------------


def _quota_service_type(svc: Object) -> str:
    kind = as_dict(svc.get("spec")).get("type")
    return kind if kind in ("NodePort", "LoadBalancer") else ""


class ServiceEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "services")
        self.resources = (self.count_name, "services", "services.nodeports", "services.loadbalancers")

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)  # a change of type takes or frees node ports and load balancers

    def usage(self, obj: Object, now: float) -> ResourceList:
        spec = as_dict(obj.get("spec"))
        ports = [port for port in as_list(spec.get("ports")) if isinstance(port, dict)]
        kind = _quota_service_type(obj)
        node_ports = len(ports) if kind else 0
        if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False:
            node_ports = sum(1 for port in ports if port.get("nodePort"))  # only those asked for explicitly
        return {
            self.count_name: count(1),
            "services": count(1),
            "services.loadbalancers": count(1 if kind == "LoadBalancer" else 0),
            "services.nodeports": count(node_ports),
        }

    def replenishes(self, old: Object, new: Object, now: float) -> bool:
        return _quota_service_type(old) != _quota_service_type(new)


# persistent volume claims -------------------------------------------------------------------------------------------


def storage_class_of(pvc: Object) -> str:
    """The beta annotation first, as upstream's `GetPersistentVolumeClaimClass`."""
    annotations = as_dict(as_dict(pvc.get("metadata")).get("annotations"))
    beta = annotations.get("volume.beta.kubernetes.io/storage-class")
    if beta is not None:
        return str(beta)
    return str(as_dict(pvc.get("spec")).get("storageClassName") or "")


def _whole_bytes(quantity: Quantity) -> Quantity:
    """Storage is charged in whole bytes (upstream rounds a fractional request up)."""
    if quantity.nanos % 10**9 == 0:
        return quantity
    return Quantity.of(quantity.whole(), quantity.format)


class PersistentVolumeClaimEvaluator(Evaluator):
    def __init__(self) -> None:
        super().__init__("", "persistentvolumeclaims")
        self.resources = (self.count_name, "persistentvolumeclaims", "requests.storage")

    def handles(self, operation: str) -> bool:
        return operation in (CREATE, UPDATE)  # a claim may grow

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        by_class = ("/persistentvolumeclaims", "/requests.storage")  # `<class>.storageclass.storage.k8s.io/...`
        return [n for n in names if n in self.resources or (STORAGE_CLASS_SUFFIX in n and n.endswith(by_class))]

    def usage(self, obj: Object, now: float) -> ResourceList:
        result: ResourceList = {self.count_name: count(1), "persistentvolumeclaims": count(1)}
        storage_class = storage_class_of(obj)
        if storage_class:
            result[f"{storage_class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = count(1)
        storage = self._storage(obj)
        if storage is not None:
            result["requests.storage"] = storage
            if storage_class:
                result[f"{storage_class}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
        return result

    @staticmethod
    def _storage(pvc: Object) -> Quantity | None:
        """The requested size, or the size allocated by an expansion if that is larger."""
        requested = resource_list(as_dict(as_dict(pvc.get("spec")).get("resources")).get("requests")).get("storage")
        if requested is None:
            return None
        allocated = resource_list(as_dict(pvc.get("status")).get("allocatedResources")).get("storage")
        if allocated is not None and allocated > requested:
            requested = allocated
        return _whole_bytes(requested)

    def replenishes(self, old: Object, new: Object, now: float) -> bool:
        return self._storage(old) != self._storage(new)


# the registry of evaluators -------------------------------------------------------------------------------------------

# Those counted under a legacy name too (`configmaps` as well as `count/configmaps`).
_LEGACY_COUNTS = ("configmaps", "resourcequotas", "replicationcontrollers", "secrets")
_SPECIAL: dict[tuple[str, str], Evaluator] = {
    ("", "pods"): PodEvaluator(),
    ("", "services"): ServiceEvaluator(),
    ("", "persistentvolumeclaims"): PersistentVolumeClaimEvaluator(),
    **{("", plural): Evaluator("", plural, alias=plural) for plural in _LEGACY_COUNTS},
}
_counters: dict[tuple[str, str], Evaluator] = {}


def evaluator_for(group: str, plural: str) -> Evaluator:
    """The evaluator of a resource: a special one, else (as upstream's admission adds on first use) an object count."""
    key = (group, plural)
    found = _SPECIAL.get(key) or _counters.get(key)
    if found is None:
        found = _counters[key] = Evaluator(group, plural)
    return found


def evaluator_of_name(name: str) -> Evaluator | None:
    """The evaluator measuring a quota's resource name (`pods`, `requests.cpu`, `count/deployments.apps` ...)."""
    for evaluator in _SPECIAL.values():
        if evaluator.matching_resources((name,)):
            return evaluator
    if name.startswith("count/") and len(name) > len("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        return evaluator_for(group, plural)
    return None


def usage_in(
    evaluator: Evaluator, resources: list[str], requirements: list[ScopeRequirement], objects: Iterable[Object]
) -> ResourceList:
    """What the `objects` of one namespace in the quota's scopes use of `resources` (`generic.CalculateUsageStats`)."""
    now = time.time()
    used: ResourceList = dict.fromkeys(resources, ZERO)
    for obj in objects:
        if all(evaluator.matches_scope(r, obj) for r in requirements):
            used = add(used, evaluator.usage(obj, now))
    return mask(used, resources)


# ---- ResourceList arithmetic --------------------------------------------------------------------------------------


def mask(quantities: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    wanted = set(names)
    return {name: value for name, value in quantities.items() if name in wanted}


def subtract_floored(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """`SubtractWithNonNegativeResult`: a - b per resource, never below zero, every resource of either."""
    result = {name: max(value - b[name], ZERO) if name in b else max(value, ZERO) for name, value in a.items()}
    return {**dict.fromkeys(b, ZERO), **result}


def exceeding(used: Mapping[str, Quantity], hard: Mapping[str, Quantity]) -> list[str]:
    """The resources `used` has more of than `hard` allows (`LessThanOrEqual`'s failures)."""
    return sorted(name for name, value in used.items() if name in hard and value > hard[name])


def is_zero(quantities: Mapping[str, Quantity]) -> bool:
    return all(value.nanos == 0 for value in quantities.values())


def negative(quantities: Mapping[str, Quantity]) -> list[str]:
    return sorted(name for name, value in quantities.items() if value.nanos < 0)


def pretty(quantities: Mapping[str, Quantity]) -> str:
    """As upstream's messages print a `ResourceList`: `pods=1,requests.cpu=500m`."""
    return ",".join(f"{name}={quantities[name]}" for name in sorted(quantities))
