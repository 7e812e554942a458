"""Kubeconfig files: written by `tinykube up` (standalone, or merged into another file when asked) and read by
every component that talks to the apiserver."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class Credentials:
    server: str
    token: str
    ca_data: bytes | None  # PEM; None for plain HTTP


def kubeconfig_dict(context: str, creds: Credentials) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": creds.server}
    if creds.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(creds.ca_data).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": {"token": creds.token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": "default"}}],
        "current-context": context,
        "preferences": {},
    }


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_kubeconfig(path: Path, context: str, creds: Credentials) -> None:
    """A standalone kubeconfig holding only this cluster."""
    _write_private(path, yaml.safe_dump(kubeconfig_dict(context, creds), sort_keys=False))


def merge_kubeconfig(path: Path, context: str, creds: Credentials) -> None:
    """Add or replace this cluster's entries in an existing kubeconfig (e.g. ~/.kube/config) and select it."""
    ours = kubeconfig_dict(context, creds)
    config: dict[str, Any] = {}
    if path.exists():
        config = yaml.safe_load(path.read_text()) or {}
    for section in ("clusters", "users", "contexts"):
        kept = [e for e in config.get(section) or [] if e.get("name") != context]
        config[section] = kept + ours[section]
    config.setdefault("apiVersion", "v1")
    config.setdefault("kind", "Config")
    config["current-context"] = context
    _write_private(path, yaml.safe_dump(config, sort_keys=False))


def load_credentials(path: Path, context: str | None = None) -> Credentials:
    config = yaml.safe_load(path.read_text()) or {}
    context = context or config.get("current-context")
    ctx = next(c["context"] for c in config["contexts"] if c["name"] == context)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == ctx["user"])
    ca = cluster.get("certificate-authority-data")
    return Credentials(cluster["server"], user.get("token", ""), base64.b64decode(ca) if ca else None)
