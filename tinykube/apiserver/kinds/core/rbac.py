"""The core kinds' rules in the aggregated ClusterRoles of the default RBAC policy (`system:aggregate-to-admin`, `-edit`
and `-view`, which feed `admin` ⊇ `edit` ⊇ `view`); `bootstrap_policy.py` assembles them in upstream's order."""

from __future__ import annotations

from tinykube.apiserver.kinds.rbac.rules import READ, WRITE, Rule, rule

CORE = ("",)

AGGREGATE_TO_EDIT: list[Rule] = [
    rule(READ, CORE, "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
    rule(("impersonate",), CORE, "serviceaccounts"),
    rule(WRITE, CORE, "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
    rule(("create",), CORE, "pods/eviction"),
    rule(
        WRITE, CORE, "configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
        "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy",
    ),
    rule(("create",), CORE, "serviceaccounts/token"),
]  # fmt: skip

AGGREGATE_TO_VIEW: list[Rule] = [
    rule(
        READ, CORE, "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
        "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status",
    ),
    rule(
        READ, CORE, "bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
        "replicationcontrollers/status", "resourcequotas", "resourcequotas/status",
    ),
    rule(READ, CORE, "namespaces"),
]  # fmt: skip
