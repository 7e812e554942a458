"""Table columns (`kubectl get`) of the networking.k8s.io kinds, Ingresses, IngressClasses and NetworkPolicies, as
upstream's printers (pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str, dicts
from tinykube.apiserver.printing.cells import age, format_label_selector, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

INGRESS_COLUMNS = (
    NAME_COLUMN,
    Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    Column("Ports", "string", "Ports of TLS configurations that open"),
    AGE_COLUMN,
)

_MAX_HOSTS = 3


def ingress_hosts(rules: Any) -> str:
    """`formatHosts`: the first three hosts, `*` when no rule has one. Once three are shown, any further rule
    counts as more, and upstream counts them as `rules - 3` (rules without a host included)."""
    entries = dicts(rules)
    hosts: list[str] = []
    more = False
    for rule in entries:
        more = more or len(hosts) == _MAX_HOSTS
        if not more and as_str(rule.get("host")):
            hosts.append(as_str(rule.get("host")))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(entries) - _MAX_HOSTS} more..." if more else "")


def ingress_address(status: Any) -> str:
    """The load balancer's IPs (or hostnames where it has no IP), sorted and without repeats."""
    entries = dicts(as_dict(as_dict(status).get("loadBalancer")).get("ingress"))
    found = {as_str(e.get("ip")) or as_str(e.get("hostname")) for e in entries}
    return ",".join(sorted(found - {""}))


def _ingress_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    class_name = spec.get("ingressClassName")
    return [
        name_of(obj),
        class_name if isinstance(class_name, str) else "<none>",
        ingress_hosts(spec.get("rules")),
        ingress_address(obj.get("status")),
        "80, 443" if as_list(spec.get("tls")) else "80",
        age(obj, now),
    ]


INGRESS_CLASS_COLUMNS = (
    NAME_COLUMN,
    Column("Controller", "string", "Controller that is responsible for handling this class"),
    Column("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE_COLUMN,
)


def _ingress_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    params = spec.get("parameters")
    shown = "<none>"
    if isinstance(params, dict):
        group = params.get("apiGroup")
        kind = as_str(params.get("kind")) + (f".{group}" if isinstance(group, str) else "")
        shown = f"{kind}/{as_str(params.get('name'))}"
    return [name_of(obj), as_str(spec.get("controller")), shown, age(obj, now)]


NETWORK_POLICY_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any "
        "pods selected by this field. Multiple network policies can select the same set of pods. In this case, the "
        "ingress rules for each are combined additively. This field is NOT optional and follows standard label "
        "selector semantics. An empty podSelector matches all pods in this namespace.",
    ),
    AGE_COLUMN,
)


def _network_policy_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), format_label_selector(as_dict(obj.get("spec")).get("podSelector")), age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "ingresses": Printer(INGRESS_COLUMNS, _ingress_cells),
    "ingressclasses": Printer(INGRESS_CLASS_COLUMNS, _ingress_class_cells),
    "networkpolicies": Printer(NETWORK_POLICY_COLUMNS, _network_policy_cells),
}
