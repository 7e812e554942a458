"""The `simulated` runtime: no root, nothing executed. Pods get an IP and run, as kwok's do; containers of a pod that
may end exit after a while, and restart by the pod's policy, so controllers see what real pods show."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resource_metrics import (
    CPU_USAGE_ANNOTATION,
    MEMORY_USAGE_ANNOTATION,
    ContainerUsage,
    annotated_usage,
)
from tinykube.kubelet_env.envvars import ConfigError, container_environment
from tinykube.node.configsources import CONFIG_RETRY, container_sources, warner
from tinykube.node.containers import Backoff, back_off_message, pod_phase, should_restart
from tinykube.node.podvolumes import missing_source
from tinykube.node.runtime import RuntimeHost, back_off_event, start_events
from tinykube.node.status import ContainerState, annotated_ready
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams

RUN_SECONDS_ANNOTATION = "tinykube.io/run-seconds"  # how long a simulated container of a pod that may end runs
EXIT_CODE_ANNOTATION = "tinykube.io/exit-code"  # and the exit code it ends with
DEFAULT_RUN_SECONDS = 1.0
VOLUME_RETRY = 1.0  # seconds before a pod whose volumes lack a source looks again

Object = dict[str, Any]


def reported_running(pod: Object) -> dict[str, tuple[str, int]]:
    """Container name -> (startedAt, restartCount) of each container the pod's status shows running."""
    found = {}
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        since = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if since and status.get("name"):
            found[str(status["name"])] = (str(since), int(status.get("restartCount") or 0))
    return found


@dataclass
class _Simulated:
    """One simulated container: when its current run began, and how its runs ended."""

    since: str
    restarts: int = 0
    finished: dict[str, Any] | None = None  # the current state when it has ended (or waits to restart)
    last: dict[str, Any] | None = None  # the run before the current one
    waiting: str = ""  # CrashLoopBackOff between a failed run and its restart
    waiting_message: str = ""
    config_error: str = ""  # why it cannot be created yet (CreateContainerConfigError); `since` is "" meanwhile
    backoff: Backoff = field(default_factory=Backoff)
    cpu_seconds: float = 0.0  # used by this run, up to `metered_at` (seconds since the epoch; 0: not yet)
    metered_at: float = 0.0


def _annotation(pod: Object, name: str, default: float) -> float:
    try:
        return float((pod["metadata"].get("annotations") or {}).get(name, default))
    except (TypeError, ValueError):
        return default


class SimulatedRuntime:
    """Containers are running from the moment the pod starts, once the ConfigMaps and Secrets their environment
    names exist (else they wait in `CreateContainerConfigError`, tried again every 10 s); ready follows the
    `tinykube.io/ready` annotation.
    A pod that may end (`restartPolicy` Never or OnFailure) has its containers exit after `tinykube.io/run-seconds`
    (default 1) with `tinykube.io/exit-code` (default 0), as kwok's stages end pods; OnFailure restarts a failed
    container after the kubelet's back-off (10 s doubling to 5 min), in `CrashLoopBackOff` meanwhile.

    A pod whose status already shows its containers running (an agent restarted: nothing of a simulated pod ever
    stopped) keeps their `startedAt` and `restartCount`, as a kubelet restarted finds its runtime's containers."""

    def __init__(self, host: RuntimeHost) -> None:
        self.host = host
        self._started: dict[str, dict[str, _Simulated]] = {}  # pod key -> container -> its runs
        self._ephemeral: dict[str, dict[str, str]] = {}  # pod key -> ephemeral container -> when it was added
        self._timers: dict[str, list[asyncio.TimerHandle]] = {}
        self._retries: set[asyncio.Task[None]] = set()
        self._mounted: set[str] = set()  # pods whose volumes' sources all existed once
        self._mount_problems: dict[str, str] = {}  # pod key -> the FailedMount last reported

    async def start(self, key: str, pod: Object, ip: str) -> None:
        if key in self._started:
            return
        before = reported_running(pod)  # found running by a restarted agent: running still
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        self._started[key] = {name: _Simulated(*before.get(name, ("", 0))) for name in names}
        await self._create(key, pod)

    async def _create(self, key: str, pod: Object) -> None:
        """Once the ConfigMaps, Secrets and claims its volumes need exist (`FailedMount` until then, looked for
        again every second), start the containers not running yet whose environment can be made; the others wait
        and are tried again after CONFIG_RETRY, as the kubelet retries a pod it could not sync."""
        runs, waiting = self._started.get(key), False
        if key not in self._mounted and runs is not None:
            problem = await missing_source(pod, self.host.read_config)
            if problem:
                if self._mount_problems.get(key) != problem:
                    self.host.on_event(key, "Warning", "FailedMount", problem)
                    self._mount_problems[key] = problem
                handle = asyncio.get_running_loop().call_later(VOLUME_RETRY, self._retry, key, pod)
                self._timers.setdefault(key, []).append(handle)
                return
            self._mounted.add(key)
            self._mount_problems.pop(key, None)
        for container in (pod.get("spec") or {}).get("containers") or []:
            run = (runs or {}).get(container["name"])
            if run is None or run.since:
                continue
            try:
                sources = await container_sources(
                    self.host.read_config, pod, container, warner(self.host.on_event, key)
                )
                container_environment(pod, container, [], sources)
            except ConfigError as err:
                if run.config_error != str(err):
                    self.host.on_event(key, "Warning", "Failed", f"Error: {err}")
                run.config_error, waiting = str(err), True
                continue
            if self._started.get(key) is not runs:
                return  # stopped meanwhile
            run.since, run.config_error = now(), ""
            for event in start_events(container):
                self.host.on_event(key, *event)
            if (pod.get("spec") or {}).get("restartPolicy", "Always") != "Always":
                self._run(key, pod, container["name"])
        if waiting:
            handle = asyncio.get_running_loop().call_later(CONFIG_RETRY, self._retry, key, pod)
            self._timers.setdefault(key, []).append(handle)
        self.host.on_change(key)

    def _retry(self, key: str, pod: Object) -> None:
        task = asyncio.get_running_loop().create_task(self._create(key, pod), name=f"{key} create containers")
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    def _run(self, key: str, pod: Object, name: str) -> None:
        """The container `name` ends after the pod's run time (then perhaps restarts)."""
        seconds = max(_annotation(pod, RUN_SECONDS_ANNOTATION, DEFAULT_RUN_SECONDS), 0.0)
        handle = asyncio.get_running_loop().call_later(seconds, self._exit, key, pod, name)
        self._timers.setdefault(key, []).append(handle)

    def _exit(self, key: str, pod: Object, name: str) -> None:
        run = self._started.get(key, {}).get(name)
        if run is None:
            return
        code = int(_annotation(pod, EXIT_CODE_ANNOTATION, 0))
        uid = pod["metadata"].get("uid", key)
        run.finished = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.since,
            "finishedAt": now(),
            "containerID": f"tinykube://{uid}-{name}",
        }
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        if should_restart(policy, code):
            delay = run.backoff.next_delay(time.monotonic())  # the first restart is at once, as the kubelet's
            if delay:
                run.waiting, run.waiting_message = "CrashLoopBackOff", back_off_message(delay, name, pod)
                self.host.on_event(key, *back_off_event(name, pod))
            handle = asyncio.get_running_loop().call_later(delay, self._restart, key, pod, name)
            self._timers.setdefault(key, []).append(handle)
        self.host.on_change(key)

    def _restart(self, key: str, pod: Object, name: str) -> None:
        run = self._started.get(key, {}).get(name)
        if run is None:
            return
        run.last, run.finished, run.waiting, run.waiting_message = run.finished, None, "", ""
        run.since, run.restarts = now(), run.restarts + 1
        run.cpu_seconds, run.metered_at = 0.0, 0.0
        container: Object = next(
            (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), {}
        )
        for event in start_events(container):
            self.host.on_event(key, *event)
        self._run(key, pod, name)
        self.host.on_change(key)

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        started = self._started.get(key)
        ready = started is not None and annotated_ready(pod)
        states = []
        for container in (pod.get("spec") or {}).get("containers") or []:
            run = (started or {}).get(container["name"])
            running = run is not None and run.finished is None and bool(run.since)
            state = ContainerState(
                name=container["name"],
                image=container.get("image", ""),
                container_id=f"tinykube://{pod['metadata'].get('uid', key)}-{container['name']}",
                running_since=run.since if run is not None and running else "",
                ready=ready and running,
                restart_count=run.restarts if run is not None else 0,
            )
            if run is not None and run.finished is not None:
                if run.waiting:  # between a failed run and its restart: waiting, the failed run its last state
                    state.waiting_reason, state.waiting_message = run.waiting, run.waiting_message
                    state.last_terminated = run.finished
                else:
                    state.terminated, state.last_terminated = run.finished, run.last
            elif run is not None and run.config_error:
                state.waiting_reason, state.waiting_message = "CreateContainerConfigError", run.config_error
            elif run is not None:
                state.last_terminated = run.last
            states.append(state)
        return states

    def phase(self, key: str, pod: Object) -> str:
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        return pod_phase(self.containers(key, pod), policy) if key in self._started else "Pending"

    def usage(self, key: str, pod: Object) -> dict[str, ContainerUsage]:
        """Each running container uses what the pod's `tinykube.io/cpu-usage` and `tinykube.io/memory-usage`
        annotations say: its CPU counter grows at the annotated rate (the rate read now applies since the last
        reading), from zero when the run started."""
        runs = self._started.get(key) or {}
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        annotations = pod["metadata"].get("annotations") or {}
        cpu = annotated_usage(annotations, CPU_USAGE_ANNOTATION, names)
        memory = annotated_usage(annotations, MEMORY_USAGE_ANNOTATION, names)
        clock, found = round(time.time(), 3), {}  # as exact as the exposition's millisecond stamps
        for name, run in runs.items():
            if run.finished is not None or not run.since:
                continue
            started = parse_time(run.since)
            began = started.timestamp() if started is not None else clock
            run.cpu_seconds += cpu.get(name, 0.0) * max(clock - (run.metered_at or began), 0.0)
            run.metered_at = clock
            found[name] = ContainerUsage(run.cpu_seconds, int(memory.get(name, 0.0)), began, clock)
        return found

    async def stop(self, key: str, grace_seconds: float) -> None:
        self._started.pop(key, None)
        self._ephemeral.pop(key, None)
        self._mounted.discard(key)
        self._mount_problems.pop(key, None)
        await self.release(key)

    async def release(self, key: str) -> bool:
        for handle in self._timers.pop(key, []):
            handle.cancel()
        return True  # nothing of it needs the address: its containers' records stay for status and logs

    async def close(self) -> None:
        self._started.clear()
        self._mounted.clear()
        for handles in self._timers.values():
            for handle in handles:
                handle.cancel()
        self._timers.clear()

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        return []  # nothing of a simulated pod outlives its agent

    def logs(self, key: str, container: str, **options: Any) -> AsyncIterator[bytes]:
        """Nothing runs, so nothing was written: an empty log (for a container the pod has)."""
        if key not in self._started:
            raise errors.NotFound(f'pod "{key}" not found')
        return _nothing()

    async def start_ephemeral(self, key: str, pod: Object) -> None:
        pass  # nothing runs: an ephemeral container is shown running from when it is added

    def ephemeral_containers(self, key: str, pod: Object) -> list[ContainerState]:
        if key not in self._started:
            return []
        since = self._ephemeral.setdefault(key, {})
        return [ContainerState(name=c["name"], running_since=since.setdefault(c["name"], now()))
                for c in (pod.get("spec") or {}).get("ephemeralContainers") or []]  # fmt: skip

    async def exec(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        raise CommandError(NO_PROCESSES)

    async def attach(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        raise CommandError(NO_PROCESSES)

    async def dial(self, key: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        raise OSError(NO_PROCESSES)


NO_PROCESSES = (
    "tinykube's simulated dataplane runs no processes and has no pod network, so there is nothing to exec in, "
    "attach to or forward a port to: start the cluster with `tinykube up --dataplane netns`"
)


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # makes this an async generator
