"""The DefaultTolerationSeconds admission plugin (`plugin/pkg/admission/defaulttolerationseconds`): every pod
tolerates `node.kubernetes.io/not-ready:NoExecute` and `node.kubernetes.io/unreachable:NoExecute` for 300 s
(`--default-not-ready-toleration-seconds`, `--default-unreachable-toleration-seconds`), unless it says otherwise.

So a pod whose node is lost is evicted by the taint eviction controller five minutes after the node lifecycle
controller taints the node, not at once. A pod with a toleration that already covers one of the two (its key, or
no key, with effect NoExecute or none) keeps what it has for that one. As upstream, pods are changed on create and
on update (not through subresources), so an update that drops the tolerations gets them back.
"""

from __future__ import annotations

from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, is_core
from tinykube.apiserver.registry.generic import Request

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def covers(toleration: object, key: str) -> bool:
    """Whether a toleration already says how long the pod stays through the NoExecute taint `key`."""
    if not isinstance(toleration, dict):
        return False
    return toleration.get("key") in (None, "", key) and toleration.get("effect") in (None, "", "NoExecute")


def default_tolerations(spec: Object, seconds: int = DEFAULT_TOLERATION_SECONDS) -> None:
    """Add the two default tolerations that the pod spec lacks, after its own."""
    tolerations = spec.get("tolerations")
    tolerations = list(tolerations) if isinstance(tolerations, list) else []
    for key in (NOT_READY, UNREACHABLE):
        if not any(covers(t, key) for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds})
    spec["tolerations"] = tolerations


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods")

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        spec = obj.get("spec")
        if req.subresource or not isinstance(spec, dict):
            return
        default_tolerations(spec)
