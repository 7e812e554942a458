"""The etcd client's view of an etcd cluster: one connection per member, failover between them, and what may be
retried after what.

Every call goes to one *pinned* member (the first `--etcd-servers` URL to begin with), so that the calls of one
event-loop iteration still leave in one write and share etcd's fsyncs. The pin moves to the next member when the
pinned one fails: its connection is refused or lost, it answers that it has no leader (every request carries
etcd's `hasleader` metadata, as clientv3's `WithRequireLeader`, so a member cut off from its quorum says so at once
instead of holding the call), or it stops answering. A failed member is skipped for a while (0.25 s, doubling up to
5 s) and comes back into use when the pinned one fails in turn.

A call unanswered for `STALL` has its member checked with a linearizable read (a *probe*; one at a time per member,
shared by every stalled call). This is what keeps a leader's death from costing etcd's own request timeout (5 s
plus two election timeouts, 7 s by default): a follower forwards a write to the leader, and when the leader dies the
write is simply lost, while the follower answers nothing until that timeout. The probe waits for a working leader,
so it returns as soon as a new one is elected (etcd fails pending reads with "leader changed" then); if by then the
raft term differs from the one the call was sent in, the call is abandoned and sent again. A probe that fails or
takes `PROBE_TIMEOUT` marks the member failed, and its stalled calls go elsewhere.

What is sent again here (`classify`):
- a call that certainly did not reach etcd (no connection; GOAWAY or REFUSED_STREAM naming it unprocessed) or that
  etcd refused before acting on it ("no leader", "too many requests"): always;
- a call whose outcome is unknown (the connection broke after it was sent, a stall, "request timed out"): when the
  caller says it may be (`retry_unknown`: reads, compaction). A write is not: `OutcomeUnknown` tells the caller,
  with a revision no later than the one the write would have been applied at, and `EtcdStore` reads etcd's history
  from there to learn whether it was before it sends it again. (clientv3 never sends such a write again, and
  kube-apiserver fails the request.)
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import tinykube.store.etcdpb.rpc_pb2 as rpc_pb2
from tinykube.store.errors import StoreUnavailable
from tinykube.store.grpc import Call, Channel, GrpcError, UnaryCall

log = logging.getLogger(__name__)

REQUIRE_LEADER = ((b"hasleader", b"true"),)  # etcd's rpctypes.MetadataRequireLeaderKey / MetadataHasLeader
STALL = 0.3  # seconds without an answer before the member's leader is checked
PROBE_TIMEOUT = 3.0  # a member whose check takes longer is taken as failed
FAILOVER_WAIT = 3.0  # how long after its first failure a call goes on looking for a member (an election: ~1-2 s)
DEADLINE = 10.0  # the longest a call may take, all attempts together
_RANGE = "/etcdserverpb.KV/Range"
_PROBE = rpc_pb2.RangeRequest(key=b"health", count_only=True).SerializeToString()  # what etcdctl's health reads


class OutcomeUnknown(StoreUnavailable):
    """A write was sent and its answer lost: it may or may not have been applied. `since`: a revision no later than
    the one it would have been applied at (one past the last revision any answer had shown before it was sent)."""

    def __init__(self, message: str, since: int) -> None:
        super().__init__(message)
        self.since = since


class _Reply(Protocol):
    @property
    def header(self) -> Any: ...


R = TypeVar("R", bound=_Reply)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Verdict:
    retry: bool  # another attempt may succeed
    maybe_applied: bool  # the failed attempt may have taken effect
    member_failed: bool  # prefer other members for a while


_FINAL = Verdict(False, False, False)


def classify(err: GrpcError) -> Verdict:
    """What a failed call means for a retry (etcd's codes and messages: etcdserver/api/v3rpc/rpctypes)."""
    if err.unsent:
        return Verdict(True, False, True)
    message = err.message
    if err.code == 14:  # UNAVAILABLE
        if "no leader" in message or "not capable" in message:  # refused before anything was proposed
            return Verdict(True, False, True)
        if "leader changed" in message:  # the member is fine, with a new leader
            return Verdict(True, True, False)
        return Verdict(True, True, True)  # connection lost, "request timed out", "server stopped", a stall
    if err.code == 8 and "too many requests" in message:  # RESOURCE_EXHAUSTED before proposing
        return Verdict(True, False, False)
    if err.code == 4 or (err.code in (1, 13) and "reset the stream" in message) or "malformed HTTP/2" in message:
        return Verdict(True, True, True)
    return _FINAL  # compacted, invalid request, no space, ...: the same answer again


class _Attempt:
    __slots__ = ("call", "deadline", "since", "term")

    def __init__(self, call: UnaryCall, term: int, deadline: float) -> None:
        self.call = call
        self.since = time.monotonic()
        self.term = term
        self.deadline = deadline


class Member:
    """One etcd member: its connection, the raft term last seen from it, and whether it failed lately."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        self.url = url
        self.channel = Channel(parts.hostname or "127.0.0.1", parts.port or 2379, REQUIRE_LEADER)
        self.term = 0
        self.failures = 0
        self.failed_until = 0.0
        self._inflight: dict[_Attempt, None] = {}
        self.streams: set[Call] = set()  # open streaming calls (watches), moved elsewhere when the member fails
        self._watchdog: asyncio.Task[None] | None = None
        self._probe: asyncio.Task[tuple[int, GrpcError | None]] | None = None
        self._probe_began = 0.0  # when `_probe` was sent (monotonic)

    def __repr__(self) -> str:
        return f"Member({self.url})"

    def answered(self, term: int) -> None:
        if term > self.term:
            self.term = term
        if self.failures:
            log.info("etcd member %s answers again", self.url)
            self.failures = 0
            self.failed_until = 0.0

    def failed(self, err: GrpcError) -> None:
        now = time.monotonic()
        if self.failed_until > now:
            return  # another call's news of the same failure
        if not self.failures:
            log.warning("etcd member %s failed (%s); failing over", self.url, err)
        self.failures += 1
        self.failed_until = now + min(0.25 * 2 ** (self.failures - 1), 5.0)
        if "no leader" not in err.message:
            # Unreachable or not answering: its watches would wait in silence (a leaderless member ends those
            # itself, after 3 election timeouts, and its election may be over before then).
            for call in list(self.streams):
                call.fail(GrpcError(14, f"etcd member {self.url} failed: {err.message}"))

    async def call(self, path: str, request: bytes, deadline: float) -> bytes:
        call = await self.channel.open_unary(path, request)
        attempt = _Attempt(call, self.term, deadline)
        self._inflight[attempt] = None
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch_stalls(), name=f"etcd {self.url}")
        try:
            return await call.result
        finally:
            del self._inflight[attempt]
            call.cancel()  # a no-op once answered

    async def _watch_stalls(self) -> None:
        """While calls are in flight: end those past their deadline, and check the leader for those that stall."""
        try:
            while self._inflight:
                await asyncio.sleep(STALL / 2)
                now = time.monotonic()
                stalled = []
                for attempt in list(self._inflight):
                    if now >= attempt.deadline:
                        attempt.call.fail(GrpcError(4, f"no answer from etcd at {self.url} in {DEADLINE:g} s"))
                    elif now - attempt.since >= STALL:
                        stalled.append(attempt)
                if not stalled:
                    continue
                term, error = await self.probe()
                for attempt in stalled:
                    if attempt not in self._inflight:
                        continue  # answered meanwhile
                    if error is not None:
                        attempt.call.fail(GrpcError(14, f"no answer, and {self.url} fails a read: {error.message}"))
                    elif term > attempt.term:
                        message = f"no answer while etcd's leader changed (raft term {attempt.term} -> {term})"
                        attempt.call.fail(GrpcError(14, message))
                    else:
                        attempt.since = time.monotonic()  # the leader answers: only slow; look again later
        finally:
            self._watchdog = None

    async def probe(self, since: float = 0.0) -> tuple[int, GrpcError | None]:
        """Whether this member can serve a linearizable read now (it has a leader, and the leader its quorum):
        (raft term, None), or (0, the error). A probe in flight is shared if it was sent at or after `since`
        (monotonic): one sent earlier may have been answered by a quorum that has gone since."""
        if self._probe is None or self._probe.done() or self._probe_began < since:
            self._probe_began = time.monotonic()
            self._probe = asyncio.get_running_loop().create_task(self._probe_once(), name=f"etcd probe {self.url}")
        return await asyncio.shield(self._probe)

    async def _probe_once(self) -> tuple[int, GrpcError | None]:
        try:
            reply = rpc_pb2.RangeResponse.FromString(await self.channel.unary(_RANGE, _PROBE, PROBE_TIMEOUT))
        except Exception as raised:  # a GrpcError, or a reply that does not parse
            err = raised if isinstance(raised, GrpcError) else GrpcError(13, f"bad answer to a read: {raised!r}")
            if classify(err).member_failed:
                self.failed(err)
            return 0, err
        term = int(reply.header.raft_term)
        self.answered(term)
        return term, None

    async def close(self) -> None:
        for task in (self._watchdog, self._probe):
            if task is not None:
                task.cancel()
        await self.channel.close()


class Members:
    """The members of one etcd cluster, as `--etcd-servers` lists them."""

    def __init__(self, endpoints: list[str]) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoint given")
        self.members = [Member(url) for url in endpoints]
        self.pinned = 0
        self.revision = 0  # the highest revision any answer has shown

    def _pick(self, tried: set[Member]) -> Member | None:
        """The pinned member, else the next one that has not failed lately, else the one whose pause ends first;
        never one `tried` in this round. The pin follows a failover."""
        now = time.monotonic()
        count = len(self.members)
        fresh = [m for i in range(count) if (m := self.members[(self.pinned + i) % count]) not in tried]
        for member in fresh:
            if member.failed_until <= now:
                if self.members[self.pinned].failed_until > now:
                    self.pinned = self.members.index(member)
                return member
        return min(fresh, key=lambda m: m.failed_until) if fresh else None

    def _unavailable(self, errors: dict[str, GrpcError]) -> StoreUnavailable:
        if len(self.members) == 1:
            err = next(iter(errors.values()))
            text = f"etcd: {err.name}: {err.message}"
        else:
            text = "etcd: no member could serve the request: " + "; ".join(
                f"{url}: {err.name}: {err.message}" for url, err in errors.items()
            )
        return StoreUnavailable(text)

    async def unary(
        self,
        path: str,
        request: bytes,
        parse: Callable[[bytes], R],
        *,
        retry_unknown: bool = True,
        wait: float = FAILOVER_WAIT,
    ) -> R:
        """The reply of the first member to serve the call. Raises GrpcError for an answer no retry changes
        (compacted, invalid, ...), StoreUnavailable when no member could serve it within `wait` after the first
        failure, OutcomeUnknown when an attempt whose outcome is unknown may not be sent again (`retry_unknown`)."""
        since = self.revision + 1
        deadline = time.monotonic() + DEADLINE

        async def attempt(member: Member) -> R:
            reply = parse(await member.call(path, request, deadline))
            header = reply.header
            member.answered(header.raft_term)
            if header.revision > self.revision:
                self.revision = header.revision
            return reply

        def judge(member: Member, err: GrpcError) -> None:
            verdict = classify(err)
            if not verdict.retry:
                raise err
            if verdict.member_failed:
                member.failed(err)
            if verdict.maybe_applied and not retry_unknown:
                text = self._unavailable({member.url: err}).args[0]
                raise OutcomeUnknown(f"{text} (sent, and may or may not have been applied)", since) from err

        return await self._failover(attempt, judge, wait=wait, deadline=deadline)

    async def open_stream(self, path: str, request: bytes, *, wait: float = FAILOVER_WAIT) -> tuple[Member, Call]:
        """A streaming call opened on the first member that takes it (the server's errors come while iterating)."""

        async def attempt(member: Member) -> tuple[Member, Call]:
            call = await member.channel.stream(path, request)
            member.streams.add(call)
            return member, call

        # Any error opening a stream fails the member over; `wait` counts from now, not from the first failure.
        return await self._failover(attempt, Member.failed, wait=wait, give_up=time.monotonic() + wait)

    async def _failover(
        self,
        attempt: Callable[[Member], Awaitable[T]],
        judge: Callable[[Member, GrpcError], None],
        *,
        wait: float,
        give_up: float = 0.0,
        deadline: float = math.inf,
    ) -> T:
        """The loop `unary` and `open_stream` share: `attempt` on one member after another (`_pick`), a new round
        of them after a back-off, until one succeeds. `judge` hears of each GrpcError: it raises what ends the call,
        and returns when another member may serve it. The call fails once every member has failed a round and the
        next round would start after `give_up` (0: `wait` after the first failure) or `deadline`, and once an
        attempt fails after `deadline`."""
        tried: set[Member] = set()
        errors: dict[str, GrpcError] = {}
        backoff = 0.05
        while True:
            member = self._pick(tried)
            if member is None:  # every member failed this round
                if time.monotonic() + backoff > min(give_up, deadline):
                    raise self._unavailable(errors)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 0.5)
                tried.clear()
                continue
            try:
                return await attempt(member)
            except GrpcError as err:
                give_up = give_up or time.monotonic() + wait
                errors[member.url] = err
                tried.add(member)
                judge(member, err)
                if time.monotonic() >= deadline:
                    raise self._unavailable(errors) from err

    async def healthy(self, timeout: float) -> bool:
        """Whether some member serves a linearizable read within `timeout`: then the cluster has a leader with its
        quorum, and the client a way to it. Members that answer "no leader" (an election) are asked again."""
        asked = time.monotonic()
        deadline = asked + timeout
        while True:
            probes = [asyncio.ensure_future(m.probe(since=asked)) for m in self.members]
            try:
                for done in asyncio.as_completed(probes, timeout=max(deadline - time.monotonic(), 0)):
                    _term, error = await done
                    if error is None:
                        return True
            except TimeoutError:
                return False
            finally:
                for probe in probes:
                    probe.cancel()
            if time.monotonic() + 0.1 >= deadline:
                return False
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        await asyncio.gather(*(m.close() for m in self.members))
