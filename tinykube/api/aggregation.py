"""ClusterRole aggregation as upstream's controller computes it: a role with an `aggregationRule` has, as its rules,
the union of the rules of the ClusterRoles its selectors match.

Pure, so that the aggregation controller (which keeps roles up to date) and the apiserver's bootstrap (which
creates `admin`, `edit` and `view` already filled in, so a new cluster is complete at /readyz) agree exactly.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import BadRequest
from tinykube.api.selectors import selector_from_label_selector

Object = dict[str, Any]
RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def normal_rule(rule: Any) -> Object:
    """A rule as upstream's semantic equality sees it: an empty list is no list."""
    if not isinstance(rule, dict):
        return {}
    return {field: rule[field] for field in RULE_FIELDS if rule.get(field)}


def aggregate(role: Object, roles: list[Object]) -> list[Object]:
    """The rules `role` collects from `roles`: per selector, the matching roles in name order (never the role
    itself), each distinct rule once, in the order first met."""
    name = role["metadata"]["name"]
    rules: list[Object] = []
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        try:
            matches = selector_from_label_selector(selector).matches
        except BadRequest:
            continue  # validation keeps such selectors out; one that got in selects nothing
        chosen = [r for r in roles if r["metadata"]["name"] != name and matches(r["metadata"].get("labels") or {})]
        for source in sorted(chosen, key=lambda r: str(r["metadata"]["name"])):
            for rule in source.get("rules") or []:
                normal = normal_rule(rule)
                if normal and normal not in rules:
                    rules.append(normal)
    return rules


def settle(roles: list[Object]) -> None:
    """Fill in every aggregated role of `roles` in place, round after round until nothing changes (chains such as
    view → edit → admin take one round per link): what the controller reaches from the same roles."""
    aggregated = [r for r in roles if r.get("aggregationRule") is not None]
    for _round in range(len(aggregated) + 1):
        changed = False
        for role in aggregated:
            rules = aggregate(role, roles)
            if rules != [normal_rule(rule) for rule in role.get("rules") or []]:
                role["rules"], changed = rules, True
        if not changed:
            return
