"""The machine's kubectl (v1.32) against a real `tinykube up`: what a user types, and what they see.

Every test works in its own namespace (the `namespace` fixture); objects a test only needs to exist are made
through the API (`api`), everything under test goes through kubectl.
"""

from __future__ import annotations

import ipaddress
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml

if TYPE_CHECKING:
    from tests.e2e.conftest import Background, Kubectl

SERVICE_HEADER = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]


# ---- helpers -----------------------------------------------------------------------------------------------


def columns(line: str) -> list[str]:
    """A kubectl table line as cells (columns are separated by at least two spaces; cells may hold one)."""
    return re.split(r"\s{2,}", line.strip())


def table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if line.strip()]
    return columns(lines[0]), [columns(line) for line in lines[1:]]


def names(kubectl: Kubectl, *args: str) -> list[str]:
    """`kubectl get ... -o name`, without the `kind/` prefix."""
    out = kubectl("get", *args, "-o", "name").stdout.split()
    return [name.split("/", 1)[1] for name in out]


def create(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def service(
    api: httpx.Client,
    namespace: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body = {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "selector": selector or {},
            "ports": [{"name": "http", "port": 80}] if ports is None else ports,
            **spec,
        },
    }
    return create(api, f"/api/v1/namespaces/{namespace}/services", body)


def endpoint_slice(api: httpx.Client, namespace: str, service_name: str, ip: str = "10.0.0.5") -> dict[str, Any]:
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"{service_name}-abcde", "labels": {"kubernetes.io/service-name": service_name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    return create(api, f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", body)


def event(api: httpx.Client, namespace: str, involved: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    meta = involved["metadata"]
    body = {
        "metadata": {"name": f"{meta['name']}.{reason.lower()}"},
        "involvedObject": {
            "kind": involved["kind"],
            "apiVersion": involved["apiVersion"],
            "name": meta["name"],
            "namespace": namespace,
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "count": 3,
        "source": {"component": "e2e-tester"},
    }
    return create(api, f"/api/v1/namespaces/{namespace}/events", body)


def contains(expected: Any, actual: Any, path: str = "") -> None:
    """Every field of `expected` is in `actual` with the same value (lists element by element)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not an object"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key} is missing from {actual!r}"
            contains(value, actual[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            contains(want, got, f"{path}[{i}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def described(text: str) -> dict[str, str]:
    """The top-level `Key:  value` lines of `kubectl describe` output."""
    fields = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Z][\w ()-]*?):\s+(.*)$", line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
    return fields


# ---- apply -------------------------------------------------------------------------------------------------

MULTI_DOCUMENT = """\
apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: {ns}
  labels:
    app: web
{extra_labels}spec:
  ports:  # no selector: its Endpoints are the user's (below), not the endpoints controller's
  - name: http
    port: {port}
    targetPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: db
  namespace: {ns}
spec:
  selector:
    app: db
  ports:
  - name: pg
    port: 5432
---
apiVersion: v1
kind: Endpoints
metadata:
  name: web
  namespace: {ns}
subsets:
- addresses:
  - ip: {ip}
  ports:
  - name: http
    port: 8080
"""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def test_apply_multi_document_then_reapply(kubectl: Kubectl, extra_namespaces: Callable[[str], str]) -> None:
    ns = extra_namespaces("app")
    k = kubectl.at(ns)
    first = MULTI_DOCUMENT.format(ns=ns, port=80, ip="10.0.0.1", extra_labels="    tier: front\n")
    out = k.apply(first).stdout.splitlines()
    assert out == [f"namespace/{ns} created", "service/web created", "service/db created", "endpoints/web created"]

    web = k.json("get", "svc", "web")
    assert web["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert [(p["name"], p["port"], p["targetPort"]) for p in web["spec"]["ports"]] == [("http", 80, 8080)]
    applied = json.loads(web["metadata"]["annotations"][LAST_APPLIED])
    assert applied["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 8080}]
    db_version = k.json("get", "svc", "db")["metadata"]["resourceVersion"]
    k("label", "svc", "web", "owner=someone-else")  # not in the manifest: a re-apply must keep it

    second = MULTI_DOCUMENT.format(ns=ns, port=81, ip="10.0.0.2", extra_labels="")
    out = k.apply(second).stdout.splitlines()
    assert out == [
        f"namespace/{ns} unchanged",
        "service/web configured",
        "service/db unchanged",
        "endpoints/web configured",
    ]

    web = k.json("get", "svc", "web")
    assert [(p["name"], p["port"]) for p in web["spec"]["ports"]] == [("http", 81)]
    # three-way merge: `tier` was applied before and is gone now; `owner` was never applied and stays
    assert web["metadata"]["labels"] == {"app": "web", "owner": "someone-else"}
    applied = json.loads(web["metadata"]["annotations"][LAST_APPLIED])
    assert applied["spec"]["ports"] == [{"name": "http", "port": 81, "targetPort": 8080}]
    assert applied["metadata"]["labels"] == {"app": "web"}
    assert k.json("get", "svc", "db")["metadata"]["resourceVersion"] == db_version
    endpoints = k.json("get", "endpoints", "web")
    assert [a["ip"] for a in endpoints["subsets"][0]["addresses"]] == ["10.0.0.2"]
    assert LAST_APPLIED in endpoints["metadata"]["annotations"]


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: app
  labels:
    app: web
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    fsGroup: 2000
    seccompProfile:
      type: RuntimeDefault
  automountServiceAccountToken: false  # no kube-api-access volume added: the spec stays as sent
  volumes:
  - name: data
    emptyDir:
      sizeLimit: 64Mi
  - name: config
    configMap:
      name: app-config
      defaultMode: 420
      items:
      - key: app.conf
        path: app.conf
  initContainers:
  - name: init
    image: busybox:1.36
    command: ["sh", "-c", "true"]
  containers:
  - name: app
    image: nginx:1.27
    args: ["--port", "8080"]
    ports:
    - name: http
      containerPort: 8080
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
      limits:
        cpu: "1"
        memory: 128Mi
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
    - name: data
      mountPath: /data
    - name: config
      mountPath: /etc/app
      readOnly: true
    readinessProbe:
      httpGet:
        path: /healthz
        port: http
      periodSeconds: 5
    env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
  nodeSelector:
    kubernetes.io/os: linux
  tolerations:
  - key: dedicated
    operator: Exists
    effect: NoSchedule
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/arch
            operator: In
            values: ["amd64", "arm64"]
"""


def test_apply_pod_keeps_fields_it_does_not_model(kubectl: Kubectl) -> None:
    assert kubectl.apply(POD).stdout.strip() == "pod/app created"
    manifest = yaml.safe_load(POD)
    # DefaultTolerationSeconds admission adds 300 s of the two node taints after the pod's own tolerations
    defaults = [
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")
    ]
    manifest["spec"]["tolerations"] += defaults
    pod = kubectl.json("get", "pod", "app")
    contains(manifest["spec"], pod["spec"])
    assert pod["spec"]["restartPolicy"] == "Always"  # defaulted alongside
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod["status"]["phase"] == "Pending"

    relabelled = POD.replace("    app: web\n", "    app: web\n    version: v2\n", 1)
    assert kubectl.apply(relabelled).stdout.strip() == "pod/app configured"
    pod = kubectl.json("get", "pod", "app")
    assert pod["metadata"]["labels"] == {"app": "web", "version": "v2"}
    contains(manifest["spec"], pod["spec"])
    # The live tolerations (admission's two defaults after the pod's own) differ from the applied ones, a list kubectl
    # replaces whole: it sends them again, and admission adds the defaults back, so nothing changes, as upstream.
    before = kubectl.json("get", "pod", "app")["spec"]
    assert kubectl.apply(relabelled).stdout.strip() == "pod/app configured"
    assert kubectl.json("get", "pod", "app")["spec"] == before


BOGUS_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  bogus: 1
  ports:
  - port: 80
"""
PLAIN_SERVICE = BOGUS_SERVICE.replace("  bogus: 1\n", "")


@pytest.mark.parametrize(
    "verb, existing",
    [
        pytest.param("create", False, id="create"),
        pytest.param("apply", False, id="apply-new"),
        pytest.param("apply", True, id="apply-existing"),
        pytest.param("replace", True, id="replace"),
    ],
)
def test_unknown_field_is_rejected(kubectl: Kubectl, verb: str, existing: bool) -> None:
    if existing:
        kubectl.apply(PLAIN_SERVICE)
    before = kubectl("get", "svc", "-o", "name").stdout
    path = kubectl.manifest("bogus.yaml", BOGUS_SERVICE)
    result = kubectl.fail(verb, "-f", str(path))
    assert 'strict decoding error: unknown field "spec.bogus"' in result.stderr
    assert result.stderr.startswith("Error from server (BadRequest): error when ")
    assert kubectl("get", "svc", "-o", "name").stdout == before
    if existing:
        assert "bogus" not in kubectl.json("get", "svc", "web")["spec"]


def test_validate_warn_prints_the_servers_warning(kubectl: Kubectl) -> None:
    path = kubectl.manifest("bogus.yaml", BOGUS_SERVICE)
    result = kubectl("create", "-f", str(path), "--validate=warn")
    assert result.stdout.strip() == "service/web created"
    assert 'Warning: unknown field "spec.bogus"' in result.stderr


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("warn", id="warn"),
        pytest.param("false", id="ignore"),
    ],
)
def test_unknown_field_dropped(kubectl: Kubectl, mode: str) -> None:
    path = kubectl.manifest("bogus.yaml", BOGUS_SERVICE)
    kubectl("create", "-f", str(path), f"--validate={mode}")
    assert "bogus" not in kubectl.json("get", "svc", "web")["spec"]


# ---- create generators -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        pytest.param(
            ["clusterip", "web", "--tcp=80:8080"],
            {
                "type": "ClusterIP",
                "selector": {"app": "web"},
                "ports": [{"name": "80-8080", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            },
            id="clusterip",
        ),
        pytest.param(
            ["clusterip", "web", "--clusterip=None"],
            {"type": "ClusterIP", "clusterIP": "None"},
            id="clusterip-headless",
        ),
        pytest.param(
            ["nodeport", "web", "--tcp=80:8080", "--node-port=30080"],
            {
                "type": "NodePort",
                "externalTrafficPolicy": "Cluster",
                "ports": [{"name": "80-8080", "port": 80, "targetPort": 8080, "nodePort": 30080, "protocol": "TCP"}],
            },
            id="nodeport",
        ),
        pytest.param(
            ["loadbalancer", "web", "--tcp=443:8443"],
            {
                "type": "LoadBalancer",
                "ports": [{"name": "443-8443", "port": 443, "targetPort": 8443, "protocol": "TCP"}],
            },
            id="loadbalancer",
        ),
        pytest.param(
            ["externalname", "web", "--external-name=db.example.com"],
            {"type": "ExternalName", "externalName": "db.example.com"},
            id="externalname",
        ),
    ],
)
def test_create_service(kubectl: Kubectl, args: list[str], expected: dict[str, Any]) -> None:
    assert kubectl("create", "service", *args).stdout.strip() == "service/web created"
    spec = kubectl.json("get", "svc", "web")["spec"]
    contains(expected, spec)
    header, rows = table(kubectl("get", "svc", "web").stdout)
    assert header == SERVICE_HEADER
    assert rows[0][:2] == ["web", expected["type"]]


def test_create_namespace(kubectl: Kubectl, extra_namespaces: Callable[[str], str]) -> None:
    ns = extra_namespaces("made")
    assert kubectl("create", "namespace", ns).stdout.strip() == f"namespace/{ns} created"
    created = kubectl.json("get", "ns", ns)
    assert created["status"]["phase"] == "Active"
    assert created["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    assert created["spec"]["finalizers"] == ["kubernetes"]
    assert table(kubectl("get", "ns", ns).stdout)[1][0][:2] == [ns, "Active"]
    again = kubectl.fail("create", "namespace", ns)
    assert again.stderr.strip() == f'Error from server (AlreadyExists): namespaces "{ns}" already exists'


# ---- get ---------------------------------------------------------------------------------------------------


@pytest.fixture
def three_services(api: httpx.Client, namespace: str) -> str:
    """web (app=web, tier=front), api (app=api, tier=back), db (app=db, no tier)."""
    service(api, namespace, "web", labels={"app": "web", "tier": "front"}, selector={"app": "web"})
    service(
        api,
        namespace,
        "api",
        labels={"app": "api", "tier": "back"},
        selector={"app": "api"},
        ports=[{"name": "grpc", "port": 9000, "targetPort": 9090}, {"name": "dns", "port": 53, "protocol": "UDP"}],
    )
    service(api, namespace, "db", labels={"app": "db"}, type="ExternalName", externalName="db.example.com", ports=[])
    return namespace


def _check_default(out: str, _ns: str) -> None:
    header, rows = table(out)
    assert header == SERVICE_HEADER
    by_name = {row[0]: row for row in rows}
    assert sorted(by_name) == ["api", "db", "web"]
    assert by_name["web"][1] == "ClusterIP"
    assert by_name["web"][4] == "80/TCP"
    assert by_name["api"][4] == "9000/TCP,53/UDP"
    assert by_name["db"][1:4] == ["ExternalName", "<none>", "db.example.com"]
    assert by_name["db"][4] == "<none>"


def _check_wide(out: str, _ns: str) -> None:
    header, rows = table(out)
    assert header == [*SERVICE_HEADER, "SELECTOR"]
    by_name = {row[0]: row for row in rows}
    assert by_name["web"][-1] == "app=web"
    assert by_name["db"][-1] == "<none>"


def _check_list(document: dict[str, Any], ns: str) -> None:
    assert document["kind"] == "List"
    assert document["apiVersion"] == "v1"
    assert sorted(item["metadata"]["name"] for item in document["items"]) == ["api", "db", "web"]
    for item in document["items"]:
        assert item["kind"] == "Service"
        assert item["metadata"]["namespace"] == ns


@pytest.mark.parametrize(
    "args, check",
    [
        pytest.param([], _check_default, id="table"),
        pytest.param(["-o", "wide"], _check_wide, id="wide"),
        pytest.param(["-o", "yaml"], lambda out, ns: _check_list(yaml.safe_load(out), ns), id="yaml"),
        pytest.param(["-o", "json"], lambda out, ns: _check_list(json.loads(out), ns), id="json"),
        pytest.param(["-o", "jsonpath={.items[*].metadata.name}"], lambda out, _ns: out == "api db web", id="jsonpath"),
        pytest.param(
            ["-o", "name"], lambda out, _ns: out.split() == ["service/api", "service/db", "service/web"], id="name"
        ),
        pytest.param(
            ["--sort-by=.spec.type", "-o", "custom-columns=NAME:.metadata.name,TYPE:.spec.type"],
            lambda out, _ns: table(out)[1] == [["api", "ClusterIP"], ["web", "ClusterIP"], ["db", "ExternalName"]],
            id="custom-columns",
        ),
    ],
)
def test_get_output(
    kubectl: Kubectl, three_services: str, args: list[str], check: Callable[[str, str], bool | None]
) -> None:
    out = kubectl("get", "svc", *args).stdout
    assert check(out, three_services) is not False, out


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_get_one_object(kubectl: Kubectl, three_services: str, output: str) -> None:
    out = kubectl("get", "svc", "web", "-o", output).stdout
    obj = yaml.safe_load(out)  # JSON is YAML
    assert obj["kind"] == "Service"
    assert obj["apiVersion"] == "v1"
    assert obj["metadata"]["name"] == "web"
    assert obj["metadata"]["namespace"] == three_services
    assert obj["metadata"]["uid"]
    assert obj["metadata"]["resourceVersion"].isdigit()
    assert obj["spec"]["selector"] == {"app": "web"}


@pytest.mark.parametrize(
    "args, expected",
    [
        pytest.param(["-l", "app=web"], ["web"], id="label-equals"),
        pytest.param(["-l", "app==web"], ["web"], id="label-double-equals"),
        pytest.param(["-l", "app!=web"], ["api", "db"], id="label-not-equals"),
        pytest.param(["-l", "tier in (front,back)"], ["api", "web"], id="label-in"),
        pytest.param(["-l", "tier notin (front)"], ["api", "db"], id="label-notin"),
        pytest.param(["-l", "tier"], ["api", "web"], id="label-exists"),
        pytest.param(["-l", "!tier"], ["db"], id="label-not-exists"),
        pytest.param(["-l", "app in (web,api),tier!=back"], ["web"], id="label-and"),
        pytest.param(["-l", "app=nothing"], [], id="label-no-match"),
        pytest.param(["--field-selector", "metadata.name=db"], ["db"], id="field-name"),
        pytest.param(["--field-selector", "metadata.name!=db"], ["api", "web"], id="field-not-name"),
        pytest.param(["--field-selector", "metadata.name=web", "-l", "tier=front"], ["web"], id="field-and-label"),
        pytest.param(["--field-selector", "metadata.name=web", "-l", "tier=back"], [], id="field-and-label-none"),
    ],
)
def test_get_selectors(kubectl: Kubectl, three_services: str, args: list[str], expected: list[str]) -> None:
    assert names(kubectl, "svc", *args) == expected


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["-l", "tier in"], "unable to parse requirement", id="bad-label-selector"),
        pytest.param(
            ["--field-selector", "spec.bogus=x"],
            "field label not supported: spec.bogus",
            id="unsupported-field-selector",
        ),
    ],
)
def test_get_bad_selector(kubectl: Kubectl, args: list[str], message: str) -> None:
    result = kubectl.fail("get", "svc", *args)
    assert result.stderr.startswith('Error from server (BadRequest): Unable to find "/v1, Resource=services"')
    assert message in result.stderr


def test_get_all_namespaces(
    kubectl: Kubectl, api: httpx.Client, namespace: str, extra_namespaces: Callable[[str], str]
) -> None:
    other = extra_namespaces("other")
    create(api, "/api/v1/namespaces", {"metadata": {"name": other}})
    service(api, namespace, "web", selector={"app": "web"})
    service(api, other, "web", ports=[{"port": 8443}])
    header, rows = table(kubectl("get", "svc", "-A").stdout)
    assert header == ["NAMESPACE", *SERVICE_HEADER]
    mine = {(row[0], row[1]): row for row in rows if row[0] in (namespace, other)}
    assert sorted(mine) == [(namespace, "web"), (other, "web")]
    assert mine[other, "web"][5] == "8443/TCP"
    selected = kubectl(
        "get",
        "svc",
        "-A",
        "--field-selector",
        f"metadata.namespace={other}",
        "-o",
        "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}",
    ).stdout
    assert selected.split() == [f"{other}/web"]


def _pod(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    create(
        api,
        f"/api/v1/namespaces/{ns}/pods",
        {"metadata": {"name": "app"}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
    )
    return "app"


def _endpoints(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    create(
        api,
        f"/api/v1/namespaces/{ns}/endpoints",
        {
            "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.0.0.5"}, {"ip": "10.0.0.6"}], "ports": [{"port": 8080}]}],
        },
    )
    return "web"


def _endpoint_slice(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    return str(endpoint_slice(api, ns, "web")["metadata"]["name"])


def _event(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    svc = service(api, ns, "web")
    return str(event(api, ns, svc, "Synced", "service synced")["metadata"]["name"])


def _namespace(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    return ns


def _node(api: httpx.Client, ns: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("node"))


@pytest.mark.parametrize(
    "resource, setup, header, row",
    [
        pytest.param("namespaces", _namespace, ["NAME", "STATUS", "AGE"], ["Active"], id="ns"),
        pytest.param("pods", _pod, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], ["0/1", "Pending", "0"], id="pods"),
        pytest.param(
            "endpoints", _endpoints, ["NAME", "ENDPOINTS", "AGE"], ["10.0.0.5:8080,10.0.0.6:8080"], id="endpoints"
        ),
        pytest.param(
            "endpointslices",
            _endpoint_slice,
            ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
            ["IPv4", "8080", "10.0.0.5"],
            id="endpointslices",
        ),
        pytest.param(
            "nodes", _node, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"], ["Ready", "control-plane"], id="nodes"
        ),
        pytest.param(
            "events",
            _event,
            ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            ["Normal", "Synced", "service/web", "service synced"],
            id="events",
        ),
    ],
)
def test_get_headers(
    kubectl: Kubectl,
    api: httpx.Client,
    namespace: str,
    request: pytest.FixtureRequest,
    resource: str,
    setup: Callable[[httpx.Client, str, pytest.FixtureRequest], str],
    header: list[str],
    row: list[str],
) -> None:
    name = setup(api, namespace, request)
    got_header, rows = table(kubectl("get", resource).stdout)
    assert got_header == header
    if resource == "events":  # LAST SEEN comes first and the name is not printed
        assert [r[1:] for r in rows] == [row]
        return
    mine = [r for r in rows if r[0] == name]
    assert len(mine) == 1, rows
    assert mine[0][1 : 1 + len(row)] == row
    if resource == "nodes":
        assert mine[0][4] == "v1.32.0"


def test_get_nodes_wide(kubectl: Kubectl, node: str) -> None:
    header, rows = table(kubectl("get", "nodes", node, "-o", "wide").stdout)
    assert header == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert rows[0][0:3] == [node, "Ready", "control-plane"]
    assert rows[0][4:] == [
        "v1.32.0",
        "192.0.2.10",
        "<none>",
        "Debian GNU/Linux 12 (bookworm)",
        "6.1.0-test",
        "containerd://1.7.0",
    ]


def test_get_empty(kubectl: Kubectl, namespace: str) -> None:
    result = kubectl("get", "svc")
    assert result.stdout == ""
    assert result.stderr.strip() == f"No resources found in {namespace} namespace."


# ---- watch -------------------------------------------------------------------------------------------------


def test_get_watch_prints_changes(
    kubectl: Kubectl, api: httpx.Client, namespace: str, background: Callable[..., Background]
) -> None:
    service(api, namespace, "first")
    watch = background("get", "svc", "-w", "--output-watch-events", "--request-timeout=30s")
    assert columns(watch.wait_for(lambda line: "EVENT" in line)) == ["EVENT", *SERVICE_HEADER]
    assert columns(watch.wait_for(lambda line: "first" in line))[:3] == ["ADDED", "first", "ClusterIP"]

    kubectl("create", "-f", str(kubectl.manifest("second.yaml", PLAIN_SERVICE.replace("name: web", "name: second"))))
    assert columns(watch.wait_for(lambda line: "second" in line))[:2] == ["ADDED", "second"]
    kubectl(
        "patch",
        "svc",
        "first",
        "--type=json",
        "-p",
        '[{"op": "add", "path": "/spec/ports/-", "value": {"name": "https", "port": 443}}]',
    )
    modified = columns(watch.wait_for(lambda line: "first" in line))
    assert modified[:2] == ["MODIFIED", "first"]
    assert modified[5] == "80/TCP,443/TCP"
    kubectl("delete", "svc", "second")
    assert columns(watch.wait_for(lambda line: "second" in line))[:2] == ["DELETED", "second"]
    assert watch.proc.poll() is None  # still watching


def test_get_watch_one_object(
    kubectl: Kubectl, api: httpx.Client, namespace: str, background: Callable[..., Background]
) -> None:
    service(api, namespace, "watched")
    service(api, namespace, "other")
    watch = background("get", "svc", "watched", "-w", "-o", "name", "--request-timeout=30s")
    assert watch.wait_for(lambda line: bool(line)) == "service/watched"
    kubectl("label", "svc", "other", "touched=yes")
    kubectl("label", "svc", "watched", "touched=yes")
    assert watch.wait_for(lambda line: bool(line)) == "service/watched"
    assert watch.lines == ["service/watched", "service/watched"]


def test_get_watch_ends_at_request_timeout(
    kubectl: Kubectl, api: httpx.Client, namespace: str, background: Callable[..., Background]
) -> None:
    service(api, namespace, "web")
    watch = background("get", "svc", "-w", "--request-timeout=2s")
    assert columns(watch.wait_for(lambda line: "web" in line))[0] == "web"
    assert watch.proc.wait(15) == 0
    assert columns(watch.lines[0]) == SERVICE_HEADER


# ---- describe ----------------------------------------------------------------------------------------------


def test_describe_service(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    svc = service(
        api,
        namespace,
        "web",
        labels={"app": "web", "tier": "front"},
        selector={"app": "web"},
        ports=[{"name": "http", "port": 80, "targetPort": 8080}],
    )
    kubectl("annotate", "svc", "web", "team=blue")
    endpoint_slice(api, namespace, "web", ip="10.0.0.7")
    event(api, namespace, svc, "Synced", "service is in sync")
    out = kubectl("describe", "svc", "web").stdout
    fields = described(out)
    assert fields["Name"] == "web"
    assert fields["Namespace"] == namespace
    assert fields["Labels"] == "app=web"
    assert "                          tier=front" in out.splitlines()
    assert fields["Annotations"] == "team: blue"
    assert fields["Selector"] == "app=web"
    assert fields["Type"] == "ClusterIP"
    assert fields["Port"] == "http  80/TCP"
    assert fields["TargetPort"] == "8080/TCP"
    assert fields["Endpoints"] == "10.0.0.7:8080"
    assert fields["Session Affinity"] == "None"
    events = out[out.index("Events:") :].splitlines()
    assert columns(events[1]) == ["Type", "Reason", "Age", "From", "Message"]
    assert columns(events[3])[:2] == ["Normal", "Synced"]
    assert columns(events[3])[3:] == ["e2e-tester", "service is in sync"]


def test_describe_pod(kubectl: Kubectl) -> None:
    kubectl.apply(POD)
    out = kubectl("describe", "pod", "app").stdout
    fields = described(out)
    assert fields["Name"] == "app"
    assert fields["Status"] == "Pending"
    assert fields["Labels"] == "app=web"
    assert fields["Node-Selectors"] == "kubernetes.io/os=linux"
    assert fields["Tolerations"] == "dedicated:NoSchedule op=Exists"
    assert fields["SeccompProfile"] == "RuntimeDefault"
    lines = [" ".join(line.split()) for line in out.splitlines()]  # whitespace collapsed
    for expected in (
        "Init Containers:",
        "Image: busybox:1.36",
        "Image: nginx:1.27",
        "Port: 8080/TCP",
        "/data from data (rw)",
        "/etc/app from config (ro)",
        "POD_NAME: app (",
        "Type: EmptyDir (a temporary directory that shares a pod's lifetime)",
        "SizeLimit: 64Mi",
        "Type: ConfigMap (a volume populated by a ConfigMap)",
        "Name: app-config",
    ):
        assert any(line.startswith(expected) for line in lines), (expected, out)
    limits = out[out.index("Limits:") : out.index("Requests:")]
    assert re.search(r"cpu:\s+1\n", limits) and re.search(r"memory:\s+128Mi\n", limits)


def test_describe_node(kubectl: Kubectl, api: httpx.Client, namespace: str, node: str) -> None:
    create(
        api,
        f"/api/v1/namespaces/{namespace}/pods",
        {
            "metadata": {"name": "on-node"},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "500m"}}}],
            },
        },
    )
    out = kubectl("describe", "node", node).stdout
    fields = described(out)
    assert fields["Name"] == node
    assert fields["Roles"] == "control-plane"
    assert fields["Unschedulable"] == "false"
    assert fields["PodCIDR"] == "10.244.1.0/24"
    assert fields["Non-terminated Pods"] == "(1 in total)"
    lines = [columns(line) for line in out.splitlines()]
    assert ["InternalIP:", "192.0.2.10"] in lines
    assert ["Hostname:", "node-a"] in lines
    assert any(line[:3] == ["Ready", "True", "Mon, 01 Jan 2024 00:00:00 +0000"] for line in lines)
    assert ["Kubelet Version:", "v1.32.0"] in lines
    assert ["Operating System:", "linux"] in lines
    capacity = out[out.index("Capacity:") : out.index("Allocatable:")]
    assert re.search(r"cpu:\s+4\n", capacity) and re.search(r"pods:\s+110\n", capacity)
    pod_rows = [line for line in lines if line[:2] == [namespace, "on-node"]]
    assert len(pod_rows) == 1 and pod_rows[0][2] == "500m (12%)"


# ---- edit, patch, label, annotate --------------------------------------------------------------------------


def _editor(tmp_path: Path, script: str) -> dict[str, str]:
    path = tmp_path / "editor.sh"
    path.write_text("#!/bin/sh\nset -e\n" + script + "\n")
    path.chmod(0o755)
    return {"KUBE_EDITOR": str(path), "EDITOR": str(path)}


def test_edit(kubectl: Kubectl, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    service(api, namespace, "web", labels={"app": "web"})
    env = _editor(
        tmp_path,
        """sed -i -e 's/sessionAffinity: None/sessionAffinity: ClientIP/' \\
    -e 's/^    app: web$/    app: web\\n    edited: "yes"/' "$1\"""",
    )
    assert kubectl("edit", "svc", "web", env=env).stdout.strip() == "service/web edited"
    edited = kubectl.json("get", "svc", "web")
    assert edited["spec"]["sessionAffinity"] == "ClientIP"
    assert edited["metadata"]["labels"] == {"app": "web", "edited": "yes"}


def test_edit_without_changes(kubectl: Kubectl, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    before = service(api, namespace, "web")
    result = kubectl("edit", "svc", "web", env=_editor(tmp_path, "true"))
    assert "Edit cancelled, no changes made." in result.stdout + result.stderr
    assert kubectl.json("get", "svc", "web")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def _ports(obj: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted((p.get("name", ""), p["port"]) for p in obj["spec"]["ports"])


@pytest.mark.parametrize(
    "patch_type, patch, check",
    [
        pytest.param(
            "merge",
            {"spec": {"selector": {"version": "v2"}}, "metadata": {"labels": {"tier": None}}},
            lambda o: (
                o["spec"]["selector"] == {"app": "web", "version": "v2"} and o["metadata"]["labels"] == {"app": "web"}
            ),
            id="merge-maps",
        ),
        pytest.param(
            "merge",
            {"spec": {"ports": [{"name": "https", "port": 443}]}},
            lambda o: _ports(o) == [("https", 443)],
            id="merge-replaces-lists",
        ),
        pytest.param(
            "json",
            [
                {"op": "replace", "path": "/spec/ports/0/port", "value": 90},
                {"op": "add", "path": "/metadata/labels/new", "value": "x"},
                {"op": "remove", "path": "/spec/selector"},
            ],
            lambda o: (
                _ports(o) == [("http", 90), ("metrics", 9090)]
                and o["metadata"]["labels"]["new"] == "x"
                and "selector" not in o["spec"]
            ),
            id="json",
        ),
        pytest.param(
            "strategic",
            {"spec": {"ports": [{"name": "https", "port": 443}]}},
            lambda o: _ports(o) == [("http", 80), ("https", 443), ("metrics", 9090)],
            id="strategic-merges-lists",
        ),
        pytest.param(
            "strategic",
            {"spec": {"ports": [{"port": 9090, "$patch": "delete"}]}},
            lambda o: _ports(o) == [("http", 80)],
            id="strategic-delete",
        ),
        pytest.param(
            "strategic",
            {"spec": {"ports": [{"port": 80, "targetPort": 8081}]}},
            lambda o: (
                [p["targetPort"] for p in o["spec"]["ports"] if p["port"] == 80] == [8081]
                and len(o["spec"]["ports"]) == 2
            ),
            id="strategic-merges-by-key",
        ),
    ],
)
def test_patch(
    kubectl: Kubectl,
    api: httpx.Client,
    namespace: str,
    patch_type: str,
    patch: Any,
    check: Callable[[dict[str, Any]], bool],
) -> None:
    service(
        api,
        namespace,
        "web",
        labels={"app": "web", "tier": "front"},
        selector={"app": "web"},
        ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
    )
    result = kubectl("patch", "svc", "web", "--type", patch_type, "-p", json.dumps(patch))
    assert result.stdout.strip() == "service/web patched"
    patched = kubectl.json("get", "svc", "web")
    assert check(patched), patched


def test_patch_without_change(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    before = service(api, namespace, "web", labels={"app": "web"})
    result = kubectl("patch", "svc", "web", "--type", "merge", "-p", '{"metadata": {"labels": {"app": "web"}}}')
    assert result.stdout.strip() == "service/web patched (no change)"
    assert kubectl.json("get", "svc", "web")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_label(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    service(api, namespace, "web", labels={"app": "web"})
    service(api, namespace, "db", labels={"app": "db"})

    def labels(name: str) -> dict[str, str]:
        return dict(kubectl.json("get", "svc", name)["metadata"].get("labels") or {})

    assert kubectl("label", "svc", "web", "team=blue").stdout.strip() == "service/web labeled"
    assert labels("web") == {"app": "web", "team": "blue"}
    refused = kubectl.fail("label", "svc", "web", "team=red")
    assert "'team' already has a value (blue), and --overwrite is false" in refused.stderr
    kubectl("label", "svc", "web", "team=red", "--overwrite")
    assert labels("web")["team"] == "red"
    assert kubectl("label", "svc", "web", "team-").stdout.strip() == "service/web unlabeled"
    assert labels("web") == {"app": "web"}
    out = kubectl("label", "svc", "--all", "env=test").stdout.splitlines()
    assert sorted(out) == ["service/db labeled", "service/web labeled"]
    kubectl("label", "svc", "-l", "app=db", "tier=data")
    assert labels("db") == {"app": "db", "env": "test", "tier": "data"}
    assert labels("web") == {"app": "web", "env": "test"}
    assert names(kubectl, "svc", "-l", "env=test,tier=data") == ["db"]


def test_annotate(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    service(api, namespace, "web")

    def annotations() -> dict[str, str]:
        return dict(kubectl.json("get", "svc", "web")["metadata"].get("annotations") or {})

    assert kubectl("annotate", "svc", "web", "owner=alice", "note=first line").stdout.strip() == "service/web annotated"
    assert annotations() == {"owner": "alice", "note": "first line"}
    refused = kubectl.fail("annotate", "svc", "web", "owner=bob")
    assert refused.stderr.strip() == (
        "error: --overwrite is false but found the following declared "
        "annotation(s): 'owner' already has a value (alice)"
    )
    kubectl("annotate", "svc", "web", "owner=bob", "--overwrite")
    assert annotations()["owner"] == "bob"
    kubectl("annotate", "svc", "web", "note-")
    assert annotations() == {"owner": "bob"}


# ---- delete ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, output, left",
    [
        pytest.param(["web"], ['service "web" deleted'], ["api", "db"], id="by-name"),
        pytest.param(["web", "api"], ['service "web" deleted', 'service "api" deleted'], ["db"], id="by-names"),
        pytest.param(["-l", "tier"], ['service "api" deleted', 'service "web" deleted'], ["db"], id="by-label"),
        pytest.param(["--field-selector", "metadata.name=db"], ['service "db" deleted'], ["api", "web"], id="by-field"),
        pytest.param(
            ["--all"], ['service "api" deleted', 'service "db" deleted', 'service "web" deleted'], [], id="all"
        ),
    ],
)
def test_delete(kubectl: Kubectl, three_services: str, args: list[str], output: list[str], left: list[str]) -> None:
    assert kubectl("delete", "svc", *args).stdout.splitlines() == output
    assert names(kubectl, "svc") == left


def test_delete_missing(kubectl: Kubectl) -> None:
    result = kubectl.fail("delete", "svc", "nosuch")
    assert result.stderr.strip() == 'Error from server (NotFound): services "nosuch" not found'
    quiet = kubectl("delete", "svc", "nosuch", "--ignore-not-found")
    assert quiet.stdout == quiet.stderr == ""


def test_delete_namespace_removes_its_objects(
    kubectl: Kubectl, api: httpx.Client, extra_namespaces: Callable[[str], str]
) -> None:
    ns = extra_namespaces("doomed")
    kubectl.at(ns).apply(MULTI_DOCUMENT.format(ns=ns, port=80, ip="10.0.0.1", extra_labels=""))
    endpoint_slice(api, ns, "web")
    # the controllers add their own Endpoints and EndpointSlices for the Services; the test's objects are there
    assert {"db", "web", "web-abcde"} <= set(names(kubectl.at(ns), "svc,endpoints,endpointslices"))

    assert kubectl("delete", "ns", ns).stdout.strip() == f'namespace "{ns}" deleted'  # waits until it is gone
    gone = kubectl.fail("get", "ns", ns)
    assert gone.stderr.strip() == f'Error from server (NotFound): namespaces "{ns}" not found'
    for path in (
        f"/api/v1/namespaces/{ns}/services",
        f"/api/v1/namespaces/{ns}/endpoints",
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
    ):
        assert api.get(path).json()["items"] == [], path
    assert kubectl.at(ns)("get", "svc").stderr.strip() == f"No resources found in {ns} namespace."


def test_namespace_terminating_refuses_new_objects(
    kubectl: Kubectl, api: httpx.Client, extra_namespaces: Callable[[str], str]
) -> None:
    ns = extra_namespaces("held")
    create(api, "/api/v1/namespaces", {"metadata": {"name": ns}})
    create(
        api,
        f"/api/v1/namespaces/{ns}/services",
        {"metadata": {"name": "held", "finalizers": ["e2e.test/hold"]}, "spec": {"ports": [{"port": 80}]}},
    )
    kubectl("delete", "ns", ns, "--wait=false")
    assert kubectl.json("get", "ns", ns)["status"]["phase"] == "Terminating"
    refused = kubectl.at(ns).fail("create", "-f", str(kubectl.manifest("svc.yaml", PLAIN_SERVICE)))
    assert (
        f"is forbidden: unable to create new content in namespace {ns} because it is being terminated" in refused.stderr
    )
    kubectl.at(ns)("patch", "svc", "held", "--type", "merge", "-p", '{"metadata": {"finalizers": null}}')
    deadline = time.monotonic() + 15
    while api.get(f"/api/v1/namespaces/{ns}").status_code != 404:
        assert time.monotonic() < deadline, "namespace never went away"
        time.sleep(0.05)


# ---- raw and errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        pytest.param("/readyz", "ok", id="readyz"),
        pytest.param("/livez", "ok", id="livez"),
        pytest.param("/healthz", "ok", id="healthz"),
    ],
)
def test_get_raw_health(kubectl: Kubectl, path: str, expected: str) -> None:
    assert kubectl("get", "--raw", path).stdout.strip() == expected


def test_get_raw_readyz_verbose(kubectl: Kubectl) -> None:
    out = kubectl("get", "--raw", "/readyz?verbose").stdout.splitlines()
    assert "[+]etcd ok" in out
    assert out[-1] == "readyz check passed"


def test_get_raw_object(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    service(api, namespace, "web")
    obj = json.loads(kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/services/web").stdout)
    assert (obj["kind"], obj["metadata"]["name"]) == ("Service", "web")


SERVICE_IN = """\
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  type: {type}
  ports:
  - port: 80
"""
DNS_1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    "name, ns, type_, message",
    [
        pytest.param(
            "web",
            "no-such-namespace",
            "ClusterIP",
            'Error from server (NotFound): error when creating "{file}": namespaces "no-such-namespace" not found',
            id="missing-namespace",
        ),
        pytest.param(
            "Bad_Name",
            None,
            "ClusterIP",
            f'The Service "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {DNS_1035}',
            id="invalid-name",
        ),
        pytest.param(
            "1web",
            None,
            "ClusterIP",
            f'The Service "1web" is invalid: metadata.name: Invalid value: "1web": {DNS_1035}',
            id="name-starts-with-digit",
        ),
        pytest.param(
            "web",
            None,
            "Weird",
            'The Service "web" is invalid: spec.type: Unsupported value: "Weird": supported values: '
            '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
            id="invalid-type",
        ),
    ],
)
def test_create_error(kubectl: Kubectl, namespace: str, name: str, ns: str | None, type_: str, message: str) -> None:
    ns = ns or namespace
    path = kubectl.manifest("svc.yaml", SERVICE_IN.format(name=name, ns=ns, type=type_))
    result = kubectl.at(ns).fail("create", "-f", str(path))
    assert result.stderr.strip() == message.format(file=path)
    assert names(kubectl, "svc") == []


def test_create_twice(kubectl: Kubectl, namespace: str) -> None:
    path = kubectl.manifest("svc.yaml", SERVICE_IN.format(name="web", ns=namespace, type="ClusterIP"))
    kubectl("create", "-f", str(path))
    result = kubectl.fail("create", "-f", str(path))
    assert (
        result.stderr.strip()
        == f'Error from server (AlreadyExists): error when creating "{path}": services "web" already exists'
    )


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["get", "svc", "nosuch"], 'Error from server (NotFound): services "nosuch" not found', id="get-missing"
        ),
        pytest.param(
            ["get", "endpointslices", "nosuch"],
            'Error from server (NotFound): endpointslices.discovery.k8s.io "nosuch" not found',
            id="get-missing-grouped",
        ),
        pytest.param(
            ["get", "ns", "nosuch"],
            'Error from server (NotFound): namespaces "nosuch" not found',
            id="get-missing-namespace",
        ),
        pytest.param(["get", "foos"], 'error: the server doesn\'t have a resource type "foos"', id="unknown-type"),
        pytest.param(
            ["patch", "svc", "nosuch", "-p", "{}"],
            'Error from server (NotFound): services "nosuch" not found',
            id="patch-missing",
        ),
    ],
)
def test_error_message(kubectl: Kubectl, args: list[str], message: str) -> None:
    assert kubectl.fail(*args).stderr.strip() == message


def test_cluster_ip_is_allocated(kubectl: Kubectl) -> None:
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    spec = kubectl.json("get", "svc", "web")["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.96.0.0/16")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert table(kubectl("get", "svc", "web").stdout)[1][0][2] == spec["clusterIP"]


# ---- what the server does not do yet -----------------------------------------------------------------------


def test_create_node_keeps_status(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    name = f"reg-{namespace}"[:63]
    status = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        "addresses": [{"type": "InternalIP", "address": "192.0.2.20"}],
    }
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status}
    try:
        kubectl("create", "-f", str(kubectl.manifest("node.json", json.dumps(body))))
        assert table(kubectl("get", "node", name).stdout)[1][0][1] == "Ready"
    finally:
        api.delete(f"/api/v1/nodes/{name}")


@pytest.mark.parametrize(
    "resources, qos",
    [
        pytest.param({}, "BestEffort", id="best-effort"),
        pytest.param({"requests": {"cpu": "100m"}}, "Burstable", id="burstable"),
        pytest.param(
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            "Guaranteed",
            id="guaranteed",
        ),
    ],
)
def test_pod_qos_class(
    kubectl: Kubectl, api: httpx.Client, namespace: str, resources: dict[str, Any], qos: str
) -> None:
    create(
        api,
        f"/api/v1/namespaces/{namespace}/pods",
        {
            "metadata": {"name": "app"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": resources}]},
        },
    )
    assert described(kubectl("describe", "pod", "app").stdout)["QoS Class"] == qos


def test_pod_defaults_shown_by_describe(kubectl: Kubectl) -> None:
    kubectl.apply(POD)
    lines = [" ".join(line.split()) for line in kubectl("describe", "pod", "app").stdout.splitlines()]
    assert "Readiness: http-get http://:http/healthz delay=0s timeout=1s period=5s #success=1 #failure=3" in lines
    assert "POD_NAME: app (v1:metadata.name)" in lines
    init = kubectl.json("get", "pod", "app")["spec"]["initContainers"][0]
    assert init["imagePullPolicy"] == "IfNotPresent"
    assert init["terminationMessagePolicy"] == "File"
