"""The apps kinds' rules in the aggregated ClusterRoles of the default RBAC policy (`system:aggregate-to-admin`, `-edit`
and `-view`, which feed `admin` ⊇ `edit` ⊇ `view`); `bootstrap_policy.py` assembles them in upstream's order."""

from __future__ import annotations

from tinykube.apiserver.kinds.rbac.rules import READ, WRITE, Rule, rule

APPS = ("apps",)

AGGREGATE_TO_EDIT: list[Rule] = [
    rule(
        WRITE, APPS, "daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
        "replicasets/scale", "statefulsets", "statefulsets/scale",
    ),
]  # fmt: skip

AGGREGATE_TO_VIEW: list[Rule] = [
    rule(
        READ, APPS, "controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
        "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
        "statefulsets/scale", "statefulsets/status",
    ),
]  # fmt: skip
