"""What one client may cost the DNS server when it sends what cannot be answered.

A packet that fails to parse (too short, a response, a query we cannot read) is charged to its source address in a
token bucket: `MALFORMED_RATE` per second, up to `MALFORMED_BURST` at once. While a source's bucket is empty, its
packets that miss the response cache are dropped before they are parsed, without a reply (knot's RRL module,
where configured, limits per source too, answering what is over truncated or not at all). Well-formed queries cost
nothing here, so a client that never sends garbage never meets the limit; cache hits are answered for everyone.
CoreDNS has no such limit (it parses everything, in Go); tinykube's parsing is Python, and a bound per source keeps
one client's garbage from taking the event loop that answers everyone else.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MALFORMED_RATE = 100.0  # packets per second per source address, refilled continuously
MALFORMED_BURST = 200  # packets a source may send at once before the rate applies
MAX_SOURCES = 16384  # buckets kept; past it the ones full again are forgotten, then all of them


class SourceLimiter:
    """A token bucket per source address, kept only for sources that have been charged."""

    def __init__(
        self,
        rate: float = MALFORMED_RATE,
        burst: int = MALFORMED_BURST,
        *,
        max_sources: int = MAX_SOURCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.max_sources = max_sources
        self.clock = clock
        self._buckets: dict[str, list[float]] = {}  # source -> [tokens, when last refilled]

    def __len__(self) -> int:
        return len(self._buckets)

    def _tokens(self, bucket: list[float], now: float) -> float:
        tokens = min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)
        bucket[0], bucket[1] = tokens, now
        return tokens

    def blocked(self, source: str) -> bool:
        """Whether `source` is over its limit now (then its packet is dropped unparsed)."""
        bucket = self._buckets.get(source)
        if bucket is None:
            return False  # the common case: a source that never sent garbage, one dict lookup
        tokens = self._tokens(bucket, self.clock())
        if tokens >= 1:
            if tokens >= self.burst:
                del self._buckets[source]  # full again: nothing to remember
            return False
        return True

    def charge(self, source: str) -> bool:
        """Charge one malformed packet to `source`; False if it was over the limit (drop it, do not answer)."""
        now = self.clock()
        bucket = self._buckets.get(source)
        if bucket is None:
            if len(self._buckets) >= self.max_sources:
                self._forget(now)
            bucket = self._buckets[source] = [self.burst, now]
        if self._tokens(bucket, now) < 1:
            return False
        bucket[0] -= 1
        return True

    def _forget(self, now: float) -> None:
        """Drop the buckets that are full again; if that frees less than a quarter of the table, all of them (so a
        scan comes at most once per `max_sources / 4` new sources). A flood from that many addresses is charged
        afresh: this bounds the table, not the work, which each packet's bounded parse does."""
        full = [source for source, bucket in self._buckets.items() if self._tokens(bucket, now) >= self.burst]
        for source in full:
            del self._buckets[source]
        if len(self._buckets) > self.max_sources * 3 // 4:
            self._buckets.clear()
