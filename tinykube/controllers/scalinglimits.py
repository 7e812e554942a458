"""What the HPA makes of a metric's recommendation before it scales: upstream's stabilization windows and rate
limits (pkg/controller/podautoscaler/horizontal.go, `normalizeDesiredReplicas` and `...WithBehaviors`), without I/O.

Each autoscaler keeps the recommendations of its recent syncs and the scale changes it made. Without `behavior`,
a scale-down takes the highest recommendation of the controller's downscale-stabilization window, and a scale-up is
at most double (at least 4); with `behavior`, each direction has its window (the lowest recent recommendation
holds a scale-up, the highest a scale-down) and its policies, each allowing a change per period, chosen by
`selectPolicy`. Every outcome names its reason, as the `AbleToScale` and `ScalingLimited` conditions show.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

Object = dict[str, Any]
SCALE_UP_LIMIT_FACTOR = 2.0  # without behavior: at most double...
SCALE_UP_LIMIT_MINIMUM = 4.0  # ...or 4

READY = ("ReadyForNewScale", "recommended size matches current size")
SCALE_DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
)
SCALE_UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")


@dataclass(frozen=True, slots=True)
class Outcome:
    replicas: int
    stabilized: tuple[str, str]  # AbleToScale (True): reason, message
    limited: bool  # ScalingLimited's status
    limit: tuple[str, str]  # and its reason, message


@dataclass
class History:
    """One autoscaler's recent recommendations and scale changes: (replicas or change, time.monotonic())."""

    recommendations: list[tuple[int, float]] = field(default_factory=list)
    scale_ups: list[tuple[int, float]] = field(default_factory=list)
    scale_downs: list[tuple[int, float]] = field(default_factory=list)

    def start(self, current: int) -> None:
        """The first sync's current size counts as a recommendation (upstream's recordInitialRecommendation)."""
        if not self.recommendations:
            self.recommendations.append((current, time.monotonic()))

    def _record(self, replicas: int, obsolete_before: float) -> None:
        """Replace the oldest obsolete recommendation, or add one."""
        now = time.monotonic()
        for i, (_r, at) in enumerate(self.recommendations):
            if at < obsolete_before:
                self.recommendations[i] = (replicas, now)
                return
        self.recommendations.append((replicas, now))

    def scaled(self, behavior: Object | None, before: int, after: int) -> None:
        """Remember a scale change, for the policies' periods (events older than the longest are dropped)."""
        now = time.monotonic()
        up = after > before
        events = self.scale_ups if up else self.scale_downs
        rules = (behavior or {}).get("scaleUp" if up else "scaleDown") or {}
        longest = max((int(p.get("periodSeconds", 0)) for p in rules.get("policies") or []), default=0)
        events[:] = [(change, at) for change, at in events if now - at <= longest]
        events.append((abs(after - before), now))


def stabilize_legacy(history: History, recommended: int, window: float) -> int:
    """Without behavior: the highest recommendation of the downscale window (this one included)."""
    now = time.monotonic()
    cutoff = now - window
    highest = max([recommended, *(r for r, at in history.recommendations if at >= cutoff)])
    history._record(recommended, cutoff)
    return highest


def normalize_legacy(
    history: History, current: int, recommended: int, min_replicas: int, max_replicas: int, window: float
) -> Outcome:
    stabilized = stabilize_legacy(history, recommended, window)
    reason = SCALE_DOWN_STABILIZED if stabilized != recommended else READY
    limit = max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM)
    maximum, over = (int(limit), UP_LIMIT) if max_replicas > limit else (max_replicas, TOO_MANY)
    if stabilized < min_replicas:
        desired, why = min_replicas, TOO_FEW
    elif stabilized > maximum:
        desired, why = maximum, over
    else:
        desired, why = stabilized, WITHIN_RANGE
    return Outcome(desired, reason, desired != stabilized, why)


def _window(rules: Object) -> int:
    return int(rules.get("stabilizationWindowSeconds") or 0)


def stabilize(history: History, behavior: Object, current: int, recommended: int, downscale_default: float) -> int:
    """With behavior: the lowest recent recommendation holds a scale-up, the highest a scale-down."""
    up, down = behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {}
    down_window = down.get("stabilizationWindowSeconds")
    down_seconds = float(down_window) if down_window is not None else downscale_default
    now = time.monotonic()
    going_up = recommended >= current
    window = _window(up) if going_up else down_seconds
    cutoff, obsolete = now - window, now - max(_window(up), down_seconds)
    recent = [r for r, at in history.recommendations if at > cutoff]
    best = min([recommended, *recent]) if going_up else max([recommended, *recent])
    history._record(recommended, obsolete)
    return best


def _changed(events: list[tuple[int, float]], period: int) -> int:
    cutoff = time.monotonic() - period
    return sum(change for change, at in events if at > cutoff)


def _policy_limit(history: History, rules: Object, current: int, *, up: bool) -> int:
    """The most (up) or least (down) replicas the policies allow now; the current count when `Disabled`."""
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        period = int(policy.get("periodSeconds") or 0)
        start = current - _changed(history.scale_ups, period) + _changed(history.scale_downs, period)
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposals.append(start + value if up else start - value)
        elif up:  # Percent: rounded up, or a small count could never grow
            proposals.append(math.ceil(start * (1 + value / 100)))
        else:
            proposals.append(int(start * (1 - value / 100)))
    if not proposals:
        return current
    most_change = max if up else min  # "Max" picks the policy allowing the biggest change
    return (most_change if select == "Max" else (min if up else max))(proposals)


def normalize(
    history: History,
    behavior: Object,
    current: int,
    recommended: int,
    min_replicas: int,
    max_replicas: int,
    downscale_default: float,
) -> Outcome:
    stabilized = stabilize(history, behavior, current, recommended, downscale_default)
    if stabilized == recommended:
        reason = READY
    else:
        reason = SCALE_UP_STABILIZED if recommended >= current else SCALE_DOWN_STABILIZED
    desired, why = stabilized, WITHIN_RANGE
    if stabilized > current:
        limit = max(_policy_limit(history, behavior.get("scaleUp") or {}, current, up=True), current)
        maximum, over = (limit, UP_LIMIT) if max_replicas > limit else (max_replicas, TOO_MANY)
        if stabilized > maximum:
            desired, why = maximum, over
    elif stabilized < current:
        limit = min(_policy_limit(history, behavior.get("scaleDown") or {}, current, up=False), current)
        minimum, under = (limit, DOWN_LIMIT) if min_replicas < limit else (min_replicas, TOO_FEW)
        if stabilized < minimum:
            desired, why = minimum, under
    return Outcome(desired, reason, desired != stabilized, why)
