"""The scheduler's search for feasible nodes, in O(log n) per pod when only a count decides.

Upstream's scheduler checks nodes in a fixed order starting where the previous pod's search stopped, stops once
`enough` fit (`percentageOfNodesToScore`), and scores only those. When every node is open and a pod can only be
kept off one by its pod count (`scheduler.plain`), which nodes fit is a property of each node alone, so the same
answer — where the search stops and which fitting node has the fewest pods — can be read off a segment tree over
the nodes instead of walking up to `enough` of them per pod (500 of 5,000).
"""

from __future__ import annotations

from dataclasses import dataclass

NONE = -1
_NO_KEY = float("inf")


@dataclass(frozen=True, slots=True)
class Pick:
    chosen: int  # the index of the fitting node with the fewest pods (the lowest index among equals); NONE: none
    checked: int  # how many nodes the search looked at, from its start, before it stopped


class RoundRobinIndex:
    """Slots 0..n-1 (the nodes in their order), each fitting or not and holding a load (its pod count).

    `pick(start, enough)` answers as this walk would: look at slots start, start+1, ... (wrapping around), stop
    after the `enough`-th fitting one or once all n were seen; choose the lowest (load, index) among those found."""

    def __init__(self, n: int) -> None:
        self.n = n
        size = 1
        while size < max(n, 1):
            size *= 2
        self._size = size
        self._count = [0] * (2 * size)  # fitting slots below each tree node
        self._best: list[float] = [_NO_KEY] * (2 * size)  # lowest load * size + index below it

    def set(self, i: int, fits: bool, load: int) -> None:
        node = self._size + i
        self._count[node] = 1 if fits else 0
        self._best[node] = load * self._size + i if fits else _NO_KEY
        node //= 2
        while node:
            left, right = 2 * node, 2 * node + 1
            self._count[node] = self._count[left] + self._count[right]
            self._best[node] = min(self._best[left], self._best[right])
            node //= 2

    def fitting(self) -> int:
        return self._count[1]

    def pick(self, start: int, enough: int) -> Pick:
        n, total = self.n, self._count[1]
        if total == 0:
            return Pick(NONE, n)
        after = self._count_in(start, n)
        if after >= enough:  # the search stops before it wraps around
            last = self._kth(self._count_in(0, start) + enough)
            return Pick(self._index(self._best_in(start, last + 1)), last - start + 1)
        if total >= enough:  # it wraps around and stops at the (enough - after)-th fitting slot from 0
            last = self._kth(enough - after)
            best = min(self._best_in(start, n), self._best_in(0, last + 1))
            return Pick(self._index(best), n - start + last + 1)
        return Pick(self._index(self._best[1]), n)  # fewer than enough fit: every slot was looked at

    def _index(self, key: float) -> int:
        return int(key) % self._size

    def _count_in(self, lo: int, hi: int) -> int:
        """Fitting slots in [lo, hi)."""
        total = 0
        lo += self._size
        hi += self._size
        while lo < hi:
            if lo & 1:
                total += self._count[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                total += self._count[hi]
            lo //= 2
            hi //= 2
        return total

    def _best_in(self, lo: int, hi: int) -> float:
        """The lowest key of a fitting slot in [lo, hi)."""
        best = _NO_KEY
        lo += self._size
        hi += self._size
        while lo < hi:
            if lo & 1:
                best = min(best, self._best[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = min(best, self._best[hi])
            lo //= 2
            hi //= 2
        return best

    def _kth(self, k: int) -> int:
        """The index of the k-th fitting slot (k from 1, at most `fitting()`)."""
        node = 1
        while node < self._size:
            left = 2 * node
            if self._count[left] >= k:
                node = left
            else:
                k -= self._count[left]
                node = left + 1
        return node - self._size
