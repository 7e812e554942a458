"""Service-account tokens: the claims upstream's TokenRequest puts in them, and the authenticator that accepts them.

A token is an RS256 JWT whose `kubernetes.io` claim names the ServiceAccount (and the Pod, Secret or Node it is
bound to) by name and uid. Authentication re-reads those objects from the apiserver's watch caches on every request
(a dict lookup, no etcd round trip), so a token stops working as soon as its ServiceAccount or bound object is
deleted, or deleted and re-created under the same name, exactly as upstream's validator decides it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric import rsa

from tinykube.api.meta import parse_time
from tinykube.apiserver.auth import jws
from tinykube.apiserver.auth.identity import UserInfo

ISSUER = "https://kubernetes.default.svc.cluster.local"  # kubeadm's --service-account-issuer
LEEWAY = 60  # go-jose's DefaultLeeway: clocks may disagree by a minute on exp, nbf and iat
DEFAULT_EXPIRATION = 3600  # TokenRequestSpec.expirationSeconds when unset
MIN_EXPIRATION = 600

# The user's extra keys (k8s.io/apiserver/pkg/authentication/serviceaccount and user).
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

Object = dict[str, Any]


class TokenInvalid(Exception):
    """A token this issuer signed (or claims to have signed) that does not authenticate; the message is upstream's."""


class Lookup(Protocol):
    """The current object of a kind, as the watch cache has it (`plural`, namespace "" for cluster-scoped)."""

    def __call__(self, plural: str, namespace: str, name: str) -> Object | None: ...


def username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def groups(namespace: str) -> tuple[str, ...]:
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")


def _ref(obj: Object) -> dict[str, str]:
    meta = obj["metadata"]
    return {"name": meta["name"], "uid": meta.get("uid", "")}


@dataclass(frozen=True, slots=True)
class Bound:
    """What a token is bound to besides its ServiceAccount (at most one of pod, secret, node; a pod's node rides
    along as information)."""

    pod: Object | None = None
    secret: Object | None = None
    node: Object | None = None


def claims(
    sa: Object, bound: Bound, *, issuer: str, audiences: Sequence[str], expiration: int, now: int
) -> dict[str, Any]:
    """Upstream's `serviceaccount.Claims` plus the issuer: public claims and the `kubernetes.io` private claim."""
    meta = sa["metadata"]
    private: dict[str, Any] = {"namespace": meta["namespace"], "serviceaccount": _ref(sa)}
    if bound.pod is not None:
        private["pod"] = _ref(bound.pod)
        if bound.node is not None:  # the pod's node (ServiceAccountTokenPodNodeInfo, on by default since 1.30)
            private["node"] = _ref(bound.node)
    elif bound.secret is not None:
        private["secret"] = _ref(bound.secret)
    elif bound.node is not None:
        private["node"] = _ref(bound.node)
    return {
        "aud": list(audiences),
        "exp": now + expiration,
        "iat": now,
        "iss": issuer,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": private,
        "nbf": now,
        "sub": username(meta["namespace"], meta["name"]),
    }


def _go_quoted(values: Sequence[str]) -> str:
    """A []string as Go's %q prints it."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


@dataclass(frozen=True, slots=True)
class Authenticated:
    user: UserInfo
    audiences: tuple[str, ...]


VERIFIED_TOKENS = 4096  # tokens whose signature is remembered as checked


class ServiceAccountTokens:
    """Issues tokens with the signing key and authenticates them (upstream's JWT token generator and
    authenticator, with `--service-account-issuer` and `--api-audiences` defaulting to the same URL)."""

    def __init__(
        self,
        key: rsa.RSAPrivateKey,
        lookup: Lookup,
        *,
        issuer: str = ISSUER,
        audiences: Sequence[str] = (ISSUER,),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.key = key
        self.lookup = lookup
        self.issuer = issuer
        self.audiences = tuple(audiences)
        self.clock = clock
        self._verified: dict[str, dict[str, Any]] = {}  # token -> its claims, once its signature was checked

    def issue(self, sa: Object, bound: Bound, *, audiences: Sequence[str], expiration: int) -> tuple[str, int]:
        """A signed token and the time it was issued at (the expiration counts from it)."""
        now = int(self.clock())
        body = claims(sa, bound, issuer=self.issuer, audiences=audiences, expiration=expiration, now=now)
        return jws.sign(body, self.key), now

    # ---- authentication ---------------------------------------------------------------------------------------

    def authenticate(self, token: str, audiences: Sequence[str] = ()) -> Authenticated | None:
        """The user of a token this issuer signed; None for a token that is not ours (another issuer, not a JWT),
        TokenInvalid for one that is ours but fails: signature, audience, time, or objects gone."""
        try:
            unverified = jws.unverified_claims(token)
        except jws.JwsError:
            return None
        if unverified.get("iss") != self.issuer:
            return None
        public = self._verify(token)
        found = self._audiences(public, tuple(audiences) or self.audiences)
        self._check_times(public)
        user = self._validate(public)
        return Authenticated(user, found)

    def _verify(self, token: str) -> dict[str, Any]:
        """The claims of a token signed with our key. A signature checked once is remembered (an RSA verification
        was a quarter of the apiserver's time per ServiceAccount request); times and the objects the token names
        are still checked on every use, so a token stops working the moment its pod or secret goes."""
        public = self._verified.get(token)
        if public is not None:
            return public
        try:
            public = jws.verify(token, self.key.public_key())
        except jws.JwsError as err:
            raise TokenInvalid(f"go-jose/go-jose: {err}") from None
        if len(self._verified) >= VERIFIED_TOKENS:
            del self._verified[next(iter(self._verified))]  # the oldest remembered goes
        self._verified[token] = public
        return public

    def _audiences(self, public: dict[str, Any], wanted: tuple[str, ...]) -> tuple[str, ...]:
        aud = public.get("aud")
        token_audiences = tuple([aud] if isinstance(aud, str) else aud if isinstance(aud, list) else ())
        if not token_audiences:  # legacy tokens carry none: only the apiserver's own audiences are implied
            token_audiences = self.audiences
        found = tuple(a for a in wanted if a in token_audiences)
        if not found:
            raise TokenInvalid(
                f"token audiences {_go_quoted(token_audiences)} is invalid for the target audiences "
                f"{_go_quoted(wanted)}"
            )
        return found

    def _check_times(self, public: dict[str, Any]) -> None:
        now = self.clock()
        expiry, not_before, issued = (_number(public.get(claim)) for claim in ("exp", "nbf", "iat"))
        if expiry is not None and now - LEEWAY > expiry:
            raise TokenInvalid("service account token has expired")
        if not_before is not None and now + LEEWAY < not_before:
            raise TokenInvalid("service account token is not valid yet")
        if issued is not None and now + LEEWAY < issued:
            raise TokenInvalid("service account token is issued in the future")

    def _validate(self, public: dict[str, Any]) -> UserInfo:
        """Upstream's validator: the named objects still exist with the uids in the token."""
        private = public.get("kubernetes.io")
        if not isinstance(private, dict):
            raise TokenInvalid("service account token claims could not be validated due to unexpected validation error")
        namespace = str(private.get("namespace", ""))
        sa_ref = _claim_ref(private.get("serviceaccount"))
        sa = self.lookup("serviceaccounts", namespace, sa_ref["name"])
        if sa is None:
            raise TokenInvalid(f'serviceaccounts "{sa_ref["name"]}" not found')
        uid = sa["metadata"].get("uid")
        if uid != sa_ref["uid"]:
            raise TokenInvalid(f"service account UID ({uid}) does not match claim ({sa_ref['uid']})")
        if self._deleted(sa):
            raise TokenInvalid(f"service account {namespace}/{sa_ref['name']} has been deleted")
        extra: dict[str, tuple[str, ...]] = {}
        if "secret" in private:
            self._check_bound("secrets", namespace, _claim_ref(private["secret"]), "secret")
        if "pod" in private:
            pod_ref = _claim_ref(private["pod"])
            self._check_bound("pods", namespace, pod_ref, "pod")
            extra[POD_NAME_KEY], extra[POD_UID_KEY] = (pod_ref["name"],), (pod_ref["uid"],)
        jti = public.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
        if "node" in private:
            node_ref = _claim_ref(private["node"])
            if "pod" not in private:  # a node-bound token: the node must still be there
                self._check_bound("nodes", "", node_ref, "node")
            extra[NODE_NAME_KEY] = (node_ref["name"],)
            if node_ref["uid"]:
                extra[NODE_UID_KEY] = (node_ref["uid"],)
        return UserInfo(username(namespace, sa_ref["name"]), sa_ref["uid"], groups(namespace), extra)

    def _check_bound(self, plural: str, namespace: str, ref: dict[str, str], what: str) -> None:
        obj = self.lookup(plural, namespace, ref["name"])
        if obj is None or self._deleted(obj):
            raise TokenInvalid("service account token has been invalidated")
        uid = obj["metadata"].get("uid")
        if uid != ref["uid"]:
            raise TokenInvalid(f"{what} UID ({uid}) does not match service account {what} ref claim ({ref['uid']})")

    def _deleted(self, obj: Object) -> bool:
        """Deleted longer ago than the leeway (an object still finalizing keeps its tokens for that minute)."""
        when = parse_time(obj["metadata"].get("deletionTimestamp"))
        return when is not None and when.timestamp() < self.clock() - LEEWAY

    # ---- discovery (OIDC) -------------------------------------------------------------------------------------

    def openid_configuration(self, jwks_uri: str) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [jws.ALGORITHM],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [jws.public_jwk(self.key.public_key())]}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _claim_ref(value: Any) -> dict[str, str]:
    ref: Mapping[str, Any] = value if isinstance(value, dict) else {}
    return {"name": str(ref.get("name", "")), "uid": str(ref.get("uid", ""))}
