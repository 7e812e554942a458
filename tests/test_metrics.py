"""The Prometheus histogram: cumulative buckets, +Inf, sum and count as client_golang writes them."""

from __future__ import annotations

from tinykube.metrics import Histogram, exponential_buckets


def test_histogram_exposition() -> None:
    histogram = Histogram("x_seconds", "X latency", exponential_buckets(0.001, 2, 3))
    for value in (0.0005, 0.001, 0.003, 10.0):
        histogram.observe(value)
    assert histogram.render() == [
        "# HELP x_seconds X latency",
        "# TYPE x_seconds histogram",
        'x_seconds_bucket{le="0.001"} 2',  # upper bounds are inclusive
        'x_seconds_bucket{le="0.002"} 2',
        'x_seconds_bucket{le="0.004"} 3',
        'x_seconds_bucket{le="+Inf"} 4',
        "x_seconds_sum 10.0045",
        "x_seconds_count 4",
    ]
