"""Whether a pod may run on a node by the node's labels, name and taints (pure): the scheduler's NodeAffinity and
TaintToleration filters, which the kubelet checks again when it admits a pod, and DaemonSets read to place theirs."""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]


def tolerates(pod: Object, taint: Object) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        operator = toleration.get("operator") or "Equal"
        if not toleration.get("key") and operator == "Exists":
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if operator == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def node_affinity_matches(pod: Object, node: Object) -> bool:
    """The pod's `nodeSelector` and required node affinity (terms ORed) accept the node."""
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms")
    return not required or any(node_selector_term_matches(term, node) for term in required)


def node_selector_term_matches(term: Object, node: Object) -> bool:
    """One NodeSelectorTerm: every expression on the node's labels and every field (`metadata.name`) holds."""
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    checks = [(r, labels) for r in term.get("matchExpressions") or []]
    checks += [(r, fields) for r in term.get("matchFields") or []]
    for requirement, values in checks:
        key, operator, wanted = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
        present, value = key in values, values.get(key)
        if operator == "In" and not (present and value in wanted):
            return False
        if operator == "NotIn" and present and value in wanted:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator in ("Gt", "Lt"):
            try:
                number, bound = int(str(value)), int(str(wanted[0]))
            except (ValueError, IndexError):
                return False
            if not present or (number <= bound if operator == "Gt" else number >= bound):
                return False
    return bool(checks)
