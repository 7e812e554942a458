"""What one run of a netns container runs, made from its pod and spec as the kubelet makes a CRI container config:
the image's argv (`tinykube.node.images`: there are no images, only stand-ins and commands) with `$(VAR)` expanded,
the environment (ConfigMaps, Secrets and Services through `tinykube.kubelet_env`), the working directory and the
volume mounts. What cannot be made is a `StartFailure` worded as upstream's kubelet words it: a failed pull
(`ErrImagePull`) or bad config (`CreateContainerConfigError`) keep the container waiting, the rest end the run with
`StartError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tinykube.kubelet_env.envvars import ConfigError, Sources, container_environment, expand
from tinykube.node import images, podfiles
from tinykube.node.configsources import container_sources, warner
from tinykube.node.container_processes import DEFAULT_PATH, ProcessSpec, StartFailure, missing_executable
from tinykube.node.containers import Container, Pod
from tinykube.node.runtime import RuntimeHost, host_network

Object = dict[str, Any]
PULL_FAILED, PULL_BACKOFF = "ErrImagePull", "ImagePullBackOff"
CONFIG_ERROR = "CreateContainerConfigError"


class RunConfig:
    """Makes the runs of one node's containers: `services(namespace)` are the Services a pod's variables name."""

    def __init__(
        self, host: RuntimeHost, *, node_name: str, services: Callable[[str], list[Object]], cluster_domain: str
    ) -> None:
        self.host = host
        self.node_name = node_name
        self.services = services
        self.cluster_domain = cluster_domain

    def image(self, c: Container) -> images.Process:
        """What the container's image runs (see `tinykube.node.images`), before `$(VAR)` expansion."""
        command = [str(arg) for arg in c.spec.get("command") or []]
        args = [str(arg) for arg in c.spec.get("args") or []]
        try:
            return images.resolve(str(c.spec.get("image") or ""), command, args)
        except images.ImagePullError as err:
            raise StartFailure(PULL_FAILED, str(err), waiting=True) from None

    async def sources(self, run: Pod, c: Container) -> Sources:
        try:
            return await container_sources(self.host.read_config, run.pod, c.spec, warner(self.host.on_event, run.key))
        except ConfigError as err:
            raise StartFailure(CONFIG_ERROR, str(err), waiting=True) from None

    def command(
        self, run: Pod, c: Container, image: images.Process, sources: Sources
    ) -> tuple[list[str], dict[str, str], str]:
        """The argv (with `$(VAR)` expanded), environment and working directory of a run."""
        try:
            services = self.services(run.pod["metadata"].get("namespace") or "default")
            pairs = container_environment(run.pod, c.spec, services, sources)
        except ValueError as err:
            raise StartFailure(CONFIG_ERROR, str(err), waiting=True) from None
        name = self.node_name if host_network(run.pod) else podfiles.hostname(run.pod, self.cluster_domain)[0]
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

    def process(self, run: Pod, c: Container, argv: list[str], env: dict[str, str], cwd: str) -> ProcessSpec:
        """The run as the container's processes start it: its command, mounts, hostname and console."""
        return ProcessSpec(
            argv=argv,
            env=env,
            cwd=cwd,
            mounts=mounts(run, c, env),
            hostname=env.get("HOSTNAME") or run.name,
            tty=bool(c.spec.get("tty")),
            stdin=bool(c.spec.get("stdin")),
            stdin_once=bool(c.spec.get("stdinOnce")),
        )


def mounts(run: Pod, c: Container, env: dict[str, str]) -> list[Object]:
    """What `containerinit` binds for the container: each `volumeMount` (its `subPath`, made if missing)."""
    found = []
    for mount in c.spec.get("volumeMounts") or []:
        source = run.volumes.get(str(mount.get("name")))
        if source is None:
            raise StartFailure("CreateContainerConfigError", f'cannot find volume "{mount.get("name")}" to mount')
        sub_path = mount.get("subPath") or expand(str(mount.get("subPathExpr") or ""), env)
        if sub_path:
            source = source / sub_path
            if not source.exists():
                source.mkdir(parents=True)
        found.append({"source": str(source), "target": mount["mountPath"], "readOnly": bool(mount.get("readOnly"))})
    return found
