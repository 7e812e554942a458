"""Server-side printing: Table columns and cells as upstream's printers.go produces them.

Several pod vectors are ports of upstream ``TestPrintPod*`` cases (pkg/printers/internalversion
printers_test.go), rewritten as v1 JSON.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tinykube.api.resources import RESOURCES, ResourceInfo, by_path
from tinykube.apiserver.kinds.printers import PRINTERS, table
from tinykube.apiserver.printing.cells import human_duration

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
YEAR = 365 * DAY


def ago(seconds: float) -> str:
    """An RFC 3339 timestamp ``seconds`` before NOW (negative: in the future)."""
    stamp = NOW - timedelta(seconds=seconds)
    if stamp.microsecond:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def resource(plural: str, group: str = "") -> ResourceInfo:
    info = by_path(group, "v1", plural)
    assert info is not None
    return info


def cells(plural: str, obj: dict[str, Any], group: str = "") -> list[Any]:
    result = table(resource(plural, group), [obj], now=NOW)
    rows: list[dict[str, Any]] = result["rows"]
    assert len(rows) == 1
    row_cells: list[Any] = rows[0]["cells"]
    return row_cells


def meta(name: str, age: float | None = 300, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}", **extra}
    if age is not None:
        metadata["creationTimestamp"] = ago(age)
    return metadata


# ---------------------------------------------------------------------------------------------
# human_duration: the vectors of apimachinery's duration_test.go
# ---------------------------------------------------------------------------------------------

MS = 0.001


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(-2, "<invalid>", id="2s-future-invalid"),
        pytest.param(-2 + 1e-9, "0s", id="just-under-2s-future"),
        pytest.param(-1, "0s", id="1s-future-skew"),
        pytest.param(0, "0s", id="zero"),
        pytest.param(1 - MS, "0s", id="under-1s"),
        pytest.param(1, "1s", id="1s"),
        pytest.param(45, "45s", id="45s"),
        pytest.param(70, "70s", id="70s"),
        pytest.param(2 * MINUTE - MS, "119s", id="under-2m"),
        pytest.param(2 * MINUTE, "2m", id="2m"),
        pytest.param(2 * MINUTE + 1, "2m1s", id="2m1s"),
        pytest.param(190, "3m10s", id="3m10s"),
        pytest.param(5 * MINUTE, "5m", id="5m"),
        pytest.param(5 * MINUTE + 30, "5m30s", id="5m30s"),
        pytest.param(10 * MINUTE - MS, "9m59s", id="under-10m"),
        pytest.param(10 * MINUTE, "10m", id="10m"),
        pytest.param(10 * MINUTE + 1, "10m", id="10m1s-drops-seconds"),
        pytest.param(70 * MINUTE, "70m", id="70m"),
        pytest.param(3 * HOUR - MS, "179m", id="under-3h"),
        pytest.param(3 * HOUR, "3h", id="3h"),
        pytest.param(3 * HOUR + MINUTE, "3h1m", id="3h1m"),
        pytest.param(8 * HOUR - MS, "7h59m", id="under-8h"),
        pytest.param(8 * HOUR, "8h", id="8h"),
        pytest.param(8 * HOUR + 59 * MINUTE, "8h", id="8h59m-drops-minutes"),
        pytest.param(47 * HOUR, "47h", id="47h"),
        pytest.param(2 * DAY - MS, "47h", id="under-2d"),
        pytest.param(2 * DAY, "2d", id="2d"),
        pytest.param(49 * HOUR, "2d1h", id="2d1h"),
        pytest.param(8 * DAY - MS, "7d23h", id="under-8d"),
        pytest.param(8 * DAY, "8d", id="8d"),
        pytest.param(8 * DAY + 23 * HOUR, "8d", id="8d23h-drops-hours"),
        pytest.param(367 * DAY, "367d", id="367d"),
        pytest.param(2 * YEAR - MS, "729d", id="under-2y"),
        pytest.param(2 * YEAR, "2y", id="2y"),
        pytest.param(2 * YEAR + DAY - MS, "2y", id="2y-under-1d"),
        pytest.param(2 * YEAR + DAY, "2y1d", id="2y1d"),
        pytest.param(2 * YEAR + 25 * HOUR, "2y1d", id="2y1d1h"),
        pytest.param(8 * YEAR - MS, "7y364d", id="under-8y"),
        pytest.param(8 * YEAR, "8y", id="8y"),
        pytest.param(8 * YEAR + 364 * DAY, "8y", id="8y364d-drops-days"),
        pytest.param(9 * YEAR, "9y", id="9y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param({"name": "x"}, "<unknown>", id="no-timestamp"),
        pytest.param({"name": "x", "creationTimestamp": None}, "<unknown>", id="null-timestamp"),
        pytest.param({"name": "x", "creationTimestamp": ago(-1)}, "0s", id="1s-future"),
        pytest.param({"name": "x", "creationTimestamp": ago(-60)}, "<invalid>", id="1m-future"),
        pytest.param({"name": "x", "creationTimestamp": "2024-05-01T11:54:30+00:00"}, "5m30s", id="offset-form"),
    ],
)
def test_age_cell(metadata: dict[str, Any], expected: str) -> None:
    assert cells("namespaces", {"metadata": metadata, "status": {"phase": "Active"}})[2] == expected


# ---------------------------------------------------------------------------------------------
# Column definitions
# ---------------------------------------------------------------------------------------------

# (name, priority) as upstream AddHandlers declares them.
EXPECTED_COLUMNS: dict[str, list[tuple[str, int]]] = {
    "services": [
        ("Name", 0),
        ("Type", 0),
        ("Cluster-IP", 0),
        ("External-IP", 0),
        ("Port(s)", 0),
        ("Age", 0),
        ("Selector", 1),
    ],
    "pods": [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ],
    "endpoints": [("Name", 0), ("Endpoints", 0), ("Age", 0)],
    "deployments": [
        ("Name", 0),
        ("Ready", 0),
        ("Up-to-date", 0),
        ("Available", 0),
        ("Age", 0),
        ("Containers", 1),
        ("Images", 1),
        ("Selector", 1),
    ],
    "replicasets": [
        ("Name", 0),
        ("Desired", 0),
        ("Current", 0),
        ("Ready", 0),
        ("Age", 0),
        ("Containers", 1),
        ("Images", 1),
        ("Selector", 1),
    ],
    "endpointslices": [("Name", 0), ("AddressType", 0), ("Ports", 0), ("Endpoints", 0), ("Age", 0)],
    "nodes": [
        ("Name", 0),
        ("Status", 0),
        ("Roles", 0),
        ("Age", 0),
        ("Version", 0),
        ("Internal-IP", 1),
        ("External-IP", 1),
        ("OS-Image", 1),
        ("Kernel-Version", 1),
        ("Container-Runtime", 1),
    ],
    "namespaces": [("Name", 0), ("Status", 0), ("Age", 0)],
    "events": [
        ("Last Seen", 0),
        ("Type", 0),
        ("Reason", 0),
        ("Object", 0),
        ("Subobject", 1),
        ("Source", 1),
        ("Message", 0),
        ("First Seen", 1),
        ("Count", 1),
        ("Name", 1),
    ],
}


@pytest.mark.parametrize(
    "info",
    [pytest.param(r, id=r.plural) for r in RESOURCES if r.plural in EXPECTED_COLUMNS and r.group != "metrics.k8s.io"],
)
def test_columns_as_upstream(info: ResourceInfo) -> None:
    """The first kinds' columns; the other families' are checked in their own test modules (test_kinds_*.py)."""
    result = table(info, [], now=NOW)
    columns = result["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in columns] == EXPECTED_COLUMNS[info.plural]
    for column in columns:
        assert set(column) == {"name", "type", "format", "description", "priority"}
        assert column["description"], column["name"]
        assert column["format"] == ("name" if column["name"] == "Name" else "")
    assert result["rows"] == []


# Upstream registers no table convertor for the review kinds (roles and clusterroles have one, of the default
# NAME / CREATED AT columns).
# the reviews, and CRDs (whose registry in apiextensions-apiserver 1.32 has no table convertor of its own)
DEFAULT_TABLE = {r.plural for r in RESOURCES if r.verbs == ("create",)} | {"customresourcedefinitions"}


def test_every_served_resource_has_a_printer_as_upstream() -> None:
    assert {r.plural for r in RESOURCES} - set(PRINTERS) == DEFAULT_TABLE


def test_column_types() -> None:
    pods = {c["name"]: c["type"] for c in table(resource("pods"), [])["columnDefinitions"]}
    assert pods["Restarts"] == "string"  # upstream changed it from integer when "(5m ago)" arrived
    assert pods["Age"] == "string"
    assert all(c["type"] == "string" for c in table(resource("events"), [])["columnDefinitions"])


# ---------------------------------------------------------------------------------------------
# Services
# ---------------------------------------------------------------------------------------------


def svc(spec: dict[str, Any], status: dict[str, Any] | None = None, name: str = "web") -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": meta(name), "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


TCP80 = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            svc(
                {
                    "type": "ClusterIP",
                    "clusterIP": "10.0.0.10",
                    "clusterIPs": ["10.0.0.10"],
                    "ports": [TCP80],
                    "selector": {"tier": "front", "app": "web"},
                }
            ),
            ["web", "ClusterIP", "10.0.0.10", "<none>", "80/TCP", "5m", "app=web,tier=front"],
            id="clusterip-sorted-selector",
        ),
        pytest.param(
            svc({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "ports": [TCP80]}),
            ["web", "ClusterIP", "None", "<none>", "80/TCP", "5m", "<none>"],
            id="headless",
        ),
        pytest.param(
            svc({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "selector": {"app": "db"}}),
            ["web", "ClusterIP", "None", "<none>", "<none>", "5m", "app=db"],
            id="headless-no-ports",
        ),
        pytest.param(
            svc({"clusterIP": "10.0.0.11", "ports": [{"port": 53, "protocol": "UDP"}]}),
            ["web", "ClusterIP", "10.0.0.11", "<none>", "53/UDP", "5m", "<none>"],
            id="defaults-type-and-clusterip-singular",
        ),
        pytest.param(
            svc({"type": "ClusterIP", "clusterIPs": ["10.0.0.12"], "ports": [{"port": 8080}]}),
            ["web", "ClusterIP", "10.0.0.12", "<none>", "8080/TCP", "5m", "<none>"],
            id="protocol-defaults-tcp",
        ),
        pytest.param(
            svc(
                {
                    "type": "ClusterIP",
                    "clusterIPs": ["10.0.0.13"],
                    "externalIPs": ["192.0.2.1", "192.0.2.2"],
                    "ports": [TCP80],
                }
            ),
            ["web", "ClusterIP", "10.0.0.13", "192.0.2.1,192.0.2.2", "80/TCP", "5m", "<none>"],
            id="clusterip-external-ips",
        ),
        pytest.param(
            svc(
                {
                    "type": "NodePort",
                    "clusterIPs": ["10.0.0.14"],
                    "ports": [
                        {"port": 80, "nodePort": 30080, "protocol": "TCP"},
                        {"port": 443, "nodePort": 30443, "protocol": "TCP"},
                    ],
                    "selector": {"app": "web"},
                }
            ),
            ["web", "NodePort", "10.0.0.14", "<none>", "80:30080/TCP,443:30443/TCP", "5m", "app=web"],
            id="nodeport",
        ),
        pytest.param(
            svc({"type": "NodePort", "clusterIPs": ["10.0.0.15"], "externalIPs": ["192.0.2.9"], "ports": []}),
            ["web", "NodePort", "10.0.0.15", "192.0.2.9", "<none>", "5m", "<none>"],
            id="nodeport-external-ip-no-ports",
        ),
        pytest.param(
            svc(
                {
                    "type": "LoadBalancer",
                    "clusterIPs": ["10.0.0.16"],
                    "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}],
                },
                {"loadBalancer": {}},
            ),
            ["web", "LoadBalancer", "10.0.0.16", "<pending>", "80:31000/TCP", "5m", "<none>"],
            id="loadbalancer-pending",
        ),
        pytest.param(
            svc(
                {"type": "LoadBalancer", "clusterIPs": ["1.5.6.7"], "ports": [TCP80]},
                {
                    "loadBalancer": {
                        "ingress": [
                            {"ip": "3.4.5.6"},
                            {"ip": "2.3.4.5"},
                            {"ip": "5.6.7.8", "hostname": "host5678"},
                            {"hostname": "lb.example.com"},
                            {"ip": "2.3.4.5"},
                        ]
                    }
                },
            ),
            # Sorted, de-duplicated, IP preferred over hostname, never clipped (server prints wide).
            [
                "web",
                "LoadBalancer",
                "1.5.6.7",
                "2.3.4.5,3.4.5.6,5.6.7.8,lb.example.com",
                "80/TCP",
                "5m",
                "<none>",
            ],
            id="loadbalancer-ingress",
        ),
        pytest.param(
            svc(
                {
                    "type": "LoadBalancer",
                    "clusterIPs": ["10.0.0.17"],
                    "externalIPs": ["192.0.2.50"],
                    "ports": [TCP80],
                },
                {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}},
            ),
            ["web", "LoadBalancer", "10.0.0.17", "203.0.113.7,192.0.2.50", "80/TCP", "5m", "<none>"],
            id="loadbalancer-ingress-plus-external-ips",
        ),
        pytest.param(
            svc({"type": "LoadBalancer", "clusterIPs": ["10.0.0.18"], "externalIPs": ["192.0.2.51"]}),
            ["web", "LoadBalancer", "10.0.0.18", "192.0.2.51", "<none>", "5m", "<none>"],
            id="loadbalancer-external-ips-only",
        ),
        pytest.param(
            svc(
                {
                    "type": "LoadBalancer",
                    "clusterIPs": ["1.3.4.5"],
                    "ports": [
                        {"port": 80, "protocol": "TCP"},
                        {"port": 8090, "protocol": "UDP"},
                        {"port": 8000, "protocol": "TCP"},
                        {"port": 7777, "protocol": "SCTP"},
                    ],
                }
            ),
            [
                "web",
                "LoadBalancer",
                "1.3.4.5",
                "<pending>",
                "80/TCP,8090/UDP,8000/TCP,7777/SCTP",
                "5m",
                "<none>",
            ],
            id="multi-port-multi-protocol",
        ),
        pytest.param(
            svc({"type": "ExternalName", "externalName": "db.example.com"}),
            ["web", "ExternalName", "<none>", "db.example.com", "<none>", "5m", "<none>"],
            id="externalname",
        ),
        pytest.param(
            svc(
                {
                    "type": "ClusterIP",
                    "clusterIP": "10.0.0.19",
                    "clusterIPs": ["10.0.0.19", "fd00::19"],
                    "ipFamilies": ["IPv4", "IPv6"],
                    "ports": [TCP80],
                }
            ),
            ["web", "ClusterIP", "10.0.0.19", "<none>", "80/TCP", "5m", "<none>"],
            id="dual-stack-shows-primary",
        ),
    ],
)
def test_service_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("services", obj) == expected


# ---------------------------------------------------------------------------------------------
# Pods
# ---------------------------------------------------------------------------------------------


def pod(
    status: dict[str, Any],
    *,
    containers: int = 1,
    init: list[dict[str, Any]] | None = None,
    name: str = "web-0",
    age: float | None = 300,
    deleting: bool = False,
    **spec_extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)],
        **spec_extra,
    }
    if init is not None:
        spec["initContainers"] = init
    metadata = meta(name, age)
    if deleting:
        metadata["deletionTimestamp"] = ago(10)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


RUNNING = {"running": {"startedAt": ago(290)}}


def cs(name: str = "c0", *, ready: bool = False, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    """A v1 ContainerStatus."""
    return {"name": name, "ready": ready, "restartCount": restarts, "image": "nginx", **extra}


def last_terminated(seconds_ago: float) -> dict[str, Any]:
    return {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(seconds_ago)}}


SIDECAR = {"restartPolicy": "Always", "image": "envoy"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "podIP": "10.244.1.5",
                    "podIPs": [{"ip": "10.244.1.5"}, {"ip": "fd00::5"}],
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [cs(ready=True, state=RUNNING, started=True)],
                },
                nodeName="node-a",
            ),
            ["web-0", "1/1", "Running", "0", "5m", "10.244.1.5", "node-a", "<none>", "<none>"],
            id="running",
        ),
        pytest.param(
            pod({"phase": "Pending"}, containers=2, age=10),
            ["web-0", "0/2", "Pending", "0", "10s", "<none>", "<none>", "<none>", "<none>"],
            id="pending-unscheduled",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "containerStatuses": [cs(state={"waiting": {"reason": "ContainerCreating"}})],
                },
                nodeName="node-a",
                age=4,
            ),
            ["web-0", "0/1", "ContainerCreating", "0", "4s", "<none>", "node-a", "<none>", "<none>"],
            id="container-creating",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "podIPs": [{"ip": "10.244.1.6"}],
                    "containerStatuses": [
                        cs(
                            restarts=5,
                            state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
                            lastState=last_terminated(5 * MINUTE),
                        )
                    ],
                },
                nodeName="node-a",
                age=HOUR,
            ),
            [
                "web-0",
                "0/1",
                "CrashLoopBackOff",
                "5 (5m ago)",
                "60m",
                "10.244.1.6",
                "node-a",
                "<none>",
                "<none>",
            ],
            id="crashloop-with-last-restart",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [cs(ready=True, restarts=2, state=RUNNING)],
                }
            ),
            ["web-0", "1/1", "Running", "2", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="restarts-without-last-state",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Failed",
                    "containerStatuses": [cs(state={"terminated": {"exitCode": 1, "reason": "Error"}})],
                }
            ),
            ["web-0", "0/1", "Error", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="failed-error",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [cs(state={"terminated": {"exitCode": 137}})],
                }
            ),
            ["web-0", "0/1", "ExitCode:137", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="terminated-without-reason-exit-code",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [cs(state={"terminated": {"exitCode": 0, "signal": 9}})],
                }
            ),
            ["web-0", "0/1", "Signal:9", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="terminated-without-reason-signal",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Succeeded",
                    "containerStatuses": [
                        cs(state={"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": ago(60)}})
                    ],
                }
            ),
            ["web-0", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="completed",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        cs(
                            "c0",
                            ready=True,
                            restarts=3,
                            state={"terminated": {"exitCode": 0, "reason": "Completed"}},
                        ),
                        cs("c1", ready=True, restarts=3, state=RUNNING),
                    ],
                },
                containers=2,
            ),
            ["web-0", "1/2", "NotReady", "6", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test6-completed-plus-running-not-ready",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [
                        cs(
                            "c0",
                            ready=True,
                            restarts=3,
                            state={"terminated": {"exitCode": 0, "reason": "Completed"}},
                        ),
                        cs("c1", ready=True, restarts=3, state=RUNNING),
                    ],
                },
                containers=2,
            ),
            ["web-0", "1/2", "Running", "6", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test6-completed-plus-running-ready",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        cs("c0", state={"waiting": {"reason": "ContainerWaitingReason"}}, restarts=3),
                        cs("c1", state={"terminated": {"exitCode": 2, "reason": "ContainerTerminatedReason"}}),
                    ],
                },
                containers=2,
            ),
            ["web-0", "0/2", "ContainerWaitingReason", "3", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test3-first-container-wins",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        cs("c0", ready=True, restarts=6, state=RUNNING, lastState=last_terminated(5 * DAY)),
                        cs("c1", ready=True, restarts=3, state=RUNNING, lastState=last_terminated(20 * DAY)),
                    ],
                },
                containers=2,
            ),
            ["web-0", "2/2", "Running", "9 (5d ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test14-latest-restart-wins",
        ),
        pytest.param(
            pod(
                {"phase": "Running", "containerStatuses": [cs(ready=True, state=RUNNING)]},
                deleting=True,
            ),
            ["web-0", "1/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="terminating",
        ),
        pytest.param(
            pod({"phase": "Pending"}, deleting=True),
            ["web-0", "0/1", "Terminating", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="terminating-pending",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Succeeded",
                    "containerStatuses": [cs(state={"terminated": {"exitCode": 0, "reason": "Completed"}})],
                },
                deleting=True,
            ),
            ["web-0", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="deleted-but-terminal-keeps-phase",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "reason": "NodeLost",
                    "containerStatuses": [cs(ready=True, state=RUNNING)],
                },
                deleting=True,
            ),
            ["web-0", "1/1", "Unknown", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="node-lost",
        ),
        pytest.param(
            pod({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
            ["web-0", "0/1", "Evicted", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="evicted-pod-reason",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
                },
                containers=2,
            ),
            ["web-0", "0/2", "SchedulingGated", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="scheduling-gated",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs("init-a", restarts=3, state=RUNNING, lastState=last_terminated(10)),
                        cs("init-b", state={"waiting": {"reason": "PodInitializing"}}),
                    ],
                    "containerStatuses": [cs(state={"waiting": {"reason": "PodInitializing"}})],
                },
                init=[{"name": "init-a"}, {"name": "init-b"}],
            ),
            ["web-0", "0/1", "Init:0/2", "3 (10s ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test8-init-running",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs(
                            "init-a",
                            restarts=2,
                            state={"terminated": {"exitCode": 0}},
                            lastState=last_terminated(120),
                        ),
                        cs("init-b", restarts=3, state=RUNNING, lastState=last_terminated(10)),
                    ],
                    "containerStatuses": [cs(state={"waiting": {}})],
                },
                init=[{"name": "init-a"}, {"name": "init-b"}],
            ),
            ["web-0", "0/1", "Init:1/2", "5 (10s ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test10-second-init-running",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        cs("init-a", restarts=4, state={"waiting": {"reason": "CrashLoopBackOff"}}),
                    ],
                },
                init=[{"name": "init-a"}],
            ),
            ["web-0", "0/1", "Init:CrashLoopBackOff", "4", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="init-crashloop",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [cs("init-a", state={"terminated": {"exitCode": 1, "reason": "Error"}})],
                },
                init=[{"name": "init-a"}],
            ),
            ["web-0", "0/1", "Init:Error", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="init-error",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [cs("init-a", state={"terminated": {"exitCode": 3}})],
                },
                init=[{"name": "init-a"}],
            ),
            ["web-0", "0/1", "Init:ExitCode:3", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="init-exit-code",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "initContainerStatuses": [
                        cs(
                            "init-a",
                            restarts=2,
                            state={"terminated": {"exitCode": 0}},
                            lastState=last_terminated(120),
                        ),
                    ],
                    "containerStatuses": [cs(restarts=4, state=RUNNING, lastState=last_terminated(20))],
                },
                init=[{"name": "init-a"}],
            ),
            ["web-0", "0/1", "Running", "4 (20s ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-test11-init-restarts-not-counted-after-init",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [{"type": "Initialized", "status": "True"}],
                    "initContainerStatuses": [
                        cs("proxy", restarts=3, state=RUNNING, started=True, lastState=last_terminated(10)),
                        cs("logs", state=RUNNING, started=True),
                    ],
                    "containerStatuses": [cs(ready=True, restarts=4, state=RUNNING, lastState=last_terminated(20))],
                },
                init=[{"name": "proxy", **SIDECAR}, {"name": "logs", **SIDECAR}],
            ),
            ["web-0", "1/3", "Running", "7 (10s ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-sidecars-started",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [{"type": "Initialized", "status": "True"}],
                    "initContainerStatuses": [cs("proxy", ready=True, state=RUNNING, started=True)],
                    "containerStatuses": [cs(ready=True, state=RUNNING)],
                },
                init=[{"name": "proxy", **SIDECAR}],
            ),
            ["web-0", "2/2", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="ready-sidecar-counts",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "conditions": [{"type": "Initialized", "status": "False"}],
                    "initContainerStatuses": [
                        cs("proxy", restarts=3, state=RUNNING, started=False, lastState=last_terminated(10)),
                        cs("logs", state={"waiting": {}}, started=False),
                    ],
                    "containerStatuses": [cs(state={"waiting": {}})],
                },
                init=[{"name": "proxy", **SIDECAR}, {"name": "logs", **SIDECAR}],
            ),
            ["web-0", "0/3", "Init:0/2", "3 (10s ago)", "5m", "<none>", "<none>", "<none>", "<none>"],
            id="upstream-sidecar-not-started",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "nominatedNodeName": "node-b",
                    "podIPs": [{"ip": "10.244.2.7"}],
                    "conditions": [
                        {"type": "example.com/gate-1", "status": "False"},
                        {"type": "example.com/gate-2", "status": "True"},
                    ],
                    "containerStatuses": [cs(ready=True, state=RUNNING)],
                },
                nodeName="node-a",
                readinessGates=[
                    {"conditionType": "example.com/gate-1"},
                    {"conditionType": "example.com/gate-2"},
                    {"conditionType": "example.com/gate-3"},
                ],
            ),
            ["web-0", "1/1", "Running", "0", "5m", "10.244.2.7", "node-a", "node-b", "1/3"],
            id="upstream-wide-readiness-gates",
        ),
    ],
)
def test_pod_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("pods", obj) == expected


@pytest.mark.parametrize(
    ("phase", "conditions"),
    [
        pytest.param("Running", None, id="running-none"),
        pytest.param(
            "Succeeded",
            [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                }
            ],
            id="succeeded",
        ),
        pytest.param(
            "Failed",
            [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
            id="failed",
        ),
    ],
)
def test_pod_row_conditions(phase: str, conditions: list[dict[str, str]] | None) -> None:
    row = table(resource("pods"), [pod({"phase": phase})], now=NOW)["rows"][0]
    assert row.get("conditions") == conditions


# ---------------------------------------------------------------------------------------------
# Endpoints and EndpointSlices
# ---------------------------------------------------------------------------------------------


def eps(subsets: list[dict[str, Any]] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta("web")}
    if subsets is not None:
        obj["subsets"] = subsets
    return obj


def addrs(*ips: str) -> list[dict[str, Any]]:
    return [{"ip": ip} for ip in ips]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(eps(None), "<none>", id="no-subsets"),
        pytest.param(eps([]), "<none>", id="empty-subsets"),
        pytest.param(
            eps([{"addresses": addrs("10.244.1.5"), "ports": [{"port": 8080, "protocol": "TCP"}]}]),
            "10.244.1.5:8080",
            id="one",
        ),
        pytest.param(
            eps([{"addresses": addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), "ports": [{"port": 80}]}]),
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80",
            id="exactly-three",
        ),
        pytest.param(
            eps(
                [
                    {
                        "addresses": addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"),
                        "ports": [{"port": 80}],
                    }
                ]
            ),
            "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more...",
            id="truncated",
        ),
        pytest.param(
            eps(
                [
                    {
                        "addresses": addrs("10.0.0.1", "10.0.0.2"),
                        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
                    }
                ]
            ),
            "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
            id="multi-port-counts-each-pair",
        ),
        pytest.param(
            eps(
                [
                    {"addresses": addrs("10.0.0.1"), "ports": [{"port": 80}]},
                    {"addresses": addrs("10.0.1.1", "10.0.1.2"), "ports": [{"port": 8080}]},
                    {"addresses": addrs("10.0.2.1"), "ports": [{"port": 9090}]},
                ]
            ),
            "10.0.0.1:80,10.0.1.1:8080,10.0.1.2:8080 + 1 more...",
            id="across-subsets",
        ),
        pytest.param(
            eps([{"addresses": addrs("10.0.0.1", "10.0.0.2")}]),
            "10.0.0.1,10.0.0.2",
            id="headless-no-ports",
        ),
        pytest.param(
            eps([{"addresses": addrs("fd00::1"), "ports": [{"port": 80}]}]),
            "[fd00::1]:80",
            id="ipv6-bracketed",
        ),
        pytest.param(
            eps([{"notReadyAddresses": addrs("10.0.0.9"), "ports": [{"port": 80}]}]),
            "",
            id="only-not-ready",
        ),
    ],
)
def test_endpoints_cells(obj: dict[str, Any], expected: str) -> None:
    assert cells("endpoints", obj) == ["web", expected, "5m"]


def slice_(ports: list[dict[str, Any]] | None, endpoints: list[dict[str, Any]] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta("web-abc12", labels={"kubernetes.io/service-name": "web"}),
        "addressType": "IPv4",
    }
    if ports is not None:
        obj["ports"] = ports
    if endpoints is not None:
        obj["endpoints"] = endpoints
    return obj


def ep(*addresses: str) -> dict[str, Any]:
    return {"addresses": list(addresses), "conditions": {"ready": True}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            slice_([{"name": "http", "port": 8080, "protocol": "TCP"}], [ep("10.244.1.5"), ep("10.244.2.6")]),
            ["web-abc12", "IPv4", "8080", "10.244.1.5,10.244.2.6", "5m"],
            id="basic",
        ),
        pytest.param(slice_(None, None), ["web-abc12", "IPv4", "<unset>", "<unset>", "5m"], id="empty"),
        pytest.param(
            slice_([{"name": "dns"}, {"protocol": "TCP"}], [ep("10.0.0.1")]),
            ["web-abc12", "IPv4", "dns,*", "10.0.0.1", "5m"],
            id="nil-port-uses-name-or-star",
        ),
        pytest.param(
            slice_(
                [{"port": 80}, {"port": 443}, {"port": 8080}, {"port": 9090}],
                [ep("10.0.0.1", "10.0.0.2"), ep("10.0.0.3"), ep("10.0.0.4"), ep("10.0.0.5")],
            ),
            ["web-abc12", "IPv4", "80,443,8080 + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "5m"],
            id="truncated",
        ),
    ],
)
def test_endpointslice_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("endpointslices", obj, group="discovery.k8s.io") == expected


# ---------------------------------------------------------------------------------------------
# Nodes and Namespaces
# ---------------------------------------------------------------------------------------------

NODE_INFO = {
    "kubeletVersion": "v1.32.4",
    "osImage": "Ubuntu 24.04.1 LTS",
    "kernelVersion": "6.8.0-45-generic",
    "containerRuntimeVersion": "containerd://1.7.22",
}


def node(
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    unschedulable: bool = False,
    info: dict[str, str] | None = None,
    addresses: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"nodeInfo": NODE_INFO if info is None else info}
    if ready is not None:
        status["conditions"] = [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": ready},
        ]
    if addresses is not None:
        status["addresses"] = addresses
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-a", "creationTimestamp": ago(3 * DAY), "labels": labels or {}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": status,
    }
    return obj


ADDRESSES = [
    {"type": "Hostname", "address": "node-a"},
    {"type": "InternalIP", "address": "172.18.0.2"},
    {"type": "ExternalIP", "address": "203.0.113.2"},
    {"type": "InternalIP", "address": "172.18.0.99"},
]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            node(
                {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "node-a"},
                addresses=ADDRESSES,
            ),
            [
                "node-a",
                "Ready",
                "control-plane",
                "3d",
                "v1.32.4",
                "172.18.0.2",
                "203.0.113.2",
                "Ubuntu 24.04.1 LTS",
                "6.8.0-45-generic",
                "containerd://1.7.22",
            ],
            id="control-plane",
        ),
        pytest.param(
            node(),
            [
                "node-a",
                "Ready",
                "<none>",
                "3d",
                "v1.32.4",
                "<none>",
                "<none>",
                "Ubuntu 24.04.1 LTS",
                "6.8.0-45-generic",
                "containerd://1.7.22",
            ],
            id="worker-no-roles-no-addresses",
        ),
        pytest.param(
            node(
                {
                    "node-role.kubernetes.io/worker": "",
                    "node-role.kubernetes.io/ingress": "true",
                    "node-role.kubernetes.io/": "",
                    "kubernetes.io/role": "edge",
                }
            ),
            ["node-a", "Ready", "edge,ingress,worker", "3d", "v1.32.4"],
            id="multiple-roles-sorted",
        ),
        pytest.param(
            node({"kubernetes.io/role": ""}),
            ["node-a", "Ready", "<none>", "3d", "v1.32.4"],
            id="empty-legacy-role",
        ),
        pytest.param(
            node(unschedulable=True),
            ["node-a", "Ready,SchedulingDisabled", "<none>", "3d", "v1.32.4"],
            id="cordoned",
        ),
        pytest.param(node(ready="False"), ["node-a", "NotReady", "<none>", "3d", "v1.32.4"], id="not-ready"),
        pytest.param(node(ready="Unknown"), ["node-a", "NotReady", "<none>", "3d", "v1.32.4"], id="ready-unknown"),
        pytest.param(
            node(ready=None, unschedulable=True),
            ["node-a", "Unknown,SchedulingDisabled", "<none>", "3d", "v1.32.4"],
            id="no-ready-condition",
        ),
        pytest.param(
            node(info={}),
            [
                "node-a",
                "Ready",
                "<none>",
                "3d",
                "",
                "<none>",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>",
            ],
            id="no-node-info",
        ),
    ],
)
def test_node_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("nodes", obj)[: len(expected)] == expected


@pytest.mark.parametrize(
    ("status", "deleting", "expected"),
    [
        pytest.param({"phase": "Active"}, False, "Active", id="active"),
        pytest.param({"phase": "Terminating"}, True, "Terminating", id="terminating"),
        pytest.param({}, False, "", id="no-phase"),
    ],
)
def test_namespace_cells(status: dict[str, Any], deleting: bool, expected: str) -> None:
    metadata: dict[str, Any] = {"name": "team-a", "creationTimestamp": ago(40 * DAY)}
    if deleting:
        metadata["deletionTimestamp"] = ago(5)
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata, "status": status}
    assert cells("namespaces", obj) == ["team-a", expected, "40d"]


# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------


def event(**fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta("web-0.17c2a3b4", age=3 * DAY),
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web-0",
            "fieldPath": "spec.containers{nginx}",
        },
        "reason": "BackOff",
        "message": "Back-off restarting failed container\n",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "node-a"},
    }
    obj.update(fields)
    return obj


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            event(firstTimestamp=ago(3 * DAY), lastTimestamp=ago(2 * DAY), count=6),
            [
                "2d",
                "Warning",
                "BackOff",
                "pod/web-0",
                "spec.containers{nginx}",
                "kubelet, node-a",
                "Back-off restarting failed container",
                "3d",
                6,
                "web-0.17c2a3b4",
            ],
            id="classic",
        ),
        pytest.param(
            event(firstTimestamp=ago(90), count=1, source={"component": "kubelet"}),
            [
                "90s",
                "Warning",
                "BackOff",
                "pod/web-0",
                "spec.containers{nginx}",
                "kubelet",
                "Back-off restarting failed container",
                "90s",
                1,
                "web-0.17c2a3b4",
            ],
            id="no-last-timestamp-no-host",
        ),
        pytest.param(
            event(
                firstTimestamp=None,
                lastTimestamp=None,
                eventTime=ago(30.5),
                source={},
                reportingComponent="endpoint-controller",
                reportingInstance="cp-1",
                involvedObject={"kind": "Service", "name": "web"},
                type="Normal",
                reason="Synced",
                message="ok",
            ),
            [
                "30s",
                "Normal",
                "Synced",
                "service/web",
                "",
                "endpoint-controller, cp-1",
                "ok",
                "30s",
                1,
                "web-0.17c2a3b4",
            ],
            id="events-v1-style-singleton",
        ),
        pytest.param(
            event(
                eventTime=ago(10 * MINUTE),
                series={"count": 12, "lastObservedTime": ago(20)},
                count=0,
                involvedObject={"kind": "Node"},
            ),
            [
                "20s",
                "Warning",
                "BackOff",
                "node",
                "",
                "kubelet, node-a",
                "Back-off restarting failed container",
                "10m",
                12,
                "web-0.17c2a3b4",
            ],
            id="series-no-involved-name",
        ),
        pytest.param(
            event(involvedObject={}, source={}, message=""),
            ["<unknown>", "Warning", "BackOff", "", "", "", "", "<unknown>", 1, "web-0.17c2a3b4"],
            id="sparse",
        ),
    ],
)
def test_event_cells(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("events", obj) == expected


# ---------------------------------------------------------------------------------------------
# Generic default and the Table envelope
# ---------------------------------------------------------------------------------------------

WIDGETS = ResourceInfo("example.com", "v1", "Widget", "widgets", "widget", True)  # a kind without a printer


def test_default_table_for_unprinted_resource() -> None:
    objs = [
        {"metadata": {"name": "cfg", "creationTimestamp": "2024-04-30T10:00:00Z"}, "data": {"a": "1"}},
        {"metadata": {"name": "cfg-offset", "creationTimestamp": "2024-04-30T12:00:00+02:00"}},
        {"metadata": {"name": "no-time"}},
    ]
    result = table(WIDGETS, objs, now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in result["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Created At", "date", ""),
    ]
    assert [row["cells"] for row in result["rows"]] == [
        ["cfg", "2024-04-30T10:00:00Z"],
        ["cfg-offset", "2024-04-30T10:00:00Z"],
        ["no-time", "0001-01-01T00:00:00Z"],
    ]


SERVICE = svc({"type": "ClusterIP", "clusterIPs": ["10.0.0.10"], "ports": [TCP80]})
SERVICE["metadata"].update(
    {
        "resourceVersion": "42",
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "managedFields": [{"manager": "k"}],
    }
)


@pytest.mark.parametrize(
    ("include_object", "expected"),
    [
        pytest.param("None", None, id="none"),
        pytest.param(
            "Metadata",
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": SERVICE["metadata"],
            },
            id="metadata",
        ),
        pytest.param("Object", SERVICE, id="object"),
    ],
)
def test_include_object(include_object: str, expected: dict[str, Any] | None) -> None:
    row = table(resource("services"), [SERVICE], include_object=include_object, now=NOW)["rows"][0]
    assert row.get("object") == expected
    assert ("object" in row) is (expected is not None)


def test_include_object_defaults_to_metadata() -> None:
    row = table(resource("services"), [SERVICE], now=NOW)["rows"][0]
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_object_gets_type_meta_when_missing() -> None:
    bare = {"metadata": {"name": "x"}, "spec": {}}
    obj = table(resource("services"), [bare], include_object="Object", now=NOW)["rows"][0]["object"]
    assert (obj["kind"], obj["apiVersion"]) == ("Service", "v1")
    assert "kind" not in bare


def test_invalid_include_object() -> None:
    with pytest.raises(ValueError, match="includeObject"):
        table(resource("services"), [SERVICE], include_object="Everything")


def test_table_envelope_list() -> None:
    second = copy.deepcopy(SERVICE)
    second["metadata"]["name"] = "api"
    result = table(
        resource("services"),
        [SERVICE, second],
        resource_version="1234",
        continue_token="abc",
        remaining=7,
        now=NOW,
    )
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "1234", "continue": "abc", "remainingItemCount": 7}
    assert [row["cells"][0] for row in result["rows"]] == ["web", "api"]


def test_table_envelope_omits_empty_list_metadata() -> None:
    assert table(resource("services"), [SERVICE], now=NOW)["metadata"] == {}
    assert table(resource("services"), [], remaining=0, now=NOW)["metadata"] == {"remainingItemCount": 0}


def test_inputs_not_mutated() -> None:
    before = copy.deepcopy(SERVICE)
    result = table(resource("services"), [SERVICE], include_object="Object", now=NOW)
    result["rows"][0]["object"]["metadata"]["name"] = "changed"
    assert before == SERVICE


def test_naive_now_is_utc_and_default_now_works() -> None:
    obj = {"metadata": {"name": "n", "creationTimestamp": ago(45)}, "status": {"phase": "Active"}}
    naive = NOW.replace(tzinfo=None)
    assert table(resource("namespaces"), [obj], now=naive)["rows"][0]["cells"][2] == "45s"
    fresh = {"metadata": {"name": "n", "creationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}}
    assert table(resource("namespaces"), [fresh])["rows"][0]["cells"][2] in {"0s", "1s", "2s"}


@pytest.mark.parametrize("info", [pytest.param(r, id=r.plural) for r in RESOURCES])
def test_cells_match_columns_for_sparse_objects(info: ResourceInfo) -> None:
    """Every printer copes with a near-empty object and emits one cell per column."""
    result = table(info, [{"metadata": {"name": "x"}}], now=NOW)
    assert len(result["rows"][0]["cells"]) == len(result["columnDefinitions"])
