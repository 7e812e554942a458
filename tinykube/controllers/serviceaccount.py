"""The serviceaccount controller (upstream's `serviceaccount-controller`): every active namespace has a ServiceAccount
named `default`, made when the namespace appears and made again if someone deletes it.

Level-triggered on namespaces: a namespace is synced when it is added or changes, and when one of its
ServiceAccounts is deleted. A terminating namespace gets nothing (its creates would be refused anyway).
"""

from __future__ import annotations

import logging
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

NAMESPACES = builtin("", "v1", "namespaces")
SERVICE_ACCOUNTS = builtin("", "v1", "serviceaccounts")
ENSURED = ("default",)  # upstream's --service-accounts-to-ensure... is just this one
WORKERS = 4  # namespaces are independent: a burst of new ones is served in parallel

Object = dict[str, Any]


class ServiceAccountsController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.namespaces = ctx.informers.informer(NAMESPACES)
        self.accounts = ctx.informers.informer(SERVICE_ACCOUNTS)
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.namespaces.add_handler(on_add=self._namespace, on_update=lambda _old, new: self._namespace(new))
        self.accounts.add_handler(on_delete=self._account_deleted)
        await run_controller(
            self.ctx.informers, (self.namespaces, self.accounts), Loop(self.queue, self.sync, workers=WORKERS)
        )

    def _namespace(self, namespace: Object) -> None:
        self.queue.add(namespace["metadata"]["name"])

    def _account_deleted(self, account: Object) -> None:
        self.queue.add(account["metadata"].get("namespace", ""))

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.store.get(namespace)
        if ns is None or (ns.get("status") or {}).get("phase") != "Active":
            return
        for name in ENSURED:
            if self.accounts.store.get(f"{namespace}/{name}") is not None:
                continue
            try:
                await self.ctx.client.create(SERVICE_ACCOUNTS, namespace, {"metadata": {"name": name}})
            except errors.AlreadyExists:
                pass  # made meanwhile (by us before the informer saw it, or by someone else)
            except errors.ApiError as err:
                if not errors.is_namespace_terminating(err):
                    raise
