"""The default ClusterRoles and ClusterRoleBindings of a new kube-apiserver 1.32 (its RBAC bootstrap policy).

Data only: `bootstrap.py` creates whichever is missing at start-up. `admin`, `edit` and `view` are aggregated
roles, whose rules the ClusterRole aggregation controller keeps as the union of the roles their selectors match
(`system:aggregate-to-*`, and `edit` into `admin`, `view` into `edit`). Upstream creates them empty and lets the
controller fill them in; here they are created filled in already (the same computation), so that a new cluster is
complete when it is ready and the state a test fixture resets to does not depend on the controller's timing.

Every rule's lists are sorted, as upstream's rule builder sorts them (`rules.py`). What the aggregated roles grant
on each API group's kinds is that group's (`kinds/<group>/rbac.py`); the controllers' and system roles are here.
The `system:controller:*` roles of kube-controller-manager's individual controllers and the namespaced roles of
`kube-system` are not included: tinykube's controllers run under one identity (the administrator's, in
`system:masters`). kubeadm's `kubeadm:cluster-admins` binding, which a kind cluster has, is.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.aggregation import settle
from tinykube.apiserver.kinds.apps import rbac as apps
from tinykube.apiserver.kinds.autoscaling import rbac as autoscaling
from tinykube.apiserver.kinds.batch import rbac as batch
from tinykube.apiserver.kinds.coordination import rbac as coordination
from tinykube.apiserver.kinds.core import rbac as core
from tinykube.apiserver.kinds.discovery import rbac as discovery
from tinykube.apiserver.kinds.networking import rbac as networking
from tinykube.apiserver.kinds.policy import rbac as policy
from tinykube.apiserver.kinds.rbac import rbac
from tinykube.apiserver.kinds.rbac.rules import READ, WRITE, Rule, rule, urls

GROUP = "rbac.authorization.k8s.io"
LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"

EVENT_VERBS = ("create", "patch", "update")

CORE, APPS, EXT = ("",), ("apps",), ("extensions",)
EVENTS = rule(EVENT_VERBS, ("", "events.k8s.io"), "events")


def _leader_election(name: str) -> list[Rule]:
    return [
        rule(("create",), ("coordination.k8s.io",), "leases"),
        rule(("get", "update"), ("coordination.k8s.io",), "leases", names=(name,)),
    ]


def _approver(signer: str) -> list[Rule]:
    return [rule(("approve",), ("certificates.k8s.io",), "signers", names=(signer,))]


DISCOVERY_URLS = (
    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version",
    "/version/",
)  # fmt: skip
MONITORING_URLS = ("/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*")

# The rules each group gives the aggregated roles, in upstream's order. `extensions` has no home of its own: it
# serves nothing here, but upstream's roles still grant its old resources.
EXTENSIONS_EDIT = [
    rule(
        WRITE, EXT, "daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
        "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale",
    ),
]  # fmt: skip
EXTENSIONS_VIEW = [
    rule(
        READ, EXT, "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
        "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
        "replicationcontrollers/scale",
    ),
]  # fmt: skip

AGGREGATE_TO_ADMIN = [
    rule(("create",), ("authorization.k8s.io",), "localsubjectaccessreviews"),
    *rbac.AGGREGATE_TO_ADMIN,
]

AGGREGATE_TO_EDIT = [
    *core.AGGREGATE_TO_EDIT,
    *apps.AGGREGATE_TO_EDIT,
    *autoscaling.AGGREGATE_TO_EDIT,
    *batch.AGGREGATE_TO_EDIT,
    *EXTENSIONS_EDIT,
    *policy.AGGREGATE_TO_EDIT,
    *networking.AGGREGATE_TO_EDIT,
    *coordination.AGGREGATE_TO_EDIT,
]

AGGREGATE_TO_VIEW = [
    *core.AGGREGATE_TO_VIEW,
    *discovery.AGGREGATE_TO_VIEW,
    *apps.AGGREGATE_TO_VIEW,
    *autoscaling.AGGREGATE_TO_VIEW,
    *batch.AGGREGATE_TO_VIEW,
    *EXTENSIONS_VIEW,
    *policy.AGGREGATE_TO_VIEW,
    *networking.AGGREGATE_TO_VIEW,
]

REVIEWS = [
    rule(("create",), ("authentication.k8s.io",), "tokenreviews"),
    rule(("create",), ("authorization.k8s.io",), "subjectaccessreviews"),
]

KUBE_CONTROLLER_MANAGER = [
    EVENTS,
    *_leader_election("kube-controller-manager"),
    rule(("create",), CORE, "secrets", "serviceaccounts"),
    rule(("delete",), CORE, "secrets"),
    rule(("get",), CORE, "configmaps", "namespaces", "secrets", "serviceaccounts"),
    rule(("update",), CORE, "secrets", "serviceaccounts"),
    *REVIEWS,
    rule(("list", "watch"), ("*",), "*"),
    rule(("create",), CORE, "serviceaccounts/token"),
]

KUBE_SCHEDULER = [
    EVENTS,
    *_leader_election("kube-scheduler"),
    rule(READ, CORE, "nodes"),
    rule(("delete", *READ), CORE, "pods"),
    rule(("create",), CORE, "bindings", "pods/binding"),
    rule(("patch", "update"), CORE, "pods/status"),
    rule(READ, CORE, "replicationcontrollers", "services"),
    rule(READ, ("apps", "extensions"), "replicasets"),
    rule(READ, APPS, "statefulsets"),
    rule(READ, ("policy",), "poddisruptionbudgets"),
    rule(READ, CORE, "persistentvolumeclaims", "persistentvolumes"),
    *REVIEWS,
    rule(READ, ("storage.k8s.io",), "csinodes"),
    rule(READ, CORE, "namespaces"),
    rule(READ, ("storage.k8s.io",), "csidrivers"),
    rule(READ, ("storage.k8s.io",), "csistoragecapacities"),
]

NODE = [
    rule(("create",), ("authentication.k8s.io",), "tokenreviews"),
    rule(("create",), ("authorization.k8s.io",), "localsubjectaccessreviews", "subjectaccessreviews"),
    rule(READ, CORE, "services"),
    rule(("create", "get", "list", "watch"), CORE, "nodes"),
    rule(("patch", "update"), CORE, "nodes/status"),
    rule(("patch", "update"), CORE, "nodes"),
    rule(EVENT_VERBS, CORE, "events"),
    rule(READ, CORE, "pods"),
    rule(("create", "delete"), CORE, "pods"),
    rule(("patch", "update"), CORE, "pods/status"),
    rule(("create",), CORE, "pods/eviction"),
    rule(READ, CORE, "configmaps", "secrets"),
    rule(("get",), CORE, "persistentvolumeclaims", "persistentvolumes"),
    rule(("get",), CORE, "endpoints"),
    rule(("create", "get", "list", "watch"), ("certificates.k8s.io",), "certificatesigningrequests"),
    rule(("create", "delete", "get", "patch", "update"), ("coordination.k8s.io",), "leases"),
    rule(("get",), ("storage.k8s.io",), "volumeattachments"),
    rule(("create",), CORE, "serviceaccounts/token"),
    rule(("get", "patch", "update"), CORE, "persistentvolumeclaims/status"),
    rule(READ, ("storage.k8s.io",), "csidrivers"),
    rule(("create", "delete", "get", "patch", "update"), ("storage.k8s.io",), "csinodes"),
    rule(READ, ("node.k8s.io",), "runtimeclasses"),
]

# name -> rules; an aggregated role's (None) are computed from the others.
CLUSTER_ROLES: dict[str, list[Rule] | None] = {
    "admin": None,
    "cluster-admin": [rule(("*",), ("*",), "*"), urls(("*",), "*")],
    "edit": None,
    "system:aggregate-to-admin": AGGREGATE_TO_ADMIN,
    "system:aggregate-to-edit": AGGREGATE_TO_EDIT,
    "system:aggregate-to-view": AGGREGATE_TO_VIEW,
    "system:auth-delegator": REVIEWS,
    "system:basic-user": [
        rule(("create",), ("authorization.k8s.io",), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
        rule(("create",), ("authentication.k8s.io",), "selfsubjectreviews"),
    ],
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient": [
        rule(("create",), ("certificates.k8s.io",), "certificatesigningrequests/nodeclient")
    ],
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient": [
        rule(("create",), ("certificates.k8s.io",), "certificatesigningrequests/selfnodeclient")
    ],
    "system:certificates.k8s.io:kube-apiserver-client-approver": _approver("kubernetes.io/kube-apiserver-client"),
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver": _approver(
        "kubernetes.io/kube-apiserver-client-kubelet"
    ),
    "system:certificates.k8s.io:kubelet-serving-approver": _approver("kubernetes.io/kubelet-serving"),
    "system:certificates.k8s.io:legacy-unknown-approver": _approver("kubernetes.io/legacy-unknown"),
    "system:discovery": [urls(("get",), *DISCOVERY_URLS)],
    "system:heapster": [
        rule(READ, CORE, "events", "namespaces", "nodes", "pods"),
        rule(READ, EXT, "deployments"),
    ],
    "system:kube-aggregator": [rule(READ, CORE, "endpoints", "services")],
    "system:kube-controller-manager": KUBE_CONTROLLER_MANAGER,
    "system:kube-dns": [rule(("list", "watch"), CORE, "endpoints", "services")],
    "system:kube-scheduler": KUBE_SCHEDULER,
    "system:kubelet-api-admin": [
        rule(READ, CORE, "nodes"),
        rule(("proxy",), CORE, "nodes"),
        rule(("*",), CORE, "nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"),
    ],
    "system:monitoring": [urls(("get",), *MONITORING_URLS)],
    "system:node": NODE,
    "system:node-bootstrapper": [
        rule(("create", "get", "list", "watch"), ("certificates.k8s.io",), "certificatesigningrequests")
    ],
    "system:node-problem-detector": [
        rule(("get",), CORE, "nodes"),
        rule(("patch",), CORE, "nodes/status"),
        EVENTS,
    ],
    "system:node-proxier": [
        rule(("list", "watch"), CORE, "endpoints", "services"),
        rule(READ, CORE, "nodes"),
        EVENTS,
        rule(("list", "watch"), ("discovery.k8s.io",), "endpointslices"),
    ],
    "system:persistent-volume-provisioner": [
        rule(("create", "delete", *READ), CORE, "persistentvolumes"),
        rule(("update", *READ), CORE, "persistentvolumeclaims"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule(("watch",), CORE, "events"),
        EVENTS,
    ],
    "system:public-info-viewer": [urls(("get",), "/healthz", "/livez", "/readyz", "/version", "/version/")],
    "system:service-account-issuer-discovery": [urls(("get",), "/.well-known/openid-configuration", "/openid/v1/jwks")],
    "system:volume-scheduler": [
        rule(("patch", "update", *READ), CORE, "persistentvolumes"),
        rule(READ, ("storage.k8s.io",), "storageclasses"),
        rule(("patch", "update", *READ), CORE, "persistentvolumeclaims"),
    ],
    "view": None,
}

# The aggregated roles collect the roles labelled `aggregate-to-<their name>`; `edit` feeds `admin` and `view`
# feeds `edit`, so admin ⊇ edit ⊇ view.
AGGREGATED = ("admin", "edit", "view")
ROLE_LABELS = {
    "edit": {f"{AGGREGATE}admin": "true"},
    "view": {f"{AGGREGATE}edit": "true"},
    **{f"system:aggregate-to-{name}": {f"{AGGREGATE}{name}": "true"} for name in AGGREGATED},
}

# (binding name, role name, subjects as (kind, name[, namespace]))
CLUSTER_ROLE_BINDINGS: list[tuple[str, str, list[tuple[str, ...]]]] = [
    ("cluster-admin", "cluster-admin", [("Group", "system:masters")]),
    ("system:monitoring", "system:monitoring", [("Group", "system:monitoring")]),
    ("system:discovery", "system:discovery", [("Group", "system:authenticated")]),
    ("system:basic-user", "system:basic-user", [("Group", "system:authenticated")]),
    (
        "system:public-info-viewer",
        "system:public-info-viewer",
        [("Group", "system:authenticated"), ("Group", "system:unauthenticated")],
    ),
    ("system:node-proxier", "system:node-proxier", [("User", "system:kube-proxy")]),
    ("system:kube-controller-manager", "system:kube-controller-manager", [("User", "system:kube-controller-manager")]),
    ("system:kube-dns", "system:kube-dns", [("ServiceAccount", "kube-dns", "kube-system")]),
    ("system:kube-scheduler", "system:kube-scheduler", [("User", "system:kube-scheduler")]),
    ("system:volume-scheduler", "system:volume-scheduler", [("User", "system:kube-scheduler")]),
    ("system:node", "system:node", []),  # kept without subjects since the Node authorizer replaced it (1.8)
    (
        "system:service-account-issuer-discovery",
        "system:service-account-issuer-discovery",
        [("Group", "system:serviceaccounts")],
    ),
]


def _metadata(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**LABELS, **(labels or {})}, "annotations": dict(ANNOTATIONS)}


def cluster_roles() -> list[dict[str, Any]]:
    roles = []
    for name, rules in CLUSTER_ROLES.items():
        role: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole"}
        role["metadata"] = _metadata(name, ROLE_LABELS.get(name))
        if name in AGGREGATED:
            role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {f"{AGGREGATE}{name}": "true"}}]}
        role["rules"] = [dict(r) for r in rules] if rules is not None else None
        roles.append(role)
    settle(roles)
    return roles


def _subject(kind: str, name: str, namespace: str = "") -> dict[str, str]:
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace}
    return {"kind": kind, "apiGroup": GROUP, "name": name}


# kubeadm's (so kind's) binding of its administrators' group: a kind admin.conf's client certificate has
# O=kubeadm:cluster-admins since 1.29, and one made here for that group is an administrator too. Not a bootstrap
# object of the apiserver: no rbac-defaults labels.
KUBEADM_CLUSTER_ROLE_BINDINGS = [("kubeadm:cluster-admins", "cluster-admin", [("Group", "kubeadm:cluster-admins")])]


def cluster_role_bindings() -> list[dict[str, Any]]:
    bindings = []
    kubeadm = {name for name, _role, _subjects in KUBEADM_CLUSTER_ROLE_BINDINGS}
    for name, role, subjects in CLUSTER_ROLE_BINDINGS + KUBEADM_CLUSTER_ROLE_BINDINGS:
        binding: dict[str, Any] = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name} if name in kubeadm else _metadata(name),
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        }
        if subjects:
            binding["subjects"] = [_subject(*subject) for subject in subjects]
        bindings.append(binding)
    return bindings
