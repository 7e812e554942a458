"""`tinykube proxy --cleanup`: what `kube-proxy --cleanup` does, for the node namespaces of a tinykube sandbox.

Every mode's rules go, whichever mode installed them: the nftables table `ip kube-proxy`, the iptables KUBE-*
chains with the jumps into them, and the userspace mode's table. A running `tinykube up` programs them again at
its next sync (within 30 s): this is for demos ("what happens without the rules") and for tidying by hand.
"""

from __future__ import annotations

import re

from tinykube.proxy.iptables import IptablesRunner
from tinykube.proxy.nftables import NftError, NftRunner
from tinykube.proxy.userspace import TABLE as USERSPACE_TABLE
from tinykube.sandbox import netns
from tinykube.sandbox.topology import netns_prefix


def node_namespaces(cluster: str, node: str | None = None) -> list[str]:
    """The nodes' namespaces of a sandbox (not its pods', LAN's or external client's)."""
    prefix = netns_prefix(cluster)
    nodes = [n for n in netns.list_netns(prefix) if re.fullmatch(r"node-\d+", n.removeprefix(prefix))]
    return [n for n in nodes if node is None or n == prefix + node]


def cleanup(namespace: str) -> list[str]:
    """Remove every proxy mode's rules from `namespace`; returns what was there."""
    removed = []
    nft = NftRunner(namespace, session=False)
    tables = set(nft.run("list tables\n").splitlines())
    for table in ("ip kube-proxy", USERSPACE_TABLE):
        if f"table {table}" in tables:
            try:
                nft.run(f"delete table {table}\n")
            except NftError as err:
                if "No such file or directory" not in str(err):
                    raise
            removed.append(f"nftables table {table}")
    iptables = IptablesRunner(namespace)
    if "KUBE-" in iptables.save():
        iptables.cleanup()
        removed.append("iptables KUBE-* chains")
    return removed
