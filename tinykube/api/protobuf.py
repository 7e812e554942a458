"""Decode Kubernetes protobuf request bodies into the dict the same object's JSON would give.

Why this exists: kubectl's generator commands (`kubectl create namespace`, `kubectl create service
clusterip|nodeport|loadbalancer|externalname`, `kubectl create deployment`, ...) build typed Go objects and
POST them as ``application/vnd.kubernetes.protobuf``, and they do not retry with JSON when the server
answers 415. tinykube stores and validates JSON-shaped dicts, so a protobuf body is turned into exactly the
dict that the same object would have produced as JSON, and nothing after decoding knows the difference.

Envelope (apimachinery ``runtime/serializer/protobuf``): the 4 magic bytes ``k8s\\x00``, then a
``runtime.Unknown`` message {typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3, contentType=4}
whose ``raw`` is the typed message named by typeMeta.

Schema: ``_MESSAGES`` is a hand-written table of the field numbers in upstream's ``generated.proto``
(k8s.io/api core/v1, apps/v1, autoscaling/v1 Scale, discovery/v1; apimachinery meta/v1, util/intstr,
api/resource), one entry
per message: ``{field number: (json name, type)}``. A type is

    str | int | bool | bytes                    scalars (int covers int32 and int64)
    Time | MicroTime | Quantity | IntOrString | FieldsV1     apimachinery types with their own JSON form
    <MessageName>                               another entry of the table
    []T  /  {}T                                 repeated T  /  map<string, T>
    T!                                          keep a zero value that is on the wire (see below)

and a json name of ``""`` marks an embedded struct whose fields JSON inlines into the parent.

Mirroring JSON: Kubernetes' gogo-protobuf marshalling writes every non-pointer scalar even when it is
zero, where Go's JSON ``omitempty`` drops it; so a zero scalar is dropped unless its type ends in ``!``
(a Go pointer, where zero is meaningful, or a JSON field without ``omitempty``). Non-pointer structs are
always on the wire and always in JSON, so they decode to ``{}`` when empty; a zero ``metav1.Time``
(an empty message) is JSON ``null``. Field numbers the table does not know are skipped, so a newer
kubectl's extra fields do no harm.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tinykube.api.errors import BadRequest, UnsupportedMediaType

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_VARINT_SCALARS = frozenset({"int", "bool"})
_SCALARS = _VARINT_SCALARS | {"str", "bytes"}
_WELL_KNOWN = frozenset({"Time", "MicroTime", "Quantity", "IntOrString", "FieldsV1"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Wire = int | memoryview

# --------------------------------------------------------------------------------------------------
# Schema: message name -> {field number: (json name, type)}. Numbers from upstream generated.proto.
# --------------------------------------------------------------------------------------------------

_META = ("metadata", "ObjectMeta")

_CONTAINER: dict[int, tuple[str, str]] = {
    1: ("name", "str!"),
    2: ("image", "str"),
    3: ("command", "[]str"),
    4: ("args", "[]str"),
    5: ("workingDir", "str"),
    6: ("ports", "[]ContainerPort"),
    19: ("envFrom", "[]EnvFromSource"),
    7: ("env", "[]EnvVar"),
    8: ("resources", "ResourceRequirements"),
    23: ("resizePolicy", "[]ContainerResizePolicy"),
    24: ("restartPolicy", "str!"),
    25: ("restartPolicyRules", "[]ContainerRestartRule"),
    9: ("volumeMounts", "[]VolumeMount"),
    21: ("volumeDevices", "[]VolumeDevice"),
    10: ("livenessProbe", "Probe"),
    11: ("readinessProbe", "Probe"),
    22: ("startupProbe", "Probe"),
    12: ("lifecycle", "Lifecycle"),
    13: ("terminationMessagePath", "str"),
    20: ("terminationMessagePolicy", "str"),
    14: ("imagePullPolicy", "str"),
    15: ("securityContext", "SecurityContext"),
    16: ("stdin", "bool"),
    17: ("stdinOnce", "bool"),
    18: ("tty", "bool"),
}

_META_V1: dict[str, dict[int, tuple[str, str]]] = {
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        4: ("selfLink", "str"),
        5: ("uid", "str"),
        6: ("resourceVersion", "str"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "Time"),
        9: ("deletionTimestamp", "Time"),
        10: ("deletionGracePeriodSeconds", "int!"),
        11: ("labels", "{}str"),
        12: ("annotations", "{}str"),
        13: ("ownerReferences", "[]OwnerReference"),
        14: ("finalizers", "[]str"),
        17: ("managedFields", "[]ManagedFieldsEntry"),
    },
    "OwnerReference": {
        5: ("apiVersion", "str!"),
        1: ("kind", "str!"),
        3: ("name", "str!"),
        4: ("uid", "str!"),
        6: ("controller", "bool!"),
        7: ("blockOwnerDeletion", "bool!"),
    },
    "ManagedFieldsEntry": {
        1: ("manager", "str"),
        2: ("operation", "str"),
        3: ("apiVersion", "str"),
        4: ("time", "Time"),
        6: ("fieldsType", "str"),
        7: ("fieldsV1", "FieldsV1"),
        8: ("subresource", "str"),
    },
    "LabelSelector": {1: ("matchLabels", "{}str"), 2: ("matchExpressions", "[]LabelSelectorRequirement")},
    "LabelSelectorRequirement": {1: ("key", "str!"), 2: ("operator", "str!"), 3: ("values", "[]str")},
    "Condition": {
        1: ("type", "str!"),
        2: ("status", "str!"),
        3: ("observedGeneration", "int"),
        4: ("lastTransitionTime", "Time"),
        5: ("reason", "str!"),
        6: ("message", "str!"),
    },
    "DeleteOptions": {
        1: ("gracePeriodSeconds", "int!"),
        2: ("preconditions", "Preconditions"),
        3: ("orphanDependents", "bool!"),
        4: ("propagationPolicy", "str!"),
        5: ("dryRun", "[]str"),
        6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool!"),
    },
    "Preconditions": {1: ("uid", "str!"), 2: ("resourceVersion", "str!")},
}

_CORE_SERVICES: dict[str, dict[int, tuple[str, str]]] = {
    "Namespace": {1: _META, 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", "[]str")},
    "NamespaceStatus": {1: ("phase", "str"), 2: ("conditions", "[]NamespaceCondition")},
    "NamespaceCondition": {
        1: ("type", "str!"),
        2: ("status", "str!"),
        4: ("lastTransitionTime", "Time"),
        5: ("reason", "str"),
        6: ("message", "str"),
    },
    "Service": {1: _META, 2: ("spec", "ServiceSpec"), 3: ("status", "ServiceStatus")},
    "ServiceSpec": {
        1: ("ports", "[]ServicePort"),
        2: ("selector", "{}str"),
        3: ("clusterIP", "str"),
        18: ("clusterIPs", "[]str"),
        4: ("type", "str"),
        5: ("externalIPs", "[]str"),
        7: ("sessionAffinity", "str"),
        8: ("loadBalancerIP", "str"),
        9: ("loadBalancerSourceRanges", "[]str"),
        10: ("externalName", "str"),
        11: ("externalTrafficPolicy", "str"),
        12: ("healthCheckNodePort", "int"),
        13: ("publishNotReadyAddresses", "bool"),
        14: ("sessionAffinityConfig", "SessionAffinityConfig"),
        19: ("ipFamilies", "[]str"),
        17: ("ipFamilyPolicy", "str!"),
        20: ("allocateLoadBalancerNodePorts", "bool!"),
        21: ("loadBalancerClass", "str!"),
        22: ("internalTrafficPolicy", "str!"),
        23: ("trafficDistribution", "str!"),
    },
    "ServicePort": {
        1: ("name", "str"),
        2: ("protocol", "str"),
        6: ("appProtocol", "str!"),
        3: ("port", "int!"),
        4: ("targetPort", "IntOrString"),
        5: ("nodePort", "int"),
    },
    "SessionAffinityConfig": {1: ("clientIP", "ClientIPConfig")},
    "ClientIPConfig": {1: ("timeoutSeconds", "int!")},
    "ServiceStatus": {1: ("loadBalancer", "LoadBalancerStatus"), 2: ("conditions", "[]Condition")},
    "LoadBalancerStatus": {1: ("ingress", "[]LoadBalancerIngress")},
    "LoadBalancerIngress": {
        1: ("ip", "str"),
        2: ("hostname", "str"),
        3: ("ipMode", "str!"),
        4: ("ports", "[]PortStatus"),
    },
    "PortStatus": {1: ("port", "int!"), 2: ("protocol", "str!"), 3: ("error", "str!")},
    "Endpoints": {1: _META, 2: ("subsets", "[]EndpointSubset")},
    "EndpointSubset": {
        1: ("addresses", "[]EndpointAddress"),
        2: ("notReadyAddresses", "[]EndpointAddress"),
        3: ("ports", "[]EndpointPort"),
    },
    "EndpointAddress": {
        1: ("ip", "str!"),
        3: ("hostname", "str"),
        4: ("nodeName", "str!"),
        2: ("targetRef", "ObjectReference"),
    },
    "EndpointPort": {1: ("name", "str"), 2: ("port", "int!"), 3: ("protocol", "str"), 4: ("appProtocol", "str!")},
    "ObjectReference": {
        1: ("kind", "str"),
        2: ("namespace", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("resourceVersion", "str"),
        7: ("fieldPath", "str"),
    },
    "Event": {
        1: _META,
        2: ("involvedObject", "ObjectReference"),
        3: ("reason", "str"),
        4: ("message", "str"),
        5: ("source", "EventSource"),
        6: ("firstTimestamp", "Time"),
        7: ("lastTimestamp", "Time"),
        8: ("count", "int"),
        9: ("type", "str"),
        10: ("eventTime", "MicroTime"),
        11: ("series", "EventSeries"),
        12: ("action", "str"),
        13: ("related", "ObjectReference"),
        14: ("reportingComponent", "str!"),
        15: ("reportingInstance", "str!"),
    },
    "EventSeries": {1: ("count", "int"), 2: ("lastObservedTime", "MicroTime")},
    "EventSource": {1: ("component", "str"), 2: ("host", "str")},
}

_CORE_NODES: dict[str, dict[int, tuple[str, str]]] = {
    "Node": {1: _META, 2: ("spec", "NodeSpec"), 3: ("status", "NodeStatus")},
    "NodeSpec": {
        1: ("podCIDR", "str"),
        7: ("podCIDRs", "[]str"),
        3: ("providerID", "str"),
        4: ("unschedulable", "bool"),
        5: ("taints", "[]Taint"),
        6: ("configSource", "NodeConfigSource"),
        2: ("externalID", "str"),
    },
    "Taint": {1: ("key", "str!"), 2: ("value", "str"), 3: ("effect", "str!"), 4: ("timeAdded", "Time")},
    "NodeConfigSource": {2: ("configMap", "ConfigMapNodeConfigSource")},
    "ConfigMapNodeConfigSource": {
        1: ("namespace", "str!"),
        2: ("name", "str!"),
        3: ("uid", "str"),
        4: ("resourceVersion", "str"),
        5: ("kubeletConfigKey", "str!"),
    },
    "NodeStatus": {
        1: ("capacity", "{}Quantity"),
        2: ("allocatable", "{}Quantity"),
        3: ("phase", "str"),
        4: ("conditions", "[]NodeCondition"),
        5: ("addresses", "[]NodeAddress"),
        6: ("daemonEndpoints", "NodeDaemonEndpoints"),
        7: ("nodeInfo", "NodeSystemInfo"),
        8: ("images", "[]ContainerImage"),
        9: ("volumesInUse", "[]str"),
        10: ("volumesAttached", "[]AttachedVolume"),
        11: ("config", "NodeConfigStatus"),
        12: ("runtimeHandlers", "[]NodeRuntimeHandler"),
        13: ("features", "NodeFeatures"),
        14: ("declaredFeatures", "[]str"),
    },
    "NodeCondition": {
        1: ("type", "str!"),
        2: ("status", "str!"),
        3: ("lastHeartbeatTime", "Time"),
        4: ("lastTransitionTime", "Time"),
        5: ("reason", "str"),
        6: ("message", "str"),
    },
    "NodeAddress": {1: ("type", "str!"), 2: ("address", "str!")},
    "NodeDaemonEndpoints": {1: ("kubeletEndpoint", "DaemonEndpoint")},
    "DaemonEndpoint": {1: ("Port", "int!")},
    "NodeSystemInfo": {
        1: ("machineID", "str!"),
        2: ("systemUUID", "str!"),
        3: ("bootID", "str!"),
        4: ("kernelVersion", "str!"),
        5: ("osImage", "str!"),
        6: ("containerRuntimeVersion", "str!"),
        7: ("kubeletVersion", "str!"),
        8: ("kubeProxyVersion", "str!"),
        9: ("operatingSystem", "str!"),
        10: ("architecture", "str!"),
        11: ("swap", "NodeSwapStatus"),
    },
    "NodeSwapStatus": {1: ("capacity", "int!")},
    "ContainerImage": {1: ("names", "[]str"), 2: ("sizeBytes", "int")},
    "AttachedVolume": {1: ("name", "str!"), 2: ("devicePath", "str!")},
    "NodeConfigStatus": {
        1: ("assigned", "NodeConfigSource"),
        2: ("active", "NodeConfigSource"),
        3: ("lastKnownGood", "NodeConfigSource"),
        4: ("error", "str"),
    },
    "NodeRuntimeHandler": {1: ("name", "str!"), 2: ("features", "NodeRuntimeHandlerFeatures")},
    "NodeRuntimeHandlerFeatures": {1: ("recursiveReadOnlyMounts", "bool!"), 2: ("userNamespaces", "bool!")},
    "NodeFeatures": {1: ("supplementalGroupsPolicy", "bool!"), 2: ("containerUlimits", "bool!")},
}

_CORE_PODS: dict[str, dict[int, tuple[str, str]]] = {
    "Pod": {1: _META, 2: ("spec", "PodSpec"), 3: ("status", "PodStatus")},
    "PodTemplateSpec": {1: _META, 2: ("spec", "PodSpec")},
    "PodSpec": {
        1: ("volumes", "[]Volume"),
        20: ("initContainers", "[]Container"),
        2: ("containers", "[]Container"),
        34: ("ephemeralContainers", "[]EphemeralContainer"),
        3: ("restartPolicy", "str"),
        4: ("terminationGracePeriodSeconds", "int!"),
        5: ("activeDeadlineSeconds", "int!"),
        6: ("dnsPolicy", "str"),
        7: ("nodeSelector", "{}str"),
        8: ("serviceAccountName", "str"),
        9: ("serviceAccount", "str"),
        21: ("automountServiceAccountToken", "bool!"),
        10: ("nodeName", "str"),
        11: ("hostNetwork", "bool"),
        12: ("hostPID", "bool"),
        13: ("hostIPC", "bool"),
        27: ("shareProcessNamespace", "bool!"),
        14: ("securityContext", "PodSecurityContext"),
        15: ("imagePullSecrets", "[]LocalObjectReference"),
        16: ("hostname", "str"),
        17: ("subdomain", "str"),
        18: ("affinity", "Affinity"),
        19: ("schedulerName", "str"),
        22: ("tolerations", "[]Toleration"),
        23: ("hostAliases", "[]HostAlias"),
        24: ("priorityClassName", "str"),
        25: ("priority", "int!"),
        26: ("dnsConfig", "PodDNSConfig"),
        28: ("readinessGates", "[]PodReadinessGate"),
        29: ("runtimeClassName", "str!"),
        30: ("enableServiceLinks", "bool!"),
        31: ("preemptionPolicy", "str!"),
        32: ("overhead", "{}Quantity"),
        33: ("topologySpreadConstraints", "[]TopologySpreadConstraint"),
        35: ("setHostnameAsFQDN", "bool!"),
        36: ("os", "PodOS"),
        37: ("hostUsers", "bool!"),
        38: ("schedulingGates", "[]PodSchedulingGate"),
        39: ("resourceClaims", "[]PodResourceClaim"),
        40: ("resources", "ResourceRequirements"),
        41: ("hostnameOverride", "str!"),
    },
    "Container": _CONTAINER,
    "EphemeralContainerCommon": _CONTAINER,
    "EphemeralContainer": {1: ("", "EphemeralContainerCommon"), 2: ("targetContainerName", "str")},
    "ContainerPort": {
        1: ("name", "str"),
        2: ("hostPort", "int"),
        3: ("containerPort", "int!"),
        4: ("protocol", "str"),
        5: ("hostIP", "str"),
    },
    "EnvVar": {1: ("name", "str!"), 2: ("value", "str"), 3: ("valueFrom", "EnvVarSource")},
    "EnvVarSource": {
        1: ("fieldRef", "ObjectFieldSelector"),
        2: ("resourceFieldRef", "ResourceFieldSelector"),
        3: ("configMapKeyRef", "ConfigMapKeySelector"),
        4: ("secretKeyRef", "SecretKeySelector"),
        5: ("fileKeyRef", "FileKeySelector"),
    },
    "ObjectFieldSelector": {1: ("apiVersion", "str"), 2: ("fieldPath", "str!")},
    "ResourceFieldSelector": {1: ("containerName", "str"), 2: ("resource", "str!"), 3: ("divisor", "Quantity")},
    "ConfigMapKeySelector": {1: ("", "LocalObjectReference"), 2: ("key", "str!"), 3: ("optional", "bool!")},
    "SecretKeySelector": {1: ("", "LocalObjectReference"), 2: ("key", "str!"), 3: ("optional", "bool!")},
    "FileKeySelector": {
        1: ("volumeName", "str!"),
        2: ("path", "str!"),
        3: ("key", "str!"),
        4: ("optional", "bool!"),
    },
    "EnvFromSource": {
        1: ("prefix", "str"),
        2: ("configMapRef", "ConfigMapEnvSource"),
        3: ("secretRef", "SecretEnvSource"),
    },
    "ConfigMapEnvSource": {1: ("", "LocalObjectReference"), 2: ("optional", "bool!")},
    "SecretEnvSource": {1: ("", "LocalObjectReference"), 2: ("optional", "bool!")},
    "LocalObjectReference": {1: ("name", "str")},
    "ResourceRequirements": {
        1: ("limits", "{}Quantity"),
        2: ("requests", "{}Quantity"),
        3: ("claims", "[]ResourceClaim"),
    },
    "ResourceClaim": {1: ("name", "str!"), 2: ("request", "str")},
    "ContainerResizePolicy": {1: ("resourceName", "str!"), 2: ("restartPolicy", "str!")},
    "ContainerRestartRule": {1: ("action", "str!"), 2: ("exitCodes", "ContainerRestartRuleOnExitCodes")},
    "ContainerRestartRuleOnExitCodes": {1: ("operator", "str!"), 2: ("values", "[]int")},
    "VolumeMount": {
        1: ("name", "str!"),
        2: ("readOnly", "bool"),
        7: ("recursiveReadOnly", "str!"),
        3: ("mountPath", "str!"),
        4: ("subPath", "str"),
        5: ("mountPropagation", "str!"),
        6: ("subPathExpr", "str"),
    },
    "VolumeDevice": {1: ("name", "str!"), 2: ("devicePath", "str!")},
    "Probe": {
        1: ("", "ProbeHandler"),
        2: ("initialDelaySeconds", "int"),
        3: ("timeoutSeconds", "int"),
        4: ("periodSeconds", "int"),
        5: ("successThreshold", "int"),
        6: ("failureThreshold", "int"),
        7: ("terminationGracePeriodSeconds", "int!"),
    },
    "ProbeHandler": {
        1: ("exec", "ExecAction"),
        2: ("httpGet", "HTTPGetAction"),
        3: ("tcpSocket", "TCPSocketAction"),
        4: ("grpc", "GRPCAction"),
    },
    "Lifecycle": {1: ("postStart", "LifecycleHandler"), 2: ("preStop", "LifecycleHandler"), 3: ("stopSignal", "str!")},
    "LifecycleHandler": {
        1: ("exec", "ExecAction"),
        2: ("httpGet", "HTTPGetAction"),
        3: ("tcpSocket", "TCPSocketAction"),
        4: ("sleep", "SleepAction"),
    },
    "ExecAction": {1: ("command", "[]str")},
    "HTTPGetAction": {
        1: ("path", "str"),
        2: ("port", "IntOrString"),
        3: ("host", "str"),
        4: ("scheme", "str"),
        5: ("httpHeaders", "[]HTTPHeader"),
    },
    "HTTPHeader": {1: ("name", "str!"), 2: ("value", "str!")},
    "TCPSocketAction": {1: ("port", "IntOrString"), 2: ("host", "str")},
    "GRPCAction": {1: ("port", "int!"), 2: ("service", "str!")},
    "SleepAction": {1: ("seconds", "int!")},
}

_CORE_SECURITY: dict[str, dict[int, tuple[str, str]]] = {
    "SecurityContext": {
        1: ("capabilities", "Capabilities"),
        2: ("privileged", "bool!"),
        3: ("seLinuxOptions", "SELinuxOptions"),
        10: ("windowsOptions", "WindowsSecurityContextOptions"),
        4: ("runAsUser", "int!"),
        8: ("runAsGroup", "int!"),
        5: ("runAsNonRoot", "bool!"),
        6: ("readOnlyRootFilesystem", "bool!"),
        7: ("allowPrivilegeEscalation", "bool!"),
        9: ("procMount", "str!"),
        11: ("seccompProfile", "SeccompProfile"),
        12: ("appArmorProfile", "AppArmorProfile"),
        13: ("ulimits", "[]Ulimit"),
    },
    "PodSecurityContext": {
        1: ("seLinuxOptions", "SELinuxOptions"),
        8: ("windowsOptions", "WindowsSecurityContextOptions"),
        2: ("runAsUser", "int!"),
        6: ("runAsGroup", "int!"),
        3: ("runAsNonRoot", "bool!"),
        4: ("supplementalGroups", "[]int"),
        12: ("supplementalGroupsPolicy", "str!"),
        5: ("fsGroup", "int!"),
        7: ("sysctls", "[]Sysctl"),
        9: ("fsGroupChangePolicy", "str!"),
        10: ("seccompProfile", "SeccompProfile"),
        11: ("appArmorProfile", "AppArmorProfile"),
        13: ("seLinuxChangePolicy", "str!"),
    },
    "Capabilities": {1: ("add", "[]str"), 2: ("drop", "[]str")},
    "SELinuxOptions": {1: ("user", "str"), 2: ("role", "str"), 3: ("type", "str"), 4: ("level", "str")},
    "WindowsSecurityContextOptions": {
        1: ("gmsaCredentialSpecName", "str!"),
        2: ("gmsaCredentialSpec", "str!"),
        3: ("runAsUserName", "str!"),
        4: ("hostProcess", "bool!"),
    },
    "SeccompProfile": {1: ("type", "str!"), 2: ("localhostProfile", "str!")},
    "AppArmorProfile": {1: ("type", "str!"), 2: ("localhostProfile", "str!")},
    "Ulimit": {1: ("name", "str!"), 2: ("hard", "int!"), 3: ("soft", "int!")},
    "Sysctl": {1: ("name", "str!"), 2: ("value", "str!")},
}

_CORE_SCHEDULING: dict[str, dict[int, tuple[str, str]]] = {
    "Affinity": {
        1: ("nodeAffinity", "NodeAffinity"),
        2: ("podAffinity", "PodAffinity"),
        3: ("podAntiAffinity", "PodAntiAffinity"),
    },
    "NodeAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "NodeSelector"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]PreferredSchedulingTerm"),
    },
    "NodeSelector": {1: ("nodeSelectorTerms", "[]NodeSelectorTerm")},
    "NodeSelectorTerm": {
        1: ("matchExpressions", "[]NodeSelectorRequirement"),
        2: ("matchFields", "[]NodeSelectorRequirement"),
    },
    "NodeSelectorRequirement": {1: ("key", "str!"), 2: ("operator", "str!"), 3: ("values", "[]str")},
    "PreferredSchedulingTerm": {1: ("weight", "int!"), 2: ("preference", "NodeSelectorTerm")},
    "PodAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "[]PodAffinityTerm"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]WeightedPodAffinityTerm"),
    },
    "PodAntiAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "[]PodAffinityTerm"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]WeightedPodAffinityTerm"),
    },
    "PodAffinityTerm": {
        1: ("labelSelector", "LabelSelector"),
        2: ("namespaces", "[]str"),
        3: ("topologyKey", "str!"),
        4: ("namespaceSelector", "LabelSelector"),
        5: ("matchLabelKeys", "[]str"),
        6: ("mismatchLabelKeys", "[]str"),
    },
    "WeightedPodAffinityTerm": {1: ("weight", "int!"), 2: ("podAffinityTerm", "PodAffinityTerm")},
    "Toleration": {
        1: ("key", "str"),
        2: ("operator", "str"),
        3: ("value", "str"),
        4: ("effect", "str"),
        5: ("tolerationSeconds", "int!"),
    },
    "HostAlias": {1: ("ip", "str!"), 2: ("hostnames", "[]str")},
    "PodDNSConfig": {1: ("nameservers", "[]str"), 2: ("searches", "[]str"), 3: ("options", "[]PodDNSConfigOption")},
    "PodDNSConfigOption": {1: ("name", "str"), 2: ("value", "str!")},
    "PodReadinessGate": {1: ("conditionType", "str!")},
    "TopologySpreadConstraint": {
        1: ("maxSkew", "int!"),
        2: ("topologyKey", "str!"),
        3: ("whenUnsatisfiable", "str!"),
        4: ("labelSelector", "LabelSelector"),
        5: ("minDomains", "int!"),
        6: ("nodeAffinityPolicy", "str!"),
        7: ("nodeTaintsPolicy", "str!"),
        8: ("matchLabelKeys", "[]str"),
    },
    "PodOS": {1: ("name", "str!")},
    "PodSchedulingGate": {1: ("name", "str!")},
    "PodResourceClaim": {
        1: ("name", "str!"),
        3: ("resourceClaimName", "str!"),
        4: ("resourceClaimTemplateName", "str!"),
    },
}

_CORE_VOLUMES: dict[str, dict[int, tuple[str, str]]] = {
    "Volume": {1: ("name", "str!"), 2: ("", "VolumeSource")},
    # In-tree cloud/legacy sources (gcePersistentDisk, awsElasticBlockStore, iscsi, glusterfs, rbd, flexVolume,
    # cinder, cephfs, flocker, fc, azureFile, vsphereVolume, quobyte, azureDisk, photonPersistentDisk,
    # portworxVolume, scaleIO, storageos) are deprecated and not decoded.
    "VolumeSource": {
        1: ("hostPath", "HostPathVolumeSource"),
        2: ("emptyDir", "EmptyDirVolumeSource"),
        5: ("gitRepo", "GitRepoVolumeSource"),
        6: ("secret", "SecretVolumeSource"),
        7: ("nfs", "NFSVolumeSource"),
        10: ("persistentVolumeClaim", "PersistentVolumeClaimVolumeSource"),
        16: ("downwardAPI", "DownwardAPIVolumeSource"),
        19: ("configMap", "ConfigMapVolumeSource"),
        26: ("projected", "ProjectedVolumeSource"),
        28: ("csi", "CSIVolumeSource"),
        29: ("ephemeral", "EphemeralVolumeSource"),
        30: ("image", "ImageVolumeSource"),
    },
    "HostPathVolumeSource": {1: ("path", "str!"), 2: ("type", "str!")},
    "EmptyDirVolumeSource": {1: ("medium", "str"), 2: ("sizeLimit", "Quantity")},
    "GitRepoVolumeSource": {1: ("repository", "str!"), 2: ("revision", "str"), 3: ("directory", "str")},
    "SecretVolumeSource": {
        1: ("secretName", "str"),
        2: ("items", "[]KeyToPath"),
        3: ("defaultMode", "int!"),
        4: ("optional", "bool!"),
    },
    "KeyToPath": {1: ("key", "str!"), 2: ("path", "str!"), 3: ("mode", "int!")},
    "NFSVolumeSource": {1: ("server", "str!"), 2: ("path", "str!"), 3: ("readOnly", "bool")},
    "PersistentVolumeClaimVolumeSource": {1: ("claimName", "str!"), 2: ("readOnly", "bool")},
    "DownwardAPIVolumeSource": {1: ("items", "[]DownwardAPIVolumeFile"), 2: ("defaultMode", "int!")},
    "DownwardAPIVolumeFile": {
        1: ("path", "str!"),
        2: ("fieldRef", "ObjectFieldSelector"),
        3: ("resourceFieldRef", "ResourceFieldSelector"),
        4: ("mode", "int!"),
    },
    "ConfigMapVolumeSource": {
        1: ("", "LocalObjectReference"),
        2: ("items", "[]KeyToPath"),
        3: ("defaultMode", "int!"),
        4: ("optional", "bool!"),
    },
    "ProjectedVolumeSource": {1: ("sources", "[]VolumeProjection"), 2: ("defaultMode", "int!")},
    "VolumeProjection": {
        1: ("secret", "SecretProjection"),
        2: ("downwardAPI", "DownwardAPIProjection"),
        3: ("configMap", "ConfigMapProjection"),
        4: ("serviceAccountToken", "ServiceAccountTokenProjection"),
        5: ("clusterTrustBundle", "ClusterTrustBundleProjection"),
    },
    "SecretProjection": {1: ("", "LocalObjectReference"), 2: ("items", "[]KeyToPath"), 4: ("optional", "bool!")},
    "ConfigMapProjection": {1: ("", "LocalObjectReference"), 2: ("items", "[]KeyToPath"), 4: ("optional", "bool!")},
    "DownwardAPIProjection": {1: ("items", "[]DownwardAPIVolumeFile")},
    "ServiceAccountTokenProjection": {1: ("audience", "str"), 2: ("expirationSeconds", "int!"), 3: ("path", "str!")},
    "ClusterTrustBundleProjection": {
        1: ("name", "str!"),
        2: ("signerName", "str!"),
        3: ("labelSelector", "LabelSelector"),
        5: ("optional", "bool!"),
        4: ("path", "str!"),
    },
    "CSIVolumeSource": {
        1: ("driver", "str!"),
        2: ("readOnly", "bool!"),
        3: ("fsType", "str!"),
        4: ("volumeAttributes", "{}str"),
        5: ("nodePublishSecretRef", "LocalObjectReference"),
    },
    "EphemeralVolumeSource": {1: ("volumeClaimTemplate", "PersistentVolumeClaimTemplate")},
    "PersistentVolumeClaimTemplate": {1: _META, 2: ("spec", "PersistentVolumeClaimSpec")},
    "PersistentVolumeClaimSpec": {
        1: ("accessModes", "[]str"),
        4: ("selector", "LabelSelector"),
        2: ("resources", "VolumeResourceRequirements"),
        3: ("volumeName", "str"),
        5: ("storageClassName", "str!"),
        6: ("volumeMode", "str!"),
        7: ("dataSource", "TypedLocalObjectReference"),
        8: ("dataSourceRef", "TypedObjectReference"),
        9: ("volumeAttributesClassName", "str!"),
    },
    "VolumeResourceRequirements": {1: ("limits", "{}Quantity"), 2: ("requests", "{}Quantity")},
    "TypedLocalObjectReference": {1: ("apiGroup", "str!"), 2: ("kind", "str!"), 3: ("name", "str!")},
    "TypedObjectReference": {
        1: ("apiGroup", "str!"),
        2: ("kind", "str!"),
        3: ("name", "str!"),
        4: ("namespace", "str!"),
    },
    "ImageVolumeSource": {1: ("reference", "str"), 2: ("pullPolicy", "str")},
}

_CORE_POD_STATUS: dict[str, dict[int, tuple[str, str]]] = {
    "PodStatus": {
        17: ("observedGeneration", "int"),
        1: ("phase", "str"),
        2: ("conditions", "[]PodCondition"),
        3: ("message", "str"),
        4: ("reason", "str"),
        11: ("nominatedNodeName", "str"),
        5: ("hostIP", "str"),
        16: ("hostIPs", "[]HostIP"),
        6: ("podIP", "str"),
        12: ("podIPs", "[]PodIP"),
        7: ("startTime", "Time"),
        10: ("initContainerStatuses", "[]ContainerStatus"),
        8: ("containerStatuses", "[]ContainerStatus"),
        9: ("qosClass", "str"),
        13: ("ephemeralContainerStatuses", "[]ContainerStatus"),
        14: ("resize", "str"),
        15: ("resourceClaimStatuses", "[]PodResourceClaimStatus"),
        19: ("allocatedResources", "{}Quantity"),
        20: ("resources", "ResourceRequirements"),
    },
    "PodCondition": {
        1: ("type", "str!"),
        7: ("observedGeneration", "int"),
        2: ("status", "str!"),
        3: ("lastProbeTime", "Time"),
        4: ("lastTransitionTime", "Time"),
        5: ("reason", "str"),
        6: ("message", "str"),
    },
    "HostIP": {1: ("ip", "str!")},
    "PodIP": {1: ("ip", "str!")},
    "ContainerStatus": {
        1: ("name", "str!"),
        2: ("state", "ContainerState"),
        3: ("lastState", "ContainerState"),
        4: ("ready", "bool!"),
        5: ("restartCount", "int!"),
        6: ("image", "str!"),
        7: ("imageID", "str!"),
        8: ("containerID", "str"),
        9: ("started", "bool!"),
        10: ("allocatedResources", "{}Quantity"),
        11: ("resources", "ResourceRequirements"),
        12: ("volumeMounts", "[]VolumeMountStatus"),
        13: ("user", "ContainerUser"),
        14: ("allocatedResourcesStatus", "[]ResourceStatus"),
        15: ("stopSignal", "str!"),
    },
    "ContainerState": {
        1: ("waiting", "ContainerStateWaiting"),
        2: ("running", "ContainerStateRunning"),
        3: ("terminated", "ContainerStateTerminated"),
    },
    "ContainerStateWaiting": {1: ("reason", "str"), 2: ("message", "str")},
    "ContainerStateRunning": {1: ("startedAt", "Time")},
    "ContainerStateTerminated": {
        1: ("exitCode", "int!"),
        2: ("signal", "int"),
        3: ("reason", "str"),
        4: ("message", "str"),
        5: ("startedAt", "Time"),
        6: ("finishedAt", "Time"),
        7: ("containerID", "str"),
    },
    "VolumeMountStatus": {
        1: ("name", "str!"),
        2: ("mountPath", "str!"),
        3: ("readOnly", "bool"),
        4: ("recursiveReadOnly", "str!"),
    },
    "ContainerUser": {1: ("linux", "LinuxContainerUser")},
    "LinuxContainerUser": {1: ("uid", "int!"), 2: ("gid", "int!"), 3: ("supplementalGroups", "[]int")},
    "ResourceStatus": {1: ("name", "str!"), 2: ("resources", "[]ResourceHealth")},
    "ResourceHealth": {1: ("resourceID", "str!"), 2: ("health", "str")},
    "PodResourceClaimStatus": {1: ("name", "str!"), 2: ("resourceClaimName", "str!")},
}

_DISCOVERY_V1: dict[str, dict[int, tuple[str, str]]] = {
    "EndpointSlice": {
        1: _META,
        4: ("addressType", "str!"),
        2: ("endpoints", "[]discovery.Endpoint"),
        3: ("ports", "[]discovery.EndpointPort"),
    },
    "discovery.Endpoint": {
        1: ("addresses", "[]str"),
        2: ("conditions", "discovery.EndpointConditions"),
        3: ("hostname", "str!"),
        4: ("targetRef", "ObjectReference"),
        5: ("deprecatedTopology", "{}str"),
        6: ("nodeName", "str!"),
        7: ("zone", "str!"),
        8: ("hints", "discovery.EndpointHints"),
    },
    "discovery.EndpointConditions": {1: ("ready", "bool!"), 2: ("serving", "bool!"), 3: ("terminating", "bool!")},
    "discovery.EndpointHints": {1: ("forZones", "[]discovery.ForZone"), 2: ("forNodes", "[]discovery.ForNode")},
    "discovery.ForZone": {1: ("name", "str!")},
    "discovery.ForNode": {1: ("name", "str!")},
    "discovery.EndpointPort": {
        1: ("name", "str!"),
        2: ("protocol", "str!"),
        3: ("port", "int!"),
        4: ("appProtocol", "str!"),
    },
}

_APPS_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Deployment": {1: _META, 2: ("spec", "DeploymentSpec"), 3: ("status", "DeploymentStatus")},
    "DeploymentSpec": {
        1: ("replicas", "int!"),
        2: ("selector", "LabelSelector"),
        3: ("template", "PodTemplateSpec"),
        4: ("strategy", "DeploymentStrategy"),
        5: ("minReadySeconds", "int"),
        6: ("revisionHistoryLimit", "int!"),
        7: ("paused", "bool"),
        9: ("progressDeadlineSeconds", "int!"),
        10: ("podReplacementPolicy", "str!"),
    },
    "DeploymentStrategy": {1: ("type", "str"), 2: ("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "IntOrString"), 2: ("maxSurge", "IntOrString")},
    "DeploymentStatus": {
        1: ("observedGeneration", "int"),
        2: ("replicas", "int"),
        3: ("updatedReplicas", "int"),
        7: ("readyReplicas", "int"),
        4: ("availableReplicas", "int"),
        5: ("unavailableReplicas", "int"),
        9: ("terminatingReplicas", "int!"),
        6: ("conditions", "[]DeploymentCondition"),
        8: ("collisionCount", "int!"),
    },
    "DeploymentCondition": {
        1: ("type", "str!"),
        2: ("status", "str!"),
        6: ("lastUpdateTime", "Time"),
        7: ("lastTransitionTime", "Time"),
        4: ("reason", "str"),
        5: ("message", "str"),
    },
    "ReplicaSet": {1: _META, 2: ("spec", "ReplicaSetSpec"), 3: ("status", "ReplicaSetStatus")},
    "ReplicaSetSpec": {
        1: ("replicas", "int!"),
        4: ("minReadySeconds", "int"),
        2: ("selector", "LabelSelector"),
        3: ("template", "PodTemplateSpec"),
    },
    "ReplicaSetStatus": {
        1: ("replicas", "int!"),
        2: ("fullyLabeledReplicas", "int"),
        4: ("readyReplicas", "int"),
        5: ("availableReplicas", "int"),
        7: ("terminatingReplicas", "int!"),
        3: ("observedGeneration", "int"),
        6: ("conditions", "[]ReplicaSetCondition"),
    },
    "ReplicaSetCondition": {
        1: ("type", "str!"),
        2: ("status", "str!"),
        3: ("lastTransitionTime", "Time"),
        4: ("reason", "str"),
        5: ("message", "str"),
    },
}

_AUTOSCALING_V1: dict[str, dict[int, tuple[str, str]]] = {
    "Scale": {1: _META, 2: ("spec", "ScaleSpec"), 3: ("status", "ScaleStatus")},
    "ScaleSpec": {1: ("replicas", "int")},
    "ScaleStatus": {1: ("replicas", "int!"), 2: ("selector", "str")},
}

_MESSAGES: dict[str, dict[int, tuple[str, str]]] = {
    **_META_V1,
    **_CORE_SERVICES,
    **_CORE_NODES,
    **_CORE_PODS,
    **_CORE_SECURITY,
    **_CORE_SCHEDULING,
    **_CORE_VOLUMES,
    **_CORE_POD_STATUS,
    **_DISCOVERY_V1,
    **_APPS_V1,
    **_AUTOSCALING_V1,
}

# (apiVersion, kind) of a top-level object -> its message. DeleteOptions is accepted in any version.
_KINDS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "Service"): "Service",
    ("v1", "Endpoints"): "Endpoints",
    ("v1", "Pod"): "Pod",
    ("v1", "Node"): "Node",
    ("v1", "Event"): "Event",
    ("discovery.k8s.io/v1", "EndpointSlice"): "EndpointSlice",
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("autoscaling/v1", "Scale"): "Scale",  # the body of a PUT to deployments/scale, replicasets/scale
}


@dataclass(frozen=True, slots=True)
class _Field:
    """One compiled schema entry."""

    name: str  # JSON name; "" = an embedded struct whose fields are inlined into the parent
    type: str  # scalar, well-known apimachinery type, or message name
    repeated: bool = False
    is_map: bool = False
    keep_zero: bool = False


def _compile_field(message: str, name: str, spec: str) -> _Field:
    keep_zero = spec.endswith("!")
    spec = spec.removesuffix("!")
    repeated, is_map = spec.startswith("[]"), spec.startswith("{}")
    kind = spec[2:] if repeated or is_map else spec
    if kind not in _SCALARS and kind not in _WELL_KNOWN and kind not in _MESSAGES:
        raise ValueError(f"protobuf schema: {message}.{name or '<inline>'} has unknown type {kind!r}")
    if not name and (repeated or is_map or kind not in _MESSAGES):
        raise ValueError(f"protobuf schema: {message} inlines {spec!r}, which is not a single message")
    return _Field(name, kind, repeated, is_map, keep_zero)


def _compile(messages: dict[str, dict[int, tuple[str, str]]]) -> dict[str, dict[int, _Field]]:
    return {
        message: {number: _compile_field(message, name, spec) for number, (name, spec) in fields.items()}
        for message, fields in messages.items()
    }


_SCHEMA = _compile(_MESSAGES)

# --------------------------------------------------------------------------------------------------
# Wire format
# --------------------------------------------------------------------------------------------------


def _malformed(where: str, problem: str) -> BadRequest:
    return BadRequest(f"invalid protobuf body: {where}: {problem}")


def _varint(data: memoryview, pos: int, where: str) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it."""
    result = shift = 0
    for index in range(pos, min(pos + 10, len(data))):
        byte = data[index]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, index + 1
        shift += 7
    if pos + 10 <= len(data):
        raise _malformed(where, "varint longer than 10 bytes")
    raise _malformed(where, "truncated varint")


def _fields(data: memoryview, where: str) -> Iterator[tuple[int, int, Wire]]:
    """The (field number, wire type, value) triples of one message: an int for varint and fixed-width
    fields, the payload for length-delimited ones."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos, where)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _malformed(where, "field number 0")
        value: Wire
        if wire == _VARINT:
            value, pos = _varint(data, pos, where)
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            if pos + width > end:
                raise _malformed(where, f"field {number}: truncated {width * 8}-bit value")
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        elif wire == _BYTES:
            size, pos = _varint(data, pos, where)
            if pos + size > end:
                raise _malformed(where, f"field {number}: length {size} runs past the end of the message")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise _malformed(where, f"field {number}: unsupported wire type {wire}")
        yield number, wire, value


def _signed(value: int) -> int:
    """int32/int64 are varints of their 64-bit two's complement."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _expect_varint(wire: int, value: Wire, where: str) -> int:
    if wire != _VARINT or not isinstance(value, int):
        raise _malformed(where, f"wire type {wire}, expected a varint")
    return value


def _expect_bytes(wire: int, value: Wire, where: str) -> memoryview:
    if wire != _BYTES or not isinstance(value, memoryview):
        raise _malformed(where, f"wire type {wire}, expected length-delimited")
    return value


def _text(data: memoryview, where: str) -> str:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as err:
        raise _malformed(where, f"string is not valid UTF-8 ({err.reason})") from err


# --------------------------------------------------------------------------------------------------
# apimachinery types with their own JSON form
# --------------------------------------------------------------------------------------------------


def _timestamp(data: memoryview, where: str, micro: bool) -> str | None:
    """metav1.Time (RFC 3339, whole seconds: upstream drops nanos) or MicroTime (RFC 3339, microseconds);
    an empty message is the zero time, which JSON writes as null."""
    if not len(data):
        return None
    seconds = nanos = 0
    for number, wire, value in _fields(data, where):
        if number == 1:
            seconds = _signed(_expect_varint(wire, value, f"{where}.seconds"))
        elif number == 2:
            nanos = _signed(_expect_varint(wire, value, f"{where}.nanos"))
    if not micro:
        nanos = 0
    seconds, nanos = seconds + nanos // 1_000_000_000, nanos % 1_000_000_000
    try:
        moment = _EPOCH + timedelta(seconds=seconds)
    except OverflowError as err:
        raise _malformed(where, f"timestamp {seconds}s is out of range") from err
    text = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
    return f"{text}.{nanos // 1000:06d}Z" if micro else f"{text}Z"


def _quantity(data: memoryview, where: str) -> str:
    """resource.Quantity {string=1}: JSON writes the canonical string."""
    text = "0"
    for number, wire, value in _fields(data, where):
        if number == 1:
            text = _text(_expect_bytes(wire, value, where), where)
    return text


def _int_or_string(data: memoryview, where: str) -> int | str:
    """intstr.IntOrString {type=1, intVal=2, strVal=3}: JSON writes a bare int or string."""
    kind, int_val, str_val = 0, 0, ""
    for number, wire, value in _fields(data, where):
        if number == 1:
            kind = _expect_varint(wire, value, where)
        elif number == 2:
            int_val = _signed(_expect_varint(wire, value, where))
        elif number == 3:
            str_val = _text(_expect_bytes(wire, value, where), where)
    return str_val if kind == 1 else int_val


def _fields_v1(data: memoryview, where: str) -> Any:
    """metav1.FieldsV1 {Raw=1}: the raw bytes are the JSON document itself."""
    raw = b""
    for number, wire, value in _fields(data, where):
        if number == 1:
            raw = bytes(_expect_bytes(wire, value, where))
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as err:
        raise _malformed(where, f"fieldsV1 is not JSON ({err})") from err


# --------------------------------------------------------------------------------------------------
# Schema-driven decoding
# --------------------------------------------------------------------------------------------------


def _scalar(kind: str, wire: int, value: Wire, where: str) -> Any:
    if kind == "int":
        return _signed(_expect_varint(wire, value, where))
    if kind == "bool":
        return _expect_varint(wire, value, where) != 0
    payload = _expect_bytes(wire, value, where)
    if kind == "str":
        return _text(payload, where)
    return base64.b64encode(payload).decode("ascii")  # bytes: JSON's []byte is base64


def _value(kind: str, wire: int, value: Wire, where: str) -> Any:
    """One value of `kind` as JSON would hold it."""
    if kind in _SCALARS:
        return _scalar(kind, wire, value, where)
    payload = _expect_bytes(wire, value, where)
    if kind == "Time":
        return _timestamp(payload, where, micro=False)
    if kind == "MicroTime":
        return _timestamp(payload, where, micro=True)
    if kind == "Quantity":
        return _quantity(payload, where)
    if kind == "IntOrString":
        return _int_or_string(payload, where)
    if kind == "FieldsV1":
        return _fields_v1(payload, where)
    return _message(kind, payload)


def _zero(kind: str) -> Any:
    """A map value the wire left out, as Go would default it."""
    defaults: dict[str, Any] = {"str": "", "int": 0, "bool": False, "bytes": "", "Quantity": "0"}
    return defaults.get(kind, {} if kind in _MESSAGES else None)


def _map_entry(field: _Field, data: memoryview, where: str) -> tuple[str, Any]:
    """A map<string, T> entry: a message {key=1, value=2}."""
    key, item = "", _zero(field.type)
    for number, wire, value in _fields(data, where):
        if number == 1:
            key = _text(_expect_bytes(wire, value, f"{where} key"), f"{where} key")
        elif number == 2:
            item = _value(field.type, wire, value, f"{where} value")
    return key, item


def _repeated(field: _Field, wire: int, value: Wire, where: str) -> list[Any]:
    """The values one occurrence of a repeated field contributes (several when numbers are packed)."""
    if field.type in _VARINT_SCALARS and wire == _BYTES and isinstance(value, memoryview):
        items, pos = [], 0
        while pos < len(value):
            number, pos = _varint(value, pos, where)
            items.append(_scalar(field.type, _VARINT, number, where))
        return items
    return [_value(field.type, wire, value, where)]


def _store(out: dict[str, Any], field: _Field, wire: int, value: Wire, where: str) -> None:
    if field.is_map:
        key, item = _map_entry(field, _expect_bytes(wire, value, where), where)
        out.setdefault(field.name, {})[key] = item
    elif field.repeated:
        out.setdefault(field.name, []).extend(_repeated(field, wire, value, where))
    elif not field.name:
        out.update(_value(field.type, wire, value, where))
    else:
        item = _value(field.type, wire, value, where)
        if field.type in _SCALARS and not field.keep_zero and not item:
            out.pop(field.name, None)  # a non-pointer zero scalar: JSON's omitempty leaves it out
        else:
            out[field.name] = item


def _message(name: str, data: memoryview) -> dict[str, Any]:
    """A message of the schema as the dict its JSON encoding would give."""
    schema = _SCHEMA[name]
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data, name):
        field = schema.get(number)
        if field is not None:  # unknown field numbers (newer clients) are skipped
            _store(out, field, wire, value, f"{name}.{field.name or field.type}")
    return out


# --------------------------------------------------------------------------------------------------
# Envelope
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unknown:
    """runtime.Unknown: the envelope around every protobuf-encoded object."""

    api_version: str
    kind: str
    raw: memoryview
    content_encoding: str


def _type_meta(data: memoryview) -> tuple[str, str]:
    api_version = kind = ""
    for number, wire, value in _fields(data, "Unknown.typeMeta"):
        if number == 1:
            api_version = _text(_expect_bytes(wire, value, "TypeMeta.apiVersion"), "TypeMeta.apiVersion")
        elif number == 2:
            kind = _text(_expect_bytes(wire, value, "TypeMeta.kind"), "TypeMeta.kind")
    return api_version, kind


def _unknown(data: memoryview) -> _Unknown:
    api_version = kind = encoding = ""
    raw = memoryview(b"")
    for number, wire, value in _fields(data, "Unknown"):
        if number == 1:
            api_version, kind = _type_meta(_expect_bytes(wire, value, "Unknown.typeMeta"))
        elif number == 2:
            raw = _expect_bytes(wire, value, "Unknown.raw")
        elif number == 3:
            encoding = _text(_expect_bytes(wire, value, "Unknown.contentEncoding"), "Unknown.contentEncoding")
    return _Unknown(api_version, kind, raw, encoding)


def _kind_message(api_version: str, kind: str) -> str:
    if kind == "DeleteOptions":
        return "DeleteOptions"
    message = _KINDS.get((api_version, kind))
    if message is None:
        raise UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml (no protobuf decoding for {kind} in version {api_version!r})"
        )
    return message


def supported_kinds() -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs `decode` understands (DeleteOptions: in any apiVersion)."""
    return [*_KINDS, ("meta.k8s.io/v1", "DeleteOptions")]


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body (``k8s\\x00`` + runtime.Unknown) as the dict its JSON form would give,
    with ``kind`` and ``apiVersion`` set.

    Raises BadRequest for a missing magic prefix, malformed wire data or a missing kind, and
    UnsupportedMediaType (415, what upstream answers for a body it cannot decode) for a kind without a
    schema here or a content encoding."""
    if not body.startswith(MAGIC):
        raise BadRequest("invalid protobuf body: missing the 'k8s\\x00' prefix of application/vnd.kubernetes.protobuf")
    envelope = _unknown(memoryview(body)[len(MAGIC) :])
    if not envelope.kind or not envelope.api_version:
        raise BadRequest("invalid protobuf body: Object 'Kind' or 'apiVersion' is missing in the runtime.Unknown")
    if envelope.content_encoding:
        raise UnsupportedMediaType(
            f"protobuf body with content encoding {envelope.content_encoding!r} is not supported"
        )
    message = _kind_message(envelope.api_version, envelope.kind)
    return {"kind": envelope.kind, "apiVersion": envelope.api_version, **_message(message, envelope.raw)}
