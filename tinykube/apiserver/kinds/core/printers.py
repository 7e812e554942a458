"""Table columns (`kubectl get`) of the core kinds, as upstream's printers
(``pkg/printers/internalversion/printers.go``): Services, Pods, Endpoints, Nodes, Namespaces, Events and
ReplicationControllers here; the config kinds in `config_printers`, the volumes in `volume_printers`. ``PRINTERS``
is the group's table.

Objects are plain JSON dicts in their v1 wire form (so container ``lastState``, not the Go field name
``LastTerminationState``); fields the apiserver would have defaulted are read with the same defaults (a Service
without ``type`` is ``ClusterIP``, a port without ``protocol`` is ``TCP``). Ages use
``k8s.io/apimachinery/pkg/util/duration.HumanDuration``. Descriptions are the upstream SwaggerDoc() strings of the
fields each column shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str, dicts
from tinykube.api.meta import parse_time
from tinykube.apiserver.kinds.core import config_printers, volume_printers
from tinykube.apiserver.kinds.core.template_cells import CONTAINERS_COLUMN, IMAGES_COLUMN, replicated_cells
from tinykube.apiserver.printing.cells import (
    MAX_LISTED,
    age,
    format_labels,
    human_duration,
    int_or_zero,
    join_host_port,
    meta_of,
    name_of,
    since,
)
from tinykube.apiserver.printing.table import (
    AGE_COLUMN,
    LABEL_SELECTORS_URL,
    NAME_COLUMN,
    NAME_DESCRIPTION,
    Cells,
    Column,
    Printer,
)

SERVICE_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Type",
        "string",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
        'ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a '
        "cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by "
        "the selector or if that is not specified, by manual construction of an Endpoints object or "
        'EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the '
        'endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" builds '
        "on ClusterIP and allocates a port on every node which routes to the same endpoints as the "
        'clusterIP. "LoadBalancer" builds on NodePort and creates an external load-balancer (if '
        "supported in the current cloud) which routes to the same endpoints as the clusterIP. "
        '"ExternalName" aliases this service to the specified externalName. Several other fields '
        "do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/"
        "services-networking/service/#publishing-services-service-types",
    ),
    Column(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address "
        "is specified manually, is in-range (as per system configuration), and is not in use, it "
        "will be allocated to the service; otherwise creation of the service will fail. This field "
        "may not be changed through updates unless the type field is also being changed to "
        "ExternalName (which requires this field to be blank) or the type field is being changed "
        "from ExternalName (in which case this field may optionally be specified, as describe "
        'above).  Valid values are "None", empty string (""), or a valid IP address. Setting '
        'this to "None" makes a "headless service" (no virtual IP), which is useful when direct '
        "endpoint connections are preferred and proxying is not required.  Only applies to types "
        "ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service "
        "of type ExternalName, creation will fail. This field will be wiped when updating a Service "
        "to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/"
        "service/#virtual-ips-and-service-proxies",
    ),
    Column(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
        "traffic for this service.  These IPs are not managed by Kubernetes.  The user is "
        "responsible for ensuring that traffic arrives at a node with this IP.  A common example is "
        "external load-balancers that are not part of the Kubernetes system.",
    ),
    Column(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/"
        "concepts/services-networking/service/#virtual-ips-and-service-proxies",
    ),
    AGE_COLUMN,
    Column(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector. If empty "
        "or not present, the service is assumed to have an external process managing its "
        "endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and "
        "LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/"
        "concepts/services-networking/service/",
        priority=1,
    ),
)

POD_COLUMNS = (
    NAME_COLUMN,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted.",
    ),
    AGE_COLUMN,
    Column(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        priority=1,
    ),
    Column(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate "
        "for scheduling by the scheduler defined in schedulerName. Once this field is set, the "
        "kubelet for this node becomes responsible for the lifecycle of this pod. This field should "
        "not be used to express a desire for the pod to be scheduled on a specific node. "
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        priority=1,
    ),
    Column(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot "
        "be scheduled right away as preemption victims receive their graceful termination periods. "
        "This field does not guarantee that the pod will be scheduled on this node. Scheduler may "
        "decide to place the pod elsewhere if other nodes become available sooner. Scheduler may "
        "also decide to give the resources on this node to a higher priority pod that is created "
        "after preemption. As a result, this field may be different than PodSpec.nodeName when the "
        "pod is scheduled.",
        priority=1,
    ),
    Column(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when "
        "all its containers are ready AND all conditions specified in the readiness gates have "
        'status equal to "True" More info: '
        "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        priority=1,
    ),
)

ENDPOINTS_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
        "according to the IPs they share. A single address with multiple ports, some of which are "
        "ready and some of which are not (because they come from different containers) will result "
        "in the address being displayed in different subsets for the different ports. No address "
        "will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses "
        "and ports that comprise a service.",
    ),
    AGE_COLUMN,
)


_DESC_NODE_ADDRESSES = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: "
    "https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared "
    "as mergeable, but the merge key is not sufficiently unique, which can cause data corruption "
    "when it is merged. Callers should instead use a full-replacement patch. See "
    "https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change "
    "during the lifetime of a Node. However, there are some exceptions where this may not be "
    "possible, such as Pods that inherit a Node's address in its own status or consumers of the "
    "downward API (status.hostIP)."
)

NODE_COLUMNS = (
    NAME_COLUMN,
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    AGE_COLUMN,
    Column("Version", "string", "Kubelet Version reported by the node."),
    Column("Internal-IP", "string", _DESC_NODE_ADDRESSES, priority=1),
    Column("External-IP", "string", _DESC_NODE_ADDRESSES, priority=1),
    Column(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        priority=1,
    ),
    Column(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        priority=1,
    ),
    Column(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        priority=1,
    ),
)

NAMESPACE_COLUMNS = (
    NAME_COLUMN,
    Column("Status", "string", "The status of the namespace"),
    AGE_COLUMN,
)

# Upstream order: the wide columns are interleaved, not appended (SUBOBJECT and SOURCE sit
# between OBJECT and MESSAGE), and NAME comes last.
EVENT_COLUMNS = (
    Column("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    Column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    Column(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status.",
    ),
    Column("Object", "string", "The object that this event is about."),
    Column(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should "
        "contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. "
        "For example, if the object reference is to a container within a pod, this would take on a "
        'value like: "spec.containers{name}" (where "name" refers to the name of the container '
        'that triggered the event) or if no container name is specified "spec.containers[2]" '
        "(container with index 2 in this pod). This syntax is chosen only to have some well-defined "
        "way of referencing a part of an object.",
        priority=1,
    ),
    Column(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
        priority=1,
    ),
    Column("Message", "string", "A human-readable description of the status of this operation."),
    Column(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority=1,
    ),
    Column("Count", "string", "The number of times this event has occurred.", priority=1),
    Column("Name", "string", NAME_DESCRIPTION, format="name", priority=1),
)

# ---------------------------------------------------------------------------------------------
# Services
# ---------------------------------------------------------------------------------------------


def _load_balancer_ips(status: Mapping[str, Any]) -> str:
    """``loadBalancerStatusStringer`` (wide: no 16-char clipping): sorted unique IPs/hostnames."""
    found: set[str] = set()
    for ingress in dicts(as_dict(status.get("loadBalancer")).get("ingress")):
        ip, hostname = as_str(ingress.get("ip")), as_str(ingress.get("hostname"))
        if ip:
            found.add(ip)
        elif hostname:
            found.add(hostname)
    return ",".join(sorted(found))


def service_external_ip(service: Mapping[str, Any]) -> str:
    """``getServiceExternalIP``."""
    spec = as_dict(service.get("spec"))
    external_ips = [ip for ip in as_list(spec.get("externalIPs")) if isinstance(ip, str)]
    svc_type = as_str(spec.get("type")) or "ClusterIP"
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if svc_type == "LoadBalancer":
        lb_ips = _load_balancer_ips(as_dict(service.get("status")))
        if external_ips:
            return ",".join([*(lb_ips.split(",") if lb_ips else []), *external_ips])
        return lb_ips or "<pending>"
    if svc_type == "ExternalName":
        return as_str(spec.get("externalName"))
    return "<unknown>"


def service_ports(ports: Any) -> str:
    """``makePortString``: ``port/proto`` or ``port:nodePort/proto``, comma-joined; ``<none>``."""
    pieces = []
    for port in dicts(ports):
        protocol = as_str(port.get("protocol")) or "TCP"
        node_port = int_or_zero(port.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{int_or_zero(port.get('port'))}:{node_port}/{protocol}")
        else:
            pieces.append(f"{int_or_zero(port.get('port'))}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    cluster_ips = [ip for ip in as_list(spec.get("clusterIPs")) if isinstance(ip, str)]
    # v1 objects from older writers may carry only the singular field.
    cluster_ip = cluster_ips[0] if cluster_ips else as_str(spec.get("clusterIP"))
    return [
        name_of(obj),
        as_str(spec.get("type")) or "ClusterIP",
        cluster_ip or "<none>",
        service_external_ip(obj),
        service_ports(spec.get("ports")),
        age(obj, now),
        format_labels(spec.get("selector")),
    ]


# ---------------------------------------------------------------------------------------------
# Pods
# ---------------------------------------------------------------------------------------------

# Row conditions of finished pods (metav1.RowCompleted), as upstream's podSuccessConditions.
_POD_COMPLETED_MESSAGES = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}


def _pod_conditions(obj: dict[str, Any]) -> list[dict[str, str]]:
    phase = as_str(as_dict(obj.get("status")).get("phase"))
    if phase not in _POD_COMPLETED_MESSAGES:
        return []
    message = _POD_COMPLETED_MESSAGES[phase]
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


def _has_condition(conditions: Iterable[dict[str, Any]], kind: str) -> bool:
    """True when the first condition of ``kind`` has status True."""
    for condition in conditions:
        if condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def _terminated_reason(terminated: Mapping[str, Any], prefix: str = "") -> str:
    reason = as_str(terminated.get("reason"))
    if reason:
        return prefix + reason
    signal = int_or_zero(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{int_or_zero(terminated.get('exitCode'))}"


class _RestartTally:
    """Restart count plus the latest ``lastState.terminated.finishedAt`` seen."""

    def __init__(self) -> None:
        self.count = 0
        self.last: datetime | None = None

    def add(self, status: Mapping[str, Any]) -> None:
        self.count += int_or_zero(status.get("restartCount"))
        terminated = as_dict(as_dict(status.get("lastState")).get("terminated"))
        if terminated:
            finished = parse_time(terminated.get("finishedAt"))
            if finished is not None and (self.last is None or finished > self.last):
                self.last = finished


@dataclass(slots=True)
class _PodSummary:
    ready: int
    total: int
    reason: str
    restarts: int
    last_restart: datetime | None


def _state(container: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """``state.waiting`` / ``running`` / ``terminated`` if set (``{}`` counts, like a non-nil Go pointer)."""
    part = as_dict(container.get("state")).get(key)
    return part if isinstance(part, dict) else None


def _is_restartable_init(container: Mapping[str, Any] | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _pod_summary(obj: Mapping[str, Any]) -> _PodSummary:
    """READY, STATUS and RESTARTS as computed by upstream ``printPod``."""
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    conditions = dicts(status.get("conditions"))
    init_specs = dicts(spec.get("initContainers"))
    init_containers = {as_str(c.get("name")): c for c in init_specs}
    total = len(dicts(spec.get("containers"))) + sum(1 for c in init_specs if _is_restartable_init(c))
    ready = 0
    phase = as_str(status.get("phase"))
    reason = as_str(status.get("reason")) or phase
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    all_restarts, sidecar_restarts = _RestartTally(), _RestartTally()
    init_statuses = dicts(status.get("initContainerStatuses"))
    initializing = False
    for index, container in enumerate(init_statuses):
        spec_container = init_containers.get(as_str(container.get("name")))
        all_restarts.add(container)
        if _is_restartable_init(spec_container):
            sidecar_restarts.add(container)
        terminated, waiting = _state(container, "terminated"), _state(container, "waiting")
        if terminated is not None and int_or_zero(terminated.get("exitCode")) == 0:
            continue
        if _is_restartable_init(spec_container) and container.get("started") is True:
            if container.get("ready") is True:
                ready += 1
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and as_str(waiting.get("reason")) not in ("", "PodInitializing"):
            reason = "Init:" + as_str(waiting.get("reason"))
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    restarts = all_restarts
    if not initializing or _has_condition(conditions, "Initialized"):
        restarts = sidecar_restarts
        has_running = False
        for container in reversed(dicts(status.get("containerStatuses"))):
            restarts.add(container)
            waiting, terminated = _state(container, "waiting"), _state(container, "terminated")
            if waiting is not None and as_str(waiting.get("reason")):
                reason = as_str(waiting.get("reason"))
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif container.get("ready") is True and _state(container, "running") is not None:
                has_running = True
                ready += 1
        # Back to Running if a container still runs after another one completed.
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition(conditions, "Ready") else "NotReady"

    if meta_of(obj).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return _PodSummary(ready, total, reason, restarts.count, restarts.last)


def _pod_readiness_gates(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    gates = dicts(spec.get("readinessGates"))
    if not gates:
        return "<none>"
    conditions = dicts(status.get("conditions"))
    true_count = 0
    for gate in gates:
        for condition in conditions:
            if condition.get("type") == gate.get("conditionType"):
                if condition.get("status") == "True":
                    true_count += 1
                break
    return f"{true_count}/{len(gates)}"


def _pod_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    summary = _pod_summary(obj)
    restarts = str(summary.restarts)
    if summary.restarts != 0 and summary.last_restart is not None:
        restarts += f" ({human_duration((now - summary.last_restart).total_seconds())} ago)"
    pod_ips = dicts(status.get("podIPs"))
    pod_ip = as_str(pod_ips[0].get("ip")) if pod_ips else as_str(status.get("podIP"))
    return [
        name_of(obj),
        f"{summary.ready}/{summary.total}",
        summary.reason,
        restarts,
        age(obj, now),
        pod_ip or "<none>",
        as_str(spec.get("nodeName")) or "<none>",
        as_str(status.get("nominatedNodeName")) or "<none>",
        _pod_readiness_gates(spec, status),
    ]


# ---------------------------------------------------------------------------------------------
# Endpoints
# ---------------------------------------------------------------------------------------------


def format_endpoints(endpoints: Mapping[str, Any]) -> str:
    """``formatEndpoints``: up to three ``ip:port`` (ready addresses only), then ``+ N more...``."""
    subsets = dicts(endpoints.get("subsets"))
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    more = False
    for subset in subsets:
        ips = [as_str(address.get("ip")) for address in dicts(subset.get("addresses"))]
        ports = dicts(subset.get("ports"))
        # Headless services may have no ports: bare IPs. Otherwise each port lists every IP.
        groups = [ips]
        if ports:
            groups = [[join_host_port(ip, int_or_zero(port.get("port"))) for ip in ips] for port in ports]
        for group in groups:
            count += len(group)
            for item in group:
                if len(shown) == MAX_LISTED:
                    more = True
                    break
                shown.append(item)
    text = ",".join(shown)
    return f"{text} + {count - MAX_LISTED} more..." if more else text


def _endpoints_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), format_endpoints(obj), age(obj, now)]


# ---------------------------------------------------------------------------------------------
# Nodes and Namespaces
# ---------------------------------------------------------------------------------------------

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


def node_roles(labels: Any) -> list[str]:
    """``findNodeRoles``: ``node-role.kubernetes.io/<role>`` keys and ``kubernetes.io/role`` values."""
    roles: set[str] = set()
    for key, value in as_dict(labels).items():
        if key.startswith(_NODE_ROLE_PREFIX):
            if role := key[len(_NODE_ROLE_PREFIX) :]:
                roles.add(role)
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _node_status(obj: Mapping[str, Any]) -> str:
    ready = None
    for condition in dicts(as_dict(obj.get("status")).get("conditions")):
        if condition.get("type") == "Ready":
            ready = condition  # the last one wins, as with upstream's map
    parts = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if as_dict(obj.get("spec")).get("unschedulable") is True:
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def _node_address(obj: Mapping[str, Any], kind: str) -> str:
    for address in dicts(as_dict(obj.get("status")).get("addresses")):
        if address.get("type") == kind:
            return as_str(address.get("address"))
    return "<none>"


def _node_cells(obj: dict[str, Any], now: datetime) -> Cells:
    info = as_dict(as_dict(obj.get("status")).get("nodeInfo"))
    return [
        name_of(obj),
        _node_status(obj),
        ",".join(node_roles(meta_of(obj).get("labels"))) or "<none>",
        age(obj, now),
        as_str(info.get("kubeletVersion")),
        _node_address(obj, "InternalIP"),
        _node_address(obj, "ExternalIP"),
        as_str(info.get("osImage")) or "<unknown>",
        as_str(info.get("kernelVersion")) or "<unknown>",
        as_str(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


def _namespace_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), as_str(as_dict(obj.get("status")).get("phase")), age(obj, now)]


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------


def _event_source(obj: Mapping[str, Any]) -> str:
    """``formatEventSource``: component (or reportingComponent), then ``, host`` if known."""
    source = as_dict(obj.get("source"))
    component = as_str(source.get("component")) or as_str(obj.get("reportingComponent"))
    instance = as_str(source.get("host")) or as_str(obj.get("reportingInstance"))
    return f"{component}, {instance}" if instance else component


def _event_cells(obj: dict[str, Any], now: datetime) -> Cells:
    if parse_time(obj.get("firstTimestamp")) is not None:
        first_seen = since(obj.get("firstTimestamp"), now)
    else:
        first_seen = since(obj.get("eventTime"), now)
    last_seen = since(obj.get("lastTimestamp"), now)
    if parse_time(obj.get("lastTimestamp")) is None:
        last_seen = first_seen
    count = int_or_zero(obj.get("count"))
    series = obj.get("series")
    if isinstance(series, dict):
        last_seen = since(series.get("lastObservedTime"), now)
        count = int_or_zero(series.get("count"))
    elif count == 0:
        count = 1  # singleton events carry no count in the events.k8s.io API
    involved = as_dict(obj.get("involvedObject"))
    kind, name = as_str(involved.get("kind")).lower(), as_str(involved.get("name"))
    return [
        last_seen,
        as_str(obj.get("type")),
        as_str(obj.get("reason")),
        f"{kind}/{name}" if name else kind,
        as_str(involved.get("fieldPath")),
        _event_source(obj),
        as_str(obj.get("message")).strip(),
        first_seen,
        count,
        name_of(obj),
    ]


# ---------------------------------------------------------------------------------------------
# ReplicationControllers
# ---------------------------------------------------------------------------------------------

_RC_URL = (
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)

REPLICATION_CONTROLLER_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and "
        f"unspecified. Defaults to 1. More info: {_RC_URL}",
    ),
    Column("Current", "integer", f"Replicas is the most recently observed number of replicas. More info: {_RC_URL}"),
    Column("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE_COLUMN,
    CONTAINERS_COLUMN,
    IMAGES_COLUMN,
    Column(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is "
        "defaulted to the labels present on the Pod template. Label keys and values that must match in order to be "
        f"controlled by this replication controller, if empty defaulted to labels on Pod template. More info: "
        f"{LABEL_SELECTORS_URL}",
        priority=1,
    ),
)


def _replication_controller_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return replicated_cells(obj, now, format_labels)


PRINTERS: dict[str, Printer] = {
    "services": Printer(SERVICE_COLUMNS, _service_cells),
    "pods": Printer(POD_COLUMNS, _pod_cells, _pod_conditions),
    "endpoints": Printer(ENDPOINTS_COLUMNS, _endpoints_cells),
    "nodes": Printer(NODE_COLUMNS, _node_cells),
    "namespaces": Printer(NAMESPACE_COLUMNS, _namespace_cells),
    "events": Printer(EVENT_COLUMNS, _event_cells),
    "replicationcontrollers": Printer(REPLICATION_CONTROLLER_COLUMNS, _replication_controller_cells),
    **config_printers.PRINTERS,
    **volume_printers.PRINTERS,
}
