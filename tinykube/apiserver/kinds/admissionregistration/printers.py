"""Table columns (`kubectl get`) of the admissionregistration.k8s.io kinds (webhook configurations,
ValidatingAdmissionPolicies and their bindings), as upstream's printers (pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at (ObjectMeta's for NAME and AGE).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str, dicts
from tinykube.apiserver.printing.cells import age, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

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
        for e in dicts(selector.get("matchExpressions"))
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


PRINTERS: dict[str, Printer] = {
    "mutatingwebhookconfigurations": Printer(WEBHOOK_COLUMNS, _webhook_cells),
    "validatingwebhookconfigurations": Printer(WEBHOOK_COLUMNS, _webhook_cells),
    "validatingadmissionpolicies": Printer(POLICY_COLUMNS, _policy_cells),
    "validatingadmissionpolicybindings": Printer(POLICY_BINDING_COLUMNS, _policy_binding_cells),
}
