"""Indexed watch triggers: a pod's change is offered to the watchers of its node (before and after), of its name
and of its namespace, and to the watchers without a trigger; never to a kubelet watching another node. Held
against the plain rule (offer to every watcher, let each one's selector decide) for random pods, moves and
watchers, for live events and for the replay of the window to a watcher that subscribes late."""

from __future__ import annotations

from typing import Any, cast

import orjson
from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.resources import by_path
from tinykube.apiserver.storage.watchcache import (
    NAME,
    NAMESPACE,
    NODE_NAME,
    CachedObject,
    CacheEvent,
    WatchCache,
    Watcher,
    trigger_value,
)
from tinykube.store.etcd import WatchEvent

PODS = by_path("", "v1", "pods")
NODES = ["", "node-1", "node-2", "node-3"]
NAMESPACES = ["a", "b"]
POD_NAMES = ["p", "q"]


def cached(namespace: str, node: str, revision: int, name: str = "p") -> CachedObject:
    spec = {"nodeName": node} if node else {}
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
    return CachedObject(obj, b"", revision)


def watcher_for(kind: str, value: str) -> Watcher:
    if kind == "node":
        return Watcher(lambda o: trigger_value(NODE_NAME, o) == value, (NODE_NAME, value))
    if kind == "namespace":
        return Watcher(lambda o: o.namespace == value, (NAMESPACE, value))
    if kind == "name":
        return Watcher(lambda o: o.obj["metadata"]["name"] == value, (NAME, value))
    return Watcher(lambda o: True)


def untriggered(kind: str, value: str) -> Watcher:
    """The same selector without its trigger: every event offered, the selector deciding."""
    return Watcher(watcher_for(kind, value).matches)


watchers = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(NODES)),
        st.tuples(st.just("namespace"), st.sampled_from(NAMESPACES)),
        st.tuples(st.just("name"), st.sampled_from(POD_NAMES)),
        st.tuples(st.just("all"), st.just("")),
    ),
    max_size=8,
)


@given(watchers, st.sampled_from(NAMESPACES), st.sampled_from(NODES), st.sampled_from(NODES), st.booleans())
def test_an_event_reaches_exactly_the_watchers_whose_selector_it_can_match(
    specs: list[tuple[str, str]], namespace: str, before: str, after: str, new: bool
) -> None:
    cache = WatchCache(cast(Any, None), PODS)  # only the watcher bookkeeping: never started, no store used
    made = [watcher_for(kind, value) for kind, value in specs]
    for watcher in made:
        cache.subscribe(watcher, 0)
    previous = None if new else cached(namespace, before, 1)
    event = CacheEvent("ADDED" if new else "MODIFIED", 2, cached(namespace, after, 2), previous)
    reached = set(map(id, cache.receivers(event)))
    for watcher in made:
        could = watcher.matches(event.current) or (previous is not None and watcher.matches(previous))
        if could:
            assert id(watcher) in reached
    assert len(cache.receivers(event)) == len(reached)  # none offered twice
    for watcher in made:
        cache.unsubscribe(watcher)
    assert not cache.watchers and not cache.receivers(event)


changes = st.lists(
    st.tuples(st.sampled_from(POD_NAMES), st.sampled_from(NAMESPACES), st.sampled_from(NODES), st.booleans()),
    max_size=12,
)


@given(watchers, changes, st.integers(0, 12))
def test_a_late_watcher_is_replayed_what_its_selector_would_take_from_every_event(
    specs: list[tuple[str, str]], history: list[tuple[str, str, str, bool]], since: int
) -> None:
    """The replay reads only what is newer than `since` and offers a triggered watcher only its trigger's events:
    what reaches each watcher's queue is what the plain watcher (offered everything) takes."""
    cache = WatchCache(cast(Any, None), PODS)
    current: dict[tuple[str, str], CachedObject] = {}
    for revision, (name, namespace, node, deleted) in enumerate(history, start=1):
        previous = current.get((namespace, name))
        if deleted and previous is not None:
            event = CacheEvent("DELETED", revision, cached(namespace, node, revision, name), previous)
            del current[(namespace, name)]
        else:
            now = cached(namespace, node, revision, name)
            event = CacheEvent("MODIFIED" if previous else "ADDED", revision, now, previous)
            current[(namespace, name)] = now
        cache.events.append(event)
    for kind, value in specs:
        triggered, plain = watcher_for(kind, value), untriggered(kind, value)
        cache.subscribe(triggered, since)
        for event in cache.events:  # the plain rule: every event after `since`, the selector deciding
            if event.revision > since:
                plain.offer(event)
        assert drained(triggered) == drained(plain)


def drained(watcher: Watcher) -> list[tuple[str, int]]:
    found = []
    while not watcher.queue.empty():
        event = watcher.queue.get_nowait()
        assert event is not None
        found.append((event.type, event.revision))
    return found


@given(changes)
def test_a_list_of_one_nodes_pods_reads_the_index_and_finds_what_a_scan_finds(
    history: list[tuple[str, str, str, bool]],
) -> None:
    """The cache's index of pods by node, kept through creates, moves and deletes, gives each node's pods (per
    namespace too) in key order, exactly as filtering every pod would."""
    cache = WatchCache(cast(Any, None), PODS)  # fed its changes directly: never started, no store used
    for revision, (name, namespace, node, deleted) in enumerate(history, start=1):
        key = f"{PODS.storage_segment}/{namespace}/{name}"
        if deleted:
            cache._apply([WatchEvent("DELETE", key, b"", revision, None)])
        else:
            spec = {"nodeName": node} if node else {}
            body = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name, "namespace": namespace}, "spec": spec}
            cache._apply([WatchEvent("PUT", key, orjson.dumps(body), revision, None)])
    for node in NODES:
        for namespace in ["", *NAMESPACES]:
            found = cache.indexed_items(NODE_NAME, node, namespace)
            assert found is not None
            scanned = [k for k, o in cache.items(namespace) if trigger_value(NODE_NAME, o) == node]
            assert [k for k, _ in found] == scanned
    assert cache.indexed_items(NAMESPACE, "a") is None  # only the node is indexed
