"""The cluster kinds' strategies and printers without HTTP: upstream 1.32's defaults, field paths and messages for
Lease, PriorityClass, RuntimeClass, CertificateSigningRequest, Ingress, IngressClass, NetworkPolicy, the admission
webhook configurations and policies, APIService, FlowSchema and PriorityLevelConfiguration.

The last section runs against a real apiserver (fixture `api`): it needs the kinds to be served.
"""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.apiserver.kinds import created, strategy, updated
from tinykube.api import errors
from tinykube.api.meta import validate_object_meta
from tinykube.api.resources import RESOURCES
from tinykube.apiserver.auth.identity import UserInfo
from tinykube.apiserver.kinds.certificates import strategy as certificates
from tinykube.apiserver.kinds.coordination import strategy as coordination
from tinykube.apiserver.kinds.printers import table
from tinykube.apiserver.kinds.scheduling import strategy as scheduling

# ---- helpers -----------------------------------------------------------------------------------------------------


def create_errors(plural: str, obj: dict[str, Any]) -> list[str]:
    return created(plural, obj)[1]


def update_errors(plural: str, new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    return updated(plural, new, old)[1]


def stored(plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj, errs = created(plural, obj)
    assert errs == []
    return obj


NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
FIVE_MINUTES_AGO = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cells(plural: str, obj: dict[str, Any]) -> list[Any]:
    info = next(r for r in RESOURCES if r.plural == plural and r.stored)
    obj.setdefault("metadata", {"name": "x", "creationTimestamp": FIVE_MINUTES_AGO})
    row: list[Any] = table(info, [obj], now=NOW)["rows"][0]["cells"]
    return row


def column_names(plural: str) -> list[str]:
    info = next(r for r in RESOURCES if r.plural == plural and r.stored)
    return [c["name"] for c in table(info, [], now=NOW)["columnDefinitions"]]


# ---- Lease -------------------------------------------------------------------------------------------------------


def test_lease_accepts_a_leader_election_lease_and_its_put_create() -> None:
    spec = {"holderIdentity": "node-1", "leaseDurationSeconds": 40, "leaseTransitions": 0}
    assert create_errors("leases", {"spec": spec}) == []
    assert strategy("leases").allow_create_on_update


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"leaseDurationSeconds": 0}, "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0", id="dur"
        ),
        pytest.param(
            {"leaseTransitions": -1},
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            id="transitions",
        ),
    ],
)
def test_lease_spec_validation(spec: dict[str, Any], message: str) -> None:
    assert create_errors("leases", {"spec": spec}) == [message]


def test_lease_coordinated_election_fields_are_dropped_while_the_gate_is_off() -> None:
    obj, errs = created("leases", {"spec": {"strategy": "Nonsense", "preferredHolder": "b", "holderIdentity": "a"}})
    assert errs == []
    assert obj["spec"] == {"holderIdentity": "a"}
    old = {"metadata": {"name": "x"}, "spec": {"strategy": "OldestEmulationVersion"}}
    new = {"metadata": {"name": "x"}, "spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "b"}}
    strategy("leases").prepare_update(new, old)
    assert new["spec"] == {"strategy": "OldestEmulationVersion"}  # kept: the stored lease had it


def test_lease_strategy_validation_when_the_gate_is_on() -> None:
    gated = type("GatedLease", (coordination.LeaseStrategy,), {"coordinated_leader_election": True})
    s = gated(strategy("leases").resource)
    obj: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {"strategy": "Nonsense"}}
    s.prepare_create(obj)
    assert [str(e) for e in s.validate(obj, None)] == [
        'spec.strategy.strategy: Unsupported value: "Nonsense": supported values: "OldestEmulationVersion"'
    ]
    lone = {"metadata": {"name": "x"}, "spec": {"preferredHolder": "b"}}
    assert [str(e) for e in s.validate(lone, None)] == [
        "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
    ]


# ---- PriorityClass -----------------------------------------------------------------------------------------------


def test_priority_class_defaults() -> None:
    obj = stored("priorityclasses", {"metadata": {"name": "high"}})
    assert (obj["value"], obj["preemptionPolicy"]) == (0, "PreemptLowerPriority")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            {"metadata": {"name": "huge"}, "value": 1_000_000_001},
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            id="user-value-too-high",
        ),
        pytest.param(
            {"metadata": {"name": "system-mine"}, "value": 5},
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: system-mine is not a known system priority class",
            id="unknown-system-name",
        ),
        pytest.param(
            {"metadata": {"name": "system-node-critical"}, "value": 5},
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: value of system-node-critical PriorityClass must be 2000001000",
            id="system-class-wrong-value",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "preemptionPolicy": "Sometimes"},
            'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
            id="preemption-policy",
        ),
    ],
)
def test_priority_class_validation(obj: dict[str, Any], message: str) -> None:
    assert create_errors("priorityclasses", obj) == [message]


def test_priority_class_builtin_system_classes_are_allowed() -> None:
    for name, value in scheduling.SYSTEM_PRIORITY_CLASSES.items():
        assert create_errors("priorityclasses", {"metadata": {"name": name}, "value": value}) == []


def test_priority_class_value_and_preemption_policy_are_immutable() -> None:
    old = stored("priorityclasses", {"metadata": {"name": "p"}, "value": 10})
    new = {**copy.deepcopy(old), "value": 11, "preemptionPolicy": "Never"}
    assert update_errors("priorityclasses", new, old) == [
        "value: Forbidden: may not be changed in an update.",
        'preemptionPolicy: Invalid value: "Never": field is immutable',
    ]


# ---- RuntimeClass ------------------------------------------------------------------------------------------------


def test_runtime_class_handler_is_a_required_immutable_dns_label() -> None:
    label = (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
    assert create_errors("runtimeclasses", {}) == [f'handler: Invalid value: "": {label}']
    assert create_errors("runtimeclasses", {"handler": "Runc"}) == [f'handler: Invalid value: "Runc": {label}']
    old = stored("runtimeclasses", {"handler": "runc"})
    assert update_errors("runtimeclasses", {**copy.deepcopy(old), "handler": "kata"}, old) == [
        'handler: Invalid value: "kata": field is immutable'
    ]


def test_runtime_class_scheduling_tolerations() -> None:
    scheduling = {"tolerations": [{"operator": "Equal", "value": "x"}, {"key": "k", "effect": "Sometimes"}]}
    assert create_errors("runtimeclasses", {"handler": "runc", "scheduling": scheduling}) == [
        'scheduling.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
        'scheduling.tolerations[1].effect: Unsupported value: "Sometimes": supported values: "NoExecute", '
        '"NoSchedule", "PreferNoSchedule"',
    ]


# ---- CertificateSigningRequest -----------------------------------------------------------------------------------

KEY = ec.generate_private_key(ec.SECP256R1())
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def pem_csr(common_name: str = "alice") -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    request = x509.CertificateSigningRequestBuilder().subject_name(name).sign(KEY, hashes.SHA256())
    return request.public_bytes(serialization.Encoding.PEM)


def pem_certificate() -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    builder = x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(KEY.public_key())
    builder = builder.serial_number(1).not_valid_before(NOW).not_valid_after(NOW + timedelta(days=1))
    return builder.sign(KEY, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def csr(**spec: Any) -> dict[str, Any]:
    base = {"request": b64(pem_csr()), "signerName": CLIENT_SIGNER, "usages": ["client auth"]}
    return {"metadata": {"name": "alice"}, "spec": {**base, **spec}}


def test_csr_records_the_requester_and_starts_without_conditions() -> None:
    s = strategy("certificatesigningrequests")
    assert isinstance(s, certificates.CertificateSigningRequestStrategy)
    obj = csr(username="mallory", groups=["system:masters"])
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    user = UserInfo("alice", uid="u-1", groups=("dev", "system:authenticated"), extra={"scope": ("a",)})
    s.prepare_create(obj)
    s.record_requester(obj, user)
    assert obj["spec"]["username"] == "alice"
    assert obj["spec"]["groups"] == ["dev", "system:authenticated"]
    assert (obj["spec"]["uid"], obj["spec"]["extra"]) == ("u-1", {"scope": ["a"]})
    assert obj["status"] == {}
    assert s.validate(obj, None) == []


def test_csr_any_name_is_accepted() -> None:
    s = strategy("certificatesigningrequests")
    assert validate_object_meta({"name": "Node:Alice/1"}, namespaced=False, name_rule=s.name_rule) == []


def tampered_csr() -> bytes:
    der = bytearray(x509.load_pem_x509_csr(pem_csr()).public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01  # a bit of the signature
    body = base64.encodebytes(bytes(der))
    return b"-----BEGIN CERTIFICATE REQUEST-----\n" + body + b"-----END CERTIFICATE REQUEST-----\n"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"request": b64(b"hi")},
            "spec.request: Invalid value: []byte{0x68, 0x69}: PEM block type must be CERTIFICATE REQUEST",
            id="not-pem",
        ),
        pytest.param(
            {"request": b64(pem_certificate())},
            "PEM block type must be CERTIFICATE REQUEST",
            id="a-certificate-not-a-request",
        ),
        pytest.param({"request": b64(tampered_csr())}, "x509: ECDSA verification failure", id="bad-signature"),
        pytest.param({"usages": []}, "spec.usages: Required value", id="usages-required"),
        pytest.param(
            {"usages": ["client auth", "client auth"]},
            'spec.usages[1]: Duplicate value: "client auth"',
            id="usages-duplicate",
        ),
        pytest.param({"signerName": ""}, "spec.signerName: Required value", id="signer-required"),
        pytest.param(
            {"signerName": "example"},
            'spec.signerName: Invalid value: "example": must be a fully qualified domain and path of the form '
            "'example.com/signer-name'",
            id="signer-one-segment",
        ),
        pytest.param(
            {"signerName": "example/signer"},
            'spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by '
            "dots",
            id="signer-short-domain",
        ),
        pytest.param(
            {"signerName": "kubernetes.io/legacy-unknown"},
            'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed '
            "via this API version",
            id="legacy-signer",
        ),
        pytest.param(
            {"expirationSeconds": 599},
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
            id="expiration",
        ),
    ],
)
def test_csr_validation(spec: dict[str, Any], message: str) -> None:
    errs = create_errors("certificatesigningrequests", csr(**spec))
    assert len(errs) == 1
    assert message in errs[0]


def test_csr_usages_outside_the_known_set() -> None:
    (error,) = create_errors("certificatesigningrequests", csr(usages=["telepathy"]))
    assert error.startswith('spec.usages[0]: Unsupported value: "telepathy": supported values: "any", "cert sign",')


def test_csr_request_that_is_not_base64_is_a_bad_request() -> None:
    with pytest.raises(errors.BadRequest) as caught:
        create_errors("certificatesigningrequests", csr(request="not base64!"))
    assert caught.value.message == (
        'CertificateSigningRequest in version "v1" cannot be handled as a CertificateSigningRequest: '
        "illegal base64 data at input byte 3"
    )


def test_csr_update_keeps_spec_and_status() -> None:
    old = stored("certificatesigningrequests", csr())
    new = copy.deepcopy(old)
    new["spec"]["usages"] = ["server auth"]
    new["status"] = {"certificate": b64(pem_certificate())}
    new["metadata"]["labels"] = {"team": "a"}
    prepared, errs = updated("certificatesigningrequests", new, old)
    assert errs == []
    assert (prepared["spec"], prepared["status"], prepared["metadata"]["labels"]) == (
        old["spec"],
        old["status"],
        {"team": "a"},
    )


def approve(old: dict[str, Any], conditions: list[dict[str, Any]], subresource: str) -> list[str]:
    s = strategy("certificatesigningrequests")
    assert isinstance(s, certificates.CertificateSigningRequestStrategy)
    new = copy.deepcopy(old)
    new["status"] = {"conditions": conditions}
    s.prepare_subresource_update(subresource, new, old)
    return [str(e) for e in s.validate_subresource_update(subresource, new, old)]


def test_csr_approval_only_through_the_approval_subresource() -> None:
    old = stored("certificatesigningrequests", csr())
    approved = [{"type": "Approved", "reason": "KubectlApprove"}]
    assert approve(old, approved, "approval") == []
    assert approve(old, approved, "status") == [
        'status.conditions: Forbidden: updates may not add a condition of type "Approved"'
    ]


def test_csr_approval_writes_only_conditions_and_stamps_them() -> None:
    s = strategy("certificatesigningrequests")
    assert isinstance(s, certificates.CertificateSigningRequestStrategy)
    old = stored("certificatesigningrequests", csr())
    new = copy.deepcopy(old)
    new["spec"]["usages"] = ["server auth"]
    new["status"] = {"conditions": [{"type": "Approved"}], "certificate": b64(pem_certificate())}
    new["metadata"]["annotations"] = {"patchedapproval": "true"}
    s.prepare_subresource_update("approval", new, old)
    assert new["spec"] == old["spec"]
    assert new["metadata"]["annotations"] == {"patchedapproval": "true"}  # upstream keeps the sent metadata
    assert "certificate" not in new["status"]
    (condition,) = new["status"]["conditions"]
    assert condition["status"] == "True"  # v1 defaulting
    assert condition["lastUpdateTime"] == condition["lastTransitionTime"] != ""


def test_csr_approval_rules() -> None:
    old = stored("certificatesigningrequests", csr())
    both = [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]
    assert approve(old, both, "approval") == [
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive'
    ]
    assert approve(old, [{"type": "Approved", "status": "False"}], "approval") == [
        'status.conditions[0].status: Unsupported value: "False": supported values: "True"'
    ]
    s = strategy("certificatesigningrequests")
    assert isinstance(s, certificates.CertificateSigningRequestStrategy)
    approved = copy.deepcopy(old)
    s.prepare_subresource_update("approval", approved, old)
    approved["status"] = {"conditions": [{"type": "Approved", "status": "True", "lastTransitionTime": "t"}]}
    assert approve(approved, [], "approval") == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Approved"'
    ]


def test_csr_certificate_is_set_once_through_status() -> None:
    s = strategy("certificatesigningrequests")
    old = stored("certificatesigningrequests", csr())
    issued = copy.deepcopy(old)
    issued["status"] = {"certificate": b64(pem_certificate())}
    s.prepare_status_update(issued, old)
    assert s.validate(issued, old) == []
    again = copy.deepcopy(issued)
    again["status"]["certificate"] = b64(pem_certificate())
    assert [str(e) for e in s.validate(again, issued)] == [
        "status.certificate: Forbidden: updates may not modify existing certificate content"
    ]
    bad = copy.deepcopy(old)
    bad["status"] = {"certificate": b64(pem_csr())}
    assert [str(e) for e in s.validate(bad, old)] == [
        'status.certificate: Invalid value: "<certificate data>": only CERTIFICATE PEM blocks are allowed, found '
        '"CERTIFICATE REQUEST"'
    ]


def test_csr_status_keeps_an_unchanged_conditions_transition_time() -> None:
    s = strategy("certificatesigningrequests")
    old = stored("certificatesigningrequests", csr())
    old["status"] = {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    new = copy.deepcopy(old)
    new["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "SignerError"}]}
    s.prepare_status_update(new, old)
    assert new["status"]["conditions"][0]["lastTransitionTime"] == "2024-01-01T00:00:00Z"


# ---- Ingress -----------------------------------------------------------------------------------------------------


def backend(name: str = "web", port: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"service": {"name": name, "port": port if port is not None else {"number": 80}}}


def ingress(**path: Any) -> dict[str, Any]:
    entry = {"path": "/", "pathType": "Prefix", "backend": backend(), **path}
    return {"spec": {"rules": [{"host": "example.com", "http": {"paths": [entry]}}]}}


def test_ingress_valid_and_tracks_generation() -> None:
    assert create_errors("ingresses", ingress()) == []
    assert create_errors("ingresses", {"spec": {"defaultBackend": backend()}}) == []
    s = strategy("ingresses")
    assert s.has_status and s.tracks_generation


PATH = "spec.rules[0].http.paths[0]"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param({"pathType": None}, f"{PATH}.pathType: Required value: pathType must be specified", id="no-type"),
        pytest.param(
            {"pathType": "Glob"},
            f'{PATH}.pathType: Unsupported value: "Glob": supported values: "Exact", "ImplementationSpecific", '
            '"Prefix"',
            id="bad-type",
        ),
        pytest.param(
            {"pathType": "Exact", "path": "api"},
            f'{PATH}.path: Invalid value: "api": must be an absolute path',
            id="rel",
        ),
        pytest.param({"path": "/a//b"}, f"{PATH}.path: Invalid value: \"/a//b\": must not contain '//'", id="dslash"),
        pytest.param({"path": "/a/.."}, f"{PATH}.path: Invalid value: \"/a/..\": cannot end with '/..'", id="dotdot"),
        pytest.param(
            {"backend": {**backend(), "resource": {"kind": "Bucket", "name": "b"}}},
            f'{PATH}.backend: Invalid value: "": cannot set both resource and service backends',
            id="both-backends",
        ),
        pytest.param(
            {"backend": {}},
            f'{PATH}.backend: Invalid value: "": resource or service backend is required',
            id="no-backend",
        ),
        pytest.param(
            {"backend": backend(port={"name": "http", "number": 80})},
            f'{PATH}.backend: Invalid value: "": cannot set both port name & port number',
            id="port-name-and-number",
        ),
        pytest.param(
            {"backend": backend(port={})},
            f"{PATH}.backend: Required value: port name or number is required",
            id="no-port",
        ),
        pytest.param(
            {"backend": backend(port={"number": 70000})},
            f"{PATH}.backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive",
            id="port-range",
        ),
    ],
)
def test_ingress_path_validation(path: dict[str, Any], message: str) -> None:
    obj = ingress(**path)
    entry = obj["spec"]["rules"][0]["http"]["paths"][0]
    if entry.get("pathType") is None:
        entry.pop("pathType")
    assert create_errors("ingresses", obj) == [message]


def test_ingress_service_name_is_a_dns1035_label() -> None:
    (error,) = create_errors("ingresses", ingress(backend=backend(name="1web")))
    assert error.startswith(f'{PATH}.backend.service.name: Invalid value: "1web": a DNS-1035 label must consist')


def test_ingress_needs_rules_or_a_default_backend() -> None:
    assert create_errors("ingresses", {"spec": {}}) == [
        "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
    ]


def test_ingress_hosts() -> None:
    def host_errors(host: str) -> list[str]:
        obj = ingress()
        obj["spec"]["rules"][0]["host"] = host
        return create_errors("ingresses", obj)

    assert host_errors("*.example.com") == []
    assert host_errors("10.0.0.1") == [
        'spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address'
    ]
    (wildcard,) = host_errors("*.*.example.com")
    assert wildcard.startswith(
        "spec.rules[0].host: Invalid value: \"*.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', "
    )
    assert wildcard.endswith(
        r"regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


def test_ingress_tls_secret_name_tolerated_when_already_stored() -> None:
    obj = ingress()
    obj["spec"]["tls"] = [{"hosts": ["example.com"], "secretName": "Bad_Name"}]
    (error,) = create_errors("ingresses", copy.deepcopy(obj))
    assert error.startswith('spec.tls[0].secretName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    old = {"metadata": {"name": "x"}, **copy.deepcopy(obj)}
    assert update_errors("ingresses", copy.deepcopy(old), old) == []


def test_ingress_class_annotation_must_match_class_name_on_create() -> None:
    obj = ingress()
    obj["metadata"] = {"name": "x", "annotations": {"kubernetes.io/ingress.class": "nginx"}}
    obj["spec"]["ingressClassName"] = "traefik"
    assert create_errors("ingresses", obj) == [
        'annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match `ingressClassName` when both '
        "are specified"
    ]


def test_ingress_status_load_balancer() -> None:
    obj = {"metadata": {"name": "x"}, **ingress()}
    obj["status"] = {"loadBalancer": {"ingress": [{"ip": "300.1.1.1"}, {"hostname": "10.0.0.1"}]}}
    errs = [str(e) for e in strategy("ingresses").validate(obj, None)]
    assert errs[0].startswith('status.loadBalancer.ingress[0].ip: Invalid value: "300.1.1.1": must be a valid IP')
    assert errs[1] == (
        'status.loadBalancer.ingress[1].hostname: Invalid value: "10.0.0.1": must be a DNS name, not an IP address'
    )


# ---- IngressClass ------------------------------------------------------------------------------------------------


def test_ingress_class_controller_required_and_immutable() -> None:
    assert create_errors("ingressclasses", {"spec": {}}) == ["spec.controller: Required value"]
    assert create_errors("ingressclasses", {"spec": {"controller": "nginx"}}) == [
        'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")'
    ]
    old = stored("ingressclasses", {"spec": {"controller": "k8s.io/ingress-nginx"}})
    new = copy.deepcopy(old)
    new["spec"]["controller"] = "example.com/other"
    assert update_errors("ingressclasses", new, old) == [
        'spec.controller: Invalid value: "example.com/other": field is immutable'
    ]


def test_ingress_class_parameters() -> None:
    params = {"kind": "Config", "name": "c"}
    obj = stored("ingressclasses", {"spec": {"controller": "k8s.io/nginx", "parameters": dict(params)}})
    assert obj["spec"]["parameters"]["scope"] == "Cluster"
    namespaced = {"spec": {"controller": "k8s.io/nginx", "parameters": {**params, "scope": "Namespace"}}}
    assert create_errors("ingressclasses", namespaced) == [
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"
    ]
    cluster_scoped = {"spec": {"controller": "k8s.io/nginx", "parameters": {**params, "namespace": "ns"}}}
    assert create_errors("ingressclasses", cluster_scoped) == [
        "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"
    ]


# ---- NetworkPolicy -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "policy_types"),
    [
        pytest.param({}, ["Ingress"], id="ingress-only"),
        pytest.param({"egress": [{}]}, ["Ingress", "Egress"], id="with-egress"),
        pytest.param({"policyTypes": ["Egress"]}, ["Egress"], id="explicit"),
    ],
)
def test_network_policy_policy_types_default(spec: dict[str, Any], policy_types: list[str]) -> None:
    obj = stored("networkpolicies", {"spec": spec})
    assert obj["spec"]["policyTypes"] == policy_types
    assert obj["spec"]["podSelector"] == {}


def test_network_policy_port_protocol_defaults_to_tcp() -> None:
    obj = stored("networkpolicies", {"spec": {"ingress": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}})
    assert [p["protocol"] for p in obj["spec"]["ingress"][0]["ports"]] == ["TCP", "UDP"]


FROM = "spec.ingress[0].from[0]"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        pytest.param({"from": [{}]}, f"{FROM}: Required value: must specify a peer", id="no-peer"),
        pytest.param(
            {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]},
            f"{FROM}: Forbidden: may not specify both ipBlock and another peer",
            id="ipblock-and-selector",
        ),
        pytest.param(
            {"from": [{"ipBlock": {"cidr": "10.0.0.0"}}]},
            f'{FROM}.ipBlock.cidr: Invalid value: "10.0.0.0": not a valid CIDR',
            id="bad-cidr",
        ),
        pytest.param(
            {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]},
            f'{FROM}.ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`',
            id="except-outside",
        ),
        pytest.param(
            {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}}]},
            f'{FROM}.ipBlock.except[0]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`',
            id="except-equal",
        ),
        pytest.param(
            {"ports": [{"protocol": "ICMP"}]},
            'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
            id="protocol",
        ),
        pytest.param(
            {"ports": [{"port": 80, "endPort": 70}]},
            "spec.ingress[0].ports[0].endPort: Invalid value: 70: must be greater than or equal to `port`",
            id="end-port-before-port",
        ),
        pytest.param(
            {"ports": [{"port": "http", "endPort": 90}]},
            "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
            id="end-port-named",
        ),
        pytest.param(
            {"from": [{"podSelector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}}]},
            f'{FROM}.podSelector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator',
            id="selector-operator",
        ),
    ],
)
def test_network_policy_rule_validation(rule: dict[str, Any], message: str) -> None:
    assert create_errors("networkpolicies", {"spec": {"ingress": [rule]}}) == [message]


def test_network_policy_policy_types_validation() -> None:
    assert create_errors("networkpolicies", {"spec": {"policyTypes": ["Ingress", "Egress", "Ingress"]}}) == [
        'spec.policyTypes: Invalid value: []networking.PolicyType{"Ingress", "Egress", "Ingress"}: may not specify '
        "more than two policyTypes"
    ]
    assert create_errors("networkpolicies", {"spec": {"policyTypes": ["Sideways"]}}) == [
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"'
    ]


# ---- webhook configurations --------------------------------------------------------------------------------------


def hook(**fields: Any) -> dict[str, Any]:
    base = {
        "name": "check.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
    }
    return {**base, **fields}


def test_webhook_defaults() -> None:
    mutating = stored("mutatingwebhookconfigurations", {"webhooks": [hook()]})["webhooks"][0]
    validating = stored("validatingwebhookconfigurations", {"webhooks": [hook()]})["webhooks"][0]
    expected = {
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 10,
    }
    assert {k: mutating[k] for k in expected} == expected == {k: validating[k] for k in expected}
    assert mutating["reinvocationPolicy"] == "Never"
    assert "reinvocationPolicy" not in validating
    assert mutating["clientConfig"]["service"]["port"] == 443
    assert mutating["rules"][0]["scope"] == "*"


W = "webhooks[0]"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"name": "check"},
            f'{W}.name: Invalid value: "check": should be a domain with at least three segments separated by dots',
            id="unqualified-name",
        ),
        pytest.param(
            {"clientConfig": {}},
            f"{W}.clientConfig: Required value: exactly one of url or service is required",
            id="no-client",
        ),
        pytest.param(
            {"clientConfig": {"url": "http://hooks.example.com/check"}},
            f"{W}.clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
            "https://host[/path]",
            id="http-url",
        ),
        pytest.param(
            {"clientConfig": {"url": "https://hooks.example.com/check?x=1"}},
            f'{W}.clientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL',
            id="query",
        ),
        pytest.param(
            {"clientConfig": {"service": {"name": "svc"}}},
            f"{W}.clientConfig.service.name: Required value",  # sic: upstream labels the missing namespace `name`
            id="service-namespace-missing",
        ),
        pytest.param(
            {"clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "relative"}}},
            f"{W}.clientConfig.service.path: Invalid value: \"relative\": must start with a '/'",
            id="service-path",
        ),
        pytest.param(
            {"sideEffects": None},
            f"{W}.sideEffects: Required value: must specify one of None, NoneOnDryRun",
            id="side-effects-missing",
        ),
        pytest.param(
            {"sideEffects": "Some"},
            f'{W}.sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
            id="side-effects-some",
        ),
        pytest.param(
            {"admissionReviewVersions": []},
            f"{W}.admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            id="no-review-versions",
        ),
        pytest.param(
            {"admissionReviewVersions": ["v2"]},
            f'{W}.admissionReviewVersions: Invalid value: []string{{"v2"}}: must include at least one of v1, v1beta1',
            id="unknown-review-version",
        ),
        pytest.param(
            {"timeoutSeconds": 31},
            f"{W}.timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            id="timeout",
        ),
        pytest.param(
            {"failurePolicy": "Retry"},
            f'{W}.failurePolicy: Unsupported value: "Retry": supported values: "Fail", "Ignore"',
            id="failure-policy",
        ),
        pytest.param(
            {"rules": [{"operations": ["READ"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]},
            f'{W}.rules[0].operations[0]: Unsupported value: "READ": supported values: "*", "CONNECT", "CREATE", '
            '"DELETE", "UPDATE"',
            id="operation",
        ),
        pytest.param(
            {"matchConditions": [{"name": "c", "expression": "  "}]},
            f"{W}.matchConditions[0].expression: Required value",
            id="match-condition-expression",
        ),
    ],
)
def test_webhook_validation(fields: dict[str, Any], message: str) -> None:
    obj = hook(**fields)
    if obj["sideEffects"] is None:
        obj.pop("sideEffects")
    assert create_errors("validatingwebhookconfigurations", {"webhooks": [obj]}) == [message]


def test_webhook_names_unique() -> None:
    assert create_errors("mutatingwebhookconfigurations", {"webhooks": [hook(), hook()]}) == [
        'webhooks[1].name: Duplicate value: "check.example.com"'
    ]


def test_webhook_update_tolerates_what_the_stored_configuration_had() -> None:
    old: dict[str, Any] = {
        "metadata": {"name": "x"},
        "webhooks": [hook(sideEffects="Some", admissionReviewVersions=["v2"])],
    }
    new = copy.deepcopy(old)
    new["webhooks"][0]["timeoutSeconds"] = 5
    assert update_errors("validatingwebhookconfigurations", new, old) == []


def test_webhook_generation_follows_the_webhooks() -> None:
    s = strategy("validatingwebhookconfigurations")
    old = stored("validatingwebhookconfigurations", {"webhooks": [hook()]})
    relabelled = {**copy.deepcopy(old), "metadata": {"name": "x", "labels": {"a": "b"}}}
    assert s.tracks_generation and not s.bumps_generation(relabelled, old)
    assert s.bumps_generation({**old, "webhooks": []}, old)


# ---- ValidatingAdmissionPolicy and binding -----------------------------------------------------------------------


def policy(**spec: Any) -> dict[str, Any]:
    rules = [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]
    base = {"matchConstraints": {"resourceRules": rules}, "validations": [{"expression": "object.spec.replicas < 5"}]}
    return {"metadata": {"name": "max-replicas"}, "spec": {**base, **spec}}


def test_policy_defaults() -> None:
    spec = stored("validatingadmissionpolicies", policy())["spec"]
    assert spec["failurePolicy"] == "Fail"
    match = spec["matchConstraints"]
    assert (match["matchPolicy"], match["namespaceSelector"], match["objectSelector"]) == ("Equivalent", {}, {})
    assert match["resourceRules"][0]["scope"] == "*"


@pytest.mark.parametrize(
    ("spec", "messages"),
    [
        pytest.param({"matchConstraints": None}, ["spec.matchConstraints: Required value"], id="no-match"),
        pytest.param(
            {"matchConstraints": {}}, ["spec.matchConstraints.resourceRules: Required value"], id="no-resource-rules"
        ),
        pytest.param(
            {"validations": []},
            [
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ],
            id="nothing-to-check",
        ),
        pytest.param(
            {"validations": [{"expression": " "}]},
            ["spec.validations[0].expression: Required value: expression is not specified"],
            id="blank-expression",
        ),
        pytest.param(
            {"validations": [{"expression": "true", "message": "two\nlines"}]},
            ['spec.validations[0].message: Invalid value: "two\\nlines": message must not contain line breaks'],
            id="message-newline",
        ),
        pytest.param(
            {"variables": [{"name": "if", "expression": "1"}]},
            ['spec.variables[0].name: Invalid value: "if": name is not a valid CEL identifier'],
            id="variable-name",
        ),
        pytest.param(
            {"paramKind": {"apiVersion": "a/b/c", "kind": "Config"}},
            ['spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'],
            id="param-kind",
        ),
        pytest.param(
            {"auditAnnotations": [{"key": "k", "valueExpression": "x"}, {"key": "k", "valueExpression": "y"}]},
            ['spec.auditAnnotations[1].key: Duplicate value: "k"'],
            id="audit-key-duplicate",
        ),
    ],
)
def test_policy_validation(spec: dict[str, Any], messages: list[str]) -> None:
    obj = policy(**spec)
    if obj["spec"]["matchConstraints"] is None:
        obj["spec"].pop("matchConstraints")
    assert create_errors("validatingadmissionpolicies", obj) == messages


def binding(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "spec": {"policyName": "max-replicas", "validationActions": ["Deny"], **spec}}


@pytest.mark.parametrize(
    ("spec", "messages"),
    [
        pytest.param({"policyName": ""}, ["spec.policyName: Required value"], id="policy-name"),
        pytest.param(
            {"validationActions": []},
            ["spec.validationActions: Required value: at least one validation action is required"],
            id="no-actions",
        ),
        pytest.param(
            {"validationActions": ["Deny", "Warn"]},
            [
                'spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: '
                "must not contain both Deny and Warn (repeating the same validation failure information in the API "
                "response and headers serves no purpose)"
            ],
            id="deny-and-warn",
        ),
        pytest.param(
            {"paramRef": {"name": "p", "selector": {}, "parameterNotFoundAction": "Deny"}},
            [
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            ],
            id="param-ref-name-and-selector",
        ),
        pytest.param(
            {"paramRef": {"name": "p"}},
            ["spec.paramRef.parameterNotFoundAction: Required value"],
            id="not-found-action",
        ),
        pytest.param(
            {"matchResources": {"matchPolicy": "Sometimes"}},
            ['spec.matchResouces.matchPolicy: Unsupported value: "Sometimes": supported values: "Equivalent", "Exact"'],
            id="match-resources-path-as-upstream-spells-it",
        ),
    ],
)
def test_policy_binding_validation(spec: dict[str, Any], messages: list[str]) -> None:
    assert create_errors("validatingadmissionpolicybindings", binding(**spec)) == messages


# ---- APIService --------------------------------------------------------------------------------------------------


def api_service(name: str = "v1beta1.metrics.k8s.io", **spec: Any) -> dict[str, Any]:
    base = {
        "group": "metrics.k8s.io",
        "version": "v1beta1",
        "groupPriorityMinimum": 100,
        "versionPriority": 100,
        "service": {"namespace": "kube-system", "name": "metrics-server"},
    }
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def test_api_service_valid_and_service_port_defaults() -> None:
    obj = stored("apiservices", api_service())
    assert obj["spec"]["service"]["port"] == 443


@pytest.mark.parametrize(
    ("obj", "messages"),
    [
        pytest.param(
            api_service(name="metrics"),
            [
                'metadata.name: Invalid value: "metrics": must be `spec.version+"."+spec.group`: '
                '"v1beta1.metrics.k8s.io"'
            ],
            id="name",
        ),
        pytest.param(
            api_service(name="v2.", group="", version="v2", service=None),
            ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"],
            id="empty-group",
        ),
        pytest.param(
            api_service(groupPriorityMinimum=0, versionPriority=1001),
            [
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            ],
            id="priorities",
        ),
        pytest.param(
            api_service(service=None, caBundle=base64.b64encode(b"abc").decode()),
            ['spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle'],
            id="local-ca-bundle",
        ),
        pytest.param(
            api_service(service={"name": "metrics-server"}),
            ["spec.service.namespace: Required value"],
            id="service-namespace",
        ),
    ],
)
def test_api_service_validation(obj: dict[str, Any], messages: list[str]) -> None:
    if "service" in obj["spec"] and obj["spec"]["service"] is None:
        obj["spec"].pop("service")
    assert create_errors("apiservices", obj) == messages


def test_api_service_name_must_be_a_path_segment() -> None:
    s = strategy("apiservices")
    assert [str(e) for e in validate_object_meta({"name": "a/b"}, namespaced=False, name_rule=s.name_rule)] == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    ]


# ---- FlowSchema and PriorityLevelConfiguration -------------------------------------------------------------------


def flow_schema(name: str = "fs", **spec: Any) -> dict[str, Any]:
    rule = {
        "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
        "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}],
    }
    base = {"priorityLevelConfiguration": {"name": "workload-low"}, "rules": [rule]}
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def test_flow_schema_default_precedence() -> None:
    assert stored("flowschemas", flow_schema())["spec"]["matchingPrecedence"] == 1000


R = "spec.rules[0]"


@pytest.mark.parametrize(
    ("spec", "messages"),
    [
        pytest.param(
            {"matchingPrecedence": 1},
            ["spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"],
            id="precedence-1",
        ),
        pytest.param(
            {"matchingPrecedence": 10001},
            ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"],
            id="precedence-max",
        ),
        pytest.param(
            {"priorityLevelConfiguration": {}},
            ["spec.priorityLevelConfiguration.name: Required value: must reference a priority level"],
            id="no-priority-level",
        ),
        pytest.param(
            {"distinguisherMethod": {"type": "ByColour"}},
            [
                "spec.distinguisherMethod.type: Unsupported value: "
                'flowcontrol.FlowDistinguisherMethod{Type:"ByColour"}: supported values: "ByNamespace", "ByUser"'
            ],
            id="distinguisher",
        ),
        pytest.param(
            {
                "rules": [
                    {
                        "subjects": [{"kind": "Robot"}],
                        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/a*"]}],
                    }
                ]
            },
            [
                f'{R}.subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", '
                '"User"',
                f'{R}.nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/a*": wildcard can only do suffix '
                "matching",
            ],
            id="subject-kind-and-url",
        ),
        pytest.param(
            {
                "rules": [
                    {
                        "subjects": [{"kind": "User"}],
                        "resourceRules": [
                            {"verbs": ["fly"], "apiGroups": [""], "resources": ["pods"], "clusterScope": True}
                        ],
                    }
                ]
            },
            [
                f"{R}.subjects[0].user: Required value: user is required when subject kind is 'User'",
                f'{R}.resourceRules[0].verbs: Unsupported value: []string{{"fly"}}: supported values: "create", '
                '"delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"',
            ],
            id="user-and-verbs",
        ),
    ],
)
def test_flow_schema_validation(spec: dict[str, Any], messages: list[str]) -> None:
    assert create_errors("flowschemas", flow_schema(**spec)) == messages


def limited(**queuing: Any) -> dict[str, Any]:
    response = {"type": "Queue", "queuing": queuing}
    return {"metadata": {"name": "workload-low"}, "spec": {"type": "Limited", "limited": {"limitResponse": response}}}


def test_priority_level_defaults() -> None:
    spec = stored("prioritylevelconfigurations", limited())["spec"]["limited"]
    assert (spec["nominalConcurrencyShares"], spec["lendablePercent"]) == (30, 0)
    assert spec["limitResponse"]["queuing"] == {"handSize": 8, "queues": 64, "queueLengthLimit": 50}
    exempt = {"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}}
    assert stored("prioritylevelconfigurations", exempt)["spec"]["exempt"] == {
        "nominalConcurrencyShares": 0,
        "lendablePercent": 0,
    }


@pytest.mark.parametrize(
    ("obj", "messages"),
    [
        pytest.param(
            {"metadata": {"name": "mine"}, "spec": {"type": "Exempt"}},
            ["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"],
            id="exempt-name",
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {"type": "Limited"}},
            ["spec.limited: Required value: must not be empty when type is Limited"],
            id="limited-missing",
        ),
        pytest.param(
            limited(queues=4, handSize=5),
            ["spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)"],
            id="hand-bigger-than-deck",
        ),
        pytest.param(
            limited(queues=10_000_000, handSize=5),
            [
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: required entropy bits of deckSize "
                "10000000 and handSize 5 should not be greater than 60"
            ],
            id="entropy",
        ),
        pytest.param(
            {
                "metadata": {"name": "p"},
                "spec": {"type": "Limited", "limited": {"lendablePercent": 101, "limitResponse": {"type": "Reject"}}},
            },
            ["spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive"],
            id="lendable",
        ),
    ],
)
def test_priority_level_validation(obj: dict[str, Any], messages: list[str]) -> None:
    assert create_errors("prioritylevelconfigurations", obj) == messages


def test_priority_level_allows_zero_shares_in_v1() -> None:
    obj = limited()
    obj["spec"]["limited"]["nominalConcurrencyShares"] = 0
    assert create_errors("prioritylevelconfigurations", obj) == []


# ---- printers ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plural", "names"),
    [
        pytest.param("leases", ["Name", "Holder", "Age"], id="leases"),
        pytest.param("priorityclasses", ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"], id="pc"),
        pytest.param("runtimeclasses", ["Name", "Handler", "Age"], id="rc"),
        pytest.param(
            "certificatesigningrequests",
            ["Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"],
            id="csr",
        ),
        pytest.param("ingresses", ["Name", "Class", "Hosts", "Address", "Ports", "Age"], id="ing"),
        pytest.param("ingressclasses", ["Name", "Controller", "Parameters", "Age"], id="ingclass"),
        pytest.param("networkpolicies", ["Name", "Pod-Selector", "Age"], id="netpol"),
        pytest.param("mutatingwebhookconfigurations", ["Name", "Webhooks", "Age"], id="mwc"),
        pytest.param("validatingwebhookconfigurations", ["Name", "Webhooks", "Age"], id="vwc"),
        pytest.param("validatingadmissionpolicies", ["Name", "Validations", "ParamKind", "Age"], id="vap"),
        pytest.param("validatingadmissionpolicybindings", ["Name", "PolicyName", "ParamRef", "Age"], id="vapb"),
        pytest.param("apiservices", ["Name", "Service", "Available", "Age"], id="apiservices"),
        pytest.param(
            "flowschemas",
            ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"],
            id="fs",
        ),
        pytest.param(
            "prioritylevelconfigurations",
            ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"],
            id="plc",
        ),
    ],
)
def test_printer_columns(plural: str, names: list[str]) -> None:
    assert column_names(plural) == names


def test_printer_cells_lease_priority_runtime() -> None:
    assert cells("leases", {"spec": {"holderIdentity": "node-1"}}) == ["x", "node-1", "5m"]
    assert cells("leases", {"spec": {}}) == ["x", "", "5m"]
    pc = {"value": 1000, "globalDefault": True, "preemptionPolicy": "Never"}
    assert cells("priorityclasses", pc) == ["x", 1000, True, "5m", "Never"]
    assert cells("priorityclasses", {"value": 5}) == ["x", 5, False, "5m", ""]
    assert cells("runtimeclasses", {"handler": "runc"}) == ["x", "runc", "5m"]


@pytest.mark.parametrize(
    ("status", "condition"),
    [
        pytest.param({}, "Pending", id="pending"),
        pytest.param({"conditions": [{"type": "Approved"}]}, "Approved", id="approved"),
        pytest.param({"conditions": [{"type": "Approved"}, {"type": "Denied"}]}, "Denied", id="denied-wins"),
        pytest.param({"conditions": [{"type": "Approved"}, {"type": "Failed"}]}, "Approved,Failed", id="failed"),
        pytest.param({"conditions": [{"type": "Approved"}], "certificate": "Y2VydA=="}, "Approved,Issued", id="issued"),
    ],
)
def test_printer_csr_condition(status: dict[str, Any], condition: str) -> None:
    spec = {"signerName": CLIENT_SIGNER, "username": "alice", "expirationSeconds": 3600}
    assert cells("certificatesigningrequests", {"spec": spec, "status": status}) == [
        "x",
        "5m",
        CLIENT_SIGNER,
        "alice",
        "60m",
        condition,
    ]
    assert cells("certificatesigningrequests", {"spec": {}})[2:5] == ["<none>", "", "<none>"]


@pytest.mark.parametrize(
    ("hosts", "shown"),
    [
        pytest.param([], "*", id="none"),
        pytest.param(["", ""], "*", id="no-hosts"),
        pytest.param(["a", "b"], "a,b", id="two"),
        pytest.param(["a", "b", "c"], "a,b,c", id="three"),
        pytest.param(["a", "b", "c", "d", ""], "a,b,c + 2 more...", id="more"),
        pytest.param(["", "a", "b", "c", "d"], "a,b,c + 2 more...", id="first-without-host"),
    ],
)
def test_printer_ingress_hosts(hosts: list[str], shown: str) -> None:
    rules = [{"host": h} if h else {} for h in hosts]
    assert cells("ingresses", {"spec": {"rules": rules}})[2] == shown


def test_printer_ingress_row() -> None:
    status = {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.1"}]}}
    obj = {"spec": {"ingressClassName": "nginx", "rules": [{"host": "a"}], "tls": [{}]}, "status": status}
    assert cells("ingresses", obj) == ["x", "nginx", "a", "10.0.0.1,10.0.0.2,lb.example.com", "80, 443", "5m"]
    assert cells("ingresses", {"spec": {}})[1:5] == ["<none>", "*", "", "80"]


def test_printer_ingress_class_and_network_policy() -> None:
    params = {"apiGroup": "k8s.example.com", "kind": "Config", "name": "c"}
    assert cells("ingressclasses", {"spec": {"controller": "k8s.io/nginx", "parameters": params}}) == [
        "x",
        "k8s.io/nginx",
        "Config.k8s.example.com/c",
        "5m",
    ]
    assert cells("ingressclasses", {"spec": {"controller": "k8s.io/nginx"}})[2] == "<none>"
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
    }
    assert cells("networkpolicies", {"spec": {"podSelector": selector}})[1] == "app=web,tier in (a,b)"
    assert cells("networkpolicies", {"spec": {"podSelector": {}}})[1] == "<none>"


def test_printer_admission_kinds() -> None:
    assert cells("mutatingwebhookconfigurations", {"webhooks": [{}, {}]}) == ["x", 2, "5m"]
    vap = {"spec": {"validations": [{}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}}
    assert cells("validatingadmissionpolicies", vap) == ["x", 1, "v1/ConfigMap", "5m"]
    assert cells("validatingadmissionpolicies", {"spec": {}})[1:3] == [0, "<unset>"]
    named = {"spec": {"policyName": "p", "paramRef": {"name": "limits"}}}
    assert cells("validatingadmissionpolicybindings", named) == ["x", "p", "*/limits", "5m"]
    namespaced = {"spec": {"policyName": "p", "paramRef": {"name": "limits", "namespace": "ns"}}}
    assert cells("validatingadmissionpolicybindings", namespaced)[2] == "ns/limits"
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}],
    }
    assert cells("validatingadmissionpolicybindings", {"spec": {"paramRef": {"selector": selector}}})[2] == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
    )


@pytest.mark.parametrize(
    ("obj", "service", "available"),
    [
        pytest.param({"spec": {}}, "Local", "Unknown", id="local"),
        pytest.param(
            {
                "spec": {"service": {"namespace": "kube-system", "name": "m"}},
                "status": {"conditions": [{"type": "Available", "status": "True"}]},
            },
            "kube-system/m",
            "True",
            id="available",
        ),
        pytest.param(
            {
                "spec": {},
                "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]},
            },
            "Local",
            "False (MissingEndpoints)",
            id="unavailable",
        ),
    ],
)
def test_printer_api_service(obj: dict[str, Any], service: str, available: str) -> None:
    assert cells("apiservices", obj) == ["x", service, available, "5m"]


def test_printer_flow_control() -> None:
    fs = {
        "spec": {
            "priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": 9900,
            "distinguisherMethod": {"type": "ByUser"},
        },
        "status": {"conditions": [{"type": "Dangling", "status": "False"}]},
    }
    assert cells("flowschemas", fs) == ["x", "global-default", 9900, "ByUser", "5m", "False"]
    assert cells("flowschemas", {"spec": {}})[3:] == ["<none>", "5m", "?"]
    plc = stored("prioritylevelconfigurations", limited())
    plc["metadata"]["creationTimestamp"] = FIVE_MINUTES_AGO
    assert cells("prioritylevelconfigurations", plc) == ["workload-low", "Limited", 30, 64, 8, 50, "5m"]
    exempt = {"spec": {"type": "Exempt", "exempt": {}}}
    assert cells("prioritylevelconfigurations", exempt) == ["x", "Exempt", "<none>", "<none>", "<none>", "<none>", "5m"]


# ---- against a real apiserver (needs the kinds served) -----------------------------------------------------------


def test_served_priority_class_rejects_a_reserved_name(api: httpx.Client) -> None:
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-mine"}}
    response = api.post("/apis/scheduling.k8s.io/v1/priorityclasses", json={**body, "value": 1})
    assert response.status_code == 422, response.text
    assert response.json()["details"]["causes"][0]["field"] == "metadata.name"


def test_served_csr_approval_and_printing(api: httpx.Client) -> None:
    name = "tinykube-test-csr"
    base = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    api.delete(f"{base}/{name}")
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", **csr()}
    body["metadata"] = {"name": name}
    response = api.post(base, json=body)
    assert response.status_code == 201, response.text
    try:
        stored_csr = response.json()
        stored_csr["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Test"}]}
        response = api.put(f"{base}/{name}/approval", json=stored_csr)
        assert response.status_code == 200, response.text
        rows = api.get(f"{base}/{name}", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
        # the csrsigning controller may have signed it already (a kube-apiserver-client request)
        assert rows["rows"][0]["cells"][5] in ("Approved", "Approved,Issued")
    finally:
        api.delete(f"{base}/{name}")


def test_served_network_policy_defaults(api: httpx.Client, namespace: str) -> None:
    body = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny"},
        "spec": {"egress": [{"ports": [{"port": 53}]}]},
    }
    response = api.post(f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies", json=body)
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["egress"][0]["ports"][0]["protocol"] == "TCP"
