"""What the kubelet writes for a pod besides its volumes: its hostname, its `/etc/hosts` (with `hostAliases`) and its
`/etc/resolv.conf` (per `dnsPolicy` and `dnsConfig`), as upstream's kubelet_pods.go and dns.go make them. Pure
functions; the netns runtime puts the files where `ip netns exec` binds them over /etc, and gives each container a
UTS namespace with the hostname.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]
MAX_NAMESERVERS = 3  # upstream's validation.MaxDNSNameservers
MAX_SEARCHES = 32  # upstream's MaxDNSSearchPaths
NDOTS = "5"
_MANAGED = "# Kubernetes-managed hosts file.\n"
_LOCAL = (
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n"
)


def hostname(pod: Object, domain: str) -> tuple[str, str]:
    """(hostname, FQDN or "") of the pod: `spec.hostname`, else its name cut to 63 characters; with a `subdomain`
    its FQDN is `<hostname>.<subdomain>.<namespace>.svc.<domain>`; `setHostnameAsFQDN` makes that the hostname."""
    spec, meta = pod.get("spec") or {}, pod["metadata"]
    name = str(spec.get("hostname") or meta["name"])[:63].rstrip("-.")
    fqdn = ""
    if spec.get("subdomain"):
        fqdn = f"{name}.{spec['subdomain']}.{meta.get('namespace') or 'default'}.svc.{domain}"
    return (fqdn if fqdn and spec.get("setHostnameAsFQDN") else name), fqdn


def hosts_file(pod: Object, pod_ips: list[str], domain: str) -> str:
    """The kubelet's managed hosts file: localhost, the pod's own addresses with its names, then `hostAliases`."""
    name, fqdn = hostname(pod, domain)
    short = name.split(".", 1)[0]
    names = f"{fqdn}\t{short}" if fqdn else short
    text = _MANAGED + _LOCAL + "".join(f"{ip}\t{names}\n" for ip in pod_ips)
    aliases = (pod.get("spec") or {}).get("hostAliases") or []
    if aliases:
        text += "\n# Entries added by HostAliases.\n"
        text += "".join(f"{a.get('ip')}\t{chr(9).join(a.get('hostnames') or [])}\n" for a in aliases if a.get("ip"))
    return text


def resolv_conf(pod: Object, dns_ip: str, domain: str, host_resolv: str = "") -> str:
    """The pod's resolv.conf: the cluster DNS (ClusterFirst, and ClusterFirstWithHostNet for a pod not on the host
    network), the node's (`Default`), or nothing (`None`); then `dnsConfig` merged in (nameservers and searches
    appended without duplicates, options overriding by name), as upstream's dns.Configurer."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    namespace = pod["metadata"].get("namespace") or "default"
    servers: list[str] = []
    searches: list[str] = []
    options: dict[str, str | None] = {}
    cluster = policy == "ClusterFirst" or (policy == "ClusterFirstWithHostNet")
    if cluster and not spec.get("hostNetwork"):
        servers, searches, options = [dns_ip], [f"{namespace}.svc.{domain}", f"svc.{domain}", domain], {"ndots": NDOTS}
    elif policy != "None":  # Default, or a cluster policy on the host network: the node's own resolver
        servers, searches, options = _parse(host_resolv)
    config = spec.get("dnsConfig") or {}
    for server in config.get("nameservers") or []:
        if server not in servers:
            servers.append(server)
    for search in config.get("searches") or []:
        if search not in searches:
            searches.append(search)
    for option in config.get("options") or []:
        options[str(option.get("name"))] = option.get("value")
    lines = [f"nameserver {s}" for s in servers[:MAX_NAMESERVERS]]
    if searches:
        lines.append("search " + " ".join(searches[:MAX_SEARCHES]))
    if options:
        lines.append("options " + " ".join(k if v is None else f"{k}:{v}" for k, v in options.items()))
    return "\n".join(lines) + "\n"


def _parse(text: str) -> tuple[list[str], list[str], dict[str, str | None]]:
    servers: list[str] = []
    searches: list[str] = []
    options: dict[str, str | None] = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            servers.append(fields[1])
        elif fields[0] in ("search", "domain"):
            searches = fields[1:]
        elif fields[0] == "options":
            for option in fields[1:]:
                key, _, value = option.partition(":")
                options[key] = value or None
    return servers, searches, options
