"""A pool: one range, the allocation index that says what is taken, and this process's in-flight picks."""

from __future__ import annotations

import random
from collections import Counter

from tinykube.apiserver.allocators.index import PREFIX, AllocationIndex, Holder
from tinykube.apiserver.allocators.ranges import Range, RangeFull, pick_offset


class Pool:
    def __init__(self, name: str, range_: Range, index: AllocationIndex, rng: random.Random | None = None) -> None:
        self.name = name  # the key segment: clusterips, nodeports, loadbalancerips
        self.range = range_
        self.index = index
        self.rng = rng or random.Random()
        self.in_flight: set[str] = set()  # picked by requests of this process that have not committed yet
        self.allocations: Counter[str] = Counter()  # by scope: static (requested) / dynamic (picked)
        self.errors: Counter[str] = Counter()

    def key(self, value: str) -> str:
        """The etcd key (under the store's prefix) that records `value` as allocated."""
        return f"{PREFIX}{self.name}/{value}"

    def holder(self, value: str) -> Holder | None:
        entry = self.index.get(self.key(value))
        return entry.holder if entry else None

    def taken(self, value: str) -> bool:
        return value in self.in_flight or self.index.get(self.key(value)) is not None

    def contains(self, value: str) -> bool:
        return self.range.offset_of(value) is not None

    def check(self, value: str, *, check_taken: bool = True) -> str:
        """The canonical form of a requested member; NotInRange or AlreadyAllocated when it cannot be had."""
        if not self.contains(value):
            self.errors["static"] += 1
            raise self.range.not_in_range(value)
        value = self.range.canonical(value)
        if check_taken and self.taken(value):
            self.errors["static"] += 1
            raise self.range.already_allocated()
        return value

    def pick(self, avoid: set[str] | frozenset[str] = frozenset()) -> str:
        """A free member, random within the dynamic band first; RangeFull when there is none."""
        offset = pick_offset(
            self.range.size,
            self.range.static_band,
            lambda o: self.taken(v := self.range.at(o)) or v in avoid,
            self.rng,
        )
        if offset is None:
            self.errors["dynamic"] += 1
            raise RangeFull()
        return self.range.at(offset)

    def used(self) -> dict[str, Holder]:
        """Allocated members of this pool's range and what holds each."""
        found: dict[str, Holder] = {}
        for value in self.index.keys(self.name):
            entry = self.index.get(self.key(value))
            if entry is not None and self.contains(value):
                found[value] = entry.holder
        return found
