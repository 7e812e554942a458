"""Table columns (`kubectl get`) of the rbac kinds, as upstream's printers (pkg/printers/internalversion
printers.go).

Roles and ClusterRoles have no printer upstream: they get the generic NAME / CREATED AT table. Bindings show the
role they grant and, with `-o wide`, who they grant it to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_str, dicts
from tinykube.apiserver.printing.cells import age, name_of
from tinykube.apiserver.printing.table import AGE_COLUMN, DEFAULT_PRINTER, NAME_COLUMN, Cells, Column, Printer


def _binding_columns(kind: str, role_ref: str) -> tuple[Column, ...]:
    return (
        NAME_COLUMN,
        Column("Role", "string", role_ref),
        AGE_COLUMN,
        Column("Users", "string", f"Users in the {kind}", priority=1),
        Column("Groups", "string", f"Groups in the {kind}", priority=1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {kind}", priority=1),
    )


ROLE_BINDING_COLUMNS = _binding_columns(
    "roleBinding",
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef "
    "cannot be resolved, the Authorizer must return an error.",
)
CLUSTER_ROLE_BINDING_COLUMNS = _binding_columns(
    "clusterRoleBinding",
    "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the "
    "Authorizer must return an error.",
)


def subjects_strings(subjects: Any) -> tuple[list[str], list[str], list[str]]:
    """`rbac.SubjectsStrings`: user names, group names and `namespace/name` of ServiceAccounts, in order."""
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in dicts(subjects):
        kind, name = subject.get("kind"), as_str(subject.get("name"))
        if kind == "ServiceAccount":
            accounts.append(f"{as_str(subject.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return users, groups, accounts


def _binding_cells(obj: dict[str, Any], now: datetime) -> Cells:
    ref = as_dict(obj.get("roleRef"))
    users, groups, accounts = subjects_strings(obj.get("subjects"))
    return [
        name_of(obj),
        f"{as_str(ref.get('kind'))}/{as_str(ref.get('name'))}",
        age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


PRINTERS: dict[str, Printer] = {
    "roles": DEFAULT_PRINTER,
    "clusterroles": DEFAULT_PRINTER,
    "rolebindings": Printer(ROLE_BINDING_COLUMNS, _binding_cells),
    "clusterrolebindings": Printer(CLUSTER_ROLE_BINDING_COLUMNS, _binding_cells),
}
