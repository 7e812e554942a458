"""The pod template's cells, which the workload kinds of several groups print (ReplicationControllers here,
ReplicaSets and the other apps kinds, Jobs and CronJobs): container names and images, upstream's
``layoutContainerCells``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, int_or_zero, name_of
from tinykube.apiserver.printing.table import Cells, Column

CONTAINERS_COLUMN = Column("Containers", "string", "Names of each container in the template.", priority=1)
IMAGES_COLUMN = Column("Images", "string", "Images referenced by each container in the template.", priority=1)


def container_cells(template: Any) -> tuple[str, str]:
    """``layoutContainerCells``: a pod template's container names and images, comma-joined."""
    containers = dicts(as_dict(as_dict(template).get("spec")).get("containers"))
    return ",".join(as_str(c.get("name")) for c in containers), ",".join(as_str(c.get("image")) for c in containers)


def replicated_cells(obj: dict[str, Any], now: datetime, selector_text: Callable[[Any], str]) -> Cells:
    """A ReplicaSet's or ReplicationController's row; their selectors (a LabelSelector, a label map) print apart."""
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    containers, images = container_cells(spec.get("template"))
    return [
        name_of(obj),
        int_or_zero(spec.get("replicas")),
        int_or_zero(status.get("replicas")),
        int_or_zero(status.get("readyReplicas")),
        age(obj, now),
        containers,
        images,
        selector_text(spec.get("selector")),
    ]
