"""What the official `kubernetes` Python client's own e2e suite (kubernetes/e2e_test in kubernetes-client/python)
checks through the API, reimplemented against a real `tinykube up`: typed CRUD of pods, services, replication
controllers, config maps, nodes, deployments, daemon sets and jobs; a watch resumed from a list's resourceVersion;
the client's SharedInformer; `utils.create_from_yaml` / `create_from_dict` / `create_from_directory`, with
server-side apply (`apply=True`) too; and the metrics utilities (`utils.get_nodes_metrics`, `get_pods_metrics`,
`get_pods_metrics_in_all_namespaces`) over metrics.k8s.io.

As upstream's suite expects, the cluster has a node and the scheduler (pods leave Pending); each test works in a
namespace of its own instead of `default`. What needs real processes in a pod — exec (upstream's `test_pod_apis`
after the pod runs, `test_exit_code`, `test_pod_exec_close_channel`) and port-forward (`test_portforward_raw`,
`test_portforward_http`) — is in test_python_client_suite_streams.py, against the netns dataplane.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import utils, watch
from kubernetes.client.rest import ApiException
from kubernetes.informer import ADDED, DELETED, MODIFIED, SharedInformer

from tests.conftest import RunningCluster, eventually, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    """A cluster of the module's own with a node and every controller, as upstream's suite runs against (metrics
    scraped every second rather than metrics-server's 15, so the metrics test need not wait)."""
    with running_cluster(
        tmp_path_factory.mktemp("pyclient") / "c", "--nodes", "1", "--controllers", "*", "--metric-resolution", "1s"
    ) as running:
        yield running


@pytest.fixture
def apps_v1(k8s_client: k8s.ApiClient) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(k8s_client)


@pytest.fixture
def batch_v1(k8s_client: k8s.ApiClient) -> k8s.BatchV1Api:
    return k8s.BatchV1Api(k8s_client)


def _container(name: str, image: str = "busybox", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def _template(labels: dict[str, str], *containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"containers": list(containers)}}


def _deployment(name: str, replicas: int = 3, app: str = "nginx") -> dict[str, Any]:
    ports = [{"containerPort": 80}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": _template({"app": app}, _container("nginx", "nginx:1.15.4", ports=ports)),
        },
    }


def _gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ApiException as err:
        assert err.status == 404, err
        return True
    return False


# ---- core/v1 -----------------------------------------------------------------------------------------------


def test_pod_runs_under_the_default_service_account(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_pod_apis` up to its exec calls: the namespace's `default` ServiceAccount appears, a pod made
    from a plain dict leaves Pending, and it is listed across namespaces."""
    eventually(
        lambda: not _gone(lambda: core_v1.read_namespaced_service_account("default", namespace)),
        what="the default service account",
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "busybox-test"},
        "spec": {"containers": [_container("sleep", args=["/bin/sh", "-c", "while true; do date; sleep 5; done"])]},
    }
    created = core_v1.create_namespaced_pod(namespace, pod)
    assert created.metadata.name == "busybox-test" and created.status.phase == "Pending"
    assert created.spec.service_account_name == "default"

    def phase() -> str | None:
        current = core_v1.read_namespaced_pod("busybox-test", namespace).status.phase
        return None if current == "Pending" else current

    assert eventually(phase, what="the pod to leave Pending") == "Running"
    everywhere = core_v1.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={namespace}")
    assert [p.metadata.name for p in everywhere.items] == ["busybox-test"]

    deleted = core_v1.delete_namespaced_pod("busybox-test", namespace, body={})
    assert isinstance(deleted, k8s.V1Pod) and deleted.metadata.name == "busybox-test"
    eventually(lambda: _gone(lambda: core_v1.read_namespaced_pod("busybox-test", namespace)), what="the pod gone")


def test_service_patch_with_the_whole_manifest_merges_ports(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_service_apis`: patching with the full manifest (a strategic merge for a dict) keeps the old
    port, since ports merge by their key, and adds the new one."""
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "frontend", "labels": {"name": "frontend"}},
        "spec": {
            "ports": [{"name": "port", "port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"name": "frontend"},
        },
    }
    created = core_v1.create_namespaced_service(namespace, manifest)
    assert created.metadata.name == "frontend" and created.status.load_balancer == k8s.V1LoadBalancerStatus()
    assert core_v1.read_namespaced_service("frontend", namespace).status

    manifest["spec"]["ports"] = [{"name": "new", "port": 8080, "protocol": "TCP", "targetPort": 8080}]
    patched = core_v1.patch_namespaced_service("frontend", namespace, manifest)
    assert sorted((p.name, p.port) for p in patched.spec.ports) == [("new", 8080), ("port", 80)]
    assert patched.status

    deleted = core_v1.delete_namespaced_service("frontend", namespace, body={})
    assert deleted.metadata.name == "frontend"


def test_replication_controller_apis(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_replication_controller_apis`, which deletes with propagationPolicy=Background: core/v1
    replication controllers orphan their pods by default (then the DELETE answers the object, being finalized)."""
    ports = [{"containerPort": 80, "protocol": "TCP"}]

    def rc(name: str) -> dict[str, Any]:
        template = _template({"name": name}, _container("nginx", "nginx", ports=ports))
        spec = {"replicas": 2, "selector": {"name": name}, "template": template}
        return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name}, "spec": spec}

    created = core_v1.create_namespaced_replication_controller(namespace, rc("frontend"))
    assert created.metadata.name == "frontend" and created.spec.replicas == 2
    read = core_v1.read_namespaced_replication_controller("frontend", namespace)
    assert read.spec.replicas == 2 and read.spec.template.spec.containers[0].ports[0].container_port == 80

    deleted = core_v1.delete_namespaced_replication_controller("frontend", namespace, propagation_policy="Background")
    assert (deleted["kind"], deleted["status"], deleted["details"]["name"]) == ("Status", "Success", "frontend")

    core_v1.create_namespaced_replication_controller(namespace, rc("orphaning"))
    by_default = core_v1.delete_namespaced_replication_controller("orphaning", namespace)
    assert by_default["kind"] == "ReplicationController"
    assert by_default["metadata"]["finalizers"] == ["orphan"] and by_default["metadata"]["deletionTimestamp"]
    eventually(
        lambda: _gone(lambda: core_v1.read_namespaced_replication_controller("orphaning", namespace)),
        what="the garbage collector to finish the orphaning delete",
    )


def test_configmap_json_patch_then_merge_patch(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_configmap_apis`: a JSON patch (a list) replaces `data` whole, a dict patch merges into it,
    and a label-selected list is empty after the delete."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"e2e-tests": "true"}},
        "data": {"config.json": '{"command":"/usr/bin/mysqld_safe"}', "frontend.cnf": "[mysqld]\nport = 3306\n"},
    }
    assert core_v1.create_namespaced_config_map(namespace, body).metadata.name == "settings"
    assert core_v1.read_namespaced_config_map("settings", namespace).data == body["data"]

    replaced = core_v1.patch_namespaced_config_map(
        "settings", namespace, [{"op": "replace", "path": "/data", "value": {"new_value": "json"}}]
    )
    assert replaced.data == {"new_value": "json"}
    merged = core_v1.patch_namespaced_config_map("settings", namespace, {"data": {"new_value": "merge"}})
    assert merged.data == {"new_value": "merge"}

    core_v1.delete_namespaced_config_map("settings", namespace, body={})
    assert core_v1.list_namespaced_config_map(namespace, label_selector="e2e-tests=true").items == []


def test_nodes_are_labelled(core_v1: k8s.CoreV1Api) -> None:
    """Upstream's `test_node_apis`: every listed node reads back with a label dict."""
    nodes = core_v1.list_node().items
    assert nodes
    for item in nodes:
        node = core_v1.read_node(item.metadata.name)
        assert isinstance(node.metadata.labels, dict)
        assert node.metadata.labels["kubernetes.io/hostname"] == item.metadata.name


# ---- apps/v1 and batch/v1 ----------------------------------------------------------------------------------


def test_deployment_reads_back(apps_v1: k8s.AppsV1Api, namespace: str) -> None:
    """Upstream's `test_create_deployment`: a Deployment made from YAML reads back field for field."""
    apps_v1.create_namespaced_deployment(namespace, yaml.safe_load(yaml.safe_dump(_deployment("nginx-deployment"))))
    read = apps_v1.read_namespaced_deployment("nginx-deployment", namespace)
    container = read.spec.template.spec.containers[0]
    assert (read.spec.replicas, read.spec.selector.match_labels, read.spec.template.metadata.labels) == (
        3,
        {"app": "nginx"},
        {"app": "nginx"},
    )
    assert (container.name, container.image, container.ports[0].container_port) == ("nginx", "nginx:1.15.4", 80)
    deleted = apps_v1.delete_namespaced_deployment("nginx-deployment", namespace, body=k8s.V1DeleteOptions())
    assert deleted["kind"] == "Status"  # apps/v1 deletes in the background: gone at once


def test_daemon_set_reads_back_with_its_defaults(apps_v1: k8s.AppsV1Api, namespace: str) -> None:
    """Upstream's `test_create_daemonset`, and the RollingUpdate defaults apps/v1 fills in."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nginx-app", "labels": {"app": "nginx"}},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": _template({"app": "nginx"}, _container("nginx-app", "nginx:1.15.4")),
            "updateStrategy": {"type": "RollingUpdate"},
        },
    }
    apps_v1.create_namespaced_daemon_set(namespace, body)
    read = apps_v1.read_namespaced_daemon_set("nginx-app", namespace)
    assert read.spec.selector.match_labels == {"app": "nginx"}
    assert [(c.name, c.image) for c in read.spec.template.spec.containers] == [("nginx-app", "nginx:1.15.4")]
    assert read.spec.update_strategy.rolling_update.to_dict() == {"max_surge": 0, "max_unavailable": 1}
    assert read.spec.revision_history_limit == 10
    apps_v1.delete_namespaced_daemon_set("nginx-app", namespace, body=k8s.V1DeleteOptions())


def test_job_apis(batch_v1: k8s.BatchV1Api, namespace: str) -> None:
    """Upstream's `test_job_apis`, whose DELETE asks for Background and accepts a Job or a Status; without a policy
    batch/v1 orphans the Job's pods, and says so in a warning."""

    def job(name: str) -> dict[str, Any]:
        containers = [_container(name, command=["sh", "-c", "sleep 5"])]
        template = {"metadata": {"name": name}, "spec": {"containers": containers, "restartPolicy": "Never"}}
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": template}}

    assert batch_v1.create_namespaced_job(namespace, job("test-job")).metadata.name == "test-job"
    read = batch_v1.read_namespaced_job("test-job", namespace)
    container = read.spec.template.spec.containers[0]
    assert (container.name, container.image, container.command) == ("test-job", "busybox", ["sh", "-c", "sleep 5"])
    assert read.spec.template.spec.restart_policy == "Never"
    deleted = batch_v1.delete_namespaced_job("test-job", namespace, body={"propagationPolicy": "Background"})
    assert isinstance(deleted, dict)
    assert (deleted["kind"], deleted["status"], deleted["details"]["name"]) == ("Status", "Success", "test-job")

    batch_v1.create_namespaced_job(namespace, job("orphaning"))
    answer, code, headers = batch_v1.delete_namespaced_job_with_http_info("orphaning", namespace)
    assert code == 200 and answer["kind"] == "Job" and answer["metadata"]["finalizers"] == ["orphan"]
    assert headers["Warning"] == (
        '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to '
        'remove them or set propagationPolicy=Orphan to suppress this warning"'
    )
    eventually(lambda: _gone(lambda: batch_v1.read_namespaced_job("orphaning", namespace)), what="the job gone")


# ---- watch and informer ------------------------------------------------------------------------------------


def _labelled_config_map(name: str, value: str, label: str = "e2e-tests") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {label: "true"}},
        "data": {"key": value, "config": "dummy"},
    }


def test_watch_from_a_list_resource_version(core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_watch_configmaps`: what happened after a LIST is replayed by a watch from the list's
    resourceVersion, a delete-collection included, and the watch ends at its timeout."""
    core_v1.create_namespaced_config_map(namespace, _labelled_config_map("configmap-a", "a"))
    listed = core_v1.list_namespaced_config_map(namespace, label_selector="e2e-tests=true")
    b = _labelled_config_map("configmap-b", "b")
    core_v1.create_namespaced_config_map(namespace, b)
    b["data"]["config"] = "{}"
    core_v1.patch_namespaced_config_map("configmap-b", namespace, b)
    core_v1.delete_collection_namespaced_config_map(namespace, label_selector="e2e-tests=true")

    started = time.monotonic()
    events = [
        (event["type"], event["object"].metadata.name)
        for event in watch.Watch().stream(
            core_v1.list_namespaced_config_map,
            namespace,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=2,
            label_selector="e2e-tests=true",
        )
    ]
    assert 1.5 < time.monotonic() - started < 10
    assert events[:2] == [("ADDED", "configmap-b"), ("MODIFIED", "configmap-b")]
    assert sorted(events[2:]) == [("DELETED", "configmap-a"), ("DELETED", "configmap-b")]


@pytest.fixture
def informer(core_v1: k8s.CoreV1Api, namespace: str) -> Iterator[Callable[..., SharedInformer]]:
    """Start SharedInformers on the test's config maps labelled `informed`; each is stopped at teardown. (Stopping
    shuts the watch's socket from the client's side, which the library logs as an error in its watch loop.)"""
    started: list[SharedInformer] = []

    def start(**kwargs: Any) -> SharedInformer:
        running = SharedInformer(
            list_func=core_v1.list_namespaced_config_map, namespace=namespace, label_selector="informed=true", **kwargs
        )
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def _cached(running: SharedInformer, key: str) -> Any:
    return running.cache.get_by_key(key)


def test_informer_cache_follows_the_namespace(
    core_v1: k8s.CoreV1Api, namespace: str, informer: Callable[..., SharedInformer]
) -> None:
    """Upstream's informer tests: objects there before the start are cached, then ADDED, MODIFIED and DELETED reach
    the handlers and the cache, with resourceVersions that only grow."""
    core_v1.create_namespaced_config_map(namespace, _labelled_config_map("before", "v", label="informed"))
    core_v1.create_namespaced_config_map(namespace, _labelled_config_map("not-informed", "v"))
    seen: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def note(kind: str) -> Callable[[Any], None]:
        def handler(obj: Any) -> None:
            with lock:
                seen.append((kind, obj.metadata.name, int(obj.metadata.resource_version)))

        return handler

    running = informer()
    for kind in (ADDED, MODIFIED, DELETED):
        running.add_event_handler(kind, note(kind))
    running.start()
    cached = eventually(lambda: _cached(running, f"{namespace}/before"), what="the listed object cached")
    assert cached.data["key"] == "v"

    core_v1.create_namespaced_config_map(namespace, _labelled_config_map("later", "v", label="informed"))
    eventually(lambda: _cached(running, f"{namespace}/later"), what="the new object cached")
    core_v1.patch_namespaced_config_map("later", namespace, {"data": {"key": "updated"}})
    eventually(lambda: _cached(running, f"{namespace}/later").data["key"] == "updated", what="the update cached")
    core_v1.delete_namespaced_config_map("later", namespace)
    eventually(lambda: _cached(running, f"{namespace}/later") is None, what="the delete uncached")

    with lock:
        events = list(seen)
    assert [(kind, name) for kind, name, _ in events] == [
        (ADDED, "before"),
        (ADDED, "later"),
        (MODIFIED, "later"),
        (DELETED, "later"),
    ]
    versions = [version for _, _, version in events]
    assert versions[1:] == sorted(versions[1:]) and len(set(versions[1:])) == 3
    assert _cached(running, f"{namespace}/not-informed") is None


def test_informer_resync_relists(
    core_v1: k8s.CoreV1Api, namespace: str, informer: Callable[..., SharedInformer]
) -> None:
    """Upstream's `test_resync_fires_modified_for_existing_objects`: the informer's watch carries the resync period
    as `timeoutSeconds`, the server ends it then, and the relist fires MODIFIED for what is cached."""
    core_v1.create_namespaced_config_map(namespace, _labelled_config_map("kept", "v", label="informed"))
    added, resynced = threading.Event(), threading.Event()
    running = informer(resync_period=1)
    running.add_event_handler(ADDED, lambda obj: added.set() if obj.metadata.name == "kept" else None)
    running.add_event_handler(MODIFIED, lambda obj: resynced.set() if obj.metadata.name == "kept" else None)
    running.start()
    assert added.wait(15), "the object was never added"
    assert resynced.wait(15), "no resync within 15 s of a 1 s period"
    assert _cached(running, f"{namespace}/kept").data["key"] == "v"


# ---- utils.create_from_* -----------------------------------------------------------------------------------


def _write(directory: Path, name: str, documents: list[dict[str, Any]]) -> str:
    path = directory / name
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def _service(name: str, port: int = 99) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"ports": [{"protocol": "TCP", "port": port, "targetPort": 9949}], "selector": {"app": name}},
    }


def test_create_from_yaml_files_lists_and_directories(
    k8s_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, apps_v1: k8s.AppsV1Api, namespace: str, tmp_path: Path
) -> None:
    """Upstream's `test_create_*_from_yaml`: a multi-document file with a PodList in it, a `kind: List`, a
    directory, and a dict."""
    pods = {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"mock-pod-{i}", "labels": {"app": f"mock-pod-{i}"}},
                "spec": {"containers": [_container(f"mock-pod-{i}", command=["sh", "-c", "sleep 3600"])]},
            }
            for i in range(2)
        ],
    }
    made = utils.create_from_yaml(
        k8s_client, _write(tmp_path, "multi.yaml", [pods, _deployment("mock", app="mock")]), namespace=namespace
    )
    assert [[type(obj).__name__ for obj in group] for group in made] == [["V1Pod", "V1Pod"], ["V1Deployment"]]
    for i in range(2):
        pod = core_v1.read_namespaced_pod(f"mock-pod-{i}", namespace)
        assert (pod.metadata.labels, pod.spec.containers[0].image) == ({"app": f"mock-pod-{i}"}, "busybox")
    assert apps_v1.read_namespaced_deployment("mock", namespace).spec.replicas == 3

    service = {"apiVersion": "v1", "kind": "Service", **_service("list-service-test")}
    listed = {"apiVersion": "v1", "kind": "List", "items": [service, _deployment("list-deployment-test", 1)]}
    utils.create_from_yaml(k8s_client, _write(tmp_path, "list.yaml", [listed]), namespace=namespace)
    assert core_v1.read_namespaced_service("list-service-test", namespace).spec.selector == {"app": "list-service-test"}
    assert apps_v1.read_namespaced_deployment("list-deployment-test", namespace).spec.replicas == 1

    directory = tmp_path / "multi-resource"
    directory.mkdir()
    rc_template = _template({"app": "mock"}, _container("mock-container", "registry.k8s.io/pause:3.10"))
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "mock"},
        "spec": {"replicas": 1, "selector": {"app": "mock"}, "template": rc_template},
    }
    _write(directory, "rc.yaml", [rc])
    _write(directory, "service.yaml", [{"apiVersion": "v1", "kind": "Service", **_service("mock")}])
    utils.create_from_directory(k8s_client, str(directory), namespace=namespace)
    assert core_v1.read_namespaced_service("mock", namespace).metadata.labels == {"app": "mock"}
    read_rc = core_v1.read_namespaced_replication_controller("mock", namespace)
    assert (read_rc.spec.replicas, read_rc.spec.selector) == (1, {"app": "mock"})

    from_dict = _deployment("nginx-app-3")
    utils.create_from_dict(k8s_client, from_dict, namespace=namespace)
    assert apps_v1.read_namespaced_deployment("nginx-app-3", namespace).spec.template.metadata.labels == {
        "app": "nginx"
    }


def test_create_apps_deployment_from_yaml_with_apply_is_idempotent(
    k8s_client: k8s.ApiClient, apps_v1: k8s.AppsV1Api, namespace: str, tmp_path: Path
) -> None:
    """Upstream's test of the same name: created by a plain create, then server-side applied (field manager
    `python-client`) with the same manifest: shared ownership, no conflict, nothing changed."""
    path = _write(tmp_path, "apps-deployment.yaml", [_deployment("nginx-app")])

    def check() -> k8s.V1Deployment:
        dep = apps_v1.read_namespaced_deployment("nginx-app", namespace)
        container = dep.spec.template.spec.containers[0]
        assert (dep.metadata.name, container.image, container.name) == ("nginx-app", "nginx:1.15.4", "nginx")
        assert (container.ports[0].container_port, dep.spec.template.metadata.labels["app"]) == (80, "nginx")
        assert dep.spec.replicas == 3
        return dep

    utils.create_from_yaml(k8s_client, path, namespace=namespace)
    created = check()
    utils.create_from_yaml(k8s_client, path, namespace=namespace, apply=True)
    applied = check()
    assert applied.metadata.generation == created.metadata.generation
    owners = {(m.manager, m.operation) for m in applied.metadata.managed_fields}
    assert {("OpenAPI-Generator", "Update"), ("python-client", "Apply")} <= owners


def test_create_from_an_implicit_service_list_reports_the_conflict(
    k8s_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    """Upstream's `test_create_implicit_service_list_from_yaml_with_conflict`: the items of a ServiceList have no
    kind of their own; the duplicate fails and the rest is created."""
    items = [_service("mock-3"), _service("mock-3"), _service("mock-4")]
    path = tmp_path / "svclist.json"
    path.write_text(yaml.safe_dump({"kind": "ServiceList", "apiVersion": "v1", "items": items}))
    with pytest.raises(utils.FailToCreateError) as failed:
        utils.create_from_yaml(k8s_client, str(path), namespace=namespace)
    assert [e.status for e in failed.value.api_exceptions] == [409]
    for name in ("mock-3", "mock-4"):
        assert core_v1.read_namespaced_service(name, namespace).metadata.labels == {"app": name}


def test_create_cluster_scoped_objects_from_yaml(
    k8s_client: k8s.ApiClient,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    extra_namespaces: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Upstream's namespace, namespace-list and RBAC tests (`verbose` prints what was made), and the deployment
    made in a namespace the same run created."""
    first, second, third = extra_namespaces("a"), extra_namespaces("b"), extra_namespaces("c")
    utils.create_from_yaml(
        k8s_client,
        _write(tmp_path, "ns.yaml", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": first}}]),
    )
    assert core_v1.read_namespace(first).metadata.name == first
    namespace_list = {
        "apiVersion": "v1",
        "kind": "NamespaceList",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"name": name}}}
            for name in (second, third)
        ],
    }
    utils.create_from_yaml(k8s_client, _write(tmp_path, "nslist.yaml", [namespace_list]))
    for name in (second, third):
        assert core_v1.read_namespace(name).metadata.labels["name"] == name

    deployment = _write(
        tmp_path,
        "dep.yaml",
        [{**_deployment("nginx-deployment"), "metadata": {"name": "nginx-deployment", "namespace": first}}],
    )
    utils.create_from_yaml(k8s_client, deployment)
    assert k8s.AppsV1Api(k8s_client).read_namespaced_deployment("nginx-deployment", first).metadata.namespace == first

    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]}],
    }
    utils.create_from_yaml(k8s_client, _write(tmp_path, "role.yaml", [role]), namespace=namespace, verbose=True)
    assert capsys.readouterr().out == "role created.\n"
    read = k8s.RbacAuthorizationV1Api(k8s_client).read_namespaced_role("pod-reader", namespace)
    assert read.rules[0].resources == ["pods"]


def test_create_api_service_from_yaml_reports_the_conflict_verbatim(
    k8s_client: k8s.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Upstream's `test_create_apiservice_from_yaml_with_conflict`: the second create's message is the server's
    body, which must be byte for byte upstream's (with the group of a cluster-scoped kind in its details)."""
    group = f"{namespace}.example.com"
    name = f"v1alpha1.{group}"
    api_service = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "version": "v1alpha1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "insecureSkipTLSVerify": True,
            "service": {"name": "api", "namespace": namespace},
        },
    }
    path = _write(tmp_path, "api-service.yaml", [api_service])
    registration = k8s.ApiregistrationV1Api(k8s_client)
    utils.create_from_yaml(k8s_client, path)
    try:
        read = registration.read_api_service(name)
        assert (read.spec.group, read.spec.version) == (group, "v1alpha1")
        with pytest.raises(utils.FailToCreateError) as failed:
            utils.create_from_yaml(k8s_client, path)
        assert str(failed.value) == (
            'Error from server (Conflict): {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            f'"message":"apiservices.apiregistration.k8s.io \\"{name}\\" already exists","reason":"AlreadyExists",'
            f'"details":{{"name":"{name}","group":"apiregistration.k8s.io","kind":"apiservices"}},"code":409}}\n'
        )
    finally:
        registration.delete_api_service(name, body={})


# ---- metrics.k8s.io -----------------------------------------------------------------------------------------


def test_metrics_utilities(k8s_client: k8s.ApiClient, core_v1: k8s.CoreV1Api, namespace: str) -> None:
    """Upstream's `test_metrics_utilities_integration`: once a pod runs, the node has NodeMetrics with a usage, the
    pod has PodMetrics (found by namespace, and by its label), and the several-namespaces helper reports each
    namespace asked for without an error."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "myapp-pod", "labels": {"app": "myapp"}},
        "spec": {"containers": [_container("myapp-container", command=["sh", "-c", "echo Hello && sleep 3600"])]},
    }
    utils.create_from_dict(k8s_client, pod, namespace=namespace)
    eventually(lambda: core_v1.read_namespaced_pod("myapp-pod", namespace).status.phase == "Running", what="Running")

    nodes = eventually(lambda: utils.get_nodes_metrics(k8s_client)["items"], what="node metrics")
    assert "usage" in nodes[0] and {"cpu", "memory"} <= nodes[0]["usage"].keys()
    pods = eventually(lambda: utils.get_pods_metrics(k8s_client, namespace)["items"], what="pod metrics")
    assert [p["metadata"]["name"] for p in pods] == ["myapp-pod"]
    labelled = utils.get_pods_metrics(k8s_client, namespace, "app=myapp")["items"]
    assert [p["metadata"]["name"] for p in labelled] == ["myapp-pod"]
    assert utils.get_pods_metrics(k8s_client, namespace, "app=other")["items"] == []
    both = utils.get_pods_metrics_in_all_namespaces(k8s_client, [namespace, "default"])
    assert set(both) == {namespace, "default"} and "error" not in both[namespace]
    assert [p["metadata"]["name"] for p in both[namespace]["items"]] == ["myapp-pod"]
    core_v1.delete_namespaced_pod("myapp-pod", namespace, body={})
