"""Whether one request fits a namespace's ResourceQuotas, and what they would use if it is admitted: upstream's
`CheckRequest` (`apiserver/pkg/admission/plugin/resourcequota/controller.go`), with its messages. Pure: the plugin
(resourcequota.py) reads the quotas and writes their new usage.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tinykube.api.quantity import ResourceList, add, rendered, resource_list
from tinykube.api.quota import (
    UPDATE,
    Evaluator,
    ScopeRequirement,
    exceeding,
    is_zero,
    mask,
    negative,
    pretty,
    scope_requirements,
    subtract_floored,
)

Object = dict[str, Any]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Refused(Exception):
    """The request does not fit; the message is upstream's (the plugin makes it a 403)."""


@dataclass(frozen=True, slots=True)
class QuotaState:
    """A ResourceQuota as admission reads it: `status.hard` says what is limited (the controller copies `spec.hard`
    there, so a quota it has not seen yet limits nothing), `status.used` what is taken."""

    obj: Object  # as stored, with its resourceVersion
    hard: ResourceList
    used: ResourceList
    requirements: tuple[ScopeRequirement, ...]

    @classmethod
    def of(cls, obj: Object) -> QuotaState:
        status = _dict(obj.get("status"))
        hard, used = resource_list(status.get("hard")), resource_list(status.get("used"))
        return cls(obj, hard, used, tuple(scope_requirements(obj)))

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def charged(self, used: ResourceList) -> QuotaState:
        return replace(self, used=used)

    def body(self) -> Object:
        """The object to write back to `status`, conditional on the resourceVersion it was read at."""
        status = _dict(self.obj.get("status"))
        return {**self.obj, "status": {**status, "used": rendered(self.used)}}


def check_request(
    quotas: Sequence[QuotaState], evaluator: Evaluator, obj: Object, old: Object | None, operation: str
) -> list[QuotaState]:
    """The quotas as they would be with `obj` admitted; raises `Refused` if it does not fit one of them."""
    interesting = []
    for index, quota in enumerate(quotas):
        if not evaluator.matches(quota.hard, quota.requirements, obj):
            continue
        restricted = evaluator.matching_resources(quota.hard)
        reason = evaluator.constraints(restricted, obj)
        if reason:
            raise Refused(f"failed quota: {quota.name}: {reason}")
        if any(name not in quota.used for name in restricted):
            raise Refused(f"status unknown for quota: {quota.name}, resources: {','.join(sorted(restricted))}")
        interesting.append(index)
    now = time.time()
    delta = evaluator.usage(obj, now)
    if below := negative(delta):
        raise Refused(f"quota usage is negative for resource(s): {','.join(below)}")
    if operation == UPDATE and old is not None and old["metadata"].get("resourceVersion"):
        delta = subtract_floored(delta, evaluator.usage(old, now))  # an update is charged what it adds
    if is_zero(delta) or not interesting:
        return list(quotas)
    result = list(quotas)
    for index in interesting:
        quota = result[index]
        requested = mask(delta, quota.hard)
        used = add(quota.used, requested)
        if over := exceeding(mask(used, requested), quota.hard):
            raise Refused(
                f"exceeded quota: {quota.name}, requested: {pretty(mask(requested, over))}, "
                f"used: {pretty(mask(quota.used, over))}, limited: {pretty(mask(quota.hard, over))}"
            )
        result[index] = quota.charged(used)
    return result
