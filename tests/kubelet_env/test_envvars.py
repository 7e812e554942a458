"""Service environment variables as the kubelet injects them (reference §6, vectors 36-38), and `tinykube env`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunningCluster
from tinykube.kubelet_env.envvars import (
    ConfigError,
    Sources,
    container_environment,
    expand,
    referenced,
    service_environment,
)


def service(name: str, ip: str, *ports: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterIP": ip, "ports": list(ports)}}


def pod(namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": namespace}, "spec": {"containers": [{"name": "c"}], **spec}}


KUBERNETES = service("kubernetes", "10.0.0.1", {"name": "https", "port": 443, "protocol": "TCP"})
REDIS = service("redis-master", "10.0.0.11", {"port": 6379, "protocol": "TCP"})

SEED_REDIS = """\
REDIS_MASTER_SERVICE_HOST=10.0.0.11
REDIS_MASTER_SERVICE_PORT=6379
REDIS_MASTER_PORT=tcp://10.0.0.11:6379
REDIS_MASTER_PORT_6379_TCP=tcp://10.0.0.11:6379
REDIS_MASTER_PORT_6379_TCP_PROTO=tcp
REDIS_MASTER_PORT_6379_TCP_PORT=6379
REDIS_MASTER_PORT_6379_TCP_ADDR=10.0.0.11"""

MASTER = """\
KUBERNETES_SERVICE_HOST=10.0.0.1
KUBERNETES_SERVICE_PORT=443
KUBERNETES_SERVICE_PORT_HTTPS=443
KUBERNETES_PORT=tcp://10.0.0.1:443
KUBERNETES_PORT_443_TCP=tcp://10.0.0.1:443
KUBERNETES_PORT_443_TCP_PROTO=tcp
KUBERNETES_PORT_443_TCP_PORT=443
KUBERNETES_PORT_443_TCP_ADDR=10.0.0.1"""


def lines(variables: list[tuple[str, str]]) -> str:
    return "\n".join(f"{name}={value}" for name, value in variables)


def test_seed_example_and_master_service() -> None:  # vector 36
    assert lines(service_environment(pod(), [REDIS, KUBERNETES])) == MASTER + "\n" + SEED_REDIS


def test_service_links_disabled_keep_only_the_master_service() -> None:  # vector 37
    assert lines(service_environment(pod(enableServiceLinks=False), [REDIS, KUBERNETES])) == MASTER


def test_headless_and_external_name_services_give_nothing() -> None:  # vector 37
    headless = service("db", "None", {"port": 5432})
    external = {
        "metadata": {"name": "ext", "namespace": "default"},
        "spec": {"type": "ExternalName", "externalName": "x.org"},
    }
    assert lines(service_environment(pod(), [headless, external, KUBERNETES])) == MASTER


def test_a_namespace_service_named_kubernetes_wins() -> None:  # vector 38
    own = service("kubernetes", "10.0.0.99", {"port": 80, "protocol": "TCP"}, namespace="ns1")
    for namespace in ("ns1", "apps"):  # sorts after and before "default"
        own["metadata"]["namespace"] = namespace
        found = dict(service_environment(pod(namespace), [KUBERNETES, own]))
        assert found["KUBERNETES_SERVICE_HOST"] == "10.0.0.99" and found["KUBERNETES_SERVICE_PORT"] == "80"
        assert "KUBERNETES_SERVICE_PORT_HTTPS" not in found


def test_a_name_two_services_make_is_given_once() -> None:
    # Service `a`'s link variable A_PORT_80_TCP_PORT is also Service `a-port-80-tcp`'s {SVC}_PORT
    a = service("a", "10.0.0.30", {"port": 80, "protocol": "TCP"})
    clash = service("a-port-80-tcp", "10.0.0.31", {"port": 81, "protocol": "TCP"})
    found = service_environment(pod(), [clash, a])
    names = [name for name, _ in found]
    assert len(names) == len(set(names)) == 7 + 7 - 1
    assert dict(found)["A_PORT_80_TCP_PORT"] == "tcp://10.0.0.31:81"  # the later Service's, as a map would keep
    container = container_environment(pod(), {"name": "c"}, [a, clash])
    assert [name for name, _ in container].count("A_PORT_80_TCP_PORT") == 1


def test_services_of_other_namespaces_are_not_given() -> None:
    other = service("redis-master", "10.0.0.11", {"port": 6379}, namespace="other")
    assert lines(service_environment(pod(), [other, KUBERNETES])) == MASTER


def test_multi_port_named_ports() -> None:
    web = service(
        "web",
        "10.0.0.20",
        {"name": "http", "port": 80, "protocol": "TCP"},
        {"name": "dns-udp", "port": 53, "protocol": "UDP"},
    )
    assert (
        lines(service_environment(pod(), [web]))
        == """\
WEB_SERVICE_HOST=10.0.0.20
WEB_SERVICE_PORT=80
WEB_SERVICE_PORT_HTTP=80
WEB_SERVICE_PORT_DNS_UDP=53
WEB_PORT=tcp://10.0.0.20:80
WEB_PORT_80_TCP=tcp://10.0.0.20:80
WEB_PORT_80_TCP_PROTO=tcp
WEB_PORT_80_TCP_PORT=80
WEB_PORT_80_TCP_ADDR=10.0.0.20
WEB_PORT_53_UDP=udp://10.0.0.20:53
WEB_PORT_53_UDP_PROTO=udp
WEB_PORT_53_UDP_PORT=53
WEB_PORT_53_UDP_ADDR=10.0.0.20"""
    )


def test_ipv6_addresses_in_brackets_where_upstream_uses_them() -> None:
    found = dict(service_environment(pod(), [service("v6", "fd00::1", {"port": 80, "protocol": "TCP"})]))
    assert found["V6_SERVICE_HOST"] == "fd00::1" and found["V6_PORT_80_TCP_ADDR"] == "fd00::1"
    assert found["V6_PORT"] == found["V6_PORT_80_TCP"] == "tcp://[fd00::1]:80"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(B)", "x1y2"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$(A", "$(A"),
        ("a$b", "a$b"),
        ("end$", "end$"),
    ],
)
def test_expansion(text: str, expected: str) -> None:
    assert expand(text, {"A": "1", "B": "2"}) == expected


def test_container_env_wins_and_references_service_variables() -> None:
    p = pod()
    p["status"] = {"podIP": "10.244.1.5"}
    container = {
        "name": "c",
        "env": [
            {"name": "REDIS_MASTER_SERVICE_PORT", "value": "1"},
            {"name": "URL", "value": "redis://$(REDIS_MASTER_SERVICE_HOST):$(REDIS_MASTER_SERVICE_PORT)"},
            {"name": "ME", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
    }
    found = container_environment(p, container, [REDIS])
    assert found[:4] == [
        ("REDIS_MASTER_SERVICE_PORT", "1"),
        ("URL", "redis://10.0.0.11:1"),
        ("ME", "10.244.1.5"),
        ("NS", "default"),
    ]
    assert [name for name, _ in found].count("REDIS_MASTER_SERVICE_PORT") == 1


def test_config_map_and_secret_sources() -> None:
    cm = {"metadata": {"name": "cfg"}, "data": {"MODE": "fast", "bad key": "x", "LEVEL": "3"}}
    secret = {"metadata": {"name": "creds"}, "data": {"PASSWORD": "aHVudGVyMg==", "TOKEN": "dA=="}}
    warnings: list[str] = []
    sources = Sources({("configmaps", "cfg"): cm, ("secrets", "creds"): secret, ("configmaps", "gone"): None},
                      warn=warnings.append)  # fmt: skip
    container = {
        "name": "c",
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "APP_"}, {"secretRef": {"name": "creds"}}],
        "env": [
            {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
            {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": True}}},
            {"name": "NOKEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nope", "optional": True}}},
            {"name": "APP_LEVEL", "value": "$(APP_MODE)-9"},
        ],
    }
    assert referenced(container) == {("configmaps", "cfg"), ("secrets", "creds"), ("configmaps", "gone")}
    found = dict(container_environment(pod(), container, [], sources))
    assert found == {"APP_MODE": "fast", "APP_LEVEL": "fast-9", "PASSWORD": "hunter2", "TOKEN": "t", "PASS": "hunter2"}
    assert warnings == [
        "Keys [APP_bad key] from the EnvFrom configmap default/cfg were skipped since they are considered invalid "
        "environment variable names."
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"configMapKeyRef": {"name": "gone", "key": "k"}}, 'configmap "gone" not found'),
        ({"secretKeyRef": {"name": "gone", "key": "k"}}, 'secret "gone" not found'),
        ({"configMapKeyRef": {"name": "cfg", "key": "nope"}}, "couldn't find key nope in ConfigMap default/cfg"),
    ],
)
def test_a_missing_required_source_says_what_is_missing(env: dict[str, Any], message: str) -> None:
    sources = Sources({("configmaps", "cfg"): {"data": {}}, ("configmaps", "gone"): None, ("secrets", "gone"): None})
    container = {"name": "c", "env": [{"name": "X", "valueFrom": env}]}
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        container_environment(pod(), container, [], sources)
    optional = {"name": "c", "envFrom": [{"configMapRef": {"name": "gone", "optional": True}}]}
    assert container_environment(pod(), optional, [], sources) == []


def test_resource_fields_in_units_of_their_divisor() -> None:
    p = pod()
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "env": [
            {"name": "CPU_REQUEST", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
            {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "CORES", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
        ],
    }
    p["spec"] = {"containers": [container]}
    found = dict(container_environment(p, container, []))
    assert found == {"CPU_REQUEST": "250", "CPU_LIMIT": "4", "MEM": "128", "CORES": "1"}  # the node's 4 CPUs; up


def tinykube_env(cluster: RunningCluster, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tinykube.cli", "env", "--kubeconfig", str(cluster.kubeconfig), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_tinykube_env_prints_what_a_pod_gets(cluster: RunningCluster, namespace: str) -> None:
    cluster.kubectl("-n", namespace, "create", "service", "clusterip", "redis-master", "--tcp=6379")
    ip = cluster.kubectl_json("-n", namespace, "get", "service", "redis-master")["spec"]["clusterIP"]
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "printer"},
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox", "env": [{"name": "HOST", "value": "$(REDIS_MASTER_SERVICE_HOST)"}]}
            ]
        },
    }
    cluster.kubectl("-n", namespace, "apply", "-f", "-", input=json.dumps(manifest))
    result = tinykube_env(cluster, "printer", "-n", namespace)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    assert printed[0] == f"HOST={ip}"
    assert f"REDIS_MASTER_SERVICE_HOST={ip}" in printed and "REDIS_MASTER_PORT_6379_TCP_PROTO=tcp" in printed
    assert any(line.startswith("KUBERNETES_SERVICE_HOST=") for line in printed)


def test_tinykube_env_errors(cluster: RunningCluster, namespace: str) -> None:
    missing = tinykube_env(cluster, "nosuch", "-n", namespace)
    assert missing.returncode == 1 and missing.stderr.strip() == 'tinykube: env: pods "nosuch" not found'
    neither = tinykube_env(cluster)
    assert neither.returncode == 1 and "give a pod name or -f FILE" in neither.stderr


def test_tinykube_env_of_a_manifest_not_created(cluster: RunningCluster, namespace: str, tmp_path: Path) -> None:
    cluster.kubectl("-n", namespace, "create", "service", "clusterip", "redis-master", "--tcp=6379")
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    manifest["spec"] = {"containers": [{"name": "c"}]}
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(manifest))
    linked = tinykube_env(cluster, "-f", str(path), "-n", namespace)
    assert linked.returncode == 0, linked.stderr
    assert any(line.startswith("REDIS_MASTER_SERVICE_HOST=") for line in linked.stdout.splitlines())
    manifest["spec"]["enableServiceLinks"] = False
    path.write_text(json.dumps(manifest))
    unlinked = tinykube_env(cluster, "-f", str(path), "-n", namespace)
    assert unlinked.returncode == 0, unlinked.stderr
    assert {line.split("_", 1)[0] for line in unlinked.stdout.splitlines()} == {"KUBERNETES"}
