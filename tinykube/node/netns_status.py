"""What the netns runtime reports of its pods: each container's state (for the pod's status), the pod's phase, what
its running containers use (the kubelet's `/metrics/resource`, from their process groups) and their logs, served
from the CRI log files of their runs (`tinykube.node.container_logs`) as the kubelet's `containerLogs` serves them.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import parse_time
from tinykube.api.resource_metrics import ContainerUsage
from tinykube.node import container_logs
from tinykube.node.container_config import PULL_BACKOFF, PULL_FAILED
from tinykube.node.container_processes import ContainerProcesses
from tinykube.node.containers import Pod, pod_phase
from tinykube.node.status import ContainerState, sidecar_names

Object = dict[str, Any]
WAITING_LOGS = {PULL_FAILED: "image can't be pulled", PULL_BACKOFF: "trying and failing to pull image"}  # upstream's
USAGE_FRESHNESS = 0.5  # seconds one scan of /proc serves every pod's usage (a scrape asks for each pod in turn)


def container_states(run: Pod | None, pod: Object, kind: str = "containers") -> list[ContainerState]:
    """The state of each container (`kind`: or init container) in `pod`'s spec (waiting to be created when the pod
    does not run here)."""
    states = []
    for spec in (pod.get("spec") or {}).get(kind) or []:
        container = run.containers.get(spec["name"]) if run else None
        states.append(run.state_of(container) if run and container else ContainerState(name=spec["name"]))
    return states


def ephemeral_states(run: Pod | None, pod: Object) -> list[ContainerState]:
    if run is None:
        return []
    specs = (pod.get("spec") or {}).get("ephemeralContainers") or []
    return [run.state_of(run.containers[s["name"]]) for s in specs if s["name"] in run.containers]


def phase(run: Pod | None, pod: Object) -> str:
    """The pod phase to report (Pending, Running, Succeeded, Failed)."""
    policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
    init = container_states(run, pod, "initContainers")
    return pod_phase(container_states(run, pod), policy, init=init, sidecars=sidecar_names(pod))


class UsageMeter:
    """What each running container's processes use: CPU time (with that of the children its processes reaped) and
    resident memory, as the container processes measure them, one measurement serving a whole scrape."""

    def __init__(self, processes: ContainerProcesses) -> None:
        self.processes = processes
        self.measured: tuple[float, dict[int, tuple[float, int]]] = (0.0, {})  # (at, epoch s; by container pid)

    def usage(self, run: Pod | None) -> dict[str, ContainerUsage]:
        if run is None:
            return {}
        if time.time() - self.measured[0] > USAGE_FRESHNESS:
            self.measured = (time.time(), self.processes.usage())
        scanned, groups = self.measured
        found = {}
        for c in run.containers.values():
            started = parse_time(c.running_since) if c.pid and c.running_since else None
            if started is None:
                continue
            cpu, memory = groups.get(c.pid, (0.0, 0))
            c.cpu_seconds = max(c.cpu_seconds, cpu)  # a process gone unreaped by the group takes its time along
            found[c.name] = ContainerUsage(c.cpu_seconds, memory, started.timestamp(), scanned)
        return found


def logs(
    run: Pod | None,
    key: str,
    container: str,
    *,
    follow: bool,
    tail_lines: int | None,
    timestamps: bool,
    previous: bool,
    since_time: datetime | None,
    limit_bytes: int | None,
) -> AsyncIterator[bytes]:
    """A container's log. Errors (unknown pod or container, no previous run, not started yet) raise here, before
    anything is streamed."""
    if run is None:
        raise errors.NotFound(f'pod "{key}" not found')
    found = run.containers.get(container)
    if found is None:
        raise errors.NotFound(f'container "{container}" in pod "{run.name}" not found')
    path = found.previous_log if previous else found.log_path
    if previous and (path is None or not path.exists()):
        raise errors.BadRequest(f'previous terminated container "{container}" in pod "{run.name}" not found')
    if path is None:
        reason = found.waiting_reason or "ContainerCreating"
        why = WAITING_LOGS.get(reason, reason)
        raise errors.BadRequest(f'container "{container}" in pod "{run.name}" is waiting to start: {why}')
    over = None if previous or not follow else found.run_over
    return container_logs.read_log(path, over, tail_lines, timestamps, since_time, limit_bytes)
