"""What a pod takes from its node, and whether a node has room for one more: the scheduler's NodeResourcesFit and
NodePorts filters, with the per-node accounting they read.

A pod's demand is its effective requests (`api.podresources.pod_requests`: app containers and sidecars summed, the
largest init container if more, plus `spec.overhead`), in the units upstream compares: cpu in thousandths, every
other resource in whole units (`MilliValue` and `Value`, rounded up), and its host ports. Only the resources
upstream's scheduler compares count: cpu, memory, ephemeral-storage and the scalar resources (extended resources
such as `example.com/gpu`, `hugepages-*`, `attachable-volumes-*` and other `kubernetes.io/` names).

`NodeUsage` keeps, per node, the sum of what the live pods bound there take; the scheduler updates it from pod
events (one pod's footprint in, its old one out), so a decision reads one total per node instead of summing the
node's pods. Terminal pods (Succeeded, Failed) take nothing, as upstream's scheduler cache drops them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from tinykube.api.podresources import pod_requests
from tinykube.api.quantity import Quantity, resource_list

Object = dict[str, Any]
Port = tuple[str, str, int]  # (host IP, protocol, host port)
ALL_IPS = "0.0.0.0"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
_NATIVE = ("cpu", "memory", "ephemeral-storage")
_SCALAR_PREFIXES = ("hugepages-", "attachable-volumes-")


def scalar_resource(name: str) -> bool:
    """Upstream's IsScalarResourceName: an extended resource (a domain-qualified name outside `kubernetes.io/`,
    not a quota `requests.` name), a huge page size, an attachable-volume count or a prefixed native resource."""
    if name.startswith(_SCALAR_PREFIXES):
        return True
    if "/" not in name:
        return False
    return "kubernetes.io/" in name or not name.startswith("requests.")


def _amount(name: str, quantity: Quantity) -> int:
    return quantity.milli() if name == "cpu" else quantity.whole()


def compared(resources: Mapping[str, Quantity]) -> dict[str, int]:
    """The resources the scheduler compares, in its units (cpu in thousandths, the rest whole)."""
    return {
        name: _amount(name, quantity)
        for name, quantity in resources.items()
        if name in _NATIVE or scalar_resource(name)
    }


def allocatable(node: Object) -> dict[str, int]:
    """The node's `status.allocatable` in the scheduler's units, `pods` among them (absent: 0, as upstream)."""
    parsed = resource_list((node.get("status") or {}).get("allocatable"))
    amounts = compared(parsed)
    if "pods" in parsed:
        amounts["pods"] = parsed["pods"].whole()
    return amounts


def host_ports(pod: Object) -> tuple[Port, ...]:
    """The host ports the pod's app containers ask for; an empty host IP is every address, an empty protocol TCP."""
    ports = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            number = port.get("hostPort") or 0
            if isinstance(number, int) and number > 0:
                ports.append((str(port.get("hostIP") or ALL_IPS), str(port.get("protocol") or "TCP"), number))
    return tuple(ports)


def priority(pod: Object) -> int:
    """`spec.priority` as the Priority admission set it (none: 0)."""
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else 0


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one pod takes from the node it is bound to (or nominated for)."""

    key: str
    node: str
    requests: Mapping[str, int]
    ports: tuple[Port, ...] = ()
    priority: int = 0
    started: str = ""  # status.startTime, for the preemption order of equal priorities

    @classmethod
    def of(cls, pod: Object, key: str, node: str) -> Footprint:
        spec = pod.get("spec") or {}
        started = str((pod.get("status") or {}).get("startTime") or "")
        return cls(key, node, compared(pod_requests(spec)), host_ports(pod), priority(pod), started)


@dataclass(slots=True)
class NodeTotals:
    """The sum of the footprints on one node."""

    requested: Counter[str] = field(default_factory=Counter)
    ports: Counter[Port] = field(default_factory=Counter)
    pods: dict[str, Footprint] = field(default_factory=dict)

    def add(self, footprint: Footprint) -> None:
        self.pods[footprint.key] = footprint
        self.requested.update(footprint.requests)
        self.ports.update(footprint.ports)

    def remove(self, footprint: Footprint) -> None:
        self.pods.pop(footprint.key, None)
        self.requested.subtract(footprint.requests)
        self.ports.subtract(footprint.ports)

    def copy(self) -> NodeTotals:
        return NodeTotals(Counter(self.requested), Counter(self.ports), dict(self.pods))

    def with_pods(self, footprints: Iterable[Footprint]) -> NodeTotals:
        """These totals with `footprints` (nominated pods) added, as a copy."""
        extra = [f for f in footprints if f.key not in self.pods]
        if not extra:
            return self
        totals = self.copy()
        for footprint in extra:
            totals.add(footprint)
        return totals


class NodeUsage:
    """Per node, what the pods bound there take: kept current by `set`/`clear` from pod events."""

    def __init__(self) -> None:
        self._pods: dict[str, Footprint] = {}
        self._nodes: dict[str, NodeTotals] = {}
        self._changed: set[str] = set()  # nodes whose totals changed since `take_changed`

    def set(self, footprint: Footprint) -> None:
        self.clear(footprint.key)
        self._pods[footprint.key] = footprint
        self._nodes.setdefault(footprint.node, NodeTotals()).add(footprint)
        self._changed.add(footprint.node)

    def take_changed(self) -> AbstractSet[str]:
        """The nodes whose totals changed since the last call (for an index kept beside these totals)."""
        changed, self._changed = self._changed, set()
        return changed

    def clear(self, key: str) -> Footprint | None:
        old = self._pods.pop(key, None)
        if old is not None:
            self._changed.add(old.node)
            totals = self._nodes[old.node]
            totals.remove(old)
            if not totals.pods:
                del self._nodes[old.node]
        return old

    def get(self, key: str) -> Footprint | None:
        return self._pods.get(key)

    def on(self, node: str) -> NodeTotals:
        return self._nodes.get(node) or NodeTotals()


def port_conflict(wanted: Iterable[Port], used: Mapping[Port, int]) -> bool:
    """Upstream's HostPortInfo.CheckConflict: every-address takes the (protocol, port) on all addresses."""
    for ip, protocol, port in wanted:
        if ip == ALL_IPS:
            if any(n > 0 and (p, q) == (protocol, port) for (_, p, q), n in used.items()):
                return True
        elif used.get((ip, protocol, port), 0) > 0 or used.get((ALL_IPS, protocol, port), 0) > 0:
            return True
    return False


_NATIVE_ORDER = ("cpu", "memory", "ephemeral-storage")


@dataclass(frozen=True, slots=True)
class Shortage:
    """A resource a pod asks more of than a node has left (upstream's InsufficientResource)."""

    resource: str
    requested: int
    used: int
    capacity: int


def shortages(
    want: Footprint, alloc: Mapping[str, int], totals: NodeTotals, *, skip_missing_extended: bool = False
) -> list[Shortage]:
    """Upstream's fitsRequest, in its order: the pod count at the node's allowance, then cpu, memory,
    ephemeral-storage and the scalar resources. `skip_missing_extended`: an extended resource the node has none
    of is not checked (the kubelet's admission drops it)."""
    found = []
    pods = len(totals.pods)
    if pods + 1 > alloc.get("pods", 0):
        found.append(Shortage("pods", 1, pods, alloc.get("pods", 0)))
    requests = {
        name: amount
        for name, amount in want.requests.items()
        if amount > 0 and not (skip_missing_extended and name not in alloc and _extended(name))
    }
    order = [*(r for r in _NATIVE_ORDER if r in requests), *sorted(r for r in requests if r not in _NATIVE_ORDER)]
    for name in order:
        used, capacity = totals.requested.get(name, 0), alloc.get(name, 0)
        if requests[name] > capacity - used:
            found.append(Shortage(name, requests[name], used, capacity))
    return found


def _extended(resource: str) -> bool:
    """Upstream's IsExtendedResourceName: a domain-qualified name outside `kubernetes.io/`, not a quota name."""
    return "/" in resource and "kubernetes.io/" not in resource and not resource.startswith("requests.")


def insufficient(want: Footprint, alloc: Mapping[str, int], totals: NodeTotals) -> list[str]:
    """The scheduler's NodeResourcesFit reasons: `Too many pods`, `Insufficient <resource>`."""
    return [
        TOO_MANY_PODS if s.resource == "pods" else f"Insufficient {s.resource}" for s in shortages(want, alloc, totals)
    ]


def fit_reasons(want: Footprint, alloc: Mapping[str, int], totals: NodeTotals) -> list[str]:
    """The filters that removing pods can satisfy (upstream's Unschedulable, not ...AndUnresolvable): NodePorts,
    then NodeResourcesFit."""
    if want.ports and port_conflict(want.ports, totals.ports):
        return [PORTS_REASON]
    return insufficient(want, alloc, totals)
