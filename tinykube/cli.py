"""The `tinykube` command line: what each subcommand does (its flags are in `tinykube.cli_flags`, and how
`kubeconfig`, `status` and `down` find their cluster in `tinykube.clusterdir`)."""

from __future__ import annotations

if __name__ == "__main__":  # `python -m tinykube.cli`: Ctrl-C works from the first import on (tinykube.signals)
    from tinykube.signals import take_sigint

    take_sigint()

import argparse
import contextlib
import logging
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from signal import SIGINT
from typing import TYPE_CHECKING, Any

# Only light modules here: every subcommand pays for these imports; the components load in their subcommand.
from tinykube import cli_flags
from tinykube.api.defaults import default_data_dir
from tinykube.apiserver.admission import unknown_plugins
from tinykube.apiserver.allocators.ranges import IPRange, PortRange, parse_service_ranges
from tinykube.clusterdir import Refused, locate
from tinykube.controllers.manager import select_controllers
from tinykube.dns.options import host_resolver_hint
from tinykube.proxy.modes import DEFAULT_MODE
from tinykube.signals import take_sigint

if TYPE_CHECKING:
    from tinykube.client.leaderelection import ElectionConfig
    from tinykube.client.rest import RestClient

MAX_NODES = 5000  # kwok's scale; addresses from the sandbox LAN's /16 (node_address); 5,000 are Ready in ~30 s


def _up(args: argparse.Namespace) -> int:
    from tinykube.controllers.nodeipam import NODE_CIDR_MASK, CidrAllocator
    from tinykube.upetcd import launch_etcd

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
        dns = cli_flags.dns_options(args, args.service_cluster_ip_range) if args.dns_port != -1 else None
    except ValueError as err:
        return _fail(str(err))
    if unknown := unknown_plugins(args.disable_admission_plugins):
        return _fail("; ".join(unknown))
    if not 0 <= args.nodes <= MAX_NODES:
        return _fail(f"--nodes must be between 0 and {MAX_NODES}, not {args.nodes}")
    try:
        capacity = CidrAllocator(args.cluster_cidr).capacity
    except ValueError as err:
        return _fail(f"--cluster-cidr: {err}")
    if args.nodes > capacity:  # the nodes beyond would wait for a pod range for ever
        return _fail(
            f"--nodes {args.nodes}: --cluster-cidr {args.cluster_cidr} has pod ranges (/{NODE_CIDR_MASK}) for "
            f"{capacity} nodes; give a wider one (10.128.0.0/11 has 8192)"
        )
    if args.dataplane == "netns" and os.geteuid() != 0:
        return _fail("--dataplane netns needs root (it creates network namespaces)")
    if args.dataplane == "netns" and not re.fullmatch(r"[a-z0-9-]{1,40}", args.name):
        return _fail(f"--name {args.name!r}: with --dataplane netns, lowercase letters, digits and '-' only")
    if args.proxy_mode in ("nftables", "iptables") and args.dataplane != "netns":
        return _fail(f"--proxy-mode {args.proxy_mode} programs node namespaces: it needs --dataplane netns")
    if args.repair_interval <= 0:
        return _fail(f"--repair-interval must be positive, not {args.repair_interval}")
    if args.metric_resolution <= 0:
        return _fail("--metric-resolution must be positive")
    if args.event_ttl < 1:
        return _fail(f"--event-ttl must be at least 1 second, not {args.event_ttl}")
    if not 1 <= args.etcd_members <= 7:
        return _fail(f"--etcd-members must be between 1 and 7, not {args.etcd_members}")
    if args.etcd_servers and (args.etcd_members != 1 or args.etcd_election_timeout):
        return _fail("--etcd-members and --etcd-election-timeout are for the etcd `up` starts, not --etcd-servers")
    if args.etcd_election_timeout and not 50 <= args.etcd_election_timeout <= 50_000:
        return _fail(f"--etcd-election-timeout must be between 50 and 50000 ms, not {args.etcd_election_timeout}")
    try:
        limits = cli_flags.limits(args)
        election = _election(args, identity="")  # `up` keeps its identity in the data dir
        settings = cli_flags.controller_settings(args)
    except ValueError as err:
        return _fail(str(err))
    # etcd first, and the apiserver's modules while it elects itself (upetcd.py)
    started = time.monotonic()
    data_dir = args.data_dir or default_data_dir(args.name)
    etcd_servers = [s for s in args.etcd_servers.split(",") if s]
    etcd = launch_etcd(data_dir, etcd_servers, args.etcd_members, args.etcd_binary, args.etcd_election_timeout)
    try:
        import uvloop

        from tinykube.up import UpOptions, run_up
    except BaseException:
        etcd.stop()
        raise
    opts = UpOptions(
        name=args.name,
        data_dir=args.data_dir,
        api_port=args.api_port,
        bind_address=args.bind_address,
        kubeconfig=args.kubeconfig,
        update_user_kubeconfig=args.update_user_kubeconfig,
        etcd_servers=etcd_servers,
        etcd_binary=args.etcd_binary,
        etcd_prefix=args.etcd_prefix,
        etcd_members=args.etcd_members,
        etcd_election_timeout=args.etcd_election_timeout,
        insecure=args.insecure,
        authorization_mode=args.authorization_mode,
        disabled_admission_plugins=frozenset(args.disable_admission_plugins),
        compaction_interval=args.etcd_compaction_interval,
        service_cluster_ip_range=args.service_cluster_ip_range,
        service_node_port_range=args.service_node_port_range,
        load_balancer_ip_range=args.loadbalancer_ip_range,
        repair_interval=args.repair_interval,
        event_ttl=args.event_ttl,
        limits=limits,
        controllers=controllers,
        leader_election=election,
        dns=dns,
        cluster_cidr=args.cluster_cidr,
        controller_settings=settings,
        metric_resolution=args.metric_resolution,
        nodes=args.nodes,
        dataplane=args.dataplane,
        proxy_mode=args.proxy_mode or (DEFAULT_MODE if args.dataplane == "netns" else ""),
        ui_port=args.ui_port,
    )
    uvloop.run(run_up(opts, etcd, started))
    return 0


def _kubeconfig(args: argparse.Namespace) -> int:
    """The path of the cluster's kubeconfig on stdout and nothing else (`KUBECONFIG=$(tinykube kubeconfig)`); with
    none, stdout stays empty, stderr says in one line what is missing, and the exit status is 1."""
    try:
        found = locate(args.name, args.data_dir)
    except Refused as err:
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
        found = locate(args.name, args.data_dir)
    except Refused as err:
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
        *([("ui", str(state["ui"]))] if "ui" in state else []),
        ("kubeconfig", str(state.get("kubeconfig"))),
        ("data-dir", str(found.directory.resolve())),
    ]
    width = max(len(key) for key, _ in rows)
    print("\n".join(f"{key:<{width}}  {value}" for key, value in rows))
    return 0


def _flags(args: argparse.Namespace) -> str:
    """The --name/--data-dir the user gave, to repeat in a hint."""
    return "".join(f" --{flag} {value}" for flag, value in (("name", args.name), ("data-dir", args.data_dir)) if value)


def _election(args: argparse.Namespace, identity: str) -> ElectionConfig | None:
    """The leader-election flags, checked as client-go checks them (ValueError); None with --leader-elect=false."""
    from tinykube.client.leaderelection import ElectionConfig

    settings = cli_flags.election_settings(args)
    if settings is None:
        return None
    config = ElectionConfig(identity=identity, **settings)
    try:
        config.check()
    except ValueError as err:
        raise ValueError(f"--leader-elect: {err}") from None
    return config


def _with_client(args: argparse.Namespace, what: str, serve: Callable[[RestClient], Awaitable[None]]) -> int:
    """The shape `controllers`, `dns` and `node` share: connect with `--kubeconfig`, run `serve(client)` until
    SIGINT or SIGTERM (either stops it as cleanly: a leader releases its Lease; a second one exits at once, see
    tinykube.signals), close the client. Ctrl-C exits with 130, as a shell expects of an interrupted command."""
    import asyncio

    import uvloop

    from tinykube.client.rest import RestClient
    from tinykube.gcpause import tune_gc_for_caches
    from tinykube.signals import Stopper

    try:
        client = RestClient.from_kubeconfig(args.kubeconfig, args.context)
    except (ValueError, OSError, KeyError, StopIteration) as err:
        return _fail(f"cannot run {what}: {err or type(err).__name__}")
    tasks: list[asyncio.Future[None]] = []

    def stop(_signal: int) -> None:
        for task in tasks:
            task.cancel()

    stopper = Stopper(stop)

    async def main() -> None:
        tune_gc_for_caches()  # their informers' caches
        tasks.append(asyncio.ensure_future(serve(client)))
        stopper.install(asyncio.get_running_loop())
        try:
            await tasks[0]  # a stop cancels it: this returns once it has unwound
        except asyncio.CancelledError:
            if stopper.received is None:
                raise
        finally:
            await client.close()

    uvloop.run(main())
    return 130 if stopper.received == SIGINT else 0


def _controllers(args: argparse.Namespace) -> int:
    from tinykube.client.leaderelection import LeadershipLost
    from tinykube.client.rest import RestClient
    from tinykube.controllers.context import ControllerSettings
    from tinykube.controllers.leader import new_identity, run_elected_controllers
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
    try:
        election = _election(args, new_identity())
        settings = ControllerSettings(**cli_flags.controller_settings(args))
    except ValueError as err:
        return _fail(str(err))

    async def serve(client: RestClient) -> None:
        if election is None:
            await run_controllers(client, names, settings=settings)
            return
        election_client = RestClient.from_kubeconfig(args.kubeconfig, args.context)  # its own connections
        try:
            await run_elected_controllers(
                client, names, election, step_down=False, settings=settings, election_client=election_client
            )
        except LeadershipLost as err:  # as kube-controller-manager: its supervisor starts a fresh one
            raise SystemExit(f"tinykube: leaderelection lost ({err})") from None
        finally:
            await election_client.close()

    return _with_client(args, "controllers", serve)


def _dns(args: argparse.Namespace) -> int:
    from tinykube.dns.run import DnsService

    _logging(args.verbose)
    try:
        parse_service_ranges(args.service_cluster_ip_range)
        options = cli_flags.dns_options(args, args.service_cluster_ip_range, args.address)
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

    from tinykube.sandbox.topology import remove_sandbox

    try:
        found = locate(args.name, args.data_dir)
    except Refused as err:
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

    from tinykube.node.agent import KubeletClients, NodeAgent, NodeConfig
    from tinykube.node.simulated import SimulatedRuntime

    _logging(args.verbose)
    try:
        ipaddress.ip_address(args.node_ip)
    except ValueError as err:
        return _fail(f"cannot run node: {err}")
    config = NodeConfig(args.name, args.node_ip)
    return _with_client(
        args,
        "node",
        lambda client: NodeAgent(KubeletClients.one(client), config, lambda _cidr, host: SimulatedRuntime(host)).run(),
    )


def _env(args: argparse.Namespace) -> int:
    import asyncio
    import os

    import yaml

    from tinykube.api import errors
    from tinykube.api.resources import builtin
    from tinykube.client.rest import RestClient
    from tinykube.kubelet_env.envvars import container_environment
    from tinykube.node.configsources import api_reader, container_sources

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

    async def fetch() -> list[tuple[str, str]]:
        try:
            found = pod or await client.get(builtin("", "v1", "pods"), args.namespace, args.pod)
            found.setdefault("metadata", {}).setdefault("namespace", args.namespace)
            containers = (found.get("spec") or {}).get("containers") or []
            chosen = [c for c in containers if args.container in (None, c.get("name"))]
            if not chosen:
                raise ValueError(
                    f"pod has no container {args.container!r}" if args.container else "pod has no containers"
                )
            services = (await client.list(builtin("", "v1", "services")))["items"]
            sources = await container_sources(api_reader(client), found, chosen[0], lambda warning: None)
            return container_environment(found, chosen[0], services, sources)
        finally:
            await client.close()

    try:
        variables = asyncio.run(fetch())
    except errors.ApiError as err:
        return _fail(f"env: {err}")
    except ValueError as err:  # the pod, or its environment's sources (ConfigError)
        return _fail(f"env: {err}")
    except OSError as err:
        return _fail(f"env: cannot reach the cluster in {kubeconfig}: {err}")
    print("\n".join(f"{name}={value}" for name, value in variables))
    return 0


def _trace(args: argparse.Namespace) -> int:
    """`tinykube trace FROM TO`: one traced connection in a running netns cluster (tinykube.trace)."""
    import asyncio
    import signal

    from tinykube.client.rest import RestClient
    from tinykube.trace import render, trace

    if os.geteuid() != 0:
        return _fail("trace needs root (it runs nft inside the sandbox's network namespaces)")
    try:
        found = locate(args.name, args.data_dir)
    except Refused as err:
        return _fail(str(err))
    if found.state is None or not found.running() or found.name is None:
        return _fail(f"cluster {found.label} is not running (`tinykube up --dataplane netns{_flags(args)}` starts one)")
    try:
        client = RestClient.from_kubeconfig(Path(str(found.state["kubeconfig"])))
    except (ValueError, OSError, KeyError, StopIteration) as err:
        return _fail(f"trace: cannot reach cluster {found.label}: {err or type(err).__name__}")

    async def run() -> str:
        try:
            result = await trace(client, found.name or "", args.source, args.target, args.proto, args.timeout)
        finally:
            await client.close()
        if result.error:
            raise ValueError(result.error)
        return render(result, explain=args.explain)

    # SIGTERM ends the command the way Ctrl-C does: the trace still removes its tables and monitors (its worker
    # thread finishes before the interpreter exits)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        print(asyncio.run(run()))
    except ValueError as err:
        return _fail(f"trace: {err}")
    return 0


def _logging(verbose: bool) -> None:
    """The terminal's level is its handler's: a component's logger may be lowered to INFO for the log its mirror
    pod shows (`tinykube.componentlog`) without the terminal printing more."""
    level = logging.DEBUG if verbose else logging.WARNING
    terminal = logging.StreamHandler()
    terminal.setLevel(level)
    terminal.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[terminal])


def _fail(message: str) -> int:
    _note(message)
    return 1


def _note(message: str) -> None:
    print(f"tinykube: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    take_sigint()  # Ctrl-C works even where SIGINT was inherited ignored (tinykube.signals)
    args = cli_flags.parser().parse_args(argv)
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
        "trace": _trace,
    }
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
