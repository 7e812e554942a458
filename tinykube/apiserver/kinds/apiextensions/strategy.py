"""CustomResourceDefinitions (apiextensions.k8s.io/v1): upstream's strategy and its delete, which first marks the
CRD Terminating behind the `customresourcecleanup` finalizer so that its custom resources go before it does."""

from __future__ import annotations

from typing import Any

from tinykube.api.conditions import set_condition
from tinykube.api.errors import FieldError
from tinykube.api.meta import now
from tinykube.apiextensions import crdvalidation
from tinykube.apiextensions.definition import CLEANUP_FINALIZER
from tinykube.apiserver.registry.generic import Strategy


def storage_version(crd: dict[str, Any]) -> str | None:
    """The version marked `storage`; none when there is no spec to say (a JSON patch can remove it: validation
    answers that with a 422, after the strategy has run)."""
    spec = crd.get("spec")
    versions = spec.get("versions") if isinstance(spec, dict) else None
    if not isinstance(versions, list):
        return None
    return next((v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")), None)


def _record_stored_version(crd: dict[str, Any]) -> None:
    """upstream's strategy: the storage version joins `status.storedVersions` on every write of the spec."""
    version = storage_version(crd)
    if version is None:
        return
    stored = crd.setdefault("status", {}).setdefault("storedVersions", [])
    if version not in stored:
        stored.append(version)


class CustomResourceDefinitionStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def prepare_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {}
        self.default(obj)
        _record_stored_version(obj)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        _record_stored_version(new)

    def default(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("spec"), dict):
            crdvalidation.default_crd(obj)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return crdvalidation.validate_crd(obj, old)

    def validate_subresource_update(
        self, subresource: str, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[FieldError]:
        return crdvalidation.validate_crd_status(obj, old)

    def mark_deleting(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return
        meta["deletionTimestamp"] = now()
        meta["deletionGracePeriodSeconds"] = 0
        finalizers = meta.setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        set_condition(
            obj,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        )


STRATEGIES: dict[str, type[Strategy]] = {"customresourcedefinitions": CustomResourceDefinitionStrategy}
