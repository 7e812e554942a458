"""Writes that start from the watch cache's copy (upstream's cached suggestion to GuaranteedUpdate), against a real
etcd: when the cache is behind — a write made behind the apiserver's back that its watch has not delivered yet —
a patch, a patch that changes nothing of the cached copy, an update (PUT) and a binding all end on the stored
object, as if they had read it from etcd: nothing written in between is lost, and no write is skipped."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest

from tinykube.api import errors
from tinykube.api.resources import builtin
from tinykube.apiserver.app import ApiServer, ApiServerConfig
from tinykube.apiserver.registry import Registry
from tinykube.apiserver.registry import Request as RegistryRequest

Object = dict[str, Any]
CONFIGMAPS, PODS = builtin("", "v1", "configmaps"), builtin("", "v1", "pods")
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TRIES = 40  # behind-the-back writes, until the cache was seen behind at the patch (it nearly always is at once)


async def behind_the_back(registry: Registry, req: RegistryRequest, change: Callable[[Object], None]) -> bool:
    """Change the stored object in etcd directly; whether the watch cache is behind it now."""
    kv = await registry.store.get(registry.key(req))
    assert kv is not None
    stored = orjson.loads(kv.value)
    change(stored)
    written = await registry.store.update(registry.key(req), orjson.dumps(stored), expected_revision=kv.mod_revision)
    cached = registry.cache(req.resource).get(registry.cache_key(req.namespace, req.name))
    return cached is not None and cached.revision < written


def with_apiserver(etcd: str, scenario: Callable[[Registry], Awaitable[None]]) -> None:
    async def run() -> None:
        server = ApiServer(ApiServerConfig([etcd], token="t", prefix=f"/suggest-{secrets.token_hex(4)}/"))
        async with server.lifespan(None):  # type: ignore[arg-type]  # the caches, as the app starts them
            await scenario(server.registry)

    asyncio.run(run())


def test_a_patch_from_a_cache_behind_etcd_keeps_what_was_written_in_between(etcd: str) -> None:
    async def scenario(registry: Registry) -> None:
        req = RegistryRequest(CONFIGMAPS, "default", "c")
        await registry.create(req, {"metadata": {"name": "c", "namespace": "default"}, "data": {}})
        behind = 0
        for i in range(TRIES):

            def add(obj: Object, i: int = i) -> None:
                obj.setdefault("data", {})[f"direct-{i}"] = "x"

            behind += await behind_the_back(registry, req, add)
            await registry.patch(req, orjson.dumps({"data": {f"patched-{i}": "y"}}), MERGE)
        data = (await registry.latest(req))["data"]
        assert data == {**{f"direct-{i}": "x" for i in range(TRIES)}, **{f"patched-{i}": "y" for i in range(TRIES)}}
        assert behind > 0  # the case under test happened

    with_apiserver(etcd, scenario)


def test_a_patch_that_changes_nothing_of_a_stale_copy_is_still_written(etcd: str) -> None:
    async def scenario(registry: Registry) -> None:
        req = RegistryRequest(CONFIGMAPS, "default", "v")
        await registry.create(req, {"metadata": {"name": "v", "namespace": "default"}, "data": {"v": "1"}})
        behind = 0
        for _ in range(TRIES):
            behind += await behind_the_back(registry, req, lambda obj: obj["data"].update(v="2"))
            answered = await registry.patch(req, orjson.dumps({"data": {"v": "1"}}), MERGE)  # as the cache has it
            assert answered["data"] == {"v": "1"}
            assert (await registry.latest(req))["data"] == {"v": "1"}
        assert behind > 0

    with_apiserver(etcd, scenario)


def test_a_json_patch_test_judged_on_the_stored_object(etcd: str) -> None:
    """A JSON patch whose `test` holds only for the stored value succeeds; one that holds only for the stale
    copy fails as upstream words it."""

    async def scenario(registry: Registry) -> None:
        req = RegistryRequest(CONFIGMAPS, "default", "t")
        await registry.create(req, {"metadata": {"name": "t", "namespace": "default"}, "data": {"n": "0"}})
        behind = 0
        for n in range(1, TRIES + 1):
            behind += await behind_the_back(registry, req, lambda obj, n=n: obj["data"].update(n=str(n)))
            ops = [
                {"op": "test", "path": "/data/n", "value": str(n)},
                {"op": "add", "path": "/data/seen", "value": "y"},
            ]
            answered = await registry.patch(req, orjson.dumps(ops), JSON_PATCH)
            assert answered["data"] == {"n": str(n), "seen": "y"}
        assert behind > 0
        stale = [{"op": "test", "path": "/data/n", "value": "0"}]
        await behind_the_back(registry, req, lambda obj: obj["data"].update(n="next"))
        with pytest.raises(errors.ApiError):
            await registry.patch(req, orjson.dumps(stale), JSON_PATCH)

    with_apiserver(etcd, scenario)


def test_a_binding_from_a_cache_behind_etcd_is_judged_on_the_stored_pod(etcd: str) -> None:
    """A pod bound behind the cache's back is not bound again: the second binding is refused (409)."""

    async def scenario(registry: Registry) -> None:
        behind = 0
        for i in range(TRIES // 4):
            name = f"p{i}"
            req = RegistryRequest(PODS, "default", name)
            pod = {
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
            await registry.create(req, pod)
            behind += await behind_the_back(registry, req, lambda obj: obj["spec"].update(nodeName="first"))

            def bind(obj: Object, name: str = name) -> None:
                if obj["spec"].get("nodeName"):
                    raise errors.conflict("pods", name, "", reason="already bound (test)")
                obj["spec"]["nodeName"] = "second"

            with pytest.raises(errors.ApiError) as refused:
                await registry.guaranteed_update(req, bind)
            assert refused.value.code == 409
            assert (await registry.latest(req))["spec"]["nodeName"] == "first"
        assert behind > 0

    with_apiserver(etcd, scenario)


def test_an_update_from_a_cache_behind_etcd_is_judged_on_the_stored_object(etcd: str) -> None:
    """A PUT with the stored resourceVersion succeeds though the cache has an older one (a Lease renewal right after
    its last one); a PUT with the cache's resourceVersion, now stale, conflicts; a PUT without one replaces the
    stored object; a PUT that changes nothing of the stale copy is still written."""

    async def scenario(registry: Registry) -> None:
        req = RegistryRequest(CONFIGMAPS, "default", "u")
        await registry.create(req, {"metadata": {"name": "u", "namespace": "default"}, "data": {"n": "0"}})
        behind = 0
        for n in range(1, TRIES + 1):
            behind += await behind_the_back(registry, req, lambda obj, n=n: obj["data"].update(n=f"direct-{n}"))
            stored = await registry.latest(req)
            version = stored["metadata"]["resourceVersion"]
            cached = registry.cache(req.resource).get(registry.cache_key(req.namespace, req.name))
            assert cached is not None
            body = {"metadata": {"name": "u", "namespace": "default", "resourceVersion": version}, "data": {"n": "put"}}
            answered, created = await registry.update(req, body)
            assert not created and answered["data"] == {"n": "put"}
            assert body["data"] == {"n": "put"}
            if str(cached.revision) != version:  # the cache was behind: its version is stale now
                old = {"metadata": {"name": "u", "namespace": "default", "resourceVersion": str(cached.revision)}}
                with pytest.raises(errors.ApiError) as refused:
                    await registry.update(req, {**old, "data": {"n": "lost"}})
                assert refused.value.code == 409
            assert (await registry.latest(req))["data"] == {"n": "put"}
        assert behind > 0
        for _ in range(TRIES // 4):
            behind_now = await behind_the_back(registry, req, lambda obj: obj["data"].update(n="direct"))
            unconditional = {"metadata": {"name": "u", "namespace": "default"}, "data": {"n": "put"}}  # as cached
            answered, _ = await registry.update(req, unconditional)
            assert answered["data"] == {"n": "put"}
            assert (await registry.latest(req))["data"] == {"n": "put"}, behind_now

    with_apiserver(etcd, scenario)


def test_an_update_with_the_cached_version_reads_nothing_from_etcd(etcd: str) -> None:
    async def scenario(registry: Registry) -> None:
        req = RegistryRequest(CONFIGMAPS, "default", "r")
        made = await registry.create(req, {"metadata": {"name": "r", "namespace": "default"}, "data": {}})
        cache = registry.cache(req.resource)
        while (cached := cache.get(registry.cache_key("default", "r"))) is None or str(cached.revision) != made[
            "metadata"
        ]["resourceVersion"]:
            await asyncio.sleep(0.01)
        reads = 0
        real_get = registry.store.get

        async def counted_get(key: str, *args: Any, **kwargs: Any) -> Any:
            nonlocal reads
            reads += 1
            return await real_get(key, *args, **kwargs)

        registry.store.get = counted_get  # type: ignore[method-assign]
        body = {"metadata": {**made["metadata"]}, "data": {"renewed": "yes"}}
        answered, _ = await registry.update(req, body)
        registry.store.get = real_get  # type: ignore[method-assign]
        assert answered["data"] == {"renewed": "yes"}
        assert reads == 0

    with_apiserver(etcd, scenario)
