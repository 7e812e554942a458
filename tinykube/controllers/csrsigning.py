"""The CSR signer (upstream's `csrsigning`): approved CertificateSigningRequests for the signers
`kubernetes.io/kube-apiserver-client` and `kubernetes.io/kube-apiserver-client-kubelet` get a certificate from
the cluster CA in `status.certificate`, which the apiserver then accepts as a client certificate.

As upstream: nothing happens before the request is Approved, after it has Failed, or once it has a certificate;
a request the signer cannot honour gets a `Failed` condition (reason `SignerValidationFailure`) instead — for the
client signer, usages other than client auth, digital signature and key encipherment, or no client auth; for the
kubelet client signer, anything but `O=system:nodes`, `CN=system:node:<name>`, no SANs and its usages. The
lifetime is `spec.expirationSeconds` within [10 minutes, --cluster-signing-duration] (default: one year), and
starts 5 minutes back for certificates of 8 hours or more. Other signers' requests are left to their signers.

Unlike upstream, where the CertificateSubjectRestriction admission plugin refuses them on create, a client request
for the `system:masters` group is failed here: that group is never limited by RBAC.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
from pathlib import Path
from typing import Any

from tinykube.api import errors
from tinykube.api.meta import now
from tinykube.api.resources import builtin
from tinykube.client.controller import Loop, run_controller
from tinykube.client.workqueue import WorkQueue
from tinykube.controllers.context import ControllerContext

log = logging.getLogger(__name__)

CSRS = builtin("certificates.k8s.io", "v1", "certificatesigningrequests")
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
MIN_DURATION = 600.0
BACKDATE = 300.0
SHORT = 8 * 3600.0

Object = dict[str, Any]


class SignerError(Exception):
    """Why a request cannot be signed by its signer (its Failed condition's message)."""


def check_client_usages(usages: list[str]) -> None:
    """validAPIServerClientUsages."""
    client_auth = False
    for usage in usages:
        if usage == "client auth":
            client_auth = True
        elif usage not in ("digital signature", "key encipherment"):
            raise SignerError(f"invalid usage for client certificate: {usage}")
    if not client_auth:
        raise SignerError("missing required usage for client certificate: client auth")


def check_kubelet_client(request: Any, usages: list[str]) -> None:
    """ValidateKubeletClientCSR."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    organizations = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if organizations != ["system:nodes"]:
        raise SignerError("subject organization is not system:nodes")
    try:
        sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = None
    if sans is not None:
        for kind, what in (
            (x509.DNSName, "DNS"),
            (x509.RFC822Name, "Email"),
            (x509.IPAddress, "IP"),
            (x509.UniformResourceIdentifier, "URI"),
        ):
            if sans.get_values_for_type(kind):
                raise SignerError(f"{what} subjectAltNames are not allowed")
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or not str(names[0].value).startswith("system:node:"):
        raise SignerError("subject common name does not begin with system:node:")
    required = {"digital signature", "key encipherment", "client auth"}
    if set(usages) not in (required, required - {"key encipherment"}):
        raise SignerError("usages did not match [client auth digital signature key encipherment]")


def _masters(request: Any) -> None:
    from cryptography.x509.oid import NameOID

    organizations = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if "system:masters" in organizations:
        raise SignerError(f"use of {CLIENT_SIGNER} signer with system:masters group is not allowed")


def duration(expiration_seconds: Any, ttl: float) -> float:
    """The certificate's lifetime: the request's within [10 minutes, ttl], else ttl."""
    if not isinstance(expiration_seconds, int) or isinstance(expiration_seconds, bool):
        return ttl
    return min(max(float(expiration_seconds), MIN_DURATION), ttl)


_KEY_USAGES = {
    "digital signature": "digital_signature",
    "content commitment": "content_commitment",
    "key encipherment": "key_encipherment",
    "key agreement": "key_agreement",
    "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign",
    "crl sign": "crl_sign",
    "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}


class CertificateAuthority:
    def __init__(self, cert_file: Path, key_file: Path) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization

        self.cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        self.key: Any = serialization.load_pem_private_key(key_file.read_bytes(), password=None)

    def sign(self, request: Any, usages: list[str], lifetime: float, at: datetime.datetime | None = None) -> bytes:
        """A certificate for the request's subject, SANs and key, with the asked usages (PermissiveSigningPolicy)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID

        start = at or datetime.datetime.now(datetime.UTC)
        if lifetime >= SHORT:
            start -= datetime.timedelta(seconds=BACKDATE)
        end = min(start + datetime.timedelta(seconds=lifetime), self.cert.not_valid_after_utc)
        flags = {field: False for field in _KEY_USAGES.values()}
        flags.update({_KEY_USAGES[u]: True for u in usages if u in _KEY_USAGES})
        extended = {
            "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
            "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
            "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
            "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
            "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
            "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
        }
        builder = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.cert.subject)
            .public_key(request.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if any(flags.values()):
            builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
        ekus = [extended[u] for u in usages if u in extended]
        if ekus:
            builder = builder.add_extension(x509.ExtendedKeyUsage(ekus), critical=False)
        try:
            sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            builder = builder.add_extension(sans, critical=False)
        except x509.ExtensionNotFound:
            pass
        return builder.sign(self.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _approved(csr: Object) -> bool:
    conditions = (csr.get("status") or {}).get("conditions") or []
    types = {c.get("type") for c in conditions if c.get("status", "True") == "True"}
    return "Approved" in types and "Denied" not in types and "Failed" not in types


class CsrSigningController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.csrs = ctx.informers.informer(CSRS)
        self.queue: WorkQueue[str] = WorkQueue()
        self.ca: CertificateAuthority | None = None

    async def run(self) -> None:
        settings = self.ctx.settings
        if settings.cluster_signing_cert_file is None or settings.cluster_signing_key_file is None:
            log.info(
                "no --cluster-signing-cert-file/--cluster-signing-key-file: no CertificateSigningRequest is signed"
            )
            return
        self.ca = await asyncio.to_thread(
            CertificateAuthority, settings.cluster_signing_cert_file, settings.cluster_signing_key_file
        )
        self.csrs.add_handler(on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new))
        await run_controller(self.ctx.informers, [self.csrs], Loop(self.queue, self.sync, workers=2))

    def _enqueue(self, csr: Object) -> None:
        self.queue.add(csr["metadata"]["name"])

    async def sync(self, name: str) -> None:
        csr = self.csrs.store.get(name)
        if csr is None or not _approved(csr) or (csr.get("status") or {}).get("certificate"):
            return
        spec = csr.get("spec") or {}
        signer = spec.get("signerName")
        if signer not in (CLIENT_SIGNER, KUBELET_CLIENT_SIGNER):
            return
        from cryptography import x509

        usages = [str(u) for u in spec.get("usages") or []]
        try:
            request = x509.load_pem_x509_csr(base64.b64decode(spec.get("request", "")))
        except ValueError as err:
            log.warning("unable to parse csr %r: %s", name, err)
            return
        try:
            if signer == CLIENT_SIGNER:
                check_client_usages(usages)
                _masters(request)
            else:
                check_kubelet_client(request, usages)
        except SignerError as err:
            await self._fail(csr, str(err))
            return
        assert self.ca is not None
        lifetime = duration(spec.get("expirationSeconds"), self.ctx.settings.cluster_signing_duration)
        pem = self.ca.sign(request, usages, lifetime)
        status = dict(csr.get("status") or {})
        status["certificate"] = base64.b64encode(pem).decode()
        await self._write_status(csr, status)

    async def _fail(self, csr: Object, message: str) -> None:
        status = dict(csr.get("status") or {})
        condition = {
            "type": "Failed",
            "status": "True",
            "reason": "SignerValidationFailure",
            "message": message,
            "lastUpdateTime": now(),
        }
        status["conditions"] = [*(status.get("conditions") or []), condition]
        await self._write_status(csr, status)

    async def _write_status(self, csr: Object, status: Object) -> None:
        updated = {**csr, "status": status}
        try:
            await self.ctx.client.update(CSRS, "", updated, subresource="status")
        except errors.NotFound:
            return
        except errors.Conflict:
            self.queue.add(csr["metadata"]["name"])  # the informer brings the newer one; try again with it
