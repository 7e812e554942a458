"""Events written in the background, as upstream's event broadcaster and correlator write them.

`record` never waits. Before an event is queued, the correlator (client-go's EventCorrelator, its defaults):
- aggregates: once 10 messages were seen for one object, type and reason within 10 minutes, every further event of
  them is one event, "(combined from similar events): <the newest message>", counted up with each;
- filters spam: each source gets 25 events per object at once, then one per 5 minutes; the rest are dropped.
A bounded queue holds what is not written yet (1,000 events; further ones are dropped, as the broadcaster drops
them), and one task writes them at the component's client rate: a token bucket of `burst` at once, then `qps` per
second (the kubelet's 50 and 100; `qps <= 0`: as fast as they come). So a burst of pods does not wait for its
events, a ReplicaSet of 10,000 pods does not write 10,000 events about itself, and the events of a thousand pods do
not compete with the pods' own writes all at once."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tinykube.client.events import record_event
from tinykube.client.rest import RestClient

log = logging.getLogger(__name__)

QUEUE_LENGTH = 1000  # the broadcaster's maxQueuedEvents
KUBELET_QPS = 50.0  # the kubelet's eventRecordQPS
KUBELET_BURST = 100  # the kubelet's eventBurst
CACHE_ENTRIES = 4096  # the correlator's LRU caches
AGGREGATE_MAX_EVENTS = 10  # similar events (another message) before they are aggregated ...
AGGREGATE_INTERVAL = 600.0  # ... within this many seconds
SPAM_BURST = 25  # events per source and object at once ...
SPAM_QPS = 1 / 300  # ... then one per 5 minutes
COMBINED = "(combined from similar events): "

Object = dict[str, Any]


class TokenBucket:
    """`burst` tokens to start with, refilled at `qps` per second (client-go's token bucket rate limiter)."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps, self.burst = qps, burst
        self.tokens, self.at = float(burst), now

    def delay(self, now: float) -> float:
        """Take a token at `now`; the seconds to wait until it is there (0 when there was one)."""
        if self.qps <= 0:
            return 0.0
        self._refill(now)
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.qps

    def try_take(self, now: float) -> bool:
        """Take a token if there is one now."""
        self._refill(now)
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def _refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.qps)
        self.at = now


class _Lru(collections.OrderedDict[str, Any]):
    def touch(self, key: str, make: Callable[[], Any]) -> Any:
        value = self.get(key)
        if value is None:
            value = self[key] = make()
            if len(self) > CACHE_ENTRIES:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return value


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(frozen=True)
class Correlated:
    """What to write for a recorded event: its message and the series its repeats share (None: the message)."""

    message: str
    series: str | None = None


class Correlator:
    """client-go's EventCorrelator, for events described by (source, object, type, reason, message)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._similar = _Lru()
        self._spam = _Lru()

    def correlate(self, source: str, obj: Object, type_: str, reason: str, message: str) -> Correlated | None:
        """The event to write, aggregated if it must be; None when the spam filter drops it."""
        now = self.clock()
        meta = obj.get("metadata") or {}
        involved = "/".join(
            str(x or "")
            for x in (obj.get("kind"), meta.get("namespace"), meta.get("name"), meta.get("uid"), obj.get("apiVersion"))
        )
        similar: _Similar = self._similar.touch(f"{source}|{involved}|{type_}|{reason}", _Similar)
        if now - similar.last > AGGREGATE_INTERVAL:
            similar.messages.clear()
        similar.last = now
        if len(similar.messages) < AGGREGATE_MAX_EVENTS:
            similar.messages.add(message)
            correlated = Correlated(message)
        else:  # ten messages seen: this one, new or not, is counted in the aggregate, as upstream's
            correlated = Correlated(COMBINED + message, series=COMBINED)
        bucket: TokenBucket = self._spam.touch(f"{source}|{involved}", lambda: TokenBucket(SPAM_QPS, SPAM_BURST, now))
        return correlated if bucket.try_take(now) else None


class EventRecorder:
    """Events of one or more components (each `record` names its own, else the recorder's), written by `run()`,
    a task of whoever owns the recorder."""

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
        self.correlator = Correlator()
        self.pending: collections.deque[tuple[Object, str, str, Correlated, str]] = collections.deque()
        self.dropped = 0
        self._wake = asyncio.Event()

    def record(self, obj: Object, type_: str, reason: str, message: str, *, component: str = "") -> None:
        """Queue an event about `obj`; dropped (and counted) as spam or when `capacity` events wait already."""
        source = component or self.component
        correlated = self.correlator.correlate(f"{source}|{self.host}", obj, type_, reason, message)
        if correlated is None or len(self.pending) >= self.capacity:
            self.dropped += 1
            log.debug("%s: event %s about %s dropped", source, reason, _name(obj))
            return
        self.pending.append((obj, type_, reason, correlated, source))
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
            obj, type_, reason, correlated, source = self.pending.popleft()
            await record_event(
                self.client,
                obj,
                type_=type_,
                reason=reason,
                message=correlated.message,
                component=source,
                host=self.host,
                series=correlated.series,
            )


def _name(obj: Object) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
