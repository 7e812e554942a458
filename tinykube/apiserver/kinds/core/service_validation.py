"""Service validation: upstream's ValidateService and ValidateServiceUpdate, message for message.

The registry strategy, the cluster-IP allocation step (which checks the clusterIP fields before it allocates, §4.1)
and the tests all need the same rules, and users recognise upstream's wording, so every error here renders exactly
as the apiserver prints it (`reference/k8s-behaviour.md` §0 and §4.5). Rules run in upstream's order, because the
order of `details.causes` is part of the API.

Input is a Service as decoded from JSON and v1-defaulted. Upstream's JSON decoder rejects wrongly typed fields before
validation ever runs; `_shape_errors` stands in for it, so the rules below can assume well-typed values and malformed
input yields field errors rather than exceptions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.meta import dns1123_label, dns1123_subdomain, qualified_name, validate_labels
from tinykube.apiserver.registry.gosyntax import GoSyntaxError, go_invalid, go_slice
from tinykube.apiserver.registry.netvalidation import (
    cidr_errors,
    iana_port_name_errors,
    ip_errors,
    is_ipv6,
    non_special_ip_errors,
    port_number_errors,
)
from tinykube.apiserver.registry.validation import NamedItems

# Supported-value lists are sorted, as upstream passes sets.List(...) to NotSupported.
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
SESSION_AFFINITIES = ["ClientIP", "None"]
IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameNode", "PreferSameZone"]
MAX_AFFINITY_TIMEOUT = 86400  # one day

TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"  # deprecated spelling of TOPOLOGY_MODE
LB_SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"

_LB_ONLY = "may only be used when `type` is 'LoadBalancer'"
_CLIENT_IP = "when session affinity type is ClientIP"
_LABEL_RE = re.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_CLUSTER_IPS = "spec.clusterIPs"


def _dns1123_label(value: str) -> list[str]:
    """meta.dns1123_label plus upstream's shorter message for a value that is a subdomain but not a label."""
    errs = dns1123_label(value)
    if errs and "." in value and all(_LABEL_RE.fullmatch(part) for part in value.split(".")):
        return [m for m in errs if m.startswith("must be no more than")] + ["must not contain dots"]
    return errs


# --- accessors (safe on any input) ------------------------------------------------------------------------------


def _spec(svc: Any) -> dict[str, Any]:
    spec = svc.get("spec") if isinstance(svc, dict) else None
    return spec if isinstance(spec, dict) else {}


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _strings(obj: dict[str, Any], key: str) -> list[str]:
    value = obj.get(key)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return []


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _annotations(svc: dict[str, Any]) -> dict[str, str]:
    meta = svc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return {}
    return {k: v for k, v in annotations.items() if isinstance(k, str) and isinstance(v, str)}


def is_headless(svc: dict[str, Any]) -> bool:
    return _strings(_spec(svc), "clusterIPs") == ["None"]


def needs_health_check(svc: dict[str, Any]) -> bool:
    spec = _spec(svc)
    return _str(spec, "type") == "LoadBalancer" and _str(spec, "externalTrafficPolicy") == "Local"


def externally_accessible(svc: dict[str, Any]) -> bool:
    spec = _spec(svc)
    kind = _str(spec, "type")
    return kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and bool(_strings(spec, "externalIPs")))


# --- shape: what upstream's typed decoder would have rejected ---------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "must be a string"),
    "integer": (_is_int, "must be an integer"),
    "boolean": (lambda v: isinstance(v, bool), "must be a boolean"),
    "object": (lambda v: isinstance(v, dict), "must be an object"),
    "list": (lambda v: isinstance(v, list), "must be a list"),
    "int-or-string": (lambda v: isinstance(v, str) or _is_int(v), "must be an integer or a string"),
}
_STRING_LISTS = ("clusterIPs", "ipFamilies", "externalIPs", "loadBalancerSourceRanges")
_SPEC_FIELDS = {
    **dict.fromkeys(
        (
            "type",
            "clusterIP",
            "externalName",
            "sessionAffinity",
            "externalTrafficPolicy",
            "internalTrafficPolicy",
            "ipFamilyPolicy",
            "loadBalancerClass",
            "loadBalancerIP",
            "trafficDistribution",
        ),
        "string",
    ),
    **dict.fromkeys((*_STRING_LISTS, "ports"), "list"),
    "healthCheckNodePort": "integer",
    "allocateLoadBalancerNodePorts": "boolean",
    "publishNotReadyAddresses": "boolean",
    "selector": "object",
    "sessionAffinityConfig": "object",
}
_PORT_FIELDS = {
    "name": "string",
    "protocol": "string",
    "appProtocol": "string",
    "port": "integer",
    "nodePort": "integer",
    "targetPort": "int-or-string",
}


def _field_shape_errors(obj: dict[str, Any], kinds: dict[str, str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, kind in kinds.items():
        value = obj.get(key)
        ok, message = _CHECKS[kind]
        if value is not None and not ok(value):  # JSON null is an absent field, as in Go
            errs.append(invalid(f"{path}.{key}", value, message))
    return errs


def _affinity_shape_errors(config: Any) -> list[FieldError]:
    client_ip = config.get("clientIP") if isinstance(config, dict) else None
    if client_ip is None:
        return []
    path = "spec.sessionAffinityConfig.clientIP"
    if not isinstance(client_ip, dict):
        return [invalid(path, client_ip, "must be an object")]
    return _field_shape_errors(client_ip, {"timeoutSeconds": "integer"}, path)


def _ports_shape_errors(ports: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, port in enumerate(ports if isinstance(ports, list) else []):
        path = f"spec.ports[{i}]"
        if isinstance(port, dict):
            errs += _field_shape_errors(port, _PORT_FIELDS, path)
        else:
            errs.append(invalid(path, port, "must be an object"))
    return errs


def _shape_errors(svc: Any) -> list[FieldError]:
    if not isinstance(svc, dict):
        return [invalid("", svc, "must be an object")]
    spec = svc.get("spec")
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [invalid("spec", spec, "must be an object")]
    errs = _field_shape_errors(spec, _SPEC_FIELDS, "spec")
    for key in _STRING_LISTS:
        values = spec.get(key)
        for i, value in enumerate(values if isinstance(values, list) else []):
            if not isinstance(value, str):
                errs.append(invalid(f"spec.{key}[{i}]", value, "must be a string"))
    return errs + _affinity_shape_errors(spec.get("sessionAffinityConfig")) + _ports_shape_errors(spec.get("ports"))


# --- §4.5 item 7: clusterIP / clusterIPs / ipFamilies / ipFamilyPolicy ------------------------------------------


def validate_cluster_ips_related(svc: dict[str, Any]) -> list[FieldError]:
    """Upstream ValidateServiceClusterIPsRelatedFields; ExternalName services carry none of these fields."""
    return _shape_errors(svc) or _cluster_ips_related(_spec(svc))


def _cluster_ips_related(spec: dict[str, Any]) -> list[FieldError]:
    if _str(spec, "type") == "ExternalName":
        return []
    ips, families = _strings(spec, "clusterIPs"), _strings(spec, "ipFamilies")
    errs = _cluster_ip_sync_errors(_str(spec, "clusterIP"), ips)
    errs += _ip_family_errors(families)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    value_errs = _cluster_ip_value_errors(ips)
    errs += value_errs
    if len(ips) > 2:
        errs.append(invalid(_CLUSTER_IPS, ips, "may only hold up to 2 values"))
    if value_errs:  # family checks on unparseable IPs would only restate the same problem
        return errs
    return errs + _dual_stack_errors(ips) + _family_match_errors(ips, families)


def _cluster_ip_sync_errors(cluster_ip: str, ips: list[str]) -> list[FieldError]:
    # clusterIP is the legacy single-value mirror of clusterIPs[0]; the strategy keeps them in step for old clients.
    if cluster_ip and not ips:
        return [required(_CLUSTER_IPS)]
    if cluster_ip and ips[0] != cluster_ip:
        return [invalid(_CLUSTER_IPS, ips, "first value must match `clusterIP`")]
    if not cluster_ip and ips:
        return [invalid(_CLUSTER_IPS, ips, "must be empty when `clusterIP` is not specified")]
    return []


def _ip_family_errors(families: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    unique = NamedItems()
    for i, family in enumerate(families):
        if family not in IP_FAMILIES:
            errs.append(not_supported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        errs += unique.repeat(family, f"spec.ipFamilies[{i}]")
    return errs


def _cluster_ip_value_errors(ips: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":  # headless: only valid as the sole value
            if len(ips) > 1:
                errs.append(invalid(_CLUSTER_IPS, ips, "'None' must be the first and only value"))
            continue
        errs += [invalid(f"{_CLUSTER_IPS}[{i}]", ip, m) for m in ip_errors(ip)]
    return errs


def _dual_stack_errors(ips: list[str]) -> list[FieldError]:
    if len(ips) < 2 or len({is_ipv6(ip) for ip in ips}) == 2:
        return []
    return [invalid(_CLUSTER_IPS, ips, "may specify no more than one IP for each IP family")]


def _family_match_errors(ips: list[str], families: list[str]) -> list[FieldError]:
    if ips == ["None"]:
        return []
    errs: list[FieldError] = []
    for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
        if family in IP_FAMILIES and is_ipv6(ip) != (family == "IPv6"):
            detail = f"expected an {family} value as indicated by `ipFamilies[{i}]`"
            errs.append(invalid(f"{_CLUSTER_IPS}[{i}]", ip, detail))
    return errs


# --- ValidateService, §4.5 items 2-17 ----------------------------------------------------------------------------


def validate_service(svc: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """All Service rules except metadata (validated by the generic registry). With `old`, the update-only rules
    come first, as in upstream's ValidateServiceUpdate."""
    shape = _shape_errors(svc)
    if shape:
        return shape
    errs = _update_errors(_spec(svc), _spec(old)) if old is not None and not _shape_errors(old) else []
    spec, annotations = _spec(svc), _annotations(svc)
    errs += _topology_annotation_errors(annotations)
    errs += _ports_required_errors(spec)
    errs += _type_specific_errors(spec)
    errs += _ports_errors(spec)
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], "spec.selector")
    errs += _session_affinity_errors(spec)
    errs += _cluster_ips_related(spec)
    errs += _external_ips_errors(spec)
    errs += _type_errors(spec)
    errs += _cluster_ip_node_port_errors(spec)
    errs += _duplicate_node_port_errors(spec)
    errs += _duplicate_port_errors(spec)
    errs += _source_range_errors(spec, annotations)
    errs += _allocate_node_ports_errors(spec)
    errs += _load_balancer_class_errors(spec)
    errs += _external_traffic_policy_errors(spec)
    errs += _health_check_node_port_errors(spec)
    errs += _internal_traffic_policy_errors(spec)
    errs += _traffic_distribution_errors(spec)
    return errs


def _topology_annotation_errors(annotations: dict[str, str]) -> list[FieldError]:
    mode, hints = annotations.get(TOPOLOGY_MODE), annotations.get(TOPOLOGY_HINTS)
    if mode is None or hints is None or mode == hints:
        return []
    detail = f"must match annotations[{TOPOLOGY_HINTS}] when both are specified"
    return [invalid(f"metadata.annotations[{TOPOLOGY_MODE}]", mode, detail)]


def _ports_required_errors(spec: dict[str, Any]) -> list[FieldError]:
    # Headless services may be port-less (DNS only); ExternalName services are a CNAME.
    headless = _strings(spec, "clusterIPs") == ["None"]
    if _ports(spec) or headless or _str(spec, "type") == "ExternalName":
        return []
    return [required("spec.ports")]


def _type_specific_errors(spec: dict[str, Any]) -> list[FieldError]:
    kind = _str(spec, "type")
    if kind in ("LoadBalancer", "NodePort") and _strings(spec, "clusterIPs") == ["None"]:
        return [invalid(f"{_CLUSTER_IPS}[0]", "None", f"may not be set to 'None' for {kind} services")]
    if kind == "ExternalName":
        return _external_name_errors(spec)
    return []


def _external_name_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    # Upstream looks at clusterIPs only, relying on the strategy having copied clusterIP into it; checking both
    # gives the same answer for normalized input and stays right for callers that did not normalize.
    if _strings(spec, "clusterIPs") or _str(spec, "clusterIP"):
        errs.append(forbidden(_CLUSTER_IPS, "may not be set for ExternalName services"))
    if _strings(spec, "ipFamilies"):
        errs.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
    if spec.get("ipFamilyPolicy") is not None:
        errs.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
    name = _str(spec, "externalName")
    cname = name.removesuffix(".")  # one trailing dot marks the name fully qualified
    if not cname:
        return [*errs, required("spec.externalName")]
    return errs + [invalid("spec.externalName", cname, m) for m in dns1123_subdomain(cname)]


def _ports_errors(spec: dict[str, Any]) -> list[FieldError]:
    ports = _ports(spec)
    # With several ports, names are what Endpoints and SRV records use to tell them apart.
    names = NamedItems(_dns1123_label, allow_empty=len(ports) <= 1)
    errs: list[FieldError] = []
    for i, port in enumerate(ports):
        errs += _port_errors(port, f"spec.ports[{i}]", names)
    return errs


def _port_errors(port: dict[str, Any], path: str, names: NamedItems) -> list[FieldError]:
    errs = names.check(_str(port, "name"), f"{path}.name")
    number = _int(port, "port")
    errs += [invalid(f"{path}.port", number, m) for m in port_number_errors(number)]
    protocol = _str(port, "protocol")
    if not protocol:
        errs.append(required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    errs += _target_port_errors(port.get("targetPort"), f"{path}.targetPort")
    app_protocol = port.get("appProtocol")
    if app_protocol is not None:
        errs += [invalid(f"{path}.appProtocol", app_protocol, m) for m in qualified_name(app_protocol)]
    # Headless services may have any targetPort: the v1 API always tolerated it.
    return errs


def _target_port_errors(target: Any, path: str) -> list[FieldError]:
    if isinstance(target, str):
        return [invalid(path, target, m) for m in iana_port_name_errors(target)]
    number = target if _is_int(target) else 0  # an absent targetPort is Go's zero IntOrString, the int 0
    return [invalid(path, number, m) for m in port_number_errors(number)]


def _session_affinity_errors(spec: dict[str, Any]) -> list[FieldError]:
    affinity = _str(spec, "sessionAffinity")
    path = "spec.sessionAffinityConfig"
    if not affinity:
        return [required("spec.sessionAffinity")]
    if affinity not in SESSION_AFFINITIES:
        return [not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES)]
    config = spec.get("sessionAffinityConfig")
    if affinity == "None":
        return [forbidden(path, "must not be set when session affinity is None")] if config is not None else []
    if config is None:
        return [required(path, _CLIENT_IP)]
    client_ip = config.get("clientIP")
    if client_ip is None:
        return [required(f"{path}.clientIP", _CLIENT_IP)]
    timeout = client_ip.get("timeoutSeconds")
    if timeout is None:
        return [required(f"{path}.clientIP.timeoutSeconds", _CLIENT_IP)]
    if 0 < timeout <= MAX_AFFINITY_TIMEOUT:
        return []
    detail = f"must be greater than 0 and less than {MAX_AFFINITY_TIMEOUT}"  # sic: the maximum itself is allowed
    return [invalid(f"{path}.clientIP.timeoutSeconds", timeout, detail)]


def _external_ips_errors(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ip in enumerate(_strings(spec, "externalIPs")):
        messages = ip_errors(ip) or non_special_ip_errors(ip)
        errs += [invalid(f"spec.externalIPs[{i}]", ip, m) for m in messages]
    return errs


def _type_errors(spec: dict[str, Any]) -> list[FieldError]:
    kind = _str(spec, "type")
    if not kind:
        return [required("spec.type")]
    return [] if kind in SERVICE_TYPES else [not_supported("spec.type", kind, SERVICE_TYPES)]


def _cluster_ip_node_port_errors(spec: dict[str, Any]) -> list[FieldError]:
    if _str(spec, "type") != "ClusterIP":
        return []
    detail = "may not be used when `type` is 'ClusterIP'"
    return [forbidden(f"spec.ports[{i}].nodePort", detail) for i, p in enumerate(_ports(spec)) if _int(p, "nodePort")]


def _duplicate_node_port_errors(spec: dict[str, Any]) -> list[FieldError]:
    # The same nodePort may serve TCP and UDP (e.g. DNS); only a repeat within one protocol is a clash.
    unique = NamedItems()
    errs: list[FieldError] = []
    for i, port in enumerate(_ports(spec)):
        key = (_str(port, "protocol"), _int(port, "nodePort"))
        if key[1]:
            errs += unique.repeat(key, f"spec.ports[{i}].nodePort", shown=key[1])
    return errs


def _duplicate_port_errors(spec: dict[str, Any]) -> list[FieldError]:
    seen: set[tuple[str, int]] = set()
    errs: list[FieldError] = []
    for i, port in enumerate(_ports(spec)):
        key = (_str(port, "protocol"), _int(port, "port"))
        if key in seen:
            errs.append(GoSyntaxError(ErrorType.DUPLICATE, f"spec.ports[{i}]", _service_port_key(*key)))
        seen.add(key)
    return errs


def _service_port_key(protocol: str, port: int) -> str:
    """Upstream reports the map key it deduplicates on: a ServicePort with only protocol and port set, in %#v."""
    return (
        f'core.ServicePort{{Name:"", Protocol:"{protocol}", AppProtocol:(*string)(nil), Port:{port}, '
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
    )


def _source_range_errors(spec: dict[str, Any], annotations: dict[str, str]) -> list[FieldError]:
    # The capital L is historical and part of the API. Entries may be space-padded: they once came from the
    # comma-separated annotation, which is still honoured when the field is empty.
    ranges = _strings(spec, "loadBalancerSourceRanges")
    if ranges:
        path = "spec.LoadBalancerSourceRanges"
        values = [(f"{path}[{i}]", r.strip()) for i, r in enumerate(ranges)]
    elif LB_SOURCE_RANGES in annotations:
        path = f"metadata.annotations[{LB_SOURCE_RANGES}]"
        text = annotations[LB_SOURCE_RANGES].strip()
        values = [(path, r.strip()) for r in text.split(",")] if text else []
    else:
        return []
    errs = [] if _str(spec, "type") == "LoadBalancer" else [forbidden(path, _LB_ONLY)]
    return errs + [invalid(field, value, m) for field, value in values for m in cidr_errors(value)]


def _allocate_node_ports_errors(spec: dict[str, Any]) -> list[FieldError]:
    is_lb, value = _str(spec, "type") == "LoadBalancer", spec.get("allocateLoadBalancerNodePorts")
    if value is not None and not is_lb:
        return [forbidden("spec.allocateLoadBalancerNodePorts", _LB_ONLY)]
    if is_lb and value is None:
        return [required("allocateLoadBalancerNodePorts")]  # sic: upstream's path lacks "spec."
    return []


def _load_balancer_class_errors(spec: dict[str, Any]) -> list[FieldError]:
    value = spec.get("loadBalancerClass")
    if value is None:
        return []
    if _str(spec, "type") != "LoadBalancer":
        return [forbidden("spec.loadBalancerClass", _LB_ONLY)]
    return [invalid("spec.loadBalancerClass", value, m) for m in qualified_name(value)]


def _external_traffic_policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    policy, path = _str(spec, "externalTrafficPolicy"), "spec.externalTrafficPolicy"
    if not externally_accessible({"spec": spec}):
        return [invalid(path, policy, "may only be set for externally-accessible services")] if policy else []
    if not policy:
        return [required(path)]
    return [] if policy in TRAFFIC_POLICIES else [not_supported(path, policy, TRAFFIC_POLICIES)]


def _health_check_node_port_errors(spec: dict[str, Any]) -> list[FieldError]:
    port, path = _int(spec, "healthCheckNodePort"), "spec.healthCheckNodePort"
    if not needs_health_check({"spec": spec}):
        detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
        return [invalid(path, port, detail)] if port else []
    if not port:
        return [required(path)]
    return [invalid(path, port, m) for m in port_number_errors(port)]


def _internal_traffic_policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    policy, path = spec.get("internalTrafficPolicy"), "spec.internalTrafficPolicy"
    if policy is None:
        return [required(path)] if _str(spec, "type") in ("ClusterIP", "NodePort", "LoadBalancer") else []
    return [] if policy in TRAFFIC_POLICIES else [not_supported(path, policy, TRAFFIC_POLICIES)]


def _traffic_distribution_errors(spec: dict[str, Any]) -> list[FieldError]:
    value = spec.get("trafficDistribution")
    if value is None or value in TRAFFIC_DISTRIBUTIONS:
        return []
    return [not_supported("spec.trafficDistribution", value, TRAFFIC_DISTRIBUTIONS)]


# --- ValidateServiceUpdate additions -----------------------------------------------------------------------------


def _update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    # A change to or from ExternalName legitimately adds or drops every IP field.
    if "ExternalName" not in (_str(new, "type"), _str(old, "type")):
        errs += _cluster_ips_update_errors(new, old)
        errs += _ip_families_update_errors(new, old)
    errs += _load_balancer_class_update_errors(new, old)
    errs += _health_check_node_port_update_errors(new, old)
    return errs


def _cluster_ips_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The primary IP is fixed for life; a secondary may be added, or released with policy SingleStack."""
    new_ips, old_ips = _strings(new, "clusterIPs"), _strings(old, "clusterIPs")
    if new_ips == ["None"] and old_ips == ["None"]:
        return []
    shown = go_slice(new.get("clusterIPs"), "string")
    return _fixed_list_errors(new, new_ips, old_ips, path=_CLUSTER_IPS, shown=shown, what="clusterIP")


def _ip_families_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """As clusterIPs; headless services carry no allocated IP, so their families may change freely."""
    if _strings(new, "clusterIPs") == ["None"] or _strings(old, "clusterIPs") == ["None"]:
        return []
    new_families, old_families = _strings(new, "ipFamilies"), _strings(old, "ipFamilies")
    shown = go_slice(new.get("ipFamilies"), "core.IPFamily")
    return _fixed_list_errors(new, new_families, old_families, path="spec.ipFamilies", shown=shown, what="ipFamily")


def _fixed_list_errors(
    svc: dict[str, Any], new: list[str], old: list[str], *, path: str, shown: str, what: str
) -> list[FieldError]:
    """clusterIPs and ipFamilies alike: entries may not change, the primary may not go, a secondary goes only with
    SingleStack."""
    if len(new) == len(old):
        changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        return [go_invalid(f"{path}[{i}]", shown, "may not change once set") for i in changed]
    errs = _primary_change_errors(new, old, field=f"{path}[0]", shown=shown, what=what)
    if len(new) == 1 and len(old) > 1:
        errs += _release_secondary_errors(svc, what)
    return errs


def _primary_change_errors(new: list[str], old: list[str], *, field: str, shown: str, what: str) -> list[FieldError]:
    # Called when the lengths differ: either a secondary was added or something was released.
    if len(new) < len(old) and not new:
        return [go_invalid(field, shown, f"primary {what} can not be unset")]
    if old and new and new[0] != old[0]:
        return [go_invalid(field, shown, "may not change once set")]
    return []


def _release_secondary_errors(new: dict[str, Any], what: str) -> list[FieldError]:
    # Dropping to one family must be explicit, or a PreferDualStack service would silently lose its second IP.
    policy = new.get("ipFamilyPolicy")
    if policy == "SingleStack":
        return []
    detail = f"must be set to 'SingleStack' when releasing the secondary {what}"
    return [invalid("spec.ipFamilyPolicy", policy, detail)]


def _load_balancer_class_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # The class names the controller that owns the load balancer; handing it over is not supported.
    both_lb = _str(new, "type") == _str(old, "type") == "LoadBalancer"
    if not both_lb or new.get("loadBalancerClass") == old.get("loadBalancerClass"):
        return []
    return [invalid("spec.loadBalancerClass", new.get("loadBalancerClass"), "may not change once set")]


def _health_check_node_port_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    both_need = needs_health_check({"spec": new}) and needs_health_check({"spec": old})
    if both_need and _int(new, "healthCheckNodePort") != _int(old, "healthCheckNodePort"):
        return [forbidden("spec.healthCheckNodePort", "field is immutable")]
    return []
