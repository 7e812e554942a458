"""The environment the kubelet gives a container: its own `env` (with `$(VAR)` references expanded and the
downward API resolved) over the service variables of the Services that exist when it starts.

Pure functions over API objects (dicts), as upstream's `envvars.FromServices` and `makeEnvironmentVariables`.
"""

from __future__ import annotations

import ipaddress
from typing import Any

Object = dict[str, Any]

MASTER_NAMESPACE, MASTER_NAME = "default", "kubernetes"


def _has_cluster_ip(service: Object) -> bool:
    ip = (service.get("spec") or {}).get("clusterIP")
    return bool(ip) and ip != "None"


def services_for(namespace: str, services: list[Object], *, enable_service_links: bool = True) -> list[Object]:
    """The Services whose variables a pod in `namespace` gets, by variable prefix: its namespace's (with service
    links enabled) and `default/kubernetes`, which a same-named Service of the pod's namespace overrides."""
    chosen: dict[str, Object] = {}
    for service in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
        meta = service["metadata"]
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
    spec = service.get("spec") or {}
    ip = spec["clusterIP"]
    ports = spec.get("ports") or []
    prefix = _prefix(service["metadata"]["name"])
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


def _field(pod: Object, path: str) -> str:
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
        raise ValueError(f"unsupported fieldRef.fieldPath {path!r}")
    return str(values[path] or "")


def container_environment(pod: Object, container: Object, services: list[Object]) -> list[tuple[str, str]]:
    """What the container's process sees: its `env` in order (expanded against the variables before it and the
    service variables), then the service variables it does not define itself."""
    service_vars = service_environment(pod, services)
    defined: dict[str, str] = {}
    for item in container.get("env") or []:
        name = item["name"]
        source = item.get("valueFrom")
        if source is None:
            defined[name] = expand(str(item.get("value") or ""), {**dict(service_vars), **defined})
        elif "fieldRef" in source:
            defined[name] = _field(pod, source["fieldRef"]["fieldPath"])
        else:
            raise ValueError(f"env {name}: only value and valueFrom.fieldRef are supported, not {sorted(source)}")
    return list(defined.items()) + [(name, value) for name, value in service_vars if name not in defined]
