"""Real projects' CRDs are created as kube-apiserver creates them (the files in crds/ are the projects' own,
Apache-2.0): their CEL rules cost what upstream estimates, their patterns are the RE2 Go compiles."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import RunningCluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_HERE = Path(__file__).with_name("crds")


class _Loader(yaml.SafeLoader):
    """YAML as Go's yaml reads these files: a bare `=` is a string."""


_Loader.add_constructor("tag:yaml.org,2002:value", _Loader.construct_yaml_str)


def _crds(name: str) -> list[dict[str, Any]]:
    with gzip.open(_HERE / name, "rt", encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=_Loader) if d and d.get("kind") == "CustomResourceDefinition"]


def _create_or_replace(api: httpx.Client, crd: dict[str, Any]) -> httpx.Response:
    name = crd["metadata"]["name"]
    current = api.get(f"{CRDS}/{name}")
    if current.status_code == 404:
        return api.post(CRDS, json=crd)
    body = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current.json()["metadata"]["resourceVersion"]}}
    return api.put(f"{CRDS}/{name}", json=body)


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            [
                "monitoring.coreos.com_prometheuses.yaml.gz",
                "monitoring.coreos.com_prometheusagents.yaml.gz",
                "monitoring.coreos.com_thanosrulers.yaml.gz",
                "monitoring.coreos.com_alertmanagerconfigs.yaml.gz",
            ],
            id="prometheus-operator-v0.93-sigv4-rule",
        ),
        pytest.param(["postgresql.cnpg.io_databases.yaml.gz"], id="cloudnative-pg-v1.30-fdws-usage-name-rule"),
        pytest.param(
            ["gateway-api-v1.2.1-standard-install.yaml.gz", "gateway-api-v1.2.1-experimental-install.yaml.gz"],
            id="gateway-api-v1.2.1-standard-then-experimental",
        ),
    ],
)
def test_real_crds_are_created(cluster: RunningCluster, files: list[str]) -> None:
    api = cluster.http()
    api.timeout = httpx.Timeout(300)  # the biggest is 0.8 MB of schema: slow on a loaded machine
    names = []
    try:
        for file in files:
            for crd in _crds(file):
                response = _create_or_replace(api, crd)
                assert response.status_code in (200, 201), (crd["metadata"]["name"], response.text[:2000])
                names.append(crd["metadata"]["name"])
    finally:
        for name in set(names):
            api.delete(f"{CRDS}/{name}")
        api.close()


def test_a_too_expensive_rule_is_still_refused_with_upstream_s_message(api: httpx.Client) -> None:
    rule = "self.all(x, self.all(y, x.contains(y)))"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "expensives.celre.example.com"},
        "spec": {
            "group": "celre.example.com",
            "scope": "Namespaced",
            "names": {"plural": "expensives", "singular": "expensive", "kind": "Expensive"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "array",
                                    "items": {"type": "string"},
                                    "x-kubernetes-validations": [{"rule": rule}],
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    response = api.post(CRDS, json=crd)
    assert response.status_code == 422
    causes = response.json()["details"]["causes"]
    path = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert {
        "reason": "FieldValueForbidden",
        "field": path,
        "message": "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the "
        "rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    } in causes
