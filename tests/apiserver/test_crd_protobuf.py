"""A CustomResourceDefinition spoken in protobuf, as the Go clients of the conformance suite speak it
(client-go with `ContentType: application/vnd.kubernetes.protobuf`: protobuf bodies, and
`Accept: application/vnd.kubernetes.protobuf, */*`), against a real cluster.

The body sent is upstream's own bytes for a rich CRD (tests/api/protobuf_vectors/crd-served.pb, written by
upstream's serializer; see tests/api/test_protobuf_crd.py). tinykube answers JSON (README: responses are always
JSON), which that Accept admits and client-go decodes by the response's Content-Type.

Custom resources have no protobuf encoding upstream: a protobuf body is a 415 naming JSON and YAML, and an Accept
that admits only protobuf is a 406.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.test_protobuf import envelope
from tests.api.test_protobuf_crd import CRD, go_json, go_protobuf
from tests.api.test_protobuf_e2e import contains
from tests.api.test_protobuf_schema import encode
from tests.conftest import eventually
from tinykube.api.errors import NotAcceptable
from tinykube.api.protobuf import MEDIA_TYPE
from tinykube.apiserver.http.negotiation import check_custom_accept

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SENT = go_json("crd-served")
NAME = SENT["metadata"]["name"]
GADGETS = f"/apis/{SENT['spec']['group']}/v1/namespaces/{{namespace}}/gadgets"
CLIENT_GO = {"Content-Type": MEDIA_TYPE, "Accept": f"{MEDIA_TYPE}, */*"}


def established(api: httpx.Client) -> dict[str, Any] | None:
    crd: dict[str, Any] = api.get(f"{CRDS}/{NAME}", headers=CLIENT_GO).json()
    conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
    return crd if conditions.get("Established") == "True" else None


@pytest.fixture
def created(api: httpx.Client) -> Iterator[dict[str, Any]]:
    """The CRD of crd-served.pb, created from those bytes; deleted afterwards."""
    response = api.post(CRDS, content=go_protobuf("crd-served"), headers=CLIENT_GO)
    try:
        assert response.status_code == 201, response.text
        assert response.headers["content-type"] == "application/json"
        yield response.json()
    finally:
        api.delete(f"{CRDS}/{NAME}")
        eventually(lambda: api.get(f"{CRDS}/{NAME}").status_code == 404, what="the CRD gone")


def test_a_crd_created_in_protobuf_is_stored_as_sent(api: httpx.Client, created: dict[str, Any]) -> None:
    assert contains(created["spec"], SENT["spec"]) == []
    assert created["metadata"]["labels"] == SENT["metadata"]["labels"]
    assert created["metadata"]["annotations"] == SENT["metadata"]["annotations"]
    crd = eventually(lambda: established(api), what="the CRD established")
    assert contains(crd["spec"], SENT["spec"]) == []
    assert crd["status"]["storedVersions"] == ["v1"]


def test_a_crd_read_listed_and_watched_with_client_go_s_accept(api: httpx.Client, created: dict[str, Any]) -> None:
    listed = api.get(CRDS, params={"fieldSelector": f"metadata.name={NAME}"}, headers=CLIENT_GO)
    assert listed.status_code == 200, listed.text
    assert [contains(item["spec"], SENT["spec"]) for item in listed.json()["items"]] == [[]]
    params = {"watch": "1", "fieldSelector": f"metadata.name={NAME}", "timeoutSeconds": "5"}
    with api.stream("GET", CRDS, params=params, headers=CLIENT_GO) as watch:
        assert watch.status_code == 200
        event = json.loads(next(watch.iter_lines()))
    assert event["type"] == "ADDED" and contains(event["object"]["spec"], SENT["spec"]) == []


def test_a_crd_updated_in_protobuf_from_what_the_server_answered(api: httpx.Client, created: dict[str, Any]) -> None:
    """The server's own object (status, managed fields, timestamps) re-encoded and PUT back in protobuf."""
    crd = eventually(lambda: established(api), what="the CRD established")
    crd["metadata"]["labels"]["updated"] = "yes"
    crd["spec"]["versions"][0]["additionalPrinterColumns"].append(
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"}
    )
    api_version, kind = crd.pop("apiVersion"), crd.pop("kind")
    body = envelope(api_version, kind, encode(CRD, crd, gogo=True))
    response = api.put(f"{CRDS}/{NAME}", content=body, headers=CLIENT_GO)
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["metadata"]["labels"]["updated"] == "yes"
    assert updated["spec"]["versions"][0]["additionalPrinterColumns"][-1]["name"] == "Ratio"
    assert contains(updated["status"], crd["status"]) == []


def test_custom_resources_refuse_protobuf_as_upstream_does(
    api: httpx.Client, created: dict[str, Any], namespace: str
) -> None:
    eventually(lambda: established(api), what="the CRD established")
    gadgets = GADGETS.format(namespace=namespace)
    eventually(lambda: api.get(gadgets).status_code == 200, what="gadgets served")
    gadget = {"apiVersion": f"{SENT['spec']['group']}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {}}
    refused = api.post(gadgets, content=b"k8s\x00" + json.dumps(gadget).encode(), headers=CLIENT_GO)
    assert refused.status_code == 415, refused.text
    assert refused.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )
    made = api.post(gadgets, json=gadget, headers={"Accept": CLIENT_GO["Accept"]})
    assert made.status_code == 201, made.text
    assert made.headers["content-type"] == "application/json"
    assert made.json()["spec"]["replicas"] == 3  # the schema's defaults, from the protobuf CRD
    only_protobuf = api.get(f"{gadgets}/g", headers={"Accept": MEDIA_TYPE})
    assert only_protobuf.status_code == 406, only_protobuf.text
    assert only_protobuf.json()["message"] == (
        "only the following media types are accepted: application/json, application/yaml"
    )


@pytest.mark.parametrize(
    "accept",
    [
        "",
        "application/json",
        "application/yaml",
        "*/*",
        "application/*",
        f"{MEDIA_TYPE}, */*",
        f"{MEDIA_TYPE},application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "Application/JSON; charset=utf-8",
    ],
)
def test_an_accept_admitting_json_or_yaml_is_served_for_custom_resources(accept: str) -> None:
    check_custom_accept(accept)


@pytest.mark.parametrize("accept", [MEDIA_TYPE, f"{MEDIA_TYPE};as=Table;v=v1;g=meta.k8s.io", "text/html, image/*"])
def test_an_accept_admitting_neither_is_not_acceptable_for_custom_resources(accept: str) -> None:
    with pytest.raises(NotAcceptable) as refused:
        check_custom_accept(accept)
    assert str(refused.value) == "only the following media types are accepted: application/json, application/yaml"
