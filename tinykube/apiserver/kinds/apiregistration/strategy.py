"""Strategy (upstream v1 defaulting and validation) for apiregistration.k8s.io/v1 APIService, with kube-apiserver
1.32's field paths and messages. An APIService is stored and validated, not acted on: nothing is proxied to it.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, go_value, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int, as_str, indexed_dicts
from tinykube.api.meta import dns1035_label, dns1123_subdomain
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.netvalidation import port_number_errors
from tinykube.apiserver.registry.validation import decode_bytes, default_if_nil, invalid_each, path_segment_name


def _api_service_name_errors(name: str, spec: dict[str, Any]) -> list[FieldError]:
    """The name is the API it serves: `<version>.<group>`."""
    wanted = f"{as_str(spec.get('version'))}.{as_str(spec.get('group'))}"
    if not name or path_segment_name(name):
        return []  # the registry's name rule reports these
    detail = f'must be `spec.version+"."+spec.group`: {go_value(wanted)}'
    return [] if name == wanted else [invalid("metadata.name", name, detail)]


def _api_service_local_errors(spec: dict[str, Any]) -> list[FieldError]:
    """A local APIService (no service) is served by this apiserver: no TLS settings make sense for it."""
    errs: list[FieldError] = []
    ca_bundle = as_str(spec.get("caBundle"))
    if ca_bundle:
        size = len(decode_bytes(ca_bundle, "APIService"))
        errs.append(invalid("spec.caBundle", f"{size} bytes", "local APIServices may not have a caBundle"))
    if spec.get("insecureSkipTLSVerify"):
        detail = "local APIServices may not have insecureSkipTLSVerify"
        errs.append(invalid("spec.insecureSkipTLSVerify", True, detail))
    return errs


def _api_service_remote_errors(spec: dict[str, Any]) -> list[FieldError]:
    service = as_dict(spec.get("service"))
    errs = [required(f"spec.service.{key}") for key in ("namespace", "name") if not as_str(service.get(key))]
    port = service.get("port", 443)
    messages = port_number_errors(port)
    if messages:
        errs.append(invalid("spec.service.port", port, "port is not valid: " + ", ".join(messages)))
    if spec.get("insecureSkipTLSVerify") and as_str(spec.get("caBundle")):
        errs.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


def api_service_errors(obj: dict[str, Any]) -> list[FieldError]:
    spec = as_dict(obj.get("spec"))
    group, version = as_str(spec.get("group")), as_str(spec.get("version"))
    errs = _api_service_name_errors(as_str(obj["metadata"].get("name")), spec)
    if not group and version != "v1":
        errs.append(required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += invalid_each("spec.group", group, dns1123_subdomain(group))
    errs += invalid_each("spec.version", version, dns1035_label(version))
    minimum, priority = as_int(spec.get("groupPriorityMinimum")) or 0, as_int(spec.get("versionPriority")) or 0
    if not 0 < minimum <= 20000:
        errs.append(invalid("spec.groupPriorityMinimum", minimum, "must be positive and less than 20000"))
    if not 0 < priority <= 1000:
        errs.append(invalid("spec.versionPriority", priority, "must be positive and less than 1000"))
    local = spec.get("service") is None
    return errs + (_api_service_local_errors(spec) if local else _api_service_remote_errors(spec))


def _api_service_status_errors(status: dict[str, Any]) -> list[FieldError]:
    return [
        not_supported(f"status.conditions[{i}].status", c.get("status", ""), ["True", "False", "Unknown"])
        for i, c in indexed_dicts(status.get("conditions"))
        if c.get("status", "") not in ("True", "False", "Unknown")
    ]


class APIServiceStrategy(Strategy):
    name_rule = staticmethod(path_segment_name)  # plus `<version>.<group>`, checked with the spec in validate
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        service = as_dict(obj.get("spec")).get("service")
        if isinstance(service, dict):
            default_if_nil(service, "port", 443)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return api_service_errors(obj) + _api_service_status_errors(as_dict(obj.get("status")))


STRATEGIES: dict[str, type[Strategy]] = {"apiservices": APIServiceStrategy}
