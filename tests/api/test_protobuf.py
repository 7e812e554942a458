"""tinykube.api.protobuf: kubectl's protobuf request bodies decode to the dict their JSON form would give.

`KUBECTL_*` bodies were captured from kubectl v1.32 posting to a recording HTTP server (`create namespace`,
`create service ...`, `create deployment`, `debug pod/... --copy-to`, `debug node/...`). Their expected dicts
are `kubectl create ... --dry-run=client -o json` output; for the debug pods, the JSON pod kubectl read back
after `kubectl debug`'s own edits (copy renamed, labels/status dropped, a debug container added). The other
vectors are built with the small encoder below, which writes zero scalars as gogo-protobuf does.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tinykube.api import protobuf
from tinykube.api.errors import BadRequest, UnsupportedMediaType
from tinykube.api.protobuf import MAGIC, decode

# --------------------------------------------------------------------------------------------------
# A tiny protobuf encoder for hand-built vectors
# --------------------------------------------------------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64: 64-bit two's complement, 10 bytes
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def num(number: int, value: int | bool) -> bytes:
    return varint(number << 3) + varint(int(value))


def text(number: int, value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def msg(number: int, *parts: bytes) -> bytes:
    return text(number, b"".join(parts))


def entry(number: int, key: str, value: str) -> bytes:
    """A map<string, string> entry."""
    return msg(number, text(1, key), text(2, value))


def qty_entry(number: int, key: str, value: str) -> bytes:
    """A map<string, Quantity> entry."""
    return msg(number, text(1, key), msg(2, text(1, value)))


def when(number: int, seconds: int, nanos: int = 0) -> bytes:
    """A metav1.Time / MicroTime {seconds=1, nanos=2}."""
    return msg(number, num(1, seconds), *([num(2, nanos)] if nanos else []))


def int_or_str(number: int, value: int | str) -> bytes:
    if isinstance(value, int):
        return msg(number, num(1, 0), num(2, value), text(3, ""))
    return msg(number, num(1, 1), num(2, 0), text(3, value))


def envelope(api_version: str, kind: str, *parts: bytes) -> bytes:
    """MAGIC + runtime.Unknown{typeMeta, raw, contentEncoding="", contentType=""}, as kubectl sends it."""
    return MAGIC + msg(1, text(1, api_version), text(2, kind)) + msg(2, *parts) + text(3, "") + text(4, "")


def meta(*parts: bytes) -> bytes:
    """ObjectMeta with gogo's always-written zero scalars and an empty (zero) creationTimestamp."""
    zeros = text(2, "") + text(4, "") + text(5, "") + text(6, "") + num(7, 0) + msg(8)
    return msg(1, *parts, zeros)


T = 1704164645  # 2024-01-02T03:04:05Z
T_JSON = "2024-01-02T03:04:05Z"


def test_encoder_matches_a_captured_body() -> None:
    namespace = envelope("v1", "Namespace", meta(text(1, "demo"), text(3, "")), msg(2), msg(3, text(1, "")))
    assert decode(namespace) == decode(KUBECTL_CREATE_NAMESPACE)


# --------------------------------------------------------------------------------------------------
# Bodies captured from kubectl v1.32
# --------------------------------------------------------------------------------------------------

# kubectl create namespace demo
KUBECTL_CREATE_NAMESPACE = (
    b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1c\n\x14\n\x04demo\x12\x00\x1a\x00"\x00*\x002\x008'
    b'\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
# kubectl create service nodeport web --tcp=80:8080 --node-port=30080 -n default
KUBECTL_CREATE_SERVICE_NODEPORT = (
    b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12q\n&\n\x03web\x12\x00\x1a\x07default"\x00*\x002\x008'
    b'\x00B\x00Z\n\n\x03app\x12\x03web\x12C\n\x1d\n\x0780-8080\x12\x03TCP\x18P"\x07\x08\x00\x10\x90'
    b'?\x1a\x00(\x80\xeb\x01\x12\n\n\x03app\x12\x03web\x1a\x00"\x08NodePort:\x00B\x00R\x00Z\x00`'
    b'\x00h\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
# kubectl create service externalname ext --external-name=db.example.com -n default
KUBECTL_CREATE_SERVICE_EXTERNALNAME = (
    b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12d\n&\n\x03ext\x12\x00\x1a\x07default"\x00*\x002\x008'
    b'\x00B\x00Z\n\n\x03app\x12\x03ext\x126\x12\n\n\x03app\x12\x03ext\x1a\x00"\x0cExternalName:\x00'
    b'B\x00R\x0edb.example.comZ\x00`\x00h\x00\x1a\x02\n\x00\x1a\x00"\x00'
)
# kubectl create service clusterip h --clusterip=None --tcp=5432 -n default
KUBECTL_CREATE_SERVICE_HEADLESS = (
    b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12l\n"\n\x01h\x12\x00\x1a\x07default"\x00*\x002\x008\x00B'
    b'\x00Z\x08\n\x03app\x12\x01h\x12B\n\x19\n\x045432\x12\x03TCP\x18\xb8*"\x07\x08\x00\x10\xb8*'
    b'\x1a\x00(\x00\x12\x08\n\x03app\x12\x01h\x1a\x04None"\tClusterIP:\x00B\x00R\x00Z\x00`\x00h\x00'
    b'\x1a\x02\n\x00\x1a\x00"\x00'
)
# kubectl create service loadbalancer lb --tcp=443:8443,80 -n default
KUBECTL_CREATE_SERVICE_LOADBALANCER = (
    b'k8s\x00\n\r\n\x02v1\x12\x07Service\x12\x89\x01\n$\n\x02lb\x12\x00\x1a\x07default"\x00*\x002'
    b'\x008\x00B\x00Z\t\n\x03app\x12\x02lb\x12]\n\x1d\n\x08443-8443\x12\x03TCP\x18\xbb\x03"\x07\x08'
    b'\x00\x10\xfbA\x1a\x00(\x00\n\x15\n\x0280\x12\x03TCP\x18P"\x06\x08\x00\x10P\x1a\x00(\x00\x12\t'
    b'\n\x03app\x12\x02lb\x1a\x00"\x0cLoadBalancer:\x00B\x00R\x00Z\x00`\x00h\x00\x1a\x02\n\x00\x1a'
    b'\x00"\x00'
)
# kubectl create deployment web --image=nginx --replicas=2 --port=80 -n default
KUBECTL_CREATE_DEPLOYMENT = (
    b'k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xbf\x01\n&\n\x03web\x12\x00\x1a\x07default"'
    b"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12\x86\x01\x08\x02\x12\x0c\n\n\n\x03app\x12"
    b'\x03web\x1al\n\x1c\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03web\x12L'
    b'\x12.\n\x05nginx\x12\x05nginx*\x002\n\n\x00\x10\x00\x18P"\x00*\x00B\x00j\x00r\x00\x80\x01\x00'
    b"\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00"
    b'\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 '
    b'\x00(\x008\x00\x1a\x00"\x00'
)
# kubectl create deployment app --image=busybox -n default -- sleep 3600
KUBECTL_CREATE_DEPLOYMENT_COMMAND = (
    b'k8s\x00\n\x15\n\x07apps/v1\x12\nDeployment\x12\xc4\x01\n&\n\x03app\x12\x00\x1a\x07default"'
    b"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03app\x12\x8b\x01\x08\x01\x12\x0c\n\n\n\x03app\x12"
    b'\x03app\x1aq\n\x1c\n\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00Z\n\n\x03app\x12\x03app\x12Q'
    b"\x123\n\x07busybox\x12\x07busybox\x1a\x05sleep\x1a\x043600*\x00B\x00j\x00r\x00\x80\x01\x00"
    b"\x88\x01\x00\x90\x01\x00\xa2\x01\x00\x1a\x002\x00B\x00J\x00R\x00X\x00`\x00h\x00\x82\x01\x00"
    b'\x8a\x01\x00\x9a\x01\x00\xc2\x01\x00"\x02\n\x00(\x008\x00\x1a\x0c\x08\x00\x10\x00\x18\x00 '
    b'\x00(\x008\x00\x1a\x00"\x00'
)


def _service(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": None, "labels": {"app": name}},
        "spec": {**spec, "selector": {"app": name}},
        "status": {"loadBalancer": {}},
    }


def _deployment(name: str, replicas: int, container: dict[str, Any]) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": None, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": labels},
                "spec": {"containers": [{**container, "resources": {}}]},
            },
            "strategy": {},
        },
        "status": {},
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            KUBECTL_CREATE_NAMESPACE,
            {
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {"name": "demo", "creationTimestamp": None},
                "spec": {},
                "status": {},
            },
            id="namespace",
        ),
        pytest.param(
            KUBECTL_CREATE_SERVICE_NODEPORT,
            _service(
                "web",
                {
                    "ports": [
                        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}
                    ],
                    "type": "NodePort",
                },
            ),
            id="service-nodeport",
        ),
        pytest.param(
            KUBECTL_CREATE_SERVICE_EXTERNALNAME,
            _service("ext", {"type": "ExternalName", "externalName": "db.example.com"}),
            id="service-externalname",
        ),
        pytest.param(
            KUBECTL_CREATE_SERVICE_HEADLESS,
            _service(
                "h",
                {
                    "ports": [{"name": "5432", "protocol": "TCP", "port": 5432, "targetPort": 5432}],
                    "clusterIP": "None",
                    "type": "ClusterIP",
                },
            ),
            id="service-headless",
        ),
        pytest.param(
            KUBECTL_CREATE_SERVICE_LOADBALANCER,
            _service(
                "lb",
                {
                    "ports": [
                        {"name": "443-8443", "protocol": "TCP", "port": 443, "targetPort": 8443},
                        {"name": "80", "protocol": "TCP", "port": 80, "targetPort": 80},
                    ],
                    "type": "LoadBalancer",
                },
            ),
            id="service-loadbalancer",
        ),
        pytest.param(
            KUBECTL_CREATE_DEPLOYMENT,
            _deployment("web", 2, {"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}),
            id="deployment",
        ),
        pytest.param(
            KUBECTL_CREATE_DEPLOYMENT_COMMAND,
            _deployment("app", 1, {"name": "busybox", "image": "busybox", "command": ["sleep", "3600"]}),
            id="deployment-command",
        ),
    ],
)
def test_kubectl_create_bodies_decode_to_their_json(body: bytes, expected: dict[str, Any]) -> None:
    assert decode(body) == expected


def test_kubectl_debug_pod_copy_decodes_to_its_json() -> None:
    """A pod with volumes, probes, env sources, quantities, affinity, security contexts, tolerations..."""
    assert decode(KUBECTL_DEBUG_POD_COPY) == KUBECTL_DEBUG_POD_COPY_JSON


def test_kubectl_debug_node_pod_decodes_to_its_json() -> None:
    assert decode(KUBECTL_DEBUG_NODE_POD) == KUBECTL_DEBUG_NODE_POD_JSON


# kubectl debug pod/rich --copy-to=rich-copy --image=busybox:1.36 --container=dbg --share-processes
KUBECTL_DEBUG_POD_COPY = base64.b64decode(
    "azhzAAoJCgJ2MRIDUG9kEsgLCisKCXJpY2gtY29weRIAGgdkZWZhdWx0IgAqADIAOABCAGIJCgRub3RlEgF4EoYLChoKBGRhdGES"
    "EhIQCgZNZW1vcnkSBgoENjRNaQokCgNjZmcSHZoBGgoECgJjbRINCgFhEgVhLnR4dBikAxikAyAACg8KA3NlYxIIMgYKAXMYgAIK"
    "HwoEaG9zdBIXChUKCC92YXIvbG9nEglEaXJlY3RvcnkKQwoEcHJvahI70gE4Cg4iDAoAEJccGgV0b2tlbgojEiEKHwoGbGFiZWxz"
    "EhUKAnYxEg9tZXRhZGF0YS5sYWJlbHMQpAMKEwoFY2xhaW0SClIICgRwdmMxEAESsgQKA2FwcBIKbmdpbng6MS4yNyICLWciC2Rh"
    "ZW1vbiBvZmY7KgQvc3J2MhIKBGh0dHAQABiQPyIDVENQKgAyFQoAEOkpGDUiA1VEUCoHMC4wLjAuMDoGCgFBEgFCOgkKBUVNUFRZ"
    "EgA6HgoDUE9EEgAaFQoTCgJ2MRINbWV0YWRhdGEubmFtZTomCgNNRU0SABodEhsKA2FwcBINbGltaXRzLm1lbW9yeRoFCgMxTWk6"
    "EwoCUFcSABoLIgkKAwoBcxICcHdCQwoNCgNjcHUSBgoENTAwbQoRCgZtZW1vcnkSBwoFMTI4TWkSDQoDY3B1EgYKBDEwMG0SEAoG"
    "bWVtb3J5EgYKBDY0TWlKEwoEZGF0YRAAGgUvZGF0YSIAMgBKGgoDY2ZnEAEaCC9ldGMvY2ZnIgVhLnR4dDIAUjQKKBImCggvaGVh"
    "bHRoehIKCAEQABoEaHR0cBoAIgRIVFRQKgYKAVgSATEQAxgBIAooATADWhkKDRoLCgcIABCQPxoAEgAQABgAIAUoADAAYhAKCAoG"
    "CgR0cnVlEgQiAggFahQvZGV2L3Rlcm1pbmF0aW9uLWxvZ3IMSWZOb3RQcmVzZW50ei8KEAoJTkVUX0FETUlOEgNBTEwQACDoBygB"
    "MAE4AFoQCg5SdW50aW1lRGVmYXVsdIABAIgBAJABAJoBDwoDQ01fEggKBAoCY20QAaIBBEZpbGWyARwKEAoOCgNjYXQKBy90bXAv"
    "b2sQABgAIAAoADAeEisKA2RiZxIMYnVzeWJveDoxLjM2KgBCAGoAcgCAAQCIAQCQAQCiAQRGaWxlGgZBbHdheXMgHijYBDIMQ2x1"
    "c3RlckZpcnN0OhkKEGt1YmVybmV0ZXMuaW8vb3MSBWxpbnV4QgdkZWZhdWx0SgdkZWZhdWx0UgBYAGAAaAByOwoQCgASABoAIghz"
    "MDpjMSxjMhAAIAEgAiADKNAPMAA6GgoSbmV0LmNvcmUuc29tYXhjb25uEgQxMDI0egkKB3JlZ2NyZWSCAQRyaWNoigEDc3VikgFc"
    "CisKFAoSChAKBHpvbmUSAkluGgFhGgFiEhMIChIPCg0KA3NzZBIGRXhpc3RzGi0SKwhkEicKDQoLCgNhcHASBHJpY2gaFmt1YmVy"
    "bmV0ZXMuaW8vaG9zdG5hbWWaARFkZWZhdWx0LXNjaGVkdWxlcqIBMQoEaW5pdBIHYnVzeWJveBoCc2gaAi1jGgR0cnVlKgBCAGoA"
    "cgCAAQCIAQCQAQCiAQCoAQCyATYKHG5vZGUua3ViZXJuZXRlcy5pby9ub3QtcmVhZHkSBkV4aXN0cxoAIglOb0V4ZWN1dGUorAKy"
    "AQ4KABIGRXhpc3RzGgAiALoBGAoIMTAuMC4wLjESAmRiEghkYi5sb2NhbMIBBGhpZ2jIAQDSASkKBzEuMS4xLjESCXN2Yy5sb2Nh"
    "bBoKCgVuZG90cxIBMhoHCgVlZG5zMNgBAeIBEwoRZXhhbXBsZS5jb20vcmVhZHnwAQH6ARRQcmVlbXB0TG93ZXJQcmlvcml0eYoC"
    "LAgBEgR6b25lGg1Eb05vdFNjaGVkdWxlIhESDwoDYXBwEgJJbhoEcmljaCgCogIHCgVsaW51eBoQCgAaACIAKgAyAEoAWgByABoA"
    "IgA="
)
KUBECTL_DEBUG_POD_COPY_JSON: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "rich-copy",
        "namespace": "default",
        "creationTimestamp": None,
        "annotations": {"note": "x"},
    },
    "spec": {
        "volumes": [
            {"name": "data", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {
                "name": "cfg",
                "configMap": {
                    "name": "cm",
                    "items": [{"key": "a", "path": "a.txt", "mode": 420}],
                    "defaultMode": 420,
                    "optional": False,
                },
            },
            {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
            {
                "name": "proj",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "labels",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"},
                                    },
                                ],
                            },
                        },
                    ],
                    "defaultMode": 420,
                },
            },
            {"name": "claim", "persistentVolumeClaim": {"claimName": "pvc1", "readOnly": True}},
        ],
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "args": ["-g", "daemon off;"],
                "workingDir": "/srv",
                "ports": [
                    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                    {"hostPort": 5353, "containerPort": 53, "protocol": "UDP", "hostIP": "0.0.0.0"},
                ],
                "env": [
                    {"name": "A", "value": "B"},
                    {"name": "EMPTY"},
                    {
                        "name": "POD",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                    },
                    {
                        "name": "MEM",
                        "valueFrom": {
                            "resourceFieldRef": {
                                "containerName": "app",
                                "resource": "limits.memory",
                                "divisor": "1Mi",
                            },
                        },
                    },
                    {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                ],
                "resources": {
                    "limits": {"cpu": "500m", "memory": "128Mi"},
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                },
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "cfg", "readOnly": True, "mountPath": "/etc/cfg", "subPath": "a.txt"},
                ],
                "livenessProbe": {
                    "httpGet": {
                        "path": "/healthz",
                        "port": "http",
                        "scheme": "HTTP",
                        "httpHeaders": [{"name": "X", "value": "1"}],
                    },
                    "initialDelaySeconds": 3,
                    "timeoutSeconds": 1,
                    "periodSeconds": 10,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
                "lifecycle": {
                    "postStart": {"exec": {"command": ["true"]}},
                    "preStop": {"sleep": {"seconds": 5}},
                },
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {
                    "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                    "privileged": False,
                    "runAsUser": 1000,
                    "runAsNonRoot": True,
                    "readOnlyRootFilesystem": True,
                    "allowPrivilegeEscalation": False,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "envFrom": [{"prefix": "CM_", "configMapRef": {"name": "cm", "optional": True}}],
                "terminationMessagePolicy": "File",
                "startupProbe": {"exec": {"command": ["cat", "/tmp/ok"]}, "failureThreshold": 30},
            },
            {"name": "dbg", "image": "busybox:1.36", "resources": {}, "terminationMessagePolicy": "File"},
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "activeDeadlineSeconds": 600,
        "dnsPolicy": "ClusterFirst",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {
            "seLinuxOptions": {"level": "s0:c1,c2"},
            "runAsUser": 0,
            "supplementalGroups": [1, 2, 3],
            "fsGroup": 2000,
            "runAsGroup": 0,
            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}],
        },
        "imagePullSecrets": [{"name": "regcred"}],
        "hostname": "rich",
        "subdomain": "sub",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
                    ],
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                    },
                ],
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "rich"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    },
                ],
            },
        },
        "schedulerName": "default-scheduler",
        "initContainers": [
            {"name": "init", "image": "busybox", "command": ["sh", "-c", "true"], "resources": {}},
        ],
        "automountServiceAccountToken": False,
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {"operator": "Exists"},
        ],
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db", "db.local"]}],
        "priorityClassName": "high",
        "priority": 0,
        "dnsConfig": {
            "nameservers": ["1.1.1.1"],
            "searches": ["svc.local"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
        "shareProcessNamespace": True,
        "readinessGates": [{"conditionType": "example.com/ready"}],
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {
                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["rich"]}],
                },
                "minDomains": 2,
            },
        ],
        "os": {"name": "linux"},
    },
    "status": {},
}

# kubectl debug node/n1 --image=busybox:1.36 -n default
KUBECTL_DEBUG_NODE_POD = base64.b64decode(
    "azhzAAoJCgJ2MRIDUG9kEtEBCiYKFm5vZGUtZGVidWdnZXItbjEtc2hjd3ISABoAIgAqADIAOABCABKUAQoSCglob3N0LXJvb3QS"
    "BQoDCgEvEkoKCGRlYnVnZ2VyEgxidXN5Ym94OjEuMzYqAEIAShgKCWhvc3Qtcm9vdBAAGgUvaG9zdCIAMgBqAHIAgAEAiAEAkAEA"
    "ogEERmlsZRoFTmV2ZXIyAEIASgBSAm4xWAFgAWgBggEAigEAmgEAsgEOCgASBkV4aXN0cxoAIgDCAQAaEAoAGgAiACoAMgBKAFoA"
    "cgAaACIA"
)
KUBECTL_DEBUG_NODE_POD_JSON: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "node-debugger-n1-shcwr", "creationTimestamp": None},
    "spec": {
        "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
        "containers": [
            {
                "name": "debugger",
                "image": "busybox:1.36",
                "resources": {},
                "volumeMounts": [{"name": "host-root", "mountPath": "/host"}],
                "terminationMessagePolicy": "File",
            },
        ],
        "restartPolicy": "Never",
        "nodeName": "n1",
        "hostNetwork": True,
        "hostPID": True,
        "hostIPC": True,
        "tolerations": [{"operator": "Exists"}],
    },
    "status": {},
}


# --------------------------------------------------------------------------------------------------
# Hand-built vectors for the kinds kubectl does not send itself
# --------------------------------------------------------------------------------------------------


def test_node() -> None:
    body = envelope(
        "v1",
        "Node",
        meta(text(1, "n1"), entry(11, "kubernetes.io/hostname", "n1")),
        msg(
            2,
            text(1, "10.244.0.0/24"),
            text(7, "10.244.0.0/24"),
            num(4, False),
            msg(5, text(1, "node.kubernetes.io/unreachable"), text(2, ""), text(3, "NoExecute"), when(4, T)),
        ),
        msg(
            3,
            qty_entry(1, "cpu", "4"),
            qty_entry(1, "memory", "8Gi"),
            qty_entry(2, "cpu", "3900m"),
            msg(1, text(1, "pods")),  # a Quantity entry without its value: Go's zero Quantity, "0"
            text(3, ""),
            msg(4, text(1, "Ready"), text(2, "True"), when(3, T), msg(4), text(5, "KubeletReady"), text(6, "")),
            msg(5, text(1, "InternalIP"), text(2, "10.0.0.5")),
            msg(6, msg(1, num(1, 10250))),
            msg(7, *(text(n, "") for n in range(1, 10)), text(10, "amd64")),
            msg(8, text(1, "nginx:1.27"), num(2, 70_000_000)),
        ),
    )
    assert decode(body) == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}, "creationTimestamp": None},
        "spec": {
            "podCIDR": "10.244.0.0/24",
            "podCIDRs": ["10.244.0.0/24"],
            "taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": T_JSON}],
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "0"},
            "allocatable": {"cpu": "3900m"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": T_JSON,
                    "lastTransitionTime": None,
                    "reason": "KubeletReady",
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeletVersion": "",
                "kubeProxyVersion": "",
                "operatingSystem": "",
                "architecture": "amd64",
            },
            "images": [{"names": ["nginx:1.27"], "sizeBytes": 70_000_000}],
        },
    }


def test_event_with_micro_time() -> None:
    body = envelope(
        "v1",
        "Event",
        meta(text(1, "p.17a"), text(3, "default")),
        msg(
            2,
            text(1, "Pod"),
            text(2, "default"),
            text(3, "p"),
            text(4, "uid-1"),
            text(5, "v1"),
            text(6, ""),
            text(7, "spec.containers{app}"),
        ),
        text(3, "Started"),
        text(4, "Started container app"),
        msg(5, text(1, "kubelet"), text(2, "n1")),
        when(6, T),
        when(7, T + 60),
        num(8, 2),
        text(9, "Normal"),
        when(10, T, nanos=123_456_789),
        text(12, ""),
        text(14, ""),
        text(15, "n1"),
    )
    assert decode(body) == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "p.17a", "namespace": "default", "creationTimestamp": None},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "p",
            "uid": "uid-1",
            "apiVersion": "v1",
            "fieldPath": "spec.containers{app}",
        },
        "reason": "Started",
        "message": "Started container app",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": T_JSON,
        "lastTimestamp": "2024-01-02T03:05:05Z",
        "count": 2,
        "type": "Normal",
        "eventTime": "2024-01-02T03:04:05.123456Z",
        "reportingComponent": "",
        "reportingInstance": "n1",
    }


def test_endpoints() -> None:
    target = msg(2, text(1, "Pod"), text(2, "default"), text(3, "web-1"), text(4, "u1"))
    body = envelope(
        "v1",
        "Endpoints",
        meta(text(1, "web"), text(3, "default")),
        msg(
            2,
            msg(1, text(1, "10.244.0.5"), text(3, ""), text(4, "n1"), target),
            msg(2, text(1, "10.244.0.6"), text(3, "")),
            msg(3, text(1, "http"), num(2, 8080), text(3, "TCP")),
            msg(3, text(1, ""), num(2, 0), text(3, "UDP"), text(4, "")),
        ),
    )
    assert decode(body)["subsets"] == [
        {
            "addresses": [
                {
                    "ip": "10.244.0.5",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u1"},
                }
            ],
            "notReadyAddresses": [{"ip": "10.244.0.6"}],
            "ports": [
                {"name": "http", "port": 8080, "protocol": "TCP"},
                {"port": 0, "protocol": "UDP", "appProtocol": ""},
            ],
        }
    ]


def test_endpoint_slice_keeps_pointer_zeros() -> None:
    body = envelope(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        meta(text(1, "web-abc"), text(3, "default"), entry(11, "kubernetes.io/service-name", "web")),
        text(4, "IPv4"),
        msg(
            2,
            text(1, "10.244.0.5"),
            msg(2, num(1, True), num(2, True), num(3, False)),
            text(6, "n1"),
            msg(8, msg(1, text(1, "zone-a")), msg(2, text(1, "n1"))),  # forNodes (2) is 1.33's: skipped
        ),
        msg(2, text(1, "10.244.0.6"), msg(2)),
        msg(3, text(1, ""), text(2, "TCP"), num(3, 8080)),
    )
    assert decode(body) == {
        "kind": "EndpointSlice",
        "apiVersion": "discovery.k8s.io/v1",
        "metadata": {
            "name": "web-abc",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "web"},
            "creationTimestamp": None,
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": ["10.244.0.5"],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": "n1",
                "hints": {"forZones": [{"name": "zone-a"}]},
            },
            {"addresses": ["10.244.0.6"], "conditions": {}},
        ],
        "ports": [{"name": "", "protocol": "TCP", "port": 8080}],
    }


def test_replica_set_keeps_explicit_zero_replicas() -> None:
    owner = msg(
        13, text(1, "Deployment"), text(3, "web"), text(4, "u1"), text(5, "apps/v1"), num(6, True), num(7, False)
    )
    template = msg(3, meta(entry(11, "app", "web")), msg(2, msg(2, text(1, "nginx"), text(2, "nginx"))))
    body = envelope(
        "apps/v1",
        "ReplicaSet",
        meta(text(1, "web-5d9f"), text(3, "default"), owner),
        msg(2, num(1, 0), msg(2, entry(1, "app", "web")), template, num(4, 0)),
        msg(3, num(1, 0), num(2, 0), num(3, 0), num(4, 0), num(5, 0)),
    )
    assert decode(body) == {
        "kind": "ReplicaSet",
        "apiVersion": "apps/v1",
        "metadata": {
            "name": "web-5d9f",
            "namespace": "default",
            "creationTimestamp": None,
            "ownerReferences": [
                {
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "u1",
                    "apiVersion": "apps/v1",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
        "status": {"replicas": 0},
    }


def test_deployment_strategy_and_status() -> None:
    body = envelope(
        "apps/v1",
        "Deployment",
        meta(text(1, "web")),
        msg(
            2,
            num(1, 3),
            msg(4, text(1, "RollingUpdate"), msg(2, int_or_str(1, "25%"), int_or_str(2, 1))),
            num(6, 10),
            num(9, 600),
        ),
        msg(
            3,
            num(1, 4),
            num(2, 3),
            num(3, 3),
            num(4, 3),
            num(5, 0),
            num(7, 3),
            msg(
                6,
                text(1, "Available"),
                text(2, "True"),
                when(6, T),
                when(7, T),
                text(4, "MinimumReplicasAvailable"),
                text(5, "Deployment has minimum availability."),
            ),
        ),
    )
    obj = decode(body)
    assert obj["spec"] == {
        "replicas": 3,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    }
    assert obj["status"] == {
        "observedGeneration": 4,
        "replicas": 3,
        "updatedReplicas": 3,
        "availableReplicas": 3,
        "readyReplicas": 3,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": T_JSON,
                "lastTransitionTime": T_JSON,
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            }
        ],
    }


def test_service_optional_fields_and_status() -> None:
    port = msg(1, text(1, ""), text(2, "TCP"), num(3, 443), int_or_str(4, "https"), num(5, 0), text(6, "h2c"))
    spec = msg(
        2,
        port,
        text(3, "10.96.0.10"),
        text(18, "10.96.0.10"),
        text(4, "LoadBalancer"),
        text(7, "ClientIP"),
        msg(14, msg(1, num(1, 10800))),
        text(19, "IPv4"),
        text(17, "SingleStack"),
        num(20, False),
        text(22, "Cluster"),
    )
    ingress = msg(1, text(1, "203.0.113.7"), text(2, ""), text(3, "VIP"), msg(4, num(1, 443), text(2, "TCP")))
    condition = msg(2, text(1, "Ready"), text(2, "True"), num(3, 0), when(4, T), text(5, ""), text(6, ""))
    obj = decode(envelope("v1", "Service", meta(text(1, "lb")), spec, msg(3, msg(1, ingress), condition)))
    assert obj["spec"] == {
        "ports": [{"protocol": "TCP", "port": 443, "targetPort": "https", "appProtocol": "h2c"}],
        "clusterIP": "10.96.0.10",
        "clusterIPs": ["10.96.0.10"],
        "type": "LoadBalancer",
        "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "allocateLoadBalancerNodePorts": False,
        "internalTrafficPolicy": "Cluster",
    }
    assert obj["status"] == {
        "loadBalancer": {
            "ingress": [{"ip": "203.0.113.7", "ipMode": "VIP", "ports": [{"port": 443, "protocol": "TCP"}]}],
        },
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T_JSON, "reason": "", "message": ""}],
    }


@pytest.mark.parametrize("api_version", ["meta.k8s.io/v1", "v1", "apps/v1"])
def test_delete_options_in_any_group_version(api_version: str) -> None:
    body = envelope(
        api_version,
        "DeleteOptions",
        num(1, 0),
        msg(2, text(1, "uid-1"), text(2, "7")),
        text(4, "Foreground"),
        text(5, "All"),
    )
    assert decode(body) == {
        "kind": "DeleteOptions",
        "apiVersion": api_version,
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid-1", "resourceVersion": "7"},
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }


# --------------------------------------------------------------------------------------------------
# Wire-format semantics
# --------------------------------------------------------------------------------------------------


def _pod(*spec: bytes) -> dict[str, Any]:
    return decode(envelope("v1", "Pod", meta(text(1, "p")), msg(2, *spec)))


def test_zero_scalars_follow_json_omitempty() -> None:
    """Non-pointer zeros (always written by gogo-protobuf) are dropped; pointer and required zeros stay."""
    container = msg(2, text(1, "c"), text(2, ""), num(16, False), msg(6, num(2, 0), num(3, 0), text(4, "")))
    spec = _pod(container, text(3, ""), num(4, 0), num(11, False), num(21, False), num(25, 0))["spec"]
    assert spec == {
        "containers": [{"name": "c", "ports": [{"containerPort": 0}]}],
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "priority": 0,
    }


def test_negative_integers_are_sign_extended_varints() -> None:
    assert varint(-5) == b"\xfb\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    spec = _pod(num(25, -5), num(4, -1))["spec"]
    assert (spec["priority"], spec["terminationGracePeriodSeconds"]) == (-5, -1)


def test_packed_and_unpacked_repeated_integers() -> None:
    unpacked = msg(14, num(4, 1), num(4, 2), num(4, -3))
    packed = msg(14, text(4, varint(1) + varint(2) + varint(-3)))
    assert (
        _pod(unpacked)["spec"]
        == _pod(packed)["spec"]
        == {
            "containers": None,  # `json:"containers"`, no omitempty: a pod without containers is JSON's null
            "securityContext": {"supplementalGroups": [1, 2, -3]},
        }
    )


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    unknown = num(999, 7) + varint(998 << 3 | 1) + b"12345678" + text(997, "future") + varint(996 << 3 | 5) + b"1234"
    plain = envelope("v1", "Service", meta(text(1, "s")), msg(2, msg(1, num(3, 80)), text(4, "ClusterIP")))
    noisy = envelope(
        "v1",
        "Service",
        unknown,
        meta(text(1, "s"), unknown),
        msg(2, unknown, msg(1, num(3, 80), unknown, text(99, "x")), text(4, "ClusterIP"), msg(50, unknown)),
    )
    assert (
        decode(noisy)
        == decode(plain)
        == {
            "kind": "Service",
            "apiVersion": "v1",
            "metadata": {"name": "s", "creationTimestamp": None},
            "spec": {"ports": [{"port": 80}], "type": "ClusterIP"},
        }
    )


def test_unknown_fields_in_the_envelope_are_skipped() -> None:
    body = envelope("v1", "Namespace", meta(text(1, "a"))) + num(9, 1) + text(10, "x")
    assert decode(body)["metadata"] == {"name": "a", "creationTimestamp": None}


@pytest.mark.parametrize(
    ("seconds", "nanos", "time_json", "micro_json"),
    [
        (T, 0, T_JSON, "2024-01-02T03:04:05.000000Z"),
        (T, 999_999_999, T_JSON, "2024-01-02T03:04:05.999999Z"),
        (0, 0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
        (-86_400, 0, "1969-12-31T00:00:00Z", "1969-12-31T00:00:00.000000Z"),
        (-62_135_596_800 + 1, 0, "0001-01-01T00:00:01Z", "0001-01-01T00:00:01.000000Z"),
    ],
)
def test_time_and_micro_time_render_as_rfc3339(seconds: int, nanos: int, time_json: str, micro_json: str) -> None:
    body = envelope("v1", "Event", meta(text(1, "e")), when(6, seconds, nanos), when(10, seconds, nanos))
    obj = decode(body)
    assert (obj["firstTimestamp"], obj["eventTime"]) == (time_json, micro_json)


def test_zero_time_is_null_and_absent_time_is_absent() -> None:
    obj = decode(envelope("v1", "Event", meta(text(1, "e")), msg(6), msg(10)))
    assert obj["firstTimestamp"] is None and obj["eventTime"] is None
    assert "lastTimestamp" not in obj and "deletionTimestamp" not in obj["metadata"]


def test_int_or_string() -> None:
    probe = msg(10, msg(1, msg(2, int_or_str(2, 8080))), num(2, 0))
    probe_named = msg(11, msg(1, msg(3, int_or_str(1, "http"))))
    container = _pod(msg(2, text(1, "c"), probe, probe_named))["spec"]["containers"][0]
    assert container["livenessProbe"] == {"httpGet": {"port": 8080}}
    assert container["readinessProbe"] == {"tcpSocket": {"port": "http"}}


def test_inlined_structs_merge_into_their_parent() -> None:
    """LocalObjectReference in selectors, VolumeSource in Volume, ProbeHandler in Probe."""
    env = msg(7, text(1, "K"), msg(3, msg(3, msg(1, text(1, "cm")), text(2, "key"), num(3, True))))
    volume = msg(1, text(1, "v"), msg(2, msg(19, msg(1, text(1, "cm")), num(4, False))))
    spec = _pod(volume, msg(2, text(1, "c"), env))["spec"]
    assert spec["volumes"] == [{"name": "v", "configMap": {"name": "cm", "optional": False}}]
    assert spec["containers"][0]["env"] == [
        {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "key", "optional": True}}},
    ]


def test_ephemeral_containers_inline_their_common_fields() -> None:
    ephemeral = msg(34, msg(1, text(1, "debugger"), text(2, "busybox"), num(16, True)), text(2, "app"))
    assert _pod(ephemeral)["spec"]["ephemeralContainers"] == [
        {"name": "debugger", "image": "busybox", "stdin": True, "targetContainerName": "app"},
    ]


def test_managed_fields_decode_fields_v1_json() -> None:
    fields_v1 = b'{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}'
    managed = msg(
        17,
        text(1, "kubectl"),
        text(2, "Update"),
        text(3, "v1"),
        when(4, T),
        text(6, "FieldsV1"),
        msg(7, text(1, fields_v1)),
    )
    obj = decode(envelope("v1", "Namespace", meta(text(1, "a"), managed)))
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T_JSON,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        }
    ]


def test_a_repeated_singular_field_keeps_the_last_value() -> None:
    obj = decode(envelope("v1", "Namespace", meta(text(1, "a"), text(1, "b")), msg(3, text(1, "Active"), text(1, ""))))
    assert obj["metadata"]["name"] == "b"
    assert obj["status"] == {}


def test_bytes_scalars_render_as_base64_like_json() -> None:
    assert protobuf._scalar("bytes", 2, memoryview(b"\x00\xff"), "X.data") == "AP8="


def test_every_supported_kind_decodes_an_empty_object() -> None:
    """Nothing but the lists JSON writes as null when nil (`rules` of a Role, ...)."""
    for api_version, kind in protobuf.supported_kinds():
        message = "DeleteOptions" if kind == "DeleteOptions" else protobuf._KINDS[(api_version, kind)]
        nulls = dict.fromkeys(protobuf._NULLS[message])
        assert decode(envelope(api_version, kind)) == {"kind": kind, "apiVersion": api_version, **nulls}


def test_a_nil_list_without_omitempty_is_null() -> None:
    role = envelope("rbac.authorization.k8s.io/v1", "Role", meta(text(1, "r")))
    assert decode(role)["rules"] is None
    rule = msg(2, text(2, ""), text(3, "pods"))  # a PolicyRule without verbs: `json:"verbs"`
    assert decode(envelope("rbac.authorization.k8s.io/v1", "Role", rule))["rules"] == [
        {"verbs": None, "apiGroups": [""], "resources": ["pods"]}
    ]


def test_the_schema_rejects_unknown_types() -> None:
    with pytest.raises(ValueError, match="unknown type 'Nope'"):
        protobuf._compile({"X": {1: ("a", "[]Nope")}})
    with pytest.raises(ValueError, match="not a single message"):
        protobuf._compile({"X": {1: ("", "str")}})


# --------------------------------------------------------------------------------------------------
# Malformed input
# --------------------------------------------------------------------------------------------------

_NS = envelope("v1", "Namespace", meta(text(1, "a")))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b'{"kind": "Namespace"}', "missing the 'k8s\\x00' prefix", id="json-not-protobuf"),
        pytest.param(b"k8s\x01" + _NS[4:], "missing the 'k8s\\x00' prefix", id="bad-magic"),
        pytest.param(b"", "missing the 'k8s\\x00' prefix", id="empty"),
        pytest.param(MAGIC + b"\x0a", "Unknown: truncated varint", id="truncated-length"),
        pytest.param(MAGIC + b"\x0a\x80", "Unknown: truncated varint", id="truncated-varint"),
        pytest.param(MAGIC + b"\x0a" + b"\xff" * 10 + b"\x01", "varint longer than 10 bytes", id="long-varint"),
        pytest.param(MAGIC + b"\x0a\x05ab", "field 1: length 5 runs past the end", id="length-past-end"),
        pytest.param(MAGIC + b"\x09\x01\x02", "field 1: truncated 64-bit value", id="truncated-fixed64"),
        pytest.param(MAGIC + b"\x0b", "field 1: unsupported wire type 3", id="group"),
        pytest.param(MAGIC + b"\x00\x00", "field number 0", id="field-zero"),
        pytest.param(MAGIC + text(2, b""), "'Kind' or 'apiVersion' is missing", id="no-type-meta"),
        pytest.param(
            envelope("v1", "Namespace", msg(1, b"\x0a\x05ab")),
            "ObjectMeta: field 1: length 5 runs past the end",
            id="nested-length-past-end",
        ),
        pytest.param(
            envelope("v1", "Namespace", meta(text(1, b"\xff\xfe"))),
            "ObjectMeta.name: string is not valid UTF-8",
            id="bad-utf8",
        ),
        pytest.param(
            envelope("v1", "Service", msg(2, msg(1, text(3, "80")))),
            "ServicePort.port: wire type 2, expected a varint",
            id="wrong-wire-type",
        ),
        pytest.param(
            envelope("v1", "Service", num(1, 5)),
            "Service.metadata: wire type 0, expected length-delimited",
            id="scalar-for-message",
        ),
        pytest.param(
            envelope("v1", "Event", when(6, 10**12)),
            "Event.firstTimestamp: timestamp 1000000000000s is out of range",
            id="time-out-of-range",
        ),
        pytest.param(
            envelope("v1", "Namespace", meta(msg(17, msg(7, text(1, "{nope"))))),
            "fieldsV1 is not JSON",
            id="bad-fields-v1",
        ),
    ],
)
def test_malformed_bodies_are_bad_requests(body: bytes, message: str) -> None:
    with pytest.raises(BadRequest) as err:
        decode(body)
    assert message in err.value.message
    assert err.value.status()["code"] == 400


def test_a_kind_without_a_schema_is_unsupported_media_type() -> None:
    with pytest.raises(UnsupportedMediaType) as err:
        decode(envelope("resource.k8s.io/v1beta1", "ResourceClaim", meta(text(1, "db"))))
    assert err.value.status()["code"] == 415
    assert err.value.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml "
        "(no protobuf decoding for ResourceClaim in version 'resource.k8s.io/v1beta1')"
    )


def test_a_known_kind_in_another_version_is_unsupported_media_type() -> None:
    with pytest.raises(UnsupportedMediaType):
        decode(envelope("v1beta1", "Namespace"))


def test_a_content_encoding_is_unsupported_media_type() -> None:
    body = MAGIC + msg(1, text(1, "v1"), text(2, "Namespace")) + msg(2) + text(3, "gzip")
    with pytest.raises(UnsupportedMediaType, match="content encoding 'gzip'"):
        decode(body)
