"""Strategy (upstream v1 defaulting and validation) for certificates.k8s.io CertificateSigningRequest: the request
(PEM, signature, signer name, usages), the approval conditions (the `approval` subresource), the issued certificate
(`status`), and the requester's identity, recorded from the authenticated user whatever the client sent.

No certificate is signed here. Field paths and messages are kube-apiserver 1.32's. Old objects stay writable:
upstream's certificateValidationOptions relax, on update, the checks that the stored object already broke.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tinykube.api import errors
from tinykube.api.errors import ErrorType, FieldError, forbidden, go_value, invalid, not_supported, required
from tinykube.api.jsonshape import as_dict, as_int, as_list, as_str, indexed_dicts
from tinykube.api.meta import dns1123_label, dns1123_subdomain, now
from tinykube.apiserver.auth.identity import UserInfo
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.gosyntax import go_invalid
from tinykube.apiserver.registry.validation import CONDITION_STATUSES, NamedItems, decode_bytes

if TYPE_CHECKING:  # cryptography is imported when a request is parsed: 50 ms less at start-up
    from cryptography import x509

LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
KEY_USAGES = sorted(
    [
        "signing", "digital signature", "content commitment", "key encipherment", "key agreement",
        "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth",
        "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
        "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc",
    ]
)  # fmt: skip
_TRUE_ONLY_CONDITIONS = ("Approved", "Denied", "Failed")  # may only be present with status True
_APPROVAL_CONDITIONS = ("Approved", "Denied")
_PEM_BLOCK = re.compile(rb"-----BEGIN ([^\r\n-]*)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def any_name(name: str) -> list[str]:
    return []


def _go_bytes(data: bytes | None) -> str:
    """Go's `%#v` of a []byte, the value upstream's field error shows for a bad request."""
    if data is None:
        return "[]byte(nil)"
    return "[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}"


def _pem_blocks(data: bytes) -> list[tuple[str, bytes, bool]]:
    """(type, DER, has headers) of each PEM block, as Go's pem.Decode walks them (junk between blocks skipped)."""
    blocks: list[tuple[str, bytes, bool]] = []
    for match in _PEM_BLOCK.finditer(data):
        body = match.group(2)
        head, sep, rest = body.partition(b"\n\n") if b":" in body.split(b"\n", 1)[0] else (b"", b"", body)
        try:
            der = base64.b64decode(b"".join(rest.split()), validate=True)
        except binascii.Error:
            continue  # Go skips a block whose body is not base64
        blocks.append((match.group(1).decode(errors="replace"), der, bool(head and sep)))
    return blocks


def _signature_failure(csr: x509.CertificateSigningRequest) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    key = csr.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        return "crypto/rsa: verification error"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "x509: ECDSA verification failure"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "x509: Ed25519 verification failure"
    return "x509: signature verification failure"


def csr_request_problem(pem: bytes) -> str:
    """Why `spec.request` is not a signed PKCS#10 request in PEM ("" when it is): upstream's ParseCSR, then
    CheckSignature. Parse failures are Go's x509 errors upstream; the texts here say the same in fewer words."""
    from cryptography import x509

    blocks = _pem_blocks(pem)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        csr = x509.load_der_x509_csr(blocks[0][1])
        signed = csr.is_signature_valid
    except (ValueError, TypeError):
        return "x509: malformed certificate request"
    return "" if signed else _signature_failure(csr)


def certificate_problem(pem: bytes) -> str:
    """Why `status.certificate` is not a PEM chain of CERTIFICATE blocks ("" when it is, or when it is empty)."""
    from cryptography import x509

    if not pem:
        return ""
    blocks = _pem_blocks(pem)
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    for kind, der, has_headers in blocks:
        if kind != "CERTIFICATE":
            return f"only CERTIFICATE PEM blocks are allowed, found {go_value(kind)}"
        if has_headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError:
            return "x509: malformed certificate"
    return ""


def signer_name_errors(signer: str, field: str) -> list[FieldError]:
    """core's ValidateSignerName: `<fully qualified domain>/<path>`, at most 571 characters."""
    if not signer:
        return [required(field)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [
            invalid(field, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")
        ]
    domain, path = segments
    errs: list[FieldError] = []
    if len(domain) > 253:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 253 bytes"))
    errs += _first_label_errors(domain, field, dns1123_label)
    if len(domain.split(".")) < 2:
        errs.append(invalid(field, domain, "should be a domain with at least two segments separated by dots"))
    errs += _first_label_errors(path, field, dns1123_subdomain)
    if len(path) > 317:  # room for `<namespace>.<name>`
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 317 bytes"))
    if len(signer) > 571:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 571 bytes"))
    return errs


def _first_label_errors(segment: str, field: str, rule: Callable[[str], list[str]]) -> list[FieldError]:
    """The errors of the first bad dot-separated label only: the later ones would read the same."""
    for label in segment.split("."):
        messages = rule(label)
        if messages:
            return [invalid(field, segment, f"validating label {go_value(label)}: {m}") for m in messages]
    return []


@dataclass(frozen=True, slots=True)
class _CsrOptions:
    """What a write may do (by subresource), and what bad stored data it must tolerate (upstream's
    certificateValidationOptions: old objects stay writable)."""

    setting_approval: bool = False
    both_approved_and_denied: bool = False
    legacy_signer: bool = False
    duplicate_condition_types: bool = False
    empty_condition_type: bool = False
    arbitrary_certificate: bool = False
    unknown_usages: bool = False
    duplicate_usages: bool = False


def _condition_types(csr: dict[str, Any]) -> list[str]:
    return [as_str(c.get("type")) for _, c in indexed_dicts(as_dict(csr.get("status")).get("conditions"))]


def _usages(csr: dict[str, Any]) -> list[Any]:
    return as_list(as_dict(csr.get("spec")).get("usages"))


def _csr_options(new: dict[str, Any], old: dict[str, Any] | None, *, setting_approval: bool) -> _CsrOptions:
    if old is None:
        return _CsrOptions(setting_approval=setting_approval)
    types, usages = _condition_types(old), _usages(old)
    certificate = as_dict(new.get("status")).get("certificate") == as_dict(old.get("status")).get("certificate")
    return _CsrOptions(
        setting_approval=setting_approval,
        both_approved_and_denied="Approved" in types and "Denied" in types,
        legacy_signer=as_dict(old.get("spec")).get("signerName") == LEGACY_UNKNOWN_SIGNER,
        duplicate_condition_types=len(set(types)) != len(types),
        empty_condition_type="" in types,
        arbitrary_certificate=certificate or bool(_stored_certificate_problem(old)),
        unknown_usages=any(u not in KEY_USAGES for u in usages),
        duplicate_usages=len({str(u) for u in usages}) != len(usages),
    )


def _stored_certificate_problem(csr: dict[str, Any]) -> str:
    try:
        return certificate_problem(
            decode_bytes(as_dict(csr.get("status")).get("certificate"), "CertificateSigningRequest")
        )
    except errors.BadRequest:
        return "not base64"


def _usage_errors(usages: list[Any], opts: _CsrOptions) -> list[FieldError]:
    errs = [] if usages else [required("spec.usages")]
    if not opts.unknown_usages:
        errs += [not_supported(f"spec.usages[{i}]", u, KEY_USAGES) for i, u in enumerate(usages) if u not in KEY_USAGES]
    if not opts.duplicate_usages:
        unique = NamedItems()
        errs += [err for i, usage in enumerate(usages) for err in unique.repeat(usage, f"spec.usages[{i}]")]
    return errs


def _csr_spec_errors(spec: dict[str, Any], opts: _CsrOptions) -> list[FieldError]:
    request = decode_bytes(spec.get("request"), "CertificateSigningRequest")
    problem = csr_request_problem(request)
    shown = _go_bytes(None if spec.get("request") is None else request)
    errs = [go_invalid("spec.request", shown, problem)] if problem else []
    errs += _usage_errors(as_list(spec.get("usages")), opts)
    signer = as_str(spec.get("signerName"))
    if signer == LEGACY_UNKNOWN_SIGNER and not opts.legacy_signer:
        errs.append(invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    else:
        errs += signer_name_errors(signer, "spec.signerName")
    expiration = as_int(spec.get("expirationSeconds"))
    if expiration is not None and expiration < 600:
        detail = "may not specify a duration less than 600 seconds (10 minutes)"
        errs.append(invalid("spec.expirationSeconds", expiration, detail))
    return errs


def _csr_condition_errors(conditions: list[tuple[int, dict[str, Any]]], opts: _CsrOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    types = NamedItems()
    for i, condition in conditions:
        path, kind, status = f"status.conditions[{i}]", as_str(condition.get("type")), condition.get("status", "")
        if not kind and not opts.empty_condition_type:
            errs.append(required(f"{path}.type"))
        allowed = ["True"] if kind in _TRUE_ONLY_CONDITIONS else CONDITION_STATUSES
        if status == "":
            errs.append(required(f"{path}.status"))
        elif status not in allowed:
            errs.append(not_supported(f"{path}.status", status, allowed))
        if not opts.both_approved_and_denied and kind in _APPROVAL_CONDITIONS:
            other = "Denied" if kind == "Approved" else "Approved"
            if other in types:
                detail = "Approved and Denied conditions are mutually exclusive"
                errs.append(invalid(f"{path}.type", kind, detail))
        repeated = types.repeat(kind, f"{path}.type")
        if not opts.duplicate_condition_types:
            errs += repeated
    return errs


def csr_errors(csr: dict[str, Any], opts: _CsrOptions) -> list[FieldError]:
    """validateCertificateSigningRequest: the request, usages, signer, expiration, conditions and certificate."""
    status = as_dict(csr.get("status"))
    errs = _csr_spec_errors(as_dict(csr.get("spec")), opts)
    errs += _csr_condition_errors(indexed_dicts(status.get("conditions")), opts)
    if not opts.arbitrary_certificate:
        problem = certificate_problem(decode_bytes(status.get("certificate"), "CertificateSigningRequest"))
        if problem:
            errs.append(invalid("status.certificate", "<certificate data>", problem))
    return errs


def _conditions_of(csr: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for _, c in indexed_dicts(as_dict(csr.get("status")).get("conditions")) if c.get("type") == kind]


def _csr_update_errors(new: dict[str, Any], old: dict[str, Any], opts: _CsrOptions) -> list[FieldError]:
    """Approved/Denied/Failed conditions are never removed; Approved/Denied change only through `approval`; the
    certificate is set once, through `status`."""
    errs: list[FieldError] = []
    for kind in (*_APPROVAL_CONDITIONS, "Failed"):
        if len(_conditions_of(new, kind)) < len(_conditions_of(old, kind)):
            errs.append(forbidden("status.conditions", f"updates may not remove a condition of type {go_value(kind)}"))
    for kind in _APPROVAL_CONDITIONS if not opts.setting_approval else ():
        before, after = _conditions_of(old, kind), _conditions_of(new, kind)
        if len(after) > len(before):
            errs.append(forbidden("status.conditions", f"updates may not add a condition of type {go_value(kind)}"))
        elif len(after) == len(before) and after != before:
            # upstream appends a go-cmp diff of the conditions to this message
            errs.append(forbidden("status.conditions", f"updates may not modify a condition of type {go_value(kind)}"))
    certificate, old_certificate = (as_dict(o.get("status")).get("certificate") or "" for o in (new, old))
    if certificate != old_certificate:
        if opts.setting_approval:
            errs.append(forbidden("status.certificate", "updates may not set certificate content"))
        elif old_certificate:
            errs.append(forbidden("status.certificate", "updates may not modify existing certificate content"))
    return errs


def _populate_condition_times(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A condition written without times gets `now`; one whose type and status did not change keeps its old
    transition time."""
    stamp = now()
    old_conditions = [c for _, c in indexed_dicts(as_dict(old.get("status")).get("conditions"))]
    for _, condition in indexed_dicts(as_dict(new.get("status")).get("conditions")):
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = stamp
        if not condition.get("lastTransitionTime"):
            condition["lastTransitionTime"] = next(
                (
                    c["lastTransitionTime"]
                    for c in old_conditions
                    if (c.get("type"), c.get("status")) == (condition.get("type"), condition.get("status"))
                    and c.get("lastTransitionTime")
                ),
                stamp,
            )


def requester_fields(user: UserInfo | None) -> dict[str, Any]:
    """The spec fields that record who asked (omitted when empty, as Go writes them)."""
    if user is None:
        return {}
    fields: dict[str, Any] = {"username": user.name, "uid": user.uid, "groups": list(user.groups)}
    if user.extra:
        fields["extra"] = {key: list(values) for key, values in user.extra.items()}
    return {key: value for key, value in fields.items() if value}


class CertificateSigningRequestStrategy(Strategy):
    """The spec is fixed at create (and the requester's identity is recorded in it, whatever the client sent);
    approval conditions change only through the `approval` subresource and the certificate only through `status`."""

    status_keeps_sent_metadata = True

    name_rule = staticmethod(any_name)  # upstream: "we don't care what you call your certificate requests"
    has_status = True

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            for name in ("username", "uid", "groups", "extra"):
                spec.pop(name, None)
        obj["status"] = {}  # no pre-approved requests: conditions start empty

    def record_requester(self, obj: dict[str, Any], user: UserInfo | None) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.update(requester_fields(user))

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new["spec"] = copy.deepcopy(old.get("spec"))
        new["status"] = copy.deepcopy(old.get("status", {}))
        self.default(new)

    def prepare_status_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_status_update(new, old)
        self.default(new)
        _populate_condition_times(new, old)

    def prepare_subresource_update(self, subresource: str, new: dict[str, Any], old: dict[str, Any]) -> None:
        """`approval` takes the new conditions and metadata, nothing else of spec and status; `status` is the status
        write."""
        if subresource == "status":
            self.prepare_status_update(new, old)
            return
        if subresource != "approval":
            raise errors.resource_not_found()
        self.default(new)
        _populate_condition_times(new, old)
        conditions = as_dict(new.get("status")).get("conditions")
        new["spec"] = copy.deepcopy(old.get("spec"))
        status = new["status"] = copy.deepcopy(as_dict(old.get("status")))
        status["conditions"] = conditions
        if conditions is None:
            status.pop("conditions")

    def default(self, obj: dict[str, Any]) -> None:
        for _, condition in indexed_dicts(as_dict(obj.get("status")).get("conditions")):
            if not condition.get("status"):
                condition["status"] = "True"  # v1 defaulting: a condition without status is True

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        """Create, update and `status`: a plain update cannot change status (prepare_update restores it), so the
        status write's rules hold for all three."""
        return self._validate(obj, old, setting_approval=False)

    def validate_subresource_update(
        self, subresource: str, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[FieldError]:
        return self._validate(obj, old, setting_approval=subresource == "approval")

    @staticmethod
    def _validate(obj: dict[str, Any], old: dict[str, Any] | None, *, setting_approval: bool) -> list[FieldError]:
        opts = _csr_options(obj, old, setting_approval=setting_approval)
        errs = csr_errors(obj, opts)
        return errs if old is None else errs + _csr_update_errors(obj, old, opts)


STRATEGIES: dict[str, type[Strategy]] = {
    "certificatesigningrequests": CertificateSigningRequestStrategy,
}
