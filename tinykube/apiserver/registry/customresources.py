"""Custom resources: upstream's customResourceStrategy over a CRD's structural schemas.

Generic, unlike the built-in kinds' strategies in `kinds/<group>`: one strategy serves every custom resource, driven
by its CRD (schemas, scale and status subresources), so it belongs to the registry's machinery.

Each write is defaulted and validated in the version it is written in (its apiVersion: the request's version, as
upstream validates before converting), then stored in the CRD's storage version; with `conversion: None` the two
differ only in apiVersion.
"""

from __future__ import annotations

from typing import Any

from tinykube.api import errors
from tinykube.api.errors import FieldError
from tinykube.api.resources import ResourceInfo
from tinykube.apiextensions.definition import Definition, Scale, Version
from tinykube.apiserver.registry.generic import Strategy

_MAX_INT32 = 2**31 - 1
# Field errors that make CEL rules pointless to run (upstream's hasBlockingErr).
_BLOCKING = {
    errors.ErrorType.NOT_SUPPORTED,
    errors.ErrorType.REQUIRED,
    errors.ErrorType.TOO_LONG,
    errors.ErrorType.TOO_MANY,
}


class CustomResourceStrategy(Strategy):
    tracks_generation = True

    def __init__(self, resource: ResourceInfo) -> None:
        super().__init__(resource)
        self.definition: Definition = resource.custom
        self.has_status = self.definition.versions[resource.version].status
        self.storage_api_version = resource.api_version

    def prepare_create(self, obj: dict[str, Any]) -> None:
        if self.definition.version_of(obj).status:
            obj.pop("status", None)
        self.default(obj)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """upstream: with a status subresource, status is the stored one; the generation moves with any change
        outside metadata."""
        if self.definition.version_of(new).status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        self.default(new)

    def default(self, obj: dict[str, Any]) -> None:
        schema = self.definition.version_of(obj).schema
        if schema is not None:
            schema.default(obj)

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return any(new.get(k) != old.get(k) for k in {*new, *old} if k != "metadata")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        version = self.definition.version_of(obj)
        found = self._type_meta(obj)
        if found:
            return found
        if version.schema is not None:
            found += version.schema.validate(obj, old)
        if version.scale is not None:
            found += _replicas(obj, version.scale.spec_replicas)
            found += _scale_status(obj, version.scale)
        return found

    def validate_subresource_update(
        self, subresource: str, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[FieldError]:
        return self.validate(obj, old)

    def prepare_subresource_update(self, subresource: str, new: dict[str, Any], old: dict[str, Any]) -> None:
        if subresource != "scale":
            raise errors.resource_not_found()

    def _type_meta(self, obj: dict[str, Any]) -> list[FieldError]:
        """upstream's ValidateTypeMeta: the object's kind and apiVersion are the URL's."""
        found = []
        version = self.definition.version_of(obj)
        api_version = f"{self.definition.group}/{version.name}"
        if obj.get("kind") != self.definition.kind:
            found.append(errors.invalid("kind", obj.get("kind"), f"must be {self.definition.kind}"))
        if obj.get("apiVersion") != api_version:
            found.append(errors.invalid("apiVersion", obj.get("apiVersion"), f"must be {api_version}"))
        return found

    def warning(self, obj: dict[str, Any]) -> str:
        return self.definition.version_of(obj).warning


def version_of(resource: ResourceInfo) -> Version:
    definition: Definition = resource.custom
    return definition.versions[resource.version]


def _nested(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, bool]:
    node: Any = obj
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None, False
        node = node[key]
    return node, True


def _replicas(obj: dict[str, Any], keys: tuple[str, ...]) -> list[FieldError]:
    """upstream's scale checks: a replicas field, where present, is an int32 that is not negative."""
    value, present = _nested(obj, keys)
    path = "." + ".".join(keys)
    if not present or value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return [errors.invalid(path, 0, f".{'.'.join(keys)} accessor error: {value!r} is of the type "
                               f"{type(value).__name__}, expected int64")]  # fmt: skip
    if value < 0:
        return [errors.invalid(path, int(value), "should be a non-negative integer")]
    if value > _MAX_INT32:
        return [errors.invalid(path, int(value), f"should be less than or equal to {_MAX_INT32}")]
    return []


def _scale_status(obj: dict[str, Any], scale: Scale) -> list[FieldError]:
    found = _replicas(obj, scale.status_replicas)
    if scale.label_selector is not None:
        value, present = _nested(obj, scale.label_selector)
        if present and value is not None and not isinstance(value, str):
            path = "." + ".".join(scale.label_selector)
            found.append(errors.invalid(path, "", f"{path} accessor error: {value!r} is of the type "
                                        f"{type(value).__name__}, expected string"))  # fmt: skip
    return found
