"""Strategies for the core/v1 storage kinds — PersistentVolumes and PersistentVolumeClaims — with upstream's v1
defaulting and validation (`pkg/apis/core/validation`) and the strategies' preparation of writes. The storage.k8s.io
kinds are in `kinds/storage/strategy.py`; they reuse a few checks from here (a CSI driver's name, selectors).

Feature gates are as a default kube-apiserver 1.32 has them: VolumeAttributesClass is off (so
`volumeAttributesClassName` is dropped from volumes and claims that do not already carry one, as upstream drops
disabled fields), CrossNamespaceVolumeDataSource is off, AnyVolumeDataSource, RecoverVolumeExpansionFailure,
PersistentVolumeLastPhaseTransitionTime and SELinuxMountReadWriteOncePod are on.

Nothing here binds, provisions or attaches: a claim stays Pending until something writes its status.
"""

from __future__ import annotations

import copy
import posixpath
from fractions import Fraction
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_list
from tinykube.api.meta import dns1123_label, dns1123_subdomain, label_value, now, qualified_name, validate_labels
from tinykube.api.quantity import QuantityError, parse_quantity
from tinykube.apiserver.kinds.core.config import canonical_quantities, go_resource_list
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_pointer
from tinykube.apiserver.registry.validation import IMMUTABLE, default_if_nil, semantic, validate_requirement

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


def quantity_value(raw: Any) -> Fraction | None:
    try:
        return parse_quantity(raw).value
    except QuantityError:
        return None


# ---- pieces shared by volumes and claims -------------------------------------------------------------------------


def _access_mode_errors(modes: Any, path: str, missing: str) -> list[FieldError]:
    """At least one supported access mode; ReadWriteOncePod only alone."""
    errs = [] if modes else [required(path, missing)]
    strings = [mode for mode in as_list(modes) if isinstance(mode, str)]
    errs += [not_supported(path, mode, ACCESS_MODES) for mode in as_list(modes) if mode not in ACCESS_MODES]
    if "ReadWriteOncePod" in strings and any(m in ACCESS_MODES and m != "ReadWriteOncePod" for m in strings):
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _volume_mode_errors(mode: Any, path: str) -> list[FieldError]:
    return [] if mode is None or mode in VOLUME_MODES else [not_supported(path, mode, VOLUME_MODES)]


def _class_name_errors(name: Any, path: str) -> list[FieldError]:
    return [invalid(path, name, msg) for msg in dns1123_subdomain(str(name))] if name else []


def _positive_storage_errors(raw: Any, path: str, *, whole_units: bool) -> list[FieldError]:
    """`ValidatePositiveQuantityValue`, after `validateBasicResource` (whole units not negative) for volumes."""
    try:
        quantity = parse_quantity(raw)
    except QuantityError as err:
        return [invalid(path, raw, str(err))]
    errs = []
    if whole_units and quantity.whole() < 0:
        errs.append(invalid(path, quantity.whole(), "must be a valid resource quantity"))
    return errs + ([invalid(path, str(quantity), "must be greater than zero")] if quantity.value <= 0 else [])


def volume_label_selector_errors(selector: Any, path: str) -> list[FieldError]:
    """`ValidateLabelSelector` (nil is no selector); label values of expressions are labels' values."""
    if selector is None:
        return []
    selector = as_dict(selector)
    errs = validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for i, expr in enumerate(as_list(selector.get("matchExpressions"))):
        here = f"{path}.matchExpressions[{i}]"
        errs += validate_requirement(as_dict(expr), here)
        for j, value in enumerate(as_list(as_dict(expr).get("values"))):
            errs += [invalid(f"{here}.values[{j}]", value, msg) for msg in label_value(str(value))]
    return errs


# ---- PersistentVolume ---------------------------------------------------------------------------------------------

# PersistentVolumeSource's members in upstream's order, with the name its "more than 1" error uses (flexVolume has
# none: it is counted, never refused).
_PV_SOURCES = (
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", ""),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)
_SOURCE_FIELDS = frozenset(key for key, _ in _PV_SOURCES)

# The fields each in-tree source requires, and the path its errors use (gcePersistentDisk's say "persistentDisk").
_REQUIRED_SOURCE_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gcePersistentDisk": ("persistentDisk", ("pdName",)),
    "awsElasticBlockStore": ("awsElasticBlockStore", ("volumeID",)),
    "glusterfs": ("glusterfs", ("endpoints", "path")),
    "rbd": ("rbd", ("monitors", "image")),
    "quobyte": ("quobyte", ("registry", "volume")),
    "cephfs": ("cephfs", ("monitors",)),
    "cinder": ("cinder", ("volumeID",)),
    "flexVolume": ("flexVolume", ("driver",)),
    "azureFile": ("azureFile", ("secretName", "shareName")),
    "vsphereVolume": ("vsphereVolume", ("volumePath",)),
    "photonPersistentDisk": ("photonPersistentDisk", ("pdID",)),
    "portworxVolume": ("portworxVolume", ("volumeID",)),
    "azureDisk": ("azureDisk", ("diskName", "diskURI")),
    "scaleIO": ("scaleIO", ("gateway", "system", "volumeName")),
    "storageos": ("storageos", ("volumeName",)),
}
_HOST_PATH_TYPES = [
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
]
_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]


class PersistentVolumeStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            if not spec.get("persistentVolumeReclaimPolicy"):
                spec["persistentVolumeReclaimPolicy"] = "Retain"
            default_if_nil(spec, "volumeMode", "Filesystem")
            if isinstance(spec.get("hostPath"), dict):
                spec["hostPath"].setdefault("type", "")
            canonical_quantities(self.resource, spec.get("capacity"))
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        obj["status"]["lastPhaseTransitionTime"] = now()
        _drop_attributes_class(obj.get("spec"), None)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        _drop_attributes_class(new.get("spec"), old.get("spec"))

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """A phase change is stamped with its time unless the writer stamped it; no change keeps the old stamp."""
        super().prepare_status_update(new, old)
        status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
        stamp, old_stamp = status.get("lastPhaseTransitionTime"), old_status.get("lastPhaseTransitionTime")
        if status.get("phase") == old_status.get("phase"):
            if stamp is None and old_stamp is not None:
                status["lastPhaseTransitionTime"] = old_stamp
        elif stamp is None or stamp == old_stamp:
            status["lastPhaseTransitionTime"] = now()

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        errs = _pv_spec_errors(spec)
        return errs + (_pv_update_errors(spec, as_dict(old.get("spec"))) if old is not None else [])


def _drop_attributes_class(spec: Any, old_spec: Any) -> None:
    """VolumeAttributesClass is off by default in 1.32: the field is dropped unless the stored object uses it."""
    if isinstance(spec, dict) and as_dict(old_spec).get("volumeAttributesClassName") is None:
        spec.pop("volumeAttributesClassName", None)


def _pv_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs = _access_mode_errors(spec.get("accessModes"), "spec.accessModes", "")
    errs += _capacity_errors(spec.get("capacity"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in _RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, _RECLAIM_POLICIES))
    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        errs += _volume_node_affinity_errors(as_dict(affinity), "spec.nodeAffinity")
    errs += _pv_source_errors(spec, node_affinity=affinity is not None)
    host_path = as_dict(spec.get("hostPath"))
    if host_path and _go_clean(host_path.get("path")) == "/" and policy == "Recycle":
        errs.append(forbidden("spec.persistentVolumeReclaimPolicy", "may not be 'recycle' for a hostPath mount of '/'"))
    errs += _class_name_errors(spec.get("storageClassName"), "spec.storageClassName")
    return errs + _volume_mode_errors(spec.get("volumeMode"), "spec.volumeMode")


def _capacity_errors(capacity: Any) -> list[FieldError]:
    """A capacity of storage, and nothing else, greater than zero."""
    errs = [] if capacity else [required("spec.capacity")]
    if not isinstance(capacity, dict) or "storage" not in capacity or len(capacity) > 1:
        rendered = go_resource_list(capacity if isinstance(capacity, dict) else None)
        errs.append(GoSyntaxError(ErrorType.NOT_SUPPORTED, "spec.capacity", rendered, 'supported values: "storage"'))
    for name, raw in as_dict(capacity).items():
        errs += _positive_storage_errors(raw, f"spec.capacity[{name}]", whole_units=True)
    return errs


def _pv_source_errors(spec: dict[str, Any], *, node_affinity: bool) -> list[FieldError]:
    """Exactly one volume source, each checked as upstream checks it."""
    errs: list[FieldError] = []
    count = 0
    for key, name in _PV_SOURCES:
        if spec.get(key) is None:
            continue
        if count and name:
            errs.append(forbidden(f"spec.{name}", "may not specify more than 1 volume type"))
            continue
        count += 1
        errs += _source_errors(key, as_dict(spec[key]), node_affinity=node_affinity)
    return errs + ([] if count else [required("spec", "must specify a volume type")])


def _source_errors(key: str, source: dict[str, Any], *, node_affinity: bool) -> list[FieldError]:
    if key == "hostPath":
        return _host_path_errors(source, "spec.hostPath")
    if key == "nfs":
        return _nfs_errors(source, "spec.nfs")
    if key == "local":
        errs = _path_errors(source.get("path"), "spec.local.path")
        return errs + ([] if node_affinity else [required("spec.nodeAffinity", "Local volume requires node affinity")])
    if key == "csi":
        return _csi_source_errors(source, "spec.csi")
    path, fields = _REQUIRED_SOURCE_FIELDS.get(key, (key, ()))
    return [required(f"spec.{path}.{field}") for field in fields if not source.get(field)]


def _path_errors(path: Any, field: str) -> list[FieldError]:
    """A required path without '..' elements (`validatePathNoBacksteps`)."""
    if not path:
        return [required(field)]
    if ".." in str(path).split("/"):
        return [invalid(field, path, "must not contain '..'")]
    return []


def _host_path_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    errs = _path_errors(source.get("path"), f"{path}.path")
    kind = source.get("type")
    if source.get("path") and kind is not None and kind not in _HOST_PATH_TYPES:
        errs.append(not_supported(f"{path}.type", kind, _HOST_PATH_TYPES))
    return errs


def _go_clean(path: Any) -> str:
    """Go's `path.Clean`, which (unlike `posixpath.normpath`) also folds a leading "//"."""
    cleaned = posixpath.normpath(str(path))
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _nfs_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    errs = [required(f"{path}.{field}") for field in ("server", "path") if not source.get(field)]
    if not str(source.get("path") or "").startswith("/"):
        errs.append(invalid(f"{path}.path", source.get("path") or "", "must be an absolute path"))
    return errs


def csi_driver_name_errors(name: Any, path: str) -> list[FieldError]:
    """`ValidateCSIDriverName`: required, at most 63 characters, a DNS subdomain once lowercased."""
    text = name if isinstance(name, str) else ""
    errs = [] if text else [required(path)]
    if len(text) > 63:
        errs.append(FieldError(ErrorType.TOO_LONG, path, detail="may not be more than 63 bytes"))
    return errs + [invalid(path, text, msg) for msg in dns1123_subdomain(text.lower())]


_CSI_SECRET_REFS = (
    "controllerPublishSecretRef",
    "controllerExpandSecretRef",
    "nodePublishSecretRef",
    "nodeExpandSecretRef",
)


def _csi_source_errors(source: dict[str, Any], path: str) -> list[FieldError]:
    errs = csi_driver_name_errors(source.get("driver"), f"{path}.driver")
    if not source.get("volumeHandle"):
        errs.append(required(f"{path}.volumeHandle"))
    for ref in _CSI_SECRET_REFS:
        if source.get(ref) is not None:
            errs += _secret_reference_errors(as_dict(source[ref]), f"{path}.{ref}")
    return errs


def _secret_reference_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    name, namespace = str(ref.get("name") or ""), str(ref.get("namespace") or "")
    errs = (
        [invalid(f"{path}.name", name, msg) for msg in dns1123_subdomain(name)] if name else [required(f"{path}.name")]
    )
    if not namespace:
        return [*errs, required(f"{path}.namespace")]
    return errs + [invalid(f"{path}.namespace", namespace, msg) for msg in dns1123_label(namespace)]


def _volume_node_affinity_errors(affinity: dict[str, Any], path: str) -> list[FieldError]:
    selector = affinity.get("required")
    if selector is None:
        return [required(f"{path}.required", "must specify required node constraints")]
    terms = as_list(as_dict(selector).get("nodeSelectorTerms"))
    if not terms:
        return [required(f"{path}.required.nodeSelectorTerms", "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        for j, expr in enumerate(as_list(as_dict(term).get("matchExpressions"))):
            errs += _node_requirement_errors(
                as_dict(expr), f"{path}.required.nodeSelectorTerms[{i}].matchExpressions[{j}]"
            )
    return errs


def _node_requirement_errors(expr: dict[str, Any], path: str) -> list[FieldError]:
    """`ValidateNodeSelectorRequirement`."""
    operator, values = expr.get("operator"), as_list(expr.get("values"))
    errs: list[FieldError] = []
    if operator in ("In", "NotIn") and not values:
        errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt") and len(values) != 1:
        errs.append(required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    elif operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        errs.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    key = str(expr.get("key") or "")
    errs += [invalid(f"{path}.key", key, msg) for msg in qualified_name(key)]
    for i, value in enumerate(values):
        errs += [invalid(f"{path}.values[{i}]", value, msg) for msg in label_value(str(value))]
    return errs


def _pv_update_errors(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """The volume source cannot change (a CSI volume may gain an expansion secret), nor the volume mode, nor node
    affinity once set."""
    sources = {key: copy.deepcopy(spec[key]) for key in _SOURCE_FIELDS if key in spec}
    old_sources = {key: old_spec[key] for key in _SOURCE_FIELDS if key in old_spec}
    csi, old_csi = as_dict(sources.get("csi")), as_dict(old_sources.get("csi"))
    if csi and old_csi and old_csi.get("controllerExpandSecretRef") is None:
        csi.pop("controllerExpandSecretRef", None)
    errs: list[FieldError] = []
    if semantic(sources) != semantic(old_sources):
        message = "spec.persistentvolumesource is immutable after creation"
        errs.append(forbidden("spec.persistentvolumesource", message))
    errs += _immutable_mode(spec.get("volumeMode"), old_spec.get("volumeMode"))
    affinity, old_affinity = spec.get("nodeAffinity"), old_spec.get("nodeAffinity")
    if old_affinity is not None and semantic(affinity) != semantic(old_affinity):
        rendered = "null" if affinity is None else _go_node_affinity(as_dict(affinity))
        detail = f"{IMMUTABLE}, except for updating from beta label to GA"
        errs.append(GoSyntaxError(ErrorType.INVALID, "nodeAffinity", rendered, detail))
    return errs


def _immutable_mode(mode: Any, old_mode: Any) -> list[FieldError]:
    # upstream's path is "volumeMode", not "spec.volumeMode"
    return [] if mode == old_mode else [invalid("volumeMode", mode, IMMUTABLE)]


def _go_node_affinity(affinity: dict[str, Any]) -> str:
    return f"core.VolumeNodeAffinity{{Required:{go_pointer(affinity.get('required'), 'core.NodeSelector')}}}"


# ---- PersistentVolumeClaim ----------------------------------------------------------------------------------------

_IMMUTABLE_CLAIM = (
    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
)
_SNAPSHOT_GROUP = "snapshot.storage.k8s.io"


class PersistentVolumeClaimStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_if_nil(spec, "volumeMode", "Filesystem")
            resources = as_dict(spec.get("resources"))
            for field in ("requests", "limits"):
                canonical_quantities(self.resource, resources.get(field))
        status = obj.setdefault("status", {})
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"
        self._canonical_status(obj)

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        _prepare_claim_spec(obj.get("spec"), None)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        _prepare_claim_spec(new.get("spec"), old.get("spec"))

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_status_update(new, old)
        self._canonical_status(new)  # a status write is decoded too

    def _canonical_status(self, obj: dict[str, Any]) -> None:
        status = as_dict(obj.get("status"))
        for field in ("capacity", "allocatedResources"):
            canonical_quantities(self.resource, status.get(field))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        errs = _claim_spec_errors(spec) + _claim_status_errors(as_dict(obj.get("status")))
        return errs + (_claim_update_errors(obj, old) if old is not None else [])


def _prepare_claim_spec(spec: Any, old_spec: Any) -> None:
    """Disabled fields dropped, a data source that is neither a claim nor a snapshot dropped (unless the stored
    claim had one), and `dataSource` and `dataSourceRef` each filled in from the other."""
    if not isinstance(spec, dict):
        return
    _drop_attributes_class(spec, old_spec)
    ref = spec.get("dataSourceRef")
    if isinstance(ref, dict) and not as_dict(as_dict(old_spec).get("dataSourceRef")).get("namespace"):
        ref.pop("namespace", None)  # CrossNamespaceVolumeDataSource is off
    if as_dict(old_spec).get("dataSource") is None and not _known_data_source(spec.get("dataSource")):
        spec.pop("dataSource", None)
    normalize_data_sources(spec)


def _known_data_source(source: Any) -> bool:
    source = as_dict(source)
    group, kind = source.get("apiGroup") or "", source.get("kind")
    return (kind == "PersistentVolumeClaim" and not group) or (kind == "VolumeSnapshot" and group == _SNAPSHOT_GROUP)


def normalize_data_sources(spec: dict[str, Any]) -> None:
    """`NormalizeDataSources`: whichever of the two is missing is copied from the other."""
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(source, dict) and ref is None:
        spec["dataSourceRef"] = {k: source[k] for k in ("apiGroup", "kind", "name") if k in source}
    elif isinstance(ref, dict) and source is None and not ref.get("namespace"):
        spec["dataSource"] = {k: ref[k] for k in ("apiGroup", "kind", "name") if k in ref}


def _claim_spec_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs = _access_mode_errors(spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required")
    errs += volume_label_selector_errors(spec.get("selector"), "spec.selector")
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        errs.append(required("spec.resources[storage]"))  # upstream's path, without "requests"
    else:
        errs += _positive_storage_errors(requests["storage"], "spec.resources[storage]", whole_units=False)
    errs += _class_name_errors(spec.get("storageClassName"), "spec.storageClassName")
    errs += _volume_mode_errors(spec.get("volumeMode"), "spec.volumeMode")
    return errs + _data_source_errors(spec)


def _data_source_errors(spec: dict[str, Any]) -> list[FieldError]:
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    errs: list[FieldError] = []
    if source is not None:
        errs += _reference_errors(as_dict(source), "spec.dataSource")
    if ref is not None:
        errs += _reference_errors(as_dict(ref), "spec.dataSourceRef")
        namespace = str(as_dict(ref).get("namespace") or "")
        messages = dns1123_label(namespace) if namespace else []
        errs += [invalid("spec.dataSourceRef.namespace", namespace, msg) for msg in messages]
    if _sources_differ(source, ref):
        # upstream reports the *field.Path of dataSource as the value (any pointer address will do)
        path = 'field.Path{name:"dataSource", index:"", parent:(*field.Path)(0xc000000000)}'
        errs.append(GoSyntaxError(ErrorType.INVALID, "spec", path, "must match dataSourceRef"))
    return errs


def _sources_differ(source: Any, ref: Any) -> bool:
    if not isinstance(source, dict) or not isinstance(ref, dict) or ref.get("namespace"):
        return False
    return any(source.get(key) != ref.get(key) for key in ("apiGroup", "kind", "name"))


def _reference_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    errs = [required(f"{path}.{field}") for field in ("name", "kind") if not ref.get(field)]
    group, kind = str(ref.get("apiGroup") or ""), ref.get("kind") or ""
    if not group and kind != "PersistentVolumeClaim":
        errs.append(invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
    if group:
        errs += [invalid(f"{path}.apiGroup", group, msg) for msg in dns1123_subdomain(group)]
    return errs


def _claim_status_errors(status: dict[str, Any]) -> list[FieldError]:
    """What a status write may not say: a negative capacity or allocation."""
    errs: list[FieldError] = []
    for field in ("capacity", "allocatedResources"):
        for name, raw in as_dict(status.get(field)).items():
            quantity = quantity_value(raw)
            if quantity is not None and quantity < 0:
                errs.append(
                    invalid(f"status.{field}[{name}]", parse_quantity(raw).whole(), "must be a valid resource quantity")
                )
    return errs


def _claim_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """Claims are immutable, so that quota and limits cannot be gamed: a volume name may be set once, a storage
    class given by the beta annotation (or none) may be set, and a bound claim may grow."""
    spec, old_spec = _comparable_claim(new.get("spec")), _comparable_claim(old.get("spec"))
    normalize_data_sources(old_spec)
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = spec.get("volumeName")
    errs = _storage_class_change(new, old, spec, old_spec)
    if as_dict(new.get("status")).get("phase") == "Bound":
        requests = as_dict(spec.get("resources")).get("requests")
        if isinstance(requests, dict):
            requests["storage"] = as_dict(as_dict(old_spec.get("resources")).get("requests")).get("storage")
        if spec.get("volumeAttributesClassName") is not None:
            spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")
    if semantic(spec) != semantic(old_spec):
        errs.append(forbidden("spec", _IMMUTABLE_CLAIM))
    errs += _shrink_errors(new, old)
    return errs + _immutable_mode(
        as_dict(new.get("spec")).get("volumeMode"), as_dict(old.get("spec")).get("volumeMode")
    )


def _comparable_claim(spec: Any) -> dict[str, Any]:
    """A claim spec for `Semantic.DeepEqual`: a copy whose quantities are numbers."""
    comparable = copy.deepcopy(as_dict(spec))
    for field in ("requests", "limits"):
        quantities = as_dict(as_dict(comparable.get("resources")).get(field))
        for name, raw in quantities.items():
            quantities[name] = quantity_value(raw)
    return comparable


def _storage_class_change(
    new: dict[str, Any], old: dict[str, Any], spec: dict[str, Any], old_spec: dict[str, Any]
) -> list[FieldError]:
    """The upgrade paths upstream allows: from the beta annotation to the field, and from no class to one."""
    annotations, old_annotations = (
        as_dict(new["metadata"].get("annotations")),
        as_dict(old["metadata"].get("annotations")),
    )
    old_class, new_class = old_spec.get("storageClassName"), spec.get("storageClassName")
    if BETA_STORAGE_CLASS in old_annotations and old_class is None:
        annotated = old_annotations[BETA_STORAGE_CLASS]
        if new_class == annotated and annotations.get(BETA_STORAGE_CLASS, annotated) == annotated:
            spec.pop("storageClassName", None)
            return []
    errs: list[FieldError] = []
    value, old_value = annotations.get(BETA_STORAGE_CLASS, ""), old_annotations.get(BETA_STORAGE_CLASS, "")
    if value != old_value:
        errs.append(invalid(f"metadata.annotations.{BETA_STORAGE_CLASS}", value, IMMUTABLE))
    annotated = old_annotations.get(BETA_STORAGE_CLASS, new_class)
    if new_class is not None and old_class is None and new_class == annotated:
        spec.pop("storageClassName", None)
    return errs


def _shrink_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """A request may go down again (to recover from a failed expansion), but not to the capacity or below."""

    def size(obj: dict[str, Any], *path: str) -> Fraction:
        value: Any = obj
        for key in path:
            value = as_dict(value).get(key)
        return quantity_value(value) or Fraction(0)

    requested, before = (
        size(new, "spec", "resources", "requests", "storage"),
        size(old, "spec", "resources", "requests", "storage"),
    )
    if requested < before and requested <= size(old, "status", "capacity", "storage"):
        return [forbidden("spec.resources.requests.storage", "field can not be less than status.capacity")]
    return []


STRATEGIES: dict[str, type[Strategy]] = {
    "persistentvolumes": PersistentVolumeStrategy,
    "persistentvolumeclaims": PersistentVolumeClaimStrategy,
}
