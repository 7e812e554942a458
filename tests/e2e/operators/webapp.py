"""A kopf operator as its users write one: a `WebApp` custom resource becomes a Deployment and a Service it owns,
and its status reports them. Run with `kopf run --standalone webapp.py` against any cluster."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.level = 0  # post every event kopf makes as a Kubernetes Event
    settings.watching.server_timeout = 60


@kopf.on.create("tinykube.example.com", "v1", "webapps")
def create(spec: dict[str, Any], name: str, namespace: str, body: Any, **_: Any) -> dict[str, Any]:
    kubernetes.config.load_kube_config()
    labels = {"app": name}
    port = int(spec.get("port", 8080))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": int(spec.get("replicas", 1)),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": spec["image"], "ports": [{"containerPort": port}]}]},
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": port}]},
    }
    kopf.adopt([deployment, service], owner=body)
    kubernetes.client.AppsV1Api().create_namespaced_deployment(namespace, deployment)
    created = kubernetes.client.CoreV1Api().create_namespaced_service(namespace, service)
    return {"service": name, "clusterIP": created.spec.cluster_ip}


@kopf.on.field("tinykube.example.com", "v1", "webapps", field="spec.replicas")
def scale(new: Any, name: str, namespace: str, **_: Any) -> None:
    kubernetes.config.load_kube_config()
    kubernetes.client.AppsV1Api().patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": int(new)}})
