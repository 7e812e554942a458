"""Strategies for the storage.k8s.io/v1 kinds — StorageClasses, CSIDrivers, CSINodes, CSIStorageCapacities and
VolumeAttachments — with upstream's v1 defaulting and validation (`pkg/apis/storage/validation`) and the
strategies' preparation of writes. What they share with PersistentVolumes (a CSI driver's name, node selector terms)
is in `kinds/core/volumes.py`.

Nothing here provisions or attaches: a VolumeAttachment waits for something to write its status.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_list
from tinykube.api.meta import dns1123_subdomain, qualified_name
from tinykube.api.quantity import parse_quantity
from tinykube.apiserver.kinds.core.config import canonical_quantities
from tinykube.apiserver.kinds.core.volumes import csi_driver_name_errors, quantity_value, volume_label_selector_errors
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_pointer, go_selector, go_slice, go_string
from tinykube.apiserver.registry.validation import IMMUTABLE, NONNEGATIVE, NamedItems, default_if_nil, semantic

# ---- StorageClass -------------------------------------------------------------------------------------------------

_CLASS_RECLAIM_POLICIES = ["Delete", "Retain"]
_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
_MAX_PARAMETERS, _MAX_PARAMETERS_SIZE = 512, 256 * 1024


class StorageClassStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        default_if_nil(obj, "reclaimPolicy", "Delete")
        default_if_nil(obj, "volumeBindingMode", "Immediate")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = _provisioner_errors(obj.get("provisioner"), "provisioner")
        errs += _parameter_errors(obj.get("parameters"))
        policy = obj.get("reclaimPolicy")
        if policy and policy not in _CLASS_RECLAIM_POLICIES:
            errs.append(not_supported("reclaimPolicy", policy, _CLASS_RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode not in _BINDING_MODES:
            errs.append(
                required("volumeBindingMode")
                if mode is None
                else not_supported("volumeBindingMode", mode, _BINDING_MODES)
            )
        errs += _topology_errors(obj.get("allowedTopologies"), "allowedTopologies")
        return errs + (_storage_class_update_errors(obj, old) if old is not None else [])


def _provisioner_errors(provisioner: Any, path: str) -> list[FieldError]:
    """Required, and a qualified name once lowercased (the lowercased name is what errors show)."""
    if not provisioner:
        return [required(path)]
    lowered = str(provisioner).lower()
    return [invalid(path, lowered, msg) for msg in qualified_name(lowered)]


def _parameter_errors(parameters: Any) -> list[FieldError]:
    parameters = as_dict(parameters)
    if len(parameters) > _MAX_PARAMETERS:
        return [FieldError(ErrorType.TOO_LONG, "parameters", detail=f"may not be more than {_MAX_PARAMETERS} bytes")]
    errs = [invalid("parameters", key, "field can not be empty.") for key in parameters if not key]
    size = sum(len(str(key)) + len(str(value)) for key, value in parameters.items())
    if size > _MAX_PARAMETERS_SIZE:
        errs.append(
            FieldError(ErrorType.TOO_LONG, "parameters", detail=f"may not be more than {_MAX_PARAMETERS_SIZE} bytes")
        )
    return errs


def _topology_errors(terms: Any, path: str) -> list[FieldError]:
    """Each term's label requirements: values required and unique, keys unique label names; terms unique."""
    errs: list[FieldError] = []
    unique_terms = NamedItems()
    for i, term in enumerate(as_list(terms)):
        expressions: dict[str, set[str]] = {}
        keys = NamedItems()
        for j, req in enumerate(as_list(as_dict(term).get("matchLabelExpressions"))):
            here = f"{path}[{i}].matchLabelExpressions[{j}]"
            key, values = str(as_dict(req).get("key") or ""), [str(v) for v in as_list(as_dict(req).get("values"))]
            errs += [] if values else [required(f"{here}.values")]
            unique_values = NamedItems()
            errs += [err for k, v in enumerate(values) for err in unique_values.repeat(v, f"{here}.values[{k}]")]
            errs += [invalid(f"{here}.key", key, msg) for msg in qualified_name(key)]
            errs += keys.repeat(key, f"{here}.key")
            expressions[key] = set(values)
        errs += unique_terms.repeat(expressions, f"{path}[{i}].matchLabelExpressions", shown="")
    return errs


def _storage_class_update_errors(obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if (obj.get("parameters") or None) != (old.get("parameters") or None):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    for field in ("provisioner", "reclaimPolicy"):
        if obj.get(field) != old.get(field):
            errs.append(forbidden(field, f"updates to {field} are forbidden."))
    if obj.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(invalid("volumeBindingMode", obj.get("volumeBindingMode"), IMMUTABLE))
    return errs


# ---- CSIDriver ----------------------------------------------------------------------------------------------------

_FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
_LIFECYCLE_MODES = ["Persistent", "Ephemeral"]
_CSI_DRIVER_DEFAULTS = (
    ("attachRequired", True),
    ("podInfoOnMount", False),
    ("storageCapacity", False),
    ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
    ("requiresRepublish", False),
    ("seLinuxMount", False),
)


# (field, path of its error): upstream's path for attachRequired is "spec.attachedRequired"
_CSI_DRIVER_REQUIRED = (
    ("attachRequired", "spec.attachedRequired"),
    ("podInfoOnMount", "spec.podInfoOnMount"),
    ("storageCapacity", "spec.storageCapacity"),
    ("seLinuxMount", "spec.seLinuxMount"),
)


class CSIDriverStrategy(Strategy):
    tracks_generation = True  # any change of the spec is a new generation

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        for field, value in _CSI_DRIVER_DEFAULTS:
            default_if_nil(spec, field, value)
        if not spec.get("volumeLifecycleModes"):
            spec["volumeLifecycleModes"] = ["Persistent"]

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        errs = _csi_driver_spec_errors(spec)
        return errs + (_csi_driver_update_errors(spec, as_dict(old.get("spec"))) if old is not None else [])


def _csi_driver_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs = [required(path) for field, path in _CSI_DRIVER_REQUIRED if spec.get(field) is None]
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP_POLICIES:
        errs.append(not_supported("spec.fsGroupPolicy", policy, _FS_GROUP_POLICIES))
    errs += _token_request_errors(spec.get("tokenRequests"))
    modes = as_list(spec.get("volumeLifecycleModes"))
    return errs + [
        not_supported("spec.volumeLifecycleModes", m, _LIFECYCLE_MODES) for m in modes if m not in _LIFECYCLE_MODES
    ]


def _token_request_errors(requests: Any) -> list[FieldError]:
    """Audiences unique (one may be empty); expiry between 10 minutes and 2^32 seconds."""
    errs: list[FieldError] = []
    audiences = NamedItems()
    for i, request in enumerate(as_list(requests)):
        audience, seconds = str(as_dict(request).get("audience") or ""), as_dict(request).get("expirationSeconds")
        repeated = audiences.repeat(audience, f"spec.tokenRequests[{i}].audience")
        if repeated:
            errs += repeated
            continue
        if isinstance(seconds, int) and seconds < 600:
            errs.append(
                invalid(
                    f"spec.tokenRequests[{i}].expirationSeconds",
                    seconds,
                    "may not specify a duration less than 10 minutes",
                )
            )
        if isinstance(seconds, int) and seconds > 1 << 32:
            errs.append(
                invalid(
                    f"spec.tokenRequests[{i}].expirationSeconds",
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                )
            )
    return errs


def _csi_driver_update_errors(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """attachRequired and volumeLifecycleModes are immutable (the others became mutable in 1.29)."""
    errs: list[FieldError] = []
    if spec.get("attachRequired") != old_spec.get("attachRequired"):
        errs.append(invalid("spec.attachedRequired", spec.get("attachRequired"), IMMUTABLE))
    modes = spec.get("volumeLifecycleModes")
    if modes != old_spec.get("volumeLifecycleModes"):
        rendered = go_slice([str(m) for m in modes] if isinstance(modes, list) else None, "storage.VolumeLifecycleMode")
        errs.append(GoSyntaxError(ErrorType.INVALID, "spec.volumeLifecycleModes", rendered, IMMUTABLE))
    return errs


# ---- CSINode ------------------------------------------------------------------------------------------------------

_NODE_ID_MAX, _NODE_ID_LONG_MAX = 192, 256


class CSINodeStrategy(Strategy):
    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        drivers = as_list(as_dict(obj.get("spec")).get("drivers"))
        old_drivers = as_list(as_dict((old or {}).get("spec")).get("drivers"))
        longest = _longest_node_id(old_drivers)
        errs: list[FieldError] = []
        names = NamedItems()
        for i, driver in enumerate(drivers):
            errs += _csi_node_driver_errors(as_dict(driver), f"spec.drivers[{i}]", names, longest)
        return errs + (_csi_node_update_errors(drivers, old_drivers) if old is not None else [])


def _longest_node_id(old_drivers: list[Any]) -> int:
    """Node IDs up to 256 characters stay allowed where the stored object already has one longer than 192."""
    long_ids = any(len(str(as_dict(driver).get("nodeID") or "")) > _NODE_ID_MAX for driver in old_drivers)
    return _NODE_ID_LONG_MAX if long_ids else _NODE_ID_MAX


def _csi_node_driver_errors(driver: dict[str, Any], path: str, names: NamedItems, longest: int) -> list[FieldError]:
    name, node_id = driver.get("name"), str(driver.get("nodeID") or "")
    errs = csi_driver_name_errors(name, f"{path}.name")
    if not node_id:
        errs.append(required(f"{path}.nodeID"))
    if len(node_id) > longest:
        errs.append(invalid(f"{path}.nodeID", node_id, f"must be {longest} characters or less"))
    count = as_dict(driver.get("allocatable")).get("count")
    if isinstance(count, int) and count < 0:
        errs.append(invalid(f"{path}.allocatable.count", count, NONNEGATIVE))
    errs += names.repeat(str(name), f"{path}.name", shown=name)
    keys = NamedItems()
    for key in [str(k) for k in as_list(driver.get("topologyKeys"))]:  # errors name the driver, not the key
        errs += [required(path)] if not key else []
        errs += keys.repeat(key, path)
        errs += [invalid(path, key, msg) for msg in qualified_name(key)]
    return errs


def _csi_node_update_errors(drivers: list[Any], old_drivers: list[Any]) -> list[FieldError]:
    """A registered driver does not change: only drivers may come and go."""
    errs: list[FieldError] = []
    for old in map(as_dict, old_drivers):
        for new in map(as_dict, drivers):
            if new.get("name") == old.get("name") and semantic(new) != semantic(old):
                errs.append(GoSyntaxError(ErrorType.INVALID, "spec.drivers", _go_csi_node_driver(new), IMMUTABLE))
    return errs


def _go_csi_node_driver(driver: dict[str, Any]) -> str:
    keys = driver.get("topologyKeys")
    return (
        f"storage.CSINodeDriver{{Name:{go_string(driver.get('name'))}, NodeID:{go_string(driver.get('nodeID'))}, "
        f"TopologyKeys:{go_slice([str(k) for k in keys] if isinstance(keys, list) else None, 'string')}, "
        f"Allocatable:{go_pointer(driver.get('allocatable'), 'storage.VolumeNodeResources')}}}"
    )


# ---- CSIStorageCapacity -------------------------------------------------------------------------------------------


_CAPACITY_FIELDS = ("capacity", "maximumVolumeSize")


class CSIStorageCapacityStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        for field in _CAPACITY_FIELDS:
            if obj.get(field) is None:
                obj.pop(field, None)  # nil: no quantity, not the zero one
        quantities: dict[str, Any] = {field: obj[field] for field in _CAPACITY_FIELDS if field in obj}
        canonical_quantities(self.resource, quantities)
        obj.update(quantities)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = volume_label_selector_errors(obj.get("nodeTopology"), "nodeTopology")
        name = obj.get("storageClassName")
        errs += [invalid("storageClassName", name, msg) for msg in dns1123_subdomain(str(name or ""))]
        capacity = quantity_value(obj.get("capacity")) if obj.get("capacity") is not None else None
        if capacity is not None and capacity < 0:
            errs.append(invalid("capacity", str(parse_quantity(obj["capacity"])), NONNEGATIVE))
        if old is None:
            return errs
        topology = obj.get("nodeTopology")
        if semantic(topology) != semantic(old.get("nodeTopology")):
            errs.append(
                GoSyntaxError(
                    ErrorType.INVALID, "nodeTopology", "null" if topology is None else go_selector(topology), IMMUTABLE
                )
            )
        if name != old.get("storageClassName"):
            errs.append(invalid("storageClassName", name, IMMUTABLE))
        return errs


# ---- VolumeAttachment ---------------------------------------------------------------------------------------------

_MAX_ATTACH_METADATA = 256 * 1024
_MAX_VOLUME_ERROR = 1024


class VolumeAttachmentStrategy(Strategy):
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("attached", False)  # not omitted when false, as upstream serializes it

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        errs = _attachment_spec_errors(spec) + _attachment_status_errors(as_dict(obj.get("status")))
        if old is None:  # v1's stricter checks of new attachments
            errs += csi_driver_name_errors(spec.get("attacher"), "spec.attacher")
            pv = as_dict(spec.get("source")).get("persistentVolumeName")
            if pv is not None:
                errs += [invalid("spec.source.persistentVolumeName", pv, msg) for msg in dns1123_subdomain(str(pv))]
        elif semantic(obj.get("spec")) != semantic(old.get("spec")):
            errs.append(GoSyntaxError(ErrorType.INVALID, "spec", _go_attachment_spec(spec), IMMUTABLE))
        return errs


def _attachment_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs = [] if spec.get("attacher") else [required("spec.attacher")]
    source = as_dict(spec.get("source"))
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    exactly_one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and pv is None:
        errs.append(required("spec.source", exactly_one))
    elif inline is not None and pv is not None:
        errs.append(forbidden("spec.source", exactly_one))
    elif pv is not None and not pv:
        errs.append(required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"))
    elif inline is not None and as_dict(inline).get("csi") is None:
        errs.append(
            required("spec.source.inlineVolumeSpec.csi", "has to be specified in the context of inline volumes")
        )
    node = str(spec.get("nodeName") or "")
    return errs + [invalid("spec.nodeName", node, msg) for msg in dns1123_subdomain(node)]


def _attachment_status_errors(status: dict[str, Any]) -> list[FieldError]:
    metadata = as_dict(status.get("attachmentMetadata"))
    errs: list[FieldError] = []
    if sum(len(str(k)) + len(str(v)) for k, v in metadata.items()) > _MAX_ATTACH_METADATA:
        errs.append(
            FieldError(
                ErrorType.TOO_LONG,
                "status.attachmentMetadata",
                detail=f"may not be more than {_MAX_ATTACH_METADATA} bytes",
            )
        )
    for field in ("attachError", "detachError"):
        error = as_dict(status.get(field))
        if len(str(error.get("message") or "")) > _MAX_VOLUME_ERROR:
            # upstream states the metadata's limit here
            errs.append(
                FieldError(
                    ErrorType.TOO_LONG,
                    f"status.{field}.message",
                    detail=f"may not be more than {_MAX_ATTACH_METADATA} bytes",
                )
            )
        code = error.get("errorCode")
        if isinstance(code, int) and code < 0:
            errs.append(invalid(f"status.{field}.errorCode", code, "must be between 0 and 2147483647, inclusive"))
    return errs


def _go_attachment_spec(spec: dict[str, Any]) -> str:
    source = as_dict(spec.get("source"))
    pv, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    rendered_source = (
        f"storage.VolumeAttachmentSource{{PersistentVolumeName:{go_pointer(pv, 'string')}, "
        f"InlineVolumeSpec:{go_pointer(inline, 'core.PersistentVolumeSpec')}}}"
    )
    return (
        f"storage.VolumeAttachmentSpec{{Attacher:{go_string(spec.get('attacher'))}, Source:{rendered_source}, "
        f"NodeName:{go_string(spec.get('nodeName'))}}}"
    )


STRATEGIES: dict[str, type[Strategy]] = {
    "storageclasses": StorageClassStrategy,
    "csidrivers": CSIDriverStrategy,
    "csinodes": CSINodeStrategy,
    "csistoragecapacities": CSIStorageCapacityStrategy,
    "volumeattachments": VolumeAttachmentStrategy,
}
