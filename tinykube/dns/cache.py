"""Finished responses by query bytes, so a repeated question costs one dict lookup and one `sendto`.

The key is the query without its ID: flags, question and EDNS options decide the response, so two queries with
the same key get the same bytes back (with their own ID). Each entry is filed under the groups its answer depends
on (a Service, a namespace's pods, or everything reverse/apex), and a change drops just those.
"""

from __future__ import annotations

from dataclasses import dataclass

from tinykube.dns.records import Group

DEFAULT_LIMIT = 200_000  # entries; past it the cache starts afresh (a flood of distinct names cannot grow it)


@dataclass(frozen=True, slots=True)
class Cached:
    payload: bytes  # the response without its first two bytes (the ID)
    labels: tuple[str, str]  # query type and rcode, for the metrics of a hit


class ResponseCache:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.entries: dict[bytes, Cached] = {}
        self._keys_of: dict[Group, set[bytes]] = {}
        self.get = self.entries.get  # bound once: the hot path calls it per packet

    def __len__(self) -> int:
        return len(self.entries)

    def put(self, key: bytes, value: Cached, groups: set[Group]) -> None:
        if len(self.entries) >= self.limit:
            self.clear()
        self.entries[key] = value
        for group in groups:
            self._keys_of.setdefault(group, set()).add(key)

    def invalidate(self, group: Group) -> None:
        for key in self._keys_of.pop(group, ()):
            self.entries.pop(key, None)

    def clear(self) -> None:
        self.entries.clear()  # in place: `get` stays bound to it
        self._keys_of.clear()
