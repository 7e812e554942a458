"""Informer indexes that more than one component adds to the informers it shares with others.

`Store.add_index` refuses a second, different function under a name it has, and adding the very same function again
does nothing: so an index that the node proxies and the sandbox's load balancer both keep on one EndpointSlice
informer is defined once, here, and whichever of them starts first adds it for all.
"""

from __future__ import annotations

from tinykube.client.informer import Object

SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # an EndpointSlice's Service
SLICE_SERVICE_INDEX = "proxy-service"  # EndpointSlices by "namespace/service"


def slice_service(item: Object) -> list[str]:
    """The "namespace/name" of the Service an EndpointSlice belongs to (none without the label)."""
    meta = item["metadata"]
    service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [f"{meta.get('namespace', '')}/{service}"] if service else []
