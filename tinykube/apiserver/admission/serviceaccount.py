"""The ServiceAccount admission plugin, as upstream's (`plugin/pkg/admission/serviceaccount`).

A new pod without `spec.serviceAccountName` runs as `default` (the deprecated `serviceAccount` field says the same);
a pod whose ServiceAccount does not exist is refused (`error looking up service account ns/sa: serviceaccount "sa"
not found`); a pod that names no image pull secrets takes its ServiceAccount's; and unless the pod or its
ServiceAccount turns `automountServiceAccountToken` off, every container mounts a projected `kube-api-access-xxxxx`
volume at /var/run/secrets/kubernetes.io/serviceaccount: a bound token (`token`), the cluster's CA (`ca.crt`, from
the `kube-root-ca.crt` ConfigMap) and the pod's namespace (`namespace`). Mirror pods are left as they are.

One difference: a missing `default` ServiceAccount of an active namespace is waited for up to ten seconds before
the pod is refused, since the serviceaccount controller makes it a moment after its namespace, and scripts create
pods at once (upstream refuses them, and its clients retry). A moment is milliseconds, but seconds on a loaded
machine (three were not always enough under the whole test suite and two sandboxes at once).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tinykube.api.meta import generate_name
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, forbidden, is_core
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.storage.watchcache import WatchCache

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_POD = "kubernetes.io/config.mirror"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_EXPIRATION_SECONDS = 3607  # upstream's WarnOnlyBoundTokenExpirationSeconds
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
ACCOUNT_WAIT = 10.0  # seconds a missing `default` ServiceAccount is waited for (see the module docstring)


def token_volume_source() -> Object:
    """Upstream's TokenVolumeSource (its default mode set explicitly, as upstream does)."""
    namespace = {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
    return {
        "defaultMode": 0o644,
        "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION_SECONDS}},
            {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [namespace]}},
        ],
    }


def should_automount(account: Object, pod_spec: Object) -> bool:
    """The pod's `automountServiceAccountToken`, else its ServiceAccount's, else true."""
    for setting in (pod_spec.get("automountServiceAccountToken"), account.get("automountServiceAccountToken")):
        if setting is not None:
            return bool(setting)
    return True


def mount_token(spec: Object) -> None:
    """Upstream's mountServiceAccountToken: each container without something at the token path mounts the token
    volume (an existing `kube-api-access-*` volume, else a new one), read-only."""
    volumes: list[Any] = spec.get("volumes") or []
    existing = next(
        (v["name"] for v in volumes if isinstance(v, dict) and str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)),
        None,
    )
    name = existing or generate_name(TOKEN_VOLUME_PREFIX)
    mount = {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    needed = False
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, dict(mount)]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, {"name": name, "projected": token_volume_source()}]


class ServiceAccount(Plugin):
    name = "ServiceAccount"

    def __init__(self, accounts: WatchCache, namespaces: WatchCache) -> None:
        self.accounts = accounts
        self.namespaces = namespaces

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods")

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        spec = obj.get("spec")
        if old is not None or req.subresource or not isinstance(spec, dict):
            return  # pods are changed on create only
        if MIRROR_POD in ((obj.get("metadata") or {}).get("annotations") or {}):
            return
        name = spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
        if not isinstance(name, str):
            return  # validation says what is wrong with it
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name
        if not self._active(req.namespace):
            return  # refused for its namespace right after (upstream's NamespaceLifecycle comes first)
        account = await self._account(req.namespace, name)
        if account is None:
            reason = f'error looking up service account {req.namespace}/{name}: serviceaccount "{name}" not found'
            raise forbidden(req, obj, reason)
        if should_automount(account, spec):
            mount_token(spec)
        if not spec.get("imagePullSecrets"):
            secrets = [ref for ref in account.get("imagePullSecrets") or [] if isinstance(ref, dict)]
            if secrets:
                spec["imagePullSecrets"] = [{"name": ref.get("name", "")} for ref in secrets]

    async def _account(self, namespace: str, name: str) -> Object | None:
        """The ServiceAccount; `default` of an active namespace is waited for a moment (see the module docstring)."""
        deadline = time.monotonic() + (ACCOUNT_WAIT if name == DEFAULT_SERVICE_ACCOUNT else 0)
        while True:
            cached = self.accounts.get(f"{namespace}/{name}")
            if cached is not None:
                return cached.obj
            if not self._active(namespace) or time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.05)

    def _active(self, namespace: str) -> bool:
        space = self.namespaces.get(namespace)
        return space is not None and (space.obj.get("status") or {}).get("phase") == "Active"
