"""Images in the netns runtime. There are none: a container is a host process in its pod's network namespace, so a
small table maps a few well-known images to built-in equivalents (stdlib-only modules of this package, run with the
agent's Python), so that upstream tutorials and e2e manifests run unchanged.

| Image (any tag or digest)                               | Runs                                                       |
|---------------------------------------------------------|------------------------------------------------------------|
| `registry.k8s.io/echoserver`, `k8s.gcr.io/echoserver`,  | `python -m tinykube.node.images.echoserver`: HTTP on 8080, |
| `gcr.io/google_containers/echoserver`                   | answering as `echoserver:1.4` does (`CLIENT VALUES:` …)    |
| `nginx` (`docker.io/library/nginx`),                    | `python -m tinykube.node.images.nginx`: HTTP on 80, a      |
| `registry.k8s.io/e2e-test-images/nginx`                 | "Welcome to nginx!" page, access log on stdout             |
| `busybox` (`docker.io/library/busybox`),                | the command and args on the host (`/bin/sh`, `sleep`,      |
| `registry.k8s.io/e2e-test-images/busybox`               | `wget` …); `sh` (which exits at once) when none is given   |
| `registry.k8s.io/e2e-test-images/agnhost`,              | `python -m tinykube.node.images.agnhost`: `netexec`,       |
| `k8s.gcr.io/e2e-test-images/agnhost`                    | `serve-hostname`, `pause`                                  |
| `python` (`docker.io/library/python`)                   | the host's `python3` (for `python` too, as the image has   |
|                                                         | both names); `python3` when no command is given            |
| any other image, with a `command`                       | the command and args on the host                           |
| any other image, without a `command`                    | nothing: `ErrImagePull`, then `ImagePullBackOff`           |

The argv is put together as a container runtime does it, from the image's ENTRYPOINT and CMD as the real image
declares them: `command` + `args` when there is a `command`, else ENTRYPOINT + (`args` or CMD). When that argv
starts with a program the table builds in (`nginx`, `/agnhost`, … by basename), the program is swapped for its
module, which gets the rest of the argv: `args: [netexec, --http-port=8080]` and `command: [/agnhost,
serve-hostname]` both work. Any other argv (`command: [sh, -c, …]` on any image) runs on the host as given.
Names are compared fully qualified, as containerd does (`nginx` is `docker.io/library/nginx`). A built-in runs with
PYTHONPATH set to the tinykube the agent runs (whatever the container's working directory, however it is installed).
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DOCKER_HUB = "docker.io"
SOURCE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory holding this `tinykube` package


class ImagePullError(Exception):
    """The image is neither built in nor replaced by a command: the kubelet's `ErrImagePull`."""

    def __init__(self, image: str) -> None:
        ref = qualified(image)
        super().__init__(
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": failed to resolve reference '
            f'"{ref}": {ref}: not found (tinykube runs no images: give the container a command, or use one of the '
            "built-in images: echoserver, nginx, busybox, agnhost)"
        )


@dataclass(frozen=True, slots=True)
class Image:
    """What the runtime needs of an image: its ENTRYPOINT and CMD, and which of its programs are built in (by
    basename, mapped to the module that stands in for it)."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    programs: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)  # a program of the image that is another on the host


# nginx's ENTRYPOINT is a script that ends in `exec "$@"`, so it adds nothing here.
ECHOSERVER = Image(cmd=("nginx", "-g", "daemon off;"), programs={"nginx": "echoserver", "run.sh": "echoserver"})
NGINX = Image(cmd=("nginx", "-g", "daemon off;"), programs={"nginx": "nginx", "nginx-debug": "nginx"})
BUSYBOX = Image(cmd=("sh",))
AGNHOST = Image(entrypoint=("/agnhost",), programs={"agnhost": "agnhost"})
PYTHON = Image(cmd=("python3",), aliases={"python": "python3"})  # Debian's host has no `python`

IMAGES: Mapping[str, Image] = {
    "registry.k8s.io/echoserver": ECHOSERVER,
    "k8s.gcr.io/echoserver": ECHOSERVER,
    "gcr.io/google_containers/echoserver": ECHOSERVER,
    "docker.io/library/nginx": NGINX,
    "registry.k8s.io/e2e-test-images/nginx": NGINX,
    "docker.io/library/busybox": BUSYBOX,
    "registry.k8s.io/e2e-test-images/busybox": BUSYBOX,
    "registry.k8s.io/e2e-test-images/agnhost": AGNHOST,
    "k8s.gcr.io/e2e-test-images/agnhost": AGNHOST,
    "docker.io/library/python": PYTHON,
}


def _split(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; tag and digest may be empty."""
    name, _, digest = image.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :], digest
    return name, "", digest


def repository(image: str) -> str:
    """The fully qualified repository: `nginx:1.27` is `docker.io/library/nginx`, `bitnami/nginx` is
    `docker.io/bitnami/nginx`; a first component with a `.` or `:` (or `localhost`) is a registry."""
    name = _split(image)[0]
    first, slash, rest = name.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        first, rest = DOCKER_HUB, name
    if first == "index.docker.io":
        first = DOCKER_HUB
    if first == DOCKER_HUB and "/" not in rest:
        rest = f"library/{rest}"
    return f"{first}/{rest}"


def qualified(image: str) -> str:
    """The reference as containerd reports it: `nginx` is `docker.io/library/nginx:latest`."""
    _, tag, digest = _split(image)
    if not tag and not digest:
        tag = "latest"
    return repository(image) + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def lookup(image: str) -> Image | None:
    return IMAGES.get(repository(image)) if image else None


@dataclass(frozen=True, slots=True)
class Process:
    """What a container runs: its argv, and variables added to its environment (a built-in's import path)."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict)


def resolve(image: str, command: Sequence[str], args: Sequence[str], *, python: str = sys.executable) -> Process:
    """What a container of `image` runs (see the module docstring); raises ImagePullError for an image that is not
    in the table and has no `command`."""
    known = lookup(image)
    if known is None:
        if not command:
            raise ImagePullError(image)
        return Process([*command, *args])
    argv = [*command, *args] if command else [*known.entrypoint, *(args or known.cmd)]
    if argv and argv[0] in known.aliases:
        argv[0] = known.aliases[argv[0]]
    module = known.programs.get(posixpath.basename(argv[0])) if argv else None
    if module is None:
        return Process(argv)
    return Process([python, "-m", f"{__name__}.{module}", *argv[1:]], {"PYTHONPATH": SOURCE_ROOT})
