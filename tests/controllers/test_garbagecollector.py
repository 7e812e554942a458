"""The garbage collector's foreground deletion as upstream's attemptToDeleteItem and processDeletingDependentsItem
decide it (the conformance specs "should not be blocked by dependency circle" and "should not delete dependents
that have both valid owner and owner that's waiting for dependents to be deleted")."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import eventually
from tests.controllers.conftest import controllers_cluster

Object = dict[str, Any]
CORE = "/api/v1/namespaces"
SMP = {"Content-Type": "application/strategic-merge-patch+json"}

cluster = controllers_cluster("--nodes", "1")


def pod(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip


def owned_by(kind: str, owner: Object, **flags: bool) -> Object:
    ref = {"apiVersion": "v1", "kind": kind, "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    return {"metadata": {"ownerReferences": [ref | flags]}}


def delete_in_the_foreground(client: httpx.Client, path: str, uid: str) -> None:
    body = {"propagationPolicy": "Foreground", "preconditions": {"uid": uid}}
    assert client.request("DELETE", path, json=body).status_code == 200


def pods(client: httpx.Client, ns: str) -> list[Object]:
    return list(client.get(f"{CORE}/{ns}/pods").json()["items"])


def test_a_cycle_of_owners_deleted_in_the_foreground_goes_whole(client: httpx.Client, ns: str) -> None:
    made = [client.post(f"{CORE}/{ns}/pods", json=pod(f"pod{i}")).json() for i in (1, 2, 3)]
    for dependent, owner in ((0, 2), (1, 0), (2, 1)):  # pod1 <- pod3, pod2 <- pod1, pod3 <- pod2
        patch = owned_by("Pod", made[owner], controller=True, blockOwnerDeletion=True)
        name = made[dependent]["metadata"]["name"]
        assert client.patch(f"{CORE}/{ns}/pods/{name}", json=patch, headers=SMP).status_code == 200
    delete_in_the_foreground(client, f"{CORE}/{ns}/pods/pod1", made[0]["metadata"]["uid"])
    eventually(lambda: not pods(client, ns), what="all three pods gone")


def test_a_dependent_with_a_present_owner_stays_when_another_owner_deletes_in_the_foreground(
    client: httpx.Client, ns: str
) -> None:
    def rc(name: str, replicas: int) -> Object:
        template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        spec = {"replicas": replicas, "selector": {"app": name}, "template": template}
        body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name}, "spec": spec}
        response = client.post(f"{CORE}/{ns}/replicationcontrollers", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    doomed, staying = rc("to-be-deleted", 4), rc("to-stay", 0)
    eventually(lambda: len(pods(client, ns)) == 4, what="four pods")
    shared = sorted(p["metadata"]["name"] for p in pods(client, ns))[:2]
    for name in shared:
        patch = owned_by("ReplicationController", staying)  # merged by uid: both owners now
        assert client.patch(f"{CORE}/{ns}/pods/{name}", json=patch, headers=SMP).status_code == 200
    delete_in_the_foreground(client, f"{CORE}/{ns}/replicationcontrollers/to-be-deleted", doomed["metadata"]["uid"])
    eventually(
        lambda: client.get(f"{CORE}/{ns}/replicationcontrollers/to-be-deleted").status_code == 404,
        what="the owner gone",
    )
    left = pods(client, ns)
    assert sorted(p["metadata"]["name"] for p in left) == shared
    for kept in left:
        assert not kept["metadata"].get("deletionTimestamp")
        assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["to-stay"]
