"""Jobs, CronJobs and the TTL-after-finished controller (issue 19) on a cluster with a simulated node, where a pod
ends after `tinykube.io/run-seconds` with `tinykube.io/exit-code`."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.controllers.job import POD_BATCH_PERIOD, format_indexes, parse_indexes

Object = dict[str, Any]
BATCH = "/apis/batch/v1/namespaces"
MERGE = {"Content-Type": "application/merge-patch+json"}


def test_completed_indexes_print_as_intervals() -> None:
    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6,7"  # a run of two is two numbers, as upstream writes it
    assert format_indexes(set()) == ""
    assert parse_indexes("0-2,4,6-7") == {0, 1, 2, 4, 6, 7}


cluster = controllers_cluster("--nodes", "1")


def job(name: str, seconds: float = 0.2, exit_code: int = 0, policy: str = "Never", **spec: Any) -> Object:
    annotations = {"tinykube.io/run-seconds": str(seconds), "tinykube.io/exit-code": str(exit_code)}
    template = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "busybox"}]},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": template} | spec}


def cron_job(name: str, job_spec: Object, **spec: Any) -> Object:
    """A CronJob firing every second (robfig's `@every`; Jobs are named by the minute, so one a minute is made)."""
    body = {"schedule": "@every 1s", "jobTemplate": {"spec": job_spec}} | spec
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": body}


def create(client: httpx.Client, ns: str, body: Object, kind: str = "jobs") -> None:
    response = client.post(f"{BATCH}/{ns}/{kind}", json=body)
    assert response.status_code == 201, response.text


def get(client: httpx.Client, ns: str, name: str, kind: str = "jobs") -> Object:
    return dict(client.get(f"{BATCH}/{ns}/{kind}/{name}").json())


def conditions(obj: Object) -> dict[str, Object]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def ended(client: httpx.Client, ns: str, name: str) -> Object | None:
    found = get(client, ns, name)
    done = conditions(found)
    return found if any(done.get(k, {}).get("status") == "True" for k in ("Complete", "Failed")) else None


def pods(client: httpx.Client, ns: str, job_name: str) -> list[Object]:
    params = {"labelSelector": f"batch.kubernetes.io/job-name={job_name}"}
    return list(client.get(f"/api/v1/namespaces/{ns}/pods", params=params).json()["items"])


def test_kubectl_runs_the_pi_job_to_completion(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    perl = ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]
    made = json.loads(
        cluster.kubectl(
            "-n", ns, "create", "job", "pi", "--image=perl:5.34", "--dry-run=client", "--output=json", "--", *perl
        ).stdout
    )
    # a simulated node cannot tell when perl would be done: the pod's annotation says (README, simulated pods)
    made["spec"]["template"].setdefault("metadata", {})["annotations"] = {"tinykube.io/run-seconds": "0.2"}
    cluster.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(made))
    cluster.kubectl("-n", ns, "wait", "--for=condition=complete", "job/pi", "--timeout=30s")
    done = get(client, ns, "pi")
    assert done["status"]["succeeded"] == 1 and "failed" not in done["status"]
    assert done["status"]["uncountedTerminatedPods"] == {} and done["status"]["completionTime"]
    kinds = conditions(done)
    assert kinds["SuccessCriteriaMet"]["reason"] == kinds["Complete"]["reason"] == "CompletionsReached"
    [pod] = pods(client, ns, "pi")
    assert pod["status"]["phase"] == "Succeeded" and not pod["metadata"].get("finalizers")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    printed = cluster.kubectl("-n", ns, "get", "job", "pi").stdout.split()
    assert printed[:5] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert printed[5:8] == ["pi", "Complete", "1/1"]


def test_completions_run_at_most_parallelism_at_a_time(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("four", seconds=0.5, completions=4, parallelism=2))
    seen_active = []
    while not ended(client, ns, "four"):
        seen_active.append(len([p for p in pods(client, ns, "four") if p["status"].get("phase") != "Succeeded"]))
        time.sleep(0.05)
    assert max(seen_active) <= 2
    assert get(client, ns, "four")["status"]["succeeded"] == 4 and len(pods(client, ns, "four")) == 4


def test_an_indexed_job_gives_each_pod_its_index(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("idx", completions=3, parallelism=3, completionMode="Indexed"))
    done = eventually(lambda: ended(client, ns, "idx"))
    assert done["status"]["completedIndexes"] == "0-2"
    for pod in pods(client, ns, "idx"):
        index = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == index
        assert pod["metadata"]["generateName"] == f"idx-{index}-" and pod["spec"]["hostname"] == f"idx-{index}"
        [env] = pod["spec"]["containers"][0]["env"]
        assert env["name"] == "JOB_COMPLETION_INDEX"
        assert (
            env["valueFrom"]["fieldRef"]["fieldPath"]
            == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        )


def test_failures_past_the_backoff_limit_fail_the_job(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    create(client, ns, job("fails", exit_code=3, backoffLimit=0))
    cluster.kubectl("-n", ns, "wait", "--for=condition=failed", "job/fails", "--timeout=30s")
    done = get(client, ns, "fails")
    assert done["status"]["failed"] == 1
    for kind in ("FailureTarget", "Failed"):
        assert (conditions(done)[kind]["reason"], conditions(done)[kind]["message"]) == (
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )
    [pod] = pods(client, ns, "fails")
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_a_failed_pod_is_replaced_only_after_the_back_off(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("slow", exit_code=1, backoffLimit=3))
    eventually(lambda: get(client, ns, "slow").get("status", {}).get("failed") == 1, what="one failure counted")
    time.sleep(2)  # upstream waits 10 s before the first replacement
    assert len(pods(client, ns, "slow")) == 1


def test_pod_failure_policy_fails_the_job_or_ignores_the_failure(client: httpx.Client, ns: str) -> None:
    fail_job = {
        "rules": [{"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]
    }
    create(client, ns, job("fatal", exit_code=42, podFailurePolicy=fail_job))
    done = eventually(lambda: ended(client, ns, "fatal"))
    [pod] = pods(client, ns, "fatal")
    assert conditions(done)["Failed"]["reason"] == "PodFailurePolicy"
    assert conditions(done)["Failed"]["message"] == (
        f"Container c for pod {ns}/{pod['metadata']['name']} failed with exit code 42 matching FailJob rule at index 0"
    )

    ignore = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}
    create(client, ns, job("ignored", exit_code=7, backoffLimit=0, podFailurePolicy=ignore))
    eventually(lambda: len(pods(client, ns, "ignored")) >= 2, what="the ignored failure replaced at once")
    assert "failed" not in get(client, ns, "ignored")["status"] and not ended(client, ns, "ignored")


def test_a_suspended_job_waits_and_resumes(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("held", suspend=True))
    held = eventually(lambda: conditions(get(client, ns, "held")).get("Suspended"))
    assert (held["status"], held["reason"], held["message"]) == ("True", "JobSuspended", "Job suspended")
    assert pods(client, ns, "held") == []
    client.patch(f"{BATCH}/{ns}/jobs/held", json={"spec": {"suspend": False}}, headers=MERGE)
    done = eventually(lambda: ended(client, ns, "held"))
    assert conditions(done)["Suspended"]["status"] == "False" and "Complete" in conditions(done)


def test_the_active_deadline_fails_the_job_and_deletes_its_pods(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("late", seconds=60, activeDeadlineSeconds=1))
    done = eventually(lambda: ended(client, ns, "late"))
    assert conditions(done)["Failed"]["reason"] == "DeadlineExceeded"
    assert conditions(done)["Failed"]["message"] == "Job was active longer than specified deadline"
    eventually(lambda: not pods(client, ns, "late"), what="the running pod deleted")


def test_a_finished_job_goes_after_its_ttl(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("brief", ttlSecondsAfterFinished=0))
    eventually(lambda: client.get(f"{BATCH}/{ns}/jobs/brief").status_code == 404, what="the job deleted")
    eventually(lambda: not pods(client, ns, "brief"), what="its pods deleted")


def test_on_failure_restarts_the_container_in_its_pod(client: httpx.Client, ns: str) -> None:
    create(client, ns, job("again", exit_code=1, policy="OnFailure", backoffLimit=6))

    def restarted() -> bool:
        found = pods(client, ns, "again")
        statuses = [s for p in found for s in p["status"].get("containerStatuses") or []]
        return len(found) == 1 and any(s["restartCount"] >= 1 for s in statuses)

    eventually(restarted, what="a restart in the same pod")


def test_a_cronjob_makes_jobs_on_schedule_and_keeps_its_history(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    cronjob = cron_job("tick", job("x")["spec"], successfulJobsHistoryLimit=1)
    create(client, ns, cronjob, "cronjobs")
    made = eventually(
        lambda: [
            j for j in client.get(f"{BATCH}/{ns}/jobs").json()["items"] if j["metadata"]["name"].startswith("tick-")
        ]
    )
    scheduled = made[0]
    minutes = int(scheduled["metadata"]["name"].removeprefix("tick-"))
    assert abs(minutes - time.time() // 60) <= 1
    assert scheduled["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert "batch.kubernetes.io/cronjob-scheduled-timestamp" in scheduled["metadata"]["annotations"]
    eventually(lambda: get(client, ns, "tick", "cronjobs").get("status", {}).get("lastSuccessfulTime"))
    assert get(client, ns, "tick", "cronjobs")["status"]["lastScheduleTime"]

    for name in ("m1", "m2"):  # kubectl's own Jobs of the CronJob count towards its history too
        cluster.kubectl("-n", ns, "create", "job", name, "--from=cronjob/tick")

    def complete() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in client.get(f"{BATCH}/{ns}/jobs").json()["items"]
            if "Complete" in conditions(j)
        ]

    eventually(lambda: len(complete()) == 1, what="the history cut to one successful job")


def test_forbid_starts_no_job_while_one_runs(client: httpx.Client, ns: str) -> None:
    cronjob = cron_job("one", job("x", seconds=60)["spec"], concurrencyPolicy="Forbid")
    create(client, ns, cronjob, "cronjobs")
    active = eventually(lambda: get(client, ns, "one", "cronjobs").get("status", {}).get("active"))
    assert len(active) == 1 and active[0]["kind"] == "Job"
    eventually(
        lambda: any(
            e["reason"] == "JobAlreadyActive" for e in client.get(f"/api/v1/namespaces/{ns}/events").json()["items"]
        ),
        what="the skipped start reported",
    )
    assert len(client.get(f"{BATCH}/{ns}/jobs").json()["items"]) == 1


def test_deleting_a_running_job_deletes_its_pods(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    create(client, ns, job("gone", seconds=60, parallelism=2, completions=2))
    eventually(lambda: len(pods(client, ns, "gone")) == 2, what="two pods running")
    cluster.kubectl("-n", ns, "delete", "job", "gone", "--cascade=background")
    eventually(lambda: not pods(client, ns, "gone"), what="the pods gone, finalizers and all")


def test_a_job_readopts_an_orphan_and_releases_a_pod_it_no_longer_selects(client: httpx.Client, ns: str) -> None:
    """Upstream's Job controller claims pods as the ReplicaSet's does: a matching orphan is adopted (the Job syncs
    on its pods' ownership changes, not only on its own), a pod whose labels stop matching is let go."""
    create(client, ns, job("adopt", seconds=300, parallelism=2, completions=4))
    uid = get(client, ns, "adopt")["metadata"]["uid"]
    # the Job's last write for now: its pods are ready (so no pod change of its own is left to sync it)
    eventually(lambda: (get(client, ns, "adopt").get("status") or {}).get("ready") == 2, what="two pods ready")
    time.sleep(POD_BATCH_PERIOD + 0.5)  # past the batched syncs of its pods' start: only the orphaning can sync it
    first = pods(client, ns, "adopt")[0]
    name = first["metadata"]["name"]
    url = f"/api/v1/namespaces/{ns}/pods/{name}"
    orphaned = client.patch(
        url, json={"metadata": {"ownerReferences": None}}, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert orphaned.status_code == 200 and "ownerReferences" not in orphaned.json()["metadata"], orphaned.text

    def owner() -> list[str]:
        refs = client.get(url).json()["metadata"].get("ownerReferences") or []
        return [r["uid"] for r in refs if r.get("controller")]

    assert eventually(lambda: owner() or None, what="the orphan re-adopted") == [uid]
    released = client.patch(
        url, json={"metadata": {"labels": None}}, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert released.status_code == 200, released.text
    eventually(lambda: owner() == [], what="the unlabelled pod released")
