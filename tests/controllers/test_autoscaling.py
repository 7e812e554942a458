"""Resource metrics and the HorizontalPodAutoscaler (issue 19) on two simulated nodes: `metrics.k8s.io` served from
the node agents' samples of the documented usage annotations, `kubectl top`, and `kubectl autoscale` scaling a
Deployment up and down with upstream's conditions and events. Metrics are scraped and autoscalers synced every
second here (`--metric-resolution`, `--horizontal-pod-autoscaler-sync-period`), upstream's 15 s by default."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import RunningCluster, eventually
from tests.controllers.conftest import controllers_cluster
from tinykube.api.quantity import parse_quantity

Object = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}
METRICS = "/apis/metrics.k8s.io/v1beta1"

cluster = controllers_cluster(
    "--nodes", "2", "--metric-resolution", "1s", "--horizontal-pod-autoscaler-sync-period", "1s"
)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: NAME}}
  template:
    metadata:
      labels: {app: NAME}
      annotations: {tinykube.io/cpu-usage: "CPU", tinykube.io/memory-usage: "app=64Mi,side=1Mi"}
    spec:
      containers:
      - {name: app, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}
      - {name: side, image: busybox, resources: {requests: {cpu: 100m}}}
"""


def deploy(cluster: RunningCluster, ns: str, name: str, replicas: int, cpu: str) -> None:
    manifest = DEPLOYMENT.replace("NAME", name).replace("REPLICAS", str(replicas)).replace("CPU", cpu)
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=manifest)
    cluster.kubectl("-n", ns, "rollout", "status", f"deployment/{name}", "--timeout=30s")


def pod_metrics(client: httpx.Client, ns: str, selector: str) -> list[Object]:
    response = client.get(f"{METRICS}/namespaces/{ns}/pods", params={"labelSelector": selector})
    assert response.status_code == 200, response.text
    items: list[Object] = response.json()["items"]
    return items


def hpa(client: httpx.Client, ns: str, name: str) -> Object:
    found: Object = client.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{name}").json()
    return found


def condition(obj: Object, kind: str) -> Object:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def replicas(client: httpx.Client, ns: str, name: str) -> int:
    return int(client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}").json()["spec"]["replicas"])


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str]]:
    selector = f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name}"
    items = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": selector}).json()["items"]
    return [(e["reason"], e["message"]) for e in items]


# ---- metrics.k8s.io and kubectl top ------------------------------------------------------------------------------


def test_pod_metrics_report_the_annotated_usage(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    deploy(cluster, ns, "web", 2, "app=250m,side=50m")
    found = eventually(lambda: len(items := pod_metrics(client, ns, "app=web")) == 2 and items, what="pod metrics")
    for item in found:
        assert (item["kind"], item["apiVersion"]) == ("PodMetrics", "metrics.k8s.io/v1beta1")
        assert item["metadata"]["labels"]["app"] == "web" and item["metadata"]["namespace"] == ns
        assert item["window"].endswith("s") and item["timestamp"].endswith("Z")
        usage = {c["name"]: c["usage"] for c in item["containers"]}
        assert usage["app"]["memory"] == "64Mi" and usage["side"]["memory"] == "1Mi"
        assert 0.24 <= parse_quantity(usage["app"]["cpu"]).value <= 0.26  # a rate over a measured window
    top = cluster.kubectl("-n", ns, "top", "pod", "--containers", "-l", "app=web").stdout.splitlines()
    assert top[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = sorted(line.split()[1:] for line in top[1:])
    assert [r[0] for r in rows] == ["app", "app", "side", "side"]
    assert {r[1] for r in rows[:2]} <= {"249m", "250m", "251m"} and {r[2] for r in rows[:2]} == {"64Mi"}
    assert {r[1] for r in rows[2:]} <= {"49m", "50m", "51m"} and {r[2] for r in rows[2:]} == {"1Mi"}


def test_node_metrics_and_kubectl_top_node(cluster: RunningCluster, client: httpx.Client) -> None:
    nodes = eventually(lambda: len(items := client.get(f"{METRICS}/nodes").json()["items"]) == 2 and items)
    assert sorted(n["metadata"]["name"] for n in nodes) == ["node-1", "node-2"]
    assert all(set(n["usage"]) == {"cpu", "memory"} for n in nodes)
    top = cluster.kubectl("top", "node").stdout.splitlines()
    assert top[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert sorted(line.split()[0] for line in top[1:]) == ["node-1", "node-2"]
    one = client.get(f"{METRICS}/nodes/node-1").json()
    assert one["kind"] == "NodeMetrics" and one["metadata"]["name"] == "node-1"


def test_the_metrics_api_answers_as_metrics_server(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    missing = client.get(f"{METRICS}/namespaces/{ns}/pods/nope")
    assert missing.status_code == 404
    assert missing.json()["message"] == f'pods.metrics.k8s.io "{ns}/nope" not found'
    assert client.get(f"{METRICS}/nodes/nope").json()["message"] == 'nodes.metrics.k8s.io "nope" not found'
    assert client.get(f"{METRICS}/nodes", params={"watch": "true"}).status_code == 405
    assert client.delete(f"{METRICS}/nodes/node-1").status_code == 405
    bad = client.get(f"{METRICS}/namespaces/{ns}/pods", params={"labelSelector": "a in (b"})
    assert bad.status_code == 400, bad.text
    assert client.get(f"{METRICS}/namespaces/{ns}/pods", params={"fieldSelector": "spec.nodeName=x"}).status_code == 400
    kinds = {r["name"]: r["kind"] for r in client.get(METRICS).json()["resources"]}
    assert kinds == {"nodes": "NodeMetrics", "pods": "PodMetrics"}
    assert "metrics.k8s.io" in cluster.kubectl("api-versions").stdout
    eventually(lambda: client.get(f"{METRICS}/nodes").json()["items"], what="node metrics")
    printed = cluster.kubectl("get", "nodes.metrics.k8s.io").stdout.splitlines()[0].split()
    assert printed == ["NAME", "CPU", "MEMORY", "WINDOW"]


# ---- the HorizontalPodAutoscaler ---------------------------------------------------------------------------------


def test_kubectl_autoscale_scales_up_then_down(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    deploy(cluster, ns, "busy", 1, "app=300m,side=100m")  # 400m of 200m requested: 200 %
    cluster.kubectl("-n", ns, "autoscale", "deployment", "busy", "--cpu-percent=50", "--min=1", "--max=6")
    eventually(lambda: replicas(client, ns, "busy") == 6, timeout=60, what="a scale-up to the maximum")
    up = eventually(lambda: condition(found := hpa(client, ns, "busy"), "ScalingLimited").get("status") and found)
    assert condition(up, "ScalingActive")["reason"] == "ValidMetricFound"
    assert condition(up, "ScalingActive")["message"] == (
        "the HPA was able to successfully calculate a replica count from cpu resource utilization "
        "(percentage of request)"
    )
    limited = eventually(
        lambda: condition(h := hpa(client, ns, "busy"), "ScalingLimited")["reason"] == "TooManyReplicas" and h
    )
    assert limited["status"]["desiredReplicas"] == 6 and limited["status"]["lastScaleTime"]
    [metric] = limited["status"]["currentMetrics"]
    assert metric["type"] == "Resource" and metric["resource"]["name"] == "cpu"
    assert metric["resource"]["current"]["averageUtilization"] >= 190
    rescales = [m for r, m in events(client, ns, "busy") if r == "SuccessfulRescale"]
    assert "New size: 4; reason: cpu resource utilization (percentage of request) above target" in rescales
    table = cluster.kubectl("-n", ns, "get", "hpa", "busy").stdout
    assert "Deployment/busy" in table and "/50%" in table

    # idle now, and no downscale stabilization: down to the minimum
    patch = {"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}
    client.patch(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/busy", json=patch, headers=MERGE)
    cluster.kubectl("-n", ns, "annotate", "pods", "-l", "app=busy", "--overwrite", "tinykube.io/cpu-usage=1m")
    eventually(lambda: replicas(client, ns, "busy") == 1, timeout=60, what="a scale-down to the minimum")
    assert "All metrics below target" in " ".join(m for _, m in events(client, ns, "busy"))


def test_a_scale_down_waits_out_the_stabilization_window(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    deploy(cluster, ns, "calm", 3, "app=1m,side=1m")
    cluster.kubectl("-n", ns, "autoscale", "deployment", "calm", "--cpu-percent=50", "--min=1", "--max=5")
    held = eventually(
        lambda: condition(h := hpa(client, ns, "calm"), "AbleToScale").get("reason") == "ScaleDownStabilized" and h,
        what="the default 5-minute window to hold the scale-down",
    )
    assert condition(held, "AbleToScale")["message"] == (
        "recent recommendations were higher than current one, applying the highest recent recommendation"
    )
    assert replicas(client, ns, "calm") == 3


def test_a_target_scaled_to_zero_disables_autoscaling(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    deploy(cluster, ns, "idle", 1, "app=1m,side=1m")
    cluster.kubectl("-n", ns, "autoscale", "deployment", "idle", "--cpu-percent=50", "--min=1", "--max=3")
    cluster.kubectl("-n", ns, "scale", "deployment", "idle", "--replicas=0")
    found = eventually(
        lambda: condition(h := hpa(client, ns, "idle"), "ScalingActive").get("reason") == "ScalingDisabled" and h
    )
    assert condition(found, "ScalingActive") | {"lastTransitionTime": ""} == {
        "type": "ScalingActive",
        "status": "False",
        "reason": "ScalingDisabled",
        "message": "scaling is disabled since the replica count of the target is zero",
        "lastTransitionTime": "",
    }
    assert replicas(client, ns, "idle") == 0


def test_failures_show_upstreams_conditions(cluster: RunningCluster, client: httpx.Client, ns: str) -> None:
    ghost_hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "ghost"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ghost"}, "maxReplicas": 3},
    }
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(ghost_hpa))
    ghost = eventually(lambda: condition(h := hpa(client, ns, "ghost"), "AbleToScale") and h)
    assert condition(ghost, "AbleToScale") | {"lastTransitionTime": ""} == {
        "type": "AbleToScale",
        "status": "False",
        "reason": "FailedGetScale",
        "message": "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "ghost" not found',
        "lastTransitionTime": "",
    }

    cluster.kubectl("-n", ns, "create", "deployment", "bare", "--image=nginx")  # no CPU request
    cluster.kubectl("-n", ns, "autoscale", "deployment", "bare", "--cpu-percent=50", "--max=3")
    bare = eventually(
        lambda: "missing request" in condition(h := hpa(client, ns, "bare"), "ScalingActive").get("message", "") and h,
        timeout=30,
    )
    active = condition(bare, "ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "FailedGetResourceMetric")
    assert active["message"].startswith(
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
    )
    assert "missing request for cpu in container nginx of Pod bare-" in active["message"]
    failed = eventually(lambda: [m for r, m in events(client, ns, "bare") if r == "FailedComputeMetricsReplicas"])
    assert failed[0].startswith("invalid metrics (1 invalid out of 1), first error is: failed to get cpu utilization: ")


def test_a_pods_metric_fails_without_a_custom_metrics_api(
    cluster: RunningCluster, client: httpx.Client, ns: str
) -> None:
    deploy(cluster, ns, "qps", 1, "app=1m,side=1m")
    manifest = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "qps"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qps"},
            "maxReplicas": 3,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": "requests"},
                                                  "target": {"type": "AverageValue", "averageValue": "10"}}}],
        },
    }  # fmt: skip
    created = client.post(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers", json=manifest)
    assert created.status_code == 201, created.text
    found = eventually(lambda: condition(h := hpa(client, ns, "qps"), "ScalingActive") and h)
    active = condition(found, "ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "FailedGetPodsMetric")
    assert active["message"] == (
        "the HPA was unable to compute the replica count: unable to get metric requests: unable to fetch metrics "
        "from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
    )
