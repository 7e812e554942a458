"""Which EndpointSlice writes turn the slices an owner has into the slices it should have, with as few writes as
possible. Pure functions: (existing slices, desired endpoints) → a `Plan` of creates, updates and deletes.

Churn is what costs: every slice write is sent to every kube-proxy and DNS server watching slices. So, as upstream's
reconciler does, an existing slice is edited in place (changed endpoints replaced, vanished ones removed), new
endpoints go first into slices that are being written anyway, then into an untouched slice that can take all of the
rest, and only then into new slices. A slice left empty by removals is deleted; a slice that would be created
instead takes over a slice that is about to be deleted (same owner and address type), so a create + delete
becomes one update. Slices that are already right are never written, whatever order their endpoints are in:
a controller restart against correct slices plans nothing.

Slices are grouped by address type and by their port list: every endpoint of a slice serves the same ports, so
pods whose named ports resolve differently land in different slices.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Object = dict[str, Any]
PortKey = tuple[tuple[str, int, str, str], ...]
GroupKey = tuple[str, PortKey]


def port_key(ports: Iterable[Mapping[str, Any]] | None) -> PortKey:
    """A port list compared as a set, with the API's defaults filled in (name "", protocol TCP)."""
    items = []
    for port in ports or []:
        number = port.get("port")
        items.append(
            (
                str(port.get("name") or ""),
                number if isinstance(number, int) else -1,
                str(port.get("protocol") or "TCP"),
                str(port.get("appProtocol") or ""),
            )
        )
    return tuple(sorted(items))


def endpoint_key(endpoint: Mapping[str, Any]) -> tuple[tuple[str, ...], str, str, str]:
    """An endpoint's identity: its addresses and what it points at. Anything else about it may change in place."""
    ref = endpoint.get("targetRef") or {}
    addresses = tuple(sorted(str(a) for a in endpoint.get("addresses") or []))
    return addresses, str(ref.get("kind", "")), str(ref.get("namespace", "")), str(ref.get("name", ""))


def _normal(endpoint: Mapping[str, Any]) -> Object:
    """An endpoint as compared: unset fields dropped, the targetRef's resourceVersion ignored."""
    out: Object = {}
    for name, value in endpoint.items():
        if value is None:
            continue
        if name == "conditions":
            value = {k: v for k, v in value.items() if v is not None}
        elif name == "targetRef":
            value = {k: v for k, v in value.items() if k != "resourceVersion" and v is not None}
        out[name] = value
    return out


def same_endpoint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _normal(a) == _normal(b)


@dataclass(frozen=True, slots=True)
class Group:
    """Endpoints that share an address type and a port list: the content of one or more slices."""

    address_type: str
    ports: list[Object]
    endpoints: list[Object]

    @property
    def key(self) -> GroupKey:
        return self.address_type, port_key(self.ports)


@dataclass(frozen=True, slots=True)
class SliceTemplate:
    """What every slice of one owner carries besides its endpoints.

    `annotations` are compared and kept exactly when given (mirroring copies the Endpoints' annotations); when None
    the planner leaves annotations alone. `stamp` is applied to every slice written and never compared (the
    trigger-time annotation): a value of None removes the annotation.
    """

    namespace: str
    generate_name: str
    labels: Mapping[str, str]
    owner: Mapping[str, Any]
    annotations: Mapping[str, str] | None = None
    stamp: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(slots=True)
class Plan:
    create: list[Object] = field(default_factory=list)
    update: list[Object] = field(default_factory=list)
    delete: list[Object] = field(default_factory=list)

    def __len__(self) -> int:
        """The number of writes."""
        return len(self.create) + len(self.update) + len(self.delete)


# ---- slice helpers -------------------------------------------------------------------------------------------


def _name(slice_: Object) -> str:
    return str(slice_["metadata"].get("name", ""))


def _endpoints(slice_: Mapping[str, Any]) -> list[Object]:
    return list(slice_.get("endpoints") or [])


def owned_by(slice_: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in slice_["metadata"].get("ownerReferences") or [])


def _meta_matches(slice_: Object, template: SliceTemplate) -> bool:
    meta = slice_["metadata"]
    if (meta.get("labels") or {}) != dict(template.labels):
        return False
    return template.annotations is None or (meta.get("annotations") or {}) == dict(template.annotations)


def new_slice(group: Group, template: SliceTemplate, endpoints: list[Object] | None = None) -> Object:
    metadata: Object = {
        "generateName": template.generate_name,
        "namespace": template.namespace,
        "labels": dict(template.labels),
        "ownerReferences": [dict(template.owner)],
    }
    if template.annotations:
        metadata["annotations"] = dict(template.annotations)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": metadata,
        "addressType": group.address_type,
        "endpoints": list(endpoints or []),
        "ports": copy.deepcopy(group.ports),
    }


def _rewrite(slice_: Object, endpoints: list[Object], ports: list[Object], template: SliceTemplate) -> Object:
    """A copy of an existing slice (name, resourceVersion kept) with new content and the template's metadata."""
    out = copy.deepcopy(slice_)
    out["endpoints"] = list(endpoints)
    out["ports"] = copy.deepcopy(ports)
    out["metadata"]["labels"] = dict(template.labels)
    if template.annotations is not None:
        out["metadata"]["annotations"] = dict(template.annotations)
    return out


def _stamp(slice_: Object, stamp: Mapping[str, str | None]) -> None:
    annotations = dict(slice_["metadata"].get("annotations") or {})
    for key, value in stamp.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    if annotations:
        slice_["metadata"]["annotations"] = annotations
    else:
        slice_["metadata"].pop("annotations", None)


def _partition(slices: list[Object], keep: Callable[[Object], bool]) -> tuple[list[Object], list[Object]]:
    kept: list[Object] = []
    other: list[Object] = []
    for slice_ in slices:
        (kept if keep(slice_) else other).append(slice_)
    return kept, other


def _by_group(slices: Iterable[Object]) -> dict[GroupKey, list[Object]]:
    groups: dict[GroupKey, list[Object]] = {}
    for slice_ in sorted(slices, key=_name):
        key = (str(slice_.get("addressType", "")), port_key(slice_.get("ports")))
        groups.setdefault(key, []).append(slice_)
    return groups


def _finish(plan: Plan, template: SliceTemplate) -> Plan:
    """Turn creates into updates of slices about to be deleted, then stamp everything written."""
    for created in list(plan.create):
        reusable = next(
            (
                s
                for s in plan.delete
                if s.get("addressType") == created["addressType"] and owned_by(s, str(template.owner.get("uid")))
            ),
            None,
        )
        if reusable is None:
            continue
        plan.delete.remove(reusable)
        plan.create.remove(created)
        plan.update.append(_rewrite(reusable, created["endpoints"], created["ports"], template))
    for written in (*plan.create, *plan.update):
        _stamp(written, template.stamp)
    return plan


# ---- the EndpointSlice controller's packing -----------------------------------------------------------------


def plan_service(
    existing: Iterable[Object],
    groups: Iterable[Group],
    template: SliceTemplate,
    *,
    address_types: list[str],
    max_endpoints: int,
) -> Plan:
    """The writes that give a Service `groups` in slices of at most `max_endpoints`, starting from `existing`.

    `existing` are the Service's live slices managed by the controller; those of another owner (a Service deleted
    and created again under the same name) or of an address type the Service no longer has are deleted. When no
    slice of an address type would remain, one placeholder of that type (no endpoints, no ports) is kept, so that
    "no endpoints" is an observable, settled state.
    """
    existing = list(existing)
    uid = str(template.owner.get("uid"))
    plan = Plan()
    mine, foreign = _partition(existing, lambda s: owned_by(s, uid) and s.get("addressType") in address_types)
    plan.delete.extend(foreign)
    by_key = _by_group(mine)
    for group in groups:
        _pack(by_key.pop(group.key, []), group, template, max_endpoints, plan)
    for leftover in by_key.values():
        plan.delete.extend(leftover)
    deleted = {id(s) for s in plan.delete}
    for address_type in address_types:
        kept = [s for s in mine if id(s) not in deleted] + plan.create
        if not any(s.get("addressType") == address_type for s in kept):
            _placeholder(plan, template, address_type)
    return _finish(plan, template)


def _pack(slices: list[Object], group: Group, template: SliceTemplate, max_endpoints: int, plan: Plan) -> None:
    remaining = {endpoint_key(e): e for e in group.endpoints}
    updated: list[Object] = []
    unchanged: list[Object] = []
    for slice_ in slices:
        kept: list[Object] = []
        changed = False
        for endpoint in _endpoints(slice_):
            wanted = remaining.pop(endpoint_key(endpoint), None)
            if wanted is None:
                changed = True  # gone, or a duplicate of an endpoint kept in an earlier slice
                continue
            changed = changed or not same_endpoint(wanted, endpoint)
            kept.append(wanted)
        if not kept:
            plan.delete.append(slice_)
        elif changed or not _meta_matches(slice_, template):
            updated.append(_rewrite(slice_, kept, group.ports, template))
        else:
            unchanged.append(slice_)
    for slice_ in sorted(updated, key=lambda s: -len(s["endpoints"])):  # fullest first
        _fill(slice_, remaining, max_endpoints)
    while remaining:
        target = _slice_to_fill(unchanged, len(remaining), max_endpoints) if len(remaining) < max_endpoints else None
        if target is None:
            target = new_slice(group, template)
            plan.create.append(target)
        else:
            unchanged.remove(target)
            target = _rewrite(target, _endpoints(target), group.ports, template)
            updated.append(target)
        _fill(target, remaining, max_endpoints)
    plan.update.extend(updated)


def _fill(slice_: Object, remaining: dict[Any, Object], max_endpoints: int) -> None:
    while remaining and len(slice_["endpoints"]) < max_endpoints:
        key = next(iter(remaining))
        slice_["endpoints"].append(remaining.pop(key))


def _slice_to_fill(candidates: list[Object], count: int, max_endpoints: int) -> Object | None:
    """The fullest untouched slice that can take `count` more endpoints."""
    fitting = [s for s in candidates if len(_endpoints(s)) + count <= max_endpoints]
    return max(fitting, key=lambda s: len(_endpoints(s)), default=None)


def _placeholder(plan: Plan, template: SliceTemplate, address_type: str) -> None:
    placeholder = new_slice(Group(address_type, [], []), template)
    for slice_ in plan.delete:
        if (
            slice_.get("addressType") == address_type
            and not _endpoints(slice_)
            and not slice_.get("ports")
            and owned_by(slice_, str(template.owner.get("uid")))
            and _meta_matches(slice_, template)
        ):
            plan.delete.remove(slice_)  # the placeholder we want is there already
            return
    plan.create.append(placeholder)


# ---- the mirroring controller's packing ----------------------------------------------------------------------


def plan_mirror(existing: Iterable[Object], groups: Iterable[Group], template: SliceTemplate) -> Plan:
    """The writes that give an Endpoints object one slice per group (subset ports, address family).

    Mirrored slices are not split: a group holds at most the per-subset cap the caller applied.
    """
    existing = list(existing)
    uid = str(template.owner.get("uid"))
    plan = Plan()
    mine, foreign = _partition(existing, lambda s: owned_by(s, uid))
    plan.delete.extend(foreign)
    by_key = _by_group(mine)
    for group in groups:
        slices = by_key.pop(group.key, [])
        if not slices:
            plan.create.append(new_slice(group, template, group.endpoints))
            continue
        first, *extra = slices
        plan.delete.extend(extra)
        if not _same_content(first, group) or not _meta_matches(first, template):
            plan.update.append(_rewrite(first, group.endpoints, group.ports, template))
    for leftover in by_key.values():
        plan.delete.extend(leftover)
    return _finish(plan, template)


def _same_content(slice_: Object, group: Group) -> bool:
    have = {endpoint_key(e): e for e in _endpoints(slice_)}
    want = {endpoint_key(e): e for e in group.endpoints}
    if len(have) != len(_endpoints(slice_)) or have.keys() != want.keys():
        return False
    return all(same_endpoint(want[key], have[key]) for key in want)
