"""The README's example, verbatim: keep the two in step."""

from __future__ import annotations

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx, ports: [{containerPort: 8080}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
"""


def test_a_deployment_behind_a_service(tinykube_cluster, namespace):
    cluster = tinykube_cluster
    cluster.apply(WEB, namespace=namespace)
    cluster.wait_for("deployment", "web", "Available", namespace=namespace)

    slices = cluster.wait_for(
        "EndpointSlice",
        None,
        lambda found: sum(e["conditions"]["ready"] for s in found for e in s.get("endpoints") or []) == 2,
        namespace=namespace,
        selector="kubernetes.io/service-name=web",
    )
    pod_ips = {p["status"]["podIP"] for p in cluster.list("pods", namespace=namespace, selector="app=web")}
    assert {e["addresses"][0] for s in slices for e in s["endpoints"]} == pod_ips

    cluster_ip = cluster.get("service", "web", namespace=namespace)["spec"]["clusterIP"]
    answer = cluster.dns_query(f"web.{namespace}.svc.cluster.local", "A")
    assert (answer.rcode, answer.records) == ("NOERROR", [cluster_ip])
