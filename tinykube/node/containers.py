"""A pod as the netns runtime runs it: its containers, each with its current run, its restart count and back-offs
and the records of its last finished runs (what `state.json` keeps for the next agent: `tinykube.node.adoption`);
and the kubelet's rules over them: restart policy, crash back-off and its message, the pod phase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinykube.node.container_io import ContainerConsole
from tinykube.node.container_processes import Process
from tinykube.node.status import ContainerState
from tinykube.sandbox import topology

Object = dict[str, Any]
DEFAULT_GRACE = 30.0


@dataclass(slots=True)
class Backoff:
    """Upstream's per-container restart back-off (`IsInBackOffSince` + `Next`): no wait the first time, then
    `initial` doubling to `cap`; forgotten after twice `cap` without a restart."""

    initial: float = 10.0
    cap: float = 300.0
    current: float = 0.0
    updated: float = 0.0

    def next_delay(self, clock: float) -> float:
        if self.current and clock - self.updated > 2 * self.cap:
            self.current = 0.0
        wait = self.current
        self.current = min(self.current * 2, self.cap) if self.current else self.initial
        self.updated = clock + wait
        return wait


def should_restart(policy: str, exit_code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def pod_phase(
    containers: list[ContainerState],
    restart_policy: str,
    *,
    init: Sequence[ContainerState] = (),
    sidecars: frozenset[str] = frozenset(),
    terminal: bool = False,
) -> str:
    """Upstream's kubelet `getPhase`: `init` are the init containers' states in spec order, `sidecars` the names of
    those that are restartable (`restartPolicy: Always`); `terminal`: the pod's containers are stopped for good (it
    was deleted), so that no restart policy applies."""
    pending = failed_init = 0
    running = waiting = stopped = succeeded = 0
    for c in init:
        if c.name in sidecars:
            if c.running_since:
                running += 1
                pending += c.started is False
            elif c.terminated is None and c.last_terminated is None:
                pending, waiting = pending + 1, waiting + 1
        elif c.terminated is not None:
            failed_init += c.terminated.get("exitCode") != 0
        elif c.last_terminated is not None and not c.running_since:
            failed_init += c.last_terminated.get("exitCode") != 0
        else:
            pending += 1
    for c in containers:
        if c.running_since:
            running += 1
        elif c.terminated is not None:
            stopped += 1
            succeeded += c.terminated.get("exitCode") == 0
        elif c.last_terminated is not None:
            stopped += 1  # waiting to restart
        else:
            waiting += 1
    if failed_init and restart_policy == "Never":
        return "Failed"
    if (pending and not any_started(containers)) or waiting:
        return "Pending"
    if running:
        return "Running"
    if not stopped:
        return "Pending"
    if terminal:
        return "Succeeded" if stopped == succeeded else "Failed"
    if restart_policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    return "Failed" if restart_policy == "Never" else "Running"


def any_started(containers: list[ContainerState]) -> bool:
    """Upstream's `HasAnyRegularContainerStarted`: a regular container runs or has run."""
    return any(c.running_since or c.terminated is not None or c.last_terminated is not None for c in containers)


def init_policy(pod_policy: str, init: Object) -> str:
    """The restart policy an init container runs under: a sidecar (`restartPolicy: Always`) always restarts; the
    others restart on failure unless the pod's policy is Never, and are done once they succeed."""
    if init.get("restartPolicy") == "Always":
        return "Always"
    return "Never" if pod_policy == "Never" else "OnFailure"


def go_duration(seconds: float) -> str:
    """Go's `time.Duration.String()` (10s, 1m20s, 5m0s, 300ms), which upstream's back-off message prints."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{rest:g}s"


def back_off_message(delay: float, container: str, pod: Object) -> str:
    """The kubelet's `CrashLoopBackOff` message; the pod as its `format.Pod` prints it: name_namespace(uid)."""
    meta = pod["metadata"]
    who = f"{meta['name']}_{meta.get('namespace') or 'default'}({meta.get('uid', '')})"
    return f"back-off {go_duration(delay)} restarting failed container={container} pod={who}"


@dataclass(eq=False)
class Container:
    """One container of a running pod: its current run, and the records of the last two finished ones."""

    spec: Object
    backoff: Backoff
    pull_backoff: Backoff
    restart_count: int = 0
    running_since: str = ""
    ready: bool = False
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    finished: Object | None = None  # the last finished run's terminated record
    before: Object | None = None  # the one before it (lastState once the container stays terminated)
    done: bool = False  # finished for good: the policy does not restart it
    process: Process | None = None
    pid: int = 0  # the current run's process (its group's id too)
    started: int = 0  # the process's start time (clock ticks after boot): tells it from a later one with its pid
    pipes: list[tuple[int, int]] = field(default_factory=list)  # its output pipes' read ends: (fd in it, inode)
    log_path: Path | None = None
    previous_log: Path | None = None
    run_over: asyncio.Event = field(default_factory=asyncio.Event)  # the current log gets no more lines
    first_start: asyncio.Event = field(default_factory=asyncio.Event)
    env: dict[str, str] = field(default_factory=dict)  # the current run's environment (its hooks and probes get it)
    startup_passed: bool = False  # the current run's startup probe succeeded (or it has none): `started` in status
    cpu_seconds: float = 0.0  # the most the current run's processes were seen to have used (a counter never falls)
    console: ContainerConsole | None = None  # the current run's stdin and output for `attach` (`stdin: true`)

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    def wait(self, reason: str, message: str = "") -> None:
        self.waiting_reason, self.waiting_message = reason, message

    def ended(self, record: Object) -> None:
        self.running_since, self.ready, self.process, self.pid, self.started = "", False, None, 0, 0
        self.cpu_seconds, self.startup_passed = 0.0, False
        self.before, self.finished = self.finished, record
        self.wait("ContainerCreating")  # until it restarts or is found done

    def saved(self) -> Object:
        """What the next agent needs to adopt this container (or restart it as upstream restarts a lost one)."""
        return {
            "restartCount": self.restart_count,
            "runningSince": self.running_since,
            "ready": self.ready,
            "waiting": [self.waiting_reason, self.waiting_message],
            "finished": self.finished,
            "before": self.before,
            "done": self.done,
            "pid": self.pid,
            "started": self.started,
            "pipes": [list(pipe) for pipe in self.pipes],
            "log": self.log_path.name if self.log_path else "",
            "previousLog": self.previous_log.name if self.previous_log else "",
        }

    def restore(self, saved: Object, directory: Path) -> None:
        """As `saved()` left it (the process itself is adopted, or found gone, by the runtime)."""
        self.restart_count = int(saved.get("restartCount") or 0)
        self.running_since, self.ready = str(saved.get("runningSince") or ""), bool(saved.get("ready"))
        self.startup_passed = bool(self.running_since)  # a run that was running counts as started, as upstream's
        self.wait(*[str(part) for part in saved.get("waiting") or ["ContainerCreating", ""]][:2])
        self.finished, self.before, self.done = saved.get("finished"), saved.get("before"), bool(saved.get("done"))
        self.pid, self.started = int(saved.get("pid") or 0), int(saved.get("started") or 0)
        self.pipes = [(int(fd), int(inode)) for fd, inode in saved.get("pipes") or []]
        log, previous = saved.get("log"), saved.get("previousLog")
        self.log_path = directory / self.name / str(log) if log else None
        self.previous_log = directory / self.name / str(previous) if previous else None

    def state(self, container_id: str) -> ContainerState:
        """Running (lastState: the last run), terminated for good (lastState: the run before), or waiting."""
        found = ContainerState(self.name, str(self.spec.get("image") or ""), container_id)
        found.restart_count, found.ready, found.last_terminated = self.restart_count, self.ready, self.finished
        if self.running_since:
            found.running_since = self.running_since
            found.started = self.startup_passed
        elif self.done:
            found.terminated, found.last_terminated = self.finished, self.before
        else:
            found.waiting_reason, found.waiting_message = self.waiting_reason, self.waiting_message
        return found


@dataclass(eq=False)
class Pod:
    key: str
    pod: Object  # as started, with its IPs filled in (env vars and the downward API see them)
    net: topology.PodNet
    log_dir: Path
    containers: dict[str, Container]
    supervisors: list[asyncio.Task[None]] = field(default_factory=list)
    helpers: set[asyncio.Task[None]] = field(default_factory=set)  # log relays, liveness kills
    volumes: dict[str, Path] = field(default_factory=dict)  # each volume's directory on the node, by name
    volumes_ready: asyncio.Event = field(default_factory=asyncio.Event)  # every volume set up once

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def policy(self) -> str:
        return str((self.pod.get("spec") or {}).get("restartPolicy") or "Always")

    @property
    def grace(self) -> float:
        return float((self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE))

    def container_id(self, c: Container) -> str:
        """The current run's ID (each run is a new container upstream, so a restart gets a new one)."""
        uid = self.pod["metadata"].get("uid") or self.key
        return f"tinykube://{topology.short_hash(f'{uid}/{c.name}/{c.restart_count}', 32)}"

    def state_of(self, c: Container) -> ContainerState:
        return c.state(self.container_id(c))

    def saved(self) -> Object:
        """The pod's `state.json` (`tinykube.node.adoption`), for the next agent."""
        return {"ip": self.net.ip, "containers": {c.name: c.saved() for c in self.containers.values()}}

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self.helpers.add(task)
        task.add_done_callback(self.helpers.discard)
