"""The `simulated` runtime: no root, nothing executed. Pods get an IP and run, as kwok's do. Each container lives as
its command says where that is plain (`tinykube.node.lifetimes`: `sleep N`, `exit N`, `true`, `false`), else until
the pod is stopped; the pod's `tinykube.io/run-seconds` and `tinykube.io/exit-code` annotations override that for
its containers, as kwok's stages end pods. A run that ends restarts by the pod's policy, so controllers see what
real pods show. Init containers run first, in order, each to its end."""

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
from tinykube.node.containers import Backoff, back_off_message, init_policy, pod_phase, should_restart
from tinykube.node.lifetimes import Lifetime, lifetime
from tinykube.node.podvolumes import missing_source
from tinykube.node.runtime import RuntimeHost, back_off_event, start_events
from tinykube.node.status import ContainerState, PodContainers, annotated_ready, sidecar_names
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams

RUN_SECONDS_ANNOTATION = "tinykube.io/run-seconds"  # how long a simulated pod's containers run, whatever they say
EXIT_CODE_ANNOTATION = "tinykube.io/exit-code"  # and the exit code they end with
DEFAULT_RUN_SECONDS = 1.0  # the run time when only the exit code is annotated
VOLUME_RETRY = 1.0  # seconds before a pod whose volumes lack a source looks again
INITIALIZING = "PodInitializing"

Object = dict[str, Any]


def reported_running(pod: Object, key: str = "containerStatuses") -> dict[str, tuple[str, int]]:
    """Container name -> (startedAt, restartCount) of each container the pod's status shows running."""
    found = {}
    for status in (pod.get("status") or {}).get(key) or []:
        since = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if since and status.get("name"):
            found[str(status["name"])] = (str(since), int(status.get("restartCount") or 0))
    return found


def _reported_done(pod: Object) -> dict[str, Object]:
    """Init container name -> its terminated record, of those the pod's status shows ended with exit code 0."""
    found = {}
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        ended = (status.get("state") or {}).get("terminated") or {}
        if ended and ended.get("exitCode") == 0 and status.get("name"):
            found[str(status["name"])] = dict(ended)
    return found


@dataclass
class _Simulated:
    """One simulated container: when its current run began, and how its runs ended."""

    since: str = ""  # when the current run began; "" before the first and while it waits
    restarts: int = 0
    finished: dict[str, Any] | None = None  # the current state when it has ended (or waits to restart)
    last: dict[str, Any] | None = None  # the run before the current one
    done: bool = False  # ended for good: its policy does not restart it
    waiting: str = ""  # CrashLoopBackOff between a failed run and its restart
    waiting_message: str = ""
    config_error: str = ""  # why it cannot be created yet (CreateContainerConfigError)
    backoff: Backoff = field(default_factory=Backoff)
    cpu_seconds: float = 0.0  # used by this run, up to `metered_at` (seconds since the epoch; 0: not yet)
    metered_at: float = 0.0


@dataclass
class _Pod:
    init: dict[str, _Simulated]  # in spec order
    app: dict[str, _Simulated]
    initialized: bool = False  # every init container succeeded (a sidecar: started)

    def run(self, name: str) -> _Simulated | None:
        return self.init.get(name) or self.app.get(name)


def _annotated(pod: Object) -> Lifetime | None:
    """The pod's override of its containers' lifetime, if it has one."""
    annotations = pod["metadata"].get("annotations") or {}
    if RUN_SECONDS_ANNOTATION not in annotations and EXIT_CODE_ANNOTATION not in annotations:
        return None
    try:
        seconds = max(float(annotations.get(RUN_SECONDS_ANNOTATION, DEFAULT_RUN_SECONDS)), 0.0)
    except (TypeError, ValueError):
        seconds = DEFAULT_RUN_SECONDS
    try:
        code = int(float(annotations.get(EXIT_CODE_ANNOTATION, 0))) % 256
    except (TypeError, ValueError):
        code = 0
    return Lifetime(seconds, code)


def _specs(pod: Object, kind: str) -> list[Object]:
    return list((pod.get("spec") or {}).get(kind) or [])


class SimulatedRuntime:
    """Containers start from the moment the pod starts (its init containers first, one after another), once the
    ConfigMaps and Secrets their environment names exist (else they wait in `CreateContainerConfigError`, tried
    again every 10 s); ready follows the `tinykube.io/ready` annotation.

    A run lasts as its command says (`tinykube.node.lifetimes`), or as the pod's `tinykube.io/run-seconds` and
    `tinykube.io/exit-code` annotations say for its (non-init) containers; a run without an end runs until the pod
    is stopped. An init container whose command has no end completes at once, as kwok's do. A run that ends
    restarts by the policy (the pod's; for init containers: on failure unless Never; a sidecar always), after the
    kubelet's back-off (10 s doubling to 5 min), in `CrashLoopBackOff` meanwhile. Once a pod's regular containers
    have ended for good its sidecars are stopped (exit 0), as the kubelet stops them.

    A pod whose status already shows its containers running (an agent restarted: nothing of a simulated pod ever
    stopped) keeps their `startedAt` and `restartCount`, as a kubelet restarted finds its runtime's containers."""

    def __init__(self, host: RuntimeHost) -> None:
        self.host = host
        self._started: dict[str, _Pod] = {}
        self._ephemeral: dict[str, dict[str, str]] = {}  # pod key -> ephemeral container -> when it was added
        self._timers: dict[str, list[asyncio.TimerHandle]] = {}
        self._retries: set[asyncio.Task[None]] = set()
        self._mounted: set[str] = set()  # pods whose volumes' sources all existed once
        self._mount_problems: dict[str, str] = {}  # pod key -> the FailedMount last reported

    async def start(self, key: str, pod: Object, ip: str) -> None:
        if key in self._started:
            return
        before, sidecars = reported_running(pod), reported_running(pod, "initContainerStatuses")
        app = {c["name"]: _Simulated(*before.get(c["name"], ("", 0))) for c in _specs(pod, "containers")}
        init = {c["name"]: _Simulated(*sidecars.get(c["name"], ("", 0))) for c in _specs(pod, "initContainers")}
        found = _Pod(init, app, initialized=bool(before))
        for name, record in _reported_done(pod).items():  # an agent restarted: what ended stays ended
            if name in init:
                init[name].finished, init[name].done = record, True
        self._started[key] = found
        for container in self._all_specs(pod):
            if (found.run(container["name"]) or _Simulated()).since:  # found running: it goes on to its end
                self._timed(key, pod, container)
        await self._create(key, pod)

    def _all_specs(self, pod: Object) -> list[Object]:
        return [*_specs(pod, "initContainers"), *_specs(pod, "containers")]

    async def _create(self, key: str, pod: Object) -> None:
        """Once the ConfigMaps, Secrets and claims its volumes need exist (`FailedMount` until then, looked for
        again every second), start what may start: the next init container, or, once every init container is done,
        the containers not running yet whose environment can be made; the others wait and are tried again after
        CONFIG_RETRY, as the kubelet retries a pod it could not sync."""
        found = self._started.get(key)
        if found is None:
            return
        if key not in self._mounted:
            problem = await missing_source(pod, self.host.read_config)
            if problem:
                if self._mount_problems.get(key) != problem:
                    self.host.on_event(key, "Warning", "FailedMount", problem)
                    self._mount_problems[key] = problem
                self._later(key, VOLUME_RETRY, self._retry, key, pod)
                return
            self._mounted.add(key)
            self._mount_problems.pop(key, None)
        waiting = False
        sidecars = sidecar_names(pod)
        for container in _specs(pod, "initContainers") if not found.initialized else []:
            run = found.init[container["name"]]
            if not run.since and not run.done and run.finished is None:
                if not await self._begin(key, pod, container, run):
                    waiting = True
                    break
                if self._started.get(key) is not found:
                    return  # stopped meanwhile
            if container["name"] in sidecars:
                continue  # a sidecar counts as done once started
            if not (run.done and (run.finished or {}).get("exitCode") == 0):
                break  # running, waiting to restart, or failed for good: the next waits
        else:
            found.initialized = True
        for container in _specs(pod, "containers") if found.initialized else []:
            run = found.app[container["name"]]
            if run.since or run.finished is not None:
                continue
            if not await self._begin(key, pod, container, run):
                waiting = True
            if self._started.get(key) is not found:
                return
        if waiting:
            self._later(key, CONFIG_RETRY, self._retry, key, pod)
        self.host.on_change(key)

    async def _begin(self, key: str, pod: Object, container: Object, run: _Simulated) -> bool:
        """Start the container's first run, if its environment can be made; False: it waits."""
        try:
            sources = await container_sources(self.host.read_config, pod, container, warner(self.host.on_event, key))
            container_environment(pod, container, [], sources)
        except ConfigError as err:
            if run.config_error != str(err):
                self.host.on_event(key, "Warning", "Failed", f"Error: {err}")
            run.config_error = str(err)
            return False
        run.since, run.config_error = now(), ""
        for event in start_events(container):
            self.host.on_event(key, *event)
        self._timed(key, pod, container)
        return True

    def _lifetime(self, pod: Object, container: Object) -> Lifetime | None:
        if not any(c.get("name") == container["name"] for c in _specs(pod, "initContainers")):
            return _annotated(pod) or lifetime(container)
        ends = lifetime(container)
        if ends is None and container.get("restartPolicy") != "Always":
            return Lifetime(0.0, 0)  # an init container that would run for ever completes at once, as kwok's
        return ends

    def _timed(self, key: str, pod: Object, container: Object) -> None:
        """The container's current run ends when its lifetime says (if ever)."""
        ends = self._lifetime(pod, container)
        if ends is not None:
            self._later(key, ends.seconds, self._exit, key, pod, container["name"], ends.exit_code)

    def _later(self, key: str, delay: float, callback: Any, *args: Any) -> None:
        handle = asyncio.get_running_loop().call_later(delay, callback, *args)
        self._timers.setdefault(key, []).append(handle)

    def _retry(self, key: str, pod: Object) -> None:
        task = asyncio.get_running_loop().create_task(self._create(key, pod), name=f"{key} create containers")
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    def _policy(self, pod: Object, name: str) -> str:
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        spec = next((c for c in _specs(pod, "initContainers") if c.get("name") == name), None)
        return init_policy(policy, spec) if spec is not None else policy

    def _exit(self, key: str, pod: Object, name: str, code: int) -> None:
        found = self._started.get(key)
        run = found.run(name) if found is not None else None
        if found is None or run is None or run.done or not run.since:
            return
        uid = pod["metadata"].get("uid", key)
        run.finished = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.since,
            "finishedAt": now(),
            "containerID": f"tinykube://{uid}-{name}",
        }
        run.since = ""
        if should_restart(self._policy(pod, name), code):
            delay = run.backoff.next_delay(time.monotonic())  # the first restart is at once, as the kubelet's
            if delay:
                run.waiting, run.waiting_message = "CrashLoopBackOff", back_off_message(delay, name, pod)
                self.host.on_event(key, *back_off_event(name, pod))
            self._later(key, delay, self._restart, key, pod, name)
        else:
            run.done = True
            if name in found.init and code == 0:
                self._retry(key, pod)  # the next init container, or the pod's containers
            elif name in found.app and all(r.done for r in found.app.values()):
                self._end_sidecars(found, pod, key)
        self.host.on_change(key)

    def _end_sidecars(self, found: _Pod, pod: Object, key: str) -> None:
        """The regular containers have ended for good: the kubelet stops the sidecars (here they exit 0)."""
        for name in sidecar_names(pod):
            run = found.init.get(name)
            if run is None or run.done:
                continue
            if run.since:
                run.finished = _stopped_record(pod, key, name, run.since)
            run.since, run.done, run.waiting, run.waiting_message = "", True, "", ""

    def _restart(self, key: str, pod: Object, name: str) -> None:
        found = self._started.get(key)
        run = found.run(name) if found is not None else None
        if run is None or run.done:
            return
        run.last, run.finished, run.waiting, run.waiting_message = run.finished, None, "", ""
        run.since, run.restarts = now(), run.restarts + 1
        run.cpu_seconds, run.metered_at = 0.0, 0.0
        container: Object = next((c for c in self._all_specs(pod) if c.get("name") == name), {"name": name})
        for event in start_events(container):
            self.host.on_event(key, *event)
        self._timed(key, pod, container)
        self.host.on_change(key)

    def _state(self, key: str, pod: Object, container: Object, run: _Simulated | None, ready: bool) -> ContainerState:
        state = ContainerState(
            name=container["name"],
            image=container.get("image", ""),
            container_id=f"tinykube://{pod['metadata'].get('uid', key)}-{container['name']}",
            running_since=run.since if run is not None else "",
            ready=ready and run is not None and bool(run.since),
            restart_count=run.restarts if run is not None else 0,
        )
        if run is None:
            return state
        if run.since:
            state.last_terminated = run.finished if run.finished is not None else run.last
        elif run.waiting:  # between a failed run and its restart: waiting, the failed run its last state
            state.waiting_reason, state.waiting_message = run.waiting, run.waiting_message
            state.last_terminated = run.finished
        elif run.finished is not None:
            state.terminated, state.last_terminated = run.finished, run.last
        elif run.config_error:
            state.waiting_reason, state.waiting_message = "CreateContainerConfigError", run.config_error
        return state

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        found = self._started.get(key)
        ready = found is not None and annotated_ready(pod)
        states = []
        for container in _specs(pod, "containers"):
            state = self._state(key, pod, container, found.app.get(container["name"]) if found else None, ready)
            initializing = found is not None and not found.initialized and _specs(pod, "initContainers")
            if initializing and not state.waiting_reason and not state.running_since:
                state.waiting_reason = INITIALIZING
            states.append(state)
        return states

    def init_containers(self, key: str, pod: Object) -> list[ContainerState]:
        found = self._started.get(key)
        ready = found is not None and annotated_ready(pod)
        states = []
        for container in _specs(pod, "initContainers"):
            run = found.init.get(container["name"]) if found else None
            sidecar = container.get("restartPolicy") == "Always"
            state = self._state(key, pod, container, run, ready and sidecar)
            if found is not None and run is not None and not run.since and run.finished is None:
                state.waiting_reason = state.waiting_reason or INITIALIZING
            states.append(state)
        return states

    def phase(self, key: str, pod: Object) -> str:
        if key not in self._started:
            return "Pending"
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        init, sidecars = self.init_containers(key, pod), sidecar_names(pod)
        return pod_phase(self.containers(key, pod), policy, init=init, sidecars=sidecars)

    def usage(self, key: str, pod: Object) -> dict[str, ContainerUsage]:
        """Each running container uses what the pod's `tinykube.io/cpu-usage` and `tinykube.io/memory-usage`
        annotations say: its CPU counter grows at the annotated rate (the rate read now applies since the last
        reading), from zero when the run started."""
        pod_runs = self._started.get(key)
        runs = {**pod_runs.init, **pod_runs.app} if pod_runs is not None else {}
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        annotations = pod["metadata"].get("annotations") or {}
        cpu = annotated_usage(annotations, CPU_USAGE_ANNOTATION, names)
        memory = annotated_usage(annotations, MEMORY_USAGE_ANNOTATION, names)
        clock, found = round(time.time(), 3), {}  # as exact as the exposition's millisecond stamps
        for name, run in runs.items():
            if not run.since:
                continue
            started = parse_time(run.since)
            began = started.timestamp() if started is not None else clock
            run.cpu_seconds += cpu.get(name, 0.0) * max(clock - (run.metered_at or began), 0.0)
            run.metered_at = clock
            found[name] = ContainerUsage(run.cpu_seconds, int(memory.get(name, 0.0)), began, clock)
        return found

    async def stop(self, key: str, grace_seconds: float, pod: Object | None = None) -> PodContainers:
        """Nothing runs, so every running container stops at once, as a process that ends on SIGTERM: exit 0."""
        found = self._started.get(key)
        if found is not None and pod is not None:
            for name, run in [*found.init.items(), *found.app.items()]:
                if run.since:
                    run.finished = _stopped_record(pod, key, name, run.since)
                run.since, run.done, run.waiting, run.waiting_message = "", True, "", ""
        stopped = PodContainers(self.init_containers(key, pod), self.containers(key, pod)) if pod else PodContainers()
        self._started.pop(key, None)
        self._ephemeral.pop(key, None)
        self._mounted.discard(key)
        self._mount_problems.pop(key, None)
        await self.release(key)
        return stopped

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


def _stopped_record(pod: Object, key: str, name: str, since: str) -> Object:
    uid = pod["metadata"].get("uid", key)
    return {"exitCode": 0, "reason": "Completed", "startedAt": since, "finishedAt": now(),
            "containerID": f"tinykube://{uid}-{name}"}  # fmt: skip


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # makes this an async generator
