"""What every controller is given: the one REST client, the shared informers and kube-controller-manager's flags.

Controllers import this module and nothing of the registry (`manager`), which imports them: the registry lists the
controllers, so no controller may depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tinykube.api.defaults import CLUSTER_CIDR

if TYPE_CHECKING:  # the command line lists the controllers without loading the client
    from tinykube.client.informer import SharedInformers
    from tinykube.client.rest import RestClient


@dataclass(frozen=True)
class ControllerSettings:
    """kube-controller-manager's flags that tinykube has (beyond `--controllers`), with their defaults."""

    cluster_cidr: str = CLUSTER_CIDR  # the pod network the node IPAM controller cuts into per-node /24s
    volumes_dir: Path | None = None  # where the local-path provisioner makes volumes (None: it provisions none)
    hpa_sync_period: float = 15.0  # --horizontal-pod-autoscaler-sync-period
    hpa_downscale_stabilization: float = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization
    hpa_tolerance: float = 0.1  # --horizontal-pod-autoscaler-tolerance
    hpa_cpu_initialization_period: float = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
    hpa_initial_readiness_delay: float = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay
    node_monitor_grace_period: float = 40.0  # --node-monitor-grace-period: a silent node is Unknown after this
    cluster_signing_cert_file: Path | None = None  # --cluster-signing-cert-file: the CA that signs approved CSRs
    cluster_signing_key_file: Path | None = None  # --cluster-signing-key-file (None: csrsigning signs nothing)
    cluster_signing_duration: float = 365 * 24 * 3600.0  # --cluster-signing-duration: the longest lifetime given


@dataclass
class ControllerContext:
    client: RestClient
    informers: SharedInformers
    settings: ControllerSettings = field(default_factory=ControllerSettings)
