"""The shapes of the hottest API fields as `TypedDict`s, with upstream's JSON field names, for signatures that read
better with them than with `dict[str, Any]` (a Service's ports, an object's metadata).

They describe what a stored, validated object holds: every field optional (`total=False`, as upstream's
`omitempty`), values of upstream's types. Objects stay plain dicts at run time; these are only their annotations.
Where a value comes straight from a client and may hold anything, read it with `jsonshape` instead.
"""

from __future__ import annotations

from typing import Any, TypedDict


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    generateName: str
    namespace: str
    selfLink: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    managedFields: list[dict[str, Any]]


class ServicePort(TypedDict, total=False):
    name: str
    protocol: str  # TCP (the default), UDP or SCTP
    appProtocol: str
    port: int
    targetPort: int | str  # a number or a container port's name
    nodePort: int


class ServiceSpec(TypedDict, total=False):
    type: str  # ClusterIP (the default), NodePort, LoadBalancer or ExternalName
    selector: dict[str, str]
    ports: list[ServicePort]
    clusterIP: str  # "None" for a headless Service
    clusterIPs: list[str]
    ipFamilies: list[str]
    ipFamilyPolicy: str
    externalName: str
    externalIPs: list[str]
    externalTrafficPolicy: str
    internalTrafficPolicy: str
    healthCheckNodePort: int
    loadBalancerIP: str
    loadBalancerClass: str
    loadBalancerSourceRanges: list[str]
    allocateLoadBalancerNodePorts: bool
    publishNotReadyAddresses: bool
    sessionAffinity: str
    sessionAffinityConfig: dict[str, Any]
    trafficDistribution: str
