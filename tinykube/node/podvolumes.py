"""A netns pod's volumes, made on the node as the kubelet's volume plugins make them: a directory per volume under the
pod's directory, which `containerinit` binds at each container's `mountPath`.

- `emptyDir`: an empty directory, shared by the pod's containers, gone with the pod; `medium: Memory` puts it on the
  node's tmpfs `/dev/shm` (a mount of its own, shared by the containers, would have to be made in the root mount
  namespace), its `sizeLimit` not enforced.
- `configMap`, `secret`, `downwardAPI`, `projected` (service account tokens, ConfigMaps, Secrets, the downward API):
  files written as upstream's AtomicWriter writes them — the payload in a hidden timestamped directory, `..data` a
  symlink to it, each file a symlink through `..data` — so a later sync swaps `..data` at once and the containers see
  the update (a `subPath` mount binds one file and is not updated, as upstream). `items` pick and rename keys;
  `defaultMode` and `mode` set the files' modes. Tokens are requested for the pod (TokenRequest, bound to it) and
  requested again once 80 % of their life has passed.
- `hostPath`: the host's path (`DirectoryOrCreate` and `FileOrCreate` make it, as upstream).
- `persistentVolumeClaim`: the directory of its bound PersistentVolume (`hostPath` or `local`).

A volume whose source is missing raises MountError with upstream's wording; the pod's containers wait meanwhile.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tinykube.kubelet_env.envvars import ConfigError, field_value
from tinykube.node.configsources import Reader

log = logging.getLogger(__name__)

Object = dict[str, Any]
TokenRequester = Callable[[Object, Object], Awaitable[Object]]  # (pod, serviceAccountToken projection) -> status
DEFAULT_MODE = 0o644
MEMORY_ROOT = Path("/dev/shm")
DATA = "..data"
VOLUME_SYNC = 10.0  # seconds between syncs of a pod's volumes (ConfigMap and Secret updates, token renewals)
VOLUME_RETRY = 1.0  # seconds before volumes that could not be set up are tried again


class MountError(Exception):
    """A volume cannot be set up yet (its source is missing): the pod waits, with a FailedMount event."""


@dataclass
class Tokens:
    """The tokens of a pod's volumes, with when to request each again (time.monotonic())."""

    held: dict[str, tuple[str, float]] = field(default_factory=dict)  # "<volume>/<path>" -> (token, renew at)


class PodVolumes:
    def __init__(self, pod: Object, root: Path, read: Reader, request_token: TokenRequester) -> None:
        self.pod = pod
        self.root = root  # the pod's volumes directory
        self.read = read
        self.request_token = request_token
        self.tokens = Tokens()

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"].get("namespace") or "default")

    async def sync(self) -> dict[str, Path]:
        """Make or update every volume; the path of each by name. MountError for the first one that cannot be."""
        paths = {}
        for volume in (self.pod.get("spec") or {}).get("volumes") or []:
            name = volume["name"]
            try:
                paths[name] = await self._volume(volume)
            except (MountError, ConfigError) as err:
                raise MountError(f'MountVolume.SetUp failed for volume "{name}" : {err}') from None
        return paths

    async def keep_synced(
        self, key: str, ready: Callable[[dict[str, Path]], None], on_event: Callable[[str, str, str, str], None]
    ) -> None:
        """Set the pod's volumes up (`ready(paths)`; its containers wait until then: `FailedMount` events while a
        source is missing), then keep them in sync: ConfigMap and Secret changes, tokens renewed."""
        reported, synced = "", False
        while True:
            try:
                ready(await self.sync())
                synced, reported = True, ""
            except MountError as err:
                if str(err) != reported:  # once per cause, as upstream's events are aggregated anyway
                    on_event(key, "Warning", "FailedMount", str(err))
                    reported = str(err)
            except OSError as err:
                log.warning("pod %s: volumes: %s", key, err)
            # a missing source is looked for again soon (a namespace's kube-root-ca.crt comes a moment after it)
            await asyncio.sleep(VOLUME_SYNC if synced and not reported else VOLUME_RETRY)

    async def _volume(self, volume: Object) -> Path:
        directory: Path = self.root / str(volume["name"])
        if "emptyDir" in volume:
            if (volume["emptyDir"] or {}).get("medium") == "Memory":  # in memory: on the node's tmpfs /dev/shm
                directory = memory_dir(self.pod) / str(volume["name"])
            directory.mkdir(parents=True, exist_ok=True)
            return directory
        if "hostPath" in volume:
            return _host_path(volume["hostPath"])
        if "persistentVolumeClaim" in volume:
            return await self._claim(volume["persistentVolumeClaim"])
        if "configMap" in volume:
            files = await self._config(volume["configMap"], "configmaps")
            mode = volume["configMap"].get("defaultMode", DEFAULT_MODE)
        elif "secret" in volume:
            source = volume["secret"]
            files = await self._config({**source, "name": source.get("secretName", "")}, "secrets")
            mode = source.get("defaultMode", DEFAULT_MODE)
        elif "downwardAPI" in volume:
            files = self._downward(volume["downwardAPI"])
            mode = volume["downwardAPI"].get("defaultMode", DEFAULT_MODE)
        elif "projected" in volume:
            files = await self._projected(volume["name"], volume["projected"])
            mode = volume["projected"].get("defaultMode", DEFAULT_MODE)
        else:
            raise MountError("volume type not supported by tinykube's node agent")
        write_atomically(directory, {path: (data, file_mode if file_mode is not None else mode)
                                     for path, (data, file_mode) in files.items()})  # fmt: skip
        return directory

    async def _claim(self, source: Object) -> Path:
        name = source.get("claimName", "")
        claim = await self.read("persistentvolumeclaims", self.namespace, name)
        if claim is None:
            raise MountError(f'persistentvolumeclaim "{name}" not found')
        volume_name = (claim.get("spec") or {}).get("volumeName")
        volume = await self.read("persistentvolumes", "", volume_name) if volume_name else None
        spec = (volume or {}).get("spec") or {}
        path = (spec.get("hostPath") or spec.get("local") or {}).get("path")
        if not path:
            raise MountError(f'persistentvolumeclaim "{name}" is not bound to a volume with a path on this node')
        return Path(path)

    async def _config(self, source: Object, plural: str) -> dict[str, tuple[bytes, int | None]]:
        """The files of a ConfigMap or Secret (its `items`, else every key); {} if missing and optional."""
        name, kind = source.get("name", ""), "configmap" if plural == "configmaps" else "secret"
        obj = await self.read(plural, self.namespace, name)
        if obj is None:
            if source.get("optional"):
                return {}
            raise MountError(f'{kind} "{name}" not found')
        data = _payload(obj, plural)
        items = source.get("items")
        if not items:
            return {key: (value, None) for key, value in data.items()}
        files = {}
        for item in items:
            if item.get("key") not in data:
                if source.get("optional"):
                    continue
                raise MountError(f'configmap references non-existent config key: {item.get("key")}'
                                 if plural == "configmaps" else
                                 f'references non-existent secret key: {item.get("key")}')  # fmt: skip
            files[item.get("path") or item["key"]] = (data[item["key"]], item.get("mode"))
        return files

    def _downward(self, source: Object) -> dict[str, tuple[bytes, int | None]]:
        files = {}
        for item in source.get("items") or []:
            if "fieldRef" in item:
                path = item["fieldRef"].get("fieldPath", "")
                if path in ("metadata.labels", "metadata.annotations"):
                    values = (self.pod["metadata"].get(path.split(".")[1]) or {}).items()
                    text = "\n".join(f'{k}="{v}"' for k, v in sorted(values))
                else:
                    text = field_value(self.pod, path)
                files[item["path"]] = (text.encode(), item.get("mode"))
        return files

    async def _projected(self, volume: str, source: Object) -> dict[str, tuple[bytes, int | None]]:
        files: dict[str, tuple[bytes, int | None]] = {}
        for part in source.get("sources") or []:
            if "serviceAccountToken" in part:
                projection = part["serviceAccountToken"]
                files[projection.get("path", "token")] = (await self._token(volume, projection), None)
            elif "configMap" in part:
                files |= await self._config(part["configMap"], "configmaps")
            elif "secret" in part:
                files |= await self._config(part["secret"], "secrets")
            elif "downwardAPI" in part:
                files |= self._downward(part["downwardAPI"])
        return files

    async def _token(self, volume: str, projection: Object) -> bytes:
        key = f"{volume}/{projection.get('path', 'token')}"
        held = self.tokens.held.get(key)
        if held is not None and time.monotonic() < held[1]:
            return held[0].encode()
        try:
            status = await self.request_token(self.pod, projection)
        except Exception as err:
            raise MountError(f"failed to fetch token: {err}") from None
        token = str(status.get("token", ""))
        expires = datetime.fromisoformat(str(status.get("expirationTimestamp", "")).replace("Z", "+00:00"))
        life = max((expires - datetime.now(UTC)).total_seconds(), 0.0)
        self.tokens.held[key] = (token, time.monotonic() + 0.8 * life)  # the kubelet renews at 80 % of its life
        return token.encode()


_NEEDED = (  # what a volume (or a projection) needs to exist: (field, plural, kind, name field, in a projection)
    ("configMap", "configmaps", "configmap", "name", "name"),
    ("secret", "secrets", "secret", "secretName", "name"),
    ("persistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", "claimName", ""),
)


async def missing_source(pod: Object, read: Reader) -> str:
    """Why the pod's volumes cannot be set up yet ("" if they can): a ConfigMap, Secret or claim they need that does
    not exist (what the simulated runtime checks: it writes no files)."""
    namespace = pod["metadata"].get("namespace") or "default"
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        parts = [(volume, False)] + [(p, True) for p in (volume.get("projected") or {}).get("sources") or []]
        for part, projected in parts:
            for key, plural, kind, in_volume, in_projection in _NEEDED:
                ref = part.get(key)
                if not isinstance(ref, dict) or ref.get("optional"):
                    continue
                name = str(ref.get(in_projection if projected else in_volume, ""))
                if await read(plural, namespace, name) is None:
                    return f'MountVolume.SetUp failed for volume "{volume["name"]}" : {kind} "{name}" not found'
    return ""


def memory_dir(pod: Object) -> Path:
    """Where a pod's memory-backed emptyDirs live: removed with the pod (`remove_memory`)."""
    return MEMORY_ROOT / f"tinykube-{pod['metadata'].get('uid') or pod['metadata']['name']}"


def remove_memory(pod: Object) -> None:
    shutil.rmtree(memory_dir(pod), ignore_errors=True)


def _payload(obj: Object, plural: str) -> dict[str, bytes]:
    if plural == "configmaps":
        binary = {k: _decoded(v) for k, v in (obj.get("binaryData") or {}).items()}
        return {**binary, **{k: str(v).encode() for k, v in (obj.get("data") or {}).items()}}
    return {k: _decoded(v) for k, v in (obj.get("data") or {}).items()}


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value))
    except (binascii.Error, ValueError):
        return b""


def _host_path(source: Object) -> Path:
    path, kind = Path(source.get("path", "")), source.get("type") or ""
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate" and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    elif kind in ("Directory", "File", "Socket", "CharDevice", "BlockDevice") and not path.exists():
        raise MountError(f"hostPath type check failed: {path} is not a {kind.lower()}")
    return path


def write_atomically(directory: Path, files: dict[str, tuple[bytes, int]]) -> bool:
    """Upstream's AtomicWriter: the payload in `..<timestamp>`, `..data` swapped to it in one rename, each top-level
    entry a symlink through `..data`; nothing is rewritten when the payload is unchanged. True if it changed."""
    directory.mkdir(parents=True, exist_ok=True)
    current = directory / DATA
    if current.is_symlink() and _same(current, files):
        return False
    stamp = directory / f"..{datetime.now(UTC).strftime('%Y_%m_%d_%H_%M_%S.%f')}"
    for path, (data, mode) in files.items():
        target = stamp / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, mode)
    stamp.mkdir(exist_ok=True)
    staged = directory / "..data_tmp"
    staged.unlink(missing_ok=True)
    staged.symlink_to(stamp.name)
    os.replace(staged, current)
    tops = {path.split("/", 1)[0] for path in files}
    for top in tops:
        link = directory / top
        if not link.is_symlink():
            link.symlink_to(f"{DATA}/{top}")
    for entry in directory.iterdir():  # keys gone from the payload, and the old payload
        stale = entry.name not in (DATA, stamp.name) if entry.name.startswith("..") else entry.name not in tops
        if stale and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        elif stale:
            entry.unlink()
    return True


def _same(current: Path, files: dict[str, tuple[bytes, int]]) -> bool:
    payload = current.resolve()
    found = {str(p.relative_to(payload)) for p in payload.rglob("*") if p.is_file()}
    if found != set(files):
        return False
    return all((payload / path).read_bytes() == data and (payload / path).stat().st_mode & 0o777 == mode
               for path, (data, mode) in files.items())  # fmt: skip
