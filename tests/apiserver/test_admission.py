"""The admission plugins' logic without HTTP: LimitRanger's defaults and bounds, Priority's resolution, the quota
check and the ResourceQuota plugin's batched, conditional charging (against a faithful model of the registry: a
watch cache fed by the writes, updates refused on a stale resourceVersion), the chain and the namespace index.

Messages are upstream's (plugin/pkg/admission/limitranger, .../priority, apiserver's resourcequota controller.go).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from tinykube.api import errors
from tinykube.api.quota import CREATE, UPDATE, evaluator_for
from tinykube.api.resources import ResourceInfo, builtin
from tinykube.apiserver.admission import Chain, Plugin, forbidden
from tinykube.apiserver.admission.index import NamespaceIndex
from tinykube.apiserver.admission.limitranger import (
    ANNOTATION,
    aggregate,
    claim_limit_errors,
    default_pod_resources,
    pod_limit_errors,
)
from tinykube.apiserver.admission.priority import Priority, resolve
from tinykube.apiserver.admission.quotacheck import QuotaState, Refused, check_request
from tinykube.apiserver.admission.resourcequota import RESOURCE_QUOTAS, ResourceQuota
from tinykube.apiserver.registry.generic import Request
from tinykube.apiserver.storage.watchcache import WatchCache
from tinykube.store.etcd import WatchEvent

pytestmark = pytest.mark.anyio

PODS = builtin("", "v1", "pods")
SERVICES = builtin("", "v1", "services")
PRIORITY_CLASSES = builtin("scheduling.k8s.io", "v1", "priorityclasses")
Object = dict[str, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def container(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Object:
    resources = {field: value for field, value in (("requests", requests), ("limits", limits)) if value}
    return {"name": name, "image": "nginx", "resources": resources}


def pod(*containers: Object, name: str = "p", **spec: Any) -> Object:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": list(containers), **spec}}


def limit_range(*items: Object) -> Object:
    return {"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": list(items)}}


class Feed:
    """A watch cache fed directly with etcd watch events (no etcd): the cache the plugins read."""

    def __init__(self, resource: ResourceInfo) -> None:
        self.cache = WatchCache(None, resource)  # type: ignore[arg-type]  # never started: fed by hand
        self.revision = 1

    def put(self, obj: Object) -> Object:
        self.revision += 1
        meta = obj["metadata"]
        key = self.cache.prefix + (f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"])
        stored = {**obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        self.cache._apply([WatchEvent("PUT", key, orjson.dumps(stored), self.revision, None)])
        return self.get(meta["name"], meta.get("namespace", ""))

    def delete(self, name: str, namespace: str = "") -> None:
        self.revision += 1
        key = self.cache.prefix + (f"{namespace}/{name}" if namespace else name)
        self.cache._apply([WatchEvent("DELETE", key, b"", self.revision, None)])

    def get(self, name: str, namespace: str = "") -> Object:
        found = self.cache.get(f"{namespace}/{name}" if namespace else name)
        assert found is not None
        return copy.deepcopy(found.obj)


# ---- LimitRanger: defaults ------------------------------------------------------------------------------------------


def test_defaults_fill_what_containers_lack_and_say_so() -> None:
    lr = limit_range(
        {"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"}, "defaultRequest": {"cpu": "250m"}}
    )
    obj = pod(
        container("app"),
        container("own", {"cpu": "100m"}, {"memory": "1Gi"}),
        initContainers=[container("init")],
    )
    default_pod_resources(lr, obj)
    app, own = obj["spec"]["containers"]
    assert app["resources"] == {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m", "memory": "128Mi"}}
    assert own["resources"] == {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi", "cpu": "500m"}}
    assert obj["spec"]["initContainers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}
    assert obj["metadata"]["annotations"][ANNOTATION] == (
        "LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app; "
        "cpu limit for container own; cpu request for init container init; cpu, memory limit for init container init"
    )


def test_no_defaults_no_annotation() -> None:
    obj = pod(container("app"))
    default_pod_resources(limit_range({"type": "Container", "max": {"cpu": "1"}}), obj)
    assert "annotations" not in obj["metadata"]
    assert obj["spec"]["containers"][0]["resources"] == {}


# ---- LimitRanger: bounds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "requests", "limits", "messages"),
    [
        pytest.param(
            {"max": {"cpu": "1"}},
            {"cpu": "2"},
            {"cpu": "2"},
            ["maximum cpu usage per Container is 1, but limit is 2"],
            id="max-limit",
        ),
        pytest.param(
            {"max": {"cpu": "1"}},
            {"cpu": "2"},
            None,
            ["maximum cpu usage per Container is 1.  No limit is specified"],
            id="max-without-limit",
        ),
        pytest.param(
            {"max": {"memory": "1Gi"}},
            {"memory": "2Gi"},
            {"memory": "512Mi"},
            ["maximum memory usage per Container is 1Gi, but request is 2Gi"],
            id="max-request",
        ),
        pytest.param(
            {"min": {"cpu": "100m"}},
            None,
            {"cpu": "1"},
            ["minimum cpu usage per Container is 100m.  No request is specified"],
            id="min-without-request",
        ),
        pytest.param(
            {"min": {"cpu": "100m"}},
            {"cpu": "50m"},
            None,
            ["minimum cpu usage per Container is 100m, but request is 50m"],
            id="min-request",
        ),
        pytest.param(
            {"maxLimitRequestRatio": {"cpu": "2"}},
            {"cpu": "250m"},
            {"cpu": "1"},
            ["cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"],
            id="ratio",
        ),
        pytest.param(
            {"maxLimitRequestRatio": {"memory": "2"}},
            None,
            {"memory": "1Gi"},
            ["memory max limit to request ratio per Container is 2, but no request is specified or request is 0"],
            id="ratio-without-request",
        ),
        pytest.param(
            {"min": {"cpu": "100m"}, "max": {"cpu": "1"}, "maxLimitRequestRatio": {"cpu": "4"}},
            {"cpu": "200m"},
            {"cpu": "800m"},
            [],
            id="within",
        ),
        pytest.param({"max": {"cpu": "1"}}, {"cpu": "1000m"}, {"cpu": "1"}, [], id="equal-other-format"),
    ],
)
def test_container_bounds(
    item: Object, requests: dict[str, str] | None, limits: dict[str, str] | None, messages: list[str]
) -> None:
    lr = limit_range({"type": "Container", **item})
    assert pod_limit_errors(lr, pod(container("c", requests, limits))) == messages


def test_init_containers_are_bounded_too_and_the_pod_by_its_totals() -> None:
    lr = limit_range({"type": "Container", "max": {"cpu": "1"}}, {"type": "Pod", "max": {"cpu": "1500m"}})
    obj = pod(
        container("a", {"cpu": "1"}, {"cpu": "1"}),
        container("b", {"cpu": "1"}, {"cpu": "1"}),
        initContainers=[container("init", {"cpu": "2"}, {"cpu": "2"})],
    )
    assert pod_limit_errors(lr, obj) == [
        "maximum cpu usage per Container is 1, but limit is 2",
        "maximum cpu usage per Pod is 1500m, but limit is 2",
    ]


def test_several_messages_are_aggregated_as_upstream_does() -> None:
    assert aggregate(["a"]) == "a"
    assert aggregate(["a", "b", "a"]) == "[a, b]"


@pytest.mark.parametrize(
    ("storage", "messages"),
    [
        pytest.param("5Gi", ["maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"], id="big"),
        pytest.param(
            "500Mi", ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"], id="small"
        ),
        pytest.param("1Gi", [], id="fits"),
    ],
)
def test_claim_storage_bounds(storage: str, messages: list[str]) -> None:
    lr = limit_range({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}})
    claim = {"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": storage}}}}
    assert claim_limit_errors(lr, claim) == messages


# ---- Priority -------------------------------------------------------------------------------------------------------

CRITICAL = {
    "metadata": {"name": "system-cluster-critical"},
    "value": 2_000_000_000,
    "preemptionPolicy": "PreemptLowerPriority",
}


def test_a_class_resolves_to_its_priority_and_policy() -> None:
    spec: Object = {"priorityClassName": "system-cluster-critical"}
    assert resolve(spec, CRITICAL) == ""
    assert spec == {
        "priorityClassName": "system-cluster-critical",
        "priority": 2_000_000_000,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def test_no_class_and_no_default_is_priority_zero() -> None:
    spec: Object = {}
    assert resolve(spec, None) == ""
    assert spec == {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}


def test_a_pod_may_not_state_another_priority() -> None:
    assert resolve({"priority": 5}, CRITICAL) == (
        "the integer value of priority (5) must not be provided in pod spec; "
        "priority admission controller computed 2000000000 from the given PriorityClass name"
    )
    assert resolve({"priority": 2_000_000_000}, CRITICAL) == ""
    assert resolve({"preemptionPolicy": "Never"}, CRITICAL) == (
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; "
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
    )


async def test_the_plugin_finds_classes_and_the_global_default() -> None:
    classes = Feed(PRIORITY_CLASSES)
    plugin = Priority(classes.cache)
    obj = pod(container("a"), priorityClassName="missing")
    with pytest.raises(errors.Forbidden) as refused:
        await plugin.admit(Request(PODS, "ns"), obj, None)
    assert str(refused.value) == 'pods "p" is forbidden: no PriorityClass with name missing was found'
    classes.put({"metadata": {"name": "low"}, "value": 10, "globalDefault": True, "preemptionPolicy": "Never"})
    classes.put({"metadata": {"name": "lower"}, "value": 5, "globalDefault": True})  # raced in: the lowest wins
    defaulted = pod(container("a"))
    await plugin.admit(Request(PODS, "ns"), defaulted, None)
    assert defaulted["spec"]["priorityClassName"] == "lower" and defaulted["spec"]["priority"] == 5
    second = {"metadata": {"name": "other"}, "value": 1, "globalDefault": True}
    with pytest.raises(errors.Forbidden) as refused:
        await plugin.validate(Request(PRIORITY_CLASSES, "", "other"), second, None)
    assert str(refused.value) == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: '
        "PriorityClass lower is already marked as default. Only one default can exist"
    )


async def test_updates_keep_the_resolved_priority() -> None:
    plugin = Priority(Feed(PRIORITY_CLASSES).cache)
    old = pod(container("a"), priority=7, preemptionPolicy="Never")
    new = pod(container("a"))
    await plugin.admit(Request(PODS, "ns", "p"), new, old)
    assert new["spec"]["priority"] == 7 and new["spec"]["preemptionPolicy"] == "Never"


# ---- the quota check ----------------------------------------------------------------------------------------------


def quota(name: str, hard: dict[str, str], used: dict[str, str] | None = None, **spec: Any) -> QuotaState:
    obj = {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"},
        "spec": {"hard": hard, **spec},
        "status": {"hard": hard, "used": used if used is not None else dict.fromkeys(hard, "0")},
    }
    return QuotaState.of(obj)


def check(quotas: list[QuotaState], obj: Object, old: Object | None = None, plural: str = "pods") -> list[QuotaState]:
    return check_request(quotas, evaluator_for("", plural), obj, old, UPDATE if old else CREATE)


def test_a_create_is_charged_to_the_quotas_that_limit_it() -> None:
    quotas = [quota("a", {"pods": "2"}, {"pods": "1"}), quota("b", {"count/configmaps": "1"})]
    after = check(quotas, pod(container("c")))
    assert after[0].body()["status"]["used"] == {"pods": "2"}
    assert after[1] is quotas[1]


def test_exceeded_quota() -> None:
    quotas = [quota("q", {"pods": "2", "requests.cpu": "1"}, {"pods": "2", "requests.cpu": "500m"})]
    with pytest.raises(Refused) as refused:
        check(quotas, pod(container("c", {"cpu": "600m"})))
    assert str(refused.value) == (
        "exceeded quota: q, requested: pods=1,requests.cpu=600m, used: pods=2,requests.cpu=500m, "
        "limited: pods=2,requests.cpu=1"
    )


def test_a_compute_quota_wants_every_container_to_state_it() -> None:
    with pytest.raises(Refused) as refused:
        check([quota("q", {"limits.cpu": "2"})], pod(container("c")))
    assert str(refused.value) == "failed quota: q: must specify limits.cpu for: c"


def test_a_quota_not_counted_yet_refuses() -> None:
    unknown = QuotaState.of({"metadata": {"name": "q"}, "status": {"hard": {"pods": "1", "secrets": "1"}}})
    with pytest.raises(Refused) as refused:
        check([unknown], pod(container("c")))
    assert str(refused.value) == "status unknown for quota: q, resources: pods"


def test_a_quota_the_controller_has_not_seen_limits_nothing() -> None:
    fresh = QuotaState.of({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}}})
    assert check([fresh], pod(container("c"))) == [fresh]


def test_scoped_quotas_charge_only_pods_in_scope() -> None:
    best_effort = quota("be", {"pods": "1"}, {"pods": "1"}, scopes=["BestEffort"])
    assert check([best_effort], pod(container("c", {"cpu": "1"}))) == [best_effort]  # not best effort: not limited
    with pytest.raises(Refused):
        check([best_effort], pod(container("c")))


def test_an_update_is_charged_what_it_adds() -> None:
    quotas = [quota("q", {"services.nodeports": "2"}, {"services.nodeports": "1"})]
    old = {"metadata": {"name": "s", "resourceVersion": "3"}, "spec": {"ports": [{"port": 80}]}}
    new = {**old, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
    after = check(quotas, new, old, plural="services")
    assert str(after[0].used["services.nodeports"]) == "2"
    assert check(after, new, new, plural="services") == after  # no change: nothing charged


# ---- the ResourceQuota plugin: batched, conditional charges ---------------------------------------------------------


class RegistryModel:
    """What the plugin uses of the registry: quotas in a watch cache, status writes conditional on the
    resourceVersion (a Conflict otherwise), reads of the latest state. `before_write` lets a test race a write."""

    def __init__(self) -> None:
        self.quotas = Feed(RESOURCE_QUOTAS)
        self.writes = 0
        self.before_write: Callable[[], None] | None = None

    def cache(self, resource: ResourceInfo) -> WatchCache:
        return self.quotas.cache

    async def update(self, req: Request, body: Object) -> tuple[Object, bool]:
        if self.before_write is not None:
            interfere, self.before_write = self.before_write, None
            interfere()
        current = self.quotas.get(req.name, req.namespace)
        if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise errors.conflict("resourcequotas", req.name)
        self.writes += 1
        return self.quotas.put({**current, "status": body["status"]}), False

    async def latest(self, req: Request) -> Object:
        return self.quotas.get(req.name, req.namespace)


def counted_quota(used: str, hard: str = "2") -> Object:
    return {
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"hard": {"pods": hard}},
        "status": {"hard": {"pods": hard}, "used": {"pods": used}},
    }


async def create_pods(plugin: ResourceQuota, count: int, *, dry_run: bool = False) -> list[BaseException | None]:
    async def one(i: int) -> None:
        obj = pod(container("c"), name=f"p{i}")
        await plugin.validate(Request(PODS, "ns", dry_run=dry_run), obj, None)

    return await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)


async def test_concurrent_creates_are_charged_in_one_write_and_never_past_the_quota() -> None:
    registry = RegistryModel()
    registry.quotas.put(counted_quota("0"))
    plugin = ResourceQuota(registry)  # type: ignore[arg-type]
    results = await create_pods(plugin, 5)
    assert results.count(None) == 2
    refused = [r for r in results if r is not None]
    assert all(isinstance(r, errors.Forbidden) for r in refused)
    assert str(refused[0]).endswith("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2")
    assert registry.writes == 1
    assert registry.quotas.get("q", "ns")["status"]["used"] == {"pods": "2"}


async def test_a_conflicting_write_is_retried_against_the_quota_as_it_is_now() -> None:
    registry = RegistryModel()
    registry.quotas.put(counted_quota("0"))
    plugin = ResourceQuota(registry)  # type: ignore[arg-type]
    # another apiserver charges one pod between our read and our write
    registry.before_write = lambda: registry.quotas.put(counted_quota("1"))
    results = await create_pods(plugin, 2)
    assert results.count(None) == 1
    assert registry.quotas.get("q", "ns")["status"]["used"] == {"pods": "2"}


async def test_dry_run_and_namespaces_without_quotas_write_nothing() -> None:
    registry = RegistryModel()
    plugin = ResourceQuota(registry)  # type: ignore[arg-type]
    assert await create_pods(plugin, 3) == [None, None, None]
    registry.quotas.put(counted_quota("0"))
    assert await create_pods(plugin, 2, dry_run=True) == [None, None]
    assert registry.writes == 0


# ---- the chain and the index ----------------------------------------------------------------------------------------


class Recorder(Plugin):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def handles(self, resource: ResourceInfo) -> bool:
        return resource.plural == "pods"

    async def admit(self, req: Request, obj: Object, old: Object | None) -> None:
        self.log.append(f"admit {self.name}")

    async def validate(self, req: Request, obj: Object, old: Object | None) -> None:
        self.log.append(f"validate {self.name}")


async def test_the_chain_runs_each_phase_in_order_for_the_resources_plugins_handle() -> None:
    log: list[str] = []
    chain = Chain([Recorder("a", log), Recorder("b", log)])
    await chain.mutate(Request(PODS, "ns"), pod(), None)
    await chain.validate(Request(PODS, "ns"), pod(), None)
    await chain.mutate(Request(SERVICES, "ns"), {}, None)
    assert log == ["admit a", "admit b", "validate a", "validate b"]


def test_a_plugin_is_mutating_or_validating_by_what_it_implements() -> None:
    feed = Feed(PRIORITY_CLASSES)
    assert Priority(feed.cache).mutating and Priority(feed.cache).validating
    assert not ResourceQuota(RegistryModel()).mutating  # type: ignore[arg-type]


def test_refusals_name_the_object_as_upstream() -> None:
    generated = {"metadata": {"generateName": "web-"}}
    assert str(forbidden(Request(PODS, "ns"), generated, "no")) == 'pods "web-" is forbidden: no'
    assert str(forbidden(Request(PODS, "ns"), {"metadata": {}}, "no")) == 'pods "Unknown" is forbidden: no'


def test_the_namespace_index_follows_the_cache() -> None:
    feed = Feed(builtin("", "v1", "limitranges"))
    index = NamespaceIndex(feed.cache)
    feed.put({"metadata": {"name": "b", "namespace": "one"}})
    assert [o["metadata"]["name"] for o in index.objects("one")] == ["b"]
    feed.put({"metadata": {"name": "a", "namespace": "one"}})
    feed.put({"metadata": {"name": "c", "namespace": "two"}})
    feed.delete("b", "one")
    assert [o["metadata"]["name"] for o in index.objects("one")] == ["a"]
    assert [o["metadata"]["name"] for o in index.objects("two")] == ["c"]
    feed.cache.oldest = feed.revision + 1  # the events it missed are out of the window: it rebuilds
    feed.put({"metadata": {"name": "d", "namespace": "two"}})
    feed.cache.oldest = feed.revision
    assert [o["metadata"]["name"] for o in index.objects("two")] == ["c", "d"]
