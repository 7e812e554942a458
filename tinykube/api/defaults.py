"""Cluster-wide defaults that several components must agree on, as upstream's flags default them (a module with no
imports of its own, so that the command line can show them without loading the components)."""

from __future__ import annotations

import os
from pathlib import Path

CLUSTER_CIDR = "10.244.0.0/16"  # --cluster-cidr: the pod network, a /24 per node (kubeadm's and flannel's default)
SERVICE_RANGE = "10.96.0.0/16"  # --service-cluster-ip-range
NODE_PORT_RANGE = "30000-32767"  # --service-node-port-range
LOAD_BALANCER_RANGE = "172.20.255.0/24"  # the built-in load balancer's pool, inside the netns sandbox's LAN


def default_data_dir(name: str) -> Path:
    """Where cluster `name` keeps its state: `$XDG_DATA_HOME/tinykube/<name>` (~/.local/share by default)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "tinykube" / name
