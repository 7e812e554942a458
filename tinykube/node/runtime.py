"""What a node agent needs from a pod runtime, the pod IP allocator, and the `simulated` runtime (no root, nothing
executed: pods get an IP and run, as kwok's do)."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.node.status import ContainerState, annotated_ready

Object = dict[str, Any]


class Runtime(Protocol):
    """Runs the pods bound to one node. `on_change(pod key)` is set by the agent: the runtime calls it when a
    pod's containers change on their own (a probe result, an exit), so the agent reports the new status."""

    on_change: Callable[[str], None]

    async def start(self, key: str, pod: Object, ip: str) -> None:
        """Make the pod's sandbox and start its containers (returns once started, not once ready)."""

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        """The current state of each container in `pod`'s spec."""
        ...

    def phase(self, key: str, pod: Object) -> str:
        """The phase to report: Pending, Running, Succeeded or Failed."""
        ...

    async def stop(self, key: str, grace_seconds: float) -> None:
        """Stop the pod's containers (SIGTERM, then SIGKILL after the grace period) and remove its sandbox."""

    async def close(self) -> None:
        """Stop every pod (the agent is going away)."""

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        """Once the agent knows all its pods (`pods`), before it starts any: remove what an earlier agent left of
        pods that are gone; returns what was removed."""
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


class NoFreeAddress(RuntimeError):
    pass


class PodAddresses:
    """Pod IPs from the node's pod CIDR, lowest free first; the network, the first address (the node's own, as a
    bridge would hold it) and broadcast are never handed out."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr)
        self.held: dict[str, str] = {}  # ip -> pod key

    def occupy(self, ip: str, key: str) -> None:
        self.held[ip] = key

    def allocate(self, key: str) -> str:
        for ip, holder in self.held.items():
            if holder == key:
                return ip
        hosts = self.network.hosts()
        next(hosts, None)  # the first host address stays the node's
        for address in hosts:
            if str(address) not in self.held:
                self.held[str(address)] = key
                return str(address)
        raise NoFreeAddress(f"pod CIDR {self.network} has no free address")

    def release(self, key: str) -> None:
        for ip in [ip for ip, holder in self.held.items() if holder == key]:
            del self.held[ip]


def reported_running(pod: Object) -> dict[str, tuple[str, int]]:
    """Container name -> (startedAt, restartCount) of each container the pod's status shows running."""
    found = {}
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        since = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if since and status.get("name"):
            found[str(status["name"])] = (str(since), int(status.get("restartCount") or 0))
    return found


class SimulatedRuntime:
    """Containers are running from the moment the pod starts; ready follows the `tinykube.io/ready` annotation.

    A pod whose status already shows its containers running (an agent restarted: nothing of a simulated pod ever
    stopped) keeps their `startedAt` and `restartCount`, as a kubelet restarted finds its runtime's containers."""

    def __init__(self) -> None:
        self.on_change: Callable[[str], None] = lambda key: None
        self._started: dict[str, dict[str, tuple[str, int]]] = {}  # pod key -> container -> (since, restarts)

    async def start(self, key: str, pod: Object, ip: str) -> None:
        if key not in self._started:
            since, before = now(), reported_running(pod)
            names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
            self._started[key] = {name: before.get(name, (since, 0)) for name in names}

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        started = self._started.get(key)
        ready = started is not None and annotated_ready(pod)
        states = []
        for container in (pod.get("spec") or {}).get("containers") or []:
            since, restarts = (started or {}).get(container["name"], ("", 0))
            states.append(
                ContainerState(
                    name=container["name"],
                    image=container.get("image", ""),
                    container_id=f"tinykube://{pod['metadata'].get('uid', key)}-{container['name']}",
                    running_since=since,
                    ready=ready and bool(since),
                    restart_count=restarts,
                )
            )
        return states

    def phase(self, key: str, pod: Object) -> str:
        return "Running"

    async def stop(self, key: str, grace_seconds: float) -> None:
        self._started.pop(key, None)

    async def close(self) -> None:
        self._started.clear()

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        return []  # nothing of a simulated pod outlives its agent

    def logs(self, key: str, container: str, **options: Any) -> AsyncIterator[bytes]:
        """Nothing runs, so nothing was written: an empty log (for a container the pod has)."""
        if key not in self._started:
            raise errors.NotFound(f'pod "{key}" not found')
        return _nothing()


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # makes this an async generator
