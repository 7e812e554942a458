"""What a node agent needs from a pod runtime (`Runtime`, the kubelet's CRI seam), what a runtime needs from its agent
(`RuntimeHost`, given to it at construction), and the pod IP allocator. The runtimes: `tinykube.node.simulated` (no
root, nothing executed) and `tinykube.node.netns_runtime` (processes in network namespaces)."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

from tinykube.api.resource_metrics import ContainerUsage
from tinykube.node.status import ContainerState, PodContainers
from tinykube.streams.remotecommand import CommandRequest, CommandStreams

Object = dict[str, Any]


class RuntimeHost(Protocol):
    """What a runtime asks of the node agent that runs it. The agent hands itself to the runtime factory
    (`RuntimeFactory`), so a runtime has its host from construction on."""

    def on_change(self, key: str) -> None:
        """The pod's containers changed on their own (a probe result, an exit): report its status again."""

    def on_event(self, key: str, type_: str, reason: str, message: str) -> None:
        """Record an Event about the pod (the kubelet's `Pulled`, `BackOff`, `Unhealthy` …)."""

    async def read_config(self, plural: str, namespace: str, name: str) -> Object | None:
        """A ConfigMap or Secret (`plural`) that a container's environment or a volume names; None: missing."""
        ...

    async def request_token(self, pod: Object, projection: Object) -> Object:
        """A `serviceAccountToken` projection's token for the pod (a TokenRequest's status): a runtime that mounts
        token volumes asks for them here."""
        ...


class DetachedHost:
    """The host of a runtime run without an agent (tests, tools): changes and events go nowhere, every ConfigMap and
    Secret is missing, and no token can be requested."""

    def on_change(self, key: str) -> None:
        pass

    def on_event(self, key: str, type_: str, reason: str, message: str) -> None:
        pass

    async def read_config(self, plural: str, namespace: str, name: str) -> Object | None:
        return None

    async def request_token(self, pod: Object, projection: Object) -> Object:
        raise RuntimeError("this runtime has no API to request tokens from")


class Runtime(Protocol):
    """Runs the pods bound to one node. It tells its `RuntimeHost` (given at construction) when a pod's containers
    change on their own and what Events to record, and reads containers' ConfigMaps and Secrets and pods' tokens
    through it."""

    async def start(self, key: str, pod: Object, ip: str) -> None:
        """Make the pod's sandbox and start its containers (returns once started, not once ready)."""

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        """The current state of each container in `pod`'s spec."""
        ...

    def init_containers(self, key: str, pod: Object) -> list[ContainerState]:
        """The current state of each init container in `pod`'s spec, in order."""
        ...

    def phase(self, key: str, pod: Object) -> str:
        """The phase to report: Pending, Running, Succeeded or Failed."""
        ...

    async def stop(self, key: str, grace_seconds: float, pod: Object | None = None) -> PodContainers:
        """Stop the pod's containers (SIGTERM, then SIGKILL after the grace period) and remove its sandbox; returns
        how its containers ended (each terminated, for the status the kubelet publishes before the final delete)
        when `pod` (the pod as last seen) is given."""
        ...

    async def release(self, key: str) -> bool:
        """The pod has ended (Succeeded or Failed): free its sandbox if what a user may still read of it (status,
        logs) stays without it; True if its address may be given to another pod."""
        ...

    async def close(self) -> None:
        """Stop every pod (the agent is going away)."""

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        """Once the agent knows all its pods (`pods`), before it starts any: remove what an earlier agent left of
        pods that are gone; returns what was removed."""
        ...

    def usage(self, key: str, pod: Object) -> dict[str, ContainerUsage]:
        """What each running container of the pod uses (the kubelet's `/metrics/resource`)."""
        ...

    def logs(
        self,
        key: str,
        container: str,
        *,
        follow: bool = False,
        tail_lines: int | None = None,
        timestamps: bool = False,
        previous: bool = False,
        since_time: datetime | None = None,
        limit_bytes: int | None = None,
    ) -> AsyncIterator[bytes]:
        """A container's log as the kubelet's `containerLogs` serves it; raises `errors.NotFound` or
        `errors.BadRequest` before streaming anything."""
        ...

    async def start_ephemeral(self, key: str, pod: Object) -> None:
        """Start the ephemeral containers added to the running pod since (`kubectl debug`); each runs once."""

    def ephemeral_containers(self, key: str, pod: Object) -> list[ContainerState]:
        """The state of each of the pod's ephemeral containers."""
        ...

    async def exec(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        """Run a command in a running container (`kubectl exec`); its exit code, or `CommandError`."""
        ...

    async def attach(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        """Attach to a running container's console (`kubectl attach`) until its run ends or the client goes."""
        ...

    async def dial(self, key: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to a port of the pod, made inside its network (`kubectl port-forward`); OSError."""
        ...


def host_network(pod: Object) -> bool:
    """A `hostNetwork` pod: it runs in its node's network (the node's address; in the netns runtime, its namespace)."""
    return bool((pod.get("spec") or {}).get("hostNetwork"))


def start_events(container: Object) -> list[tuple[str, str, str]]:
    """The kubelet's events as a container (re)starts: (type, reason, message). Nothing is pulled (images are
    stand-ins), so the image is reported present, as a kubelet reports an image it has."""
    name, image = container.get("name", ""), container.get("image", "")
    return [
        ("Normal", "Pulled", f'Container image "{image}" already present on machine'),
        ("Normal", "Created", f"Created container {name}"),
        ("Normal", "Started", f"Started container {name}"),
    ]


def back_off_event(container: str, pod: Object) -> tuple[str, str, str]:
    meta = pod["metadata"]
    pod_ref = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid', '')})"
    return "Warning", "BackOff", f"Back-off restarting failed container {container} in pod {pod_ref}"


class NoFreeAddress(RuntimeError):
    pass


class PodAddresses:
    """Pod IPs from the node's pod CIDR, lowest free first; the network, the first address (the node's own, as a
    bridge would hold it) and broadcast are never handed out."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr)
        self.held: dict[str, str] = {}  # ip -> pod key
        self._of: dict[str, str] = {}  # pod key -> ip

    def occupy(self, ip: str, key: str) -> None:
        self.held[ip] = key
        self._of[key] = ip

    def allocated(self, key: str) -> str | None:
        return self._of.get(key)

    def allocate(self, key: str) -> str:
        if key in self._of:
            return self._of[key]
        hosts = self.network.hosts()
        next(hosts, None)  # the first host address stays the node's
        for address in hosts:
            if str(address) not in self.held:
                self.occupy(str(address), key)
                return str(address)
        raise NoFreeAddress(f"pod CIDR {self.network} has no free address")

    def release(self, key: str) -> None:
        ip = self._of.pop(key, None)
        if ip is not None and self.held.get(ip) == key:
            del self.held[ip]


RuntimeFactory = Callable[[str, RuntimeHost], Runtime]  # (the node's pod CIDR, its agent) -> the node's runtime
