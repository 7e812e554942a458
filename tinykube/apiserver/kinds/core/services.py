"""Services: upstream's v1 defaulting and validation, with cluster IPs, node ports and load-balancer IPs taken
from the cluster's pools in the Service's own write (see `allocators/services.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tinykube.api.errors import FieldError, too_many
from tinykube.api.jsonshape import dicts
from tinykube.api.meta import dns1035_label
from tinykube.api.resources import ResourceInfo
from tinykube.apiserver.kinds.core.service_validation import externally_accessible, validate_service
from tinykube.apiserver.registry.generic import Allocation, Strategy

if TYPE_CHECKING:
    from tinykube.apiserver.allocators.services import ServicePools


class ServiceStrategy(Strategy):
    status_keeps_sent_metadata = True
    name_rule = staticmethod(dns1035_label)
    has_status = True
    return_deleted_object = True
    allocates = True

    def __init__(self, resource: ResourceInfo, pools: ServicePools) -> None:
        super().__init__(resource)
        self.pools = pools

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return  # validation reports it
        spec.setdefault("type", "ClusterIP")
        if spec.get("sessionAffinity", "") == "":
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            config = spec.get("sessionAffinityConfig")
            if not isinstance(config, dict):
                config = spec["sessionAffinityConfig"] = {}
            client_ip = config.get("clientIP")
            if not isinstance(client_ip, dict):
                client_ip = config["clientIP"] = {}
            if client_ip.get("timeoutSeconds") is None:
                client_ip["timeoutSeconds"] = 10800
        for port in dicts(spec.get("ports")):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer") and spec.get("internalTrafficPolicy") is None:
            spec["internalTrafficPolicy"] = "Cluster"
        if not spec.get("externalTrafficPolicy") and externally_accessible(obj):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        if spec["type"] == "ExternalName":
            spec.pop("internalTrafficPolicy", None)  # upstream drops it on read for ExternalName
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("loadBalancer", {})
            load_balancer = status["loadBalancer"]
            for ingress in dicts(load_balancer.get("ingress") if isinstance(load_balancer, dict) else None):
                if ingress.get("ip") and not ingress.get("ipMode"):
                    ingress["ipMode"] = "VIP"

    def allocate(self, new: dict[str, Any], old: dict[str, Any] | None, dry_run: bool) -> Allocation:
        if not isinstance(new.get("spec"), dict):
            return Allocation()
        return self.pools.plan(new, old, dry_run)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return validate_service(obj, old)

    def release(self, obj: dict[str, Any]) -> Allocation:
        return self.pools.release(obj)

    def too_many_claims(self, obj: dict[str, Any], excess: int) -> list[FieldError]:
        """A Service's claims are mostly its node ports: fewer ports are what would fit in the transaction."""
        ports = obj["spec"].get("ports")
        count = len(ports) if isinstance(ports, list) else 0
        return [too_many("spec.ports", count, max(count - excess, 0))]
