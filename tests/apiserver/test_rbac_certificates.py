"""Client certificates: a CSR approved with `kubectl certificate approve` is signed by the csrsigning controller
with the cluster CA, and the certificate then authenticates kubectl as its CN in its O groups, under RBAC. Requests
the signer refuses get a Failed condition. The signer's pieces (lifetime, usages) are checked without a server."""

from __future__ import annotations

import base64
import datetime
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import RunningCluster, eventually
from tinykube.controllers.csrsigning import (
    CertificateAuthority,
    SignerError,
    check_client_usages,
    check_kubelet_client,
    duration,
)

YEAR = 365 * 24 * 3600.0
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def key_and_request(common_name: str, *organizations: str) -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    names += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(key, hashes.SHA256())
    return key, request.public_bytes(serialization.Encoding.PEM)


# ---- without a server -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "given"), [(None, YEAR), (60, 600.0), (600, 600.0), (3600, 3600.0), (10 * YEAR, YEAR), (True, YEAR)]
)
def test_lifetime(asked: Any, given: float) -> None:
    assert duration(asked, YEAR) == given


@pytest.mark.parametrize(
    ("usages", "error"),
    [
        (["client auth"], None),
        (["digital signature", "key encipherment", "client auth"], None),
        (["digital signature"], "missing required usage for client certificate: client auth"),
        (["client auth", "server auth"], "invalid usage for client certificate: server auth"),
    ],
)
def test_client_signer_usages(usages: list[str], error: str | None) -> None:
    if error is None:
        check_client_usages(usages)
    else:
        with pytest.raises(SignerError, match=error):
            check_client_usages(usages)


def test_kubelet_client_signer_wants_a_node() -> None:
    _, pem = key_and_request("system:node:node-1", "system:nodes")
    request = x509.load_pem_x509_csr(pem)
    check_kubelet_client(request, ["digital signature", "client auth"])
    with pytest.raises(SignerError, match="usages did not match"):
        check_kubelet_client(request, ["client auth"])
    _, other = key_and_request("jane", "system:nodes")
    with pytest.raises(SignerError, match="subject common name does not begin with system:node:"):
        check_kubelet_client(x509.load_pem_x509_csr(other), ["digital signature", "client auth"])
    _, devs = key_and_request("system:node:x", "devs")
    with pytest.raises(SignerError, match="subject organization is not system:nodes"):
        check_kubelet_client(x509.load_pem_x509_csr(devs), ["digital signature", "client auth"])


def test_signed_certificates(tmp_path: Path) -> None:
    from tinykube.apiserver.bootstrap.pki import ensure_pki

    pki = ensure_pki(tmp_path)
    ca = CertificateAuthority(pki.ca_cert, tmp_path / "ca.key")
    _, pem = key_and_request("jane", "devs", "ops")
    at = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    long = x509.load_pem_x509_certificate(ca.sign(x509.load_pem_x509_csr(pem), ["client auth"], YEAR, at))
    assert long.subject == x509.load_pem_x509_csr(pem).subject
    assert long.issuer == ca.cert.subject
    assert long.not_valid_before_utc == at - datetime.timedelta(minutes=5)  # backdated
    assert long.not_valid_after_utc - long.not_valid_before_utc == datetime.timedelta(days=365)
    eku = long.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert long.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    short = x509.load_pem_x509_certificate(ca.sign(x509.load_pem_x509_csr(pem), ["client auth"], 600, at))
    assert (short.not_valid_before_utc, short.not_valid_after_utc) == (at, at + datetime.timedelta(seconds=600))


# ---- on a cluster ---------------------------------------------------------------------------------------------------


def create_csr(cluster: RunningCluster, name: str, pem: bytes, usages: list[str], **spec: Any) -> None:
    csr = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": usages,
            **spec,
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(csr))


def test_an_approved_csr_is_a_kubectl_user(
    cluster: RunningCluster, api: httpx.Client, namespace: str, tmp_path: Path
) -> None:
    name = f"jane-{secrets.token_hex(3)}"
    key, pem = key_and_request(name, "devs", "qa")
    create_csr(cluster, name, pem, ["client auth", "digital signature"], expirationSeconds=3600)
    try:
        assert (api.get(f"{CSRS}/{name}").json().get("status") or {}).get("certificate") is None  # not approved yet
        assert cluster.kubectl("certificate", "approve", name).stdout.strip() == (
            f"certificatesigningrequest.certificates.k8s.io/{name} approved"
        )
        issued = eventually(
            lambda: (api.get(f"{CSRS}/{name}").json().get("status") or {}).get("certificate"), what="the certificate"
        )
        listed = cluster.kubectl("get", "csr", name).stdout.splitlines()[1].split()
        assert listed[-1] == "Approved,Issued" and listed[-2] == "60m"
        cert = x509.load_pem_x509_certificate(base64.b64decode(issued))
        assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(hours=1)
        kubeconfig = cert_kubeconfig(cluster, tmp_path, key, base64.b64decode(issued))

        def as_jane(*args: str) -> Any:
            return cluster.kubectl("--kubeconfig", str(kubeconfig), *args, check=False)

        whoami = json.loads(as_jane("auth", "whoami", "-o", "json").stdout)
        assert whoami["status"]["userInfo"] == {"username": name, "groups": ["devs", "qa", "system:authenticated"]}
        denied = as_jane("get", "pods", "-n", namespace)
        assert denied.stderr.strip() == (
            f'Error from server (Forbidden): pods is forbidden: User "{name}" cannot list resource "pods" in API '
            f'group "" in the namespace "{namespace}"'
        )
        cluster.kubectl("create", "rolebinding", "qa-view", "--clusterrole=view", "--group=qa", "-n", namespace)
        assert as_jane("get", "pods", "-n", namespace).returncode == 0
        assert as_jane("auth", "can-i", "create", "pods", "-n", namespace).stdout == "no\n"
    finally:
        api.delete(f"{CSRS}/{name}")


def cert_kubeconfig(cluster: RunningCluster, directory: Path, key: ec.EllipticCurvePrivateKey, cert: bytes) -> Path:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    config["users"] = [
        {
            "name": "cert",
            "user": {
                "client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key_pem).decode(),
            },
        }
    ]
    for context in config["contexts"]:
        context["context"]["user"] = "cert"
    path = directory / "cert.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    ("organizations", "usages", "message"),
    [
        ((), ["client auth", "server auth"], "invalid usage for client certificate: server auth"),
        (("system:masters",), ["client auth"], "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),  # noqa: E501
    ],
)  # fmt: skip
def test_the_signer_fails_what_it_cannot_sign(
    cluster: RunningCluster, api: httpx.Client, organizations: tuple[str, ...], usages: list[str], message: str
) -> None:
    name = f"bad-{secrets.token_hex(3)}"
    _, pem = key_and_request("mallory", *organizations)
    create_csr(cluster, name, pem, usages)
    try:
        cluster.kubectl("certificate", "approve", name)

        def failed() -> dict[str, Any] | None:
            conditions = (api.get(f"{CSRS}/{name}").json().get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Failed"), None)

        condition = eventually(failed, what="the Failed condition")
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "True",
            "SignerValidationFailure",
            message,
        )
        assert "certificate" not in api.get(f"{CSRS}/{name}").json()["status"]
    finally:
        api.delete(f"{CSRS}/{name}")


def test_a_certificate_of_another_ca_fails_the_handshake(cluster: RunningCluster, tmp_path: Path) -> None:
    from tinykube.apiserver.bootstrap.pki import ensure_pki

    other = ensure_pki(tmp_path / "other")
    ca = CertificateAuthority(other.ca_cert, tmp_path / "other" / "ca.key")
    key, pem = key_and_request("eve", "system:masters")
    cert = ca.sign(x509.load_pem_x509_csr(pem), ["client auth"], 3600)
    kubeconfig = cert_kubeconfig(cluster, tmp_path, key, cert)
    result = cluster.kubectl("--kubeconfig", str(kubeconfig), "get", "nodes", check=False)
    assert result.returncode == 1 and "eve" not in result.stdout


def test_approving_needs_the_approve_verb_on_the_signer(
    cluster: RunningCluster, api: httpx.Client, namespace: str, tmp_path: Path
) -> None:
    """Upstream's CertificateApproval admission: `update` on the approval subresource is not enough."""
    name = f"approve-me-{secrets.token_hex(3)}"
    role = f"t-csr-approver-{secrets.token_hex(3)}"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    made: list[str] = [f"{CSRS}/{name}"]
    try:
        _, pem = key_and_request("someone")
        create_csr(cluster, name, pem, ["client auth"])
        rules = [{"verbs": ["get", "list"], "apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"]},  # noqa: E501
                 {"verbs": ["update"], "apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"]}]  # noqa: E501  # fmt: skip
        assert api.post(f"{rbac}/clusterroles", json={"metadata": {"name": role}, "rules": rules}).status_code == 201
        made.append(f"{rbac}/clusterroles/{role}")
        subject = {"kind": "ServiceAccount", "name": "approver", "namespace": namespace}
        binding = {"metadata": {"name": role}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": [subject]}  # noqa: E501  # fmt: skip
        assert api.post(f"{rbac}/clusterrolebindings", json=binding).status_code == 201
        made.append(f"{rbac}/clusterrolebindings/{role}")
        assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": "approver"}})
        token = api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/approver/token", json={"spec": {}})
        as_approver = ("--token", token.json()["status"]["token"])
        refused = cluster.kubectl(*as_approver, "certificate", "approve", name, check=False)
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith(
            f'certificatesigningrequests.certificates.k8s.io "{name}" is forbidden: user not permitted to approve '
            'requests with signerName "kubernetes.io/kube-apiserver-client"'
        )
        signers = {"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/*"]}  # noqa: E501  # fmt: skip
        api.patch(f"{rbac}/clusterroles/{role}", json={"rules": [*rules, signers]}, headers={"Content-Type": "application/merge-patch+json"})  # noqa: E501  # fmt: skip
        cluster.kubectl(*as_approver, "certificate", "approve", name)
        eventually(lambda: (api.get(f"{CSRS}/{name}").json().get("status") or {}).get("certificate"), what="issued")
    finally:
        for path in made:
            api.delete(path)
