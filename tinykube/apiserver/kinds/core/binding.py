"""`pods/binding` (and the older `bindings` collection): how a scheduler assigns a pod to a node, as upstream's
`BindingREST.Create` (pkg/registry/core/pod/storage/storage.go) and `ValidatePodBinding`."""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError, not_supported, required
from tinykube.api.meta import now
from tinykube.api.resources import BINDING, builtin
from tinykube.apiserver.registry.generic import Registry, Request, UnknownError
from tinykube.apiserver.schema.fieldvalidation import check_types

PODS = builtin("", "v1", "pods")


def validate_binding(binding: dict[str, Any]) -> list[FieldError]:
    target = binding.get("target")
    if not isinstance(target, dict):
        target = {}
    errs: list[FieldError] = []
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        errs.append(not_supported("target.kind", kind, ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(required("target.name"))
    return errs


def _aggregate(errs: list[FieldError]) -> str:
    """Go's `utilerrors.NewAggregate(...).Error()`: one message alone, several as `[a, b]` (duplicates dropped)."""
    messages = list(dict.fromkeys(str(e) for e in errs))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


async def bind(registry: Registry, namespace: str, name: str, binding: dict[str, Any], dry_run: bool) -> None:
    """Set `spec.nodeName` of an unassigned pod in one conditional write, with `PodScheduled=True`."""
    await check_types(BINDING, binding)  # a target of the wrong shape is the decoder's 400, before validation
    meta = binding["metadata"]
    if name != meta.get("name", ""):
        raise errors.BadRequest("name in URL does not match name in Binding object")
    if not name:  # the `bindings` collection takes the name from the body; upstream's key function wants one
        raise errors.BadRequest("Name parameter required.")
    errs = validate_binding(binding)
    if errs:
        # upstream returns the field errors as a plain aggregate, not a Status error: a 500 without a reason
        raise UnknownError(_aggregate(errs))
    node = binding["target"]["name"]
    annotations = meta.get("annotations") or {}

    def assign(pod: dict[str, Any]) -> None:
        pod_meta, spec = pod["metadata"], pod.setdefault("spec", {})
        if pod_meta.get("deletionTimestamp"):
            problem = f"pod {name} is being deleted, cannot be assigned to a host"
        elif spec.get("nodeName"):
            problem = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        elif spec.get("schedulingGates"):
            problem = f"pod {name} has non-empty .spec.schedulingGates"
        else:
            problem = ""
        if problem:
            raise errors.conflict("pods/binding", name, reason=problem)
        spec["nodeName"] = node
        if annotations:
            pod_meta.setdefault("annotations", {}).update(annotations)
        _set_scheduled(pod.setdefault("status", {}))

    # The Binding's uid and resourceVersion are preconditions on the pod, as upstream keeps them for this endpoint.
    preconditions = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    await registry.guaranteed_update(Request(PODS, namespace, name, "binding", dry_run), assign, preconditions)


def _set_scheduled(status: dict[str, Any]) -> None:
    """Upstream's `UpdatePodCondition` with {PodScheduled, True}: the transition time stays if it was True already."""
    conditions = status.setdefault("conditions", [])
    condition = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
    for i, old in enumerate(conditions):
        if old.get("type") == "PodScheduled":
            if old.get("status") == "True":
                condition["lastTransitionTime"] = old.get("lastTransitionTime")
            conditions[i] = condition
            return
    conditions.append(condition)
