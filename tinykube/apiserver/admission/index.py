"""A watch cache's objects by namespace, for plugins that look up a namespace's LimitRanges or ResourceQuotas on
every write: brought up to date from the cache's window of recent events when read, so a read costs the changes
since the last one, never a scan of the cache."""

from __future__ import annotations

from typing import Any

from tinykube.apiserver.storage.watchcache import CacheEvent, WatchCache

Object = dict[str, Any]


class NamespaceIndex:
    def __init__(self, cache: WatchCache) -> None:
        self.cache = cache
        self._seen = -1  # the cache revision the index reflects
        self._by_namespace: dict[str, dict[str, Object]] = {}

    def objects(self, namespace: str) -> list[Object]:
        """The namespace's objects (shared with the cache: read-only), by name."""
        self._catch_up()
        found = self._by_namespace.get(namespace)
        return [found[name] for name in sorted(found)] if found else []

    def _catch_up(self) -> None:
        cache = self.cache
        if cache.revision == self._seen:
            return
        if self._seen < cache.oldest:  # the events since are no longer all in the window (or never were)
            self._rebuild()
        else:
            newer: list[CacheEvent] = []
            for event in reversed(cache.events):
                if event.revision <= self._seen:
                    break
                newer.append(event)
            for event in reversed(newer):
                self._apply(event)
        self._seen = cache.revision

    def _rebuild(self) -> None:
        self._by_namespace = {}
        for cached in self.cache.objects.values():
            self._put(cached.obj)

    def _apply(self, event: CacheEvent) -> None:
        if event.type == "DELETED":
            meta = event.current.obj["metadata"]
            self._by_namespace.get(meta.get("namespace", ""), {}).pop(meta["name"], None)
        else:
            self._put(event.current.obj)

    def _put(self, obj: Object) -> None:
        meta = obj["metadata"]
        self._by_namespace.setdefault(meta.get("namespace", ""), {})[meta["name"]] = obj
