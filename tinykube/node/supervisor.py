"""How the netns runtime supervises a container, as the kubelet's pod workers do: start a run (its log file, its
process, its probes), follow it to its end, and by `restartPolicy` start it again after upstream's crash back-off
(immediately the first time, then 10 s doubling to 300 s, shown as `CrashLoopBackOff`). A command that cannot be
started is a run that ends with `StartError` / exit code 128, as upstream reports it; an image that cannot be run is
a failed pull: `ErrImagePull` until the next retry, `ImagePullBackOff` while the image's back-off lasts, then
`ErrImagePull` again, the container waiting meanwhile.

After an agent restart a container resumes where the earlier agent left it (`tinykube.node.adoption`): an adopted
run is followed again (its output relayed, its probes resumed), a run found gone ends as `ContainerStatusUnknown`
and restarts by the pod's policy, `restartCount` + 1.

What a run runs comes from `RunConfig`, its processes from `ContainerProcesses`: this module decides only when.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tinykube.api.meta import now
from tinykube.node import adoption, container_logs
from tinykube.node.configsources import CONFIG_RETRY
from tinykube.node.container_config import CONFIG_ERROR, PULL_BACKOFF, PULL_FAILED, RunConfig
from tinykube.node.container_probes import ContainerProbes
from tinykube.node.container_processes import DEFAULT_PATH, ContainerProcesses, Process, StartFailure
from tinykube.node.containers import Container, Pod, back_off_message, should_restart
from tinykube.node.runtime import RuntimeHost, back_off_event, start_events

log = logging.getLogger(__name__)

Object = dict[str, Any]
START_ERROR_AT = "1970-01-01T00:00:00Z"  # upstream's startedAt of a container that never started
RESTARTABLE = ("ContainerCreating", "CrashLoopBackOff", "RunContainerError")  # waiting after a run that ended


class Supervisor:
    """Supervises the containers of one node's pods; `changed(pod)` reports (and saves) a change of its
    containers; `backoff` is the crash back-off's (initial, cap) in seconds."""

    def __init__(
        self,
        host: RuntimeHost,
        processes: ContainerProcesses,
        *,
        config: RunConfig,
        probes: ContainerProbes,
        changed: Callable[[Pod], None],
        backoff: tuple[float, float],
    ) -> None:
        self.host = host
        self.processes = processes
        self.config = config
        self.probes = probes
        self.changed = changed
        self.backoff = backoff

    async def supervise(
        self, run: Pod, c: Container, adopted: Process | None = None, *, policy: str | None = None
    ) -> None:
        """Run the container, restarting it by `policy` (by default the pod's; an init container's is
        `containers.init_policy`), until it is done or the pod stops (first following where an earlier agent left
        it)."""
        policy = policy or run.policy
        try:
            record = await self._resume(run, c, adopted)
            if record is not None:
                if not should_restart(policy, record["exitCode"]):
                    c.done = True
                    self.changed(run)
                    return
                c.restart_count += 1  # gone: restarted at once (the back-off was the earlier agent's)
            elif c.done:
                return
            if not run.volumes_ready.is_set():
                c.first_start.set()  # waiting (ContainerCreating) until the pod's volumes are set up
                await run.volumes_ready.wait()
            while True:
                record = await self._run_once(run, c)
                if record is None and c.waiting_reason == PULL_FAILED:
                    await self._pull_backoff(run, c)
                    continue
                if record is None and c.waiting_reason == CONFIG_ERROR:
                    await asyncio.sleep(CONFIG_RETRY)  # as the kubelet retries a pod it could not sync
                    continue
                if record is not None and not should_restart(policy, record["exitCode"]):
                    c.done = True
                    self.changed(run)
                    return
                delay = c.backoff.next_delay(asyncio.get_running_loop().time())
                if delay:
                    if record is not None:
                        c.wait("CrashLoopBackOff", back_off_message(delay, c.name, run.pod))
                        self.host.on_event(run.key, *back_off_event(c.name, run.pod))
                    self.changed(run)
                    await asyncio.sleep(delay)
                if record is not None:
                    c.restart_count += 1
        except Exception:
            log.exception("pod %s: container %s: supervisor failed", run.key, c.name)
        finally:
            c.first_start.set()

    async def run_ephemeral(self, run: Pod, c: Container) -> None:
        """An ephemeral container (`kubectl debug`): run once in the pod's namespaces, never restarted."""
        try:
            await run.volumes_ready.wait()
            while await self._run_once(run, c) is None and c.waiting_reason == CONFIG_ERROR:
                await asyncio.sleep(CONFIG_RETRY)  # its sources may come; a failed pull stays failed
            c.done = True
            self.changed(run)
        except Exception:
            log.exception("pod %s: ephemeral container %s failed", run.key, c.name)
        finally:
            c.first_start.set()

    async def _pull_backoff(self, run: Pod, c: Container) -> None:
        """After a failed pull, as upstream's kubelet: `ErrImagePull` until the pod worker's retry (the back-off's
        first period), then `ImagePullBackOff` for the image's back-off (that period doubling up to the cap)."""
        initial, _ = self.backoff
        await asyncio.sleep(initial)
        delay = max(initial, c.pull_backoff.next_delay(asyncio.get_running_loop().time()))
        c.wait(PULL_BACKOFF, f'Back-off pulling image "{c.spec.get("image") or ""}"')
        self.host.on_event(run.key, "Normal", "BackOff", c.waiting_message)
        self.host.on_event(run.key, "Warning", "Failed", f"Error: {PULL_BACKOFF}")
        self.changed(run)
        await asyncio.sleep(delay)

    async def _resume(self, run: Pod, c: Container, adopted: Process | None) -> Object | None:
        """Where an earlier agent left the container: an adopted run followed to its end, or the record of a run
        that ended (its process found gone, or it was waiting to restart); None: start afresh, or stay done."""
        if adopted is not None:
            return await self._follow(run, c, adopted)
        if c.running_since:  # it ran; its process is gone (with the pod's namespace, or it ended meanwhile)
            record = dict(adoption.UNKNOWN_EXIT)
            finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": run.container_id(c)}
            c.ended({**record, **finished})
            self.changed(run)
            return record
        if not c.done and c.finished is not None and c.waiting_reason in RESTARTABLE:
            return c.finished
        return None

    async def _follow(self, run: Pod, c: Container, process: Process) -> Object:
        """An adopted container's run: its output relayed again, its probes resumed, followed to its end."""
        c.process = process
        c.first_start.set()
        if c.log_path is None:
            (run.log_dir / c.name).mkdir(parents=True, exist_ok=True)
            c.log_path = run.log_dir / c.name / f"{c.restart_count}.log"
        c.console, pipes = await self.processes.reattach(process, c.pipes)
        relay = container_logs.relay(c.log_path, pipes, process.wait, c.run_over, c.console.tee)
        run.spawn(relay, f"{run.key}/{c.name} log")
        try:
            image = self.config.image(c)
            env = self.config.command(run, c, image, await self.config.sources(run, c))[1]  # for exec probes
        except StartFailure:
            env = {"PATH": DEFAULT_PATH}
        ran = datetime.now(UTC) - datetime.fromisoformat(c.running_since.replace("Z", "+00:00"))
        return await self._watch(run, c, process, env, ran.total_seconds())

    async def _run_once(self, run: Pod, c: Container) -> Object | None:
        """One run; returns its terminated record, or None when it could not be created (it stays waiting)."""
        try:
            image = self.config.image(c)  # pulled before anything else, as upstream (no log file while waiting)
        except StartFailure as failure:
            return self._failed_start(run, c, failure)
        self._rotate(run, c)
        try:
            argv, env, cwd = self.config.command(run, c, image, await self.config.sources(run, c))
            process = await self._start(run, c, argv, env, cwd)
        except StartFailure as failure:
            return self._failed_start(run, c, failure)
        c.process, c.running_since, c.env = process, now(), env
        c.ready = not c.spec.get("readinessProbe") and not c.spec.get("startupProbe")  # without probes: ready now
        c.first_start.set()
        for event in start_events(c.spec):
            self.host.on_event(run.key, *event)
        self.changed(run)
        return await self._watch(run, c, process, env)

    async def _start(self, run: Pod, c: Container, argv: list[str], env: dict[str, str], cwd: str) -> Process:
        """Start a run's process, its output relayed into its log file (and to an attached console)."""
        started = await self.processes.start(
            run.net.netns, run.log_dir / c.name, self.config.process(run, c, argv, env, cwd)
        )
        c.pid, c.started, c.pipes, c.console = started.process.pid, started.started, started.pipes, started.console
        assert c.log_path is not None
        relay = container_logs.relay(c.log_path, started.output, started.process.wait, c.run_over, c.console.tee)
        run.spawn(relay, f"{run.key}/{c.name} log")
        return started.process

    async def _watch(self, run: Pod, c: Container, process: Process, env: dict[str, str], ran: float = 0) -> Object:
        """Probe the running container (`ran` seconds so far) until its process ends; returns the run's record."""
        probes = self.probes.start(run, c, env, ran)
        try:
            await process.wait()
        finally:
            for task in probes:
                task.cancel()
            if c.console is not None:
                c.console.close()
        self.processes.end_leftovers(process)
        record = self.processes.record(process)
        finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": run.container_id(c)}
        c.ended({**record, **finished})
        self.changed(run)
        return record

    def _failed_start(self, run: Pod, c: Container, failure: StartFailure) -> Object | None:
        c.run_over.set()
        c.first_start.set()
        if failure.reason == PULL_FAILED:
            image = c.spec.get("image") or ""
            self.host.on_event(run.key, "Warning", "Failed", f'Failed to pull image "{image}": {failure.message}')
        shown = failure.reason if failure.waiting and failure.reason != CONFIG_ERROR else failure.message
        if not (failure.reason == CONFIG_ERROR and c.waiting_message == failure.message):  # not again each retry
            self.host.on_event(run.key, "Warning", "Failed", f"Error: {shown}")
        if failure.waiting:
            c.wait(failure.reason, failure.message)
            self.changed(run)
            return None
        record = {"exitCode": 128, "reason": "StartError", "message": failure.message}
        c.ended({**record, "startedAt": START_ERROR_AT, "finishedAt": now(), "containerID": run.container_id(c)})
        c.wait("RunContainerError", failure.message)
        self.changed(run)
        return record

    def _rotate(self, run: Pod, c: Container) -> None:
        """A fresh log file for this run (`<restartCount>.log`); only the previous run's is kept besides it."""
        directory = run.log_dir / c.name
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{c.restart_count - 2}.log").unlink(missing_ok=True)
        path = directory / f"{c.restart_count}.log"
        path.write_bytes(b"")
        if path != c.log_path:  # not a retry of a run that could not be created
            c.previous_log, c.log_path = c.log_path, path
        c.run_over = asyncio.Event()
