"""Zero values of the core kinds: what upstream's typed objects always have (structs that are not pointers, slices
without omitempty), for `tinykube.apiserver.kinds.zeros`. Also the parts every group's zero values share: an
object's metadata and a pod template."""

from __future__ import annotations

from typing import Any, Final

# ObjectMeta's creationTimestamp is a struct (metav1.Time), never omitted.
META: Final = {"creationTimestamp": None}
POD_TEMPLATE: Final = {"metadata": META, "spec": {"containers": None}}
SPEC_STATUS: Final = {"metadata": META, "spec": {}, "status": {}}

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "Pod": {"metadata": META, "spec": {"containers": None}, "status": {}},
    "PodTemplate": {"metadata": META, "template": POD_TEMPLATE},
    "Service": {"metadata": META, "spec": {}, "status": {"loadBalancer": {}}},
    "Namespace": SPEC_STATUS,
    "Node": {"metadata": META, "spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {}}, "nodeInfo": {}}},
    "Event": {"metadata": META, "involvedObject": {}, "source": {}},
    "PersistentVolume": SPEC_STATUS,
    "PersistentVolumeClaim": {"metadata": META, "spec": {"resources": {}}, "status": {}},
    "ReplicationController": SPEC_STATUS,
    "ResourceQuota": SPEC_STATUS,
    "LimitRange": {"metadata": META, "spec": {"limits": None}},
}
