"""Events written in the background, as upstream's event broadcaster writes them: `record` never waits, a bounded
queue holds what is not written yet (further events are dropped when it is full, as upstream's broadcaster drops
them), and one task writes them at the component's client rate (a token bucket: `burst` at once, then `qps` per
second; the kubelet's defaults are 50 and 100). So a burst of pods does not wait for its events, and the events of
a thousand pods do not compete with the pods' own writes all at once."""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from tinykube.client.events import record_event
from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)

QUEUE_LENGTH = 1000  # upstream's maxQueuedEvents
KUBELET_QPS = 50.0  # the kubelet's eventRecordQPS
KUBELET_BURST = 100  # the kubelet's eventBurst


class TokenBucket:
    """`burst` tokens to start with, refilled at `qps` per second (client-go's token bucket rate limiter)."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps, self.burst = qps, burst
        self.tokens, self.at = float(burst), now

    def delay(self, now: float) -> float:
        """Take a token at `now`; the seconds to wait until it is there (0 when there was one)."""
        if self.qps <= 0:
            return 0.0
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.qps)
        self.at = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.qps


class EventRecorder:
    """One component's events, written by `run()` (a task of whoever owns the recorder); `qps <= 0` writes them
    as fast as they come."""

    def __init__(
        self,
        client: RestClient,
        component: str,
        *,
        host: str = "",
        qps: float = KUBELET_QPS,
        burst: int = KUBELET_BURST,
        capacity: int = QUEUE_LENGTH,
    ) -> None:
        self.client, self.component, self.host = client, component, host
        self.qps, self.burst, self.capacity = qps, burst, capacity
        self.pending: collections.deque[tuple[dict[str, Any], str, str, str]] = collections.deque()
        self.dropped = 0
        self._wake = asyncio.Event()

    def record(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """Queue an event about `obj`; dropped (and counted) when `capacity` events wait already."""
        if len(self.pending) >= self.capacity:
            self.dropped += 1
            log.debug("%s: event %s about %s dropped: %d queued", self.component, reason, _name(obj), self.capacity)
            return
        self.pending.append((obj, type_, reason, message))
        self._wake.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        bucket = TokenBucket(self.qps, self.burst, loop.time())
        while True:
            if not self.pending:
                self._wake.clear()
                await self._wake.wait()
                continue
            wait = bucket.delay(loop.time())
            if wait > 0:
                await asyncio.sleep(wait)
            obj, type_, reason, message = self.pending.popleft()
            await record_event(
                self.client, obj, type_=type_, reason=reason, message=message, component=self.component, host=self.host
            )


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
