"""The ServiceAccount admission plugin (`plugin/pkg/admission/serviceaccount`), without its refusals and its volume.

A new pod without `spec.serviceAccountName` runs as `default` (the deprecated `serviceAccount` field says the same),
and a pod that names no image pull secrets takes its ServiceAccount's. Upstream refuses a pod whose ServiceAccount
does not exist yet; tinykube admits it, because tests and users create pods right after their namespace, before
the serviceaccount controller has made `default` (a real cluster's clients retry that 403; here the pod is simply
admitted). The projected token volume upstream mounts is issue 21. Mirror pods are left as they are, as upstream.
"""

from __future__ import annotations

from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, is_core
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.watchcache import WatchCache

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_POD = "kubernetes.io/config.mirror"


class ServiceAccount(Plugin):
    name = "ServiceAccount"

    def __init__(self, accounts: WatchCache) -> None:
        self.accounts = accounts

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods")

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        spec = obj.get("spec")
        if old is not None or req.subresource or not isinstance(spec, dict):
            return  # pods are changed on create only
        if MIRROR_POD in ((obj.get("metadata") or {}).get("annotations") or {}):
            return
        name = spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name
        account = self.accounts.get(f"{req.namespace}/{name}") if isinstance(name, str) else None
        if account is not None and not spec.get("imagePullSecrets"):
            secrets = [ref for ref in account.obj.get("imagePullSecrets") or [] if isinstance(ref, dict)]
            if secrets:
                spec["imagePullSecrets"] = [{"name": ref.get("name", "")} for ref in secrets]
