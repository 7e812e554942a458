"""Informers against a real cluster: list + synced, handlers, indexes, selectors, resync, sharing, and the two
ways a watch breaks — 410 Expired (relist and diff) and the apiserver going away (reconnect)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tinykube.api import errors
from tinykube.api.resources import ResourceInfo, by_path
from tinykube.client.informer import HandlerScope, Informer, Object, SharedInformers, Store, object_key
from tinykube.client.rest import RestClient

pytestmark = pytest.mark.anyio


def core(plural: str) -> ResourceInfo:
    resource = by_path("", "v1", plural)
    assert resource is not None
    return resource


PODS = core("pods")
ENDPOINTS = core("endpoints")


def pod(name: str, **labels: str) -> Object:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def relabel(client: RestClient, namespace: str, name: str, **labels: str) -> Object:
    obj = await client.get(PODS, namespace, name)
    obj["metadata"]["labels"] = labels
    return await client.update(PODS, namespace, obj)


@dataclass
class Recorder:
    """What the handlers were told, as (event, key) and the objects themselves."""

    events: list[tuple[str, str]] = field(default_factory=list)
    updates: list[tuple[Object, Object]] = field(default_factory=list)
    deleted: list[Object] = field(default_factory=list)

    def attach(self, informer: Informer) -> None:
        informer.add_handler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)

    def on_add(self, obj: Object) -> None:
        self.events.append(("add", object_key(obj)))

    async def on_update(self, old: Object, new: Object) -> None:  # async on purpose: both kinds are supported
        self.events.append(("update", object_key(new)))
        self.updates.append((old, new))

    def on_delete(self, obj: Object) -> None:
        self.events.append(("delete", object_key(obj)))
        self.deleted.append(obj)


async def eventually(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Informer], Awaitable[None]]]:
    """Start informers in the background and wait until they synced; stop them after the test."""
    tasks: list[asyncio.Task[None]] = []

    async def start(informer: Informer) -> None:
        tasks.append(asyncio.create_task(informer.run()))
        await asyncio.wait_for(informer.wait_synced(), 15)

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_initial_list_fills_the_store_and_signals_synced(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    await client.create(PODS, namespace, pod("a"))
    await client.create(PODS, namespace, pod("b"))
    informer = Informer(client, PODS, namespace=namespace)
    recorder = Recorder()
    recorder.attach(informer)
    assert not informer.synced.is_set()
    await running(informer)
    assert informer.store.keys() == {f"{namespace}/a", f"{namespace}/b"}
    assert sorted(recorder.events) == [("add", f"{namespace}/a"), ("add", f"{namespace}/b")]
    cached = informer.store.get(f"{namespace}/a")
    assert cached is not None and cached["kind"] == "Pod" and cached["apiVersion"] == "v1"
    assert informer.resource_version


async def test_handlers_see_add_update_delete(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    informer = Informer(client, PODS, namespace=namespace)
    recorder = Recorder()
    recorder.attach(informer)
    await running(informer)
    key = f"{namespace}/c"

    await client.create(PODS, namespace, pod("c"))
    await eventually(lambda: ("add", key) in recorder.events)
    await relabel(client, namespace, "c", app="web")
    await eventually(lambda: any(new["metadata"]["labels"] == {"app": "web"} for _, new in recorder.updates))
    old = next(o for o, n in recorder.updates if n["metadata"]["labels"] == {"app": "web"})
    assert old["metadata"].get("labels", {}) == {}
    await client.delete(PODS, namespace, "c")
    await eventually(lambda: ("delete", key) in recorder.events)

    assert informer.store.get(key) is None
    assert recorder.events[0] == ("add", key) and recorder.events[-1] == ("delete", key)
    assert {event for event, _ in recorder.events[1:-1]} == {"update"}


async def test_custom_index_follows_changes(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    informer = Informer(client, PODS, namespace=namespace)
    informer.store.add_index("app", lambda obj: [v for k, v in obj["metadata"].get("labels", {}).items() if k == "app"])
    await client.create(PODS, namespace, pod("w1", app="web"))
    await client.create(PODS, namespace, pod("w2", app="web"))
    await client.create(PODS, namespace, pod("d1", app="db"))
    await running(informer)

    def names(app: str) -> list[str]:
        return [obj["metadata"]["name"] for obj in informer.store.by_index("app", app)]

    assert names("web") == ["w1", "w2"] and names("db") == ["d1"]
    assert len(informer.store.by_index("namespace", namespace)) == 3
    await relabel(client, namespace, "w2", app="db")
    await eventually(lambda: names("db") == ["d1", "w2"])
    assert names("web") == ["w1"]
    await client.delete(PODS, namespace, "w1")
    await eventually(lambda: names("web") == [])
    with pytest.raises(KeyError):
        informer.store.by_index("nope", "x")


async def test_handlers_added_in_a_scope_leave_with_it(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    """A component that stops while the informers it shared run on (a controller manager that lost its Lease) takes
    its handlers and nothing else; started again, it adds its index again without error and sees each event once."""
    await client.create(PODS, namespace, pod("a"))
    informer = Informer(client, PODS, namespace=namespace)
    stays = Recorder()
    stays.attach(informer)
    await running(informer)

    def app(obj: Object) -> list[str]:
        return [obj["metadata"].get("labels", {}).get("app", "")]

    async def join(recorder: Recorder) -> None:
        informer.store.add_index("app", app)
        recorder.attach(informer)

    async def term(recorder: Recorder, new: str) -> None:
        with HandlerScope() as scope:
            await asyncio.create_task(join(recorder))  # started inside, as the manager starts controllers
        cached = len(informer.store)
        await eventually(lambda: len(recorder.events) == cached)  # joined late: the cache first
        await client.create(PODS, namespace, pod(new))
        await eventually(lambda: ("add", f"{namespace}/{new}") in recorder.events)
        scope.close()

    first, second = Recorder(), Recorder()
    await term(first, "one")
    await term(second, "two")
    await client.create(PODS, namespace, pod("after"))
    await eventually(lambda: ("add", f"{namespace}/after") in stays.events)
    assert first.events == [("add", f"{namespace}/a"), ("add", f"{namespace}/one")]
    assert sorted(second.events) == [("add", f"{namespace}/{name}") for name in ("a", "one", "two")]
    with pytest.raises(ValueError, match="already exists"):
        informer.store.add_index("app", lambda obj: [])  # the same name for another index is still refused


async def test_label_selector_filters_and_objects_leaving_it_are_deleted(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    await client.create(PODS, namespace, pod("in", app="web"))
    await client.create(PODS, namespace, pod("out", app="db"))
    informer = Informer(client, PODS, namespace=namespace, label_selector="app=web")
    recorder = Recorder()
    recorder.attach(informer)
    await running(informer)
    assert informer.store.keys() == {f"{namespace}/in"}

    await relabel(client, namespace, "out", app="web")
    await eventually(lambda: ("add", f"{namespace}/out") in recorder.events)
    await relabel(client, namespace, "in", app="db")
    await eventually(lambda: ("delete", f"{namespace}/in") in recorder.events)
    assert informer.store.keys() == {f"{namespace}/out"}


async def test_field_selector_filters(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    await client.create(PODS, namespace, pod("one"))
    await client.create(PODS, namespace, pod("two"))
    informer = Informer(client, PODS, namespace=namespace, field_selector="metadata.name=two")
    await running(informer)
    assert informer.store.keys() == {f"{namespace}/two"}


async def test_handler_added_late_first_gets_the_cache(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    await client.create(PODS, namespace, pod("a"))
    informer = Informer(client, PODS, namespace=namespace)
    await running(informer)
    late = Recorder()
    late.attach(informer)
    await eventually(lambda: late.events == [("add", f"{namespace}/a")])
    await client.create(PODS, namespace, pod("b"))
    await eventually(lambda: late.events == [("add", f"{namespace}/a"), ("add", f"{namespace}/b")])


async def test_resync_redelivers_every_cached_object(
    client: RestClient, namespace: str, running: Callable[[Informer], Awaitable[None]]
) -> None:
    await client.create(PODS, namespace, pod("a"))
    await client.create(PODS, namespace, pod("b"))
    informer = Informer(client, PODS, namespace=namespace, resync_period=0.05)
    recorder = Recorder()
    recorder.attach(informer)
    await running(informer)
    await eventually(lambda: {key for event, key in recorder.events if event == "update"} >= informer.store.keys())
    assert all(old is new for old, new in recorder.updates)


async def test_shared_informers_hand_out_one_informer_per_view(client: RestClient, namespace: str) -> None:
    factory = SharedInformers(client)
    pods = factory.informer(PODS, namespace=namespace)
    assert factory.informer(PODS, namespace=namespace) is pods
    web = factory.informer(PODS, namespace=namespace, label_selector="app=web")
    endpoints = factory.informer(ENDPOINTS, namespace=namespace)
    assert len({id(pods), id(web), id(endpoints)}) == 3
    await client.create(PODS, namespace, pod("a", app="web"))
    factory.start()
    try:
        await asyncio.wait_for(factory.wait_synced(), 15)
        assert pods.store.keys() == web.store.keys() == {f"{namespace}/a"}
        assert len(endpoints.store) == 0
    finally:
        await factory.stop()


# --- the apiserver going away: a cluster of our own on a fixed port, restarted in place -------------------------


@dataclass
class Restartable:
    data_dir: Path
    port: int
    cluster: RunningCluster

    def restart(self) -> None:
        stop_cluster(self.cluster)
        self.cluster = start_cluster(self.data_dir, "--api-port", str(self.port))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    data_dir = tmp_path / "restartable"
    port = free_port()
    own = Restartable(data_dir, port, start_cluster(data_dir, "--api-port", str(port)))
    try:
        yield own
    finally:
        stop_cluster(own.cluster)


@pytest.fixture
async def own_client(restartable: Restartable) -> AsyncIterator[RestClient]:
    rest = RestClient.from_kubeconfig(restartable.cluster.kubeconfig)
    yield rest
    await rest.close()


async def test_relist_after_410_delivers_what_changed_meanwhile(
    restartable: Restartable, own_client: RestClient
) -> None:
    client = own_client
    await client.create(PODS, "default", pod("stays"))
    await client.create(PODS, "default", pod("goes"))
    await client.create(PODS, "default", pod("changes"))
    informer = Informer(client, PODS, namespace="default")
    recorder = Recorder()
    recorder.attach(informer)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 15)
    informer.stop()
    await asyncio.wait_for(task, 15)
    stale = informer.resource_version
    recorder.events.clear()

    await client.delete(PODS, "default", "goes")
    await relabel(client, "default", "changes", app="web")
    await client.create(PODS, "default", pod("new"))
    await asyncio.to_thread(restartable.restart)  # a fresh watch cache cannot replay from before it started
    with pytest.raises(errors.Expired):
        async for _ in client.watch(PODS, "default", resourceVersion=stale, timeoutSeconds="1"):
            pass

    task = asyncio.create_task(informer.run())  # resumes from `stale`: 410, so it relists
    try:
        await eventually(lambda: len(recorder.events) == 3)
        assert sorted(recorder.events) == [
            ("add", "default/new"),
            ("delete", "default/goes"),
            ("update", "default/changes"),
        ]
        assert recorder.deleted[0]["metadata"]["name"] == "goes"
        [(old, new)] = recorder.updates
        assert old["metadata"].get("labels", {}) == {} and new["metadata"]["labels"] == {"app": "web"}
        assert informer.store.keys() == {"default/stays", "default/changes", "default/new"}
        assert informer.resource_version != stale
    finally:
        informer.stop()
        await asyncio.wait_for(task, 15)


async def test_reconnects_when_the_apiserver_comes_back(restartable: Restartable, own_client: RestClient) -> None:
    client = own_client
    await client.create(PODS, "default", pod("before"))
    informer = Informer(client, PODS, namespace="default")
    recorder = Recorder()
    recorder.attach(informer)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 15)
        await asyncio.to_thread(stop_cluster, restartable.cluster)
        await asyncio.sleep(0.5)  # a few failed reconnects
        assert not task.done()
        assert informer.store.keys() == {"default/before"}  # the cache outlives the outage
        await asyncio.to_thread(restartable.restart)
        await client.create(PODS, "default", pod("after"))
        await eventually(lambda: ("add", "default/after") in recorder.events)
        await client.delete(PODS, "default", "before")
        await eventually(lambda: ("delete", "default/before") in recorder.events)
        assert informer.store.keys() == {"default/after"}
        assert recorder.events.count(("add", "default/before")) == 1  # no duplicate add from reconnecting
    finally:
        informer.stop()
        await asyncio.wait_for(task, 15)


@given(
    st.lists(
        st.tuples(st.sampled_from("abcde"), st.none() | st.lists(st.sampled_from("xyz"), max_size=3)),
        max_size=40,
    )
)
def test_store_indexes_answer_as_a_set_per_value_would(ops: list[tuple[str, list[str] | None]]) -> None:
    """The index keeps a lone key as itself and a set only for values of two or more: held to the plain model of a
    set per value, through puts, replacements and deletes, with duplicate values from one object too."""
    store = Store()
    store.add_index("tags", lambda obj: obj["tags"])
    model: dict[str, list[str]] = {}  # key -> tags
    for name, tags in ops:
        key = f"ns/{name}"
        if tags is None:
            store.delete(key)
            model.pop(key, None)
        else:
            store.put({"metadata": {"namespace": "ns", "name": name}, "tags": tags})
            model[key] = tags
        for value in "xyz":
            expected = sorted(key for key, tags in model.items() if value in tags)
            assert [object_key(obj) for obj in store.by_index("tags", value)] == expected
            assert store.count("tags", value) == len(expected)
