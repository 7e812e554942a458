"""How a Deployment's `replicas` change reaches its ReplicaSets, as upstream's deployment controller decides it.

One active ReplicaSet (or none: the newest) takes the new count; a saturated new ReplicaSet leaves the old ones
at zero; during a rolling update every active ReplicaSet changes in proportion to its size, read against the
`max-replicas` annotation each carries from its last scale, and the rounding leftover goes to the largest. So a
Deployment scaled from 10 to 30 mid-rollout, its ReplicaSets at 8 and 5 with a surge of 3, ends at 20 and 13.
"""

from __future__ import annotations

import math
from typing import Any

Object = dict[str, Any]
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def replicas_of(rs: Object) -> int:
    return int((rs.get("spec") or {}).get("replicas", 0))


def _annotation(rs: Object, key: str) -> int | None:
    text = (rs["metadata"].get("annotations") or {}).get(key)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def is_scaling_event(wanted: int, replicasets: list[Object]) -> bool:
    """An active ReplicaSet was last sized for another `replicas` than the Deployment's now."""
    for rs in replicasets:
        desired = _annotation(rs, DESIRED_REPLICAS)
        if replicas_of(rs) > 0 and desired is not None and desired != wanted:
            return True
    return False


def _created(rs: Object) -> str:
    return str(rs["metadata"].get("creationTimestamp") or "")


def _saturated(new: Object | None, wanted: int) -> bool:
    return (
        new is not None
        and replicas_of(new) == wanted
        and _annotation(new, DESIRED_REPLICAS) == wanted
        and int((new.get("status") or {}).get("availableReplicas") or 0) == wanted
    )


def _fraction(rs: Object, wanted: int, surge: int, status_replicas: int) -> int:
    """What `rs` gains (or loses) for the Deployment's new size, in proportion to its share of the old one."""
    if wanted == 0:
        return -replicas_of(rs)
    before = _annotation(rs, MAX_REPLICAS) or status_replicas  # the annotation lost: the Deployment's size
    if before == 0:
        return 0
    return math.floor(replicas_of(rs) * (wanted + surge) / before + 0.5) - replicas_of(rs)  # Go's math.Round


def scale_plan(
    deployment: Object, new: Object | None, olds: list[Object], *, surge: int, rolling: bool
) -> list[tuple[Object, int]]:
    """The (ReplicaSet, size) pairs a scaling of `deployment` writes, in upstream's order."""
    wanted = int((deployment.get("spec") or {}).get("replicas", 1))
    every = ([new] if new is not None else []) + olds
    active = [rs for rs in every if replicas_of(rs) > 0]
    if len(active) <= 1:
        newest = active or sorted(every, key=_created, reverse=True)[:1]
        return [(newest[0], wanted)] if newest else []
    if _saturated(new, wanted):
        return [(rs, 0) for rs in olds if replicas_of(rs) > 0]
    if not rolling:
        return []
    allowed = wanted + surge if wanted > 0 else 0
    to_add = allowed - sum(replicas_of(rs) for rs in active)
    # the largest first; among equals the newest when growing, the oldest when shrinking
    active.sort(key=_created, reverse=to_add > 0)
    active.sort(key=replicas_of, reverse=True)
    status_replicas = int((deployment.get("status") or {}).get("replicas") or 0)
    sizes, added = [], 0
    for rs in active:
        change = 0
        if to_add and to_add != added:
            fraction, allowed_change = _fraction(rs, wanted, surge, status_replicas), to_add - added
            change = min(fraction, allowed_change) if to_add > 0 else max(fraction, allowed_change)
        sizes.append(replicas_of(rs) + change)
        added += change
    if to_add:
        sizes[0] = max(sizes[0] + to_add - added, 0)
    return list(zip(active, sizes, strict=True))
