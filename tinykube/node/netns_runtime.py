"""The `netns` runtime: each pod is a network namespace attached to its node's namespace, each container its
`command` + `args` run as a host process inside it (`ip netns exec`), supervised as the kubelet supervises
containers.

Per container, a supervisor task starts the process (in a process group of its own, which dies with it as a
container's processes die with its PID 1), runs its probes, and on exit decides by `restartPolicy` whether to start
it again, after upstream's crash back-off (immediately the first time, then 10 s doubling to 300 s, shown as
`CrashLoopBackOff`). Output goes through a relay that writes CRI log files (`<time> stdout F <line>`), one per run
as the kubelet's `<restartCount>.log`, so `logs()` can honour timestamps and `previous` (`container_logs`).
A command that cannot be started is a run that ends with `StartError` / exit code 128, as upstream reports it.

There are no images: `tinykube.node.images` turns a container's image, command and args into the argv to run (a
built-in stand-in for a few well-known images, else the command). An image it cannot run is a failed pull, shown as
upstream's kubelet shows one: `ErrImagePull` until the next retry, `ImagePullBackOff` while the image's back-off
lasts (the crash back-off's periods), then `ErrImagePull` again; the container stays waiting, the pod Pending.

Restarts. An agent started again over the same sandbox and log directory adopts each pod an earlier agent left
running (`tinykube.node.adoption`: the pod's `state.json`, its namespace, its containers' processes and pipes) and
resumes its containers' logs and probes: the reported status does not change. `close()` (the agent going away
cleanly, its sandbox with it) ends every container and records how each run ended; the next agent starts them again
as upstream's kubelet restarts the containers it finds gone: by the pod's `restartPolicy`, `restartCount` + 1, the
ended run as `lastState`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import fcntl
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now, parse_time
from tinykube.api.resource_metrics import ContainerUsage
from tinykube.kubelet_env.envvars import ConfigError, Sources, container_environment, expand
from tinykube.node import adoption, container_io, container_logs, images, podfiles
from tinykube.node.adoption import Adopted
from tinykube.node.configsources import CONFIG_RETRY, Reader, container_sources, nothing, warner
from tinykube.node.containers import Backoff, Container, Pod, back_off_message, pod_phase, should_restart
from tinykube.node.lifecycle import run_hook
from tinykube.node.podvolumes import MountError, PodVolumes, TokenRequester, remove_memory
from tinykube.node.probes import Outcome, ProbeResults, ProbeSpec, Target, run_prober, until_started
from tinykube.node.runtime import back_off_event, host_network, start_events
from tinykube.node.status import ContainerState
from tinykube.sandbox import netns
from tinykube.sandbox import topology as sandbox
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams

log = logging.getLogger(__name__)

Object = dict[str, Any]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_ERROR_AT = "1970-01-01T00:00:00Z"  # upstream's startedAt of a container that never started
PULL_FAILED, PULL_BACKOFF = "ErrImagePull", "ImagePullBackOff"
CONFIG_ERROR = "CreateContainerConfigError"
WAITING_LOGS = {PULL_FAILED: "image can't be pulled", PULL_BACKOFF: "trying and failing to pull image"}  # upstream's
PIPE_SIZE = 1 << 20  # a container's output pipes: what it may write while no agent reads (fs.pipe-max-size default)
CLONE_NEWUTS = 0x04000000
MINIMUM_GRACE = 2.0  # seconds a container gets after SIGTERM however little of its grace period is left (upstream's)
CONTAINER_INIT = [sys.executable, "-I", "-m", "tinykube.node.containerinit"]  # builds the container's filesystem
VOLUME_SYNC = 10.0  # seconds between syncs of a pod's volumes (ConfigMap and Secret updates, token renewals)
VOLUME_RETRY = 1.0  # seconds before volumes that could not be set up are tried again
USAGE_FRESHNESS = 0.5  # seconds one scan of /proc serves every pod's usage (a scrape asks for each pod in turn)
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
RESTARTABLE = ("ContainerCreating", "CrashLoopBackOff", "RunContainerError")  # waiting after a run that ended


def exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N: 128+N, as runc reports


def missing_executable(argv0: str, path: str, cwd: str) -> str:
    """Upstream's message when `argv0` cannot be executed, or ""."""
    if "/" in argv0:
        full = os.path.join(cwd, argv0)
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return ""
        return f'exec: "{argv0}": stat {argv0}: no such file or directory'
    if shutil.which(argv0, path=path):
        return ""
    return f'exec: "{argv0}": executable file not found in $PATH'


class StartFailure(Exception):
    """A container that cannot be started; `waiting` failures (bad config) keep it waiting, the others end its
    run with StartError."""

    def __init__(self, reason: str, message: str, *, waiting: bool = False) -> None:
        super().__init__(message)
        self.reason, self.message, self.waiting = reason, message, waiting


class NetnsRuntime:
    """Runs the pods of one node of a sandbox (see the module docstring)."""

    def __init__(
        self,
        node: sandbox.NodeNet,
        log_dir: Path,
        services: Callable[[str], list[Object]],
        *,
        dns_ip: str = "10.96.0.10",
        cluster_domain: str = "cluster.local",
        backoff: tuple[float, float] = (10.0, 300.0),
    ) -> None:
        self.on_change: Callable[[str], None] = lambda key: None
        self.on_event: Callable[[str, str, str, str], None] = lambda key, type_, reason, message: None
        self.read_config: Reader = nothing
        self.request_token: TokenRequester = _no_tokens
        self.node = node
        self.log_dir = log_dir
        self.services = services
        self.dns_ip = dns_ip
        self.cluster_domain = cluster_domain
        self.backoff = backoff
        self.pods: dict[str, Pod] = {}
        self._groups: tuple[float, dict[int, tuple[float, int]]] = (0.0, {})  # (scanned at, epoch s; group_usage())

    # The Runtime protocol

    async def start(self, key: str, pod: Object, ip: str) -> None:
        """Start the pod; or, if an earlier agent left it (`state.json` in its log directory, for this IP), adopt
        its namespace and the processes still running there, and restart by policy the containers found gone. A
        `hostNetwork` pod runs in the node's own namespace, with the node's address."""
        if key in self.pods:
            return
        host = host_network(pod)
        net = sandbox.PodNet(self.node.netns, "", self.node.ip) if host else self.node.pod(key, ip)
        started = self._with_addresses(pod, net.ip)
        log_dir = self._pod_logs(started)
        saved = adoption.load_state(log_dir, net.ip)
        adopt = bool(saved) and not host and await asyncio.to_thread(adoption.plumbed, self.node, net)
        if not adopt and not host:
            if netns.exists(net.netns) or (netns.NETNS_ETC / net.netns).exists():  # left, but not adoptable
                await asyncio.to_thread(sandbox.detach_pod, self.node, net)
            resolv = podfiles.resolv_conf(started, self.dns_ip, self.cluster_domain, _host_resolv())
            hosts = podfiles.hosts_file(started, [ip], self.cluster_domain)
            try:
                await asyncio.to_thread(sandbox.attach_pod, self.node, net, resolv, hosts)
            except BaseException:
                await asyncio.to_thread(sandbox.detach_pod, self.node, net)
                raise
        run = Pod(key, started, net, log_dir, self._containers(started, saved, log_dir))
        self.pods[key] = run
        volumes = PodVolumes(started, log_dir / "volumes", self.read_config, self.request_token)
        run.supervisors.append(asyncio.create_task(self._sync_volumes(run, volumes), name=f"{key} volumes"))
        adopted = await asyncio.to_thread(self._adoptable, run) if adopt else {}
        for container in run.containers.values():
            work = self._supervise(run, container, adopted.get(container.name))
            run.supervisors.append(asyncio.create_task(work, name=f"{key}/{container.name}"))
        await asyncio.gather(*(c.first_start.wait() for c in run.containers.values()))

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        run = self.pods.get(key)
        states = []
        for spec in (pod.get("spec") or {}).get("containers") or []:
            container = run.containers.get(spec["name"]) if run else None
            states.append(self._state(run, container) if run and container else ContainerState(name=spec["name"]))
        return states

    async def start_ephemeral(self, key: str, pod: Object) -> None:
        """Ephemeral containers added to the running pod (`kubectl debug`): each run once in the pod's namespaces,
        never restarted, stopped with the pod."""
        run = self.pods.get(key)
        if run is None:
            return
        initial, cap = self.backoff
        for spec in (pod.get("spec") or {}).get("ephemeralContainers") or []:
            if spec["name"] in run.containers:
                continue
            c = Container(spec, Backoff(initial, cap), Backoff(initial, cap))
            run.containers[c.name] = c
            run.supervisors.append(asyncio.create_task(self._run_ephemeral(run, c), name=f"{key}/{c.name}"))

    async def _run_ephemeral(self, run: Pod, c: Container) -> None:
        try:
            await run.volumes_ready.wait()
            while await self._run_once(run, c) is None and c.waiting_reason == CONFIG_ERROR:
                await asyncio.sleep(CONFIG_RETRY)  # its sources may come; a failed pull stays failed
            c.done = True
            self._changed(run)
        except Exception:
            log.exception("pod %s: ephemeral container %s failed", run.key, c.name)
        finally:
            c.first_start.set()

    def ephemeral_containers(self, key: str, pod: Object) -> list[ContainerState]:
        run = self.pods.get(key)
        if run is None:
            return []
        specs = (pod.get("spec") or {}).get("ephemeralContainers") or []
        return [self._state(run, run.containers[s["name"]]) for s in specs if s["name"] in run.containers]

    def phase(self, key: str, pod: Object) -> str:
        """The pod phase the agent should report (Pending, Running, Succeeded, Failed)."""
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        return pod_phase(self.containers(key, pod), policy)

    def usage(self, key: str, pod: Object) -> dict[str, ContainerUsage]:
        """What each running container's process group uses: CPU time (with that of the children its processes
        reaped) and resident memory, read from /proc."""
        run = self.pods.get(key)
        if run is None:
            return {}
        if time.time() - self._groups[0] > USAGE_FRESHNESS:
            self._groups = (time.time(), group_usage())
        scanned, groups = self._groups
        found = {}
        for c in run.containers.values():
            started = parse_time(c.running_since) if c.pid and c.running_since else None
            if started is None:
                continue
            cpu, memory = groups.get(c.pid, (0.0, 0))
            c.cpu_seconds = max(c.cpu_seconds, cpu)  # a process gone unreaped by the group takes its time along
            found[c.name] = ContainerUsage(c.cpu_seconds, memory, started.timestamp(), scanned)
        return found

    async def release(self, key: str) -> bool:
        """An ended pod keeps its namespace, and so its address, until it is deleted: its logs live beside it."""
        return False

    async def stop(self, key: str, grace_seconds: float) -> None:
        """As the kubelet kills a pod: each running container's preStop hook (the pod still serves and is probed
        meanwhile), then SIGTERM, and SIGKILL once what is left of the grace period (at least 2 s) is over."""
        run = self.pods.get(key)
        if run is None:
            return
        began = time.monotonic()
        await self._pre_stop(run, grace_seconds)
        if self.pods.pop(key, None) is None:
            return  # stopped meanwhile
        for task in run.supervisors:
            task.cancel()
        await asyncio.gather(*run.supervisors, return_exceptions=True)
        await self._terminate(run, max(grace_seconds - (time.monotonic() - began), MINIMUM_GRACE))
        await asyncio.gather(*run.helpers, return_exceptions=True)  # log relays end with their processes
        await self._detach(run)
        shutil.rmtree(run.log_dir, ignore_errors=True)
        remove_memory(run.pod)

    async def _detach(self, run: Pod) -> None:
        """Remove the pod's namespace and veth (a `hostNetwork` pod has none: the node's stay)."""
        if run.net.netns != self.node.netns:
            await asyncio.to_thread(sandbox.detach_pod, self.node, run.net)

    async def _pre_stop(self, run: Pod, grace_seconds: float) -> None:
        """The running containers' preStop hooks, at once, for at most the grace period."""
        hooks = [
            (c, hook)
            for c in run.containers.values()
            if c.process is not None and (hook := (c.spec.get("lifecycle") or {}).get("preStop"))
        ]
        if not hooks:
            return

        async def one(c: Container, hook: Object) -> None:
            outcome = await run_hook(hook, self._target(run, c, c.env or {"PATH": DEFAULT_PATH}))
            if not outcome.ok:
                log.info("%s: preStop hook of %s failed: %s", run.key, c.name, outcome.message)
                self.on_event(run.key, "Warning", "FailedPreStopHook", outcome.message)

        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_seconds):
                await asyncio.gather(*(one(c, hook) for c, hook in hooks))

    async def close(self, grace_seconds: float = 2.0) -> None:
        """The agent goes away, its sandbox with it (a node shutting down): end every container, recording how each
        run ended in its pod's `state.json`, whose logs stay for the next agent."""
        await asyncio.gather(*(self._shut_down(key, grace_seconds) for key in list(self.pods)))

    async def _shut_down(self, key: str, grace_seconds: float) -> None:
        run = self.pods.pop(key, None)
        if run is None:  # stopped meanwhile
            return
        for task in run.supervisors:
            task.cancel()
        await asyncio.gather(*run.supervisors, return_exceptions=True)
        running = [c for c in run.containers.values() if c.process is not None]
        await self._terminate(run, grace_seconds)
        for c in running:
            assert c.process is not None
            finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": self._container_id(run, c)}
            c.ended({**_exit_record(c.process), **finished})
        self._save(run)
        await asyncio.gather(*run.helpers, return_exceptions=True)
        await self._detach(run)
        remove_memory(run.pod)  # as a node's memory is after it shut down

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        """Remove what an earlier agent left of pods this node no longer runs: the namespaces, with whatever runs
        there, of pods deleted (or being deleted) or ended meanwhile (upstream removes an ended pod's sandbox), and
        the log directories of pods deleted. `pods` are all the node's pods."""
        keep_dirs, keep_netns = set(), {run.net.netns for run in self.pods.values()}
        for pod in pods:
            meta = pod["metadata"]
            keep_dirs.add(_log_dir_name(pod))
            ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if not ended and not meta.get("deletionTimestamp"):
                keep_netns.add(self.node.pod(f"{meta.get('namespace') or 'default'}/{meta['name']}", "").netns)
        keep_dirs.update(run.log_dir.name for run in self.pods.values())
        left = [name for name in netns.list_netns(f"{self.node.netns}.") if name not in keep_netns]
        for name in left:
            await asyncio.to_thread(netns.delete, name)  # its veth (and the node's route to it) go with it
        if self.log_dir.is_dir():
            for directory in self.log_dir.iterdir():
                if directory.is_dir() and directory.name not in keep_dirs:
                    shutil.rmtree(directory, ignore_errors=True)
                    uid = directory.name.rsplit("_", 1)[-1]
                    if uid:
                        remove_memory({"metadata": {"name": "", "uid": uid}})
        if left:
            log.info("node %s: removed %d namespace(s) of pods deleted meanwhile", self.node.name, len(left))
        return left

    # Logs

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
        """A container's log, as the kubelet's `containerLogs` serves it. Errors (unknown pod or container, no
        previous run, not started yet) raise here, before anything is streamed."""
        run = self.pods.get(key)
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

    # Streams: exec, attach, port-forward

    def _running(self, key: str, container: str) -> Container:
        run = self.pods.get(key)
        if run is None:
            raise CommandError(f'pod "{key}" not found')
        found = run.containers.get(container)
        if found is None:
            raise CommandError(f'container "{container}" in pod "{run.name}" not found')
        if found.process is None or not found.pid:
            raise CommandError(f'container "{container}" in pod "{run.name}" is not running')
        return found

    async def exec(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        """The command in the running container's namespaces (network, mount, UTS; its root and working
        directory) with its environment."""
        c = self._running(key, request.container)
        env = dict(c.env) or {"PATH": DEFAULT_PATH}
        if request.tty:
            env.setdefault("TERM", "xterm")
        problem = missing_executable(request.command[0], env.get("PATH", DEFAULT_PATH), "/")
        if problem:  # as runc words it, before anything starts
            raise CommandError(f"failed to exec in container: unable to start container process: {problem}: unknown")
        inside = ["nsenter", "-t", str(c.pid), "-m", "-u", "-n", "-r", "-w"]
        return await container_io.run_command([*inside, *request.command], env, request.tty, streams)

    async def attach(self, key: str, request: CommandRequest, streams: CommandStreams) -> int:
        """The running container's console: its output from now on, and its stdin when it keeps one open."""
        c = self._running(key, request.container)
        if c.console is None:
            raise CommandError(f'container "{request.container}" has no console to attach to')
        return await container_io.attach(c.console, streams, c.run_over)

    async def dial(self, key: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to `localhost:port` inside the pod's network namespace, as a runtime's port-forward."""
        run = self.pods.get(key)
        if run is None:
            raise OSError(f'pod "{key}" not found')
        sock = await asyncio.to_thread(netns.socket_in, run.net.netns)
        try:
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        except OSError as err:
            sock.close()
            why = os.strerror(err.errno).lower() if err.errno else str(err)
            raise OSError(
                f'failed to execute portforward in network namespace "{netns.NETNS_RUN / run.net.netns}": failed to '
                f'connect to localhost:{port} inside namespace "{run.net.netns}", IPv4: dial tcp4 127.0.0.1:{port}: '
                f"connect: {why}"
            ) from None
        return await asyncio.open_connection(sock=sock)

    # Containers

    def _with_addresses(self, pod: Object, ip: str) -> Object:
        status = {**(pod.get("status") or {}), "podIP": ip, "podIPs": [{"ip": ip}]}
        status.update(hostIP=self.node.ip, hostIPs=[{"ip": self.node.ip}])
        return {**pod, "status": status}

    def _pod_logs(self, pod: Object) -> Path:
        directory = self.log_dir / _log_dir_name(pod)
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _containers(self, pod: Object, saved: Object, directory: Path) -> dict[str, Container]:
        initial, cap = self.backoff
        specs = (pod.get("spec") or {}).get("containers") or []
        made = {spec["name"]: Container(spec, Backoff(initial, cap), Backoff(initial, cap)) for spec in specs}
        for name, container in made.items():
            if name in (saved.get("containers") or {}):
                container.restore(saved["containers"][name], directory)
        return made

    # Restarts

    def _save(self, run: Pod) -> None:
        """The pod's `state.json`, for the next agent."""
        state = {"ip": run.net.ip, "containers": {c.name: c.saved() for c in run.containers.values()}}
        try:
            adoption.save_state(run.log_dir, state)
        except OSError as err:
            log.warning("pod %s: cannot save its state: %s", run.key, err)

    def _adoptable(self, run: Pod) -> dict[str, Adopted]:
        """The containers whose processes an earlier agent left running (`adoption.adopt`)."""
        running = {c.name: (c.pid, c.started) for c in run.containers.values() if c.running_since}
        found = adoption.adopt(run.net.netns, running)
        if found:
            log.info("pod %s: adopted running container(s) %s", run.key, ", ".join(sorted(found)))
        return found

    def _state(self, run: Pod, c: Container) -> ContainerState:
        return c.state(self._container_id(run, c))

    def _container_id(self, run: Pod, c: Container) -> str:
        """The current run's ID (each run is a new container upstream, so a restart gets a new one)."""
        uid = run.pod["metadata"].get("uid") or run.key
        return f"tinykube://{sandbox.short_hash(f'{uid}/{c.name}/{c.restart_count}', 32)}"

    def _changed(self, run: Pod) -> None:
        if self.pods.get(run.key) is run:  # not once it is being stopped (its log directory goes)
            self._save(run)
        self.on_change(run.key)

    async def _supervise(self, run: Pod, c: Container, adopted: Adopted | None = None) -> None:
        """Run the container, restarting it by the pod's policy, until the pod stops (first following where an
        earlier agent left it)."""
        try:
            record = await self._resume(run, c, adopted)
            if record is not None:
                if not should_restart(run.policy, record["exitCode"]):
                    c.done = True
                    self._changed(run)
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
                if record is not None and not should_restart(run.policy, record["exitCode"]):
                    c.done = True
                    self._changed(run)
                    return
                delay = c.backoff.next_delay(asyncio.get_running_loop().time())
                if delay:
                    if record is not None:
                        c.wait("CrashLoopBackOff", back_off_message(delay, c.name, run.pod))
                        self.on_event(run.key, *back_off_event(c.name, run.pod))
                    self._changed(run)
                    await asyncio.sleep(delay)
                if record is not None:
                    c.restart_count += 1
        except Exception:
            log.exception("pod %s: container %s: supervisor failed", run.key, c.name)
        finally:
            c.first_start.set()

    async def _sync_volumes(self, run: Pod, volumes: PodVolumes) -> None:
        """Set the pod's volumes up (its containers wait until then: `FailedMount` events while a source is
        missing), then keep them in sync: ConfigMap and Secret changes, tokens renewed."""
        reported = ""
        while True:
            try:
                run.volumes = await volumes.sync()
                run.volumes_ready.set()
                reported = ""
            except MountError as err:
                if str(err) != reported:  # once per cause, as upstream's events are aggregated anyway
                    self.on_event(run.key, "Warning", "FailedMount", str(err))
                    reported = str(err)
            except OSError as err:
                log.warning("pod %s: volumes: %s", run.key, err)
            # a missing source is looked for again soon (a namespace's kube-root-ca.crt comes a moment after it)
            await asyncio.sleep(VOLUME_SYNC if run.volumes_ready.is_set() and not reported else VOLUME_RETRY)

    async def _pull_backoff(self, run: Pod, c: Container) -> None:
        """After a failed pull, as upstream's kubelet: `ErrImagePull` until the pod worker's retry (the back-off's
        first period), then `ImagePullBackOff` for the image's back-off (that period doubling up to the cap)."""
        initial, _ = self.backoff
        await asyncio.sleep(initial)
        delay = max(initial, c.pull_backoff.next_delay(asyncio.get_running_loop().time()))
        c.wait(PULL_BACKOFF, f'Back-off pulling image "{c.spec.get("image") or ""}"')
        self.on_event(run.key, "Normal", "BackOff", c.waiting_message)
        self.on_event(run.key, "Warning", "Failed", f"Error: {PULL_BACKOFF}")
        self._changed(run)
        await asyncio.sleep(delay)

    async def _resume(self, run: Pod, c: Container, adopted: Adopted | None) -> Object | None:
        """Where an earlier agent left the container: an adopted run followed to its end, or the record of a run
        that ended (its process found gone, or it was waiting to restart); None: start afresh, or stay done."""
        if adopted is not None:
            return await self._follow(run, c, adopted)
        if c.running_since:  # it ran; its process is gone (with the pod's namespace, or it ended meanwhile)
            record = dict(adoption.UNKNOWN_EXIT)
            finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": self._container_id(run, c)}
            c.ended({**record, **finished})
            self._changed(run)
            return record
        if not c.done and c.finished is not None and c.waiting_reason in RESTARTABLE:
            return c.finished
        return None

    async def _follow(self, run: Pod, c: Container, process: Adopted) -> Object:
        """An adopted container's run: its output relayed again, its probes resumed, followed to its end."""
        c.process = process
        c.first_start.set()
        if c.log_path is None:
            (run.log_dir / c.name).mkdir(parents=True, exist_ok=True)
            c.log_path = run.log_dir / c.name / f"{c.restart_count}.log"
        pipes = [await container_logs.open_pipe(fd) for fd in adoption.reopen(process.pid, c.pipes)]
        c.console = container_io.ContainerConsole(None, False, False, False)  # its output; its stdin stayed behind
        relay = container_logs.relay(c.log_path, pipes, process.wait, c.run_over, c.console.tee)
        run.spawn(relay, f"{run.key}/{c.name} log")
        try:
            env = self._command(run, c, self._image(c), await self._sources(run, c))[1]  # for exec probes
        except StartFailure:
            env = {"PATH": DEFAULT_PATH}
        ran = datetime.now(UTC) - datetime.fromisoformat(c.running_since.replace("Z", "+00:00"))
        return await self._watch(run, c, process, env, ran.total_seconds())

    async def _run_once(self, run: Pod, c: Container) -> Object | None:
        """One run; returns its terminated record, or None when it could not be created (it stays waiting)."""
        try:
            image = self._image(c)  # pulled before anything else, as upstream (no log file while waiting)
        except StartFailure as failure:
            return self._failed_start(run, c, failure)
        self._rotate(run, c)
        try:
            argv, env, cwd = self._command(run, c, image, await self._sources(run, c))
            process = await self._spawn(run, c, argv, env, cwd)
        except StartFailure as failure:
            return self._failed_start(run, c, failure)
        c.process, c.running_since, c.env = process, now(), env
        c.ready = not c.spec.get("readinessProbe") and not c.spec.get("startupProbe")  # without probes: ready now
        c.first_start.set()
        for event in start_events(c.spec):
            self.on_event(run.key, *event)
        self._changed(run)
        return await self._watch(run, c, process, env)

    async def _watch(
        self, run: Pod, c: Container, process: asyncio.subprocess.Process | Adopted, env: dict[str, str], ran: float = 0
    ) -> Object:
        """Probe the running container (`ran` seconds so far) until its process ends; returns the run's record."""
        probes = self._probes(run, c, env, ran)
        try:
            await process.wait()
        finally:
            for task in probes:
                task.cancel()
            if c.console is not None:
                c.console.close()
        _end_leftovers(process.pid)
        record = _exit_record(process)
        finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": self._container_id(run, c)}
        c.ended({**record, **finished})
        self._changed(run)
        return record

    def _failed_start(self, run: Pod, c: Container, failure: StartFailure) -> Object | None:
        c.run_over.set()
        c.first_start.set()
        if failure.reason == PULL_FAILED:
            image = c.spec.get("image") or ""
            self.on_event(run.key, "Warning", "Failed", f'Failed to pull image "{image}": {failure.message}')
        shown = failure.reason if failure.waiting and failure.reason != CONFIG_ERROR else failure.message
        if not (failure.reason == CONFIG_ERROR and c.waiting_message == failure.message):  # not again each retry
            self.on_event(run.key, "Warning", "Failed", f"Error: {shown}")
        if failure.waiting:
            c.wait(failure.reason, failure.message)
            self._changed(run)
            return None
        record = {"exitCode": 128, "reason": "StartError", "message": failure.message}
        c.ended({**record, "startedAt": START_ERROR_AT, "finishedAt": now(), "containerID": self._container_id(run, c)})
        c.wait("RunContainerError", failure.message)
        self._changed(run)
        return record

    def _image(self, c: Container) -> images.Process:
        """What the container's image runs (see `tinykube.node.images`), before `$(VAR)` expansion."""
        command = [str(arg) for arg in c.spec.get("command") or []]
        args = [str(arg) for arg in c.spec.get("args") or []]
        try:
            return images.resolve(str(c.spec.get("image") or ""), command, args)
        except images.ImagePullError as err:
            raise StartFailure(PULL_FAILED, str(err), waiting=True) from None

    async def _sources(self, run: Pod, c: Container) -> Sources:
        try:
            return await container_sources(self.read_config, run.pod, c.spec, warner(self.on_event, run.key))
        except ConfigError as err:
            raise StartFailure(CONFIG_ERROR, str(err), waiting=True) from None

    def _command(
        self, run: Pod, c: Container, image: images.Process, sources: Sources
    ) -> tuple[list[str], dict[str, str], str]:
        """The argv (with `$(VAR)` expanded), environment and working directory of a run."""
        try:
            services = self.services(run.pod["metadata"].get("namespace") or "default")
            pairs = container_environment(run.pod, c.spec, services, sources)
        except ValueError as err:
            raise StartFailure(CONFIG_ERROR, str(err), waiting=True) from None
        name = self.node.name if host_network(run.pod) else podfiles.hostname(run.pod, self.cluster_domain)[0]
        env = {"PATH": DEFAULT_PATH, "HOME": "/root", "HOSTNAME": name, **dict(pairs), **image.env}
        argv = [expand(arg, env) for arg in image.argv]
        cwd = str(c.spec.get("workingDir") or "/")  # a container's default, rather than the agent's own
        under_volume = any(cwd.startswith(str(m.get("mountPath", "")).rstrip("/") + "/") or cwd == m.get("mountPath")
                           for m in c.spec.get("volumeMounts") or [])  # fmt: skip
        if not under_volume and not os.path.isdir(cwd):
            raise StartFailure("StartError", f'chdir to cwd ("{cwd}") set in config.json failed: no such directory')
        problem = missing_executable(argv[0], env["PATH"], "/" if under_volume else cwd)
        if problem:
            raise StartFailure("StartError", problem)
        return argv, env, cwd

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

    async def _spawn(
        self, run: Pod, c: Container, argv: list[str], env: dict[str, str], cwd: str
    ) -> asyncio.subprocess.Process:
        """Start a run. Its stdout and stderr are pipes whose read ends the container holds too (never reading
        them): a pipe with a reader never fails a write, so the container outlives this agent's death unharmed, and
        the next agent reopens the pipes through /proc (`_follow`). A container with `stdin: true` gets a stdin
        pipe kept open for `attach`, or with `tty: true` a pseudo-terminal for all three (the agent holds its
        master; such a run's console does not survive the agent)."""
        tty, keeps_stdin = bool(c.spec.get("tty")), bool(c.spec.get("stdin"))
        console_fd = stdin = -1
        if tty:
            console_fd, stdin = container_io.open_terminal()
            out_read, out_write, err_read, err_write = os.dup(console_fd), os.dup(stdin), -1, os.dup(stdin)
        else:
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            for fd in (out_write, err_write):
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
            if keeps_stdin:
                stdin, console_fd = os.pipe()
                os.set_blocking(console_fd, False)
        spec = run.log_dir / c.name / "container.json"
        spec.write_text(json.dumps({"mounts": self._mounts(run, c, env), "workingDir": cwd, "terminal": tty}))
        held = tuple(fd for fd in (out_read, err_read) if fd >= 0 and not tty)
        try:
            process = await asyncio.create_subprocess_exec(
                *netns.exec_argv(run.net.netns, [*CONTAINER_INIT, str(spec), "--", *argv]),
                env=env,
                cwd="/",
                stdin=stdin if stdin >= 0 else asyncio.subprocess.DEVNULL,
                stdout=out_write,
                stderr=err_write,
                pass_fds=held,  # the same numbers in the container
                start_new_session=True,  # its own process group, signalled as a whole
                preexec_fn=_own_hostname(env.get("HOSTNAME") or run.name),
            )
        except OSError as err:
            for fd in (out_read, err_read, console_fd):
                if fd >= 0:
                    os.close(fd)
            raise StartFailure("StartError", str(err)) from None
        finally:
            for fd in (out_write, err_write, stdin):
                if fd >= 0:
                    os.close(fd)
        c.pid, c.started = process.pid, adoption.start_time(process.pid)
        c.pipes = [(fd, os.fstat(fd).st_ino) for fd in held]
        once = bool(c.spec.get("stdinOnce"))
        c.console = container_io.ContainerConsole(console_fd if console_fd >= 0 else None, tty, keeps_stdin, once)
        assert c.log_path is not None
        pipes = [await container_logs.open_pipe(fd) for fd in (out_read, err_read) if fd >= 0]
        tee = c.console.tee if c.console is not None else None
        run.spawn(container_logs.relay(c.log_path, pipes, process.wait, c.run_over, tee), f"{run.key}/{c.name} log")
        return process

    def _probes(self, run: Pod, c: Container, env: dict[str, str], ran: float = 0) -> list[asyncio.Task[None]]:
        """The run's probers (fresh results each run, as upstream's workers): its startup probe first, if it has
        one, then readiness and liveness; an adopted run (`ran` seconds in) counts as started, its readiness
        starting where it was and its initial delays counted from its start."""
        target = self._target(run, c, env)

        def parse(probe: Object) -> ProbeSpec:
            spec = ProbeSpec.parse(probe)
            return dataclasses.replace(spec, initial_delay=max(0.0, spec.initial_delay - ran))

        def unhealthy(kind: str) -> Callable[[Outcome], None]:
            return lambda outcome: self.on_event(
                run.key, "Warning", "Unhealthy", f"{kind} probe failed: {outcome.message}"
            )

        async def probe() -> None:
            startup = c.spec.get("startupProbe")
            if startup and not ran and not await until_started(parse(startup), target, unhealthy("Startup")):
                self.on_event(
                    run.key, "Normal", "Killing", f"Container {c.name} failed startup probe, will be restarted"
                )
                if c.process is not None:
                    await _kill_group(c.process, run.grace)
                return
            c.startup_passed = True
            c.ready = c.ready or not c.spec.get("readinessProbe")  # without a readiness probe: ready once started
            self._changed(run)
            probers = []
            if c.spec.get("readinessProbe"):
                results = ProbeResults(c.ready)  # False for a new run that has a probe
                probers.append(run_prober(parse(c.spec["readinessProbe"]), target, results,
                                          lambda ok, _: self._ready(run, c, ok), unhealthy("Readiness")))  # fmt: skip
            if c.spec.get("livenessProbe"):
                live = parse(c.spec["livenessProbe"])
                grace = run.grace if live.grace is None else live.grace

                def alive(ok: bool, why: Outcome, grace: float = grace) -> None:
                    self._alive(run, c, ok, why, grace)

                probers.append(run_prober(live, target, ProbeResults(True), alive, unhealthy("Liveness")))
            await asyncio.gather(*probers)

        return [asyncio.get_running_loop().create_task(probe(), name=f"{run.key}/{c.name} probes")]

    def _mounts(self, run: Pod, c: Container, env: dict[str, str]) -> list[Object]:
        """What `containerinit` binds for the container: each `volumeMount` (its `subPath`, made if missing)."""
        mounts = []
        for mount in c.spec.get("volumeMounts") or []:
            source = run.volumes.get(str(mount.get("name")))
            if source is None:
                raise StartFailure("CreateContainerConfigError", f'cannot find volume "{mount.get("name")}" to mount')
            sub_path = mount.get("subPath") or expand(str(mount.get("subPathExpr") or ""), env)
            if sub_path:
                source = source / sub_path
                if not source.exists():
                    source.mkdir(parents=True)
            mounts.append(
                {"source": str(source), "target": mount["mountPath"], "readOnly": bool(mount.get("readOnly"))}
            )
        return mounts

    def _target(self, run: Pod, c: Container, env: dict[str, str]) -> Target:
        """Where the container's probes and hooks go: its pod's address from the node, its commands into the running
        container's namespaces (its network, hostname and filesystem with its volumes)."""
        ports = {p["name"]: int(p["containerPort"]) for p in c.spec.get("ports") or [] if p.get("name")}
        inside = ["nsenter", "-t", str(c.pid), "-m", "-u", "-n", "-r", "-w"] if c.pid else None
        return Target(run.net.ip, self.node.netns, inside or netns.exec_argv(run.net.netns, []), env, ports)

    def _ready(self, run: Pod, c: Container, ok: bool) -> None:
        if c.running_since and c.ready != ok:
            c.ready = ok
            self._changed(run)

    def _alive(self, run: Pod, c: Container, ok: bool, outcome: Outcome, grace: float) -> None:
        """A failed liveness probe kills the container; its supervisor restarts it by the pod's policy."""
        if ok or c.process is None:
            return
        log.info("pod %s: container %s failed liveness (%s), killing it", run.key, c.name, outcome.message)
        message = f"Container {c.name} failed liveness probe, will be restarted"
        self.on_event(run.key, "Normal", "Killing", message)
        run.spawn(_kill_group(c.process, grace), f"{run.key}/{c.name} kill")

    async def _terminate(self, run: Pod, grace: float) -> None:
        """SIGTERM every container's process group, SIGKILL after the grace period; then SIGKILL whatever else
        still runs in the pod's namespace (a process that left its group)."""
        processes = [c.process for c in run.containers.values() if c.process is not None]
        await asyncio.gather(*(_kill_group(p, grace) for p in processes))
        if run.net.netns != self.node.netns:  # the node's own namespace holds more than this pod
            await asyncio.to_thread(netns.kill_all, run.net.netns, signal.SIGKILL)


async def _no_tokens(_pod: Object, _projection: Object) -> Object:
    raise RuntimeError("this runtime has no API to request tokens from")


def _host_resolv() -> str:
    """The node's resolver configuration (a `dnsPolicy: Default` pod's), the host's own."""
    try:
        return Path("/etc/resolv.conf").read_text()
    except OSError:
        return ""


def _own_hostname(name: str) -> Callable[[], None]:
    """Run in the container's process before it execs: a UTS namespace of its own, named as the pod."""
    encoded = name.encode()

    def enter() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUTS) != 0 or libc.sethostname(encoded, len(encoded)) != 0:
            raise OSError(ctypes.get_errno(), "cannot give the container its hostname")

    return enter


def group_usage() -> dict[int, tuple[float, int]]:
    """Per process group: the CPU seconds of its processes (their reaped children's included) and their resident
    bytes, from one pass over /proc."""
    groups: dict[int, tuple[float, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:  # the fields after the command, state first: pgrp, utime..cstime and rss at 2, 11-14 and 21
            fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            pgid, ticks, pages = int(fields[2]), sum(int(f) for f in fields[11:15]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        cpu, memory = groups.get(pgid, (0.0, 0))
        groups[pgid] = (cpu + ticks / _TICKS, memory + pages * _PAGE)
    return groups


def _end_leftovers(pgid: int) -> None:
    """Kill what a finished run left in its process group, as a container's processes die with its PID 1: else
    a restarted container would find its predecessor's children (and the ports they hold) still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


async def _kill_group(process: asyncio.subprocess.Process | Adopted, grace: float) -> None:
    """SIGTERM the process group, SIGKILL it if the leader outlives `grace`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
        grace = 5.0  # after SIGKILL: only a wedged kernel call keeps it


def _exit_record(process: asyncio.subprocess.Process | Adopted) -> Object:
    if process.returncode is None or (isinstance(process, Adopted) and not process.known):
        return dict(adoption.UNKNOWN_EXIT)
    code = exit_code(process.returncode)
    return {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}


def _log_dir_name(pod: Object) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}_{meta['name']}_{meta.get('uid', '')}"
