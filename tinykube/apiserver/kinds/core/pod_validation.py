"""Upstream's ValidatePodSpec, for the parts a client (or a fuzzer) reaches: container and volume names, ports,
environment variable names, volume mounts, restart and DNS policies, resource quantities — with upstream's field
paths and messages. Every field may arrive with any JSON type: a wrong one is a field error, never an exception."""

from __future__ import annotations

import re
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.meta import dns1123_label, regex_error
from tinykube.apiserver.registry.netvalidation import iana_port_name_errors
from tinykube.apiserver.registry.validation import NamedItems

RESTART_POLICIES = ["Always", "Never", "OnFailure"]
DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
_ENV_NAME = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit"
)
_QUANTITY = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_RE = re.compile(_QUANTITY)
_PORT_RANGE = "must be between 1 and 65535, inclusive"
# upstream's IsValidSysctlName: dot- or slash-separated segments, at most 253 characters
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_FORMAT = f"({_SYSCTL_SEGMENT}[\\./])*{_SYSCTL_SEGMENT}"
_SYSCTL_RE = re.compile(f"^{SYSCTL_FORMAT}$")
SYSCTL_MAX_LENGTH = 253


def _enumerated(items: Any) -> list[tuple[int, Any]]:
    return list(enumerate(items)) if isinstance(items, list) else []


def _not_found(field: str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, field, value)


def validate_pod_spec(spec: Any, path: str) -> list[FieldError]:
    if not isinstance(spec, dict):
        return [invalid(path, spec, "must be an object")]
    errs: list[FieldError] = []
    volumes, errs_volumes = _volumes(spec.get("volumes"), f"{path}.volumes")
    errs += errs_volumes
    names = NamedItems(dns1123_label)  # init and app containers share their names
    init = spec.get("initContainers")
    if init is not None:
        errs += _containers(init, f"{path}.initContainers", names, volumes)
    containers = spec.get("containers")
    if not containers:
        errs.append(required(f"{path}.containers"))
    else:
        errs += _containers(containers, f"{path}.containers", names, volumes)
    policy = spec.get("restartPolicy")
    if policy in (None, ""):
        errs.append(required(f"{path}.restartPolicy"))
    elif policy not in RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns in (None, ""):
        errs.append(required(f"{path}.dnsPolicy"))
    elif dns not in DNS_POLICIES:
        errs.append(not_supported(f"{path}.dnsPolicy", dns, DNS_POLICIES))
    context = spec.get("securityContext")
    if isinstance(context, dict):
        errs += _sysctls(context.get("sysctls"), f"{path}.securityContext.sysctls")
    return errs


def _sysctls(sysctls: Any, path: str) -> list[FieldError]:
    """upstream's validateSysctls: each name valid and given once (the value is the runtime's to judge)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, sysctl in _enumerated(sysctls):
        name = sysctl.get("name") if isinstance(sysctl, dict) else None
        field = f"{path}[{i}].name"
        if not isinstance(name, str) or not name:
            errs.append(required(field))
        elif len(name) > SYSCTL_MAX_LENGTH or not _SYSCTL_RE.match(name):
            message = f"must have at most {SYSCTL_MAX_LENGTH} characters and match regex {SYSCTL_FORMAT}"
            errs.append(invalid(field, name, message))
        elif name in seen:
            errs.append(FieldError(ErrorType.DUPLICATE, field, name))
        else:
            seen.add(name)
    return errs


def _unique_label(name: Any, path: str, names: NamedItems) -> list[FieldError]:
    """A required DNS-1123 label, unique among `names` (volumes, and containers across init and app containers)."""
    if name and not isinstance(name, str):
        return [invalid(path, name, "must be a string")]
    return names.check(name or "", path)


def _volumes(volumes: Any, path: str) -> tuple[set[str], list[FieldError]]:
    names = NamedItems(dns1123_label)
    errs: list[FieldError] = []
    if volumes is not None and not isinstance(volumes, list):
        return set(), [invalid(path, volumes, "must be a list")]
    for i, volume in _enumerated(volumes):
        here = f"{path}[{i}]"
        if not isinstance(volume, dict):
            errs.append(invalid(here, volume, "must be an object"))
            continue
        errs += _unique_label(volume.get("name"), f"{here}.name", names)
    return names.names(), errs


def _containers(containers: Any, path: str, names: NamedItems, volumes: set[str]) -> list[FieldError]:
    if not isinstance(containers, list):
        return [invalid(path, containers, "must be a list")]
    errs: list[FieldError] = []
    for i, container in enumerate(containers):
        here = f"{path}[{i}]"
        if not isinstance(container, dict):
            errs.append(invalid(here, container, "must be an object"))
            continue
        errs += _unique_label(container.get("name"), f"{here}.name", names)
        if not container.get("image"):
            errs.append(required(f"{here}.image"))
        errs += _ports(container.get("ports"), f"{here}.ports")
        errs += _env(container.get("env"), f"{here}.env")
        errs += _mounts(container.get("volumeMounts"), f"{here}.volumeMounts", volumes)
        errs += _resources(container.get("resources"), f"{here}.resources")
    return errs


def _port_number(value: Any, field: str, *, required_: bool) -> list[FieldError]:
    if value in (None, 0):
        return [required(field)] if required_ else []
    if isinstance(value, bool) or not isinstance(value, int):
        return [invalid(field, value, "must be an integer")]
    return [] if 1 <= value <= 65535 else [invalid(field, value, _PORT_RANGE)]


def _ports(ports: Any, path: str) -> list[FieldError]:
    if ports is not None and not isinstance(ports, list):
        return [invalid(path, ports, "must be a list")]
    errs: list[FieldError] = []
    names = NamedItems(iana_port_name_errors)
    for i, port in _enumerated(ports):
        here = f"{path}[{i}]"
        if not isinstance(port, dict):
            errs.append(invalid(here, port, "must be an object"))
            continue
        name = port.get("name")
        if isinstance(name, str) and name:
            errs += names.check(name, f"{here}.name")
        elif name not in (None, ""):
            errs.append(invalid(f"{here}.name", name, "must be a string"))
        errs += _port_number(port.get("containerPort"), f"{here}.containerPort", required_=True)
        errs += _port_number(port.get("hostPort"), f"{here}.hostPort", required_=False)
        protocol = port.get("protocol")
        if protocol in (None, ""):
            errs.append(required(f"{here}.protocol"))
        elif protocol not in PROTOCOLS:
            errs.append(not_supported(f"{here}.protocol", protocol, PROTOCOLS))
    return errs


def _env(env: Any, path: str) -> list[FieldError]:
    if env is not None and not isinstance(env, list):
        return [invalid(path, env, "must be a list")]
    errs: list[FieldError] = []
    for i, var in _enumerated(env):
        here = f"{path}[{i}]"
        if not isinstance(var, dict):
            errs.append(invalid(here, var, "must be an object"))
            continue
        name = var.get("name")
        if not name:
            errs.append(required(f"{here}.name"))
        elif not isinstance(name, str):
            errs.append(invalid(f"{here}.name", name, "must be a string"))
        elif not re.fullmatch(_ENV_NAME, name):
            detail = regex_error(_ENV_NAME_MSG, _ENV_NAME, "my.env-name", "MY_ENV.NAME", "MyEnvName1")
            errs.append(invalid(f"{here}.name", name, detail))
    return errs


def _mounts(mounts: Any, path: str, volumes: set[str]) -> list[FieldError]:
    if mounts is not None and not isinstance(mounts, list):
        return [invalid(path, mounts, "must be a list")]
    errs: list[FieldError] = []
    for i, mount in _enumerated(mounts):
        here = f"{path}[{i}]"
        if not isinstance(mount, dict):
            errs.append(invalid(here, mount, "must be an object"))
            continue
        name = mount.get("name")
        if not name:
            errs.append(required(f"{here}.name"))
        elif not isinstance(name, str):
            errs.append(invalid(f"{here}.name", name, "must be a string"))
        elif name not in volumes:
            errs.append(_not_found(f"{here}.name", name))
        if not mount.get("mountPath"):
            errs.append(required(f"{here}.mountPath"))
    return errs


def _resources(resources: Any, path: str) -> list[FieldError]:
    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [invalid(path, resources, "must be an object")]
    errs: list[FieldError] = []
    for kind in ("limits", "requests"):
        quantities = resources.get(kind)
        if quantities is None:
            continue
        if not isinstance(quantities, dict):
            errs.append(invalid(f"{path}.{kind}", quantities, "must be an object"))
            continue
        for name, quantity in quantities.items():
            field = f"{path}.{kind}[{name}]"
            text = str(quantity) if isinstance(quantity, int | float) and not isinstance(quantity, bool) else quantity
            if not isinstance(text, str) or not _QUANTITY_RE.match(text):
                errs.append(invalid(field, quantity, f"quantities must match the regular expression '{_QUANTITY}'"))
            elif text.startswith("-"):
                errs.append(invalid(field, quantity, "must be greater than or equal to 0"))
    return errs


# What an ephemeral container may not have (it is for looking into a pod, not for serving from it)
EPHEMERAL_FORBIDDEN = ("ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "resources")


def validate_ephemeral_update(spec: Any, old_spec: dict[str, Any], path: str = "spec") -> list[FieldError]:
    """A write of `pods/ephemeralcontainers`: containers are only added (never changed or removed), with upstream's
    limits on what an ephemeral container may set."""
    field = f"{path}.ephemeralContainers"
    given = spec.get("ephemeralContainers") if isinstance(spec, dict) else None
    if given is None:
        given = []
    if not isinstance(given, list):
        return [invalid(field, given, "must be a list")]
    errs: list[FieldError] = []
    existing = {c.get("name"): c for c in old_spec.get("ephemeralContainers") or [] if isinstance(c, dict)}
    by_name = {c.get("name"): c for c in given if isinstance(c, dict)}
    for name, container in existing.items():
        if name not in by_name:
            errs.append(forbidden(field, f'existing ephemeral containers "{name}" may not be removed'))
        elif by_name[name] != container:
            errs.append(forbidden(field, f'existing ephemeral containers "{name}" may not be changed'))
    targets = {c.get("name") for key in ("initContainers", "containers") for c in spec.get(key) or []}
    names = NamedItems(dns1123_label, taken=sorted(str(n) for n in targets if isinstance(n, str)))
    volumes = {str(v.get("name")) for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for i, container in enumerate(given):
        here = f"{field}[{i}]"
        if not isinstance(container, dict):
            errs.append(invalid(here, container, "must be an object"))
            continue
        errs += _unique_label(container.get("name"), f"{here}.name", names)
        if container.get("name") in existing:
            continue
        if not container.get("image"):
            errs.append(required(f"{here}.image"))
        errs += [forbidden(f"{here}.{key}", "cannot be set for an Ephemeral Container")
                 for key in EPHEMERAL_FORBIDDEN if container.get(key)]  # fmt: skip
        errs += _env(container.get("env"), f"{here}.env")
        errs += _mounts(container.get("volumeMounts"), f"{here}.volumeMounts", volumes)
        for j, mount in _enumerated(container.get("volumeMounts")):
            if mount.get("subPath"):
                errs.append(forbidden(f"{here}.volumeMounts[{j}].subPath", "cannot be set for an Ephemeral Container"))
        target = container.get("targetContainerName")
        if target and target not in targets:
            errs.append(_not_found(f"{here}.targetContainerName", target))
    return errs
