"""The ClusterRole aggregation controller (upstream's `clusterrole-aggregation`): a ClusterRole with an
`aggregationRule` gets, as its rules, the union of the rules of the ClusterRoles its selectors match
(`tinykube.api.aggregation`).

Any change to any ClusterRole re-syncs every aggregated one, so chains (`view` into `edit` into `admin`) settle in a
few rounds. The rules are written with a merge patch of `rules` alone (upstream applies them server-side as their
only field owner): the rest of the role stays the user's.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tinykube.api import errors
from tinykube.api.aggregation import aggregate, normal_rule
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

CLUSTER_ROLES = builtin("rbac.authorization.k8s.io", "v1", "clusterroles")

Object = dict[str, Any]


class ClusterRoleAggregationController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.roles = ctx.informers.informer(CLUSTER_ROLES)
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.roles.add_handler(
            on_add=self._changed, on_update=lambda _old, new: self._changed(new), on_delete=self._changed
        )
        await run_controller(self.ctx.informers, [self.roles], Loop(self.queue, self.sync, workers=1))

    def _changed(self, _role: Object) -> None:
        for role in self.roles.store.list():
            if role.get("aggregationRule") is not None:
                self.queue.add(role["metadata"]["name"])

    async def sync(self, name: str) -> None:
        role = self.roles.store.get(name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregate(role, self.roles.store.list())
        if rules == [normal_rule(rule) for rule in role.get("rules") or []]:
            return
        with contextlib.suppress(errors.NotFound):  # deleted meanwhile
            await self.ctx.client.patch(CLUSTER_ROLES, "", name, {"rules": rules}, patch_type="merge")
