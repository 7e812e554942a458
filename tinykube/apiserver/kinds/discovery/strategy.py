"""Strategy for discovery.k8s.io/v1 EndpointSlices: upstream v1 defaulting (ports' protocol and name) and the JSON
shape checks that keep stored slices readable by the endpoint controllers, DNS and the proxy.
"""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import FieldError, not_supported, required
from tinykube.api.jsonshape import dicts
from tinykube.apiserver.kinds.core.strategy import ENDPOINT_PORT_SHAPE, default_protocols, shape_errors
from tinykube.apiserver.registry.generic import Strategy

_ENDPOINT_CONDITIONS = {"ready": bool, "serving": bool, "terminating": bool}
_SLICE_ENDPOINT = {
    "addresses": [str],
    "conditions": _ENDPOINT_CONDITIONS,
    "hostname": str,
    "nodeName": str,
    "zone": str,
}
_ENDPOINT_SLICE_SHAPE = {"addressType": str, "endpoints": [_SLICE_ENDPOINT], "ports": [ENDPOINT_PORT_SHAPE]}


class EndpointSliceStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        default_protocols(obj.get("ports"))
        for port in dicts(obj.get("ports")):
            port.setdefault("name", "")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        families = ["FQDN", "IPv4", "IPv6"]
        family, errs = obj.get("addressType"), shape_errors(obj, _ENDPOINT_SLICE_SHAPE)
        if not family:
            return [required("addressType"), *errs]
        return errs if family in families else [not_supported("addressType", family, families), *errs]


STRATEGIES: dict[str, type[Strategy]] = {"endpointslices": EndpointSliceStrategy}
