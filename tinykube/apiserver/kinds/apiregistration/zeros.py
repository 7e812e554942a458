"""Zero values of the apiregistration.k8s.io kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import SPEC_STATUS

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "APIService": SPEC_STATUS,
}
