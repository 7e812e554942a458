"""The serving certificate's names: what pods use to reach the API (`kubernetes.default.svc`, the kubernetes
ClusterIP, the sandbox's LAN address) and what tinykube up asks for; a certificate lacking one is issued again by
the same CA, which is never regenerated."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509

from tinykube.apiserver.bootstrap.pki import ensure_pki
from tinykube.up import UpOptions, _serving_sans


def sans(path: Path) -> tuple[set[str], set[str]]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(names.get_values_for_type(x509.DNSName)), {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}


def test_up_asks_for_the_in_cluster_names(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path, *_serving_sans(UpOptions(service_cluster_ip_range="10.100.0.0/16")))
    names, ips = sans(pki.cert)
    assert {"kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"} <= names
    assert "kubernetes.default.svc.cluster.local" in names
    assert {"127.0.0.1", "10.100.0.1", "172.20.0.1"} <= ips


def test_a_certificate_lacking_a_name_is_issued_again_by_the_same_ca(tmp_path: Path) -> None:
    first = ensure_pki(tmp_path)
    ca, key, cert = first.ca_cert.read_bytes(), first.key.read_bytes(), first.cert.read_bytes()
    assert ensure_pki(tmp_path).cert.read_bytes() == cert  # nothing new asked: kept
    again = ensure_pki(tmp_path, ("10.96.0.1",), ("kubernetes.default.svc.tiny.test",))
    assert again.ca_cert.read_bytes() == ca
    assert again.key.read_bytes() != key and again.cert.read_bytes() != cert
    names, ips = sans(again.cert)
    assert "kubernetes.default.svc.tiny.test" in names and "10.96.0.1" in ips
    issued = x509.load_pem_x509_certificate(again.cert.read_bytes())
    authority = x509.load_pem_x509_certificate(ca)
    issued.verify_directly_issued_by(authority)
    assert not list(tmp_path.glob("*.tmp"))
