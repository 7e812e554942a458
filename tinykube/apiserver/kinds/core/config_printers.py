"""Table columns (`kubectl get`) of the config kinds, as upstream's printers (`pkg/printers/internalversion`).

LimitRanges have no printer of their own upstream: their storage registers the generic NAME / CREATED AT table, and
so do they here. Column descriptions are the upstream field descriptions (as the `kubernetes` client
carries them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tinykube.api.jsonshape import as_dict, as_list, as_str
from tinykube.apiserver.kinds.core.template_cells import container_cells
from tinykube.apiserver.printing.cells import age, format_labels, name_of, quantity_text
from tinykube.apiserver.printing.table import AGE_COLUMN, DEFAULT_PRINTER, NAME_COLUMN, Column, Printer

CONFIG_MAP_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Data",
        "string",
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. "
        "Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap "
        "with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE_COLUMN,
)

SECRET_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data. More info: "
        "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
    ),
    Column(
        "Data",
        "string",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The "
        "serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly "
        "non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE_COLUMN,
)

SERVICE_ACCOUNT_COLUMNS = (
    NAME_COLUMN,
    Column(
        "Secrets",
        "string",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are "
        'allowed to use. Pods are only limited to this list if this service account has a "kubernetes.io/enforce-'
        'mountable-secrets" annotation set to "true". The "kubernetes.io/enforce-mountable-secrets" annotation is '
        "deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should "
        "not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens "
        "can be requested directly using the TokenRequest API, or service account token secrets can be manually "
        "created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
    ),
    AGE_COLUMN,
)

POD_TEMPLATE_COLUMNS = (
    NAME_COLUMN,
    Column("Containers", "string", "Names of each container in the template."),
    Column("Images", "string", "Images referenced by each container in the template."),
    Column("Pod Labels", "string", "The labels for the pod template."),
)

# 1.32's order: AGE second (1.33 moved it last).
RESOURCE_QUOTA_COLUMNS = (
    NAME_COLUMN,
    AGE_COLUMN,
    Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    Column(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the "
        "node.",
    ),
)


def _config_map_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    count = len(as_dict(obj.get("data"))) + len(as_dict(obj.get("binaryData")))
    return [name_of(obj), count, age(obj, now)]


def _secret_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [name_of(obj), as_str(obj.get("type")), len(as_dict(obj.get("data"))), age(obj, now)]


def _service_account_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [name_of(obj), len(as_list(obj.get("secrets"))), age(obj, now)]


def _pod_template_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    template = as_dict(obj.get("template"))
    names, images = container_cells(template)
    return [name_of(obj), names, images, format_labels(as_dict(template.get("metadata")).get("labels"))]


def quota_usage(obj: dict[str, Any]) -> tuple[str, str]:
    """ "name: used/hard" for each resource of `status.hard` (sorted), limits.* in the second column."""
    status = as_dict(obj.get("status"))
    hard, used = as_dict(status.get("hard")), as_dict(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        column = limits if name.split(".")[0] == "limits" and "." in name else requests
        column.append(f"{name}: {quantity_text(used.get(name))}/{quantity_text(hard[name])}")
    return ", ".join(requests), ", ".join(limits)


def _resource_quota_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    requests, limits = quota_usage(obj)
    return [name_of(obj), age(obj, now), requests, limits]


PRINTERS: dict[str, Printer] = {
    "configmaps": Printer(CONFIG_MAP_COLUMNS, _config_map_cells),
    "secrets": Printer(SECRET_COLUMNS, _secret_cells),
    "serviceaccounts": Printer(SERVICE_ACCOUNT_COLUMNS, _service_account_cells),
    "podtemplates": Printer(POD_TEMPLATE_COLUMNS, _pod_template_cells),
    "limitranges": DEFAULT_PRINTER,
    "resourcequotas": Printer(RESOURCE_QUOTA_COLUMNS, _resource_quota_cells),
}
