"""The DNS server's options, their checks, and the host resolver hint printed for them (light: the command line
shows and checks them without loading the server)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tinykube.dns.names import reverse_zones

POD_MODES = ("disabled", "insecure", "verified")
DEFAULT_DNS_PORT = 10053
MAX_TTL = 3600


@dataclass
class DnsOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_DNS_PORT
    metrics_port: int | None = None  # None: no metrics port; 0: a free one
    cluster_domain: str = "cluster.local"
    ttl: int = 5
    pods: str = "disabled"
    upstreams: list[tuple[str, int]] = field(default_factory=list)
    reverse_cidrs: list[str] = field(default_factory=list)  # PTR zones: the service and pod ranges

    def check(self) -> None:
        """Raise ValueError with a one-line message for a bad option."""
        if not 0 <= self.ttl <= MAX_TTL:
            raise ValueError(f"ttl must be in range [0, {MAX_TTL}]: {self.ttl}")
        if self.pods not in POD_MODES:
            raise ValueError(f"pods must be one of {', '.join(POD_MODES)}: {self.pods!r}")
        labels = self.cluster_domain.strip(".").split(".")
        if not all(labels) or any(len(label) > 63 for label in labels):
            raise ValueError(f"not a domain name: {self.cluster_domain!r}")
        reverse_zones(self.reverse_cidrs)  # raises ValueError for a bad CIDR


def parse_upstream(text: str) -> tuple[str, int]:
    """`1.2.3.4`, `1.2.3.4:5353`, `[::1]:53` -> (host, port)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":") or "53"
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, "53"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not an upstream resolver address (HOST[:PORT]): {text!r}")
    return host, int(port)


def host_resolver_hint(host: str, port: int, domain: str) -> str:
    """How to query the cluster DNS from the host, and resolver settings (pasteable as they are) that send only the
    cluster zone to it."""
    ipv6 = ":" in host
    address = f"[{host}]:{port}" if ipv6 else f"{host}:{port}"
    return "\n".join(
        [
            f"  dns:  dig @{host} -p {port} kubernetes.default.svc.{domain}",
            "        systemd-resolved (a drop-in such as /etc/systemd/resolved.conf.d/tinykube.conf):",
            "          [Resolve]",
            f"          DNS={address}",
            f"          Domains=~{domain}",
            f"        dnsmasq: server=/{domain}/{host}#{port}",
        ]
    )
