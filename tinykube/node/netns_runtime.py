"""The `netns` runtime: each pod is a network namespace attached to its node's namespace, each container its
`command` + `args` run as a host process inside it (`ip netns exec`), supervised as the kubelet supervises
containers.

`NetnsRuntime` is the composition of its parts, one job each, as a kubelet sits on a CRI runtime:
- `PodSandboxes` (`tinykube.node.pod_sandbox`): the pod's namespace, veth, address, `resolv.conf` and `hosts`;
- `ContainerProcesses` (`tinykube.node.container_processes`): a container's processes (start, signal, wait, exec,
  usage, adoption); `HostProcesses` by default, where an OCI runtime can take its place;
- `RunConfig` (`tinykube.node.container_config`): what a run runs (image, command, environment, mounts);
- `Supervisor` (`tinykube.node.supervisor`) and `ContainerProbes` (`tinykube.node.container_probes`): runs,
  restarts and back-offs; probes and hooks;
- `PodVolumes` (`tinykube.node.podvolumes`): the pod's volumes, kept in sync;
- `tinykube.node.adoption`: what outlives an agent (`state.json`, the processes and pipes it adopts);
- `tinykube.node.netns_status`: container states, phase, usage and logs.

Output goes through a relay that writes CRI log files (`<time> stdout F <line>`), one per run as the kubelet's
`<restartCount>.log`, so `logs()` can honour timestamps and `previous` (`container_logs`).

Restarts. An agent started again over the same sandbox and log directory adopts each pod an earlier agent left
running (`tinykube.node.adoption`: the pod's `state.json`, its namespace, its containers' processes and pipes) and
resumes its containers' logs and probes: the reported status does not change. `close()` (the agent going away
cleanly, its sandbox with it) ends every container and records how each run ended; the next agent starts them again
as upstream's kubelet restarts the containers it finds gone: by the pod's `restartPolicy`, `restartCount` + 1, the
ended run as `lastState`.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from tinykube.api.meta import now
from tinykube.api.resource_metrics import ContainerUsage
from tinykube.node import adoption, container_io, netns_status
from tinykube.node.container_config import RunConfig
from tinykube.node.container_probes import ContainerProbes
from tinykube.node.container_processes import DEFAULT_PATH, ContainerProcesses, HostProcesses, Process
from tinykube.node.containers import Backoff, Container, Pod, init_policy
from tinykube.node.pod_sandbox import PodSandboxes
from tinykube.node.podvolumes import PodVolumes, remove_memory
from tinykube.node.runtime import RuntimeHost
from tinykube.node.status import ContainerState, PodContainers
from tinykube.node.supervisor import Supervisor
from tinykube.sandbox import topology
from tinykube.streams.remotecommand import CommandError, CommandRequest, CommandStreams

log = logging.getLogger(__name__)

Object = dict[str, Any]
INITIALIZING = "PodInitializing"  # what a container waits for while the pod's init containers run
SIDECAR_POLL = 0.1  # seconds between looks at whether a sidecar has started
MINIMUM_GRACE = 2.0  # seconds a container gets after SIGTERM however little of its grace period is left (upstream's)


class NetnsRuntime:
    """Runs the pods of one node of a sandbox (see the module docstring); `services(namespace)` are the Services
    a pod's environment variables name, `processes` what runs its containers."""

    def __init__(
        self,
        node: topology.NodeNet,
        log_dir: Path,
        services: Callable[[str], list[Object]],
        *,
        host: RuntimeHost,
        processes: ContainerProcesses | None = None,
        dns_ip: str = "10.96.0.10",
        cluster_domain: str = "cluster.local",
        backoff: tuple[float, float] = (10.0, 300.0),
    ) -> None:
        self.host = host
        self.node = node
        self.log_dir = log_dir
        self.backoff = backoff
        self.processes: ContainerProcesses = processes if processes is not None else HostProcesses()
        self.sandboxes = PodSandboxes(node, dns_ip=dns_ip, cluster_domain=cluster_domain)
        self.config = RunConfig(host, node_name=node.name, services=services, cluster_domain=cluster_domain)
        self.probes = ContainerProbes(host, self.processes, node_netns=node.netns, changed=self._changed)
        self.supervisor = Supervisor(
            host, self.processes, config=self.config, probes=self.probes, changed=self._changed, backoff=backoff
        )
        self.meter = netns_status.UsageMeter(self.processes)
        self.pods: dict[str, Pod] = {}
        self.stopping: dict[str, Pod] = {}  # pods being stopped, by key

    # The Runtime protocol

    async def start(self, key: str, pod: Object, ip: str) -> None:
        """Start the pod; or, if an earlier agent left it (`state.json` in its log directory, for this IP), adopt
        its namespace and the processes still running there, and restart by policy the containers found gone. A
        `hostNetwork` pod runs in the node's own namespace, with the node's address."""
        if key in self.pods:
            return
        net = self.sandboxes.net(key, pod, ip)
        started = self.sandboxes.with_addresses(pod, net.ip)
        log_dir = self._pod_logs(started)
        saved = adoption.load_state(log_dir, net.ip)
        adopt = bool(saved) and await self.sandboxes.intact(net)
        if not adopt:
            await self.sandboxes.make(started, net, ip)
        run = Pod(key, started, net, log_dir, self._containers(started, saved, log_dir))
        self.pods[key] = run
        volumes = PodVolumes(started, log_dir / "volumes", self.host.read_config, self.host.request_token)
        synced = volumes.keep_synced(key, lambda paths: self._mounted(run, paths), self.host.on_event)
        run.supervisors.append(asyncio.create_task(synced, name=f"{key} volumes"))
        adopted = await self._adoptable(run) if adopt else {}
        inits = [run.containers[c["name"]] for c in (started.get("spec") or {}).get("initContainers") or []]
        run.supervisors.append(asyncio.create_task(self._run_pod(run, adopted), name=f"{key} containers"))
        pending = [c for c in inits if not c.done][:1] or [c for c in run.containers.values() if c not in inits]
        await asyncio.gather(*(c.first_start.wait() for c in pending))  # the first init container, not all of them

    async def _run_pod(self, run: Pod, adopted: dict[str, Process]) -> None:
        """The pod's init containers in order, each to its end (a sidecar, `restartPolicy: Always`, only until it has
        started: it goes on running beside the others); then its containers. An init container that fails for good
        (the pod's policy is Never) leaves them never started. Once the containers have ended for good, the sidecars
        are stopped, as the kubelet stops them."""
        spec = run.pod.get("spec") or {}
        sidecars = []
        for init in spec.get("initContainers") or []:
            c, policy = run.containers[init["name"]], init_policy(run.policy, init)
            if policy == "Always":
                work = self.supervisor.supervise(run, c, adopted.get(c.name), policy=policy)
                sidecars.append(asyncio.create_task(work, name=f"{run.key}/{c.name}"))
                while not c.running_since:  # a sidecar counts as done once it has started
                    await asyncio.sleep(SIDECAR_POLL)
                continue
            if not c.done:
                await self.supervisor.supervise(run, c, adopted.get(c.name), policy=policy)
            if not (c.done and (c.finished or {}).get("exitCode") == 0):
                return  # failed for good: the pod fails, its containers never start
        apps = [run.containers[c["name"]] for c in spec.get("containers") or []]
        initialized = [c for c in apps if c.waiting_reason == INITIALIZING]
        for c in initialized:
            c.wait("ContainerCreating")
        if initialized:
            self._changed(run)
        supervised = [self.supervisor.supervise(run, c, adopted.get(c.name)) for c in apps]
        await asyncio.gather(*supervised)
        if sidecars and all(c.done for c in apps):
            await self._end_sidecars(run, sidecars)

    async def _end_sidecars(self, run: Pod, tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sidecars = [c for c in run.containers.values() if c.spec.get("restartPolicy") == "Always"]
        await self._end(run, [c for c in sidecars if c.process is not None], run.grace)
        for c in sidecars:
            c.done = True
        self._changed(run)

    async def _end(self, run: Pod, running: list[Container], grace: float) -> None:
        """Stop these containers' processes (SIGTERM, SIGKILL after `grace`), recording how each run ended."""
        processes = [c.process for c in running if c.process is not None]
        await asyncio.gather(*(self.processes.stop(p, grace) for p in processes))
        for c in running:
            if c.process is not None:
                finished = {"startedAt": c.running_since, "finishedAt": now(), "containerID": run.container_id(c)}
                c.ended({**self.processes.record(c.process), **finished})

    def containers(self, key: str, pod: Object) -> list[ContainerState]:
        return netns_status.container_states(self._pod(key), pod)

    def init_containers(self, key: str, pod: Object) -> list[ContainerState]:
        return netns_status.container_states(self._pod(key), pod, "initContainers")

    def _pod(self, key: str) -> Pod | None:
        """The pod, also while it is being stopped (its status still shows what runs)."""
        return self.pods.get(key) or self.stopping.get(key)

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
            work = self.supervisor.run_ephemeral(run, c)
            run.supervisors.append(asyncio.create_task(work, name=f"{key}/{c.name}"))

    def ephemeral_containers(self, key: str, pod: Object) -> list[ContainerState]:
        return netns_status.ephemeral_states(self.pods.get(key), pod)

    def phase(self, key: str, pod: Object) -> str:
        """The pod phase the agent should report (Pending, Running, Succeeded, Failed)."""
        return netns_status.phase(self._pod(key), pod)

    def usage(self, key: str, pod: Object) -> dict[str, ContainerUsage]:
        """What each running container's process group uses: CPU time (with that of the children its processes
        reaped) and resident memory, read from /proc."""
        return self.meter.usage(self.pods.get(key))

    async def release(self, key: str) -> bool:
        """An ended pod keeps its namespace, and so its address, until it is deleted: its logs live beside it."""
        return False

    async def stop(self, key: str, grace_seconds: float, pod: Object | None = None) -> PodContainers:
        """As the kubelet kills a pod: each running container's preStop hook (the pod still serves and is probed
        meanwhile), then SIGTERM, and SIGKILL once what is left of the grace period (at least 2 s) is over. Returns
        how its containers ended (143 for a SIGTERM, 137 for a SIGKILL, as a runtime reports them)."""
        run = self.pods.get(key)
        if run is None:
            return PodContainers()
        began = time.monotonic()
        await self.probes.pre_stop(run, grace_seconds)
        if self.pods.pop(key, None) is None:
            return PodContainers()  # stopped meanwhile
        self.stopping[key] = run
        try:
            for task in run.supervisors:
                task.cancel()
            await asyncio.gather(*run.supervisors, return_exceptions=True)
            running = [c for c in run.containers.values() if c.process is not None]
            await self._end(run, running, max(grace_seconds - (time.monotonic() - began), MINIMUM_GRACE))
            await self.sandboxes.kill_all(run.net, signal.SIGKILL)  # whatever left its group
            for c in run.containers.values():
                c.done = c.done or c.finished is not None
            shown = pod or run.pod
            stopped = PodContainers(self.init_containers(key, shown), self.containers(key, shown))
            await asyncio.gather(*run.helpers, return_exceptions=True)  # log relays end with their processes
            await self.sandboxes.remove(run.net)
            shutil.rmtree(run.log_dir, ignore_errors=True)
            remove_memory(run.pod)
        finally:
            self.stopping.pop(key, None)
        return stopped

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
        await self._end(run, [c for c in run.containers.values() if c.process is not None], grace_seconds)
        await self.sandboxes.kill_all(run.net, signal.SIGKILL)
        adoption.save(run.log_dir, run.key, run.saved())
        await asyncio.gather(*run.helpers, return_exceptions=True)
        await self.sandboxes.remove(run.net)
        remove_memory(run.pod)  # as a node's memory is after it shut down

    async def prune(self, pods: Iterable[Object]) -> list[str]:
        """Remove what an earlier agent left of pods this node no longer runs: the namespaces, with whatever runs
        there, of pods deleted (or being deleted) or ended meanwhile (upstream removes an ended pod's sandbox), and
        the log directories of pods deleted. `pods` are all the node's pods."""
        keep_dirs, keep_pods = set(), set(self.pods)
        for pod in pods:
            meta = pod["metadata"]
            keep_dirs.add(adoption.log_dir_name(pod))
            ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if not ended and not meta.get("deletionTimestamp"):
                keep_pods.add(f"{meta.get('namespace') or 'default'}/{meta['name']}")
        keep_dirs.update(run.log_dir.name for run in self.pods.values())
        left = await self.sandboxes.prune(keep_pods)
        adoption.prune_logs(self.log_dir, keep_dirs)
        if left:
            log.info("node %s: removed %d namespace(s) of pods deleted meanwhile", self.node.name, len(left))
        return left

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
        """A container's log, as the kubelet's `containerLogs` serves it (`netns_status.logs`)."""
        return netns_status.logs(
            self.pods.get(key),
            key,
            container,
            follow=follow,
            tail_lines=tail_lines,
            timestamps=timestamps,
            previous=previous,
            since_time=since_time,
            limit_bytes=limit_bytes,
        )

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
        return await self.processes.exec(c.pid, list(request.command), env, request.tty, streams)

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
        return await self.sandboxes.dial(run.net, port)

    # The parts' wiring

    def _pod_logs(self, pod: Object) -> Path:
        directory = self.log_dir / adoption.log_dir_name(pod)
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _containers(self, pod: Object, saved: Object, directory: Path) -> dict[str, Container]:
        """The pod's init containers and containers, by name (waiting for the init containers to be done first)."""
        initial, cap = self.backoff
        pod_spec = pod.get("spec") or {}
        specs = [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]
        made = {spec["name"]: Container(spec, Backoff(initial, cap), Backoff(initial, cap)) for spec in specs}
        for name, container in made.items():
            if pod_spec.get("initContainers"):
                container.wait(INITIALIZING)
            if name in (saved.get("containers") or {}):
                container.restore(saved["containers"][name], directory)
        return made

    def _mounted(self, run: Pod, paths: dict[str, Path]) -> None:
        run.volumes = paths
        run.volumes_ready.set()

    async def _adoptable(self, run: Pod) -> dict[str, Process]:
        """The containers whose processes an earlier agent left running (`ContainerProcesses.adopt`)."""
        running = {c.name: (c.pid, c.started) for c in run.containers.values() if c.running_since}
        found = await self.processes.adopt(run.net.netns, running)
        if found:
            log.info("pod %s: adopted running container(s) %s", run.key, ", ".join(sorted(found)))
        return found

    def _changed(self, run: Pod) -> None:
        if self.pods.get(run.key) is run:  # not once it is being stopped (its log directory goes)
            adoption.save(run.log_dir, run.key, run.saved())
        self.host.on_change(run.key)
