"""Strategies (upstream v1 defaulting and validation) for the cluster kinds: Lease, PriorityClass, RuntimeClass,
CertificateSigningRequest, Ingress, IngressClass, NetworkPolicy, the admission webhook configurations and
validating admission policies, APIService, FlowSchema and PriorityLevelConfiguration.

Each validation keeps kube-apiserver 1.32's field paths and messages, including its quirks (the swapped
name/namespace labels of a webhook's service, the `matchResouces` path of a policy binding), because users search
for the exact text kubectl prints. The objects are stored and validated, not acted on: no webhook is called, no CEL
expression is compiled (an expression is only required to be non-blank), no certificate is signed, no flow is
throttled.

Upstream relaxes several checks on update when the stored object already broke them (`allow*` validation options),
so that old data stays writable; where that matters to users it is kept here (webhook side effects and review
versions, Ingress secret names and wildcard rules, CertificateSigningRequest compatibility).
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import math
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tinykube.api import errors
from tinykube.api.errors import (
    ErrorType,
    FieldError,
    duplicate,
    forbidden,
    go_value,
    invalid,
    not_supported,
    required,
    too_many,
)
from tinykube.api.meta import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    label_value,
    now,
    qualified_name,
    regex_error,
    validate_labels,
)
from tinykube.apiserver.identity import UserInfo
from tinykube.apiserver.registry.generic import Strategy
from tinykube.apiserver.registry.service_validation import (
    GoSyntaxError,
    go_slice,
    iana_port_name_errors,
    ip_errors,
    port_number_errors,
)

_IMMUTABLE = "field is immutable"

# ---- small accessors and shared checks ---------------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The dicts of a list with their indexes (for field paths); other entries are skipped."""
    return [(i, item) for i, item in enumerate(_list(value)) if isinstance(item, dict)]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    return [item for item in _list(value) if isinstance(item, str)]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _go_invalid(field: str, go_text: str, detail: str) -> FieldError:
    return GoSyntaxError(ErrorType.INVALID, field, go_text, detail)


def _each(field: str, value: str, messages: list[str]) -> list[FieldError]:
    return [invalid(field, value, message) for message in messages]


def _immutable(new: Any, old: Any, field: str) -> list[FieldError]:
    return [] if new == old else [invalid(field, new, _IMMUTABLE)]


def _default(obj: dict[str, Any], key: str, value: Any) -> None:
    """Go's defaulting of a nil pointer: a missing or null field takes the default."""
    if obj.get(key) is None:
        obj[key] = value


def path_segment_name(name: str) -> list[str]:
    """apimachinery's IsValidPathSegmentName: the name must be usable as one segment of a URL path."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{char}'" for char in ("/", "%") if char in name]


def _qualified_name_errors(value: str, field: str) -> list[FieldError]:
    return _each(field, value, qualified_name(value))


def _has_wildcard(values: list[str]) -> bool:
    return "*" in values


def _requirement_errors(expr: dict[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    operator, values = expr.get("operator", ""), _list(expr.get("values"))
    errs: list[FieldError] = []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
    else:
        errs.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
    errs += _qualified_name_errors(_str(expr.get("key")), f"{path}.key")
    if not allow_invalid_values:
        for j, value in enumerate(values):
            errs += _each(f"{path}.values[{j}]", value, label_value(_str(value)))
    return errs


def label_selector_errors(selector: Any, path: str, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """metav1 ValidateLabelSelector: well-formed labels and requirements (an absent selector is valid)."""
    selector = _dict(selector)
    errs = validate_labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for i, expr in _items(selector.get("matchExpressions")):
        errs += _requirement_errors(expr, f"{path}.matchExpressions[{i}]", allow_invalid_values=allow_invalid_values)
    return errs


def _has_invalid_selector(selectors: list[Any]) -> bool:
    return any(label_selector_errors(s, "") for s in selectors if s is not None)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _path_segment_errors(value: str, field: str) -> list[FieldError]:
    return [required(field)] if not value else _each(field, value, path_segment_name(value))


# ---- metav1.Condition (status of admission policies) -------------------------------------------------------------

_CONDITION_STATUSES = ["False", "True", "Unknown"]
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'"
)
_REASON_EXAMPLES = ("my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def _reason_errors(reason: str, field: str) -> list[FieldError]:
    if not reason:
        return [required(field, "must be set")]
    errs: list[FieldError] = []
    if not re.fullmatch(_REASON_FMT, reason):
        errs.append(invalid(field, reason, regex_error(_REASON_MSG, _REASON_FMT, *_REASON_EXAMPLES)))
    if len(reason) > 1024:
        errs.append(FieldError(ErrorType.TOO_LONG, field, detail="must have at most 1024 bytes"))
    return errs


def _condition_errors(condition: dict[str, Any], path: str) -> list[FieldError]:
    """metav1 ValidateCondition."""
    errs = _qualified_name_errors(_str(condition.get("type")), f"{path}.type")
    status = condition.get("status", "")
    if status not in _CONDITION_STATUSES:
        errs.append(not_supported(f"{path}.status", status, _CONDITION_STATUSES))
    generation = _int(condition.get("observedGeneration"))
    if generation is not None and generation < 0:
        errs.append(invalid(f"{path}.observedGeneration", generation, "must be greater than or equal to zero"))
    if not condition.get("lastTransitionTime"):
        errs.append(required(f"{path}.lastTransitionTime", "must be set"))
    errs += _reason_errors(_str(condition.get("reason")), f"{path}.reason")
    if len(_str(condition.get("message"))) > 32768:
        errs.append(FieldError(ErrorType.TOO_LONG, f"{path}.message", detail="must have at most 32768 bytes"))
    return errs


def conditions_errors(conditions: Any, path: str) -> list[FieldError]:
    """metav1 ValidateConditions: each condition valid, each type once."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in _items(conditions):
        kind = _str(condition.get("type"))
        if kind in seen:
            errs.append(duplicate(f"{path}[{i}].type", kind))
        seen.add(kind)
        errs += _condition_errors(condition, f"{path}[{i}]")
    return errs


# =================================================================================================================
# coordination.k8s.io/v1 Lease
# =================================================================================================================

_LEASE_STRATEGIES = ["OldestEmulationVersion"]
_GATED_LEASE_FIELDS = ("strategy", "preferredHolder")


def _lease_strategy_errors(strategy: str, path: str) -> list[FieldError]:
    field = f"{path}.strategy"  # upstream names the child again under the already-named path: spec.strategy.strategy
    if "/" not in strategy:
        return [] if strategy in _LEASE_STRATEGIES else [not_supported(field, strategy, _LEASE_STRATEGIES)]
    return _qualified_name_errors(strategy, field)


def lease_spec_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    duration = _int(spec.get("leaseDurationSeconds"))
    if duration is not None and duration <= 0:
        errs.append(invalid(f"{path}.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = _int(spec.get("leaseTransitions"))
    if transitions is not None and transitions < 0:
        errs.append(invalid(f"{path}.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        errs += _lease_strategy_errors(_str(strategy), f"{path}.strategy")
    if _str(spec.get("preferredHolder")) and not _str(strategy):
        errs.append(forbidden(f"{path}.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


class LeaseStrategy(Strategy):
    """The object leader election renews. `strategy` and `preferredHolder` belong to coordinated leader election,
    an alpha feature that 1.32 ships switched off: they are dropped unless the stored object already had them."""

    allow_create_on_update = True  # leader-election clients create their lease with a PUT
    coordinated_leader_election = False  # the CoordinatedLeaderElection feature gate

    def prepare_create(self, obj: dict[str, Any]) -> None:
        super().prepare_create(obj)
        if not self.coordinated_leader_election:
            for name in _GATED_LEASE_FIELDS:
                _dict(obj.get("spec")).pop(name, None)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_update(new, old)
        if not self.coordinated_leader_election:
            old_spec = _dict(old.get("spec"))
            for name in _GATED_LEASE_FIELDS:
                if old_spec.get(name) is None:
                    _dict(new.get("spec")).pop(name, None)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return lease_spec_errors(_dict(obj.get("spec")), "spec")


# =================================================================================================================
# scheduling.k8s.io/v1 PriorityClass
# =================================================================================================================

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
_PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]


def _system_class_problem(name: str, value: int, global_default: bool) -> str:
    """Why a `system-` name is refused ("" when it is one of the built-in classes, as built in)."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known:
        return f"value of {name} PriorityClass must be {known}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def _preemption_policy_errors(policy: Any) -> list[FieldError]:
    if policy is None or policy in _PREEMPTION_POLICIES:
        return []
    return (
        [required("preemptionPolicy")]
        if policy == ""
        else [not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES)]
    )


def priority_class_errors(obj: dict[str, Any]) -> list[FieldError]:
    name, value = _str(obj["metadata"].get("name")), _int(obj.get("value")) or 0
    errs: list[FieldError] = []
    if name.startswith("system-"):
        problem = _system_class_problem(name, value, bool(obj.get("globalDefault")))
        if problem:
            reserved = f"priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
            errs.append(forbidden("metadata.name", reserved))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(forbidden("value", detail))
    return errs + _preemption_policy_errors(obj.get("preemptionPolicy"))


class PriorityClassStrategy(Strategy):
    """Value and preemption policy are fixed once created: pods copied them at admission."""

    def default(self, obj: dict[str, Any]) -> None:
        obj.setdefault("value", 0)  # `value` is written even when zero (no omitempty)
        _default(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = priority_class_errors(obj)
        if old is not None:
            if obj.get("value") != old.get("value"):
                errs.append(forbidden("value", "may not be changed in an update."))
            errs += _immutable(obj.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")
        return errs


# =================================================================================================================
# node.k8s.io/v1 RuntimeClass
# =================================================================================================================

_TOLERATION_OPERATORS = ["Equal", "Exists"]
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]


def _go_toleration(toleration: dict[str, Any]) -> str:
    seconds = "nil" if toleration.get("tolerationSeconds") is None else "0xc000000000"  # Go prints the address
    fields = ", ".join(
        f"{name}:{go_value(_str(toleration.get(key)))}"
        for name, key in (("Key", "key"), ("Operator", "operator"), ("Value", "value"), ("Effect", "effect"))
    )
    return f"core.Toleration{{{fields}, TolerationSeconds:(*int64)({seconds})}}"


def _toleration_errors(toleration: dict[str, Any], path: str) -> list[FieldError]:
    """The checks of core's ValidateTolerations a RuntimeClass's scheduling tolerations meet most often."""
    key, operator, effect = _str(toleration.get("key")), toleration.get("operator", ""), toleration.get("effect", "")
    errs = _qualified_name_errors(key, f"{path}.key") if key else []
    if not key and operator != "Exists":
        detail = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
        errs.append(invalid(f"{path}.operator", operator, detail))
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        errs.append(invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        messages = label_value(_str(toleration.get("value")))
        if messages:
            errs.append(invalid(f"{path}.operator", toleration.get("value", ""), ";".join(messages)))
    elif operator == "Exists":
        if _str(toleration.get("value")):
            detail = "value must be empty when `operator` is 'Exists'"
            errs.append(_go_invalid(f"{path}.operator", _go_toleration(toleration), detail))
    else:
        errs.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        errs.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return errs


def _runtime_class_scheduling_errors(scheduling: Any) -> list[FieldError]:
    if not isinstance(scheduling, dict):
        return []
    errs = validate_labels(scheduling.get("nodeSelector") or {}, "scheduling.nodeSelector")
    for i, toleration in _items(scheduling.get("tolerations")):
        errs += _toleration_errors(toleration, f"scheduling.tolerations[{i}]")
    return errs


class RuntimeClassStrategy(Strategy):
    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        handler = _str(obj.get("handler"))  # required: an empty handler fails the label rule, as upstream
        errs = _each("handler", handler, dns1123_label(handler))
        errs += _runtime_class_scheduling_errors(obj.get("scheduling"))
        if old is not None:
            errs += _immutable(obj.get("handler"), old.get("handler"), "handler")
        return errs


# =================================================================================================================
# certificates.k8s.io/v1 CertificateSigningRequest
# =================================================================================================================

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
_BASE64 = re.compile(rb"[A-Za-z0-9+/=\r\n]*")


def any_name(name: str) -> list[str]:
    return []


def _go_bytes(data: bytes | None) -> str:
    """Go's `%#v` of a []byte, the value upstream's field error shows for a bad request."""
    if data is None:
        return "[]byte(nil)"
    return "[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}"


def decode_bytes(value: Any, kind: str) -> bytes:
    """A JSON []byte field: base64 text. Anything else fails decoding, as Go's decoder does (400, not 422)."""
    if value is None:
        return b""
    text = value.encode() if isinstance(value, str) else b""
    if not isinstance(value, str) or not _BASE64.fullmatch(text):
        raise _undecodable(kind, _first_bad_base64(text) if isinstance(value, str) else 0)
    try:
        return base64.b64decode(text.replace(b"\r", b"").replace(b"\n", b""), validate=True)
    except binascii.Error:
        raise _undecodable(kind, len(text.rstrip(b"=\r\n"))) from None


def _first_bad_base64(text: bytes) -> int:
    return next(i for i in range(len(text)) if not _BASE64.fullmatch(text[i : i + 1]))


def _undecodable(kind: str, at: int) -> errors.BadRequest:
    return errors.BadRequest(
        f'{kind} in version "v1" cannot be handled as a {kind}: illegal base64 data at input byte {at}'
    )


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
    return [_str(c.get("type")) for _, c in _items(_dict(csr.get("status")).get("conditions"))]


def _usages(csr: dict[str, Any]) -> list[Any]:
    return _list(_dict(csr.get("spec")).get("usages"))


def _csr_options(new: dict[str, Any], old: dict[str, Any] | None, *, setting_approval: bool) -> _CsrOptions:
    if old is None:
        return _CsrOptions(setting_approval=setting_approval)
    types, usages = _condition_types(old), _usages(old)
    certificate = _dict(new.get("status")).get("certificate") == _dict(old.get("status")).get("certificate")
    return _CsrOptions(
        setting_approval=setting_approval,
        both_approved_and_denied="Approved" in types and "Denied" in types,
        legacy_signer=_dict(old.get("spec")).get("signerName") == LEGACY_UNKNOWN_SIGNER,
        duplicate_condition_types=len(set(types)) != len(types),
        empty_condition_type="" in types,
        arbitrary_certificate=certificate or bool(_stored_certificate_problem(old)),
        unknown_usages=any(u not in KEY_USAGES for u in usages),
        duplicate_usages=len({str(u) for u in usages}) != len(usages),
    )


def _stored_certificate_problem(csr: dict[str, Any]) -> str:
    try:
        return certificate_problem(
            decode_bytes(_dict(csr.get("status")).get("certificate"), "CertificateSigningRequest")
        )
    except errors.BadRequest:
        return "not base64"


def _usage_errors(usages: list[Any], opts: _CsrOptions) -> list[FieldError]:
    errs = [] if usages else [required("spec.usages")]
    if not opts.unknown_usages:
        errs += [not_supported(f"spec.usages[{i}]", u, KEY_USAGES) for i, u in enumerate(usages) if u not in KEY_USAGES]
    if not opts.duplicate_usages:
        errs += [duplicate(f"spec.usages[{i}]", u) for i, u in enumerate(usages) if u in usages[:i]]
    return errs


def _csr_spec_errors(spec: dict[str, Any], opts: _CsrOptions) -> list[FieldError]:
    request = decode_bytes(spec.get("request"), "CertificateSigningRequest")
    problem = csr_request_problem(request)
    shown = _go_bytes(None if spec.get("request") is None else request)
    errs = [_go_invalid("spec.request", shown, problem)] if problem else []
    errs += _usage_errors(_list(spec.get("usages")), opts)
    signer = _str(spec.get("signerName"))
    if signer == LEGACY_UNKNOWN_SIGNER and not opts.legacy_signer:
        errs.append(invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    else:
        errs += signer_name_errors(signer, "spec.signerName")
    expiration = _int(spec.get("expirationSeconds"))
    if expiration is not None and expiration < 600:
        detail = "may not specify a duration less than 600 seconds (10 minutes)"
        errs.append(invalid("spec.expirationSeconds", expiration, detail))
    return errs


def _csr_condition_errors(conditions: list[tuple[int, dict[str, Any]]], opts: _CsrOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: list[str] = []
    for i, condition in conditions:
        path, kind, status = f"status.conditions[{i}]", _str(condition.get("type")), condition.get("status", "")
        if not kind and not opts.empty_condition_type:
            errs.append(required(f"{path}.type"))
        allowed = ["True"] if kind in _TRUE_ONLY_CONDITIONS else _CONDITION_STATUSES
        if status == "":
            errs.append(required(f"{path}.status"))
        elif status not in allowed:
            errs.append(not_supported(f"{path}.status", status, allowed))
        if not opts.both_approved_and_denied and kind in _APPROVAL_CONDITIONS:
            other = "Denied" if kind == "Approved" else "Approved"
            if other in seen:
                detail = "Approved and Denied conditions are mutually exclusive"
                errs.append(invalid(f"{path}.type", kind, detail))
        if not opts.duplicate_condition_types and kind in seen:
            errs.append(duplicate(f"{path}.type", kind))
        seen.append(kind)
    return errs


def csr_errors(csr: dict[str, Any], opts: _CsrOptions) -> list[FieldError]:
    """validateCertificateSigningRequest: the request, usages, signer, expiration, conditions and certificate."""
    status = _dict(csr.get("status"))
    errs = _csr_spec_errors(_dict(csr.get("spec")), opts)
    errs += _csr_condition_errors(_items(status.get("conditions")), opts)
    if not opts.arbitrary_certificate:
        problem = certificate_problem(decode_bytes(status.get("certificate"), "CertificateSigningRequest"))
        if problem:
            errs.append(invalid("status.certificate", "<certificate data>", problem))
    return errs


def _conditions_of(csr: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for _, c in _items(_dict(csr.get("status")).get("conditions")) if c.get("type") == kind]


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
    certificate, old_certificate = (_dict(o.get("status")).get("certificate") or "" for o in (new, old))
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
    old_conditions = [c for _, c in _items(_dict(old.get("status")).get("conditions"))]
    for _, condition in _items(_dict(new.get("status")).get("conditions")):
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
        """`approval` takes the new conditions and nothing else; `status` is the status write."""
        if subresource == "status":
            self.prepare_status_update(new, old)
            return
        if subresource != "approval":
            raise errors.resource_not_found()
        self.default(new)
        _populate_condition_times(new, old)
        conditions = _dict(new.get("status")).get("conditions")
        new.clear()
        new.update(copy.deepcopy(old))
        status = new.setdefault("status", {})
        status["conditions"] = conditions
        if conditions is None:
            status.pop("conditions")

    def default(self, obj: dict[str, Any]) -> None:
        for _, condition in _items(_dict(obj.get("status")).get("conditions")):
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


# =================================================================================================================
# networking.k8s.io/v1 Ingress and IngressClass
# =================================================================================================================

_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_WILDCARD_FMT = r"\*\." + "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of "
    "lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
)
_INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
_PARAMETER_SCOPES = ["Cluster", "Namespace"]
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"


def wildcard_subdomain(value: str) -> list[str]:
    errs = [] if len(value) <= 253 else ["must be no more than 253 characters"]
    if not re.fullmatch(_WILDCARD_FMT, value):
        errs.append(regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


def _host_errors(host: str, field: str) -> list[FieldError]:
    rule = wildcard_subdomain if "*" in host else dns1123_subdomain
    return _each(field, host, rule(host))


@dataclass(frozen=True, slots=True)
class _IngressOptions:
    allow_invalid_secret_name: bool = False
    allow_invalid_wildcard_host_rule: bool = False


def _typed_reference_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    """A TypedLocalObjectReference (an Ingress backend's `resource`)."""
    errs: list[FieldError] = []
    group = ref.get("apiGroup")
    if group is not None:
        errs += _each(f"{path}.apiGroup", _str(group), dns1123_subdomain(_str(group)))
    errs += _path_segment_errors(_str(ref.get("kind")), f"{path}.kind")
    return errs + _path_segment_errors(_str(ref.get("name")), f"{path}.name")


def _service_backend_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    name = _str(service.get("name"))
    # a Service name is a DNS-1035 label
    errs = _each(f"{path}.service.name", name, dns1035_label(name)) if name else [required(f"{path}.service.name")]
    port = _dict(service.get("port"))
    port_name, number = _str(port.get("name")), _int(port.get("number")) or 0
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += _each(f"{path}.service.port.name", port_name, iana_port_name_errors(port_name))
    elif number:
        errs += [invalid(f"{path}.service.port.number", number, m) for m in port_number_errors(number)]
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def ingress_backend_errors(backend: dict[str, Any], path: str) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return _typed_reference_errors(_dict(resource), f"{path}.resource")
    if service is not None:
        return _service_backend_errors(_dict(service), path)
    return [invalid(path, "", "resource or service backend is required")]


def _http_path_errors(entry: dict[str, Any], path: str) -> list[FieldError]:
    path_type, value = entry.get("pathType"), _str(entry.get("path"))
    if path_type is None:
        return [required(f"{path}.pathType", "pathType must be specified")]
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
        errs += [
            invalid(f"{path}.path", value, f"must not contain '{s}'") for s in _INVALID_PATH_SEQUENCES if s in value
        ]
        errs += [
            invalid(f"{path}.path", value, f"cannot end with '{s}'")
            for s in _INVALID_PATH_SUFFIXES
            if value.endswith(s)
        ]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        errs.append(not_supported(f"{path}.pathType", path_type, _PATH_TYPES))
    return errs + ingress_backend_errors(_dict(entry.get("backend")), f"{path}.backend")


def _rule_value_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    http = rule.get("http")
    if http is None:
        return []
    paths = _list(_dict(http).get("paths"))
    errs = [] if paths else [required(f"{path}.http.paths")]
    for i, entry in _items(paths):
        errs += _http_path_errors(entry, f"{path}.http.paths[{i}]")
    return errs


def _ingress_rule_errors(rules: list[Any], path: str, opts: _IngressOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in _items(rules):
        host, here = _str(rule.get("host")), f"{path}[{i}]"
        if host and _is_ip(host):
            errs.append(invalid(f"{here}.host", host, "must be a DNS name, not an IP address"))
        if host:
            errs += _host_errors(host, f"{here}.host")
        if "*" not in host or not opts.allow_invalid_wildcard_host_rule:
            errs += _rule_value_errors(rule, here)
    return errs


def _ingress_tls_errors(tls: list[Any], opts: _IngressOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in _items(tls):
        for j, host in enumerate(_strings(entry.get("hosts"))):
            errs += _host_errors(host, f"spec.tls[{i}].hosts[{j}]")
        secret = _str(entry.get("secretName"))
        if secret and not opts.allow_invalid_secret_name:
            errs += _each(f"spec.tls[{i}].secretName", secret, dns1123_subdomain(secret))
    return errs


def ingress_spec_errors(spec: dict[str, Any], opts: _IngressOptions) -> list[FieldError]:
    rules, default_backend = _list(spec.get("rules")), spec.get("defaultBackend")
    errs: list[FieldError] = []
    if not rules and default_backend is None:
        shown = "[]networking.IngressRule(nil)" if spec.get("rules") is None else "[]networking.IngressRule{}"
        errs.append(_go_invalid("spec", shown, "either `defaultBackend` or `rules` must be specified"))
    if default_backend is not None:
        errs += ingress_backend_errors(_dict(default_backend), "spec.defaultBackend")
    errs += _ingress_rule_errors(rules, "spec.rules", opts)
    errs += _ingress_tls_errors(_list(spec.get("tls")), opts)
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += _each("spec.ingressClassName", _str(class_name), dns1123_subdomain(_str(class_name)))
    return errs


def _ingress_options(old: dict[str, Any] | None) -> _IngressOptions:
    """Stored Ingresses that predate a check keep being writable (upstream's allowInvalid* options)."""
    if old is None:
        return _IngressOptions()
    spec = _dict(old.get("spec"))
    secrets = [_str(t.get("secretName")) for _, t in _items(spec.get("tls"))]
    wildcard_rules = [r for _, r in _items(spec.get("rules")) if "*" in _str(r.get("host"))]
    return _IngressOptions(
        allow_invalid_secret_name=any(s and dns1123_subdomain(s) for s in secrets),
        allow_invalid_wildcard_host_rule=any(_rule_value_errors(r, "") for r in wildcard_rules),
    )


def _load_balancer_status_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in _items(_dict(status.get("loadBalancer")).get("ingress")):
        path = f"status.loadBalancer.ingress[{i}]"
        ip, hostname = _str(entry.get("ip")), _str(entry.get("hostname"))
        if ip:
            errs += _each(f"{path}.ip", ip, ip_errors(ip))
        if hostname:
            errs += _each(f"{path}.hostname", hostname, dns1123_subdomain(hostname))
            if _is_ip(hostname):
                errs.append(invalid(f"{path}.hostname", hostname, "must be a DNS name, not an IP address"))
    return errs


def _class_annotation_errors(obj: dict[str, Any]) -> list[FieldError]:
    """On create, the legacy class annotation and `ingressClassName` must agree when both are set."""
    annotation = _dict(obj["metadata"].get("annotations")).get(_INGRESS_CLASS_ANNOTATION)
    class_name = _dict(obj.get("spec")).get("ingressClassName")
    if annotation is None or class_name is None or annotation == class_name:
        return []
    # upstream builds this path from "annotations" (not metadata.annotations) and the key as one more child
    return [
        invalid(
            f"annotations.{_INGRESS_CLASS_ANNOTATION}",
            annotation,
            "must match `ingressClassName` when both are specified",
        )
    ]


class IngressStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        errs = ingress_spec_errors(_dict(obj.get("spec")), _ingress_options(old))
        if old is None:
            errs += _class_annotation_errors(obj)
        return errs + _load_balancer_status_errors(_dict(obj.get("status")))


def domain_prefixed_path_errors(value: str, field: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath: `acme.io/foo`, a DNS subdomain then an HTTP path."""
    if not value:
        return [required(field)]
    host, slash, path = value.partition("/")
    if not slash or not host or not path:
        return [invalid(field, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = _each(field, host, dns1123_subdomain(host))
    if not re.fullmatch(_HTTP_PATH_FMT, path):
        errs.append(invalid(field, path, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    return errs


def _parameters_errors(params: Any) -> list[FieldError]:
    if not isinstance(params, dict):
        return []
    path = "spec.parameters"
    errs = _typed_reference_errors(params, path)
    scope = params.get("scope")
    if scope is None:
        return [*errs, required(f"{path}.scope")]
    namespace = params.get("namespace")
    if scope not in _PARAMETER_SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _PARAMETER_SCOPES))
    elif scope == "Namespace" and namespace is None:
        errs.append(required(f"{path}.namespace", "`parameters.scope` is set to 'Namespace'"))
    elif scope == "Namespace":
        errs += _each(f"{path}.namespace", _str(namespace), dns1123_label(_str(namespace)))
    elif namespace is not None:
        errs.append(forbidden(f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


class IngressClassStrategy(Strategy):
    def default(self, obj: dict[str, Any]) -> None:
        params = _dict(obj.get("spec")).get("parameters")
        if isinstance(params, dict):
            _default(params, "scope", "Cluster")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        controller = _str(spec.get("controller"))
        errs: list[FieldError] = []
        if old is not None:  # upstream reports the immutable controller first
            errs += _immutable(spec.get("controller"), _dict(old.get("spec")).get("controller"), "spec.controller")
        if len(controller) > 250:
            errs.append(FieldError(ErrorType.TOO_LONG, "spec.controller", detail="must have at most 250 bytes"))
        errs += domain_prefixed_path_errors(controller, "spec.controller")
        return errs + _parameters_errors(spec.get("parameters"))


# =================================================================================================================
# networking.k8s.io/v1 NetworkPolicy
# =================================================================================================================

_NETPOL_PROTOCOLS = ["TCP", "UDP", "SCTP"]
_POLICY_TYPES = ["Ingress", "Egress"]


def _network_policy_port_errors(port: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _NETPOL_PROTOCOLS:
        errs.append(not_supported(f"{path}.protocol", protocol, _NETPOL_PROTOCOLS))
    number, end = port.get("port"), _int(port.get("endPort"))
    if number is None:
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(number, str):
        if end is not None:
            errs.append(invalid(f"{path}.endPort", end, "may not be specified when `port` is non-numeric"))
        errs += _each(f"{path}.port", number, iana_port_name_errors(number))
    else:
        errs += [invalid(f"{path}.port", number, m) for m in port_number_errors(number)]
        if end is not None:
            if isinstance(number, int) and end < number:
                errs.append(invalid(f"{path}.endPort", end, "must be greater than or equal to `port`"))
            errs += [invalid(f"{path}.endPort", end, m) for m in port_number_errors(end)]
    return errs


def _network(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def ip_block_errors(block: dict[str, Any], path: str) -> list[FieldError]:
    """1.32's ValidateIPBlock: a CIDR, and `except` entries strictly inside it."""
    cidr = _str(block.get("cidr"))
    if not cidr:
        return [required(f"{path}.cidr")]
    network = _network(cidr)
    if network is None:
        return [invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    errs: list[FieldError] = []
    for i, value in enumerate(_list(block.get("except"))):
        inner = _network(_str(value))
        if inner is None:
            return [*errs, invalid(f"{path}.except[{i}]", value, "not a valid CIDR")]
        inside = inner.version == network.version and inner.network_address in network
        if not inside or network.prefixlen >= inner.prefixlen:
            errs.append(invalid(f"{path}.except[{i}]", value, "must be a strict subset of `cidr`"))
    return errs


def _peer_errors(peer: dict[str, Any], path: str, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    present = [name for name in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(name) is not None]
    for name in ("podSelector", "namespaceSelector"):
        if name in present:
            errs += label_selector_errors(peer[name], f"{path}.{name}", allow_invalid_values=allow_invalid_values)
    if "ipBlock" in present:
        errs += ip_block_errors(_dict(peer["ipBlock"]), f"{path}.ipBlock")
    if not present:
        errs.append(required(path, "must specify a peer"))
    elif len(present) > 1 and "ipBlock" in present:
        errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _policy_rule_errors(rules: Any, path: str, peers_key: str, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in _items(rules):
        for j, port in _items(rule.get("ports")):
            errs += _network_policy_port_errors(port, f"{path}[{i}].ports[{j}]")
        for j, peer in _items(rule.get(peers_key)):
            errs += _peer_errors(peer, f"{path}[{i}].{peers_key}[{j}]", allow_invalid_values=allow_invalid_values)
    return errs


def _policy_types_errors(types: list[Any]) -> list[FieldError]:
    if len(types) > 2:
        shown = go_slice([str(t) for t in types], "networking.PolicyType")
        return [_go_invalid("spec.policyTypes", shown, "may not specify more than two policyTypes")]
    return [
        not_supported(f"spec.policyTypes[{i}]", t, _POLICY_TYPES) for i, t in enumerate(types) if t not in _POLICY_TYPES
    ]


def network_policy_spec_errors(spec: dict[str, Any], *, allow_invalid_values: bool = False) -> list[FieldError]:
    errs = label_selector_errors(spec.get("podSelector"), "spec.podSelector", allow_invalid_values=allow_invalid_values)
    errs += _policy_rule_errors(spec.get("ingress"), "spec.ingress", "from", allow_invalid_values=allow_invalid_values)
    errs += _policy_rule_errors(spec.get("egress"), "spec.egress", "to", allow_invalid_values=allow_invalid_values)
    return errs + _policy_types_errors(_list(spec.get("policyTypes")))


class NetworkPolicyStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("podSelector", {})  # a struct, always written
        for key in ("ingress", "egress"):
            for _, rule in _items(spec.get(key)):
                for _, port in _items(rule.get("ports")):
                    _default(port, "protocol", "TCP")
        if not _list(spec.get("policyTypes")):
            # a policy names the directions it isolates; without policyTypes, Ingress always and Egress if it
            # has egress rules
            spec["policyTypes"] = ["Ingress", "Egress"] if _list(spec.get("egress")) else ["Ingress"]

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        old_selector = _dict(old.get("spec")).get("podSelector") if old is not None else None
        tolerate = old is not None and _has_invalid_selector([old_selector])
        return network_policy_spec_errors(_dict(obj.get("spec")), allow_invalid_values=tolerate)


# =================================================================================================================
# admissionregistration.k8s.io/v1 webhook configurations and validating admission policies
# =================================================================================================================

_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_NO_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_SIDE_EFFECTS = ["None", "NoneOnDryRun", "Some", "Unknown"]
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_REINVOCATION_POLICIES = ["IfNeeded", "Never"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]
_VALIDATION_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
_VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]
_NOT_FOUND_ACTIONS = ["Deny", "Allow"]
_URL_FORM = "; desired format: https://host[/path]"
_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset(
    ["true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if", "import",
     "let", "loop", "package", "namespace", "return", "var", "void", "while"]
)  # fmt: skip


def _default_rules(rules: Any) -> None:
    for _, rule in _items(rules):
        _default(rule, "scope", "*")


def _default_webhook(hook: dict[str, Any], *, mutating: bool) -> None:
    _default(hook, "failurePolicy", "Fail")
    _default(hook, "matchPolicy", "Equivalent")
    _default(hook, "namespaceSelector", {})
    _default(hook, "objectSelector", {})
    _default(hook, "timeoutSeconds", 10)
    if mutating:
        _default(hook, "reinvocationPolicy", "Never")
    service = _dict(hook.get("clientConfig")).get("service")
    if isinstance(service, dict):
        _default(service, "port", 443)
    _default_rules(hook.get("rules"))


def _default_match_resources(match: Any) -> None:
    if not isinstance(match, dict):
        return
    _default(match, "matchPolicy", "Equivalent")
    _default(match, "namespaceSelector", {})
    _default(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        _default_rules(match.get(key))


def fully_qualified_name_errors(name: str, field: str) -> list[FieldError]:
    if not name:
        return [required(field)]
    messages = dns1123_subdomain(name)
    if messages:
        return [invalid(field, name, ",".join(messages))]
    if len(name.split(".")) < 3:
        return [invalid(field, name, "should be a domain with at least three segments separated by dots")]
    return []


def _resources_errors(resources: list[str], path: str) -> list[FieldError]:
    """Resources with subresources (`pods/status`, `*/*`), and the wildcards that exclude others."""
    errs = [] if resources else [required(path)]
    wildcard_sub: set[str] = set()  # `x/*`
    wildcard_res: set[str] = set()  # `*/x`
    for i, entry in enumerate(resources):
        if not entry:
            errs.append(required(f"{path}[{i}]"))
            continue
        res, slash, sub = entry.partition("/")
        if not slash:
            continue
        if res in wildcard_sub:
            errs.append(invalid(f"{path}[{i}]", entry, f"if '{res}/*' is present, must not specify {entry}"))
        if sub in wildcard_res:
            errs.append(invalid(f"{path}[{i}]", entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        errs.append(invalid(path, resources, "if '*/*' is present, must not specify other resources"))
    # upstream remembers only whether the last plain resource was something other than "*"
    plain = [entry for entry in resources if entry and "/" not in entry]
    if "*" in resources and plain and plain[-1] != "*":
        detail = "if '*' is present, must not specify other resources without subresources"
        errs.append(invalid(path, resources, detail))
    return errs


def _rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    """A RuleWithOperations: operations, API groups, versions, resources and scope."""
    operations = _strings(rule.get("operations"))
    errs = [] if operations else [required(f"{path}.operations")]
    if len(operations) > 1 and _has_wildcard(operations):
        shown = go_slice(operations, "admissionregistration.OperationType")
        errs.append(_go_invalid(f"{path}.operations", shown, "if '*' is present, must not specify other operations"))
    errs += [
        not_supported(f"{path}.operations[{i}]", op, _OPERATIONS)
        for i, op in enumerate(operations)
        if op not in _OPERATIONS
    ]
    groups, versions = _strings(rule.get("apiGroups")), _strings(rule.get("apiVersions"))
    if not groups:
        errs.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and _has_wildcard(groups):
        errs.append(invalid(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"))
    if not versions:
        errs.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and _has_wildcard(versions):
        errs.append(invalid(f"{path}.apiVersions", versions, "if '*' is present, must not specify other API versions"))
    errs += [required(f"{path}.apiVersions[{i}]") for i, version in enumerate(versions) if not version]
    errs += _resources_errors(_strings(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def _review_versions_errors(versions: list[str], path: str, *, require_recognized: bool) -> list[FieldError]:
    if not versions:
        return [required(path, "must specify one of v1, v1beta1")]
    errs: list[FieldError] = []
    for i, version in enumerate(versions):
        if version in versions[:i]:
            errs.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        errs += _each(f"{path}[{i}]", version, dns1035_label(version))
    if require_recognized and not any(v in _REVIEW_VERSIONS for v in versions):
        errs.append(invalid(path, versions, "must include at least one of v1, v1beta1"))
    return errs


def webhook_url_errors(url: str, path: str) -> list[FieldError]:
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError as err:
        return [required(path, f"url must be a valid URL: {err}{_URL_FORM}")]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{_URL_FORM}"))
    if not host:
        errs.append(invalid(path, host, f"host must be specified{_URL_FORM}"))
    if "@" in parts.netloc:
        errs.append(invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        errs.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return errs


def _service_path_errors(value: str, path: str) -> list[FieldError]:
    if value in ("", "/"):
        return []
    if value == "//":
        return [invalid(path, value, "segment[0] may not be empty")]
    errs = [] if value.startswith("/") else [invalid(path, value, "must start with a '/'")]
    steps = value[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            errs.append(invalid(path, value, f"segment[{i}] may not be empty"))
        errs += [invalid(path, value, f"segment[{i}]: {m}") for m in (dns1123_subdomain(step) if step else [])]
    return errs


def webhook_service_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    # Upstream passes the service's name and namespace to a function that takes them the other way round, so an
    # empty namespace is reported at `name` and an empty name at `namespace`; kept, as users see it.
    errs: list[FieldError] = []
    if not _str(service.get("namespace")):
        errs.append(required(f"{path}.name"))
    if not _str(service.get("name")):
        errs.append(required(f"{path}.namespace"))
    port = service.get("port", 443)
    messages = port_number_errors(port)
    if messages:
        errs.append(invalid(f"{path}.port", port, "port is not valid: " + ", ".join(messages)))
    if service.get("path") is not None:
        errs += _service_path_errors(_str(service.get("path")), f"{path}.path")
    return errs


def _client_config_errors(config: dict[str, Any], path: str) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(f"{path}.clientConfig", "exactly one of url or service is required")]
    if url is not None:
        return webhook_url_errors(_str(url), f"{path}.clientConfig.url")
    return webhook_service_errors(_dict(service), f"{path}.clientConfig.service")


def match_conditions_errors(conditions: Any, path: str) -> list[FieldError]:
    """Each condition named (a qualified name, unique) with a non-blank CEL expression (not compiled here)."""
    entries = _list(conditions)
    errs = [too_many(path, len(entries), 64)] if len(entries) > 64 else []
    seen: set[str] = set()
    for i, condition in _items(entries):
        if not _str(condition.get("expression")).strip():
            errs.append(required(f"{path}[{i}].expression"))
        name = _str(condition.get("name"))
        errs += [required(f"{path}[{i}].name")] if not name else _qualified_name_errors(name, f"{path}[{i}].name")
        if name and name in seen:
            errs.append(duplicate(f"{path}[{i}].name", name))
        seen.add(name)
    return errs


@dataclass(frozen=True, slots=True)
class _WebhookOptions:
    """Upstream's validationOptions: strict on create; on update, relaxed where the stored object was not."""

    ignore_match_conditions: bool = False
    require_no_side_effects: bool = True
    require_recognized_versions: bool = True
    require_unique_names: bool = True
    allow_invalid_label_values: bool = False


def _webhook_options(new: dict[str, Any], old: dict[str, Any] | None) -> _WebhookOptions:
    if old is None:
        return _WebhookOptions()
    hooks, old_hooks = [h for _, h in _items(new.get("webhooks"))], [h for _, h in _items(old.get("webhooks"))]
    names = [h.get("name") for h in old_hooks]
    return _WebhookOptions(
        ignore_match_conditions=len(hooks) == len(old_hooks)
        and all(a.get("matchConditions") == b.get("matchConditions") for a, b in zip(hooks, old_hooks, strict=True)),
        require_no_side_effects=all(h.get("sideEffects") in _NO_SIDE_EFFECTS for h in old_hooks),
        require_recognized_versions=all(
            not _list(h.get("admissionReviewVersions"))
            or any(v in _REVIEW_VERSIONS for v in _list(h.get("admissionReviewVersions")))
            for h in old_hooks
        ),
        require_unique_names=len(set(map(str, names))) == len(names),
        allow_invalid_label_values=_has_invalid_selector(
            [h.get(key) for h in old_hooks for key in ("namespaceSelector", "objectSelector")]
        ),
    )


def _side_effects_errors(side_effects: Any, path: str, opts: _WebhookOptions) -> list[FieldError]:
    allowed = _NO_SIDE_EFFECTS if opts.require_no_side_effects else _SIDE_EFFECTS
    if side_effects is None:
        return [required(f"{path}.sideEffects", "must specify one of " + ", ".join(allowed))]
    return [] if side_effects in allowed else [not_supported(f"{path}.sideEffects", side_effects, allowed)]


def _webhook_policy_errors(hook: dict[str, Any], path: str, *, mutating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    checks = [("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)]
    for key, allowed in checks + ([("reinvocationPolicy", _REINVOCATION_POLICIES)] if mutating else []):
        value = hook.get(key)
        if value is not None and value not in allowed:
            errs.append(not_supported(f"{path}.{key}", value, allowed))
    return errs


def webhook_errors(hook: dict[str, Any], path: str, opts: _WebhookOptions, *, mutating: bool) -> list[FieldError]:
    errs = fully_qualified_name_errors(_str(hook.get("name")), f"{path}.name")
    for i, rule in _items(hook.get("rules")):
        errs += _rule_errors(rule, f"{path}.rules[{i}]")
    errs += _webhook_policy_errors(hook, path, mutating=mutating)
    errs += _side_effects_errors(hook.get("sideEffects"), path, opts)
    timeout = _int(hook.get("timeoutSeconds"))
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        errs += label_selector_errors(
            hook.get(key), f"{path}.{key}", allow_invalid_values=opts.allow_invalid_label_values
        )
    errs += _client_config_errors(_dict(hook.get("clientConfig")), path)
    if not opts.ignore_match_conditions:
        errs += match_conditions_errors(hook.get("matchConditions"), f"{path}.matchConditions")
    return errs


def webhook_configuration_errors(
    obj: dict[str, Any], old: dict[str, Any] | None, *, mutating: bool
) -> list[FieldError]:
    opts = _webhook_options(obj, old)
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, hook in _items(obj.get("webhooks")):
        path = f"webhooks[{i}]"
        errs += webhook_errors(hook, path, opts, mutating=mutating)
        versions = _strings(hook.get("admissionReviewVersions"))
        errs += _review_versions_errors(
            versions, f"{path}.admissionReviewVersions", require_recognized=opts.require_recognized_versions
        )
        name = _str(hook.get("name"))
        if opts.require_unique_names and name:
            if name in seen:
                errs.append(duplicate(f"{path}.name", name))
            seen.add(name)
    return errs


class _WebhookConfigurationStrategy(Strategy):
    tracks_generation = True
    mutating = False

    def default(self, obj: dict[str, Any]) -> None:
        for _, hook in _items(obj.get("webhooks")):
            _default_webhook(hook, mutating=self.mutating)

    def bumps_generation(self, new: dict[str, Any], old: dict[str, Any]) -> bool:
        return new.get("webhooks") != old.get("webhooks")

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return webhook_configuration_errors(obj, old, mutating=self.mutating)


class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = True


class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = False


def _group_version(text: str) -> tuple[str, str] | None:
    if text in ("", "/"):
        return "", ""
    if text.count("/") > 1:
        return None
    group, _, version = text.rpartition("/")
    return group, version


def param_kind_errors(param_kind: dict[str, Any], path: str) -> list[FieldError]:
    api_version, kind = _str(param_kind.get("apiVersion")), _str(param_kind.get("kind"))
    errs: list[FieldError] = []
    parsed = _group_version(api_version)
    if not api_version:
        errs.append(required(f"{path}.apiVersion"))
    elif parsed is None:
        errs.append(invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    else:
        group, version = parsed
        if group and dns1123_subdomain(group):
            errs.append(invalid(f"{path}.apiVersion", group, ",".join(dns1123_subdomain(group))))
        if not version:
            errs.append(invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif dns1035_label(version):
            errs.append(invalid(f"{path}.apiVersion", version, ",".join(dns1035_label(version))))
    if not kind:
        errs.append(required(f"{path}.kind"))
    elif dns1035_label(kind.lower()):
        detail = "may have mixed case, but should otherwise match: " + ",".join(dns1035_label(kind.lower()))
        errs.append(invalid(f"{path}.kind", kind, detail))
    return errs


def _named_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names = _strings(rule.get("resourceNames"))
    for i, name in enumerate(names):
        errs += _each(f"{path}.resourceNames[{i}]", name, path_segment_name(name))
        if name in names[:i]:
            errs.append(duplicate(f"{path}.resourceNames[{i}]", name))
    return errs + _rule_errors(rule, path)


def match_resources_errors(match: Any, path: str) -> list[FieldError]:
    if not isinstance(match, dict):
        return []
    errs: list[FieldError] = []
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(required(f"{path}.matchPolicy"))
    elif policy not in _MATCH_POLICIES:
        errs.append(not_supported(f"{path}.matchPolicy", policy, _MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        selector = match.get(key)
        errs += [required(f"{path}.{key}")] if selector is None else label_selector_errors(selector, f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in _items(match.get(key)):
            errs += _named_rule_errors(rule, f"{path}.{key}[{i}]")
    return errs


def _variable_errors(variable: dict[str, Any], path: str) -> list[FieldError]:
    name, expression = _str(variable.get("name")), _str(variable.get("expression"))
    errs: list[FieldError] = []
    if not name.strip():
        errs.append(required(f"{path}.name", "name is not specified"))
    elif not _CEL_IDENTIFIER.fullmatch(name) or name in _CEL_RESERVED:
        errs.append(invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    if not expression.strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    return errs


def _validation_errors(validation: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not _str(validation.get("expression")).strip():
        errs.append(required(f"{path}.expression", "expression is not specified"))
    message_expression = _str(validation.get("messageExpression"))
    if message_expression and not message_expression.strip():
        errs.append(invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified"))
    message = _str(validation.get("message"))
    if message and not message.strip():
        errs.append(invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        errs.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in _VALIDATION_REASONS:
        errs.append(not_supported(f"{path}.reason", reason, _VALIDATION_REASONS))
    return errs


def _audit_annotation_errors(annotation: dict[str, Any], policy_name: str, path: str) -> list[FieldError]:
    key = _str(annotation.get("key"))
    if policy_name:
        errs = _qualified_name_errors(f"{policy_name}/{key}", f"{path}.key")
    else:
        errs = [invalid(f"{path}.key", key, "requires metadata.name be non-empty")]
    value = _str(annotation.get("valueExpression")).strip()
    if not value:
        errs.append(required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(value) > 5 * 1024:
        errs.append(required(f"{path}.valueExpression", "must not exceed 5120 bytes in length"))
    return errs


def _audit_annotations_errors(annotations: Any, policy_name: str, path: str) -> list[FieldError]:
    entries = _list(annotations)
    errs = [] if len(entries) <= 20 else [invalid(path, entries, "must not have more than 20 auditAnnotations")]
    keys: list[str] = []
    for i, annotation in _items(entries):
        errs += _audit_annotation_errors(annotation, policy_name, f"{path}[{i}]")
        key = _str(annotation.get("key"))
        if key in keys:
            errs.append(duplicate(f"{path}[{i}].key", key))
        keys.append(key)
    return errs


def _policy_match_errors(spec: dict[str, Any]) -> list[FieldError]:
    constraints = spec.get("matchConstraints")
    if constraints is None:
        return [required("spec.matchConstraints")]
    errs = match_resources_errors(constraints, "spec.matchConstraints")
    if not _list(_dict(constraints).get("resourceRules")):  # the rules give the policy its types
        errs.append(required("spec.matchConstraints.resourceRules"))
    return errs


def _policy_checks_errors(spec: dict[str, Any], policy_name: str) -> list[FieldError]:
    validations, annotations = _list(spec.get("validations")), _list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        detail = "validations or auditAnnotations must contain at least one item"
        return [required("spec.validations", detail), required("spec.auditAnnotations", detail)]
    errs: list[FieldError] = []
    for i, validation in _items(validations):
        errs += _validation_errors(validation, f"spec.validations[{i}]")
    return errs + _audit_annotations_errors(annotations, policy_name, "spec.auditAnnotations")


def validating_admission_policy_errors(obj: dict[str, Any], *, ignore_match_conditions: bool) -> list[FieldError]:
    """The structure of a ValidatingAdmissionPolicy; its CEL expressions are required but not compiled."""
    spec = _dict(obj.get("spec"))
    failure_policy = spec.get("failurePolicy")
    errs: list[FieldError] = []
    if failure_policy is None:
        errs.append(required("spec.failurePolicy"))
    elif failure_policy not in _FAILURE_POLICIES:
        errs.append(not_supported("spec.failurePolicy", failure_policy, _FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        errs += param_kind_errors(_dict(spec["paramKind"]), "spec.paramKind")
    errs += _policy_match_errors(spec)
    if not ignore_match_conditions:
        errs += match_conditions_errors(spec.get("matchConditions"), "spec.matchConditions")
    for i, variable in _items(spec.get("variables")):
        errs += _variable_errors(variable, f"spec.variables[{i}]")
    return errs + _policy_checks_errors(spec, _str(obj["metadata"].get("name")))


def _type_checking_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    warnings = _dict(status.get("typeChecking")).get("expressionWarnings")
    for i, warning in _items(warnings):
        path = f"status.typeChecking.expressionWarnings[{i}]"
        if not warning.get("warning"):
            errs.append(required(f"{path}.warning"))
        if not _str(warning.get("fieldRef")).strip():
            errs.append(required(f"{path}.fieldRef"))
    return errs


class ValidatingAdmissionPolicyStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _default(spec, "failurePolicy", "Fail")
            _default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        spec, old_spec = _dict(obj.get("spec")), _dict((old or {}).get("spec"))
        unchanged = old is not None and all(spec.get(k) == old_spec.get(k) for k in ("paramKind", "matchConditions"))
        errs = validating_admission_policy_errors(obj, ignore_match_conditions=unchanged)
        status = _dict(obj.get("status"))
        return errs + _type_checking_errors(status) + conditions_errors(status.get("conditions"), "status.conditions")


def param_ref_errors(ref: Any, path: str) -> list[FieldError]:
    if not isinstance(ref, dict):
        return []
    name, selector = _str(ref.get("name")), ref.get("selector")
    errs: list[FieldError] = []
    if name:
        errs += _each(f"{path}.name", name, path_segment_name(name))
        if selector is not None:
            errs.append(forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += label_selector_errors(selector, f"{path}.selector")
        if name:
            errs.append(forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(required(f"{path}.parameterNotFoundAction"))
    elif action not in _NOT_FOUND_ACTIONS:
        errs.append(not_supported(f"{path}.parameterNotFoundAction", action, _NOT_FOUND_ACTIONS))
    return errs


def _validation_actions_errors(actions: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, action in enumerate(actions):
        if action not in _VALIDATION_ACTIONS:
            errs.append(not_supported(f"{path}[{i}]", action, _VALIDATION_ACTIONS))
        if action in actions[:i]:
            errs.append(duplicate(f"{path}[{i}]", action))
    if "Deny" in actions and "Warn" in actions:
        detail = (
            "must not contain both Deny and Warn (repeating the same validation failure information in the API "
            "response and headers serves no purpose)"
        )
        errs.append(
            _go_invalid(path, go_slice([str(a) for a in actions], "admissionregistration.ValidationAction"), detail)
        )
    if not actions:
        errs.append(required(path, "at least one validation action is required"))
    return errs


def policy_binding_errors(spec: dict[str, Any]) -> list[FieldError]:
    policy = _str(spec.get("policyName"))
    errs = [required("spec.policyName")] if not policy else _each("spec.policyName", policy, dns1123_subdomain(policy))
    errs += param_ref_errors(spec.get("paramRef"), "spec.paramRef")
    errs += match_resources_errors(spec.get("matchResources"), "spec.matchResouces")  # sic: upstream's path
    return errs + _validation_actions_errors(_list(spec.get("validationActions")), "spec.validationActions")


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        _default_match_resources(_dict(obj.get("spec")).get("matchResources"))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return policy_binding_errors(_dict(obj.get("spec")))


# =================================================================================================================
# apiregistration.k8s.io/v1 APIService
# =================================================================================================================


def _api_service_name_errors(name: str, spec: dict[str, Any]) -> list[FieldError]:
    """The name is the API it serves: `<version>.<group>`."""
    wanted = f"{_str(spec.get('version'))}.{_str(spec.get('group'))}"
    if not name or path_segment_name(name):
        return []  # the registry's name rule reports these
    detail = f'must be `spec.version+"."+spec.group`: {go_value(wanted)}'
    return [] if name == wanted else [invalid("metadata.name", name, detail)]


def _api_service_local_errors(spec: dict[str, Any]) -> list[FieldError]:
    """A local APIService (no service) is served by this apiserver: no TLS settings make sense for it."""
    errs: list[FieldError] = []
    ca_bundle = _str(spec.get("caBundle"))
    if ca_bundle:
        size = len(decode_bytes(ca_bundle, "APIService"))
        errs.append(invalid("spec.caBundle", f"{size} bytes", "local APIServices may not have a caBundle"))
    if spec.get("insecureSkipTLSVerify"):
        detail = "local APIServices may not have insecureSkipTLSVerify"
        errs.append(invalid("spec.insecureSkipTLSVerify", True, detail))
    return errs


def _api_service_remote_errors(spec: dict[str, Any]) -> list[FieldError]:
    service = _dict(spec.get("service"))
    errs = [required(f"spec.service.{key}") for key in ("namespace", "name") if not _str(service.get(key))]
    port = service.get("port", 443)
    messages = port_number_errors(port)
    if messages:
        errs.append(invalid("spec.service.port", port, "port is not valid: " + ", ".join(messages)))
    if spec.get("insecureSkipTLSVerify") and _str(spec.get("caBundle")):
        errs.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


def api_service_errors(obj: dict[str, Any]) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    group, version = _str(spec.get("group")), _str(spec.get("version"))
    errs = _api_service_name_errors(_str(obj["metadata"].get("name")), spec)
    if not group and version != "v1":
        errs.append(required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += _each("spec.group", group, dns1123_subdomain(group))
    errs += _each("spec.version", version, dns1035_label(version))
    minimum, priority = _int(spec.get("groupPriorityMinimum")) or 0, _int(spec.get("versionPriority")) or 0
    if not 0 < minimum <= 20000:
        errs.append(invalid("spec.groupPriorityMinimum", minimum, "must be positive and less than 20000"))
    if not 0 < priority <= 1000:
        errs.append(invalid("spec.versionPriority", priority, "must be positive and less than 1000"))
    local = spec.get("service") is None
    return errs + (_api_service_local_errors(spec) if local else _api_service_remote_errors(spec))


def _api_service_status_errors(status: dict[str, Any]) -> list[FieldError]:
    return [
        not_supported(f"status.conditions[{i}].status", c.get("status", ""), ["True", "False", "Unknown"])
        for i, c in _items(status.get("conditions"))
        if c.get("status", "") not in ("True", "False", "Unknown")
    ]


class APIServiceStrategy(Strategy):
    name_rule = staticmethod(path_segment_name)  # plus `<version>.<group>`, checked with the spec in validate
    has_status = True

    def default(self, obj: dict[str, Any]) -> None:
        service = _dict(obj.get("spec")).get("service")
        if isinstance(service, dict):
            _default(service, "port", 443)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return api_service_errors(obj) + _api_service_status_errors(_dict(obj.get("status")))


# =================================================================================================================
# flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration
# =================================================================================================================

_FLOW_VERBS = sorted(["get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"])
_SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]
_DISTINGUISHERS = ["ByNamespace", "ByUser"]
_PRIORITY_LEVEL_TYPES = ["Exempt", "Limited"]
_LIMIT_RESPONSES = ["Queue", "Reject"]
_MAX_MATCHING_PRECEDENCE = 10000
_MAX_QUEUES = 10_000_000
_MAX_HASH_BITS = 60
_NAMESPACE_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_SUBJECT_FIELDS = {"ServiceAccount": "serviceAccount", "User": "user", "Group": "group"}
_OTHER_SUBJECT_MESSAGES = {
    "serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
    "user": "user is forbidden when subject kind is not 'User'",
    "group": "group is forbidden when subject kind is not 'Group'",
}


def _service_account_subject_errors(subject: dict[str, Any], path: str) -> list[FieldError]:
    name, namespace = _str(subject.get("name")), _str(subject.get("namespace"))
    errs: list[FieldError] = []
    if not name:
        errs.append(required(f"{path}.name"))
    elif name != "*":
        errs += _each(f"{path}.name", name, dns1123_subdomain(name))
    if namespace:
        errs += _each(f"{path}.namespace", namespace, dns1123_label(namespace))
    else:
        errs.append(required(f"{path}.namespace", "must specify namespace for service account"))
    return errs


def flow_subject_errors(subject: dict[str, Any], path: str) -> list[FieldError]:
    kind = subject.get("kind", "")
    key = _SUBJECT_FIELDS.get(str(kind))
    if key is None:
        return [not_supported(f"{path}.kind", kind, _SUBJECT_KINDS)]
    errs: list[FieldError] = []
    detail = subject.get(key)
    if detail is None:
        errs.append(required(f"{path}.{key}", f"{key} is required when subject kind is '{kind}'"))
    elif key == "serviceAccount":
        errs += _service_account_subject_errors(_dict(detail), f"{path}.{key}")
    elif not _str(_dict(detail).get("name")):
        errs.append(required(f"{path}.{key}.name"))
    errs += [
        forbidden(f"{path}.{other}", _OTHER_SUBJECT_MESSAGES[other])
        for other in _OTHER_SUBJECT_MESSAGES
        if other != key and subject.get(other) is not None
    ]
    return errs


def _verbs_errors(verbs: list[str], path: str) -> list[FieldError]:
    if not verbs:
        return [required(path, "verbs must contain at least one value")]
    if _has_wildcard(verbs):
        return [invalid(path, verbs, "if '*' is present, must not specify other verbs")] if len(verbs) > 1 else []
    return [] if set(verbs) <= set(_FLOW_VERBS) else [not_supported(path, verbs, _FLOW_VERBS)]


def _listed_errors(values: list[str], path: str, what: str, wildcard_what: str) -> list[FieldError]:
    if not values:
        return [required(path, f"resource rules must supply at least one {what}")]
    if len(values) > 1 and _has_wildcard(values):
        return [invalid(path, values, f"if '*' is present, must not specify other {wildcard_what}")]
    return []


def _flow_namespaces_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    namespaces = _strings(rule.get("namespaces"))
    if not namespaces and not rule.get("clusterScope"):
        return [required(path, "resource rules that are not cluster scoped must supply at least one namespace")]
    if _has_wildcard(namespaces):
        detail = "if '*' is present, must not specify other namespaces"
        return [invalid(path, namespaces, detail)] if len(namespaces) > 1 else []
    return [
        invalid(f"{path}[{i}]", ns, _NAMESPACE_INTRO + m) for i, ns in enumerate(namespaces) for m in dns1123_label(ns)
    ]


def _resource_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs = _verbs_errors(_strings(rule.get("verbs")), f"{path}.verbs")
    errs += _listed_errors(_strings(rule.get("apiGroups")), f"{path}.apiGroups", "api group", "api groups")
    errs += _listed_errors(_strings(rule.get("resources")), f"{path}.resources", "resource", "resources")
    return errs + _flow_namespaces_errors(rule, f"{path}.namespaces")


def non_resource_url_problem(url: str) -> str:
    """ValidateNonResourceURLPath: an absolute path, `*` only as a final `/*`."""
    if not url:
        return "must not be empty"
    if url == "/":
        return ""
    if not url.startswith("/"):
        return "must start with slash"
    if " " in url:
        return "must not contain white-space"
    if "//" in url:
        return "must not contain double slash"
    stars = url.count("*")
    if stars > 1 or (stars == 1 and not url.endswith("/*")):
        return "wildcard can only do suffix matching"
    return ""


def _non_resource_rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs = _verbs_errors(_strings(rule.get("verbs")), f"{path}.verbs")
    urls = _strings(rule.get("nonResourceURLs"))
    here = f"{path}.nonResourceURLs"
    if not urls:
        return [*errs, required(here, "nonResourceURLs must contain at least one value")]
    if _has_wildcard(urls):
        detail = "if '*' is present, must not specify other non-resource URLs"
        return errs + ([invalid(here, urls, detail)] if len(urls) > 1 else [])
    return errs + [invalid(f"{here}[{i}]", u, p) for i, u in enumerate(urls) if (p := non_resource_url_problem(u))]


def _policy_rules_with_subjects_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    subjects = _list(rule.get("subjects"))
    errs = [] if subjects else [required(f"{path}.subjects", "subjects must contain at least one value")]
    for i, subject in _items(subjects):
        errs += flow_subject_errors(subject, f"{path}.subjects[{i}]")
    resource_rules, non_resource_rules = _list(rule.get("resourceRules")), _list(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errs.append(required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, entry in _items(resource_rules):
        errs += _resource_rule_errors(entry, f"{path}.resourceRules[{i}]")
    for i, entry in _items(non_resource_rules):
        errs += _non_resource_rule_errors(entry, f"{path}.nonResourceRules[{i}]")
    return errs


def _precedence_errors(name: str, precedence: int) -> list[FieldError]:
    path = "spec.matchingPrecedence"
    errs = [invalid(path, precedence, "must be a positive value")] if precedence <= 0 else []
    if precedence > _MAX_MATCHING_PRECEDENCE:
        errs.append(invalid(path, precedence, f"must not be greater than {_MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != "exempt":
        errs.append(invalid(path, precedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
    return errs


def flow_schema_errors(obj: dict[str, Any]) -> list[FieldError]:
    """The spec of a FlowSchema. (Upstream also pins the specs of its mandatory `exempt` and `catch-all`
    schemas to their built-in values; tinykube does not create those.)"""
    spec = _dict(obj.get("spec"))
    errs = _precedence_errors(_str(obj["metadata"].get("name")), _int(spec.get("matchingPrecedence")) or 0)
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in _DISTINGUISHERS:
        shown = f"flowcontrol.FlowDistinguisherMethod{{Type:{go_value(_str(method.get('type')))}}}"
        detail = "supported values: " + ", ".join(go_value(d) for d in _DISTINGUISHERS)
        errs.append(GoSyntaxError(ErrorType.NOT_SUPPORTED, "spec.distinguisherMethod.type", shown, detail))
    level = _str(_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if level:
        errs += _each("spec.priorityLevelConfiguration.name", level, dns1123_subdomain(level))
    else:
        errs.append(required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    for i, rule in _items(spec.get("rules")):
        errs += _policy_rules_with_subjects_errors(rule, f"spec.rules[{i}]")
    return errs


def _flow_status_errors(status: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in _items(status.get("conditions")):
        kind = _str(condition.get("type"))
        if kind in seen:
            errs.append(duplicate(f"status.conditions[{i}].type", kind))
        seen.add(kind)
        if not kind:
            errs.append(required(f"status.conditions[{i}].type", "must not be empty"))
    return errs


class FlowSchemaStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
            spec["matchingPrecedence"] = 1000

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return flow_schema_errors(obj) + _flow_status_errors(_dict(obj.get("status")))


def _required_entropy_bits(deck: int, hand: int) -> int:
    return math.ceil(math.log2(deck) * hand)


def queuing_errors(queuing: dict[str, Any], path: str) -> list[FieldError]:
    """Queue lengths, and shuffle sharding's deck and hand sizes."""
    limit, queues, hand = (_int(queuing.get(k)) or 0 for k in ("queueLengthLimit", "queues", "handSize"))
    errs = [invalid(f"{path}.queueLengthLimit", limit, "must be positive")] if limit <= 0 else []
    if queues <= 0:
        errs.append(invalid(f"{path}.queues", queues, "must be positive"))
    elif queues > _MAX_QUEUES:
        errs.append(invalid(f"{path}.queues", queues, f"must not be greater than {_MAX_QUEUES}"))
    if hand <= 0:
        errs.append(invalid(f"{path}.handSize", hand, "must be positive"))
    elif hand > queues:
        errs.append(invalid(f"{path}.handSize", hand, f"should not be greater than queues ({queues})"))
    elif _required_entropy_bits(queues, hand) > _MAX_HASH_BITS:
        detail = (
            f"required entropy bits of deckSize {queues} and handSize {hand} should not be greater than "
            f"{_MAX_HASH_BITS}"
        )
        errs.append(invalid(f"{path}.handSize", hand, detail))
    return errs


def _limit_response_errors(response: dict[str, Any], path: str) -> list[FieldError]:
    kind, queuing = response.get("type", ""), response.get("queuing")
    if kind == "Reject":
        return (
            [forbidden(f"{path}.queuing", "must be nil if limited.limitResponse.type is not Limited")]
            if queuing is not None
            else []
        )
    if kind == "Queue":
        if queuing is None:
            return [required(f"{path}.queuing", "must not be empty if limited.limitResponse.type is Limited")]
        return queuing_errors(_dict(queuing), f"{path}.queuing")
    return [not_supported(f"{path}.type", kind, _LIMIT_RESPONSES)]


def _lendable_errors(config: dict[str, Any], path: str) -> list[FieldError]:
    lendable = _int(config.get("lendablePercent"))
    if lendable is not None and not 0 <= lendable <= 100:
        return [invalid(f"{path}.lendablePercent", lendable, "must be between 0 and 100, inclusive")]
    return []


def _limited_errors(limited: dict[str, Any], path: str) -> list[FieldError]:
    shares = _int(limited.get("nominalConcurrencyShares"))
    errs: list[FieldError] = []
    if shares is not None and shares < 0:  # v1 allows zero
        errs.append(invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    errs += _limit_response_errors(_dict(limited.get("limitResponse")), f"{path}.limitResponse")
    errs += _lendable_errors(limited, path)
    borrowing = _int(limited.get("borrowingLimitPercent"))
    if borrowing is not None and borrowing < 0:
        detail = "if specified, must be a non-negative integer"
        errs.append(invalid(f"{path}.borrowingLimitPercent", borrowing, detail))
    return errs


def _exempt_errors(exempt: dict[str, Any], path: str) -> list[FieldError]:
    shares = _int(exempt.get("nominalConcurrencyShares"))
    errs: list[FieldError] = []
    if shares is not None and shares < 0:
        errs.append(invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    return errs + _lendable_errors(exempt, path)


def priority_level_errors(obj: dict[str, Any]) -> list[FieldError]:
    """The spec of a PriorityLevelConfiguration (the mandatory `exempt` and `catch-all` levels are not pinned)."""
    spec = _dict(obj.get("spec"))
    kind, limited, exempt = spec.get("type", ""), spec.get("limited"), spec.get("exempt")
    errs: list[FieldError] = []
    if (_str(obj["metadata"].get("name")) == "exempt") != (kind == "Exempt"):
        errs.append(invalid("spec.type", kind, "type must be 'Exempt' if and only if name is 'exempt'"))
    if kind == "Exempt":
        if limited is not None:
            errs.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        if exempt is not None:
            errs += _exempt_errors(_dict(exempt), "spec.exempt")
    elif kind == "Limited":
        if exempt is not None:
            errs.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        if limited is None:
            errs.append(required("spec.limited", "must not be empty when type is Limited"))
        else:
            errs += _limited_errors(_dict(limited), "spec.limited")
    else:
        errs.append(not_supported("spec.type", kind, _PRIORITY_LEVEL_TYPES))
    return errs


def _default_priority_level(spec: dict[str, Any]) -> None:
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if isinstance(exempt, dict):
        _default(exempt, "nominalConcurrencyShares", 0)
        _default(exempt, "lendablePercent", 0)
    if not isinstance(limited, dict):
        return
    _default(limited, "nominalConcurrencyShares", 30)
    _default(limited, "lendablePercent", 0)
    queuing = _dict(limited.get("limitResponse")).get("queuing")
    if isinstance(queuing, dict):
        for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
            if not queuing.get(key):
                queuing[key] = value


class PriorityLevelConfigurationStrategy(Strategy):
    has_status = True
    tracks_generation = True

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _default_priority_level(spec)

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
        return priority_level_errors(obj) + _flow_status_errors(_dict(obj.get("status")))


STRATEGIES: dict[str, type[Strategy]] = {
    "leases": LeaseStrategy,
    "priorityclasses": PriorityClassStrategy,
    "runtimeclasses": RuntimeClassStrategy,
    "certificatesigningrequests": CertificateSigningRequestStrategy,
    "ingresses": IngressStrategy,
    "ingressclasses": IngressClassStrategy,
    "networkpolicies": NetworkPolicyStrategy,
    "mutatingwebhookconfigurations": MutatingWebhookConfigurationStrategy,
    "validatingwebhookconfigurations": ValidatingWebhookConfigurationStrategy,
    "validatingadmissionpolicies": ValidatingAdmissionPolicyStrategy,
    "validatingadmissionpolicybindings": ValidatingAdmissionPolicyBindingStrategy,
    "apiservices": APIServiceStrategy,
    "flowschemas": FlowSchemaStrategy,
    "prioritylevelconfigurations": PriorityLevelConfigurationStrategy,
}
