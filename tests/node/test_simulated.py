"""The simulated runtime's container lifetimes, init containers and terminating status (issue 38, defects 21-23), on
a real `tinykube up --nodes 1`; and the pure rules under them (lifetimes read from commands, the phase and the
`Initialized` condition with init containers)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.conftest import eventually
from tests.node.conftest import phase_is, read, simulated_cluster
from tinykube.node.containers import pod_phase
from tinykube.node.lifetimes import Lifetime, lifetime
from tinykube.node.status import ContainerState, PodState, pod_status

Object = dict[str, Any]


# Pure: what a command says of its run


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        pytest.param([], [], None, id="no-command-runs-until-stopped"),
        pytest.param(["/pause"], [], None, id="pause"),
        pytest.param(["nginx", "-g", "daemon off;"], [], None, id="server"),
        pytest.param(["sleep", "infinity"], [], None, id="sleep-infinity"),
        pytest.param(["sleep"], ["30"], Lifetime(30.0, 0), id="sleep-args"),
        pytest.param(["/bin/sleep", "1m"], [], Lifetime(60.0, 0), id="sleep-minutes"),
        pytest.param(["true"], [], Lifetime(0.0, 0), id="true"),
        pytest.param(["/bin/false"], [], Lifetime(0.0, 1), id="false"),
        pytest.param(["sh", "-c", "exit 3"], [], Lifetime(0.0, 3), id="sh-exit"),
        pytest.param(["/bin/sh", "-c"], ["sleep 2; exit 1"], Lifetime(2.0, 1), id="sh-sequence"),
        pytest.param(["sh", "-c", "false && sleep 5"], [], Lifetime(0.0, 1), id="and-short-circuits"),
        pytest.param(["sh", "-c", "false || exit 0"], [], Lifetime(0.0, 0), id="or-runs-on-failure"),
        pytest.param(["sh", "-c", "echo hello\nsleep 1"], [], Lifetime(1.0, 0), id="lines"),
        pytest.param(["sh", "-c", "exit $(( $RANDOM / 16384 ))"], [], None, id="expansion-is-not-plain"),
        pytest.param(["sh", "-c", "if [[ -r /data/foo ]]; then exit 0; fi"], [], None, id="if-is-not-plain"),
        pytest.param(["sh", "-c", "sleep 1 &"], [], None, id="background-is-not-plain"),
        pytest.param(["sh"], [], None, id="interactive-shell"),
    ],
)
def test_a_plain_command_says_how_its_run_ends(command: list[str], args: list[str], expected: Lifetime | None) -> None:
    assert lifetime({"name": "c", "command": command, "args": args}) == expected


def _ran(name: str, code: int) -> ContainerState:
    return ContainerState(name, terminated={"exitCode": code, "reason": "Completed" if code == 0 else "Error"})


def test_a_pod_whose_init_container_failed_for_good_fails_only_under_never() -> None:
    app = [ContainerState("app", waiting_reason="PodInitializing")]
    failed = [ContainerState("init", waiting_reason="CrashLoopBackOff", last_terminated={"exitCode": 1})]
    assert pod_phase(app, "Never", init=[_ran("init", 1)]) == "Failed"
    assert pod_phase(app, "Always", init=failed) == "Pending"
    assert pod_phase(app, "OnFailure", init=[ContainerState("init", running_since="t")]) == "Pending"


def test_a_running_sidecar_keeps_a_pod_whose_containers_ended_running() -> None:
    sidecar = ContainerState("log", running_since="t")
    assert pod_phase([_ran("app", 0)], "Never", init=[sidecar], sidecars=frozenset({"log"})) == "Running"
    assert pod_phase([_ran("app", 0)], "Never", init=[_ran("log", 0)], sidecars=frozenset({"log"})) == "Succeeded"


def test_a_deleted_pods_stopped_containers_decide_its_phase_whatever_its_policy() -> None:
    assert pod_phase([_ran("app", 0)], "Always", terminal=True) == "Succeeded"
    assert pod_phase([_ran("app", 137)], "Always", terminal=True) == "Failed"


def test_initialized_lists_the_init_containers_not_done() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "a"}, {"name": "b"}]}}
    init = [ContainerState("a", running_since="t"), ContainerState("b", waiting_reason="PodInitializing")]
    state = PodState("10.244.0.2", "172.20.0.2", "t", [ContainerState("app")], "Pending", init_containers=init)
    status = pod_status(pod, state, "T")
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "ContainersNotInitialized")
    assert initialized["message"] == "containers with incomplete status: [a b]"
    assert [s["name"] for s in status["initContainerStatuses"]] == ["a", "b"]
    state.init_containers = [_ran("a", 0), _ran("b", 0)]
    done = next(c for c in pod_status(pod, state, "T")["conditions"] if c["type"] == "Initialized")
    assert done["status"] == "True" and "reason" not in done


# On a cluster


sim = simulated_cluster("simulated")


def container(name: str, *command: str, **fields: Any) -> Object:
    found: Object = {"name": name, "image": "busybox", **fields}
    if command:
        found["command"] = list(command)
    return found


def create(client: httpx.Client, ns: str, name: str, *containers: Object, **spec: Any) -> None:
    annotations = spec.pop("annotations", {})
    body = {"metadata": {"name": name, "annotations": annotations}, "spec": {"containers": list(containers), **spec}}
    response = client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert response.status_code == 201, response.text


def condition(pod: Object, kind: str) -> Object:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def statuses(pod: Object, key: str = "containerStatuses") -> dict[str, Object]:
    return {s["name"]: s for s in (pod.get("status") or {}).get(key) or []}


def test_a_pause_pod_that_may_end_runs_until_deleted(client: httpx.Client, ns: str) -> None:
    create(client, ns, "pause", container("c", image="registry.k8s.io/pause:3.10"), restartPolicy="Never")
    create(client, ns, "ender", container("c", "sleep", "1"), restartPolicy="Never")
    eventually(lambda: phase_is(client, ns, "ender", "Succeeded"), what="the `sleep 1` pod ended")
    running = read(client, ns, "pause")  # made before a pod that ran a second and ended: it runs on
    assert running["status"]["phase"] == "Running"
    assert "running" in statuses(running)["c"]["state"]


def test_a_container_ends_as_its_command_says(client: httpx.Client, ns: str) -> None:
    create(client, ns, "sleeper", container("c", "sleep", "1"), restartPolicy="Never")
    create(client, ns, "quitter", container("c", "sh", "-c", "exit 3"), restartPolicy="Never")
    slept = eventually(lambda: phase_is(client, ns, "sleeper", "Succeeded"), what="sleep 1 ended")
    assert statuses(slept)["c"]["state"]["terminated"]["exitCode"] == 0
    quit_ = eventually(lambda: phase_is(client, ns, "quitter", "Failed"), what="exit 3 ended")
    ended = statuses(quit_)["c"]["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (3, "Error")


def test_an_always_container_whose_command_ends_is_restarted_with_back_off(client: httpx.Client, ns: str) -> None:
    create(client, ns, "crasher", container("c", "false"))

    def backing_off() -> Object | None:
        found = statuses(read(client, ns, "crasher")).get("c") or {}
        return found if (found.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff" else None

    found = eventually(backing_off, what="CrashLoopBackOff")
    assert found["restartCount"] >= 1
    assert found["lastState"]["terminated"]["exitCode"] == 1
    assert read(client, ns, "crasher")["status"]["phase"] == "Running"


def test_annotations_set_how_long_a_pods_containers_run_and_how_they_end(client: httpx.Client, ns: str) -> None:
    annotations = {"tinykube.io/run-seconds": "0", "tinykube.io/exit-code": "2"}
    create(client, ns, "job-like", container("c"), restartPolicy="Never", annotations=annotations)
    ended = eventually(lambda: phase_is(client, ns, "job-like", "Failed"), what="the annotated pod ended")
    assert statuses(ended)["c"]["state"]["terminated"]["exitCode"] == 2


def test_init_containers_run_in_order_before_the_containers(client: httpx.Client, ns: str) -> None:
    """The first init container waits for a ConfigMap (CreateContainerConfigError): meanwhile the pod is Pending and
    not initialized, the second init container and the app container wait; once the ConfigMap exists, they run."""
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "x"}}}]
    init = [container("a", "true", env=env), container("b", "sleep", "0")]
    create(client, ns, "init", container("app"), initContainers=init, restartPolicy="Never")

    def blocked() -> Object | None:
        found = read(client, ns, "init")
        waiting = (statuses(found, "initContainerStatuses").get("a") or {}).get("state", {}).get("waiting", {})
        return found if waiting.get("reason") == "CreateContainerConfigError" else None

    pending = eventually(blocked, what="init container a waiting for its ConfigMap")
    assert pending["status"]["phase"] == "Pending"
    initialized = condition(pending, "Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "ContainersNotInitialized")
    assert initialized["message"] == "containers with incomplete status: [a b]"
    assert statuses(pending, "initContainerStatuses")["b"]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert statuses(pending)["app"]["state"] == {"waiting": {"reason": "PodInitializing"}}
    configmap = {"metadata": {"name": "later"}, "data": {"x": "1"}}
    assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json=configmap).status_code == 201
    running = eventually(lambda: phase_is(client, ns, "init", "Running"), timeout=60, what="the app container runs")
    assert condition(running, "Initialized")["status"] == "True"
    ended = statuses(running, "initContainerStatuses")
    assert [ended[n]["state"]["terminated"]["reason"] for n in ("a", "b")] == ["Completed", "Completed"]
    assert ended["a"]["state"]["terminated"]["finishedAt"] <= ended["b"]["state"]["terminated"]["startedAt"]
    assert "running" in statuses(running)["app"]["state"]


def test_a_failed_init_container_fails_a_never_pod_and_its_containers_never_start(
    client: httpx.Client, ns: str
) -> None:
    create(client, ns, "doomed", container("app"), initContainers=[container("init", "false")], restartPolicy="Never")
    failed = eventually(lambda: phase_is(client, ns, "doomed", "Failed"), what="the pod failed")
    assert statuses(failed, "initContainerStatuses")["init"]["state"]["terminated"]["exitCode"] == 1
    assert statuses(failed)["app"]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert condition(failed, "Initialized")["status"] == "False"


def test_a_failed_init_container_of_an_always_pod_is_restarted_and_its_containers_wait(
    client: httpx.Client, ns: str
) -> None:
    create(client, ns, "retry", container("app"), initContainers=[container("init1", "false"), container("init2")])

    def restarted() -> Object | None:
        found = read(client, ns, "retry")
        return found if (statuses(found, "initContainerStatuses").get("init1") or {}).get("restartCount") else None

    found = eventually(restarted, what="init1 restarted")
    assert found["status"]["phase"] == "Pending"
    assert statuses(found, "initContainerStatuses")["init2"]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert statuses(found)["app"]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_a_sidecar_init_container_keeps_running_beside_the_containers(client: httpx.Client, ns: str) -> None:
    sidecar = container("log", restartPolicy="Always")
    create(client, ns, "sidecar", container("app"), initContainers=[sidecar])
    running = eventually(lambda: phase_is(client, ns, "sidecar", "Running"), what="the pod runs")
    assert "running" in statuses(running, "initContainerStatuses")["log"]["state"]
    assert statuses(running, "initContainerStatuses")["log"]["started"] is True
    assert condition(running, "Initialized")["status"] == "True"


def test_a_deleted_pod_shows_its_containers_terminated_before_it_goes(client: httpx.Client, ns: str) -> None:
    create(client, ns, "goner", container("c"))
    eventually(lambda: condition(read(client, ns, "goner"), "Ready").get("status") == "True", what="goner Ready")
    version = read(client, ns, "goner")["metadata"]["resourceVersion"]
    seen: list[Object] = []

    def watch() -> None:
        path = f"/api/v1/namespaces/{ns}/pods?watch=1&fieldSelector=metadata.name%3Dgoner&resourceVersion={version}"
        with client.stream("GET", path, timeout=60) as events:
            for line in events.iter_lines():
                seen.append(json.loads(line))
                if seen[-1]["type"] == "DELETED":
                    return

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert client.delete(f"/api/v1/namespaces/{ns}/pods/goner").status_code == 200
    watcher.join(60)
    assert seen and seen[-1]["type"] == "DELETED"
    stopped = [e["object"] for e in seen[:-1] if condition(e["object"], "Ready").get("status") == "False"]
    assert stopped, [e["type"] for e in seen]
    last = stopped[-1]
    assert condition(last, "ContainersReady")["status"] == "False"
    terminated = statuses(last)["c"]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert last["metadata"]["deletionTimestamp"]


def _pod_patches(client: httpx.Client) -> float:
    metrics = client.get("/metrics").text
    lines = [line for line in metrics.splitlines() if line.startswith("apiserver_request_total{")]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if 'verb="PATCH"' in line and 'resource="pods"' in line)


def test_a_pod_that_starts_at_once_gets_one_status_write(client: httpx.Client, ns: str) -> None:
    """As the kubelet's status manager: what the agent wrote is remembered, so neither a sync that reads the pod
    before its own write is cached nor the write read back as stored (nulls dropped) sends it again (it did: two
    status patches per pod, the second a no-op)."""
    before = _pod_patches(client)
    names = [f"once-{i}" for i in range(20)]
    for name in names:
        body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    for name in names:
        eventually(lambda name=name: phase_is(client, ns, name, "Running"), what=f"{name} Running")
    assert _pod_patches(client) - before <= len(names) + 5  # slack for what earlier tests' pods still write
