"""Integration tests against a real tinykube cluster: `Cluster` (usable without pytest) and the pytest plugin
(`tinykube.testing.plugin`, registered through the `pytest11` entry point).

`Cluster` is imported on first use (PEP 562): pytest imports this package in every run where the plugin is
installed, and most of those runs never start a cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinykube.testing.cluster import Cluster, ClusterError, DnsAnswer

__all__ = ["Cluster", "ClusterError", "DnsAnswer"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tinykube.testing import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
