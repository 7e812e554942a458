"""`componentstatuses` (`kubectl get cs`): the health of etcd, the scheduler and the controller manager, probed
per request and never stored, as upstream's (deprecated) ComponentStatus REST does.

Upstream probes fixed localhost ports (`:10259`, `:10257`); tinykube's controllers have no health port, so the
process that runs them registers a check instead, and a component no process has registered is reported
Unhealthy with the reason — what an upstream apiserver says of a component it cannot reach.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tinykube.api import errors
from tinykube.apiserver.printing.cells import name_of
from tinykube.apiserver.printing.table import NAME_COLUMN, Column, Printer

DEPRECATION = "v1 ComponentStatus is deprecated in v1.19+"
COMPONENTS = ("scheduler", "controller-manager", "etcd-0")  # the order `kubectl get cs` usually shows


@dataclass(frozen=True, slots=True)
class Health:
    healthy: bool
    message: str = ""
    error: str = ""


Check = Callable[[], Awaitable[Health]]


def _not_running(name: str) -> Check:
    async def check() -> Health:
        return Health(False, error=f"the {name} is not running in this tinykube process")

    return check


class ComponentStatuses:
    """Named health checks; `etcd-0` is the apiserver's own storage, the others are registered by `tinykube up`."""

    def __init__(self, etcd: Check) -> None:
        self.checks: dict[str, Check] = {
            "scheduler": _not_running("scheduler"),
            "controller-manager": _not_running("controller manager"),
            "etcd-0": etcd,
        }

    def register(self, name: str, check: Check) -> None:
        self.checks[name] = check

    async def get(self, name: str) -> dict[str, Any]:
        check = self.checks.get(name)
        if check is None:  # upstream returns a plain error here: a 500 without a reason
            raise _ComponentNotFound(f"Component not found: {name}")
        return {"kind": "ComponentStatus", "apiVersion": "v1", **_status(name, await check())}

    async def list(self) -> list[dict[str, Any]]:
        names = list(self.checks)
        results = await asyncio.gather(*(self.checks[n]() for n in names))
        return [_status(name, health) for name, health in zip(names, results, strict=True)]


class _ComponentNotFound(errors.InternalError):
    reason = ""  # upstream's StatusReasonUnknown: the Status carries no reason

    def status(self) -> dict[str, Any]:
        body = super().status()
        body.pop("reason", None)
        return body


def _status(name: str, health: Health) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Healthy", "status": "True" if health.healthy else "False"}
    if health.message:
        condition["message"] = health.message
    if health.error:
        condition["error"] = health.error
    return {"metadata": {"name": name, "creationTimestamp": None}, "conditions": [condition]}


def _cells(obj: dict[str, Any], _now: Any) -> list[Any]:
    status, message, error = "Unknown", "", ""
    for condition in obj.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = str(condition.get("message", "")), str(condition.get("error", ""))
            break
    return [name_of(obj), status, message, error]


PRINTER = Printer(
    (
        NAME_COLUMN,
        Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions"),
    ),
    _cells,
)
