"""The kubelet's per-pod files: hostname, /etc/hosts with hostAliases, resolv.conf per dnsPolicy and dnsConfig."""

from __future__ import annotations

from typing import Any

from tinykube.node.podfiles import hostname, hosts_file, resolv_conf


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web-0", "namespace": "shop"}, "spec": spec}


def test_hostname_and_fqdn() -> None:
    assert hostname(pod(), "cluster.local") == ("web-0", "")
    assert hostname(pod(hostname="db", subdomain="nginx"), "cluster.local") == ("db", "db.nginx.shop.svc.cluster.local")
    full = pod(hostname="db", subdomain="nginx", setHostnameAsFQDN=True)
    assert hostname(full, "cluster.local")[0] == "db.nginx.shop.svc.cluster.local"


def test_hosts_file_as_the_kubelet_writes_it() -> None:
    aliases = [{"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]}, {"ip": "10.1.2.3", "hostnames": ["x"]}]
    text = hosts_file(pod(subdomain="nginx", hostAliases=aliases), ["10.244.1.5"], "cluster.local")
    assert text == (
        "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\n"
        "fe00::0\tip6-mcastprefix\n"
        "fe00::1\tip6-allnodes\n"
        "fe00::2\tip6-allrouters\n"
        "10.244.1.5\tweb-0.nginx.shop.svc.cluster.local\tweb-0\n"
        "\n# Entries added by HostAliases.\n"
        "127.0.0.1\tfoo.local\tbar.local\n"
        "10.1.2.3\tx\n"
    )


def test_resolv_conf_per_policy() -> None:
    cluster = resolv_conf(pod(), "10.96.0.10", "cluster.local")
    assert cluster == (
        "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
    )
    node = "nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n"
    assert resolv_conf(pod(dnsPolicy="Default"), "10.96.0.10", "cluster.local", node) == node
    custom = pod(
        dnsPolicy="None",
        dnsConfig={"nameservers": ["1.2.3.4"], "searches": ["a.example"], "options": [{"name": "ndots", "value": "2"}]},
    )
    assert (
        resolv_conf(custom, "10.96.0.10", "cluster.local") == "nameserver 1.2.3.4\nsearch a.example\noptions ndots:2\n"
    )
    merged = pod(
        dnsConfig={"searches": ["extra.example"], "options": [{"name": "ndots", "value": "1"}, {"name": "edns0"}]}
    )
    assert resolv_conf(merged, "10.96.0.10", "cluster.local") == (
        "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local extra.example\n"
        "options ndots:1 edns0\n"
    )
