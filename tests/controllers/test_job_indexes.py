"""Indexed Jobs' failures counted per index (`backoffLimitPerIndex`, `maxFailedIndexes`, the `FailIndex` action),
their `successPolicy`, and `managedBy`, as upstream's Job controller acts on them.

Most Jobs here bind their pods to a node no agent runs (`nodeName: elsewhere`) and the test ends each pod itself,
writing its status as a kubelet would: which index fails and which succeeds is then the test's choice. The others
run on the simulated nodes, whose pods end after `tinykube.io/run-seconds` with `tinykube.io/exit-code`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.conftest import eventually
from tests.controllers.conftest import controllers_cluster
from tests.controllers.test_batch import BATCH, MERGE, conditions, create, ended, get, pods
from tinykube.controllers.job import (
    FAILURE_COUNT,
    IGNORED_COUNT,
    TRACKING_FINALIZER,
    index_failed,
    replacement_counts,
    success_rule,
)

Object = dict[str, Any]
ELSEWHERE = "elsewhere"  # a node no agent runs: its pods end when a test writes their status

cluster = controllers_cluster("--nodes", "2")


def indexed(name: str, completions: int, *, held: bool = True, exit_code: int = 0, **spec: Any) -> Object:
    """An Indexed Job of `completions` run at once; `held` binds its pods to a node no agent runs."""
    annotations = {"tinykube.io/run-seconds": "0.2", "tinykube.io/exit-code": str(exit_code)}
    pod_spec: Object = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    if held:
        pod_spec["nodeName"] = ELSEWHERE
    body = {"completions": completions, "parallelism": completions, "completionMode": "Indexed"} | spec
    body["template"] = {"metadata": {"annotations": annotations}, "spec": pod_spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def by_index(client: httpx.Client, ns: str, name: str) -> dict[int, list[Object]]:
    """The Job's pods per index, each index's in the order they were made (their failure counts rise)."""
    found: dict[int, list[Object]] = {}
    for pod in pods(client, ns, name):
        index = int(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"])
        found.setdefault(index, []).append(pod)
    for runs in found.values():
        runs.sort(key=lambda p: (_count(p, FAILURE_COUNT) + _count(p, IGNORED_COUNT), p["metadata"]["name"]))
    return found


def started(client: httpx.Client, ns: str, name: str, count: int) -> dict[int, Object] | None:
    """The first pod of each index, once there are `count` indexes."""
    found = by_index(client, ns, name)
    return {i: runs[0] for i, runs in found.items()} if len(found) == count else None


def runs_of(client: httpx.Client, ns: str, name: str, index: int, count: int) -> list[Object] | None:
    """The pods of one index, once it has had `count`."""
    runs = by_index(client, ns, name).get(index, [])
    return runs if len(runs) >= count else None


def end(client: httpx.Client, ns: str, pod: Object, exit_code: int) -> None:
    """What a kubelet writes when the pod's only container exits with `exit_code`."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": stamp,
        "finishedAt": stamp,
    }
    container = {"name": "c", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0}
    status = {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "containerStatuses": [container | {"started": False, "state": {"terminated": terminated}}],
    }
    path = f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/status"
    response = client.patch(path, json={"status": status}, headers=MERGE)
    assert response.status_code == 200, response.text


def verdict(job: Object, kind: str) -> tuple[str, str]:
    condition = conditions(job)[kind]
    assert condition["status"] == "True"
    return condition["reason"], condition["message"]


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str, str]]:
    items = client.get(f"/api/v1/namespaces/{ns}/events").json()["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == name]


def fail_index_on(code: int) -> Object:
    return {
        "rules": [{"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [code]}}]
    }


def _count(pod: Object, key: str) -> int:
    return int((pod["metadata"].get("annotations") or {}).get(key, "0"))


# ---- the decisions, on objects -----------------------------------------------------------------------------------


def a_job(completions: int = 5, **spec: Any) -> Object:
    return {"spec": {"completions": completions, "completionMode": "Indexed"} | spec, "status": {}}


def a_failed_pod(exit_code: int = 1, **annotations: str) -> Object:
    terminated = {"exitCode": exit_code, "finishedAt": "2024-01-01T00:00:00Z"}
    return {
        "metadata": {"name": "p", "namespace": "n", "uid": "u", "annotations": annotations},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "c", "state": {"terminated": terminated}}]},
    }


@pytest.mark.parametrize(
    ("rules", "completed", "matched"),
    [
        pytest.param([{"succeededCount": 2}], "0,3", 0, id="count-of-any-indexes"),
        pytest.param([{"succeededCount": 3}], "0,3", None, id="count-not-reached"),
        pytest.param([{"succeededIndexes": "0-2"}], "0-2", 0, id="all-of-the-indexes"),
        pytest.param([{"succeededIndexes": "0-2"}], "0,2", None, id="one-index-missing"),
        pytest.param([{"succeededIndexes": "0-3", "succeededCount": 2}], "1,3", 0, id="count-of-the-indexes"),
        pytest.param([{"succeededIndexes": "0-3", "succeededCount": 2}], "1,4", None, id="count-of-others"),
        pytest.param([{"succeededIndexes": "4"}, {"succeededCount": 1}], "0", 1, id="the-first-rule-met"),
        pytest.param([{"succeededIndexes": "7-9"}], "0-4", None, id="indexes-past-completions-name-none"),
        pytest.param([{"succeededCount": 1}], "", None, id="nothing-succeeded"),
    ],
)
def test_success_policy_rules_match_as_upstreams(rules: list[Object], completed: str, matched: int | None) -> None:
    job = a_job(successPolicy={"rules": rules}) | {"status": {"completedIndexes": completed}}
    assert success_rule(job) == matched


@pytest.mark.parametrize(
    ("spec", "pod", "fails_index", "next_counts"),
    [
        pytest.param({}, a_failed_pod(**{FAILURE_COUNT: "0"}), False, (1, 0), id="a-retry-left"),
        pytest.param({}, a_failed_pod(**{FAILURE_COUNT: "1"}), True, (2, 0), id="the-last-retry"),
        pytest.param({}, a_failed_pod(), False, (1, 0), id="no-annotation-counts-0"),
        pytest.param({}, a_failed_pod(**{FAILURE_COUNT: "x"}), False, (1, 0), id="garbage-counts-0"),
        pytest.param({}, a_failed_pod(**{FAILURE_COUNT: "-3"}), False, (1, 0), id="negative-counts-0"),
        pytest.param(
            {"podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}},
            a_failed_pod(7, **{FAILURE_COUNT: "1", IGNORED_COUNT: "2"}),
            False,
            (1, 3),
            id="ignored-counts-apart",
        ),
        pytest.param({"podFailurePolicy": fail_index_on(42)}, a_failed_pod(42), True, (1, 0), id="fail-index"),
        pytest.param({"podFailurePolicy": fail_index_on(42)}, a_failed_pod(1), False, (1, 0), id="other-exit-code"),
    ],
)
def test_a_failed_pod_counts_towards_its_index(
    spec: Object, pod: Object, fails_index: bool, next_counts: tuple[int, int]
) -> None:
    job = a_job(backoffLimitPerIndex=1, **spec)
    assert index_failed(job, pod) is fails_index
    assert replacement_counts(job, pod) == next_counts
    assert replacement_counts(job, None) == (0, 0)


# ---- on a cluster ------------------------------------------------------------------------------------------------


def test_an_index_past_its_limit_is_not_retried_and_fails_the_job(client: httpx.Client, ns: str) -> None:
    create(client, ns, indexed("idx", 3, backoffLimitPerIndex=0))
    first = eventually(lambda: started(client, ns, "idx", 3), what="a pod per index")
    for pod in first.values():
        assert pod["metadata"]["annotations"][FAILURE_COUNT] == "0"
        assert IGNORED_COUNT not in pod["metadata"]["annotations"]
    end(client, ns, first[1], 1)
    end(client, ns, first[0], 0)
    end(client, ns, first[2], 0)
    done = eventually(lambda: ended(client, ns, "idx"))
    status = done["status"]
    assert (status["failedIndexes"], status["completedIndexes"]) == ("1", "0,2")
    assert (status["failed"], status["succeeded"]) == (1, 2)
    for kind in ("FailureTarget", "Failed"):
        assert verdict(done, kind) == ("FailedIndexes", "Job has failed indexes")
    assert "Complete" not in conditions(done)
    assert len(pods(client, ns, "idx")) == 3  # index 1 had no second pod
    assert ("Warning", "FailedIndexes", "Job has failed indexes") in events(client, ns, "idx")


def test_a_failed_index_is_retried_after_its_own_back_off(client: httpx.Client, ns: str) -> None:
    create(client, ns, indexed("retry", 3, parallelism=2, backoffLimitPerIndex=1))
    first = eventually(lambda: started(client, ns, "retry", 2), what="indexes 0 and 1 started")
    end(client, ns, first[1], 1)
    end(client, ns, first[0], 0)

    # index 2 starts at once: only index 1 waits out its back-off (10 s), with its failed pod uncounted meanwhile
    [third] = eventually(lambda: runs_of(client, ns, "retry", 2, 1), what="index 2 started")
    [failed] = by_index(client, ns, "retry")[1]
    assert TRACKING_FINALIZER in failed["metadata"]["finalizers"]
    assert "failed" not in get(client, ns, "retry")["status"]

    runs = eventually(lambda: runs_of(client, ns, "retry", 1, 2), what="a retry of index 1")
    assert runs[1]["metadata"]["annotations"][FAILURE_COUNT] == "1"
    eventually(lambda: get(client, ns, "retry")["status"].get("failed") == 1, what="the first failure counted")
    end(client, ns, runs[1], 1)
    end(client, ns, third, 0)
    done = eventually(lambda: ended(client, ns, "retry"))
    status = done["status"]
    assert (status["failedIndexes"], status["completedIndexes"], status["failed"]) == ("1", "0,2", 2)
    assert verdict(done, "Failed") == ("FailedIndexes", "Job has failed indexes")
    assert len(pods(client, ns, "retry")) == 4


def test_a_fail_index_rule_and_max_failed_indexes_end_the_job_at_once(client: httpx.Client, ns: str) -> None:
    spec = {"backoffLimitPerIndex": 1, "maxFailedIndexes": 1, "podFailurePolicy": fail_index_on(42)}
    create(client, ns, indexed("most", 4, **spec))
    first = eventually(lambda: started(client, ns, "most", 4), what="a pod per index")
    end(client, ns, first[0], 42)  # one failed index is allowed: the Job runs on
    eventually(lambda: get(client, ns, "most")["status"].get("failedIndexes") == "0", what="index 0 failed")
    assert not ended(client, ns, "most")
    end(client, ns, first[2], 42)
    done = eventually(lambda: ended(client, ns, "most"))
    message = "Job has exceeded the specified maximal number of failed indexes"
    for kind in ("FailureTarget", "Failed"):
        assert verdict(done, kind) == ("MaxFailedIndexesExceeded", message)
    assert done["status"]["failedIndexes"] == "0,2"  # the deleted pods had retries left
    assert done["status"]["failed"] == 4
    survivors = by_index(client, ns, "most")
    assert all(survivors[i][0]["metadata"].get("deletionTimestamp") for i in (1, 3))
    assert len(pods(client, ns, "most")) == 4


def test_exit_codes_of_simulated_pods_fail_their_indexes(client: httpx.Client, ns: str) -> None:
    spec = {"backoffLimitPerIndex": 3, "podFailurePolicy": fail_index_on(42)}
    create(client, ns, indexed("fatal", 3, held=False, exit_code=42, **spec))
    done = eventually(lambda: ended(client, ns, "fatal"))
    assert (done["status"]["failedIndexes"], done["status"]["failed"]) == ("0-2", 3)
    assert verdict(done, "Failed") == ("FailedIndexes", "Job has failed indexes")
    assert len(pods(client, ns, "fatal")) == 3  # no retries, three left


def test_ignored_failures_are_counted_apart_and_do_not_use_up_the_index(client: httpx.Client, ns: str) -> None:
    ignore = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}
    create(client, ns, indexed("ignored", 1, held=False, exit_code=7, backoffLimitPerIndex=0, podFailurePolicy=ignore))
    runs = eventually(lambda: runs_of(client, ns, "ignored", 0, 2), what="a retry of index 0")
    annotations = runs[1]["metadata"]["annotations"]
    assert (annotations[FAILURE_COUNT], annotations[IGNORED_COUNT]) == ("0", "1")
    status = get(client, ns, "ignored")["status"]
    assert status["failedIndexes"] == "" and "failed" not in status
    assert not ended(client, ns, "ignored")


def test_a_success_policy_completes_the_job_and_deletes_its_other_pods(client: httpx.Client, ns: str) -> None:
    policy = {"rules": [{"succeededCount": 3}, {"succeededIndexes": "1,3", "succeededCount": 1}]}
    create(client, ns, indexed("enough", 4, successPolicy=policy))
    first = eventually(lambda: started(client, ns, "enough", 4), what="a pod per index")
    end(client, ns, first[3], 0)
    done = eventually(lambda: ended(client, ns, "enough"))
    for kind in ("SuccessCriteriaMet", "Complete"):
        assert verdict(done, kind) == ("SuccessPolicy", "Matched rules at index 1")
    assert (done["status"]["completedIndexes"], done["status"]["succeeded"]) == ("3", 1)
    assert done["status"]["completionTime"] and "Failed" not in conditions(done)
    others = by_index(client, ns, "enough")
    assert all(others[i][0]["metadata"].get("deletionTimestamp") for i in (0, 1, 2))
    assert ("Normal", "Completed", "Job completed") in events(client, ns, "enough")


def test_a_job_managed_by_another_controller_is_left_alone(client: httpx.Client, ns: str) -> None:
    create(client, ns, indexed("theirs", 2, held=False, managedBy="example.com/queue"))
    create(client, ns, indexed("ours", 2, held=False, managedBy="kubernetes.io/job-controller"))
    eventually(lambda: ended(client, ns, "ours"), what="the job-controller's Job done")
    assert pods(client, ns, "theirs") == []
    assert get(client, ns, "theirs")["status"] == {}


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        pytest.param(
            {"maxFailedIndexes": 1},
            "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            id="max-failed-indexes-alone",
        ),
        pytest.param(
            {"backoffLimitPerIndex": 1, "maxFailedIndexes": 3},
            "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions",
            id="max-failed-indexes-past-completions",
        ),
        pytest.param(
            {"podFailurePolicy": fail_index_on(42)},
            'spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to '
            "be set",
            id="fail-index-alone",
        ),
        pytest.param(
            {"completionMode": "NonIndexed", "successPolicy": {"rules": [{"succeededCount": 1}]}},
            "requires indexed completion mode",
            id="success-policy-of-a-non-indexed-job",
        ),
        pytest.param(
            {"successPolicy": {"rules": [{"succeededIndexes": "0-2"}]}},
            'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-2": error parsing succeededIndexes: too '
            'large index: "2"',
            id="succeeded-indexes-past-completions",
        ),
        pytest.param(
            {"successPolicy": {"rules": [{"succeededCount": 3}]}},
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the "
            "number of specified completions)",
            id="succeeded-count-past-completions",
        ),
        pytest.param(
            {"managedBy": "queue"},
            'spec.managedBy: Invalid value: "queue": must be a domain-prefixed path (such as "acme.io/foo")',
            id="managed-by-no-domain",
        ),
    ],
)
def test_the_apiserver_refuses_what_upstreams_refuses(client: httpx.Client, ns: str, spec: Object, error: str) -> None:
    response = client.post(f"{BATCH}/{ns}/jobs", json=indexed("bad", 2, **spec))
    assert response.status_code == 422, response.text
    assert error in response.json()["message"]


def test_a_success_policy_cannot_change(client: httpx.Client, ns: str) -> None:
    create(client, ns, indexed("fixed", 2, suspend=True, successPolicy={"rules": [{"succeededCount": 1}]}))
    patch = {"spec": {"successPolicy": {"rules": [{"succeededCount": 2}]}}}
    response = client.patch(f"{BATCH}/{ns}/jobs/fixed", json=patch, headers=MERGE)
    assert response.status_code == 422 and "spec.successPolicy: Invalid value" in response.json()["message"]
