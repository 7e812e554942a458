"""RS256 JSON Web Signatures in compact form (RFC 7515) and the public key as a JWK (RFC 7517), with `cryptography`.

Service-account tokens need exactly one algorithm, one key and the compact serialisation: about forty lines over
`cryptography` (already a dependency), where a JOSE library would bring a second dependency and its own
algorithm-negotiation surface for nothing more. Verification accepts only `alg: RS256` and the one key, so a token
signed with `none` or HS256 (the classic JWT confusion attacks) is refused before any signature check.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

ALGORITHM = "RS256"


class JwsError(ValueError):
    """A token that is not a well-formed RS256 JWS signed by the expected key."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as err:
        raise JwsError("invalid base64url segment") from err


def key_id(public_key: rsa.RSAPublicKey) -> str:
    """Upstream's key id: the unpadded base64url SHA-256 of the key's DER SubjectPublicKeyInfo, so the id names
    the key without revealing it and every apiserver sharing the key derives the same id."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


def sign(claims: dict[str, Any], key: rsa.RSAPrivateKey) -> str:
    """Compact JWS of `claims`. Keys are sorted at every level, as Go's encoding of the claim maps gives them."""
    header = {"alg": ALGORITHM, "kid": key_id(key.public_key())}
    signing_input = f"{_segment(header)}.{_segment(claims)}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def _segment(value: dict[str, Any]) -> str:
    return b64url(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def unverified_claims(token: str) -> dict[str, Any]:
    """The payload without checking the signature: only to decide whose token it is (its issuer)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JwsError("not a compact JWS")
    return _json_object(b64url_decode(parts[1]))


def verify(token: str, key: rsa.RSAPublicKey) -> dict[str, Any]:
    """The claims of a token signed with RS256 by `key`; JwsError otherwise."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JwsError("not a compact JWS")
    header = _json_object(b64url_decode(parts[0]))
    if header.get("alg") != ALGORITHM:
        raise JwsError(f"unexpected signature algorithm {header.get('alg')!r}")
    try:
        key.verify(b64url_decode(parts[2]), f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature as err:
        raise JwsError("error in cryptographic primitive") from err
    return _json_object(b64url_decode(parts[1]))


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise JwsError("invalid JSON in token") from err
    if not isinstance(value, dict):
        raise JwsError("token segment is not a JSON object")
    return value


def public_jwk(public_key: rsa.RSAPublicKey) -> dict[str, str]:
    """The key as `/openid/v1/jwks` lists it (go-jose's field order: use, kty, kid, alg, n, e)."""
    numbers = public_key.public_numbers()
    return {
        "use": "sig",
        "kty": "RSA",
        "kid": key_id(public_key),
        "alg": ALGORITHM,
        "n": b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
        "e": b64url(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")),
    }
