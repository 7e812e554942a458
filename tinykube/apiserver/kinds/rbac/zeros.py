"""Zero values of the rbac.authorization.k8s.io kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import META

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "Role": {"metadata": META, "rules": None},
    "ClusterRole": {"metadata": META, "rules": None},
    "RoleBinding": {"metadata": META, "roleRef": {}},
    "ClusterRoleBinding": {"metadata": META, "roleRef": {}},
}
