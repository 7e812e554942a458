"""Validation of `x-kubernetes-embedded-resource` objects (upstream's `objectmeta.Validate`).

An embedded object needs `apiVersion` and `kind` (strings, non-empty; the apiVersion a valid group/version, the
kind a DNS-1035 label once lower-cased); its `metadata`, if any, must decode as an ObjectMeta and pass
`ValidateObjectMeta` with path-segment names (a missing name is fine: upstream validates with a fake one), and is
namespaced only if it names a namespace. The root object's own metadata is the registry's job, not this module's.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import ErrorType, FieldError, invalid, required
from tinykube.api.meta import dns1035_label, dns1123_label, label_value, qualified_name
from tinykube.apiextensions import objectmeta
from tinykube.apiextensions.node import Node


def validate(node: Node, value: Any, path: str | None, errs: list[FieldError]) -> None:
    """Check every embedded resource under `value` (whose schema is `node`, at field path `path`)."""
    if not node.needs_embedded:
        return
    if type(value) is dict:
        if node.embedded:
            _resource(value, path, errs)
        props, additional = node.properties, node.additional
        for key, item in value.items():
            if props is not None and key in props:
                validate(props[key], item, f"{path}.{key}" if path else key, errs)
            elif additional is not None:
                validate(additional, item, f"{path or ''}[{key}]", errs)
    elif type(value) is list and node.items is not None:
        for i, item in enumerate(value):
            validate(node.items, item, f"{path or ''}[{i}]", errs)


def _child(path: str | None, key: str) -> str:
    return f"{path}.{key}" if path else key


def _resource(value: dict[str, Any], path: str | None, errs: list[FieldError]) -> None:
    if "apiVersion" not in value:
        errs.append(required(_child(path, "apiVersion")))
    if "kind" not in value:
        errs.append(required(_child(path, "kind")))
    for key, item in value.items():
        if key == "apiVersion":
            errs += _api_version(item, _child(path, key))
        elif key == "kind":
            errs += _kind(item, _child(path, key))
        elif key == "metadata":
            errs += _metadata(item, _child(path, key))


def _api_version(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, str):
        return [invalid(path, value, "must be a string")]
    if not value:
        return [invalid(path, value, "must not be empty")]
    if value != "/" and value.count("/") > 1:
        return [invalid(path, value, f"unexpected GroupVersion string: {value}")]
    return []


def _kind(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, str):
        return [invalid(path, value, "must be a string")]
    if not value:
        return [invalid(path, value, "must not be empty")]
    problems = dns1035_label(value.lower())
    if problems:
        return [invalid(path, value, "may have mixed case, but should otherwise match: " + ",".join(problems))]
    return []


def _path_segment(name: str, *, prefix: bool) -> list[str]:
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _metadata(value: Any, path: str) -> list[FieldError]:
    err = objectmeta.decode_error(value)
    if err is not None:
        return [invalid(path, value, err)]
    if not isinstance(value, dict):
        return []
    errs: list[FieldError] = []
    generate_name, name = value.get("generateName") or "", value.get("name") or "fakename"
    if generate_name:
        errs += [invalid(f"{path}.generateName", generate_name, m) for m in _path_segment(generate_name, prefix=True)]
    errs += [invalid(f"{path}.name", name, m) for m in _path_segment(name, prefix=False)]
    namespace = value.get("namespace") or ""
    if namespace:
        errs += [invalid(f"{path}.namespace", namespace, m) for m in dns1123_label(namespace)]
    generation = value.get("generation") or 0
    if generation < 0:
        errs.append(invalid(f"{path}.generation", generation, "must be greater than or equal to 0"))
    for key, label in (value.get("labels") or {}).items():
        errs += [invalid(f"{path}.labels", key, m) for m in qualified_name(key)]
        errs += [invalid(f"{path}.labels", label or "", m) for m in label_value(label or "")]
    annotations = value.get("annotations") or {}
    for key in annotations:
        errs += [invalid(f"{path}.annotations", key, m) for m in qualified_name(key.lower())]
    if sum(len(k) + len(v or "") for k, v in annotations.items()) > 256 * 1024:
        errs.append(FieldError(ErrorType.TOO_LONG, f"{path}.annotations", detail="may not be more than 262144 bytes"))
    for finalizer in value.get("finalizers") or []:
        errs += [invalid(f"{path}.finalizers", finalizer, m) for m in qualified_name(finalizer or "")]
    return errs + _owner_references(value.get("ownerReferences") or [], f"{path}.ownerReferences")


def _owner_references(refs: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for i, ref in enumerate(refs):
        ref = ref or {}
        at = f"{path}[{i}]"
        api_version = ref.get("apiVersion") or ""
        if not api_version:
            errs.append(required(f"{at}.apiVersion", "must not be empty"))
        elif api_version.count("/") > 1 or api_version.endswith("/"):
            errs.append(invalid(f"{at}.apiVersion", api_version, "must be <group>/<version> or <version>"))
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                errs.append(required(f"{at}.{key}", "must not be empty"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind') or ''}/{ref.get('name') or ''}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {current}"
                )
                errs.append(invalid(path, refs, detail))
            else:
                first_controller = current
    return errs
