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


def _containers_ready(state: PodState) -> tuple[bool, str, str]:
    """Upstream's `GenerateContainersReadyCondition`: (ready, reason, message). A pod that has ended says so
    (its containers are not ready, whatever they were last)."""
    if state.phase in ("Succeeded", "Failed"):
        return False, "PodCompleted" if state.phase == "Succeeded" else "PodFailed", ""
    unready = [c.name for c in state.containers if not c.ready]
    if unready:
        return False, "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]"
    return True, "", ""


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
    containers_ready, reason, message = _containers_ready(state)
    gates = _gates_problem(pod, old)
    ready_why = ("ReadinessGatesNotReady", gates) if containers_ready and gates else (reason, message)
    # The sandbox is there from before the first status report until the pod ends (upstream then removes it).
    sandbox_ready = state.phase not in ("Succeeded", "Failed")
    ours = [
        _condition("PodReadyToStartContainers", sandbox_ready, old, now),
        _condition("Initialized", True, old, now),
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
    if state.ephemeral:
        status["ephemeralContainerStatuses"] = [_container_status(c) for c in state.ephemeral]
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
