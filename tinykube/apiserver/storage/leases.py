"""etcd leases for objects that expire (Events, `--event-ttl`), shared as upstream's lease manager shares them.

A lease per write would cost etcd a lease object per Event; instead writes in a short window share one, granted
for the TTL plus the window (5 % of the TTL, at most 60 s): an object lives between its TTL and TTL + window.
"""

from __future__ import annotations

import asyncio
import math
import time

from tinykube.store.etcd import EtcdStore

REUSE_FRACTION = 0.05
MAX_REUSE_SECONDS = 60.0


class LeaseReuse:
    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        self.lease = 0
        self.expires = 0.0  # monotonic time at which `lease` runs out
        self.lock = asyncio.Lock()

    async def lease_for(self, ttl: float) -> int:
        """A lease with at least `ttl` seconds left."""
        async with self.lock:
            now = time.monotonic()
            if self.lease and self.expires - now >= ttl:
                return self.lease
            granted = math.ceil(ttl + min(ttl * REUSE_FRACTION, MAX_REUSE_SECONDS))
            self.lease = await self.store.grant_lease(granted)
            self.expires = now + granted
            return self.lease
