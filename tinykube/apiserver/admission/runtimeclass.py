"""The RuntimeClass admission plugin (`plugin/pkg/admission/runtimeclass`): a new pod naming a RuntimeClass gets the
class's pod overhead in `spec.overhead` and its scheduling constraints (node selector merged, tolerations
added); a class that does not exist, or an overhead or node selector the pod states otherwise, refuses the pod.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, forbidden, is_core
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.storage.watchcache import WatchCache


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class RuntimeClass(Plugin):
    name = "RuntimeClass"

    def __init__(self, classes: WatchCache) -> None:
        self.classes = classes

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods")

    def _class_of(self, spec: dict[str, Any]) -> Object | None:
        name = spec.get("runtimeClassName")
        if not isinstance(name, str) or not name:
            return None
        found = self.classes.get(name)
        return found.obj if found is not None else None

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        if req.subresource or old is not None:
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict) or not spec.get("runtimeClassName"):
            return
        runtime_class = self._class_of(spec)
        if runtime_class is None:
            raise forbidden(req, obj, f'pod rejected: RuntimeClass "{spec["runtimeClassName"]}" not found')
        fixed = _dict(runtime_class.get("overhead")).get("podFixed")
        if fixed:
            if spec.get("overhead") is not None and spec["overhead"] != fixed:
                raise forbidden(req, obj, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
            spec["overhead"] = dict(fixed)
        scheduling = _dict(runtime_class.get("scheduling"))
        wanted = _dict(scheduling.get("nodeSelector"))
        if wanted:
            selector = _dict(spec.get("nodeSelector"))
            for key, value in wanted.items():
                if key in selector and selector[key] != value:
                    raise forbidden(
                        req,
                        obj,
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                        f"pod.spec.nodeSelector[{key}] = {selector[key]}",
                    )
            spec["nodeSelector"] = {**selector, **wanted}
        tolerations = scheduling.get("tolerations")
        if isinstance(tolerations, list) and tolerations:
            current = spec.get("tolerations")
            present: list[Any] = current if isinstance(current, list) else []
            spec["tolerations"] = [*present, *(t for t in tolerations if t not in present)]

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        if req.subresource or old is not None:
            return
        spec = _dict(obj.get("spec"))
        if spec.get("overhead") is None:
            return
        runtime_class = self._class_of(spec)
        if runtime_class is None or not _dict(runtime_class.get("overhead")).get("podFixed"):
            raise forbidden(
                req, obj, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
            )
