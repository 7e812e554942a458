"""kubectl v1.32's protobuf request bodies, captured, decode to the JSON of the same object.

Each body was captured from kubectl v1.32.4 run with ``-v=10`` against a tinykube cluster (at that verbosity
client-go logs a protobuf request body as a hex dump). For the generator commands (``GENERATORS``) the expected
dict is the same command's ``--dry-run=client -o json`` output, kubectl's own JSON for the object it sends. The
other commands (``create token``, ``auth can-i``, ``auth whoami``, ``certificate approve``, ``drain``) have no
dry run; their expected dicts are written out here from the Go types' JSON tags. ``kubectl run`` and
``kubectl expose`` send JSON, not protobuf (see test_protobuf_e2e.py). The input files of the captures:
``ec.crt``/``ec.key`` a self-signed P-256 certificate and key, ``blob.bin`` the 4 bytes ``A\\x00\\xff\\x01``.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tinykube.api.protobuf import decode

GENERATORS = [
    pytest.param(
        "create configmap settings --from-literal=mode=fast --from-literal=empty= --from-file=blob=blob.bin",
        (
            "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEkEKGAoIc2V0dGluZ3MSABoAIgAqADIAOABCABIJCgVlbXB0eRIAEgwKBG1vZGUSBGZhc3Qa"
            "DAoEYmxvYhIEQQD/ARoAIgA="
        ),
        {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "settings", "creationTimestamp": None},
            "data": {"empty": "", "mode": "fast"},
            "binaryData": {"blob": "QQD/AQ=="},
        },
        id="configmap",
    ),
    pytest.param(
        "create secret generic creds --from-literal=user=admin --from-literal=password=s3cret --type=Opaque",
        (
            "azhzAAoMCgJ2MRIGU2VjcmV0EkIKFQoFY3JlZHMSABoAIgAqADIAOABCABISCghwYXNzd29yZBIGczNjcmV0Eg0KBHVzZXISBWFk"
            "bWluGgZPcGFxdWUaACIA"
        ),
        {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": "creds", "creationTimestamp": None},
            "data": {"password": "czNjcmV0", "user": "YWRtaW4="},
            "type": "Opaque",
        },
        id="secret-generic",
    ),
    pytest.param(
        "create secret tls web-tls --cert=ec.crt --key=ec.key",
        (
            "azhzAAoMCgJ2MRIGU2VjcmV0EvgGChcKB3dlYi10bHMSABoAIgAqADIAOABCABLXBAoHdGxzLmNydBLLBC0tLS0tQkVHSU4gQ0VS"
            "VElGSUNBVEUtLS0tLQpNSUlCaERDQ0FTbWdBd0lCQWdJVWZXSnJhU2ZvY3M4V3d5YlJwSW9hdzJ2eUxNUXdDZ1lJS29aSXpqMEVB"
            "d0l3CkZqRVVNQklHQTFVRUF3d0xaWGhoYlhCc1pTNWpiMjB3SUJjTk1qWXhNVEkxTURFeU56UXdXaGdQTWpFeU5qRXgKTURFd01U"
            "STNOREJhTUJZeEZEQVNCZ05WQkFNTUMyVjRZVzF3YkdVdVkyOXRNRmt3RXdZSEtvWkl6ajBDQVFZSQpLb1pJemowREFRY0RRZ0FF"
            "WmlHU3JYMUhrenFMbFlHRGMxUVhmdGY3dU8zVkszc2NPRVQyVFpVVHdGUGhvL1VKCnM4eDc1OURTdmtCZDRjcEZwVWlXeW5yQXpY"
            "SGNhVXoxdjFzWjJxTlRNRkV3SFFZRFZSME9CQllFRkViMnJ0NDMKRWgxSThiQzFGWkJrOVJpRDBzTENNQjhHQTFVZEl3UVlNQmFB"
            "RkViMnJ0NDNFaDFJOGJDMUZaQms5UmlEMHNMQwpNQThHQTFVZEV3RUIvd1FGTUFNQkFmOHdDZ1lJS29aSXpqMEVBd0lEU1FBd1Jn"
            "SWhBSmRUUmhWOFhiY0RCaUE5CndqNHhBTkNTdGVaSVVzZnlKOVlIZU80UDN0cThBaUVBa256Sjhjb0s0UUhvbzRzejNwOGNIbWts"
            "eEUxS3h5amIKbFdCS01ERWhaMXc9Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0KEu8BCgd0bHMua2V5EuMBLS0tLS1CRUdJTiBF"
            "QyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUxCQS8zdjRTRDNEbjBEVFhDNXhuQ1lTcExxZ0x2dyt0SWt3aVdRZjZIbFpvQW9H"
            "Q0NxR1NNNDkKQXdFSG9VUURRZ0FFWmlHU3JYMUhrenFMbFlHRGMxUVhmdGY3dU8zVkszc2NPRVQyVFpVVHdGUGhvL1VKczh4Nwo1"
            "OURTdmtCZDRjcEZwVWlXeW5yQXpYSGNhVXoxdjFzWjJnPT0KLS0tLS1FTkQgRUMgUFJJVkFURSBLRVktLS0tLQoaEWt1YmVybmV0"
            "ZXMuaW8vdGxzGgAiAA=="
        ),
        {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": "web-tls", "creationTimestamp": None},
            "data": {
                "tls.crt": (
                    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJoRENDQVNtZ0F3SUJBZ0lVZldKcmFTZm9jczhXd3liUnBJb2F3MnZ5"
                    "TE1Rd0NnWUlLb1pJemowRUF3SXcKRmpFVU1CSUdBMVVFQXd3TFpYaGhiWEJzWlM1amIyMHdJQmNOTWpZeE1USTFNREV5TnpR"
                    "d1doZ1BNakV5TmpFeApNREV3TVRJM05EQmFNQll4RkRBU0JnTlZCQU1NQzJWNFlXMXdiR1V1WTI5dE1Ga3dFd1lIS29aSXpq"
                    "MENBUVlJCktvWkl6ajBEQVFjRFFnQUVaaUdTclgxSGt6cUxsWUdEYzFRWGZ0Zjd1TzNWSzNzY09FVDJUWlVUd0ZQaG8vVUoK"
                    "czh4NzU5RFN2a0JkNGNwRnBVaVd5bnJBelhIY2FVejF2MXNaMnFOVE1GRXdIUVlEVlIwT0JCWUVGRWIycnQ0MwpFaDFJOGJD"
                    "MUZaQms5UmlEMHNMQ01COEdBMVVkSXdRWU1CYUFGRWIycnQ0M0VoMUk4YkMxRlpCazlSaUQwc0xDCk1BOEdBMVVkRXdFQi93"
                    "UUZNQU1CQWY4d0NnWUlLb1pJemowRUF3SURTUUF3UmdJaEFKZFRSaFY4WGJjREJpQTkKd2o0eEFOQ1N0ZVpJVXNmeUo5WUhl"
                    "TzRQM3RxOEFpRUFrbnpKOGNvSzRRSG9vNHN6M3A4Y0hta2x4RTFLeHlqYgpsV0JLTURFaFoxdz0KLS0tLS1FTkQgQ0VSVElG"
                    "SUNBVEUtLS0tLQo="
                ),
                "tls.key": (
                    "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUxCQS8zdjRTRDNEbjBEVFhDNXhuQ1lTcExxZ0x2dyt0"
                    "SWt3aVdRZjZIbFpvQW9HQ0NxR1NNNDkKQXdFSG9VUURRZ0FFWmlHU3JYMUhrenFMbFlHRGMxUVhmdGY3dU8zVkszc2NPRVQy"
                    "VFpVVHdGUGhvL1VKczh4Nwo1OURTdmtCZDRjcEZwVWlXeW5yQXpYSGNhVXoxdjFzWjJnPT0KLS0tLS1FTkQgRUMgUFJJVkFU"
                    "RSBLRVktLS0tLQo="
                ),
            },
            "type": "kubernetes.io/tls",
        },
        id="secret-tls",
    ),
    pytest.param(
        (
            "create secret docker-registry regcred "
            "--docker-server=registry.example.com --docker-username=u --docker-password=p --docker-email=u@example.com"
        ),
        (
            "azhzAAoMCgJ2MRIGU2VjcmV0ErgBChcKB3JlZ2NyZWQSABoAIgAqADIAOABCABJ9ChEuZG9ja2VyY29uZmlnanNvbhJoeyJhdXRo"
            "cyI6eyJyZWdpc3RyeS5leGFtcGxlLmNvbSI6eyJ1c2VybmFtZSI6InUiLCJwYXNzd29yZCI6InAiLCJlbWFpbCI6InVAZXhhbXBs"
            "ZS5jb20iLCJhdXRoIjoiZFRwdyJ9fX0aHmt1YmVybmV0ZXMuaW8vZG9ja2VyY29uZmlnanNvbhoAIgA="
        ),
        {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": "regcred", "creationTimestamp": None},
            "data": {
                ".dockerconfigjson": (
                    "eyJhdXRocyI6eyJyZWdpc3RyeS5leGFtcGxlLmNvbSI6eyJ1c2VybmFtZSI6InUiLCJwYXNzd29yZCI6InAiLCJlbWFpbCI6"
                    "InVAZXhhbXBsZS5jb20iLCJhdXRoIjoiZFRwdyJ9fX0="
                )
            },
            "type": "kubernetes.io/dockerconfigjson",
        },
        id="secret-docker-registry",
    ),
    pytest.param(
        "create serviceaccount builder",
        ("azhzAAoUCgJ2MRIOU2VydmljZUFjY291bnQSGQoXCgdidWlsZGVyEgAaACIAKgAyADgAQgAaACIA"),
        {"kind": "ServiceAccount", "apiVersion": "v1", "metadata": {"name": "builder", "creationTimestamp": None}},
        id="serviceaccount",
    ),
    pytest.param(
        "create deployment web --image=nginx:1.27 --port=8080 --replicas=2",
        (
            "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50Er4BCh8KA3dlYhIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2ViEowBCAISDAoKCgNh"
            "cHASA3dlYhpyChwKABIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2ViElISNAoFbmdpbngSCm5naW54OjEuMjcqADILCgAQABiQPyIA"
            "KgBCAGoAcgCAAQCIAQCQAQCiAQAaADIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAIgIKACgAOAAaDAgAEAAYACAAKAA4ABoAIgA="
        ),
        {
            "kind": "Deployment",
            "apiVersion": "apps/v1",
            "metadata": {"name": "web", "creationTimestamp": None, "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "nginx",
                                "image": "nginx:1.27",
                                "ports": [{"containerPort": 8080}],
                                "resources": {},
                            }
                        ]
                    },
                },
                "strategy": {},
            },
            "status": {},
        },
        id="deployment",
    ),
    pytest.param(
        "create job hello --image=busybox:1.36 -- echo hi",
        (
            "azhzAAoPCghiYXRjaC92MRIDSm9iEo8BChUKBWhlbGxvEgAaACIAKgAyADgAQgASbDJqChAKABIAGgAiACoAMgA4AEIAElYSMwoF"
            "aGVsbG8SDGJ1c3lib3g6MS4zNhoEZWNobxoCaGkqAEIAagByAIABAIgBAJABAKIBABoFTmV2ZXIyAEIASgBSAFgAYABoAIIBAIoB"
            "AJoBAMIBABoIIAAoADAAOgAaACIA"
        ),
        {
            "kind": "Job",
            "apiVersion": "batch/v1",
            "metadata": {"name": "hello", "creationTimestamp": None},
            "spec": {
                "template": {
                    "metadata": {"creationTimestamp": None},
                    "spec": {
                        "containers": [
                            {"name": "hello", "image": "busybox:1.36", "command": ["echo", "hi"], "resources": {}}
                        ],
                        "restartPolicy": "Never",
                    },
                }
            },
            "status": {},
        },
        id="job",
    ),
    pytest.param(
        "create cronjob nightly --image=busybox:1.36 --schedule=@daily --restart=OnFailure -- echo hi",
        (
            "azhzAAoTCghiYXRjaC92MRIHQ3JvbkpvYhK4AQoXCgduaWdodGx5EgAaACIAKgAyADgAQgASmgEKBkBkYWlseRoAKo0BChcKB25p"
            "Z2h0bHkSABoAIgAqADIAOABCABJyMnAKEAoAEgAaACIAKgAyADgAQgASXBI1CgduaWdodGx5EgxidXN5Ym94OjEuMzYaBGVjaG8a"
            "AmhpKgBCAGoAcgCAAQCIAQCQAQCiAQAaCU9uRmFpbHVyZTIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAGgAaACIA"
        ),
        {
            "kind": "CronJob",
            "apiVersion": "batch/v1",
            "metadata": {"name": "nightly", "creationTimestamp": None},
            "spec": {
                "schedule": "@daily",
                "jobTemplate": {
                    "metadata": {"name": "nightly", "creationTimestamp": None},
                    "spec": {
                        "template": {
                            "metadata": {"creationTimestamp": None},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "nightly",
                                        "image": "busybox:1.36",
                                        "command": ["echo", "hi"],
                                        "resources": {},
                                    }
                                ],
                                "restartPolicy": "OnFailure",
                            },
                        }
                    },
                },
            },
            "status": {},
        },
        id="cronjob",
    ),
    pytest.param(
        "create job manual --from=cronjob/nightly",
        (
            "azhzAAoPCghiYXRjaC92MRIDSm9iEtUCCokBCgZtYW51YWwSABoAIgAqADIAOABCAGIrCiFjcm9uam9iLmt1YmVybmV0ZXMuaW8v"
            "aW5zdGFudGlhdGUSBm1hbnVhbGpECgdDcm9uSm9iGgduaWdodGx5IiQ2YzM3Yzc2NS01MDA1LTRhNWUtYTczMC1hN2ZlMzk4MTM4"
            "ZmIqCGJhdGNoL3YxMAESvAEyuQEKEAoAEgAaACIAKgAyADgAQgASpAESWQoHbmlnaHRseRIMYnVzeWJveDoxLjM2GgRlY2hvGgJo"
            "aSoAQgBqFC9kZXYvdGVybWluYXRpb24tbG9ncgxJZk5vdFByZXNlbnSAAQCIAQCQAQCiAQRGaWxlGglPbkZhaWx1cmUgHjIMQ2x1"
            "c3RlckZpcnN0QgBKAFIAWABgAGgAcgCCAQCKAQCaARFkZWZhdWx0LXNjaGVkdWxlcsIBAPABARoIIAAoADAAOgAaACIA"
        ),
        {
            "kind": "Job",
            "apiVersion": "batch/v1",
            "metadata": {
                "name": "manual",
                "creationTimestamp": None,
                "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "CronJob",
                        "name": "nightly",
                        "uid": "6c37c765-5005-4a5e-a730-a7fe398138fb",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "template": {
                    "metadata": {"creationTimestamp": None},
                    "spec": {
                        "containers": [
                            {
                                "name": "nightly",
                                "image": "busybox:1.36",
                                "command": ["echo", "hi"],
                                "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                                "imagePullPolicy": "IfNotPresent",
                            }
                        ],
                        "restartPolicy": "OnFailure",
                        "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst",
                        "securityContext": {},
                        "schedulerName": "default-scheduler",
                        "enableServiceLinks": True,
                    },
                }
            },
            "status": {},
        },
        id="job-from-cronjob",
    ),
    pytest.param(
        "create role reader --verb=get,list,watch --resource=pods,deployments.apps --resource-name=web",
        (
            "azhzAAokChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgRSb2xlEmUKFgoGcmVhZGVyEgAaACIAKgAyADgAQgASHwoDZ2V0"
            "CgRsaXN0CgV3YXRjaBIAGgRwb2RzIgN3ZWISKgoDZ2V0CgRsaXN0CgV3YXRjaBIEYXBwcxoLZGVwbG95bWVudHMiA3dlYhoAIgA="
        ),
        {
            "kind": "Role",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "reader", "creationTimestamp": None},
            "rules": [
                {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]},
                {
                    "verbs": ["get", "list", "watch"],
                    "apiGroups": ["apps"],
                    "resources": ["deployments"],
                    "resourceNames": ["web"],
                },
            ],
        },
        id="role",
    ),
    pytest.param(
        "create rolebinding read --role=reader --user=alice --group=devs --serviceaccount=default:builder",
        (
            "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtSb2xlQmluZGluZxK/AQoUCgRyZWFkEgAaACIAKgAyADgAQgAS"
            "KgoEVXNlchIZcmJhYy5hdXRob3JpemF0aW9uLms4cy5pbxoFYWxpY2UiABIqCgVHcm91cBIZcmJhYy5hdXRob3JpemF0aW9uLms4"
            "cy5pbxoEZGV2cyIAEiQKDlNlcnZpY2VBY2NvdW50EgAaB2J1aWxkZXIiB2RlZmF1bHQaKQoZcmJhYy5hdXRob3JpemF0aW9uLms4"
            "cy5pbxIEUm9sZRoGcmVhZGVyGgAiAA=="
        ),
        {
            "kind": "RoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "read", "creationTimestamp": None},
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
                {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        },
        id="rolebinding",
    ),
    pytest.param(
        "create rolebinding view --clusterrole=view --user=bob",
        (
            "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtSb2xlQmluZGluZxJwChQKBHZpZXcSABoAIgAqADIAOABCABIo"
            "CgRVc2VyEhlyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvGgNib2IiABouChlyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvEgtDbHVz"
            "dGVyUm9sZRoEdmlldxoAIgA="
        ),
        {
            "kind": "RoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "view", "creationTimestamp": None},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        },
        id="rolebinding-clusterrole",
    ),
    pytest.param(
        "create clusterrole node-reader --verb=get --resource=nodes --non-resource-url=/healthz",
        (
            "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtDbHVzdGVyUm9sZRI+ChsKC25vZGUtcmVhZGVyEgAaACIAKgAy"
            "ADgAQgASDgoDZ2V0EgAaBW5vZGVzEg8KA2dldCoIL2hlYWx0aHoaACIA"
        ),
        {
            "kind": "ClusterRole",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "node-reader", "creationTimestamp": None},
            "rules": [
                {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
            ],
        },
        id="clusterrole",
    ),
    pytest.param(
        "create clusterrole monitoring --aggregation-rule=rbac.example.com/aggregate-to-monitoring=true",
        (
            "azhzAAorChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEgtDbHVzdGVyUm9sZRJSChoKCm1vbml0b3JpbmcSABoAIgAqADIA"
            "OABCABo0CjIKMAoocmJhYy5leGFtcGxlLmNvbS9hZ2dyZWdhdGUtdG8tbW9uaXRvcmluZxIEdHJ1ZRoAIgA="
        ),
        {
            "kind": "ClusterRole",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "monitoring", "creationTimestamp": None},
            "rules": None,
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]
            },
        },
        id="clusterrole-aggregated",
    ),
    pytest.param(
        (
            "create clusterrolebinding node-readers "
            "--clusterrole=node-reader --user=bob --group=ops --serviceaccount=default:builder"
        ),
        (
            "azhzAAoyChxyYmFjLmF1dGhvcml6YXRpb24uazhzLmlvL3YxEhJDbHVzdGVyUm9sZUJpbmRpbmcS0AEKHAoMbm9kZS1yZWFkZXJz"
            "EgAaACIAKgAyADgAQgASKAoEVXNlchIZcmJhYy5hdXRob3JpemF0aW9uLms4cy5pbxoDYm9iIgASKQoFR3JvdXASGXJiYWMuYXV0"
            "aG9yaXphdGlvbi5rOHMuaW8aA29wcyIAEiQKDlNlcnZpY2VBY2NvdW50EgAaB2J1aWxkZXIiB2RlZmF1bHQaNQoZcmJhYy5hdXRo"
            "b3JpemF0aW9uLms4cy5pbxILQ2x1c3RlclJvbGUaC25vZGUtcmVhZGVyGgAiAA=="
        ),
        {
            "kind": "ClusterRoleBinding",
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "metadata": {"name": "node-readers", "creationTimestamp": None},
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops"},
                {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader"},
        },
        id="clusterrolebinding",
    ),
    pytest.param(
        "create poddisruptionbudget web-pdb --selector=app=web --min-available=1",
        (
            "azhzAAogCglwb2xpY3kvdjESE1BvZERpc3J1cHRpb25CdWRnZXQSPQoXCgd3ZWItcGRiEgAaACIAKgAyADgAQgASFgoGCAAQARoA"
            "EgwKCgoDYXBwEgN3ZWIaCggAGAAgACgAMAAaACIA"
        ),
        {
            "kind": "PodDisruptionBudget",
            "apiVersion": "policy/v1",
            "metadata": {"name": "web-pdb", "creationTimestamp": None},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
        },
        id="poddisruptionbudget",
    ),
    pytest.param(
        "create poddisruptionbudget web-pdb-pct --selector=app=web --max-unavailable=50%",
        (
            "azhzAAogCglwb2xpY3kvdjESE1BvZERpc3J1cHRpb25CdWRnZXQSRAobCgt3ZWItcGRiLXBjdBIAGgAiACoAMgA4AEIAEhkSDAoK"
            "CgNhcHASA3dlYhoJCAEQABoDNTAlGgoIABgAIAAoADAAGgAiAA=="
        ),
        {
            "kind": "PodDisruptionBudget",
            "apiVersion": "policy/v1",
            "metadata": {"name": "web-pdb-pct", "creationTimestamp": None},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "50%"},
            "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
        },
        id="poddisruptionbudget-percent",
    ),
    pytest.param(
        "create priorityclass high --value=1000 --description=important --preemption-policy=Never",
        (
            "azhzAAolChRzY2hlZHVsaW5nLms4cy5pby92MRINUHJpb3JpdHlDbGFzcxItChQKBGhpZ2gSABoAIgAqADIAOABCABDoBxgAIglp"
            "bXBvcnRhbnQqBU5ldmVyGgAiAA=="
        ),
        {
            "kind": "PriorityClass",
            "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": "high", "creationTimestamp": None},
            "value": 1000,
            "description": "important",
            "preemptionPolicy": "Never",
        },
        id="priorityclass",
    ),
    pytest.param(
        "create priorityclass zero --value=0",
        (
            "azhzAAolChRzY2hlZHVsaW5nLms4cy5pby92MRINUHJpb3JpdHlDbGFzcxIyChQKBHplcm8SABoAIgAqADIAOABCABAAGAAiACoU"
            "UHJlZW1wdExvd2VyUHJpb3JpdHkaACIA"
        ),
        {
            "kind": "PriorityClass",
            "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": "zero", "creationTimestamp": None},
            "value": 0,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        id="priorityclass-zero",
    ),
    pytest.param(
        "create quota compute --hard=cpu=1,memory=1Gi,pods=2",
        (
            "azhzAAoTCgJ2MRINUmVzb3VyY2VRdW90YRJHChcKB2NvbXB1dGUSABoAIgAqADIAOABCABIqCgoKA2NwdRIDCgExCg8KBm1lbW9y"
            "eRIFCgMxR2kKCwoEcG9kcxIDCgEyGgAaACIA"
        ),
        {
            "kind": "ResourceQuota",
            "apiVersion": "v1",
            "metadata": {"name": "compute", "creationTimestamp": None},
            "spec": {"hard": {"cpu": "1", "memory": "1Gi", "pods": "2"}},
            "status": {},
        },
        id="quota",
    ),
    pytest.param(
        "create quota best-effort --hard=pods=4 --scopes=BestEffort",
        (
            "azhzAAoTCgJ2MRINUmVzb3VyY2VRdW90YRI6ChsKC2Jlc3QtZWZmb3J0EgAaACIAKgAyADgAQgASGQoLCgRwb2RzEgMKATQSCkJl"
            "c3RFZmZvcnQaABoAIgA="
        ),
        {
            "kind": "ResourceQuota",
            "apiVersion": "v1",
            "metadata": {"name": "best-effort", "creationTimestamp": None},
            "spec": {"hard": {"pods": "4"}, "scopes": ["BestEffort"]},
            "status": {},
        },
        id="quota-scoped",
    ),
    pytest.param(
        (
            "create ingress web "
            "--class=nginx --rule=foo.com/bar=svc1:8080,tls=web-tls --default-backend=defsvc:http --annotation=a=b"
        ),
        (
            "azhzAAofChRuZXR3b3JraW5nLms4cy5pby92MRIHSW5ncmVzcxKDAQobCgN3ZWISABoAIgAqADIAOABCAGIGCgFhEgFiEmAKFCIS"
            "CgZkZWZzdmMSCAoEaHR0cBAAEhIKB2Zvby5jb20SB3dlYi10bHMaLQoHZm9vLmNvbRIiCiAKHgoEL2JhchIPIg0KBHN2YzESBQoA"
            "EJA/GgVFeGFjdCIFbmdpbngaAgoAGgAiAA=="
        ),
        {
            "kind": "Ingress",
            "apiVersion": "networking.k8s.io/v1",
            "metadata": {"name": "web", "creationTimestamp": None, "annotations": {"a": "b"}},
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"service": {"name": "defsvc", "port": {"name": "http"}}},
                "tls": [{"hosts": ["foo.com"], "secretName": "web-tls"}],
                "rules": [
                    {
                        "host": "foo.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/bar",
                                    "pathType": "Exact",
                                    "backend": {"service": {"name": "svc1", "port": {"number": 8080}}},
                                }
                            ]
                        },
                    }
                ],
            },
            "status": {"loadBalancer": {}},
        },
        id="ingress",
    ),
    pytest.param(
        "create ingress simple --rule=/path*=svc2:80",
        (
            "azhzAAofChRuZXR3b3JraW5nLms4cy5pby92MRIHSW5ncmVzcxJHChYKBnNpbXBsZRIAGgAiACoAMgA4AEIAEikaJwoAEiMKIQof"
            "CgUvcGF0aBIOIgwKBHN2YzISBAoAEFAaBlByZWZpeBoCCgAaACIA"
        ),
        {
            "kind": "Ingress",
            "apiVersion": "networking.k8s.io/v1",
            "metadata": {"name": "simple", "creationTimestamp": None},
            "spec": {
                "rules": [
                    {
                        "http": {
                            "paths": [
                                {
                                    "path": "/path",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "svc2", "port": {"number": 80}}},
                                }
                            ]
                        }
                    }
                ]
            },
            "status": {"loadBalancer": {}},
        },
        id="ingress-prefix",
    ),
    pytest.param(
        "autoscale deployment web --min=2 --max=5 --cpu-percent=80",
        (
            "azhzAAopCg5hdXRvc2NhbGluZy92MRIXSG9yaXpvbnRhbFBvZEF1dG9zY2FsZXISPwoTCgN3ZWISABoAIgAqADIAOABCABIiChoK"
            "CkRlcGxveW1lbnQSA3dlYhoHYXBwcy92MRACGAUgUBoEGAAgABoAIgA="
        ),
        {
            "kind": "HorizontalPodAutoscaler",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web", "creationTimestamp": None},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 80,
            },
            "status": {"currentReplicas": 0, "desiredReplicas": 0},
        },
        id="autoscale",
    ),
]


@pytest.mark.parametrize(("command", "body", "expected"), GENERATORS)
def test_generator_bodies_decode_to_their_dry_run_json(command: str, body: str, expected: dict[str, Any]) -> None:
    assert decode(base64.b64decode(body)) == expected


OTHERS = {
    "token": (
        "create token builder",
        ("azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBIaChAKABIAGgAiACoAMgA4AEIAEgAaBAoAEgAaACIA"),
    ),
    "token-options": (
        (
            "create token builder --duration=10m "
            "--audience=api --audience=vault --bound-object-kind=Pod --bound-object-name=p1 --bound-object-uid=u1"
        ),
        (
            "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBI8ChAKABIAGgAiACoAMgA4AEIAEiIKA2FwaQoF"
            "dmF1bHQaEQoDUG9kEgJ2MRoCcDEiAnUxINgEGgQKABIAGgAiAA=="
        ),
    ),
    "auth-can-i": (
        "auth can-i get pods --subresource=log -n kube-system",
        (
            "azhzAAoyChdhdXRob3JpemF0aW9uLms4cy5pby92MRIXU2VsZlN1YmplY3RBY2Nlc3NSZXZpZXcSQwoQCgASABoAIgAqADIAOABC"
            "ABIlCiMKC2t1YmUtc3lzdGVtEgNnZXQaACIAKgRwb2RzMgNsb2c6ABoICAASABoAIAAaACIA"
        ),
    ),
    "auth-can-i-non-resource": (
        "auth can-i get /logs",
        (
            "azhzAAoyChdhdXRob3JpemF0aW9uLms4cy5pby92MRIXU2VsZlN1YmplY3RBY2Nlc3NSZXZpZXcSLAoQCgASABoAIgAqADIAOABC"
            "ABIOEgwKBS9sb2dzEgNnZXQaCAgAEgAaACAAGgAiAA=="
        ),
    ),
    "auth-can-i-list": (
        "auth can-i --list -n kube-system",
        (
            "azhzAAoxChdhdXRob3JpemF0aW9uLms4cy5pby92MRIWU2VsZlN1YmplY3RSdWxlc1JldmlldxInChAKABIAGgAiACoAMgA4AEIA"
            "Eg0KC2t1YmUtc3lzdGVtGgQYACIAGgAiAA=="
        ),
    ),
    "auth-whoami": (
        "auth whoami",
        (
            "azhzAAotChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESEVNlbGZTdWJqZWN0UmV2aWV3EhoKEAoAEgAaACIAKgAyADgAQgASBgoE"
            "CgASABoAIgA="
        ),
    ),
    "certificate-approve": (
        "certificate approve alice",
        (
            "azhzAAozChZjZXJ0aWZpY2F0ZXMuazhzLmlvL3YxEhlDZXJ0aWZpY2F0ZVNpZ25pbmdSZXF1ZXN0Et8ECkMKBWFsaWNlEgAaACIA"
            "KiQzNmY2Njk2MC04NjI5LTQyZGQtOTg2OS1iMWEyODQwMDBiMjYyAjQyOABCCAjY85jYBhAAErADCvMCLS0tLS1CRUdJTiBDRVJU"
            "SUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIYU1JR0JBZ0VBTUI4eERqQU1CZ05WQkFNTUJXRnNhV05sTVEwd0N3WURWUVFLREFSa1pY"
            "WnpNRmt3RXdZSApLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFWmlHU3JYMUhrenFMbFlHRGMxUVhmdGY3dU8zVkszc2NPRVQy"
            "ClRaVVR3RlBoby9VSnM4eDc1OURTdmtCZDRjcEZwVWlXeW5yQXpYSGNhVXoxdjFzWjJxQUFNQW9HQ0NxR1NNNDkKQkFNQ0EwZ0FN"
            "RVVDSVFDcno4TGlGcUNZUklITHlGNVpOWURxeW5EUmZJaWxybUZzS1hCcmVKYXl5QUlnY0N2Nwp1TGoxb2hiT3RTZ2REVUdyUW1D"
            "Yi9VSTFEajlFSDFwbEt0cTV1L3M9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQoSABoAKgtjbGllbnQgYXV0aDoj"
            "a3ViZXJuZXRlcy5pby9rdWJlLWFwaXNlcnZlci1jbGllbnRAgKMFGmUKYwoIQXBwcm92ZWQSDkt1YmVjdGxBcHByb3ZlGjVUaGlz"
            "IENTUiB3YXMgYXBwcm92ZWQgYnkga3ViZWN0bCBjZXJ0aWZpY2F0ZSBhcHByb3ZlLiIICNnzmNgGEAAqADIEVHJ1ZRoAIgA="
        ),
    ),
    "drain": ("drain n1 --force --grace-period=5", ("azhzAAoTCgJ2MRINRGVsZXRlT3B0aW9ucxICCAUaACIA")),
}


CSR_PEM = b"""-----BEGIN CERTIFICATE REQUEST-----
MIHaMIGBAgEAMB8xDjAMBgNVBAMMBWFsaWNlMQ0wCwYDVQQKDARkZXZzMFkwEwYH
KoZIzj0CAQYIKoZIzj0DAQcDQgAEZiGSrX1HkzqLlYGDc1QXftf7uO3VK3scOET2
TZUTwFPho/UJs8x759DSvkBd4cpFpUiWynrAzXHcaUz1v1sZ2qAAMAoGCCqGSM49
BAMCA0gAMEUCIQCrz8LiFqCYRIHLyF5ZNYDqynDRfIilrmFsKXBreJayyAIgcCv7
uLj1ohbOtSgdDUGrQmCb/UI1Dj9EH1plKtq5u/s=
-----END CERTIFICATE REQUEST-----
"""

_NO_META = {"creationTimestamp": None}
OTHERS_JSON: dict[str, dict[str, Any]] = {
    # TokenRequestSpec.audiences is `json:"audiences"` (null when nil); TokenRequestStatus has no omitempty.
    "token": {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": _NO_META,
        "spec": {"audiences": None},
        "status": {"token": "", "expirationTimestamp": None},
    },
    "token-options": {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": _NO_META,
        "spec": {
            "audiences": ["api", "vault"],
            "expirationSeconds": 600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p1", "uid": "u1"},
        },
        "status": {"token": "", "expirationTimestamp": None},
    },
    # SubjectAccessReviewStatus.allowed is `json:"allowed"`; the rest of the status is omitempty.
    "auth-can-i": {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": _NO_META,
        "spec": {
            "resourceAttributes": {"namespace": "kube-system", "verb": "get", "resource": "pods", "subresource": "log"},
        },
        "status": {"allowed": False},
    },
    "auth-can-i-non-resource": {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": _NO_META,
        "spec": {"nonResourceAttributes": {"path": "/logs", "verb": "get"}},
        "status": {"allowed": False},
    },
    # SubjectRulesReviewStatus: resourceRules, nonResourceRules and incomplete have no omitempty.
    "auth-can-i-list": {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": _NO_META,
        "spec": {"namespace": "kube-system"},
        "status": {"resourceRules": None, "nonResourceRules": None, "incomplete": False},
    },
    "auth-whoami": {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": _NO_META,
        "status": {"userInfo": {}},
    },
    # The CSR as kubectl read it back (JSON), with the condition it adds; PUT to .../approval.
    "certificate-approve": {
        "kind": "CertificateSigningRequest",
        "apiVersion": "certificates.k8s.io/v1",
        "metadata": {
            "name": "alice",
            "uid": "36f66960-8629-42dd-9869-b1a284000b26",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-25T01:28:56Z",
        },
        "spec": {
            "request": base64.b64encode(CSR_PEM).decode(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "expirationSeconds": 86400,
            "usages": ["client auth"],
        },
        "status": {
            "conditions": [
                {
                    "type": "Approved",
                    "status": "True",
                    "reason": "KubectlApprove",
                    "message": "This CSR was approved by kubectl certificate approve.",
                    "lastUpdateTime": "2026-11-25T01:28:57Z",
                    "lastTransitionTime": None,
                }
            ],
        },
    },
    # drain falls back to deleting the pod when the server has no pods/eviction: DeleteOptions in v1.
    "drain": {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5},
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_other_kubectl_bodies_decode_to_their_json(name: str) -> None:
    _command, body = OTHERS[name]
    assert decode(base64.b64decode(body)) == OTHERS_JSON[name]
