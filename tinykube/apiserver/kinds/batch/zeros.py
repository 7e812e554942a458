"""Zero values of the batch kinds: what upstream's typed objects always have
(merged in `tinykube.apiserver.kinds.zeros`)."""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.core.zeros import META, POD_TEMPLATE

ZEROS: Final[dict[str, dict[str, Any]]] = {
    "Job": {"metadata": META, "spec": {"template": POD_TEMPLATE}, "status": {}},
    "CronJob": {"metadata": META, "spec": {"jobTemplate": {"metadata": META, "spec": {"template": POD_TEMPLATE}}}},
}
