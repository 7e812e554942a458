"""The kubelet's pod admission (pure): before it runs a pod bound to it, the kubelet checks again what the scheduler
checked, against the pods it already runs, and a pod that fails is never started. It ends `Failed` with the first
failure as its reason and `Pod was rejected: <message>` as its message, so that its owner (a StatefulSet, a
ReplicaSet) replaces it. A pod given a `nodeName` skips the scheduler and meets this check only.

The checks, in upstream's order (its predicate admit handler): the pod's `kubernetes.io/os` label and `spec.os`
name the node's OS (linux); then, as the scheduler's AdmissionCheck, what the pod requests fits in the node's
allocatable beside the admitted pods (the pod count first, then cpu, memory, ephemeral-storage and scalar
resources; an extended resource the node has none of is not checked, as the kubelet drops it), the node matches
its node selector and required affinity, its host ports are free, and the pod tolerates the node's `NoExecute`
taints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tinykube.api.nodeaffinity import node_affinity_matches, tolerates
from tinykube.api.noderesources import (
    PORTS_REASON,
    Footprint,
    NodeTotals,
    Shortage,
    allocatable,
    port_conflict,
    shortages,
)

Object = dict[str, Any]
NODE_OS = "linux"
OS_LABEL = "kubernetes.io/os"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
TAINT_REASON = "node(s) had taints that the pod didn't tolerate"


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why the kubelet refuses a pod: `reason` and `message` as its event says them."""

    reason: str
    message: str

    @property
    def status_message(self) -> str:
        return f"Pod was rejected: {self.message}"


def admit(pod: Object, node: Object, totals: NodeTotals) -> Rejection | None:
    """None if `pod` may run on `node` beside the pods it already runs (their `totals`), else the first reason."""
    labels = pod["metadata"].get("labels") or {}
    if OS_LABEL in labels and labels[OS_LABEL] != NODE_OS:
        return Rejection(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        )
    wanted_os = ((pod.get("spec") or {}).get("os") or {}).get("name")
    if wanted_os is not None and wanted_os != NODE_OS:
        return Rejection("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
    alloc = allocatable(node)
    want = Footprint.of(pod, "", node["metadata"]["name"])
    short = shortages(want, alloc, totals, skip_missing_extended=True)
    if short:
        return _short(short[0])
    if not node_affinity_matches(pod, node):
        return _predicate("NodeAffinity", AFFINITY_REASON)
    if want.ports and port_conflict(want.ports, totals.ports):
        return _predicate("NodePorts", PORTS_REASON)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") == "NoExecute" and not tolerates(pod, taint):
            return _predicate("TaintToleration", TAINT_REASON)
    return None


def _predicate(name: str, description: str) -> Rejection:
    return Rejection(name, f"Predicate {name} failed: {description}")


def _short(shortage: Shortage) -> Rejection:
    return Rejection(
        f"OutOf{shortage.resource}",
        f"Node didn't have enough resource: {shortage.resource}, requested: {shortage.requested}, "
        f"used: {shortage.used}, capacity: {shortage.capacity}",
    )
