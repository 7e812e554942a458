"""Strategies (upstream v1 defaulting and validation) for networking.k8s.io Ingress, IngressClass and NetworkPolicy.

Each validation keeps kube-apiserver 1.32's field paths and messages. The objects are stored and validated, not
acted on. As upstream, an update may keep what the stored object already had and a newer check refuses (an
Ingress's invalid TLS secret names and wildcard host rules, a NetworkPolicy's invalid selector values), so that old
data stays writable.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from tinykube.api.errors import ErrorType, FieldError, forbidden, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, indexed_dicts, strings
from tinykube.api.meta import dns1035_label, dns1123_label, dns1123_subdomain, regex_error
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import go_invalid, go_slice
from tinykube.apiserver.registry.netvalidation import iana_port_name_errors, ip_errors, port_number_errors
from tinykube.apiserver.registry.validation import (
    default_if_nil,
    has_invalid_selector,
    immutable,
    invalid_each,
    label_selector_errors,
    path_segment_name,
)

# =================================================================================================================
# networking.k8s.io/v1 Ingress and IngressClass
# =================================================================================================================

_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_WILDCARD_FMT = r"\*\." + "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of "
    "lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
)
_INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
_PARAMETER_SCOPES = ["Cluster", "Namespace"]
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _path_segment_errors(value: str, field: str) -> list[FieldError]:
    return [required(field)] if not value else invalid_each(field, value, path_segment_name(value))


def wildcard_subdomain(value: str) -> list[str]:
    errs = [] if len(value) <= 253 else ["must be no more than 253 characters"]
    if not re.fullmatch(_WILDCARD_FMT, value):
        errs.append(regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


def _host_errors(host: str, field: str) -> list[FieldError]:
    rule = wildcard_subdomain if "*" in host else dns1123_subdomain
    return invalid_each(field, host, rule(host))


@dataclass(frozen=True, slots=True)
class _IngressOptions:
    allow_invalid_secret_name: bool = False
    allow_invalid_wildcard_host_rule: bool = False


def _typed_reference_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    """A TypedLocalObjectReference (an Ingress backend's `resource`)."""
    errs: list[FieldError] = []
    group = ref.get("apiGroup")
    if group is not None:
        errs += invalid_each(f"{path}.apiGroup", as_str(group), dns1123_subdomain(as_str(group)))
    errs += _path_segment_errors(as_str(ref.get("kind")), f"{path}.kind")
    return errs + _path_segment_errors(as_str(ref.get("name")), f"{path}.name")


def _service_backend_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    name = as_str(service.get("name"))
    # a Service name is a DNS-1035 label
    errs = (
        invalid_each(f"{path}.service.name", name, dns1035_label(name)) if name else [required(f"{path}.service.name")]
    )
    port = as_dict(service.get("port"))
    port_name, number = as_str(port.get("name")), as_int(port.get("number")) or 0
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += invalid_each(f"{path}.service.port.name", port_name, iana_port_name_errors(port_name))
    elif number:
        errs += [invalid(f"{path}.service.port.number", number, m) for m in port_number_errors(number)]
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def ingress_backend_errors(backend: dict[str, Any], path: str) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return _typed_reference_errors(as_dict(resource), f"{path}.resource")
    if service is not None:
        return _service_backend_errors(as_dict(service), path)
    return [invalid(path, "", "resource or service backend is required")]


def _http_path_errors(entry: dict[str, Any], path: str) -> list[FieldError]:
    path_type, value = entry.get("pathType"), as_str(entry.get("path"))
    if path_type is None:
        return [required(f"{path}.pathType", "pathType must be specified")]
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
        errs += [
            invalid(f"{path}.path", value, f"must not contain '{s}'") for s in _INVALID_PATH_SEQUENCES if s in value
        ]
        errs += [
            invalid(f"{path}.path", value, f"cannot end with '{s}'")
            for s in _INVALID_PATH_SUFFIXES
            if value.endswith(s)
        ]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(not_supported(f"{path}.pathType", path_type, _PATH_TYPES))
    return errs + ingress_backend_errors(as_dict(entry.get("backend")), f"{path}.backend")


def _rule_value_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    http = rule.get("http")
    if http is None:
        return []
    paths = as_list(as_dict(http).get("paths"))
    errs = [] if paths else [required(f"{path}.http.paths")]
    for i, entry in indexed_dicts(paths):
        errs += _http_path_errors(entry, f"{path}.http.paths[{i}]")
    return errs


def _ingress_rule_errors(rules: list[Any], path: str, opts: _IngressOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in indexed_dicts(rules):
        host, here = as_str(rule.get("host")), f"{path}[{i}]"
        if host and _is_ip(host):
            errs.append(invalid(f"{here}.host", host, "must be a DNS name, not an IP address"))
        if host:
            errs += _host_errors(host, f"{here}.host")
        if "*" not in host or not opts.allow_invalid_wildcard_host_rule:
            errs += _rule_value_errors(rule, here)
    return errs


def _ingress_tls_errors(tls: list[Any], opts: _IngressOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in indexed_dicts(tls):
        for j, host in enumerate(strings(entry.get("hosts"))):
            errs += _host_errors(host, f"spec.tls[{i}].hosts[{j}]")
        secret = as_str(entry.get("secretName"))
        if secret and not opts.allow_invalid_secret_name:
            errs += invalid_each(f"spec.tls[{i}].secretName", secret, dns1123_subdomain(secret))
    return errs


def ingress_spec_errors(spec: dict[str, Any], opts: _IngressOptions) -> list[FieldError]:
    rules, default_backend = as_list(spec.get("rules")), spec.get("defaultBackend")
    errs: list[FieldError] = []
    if not rules and default_backend is None:
        shown = "[]networking.IngressRule(nil)" if spec.get("rules") is None else "[]networking.IngressRule{}"
        errs.append(go_invalid("spec", shown, "either `defaultBackend` or `rules` must be specified"))
    if default_backend is not None:
        errs += ingress_backend_errors(as_dict(default_backend), "spec.defaultBackend")
    errs += _ingress_rule_errors(rules, "spec.rules", opts)
    errs += _ingress_tls_errors(as_list(spec.get("tls")), opts)
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += invalid_each("spec.ingressClassName", as_str(class_name), dns1123_subdomain(as_str(class_name)))
    return errs


def _ingress_options(old: dict[str, Any] | None) -> _IngressOptions:
    """Stored Ingresses that predate a check keep being writable (upstream's allowInvalid* options)."""
    if old is None:
        return _IngressOptions()
    spec = as_dict(old.get("spec"))
    secrets = [as_str(t.get("secretName")) for _, t in indexed_dicts(spec.get("tls"))]
    wildcard_rules = [r for _, r in indexed_dicts(spec.get("rules")) if "*" in as_str(r.get("host"))]
    return _IngressOptions(
        allow_invalid_secret_name=any(s and dns1123_subdomain(s) for s in secrets),
        allow_invalid_wildcard_host_rule=any(_rule_value_errors(r, "") for r in wildcard_rules),
    )


def _load_balancer_status_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in indexed_dicts(as_dict(status.get("loadBalancer")).get("ingress")):
        path = f"status.loadBalancer.ingress[{i}]"
        ip, hostname = as_str(entry.get("ip")), as_str(entry.get("hostname"))
        if ip:
            errs += invalid_each(f"{path}.ip", ip, ip_errors(ip))
        if hostname:
            errs += invalid_each(f"{path}.hostname", hostname, dns1123_subdomain(hostname))
            if _is_ip(hostname):
                errs.append(invalid(f"{path}.hostname", hostname, "must be a DNS name, not an IP address"))
    return errs


def _class_annotation_errors(obj: dict[str, Any]) -> list[FieldError]:
    """On create, the legacy class annotation and `ingressClassName` must agree when both are set."""
    annotation = as_dict(obj["metadata"].get("annotations")).get(_INGRESS_CLASS_ANNOTATION)
    class_name = as_dict(obj.get("spec")).get("ingressClassName")
    if annotation is None or class_name is None or annotation == class_name:
        return []
    # upstream builds this path from "annotations" (not metadata.annotations) and the key as one more child
    return [
        invalid(
            f"annotations.{_INGRESS_CLASS_ANNOTATION}",
            annotation,
            "must match `ingressClassName` when both are specified",
        )
    ]


class IngressStrategy(Strategy):
    status_keeps_sent_metadata = True
    has_status = True
    tracks_generation = True

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = ingress_spec_errors(as_dict(obj.get("spec")), _ingress_options(old))
        if old is None:
            errs += _class_annotation_errors(obj)
        return errs + _load_balancer_status_errors(as_dict(obj.get("status")))


def domain_prefixed_path_errors(value: str, field: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath: `acme.io/foo`, a DNS subdomain then an HTTP path."""
    if not value:
        return [required(field)]
    host, slash, path = value.partition("/")
    if not slash or not host or not path:
        return [invalid(field, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = invalid_each(field, host, dns1123_subdomain(host))
    if not re.fullmatch(_HTTP_PATH_FMT, path):
        errs.append(invalid(field, path, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    return errs


def _parameters_errors(params: Any) -> list[FieldError]:
    if not isinstance(params, dict):
        return []
    path = "spec.parameters"
    errs = _typed_reference_errors(params, path)
    scope = params.get("scope")
    if scope is None:
        return [*errs, required(f"{path}.scope")]
    namespace = params.get("namespace")
    if scope not in _PARAMETER_SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _PARAMETER_SCOPES))
    elif scope == "Namespace" and namespace is None:
        errs.append(required(f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
    elif scope == "Namespace":
        errs += invalid_each(f"{path}.namespace", as_str(namespace), dns1123_label(as_str(namespace)))
    elif namespace is not None:
        errs.append(forbidden(f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


class IngressClassStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        params = as_dict(obj.get("spec")).get("parameters")
        if isinstance(params, dict):
            default_if_nil(params, "scope", "Cluster")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = as_dict(obj.get("spec"))
        controller = as_str(spec.get("controller"))
        errs: list[FieldError] = []
        if old is not None:  # upstream reports the immutable controller first
            errs += immutable(spec.get("controller"), as_dict(old.get("spec")).get("controller"), "spec.controller")
        if len(controller) > 250:
            errs.append(FieldError(ErrorType.TOO_LONG, "spec.controller", detail="must have at most 250 bytes"))
        errs += domain_prefixed_path_errors(controller, "spec.controller")
        return errs + _parameters_errors(spec.get("parameters"))


# =================================================================================================================
# networking.k8s.io/v1 NetworkPolicy
# =================================================================================================================

_NETPOL_PROTOCOLS = ["TCP", "UDP", "SCTP"]
_POLICY_TYPES = ["Ingress", "Egress"]


def _network_policy_port_errors(port: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _NETPOL_PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", protocol, _NETPOL_PROTOCOLS))
    number, end = port.get("port"), as_int(port.get("endPort"))
    if number is None:
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, str):
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs += invalid_each(f"{path}.port", number, iana_port_name_errors(number))
    else:
        errs += [invalid(f"{path}.port", number, m) for m in port_number_errors(number)]
        if end is not None:
            if isinstance(number, int) and end < number:
                errs.append(invalid(f"{path}.endPort", end, "must be greater than or equal to `port`"))
            errs += [invalid(f"{path}.endPort", end, m) for m in port_number_errors(end)]
    return errs


def _network(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def ip_block_errors(block: dict[str, Any], path: str) -> list[FieldError]:
    """1.32's ValidateIPBlock: a CIDR, and `except` entries strictly inside it."""
    cidr = as_str(block.get("cidr"))
    if not cidr:
        return [required(f"{path}.cidr")]
    network = _network(cidr)
    if network is None:
        return [invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    errs: list[FieldError] = []
    for i, value in enumerate(as_list(block.get("except"))):
        inner = _network(as_str(value))
        if inner is None:
            return [*errs, invalid(f"{path}.except[{i}]", value, "not a valid CIDR")]
        inside = inner.version == network.version and inner.network_address in network
        if not inside or network.prefixlen >= inner.prefixlen:
            errs.append(invalid(f"{path}.except[{i}]", value, "must be a strict subset of `cidr`"))
    return errs


def _peer_errors(peer: dict[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    present = [name for name in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(name) is not None]
    for name in ("podSelector", "namespaceSelector"):
        if name in present:
            errs += label_selector_errors(peer[name], f"{path}.{name}", allow_invalid_values=allow_invalid_values)
    if "ipBlock" in present:
        errs += ip_block_errors(as_dict(peer["ipBlock"]), f"{path}.ipBlock")
    if not present:
        errs.append(required(path, "must specify a peer"))
    elif len(present) > 1 and "ipBlock" in present:
        errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _policy_rule_errors(rules: Any, path: str, peers_key: str, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in indexed_dicts(rules):
        for j, port in indexed_dicts(rule.get("ports")):
            errs += _network_policy_port_errors(port, f"{path}[{i}].ports[{j}]")
        for j, peer in indexed_dicts(rule.get(peers_key)):
            errs += _peer_errors(peer, f"{path}[{i}].{peers_key}[{j}]", allow_invalid_values=allow_invalid_values)
    return errs


def _policy_types_errors(types: list[Any]) -> list[FieldError]:
    if len(types) > 2:
        shown = go_slice([str(t) for t in types], "networking.PolicyType")
        return [go_invalid("spec.policyTypes", shown, "may not specify more than two policyTypes")]
    return [
        not_supported(f"spec.policyTypes[{i}]", t, _POLICY_TYPES) for i, t in enumerate(types) if t not in _POLICY_TYPES
    ]


def network_policy_spec_errors(spec: dict[str, Any], *, allow_invalid_values: bool = False) -> list[FieldError]:
    errs = label_selector_errors(spec.get("podSelector"), "spec.podSelector", allow_invalid_values=allow_invalid_values)
    errs += _policy_rule_errors(spec.get("ingress"), "spec.ingress", "from", allow_invalid_values=allow_invalid_values)
    errs += _policy_rule_errors(spec.get("egress"), "spec.egress", "to", allow_invalid_values=allow_invalid_values)
    return errs + _policy_types_errors(as_list(spec.get("policyTypes")))


class NetworkPolicyStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("podSelector", {})  # a struct, always written
        for key in ("ingress", "egress"):
            for _, rule in indexed_dicts(spec.get(key)):
                for _, port in indexed_dicts(rule.get("ports")):
                    default_if_nil(port, "protocol", "TCP")
        if not as_list(spec.get("policyTypes")):
            # a policy names the directions it isolates; without policyTypes, Ingress always and Egress if it
            # has egress rules
            spec["policyTypes"] = ["Ingress", "Egress"] if as_list(spec.get("egress")) else ["Ingress"]

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        old_selector = as_dict(old.get("spec")).get("podSelector") if old is not None else None
        tolerate = old is not None and has_invalid_selector([old_selector])
        return network_policy_spec_errors(as_dict(obj.get("spec")), allow_invalid_values=tolerate)


STRATEGIES: dict[str, type[Strategy]] = {
    "ingresses": IngressStrategy,
    "ingressclasses": IngressClassStrategy,
    "networkpolicies": NetworkPolicyStrategy,
}
