"""The Priority admission plugin (`plugin/pkg/admission/priority`): a new pod's `priorityClassName` resolves to its
`priority` and `preemptionPolicy` (no name: the global default class, else priority 0), a pod may not state a
priority of its own that differs; and only one PriorityClass may be the global default.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.admission.chain import Object, Plugin, forbidden, is_core
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.storage.watchcache import WatchCache

DEFAULT_PRIORITY = 0  # scheduling.DefaultPriorityWhenNoDefaultClassExists
DEFAULT_PREEMPTION = "PreemptLowerPriority"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def resolve(spec: dict[str, Any], priority_class: Object | None) -> str:
    """Set a pod spec's priority and preemption policy from its class (None: no class named, none is the default);
    the reason to refuse it, or ""."""
    policy: str | None = DEFAULT_PREEMPTION
    priority = DEFAULT_PRIORITY
    if priority_class is not None:
        priority, policy = int(priority_class.get("value") or 0), priority_class.get("preemptionPolicy")
        if not spec.get("priorityClassName"):  # the global default, named on the pod
            spec["priorityClassName"] = priority_class["metadata"]["name"]
    stated = spec.get("priority")
    if stated is not None and stated != priority:
        return (
            f"the integer value of priority ({stated}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given PriorityClass name"
        )
    spec["priority"] = priority
    if policy is not None:
        stated = spec.get("preemptionPolicy")
        if stated is not None and stated != policy:
            return (
                f"the string value of PreemptionPolicy ({stated}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name"
            )
        spec["preemptionPolicy"] = policy
    return ""


class Priority(Plugin):
    name = "Priority"

    def __init__(self, classes: WatchCache) -> None:
        self.classes = classes
        self._default: Object | None = None
        self._default_at = -1  # the cache revision `_default` was found at

    def handles(self, resource: ResourceInfo) -> bool:
        return is_core(resource, "pods") or (
            resource.group == "scheduling.k8s.io" and resource.plural == "priorityclasses"
        )

    def default_class(self) -> Object | None:
        """The global default class (of several, raced in, the lowest), looked for again only after a change."""
        if self.classes.revision != self._default_at:
            defaults = [c.obj for c in self.classes.objects.values() if c.obj.get("globalDefault") is True]
            self._default = min(defaults, key=lambda c: int(c.get("value") or 0), default=None)
            self._default_at = self.classes.revision
        return self._default

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        if req.subresource or req.resource.plural != "pods":
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return  # validation refuses it
        if old is not None:  # keep what was resolved on create; validation refuses any change
            old_spec = _dict(old.get("spec"))
            for field in ("priority", "preemptionPolicy"):
                if spec.get(field) is None and old_spec.get(field) is not None:
                    spec[field] = old_spec[field]
            return
        name = spec.get("priorityClassName")
        if name:
            found = self.classes.get(str(name))
            if found is None:
                raise forbidden(req, obj, f"no PriorityClass with name {name} was found")
            priority_class: Object | None = found.obj
        else:
            priority_class = self.default_class()
        reason = resolve(spec, priority_class)
        if reason:
            raise forbidden(req, obj, reason)

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        """A second global default is refused (an existing default may be updated)."""
        if req.subresource or req.resource.plural != "priorityclasses" or obj.get("globalDefault") is not True:
            return
        current = self.default_class()
        if current is not None and (old is None or current["metadata"]["name"] != obj["metadata"]["name"]):
            name = current["metadata"]["name"]
            raise forbidden(req, obj, f"PriorityClass {name} is already marked as default. Only one default can exist")
