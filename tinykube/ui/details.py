"""What the page shows for one Service: its DNS names and the records tinykube's DNS answers for them (the same
`Answerer` over the same `ClusterRecords`, fed from the informers' caches), and the service environment variables
a pod of its namespace gets (`kubelet_env`). Pure: objects in, JSON-able dicts out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dnslib import QTYPE, RCODE

from tinykube.dns.answers import Answerer, DnsSettings
from tinykube.dns.names import Zones
from tinykube.dns.records import ClusterRecords
from tinykube.kubelet_env.envvars import service_environment, service_variables

Object = dict[str, Any]


def dns_names(service: Object, domain: str) -> list[tuple[str, int]]:
    """The names to ask, each with its type: the Service's A name (short forms as a pod's search path completes
    them are listed by the page), and an SRV name per named port."""
    meta, spec = service["metadata"], service.get("spec") or {}
    fqdn = f"{meta['name']}.{meta['namespace']}.svc.{domain}"
    names: list[tuple[str, int]] = [(fqdn, QTYPE.A)]
    for port in spec.get("ports") or []:
        if port.get("name"):
            protocol = str(port.get("protocol") or "TCP").lower()
            names.append((f"_{port['name']}._{protocol}.{fqdn}", QTYPE.SRV))
    if not any(qtype == QTYPE.SRV for _, qtype in names) and spec.get("ports"):
        names.append((fqdn, QTYPE.SRV))  # unnamed ports: SRV of the Service name itself
    return names


def dns_records(
    service: Object,
    services: Iterable[Object],
    slices: Iterable[Object],
    namespaces: Iterable[Object],
    domain: str = "cluster.local",
) -> dict[str, Any]:
    records = ClusterRecords(on_change=lambda _group: None, on_reset=lambda: None)
    for namespace in namespaces:
        records.put_namespace(namespace)
    for obj in services:
        records.put_service(obj)
    for piece in slices:
        records.put_slice(piece)
    answerer = Answerer(records, DnsSettings(domain), Zones(domain, []))
    meta = service["metadata"]
    queries = []
    for name, qtype in dns_names(service, domain):
        answer = answerer.answer(name, qtype)
        rows = [] if answer is None else [str(rr) for rr in answer.answer + answer.additional]
        rcode = "" if answer is None else RCODE.get(answer.rcode)
        queries.append({"name": name, "type": QTYPE.get(qtype), "rcode": rcode, "records": rows})
    short = [meta["name"], f"{meta['name']}.{meta['namespace']}", f"{meta['name']}.{meta['namespace']}.svc"]
    return {"short": short, "queries": queries}


def environment(service: Object, services: list[Object]) -> dict[str, Any]:
    """The variables this Service gives a pod of its namespace, and all a pod there gets."""
    meta, spec = service["metadata"], service.get("spec") or {}
    pod = {"metadata": {"namespace": meta["namespace"], "name": "example"}, "spec": {}}
    own = service_variables(service) if spec.get("clusterIP") not in (None, "", "None") else []
    return {
        "namespace": meta["namespace"],
        "own": [list(pair) for pair in own],
        "all": [list(pair) for pair in service_environment(pod, services)],
    }
