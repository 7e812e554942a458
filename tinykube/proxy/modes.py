"""The proxy modes by name (`--proxy-mode`), and the one that programs a netns node by default."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from tinykube.proxy.model import NodeConfig

if TYPE_CHECKING:
    from tinykube.proxy.agent import Proxier

MODES = ("nftables", "iptables", "userspace")
DEFAULT_MODE = "nftables"

Bind = Callable[[str, int], socket.socket]  # makes a bound TCP socket in the node's network namespace


def make_proxier(mode: str, config: NodeConfig, netns: str | None, bind: Bind) -> Proxier:
    """The proxier of `mode` for a node whose network namespace is `netns` (None: the simulated dataplane,
    where only the userspace mode runs, on loopback)."""
    if mode == "nftables":
        from tinykube.proxy.nftables import NftablesProxier, NftRunner

        return NftablesProxier(config, NftRunner(netns))
    if mode == "iptables":
        from tinykube.proxy.iptables import IptablesProxier, IptablesRunner

        return IptablesProxier(config, IptablesRunner(netns))
    if mode == "userspace":
        from tinykube.proxy.userspace import UserspaceProxier

        return UserspaceProxier(config, netns, bind)
    raise ValueError(f"unknown proxy mode {mode!r} (one of {', '.join(MODES)})")
