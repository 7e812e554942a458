"""A CRD's status conditions, set as upstream's SetCRDCondition sets them: the transition time moves only when
the status does."""

from __future__ import annotations

from typing import Any

from tinykube.api.meta import now


def condition(crd: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def is_true(crd: dict[str, Any], kind: str) -> bool:
    found = condition(crd, kind)
    return found is not None and found.get("status") == "True"


def set_condition(crd: dict[str, Any], kind: str, status: str, reason: str, message: str) -> None:
    conditions = crd.setdefault("status", {}).setdefault("conditions", [])
    found = condition(crd, kind)
    if found is None:
        conditions.append(
            {"type": kind, "status": status, "lastTransitionTime": now(), "reason": reason, "message": message}
        )
        return
    if found.get("status") != status:
        found["lastTransitionTime"] = now()
    found.update(status=status, reason=reason, message=message)


def remove_condition(crd: dict[str, Any], kind: str) -> None:
    conditions = (crd.get("status") or {}).get("conditions")
    if conditions:
        crd["status"]["conditions"] = [c for c in conditions if c.get("type") != kind]
