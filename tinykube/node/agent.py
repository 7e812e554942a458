"""The node agent (a minimal kubelet): registers its Node, says it is alive by renewing its Lease in
`kube-node-lease`, keeps its Node status current, runs the pods bound to it through a runtime, and reports their
status.

Like the kubelet it talks to the apiserver only through the REST API: a Node create, its Lease's renewals, status
patches, and one pod watch limited to `spec.nodeName=<node>`. As upstream's since node leases, the Node status is
computed every 10 s against the Node as the apiserver caches it, but written only when it changed (heartbeat times
aside) or every 5 minutes: liveness is the Lease's job, and every Node write reaches every Node watcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time, resource_version_number
from tinykube.api.noderesources import Footprint, NodeTotals
from tinykube.api.resource_metrics import ContainerUsage, NodeCpu
from tinykube.api.resource_metrics import render as render_resource_metrics
from tinykube.api.resources import builtin
from tinykube.client.controller import run_workers
from tinykube.client.eventrecorder import EventRecorder
from tinykube.client.informer import Informer, object_key
from tinykube.client.rest import RestClient, TransportError
from tinykube.client.workqueue import WorkQueue
from tinykube.node.admission import Rejection, admit
from tinykube.node.configsources import api_reader, token_requester
from tinykube.node.containers import pod_phase
from tinykube.node.kubelet_server import ENDPOINT_ANNOTATION, KubeletServer
from tinykube.node.lease import LEASE_DURATION, NodeLease
from tinykube.node.runtime import NoFreeAddress, PodAddresses, Runtime, RuntimeFactory, host_network
from tinykube.node.staticpods import StaticPod, is_mirror, mirrors
from tinykube.node.status import CONDITION_ORDER, ContainerState, PodContainers, PodState, pod_status, sidecar_names
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams

log = logging.getLogger(__name__)

Object = dict[str, Any]
PODS, NODES = builtin("", "v1", "pods"), builtin("", "v1", "nodes")
KUBELET_VERSION = "v1.32.0-tinykube"
HEARTBEAT = 10.0  # seconds, as the kubelet's nodeStatusUpdateFrequency: how often the status is computed
STATUS_REPORT_FREQUENCY = 300.0  # seconds, the kubelet's nodeStatusReportFrequency: written at least this often
WORKERS = 8
NO_ADDRESS_RETRY = 5.0  # seconds
DEFAULT_GRACE = 30  # seconds, the API's default terminationGracePeriodSeconds
DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"
NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


@dataclass
class NodeConfig:
    name: str
    ip: str  # InternalIP, and every pod's hostIP
    labels: dict[str, str] | None = None
    heartbeat: float = HEARTBEAT
    status_report_frequency: float = STATUS_REPORT_FREQUENCY
    lease_duration: int = LEASE_DURATION  # seconds; renewed every quarter of it


def node_object(config: NodeConfig, kubelet_port: int) -> Object:
    labels = {
        "kubernetes.io/hostname": config.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **(config.labels or {}),
    }
    annotations = {ENDPOINT_ANNOTATION: f"127.0.0.1:{kubelet_port}"}  # where the apiserver reads `kubectl logs`
    metadata = {"name": config.name, "labels": labels, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": {}}


def node_conditions(previous: list[Object], stamp: str) -> list[Object]:
    """The Node's conditions, heartbeat `stamp`; as upstream's kubelet, a condition whose status is what
    `previous` (the Node as found, or as last reported) shows keeps its `lastTransitionTime`."""
    old = {c.get("type"): c for c in previous}
    conditions = []
    for kind, status, reason, message in NODE_CONDITIONS:
        was = old.get(kind) or {}
        since = was.get("lastTransitionTime") if was.get("status") == status else None
        conditions.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": since or stamp,
            }
        )
    return conditions


NODE_RESOURCES = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}


def node_resources(found: Object) -> tuple[dict[str, Any], dict[str, Any]]:
    """Capacity and allocatable: the agent's own resources, and the resources someone else advertised in the
    Node's capacity (a device plugin's, a test's extended resource), which the kubelet keeps and copies to
    allocatable, as upstream's MachineInfo setter does; one gone from capacity leaves allocatable too."""
    others = {k: v for k, v in (found.get("capacity") or {}).items() if k not in NODE_RESOURCES}
    return {**NODE_RESOURCES, **others}, {**NODE_RESOURCES, **others}


def node_status(
    config: NodeConfig, kubelet_port: int, previous: list[Object] | None = None, found: Object | None = None
) -> Object:
    """The status the agent reports; `found` is the Node's status as stored (its capacity's extra resources)."""
    capacity, allocatable = node_resources(found or {})
    return {
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "conditions": node_conditions(previous or [], now()),
        "addresses": [{"type": "InternalIP", "address": config.ip}, {"type": "Hostname", "address": config.name}],
        "capacity": capacity,
        "allocatable": allocatable,
        "nodeInfo": {
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "containerRuntimeVersion": "tinykube://0.1.0",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "osImage": "tinykube",
            "kernelVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def node_status_changed(found: Object, status: Object) -> bool:
    """Whether `status` differs from `found` (the Node's status as stored) on the fields it sets, heartbeat times
    aside: upstream's nodeStatusHasChanged. A condition someone else changed (a node-lifecycle controller's
    Unknown) is a change, so the next status computation puts it right."""
    if any(found.get(key) != value for key, value in status.items() if key != "conditions"):
        return True
    stored = {c.get("type"): c for c in found.get("conditions") or []}
    for condition in status["conditions"]:
        was = stored.get(condition["type"]) or {}
        if any(was.get(key) != value for key, value in condition.items() if key != "lastHeartbeatTime"):
            return True
    return False


def status_patch(found: Object, status: Object) -> Object:
    """The strategic-merge patch writing `status` over `found`: capacity carries only the agent's own resources
    (an extended resource removed meanwhile is not put back), allocatable drops what capacity no longer has."""
    allocatable: dict[str, Any] = dict(status["allocatable"])
    allocatable.update({k: None for k in found.get("allocatable") or {} if k not in allocatable})
    return {**status, "capacity": dict(NODE_RESOURCES), "allocatable": allocatable}


def _reported(pod: Object, status: Object) -> bool:
    """Whether the pod already shows `status` (compared on the fields we set)."""
    current = pod.get("status") or {}
    return all(current.get(key) == value for key, value in status.items())


SHARED_NODE_POLL = 0.2  # seconds between looks at the shared informer for the pod CIDR (a dict lookup each)


@dataclass(frozen=True)
class KubeletClients:
    """The kubelet's three clients, as upstream's kubelet makes them: `kube` for pods and the rest, `heartbeat` for
    its Lease and Node status, `events` for its events. Given their own connections, a node's heartbeat does not
    wait behind the pods' writes (the node would be marked unreachable), nor the pods' writes behind events."""

    kube: RestClient
    heartbeat: RestClient
    events: RestClient

    @classmethod
    def one(cls, client: RestClient) -> KubeletClients:
        return cls(client, client, client)

    def distinct(self) -> list[RestClient]:
        """Each client once (to close them)."""
        return list({id(c): c for c in (self.kube, self.heartbeat, self.events)}.values())


class NodeAgent:
    """The agent is its runtime's `RuntimeHost`: it hands itself to the runtime factory."""

    def __init__(
        self,
        clients: KubeletClients,
        config: NodeConfig,
        make_runtime: RuntimeFactory,
        static_pods: Sequence[StaticPod] = (),
        nodes: Informer | None = None,
    ) -> None:
        """`make_runtime(pod CIDR, host)` makes the runtime once the node has its pod CIDR; `static_pods` are the
        components of this process the node shows as mirror pods (`staticpods.py`); `nodes`: an informer of the
        Nodes this process shares (`tinykube up`), where each heartbeat reads its Node rather than asking the
        apiserver's cache for it (the kubelet's GET with resourceVersion=0: the same answer, and 500 requests a
        second fewer at rest with 5,000 simulated nodes)."""
        self.nodes = nodes
        client = self.client = clients.kube
        self.heartbeat = clients.heartbeat
        self.static = {f"kube-system/{s.pod_name(config.name)}": s for s in static_pods}
        self.mirrored = asyncio.Event()  # every static pod's mirror pod is there and reported Running
        self._mirrors_reported: set[str] = set()
        self._node_uid = ""
        self._static_since = now()  # when the components of this process started, as far as their pods say
        self.config = config
        self.make_runtime = make_runtime
        self.runtime: Runtime | None = None
        self.kubelet = KubeletServer(self._logs, self._resource_metrics, streaming=self)
        self.node_cpu = NodeCpu()
        self.pods = Informer(client, PODS, field_selector=f"spec.nodeName={config.name}")
        self.queue: WorkQueue[str] = WorkQueue()
        self.addresses: PodAddresses | None = None
        self.started_at: dict[str, str] = {}  # pod key -> startTime, for the pods the runtime runs
        self.last_seen: dict[str, Object] = {}  # pod key -> the pod as last synced, for its grace period once gone
        self.terminating: dict[str, asyncio.Task[None]] = {}  # pod key -> its containers being stopped
        self.stopped: dict[str, PodContainers] = {}  # pod key -> how its containers ended, until it is deleted
        # pods let in by admission and not yet ended, summed as admitted: what the next one must fit beside
        self.admitted = NodeTotals()
        self.ending: dict[str, asyncio.Task[None]] = {}  # pod key -> its containers being stopped at its deadline
        self.ended_why: dict[str, Rejection] = {}  # pod key -> why the kubelet ended it, until it is deleted
        self.node: Object = {}  # the Node as last read or written, for admission
        # pod key -> (uid, resourceVersion, patch) of the last status this agent wrote. As the kubelet's status
        # manager remembers what it sent: a sync that reads the pod before its own write reached the cache, or
        # reads the write back as the apiserver stored it (nulls and zeros dropped), sends nothing again.
        self.written: dict[str, tuple[str, int, Object]] = {}
        self.events = EventRecorder(clients.events, "kubelet", host=config.name)  # the kubelet's event rate and queue
        self.registered = asyncio.Event()  # the Node exists with its pod CIDR
        self.lease = NodeLease(clients.heartbeat, config.name, duration=config.lease_duration)
        self._reported_at = 0.0  # loop time of the last status write
        self._read_config = api_reader(client)
        self._request_token = token_requester(client)

    # Node

    async def register(self) -> Object:
        """Create (or take over) the Node and report its status; returns the Node. An apiserver that cannot be
        reached (or answers 5xx) is tried again, as the kubelet's registerWithAPIServer does: from 100 ms, doubling
        to 7 s."""
        delay = 0.1
        while True:
            try:
                return await self._register_once()
            except (TransportError, errors.InternalError, errors.ServiceUnavailable) as err:
                log.warning(
                    "unable to register node %s with API server: %s", self.config.name, err or type(err).__name__
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 7.0)

    async def _register_once(self) -> Object:
        node = node_object(self.config, self.kubelet.port)
        try:
            found = await self.client.create(NODES, "", node)
        except errors.AlreadyExists:  # a restart: take it over, pointing the apiserver at this kubelet endpoint
            found = await self.client.patch(
                NODES, "", self.config.name, {"metadata": {"annotations": node["metadata"]["annotations"]}}
            )
        self._node_uid = str(found["metadata"].get("uid") or "")
        await self._update_status(found, force=True)
        return found

    async def pod_cidr(self) -> str:
        """Wait for the node IPAM controller to give the Node its pod CIDR: in the shared informer if there is
        one (5,000 watches of one Node each, started at once, each replayed the Nodes' recent changes), else by
        watching our Node from what we read."""
        while self.nodes is not None:
            cidr = ((self._shared_node() or {}).get("spec") or {}).get("podCIDR")
            if cidr:
                return str(cidr)
            await asyncio.sleep(SHARED_NODE_POLL)
        while True:
            node = await self.client.get(NODES, "", self.config.name)
            selector = f"metadata.name={self.config.name}"
            version = node["metadata"]["resourceVersion"]
            with contextlib.suppress(TransportError, errors.ApiError):
                while not (node.get("spec") or {}).get("podCIDR"):
                    events = self.client.watch(
                        NODES, fieldSelector=selector, resourceVersion=version, timeoutSeconds=60
                    )
                    async for event in events:
                        node = event["object"]
                        version = node["metadata"]["resourceVersion"]
                        if (node.get("spec") or {}).get("podCIDR"):
                            break
            cidr = (node.get("spec") or {}).get("podCIDR")
            if cidr:
                return str(cidr)
            await asyncio.sleep(1.0)  # the watch broke off: read again

    async def _update_status(self, node: Object | None = None, *, force: bool = False) -> None:
        """The kubelet's tryUpdateNodeStatus: the status computed against the Node (`node`, else as the apiserver's
        cache has it), written if it changed or a report is due; conditions keep their `lastTransitionTime`."""
        if node is None:
            node = self._shared_node() or await self.heartbeat.get(NODES, "", self.config.name, resourceVersion="0")
        found = node.get("status") or {}
        status = node_status(self.config, self.kubelet.port, found.get("conditions") or [], found)
        clock = asyncio.get_running_loop().time()
        due = force or clock - self._reported_at >= self.config.status_report_frequency
        self.node = node
        if due or node_status_changed(found, status):
            self.node = await self.heartbeat.patch(
                NODES, "", self.config.name, {"status": status_patch(found, status)}, subresource="status"
            )
            self._reported_at = clock

    def _shared_node(self) -> Object | None:
        """Our Node as the shared informer has it (read only: its objects are shared), if there is one."""
        if self.nodes is None or not self.nodes.synced.is_set():
            return None
        return self.nodes.store.get(self.config.name)

    async def _status_updates(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat)
            try:
                await self._update_status()
            except Exception as err:  # the apiserver may be away: keep running pods, try again
                log.warning("node %s: status update failed: %s", self.config.name, err)

    # Pods

    async def run(self) -> None:
        await self.kubelet.start()
        tasks = [asyncio.create_task(self.events.run(), name=f"node {self.config.name} events")]
        try:
            await self.register()
            tasks.append(asyncio.create_task(self.lease.run(), name=f"node {self.config.name} lease"))
            tasks.append(asyncio.create_task(self._status_updates(), name=f"node {self.config.name} status"))
            cidr = await self.pod_cidr()
            self.addresses = PodAddresses(cidr)
            self.runtime = self.make_runtime(cidr, self)
            self.registered.set()
            self.pods.add_handler(
                on_add=self._pod_seen,
                on_update=lambda _old, new: self._pod_seen(new),
                on_delete=lambda pod: self.queue.add(object_key(pod)),  # its address is not claimed again
            )
            tasks.append(asyncio.create_task(self.pods.run(), name=f"node {self.config.name} pods"))
            await self.pods.wait_synced()
            await self.runtime.prune(self.pods.store.list())  # what a killed agent left of pods deleted since
            for key in self.static:  # the informer shows those that exist already; these are made if missing
                self.queue.add(key)
            if not self.static:
                self.mirrored.set()
            await run_workers(self.queue, WORKERS, self.sync)
        finally:
            self.queue.shutdown()
            # the Lease among them: a stopped agent stops saying it is alive; pods being stopped are ended by close()
            pending = [*tasks, *self.terminating.values(), *self.ending.values()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if self.runtime is not None:
                await self.runtime.close()
            await self.kubelet.stop()

    def _pod_seen(self, pod: Object) -> None:
        key = object_key(pod)
        ip = (pod.get("status") or {}).get("podIP")
        stopped = pod["metadata"].get("deletionTimestamp") and _ended(pod)  # its terminating status: nothing holds it
        if (
            ip
            and not stopped
            and key not in self.started_at
            and key not in self.terminating  # being stopped here: its address is let go, not taken again
            and self.addresses is not None
            and _within(ip, self.addresses)
        ):
            self.addresses.occupy(ip, key)  # ours from before a restart: keep it
        self.queue.add(key)

    # The runtime's host (`RuntimeHost`)

    def on_change(self, key: str) -> None:
        self.queue.add(key)

    def on_event(self, key: str, type_: str, reason: str, message: str) -> None:
        pod = self.pods.store.get(key) or self.last_seen.get(key)
        if pod is not None:
            self._event(pod, type_, reason, message)

    async def read_config(self, plural: str, namespace: str, name: str) -> Object | None:
        return await self._read_config(plural, namespace, name)

    async def request_token(self, pod: Object, projection: Object) -> Object:
        return await self._request_token(pod, projection)

    def _event(self, pod: Object, type_: str, reason: str, message: str) -> None:
        """Record an Event about the pod, as the kubelet does, without waiting for it."""
        self.events.record(pod, type_, reason, message)

    def _logs(self, key: str, container: str, **options: Any) -> AsyncIterator[bytes]:
        static = self.static.get(key)
        if static is not None and container == static.container:  # a component of this process: its own log
            if options.get("previous"):  # never restarted inside its process: no earlier run (the kubelet's words)
                name = key.partition("/")[2]
                raise errors.BadRequest(f'previous terminated container "{container}" in pod "{name}" not found')
            return static.logs.read(**options)
        if self.runtime is None or key not in self.started_at:
            raise errors.NotFound(f'pod "{key}" not found on node {self.config.name}')
        return self.runtime.logs(key, container, **options)

    # Streams (the kubelet server's `Streaming`)

    def _runtime_of(self, key: str) -> Runtime:
        if self.runtime is None or key not in self.started_at:
            raise CommandError(f'pod "{key}" not found on node {self.config.name}')
        return self.runtime

    async def exec(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        return await self._runtime_of(key).exec(key, request, streams)

    async def attach(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        return await self._runtime_of(key).attach(key, request, streams)

    def pod_uid(self, key: str) -> str:
        pod = self.pods.store.get(key)
        return str(pod["metadata"].get("uid") or "") if pod else ""

    async def dial(self, key: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            runtime = self._runtime_of(key)
        except CommandError as err:
            raise OSError(str(err)) from None
        return await runtime.dial(key, port)

    def _resource_metrics(self) -> bytes:
        """`/metrics/resource`: the running containers' usage as the runtime measures it, and the node's."""
        pods: dict[tuple[str, str], dict[str, ContainerUsage]] = {}
        for key in list(self.started_at):
            pod = self.pods.store.get(key)
            if pod is None or self.runtime is None:
                continue
            usage = self.runtime.usage(key, pod)
            if usage:
                pods[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = usage
        memory = sum(u.memory_bytes for containers in pods.values() for u in containers.values())
        return render_resource_metrics(pods, self.node_cpu.advance(pods), memory, time.time())

    async def sync(self, key: str) -> None:
        assert self.addresses is not None and self.runtime is not None
        pod = self.pods.store.get(key)
        if key in self.static:
            await self._sync_mirror(key, self.static[key], pod)
            return
        if pod is not None and is_mirror(pod):  # a mirror pod of no static pod of ours (any more): upstream deletes it
            await self._delete_mirror(pod)
            return
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            self._terminate(key, pod)
            if pod is not None and key in self.started_at:  # its status still shows while its containers stop
                await self._report(key, pod)
            return
        self.last_seen[key] = pod
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._unadmit(key)
            if key in self.started_at and await self.runtime.release(key):  # as a kubelet frees an ended pod's IP
                self.addresses.release(key)
            return
        if key not in self.admitted.pods:
            rejection = await self._admit(key, pod)
            if rejection is not None:
                await self._reject(pod, rejection)
                return
        try:  # a hostNetwork pod has the node's address
            ip = self.config.ip if host_network(pod) else self.addresses.allocate(key)
        except NoFreeAddress as err:  # as a kubelet whose CNI is out of addresses: the pod waits, and is retried
            log.warning("node %s: cannot start %s: %s", self.config.name, key, err)
            self.queue.add_after(key, NO_ADDRESS_RETRY)
            return
        if key not in self.started_at:
            started = (pod.get("status") or {}).get("startTime") or now()
            await self.runtime.start(key, pod, ip)  # if it raises, the work queue retries with back-off
            self.started_at[key] = started
        if self._past_deadline(key, pod):
            return
        await self.runtime.start_ephemeral(key, pod)
        await self._report(key, pod)

    async def _admit(self, key: str, pod: Object) -> Rejection | None:
        """Upstream's kubelet admission (`admission.py`): the pod counts as admitted from here, before any await,
        so that two pods synced at once cannot both take the last room. A pod with a `startTime` was admitted by
        an earlier run of this agent and is let in again as it is (upstream re-admits in creation order). A
        refusal against the Node as last read is checked again against the Node as it is now (labels and taints
        change between status updates)."""
        footprint = Footprint.of(pod, key, self.config.name)
        if (pod.get("status") or {}).get("startTime"):
            self.admitted.add(footprint)
            return None
        rejection = admit(pod, self.node, self.admitted) if self.node else None
        if rejection is not None:
            rejection = admit(pod, await self.client.get(NODES, "", self.config.name), self.admitted)
        if rejection is None:
            self.admitted.add(footprint)
        return rejection

    def _unadmit(self, key: str) -> None:
        footprint = self.admitted.pods.get(key)
        if footprint is not None:
            self.admitted.remove(footprint)

    async def _reject(self, pod: Object, rejection: Rejection) -> None:
        """As the kubelet's rejectPod: a Warning event and the pod Failed with the reason; nothing of it runs."""
        log.info("node %s: rejected %s: %s", self.config.name, object_key(pod), rejection.message)
        self._event(pod, "Warning", rejection.reason, rejection.message)
        status: Object = {"phase": "Failed", "reason": rejection.reason, "message": rejection.status_message}
        qos = (pod.get("status") or {}).get("qosClass")
        if qos:
            status["qosClass"] = qos
        meta = pod["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self.client.patch(PODS, meta["namespace"], meta["name"], {"status": status}, subresource="status")

    def _past_deadline(self, key: str, pod: Object) -> bool:
        """Upstream's active deadline handler: a pod running longer than `spec.activeDeadlineSeconds` since its
        `startTime` is stopped and ends Failed (DeadlineExceeded); before that, it is looked at again when its
        deadline comes (a changed deadline reaches `sync` as an update)."""
        if key in self.ending or key in self.ended_why:
            return True
        deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        started = parse_time(self.started_at[key])
        if not isinstance(deadline, int) or started is None:
            return False
        left = deadline - (time.time() - started.timestamp())
        if left > 0:
            self.queue.add_after(key, left)
            return False
        task = asyncio.create_task(self._end_at_deadline(key, pod), name=f"node {self.config.name} ends {key}")
        self.ending[key] = task
        task.add_done_callback(lambda _t: self.ending.pop(key, None))
        return True

    async def _end_at_deadline(self, key: str, pod: Object) -> None:
        """Stop the pod's containers with its grace period, then publish it Failed with why (a worker is not held)."""
        assert self.runtime is not None
        self._event(pod, "Normal", DEADLINE_REASON, DEADLINE_MESSAGE)
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE)
        try:
            self.stopped[key] = await self.runtime.stop(key, float(grace), pod)
        except Exception as err:  # whatever failed, the pod must end
            log.warning("node %s: stopping %s at its deadline: %s", self.config.name, key, err)
            self.stopped[key] = PodContainers()
        self.ended_why[key] = Rejection(DEADLINE_REASON, DEADLINE_MESSAGE)
        self._unadmit(key)
        await self._report(key, self.pods.store.get(key) or pod)

    async def _report(self, key: str, pod: Object) -> None:
        """Write the pod's status as its containers are now, if that changed anything."""
        assert self.addresses is not None and self.runtime is not None
        ip = self.config.ip if host_network(pod) else self.addresses.allocated(key)
        if ip is None:
            return
        stopped, why = self.stopped.get(key), self.ended_why.get(key)
        if stopped is not None:  # the terminating status, published before the final delete
            policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
            init, containers, ephemeral = stopped.init_containers, stopped.containers, []
            phase = pod_phase(containers, policy, init=init, sidecars=sidecar_names(pod), terminal=True)
        else:
            init, containers = self.runtime.init_containers(key, pod), self.runtime.containers(key, pod)
            phase, ephemeral = self.runtime.phase(key, pod), self.runtime.ephemeral_containers(key, pod)
        reason, message = (why.reason, why.message) if why is not None else ("", "")
        phase = "Failed" if why is not None else phase
        state = PodState(ip, self.config.ip, self.started_at[key], containers, phase, ephemeral, init, reason, message)
        status = pod_status(pod, state, now())
        if _reported(pod, status):
            return
        meta = pod["metadata"]
        # Only the kubelet's own conditions: a readiness gate's condition (merged by type) stays whatever its owner
        # wrote, even if it changed since this pod was read.
        ours = [c for c in status["conditions"] if c["type"] in CONDITION_ORDER]
        patch = {"status": {**status, "conditions": ours}}
        uid = str(meta.get("uid") or "")
        sent = self.written.get(key)
        if sent is not None and sent[0] == uid and resource_version_number(pod) <= sent[1] and sent[2] == patch:
            return
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile: the delete event stops it
            written = await self.client.patch(PODS, meta["namespace"], meta["name"], patch, subresource="status")
            self.written[key] = (uid, resource_version_number(written), patch)

    # Mirror pods (the kubelet's mirror client and podManager, for the static pods given at construction)

    async def _sync_mirror(self, key: str, static: StaticPod, pod: Object | None) -> None:
        """Make the mirror pod if it is missing; a deleted one or one of another manifest is deleted (with no grace:
        nothing runs in it) and made again once its delete is seen; the one in place gets its status."""
        if pod is not None and (pod["metadata"].get("deletionTimestamp") or not mirrors(pod, static, self._node_uid)):
            self._mirrors_reported.discard(key)
            await self._delete_mirror(pod)
        elif pod is None:
            self._mirrors_reported.discard(key)
            with contextlib.suppress(errors.AlreadyExists):  # the informer has not shown it yet
                created = static.mirror_pod(self.config.name, self._node_uid, now())
                await self.client.create(PODS, "kube-system", created)
        else:
            await self._report_mirror(key, static, pod)

    async def _delete_mirror(self, pod: Object) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(errors.NotFound, errors.Conflict):  # gone already, or a new one in its place
            await self.client.delete(
                PODS, meta["namespace"], meta["name"], gracePeriodSeconds=0, uid=meta.get("uid", "")
            )

    async def _report_mirror(self, key: str, static: StaticPod, pod: Object) -> None:
        """Running and Ready while this process runs the component (it is the process that answers)."""
        assert self.addresses is not None
        ip = self.config.ip if static.host_network else static.pod_ip or self.addresses.allocate(key)
        container = ContainerState(
            name=static.container,
            image=static.image,
            container_id=f"tinykube://{static.name}",
            running_since=self._static_since,
            ready=True,
            started=True,
        )
        status = pod_status(pod, PodState(ip, self.config.ip, self._static_since, [container]), now())
        if not _reported(pod, status):
            meta = pod["metadata"]
            with contextlib.suppress(errors.NotFound):  # deleted meanwhile: its delete event makes it again
                await self.client.patch(PODS, meta["namespace"], meta["name"], {"status": status}, subresource="status")
        self._mirrors_reported.add(key)
        if self._mirrors_reported >= self.static.keys():
            self.mirrored.set()

    def _terminate(self, key: str, pod: Object | None) -> None:
        """Stop a deleted pod's containers in the background (a grace period must not hold a worker), once."""
        if key in self.terminating:
            return
        if pod is None and key not in self.started_at:  # gone, and nothing of it runs here
            if self.addresses is not None:
                self.addresses.release(key)
            self.last_seen.pop(key, None)
            self.written.pop(key, None)
            self._unadmit(key)
            return
        task = asyncio.create_task(self._stop(key, pod), name=f"node {self.config.name} stops {key}")
        self.terminating[key] = task
        task.add_done_callback(lambda _t: self.terminating.pop(key, None))

    async def _stop(self, key: str, pod: Object | None) -> None:
        """Stop a deleted pod: with its deletion grace period when it is being deleted gracefully, else (already
        gone from the API) with its spec's `terminationGracePeriodSeconds`; then, for a graceful deletion, publish
        its terminating status (its containers terminated, not ready) and delete it with a grace period of 0, as
        the kubelet finishes it once its containers are gone."""
        known = pod or self.last_seen.get(key) or {}
        meta, spec = known.get("metadata") or {}, known.get("spec") or {}
        grace = meta.get("deletionGracePeriodSeconds", spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE))
        try:
            ending = self.ending.get(key)
            if ending is not None:  # its deadline's stop is under way: that one ends its containers
                await asyncio.shield(ending)
            if key in self.started_at and self.runtime is not None and key not in self.ended_why:
                for container in (known.get("spec") or {}).get("containers") or [] if pod is not None else []:
                    self._event(known, "Normal", "Killing", f"Stopping container {container.get('name')}")
                stopped = await self.runtime.stop(key, float(grace), known if pod is not None else None)
                if pod is not None:
                    self.stopped[key] = stopped
                    await self._report(key, self.pods.store.get(key) or pod)
        except Exception as err:  # whatever failed, the pod must not stay Terminating for ever
            log.warning("node %s: stopping %s: %s", self.config.name, key, err)
        finally:
            self.started_at.pop(key, None)
            self.last_seen.pop(key, None)
            self.written.pop(key, None)
            self.stopped.pop(key, None)
            self.ended_why.pop(key, None)
            self._unadmit(key)
            if self.addresses is not None:
                self.addresses.release(key)
        if pod is not None:
            with contextlib.suppress(errors.NotFound, errors.Conflict):  # gone, or another pod of that name now
                await self.client.delete(
                    PODS, meta["namespace"], meta["name"], gracePeriodSeconds=0, uid=meta.get("uid", "")
                )


def _ended(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _within(ip: str, addresses: PodAddresses) -> bool:
    try:
        return ipaddress.ip_address(ip) in addresses.network
    except ValueError:
        return False
