"""`pods/exec`, `pods/attach` and `pods/portforward` on a cluster with the simulated dataplane: the apiserver's
checks and errors (as upstream words them), discovery, and the simulated runtime's clear refusal."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import RunningCluster, eventually, running_cluster


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("connect") / "connect", "--nodes", "1", "--controllers", "*") as c:
        c.kubectl("run", "sleeper", "--image=busybox", "--", "sleep", "3600")  # restarted always: it runs on
        c.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=30s")
        yield c


@pytest.fixture
def api(sim: RunningCluster) -> Iterator[httpx.Client]:
    with sim.http() as client:
        yield client


def status(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body.get("reason", ""), body["message"]


def test_the_simulated_dataplane_refuses_exec_clearly(sim: RunningCluster) -> None:
    result = sim.kubectl("exec", "sleeper", "--", "true", check=False)
    assert result.returncode != 0
    assert "simulated dataplane runs no processes" in result.stderr
    assert "tinykube up --dataplane netns" in result.stderr
    forwarded = sim.kubectl("attach", "sleeper", check=False)
    assert "simulated dataplane runs no processes" in forwarded.stderr


def test_a_plain_request_is_told_to_upgrade(api: httpx.Client) -> None:
    response = api.post("/api/v1/namespaces/default/pods/sleeper/exec?command=true&stdout=true")
    assert status(response) == (400, "BadRequest", "Upgrade request required")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("stdout=true", "you must specify at least 1 command"),
        ("command=true", "you must specify at least one of stdin, stdout, stderr"),
        ("command=true&stdout=true&container=nope", "container nope is not valid for pod sleeper"),
    ],
)
def test_exec_options_are_checked(api: httpx.Client, query: str, message: str) -> None:
    response = api.post(f"/api/v1/namespaces/default/pods/sleeper/exec?{query}")
    assert status(response) == (400, "BadRequest", message)


def test_missing_unscheduled_and_completed_pods(sim: RunningCluster, api: httpx.Client) -> None:
    missing = api.post("/api/v1/namespaces/default/pods/nobody/exec?command=true&stdout=true")
    assert status(missing) == (404, "NotFound", 'pods "nobody" not found')
    pod = {"metadata": {"name": "nowhere"}, "spec": {"nodeName": "", "containers": [{"name": "c", "image": "x"}],
                                                       "schedulerName": "none"}}  # fmt: skip
    assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
    unscheduled = api.post("/api/v1/namespaces/default/pods/nowhere/attach?stdout=true")
    assert status(unscheduled) == (400, "BadRequest", "pod nowhere does not have a host assigned")
    sim.kubectl("run", "done", "--image=busybox", "--restart=Never", "--", "true")
    eventually(lambda: sim.kubectl_json("get", "pod", "done")["status"].get("phase") == "Succeeded", what="done")
    completed = api.post("/api/v1/namespaces/default/pods/done/exec?command=true&stdout=true")
    assert status(completed) == (
        400,
        "BadRequest",
        "cannot exec into a container in a completed pod; current phase is Succeeded",
    )


def test_discovery_lists_the_connect_subresources(api: httpx.Client) -> None:
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    exec_options = {"singularName": "", "namespaced": True, "kind": "PodExecOptions", "verbs": ["create", "get"]}
    assert resources["pods/exec"] == {"name": "pods/exec", **exec_options}
    assert resources["pods/attach"]["kind"] == "PodAttachOptions"
    assert resources["pods/portforward"]["kind"] == "PodPortForwardOptions"
    assert resources["services/proxy"]["kind"] == "ServiceProxyOptions"
    assert resources["nodes/proxy"]["verbs"] == ["create", "delete", "get", "patch", "update"]


def ephemeral(api: httpx.Client, containers: list[dict[str, object]]) -> httpx.Response:
    return api.patch(
        "/api/v1/namespaces/default/pods/sleeper/ephemeralcontainers",
        json={"spec": {"ephemeralContainers": containers}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )


def test_ephemeral_containers_are_only_added(api: httpx.Client) -> None:
    debugger = {"name": "debugger", "image": "busybox", "stdin": True, "tty": True, "targetContainerName": "sleeper"}
    added = ephemeral(api, [debugger])
    assert added.status_code == 200, added.text
    spec = added.json()["spec"]
    assert spec["ephemeralContainers"][0]["terminationMessagePath"] == "/dev/termination-log"  # defaulted
    assert api.get("/api/v1/namespaces/default/pods/sleeper/ephemeralcontainers").json()["kind"] == "Pod"
    unconditional = {**added.json(), "metadata": {"name": "sleeper"}}  # no resourceVersion: the node writes too
    unconditional["spec"] = {**spec, "ephemeralContainers": [{**spec["ephemeralContainers"][0], "tty": False}]}
    changed = api.put("/api/v1/namespaces/default/pods/sleeper/ephemeralcontainers", json=unconditional)
    assert changed.status_code == 422
    assert 'existing ephemeral containers "debugger" may not be changed' in changed.json()["message"]
    bad = ephemeral(api, [{"name": "probe", "image": "busybox", "ports": [{"containerPort": 80}],
                           "targetContainerName": "nobody"}])  # fmt: skip
    assert bad.status_code == 422
    message = bad.json()["message"]
    assert ".ports: Forbidden: cannot be set for an Ephemeral Container" in message
    assert '.targetContainerName: Not found: "nobody"' in message
    clash = ephemeral(api, [{"name": "sleeper", "image": "busybox"}])
    assert '.name: Duplicate value: "sleeper"' in clash.json()["message"]
    status = eventually(
        lambda: api.get("/api/v1/namespaces/default/pods/sleeper").json()["status"].get("ephemeralContainerStatuses"),
        what="the simulated node's report",
    )
    assert status[0]["name"] == "debugger" and "running" in status[0]["state"]
