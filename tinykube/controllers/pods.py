"""Which pods back a Service, and how: the selection rules the Endpoints and EndpointSlice controllers share
(upstream's `endpointslice/util/controller_utils.go`)."""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Mapping
from typing import Any

from tinykube.client.informer import Store, object_key
from tinykube.controllers.triggers import ready_since

Object = dict[str, Any]


POD_LABEL_INDEX = "pods:label"  # one index on the shared pods informer for both endpoint controllers


def pod_label_index(pod: Object) -> list[str]:
    """Pods by "<ns>/<key>=<value>" of each label, so a sync looks at the pods one selector term names."""
    namespace = pod["metadata"].get("namespace", "")
    return [f"{namespace}/{key}={value}" for key, value in (pod["metadata"].get("labels") or {}).items()]


SERVICE_SELECTOR_INDEX = "services:selector"  # one index on the shared services informer for both controllers


def service_selector_index(svc: Object) -> list[str]:
    """Services by "<ns>/<key>=<value>" of each selector term ("<ns>/" for `{}`), so a pod event looks at the
    Services one of its labels names, not at every Service of its namespace."""
    if not selects_pods(svc):
        return []
    namespace = svc["metadata"].get("namespace", "")
    return [f"{namespace}/{k}={v}" for k, v in svc["spec"]["selector"].items()] or [f"{namespace}/"]


def services_of(services: Store, pod: Object) -> set[str]:
    """The keys of the Services that select the pod (`services` indexed by SERVICE_SELECTOR_INDEX)."""
    namespace = pod["metadata"].get("namespace", "")
    candidates = services.by_index(SERVICE_SELECTOR_INDEX, f"{namespace}/")
    for value in pod_label_index(pod):
        candidates.extend(services.by_index(SERVICE_SELECTOR_INDEX, value))
    return {object_key(svc) for svc in candidates if selected(svc, pod)}


def selects_pods(svc: Object) -> bool:
    """Services with no selector (not merely an empty one) and ExternalName Services have user-managed endpoints."""
    spec = svc.get("spec") or {}
    return spec.get("selector") is not None and spec.get("type") != "ExternalName"


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str] | None) -> bool:
    """A Service selector is a plain label map; `{}` matches every pod of the namespace."""
    labels = labels or {}
    return all(labels.get(key) == value for key, value in selector.items())


def selected(svc: Object, pod: Object) -> bool:
    meta, pod_meta = svc["metadata"], pod["metadata"]
    if meta.get("namespace") != pod_meta.get("namespace") or not selects_pods(svc):
        return False
    return selector_matches(svc["spec"]["selector"], pod_meta.get("labels"))


def pod_ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def terminating(pod: Object) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def should_be_in_endpoints(pod: Object, include_terminating: bool) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not terminating(pod)


def should_set_hostname(pod: Object, svc: Object) -> bool:
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == svc["metadata"]["name"]
        and pod["metadata"].get("namespace") == svc["metadata"].get("namespace")
    )


def find_port(pod: Object, service_port: Object) -> int | None:
    """The container port a Service port's targetPort means for this pod; None when the pod has no such port."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol", "TCP")
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and port.get("protocol", "TCP") == protocol:
                number = port.get("containerPort")
                return number if isinstance(number, int) else None
    return None


def parse_ip(ip: str) -> tuple[str, str] | None:
    """(family, canonical form) of an address, None when it is not one. Syncs parse every pod IP again each time:
    IPv4 goes through inet_pton (20x cheaper than `ipaddress`; like it, strict dotted decimal without leading zeros,
    so an address it accepts is already canonical), anything else through the cached `ipaddress` parse."""
    try:
        socket.inet_pton(socket.AF_INET, ip)
    except (OSError, ValueError):
        return _parse_other_ip(ip)
    return "IPv4", ip


@functools.lru_cache(maxsize=65536)
def _parse_other_ip(ip: str) -> tuple[str, str] | None:
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return None
    return ("IPv4" if parsed.version == 4 else "IPv6"), str(parsed)


def family_of(ip: str) -> str | None:
    parsed = parse_ip(ip)
    return parsed[0] if parsed else None


def pod_ips(pod: Object, family: str) -> list[str]:
    """The pod's IPs of one family, in canonical form."""
    status = pod.get("status") or {}
    ips = [entry.get("ip") for entry in status.get("podIPs") or [] if isinstance(entry, dict)]
    if not ips and status.get("podIP"):
        ips = [status["podIP"]]
    parsed = [parse_ip(ip) for ip in ips if isinstance(ip, str)]
    return [p[1] for p in parsed if p is not None and p[0] == family]


def service_families(svc: Object) -> list[str]:
    """Address families to publish: the Service's ipFamilies; IPv4 for a Service without any (as upstream infers
    for a headless Service lacking them)."""
    families = (svc.get("spec") or {}).get("ipFamilies") or []
    return [f for f in families if f in ("IPv4", "IPv6")] or ["IPv4"]


def headless(svc: Object) -> bool:
    return (svc.get("spec") or {}).get("clusterIP") in ("None", "", None)


def endpoint_view(pod: Object) -> tuple[Any, ...]:
    """What of a pod can change its endpoints or which Services select it: updates that leave it alone are not
    worth a sync."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return (
        meta.get("labels"),
        meta.get("deletionTimestamp"),
        spec.get("hostname"),
        spec.get("subdomain"),
        spec.get("nodeName"),
        spec.get("containers"),
        spec.get("initContainers"),
        status.get("phase"),
        status.get("podIP"),
        status.get("podIPs"),
        pod_ready(pod),
        ready_since(pod),
    )
