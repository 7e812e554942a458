"""Zero values of the storage.k8s.io kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import META

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "CSIDriver": {"metadata": META, "spec": {}},
    "CSINode": {"metadata": META, "spec": {"drivers": None}},
    "VolumeAttachment": {"metadata": META, "spec": {"source": {}}, "status": {}},
}
