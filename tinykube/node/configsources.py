"""How a node agent reads the ConfigMaps and Secrets a container's environment names: through the API each time the
container is created (upstream's `Get` change-detection strategy), so a source that appears later is found by the
next attempt, and no node watches every Secret of the cluster."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.kubelet_env.envvars import ConfigError, Sources, referenced

Object = dict[str, Any]
Reader = Callable[[str, str, str], Awaitable[Object | None]]  # (plural, namespace, name) -> the object, None: missing
READ_TTL = 1.0  # seconds a source read through the API is used again without another read
READ_CACHE_SIZE = 4096
CONFIG_RETRY = 10.0  # seconds before a container waiting for its sources is tried again (the kubelet's backOffPeriod)


async def nothing(_plural: str, _namespace: str, _name: str) -> Object | None:
    return None


def api_reader(client: Any, ttl: float = READ_TTL) -> Reader:
    """Read sources through a `RestClient`, an object found kept for `ttl` seconds (upstream's `Cache` strategy): every
    pod of a namespace names its `kube-root-ca.crt`, and a burst of pods needs one read of it, not one each."""
    found: dict[tuple[str, str, str], tuple[Object, float]] = {}

    async def read(plural: str, namespace: str, name: str) -> Object | None:
        key, clock = (plural, namespace, name), time.monotonic()
        cached = found.get(key)
        if cached is not None and cached[1] > clock:
            return cached[0]
        try:
            obj: Object = await client.get(builtin("", "v1", plural), namespace, name)
        except errors.NotFound:
            found.pop(key, None)
            return None
        if len(found) >= READ_CACHE_SIZE:
            found.clear()  # bounded: a node reading many distinct sources simply reads them again
        found[key] = (obj, clock + ttl)
        return obj

    return read


def token_requester(client: Any) -> Callable[[Object, Object], Awaitable[Object]]:
    """Request a `serviceAccountToken` projection's token for a pod (a TokenRequest bound to it), as the kubelet
    does; returns the TokenRequest's status (`token`, `expirationTimestamp`)."""

    async def request(pod: Object, projection: Object) -> Object:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        audience = projection.get("audience")
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [audience] if audience else [],
                "expirationSeconds": int(projection.get("expirationSeconds") or 3600),
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": meta["name"], "uid": meta.get("uid")},
            },
        }
        account = spec.get("serviceAccountName") or "default"
        created: Object = await client.create(
            builtin("", "v1", "serviceaccounts"), meta.get("namespace") or "default", body, name=account,
            subresource="token",
        )  # fmt: skip
        return dict(created.get("status") or {})

    return request


def warner(on_event: Callable[[str, str, str, str], None], key: str) -> Callable[[str], None]:
    """Where a runtime sends the warnings of a pod's environment: upstream's `InvalidEnvironmentVariableNames`."""
    return lambda message: on_event(key, "Warning", "InvalidEnvironmentVariableNames", message)


async def container_sources(read: Reader, pod: Object, container: Object, warn: Callable[[str], None]) -> Sources:
    """Every ConfigMap and Secret the container names, read at once; ConfigError if the API cannot say."""
    namespace = pod["metadata"].get("namespace") or "default"
    keys = sorted(referenced(container))
    try:
        found = await asyncio.gather(*(read(kind, namespace, name) for kind, name in keys))
    except (errors.ApiError, OSError) as err:
        raise ConfigError(str(err) or type(err).__name__) from None
    return Sources(dict(zip(keys, found, strict=True)), warn=warn)
