"""The resources tinykube serves, described once; discovery, routing, storage keys and OpenAPI read this table."""

from __future__ import annotations

from dataclasses import dataclass

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    api_version = group_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def verbs(self) -> tuple[str, ...]:
        return tuple(sorted(READ_VERBS + WRITE_VERBS))

    @property
    def storage_segment(self) -> str:
        """Key segment under the storage prefix, as upstream (`/registry/services/specs/...`)."""
        if self.plural == "services":
            return "services/specs"
        if self.plural == "nodes":
            return "minions"
        if self.group in ("", "discovery.k8s.io", "apps"):
            return self.plural  # upstream: /registry/deployments/..., /registry/replicasets/...
        return f"{self.group}/{self.plural}"


RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), ("status", "finalize")),
    ResourceInfo("", "v1", "Service", "services", "service", True, ("svc",), ("status",), ("all",)),
    ResourceInfo("", "v1", "Endpoints", "endpoints", "endpoints", True, ("ep",)),
    ResourceInfo("", "v1", "Pod", "pods", "pod", True, ("po",), ("status", "binding", "log"), ("all",)),
    ResourceInfo("", "v1", "Node", "nodes", "node", False, ("no",), ("status",)),
    ResourceInfo("", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceInfo("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True),
    ResourceInfo(
        "apps", "v1", "Deployment", "deployments", "deployment", True, ("deploy",), ("status", "scale"), ("all",)
    ),
    ResourceInfo("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), ("status", "scale"), ("all",)),
)

# The kind `deployments/scale` and `replicasets/scale` speak; it has no storage and no collection of its own.
SCALE = ResourceInfo("autoscaling", "v1", "Scale", "scale", "scale", True)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.group_version, r.kind): r for r in RESOURCES}


def by_path(group: str, version: str, plural: str) -> ResourceInfo | None:
    return _BY_PATH.get((group, version, plural))


def builtin(group: str, version: str, plural: str) -> ResourceInfo:
    """A resource this apiserver always serves (KeyError for any other): for components naming what they watch."""
    return _BY_PATH[(group, version, plural)]


def by_kind(api_version: str, kind: str) -> ResourceInfo | None:
    return _BY_KIND.get((api_version, kind))


def group_versions() -> list[tuple[str, str]]:
    """(group, version) pairs in serving order, core first."""
    seen: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen


def in_group_version(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and r.version == version]
