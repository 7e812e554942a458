"""The cluster CA, the apiserver's serving certificate and the service-account signing key, generated on first
start and kept in the data dir."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

SERVING_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVING_IPS = ("127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class Pki:
    ca_cert: Path
    cert: Path
    key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, years: int
) -> x509.CertificateBuilder:
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=365 * years))
    )


def ensure_pki(directory: Path, extra_ips: tuple[str, ...] = (), extra_names: tuple[str, ...] = ()) -> Pki:
    """Create the CA and serving certificate unless they exist; the CA is never regenerated. A serving certificate
    lacking one of the names or addresses asked for (a cluster made before they were) is issued again by the CA."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory / "ca.crt", directory / "apiserver.crt", directory / "apiserver.key")
    names = list(dict.fromkeys((*SERVING_NAMES, *extra_names)))
    ips = list(dict.fromkeys(str(ipaddress.ip_address(ip)) for ip in (*SERVING_IPS, *extra_ips)))
    ca_key_path = directory / "ca.key"
    if pki.ca_cert.exists() and pki.cert.exists() and pki.key.exists():
        if _covers(pki.cert, names, ips) or not ca_key_path.exists():
            return pki
        ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            return pki
        _issue_serving(pki, loaded, ca.subject, names, ips)
        return pki
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("tinykube-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), 10)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _write_private(ca_key_path, _key_pem(ca_key))
    _issue_serving(pki, ca_key, ca_name, names, ips)
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return pki


def _covers(cert_path: Path, names: list[str], ips: list[str]) -> bool:
    """Whether the serving certificate names every DNS name and IP address asked for."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    have_names = set(sans.get_values_for_type(x509.DNSName))
    have_ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    return set(names) <= have_names and set(ips) <= have_ips


def _issue_serving(
    pki: Pki, ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, names: list[str], ips: list[str]
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        _builder(_name("kube-apiserver"), ca_name, key.public_key(), 5)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_tmp, cert_tmp = pki.key.with_suffix(".key.tmp"), pki.cert.with_suffix(".crt.tmp")
    _write_private(key_tmp, _key_pem(key))
    cert_tmp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_tmp.replace(pki.key)
    cert_tmp.replace(pki.cert)


SERVICE_ACCOUNT_KEY = "sa.key"  # kubeadm's names: the private key signs tokens, `sa.pub` is what verifiers need
SERVICE_ACCOUNT_PUB = "sa.pub"


def ensure_service_account_key(directory: Path) -> Path:
    """The RSA key that signs service-account tokens (RS256, as upstream), created unless it exists and never
    regenerated: tokens already handed out stay valid across restarts."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SERVICE_ACCOUNT_KEY
    if path.exists():
        return path
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (directory / SERVICE_ACCOUNT_PUB).write_bytes(public)
    tmp = directory / f".{SERVICE_ACCOUNT_KEY}.tmp"
    _write_private(tmp, pem)
    tmp.replace(path)  # last and atomic: a start interrupted midway never leaves half a key to load
    return path


def load_service_account_key(path: Path) -> rsa.RSAPrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{path}: the service-account key must be an RSA key (tokens are signed RS256)")
    return key
