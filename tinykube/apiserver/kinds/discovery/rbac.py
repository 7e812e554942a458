"""The discovery.k8s.io kinds' rules in the aggregated ClusterRoles of the default RBAC policy
(`system:aggregate-to-admin`, `-edit` and `-view`, which feed `admin` ⊇ `edit` ⊇ `view`); `bootstrap_policy.py`
assembles them in upstream's order."""

from __future__ import annotations

from tinykube.apiserver.kinds.rbac.rules import READ, Rule, rule

AGGREGATE_TO_VIEW: list[Rule] = [rule(READ, ("discovery.k8s.io",), "endpointslices")]
