"""The resources tinykube serves, described once; discovery, routing, storage keys and OpenAPI read this table."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")
ALL_VERBS = tuple(sorted(READ_VERBS + WRITE_VERBS))
CREATE_ONLY = ("create",)  # the review resources: answered, never stored
READ_ONLY = ("get", "list")

# Upstream's etcd key segments where they are not the plural (`/registry/<segment>/<namespace>/<name>`).
_STORAGE_SEGMENTS = {
    ("", "services"): "services/specs",
    ("", "nodes"): "minions",
    ("", "replicationcontrollers"): "controllers",
    ("networking.k8s.io", "ingresses"): "ingress",
    ("apiregistration.k8s.io", "apiservices"): "apiregistration.k8s.io/apiservices",
    ("apiextensions.k8s.io", "customresourcedefinitions"): "apiextensions.k8s.io/customresourcedefinitions",
}


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
    verbs: tuple[str, ...] = ALL_VERBS
    # Another version's objects served in this one (`autoscaling/v1` HPAs are stored as `autoscaling/v2`, and
    # `events.k8s.io/v1` Events are the core Events): the stored resource's group-version, converted on the way.
    view_of: str = ""
    # A custom resource's definition (`tinykube.apiextensions.definition.Definition`: schemas, printer columns,
    # subresource paths); None for the built-in resources.
    custom: Any = field(default=None, compare=False, hash=False, repr=False)

    @property
    def key(self) -> str:
        """The resource's name among the stored ones: its plural, or `<plural>.<group>` (the CRD's name) for a custom
        resource, whose plural may be a built-in one's."""
        return f"{self.plural}.{self.group}" if self.custom is not None else self.plural

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    api_version = group_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def stored(self) -> bool:
        """Whether objects of this resource are kept in etcd under its own key space: not a view of another
        version, and not answered per request (the reviews, create-only; componentstatuses, read-only)."""
        return not self.view_of and self.verbs == ALL_VERBS

    @property
    def storage_segment(self) -> str:
        """Key segment under the storage prefix, as upstream (`/registry/services/specs/...`; a custom resource's
        `/registry/<group>/<plural>/...`)."""
        if self.custom is not None:
            return f"{self.group}/{self.plural}"
        return _STORAGE_SEGMENTS.get((self.group, self.plural), self.plural)


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _r(
    group_version: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    short: str = "",
    sub: str = "",
    categories: str = "",
    verbs: tuple[str, ...] = ALL_VERBS,
    view_of: str = "",
) -> ResourceInfo:
    """A table row: group/version, kind and plural, then what differs from the usual."""
    group, _, version = group_version.rpartition("/")
    return ResourceInfo(
        group, version, kind, plural, kind.lower(), namespaced, _split(short), _split(sub), _split(categories), verbs,
        view_of,
    )  # fmt: skip


NS, CLUSTER = True, False

# As `kubectl api-resources` lists them on kube-apiserver 1.32, group by group; a group's preferred version first.
RESOURCES: tuple[ResourceInfo, ...] = (
    # core/v1
    _r("v1", "Namespace", "namespaces", CLUSTER, "ns", "status finalize"),
    _r("v1", "Service", "services", NS, "svc", "status proxy", "all"),
    _r("v1", "Endpoints", "endpoints", NS, "ep"),
    _r("v1", "Pod", "pods", NS, "po",
       "status binding eviction log exec attach portforward proxy ephemeralcontainers", "all"),
    _r("v1", "Node", "nodes", CLUSTER, "no", "status proxy"),
    _r("v1", "Event", "events", NS, "ev"),
    _r("v1", "ConfigMap", "configmaps", NS, "cm"),
    _r("v1", "Secret", "secrets", NS),
    _r("v1", "ServiceAccount", "serviceaccounts", NS, "sa", "token"),
    _r("v1", "PersistentVolume", "persistentvolumes", CLUSTER, "pv", "status"),
    _r("v1", "PersistentVolumeClaim", "persistentvolumeclaims", NS, "pvc", "status"),
    _r("v1", "ReplicationController", "replicationcontrollers", NS, "rc", "status scale", "all"),
    _r("v1", "ResourceQuota", "resourcequotas", NS, "quota", "status"),
    _r("v1", "LimitRange", "limitranges", NS, "limits"),
    _r("v1", "PodTemplate", "podtemplates", NS),
    _r("v1", "ComponentStatus", "componentstatuses", CLUSTER, "cs", verbs=READ_ONLY),
    # admissionregistration.k8s.io: stored and validated; webhooks are not called
    _r("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", CLUSTER,
       categories="api-extensions"),
    _r("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
       CLUSTER, categories="api-extensions"),
    _r("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", CLUSTER,
       sub="status", categories="api-extensions"),
    _r("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
       CLUSTER, categories="api-extensions"),
    _r("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", CLUSTER, "crd crds",
       "status", "api-extensions"),
    _r("apiregistration.k8s.io/v1", "APIService", "apiservices", CLUSTER, sub="status", categories="api-extensions"),
    # apps/v1
    _r("apps/v1", "Deployment", "deployments", NS, "deploy", "status scale", "all"),
    _r("apps/v1", "ReplicaSet", "replicasets", NS, "rs", "status scale", "all"),
    _r("apps/v1", "StatefulSet", "statefulsets", NS, "sts", "status scale", "all"),
    _r("apps/v1", "DaemonSet", "daemonsets", NS, "ds", "status", "all"),
    _r("apps/v1", "ControllerRevision", "controllerrevisions", NS),
    # answered per request, never stored
    _r("authentication.k8s.io/v1", "TokenReview", "tokenreviews", CLUSTER, verbs=CREATE_ONLY),
    _r("authentication.k8s.io/v1", "SelfSubjectReview", "selfsubjectreviews", CLUSTER, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", NS, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", CLUSTER, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", CLUSTER, verbs=CREATE_ONLY),
    _r("authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", CLUSTER, verbs=CREATE_ONLY),
    # autoscaling: one stored object (v2), served in both versions
    _r("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", NS, "hpa", "status", "all"),
    _r("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", NS, "hpa", "status", "all",
       view_of="autoscaling/v2"),
    _r("batch/v1", "CronJob", "cronjobs", NS, "cj", "status", "all"),
    _r("batch/v1", "Job", "jobs", NS, sub="status", categories="all"),
    _r("certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", CLUSTER, "csr",
       "status approval"),
    _r("coordination.k8s.io/v1", "Lease", "leases", NS),
    _r("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", NS),
    _r("events.k8s.io/v1", "Event", "events", NS, "ev", view_of="v1"),
    _r("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "flowschemas", CLUSTER, sub="status"),
    _r("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", CLUSTER,
       sub="status"),
    _r("networking.k8s.io/v1", "IngressClass", "ingressclasses", CLUSTER),
    _r("networking.k8s.io/v1", "Ingress", "ingresses", NS, "ing", "status"),
    _r("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", NS, "netpol"),
    _r("node.k8s.io/v1", "RuntimeClass", "runtimeclasses", CLUSTER),
    _r("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", NS, "pdb", "status"),
    _r("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", CLUSTER),
    _r("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", CLUSTER),
    _r("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", NS),
    _r("rbac.authorization.k8s.io/v1", "Role", "roles", NS),
    _r("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", CLUSTER, "pc"),
    _r("storage.k8s.io/v1", "CSIDriver", "csidrivers", CLUSTER),
    _r("storage.k8s.io/v1", "CSINode", "csinodes", CLUSTER),
    _r("storage.k8s.io/v1", "CSIStorageCapacity", "csistoragecapacities", NS),
    _r("storage.k8s.io/v1", "StorageClass", "storageclasses", CLUSTER, "sc"),
    _r("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", CLUSTER, sub="status"),
    # answered per request from the node agents' samples, as metrics-server's aggregated API (listed last, as that)
    _r("metrics.k8s.io/v1beta1", "NodeMetrics", "nodes", CLUSTER, verbs=READ_ONLY),
    _r("metrics.k8s.io/v1beta1", "PodMetrics", "pods", NS, verbs=READ_ONLY),
)  # fmt: skip
STORED: tuple[ResourceInfo, ...] = tuple(r for r in RESOURCES if r.stored)

# The kind `deployments/scale` and `replicasets/scale` speak; it has no storage and no collection of its own.
SCALE = ResourceInfo("autoscaling", "v1", "Scale", "scale", "scale", True)
# The kind `pods/binding` and the create-only `bindings` collection take; nothing of it is stored.
BINDING = ResourceInfo("", "v1", "Binding", "bindings", "binding", True)
# The kind `pods/eviction` takes (policy/v1); nothing of it is stored.
EVICTION = ResourceInfo("policy", "v1", "Eviction", "evictions", "eviction", True)
# The kind `serviceaccounts/token` takes and answers with; nothing of it is stored.
TOKEN_REQUEST = ResourceInfo("authentication.k8s.io", "v1", "TokenRequest", "tokenrequests", "tokenrequest", True)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.group_version, r.kind): r for r in RESOURCES}


def by_path(group: str, version: str, plural: str) -> ResourceInfo | None:
    return _BY_PATH.get((group, version, plural))


def builtin(group: str, version: str, plural: str) -> ResourceInfo:
    """A resource this apiserver always serves (KeyError for any other): for components naming what they watch."""
    return _BY_PATH[(group, version, plural)]


def stored_of(resource: ResourceInfo) -> ResourceInfo:
    """The resource whose objects `resource` serves: itself, or the stored version a view converts. A custom
    resource's versions are each their own (written in that version, stored by the CRD's strategy)."""
    if resource.custom is not None:  # every version shares the storage of its CRD (by `key`)
        return resource
    if not resource.view_of:
        return resource
    group, _, version = resource.view_of.rpartition("/")
    return _BY_PATH[(group, version, resource.plural)]


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


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key putting versions in upstream's discovery order: GA before beta before alpha, higher numbers first,
    then the versions that do not look like Kubernetes versions, alphabetically."""
    found = _VERSION.match(version)
    if not found:
        return (3, 0, 0, version)
    major, level, minor = found.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -int(major), -int(minor or 0), "")


class Catalog:
    """What one apiserver serves: the built-in table, then the custom resources of its Established CRDs, which
    come and go at run time (`serve`/`withdraw`). `generation` changes with them, for documents derived from it."""

    def __init__(self) -> None:
        self._custom: dict[str, tuple[ResourceInfo, ...]] = {}  # CRD name -> its served versions, preferred first
        self.generation = 0
        self._reindex()

    def serve(self, crd_name: str, versions: tuple[ResourceInfo, ...]) -> None:
        self._custom[crd_name] = versions
        self._reindex()

    def withdraw(self, crd_name: str) -> None:
        if self._custom.pop(crd_name, None) is not None:
            self._reindex()

    def _reindex(self) -> None:
        custom = sorted(
            (r for versions in self._custom.values() for r in versions),
            key=lambda r: (r.group, version_priority(r.version), r.plural),
        )
        self.resources: tuple[ResourceInfo, ...] = RESOURCES + tuple(custom)
        self._by_path = {(r.group, r.version, r.plural): r for r in self.resources}
        self._by_kind = {(r.group_version, r.kind): r for r in self.resources}
        self.generation += 1
        self.memo: dict[Any, Any] = {}  # documents derived from this state (discovery), dropped when it changes

    def derived(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()`, computed once per state of the catalog."""
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def custom(self) -> list[ResourceInfo]:
        """The stored form of every custom resource served."""
        return [versions[0].custom.storage for versions in self._custom.values()]

    def by_path(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((api_version, kind))

    def group_versions(self) -> list[tuple[str, str]]:
        """(group, version) pairs in serving order: core, the built-in groups, then the custom ones."""
        return list(dict.fromkeys((r.group, r.version) for r in self.resources))

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [r for r in self.resources if r.group == group and r.version == version]
