"""Deployments, ReplicaSets and the garbage collector: pure parts, then a cluster with a simulated node and the
scheduler (so pods become Running and Ready by themselves) observed through the API and kubectl."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests.conftest import RunningCluster, eventually, fresh_namespace, running_cluster
from tinykube.controllers.deployment import HASH_LABEL, REVISION, same_template, surge_and_unavailable, template_hash
from tinykube.controllers.deploymentscale import DESIRED_REPLICAS, MAX_REPLICAS, is_scaling_event, scale_plan
from tinykube.controllers.replicaset import Expectations, deletion_order

Object = dict[str, Any]
APPS = "/apis/apps/v1/namespaces"
MERGE = {"Content-Type": "application/merge-patch+json"}


# ---- pure parts ------------------------------------------------------------------------------------------------


def template(image: str = "nginx", **labels: str) -> Object:
    return {"metadata": {"labels": labels or {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}


def test_the_template_hash_follows_the_template_and_the_collision_count() -> None:
    first = template_hash(template())
    assert first == template_hash(template()) and set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert template_hash(template("nginx:1.25")) != first
    assert template_hash(template(), collision_count=1) != first


def test_templates_compare_without_the_hash_label() -> None:
    hashed = template()
    hashed["metadata"]["labels"][HASH_LABEL] = "abc"
    assert same_template(hashed, template())
    assert not same_template(hashed, template("other"))


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        pytest.param(4, "25%", "25%", (1, 1), id="defaults-of-4"),
        pytest.param(10, "25%", "25%", (3, 2), id="surge-rounds-up-unavailable-down"),
        pytest.param(3, 0, 0, (0, 1), id="both-zero-means-one-unavailable"),
        pytest.param(5, 2, "100%", (2, 5), id="integers-and-a-whole"),
    ],
)
def test_surge_and_unavailable_as_upstream(
    replicas: int, surge: Any, unavailable: Any, expected: tuple[int, int]
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    assert surge_and_unavailable({"spec": {"replicas": replicas, "strategy": strategy}}) == expected


def rs(name: str, replicas: int, created: str, max_replicas: int | None = None, desired: int = 10) -> Object:
    annotations = {DESIRED_REPLICAS: str(desired)}
    if max_replicas is not None:
        annotations[MAX_REPLICAS] = str(max_replicas)
    meta = {"name": name, "creationTimestamp": created, "annotations": annotations}
    return {"metadata": meta, "spec": {"replicas": replicas}}


def sizes(plan: list[tuple[Object, int]]) -> list[tuple[str, int]]:
    return [(r["metadata"]["name"], size) for r, size in plan]


def test_a_scaling_mid_rollout_is_proportional() -> None:
    """Upstream's conformance numbers: 10 replicas (surge 3) at 8 old and 5 new, scaled to 30, become 20 and 13;
    and back down to 10, 8 and 5 again."""
    old, new = rs("old", 8, "2026-01-01T00:00:00Z", 13), rs("new", 5, "2026-01-02T00:00:00Z", 13)
    up = {"spec": {"replicas": 30}, "status": {"replicas": 13}}
    assert sizes(scale_plan(up, new, [old], surge=3, rolling=True)) == [("old", 20), ("new", 13)]
    old, new = rs("old", 20, "2026-01-01T00:00:00Z", 33), rs("new", 13, "2026-01-02T00:00:00Z", 33)
    down = {"spec": {"replicas": 10}, "status": {"replicas": 33}}
    assert sizes(scale_plan(down, new, [old], surge=3, rolling=True)) == [("old", 8), ("new", 5)]


def test_a_single_active_replicaset_takes_the_whole_count() -> None:
    old, new = rs("old", 0, "2026-01-01T00:00:00Z"), rs("new", 4, "2026-01-02T00:00:00Z")
    assert sizes(scale_plan({"spec": {"replicas": 7}}, new, [old], surge=2, rolling=True)) == [("new", 7)]
    idle = [rs("a", 0, "2026-01-01T00:00:00Z"), rs("b", 0, "2026-01-03T00:00:00Z")]
    assert sizes(scale_plan({"spec": {"replicas": 2}}, None, idle, surge=1, rolling=True)) == [("b", 2)]  # newest


def test_a_saturated_new_replicaset_leaves_the_old_ones_at_zero() -> None:
    new = {**rs("new", 4, "2026-01-02T00:00:00Z", desired=4), "status": {"availableReplicas": 4}}
    old = rs("old", 1, "2026-01-01T00:00:00Z", desired=4)
    assert sizes(scale_plan({"spec": {"replicas": 4}}, new, [old], surge=1, rolling=True)) == [("old", 0)]
    assert scale_plan({"spec": {"replicas": 4}}, rs("n", 2, "b"), [old], surge=0, rolling=False) == []  # Recreate


def test_a_scaling_event_is_a_replicaset_sized_for_another_count() -> None:
    assert is_scaling_event(30, [rs("old", 8, "t"), rs("idle", 0, "t", desired=5)])
    assert not is_scaling_event(10, [rs("old", 8, "t"), rs("idle", 0, "t", desired=5)])


def test_pods_to_delete_first_are_unscheduled_then_pending_then_not_ready_then_newest() -> None:
    def pod(name: str, node: str = "n", phase: str = "Running", ready: bool = True, created: str = "2026") -> Object:
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        return {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": conditions},
        }

    pods = [
        pod("old-ready", created="2026-01"),
        pod("new-ready", created="2026-02"),
        pod("not-ready", ready=False),
        pod("pending", phase="Pending", ready=False),
        pod("unscheduled", node="", phase="Pending", ready=False),
    ]
    assert [p["metadata"]["name"] for p in sorted(pods, key=deletion_order)] == [
        "unscheduled",
        "pending",
        "not-ready",
        "new-ready",
        "old-ready",
    ]


def test_expectations_wait_for_every_create_and_delete_to_be_seen() -> None:
    seen = Expectations()
    seen.expect("ns/rs", creates=2, deleted=["p1"])
    seen.observed_add("ns/rs")
    seen.observed_delete("ns/rs", "p1")
    assert not seen.satisfied("ns/rs")
    seen.observed_add("ns/rs")
    assert seen.satisfied("ns/rs")
    seen.observed_add("ns/rs")  # a pod adopted later: never below zero
    assert seen.adds["ns/rs"] == 0


# ---- against a cluster -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workloads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    with running_cluster(tmp_path_factory.mktemp("workloads") / "c", "--nodes", "1", "--controllers", "*") as running:
        yield running


@pytest.fixture
def client(workloads: RunningCluster) -> Iterator[httpx.Client]:
    with workloads.http() as http:
        yield http


@pytest.fixture
def ns(client: httpx.Client, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(client, request) as name:
        yield name


def deployment(name: str, replicas: int, image: str = "nginx", strategy: Object | None = None) -> Object:
    spec: Object = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": template(image, app=name),
    }
    if strategy:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def items(client: httpx.Client, path: str, **params: str) -> list[Object]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def pods(client: httpx.Client, ns: str, selector: str) -> list[Object]:
    return items(client, f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)


def rolled_out(client: httpx.Client, ns: str, name: str, replicas: int) -> Object | None:
    d = client.get(f"{APPS}/{ns}/deployments/{name}").json()
    status = d.get("status") or {}
    done = status.get("observedGeneration") == d["metadata"]["generation"]
    counts = [status.get(f) for f in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")]
    return d if done and counts == [replicas] * 4 else None


def test_a_deployment_runs_its_pods_through_a_hashed_replicaset(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    assert client.post(f"{APPS}/{ns}/deployments", json=deployment("web", 3)).status_code == 201
    d = eventually(lambda: rolled_out(client, ns, "web", 3), what="3 available replicas")
    [rs] = items(client, f"{APPS}/{ns}/replicasets")
    hashed = rs["metadata"]["labels"][HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{hashed}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: hashed}
    assert rs["metadata"]["annotations"][REVISION] == "1" == d["metadata"]["annotations"][REVISION]
    [owner] = rs["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Deployment",
        "web",
        d["metadata"]["uid"],
        True,
    )
    running = pods(client, ns, "app=web")
    assert len(running) == 3
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in running)
    assert all(p["metadata"]["name"].startswith(f"web-{hashed}-") for p in running)
    conditions = {c["type"]: c for c in d["status"]["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conditions["Progressing"]["message"] == f'ReplicaSet "web-{hashed}" has successfully progressed.'
    out = workloads.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=30s").stdout
    assert 'deployment "web" successfully rolled out' in out


class PodWatch:
    """Pods of one selector as a watch reports them, from a resourceVersion on: the most live (not terminating) at
    once, the fewest ready at once, and whether pods of two images were ever live together."""

    def __init__(self, cluster: RunningCluster, ns: str, selector: str, version: str, live: list[Object]) -> None:
        self.live = {p["metadata"]["name"]: (_image(p), _ready(p)) for p in live}
        self.most = len(self.live)
        self.fewest_ready = sum(ready for _, ready in self.live.values())
        self.images_together = False
        self.params = {"watch": "true", "resourceVersion": version, "labelSelector": selector, "timeoutSeconds": "60"}
        self.path = f"/api/v1/namespaces/{ns}/pods"
        self.http = cluster.http()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(httpx.HTTPError), self.http.stream("GET", self.path, params=self.params) as stream:
            for line in stream.iter_lines():
                event = orjson.loads(line)
                pod = event["object"]
                # A terminating pod no longer counts: upstream's ReplicaSet counts active pods only, so a rollout
                # may surge past a pod that is still shutting down.
                if event["type"] == "DELETED" or pod["metadata"].get("deletionTimestamp"):
                    self.live.pop(pod["metadata"]["name"], None)
                else:
                    self.live[pod["metadata"]["name"]] = (_image(pod), _ready(pod))
                self.most = max(self.most, len(self.live))
                self.fewest_ready = min(self.fewest_ready, sum(ready for _, ready in self.live.values()))
                self.images_together |= len({image for image, _ in self.live.values()}) > 1

    def close(self) -> None:
        self.http.close()  # ends the stream


def _image(pod: Object) -> str:
    return str(pod["spec"]["containers"][0]["image"])


def _ready(pod: Object) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def watch_pods(cluster: RunningCluster, client: httpx.Client, ns: str, selector: str) -> PodWatch:
    listed = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": selector}).json()
    return PodWatch(cluster, ns, selector, listed["metadata"]["resourceVersion"], listed["items"])


def new_image(client: httpx.Client, ns: str, name: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    assert client.patch(f"{APPS}/{ns}/deployments/{name}", json=patch, headers=MERGE).status_code == 200


def test_a_rolling_update_stays_within_surge_and_unavailability(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    """4 replicas, maxSurge 1 and maxUnavailable 1: never more than 5 pods, never fewer than 3 ready ones."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
    client.post(f"{APPS}/{ns}/deployments", json=deployment("roll", 4, strategy=strategy))
    eventually(lambda: rolled_out(client, ns, "roll", 4), what="first rollout")
    watch = watch_pods(workloads, client, ns, "app=roll")
    new_image(client, ns, "roll")
    d = eventually(lambda: rolled_out(client, ns, "roll", 4), what="second rollout")
    watch.close()
    assert watch.most <= 5 and watch.fewest_ready >= 3, (watch.most, watch.fewest_ready)
    assert watch.images_together  # a rolling update overlaps old and new pods
    by_image = {
        _image({"spec": rs["spec"]["template"]["spec"]}): rs for rs in items(client, f"{APPS}/{ns}/replicasets")
    }
    assert by_image["nginx"]["spec"]["replicas"] == 0 and by_image["nginx:1.25"]["spec"]["replicas"] == 4
    assert by_image["nginx:1.25"]["metadata"]["annotations"][REVISION] == "2" == d["metadata"]["annotations"][REVISION]
    assert {_image(p) for p in pods(client, ns, "app=roll")} == {"nginx:1.25"}


def test_recreate_stops_every_old_pod_before_a_new_one_starts(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("re", 2, strategy={"type": "Recreate"}))
    eventually(lambda: rolled_out(client, ns, "re", 2), what="first rollout")
    watch = watch_pods(workloads, client, ns, "app=re")
    new_image(client, ns, "re")
    eventually(lambda: rolled_out(client, ns, "re", 2), what="second rollout")
    watch.close()
    assert not watch.images_together and watch.most == 2
    assert {_image(p) for p in pods(client, ns, "app=re")} == {"nginx:1.25"}


def test_scaling_up_and_down(workloads: RunningCluster, client: httpx.Client, ns: str) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("sc", 1))
    eventually(lambda: rolled_out(client, ns, "sc", 1), what="one replica")
    workloads.kubectl("-n", ns, "scale", "deployment/sc", "--replicas=4")
    eventually(lambda: rolled_out(client, ns, "sc", 4), what="four replicas")
    client.patch(f"{APPS}/{ns}/deployments/sc", json={"spec": {"replicas": 2}}, headers=MERGE)
    eventually(lambda: rolled_out(client, ns, "sc", 2), what="two replicas")
    eventually(lambda: len(pods(client, ns, "app=sc")) == 2, what="two pods left")


def replicaset(name: str, replicas: int) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"rs": name}}, "template": template(rs=name)},
    }


def orphan_pod(name: str, **labels: str) -> Object:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def test_a_replicaset_adopts_releases_and_replaces_pods(client: httpx.Client, ns: str) -> None:
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=orphan_pod("stray", rs="keep")).status_code == 201
    client.post(f"{APPS}/{ns}/replicasets", json=replicaset("keep", 2))
    rs = eventually(lambda: _ready_rs(client, ns, "keep", 2), what="2 ready replicas")
    stray = client.get(f"/api/v1/namespaces/{ns}/pods/stray").json()
    assert stray["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]  # adopted: one created, not two
    assert len(pods(client, ns, "rs=keep")) == 2

    client.patch(f"/api/v1/namespaces/{ns}/pods/stray", json={"metadata": {"labels": {"rs": "gone"}}}, headers=MERGE)
    eventually(
        lambda: not client.get(f"/api/v1/namespaces/{ns}/pods/stray").json()["metadata"].get("ownerReferences"),
        what="released",
    )
    eventually(lambda: len(pods(client, ns, "rs=keep")) == 2, what="a replacement for the released pod")

    victim = pods(client, ns, "rs=keep")[0]["metadata"]["name"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    eventually(
        lambda: (
            victim not in {p["metadata"]["name"] for p in pods(client, ns, "rs=keep")}
            and len(pods(client, ns, "rs=keep")) == 2
        ),
        what="a replacement for the deleted pod",
    )


def _ready_rs(client: httpx.Client, ns: str, name: str, replicas: int) -> Object | None:
    rs = client.get(f"{APPS}/{ns}/replicasets/{name}").json()
    return rs if (rs.get("status") or {}).get("readyReplicas") == replicas else None


def test_deleting_a_deployment_collects_its_replicasets_and_pods(client: httpx.Client, ns: str) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("gc", 2))
    eventually(lambda: rolled_out(client, ns, "gc", 2), what="rollout")
    assert client.delete(f"{APPS}/{ns}/deployments/gc").status_code == 200
    eventually(lambda: not items(client, f"{APPS}/{ns}/replicasets"), what="replicasets collected")
    eventually(lambda: not pods(client, ns, "app=gc"), what="pods collected")


def test_orphan_propagation_keeps_the_dependents(client: httpx.Client, ns: str) -> None:
    client.post(f"{APPS}/{ns}/replicasets", json=replicaset("orph", 2))
    eventually(lambda: _ready_rs(client, ns, "orph", 2), what="2 ready replicas")
    response = client.request("DELETE", f"{APPS}/{ns}/replicasets/orph", json={"propagationPolicy": "Orphan"})
    assert response.status_code == 200 and "orphan" in response.json()["metadata"]["finalizers"]
    eventually(lambda: client.get(f"{APPS}/{ns}/replicasets/orph").status_code == 404, what="the owner gone")
    left = pods(client, ns, "rs=orph")
    assert len(left) == 2 and not any(p["metadata"].get("ownerReferences") for p in left)


def test_foreground_propagation_deletes_dependents_first(client: httpx.Client, ns: str) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("fg", 2))
    eventually(lambda: rolled_out(client, ns, "fg", 2), what="rollout")
    response = client.request("DELETE", f"{APPS}/{ns}/deployments/fg", json={"propagationPolicy": "Foreground"})
    assert response.status_code == 200 and "foregroundDeletion" in response.json()["metadata"]["finalizers"]
    eventually(lambda: client.get(f"{APPS}/{ns}/deployments/fg").status_code == 404, what="the owner gone")
    assert not items(client, f"{APPS}/{ns}/replicasets") and not pods(client, ns, "app=fg")


def test_a_paused_deployment_rolls_out_only_when_resumed(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("pz", 2))
    eventually(lambda: rolled_out(client, ns, "pz", 2), what="first rollout")
    workloads.kubectl("-n", ns, "rollout", "pause", "deployment/pz")
    new_image(client, ns, "pz")

    def paused() -> Object | None:
        d = client.get(f"{APPS}/{ns}/deployments/pz").json()
        conditions = {c["type"]: c for c in d["status"].get("conditions") or []}
        seen = d["status"].get("observedGeneration") == d["metadata"]["generation"]
        return d if seen and conditions["Progressing"]["reason"] == "DeploymentPaused" else None

    eventually(paused, what="the pause observed")
    assert len(items(client, f"{APPS}/{ns}/replicasets")) == 1  # the new template waits
    workloads.kubectl("-n", ns, "rollout", "resume", "deployment/pz")
    eventually(lambda: rolled_out(client, ns, "pz", 2), what="the rollout after resuming")
    assert {_image(p) for p in pods(client, ns, "app=pz")} == {"nginx:1.25"}


def test_scaling_a_stalled_rollout_scales_both_replicasets_in_proportion(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    """The conformance spec's scenario, with pods that never get ready standing in for its unpullable image."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    client.post(f"{APPS}/{ns}/deployments", json=deployment("prop", 10, strategy=strategy))
    eventually(lambda: rolled_out(client, ns, "prop", 10), what="first rollout")
    stall = {"spec": {"template": {"metadata": {"annotations": {"tinykube.io/ready": "false"}}}}}
    assert client.patch(f"{APPS}/{ns}/deployments/prop", json=stall, headers=MERGE).status_code == 200

    def replicas() -> list[int] | None:
        found = items(client, f"{APPS}/{ns}/replicasets", labelSelector="app=prop")
        found.sort(key=lambda r: int(r["metadata"]["annotations"][REVISION]))
        counts = [r["spec"]["replicas"] for r in found]
        return counts if len(counts) == 2 else None

    assert eventually(lambda: (got := replicas()) == [8, 5] and got, what="the rollout stalled at 8 + 5")
    scale = {"spec": {"replicas": 30}}
    assert client.patch(f"{APPS}/{ns}/deployments/prop", json=scale, headers=MERGE).status_code == 200
    assert eventually(lambda: (got := replicas()) == [20, 13] and got, what="20 old + 13 new")


def test_the_controllers_writes_do_not_make_new_generations(client: httpx.Client, ns: str) -> None:
    """The revision annotation goes with the status: a fresh Deployment stays at generation 1, as upstream."""
    client.post(f"{APPS}/{ns}/deployments", json=deployment("gen", 1))
    d = eventually(lambda: rolled_out(client, ns, "gen", 1), what="rollout")
    assert d["metadata"]["generation"] == 1 and d["metadata"]["annotations"][REVISION] == "1"


def test_a_stalled_rollout_exceeds_its_progress_deadline(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    """Pods that never get ready (the simulated node's `tinykube.io/ready: "false"`): after progressDeadlineSeconds
    the Progressing condition turns False with upstream's reason, which `kubectl rollout status` reports."""
    stuck = deployment("stuck", 1)
    stuck["spec"]["progressDeadlineSeconds"] = 1
    stuck["spec"]["template"]["metadata"]["annotations"] = {"tinykube.io/ready": "false"}
    client.post(f"{APPS}/{ns}/deployments", json=stuck)

    def exceeded() -> Object | None:
        status = client.get(f"{APPS}/{ns}/deployments/stuck").json().get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        progressing = conditions.get("Progressing") or {}
        return progressing if progressing.get("reason") == "ProgressDeadlineExceeded" else None

    progressing = eventually(exceeded, what="the deadline exceeded")
    assert progressing["status"] == "False" and progressing["message"].endswith("has timed out progressing.")
    rollout = workloads.kubectl("-n", ns, "rollout", "status", "deployment/stuck", "--timeout=10s", check=False)
    assert rollout.returncode != 0 and 'deployment "stuck" exceeded its progress deadline' in rollout.stderr


def test_the_controllers_report_what_they_did_as_events(
    workloads: RunningCluster, client: httpx.Client, ns: str
) -> None:
    client.post(f"{APPS}/{ns}/deployments", json=deployment("ev", 2))
    eventually(lambda: rolled_out(client, ns, "ev", 2), what="rollout")
    [rs] = items(client, f"{APPS}/{ns}/replicasets")
    name = rs["metadata"]["name"]

    def reported() -> list[tuple[str, str, str]] | None:
        events = items(client, f"/api/v1/namespaces/{ns}/events")
        found = [(e["involvedObject"]["kind"], e["reason"], e["message"]) for e in events]
        return found if sum(reason == "SuccessfulCreate" for _, reason, _ in found) == 2 else None

    found = eventually(reported, what="the events")
    assert ("Deployment", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to 2") in found
    names = {p["metadata"]["name"] for p in pods(client, ns, "app=ev")}
    assert {m for _, reason, m in found if reason == "SuccessfulCreate"} == {f"Created pod: {n}" for n in names}
    described = workloads.kubectl("-n", ns, "describe", "deployment", "ev").stdout
    assert f"Scaled up replica set {name} from 0 to 2" in described
