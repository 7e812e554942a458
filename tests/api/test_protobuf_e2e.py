"""kubectl's generator commands against a running cluster: the protobuf body each one sends decodes to the
object of its ``--dry-run=client -o json``, the command succeeds, and the stored object holds what was sent.

kubectl logs a protobuf request body as a hex dump at ``-v=10``, which is how the bodies are read here.
``kubectl run`` and ``kubectl expose`` send JSON; they are here because they are generator commands too.
A failure of the command itself (rather than of the decoding check before it) is the server's strategy for
that kind, not protobuf decoding.
"""

from __future__ import annotations

import base64
import concurrent.futures
import datetime
import json
import re
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.conftest import RunningCluster, eventually
from tinykube.api.protobuf import MAGIC, decode

_HEX_LINE = re.compile(r"^\t?[0-9a-f]{8}  ")


def request_bodies(log: str) -> list[bytes]:
    """The protobuf request bodies in a ``kubectl -v=10`` log (client-go hex-dumps them)."""
    bodies: list[bytes] = []
    current: bytearray | None = None
    for line in log.splitlines():
        if current is None:
            if '"Request Body" body=<' in line:
                current = bytearray()
        elif _HEX_LINE.match(line):
            current.extend(bytes.fromhex("".join(line.lstrip("\t")[10:59].split())))
        else:
            bodies.append(bytes(current))
            current = None
    return [body for body in bodies if body.startswith(MAGIC)]


def test_request_bodies_reads_hex_dumps() -> None:
    log = (
        'I1125 01:24:06.006766    4141 type.go:252] "Request Body" body=<\n'
        "\t00000000  6b 38 73 00 0a 0f 0a 02  76 31 12 09 43 6f 6e 66  |k8s.....v1..Conf|\n"
        "\t00000010  69 67                                             |ig|\n"
        " >\n"
        'I1125 01:24:06.006766    4141 helper.go:246] "Request Body" body=<\n'
        '\t{"kind":"Pod"}\n'
        " >\n"
    )
    assert request_bodies(log) == [b"k8s\x00\n\x0f\n\x02v1\x12\tConfig"]


def _with_flags(args: list[str], *flags: str) -> list[str]:
    """`flags` before a `--` that starts the container command, if any."""
    at = args.index("--") if "--" in args else len(args)
    return [*args[:at], *flags, *args[at:]]


def kubectl(cluster: RunningCluster, args: list[str], *flags: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(*_with_flags(args, *flags), check=False)


def contains(stored: Any, sent: Any, where: str = "") -> list[str]:
    """Where `stored` lacks something of `sent`: every key and list item of `sent` must be in `stored` (which
    may have more: defaults); a null of `sent` (a nil list) may be absent, null or empty in `stored`."""
    if sent is None:
        return [] if stored in (None, [], {}) else [f"{where}: {stored!r}, expected nothing"]
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{where}: {stored!r}, expected an object"]
        return [
            problem
            for key, value in sent.items()
            for problem in contains(stored.get(key), value, f"{where}.{key}" if where else key)
            if not (value is None and key not in stored)
        ]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{where}: {stored!r}, expected {sent!r}"]
        return [problem for i, item in enumerate(sent) for problem in contains(stored[i], item, f"{where}[{i}]")]
    return [] if stored == sent else [f"{where}: {stored!r}, expected {sent!r}"]


def test_contains() -> None:
    assert contains({"a": 1, "b": [{"c": 2, "d": 3}], "e": []}, {"a": 1, "b": [{"c": 2}], "e": None, "f": None}) == []
    assert contains({"a": [1, 2]}, {"a": [1]}) == ["a: [1, 2], expected [1]"]
    assert contains({"a": {"b": "x"}}, {"a": {"b": "y"}}) == ["a.b: 'x', expected 'y'"]


# --------------------------------------------------------------------------------------------------
# The generator commands
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    command: str  # {ns}: the test's namespace (names cluster-scoped objects apart); {dir}: the input files
    resource: str  # what `kubectl get` reads back
    name: str
    setup: tuple[str, ...] = ()
    protobuf: bool = True

    def args(self, text: str, namespace: str, files: Path) -> list[str]:
        return [part.format(ns=namespace, dir=files) for part in text.split(" ")]


CASES = {
    "configmap": Case("create configmap settings --from-literal=mode=fast --from-literal=empty=", "cm", "settings"),
    "configmap-binary": Case("create configmap blobs --from-file=blob={dir}/blob.bin", "cm", "blobs"),
    "secret-generic": Case(
        "create secret generic creds --from-literal=user=admin --from-literal=password=s3cret", "secret", "creds"
    ),
    "secret-tls": Case("create secret tls web-tls --cert={dir}/tls.crt --key={dir}/tls.key", "secret", "web-tls"),
    "secret-docker-registry": Case(
        "create secret docker-registry regcred --docker-server=registry.example.com --docker-username=u "
        "--docker-password=p --docker-email=u@example.com",
        "secret",
        "regcred",
    ),
    "serviceaccount": Case("create serviceaccount builder", "sa", "builder"),
    "deployment": Case("create deployment web --image=nginx:1.27 --port=8080 --replicas=2", "deploy", "web"),
    "job": Case("create job hello --image=busybox:1.36 -- echo hi", "job", "hello"),
    "cronjob": Case(
        "create cronjob nightly --image=busybox:1.36 --schedule=@daily --restart=OnFailure -- echo hi",
        "cronjob",
        "nightly",
    ),
    "job-from-cronjob": Case(
        "create job manual --from=cronjob/nightly",
        "job",
        "manual",
        setup=("create cronjob nightly --image=busybox:1.36 --schedule=@daily -- echo hi",),
    ),
    "role": Case(
        "create role reader --verb=get,list,watch --resource=pods,deployments.apps --resource-name=web",
        "role",
        "reader",
    ),
    "rolebinding": Case(
        "create rolebinding read --role=reader --user=alice --group=devs --serviceaccount={ns}:builder",
        "rolebinding",
        "read",
    ),
    "rolebinding-clusterrole": Case("create rolebinding view --clusterrole=view --user=bob", "rolebinding", "view"),
    "clusterrole": Case(
        "create clusterrole node-reader-{ns} --verb=get --resource=nodes --non-resource-url=/healthz",
        "clusterrole",
        "node-reader-{ns}",
    ),
    "clusterrole-aggregated": Case(
        "create clusterrole monitoring-{ns} --aggregation-rule=rbac.example.com/aggregate-to-{ns}=true",
        "clusterrole",
        "monitoring-{ns}",
    ),
    "clusterrolebinding": Case(
        "create clusterrolebinding node-readers-{ns} --clusterrole=view --user=bob --group=ops "
        "--serviceaccount={ns}:builder",
        "clusterrolebinding",
        "node-readers-{ns}",
    ),
    "poddisruptionbudget": Case(
        "create poddisruptionbudget web-pdb --selector=app=web --min-available=1", "pdb", "web-pdb"
    ),
    "poddisruptionbudget-percent": Case(
        "create poddisruptionbudget web-pdb --selector=app=web --max-unavailable=50%", "pdb", "web-pdb"
    ),
    "priorityclass": Case(
        "create priorityclass high-{ns} --value=1000 --description=important --preemption-policy=Never",
        "priorityclass",
        "high-{ns}",
    ),
    "priorityclass-zero": Case("create priorityclass zero-{ns} --value=0", "priorityclass", "zero-{ns}"),
    "quota": Case("create quota compute --hard=cpu=1,memory=1Gi,pods=2", "quota", "compute"),
    "quota-scoped": Case("create quota best-effort --hard=pods=4 --scopes=BestEffort", "quota", "best-effort"),
    "ingress": Case(
        "create ingress web --class=nginx --rule=foo.com/bar=svc1:8080,tls=web-tls --default-backend=defsvc:http "
        "--annotation=a=b",
        "ingress",
        "web",
    ),
    "ingress-prefix": Case("create ingress simple --rule=/path*=svc2:80", "ingress", "simple"),
    "autoscale": Case(
        "autoscale deployment web --min=2 --max=5 --cpu-percent=80",
        "horizontalpodautoscalers.v1.autoscaling",  # the version the body was in
        "web",
        setup=("create deployment web --image=nginx:1.27",),
    ),
    "expose": Case(
        "expose deployment web --port=80 --target-port=8080 --name=web-svc",
        "svc",
        "web-svc",
        setup=("create deployment web --image=nginx:1.27",),
        protobuf=False,
    ),
    "run": Case(
        "run nginx --image=nginx:1.27 --port=80 --labels=app=nginx,tier=fe --env=A=1 --restart=Never",
        "pod",
        "nginx",
        protobuf=False,
    ),
    "run-expose": Case("run web --image=nginx:1.27 --port=80 --expose", "svc", "web", protobuf=False),
}


def _self_signed(directory: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "example.com")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kubectl-inputs")
    (directory / "blob.bin").write_bytes(b"A\x00\xff\x01")  # base64 "QQD/AQ==", with padding
    _self_signed(directory)
    return directory


def _cluster_scoped_cleanup(cluster: RunningCluster, case: Case, namespace: str) -> None:
    if "{ns}" in case.name:
        cluster.kubectl("delete", case.resource, case.name.format(ns=namespace), "--wait=false", check=False)


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_generator_command(cluster: RunningCluster, namespace: str, files: Path, case: Case) -> None:
    ns = ["-n", namespace]
    for setup in case.setup:
        done = kubectl(cluster, case.args(setup, namespace, files), *ns)
        assert done.returncode == 0, done.stderr
    args = case.args(case.command, namespace, files)
    dry_run = kubectl(cluster, args, *ns, "--dry-run=client", "-o", "json")
    assert dry_run.returncode == 0, dry_run.stderr
    sent = list(_json_documents(dry_run.stdout))
    try:
        result = kubectl(cluster, args, *ns, "-v=10")
        bodies = request_bodies(result.stderr)
        if case.protobuf:
            assert bodies, "kubectl sent no protobuf body"
            assert [decode(body) for body in bodies] == sent
        assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
        name = case.name.format(ns=namespace)
        stored = cluster.kubectl_json("get", case.resource, name, *ns)
        expected = next(doc for doc in sent if (doc["kind"], doc["metadata"]["name"]) == (stored["kind"], name))
        expected = {k: v for k, v in expected.items() if k != "status"}
        expected["metadata"] = {k: v for k, v in expected["metadata"].items() if k != "creationTimestamp"}
        assert contains(stored, expected) == []
    finally:
        _cluster_scoped_cleanup(cluster, case, namespace)


def _json_documents(text: str) -> Iterator[dict[str, Any]]:
    """The objects of `kubectl -o json` output: one, a List, or several documents one after another."""
    decoder, position = json.JSONDecoder(), 0
    while text[position:].strip():
        document, position = decoder.raw_decode(text, len(text) - len(text[position:].lstrip()))
        yield from document["items"] if document.get("kind") == "List" else [document]


# --------------------------------------------------------------------------------------------------
# Other commands that send protobuf: create token, auth can-i / whoami, certificate approve, drain
# --------------------------------------------------------------------------------------------------


def _run(cluster: RunningCluster, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    result = kubectl(cluster, list(args), "-v=10")
    return result, [decode(body) for body in request_bodies(result.stderr)]


def test_create_token(cluster: RunningCluster, namespace: str) -> None:
    cluster.kubectl("-n", namespace, "create", "serviceaccount", "builder")
    result, sent = _run(cluster, "-n", namespace, "create", "token", "builder", "--duration=10m", "--audience=api")
    assert [body["spec"] for body in sent] == [{"audiences": ["api"], "expirationSeconds": 600}]
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
    assert result.stdout.strip().count(".") == 2  # a JWT


def test_create_token_without_options(cluster: RunningCluster, namespace: str) -> None:
    cluster.kubectl("-n", namespace, "create", "serviceaccount", "builder")
    result, sent = _run(cluster, "-n", namespace, "create", "token", "builder")
    assert [body["spec"] for body in sent] == [{"audiences": None}]
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
    assert result.stdout.strip().count(".") == 2


def test_auth_can_i(cluster: RunningCluster, namespace: str) -> None:
    result, sent = _run(cluster, "-n", namespace, "auth", "can-i", "get", "pods", "--subresource=log")
    assert [body["spec"] for body in sent] == [
        {"resourceAttributes": {"namespace": namespace, "verb": "get", "resource": "pods", "subresource": "log"}}
    ]
    assert (result.returncode, result.stdout.strip()) == (0, "yes"), result.stderr.strip().splitlines()[-1]


def test_auth_can_i_list(cluster: RunningCluster, namespace: str) -> None:
    result, sent = _run(cluster, "-n", namespace, "auth", "can-i", "--list")
    assert [(body["kind"], body["spec"]) for body in sent] == [("SelfSubjectRulesReview", {"namespace": namespace})]
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
    assert "Resources" in result.stdout


def test_auth_whoami(cluster: RunningCluster) -> None:
    result, sent = _run(cluster, "auth", "whoami", "-o", "json")
    assert [body["kind"] for body in sent] == ["SelfSubjectReview"]
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
    assert json.loads(result.stdout)["status"]["userInfo"]["username"]


def test_certificate_approve(cluster: RunningCluster) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    pem = request.public_bytes(serialization.Encoding.PEM)
    name = f"alice-{secrets.token_hex(3)}"
    csr = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
        },
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(csr))
    try:
        result, sent = _run(cluster, "certificate", "approve", name)
        assert [body["status"]["conditions"][-1]["type"] for body in sent] == ["Approved"]
        assert [body["spec"]["request"] for body in sent] == [csr["spec"]["request"]]
        assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
        conditions = cluster.kubectl_json("get", "csr", name)["status"]["conditions"]
        assert [c["type"] for c in conditions] == ["Approved"]
    finally:
        cluster.kubectl("delete", "csr", name, check=False)


def test_drain_evicts_with_its_delete_options(cluster: RunningCluster, namespace: str) -> None:
    """kubectl drain evicts through `pods/eviction` now that discovery lists it; the Eviction goes as JSON (its
    protobuf DELETE fallback is no longer taken), carrying the grace period in its deleteOptions."""
    node = f"n-{namespace}"[:63]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": namespace},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    }
    cluster.kubectl(
        "create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    )
    try:
        cluster.kubectl("create", "-f", "-", input=json.dumps(pod))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            draining = pool.submit(
                kubectl, cluster, ["drain", node, "--force", "--grace-period=5", "--timeout=30s"], "-v=10"
            )
            # the evicted pod is Terminating for its 5 s; no kubelet runs that node, so finish it as one would
            evicted = eventually(
                lambda: (
                    (p := cluster.kubectl_json("-n", namespace, "get", "pod", "p1"))["metadata"].get(
                        "deletionGracePeriodSeconds"
                    )
                    == 5
                    and p
                )
            )
            uid = evicted["metadata"]["uid"]
            cluster.kubectl("-n", namespace, "delete", "pod", "p1", "--grace-period=0", "--force")
            result = draining.result(timeout=60)
        assert uid and result.returncode == 0, result.stderr.strip().splitlines()[-1]
        lines = result.stderr.splitlines()
        evictions = [
            json.loads(lines[i + 1])
            for i, line in enumerate(lines)
            if "eviction_expansion.go" in line and "Request Body" in line
        ]
        assert [(e["kind"], e["deleteOptions"]["gracePeriodSeconds"]) for e in evictions] == [("Eviction", 5)]
    finally:
        cluster.kubectl("delete", "node", node, "--wait=false", check=False)
