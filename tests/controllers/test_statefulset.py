"""StatefulSets (issue 19): the public `web` example on a cluster with a simulated node, through the API, kubectl
and the cluster DNS; ordered and parallel pod management, claims, rolling updates with a partition, OnDelete,
history and undo. Pods are made not ready with the simulated runtime's `tinykube.io/ready: "false"`."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import httpx
import orjson
from dnslib import QTYPE, DNSRecord

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.controllers.revisions import revision_data, template_of
from tinykube.controllers.statefulset import ordinal_of

Object = dict[str, Any]
APPS = "/apis/apps/v1/namespaces"
MERGE = {"Content-Type": "application/merge-patch+json"}
NOT_READY = {"tinykube.io/ready": "false"}


# ---- pure parts ------------------------------------------------------------------------------------------------


def test_ordinals_are_read_from_names_of_the_set_only() -> None:
    def pod(name: str) -> Object:
        return {"metadata": {"name": name}}

    assert [ordinal_of("web", pod(n)) for n in ("web-0", "web-12", "web-01", "web-x", "webby-1", "web-1-2")] == [
        0,
        12,
        None,
        None,
        None,
        None,
    ]


def test_a_revision_holds_the_template_as_a_replacing_patch() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    data = revision_data({"spec": {"replicas": 3, "template": template}})
    assert data == {"spec": {"template": {**template, "$patch": "replace"}}}
    assert template_of(data) == template


def test_a_revision_holds_what_go_marshals_with_sorted_keys_at_every_level() -> None:
    """Upstream's getPatch: the template after a typed round trip, marshalled as a Go map (keys sorted), which
    clients compare byte for byte with `data`."""
    template = {"spec": {"hostNetwork": False, "containers": [{"name": "c", "image": "nginx"}]},
                "metadata": {"labels": {"b": "1", "a": "2"}}}  # fmt: skip
    data = revision_data({"spec": {"template": template}})
    assert json.dumps(data, separators=(",", ":")) == (
        '{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"2","b":"1"}},'
        '"spec":{"containers":[{"image":"nginx","name":"c"}]}}}}'
    )


# ---- against a cluster -----------------------------------------------------------------------------------------


cluster = controllers_cluster("--nodes", "1")


WEB = """\
apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels: {app: nginx}
spec:
  ports: [{port: 80, name: web}]
  clusterIP: None
  selector: {app: nginx}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: nginx}
  serviceName: "nginx"
  replicas: 3
  template:
    metadata:
      labels: {app: nginx}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.24
        ports: [{containerPort: 80, name: web}]
        volumeMounts: [{name: www, mountPath: /usr/share/nginx/html}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: ["ReadWriteOnce"]
      resources: {requests: {storage: 1Gi}}
"""


def stateful_set(name: str, replicas: int, **spec: Any) -> Object:
    annotations = spec.pop("annotations", {})
    template = {
        "metadata": {"labels": {"app": name}, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": spec.pop("image", "nginx:1.27")}]},
    }
    body = {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": body | spec}


def pods(client: httpx.Client, ns: str, app: str) -> dict[str, Object]:
    found = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return {p["metadata"]["name"]: p for p in found}


def status(client: httpx.Client, ns: str, name: str) -> Object:
    return dict(client.get(f"{APPS}/{ns}/statefulsets/{name}").json().get("status") or {})


def settled(client: httpx.Client, ns: str, name: str, replicas: int) -> Object | None:
    """The set's status once all its replicas are ready at one revision."""
    sts = client.get(f"{APPS}/{ns}/statefulsets/{name}").json()
    s = sts.get("status") or {}
    done = s.get("observedGeneration") == sts["metadata"]["generation"] and s.get("replicas") == replicas
    if done and s.get("readyReplicas", 0) == replicas and s.get("currentRevision") == s.get("updateRevision"):
        return s
    return None


def images(client: httpx.Client, ns: str, app: str) -> dict[str, str]:
    return {n: p["spec"]["containers"][0]["image"] for n, p in pods(client, ns, app).items()}


def ask(cluster: RunningCluster, name: str, qtype: str) -> list[str]:
    host, port = json.loads((cluster.data_dir / "cluster.json").read_text())["dns"].rsplit(":", 1)
    reply = DNSRecord.parse(DNSRecord.question(name, qtype).send(host, int(port), timeout=5))
    return sorted(str(r.rdata) for r in reply.rr if r.rtype == getattr(QTYPE, qtype))


def test_the_web_example_gives_each_pod_its_name_claim_and_dns_records(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=WEB)
    out = cluster.kubectl("-n", ns, "rollout", "status", "statefulset/web", "--timeout=30s").stdout
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    running = pods(client, ns, "nginx")
    assert sorted(running) == ["web-0", "web-1", "web-2"]
    s = status(client, ns, "web")
    for name, pod in running.items():
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "nginx")
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == name
        assert labels["apps.kubernetes.io/pod-index"] == name[-1]
        assert labels["controller-revision-hash"] == s["updateRevision"]
        claims = [v for v in pod["spec"]["volumes"] if not v["name"].startswith("kube-api-access-")]
        assert claims == [{"name": "www", "persistentVolumeClaim": {"claimName": f"www-{name}"}}]
    assert (s["replicas"], s["readyReplicas"], s["currentReplicas"], s["updatedReplicas"]) == (3, 3, 3, 3)
    assert s["availableReplicas"] == 3 and s["currentRevision"] == s["updateRevision"]
    claims = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims").json()["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["www-web-0", "www-web-1", "www-web-2"]
    assert all(c["metadata"]["labels"] == {"app": "nginx"} for c in claims)

    domain = f"nginx.{ns}.svc.cluster.local"
    answers = eventually(lambda: len(ask(cluster, domain, "SRV")) == 3 and ask(cluster, domain, "SRV"))
    assert answers == [f"0 33 80 web-{i}.{domain}." for i in range(3)]
    for name, pod in running.items():
        assert ask(cluster, f"{name}.{domain}", "A") == [pod["status"]["podIP"]]

    printed = cluster.kubectl("-n", ns, "get", "statefulset", "web").stdout.split()
    assert printed[:3] == ["NAME", "READY", "AGE"] and printed[3:5] == ["web", "3/3"]


def test_ordered_ready_creates_one_pod_at_a_time_and_removes_from_the_highest(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    body = stateful_set("ordered", 3, annotations=NOT_READY)
    assert client.post(f"{APPS}/{ns}/statefulsets", json=body).status_code == 201
    eventually(lambda: "ordered-0" in pods(client, ns, "ordered"))
    for ordinal in range(3):  # each waits for the one before to be Running and Ready
        assert sorted(pods(client, ns, "ordered")) == [f"ordered-{i}" for i in range(ordinal + 1)]
        patch = {"metadata": {"annotations": {"tinykube.io/ready": "true"}}}
        client.patch(f"/api/v1/namespaces/{ns}/pods/ordered-{ordinal}", json=patch, headers=MERGE)
        if ordinal < 2:
            eventually(lambda o=ordinal: f"ordered-{o + 1}" in pods(client, ns, "ordered"))
    eventually(lambda: settled(client, ns, "ordered", 3))

    watch = PodNames(cluster, ns, "ordered")
    cluster.kubectl("-n", ns, "scale", "statefulset/ordered", "--replicas=0")
    eventually(lambda: not pods(client, ns, "ordered"))
    assert watch.deleted() == ["ordered-2", "ordered-1", "ordered-0"]


def test_parallel_creates_every_pod_at_once(client: httpx.Client, ns: str) -> None:
    body = stateful_set("par", 3, podManagementPolicy="Parallel", annotations=NOT_READY)
    assert client.post(f"{APPS}/{ns}/statefulsets", json=body).status_code == 201
    eventually(lambda: sorted(pods(client, ns, "par")) == ["par-0", "par-1", "par-2"], what="3 pods, none ready")
    assert status(client, ns, "par").get("readyReplicas") is None


def test_a_rolling_update_stops_at_the_partition_then_finishes(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    assert client.post(f"{APPS}/{ns}/statefulsets", json=stateful_set("part", 3, updateStrategy=strategy))
    first = eventually(lambda: settled(client, ns, "part", 3))
    cluster.kubectl("-n", ns, "set", "image", "statefulset/part", "c=nginx:1.28")
    eventually(lambda: images(client, ns, "part").get("part-2") == "nginx:1.28")
    eventually(lambda: status(client, ns, "part").get("updatedReplicas") == 1)
    assert images(client, ns, "part") == {"part-0": "nginx:1.27", "part-1": "nginx:1.27", "part-2": "nginx:1.28"}
    s = status(client, ns, "part")
    assert s["currentRevision"] == first["currentRevision"] != s["updateRevision"]
    assert s["currentReplicas"] == 2

    patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
    client.patch(f"{APPS}/{ns}/statefulsets/part", json=patch, headers=MERGE)
    done = eventually(
        lambda: settled(client, ns, "part", 3) if len(set(images(client, ns, "part").values())) == 1 else None
    )
    assert set(images(client, ns, "part").values()) == {"nginx:1.28"}
    assert done["currentRevision"] == s["updateRevision"]

    history = cluster.kubectl("-n", ns, "rollout", "history", "statefulset/part").stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    cluster.kubectl("-n", ns, "rollout", "undo", "statefulset/part")
    eventually(lambda: set(images(client, ns, "part").values()) == {"nginx:1.27"}, what="undone")
    revisions = client.get(f"{APPS}/{ns}/controllerrevisions").json()["items"]
    numbers = {r["metadata"]["name"]: r["revision"] for r in revisions}
    assert numbers[first["currentRevision"]] == 3  # the older template is the newest revision again


def test_on_delete_replaces_a_pod_only_when_it_is_deleted(client: httpx.Client, ns: str) -> None:
    body = stateful_set("od", 2, updateStrategy={"type": "OnDelete"})
    assert client.post(f"{APPS}/{ns}/statefulsets", json=body).status_code == 201
    eventually(lambda: settled(client, ns, "od", 2))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}}}
    client.patch(f"{APPS}/{ns}/statefulsets/od", json=patch, headers=MERGE)
    eventually(lambda: status(client, ns, "od").get("observedGeneration") == 2)
    assert images(client, ns, "od") == {"od-0": "nginx:1.27", "od-1": "nginx:1.27"}
    uid = pods(client, ns, "od")["od-1"]["metadata"]["uid"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/od-1")
    eventually(lambda: pods(client, ns, "od").get("od-1", {}).get("metadata", {}).get("uid") not in (None, uid))
    assert images(client, ns, "od") == {"od-0": "nginx:1.27", "od-1": "nginx:1.28"}


def test_claims_outlive_pods_unless_the_retention_policy_deletes_them(client: httpx.Client, ns: str) -> None:
    storage = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    claim = {"metadata": {"name": "data"}, "spec": storage}
    policy = {"whenScaled": "Delete", "whenDeleted": "Delete"}
    kept = stateful_set("kept", 2, volumeClaimTemplates=[claim])
    dropped = stateful_set("dropped", 2, volumeClaimTemplates=[claim], persistentVolumeClaimRetentionPolicy=policy)
    for body in (kept, dropped):
        assert client.post(f"{APPS}/{ns}/statefulsets", json=body).status_code == 201
        eventually(lambda b=body: settled(client, ns, b["metadata"]["name"], 2))

    def claims() -> set[str]:
        return {
            c["metadata"]["name"] for c in client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims").json()["items"]
        }

    assert claims() == {"data-kept-0", "data-kept-1", "data-dropped-0", "data-dropped-1"}
    uid = pods(client, ns, "kept")["kept-0"]["metadata"]["uid"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/kept-0")  # comes back with the same name and claim
    eventually(lambda: pods(client, ns, "kept").get("kept-0", {}).get("metadata", {}).get("uid") not in (None, uid))
    for name in ("kept", "dropped"):
        client.patch(f"{APPS}/{ns}/statefulsets/{name}", json={"spec": {"replicas": 1}}, headers=MERGE)
    eventually(lambda: claims() == {"data-kept-0", "data-kept-1", "data-dropped-0"}, what="the scaled claim gone")
    client.delete(f"{APPS}/{ns}/statefulsets/dropped")
    eventually(lambda: claims() == {"data-kept-0", "data-kept-1"}, what="the deleted set's claims gone")


class PodNames:
    """The names of a set's pods in the order a watch reports their deletion."""

    def __init__(self, cluster: RunningCluster, ns: str, app: str) -> None:
        self.gone: list[str] = []
        self.http = cluster.http()
        listed = self.http.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()
        self.params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"],
                       "labelSelector": f"app={app}", "timeoutSeconds": "30"}  # fmt: skip
        self.path = f"/api/v1/namespaces/{ns}/pods"
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(httpx.HTTPError), self.http.stream("GET", self.path, params=self.params) as stream:
            for line in stream.iter_lines():
                event = orjson.loads(line)
                if event["type"] == "DELETED":
                    self.gone.append(event["object"]["metadata"]["name"])

    def deleted(self) -> list[str]:
        eventually(lambda: len(self.gone) == 3, what="three deletions watched")
        self.http.close()
        return self.gone
