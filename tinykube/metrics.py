"""A Prometheus histogram in the text exposition format (what kube-proxy's and CoreDNS's metrics endpoints serve)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """client_golang's ExponentialBuckets."""
    return tuple(start * factor**i for i in range(count))


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.help = help_text
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sum += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        running = 0
        for bound, count in zip((*self.buckets, float("inf")), self.counts, strict=True):
            running += count
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            lines.append(f'{self.name}_bucket{{le="{le}"}} {running}')
        return [*lines, f"{self.name}_sum {self.sum}", f"{self.name}_count {running}"]
