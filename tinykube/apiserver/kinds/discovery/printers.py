"""Table columns (`kubectl get`) of the discovery kinds, EndpointSlices, as upstream's printers
(`pkg/printers/internalversion/printers.go`).

Descriptions are the upstream SwaggerDoc() strings of the fields each column shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_list, as_str, dicts
from tinykube.apiserver.printing.cells import MAX_LISTED, age, list_with_more, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

ENDPOINT_SLICE_COLUMNS = (
    NAME_COLUMN,
    Column(
        "AddressType",
        "string",
        "addressType specifies the type of address carried by this EndpointSlice. All addresses in "
        "this slice must be the same type. This field is immutable after creation. The following "
        "address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: "
        "Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
    ),
    Column(
        "Ports",
        "string",
        "ports specifies the list of network ports exposed by each endpoint in this slice. Each port "
        "must have a unique name. When ports is empty, it indicates that there are no defined ports. "
        'When a port is defined with a nil port value, it indicates "all ports". Each slice may '
        "include a maximum of 100 ports.",
    ),
    Column(
        "Endpoints",
        "string",
        "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
    ),
    AGE_COLUMN,
)


def format_discovery_ports(ports: Any) -> str:
    """``formatDiscoveryPorts``: port numbers (or name, or ``*``), three at most; ``<unset>``."""
    shown: list[str] = []
    all_ports = dicts(ports)
    for port in all_ports[:MAX_LISTED]:
        if isinstance(port.get("port"), int):
            shown.append(str(port["port"]))
        elif isinstance(port.get("name"), str):
            shown.append(port["name"])
        else:
            shown.append("*")
    return list_with_more(shown, len(all_ports), MAX_LISTED, "<unset>")


def format_discovery_endpoints(endpoints: Any) -> str:
    """``formatDiscoveryEndpoints``: addresses of all endpoints, three at most; ``<unset>``."""
    addresses = [
        address
        for endpoint in dicts(endpoints)
        for address in as_list(endpoint.get("addresses"))
        if isinstance(address, str)
    ]
    return list_with_more(addresses[:MAX_LISTED], len(addresses), MAX_LISTED, "<unset>")


def _endpoint_slice_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        name_of(obj),
        as_str(obj.get("addressType")),
        format_discovery_ports(obj.get("ports")),
        format_discovery_endpoints(obj.get("endpoints")),
        age(obj, now),
    ]


PRINTERS: dict[str, Printer] = {
    "endpointslices": Printer(ENDPOINT_SLICE_COLUMNS, _endpoint_slice_cells),
}
