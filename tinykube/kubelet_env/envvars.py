"""The environment the kubelet gives a container: its `envFrom` ConfigMaps and Secrets, then its own `env` (with
`$(VAR)` references expanded, ConfigMap and Secret keys, the downward API and resource fields resolved), over the
service variables of the Services that exist when it starts.

Pure functions over API objects (dicts), as upstream's `envvars.FromServices` and `makeEnvironmentVariables`: the
ConfigMaps and Secrets a container names (`referenced`) are read by the caller and handed over in `Sources`.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tinykube.api.quantity import QuantityError, parse_quantity
from tinykube.api.shapes import ObjectMeta, ServiceSpec

Object = dict[str, Any]
SourceKey = tuple[str, str]  # ("configmaps" or "secrets", name) in the pod's namespace
_ENV_VAR_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")  # upstream's IsEnvVarName
_KINDS = {"configmaps": ("configmap", "ConfigMap"), "secrets": ("secret", "Secret")}


class ConfigError(ValueError):
    """A container cannot be given its environment (upstream's message): it waits in
    `CreateContainerConfigError` until the source appears."""


@dataclass
class Sources:
    """What `referenced` asked for: each ConfigMap or Secret as read (None: not found); the node's allocatable
    resources (the default of a `resourceFieldRef` to a limit the container does not set); and where warnings
    about skipped keys go (upstream's `InvalidEnvironmentVariableNames` event)."""

    objects: Mapping[SourceKey, Object | None] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=lambda: {"cpu": "4", "memory": "8Gi"})
    warn: Callable[[str], None] = lambda message: None


def referenced(container: Object) -> set[SourceKey]:
    """The ConfigMaps and Secrets the container's `envFrom` and `env` name."""
    found: set[SourceKey] = set()
    for item in container.get("envFrom") or []:
        for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            if (item.get(key) or {}).get("name"):
                found.add((kind, item[key]["name"]))
    for item in container.get("env") or []:
        source = item.get("valueFrom") or {}
        for key, kind in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
            if (source.get(key) or {}).get("name"):
                found.add((kind, source[key]["name"]))
    return found


def _data(kind: str, obj: Object) -> dict[str, str]:
    """A ConfigMap's `data` (and `binaryData`, as text), or a Secret's decoded `data` and `stringData`."""
    if kind == "configmaps":
        binary = {k: _decoded(v) for k, v in (obj.get("binaryData") or {}).items()}
        return {**binary, **{k: str(v) for k, v in (obj.get("data") or {}).items()}}
    return {k: _decoded(v) for k, v in (obj.get("data") or {}).items()}


def _decoded(value: Any) -> str:
    try:
        return base64.b64decode(str(value)).decode(errors="replace")
    except (binascii.Error, ValueError):
        return ""


def _source(sources: Sources, kind: str, name: str, namespace: str, optional: bool) -> dict[str, str] | None:
    """The source's data; None when it is missing and optional; ConfigError when missing and required."""
    obj = sources.objects.get((kind, name))
    if obj is None:
        if optional:
            return None
        raise ConfigError(f'{_KINDS[kind][0]} "{name}" not found')
    return _data(kind, obj)


def _from_sources(container: Object, namespace: str, sources: Sources) -> dict[str, str]:
    """`envFrom`, in order, later sources overriding earlier ones; keys that are not variable names skipped."""
    found: dict[str, str] = {}
    for item in container.get("envFrom") or []:
        for key, kind in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
            ref = item.get(key)
            if not ref:
                continue
            data = _source(sources, kind, ref.get("name", ""), namespace, bool(ref.get("optional")))
            if data is None:
                continue
            prefix, invalid = item.get("prefix") or "", []
            for name, value in data.items():
                if _ENV_VAR_NAME.match(prefix + name):
                    found[prefix + name] = value
                else:
                    invalid.append(prefix + name)
            if invalid:
                sources.warn(
                    f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {_KINDS[kind][0]} "
                    f"{namespace}/{ref.get('name')} were skipped since they are considered invalid environment "
                    "variable names."
                )
    return found


MASTER_NAMESPACE, MASTER_NAME = "default", "kubernetes"


def _spec(service: Object) -> ServiceSpec:
    spec: ServiceSpec = service.get("spec") or {}
    return spec


def _has_cluster_ip(service: Object) -> bool:
    ip = _spec(service).get("clusterIP")
    return bool(ip) and ip != "None"


def services_for(namespace: str, services: list[Object], *, enable_service_links: bool = True) -> list[Object]:
    """The Services whose variables a pod in `namespace` gets, by variable prefix: its namespace's (with service
    links enabled) and `default/kubernetes`, which a same-named Service of the pod's namespace overrides."""
    chosen: dict[str, Object] = {}
    for service in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
        meta: ObjectMeta = service["metadata"]
        if not _has_cluster_ip(service):
            continue  # headless and ExternalName Services have no address to give
        if (meta["namespace"], meta["name"]) == (MASTER_NAMESPACE, MASTER_NAME):
            chosen.setdefault(meta["name"], service)
        elif meta["namespace"] == namespace and enable_service_links:
            chosen[meta["name"]] = service
    return [chosen[name] for name in sorted(chosen)]


def _prefix(name: str) -> str:
    return name.upper().replace("-", "_")


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ipaddress.ip_address(ip).version == 6 else f"{ip}:{port}"


def service_variables(service: Object) -> list[tuple[str, str]]:
    """One Service's variables, in the kubelet's order: `{SVC}_SERVICE_*`, then the Docker-link `{SVC}_PORT*`."""
    spec = _spec(service)
    ip = spec["clusterIP"]
    ports = spec.get("ports") or []
    meta: ObjectMeta = service["metadata"]
    prefix = _prefix(meta["name"])
    found = [(f"{prefix}_SERVICE_HOST", ip)]
    if ports:
        found.append((f"{prefix}_SERVICE_PORT", str(ports[0]["port"])))
    found += [(f"{prefix}_SERVICE_PORT_{_prefix(p['name'])}", str(p["port"])) for p in ports if p.get("name")]
    for index, port in enumerate(ports):
        protocol = str(port.get("protocol") or "TCP").lower()
        url = f"{protocol}://{_host_port(ip, port['port'])}"
        if index == 0:
            found.append((f"{prefix}_PORT", url))
        link = f"{prefix}_PORT_{port['port']}_{protocol.upper()}"
        found += [
            (link, url),
            (f"{link}_PROTO", protocol),
            (f"{link}_PORT", str(port["port"])),
            (f"{link}_ADDR", ip),
        ]
    return found


def service_environment(pod: Object, services: list[Object]) -> list[tuple[str, str]]:
    """The service variables a pod gets, Service by Service (sorted by name), each name once.

    Two Services can make the same name (`a`'s `A_PORT_80_TCP_PORT` is Service `a-port-80-tcp`'s `{SVC}_PORT`).
    Upstream collects the variables in a map, so one value wins (which one is unspecified); here it is the later
    Service's, at the place the name first appeared."""
    namespace = pod["metadata"].get("namespace") or "default"
    links = (pod.get("spec") or {}).get("enableServiceLinks", True) is not False
    found: dict[str, str] = {}
    for service in services_for(namespace, services, enable_service_links=links):
        found.update(service_variables(service))
    return list(found.items())


def expand(text: str, lookup: dict[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: a known VAR is replaced, an unknown one kept as written, `$$` is `$`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            end = text.find(")", i + 2)
            if end == -1:
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            out.append(lookup[name] if name in lookup else text[i : end + 1])
            i = end + 1
        else:
            out.append(char + following)
            i += 2
    return "".join(out)


def field_value(pod: Object, path: str) -> str:
    """The downward API's `fieldRef.fieldPath` for env vars."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    for kind in ("labels", "annotations"):
        start = f"metadata.{kind}['"
        if path.startswith(start) and path.endswith("']"):
            return str((meta.get(kind) or {}).get(path[len(start) : -2], ""))
    values = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.hostIPs": ",".join(item.get("ip", "") for item in status.get("hostIPs") or []),
        "status.podIP": status.get("podIP"),
        "status.podIPs": ",".join(item.get("ip", "") for item in status.get("podIPs") or []),
    }
    if path not in values:
        raise ConfigError(f"unsupported fieldRef.fieldPath {path!r}")
    return str(values[path] or "")


def _key(sources: Sources, kind: str, ref: Object, namespace: str) -> str | None:
    """A `configMapKeyRef`'s or `secretKeyRef`'s value; None to leave the variable out (optional and missing)."""
    optional = bool(ref.get("optional"))
    data = _source(sources, kind, ref.get("name", ""), namespace, optional)
    if data is None:
        return None
    key = ref.get("key", "")
    if key not in data:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {key} in {_KINDS[kind][1]} {namespace}/{ref.get('name')}")
    return data[key]


def _resource_field(pod: Object, container: Object, ref: Object, allocatable: Mapping[str, str]) -> str:
    """A `resourceFieldRef`: the (named, else this) container's request or limit in units of `divisor`, rounded up;
    a limit it does not set is the node's allocatable amount, a request it does not set its limit's."""
    name = ref.get("containerName") or container.get("name")
    target = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), container)
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    resources = target.get("resources") or {}
    limit = (resources.get("limits") or {}).get(resource, allocatable.get(resource, "0"))
    value = (resources.get("requests") or {}).get(resource, limit) if kind == "requests" else limit
    try:
        amount, divisor = parse_quantity(value).value, parse_quantity(ref.get("divisor") or "1").value
    except QuantityError as err:
        raise ConfigError(str(err)) from None
    if divisor <= 0:
        raise ConfigError(f"invalid divisor {ref.get('divisor')!r}")
    return str(math.ceil(amount / divisor))


def container_environment(
    pod: Object, container: Object, services: list[Object], sources: Sources | None = None
) -> list[tuple[str, str]]:
    """What the container's process sees: its `envFrom` variables, then its `env` in order (each expanded against
    the variables before it and the service variables), then the service variables it does not define itself.
    Raises ConfigError as upstream's kubelet refuses to create the container."""
    sources = sources or Sources()
    namespace = pod["metadata"].get("namespace") or "default"
    service_vars = service_environment(pod, services)
    defined = _from_sources(container, namespace, sources)
    for item in container.get("env") or []:
        name = item["name"]
        source = item.get("valueFrom")
        value: str | None
        if source is None:
            value = expand(str(item.get("value") or ""), {**dict(service_vars), **defined})
        elif "fieldRef" in source:
            value = field_value(pod, source["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in source:
            value = _key(sources, "configmaps", source["configMapKeyRef"], namespace)
        elif "secretKeyRef" in source:
            value = _key(sources, "secrets", source["secretKeyRef"], namespace)
        elif "resourceFieldRef" in source:
            value = _resource_field(pod, container, source["resourceFieldRef"], sources.allocatable)
        else:
            raise ConfigError(f"env {name}: an unknown valueFrom source {sorted(source)}")
        if value is not None:
            defined[name] = value
    return list(defined.items()) + [(name, value) for name, value in service_vars if name not in defined]
