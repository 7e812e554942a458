"""Zero values: what upstream's typed objects always have (structs that are not pointers, slices without
omitempty), per kind, merged from each API group's `kinds/<group>/zeros.py`.

Field management compares them as present (`tinykube.apiserver.schema.fieldmanager`), so that a create owns `f:spec`
without a `.` of its own, as upstream's entries show. A kind without an entry (a custom resource's, whose zero
value is nothing) has only its metadata's.
"""

from __future__ import annotations

from typing import Any, Final

from tinykube.apiserver.kinds.admissionregistration import zeros as admissionregistration
from tinykube.apiserver.kinds.apiregistration import zeros as apiregistration
from tinykube.apiserver.kinds.apps import zeros as apps
from tinykube.apiserver.kinds.autoscaling import zeros as autoscaling
from tinykube.apiserver.kinds.batch import zeros as batch
from tinykube.apiserver.kinds.certificates import zeros as certificates
from tinykube.apiserver.kinds.coordination import zeros as coordination
from tinykube.apiserver.kinds.core import zeros as core
from tinykube.apiserver.kinds.discovery import zeros as discovery
from tinykube.apiserver.kinds.flowcontrol import zeros as flowcontrol
from tinykube.apiserver.kinds.networking import zeros as networking
from tinykube.apiserver.kinds.policy import zeros as policy
from tinykube.apiserver.kinds.rbac import zeros as rbac
from tinykube.apiserver.kinds.storage import zeros as storage

ZEROS: Final[dict[str, dict[str, Any]]] = {
    **core.ZEROS,
    **apps.ZEROS,
    **batch.ZEROS,
    **autoscaling.ZEROS,
    **coordination.ZEROS,
    **discovery.ZEROS,
    **networking.ZEROS,
    **policy.ZEROS,
    **rbac.ZEROS,
    **certificates.ZEROS,
    **storage.ZEROS,
    **flowcontrol.ZEROS,
    **apiregistration.ZEROS,
    **admissionregistration.ZEROS,
}


def zero(kind: str) -> dict[str, Any]:
    return ZEROS.get(kind, {"metadata": core.META})
