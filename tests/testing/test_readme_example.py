"""The README's example, verbatim: keep the two in step."""

from __future__ import annotations

import pytest

from tinykube.testing import ClusterError

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


CRONTAB_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
"""


def test_a_custom_resource(tinykube_cluster, namespace):
    cluster = tinykube_cluster
    cluster.apply(CRONTAB_CRD)  # cluster-wide: it stays for the session's other tests
    cluster.wait_for("customresourcedefinition", "crontabs.stable.example.com", "Established")

    nightly = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "nightly"}}
    cluster.apply({**nightly, "spec": {"cronSpec": "0 3 * * *"}}, namespace=namespace)
    assert cluster.get("crontab", "nightly", namespace=namespace)["spec"]["replicas"] == 1  # the schema's default

    with pytest.raises(ClusterError, match=r"spec\.replicas in body should be greater than or equal to 1"):
        cluster.apply({**nightly, "spec": {"cronSpec": "0 3 * * *", "replicas": 0}}, namespace=namespace)
