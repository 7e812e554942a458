"""`tinykube up`: etcd, apiserver, controllers, DNS and node agents (and with `--dataplane netns` the sandbox and
a proxy per node) of one cluster in one process, until SIGINT/SIGTERM.

Everything a cluster keeps lives in its data dir: `etcd/` (unless an external etcd is used; with `--etcd-members N`,
`etcd-cluster/`), `pki/`, `token`, `kubeconfig`, `cluster.json` (what `tinykube kubeconfig` reads), `etcd.log`,
`controller-manager-id` (its controllers' leader-election identity) and, with netns pods, `pods/` (their logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import ipaddress
import json
import logging
import os
import secrets
import socket
import ssl
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn

from tinykube.api.defaults import CLUSTER_CIDR, default_data_dir
from tinykube.api.resources import builtin
from tinykube.apiserver.app import (
    DEFAULT_LOAD_BALANCER_RANGE,
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_RANGE,
    ApiServer,
    ApiServerConfig,
)
from tinykube.apiserver.bootstrap.endpointreconciler import KubernetesEndpoints
from tinykube.apiserver.bootstrap.pki import ensure_pki, ensure_service_account_key
from tinykube.apiserver.componentstatus import Health
from tinykube.apiserver.connect.dialer import SandboxDialer
from tinykube.apiserver.connect.metricsserver import DEFAULT_RESOLUTION
from tinykube.apiserver.discovery import KUBE_VERSION
from tinykube.apiserver.http.limits import LimitedHttpProtocol, Limits, limited_protocol, raise_fd_limit, tls_accepting
from tinykube.apiserver.http.peercert import with_peer_certificate
from tinykube.apiserver.http.upgrade import WebSocketProtocol
from tinykube.client.asgi import AsgiTransport
from tinykube.client.informer import SharedInformers
from tinykube.client.kubeconfig import Credentials, merge_kubeconfig, write_kubeconfig
from tinykube.client.leaderelection import ElectionConfig
from tinykube.client.rest import RestClient
from tinykube.componentlog import FileLog, LogBuffer, LogSource
from tinykube.controllers.context import ControllerSettings
from tinykube.controllers.leader import lasting_identity, run_elected_controllers
from tinykube.controllers.manager import known_controllers, run_controllers
from tinykube.dns.options import DnsOptions, host_resolver_hint
from tinykube.dns.run import DnsService
from tinykube.gcpause import tune_gc_for_caches
from tinykube.node.agent import KubeletClients, NodeAgent, NodeConfig
from tinykube.node.runtime import Runtime, RuntimeHost
from tinykube.node.simulated import SimulatedRuntime
from tinykube.node.staticpods import StaticPod, control_plane_pods, proxy_pod
from tinykube.sandbox.topology import LAN_GATEWAY, SandboxError, netns_prefix, node_address
from tinykube.signals import Stopper
from tinykube.store.launcher import EtcdCluster, EtcdProcess, process_start
from tinykube.upetcd import LaunchedEtcd
from tinykube.upetcd import say as _say

if TYPE_CHECKING:  # the netns dataplane and the loopback proxy are imported when asked for (start-up time)
    from tinykube.ui.server import UiServer
    from tinykube.wiring import NetnsDataplane

log = logging.getLogger(__name__)

ENDPOINTS = builtin("", "v1", "endpoints")
NODES = builtin("", "v1", "nodes")
ENDPOINT_SLICES = builtin("discovery.k8s.io", "v1", "endpointslices")
MIRROR_WAIT = 5.0  # seconds start-up waits for the mirror pods (and kube-dns's endpoints), as for the nodes
# Event writes of all the simulated kubelets at once. Events are best effort and written in the background (each
# kubelet's queue holds 1,000); on one core, the three a container's start brings would take as much as the pods'
# own writes when thousands start at once, and pods reached Ready in 2x the time. Few writes at once leave the core
# to the pods; the events follow as soon as the burst is over.
SIMULATED_KUBELET_EVENT_WRITES = 2
# The loggers of each component a mirror pod shows (and those of another component's inside them).
COMPONENT_LOGGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kube-apiserver": (("tinykube.apiserver", "tinykube.apiextensions", "tinykube.store"), ()),
    "kube-controller-manager": (("tinykube.controllers",), ("tinykube.controllers.scheduler",)),
    "kube-scheduler": (("tinykube.controllers.scheduler",), ()),
    "coredns": (("tinykube.dns",), ()),
    "kube-proxy": (("tinykube.proxy",), ()),
}


def _simulated(_pod_cidr: str, host: RuntimeHost) -> Runtime:
    return SimulatedRuntime(host)


class _Server(uvicorn.Server):
    """uvicorn's server without its own SIGINT/SIGTERM handlers, which would stop the apiserver before `stop()` runs:
    the components stop first, while it still serves their last writes (a leader releasing its Lease)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's, but TLS done by the protocol (`tls_accepting`): connections count against the cap, and can
        be shed, from their accept on, and a handshake must end within the read-header timeout."""
        config = self.config
        context = config.ssl
        if context is None or not issubclass(config.http_protocol_class, LimitedHttpProtocol):
            await super().startup(sockets)
            return
        protocol_class = config.http_protocol_class
        timeout = protocol_class.limits.read_header_timeout
        # for uvicorn's create_server and each accept from here on: the protocol does the TLS
        config.ssl = None
        config.http_protocol_class = tls_accepting(protocol_class, context, timeout)  # type: ignore[assignment]
        await super().startup(sockets)


@dataclass
class UpOptions:
    name: str = "tinykube"
    data_dir: Path | None = None
    api_port: int = 6443
    bind_address: str = "127.0.0.1"
    kubeconfig: Path | None = None
    update_user_kubeconfig: bool = False
    etcd_servers: list[str] = field(default_factory=list)
    etcd_binary: str | None = None
    etcd_prefix: str = "/registry/"
    etcd_members: int = 1  # members of the etcd that `up` starts (not with etcd_servers)
    etcd_election_timeout: int = 0  # ms; 0: 250 for one member, EtcdCluster's default for several
    insecure: bool = False
    authorization_mode: str = "RBAC"  # --authorization-mode: RBAC or AlwaysAllow
    disabled_admission_plugins: frozenset[str] = frozenset()  # --disable-admission-plugins
    compaction_interval: float = 300.0
    service_cluster_ip_range: str = DEFAULT_SERVICE_RANGE
    service_node_port_range: str = DEFAULT_NODE_PORT_RANGE
    load_balancer_ip_range: str = DEFAULT_LOAD_BALANCER_RANGE
    repair_interval: float = 180.0
    event_ttl: float = 3600.0
    limits: Limits = field(default_factory=Limits)  # the apiserver's limits before work (apiserver/http/limits.py)
    controllers: list[str] = field(default_factory=known_controllers)  # names, as `select_controllers` returns
    leader_election: ElectionConfig | None = field(default_factory=ElectionConfig)  # None: --leader-elect=false
    dns: DnsOptions | None = field(default_factory=DnsOptions)  # None: no DNS server
    cluster_cidr: str = CLUSTER_CIDR
    controller_settings: dict[str, Any] = field(default_factory=dict)  # ControllerSettings fields beyond the defaults
    metric_resolution: float = DEFAULT_RESOLUTION  # how often the node agents' resource metrics are scraped
    nodes: int = 1  # node agents, named node-1, node-2, ...
    dataplane: str = "none"  # none: simulated pods; netns: pods are network namespaces running processes (root)
    proxy_mode: str = ""  # "": no proxy (simulated dataplane); nftables, iptables or userspace
    ui_port: int | None = None  # --ui-port: the live picture on 127.0.0.1 (tinykube/ui); None: off, 0: a free port

    @property
    def dir(self) -> Path:
        return self.data_dir or default_data_dir(self.name)

    @property
    def context(self) -> str:
        return f"tinykube-{self.name}"


def _token(directory: Path) -> str:
    path = directory / "token"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path.read_text().strip()


SANDBOX_API_PORT = 6443  # the apiserver's port on the LAN address (the LAN namespace's own port space)


def _serving_sans(opts: UpOptions) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The serving certificate's extra IPs and names: the kubernetes ClusterIP (the service range's first address),
    the LAN address pods reach the API at, and `kubernetes.default.svc.<cluster domain>`."""
    primary = ipaddress.ip_network(opts.service_cluster_ip_range.split(",")[0].strip(), strict=False)
    domain = opts.dns.cluster_domain if opts.dns else "cluster.local"
    return (str(primary.network_address + 1), LAN_GATEWAY), (f"kubernetes.default.svc.{domain}",)


def _listen(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as err:
        sock.close()
        raise SystemExit(
            f"tinykube: cannot listen on {address}:{port}: {err.strerror} "
            "(choose another --api-port; 0 picks a free one)"
        ) from err
    sock.listen(1024)
    return sock


class Cluster:
    """A running cluster: start() brings it to /readyz green, stop() undoes everything start() did."""

    def __init__(self, opts: UpOptions, etcd: LaunchedEtcd) -> None:
        self.opts = opts
        self.launched_etcd = etcd  # launched already, so that its start overlapped the imports (upetcd.py)
        self.etcd: EtcdProcess | EtcdCluster | None = etcd.process  # stopped by stop(), started or not
        self.etcd_servers: list[str] = []
        self.server: uvicorn.Server | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.client: RestClient | None = None
        # Each with its own in-process request slots, as upstream's components each hold their own connections:
        # the Lease of the controllers' leader election, and the node agents' clients (5,000 simulated kubelets
        # renewing leases must not hold up the scheduler's bindings, nor it theirs).
        self.election_client: RestClient | None = None
        self.kubelet_clients: KubeletClients | None = None
        self.informers: SharedInformers | None = None
        self.dns: DnsService | None = None
        self.dataplane: NetnsDataplane | None = None
        self._sandbox_config: uvicorn.Config | None = None  # the apiserver's, to serve in the sandbox (netns)
        self.sandbox_server: uvicorn.Server | None = None
        self.sandbox_task: asyncio.Task[None] | None = None
        self.kubernetes_endpoints: KubernetesEndpoints | None = None
        self.ui: UiServer | None = None
        self.kubeconfig = opts.kubeconfig or opts.dir / "kubeconfig"
        self.component_logs: dict[str, LogBuffer] = {}  # component -> its log, for its mirror pod (detached at stop)
        self.agents: list[NodeAgent] = []

    def _runs(self) -> list[str]:
        """The components of this process that a node shows as mirror pods (none without a node to show them)."""
        opts = self.opts
        if opts.nodes < 1:
            return []
        names = ["kube-apiserver"]
        names += ["kube-controller-manager"] if opts.controllers else []
        names += ["kube-scheduler"] if "scheduler" in opts.controllers else []
        names += ["coredns"] if opts.dns is not None else []
        names += ["kube-proxy"] if opts.dataplane == "netns" or opts.proxy_mode == "userspace" else []
        return names

    def _capture_logs(self) -> None:
        """Each component's log, kept from its first line (`tinykube.componentlog`)."""
        for name in self._runs():
            loggers, exclude = COMPONENT_LOGGERS[name]
            self.component_logs[name] = LogBuffer(exclude=exclude).capture(*loggers)

    def _static_pods(self, index: int) -> list[StaticPod]:
        """node-1 shows the control plane and the DNS server; each node the proxy that serves it."""
        logs: dict[str, LogSource] = dict(self.component_logs)
        proxy = logs.pop("kube-proxy", None)
        pods = []
        if index == 1:
            members = self.etcd.members if isinstance(self.etcd, EtcdCluster) else [self.etcd] if self.etcd else []
            if members:  # an etcd this process launched (an external one has no pod, as kubeadm's external etcd)
                logs["etcd"] = FileLog(members[0].log_path)
            binary = self.launched_etcd.binary
            dns_ip = LAN_GATEWAY if self.opts.dataplane == "netns" else ""  # where netns pods reach it (wiring)
            version = binary.version if binary else ""
            pods += control_plane_pods(logs, KUBE_VERSION, etcd_version=version, dns_ip=dns_ip)
        if proxy is not None and (index == 1 or self.opts.dataplane == "netns"):  # one loopback proxy, or one each
            pods.append(proxy_pod(proxy, KUBE_VERSION))
        return pods

    async def start(self) -> None:
        opts = self.opts
        opts.dir.mkdir(parents=True, exist_ok=True)
        self._capture_logs()
        raise_fd_limit()  # as Go's runtime does: connections are bounded by --max-connections, not by a soft limit
        sock = _listen(opts.bind_address, opts.api_port)
        port = sock.getsockname()[1]
        # A new cluster's token-signing key is generated while etcd starts (RSA key generation takes a while).
        sa_key = asyncio.get_running_loop().run_in_executor(None, ensure_service_account_key, opts.dir / "pki")
        self.launched_etcd.wait()
        self.etcd_servers = self.launched_etcd.servers
        etcd_servers = self.etcd_servers
        host = f"[{opts.bind_address}]" if ":" in opts.bind_address else opts.bind_address
        config = ApiServerConfig(
            etcd_servers,
            _token(opts.dir),
            opts.etcd_prefix,
            f"{host}:{port}",
            opts.compaction_interval,
            opts.service_cluster_ip_range,
            opts.service_node_port_range,
            opts.load_balancer_ip_range,
            opts.repair_interval,
            opts.event_ttl,
            opts.limits,
            service_account_key_file=await sa_key,
            metric_resolution=opts.metric_resolution,
            authorization_mode=opts.authorization_mode,
            disabled_admission_plugins=opts.disabled_admission_plugins,
            dns_service=opts.dns is not None,
        )
        apiserver = ApiServer(config)
        self._register_health(apiserver)
        cert = key = ca_file = None
        ca = None
        if not opts.insecure:
            pki = ensure_pki(opts.dir / "pki", *_serving_sans(opts))
            cert, key, ca = str(pki.cert), str(pki.key), pki.ca_cert.read_bytes()
            ca_file = str(pki.ca_cert)
        uv_config = uvicorn.Config(
            apiserver.app,
            log_level="warning",
            lifespan="on",
            access_log=False,
            loop="none",
            # httptools, quiet about SPDY upgrades (served as plain requests), with Go's http.Server limits
            # each with the client's certificate, if it showed one (apiserver/http/peercert.py)
            http=with_peer_certificate(limited_protocol(opts.limits)),
            ws=with_peer_certificate(WebSocketProtocol),  # websockets-sansio, answering handshakes with a Status
            timeout_keep_alive=int(opts.limits.idle_timeout) or 1,  # upstream's IdleTimeout
            ssl_certfile=cert,
            ssl_keyfile=key,
            # x509 client certificates signed by the cluster CA authenticate (CN: user, O: groups); optional
            ssl_ca_certs=ca_file,
            ssl_cert_reqs=ssl.CERT_OPTIONAL if ca_file else ssl.CERT_NONE,
            timeout_graceful_shutdown=2,  # open watches are closed after this
            proxy_headers=False,  # no proxy in front: one ASGI layer less per request
        )
        self.server = _Server(uv_config)
        if opts.dataplane == "netns":  # the same app, served in the sandbox too once it is there (its lifespan once)
            self._sandbox_config = copy.copy(uv_config)
            self._sandbox_config.lifespan = "off"
            apiserver.proxy.dialer = SandboxDialer(f"{netns_prefix(opts.name)}lan")  # proxying from inside it
        self.tasks.append(asyncio.create_task(self.server.serve(sockets=[sock]), name="apiserver"))
        while not self.server.started:
            if self.tasks[0].done():
                self.tasks[0].result()
                raise SystemExit("tinykube: the apiserver stopped during start-up")
            await asyncio.sleep(0.005)
        scheme = "http" if opts.insecure else "https"
        creds = Credentials(f"{scheme}://{host}:{port}", config.token, ca)
        write_kubeconfig(self.kubeconfig, opts.context, creds)
        if opts.update_user_kubeconfig:
            merge_kubeconfig(Path.home() / ".kube" / "config", opts.context, creds)
        # This process's components call the apiserver's application directly, not over HTTPS (client/asgi.py)
        self.client = RestClient(creds, AsgiTransport(apiserver.app, creds))
        self.election_client = RestClient(creds, AsgiTransport(apiserver.app, creds))
        self.kubelet_clients = KubeletClients(
            kube=RestClient(creds, AsgiTransport(apiserver.app, creds)),
            heartbeat=RestClient(creds, AsgiTransport(apiserver.app, creds)),
            events=RestClient(creds, AsgiTransport(apiserver.app, creds, concurrent=SIMULATED_KUBELET_EVENT_WRITES)),
        )
        # One set of watches for every component of this process (controllers, DNS, proxies): each resource is
        # listed, watched and cached once.
        self.informers = SharedInformers(self.client)
        # Controllers, DNS and node agents start side by side: each spends its start-up waiting on the API.
        self.tasks.append(asyncio.create_task(self._controllers(), name="controllers"))
        if opts.dns is not None:
            await self._start_dns(opts.dns)
        if opts.dataplane == "netns":
            await self._start_sandbox()
        else:
            await self._start_kubernetes_endpoints(node_address(1))
            if opts.proxy_mode == "userspace":
                self._start_loopback_proxy()
        await self._start_nodes(opts.nodes)
        await self._mirror_pods_shown()
        if opts.ui_port is not None:
            await self._start_ui(opts.ui_port, config.token)
        await self._dns_synced()
        self._record(creds)  # last: tests and tools wait for this file to use the cluster

    def _register_health(self, apiserver: ApiServer) -> None:
        """`kubectl get cs`: the controller manager (and the scheduler, one of its controllers here) are healthy
        while this process runs them."""

        async def controllers() -> Health:
            task = next((t for t in self.tasks if t.get_name() == "controllers"), None)
            if task is None or task.done():
                return Health(False, error="the controllers of this tinykube process are not running")
            return Health(True, "ok")

        if self.opts.controllers:
            apiserver.components.register("controller-manager", controllers)
        if "scheduler" in self.opts.controllers:
            apiserver.components.register("scheduler", controllers)

    def _controllers(self) -> Coroutine[Any, Any, None]:
        """The controllers, under leader election unless it is off or there are none to run."""
        opts, client = self.opts, self.client
        assert client is not None
        # the csrsigning controller signs with the cluster CA, as kubeadm points --cluster-signing-*-file at it
        signing = {} if opts.insecure else {"cluster_signing_cert_file": opts.dir / "pki" / "ca.crt"}
        if signing:
            signing["cluster_signing_key_file"] = opts.dir / "pki" / "ca.key"
        settings = ControllerSettings(
            **{
                "cluster_cidr": opts.cluster_cidr,
                **signing,
                **opts.controller_settings,
                "volumes_dir": opts.dir / "volumes",
            }
        )
        if opts.leader_election is None or not opts.controllers:
            return run_controllers(client, opts.controllers, settings=settings, informers=self.informers)
        election = opts.leader_election
        if not election.identity:
            election = replace(election, identity=lasting_identity(opts.dir / "controller-manager-id"))
        return run_elected_controllers(
            client,
            opts.controllers,
            election,
            step_down=True,  # exiting, as kube-controller-manager does, would stop the whole cluster
            settings=settings,
            informers=self.informers,
            election_client=self.election_client,
        )

    async def _start_sandbox(self) -> None:
        from tinykube.wiring import NetnsDataplane

        assert self.client is not None
        primary_range = self.opts.service_cluster_ip_range.split(",")[0].strip()
        domain = self.opts.dns.cluster_domain if self.opts.dns else "cluster.local"
        assert self.informers is not None
        dataplane = NetnsDataplane(
            self.client,
            self.informers,
            self.opts.name,
            primary_range,
            self.opts.cluster_cidr,
            self.opts.dir / "pods",
            domain,
            self.opts.proxy_mode,
        )
        try:
            await dataplane.create()
        except SandboxError as err:
            raise SystemExit(f"tinykube: {err}") from err
        self.dataplane = dataplane
        if self.dns is not None:
            await dataplane.serve_dns(self.dns)
        await self._serve_in_sandbox(dataplane.sandbox.lan)

    async def _serve_in_sandbox(self, lan: str) -> None:
        """The apiserver on the LAN address, port 6443 of the LAN namespace (a socket made there), and that address
        as `default/kubernetes`'s endpoint: pods reach the API at the kubernetes ClusterIP with their token."""
        from tinykube.sandbox import netns

        assert self._sandbox_config is not None and self.client is not None
        sock = netns.socket_in(lan, socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LAN_GATEWAY, SANDBOX_API_PORT))
        sock.listen(1024)
        self.sandbox_server = _Server(self._sandbox_config)
        self.sandbox_task = asyncio.create_task(self.sandbox_server.serve(sockets=[sock]), name="apiserver (sandbox)")
        while not self.sandbox_server.started:
            if self.sandbox_task.done():
                self.sandbox_task.result()
                raise SystemExit("tinykube: the apiserver's listener in the sandbox stopped during start-up")
            await asyncio.sleep(0.005)
        await self._start_kubernetes_endpoints(LAN_GATEWAY)

    async def _start_kubernetes_endpoints(self, ip: str) -> None:
        """`default/kubernetes`'s Endpoints and EndpointSlice: with netns the apiserver's listener in the sandbox;
        simulated, the control-plane node's address (where its `kube-apiserver-node-1` mirror pod is, on the host
        network as upstream's static pod), which nothing dials."""
        assert self.client is not None
        self.kubernetes_endpoints = KubernetesEndpoints(self.client, ip, SANDBOX_API_PORT)
        await self.kubernetes_endpoints.reconcile()
        self.tasks.append(asyncio.create_task(self.kubernetes_endpoints.run(), name="kubernetes endpoints"))

    def _start_loopback_proxy(self) -> None:
        """The simulated dataplane's one proxy (userspace): NodePorts on 127.0.0.1, for every simulated node."""
        from tinykube.wiring import loopback_proxy

        assert self.client is not None and self.informers is not None
        ranges = [cidr.strip() for cidr in self.opts.service_cluster_ip_range.split(",")]
        agent = loopback_proxy(self.client, self.informers, self.opts.cluster_cidr, ranges)
        self.tasks.append(asyncio.create_task(agent.run(), name="proxy (userspace, loopback)"))

    async def _start_nodes(self, count: int) -> None:
        """Node agents; with the simulated runtime their addresses are the sandbox LAN's, but nothing is sent there."""
        assert self.kubelet_clients is not None and self.informers is not None
        nodes = self.informers.informer(NODES)  # shared with the controllers (node lifecycle, IPAM, scheduler)
        self.informers.start()
        agents = []
        for i in range(1, count + 1):
            name, ip = f"node-{i}", node_address(i)
            runtime = self.dataplane.runtime_for(name, ip) if self.dataplane else _simulated
            config = NodeConfig(name, ip)
            agents.append(NodeAgent(self.kubelet_clients, config, runtime, self._static_pods(i), nodes=nodes))
        self.agents = agents
        self.tasks += [asyncio.create_task(agent.run(), name=f"node {agent.config.name}") for agent in agents]
        # Ready means `kubectl get nodes` shows them Ready, unless the node IPAM controller is switched off.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(agent.registered.wait() for agent in agents)), 5)

    async def _mirror_pods_shown(self) -> None:
        """The mirror pods Running, and kube-dns's endpoints listing the DNS server's pod, before the cluster is
        ready: what is there at start-up is what a test's reset goes back to (each bounded, as the nodes' wait)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(agent.mirrored.wait() for agent in self.agents)), MIRROR_WAIT)
        publishers = {"endpoints", "endpointslice"}
        if "coredns" not in self.component_logs or not publishers <= set(self.opts.controllers):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._dns_endpoints(), MIRROR_WAIT)

    async def _dns_endpoints(self) -> None:
        assert self.client is not None
        selector = "kubernetes.io/service-name=kube-dns"
        while True:
            with contextlib.suppress(Exception):  # not there yet
                endpoints = await self.client.get(ENDPOINTS, "kube-system", "kube-dns")
                slices = await self.client.list(ENDPOINT_SLICES, "kube-system", labelSelector=selector)
                addresses = [a for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []]
                ready = [e for s in slices["items"] for e in s.get("endpoints") or [] if e["conditions"].get("ready")]
                if addresses and ready:
                    return
            await asyncio.sleep(0.02)

    async def _start_ui(self, port: int, token: str) -> None:
        """The live picture (tinykube/ui), imported only when asked for; loopback only, whatever --bind-address."""
        from tinykube.ui.server import UiServer

        assert self.informers is not None
        self.ui = UiServer(
            self.informers,
            token,
            cluster=self.opts.name,
            dataplane=self.opts.dataplane,
            proxy_mode=self.opts.proxy_mode,
            domain=self.opts.dns.cluster_domain if self.opts.dns else "cluster.local",
            port=port,
        )
        await self.ui.start()

    async def _start_dns(self, options: DnsOptions) -> None:
        assert self.client is not None
        self.dns = DnsService(self.client, options, self.informers)
        try:
            await self.dns.start()
        except OSError as err:
            await self.dns.stop()
            self.dns = None
            raise SystemExit(
                f"tinykube: cannot listen on {options.host}:{options.port} for DNS: {err.strerror} "
                "(choose another --dns-port; 0 picks a free one)"
            ) from err
        self.tasks.append(asyncio.create_task(self.dns.wait_synced(), name="dns-sync"))

    async def _dns_synced(self) -> None:
        """As CoreDNS's startup_timeout: ready means DNS knows the cluster, unless its watches take over 5 s."""
        synced = next((t for t in self.tasks if t.get_name() == "dns-sync"), None)
        if synced is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(synced), 5)

    def _record(self, creds: Credentials) -> None:
        state = {
            "name": self.opts.name,
            "pid": os.getpid(),
            # The pid's start time (clock ticks after boot): `tinykube down` signals the pid only if it still matches.
            "pid_start": int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]),
            "server": creds.server,
            "kubeconfig": str(self.kubeconfig.resolve()),
        }
        state["etcd"] = self.etcd_servers
        members = self.etcd.members if isinstance(self.etcd, EtcdCluster) else [self.etcd] if self.etcd else []
        # `tinykube down` stops what is left of them (each recognised by its start time, as `up` by `pid_start`).
        state["etcd_pids"] = [[m.proc.pid, process_start(m.proc.pid)] for m in members if m.proc is not None]
        if self.dns is not None:
            state["dns"] = "{}:{}".format(*self.dns.server.address)
            if self.dns.metrics_address is not None:
                state["dns_metrics"] = "{}:{}".format(*self.dns.metrics_address)
        if self.ui is not None and self.ui.address is not None:
            state["ui"] = "http://{}:{}/".format(*self.ui.address)
        # Written aside and renamed: readers wait for this file and must never see it half-written.
        partial = self.opts.dir / "cluster.json.tmp"
        partial.write_text(json.dumps(state, indent=2) + "\n")
        partial.replace(self.opts.dir / "cluster.json")

    async def stop(self) -> None:
        """Controllers and their connections first, so the apiserver has no idle client to wait for."""
        if self.ui is not None:
            await self.ui.stop()
        controllers = self.tasks[1:]
        for task in controllers:
            task.cancel()
        await asyncio.gather(*controllers, return_exceptions=True)
        if self.dns is not None:
            await self.dns.stop()
        if self.kubernetes_endpoints is not None:  # the address goes with the sandbox (upstream's RemoveEndpoints)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.kubernetes_endpoints.remove(), 5)
        if self.sandbox_server is not None and self.sandbox_task is not None:
            self.sandbox_server.should_exit = True
            await asyncio.gather(self.sandbox_task, return_exceptions=True)
        if self.dataplane is not None:  # after the node agents, which stop their pods as they go
            await self.dataplane.destroy()
        if self.informers is not None:
            await self.informers.stop()
        kubelets = self.kubelet_clients.distinct() if self.kubelet_clients else []
        for client in (self.client, self.election_client, *kubelets):
            if client is not None:
                await client.close()
        if self.server is not None:
            self.server.should_exit = True
        await asyncio.gather(*self.tasks[:1], return_exceptions=True)
        if self.etcd is not None:
            await asyncio.to_thread(self.etcd.stop)
        with contextlib.suppress(FileNotFoundError):
            (self.opts.dir / "cluster.json").unlink()
        for buffer in self.component_logs.values():
            buffer.detach()


async def run_up(opts: UpOptions, etcd: LaunchedEtcd, started: float) -> None:
    """Run the cluster until SIGINT or SIGTERM (a second one exits at once, see tinykube.signals); `etcd` was
    launched at `started` (on the monotonic clock). A signal while the cluster is still starting (waiting for its
    nodes, say) stops it there; either way the stop is clean (`up` exits 0)."""
    cluster = Cluster(opts, etcd)
    stop = asyncio.Event()
    main = asyncio.current_task()
    starting = True

    def on_stop(_signal: int) -> None:
        stop.set()
        if starting and main is not None:
            main.cancel()  # out of the start, wherever it waits

    stopper = Stopper(on_stop)
    stopper.install(asyncio.get_running_loop())
    try:
        try:
            await cluster.start()
        except asyncio.CancelledError:
            if stopper.received is None or main is None:
                raise
            main.uncancel()  # the stop's own cancellation, taken: the stop below awaits as usual
            _say("stopping (the cluster had not started yet)")
            return
        starting = False
        tune_gc_for_caches()
        _say(f"tinykube cluster '{opts.name}' is ready ({time.monotonic() - started:.2f}s)")
        _say(f"  kubeconfig: {cluster.kubeconfig}")
        _say(f"  try: kubectl --kubeconfig {cluster.kubeconfig} get namespaces")
        if cluster.ui is not None and cluster.ui.address is not None:  # with the token, as Jupyter prints its link
            _say("  live picture: http://{}:{}/?token={}".format(*cluster.ui.address, cluster.ui.token))
        if cluster.dns is not None:
            _say(host_resolver_hint(*cluster.dns.server.address, cluster.dns.options.cluster_domain))
        await stop.wait()
        _say("stopping")
    finally:
        await cluster.stop()
