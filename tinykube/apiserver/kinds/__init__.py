"""One home per API group: each package holds its group's storage strategies (defaulting, validation), Table
printers, zero values and default RBAC rules, beside the one declarative resource table (`tinykube.api.resources`).
Adding a built-in kind means a row in that table plus its code in its group's package."""
