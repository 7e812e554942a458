"""A netns container's first process: it builds the container's filesystem view, then execs the container's command.

Run as `ip netns exec <pod netns> python -I -m tinykube.node.containerinit <spec.json> -- <argv>`: `ip netns exec`
has already given the process a mount namespace of its own (with the pod's /etc/hosts and /etc/resolv.conf bound
over the host's). Each volume is bind-mounted at its `mountPath` (read-only if asked; `subPath` is the volume's
subdirectory), over the host's view of the filesystem. A mount point the host lacks is made in an overlay of the
directory it would be made in (the host's content below, this container's writes above, in a tmpfs) — of the whole
root for a new top-level directory, which the process then takes as its root — so the host's filesystem is never
written. Everything mounted here lives in the container's mount namespace and goes with its last process.

The spec: {"mounts": [{"source", "target", "readOnly"}], "workingDir", "terminal"}. With `terminal` (a `tty: true`
container, started in a session of its own with a pseudo-terminal as its stdio) the terminal is made the session's
controlling terminal here: the agent's event loop (uvloop) runs a `preexec_fn` before the child's stdio is set up.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x2000, 0x4000, 0x40000
STAGE = Path("/mnt")  # where the new root is assembled (a tmpfs over it, in this namespace only)
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                   data.encode() if data else None) != 0:  # fmt: skip
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _mounts_under(directory: str) -> list[str]:
    """The mount points below `directory` (all but the root's for "/"), parents first (mountinfo's order); not the
    network namespaces' handles (`nsfs`, one per pod of the node), which a container has no use for."""
    prefix = directory.rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, rest = line.partition(" - ")
        point = fields.split()[4].encode().decode("unicode_escape")
        below = point.startswith(prefix) and point != directory
        if below and not point.startswith(str(STAGE)) and rest.split()[:1] != ["nsfs"]:
            points.append(point)
    return points


def _overlay(directory: str) -> Path:
    """An overlay of `directory` (the host's content below, this container's writes above, in a tmpfs), with the
    mounts below it bound in again; assembled under STAGE and returned (not yet where it goes)."""
    stage = STAGE / f"layer{len(list(STAGE.iterdir()))}"
    upper, work, merged = stage / "upper", stage / "work", stage / "merged"
    for made in (stage, upper, work, merged):
        made.mkdir()
    _mount("overlay", str(merged), "overlay", 0, f"lowerdir={directory},upperdir={upper},workdir={work}")
    for point in _mounts_under(directory):  # /proc, /sys, /dev, the pod's /etc files, ...: as the host has them
        bound = merged / os.path.relpath(point, directory)
        if bound.exists() or bound.is_symlink():
            try:
                _mount(point, str(bound), None, MS_BIND | MS_REC)
            except OSError:
                continue  # a mount point that cannot be bound (gone meanwhile): the container does without it
    return merged


def nearest(path: str) -> tuple[str, bool]:
    """The deepest existing directory on the way to `path` (symlinks followed as the host has them), and whether
    `path` exists."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    current = "/"
    while parts:
        candidate = os.path.realpath(os.path.join(current, parts[0]))
        if not os.path.lexists(os.path.join(current, parts[0])) or not os.path.exists(candidate):
            return current, False
        parts.pop(0)
        current = candidate
    return current, True


def build(mounts: list[dict[str, object]]) -> Path:
    """Bind the volumes; returns the container's root. Mount points the host lacks are made in overlays: of the
    directory they would be made in (say /run for /var/run/secrets/...), or of the whole root for a new top-level
    directory (then the container gets that root, its writes anywhere kept from the host)."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host's namespace
    _mount("tmpfs", str(STAGE), "tmpfs", 0, "mode=0755")
    missing = {nearest(str(v["target"]))[0] for v in mounts if not nearest(str(v["target"]))[1]}
    root, layers = Path("/"), set()
    if "/" in missing:
        root = _overlay("/")
        layers.add(root.stat().st_dev)
    else:
        for directory in sorted(missing, key=len):
            if any(directory.startswith(done.rstrip("/") + "/") for done in missing if done != directory):
                continue  # inside another overlay made here
            merged = _overlay(directory)
            _mount(str(merged), directory, None, MS_MOVE)
            layers.add(Path(directory).stat().st_dev)
    for volume in mounts:
        source = Path(str(volume["source"]))
        target = inside(root, str(volume["target"]), layers, directory=source.is_dir())
        _mount(str(source), str(target), None, MS_BIND | MS_REC)
        if volume.get("readOnly"):
            _mount("none", str(target), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    return root


def inside(root: Path, path: str, layers: set[int], *, directory: bool) -> Path:
    """`path` as it will be once `root` is the root: symlinks followed within it (an absolute link starts again at
    `root`, never at the host's root), each missing component made — only in an overlay made here: a mount point that
    would have to be made on a filesystem of the host is refused, so nothing is ever written there."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    current, hops = root, 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            current = current.parent if current != root else root
            continue
        candidate = current / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise OSError(40, f"too many levels of symbolic links in {path}")
            link = os.readlink(candidate)
            current = root if link.startswith("/") else current
            parts = [p for p in link.split("/") if p not in ("", ".")] + parts
            continue
        if not candidate.exists():
            if current.stat().st_dev not in layers:
                where = "/" + str(current.relative_to(root))
                raise OSError(30, f"cannot make the mount point {path}: it would be made on the node's {where}")
            if parts or directory:
                candidate.mkdir()
            else:
                candidate.touch()
        current = candidate
    return current


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: containerinit SPEC.json -- COMMAND [ARG...]")
    spec = json.loads(Path(argv[0]).read_text())
    root = build(spec.get("mounts") or [])
    if root != Path("/"):
        os.chroot(root)
    os.chdir(spec.get("workingDir") or "/")
    if spec.get("terminal"):
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
