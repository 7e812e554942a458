"""Zero values of the autoscaling kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import META

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "HorizontalPodAutoscaler": {"metadata": META, "spec": {"scaleTargetRef": {}}, "status": {}},
}
