"""IntOrString counts (`2` or `"25%"`) as the controllers read them: upstream's GetScaledValueFromIntOrPercent."""

from __future__ import annotations

import math
from typing import Any


def scaled(value: Any, total: int, *, round_up: bool) -> int:
    """`value` as a count of `total`: a percentage rounded up or down, a number as it is (validation has refused
    anything else)."""
    if isinstance(value, str) and value.endswith("%"):
        share = total * int(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value or 0)
