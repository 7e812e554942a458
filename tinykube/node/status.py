"""Pod status as the kubelet reports it, from what the runtime says about each container (pure).

Conditions follow upstream's kubelet: `PodReadyToStartContainers`, `Initialized`, `ContainersReady`, `Ready`
(which also needs every readiness gate's condition to be True) and `PodScheduled`; a condition keeps its
`lastTransitionTime` while its status does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Object = dict[str, Any]

READY_ANNOTATION = "tinykube.io/ready"  # "false" makes a simulated pod's containers not ready
CONDITION_ORDER = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


@dataclass
class ContainerState:
    """What the runtime knows of one container."""

    name: str
    image: str = ""
    container_id: str = ""
    running_since: str = ""  # RFC 3339; "" when not running
    ready: bool = False
    restart_count: int = 0
    waiting_reason: str = ""  # e.g. CrashLoopBackOff, ContainerCreating
    waiting_message: str = ""
    terminated: Object | None = None  # {"exitCode", "reason", "startedAt", "finishedAt"} of the current state
    last_terminated: Object | None = None  # the previous run's, for lastState
    started: bool | None = None  # its startup probe passed (None: running means started, as without one)


@dataclass
class PodState:
    pod_ip: str
    host_ip: str
    started_at: str
    containers: list[ContainerState] = field(default_factory=list)
    phase: str = "Running"  # Pending, Running, Succeeded, Failed
    ephemeral: list[ContainerState] = field(default_factory=list)  # `kubectl debug`'s containers
    init_containers: list[ContainerState] = field(default_factory=list)  # in spec order
    reason: str = ""  # why the kubelet ended it (DeadlineExceeded), with `message`
    message: str = ""


@dataclass
class PodContainers:
    """The states of a pod's init containers and containers (as a stopped pod's ended)."""

    init_containers: list[ContainerState] = field(default_factory=list)
    containers: list[ContainerState] = field(default_factory=list)


def _condition(kind: str, ok: bool, old: list[Object], now: str, reason: str = "", message: str = "") -> Object:
    status = "True" if ok else "False"
    previous = next((c for c in old if c.get("type") == kind), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == status else now
    condition: Object = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _gates_problem(pod: Object, conditions: list[Object]) -> str:
    """Upstream's message for the readiness gates that are not True (each one's, joined), or ""."""
    problems = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        kind = gate.get("conditionType")
        found = next((c for c in conditions if c.get("type") == kind), None)
        if found is None:
            problems.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif found.get("status") != "True":
            problems.append(f'the status of pod readiness gate "{kind}" is not "True", but {found.get("status")}')
    return ", ".join(problems)


def sidecar_names(pod: Object) -> frozenset[str]:
    """The pod's restartable init containers (`restartPolicy: Always`): sidecars, running beside the others."""
    inits = (pod.get("spec") or {}).get("initContainers") or []
    return frozenset(str(c.get("name")) for c in inits if c.get("restartPolicy") == "Always")


def _containers_ready(pod: Object, state: PodState) -> tuple[bool, str, str]:
    """Upstream's `GenerateContainersReadyCondition`: (ready, reason, message), sidecars counted before the others. A
    pod that has ended says so (its containers are not ready, whatever they were last)."""
    if state.phase in ("Succeeded", "Failed"):
        return False, "PodCompleted" if state.phase == "Succeeded" else "PodFailed", ""
    sidecars = sidecar_names(pod)
    counted = [c for c in state.init_containers if c.name in sidecars] + state.containers
    unready = [c.name for c in counted if not c.ready]
    if unready:
        return False, "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]"
    return True, "", ""


def _initialized(pod: Object, state: PodState) -> tuple[bool, str, str]:
    """Upstream's `GeneratePodInitializedCondition`: every init container has succeeded (a sidecar: has started),
    or a regular container has started since."""
    if not state.init_containers:
        return True, "", ""
    if state.phase == "Succeeded":
        return True, "PodCompleted", ""
    if any(c.running_since or c.terminated is not None or c.last_terminated is not None for c in state.containers):
        return True, "", ""
    sidecars = sidecar_names(pod)
    incomplete = [c.name for c in state.init_containers if not _init_done(c, c.name in sidecars)]
    if incomplete:
        return False, "ContainersNotInitialized", f"containers with incomplete status: [{' '.join(incomplete)}]"
    return True, "", ""


def _init_done(c: ContainerState, sidecar: bool) -> bool:
    if sidecar:
        return bool(c.running_since) and c.started is not False
    return c.terminated is not None and c.terminated.get("exitCode") == 0


def _container_status(container: ContainerState) -> Object:
    state: Object
    if container.running_since:
        state = {"running": {"startedAt": container.running_since}}
    elif container.terminated is not None:
        state = {"terminated": container.terminated}
    else:
        waiting: Object = {"reason": container.waiting_reason or "ContainerCreating"}
        if container.waiting_message:
            waiting["message"] = container.waiting_message
        state = {"waiting": waiting}
    status: Object = {
        "name": container.name,
        "image": container.image,
        "imageID": "",
        "ready": container.ready,
        "restartCount": container.restart_count,
        "started": bool(container.running_since) and container.started is not False,
        "state": state,
        "lastState": {"terminated": container.last_terminated} if container.last_terminated else {},
    }
    if container.container_id:
        status["containerID"] = container.container_id
    return status


def pod_status(pod: Object, state: PodState, now: str) -> Object:
    """The status to report; `now` stamps conditions whose status changed."""
    old = list((pod.get("status") or {}).get("conditions") or [])
    containers_ready, reason, message = _containers_ready(pod, state)
    initialized, *init_why = _initialized(pod, state)
    gates = _gates_problem(pod, old)
    ready_why = ("ReadinessGatesNotReady", gates) if containers_ready and gates else (reason, message)
    # The sandbox is there from before the first status report until the pod ends (upstream then removes it).
    sandbox_ready = state.phase not in ("Succeeded", "Failed")
    ours = [
        _condition("PodReadyToStartContainers", sandbox_ready, old, now),
        _condition("Initialized", initialized, old, now, *init_why),
        _condition("Ready", containers_ready and not gates, old, now, *ready_why),
        _condition("ContainersReady", containers_ready, old, now, reason, message),
        _condition("PodScheduled", True, old, now),
    ]
    others = [c for c in old if c.get("type") not in CONDITION_ORDER]  # readiness gates' conditions, set by others
    status: Object = {
        "phase": state.phase,
        "conditions": ours + others,
        "hostIP": state.host_ip,
        "hostIPs": [{"ip": state.host_ip}],
        "startTime": state.started_at,
        "containerStatuses": [_container_status(c) for c in state.containers],
    }
    if state.init_containers:
        status["initContainerStatuses"] = [_container_status(c) for c in state.init_containers]
    if state.ephemeral:
        status["ephemeralContainerStatuses"] = [_container_status(c) for c in state.ephemeral]
    if state.reason:
        status["reason"], status["message"] = state.reason, state.message
    if state.pod_ip:
        status["podIP"] = state.pod_ip
        status["podIPs"] = [{"ip": state.pod_ip}]
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        status["qosClass"] = qos
    return status


def annotated_ready(pod: Object) -> bool:
    """The simulated runtime's readiness: containers are ready unless the pod is annotated `tinykube.io/ready:
    "false"` (tests flip it to see endpoints follow)."""
    value = str((pod["metadata"].get("annotations") or {}).get(READY_ANNOTATION, "true"))
    return value.lower() != "false"
