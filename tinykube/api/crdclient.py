"""A CRD's objects as a client addresses them (components that list or watch custom resources over the API: the
namespace controller, the garbage collector). Light on purpose: no schema is compiled."""

from __future__ import annotations

from typing import Any

from tinykube.api.conditions import is_true
from tinykube.api.resources import ResourceInfo

CRDS_PATH = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def client_resource(crd: dict[str, Any]) -> ResourceInfo | None:
    """The CRD's storage version as a resource to list, watch and delete; None until it is Established."""
    if not is_true(crd, "Established"):
        return None
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    version = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), None)
    if not version or not names.get("plural") or not names.get("kind"):
        return None
    return ResourceInfo(
        spec.get("group", ""),
        version,
        names["kind"],
        names["plural"],
        names.get("singular") or names["kind"].lower(),
        spec.get("scope") == "Namespaced",
    )
