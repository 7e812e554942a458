"""Building the PolicyRules of the default RBAC policy, as upstream's rule builder (`rbacv1helpers.NewRule`): every
list sorted. Each API group's rules for the aggregated `admin`, `edit` and `view` roles (`kinds/<group>/rbac.py`)
and the bootstrap roles (`bootstrap_policy.py`) are written with it."""

from __future__ import annotations

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = READ + WRITE

Rule = dict[str, list[str]]


def rule(verbs: tuple[str, ...], groups: tuple[str, ...], *resources: str, names: tuple[str, ...] = ()) -> Rule:
    built = {"verbs": sorted(verbs), "apiGroups": sorted(groups), "resources": sorted(resources)}
    if names:
        built["resourceNames"] = sorted(names)
    return built


def urls(verbs: tuple[str, ...], *paths: str) -> Rule:
    return {"verbs": sorted(verbs), "nonResourceURLs": sorted(paths)}
