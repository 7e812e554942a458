"""Service-account tokens: signing and verification (jws), upstream's claims and validator (satokens), the request
authenticator (auth), the TokenRequest subresource, OIDC discovery and the ServiceAccount admission and controller.

The first part needs no server (a dict of objects stands in for the watch caches); the rest runs against the
session's real apiserver (fixtures `cluster`, `api`, `namespace`).
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import RunningCluster, eventually, running_cluster
from tinykube.apiserver.auth import jws, satokens
from tinykube.apiserver.auth.authentication import TokenAuthenticator, bearer_token
from tinykube.apiserver.auth.identity import ADMIN
from tinykube.apiserver.auth.satokens import ISSUER, LEEWAY, Bound, ServiceAccountTokens, TokenInvalid, claims
from tinykube.apiserver.bootstrap.pki import ensure_service_account_key, load_service_account_key

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
NOW = 1_700_000_000


def obj(name: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()), **extra}}


class Objects:
    """The watch caches as the authenticator reads them: objects by (plural, namespace, name)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(self, plural: str, item: dict[str, Any]) -> dict[str, Any]:
        meta = item["metadata"]
        self.items[(plural, meta.get("namespace", ""), meta["name"])] = item
        return item

    def __call__(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.items.get((plural, namespace, name))


@pytest.fixture
def world() -> tuple[Objects, ServiceAccountTokens, dict[str, float]]:
    objects = Objects()
    clock = {"now": float(NOW)}
    return objects, ServiceAccountTokens(KEY, objects, clock=lambda: clock["now"]), clock


def decode_segment(segment: str) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


# ---- jws -------------------------------------------------------------------------------------------------------------


def test_a_signed_token_verifies_with_its_key_and_names_the_key_as_upstream() -> None:
    token = jws.sign({"b": 1, "a": {"d": 2, "c": 3}}, KEY)
    header, payload, _ = token.split(".")
    assert decode_segment(header) == {"alg": "RS256", "kid": jws.key_id(KEY.public_key())}
    assert base64.urlsafe_b64decode(payload + "==").decode() == '{"a":{"c":3,"d":2},"b":1}'  # sorted, compact
    assert jws.verify(token, KEY.public_key()) == {"a": {"c": 3, "d": 2}, "b": 1}
    assert len(jws.key_id(KEY.public_key())) == 43 and "=" not in jws.key_id(KEY.public_key())


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        pytest.param(lambda t: t.rsplit(".", 1)[0] + "." + jws.b64url(b"x" * 256), "cryptographic", id="signature"),
        pytest.param(
            lambda t: ".".join([t.split(".")[0], jws.b64url(b'{"sub":"admin"}'), t.split(".")[2]]),
            "cryptographic",
            id="payload-swapped",
        ),
        pytest.param(
            lambda t: ".".join([jws.b64url(b'{"alg":"none"}'), t.split(".")[1], ""]), "algorithm", id="alg-none"
        ),
        pytest.param(
            lambda t: ".".join([jws.b64url(b'{"alg":"HS256"}'), *t.split(".")[1:]]), "algorithm", id="alg-hs256"
        ),
        pytest.param(lambda t: t.split(".", 1)[1], "compact", id="two-parts"),
        pytest.param(lambda t: jws.sign({"a": 1}, OTHER_KEY), "cryptographic", id="other-key"),
    ],
)
def test_a_token_not_signed_rs256_by_the_key_is_refused(mangle: Any, message: str) -> None:
    with pytest.raises(jws.JwsError, match=message):
        jws.verify(mangle(jws.sign({"a": 1}, KEY)), KEY.public_key())


def test_the_jwk_carries_the_public_numbers() -> None:
    jwk = jws.public_jwk(KEY.public_key())
    assert list(jwk) == ["use", "kty", "kid", "alg", "n", "e"]
    assert (jwk["use"], jwk["kty"], jwk["alg"], jwk["e"]) == ("sig", "RSA", "RS256", "AQAB")
    n = int.from_bytes(base64.urlsafe_b64decode(jwk["n"] + "=" * (-len(jwk["n"]) % 4)), "big")
    assert n == KEY.public_key().public_numbers().n


# ---- claims ----------------------------------------------------------------------------------------------------------


def test_claims_of_a_pod_bound_token_name_the_account_the_pod_and_its_node() -> None:
    sa, pod, node = obj("bot"), obj("web-0"), obj("node-a", "")
    body = claims(sa, Bound(pod=pod, node=node), issuer=ISSUER, audiences=["api"], expiration=3600, now=NOW)
    assert body["kubernetes.io"] == {
        "namespace": "ns",
        "serviceaccount": {"name": "bot", "uid": sa["metadata"]["uid"]},
        "pod": {"name": "web-0", "uid": pod["metadata"]["uid"]},
        "node": {"name": "node-a", "uid": node["metadata"]["uid"]},
    }
    assert {k: v for k, v in body.items() if k not in ("jti", "kubernetes.io")} == {
        "aud": ["api"],
        "exp": NOW + 3600,
        "iat": NOW,
        "iss": ISSUER,
        "nbf": NOW,
        "sub": "system:serviceaccount:ns:bot",
    }
    assert str(uuid.UUID(body["jti"])) == body["jti"]


@pytest.mark.parametrize(
    ("bound", "claim"),
    [
        pytest.param(Bound(), None, id="unbound"),
        pytest.param(Bound(secret=obj("s")), "secret", id="secret"),
        pytest.param(Bound(node=obj("n", "")), "node", id="node"),
    ],
)
def test_claims_name_one_bound_object(bound: Bound, claim: str | None) -> None:
    private = claims(obj("bot"), bound, issuer=ISSUER, audiences=[ISSUER], expiration=600, now=NOW)["kubernetes.io"]
    assert set(private) == {"namespace", "serviceaccount"} | ({claim} if claim else set())


# ---- the authenticator -----------------------------------------------------------------------------------------------


def test_a_valid_token_is_the_service_account_user(world: Any) -> None:
    objects, tokens, _ = world
    sa = objects.add("serviceaccounts", obj("bot"))
    token, _ = tokens.issue(sa, Bound(), audiences=[ISSUER], expiration=3600)
    found = tokens.authenticate(token)
    assert found is not None
    jti = jws.verify(token, KEY.public_key())["jti"]
    assert found.user.name == "system:serviceaccount:ns:bot"
    assert found.user.uid == sa["metadata"]["uid"]
    assert found.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert dict(found.user.extra) == {"authentication.kubernetes.io/credential-id": (f"JTI={jti}",)}
    assert found.audiences == (ISSUER,)


def test_a_pod_bound_token_carries_the_pod_and_node_in_extra(world: Any) -> None:
    objects, tokens, _ = world
    sa, pod = objects.add("serviceaccounts", obj("bot")), objects.add("pods", obj("web"))
    node = obj("node-a", "")
    token, _ = tokens.issue(sa, Bound(pod=pod, node=node), audiences=[ISSUER], expiration=3600)
    found = tokens.authenticate(token)
    assert found is not None
    extra = dict(found.user.extra)
    assert extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert extra["authentication.kubernetes.io/pod-uid"] == (pod["metadata"]["uid"],)
    assert extra["authentication.kubernetes.io/node-name"] == ("node-a",)
    assert extra["authentication.kubernetes.io/node-uid"] == (node["metadata"]["uid"],)


@pytest.mark.parametrize(
    ("advance", "message"),
    [
        pytest.param(3600 + LEEWAY + 1, "service account token has expired", id="expired"),
        pytest.param(-(LEEWAY + 1), "service account token is not valid yet", id="not-yet"),
    ],
)
def test_time_bounds_hold_with_a_minute_of_leeway(world: Any, advance: int, message: str) -> None:
    objects, tokens, clock = world
    sa = objects.add("serviceaccounts", obj("bot"))
    token, _ = tokens.issue(sa, Bound(), audiences=[ISSUER], expiration=3600)
    clock["now"] = NOW + (advance - 1 if advance > 0 else advance + 1)  # a second inside the leeway
    assert tokens.authenticate(token) is not None
    clock["now"] = NOW + advance
    with pytest.raises(TokenInvalid, match=message):
        tokens.authenticate(token)


def _gone(objects: Objects, key: tuple[str, str, str]) -> None:
    del objects.items[key]


def _recreated(objects: Objects, key: tuple[str, str, str]) -> None:
    objects.items[key] = obj(key[2], key[1])


def _deleting(objects: Objects, key: tuple[str, str, str]) -> None:
    objects.items[key]["metadata"]["deletionTimestamp"] = datetime.fromtimestamp(NOW - LEEWAY - 5).isoformat() + "Z"


@pytest.mark.parametrize(
    ("bind", "key", "change", "message"),
    [
        pytest.param("", ("serviceaccounts", "ns", "bot"), _gone, 'serviceaccounts "bot" not found', id="sa-gone"),
        pytest.param(
            "", ("serviceaccounts", "ns", "bot"), _recreated, r"service account UID \(.*\) does not match claim",
            id="sa-recreated",
        ),
        pytest.param(
            "", ("serviceaccounts", "ns", "bot"), _deleting, "service account ns/bot has been deleted", id="sa-deleting"
        ),
        pytest.param("pod", ("pods", "ns", "web"), _gone, "service account token has been invalidated", id="pod-gone"),
        pytest.param(
            "pod", ("pods", "ns", "web"), _recreated, r"pod UID \(.*\) does not match service account pod ref claim",
            id="pod-recreated",
        ),
        pytest.param(
            "secret", ("secrets", "ns", "s"), _gone, "service account token has been invalidated", id="secret-gone"
        ),
        pytest.param("node", ("nodes", "", "n"), _gone, "service account token has been invalidated", id="node-gone"),
    ],
)  # fmt: skip
def test_a_token_dies_with_its_objects(world: Any, bind: str, key: Any, change: Any, message: str) -> None:
    objects, tokens, _ = world
    sa = objects.add("serviceaccounts", obj("bot"))
    bound = {
        "": Bound(),
        "pod": Bound(pod=objects.add("pods", obj("web"))),
        "secret": Bound(secret=objects.add("secrets", obj("s"))),
        "node": Bound(node=objects.add("nodes", obj("n", ""))),
    }[bind]
    token, _ = tokens.issue(sa, bound, audiences=[ISSUER], expiration=3600)
    assert tokens.authenticate(token) is not None
    change(objects, key)
    with pytest.raises(TokenInvalid, match=message):
        tokens.authenticate(token)


def test_audiences_must_meet(world: Any) -> None:
    objects, tokens, _ = world
    sa = objects.add("serviceaccounts", obj("bot"))
    token, _ = tokens.issue(sa, Bound(), audiences=["vault"], expiration=3600)
    expected = f'token audiences ["vault"] is invalid for the target audiences ["{ISSUER}"]'
    with pytest.raises(TokenInvalid, match=expected.replace("[", r"\[").replace("]", r"\]")):
        tokens.authenticate(token)
    found = tokens.authenticate(token, ("vault", "other"))
    assert found is not None and found.audiences == ("vault",)


def test_tokens_of_other_issuers_are_not_ours(world: Any) -> None:
    _, tokens, _ = world
    assert tokens.authenticate("not-a-jwt") is None
    assert tokens.authenticate(jws.sign({"iss": "https://elsewhere", "sub": "x"}, KEY)) is None


def test_the_request_authenticator_words_errors_as_upstream(world: Any) -> None:
    objects, tokens, clock = world
    authenticator = TokenAuthenticator("cluster-token", tokens)
    admin = authenticator.authenticate("cluster-token")
    assert (admin.user, admin.audiences) == (ADMIN, (ISSUER,))
    assert authenticator.authenticate("cluster-token", ("vault",)).error == "invalid bearer token"
    assert authenticator.authenticate("garbage").error == "invalid bearer token"
    sa = objects.add("serviceaccounts", obj("bot"))
    token, _ = tokens.issue(sa, Bound(), audiences=[ISSUER], expiration=600)
    clock["now"] += 3600
    result = authenticator.authenticate(token)
    assert (result.user, result.error) == (None, "[invalid bearer token, service account token has expired]")


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param(b"Bearer abc", "abc", id="bearer"),
        pytest.param(b"bearer abc", "abc", id="any-case"),
        pytest.param(b"Basic abc", None, id="basic"),
        pytest.param(b"Bearer ", None, id="empty"),
        pytest.param(b"Bearer a b", None, id="three-parts"),
    ],
)
def test_bearer_header(header: bytes, token: str | None) -> None:
    assert bearer_token(header) == token


def test_the_signing_key_is_made_once_and_kept(tmp_path: Path) -> None:
    path = ensure_service_account_key(tmp_path)
    first = path.read_bytes()
    assert ensure_service_account_key(tmp_path).read_bytes() == first
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "sa.pub").read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert load_service_account_key(path).key_size == 2048


# ---- against the apiserver -------------------------------------------------------------------------------------------


def token_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"


def create(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def request_token(api: httpx.Client, namespace: str, name: str, **spec: Any) -> str:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    return str(create(api, token_path(namespace, name), body)["status"]["token"])


def as_token(cluster: RunningCluster, token: str) -> httpx.Client:
    return cluster.http(headers={"Authorization": f"Bearer {token}"})


def grant_view(api: httpx.Client, namespace: str, account: str) -> None:
    """RBAC is enforced: the account may read its namespace (the `view` ClusterRole, bound there)."""
    binding = {
        "metadata": {"name": f"{account}-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    create(api, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", binding)


@pytest.fixture
def account(api: httpx.Client, namespace: str) -> str:
    create(api, f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "bot"}})
    return "bot"


def test_a_token_request_is_answered_as_upstream(api: httpx.Client, namespace: str, account: str) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = create(api, token_path(namespace, account), body)
    meta, spec, status = answer["metadata"], answer["spec"], answer["status"]
    assert (answer["kind"], answer["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert (meta["name"], meta["namespace"]) == (account, namespace)
    assert spec == {"audiences": [ISSUER], "expirationSeconds": 3600, "boundObjectRef": None}
    created = datetime.fromisoformat(meta["creationTimestamp"])
    assert (datetime.fromisoformat(status["expirationTimestamp"]) - created).total_seconds() == 3600
    payload = jws.unverified_claims(status["token"])
    assert payload["exp"] - payload["iat"] == 3600 and payload["iat"] == int(created.timestamp())
    assert payload["sub"] == f"system:serviceaccount:{namespace}:{account}"


def test_a_token_authenticates_until_its_account_is_gone(
    cluster: RunningCluster, api: httpx.Client, namespace: str, account: str
) -> None:
    token = request_token(api, namespace, account)
    grant_view(api, namespace, account)
    with as_token(cluster, token) as client:
        assert client.get(f"/api/v1/namespaces/{namespace}/pods").status_code == 200
        api.delete(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}")
        eventually(lambda: client.get("/api").status_code == 401, what="the token refused")
        create(api, f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": account}})
        assert client.get("/api").status_code == 401  # the same name again is another account (uid)


@pytest.mark.parametrize(
    ("spec", "code", "message"),
    [
        pytest.param(
            {"expirationSeconds": 599}, 422,
            'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: '
            "may not specify a duration less than 10 minutes",
            id="too-short",
        ),
        pytest.param(
            {"expirationSeconds": (1 << 32) + 1}, 422,
            "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
            id="too-long",
        ),
        pytest.param(
            {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}, 400,
            "cannot bind token to object of type /v1, Kind=ConfigMap", id="configmap",
        ),
        pytest.param(
            {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "missing"}}, 404,
            'pods "missing" not found', id="missing-pod",
        ),
    ],
)  # fmt: skip
def test_token_requests_are_checked(
    api: httpx.Client, namespace: str, account: str, spec: dict[str, Any], code: int, message: str
) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    response = api.post(token_path(namespace, account), json=body)
    assert response.status_code == code, response.text
    assert message in response.json()["message"]


def test_a_token_request_names_its_account(api: httpx.Client, namespace: str, account: str) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"name": "other"}}
    response = api.post(token_path(namespace, account), json=body)
    assert response.status_code == 422
    assert response.json()["message"] == (
        'TokenRequest.authentication.k8s.io "bot" is invalid: metadata.name: Invalid value: "other": '
        "must match the service account name if specified"
    )
    missing = api.post(token_path(namespace, "nobody"), json={"kind": "TokenRequest"})
    assert (missing.status_code, missing.json()["message"]) == (404, 'serviceaccounts "nobody" not found')
    assert api.get(token_path(namespace, account)).status_code == 405


def pod(api: httpx.Client, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}
    return create(api, f"/api/v1/namespaces/{namespace}/pods", body)


def test_a_pod_bound_token_dies_with_the_pod(
    cluster: RunningCluster, api: httpx.Client, namespace: str, account: str
) -> None:
    web = pod(api, namespace, "web", serviceAccountName=account)
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    mismatch = api.post(
        token_path(namespace, account), json={"spec": {"boundObjectRef": {**ref, "uid": "not-the-uid"}}}
    )
    assert mismatch.status_code == 409
    assert mismatch.json()["message"] == (
        'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (not-the-uid) does not '
        "match the UID in record. The object might have been deleted and then recreated"
    )
    other = api.post(token_path(namespace, "default"), json={"spec": {"boundObjectRef": ref}})
    assert (other.status_code, other.json()["message"]) == (
        400,
        'cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.',
    )
    token = request_token(api, namespace, account, boundObjectRef={**ref, "uid": web["metadata"]["uid"]})
    assert jws.unverified_claims(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": web["metadata"]["uid"]}
    with as_token(cluster, token) as client:
        assert client.get("/api").status_code == 200
        api.delete(f"/api/v1/namespaces/{namespace}/pods/web", params={"gracePeriodSeconds": "0"})
        eventually(lambda: client.get("/api").status_code == 401, what="the pod-bound token refused")


def test_a_secret_bound_token_dies_with_the_secret(
    cluster: RunningCluster, api: httpx.Client, namespace: str, account: str
) -> None:
    create(api, f"/api/v1/namespaces/{namespace}/secrets", {"metadata": {"name": "s"}})
    token = request_token(api, namespace, account, boundObjectRef={"kind": "Secret", "apiVersion": "v1", "name": "s"})
    with as_token(cluster, token) as client:
        assert client.get("/api").status_code == 200
        api.delete(f"/api/v1/namespaces/{namespace}/secrets/s")
        eventually(lambda: client.get("/api").status_code == 401, what="the secret-bound token refused")


def sign_with_cluster_key(cluster: RunningCluster, body: dict[str, Any]) -> str:
    return jws.sign(body, load_service_account_key(cluster.data_dir / "pki" / "sa.key"))


def test_an_expired_token_is_refused(cluster: RunningCluster, api: httpx.Client, namespace: str, account: str) -> None:
    """Tokens live ten minutes at least: an expired one is signed here with the cluster's key."""
    payload = jws.unverified_claims(request_token(api, namespace, account))
    with as_token(cluster, sign_with_cluster_key(cluster, payload)) as client:
        assert client.get("/api").status_code == 200  # the test's own signature is as good as the server's
    past = int(time.time()) - 3 * 3600
    expired = {**payload, "iat": past, "nbf": past, "exp": past + 3600}
    token = sign_with_cluster_key(cluster, expired)
    with as_token(cluster, token) as client:
        response = client.get("/api")
        assert (response.status_code, response.json()["reason"]) == (401, "Unauthorized")
    review = create(api, "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {"token": token}})
    assert review["status"] == {"user": {}, "error": "[invalid bearer token, service account token has expired]"}


def test_a_token_of_another_key_is_refused(
    cluster: RunningCluster, api: httpx.Client, namespace: str, account: str
) -> None:
    payload = jws.unverified_claims(request_token(api, namespace, account))
    with as_token(cluster, jws.sign(payload, OTHER_KEY)) as client:
        assert client.get("/api").status_code == 401


def test_issuer_discovery(cluster: RunningCluster, api: httpx.Client, namespace: str, account: str) -> None:
    config = api.get("/.well-known/openid-configuration")
    assert config.headers["content-type"] == "application/json"
    assert config.headers["cache-control"] == "public, max-age=3600"
    assert config.json() == {
        "issuer": ISSUER,
        "jwks_uri": f"{cluster.server}/openid/v1/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    token = request_token(api, namespace, account)
    with as_token(cluster, token) as client:  # what system:service-account-issuer-discovery grants
        jwks = client.get("/openid/v1/jwks")
    assert jwks.headers["content-type"] == "application/jwk-set+json"
    (key,) = jwks.json()["keys"]
    assert key["kid"] == json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "==="))["kid"]
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    with httpx.Client(base_url=cluster.server, verify=verify) as anonymous:  # forbidden, as upstream's RBAC has it
        assert anonymous.get("/openid/v1/jwks").status_code == 403


# ---- admission and the serviceaccount controller ---------------------------------------------------------------------


def test_pods_run_as_default_unless_told(api: httpx.Client, namespace: str, account: str) -> None:
    plain = pod(api, namespace, "plain")
    assert (plain["spec"]["serviceAccountName"], plain["spec"]["serviceAccount"]) == ("default", "default")
    legacy = pod(api, namespace, "legacy", serviceAccount=account)  # the deprecated field alone
    assert (legacy["spec"]["serviceAccountName"], legacy["spec"]["serviceAccount"]) == (account, account)
    body = {
        "metadata": {"name": "unknown"},
        "spec": {"serviceAccountName": "not-yet", "containers": [{"name": "c", "image": "x"}]},
    }
    refused = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert refused.status_code == 403 and 'serviceaccount "not-yet" not found' in refused.json()["message"]


def test_a_pod_takes_its_accounts_image_pull_secrets(api: httpx.Client, namespace: str) -> None:
    body = {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "registry"}]}
    create(api, f"/api/v1/namespaces/{namespace}/serviceaccounts", body)
    assert pod(api, namespace, "p", serviceAccountName="puller")["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    own = pod(api, namespace, "q", serviceAccountName="puller", imagePullSecrets=[{"name": "mine"}])
    assert own["spec"]["imagePullSecrets"] == [{"name": "mine"}]


def test_every_namespace_has_a_default_account(api: httpx.Client, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
    first = eventually(lambda: api.get(path).json() if api.get(path).status_code == 200 else None, what="default SA")
    api.delete(path)
    again = eventually(
        lambda: (r := api.get(path)).status_code == 200 and r.json()["metadata"]["uid"] != first["metadata"]["uid"],
        what="default SA made again",
    )
    assert again
    for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert api.get(f"/api/v1/namespaces/{system}/serviceaccounts/default").status_code == 200


def test_tokens_survive_a_restart(tmp_path: Path) -> None:
    """The signing key lives in the data dir's pki/ (`sa.key`, `sa.pub`, as kubeadm names them)."""
    data_dir = tmp_path / "restart"
    default_sa = "/api/v1/namespaces/default/serviceaccounts/default"
    with running_cluster(data_dir) as first, first.http() as api:
        eventually(lambda: api.get(default_sa).status_code == 200, what="the default ServiceAccount")
        token = request_token(api, "default", "default")
    key = (data_dir / "pki" / "sa.key").read_bytes()
    with running_cluster(data_dir) as again, as_token(again, token) as client:
        assert client.get("/api").status_code == 200  # authenticated (a token refused would be 401)
    assert (data_dir / "pki" / "sa.key").read_bytes() == key


def test_node_bound_tokens_and_a_pods_node(
    cluster: RunningCluster, api: httpx.Client, namespace: str, account: str
) -> None:
    node_name = f"node-{namespace}"[:63]
    node = create(api, "/api/v1/nodes", {"metadata": {"name": node_name}})
    try:
        web = pod(api, namespace, "web", serviceAccountName=account, nodeName=node_name)
        token = request_token(
            api, namespace, account, boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"}
        )
        node_ref = {"name": node_name, "uid": node["metadata"]["uid"]}
        assert jws.unverified_claims(token)["kubernetes.io"]["node"] == node_ref
        review = create(api, "/apis/authentication.k8s.io/v1/tokenreviews", {"spec": {"token": token}})
        extra = review["status"]["user"]["extra"]
        assert extra["authentication.kubernetes.io/pod-uid"] == [web["metadata"]["uid"]]
        assert extra["authentication.kubernetes.io/node-name"] == [node_name]
        bound = request_token(
            api, namespace, account, boundObjectRef={"kind": "Node", "apiVersion": "v1", "name": node_name}
        )
        with as_token(cluster, bound) as client:
            assert client.get("/api").status_code == 200
            api.delete(f"/api/v1/nodes/{node_name}")
            eventually(lambda: client.get("/api").status_code == 401, what="the node-bound token refused")
    finally:
        api.delete(f"/api/v1/nodes/{node_name}")


def test_a_signature_is_checked_once_and_the_memory_of_it_is_bounded(world: Any, monkeypatch: Any) -> None:
    """A token's RSA signature is verified on its first use only (its times and objects on every use, above);
    a token altered in any byte is another key in that memory, verified afresh, and refused."""
    objects, tokens, clock = world
    sa = objects.add("serviceaccounts", obj("bot"))
    token, _ = tokens.issue(sa, Bound(), audiences=[ISSUER], expiration=3600)
    calls: list[str] = []
    verify = jws.verify
    monkeypatch.setattr(jws, "verify", lambda t, key: calls.append(t) or verify(t, key))
    for _ in range(3):
        assert tokens.authenticate(token) is not None
    assert calls == [token]
    header, payload, signature = token.split(".")
    forged = f"{header}.{payload}.{signature[:-2]}AA"
    with pytest.raises(TokenInvalid):
        tokens.authenticate(forged)
    clock["now"] += 7200  # remembered, yet expired: the times are checked on every use
    with pytest.raises(TokenInvalid, match="service account token has expired"):
        tokens.authenticate(token)
    monkeypatch.setattr(satokens, "VERIFIED_TOKENS", 2)
    clock["now"] -= 7200
    for n in range(5):
        tokens.authenticate(tokens.issue(sa, Bound(), audiences=[ISSUER], expiration=3600 + n)[0])
    assert len(tokens._verified) <= 2
