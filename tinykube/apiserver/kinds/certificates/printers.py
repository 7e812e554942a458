"""Table columns (`kubectl get`) of the certificates.k8s.io kinds, CertificateSigningRequests, as upstream's
printers (pkg/printers/internalversion printers.go).

Column descriptions are the API field documentation upstream points at, some of them at an older API version
(v1beta1): they are kept so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, human_duration, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, NAME_COLUMN, Cells, Column, Printer

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
    kinds = {as_str(c.get("type")) for c in dicts(as_dict(obj.get("status")).get("conditions"))}
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


PRINTERS: dict[str, Printer] = {
    "certificatesigningrequests": Printer(CSR_COLUMNS, _csr_cells),
}
