"""Discovery documents built from the resource table: legacy (`APIVersions`, `APIGroupList`, `APIResourceList`)
and the aggregated `apidiscovery.k8s.io` form kubectl 1.32 asks for first."""

from __future__ import annotations

from typing import Any

from tinykube import __version__
from tinykube.api.resources import Catalog, ResourceInfo
from tinykube.apiserver.http.negotiation import accept_params

KUBE_VERSION = (1, 32, 0)
SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "finalize": ["update"],
    "binding": ["create"],
    "eviction": ["create"],
    "log": ["get"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
    "proxy": ["create", "delete", "get", "patch", "update"],
    "ephemeralcontainers": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "token": ["create"],
    "approval": ["get", "patch", "update"],
}
# What a subresource takes, where it is not the resource's kind: (group, version, kind); "" keeps the resource's.
SUBRESOURCE_KINDS = {
    "binding": ("", "", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
    "scale": ("autoscaling", "v1", "Scale"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
    "exec": ("", "", "PodExecOptions"),
    "attach": ("", "", "PodAttachOptions"),
    "portforward": ("", "", "PodPortForwardOptions"),
}
PROXY_KINDS = {"pods": "PodProxyOptions", "services": "ServiceProxyOptions", "nodes": "NodeProxyOptions"}
# Create-only collections outside the resource table (no storage of their own): upstream's legacy `bindings`.
EXTRA_CORE_RESOURCES: list[dict[str, Any]] = [
    {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding"}
]


def version_info() -> dict[str, str]:
    major, minor, patch = KUBE_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.{patch}+tinykube.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "cpython",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _groups(catalog: Catalog) -> list[dict[str, Any]]:
    """Named groups with their versions, the preferred (first served) one first."""
    groups: dict[str, list[dict[str, str]]] = {}
    for group, version in catalog.group_versions():
        if group:
            groups.setdefault(group, []).append(_group_version(group, version))
    return [{"name": name, "versions": versions, "preferredVersion": versions[0]} for name, versions in groups.items()]


def api_group_list(catalog: Catalog) -> dict[str, Any]:
    found: dict[str, Any] = catalog.derived(
        "groups", lambda: {"kind": "APIGroupList", "apiVersion": "v1", "groups": _groups(catalog)}
    )
    return found


def api_group(catalog: Catalog, name: str) -> dict[str, Any] | None:
    """`/apis/<group>`: one APIGroup, or None for a group not served."""
    found = next((g for g in api_group_list(catalog)["groups"] if g["name"] == name), None)
    return {"kind": "APIGroup", "apiVersion": "v1", **found} if found else None


def _resource_entry(r: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    return entry


def _subresource_kind(r: ResourceInfo, sub: str) -> dict[str, str]:
    if sub == "proxy":
        return {"group": r.group, "version": r.version, "kind": PROXY_KINDS[r.plural]}
    group, version, kind = SUBRESOURCE_KINDS.get(sub, ("", "", r.kind))
    return {"group": group or r.group, "version": version or r.version, "kind": kind}


def _subresource_entry(r: ResourceInfo, sub: str) -> dict[str, Any]:
    """A legacy discovery entry; `group`/`version` only where the subresource speaks another group's kind."""
    kind = _subresource_kind(r, sub)
    entry: dict[str, Any] = {"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced}
    if (kind["group"], kind["version"]) != (r.group, r.version):
        entry |= {"group": kind["group"], "version": kind["version"]}
    return entry | {"kind": kind["kind"], "verbs": SUBRESOURCE_VERBS[sub]}


def api_resource_list(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = catalog.derived(
        ("resources", group, version), lambda: _api_resource_list(catalog, group, version)
    )
    return found


def _api_resource_list(catalog: Catalog, group: str, version: str) -> dict[str, Any] | None:
    members = catalog.in_group_version(group, version)
    if not members:
        return None
    resources: list[dict[str, Any]] = []
    for r in members:
        resources.append(_resource_entry(r))
        resources += [_subresource_entry(r, sub) for sub in r.subresources]
    if not group:
        resources += [{**extra, "verbs": ["create"]} for extra in EXTRA_CORE_RESOURCES]
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _aggregated_resource(r: ResourceInfo) -> dict[str, Any]:
    kind = {"group": r.group, "version": r.version, "kind": r.kind}
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": kind,
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    if r.subresources:
        entry["subresources"] = [
            {
                "subresource": s,
                "responseKind": _subresource_kind(r, s),
                "verbs": SUBRESOURCE_VERBS[s],
            }
            for s in r.subresources
        ]
    return entry


def aggregated(catalog: Catalog, core: bool, api_version: str) -> dict[str, Any]:
    """`/api` (core=True) or `/apis` as an APIGroupDiscoveryList of `api_version` (v2 or v2beta1)."""
    found: dict[str, Any] = catalog.derived(
        ("aggregated", core, api_version), lambda: _aggregated(catalog, core, api_version)
    )
    return found


def _aggregated(catalog: Catalog, core: bool, api_version: str) -> dict[str, Any]:
    items: dict[str, dict[str, Any]] = {}
    for group, version in catalog.group_versions():
        if (group == "") != core:
            continue
        resources = [_aggregated_resource(r) for r in catalog.in_group_version(group, version)]
        if not group:
            resources += [
                {
                    "resource": extra["name"],
                    "responseKind": {"group": "", "version": version, "kind": extra["kind"]},
                    "scope": "Namespaced",
                    "singularResource": extra["singularName"],
                    "verbs": ["create"],
                }
                for extra in EXTRA_CORE_RESOURCES
            ]
        item = items.setdefault(group, {"metadata": {"name": group, "creationTimestamp": None}, "versions": []})
        item["versions"].append({"version": version, "resources": resources, "freshness": "Current"})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": list(items.values())}


def aggregated_version(accept: str) -> str | None:
    """The apidiscovery version the client accepts, in its order of preference, if any."""
    for params in accept_params(accept):
        wanted = params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList"
        if wanted and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
    return None
