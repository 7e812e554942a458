"""Indexed watch triggers: a pod's change is offered to the watchers of its node (before and after) and of its
namespace, and to the watchers without a trigger; never to a kubelet watching another node. Held against the
plain rule (offer to every watcher, let each one's selector decide) for random pods, moves and watchers."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.resources import by_path
from tinykube.apiserver.storage.watchcache import (
    NAMESPACE,
    NODE_NAME,
    CachedObject,
    CacheEvent,
    WatchCache,
    Watcher,
    trigger_value,
)

PODS = by_path("", "v1", "pods")
NODES = ["", "node-1", "node-2", "node-3"]
NAMESPACES = ["a", "b"]


def cached(namespace: str, node: str, revision: int) -> CachedObject:
    spec = {"nodeName": node} if node else {}
    obj: dict[str, Any] = {"metadata": {"name": "p", "namespace": namespace}, "spec": spec}
    return CachedObject(obj, b"", revision)


def watcher_for(kind: str, value: str) -> Watcher:
    if kind == "node":
        return Watcher(lambda o: trigger_value(NODE_NAME, o) == value, (NODE_NAME, value))
    if kind == "namespace":
        return Watcher(lambda o: o.namespace == value, (NAMESPACE, value))
    return Watcher(lambda o: True)


watchers = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(NODES)),
        st.tuples(st.just("namespace"), st.sampled_from(NAMESPACES)),
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
