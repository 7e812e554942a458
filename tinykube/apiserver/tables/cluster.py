"""Table columns (`kubectl get`) of the cluster kinds, as upstream's printers (pkg/printers/internalversion
printers.go; APIServices' from kube-aggregator's REST storage).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE). Some of
upstream's point at older API versions (CertificateSigningRequest's at v1beta1) or at a field that does not exist
(RuntimeClass's HANDLER at ObjectMeta's `handler`, hence empty); they are kept so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.apiserver.printers import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Column,
    Printer,
    age,
    as_dict,
    as_int,
    as_list,
    as_str,
    dicts_in,
    format_label_selector,
    human_duration,
    name_of,
)

# ---- coordination.k8s.io Lease -------------------------------------------------------------------------------------

LEASE_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Holder",
        "string",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is "
        "used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
    ),
    AGE_COLUMN,
)


def _lease_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), as_str(as_dict(obj.get("spec")).get("holderIdentity")), age(obj, now)]


# ---- scheduling.k8s.io PriorityClass ---------------------------------------------------------------------------------

PRIORITY_CLASS_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Value",
        "integer",
        "value represents the integer value of this priority class. This is the actual priority that pods receive "
        "when they have the name of this class in their pod spec.",
    ),
    Column(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods "
        "that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if "
        "more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of "
        "such global default PriorityClasses will be used as the default priority.",
    ),
    AGE_COLUMN,
    Column(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. "
        "Defaults to PreemptLowerPriority if unset.",
    ),
)


def _priority_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        name_of(obj),
        as_int(obj.get("value")),
        obj.get("globalDefault") is True,
        age(obj, now),
        as_str(obj.get("preemptionPolicy")),
    ]


# ---- node.k8s.io RuntimeClass ----------------------------------------------------------------------------------------

RUNTIME_CLASS_COLUMNS = (NAME_COLUMN, Column("Handler", "string", ""), AGE_COLUMN)


def _runtime_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), as_str(obj.get("handler")), age(obj, now)]


# ---- certificates.k8s.io CertificateSigningRequest -------------------------------------------------------------------

CSR_COLUMNS = (
    NAME_COLUMN,
    AGE_COLUMN,
    Column(
        "SignerName",
        "string",
        "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, "
        "it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    "
        '"kubernetes.io/kube-apiserver-client-kubelet".\n 2. If it\'s a kubelet serving certificate, it is '
        'assigned\n    "kubernetes.io/kubelet-serving".\n 3. Otherwise, it is assigned '
        '"kubernetes.io/legacy-unknown".\nDistribution of trust for signers happens out of band.\nYou can select on '
        "this field using `spec.signerName`.",
    ),
    Column("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),  # sic: upstream describes `request` here
    Column(
        "RequestedDuration",
        "string",
        "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer "
        "may issue a certificate with a different validity duration so a client must check the delta between the "
        "notBefore and and notAfter fields in the issued certificate to determine the actual duration.",
    ),
    Column("Condition", "string", "Conditions applied to the request, such as approval or denial."),
)


def csr_condition(obj: dict[str, Any]) -> str:
    """`extractCSRStatus`: Denied over Approved over Pending, then `,Failed` and `,Issued` as they apply."""
    kinds = {as_str(c.get("type")) for c in dicts_in(as_dict(obj.get("status")).get("conditions"))}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if as_str(as_dict(obj.get("status")).get("certificate")):
        text += ",Issued"
    return text


def _csr_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    seconds = spec.get("expirationSeconds")
    duration = human_duration(seconds) if isinstance(seconds, int) and not isinstance(seconds, bool) else "<none>"
    return [
        name_of(obj),
        age(obj, now),
        as_str(spec.get("signerName")) or "<none>",
        as_str(spec.get("username")),
        duration,
        csr_condition(obj),
    ]


# ---- networking.k8s.io Ingress, IngressClass, NetworkPolicy ----------------------------------------------------------

INGRESS_COLUMNS = (
    NAME_COLUMN,
    Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    Column("Ports", "string", "Ports of TLS configurations that open"),
    AGE_COLUMN,
)

_MAX_HOSTS = 3


def ingress_hosts(rules: Any) -> str:
    """`formatHosts`: the first three hosts, `*` when no rule has one. Once three are shown, any further rule
    counts as more, and upstream counts them as `rules - 3` (rules without a host included)."""
    entries = dicts_in(rules)
    hosts: list[str] = []
    more = False
    for rule in entries:
        more = more or len(hosts) == _MAX_HOSTS
        if not more and as_str(rule.get("host")):
            hosts.append(as_str(rule.get("host")))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(entries) - _MAX_HOSTS} more..." if more else "")


def ingress_address(status: Any) -> str:
    """The load balancer's IPs (or hostnames where it has no IP), sorted and without repeats."""
    entries = dicts_in(as_dict(as_dict(status).get("loadBalancer")).get("ingress"))
    found = {as_str(e.get("ip")) or as_str(e.get("hostname")) for e in entries}
    return ",".join(sorted(found - {""}))


def _ingress_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    class_name = spec.get("ingressClassName")
    return [
        name_of(obj),
        class_name if isinstance(class_name, str) else "<none>",
        ingress_hosts(spec.get("rules")),
        ingress_address(obj.get("status")),
        "80, 443" if as_list(spec.get("tls")) else "80",
        age(obj, now),
    ]


INGRESS_CLASS_COLUMNS = (
    NAME_COLUMN,
    Column("Controller", "string", "Controller that is responsible for handling this class"),
    Column("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE_COLUMN,
)


def _ingress_class_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    params = spec.get("parameters")
    shown = "<none>"
    if isinstance(params, dict):
        group = params.get("apiGroup")
        kind = as_str(params.get("kind")) + (f".{group}" if isinstance(group, str) else "")
        shown = f"{kind}/{as_str(params.get('name'))}"
    return [name_of(obj), as_str(spec.get("controller")), shown, age(obj, now)]


NETWORK_POLICY_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any "
        "pods selected by this field. Multiple network policies can select the same set of pods. In this case, the "
        "ingress rules for each are combined additively. This field is NOT optional and follows standard label "
        "selector semantics. An empty podSelector matches all pods in this namespace.",
    ),
    AGE_COLUMN,
)


def _network_policy_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), format_label_selector(as_dict(obj.get("spec")).get("podSelector")), age(obj, now)]


# ---- admissionregistration.k8s.io ------------------------------------------------------------------------------------

WEBHOOK_COLUMNS = (
    NAME_COLUMN,
    Column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    AGE_COLUMN,
)


def _webhook_cells(obj: dict[str, Any], now: datetime) -> Cells:
    return [name_of(obj), len(as_list(obj.get("webhooks"))), age(obj, now)]


POLICY_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"
    ),
    Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE_COLUMN,
)


def _policy_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    kind = spec.get("paramKind")
    shown = f"{as_str(kind.get('apiVersion'))}/{as_str(kind.get('kind'))}" if isinstance(kind, dict) else "<unset>"
    return [name_of(obj), len(as_list(spec.get("validations"))), shown, age(obj, now)]


POLICY_BINDING_COLUMNS = (
    NAME_COLUMN,
    Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
    Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    AGE_COLUMN,
)


def go_label_selector_string(selector: dict[str, Any]) -> str:
    """The protobuf-generated `String()` of a metav1.LabelSelector, which upstream prints for a paramRef selector."""
    labels = as_dict(selector.get("matchLabels"))
    shown_labels = "".join(f"{key}: {labels[key]}," for key in sorted(labels))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{as_str(e.get('key'))},Operator:{as_str(e.get('operator'))},"
        f"Values:[{' '.join(str(v) for v in as_list(e.get('values')))}],}},"
        for e in dicts_in(selector.get("matchExpressions"))
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{shown_labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )


def param_ref_text(ref: Any) -> str:
    """`namespace/name` (`*/name` when the namespace is left to the request), the selector, or `<unset>`."""
    if not isinstance(ref, dict):
        return "<unset>"
    name, namespace, selector = as_str(ref.get("name")), as_str(ref.get("namespace")), ref.get("selector")
    if name:
        return f"{namespace or '*'}/{name}"
    return go_label_selector_string(selector) if isinstance(selector, dict) else "<unset>"


def _policy_binding_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    return [name_of(obj), as_str(spec.get("policyName")), param_ref_text(spec.get("paramRef")), age(obj, now)]


# ---- apiregistration.k8s.io APIService -------------------------------------------------------------------------------

API_SERVICE_COLUMNS = (
    NAME_COLUMN,
    Column("Service", "string", "The reference to the service that hosts this API endpoint."),
    Column("Available", "string", "Whether this service is available."),
    AGE_COLUMN,
)


def api_service_available(status: Any) -> str:
    """The Available condition: `True`, or its status with the reason (`False (MissingEndpoints)`), or `Unknown`."""
    for condition in dicts_in(as_dict(status).get("conditions")):
        if condition.get("type") == "Available":
            value, reason = as_str(condition.get("status")), as_str(condition.get("reason"))
            return f"{value} ({reason})" if value != "True" and reason else value
    return "Unknown"


def _api_service_cells(obj: dict[str, Any], now: datetime) -> Cells:
    service = as_dict(obj.get("spec")).get("service")
    shown = (
        f"{as_str(service.get('namespace'))}/{as_str(service.get('name'))}" if isinstance(service, dict) else "Local"
    )
    return [name_of(obj), shown, api_service_available(obj.get("status")), age(obj, now)]


# ---- flowcontrol.apiserver.k8s.io ------------------------------------------------------------------------------------

FLOW_SCHEMA_COLUMNS = (
    NAME_COLUMN,
    Column(
        "PriorityLevel", "string", "`name` is the name of the priority level configuration being referenced Required."
    ),
    Column(
        "MatchingPrecedence",
        "string",
        "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen "
        "FlowSchema is among those with the numerically lowest (which we take to be logically highest) "
        "MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the "
        "precedence is not specified, it will be set to 1000 as default.",
    ),
    Column(
        "DistinguisherMethod",
        "string",
        "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. "
        "`nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
    ),
    AGE_COLUMN,
    Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
)


def _flow_schema_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    method = spec.get("distinguisherMethod")
    dangling = next(
        (
            as_str(c.get("status"))
            for c in dicts_in(as_dict(obj.get("status")).get("conditions"))
            if c.get("type") == "Dangling"
        ),
        "?",
    )
    return [
        name_of(obj),
        as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name")),
        as_int(spec.get("matchingPrecedence")),
        as_str(method.get("type")) if isinstance(method, dict) else "<none>",
        age(obj, now),
        dangling,
    ]


PRIORITY_LEVEL_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Type",
        "string",
        "`type` indicates whether this priority level is subject to limitation on request execution.  A value of "
        '`"Exempt"` means that requests of this priority level are not subject to a limit (and thus are never '
        "queued) and do not detract from the capacity made available to other priority levels.  A value of "
        '`"Limited"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the '
        "server's limited capacity is made available exclusively to this priority level. Required.",
    ),
    Column(
        "NominalConcurrencyShares",
        "string",
        "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) "
        "of this level. This is the number of execution seats available at this priority level.",
    ),
    Column(
        "Queues",
        "string",
        "`queues` is the number of queues for this priority level. The queues exist independently at each "
        "apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus "
        "makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of "
        "64.",
    ),
    Column(
        "HandSize",
        "string",
        "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.",
    ),
    Column(
        "QueueLengthLimit",
        "string",
        "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this "
        "priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, "
        "it will be defaulted to 50.",
    ),
    AGE_COLUMN,
)


def _priority_level_cells(obj: dict[str, Any], now: datetime) -> Cells:
    spec = as_dict(obj.get("spec"))
    limited = spec.get("limited")
    shares: Any = "<none>"
    queuing_cells: list[Any] = ["<none>"] * 3
    if isinstance(limited, dict):
        shares = as_int(limited.get("nominalConcurrencyShares"))
        queuing = as_dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            queuing_cells = [as_int(queuing.get(k)) for k in ("queues", "handSize", "queueLengthLimit")]
    return [name_of(obj), as_str(spec.get("type")), shares, *queuing_cells, age(obj, now)]


PRINTERS: dict[str, Printer] = {
    "leases": Printer(LEASE_COLUMNS, _lease_cells),
    "priorityclasses": Printer(PRIORITY_CLASS_COLUMNS, _priority_class_cells),
    "runtimeclasses": Printer(RUNTIME_CLASS_COLUMNS, _runtime_class_cells),
    "certificatesigningrequests": Printer(CSR_COLUMNS, _csr_cells),
    "ingresses": Printer(INGRESS_COLUMNS, _ingress_cells),
    "ingressclasses": Printer(INGRESS_CLASS_COLUMNS, _ingress_class_cells),
    "networkpolicies": Printer(NETWORK_POLICY_COLUMNS, _network_policy_cells),
    "mutatingwebhookconfigurations": Printer(WEBHOOK_COLUMNS, _webhook_cells),
    "validatingwebhookconfigurations": Printer(WEBHOOK_COLUMNS, _webhook_cells),
    "validatingadmissionpolicies": Printer(POLICY_COLUMNS, _policy_cells),
    "validatingadmissionpolicybindings": Printer(POLICY_BINDING_COLUMNS, _policy_binding_cells),
    "apiservices": Printer(API_SERVICE_COLUMNS, _api_service_cells),
    "flowschemas": Printer(FLOW_SCHEMA_COLUMNS, _flow_schema_cells),
    "prioritylevelconfigurations": Printer(PRIORITY_LEVEL_COLUMNS, _priority_level_cells),
}
