"""Zero values of the apps kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import META, POD_TEMPLATE

_WORKLOAD: Final = {"selector": None, "template": POD_TEMPLATE}

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "Deployment": {"metadata": META, "spec": {**_WORKLOAD, "strategy": {}}, "status": {}},
    "ReplicaSet": {"metadata": META, "spec": _WORKLOAD, "status": {}},
    "StatefulSet": {"metadata": META, "spec": {**_WORKLOAD, "updateStrategy": {}}, "status": {}},
    "DaemonSet": {"metadata": META, "spec": {**_WORKLOAD, "updateStrategy": {}}, "status": {}},
}
