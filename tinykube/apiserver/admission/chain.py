"""The admission chain the registry runs on every create and update, as upstream's apiserver does:

    defaulting ─▶ mutating plugins (may change the object) ─▶ validation ─▶ validating plugins (may only refuse)
               ─▶ etcd

A plugin is mutating, validating or both, by which of `admit` and `validate` it overrides (as upstream asks whether
it implements MutationInterface or ValidationInterface); plugins run in the chain's order within each phase. A
plugin refuses a request by raising an `ApiError`, usually `forbidden(...)` (403, upstream's `NewForbidden`).
Dry-run requests run every plugin; a plugin with side effects (ResourceQuota's charge) skips them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.registry.generic import Request

Object = dict[str, Any]


class Plugin:
    name = ""

    def handles(self, resource: ResourceInfo) -> bool:
        """Whether requests for `resource` concern this plugin at all (asked once per resource)."""
        return False

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        """Mutating phase: after defaulting, before validation; `old` is None on create."""

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        """Validating phase: after validation, just before the write."""

    @property
    def mutating(self) -> bool:
        return type(self).admit is not Plugin.admit

    @property
    def validating(self) -> bool:
        return type(self).validate is not Plugin.validate


class Chain:
    """The registry's `Admission`: plugins in upstream's order, looked up per resource once."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)
        self._phases: dict[ResourceInfo, tuple[tuple[Plugin, ...], tuple[Plugin, ...]]] = {}

    def _for(self, resource: ResourceInfo) -> tuple[tuple[Plugin, ...], tuple[Plugin, ...]]:
        phases = self._phases.get(resource)
        if phases is None:
            handling = [plugin for plugin in self.plugins if plugin.handles(resource)]
            mutating = tuple(plugin for plugin in handling if plugin.mutating)
            phases = self._phases[resource] = (mutating, tuple(plugin for plugin in handling if plugin.validating))
        return phases

    async def mutate(self, req: Request, obj: Object, old: Object | None) -> None:
        for plugin in self._for(req.resource)[0]:
            await plugin.admit(req, obj, old)

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        for plugin in self._for(req.resource)[1]:
            await plugin.validate(req, obj, old)


def forbidden(req: Request, obj: Object, reason: str) -> errors.Forbidden:
    """Upstream's `admission.NewForbidden`: the object named by its name, else its generateName, else "Unknown"."""
    meta = obj.get("metadata") or {}
    name = req.name or meta.get("name") or meta.get("generateName") or "Unknown"
    return errors.forbidden_request(req.resource.plural, str(name), reason, req.resource.group)


def is_core(resource: ResourceInfo, *plurals: str) -> bool:
    return resource.group == "" and resource.plural in plurals
