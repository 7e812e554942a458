"""The probes and hooks of a netns pod's running containers, wired as the kubelet's prober manager wires them: per
run, a startup probe first, then readiness and liveness (`tinykube.node.probes` runs each); a failed startup or
liveness probe kills the run, whose supervisor restarts it by the pod's policy. The preStop hooks of a pod being
stopped run here too (`tinykube.node.lifecycle`), at the same place the probes reach the container.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from tinykube.node.container_processes import DEFAULT_PATH, ContainerProcesses
from tinykube.node.containers import Container, Pod
from tinykube.node.lifecycle import run_hook
from tinykube.node.probes import Outcome, ProbeResults, ProbeSpec, Target, run_prober, until_started
from tinykube.node.runtime import RuntimeHost

log = logging.getLogger(__name__)

Object = dict[str, Any]


class ContainerProbes:
    """Probes the containers of one node (`node_netns`: the namespace its probes are sent from); `changed(pod)`
    reports a container's readiness or start."""

    def __init__(
        self, host: RuntimeHost, processes: ContainerProcesses, *, node_netns: str, changed: Callable[[Pod], None]
    ) -> None:
        self.host = host
        self.processes = processes
        self.node_netns = node_netns
        self.changed = changed

    def target(self, run: Pod, c: Container, env: dict[str, str]) -> Target:
        """Where the container's probes and hooks go: its pod's address from the node, its commands into the running
        container's namespaces (its network, hostname and filesystem with its volumes)."""
        ports = {p["name"]: int(p["containerPort"]) for p in c.spec.get("ports") or [] if p.get("name")}
        return Target(run.net.ip, self.node_netns, self.processes.enter(run.net.netns, c.pid), env, ports)

    def start(self, run: Pod, c: Container, env: dict[str, str], ran: float = 0) -> list[asyncio.Task[None]]:
        """The run's probers (fresh results each run, as upstream's workers): its startup probe first, if it has
        one, then readiness and liveness; an adopted run (`ran` seconds in) counts as started, its readiness
        starting where it was and its initial delays counted from its start."""
        target = self.target(run, c, env)

        def parse(probe: Object) -> ProbeSpec:
            spec = ProbeSpec.parse(probe)
            return dataclasses.replace(spec, initial_delay=max(0.0, spec.initial_delay - ran))

        def unhealthy(kind: str) -> Callable[[Outcome], None]:
            return lambda outcome: self.host.on_event(
                run.key, "Warning", "Unhealthy", f"{kind} probe failed: {outcome.message}"
            )

        async def probe() -> None:
            startup = c.spec.get("startupProbe")
            if startup and not ran and not await until_started(parse(startup), target, unhealthy("Startup")):
                self.host.on_event(
                    run.key, "Normal", "Killing", f"Container {c.name} failed startup probe, will be restarted"
                )
                if c.process is not None:
                    await self.processes.stop(c.process, run.grace)
                return
            c.startup_passed = True
            c.ready = c.ready or not c.spec.get("readinessProbe")  # without a readiness probe: ready once started
            self.changed(run)
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

    def _ready(self, run: Pod, c: Container, ok: bool) -> None:
        if c.running_since and c.ready != ok:
            c.ready = ok
            self.changed(run)

    def _alive(self, run: Pod, c: Container, ok: bool, outcome: Outcome, grace: float) -> None:
        """A failed liveness probe kills the container; its supervisor restarts it by the pod's policy."""
        if ok or c.process is None:
            return
        log.info("pod %s: container %s failed liveness (%s), killing it", run.key, c.name, outcome.message)
        message = f"Container {c.name} failed liveness probe, will be restarted"
        self.host.on_event(run.key, "Normal", "Killing", message)
        run.spawn(self.processes.stop(c.process, grace), f"{run.key}/{c.name} kill")

    async def pre_stop(self, run: Pod, grace_seconds: float) -> None:
        """The running containers' preStop hooks, at once, for at most the grace period."""
        hooks = [
            (c, hook)
            for c in run.containers.values()
            if c.process is not None and (hook := (c.spec.get("lifecycle") or {}).get("preStop"))
        ]
        if not hooks:
            return

        async def one(c: Container, hook: Object) -> None:
            outcome = await run_hook(hook, self.target(run, c, c.env or {"PATH": DEFAULT_PATH}))
            if not outcome.ok:
                log.info("%s: preStop hook of %s failed: %s", run.key, c.name, outcome.message)
                self.host.on_event(run.key, "Warning", "FailedPreStopHook", outcome.message)

        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_seconds):
                await asyncio.gather(*(one(c, hook) for c, hook in hooks))
