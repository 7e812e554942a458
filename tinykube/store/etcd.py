"""An asyncio etcd v3 store over gRPC.

Requests are built directly from etcd's protobuf messages (`tinykube.store.etcdpb`) because the apiserver needs
what a convenience layer hides: the header revision of every write (it becomes the object's
resourceVersion), compare-and-swap on mod revisions, and compaction notices on watches. They travel over
`tinykube.store.grpc`, a lean HTTP/2 client, rather than grpcio: see that module for why.

Every `--etcd-servers` member is used: `tinykube.store.members` fails calls over between them. A write whose answer
was lost (the connection broke after it was sent, its leader died) is not simply sent again: etcd's history of its
key, from a revision no later than the one it would have been applied at up to a linearizable "now", says whether
it was applied (a creation holding exactly the value written, an update of the expected revision to it, a deletion
of the expected revision). If it was, that change is the answer; if not, it is sent again, guarded by the same
compares. So a write is never applied twice, and never reported failed (AlreadyExists, a conflict with itself)
because its first attempt succeeded. When the history cannot tell (compacted away, or etcd unreachable for
FAILOVER_WAIT), StoreUnavailable says the outcome is unknown, as upstream reports an ambiguous etcd write.
Watches resume on another member from the revision after the last one delivered, so no event is lost or repeated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import tinykube.store.etcdpb.kv_pb2 as kv_pb2
import tinykube.store.etcdpb.rpc_pb2 as rpc_pb2
from tinykube.store.errors import (
    Compacted,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StoreUnavailable,
)
from tinykube.store.grpc import Call, GrpcError
from tinykube.store.members import FAILOVER_WAIT, Members, OutcomeUnknown, classify

_WATCH = "/etcdserverpb.Watch/Watch"
_WRITE_ATTEMPTS = 3  # a write whose outcome was unknown, found not applied, is sent again at most this often
_HISTORY_LIMIT = 2048  # revisions read to learn whether a write whose answer was lost was applied
_PROGRESS_REQUEST = rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest()).SerializeToString()
UNSYNCED_WATCH_GRACE = 0.3  # seconds: three rounds of etcd's watch sync loop


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[KeyValue]
    revision: int
    more: bool
    count: int = 0  # keys in the whole range from `start` on, whatever the limit (etcd's RangeResponse.count)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: Literal["PUT", "DELETE"]
    key: str
    value: bytes  # empty for DELETE
    revision: int
    prev_value: bytes | None


@dataclass(frozen=True, slots=True)
class Change:
    """What happened to one key at `revision`: its state (an etcd KeyValue, or None) before and after."""

    before: Any
    after: Any
    revision: int

    def put(self, value: bytes) -> bool:
        """Written, to `value`, at this revision."""
        return self.after is not None and self.after.mod_revision == self.revision and self.after.value == value

    def deleted(self) -> bool:
        return self.before is not None and self.after is None


@dataclass(frozen=True, slots=True)
class Progress:
    """etcd's word, on a watch, that every change under its prefix up to `revision` has been sent."""

    revision: int


@dataclass(frozen=True, slots=True)
class Claims:
    """Keys written in the same transaction as an object: `take` must be absent and is created, `release` is
    deleted. The apiserver's allocators use them so an address and the object holding it commit together."""

    take: dict[str, bytes] = field(default_factory=dict)
    release: tuple[str, ...] = ()


NO_CLAIMS = Claims()


def prefix_end(prefix: bytes) -> bytes:
    """The exclusive end of the key range that holds every key starting with `prefix`."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


class EtcdStore:
    """Keys are relative to `prefix` (default `/registry/`), exactly as upstream lays out `/registry/<resource>/…`."""

    def __init__(self, endpoints: list[str], prefix: str = "/registry/") -> None:
        self.endpoints = endpoints
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self._members = Members(endpoints)
        self._watches: dict[str, Call] = {}  # open watches by prefix, for progress requests

    async def connect(self) -> None:
        """Fail now (StoreUnavailable) rather than at the first request when no member can be reached (each is
        tried once)."""
        request = rpc_pb2.RangeRequest(key=self._key(""), limit=1, count_only=True)
        await self._call("/etcdserverpb.KV/Range", request, rpc_pb2.RangeResponse, wait=0)

    async def healthy(self, timeout: float = 2.0) -> bool:
        """Whether the cluster serves a linearizable read through some member within `timeout` (a leader with its
        quorum): the apiserver's /readyz etcd check."""
        return await self._members.healthy(timeout)

    async def close(self) -> None:
        await self._members.close()

    def _key(self, key: str) -> bytes:
        return (self.prefix + key).encode()

    def _unkey(self, raw: bytes) -> str:
        return raw.decode()[len(self.prefix) :]

    async def _call(
        self, method: str, request: Any, reply: Any, *, retry_unknown: bool = True, wait: float = FAILOVER_WAIT
    ) -> Any:
        try:
            return await self._members.unary(
                method, request.SerializeToString(), reply.FromString, retry_unknown=retry_unknown, wait=wait
            )
        except GrpcError as err:
            if err.name == "OUT_OF_RANGE" and "compacted" in err.message:
                raise Compacted(0) from err  # a read at a revision etcd has compacted away
            raise StoreUnavailable(f"etcd: {err.name}: {err.message}") from err

    def _kv(self, kv: Any) -> KeyValue:
        return KeyValue(self._unkey(kv.key), kv.value, kv.mod_revision, kv.create_revision)

    async def _range(self, request: Any) -> Any:
        return await self._call("/etcdserverpb.KV/Range", request, rpc_pb2.RangeResponse)

    async def _write(
        self, key: str, compare: list[Any], success: list[Any], failure: list[Any], ours: Callable[[Change], bool]
    ) -> tuple[Any, Change | None, bool]:
        """A guarded transaction on `key`: (its response, None, whether it was sent more than once), or (None, the
        change an attempt whose answer was lost made, True) when `ours` recognises it in etcd's history."""
        request = rpc_pb2.TxnRequest(compare=compare, success=success, failure=failure)
        since = 0
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                response = await self._call("/etcdserverpb.KV/Txn", request, rpc_pb2.TxnResponse, retry_unknown=False)
                return response, None, attempt > 0
            except OutcomeUnknown as unknown:
                since = min(since or unknown.since, unknown.since)
                change = await self._find_change(key, since, ours, unknown)
                if change is not None:
                    return None, change, True
        raise StoreUnavailable(f"etcd: writing {key} failed {_WRITE_ATTEMPTS} times with its outcome unknown")

    async def _find_change(
        self, key: str, since: int, ours: Callable[[Change], bool], unknown: OutcomeUnknown
    ) -> Change | None:
        """The first change of `key` at a revision from `since` to a linearizable now that `ours` recognises, or
        None. etcd's history, read as the key's state at each of those revisions (ranges at past revisions, 128 to
        a read-only transaction): a watch would replay the changes, but etcd 3.4 reports a watch's progress before
        it has replayed them, so it cannot say when it has all been seen."""
        cannot_tell = f"etcd: the outcome of writing {key} is unknown ({unknown})"
        try:
            now = await self.revision()  # after the failure: whatever was committed before it is history by now
            first = max(since - 1, 1)
            if now - first >= _HISTORY_LIMIT:
                raise StoreUnavailable(f"more than {_HISTORY_LIMIT} revisions to read")
            previous: Any = None
            for start in range(first, now + 1, 128):
                revisions = range(start, min(start + 128, now + 1))
                ops = [
                    rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=self._key(key), revision=r))
                    for r in revisions
                ]
                reply = await self._call("/etcdserverpb.KV/Txn", rpc_pb2.TxnRequest(success=ops), rpc_pb2.TxnResponse)
                for revision, result in zip(revisions, reply.responses, strict=True):
                    kvs = result.response_range.kvs
                    current = kvs[0] if kvs else None
                    if revision >= since and ours(Change(previous, current, revision)):
                        return Change(previous, current, revision)
                    previous = current
        except Compacted:
            raise StoreUnavailable(f"{cannot_tell}; its history is compacted away") from None
        except StoreUnavailable as err:
            raise StoreUnavailable(f"{cannot_tell}; {err}") from err
        return None

    async def get(self, key: str) -> KeyValue | None:
        response = await self._range(rpc_pb2.RangeRequest(key=self._key(key)))
        return self._kv(response.kvs[0]) if response.kvs else None

    async def scan(self, prefix: str, *, start: str = "", limit: int = 0, revision: int = 0) -> ListResult:
        """Keys under `prefix` from `start` on (inclusive), at `revision` (0: the latest)."""
        full = self._key(prefix)
        request = rpc_pb2.RangeRequest(
            key=self._key(start) if start else full, range_end=prefix_end(full), limit=limit, revision=revision
        )
        response = await self._range(request)
        return ListResult(
            [self._kv(kv) for kv in response.kvs], response.header.revision, response.more, response.count
        )

    async def revision(self) -> int:
        response = await self._range(rpc_pb2.RangeRequest(key=self._key(""), limit=1, count_only=True))
        return int(response.header.revision)

    def _compare_mod(self, key: str, revision: int) -> Any:
        return rpc_pb2.Compare(
            key=self._key(key), target=rpc_pb2.Compare.MOD, result=rpc_pb2.Compare.EQUAL, mod_revision=revision
        )

    def _compare_exists(self, key: str, exists: bool) -> Any:
        result = rpc_pb2.Compare.GREATER if exists else rpc_pb2.Compare.EQUAL
        return rpc_pb2.Compare(key=self._key(key), target=rpc_pb2.Compare.VERSION, result=result, version=0)

    def _put(self, key: str, value: bytes, lease: int = 0) -> Any:
        return rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=self._key(key), value=value, lease=lease))

    def _get_op(self, key: str) -> Any:
        return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=self._key(key)))

    def _claim_ops(self, claims: Claims) -> tuple[list[Any], list[Any]]:
        compares = [self._compare_exists(key, False) for key in claims.take]
        ops = [self._put(key, value) for key, value in claims.take.items()]
        ops += [self._delete_op(key) for key in claims.release]
        return compares, ops

    def _delete_op(self, key: str, prev_kv: bool = False) -> Any:
        return rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=self._key(key), prev_kv=prev_kv))

    async def create(self, key: str, value: bytes, claims: Claims = NO_CLAIMS, *, lease: int = 0) -> int:
        """Write `key` (and `claims`) only if it and every claimed key are absent; returns the new revision. With a
        `lease` (from `grant_lease`), etcd deletes the key when the lease expires."""
        compares, ops = self._claim_ops(claims)
        response, lost, retried = await self._write(
            key,
            [self._compare_exists(key, False), *compares],
            [self._put(key, value, lease), *ops],
            [self._get_op(k) for k in (key, *claims.take)],
            lambda c: c.put(value) and c.after.version == 1,  # created, to exactly this
        )
        if lost is not None:
            return lost.revision
        if not response.succeeded:
            found = response.responses[0].response_range.kvs
            if retried and found and found[0].value == value and found[0].version == 1:
                return int(found[0].mod_revision)  # the lost attempt, applied after its history was read
            for k, result in zip((key, *claims.take), response.responses, strict=True):
                if result.response_range.kvs:
                    raise KeyExists(k)
            raise KeyExists(key)  # it was there at compare time and went away since
        return int(response.header.revision)

    async def update(
        self, key: str, value: bytes, *, expected_revision: int | None, claims: Claims = NO_CLAIMS, lease: int = 0
    ) -> int:
        """Overwrite an existing key, only at `expected_revision` when given; returns the new revision. The key
        takes `lease` (0: none), as a put does."""
        compares, ops = self._claim_ops(claims)

        def ours(change: Change) -> bool:
            before = change.before
            expected = expected_revision is None or (before is not None and before.mod_revision == expected_revision)
            return change.put(value) and expected

        response, lost, retried = await self._write(
            key,
            [self._guard(key, expected_revision), *compares],
            [self._put(key, value, lease), *ops],
            [self._get_op(k) for k in (key, *claims.take)],
            ours,
        )
        if lost is not None:
            return lost.revision
        if not response.succeeded:
            found = response.responses[0].response_range.kvs
            if retried and expected_revision is not None and found and found[0].value == value:
                return int(found[0].mod_revision)  # the lost attempt, applied after its history was read
            self._raise_failed(key, expected_revision, claims, response)
        return int(response.header.revision)

    async def delete(
        self, key: str, *, expected_revision: int | None = None, claims: Claims = NO_CLAIMS
    ) -> tuple[bytes, int]:
        """Delete a key (only at `expected_revision` when given), releasing `claims.release` in the same
        transaction; returns its last value and the new revision."""
        _, ops = self._claim_ops(Claims(release=claims.release))

        def ours(change: Change) -> bool:
            before = change.before
            return change.deleted() and (expected_revision is None or before.mod_revision == expected_revision)

        response, lost, retried = await self._write(
            key,
            [self._guard(key, expected_revision)],
            [self._delete_op(key, prev_kv=True), *ops],
            [self._get_op(key)],
            ours,
        )
        if lost is not None:
            return lost.before.value, lost.revision
        if not response.succeeded:
            if retried and not response.responses[0].response_range.kvs:
                # Gone since its history was read: by the lost attempt, applied late, or by someone else?
                raise StoreUnavailable(f"etcd: the outcome of deleting {key} is unknown: the connection failed")
            self._raise_failed(key, expected_revision, NO_CLAIMS, response)
        prev = response.responses[0].response_delete_range.prev_kvs
        return (prev[0].value if prev else b""), int(response.header.revision)

    def _guard(self, key: str, expected_revision: int | None) -> Any:
        if expected_revision is not None:
            return self._compare_mod(key, expected_revision)
        return self._compare_exists(key, True)

    @staticmethod
    def _raise_failed(key: str, expected_revision: int | None, claims: Claims, response: Any) -> None:
        found = response.responses[0].response_range.kvs
        if not found:
            raise KeyNotFound(key)
        if expected_revision is not None and found[0].mod_revision != expected_revision:
            raise RevisionConflict(key)
        for k, result in zip(claims.take, response.responses[1:], strict=True):
            if result.response_range.kvs:
                raise KeyExists(k)
        raise RevisionConflict(key)  # something changed between the compare and the read: the caller retries

    async def grant_lease(self, ttl: int) -> int:
        """A new etcd lease of `ttl` seconds; its keys go when it expires (nothing keeps it alive)."""
        response = await self._call(
            "/etcdserverpb.Lease/LeaseGrant", rpc_pb2.LeaseGrantRequest(TTL=ttl), rpc_pb2.LeaseGrantResponse
        )
        return int(response.ID)

    async def compact(self, revision: int) -> None:
        await self._call(
            "/etcdserverpb.KV/Compact", rpc_pb2.CompactionRequest(revision=revision), rpc_pb2.CompactionResponse
        )

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent] | Progress]:
        """Batches of events under `prefix` from `start_revision` (inclusive), one batch per etcd response, and a
        `Progress` after each `request_progress(prefix)`. When its member fails (or loses its leader: etcd then
        cancels watches that require one), the watch goes on on another member from the revision after the last one
        delivered: etcd never splits one revision's events over two responses, so nothing is lost or repeated.
        Raises StoreUnavailable once no member could take it for FAILOVER_WAIT."""
        full = self._key(prefix)
        parse = rpc_pb2.WatchResponse.FromString
        next_revision = start_revision
        failing_since = 0.0  # when the watch last failed without delivering anything since
        backoff = 0.05
        while True:
            create = rpc_pb2.WatchCreateRequest(
                key=full, range_end=prefix_end(full), start_revision=next_revision, prev_kv=True
            )
            request = rpc_pb2.WatchRequest(create_request=create).SerializeToString()
            member, call = await self._members.open_stream(_WATCH, request)
            self._watches[prefix] = call
            reports_from = 0.0  # progress reports are trusted from this time on (see below)
            try:
                async for message in call:
                    response = parse(message)
                    if response.compact_revision:
                        raise Compacted(response.compact_revision)
                    if response.canceled:
                        raise StoreUnavailable(f"etcd cancelled the watch: {response.cancel_reason}")
                    failing_since, backoff = 0.0, 0.05
                    member.answered(response.header.raft_term)
                    if response.events:
                        next_revision = response.events[-1].kv.mod_revision + 1
                        yield [self._event(e) for e in response.events]
                    elif response.created:
                        # A watch that starts in the past replays it from etcd's sync loop (every 100 ms), and
                        # etcd before 3.4.25/3.5.8 answers a progress request at once all the same (etcd#15220):
                        # its reports are not trusted until the replay has had time to be sent.
                        if response.header.revision >= next_revision:
                            reports_from = time.monotonic() + UNSYNCED_WATCH_GRACE
                    elif time.monotonic() >= reports_from:
                        yield Progress(int(response.header.revision))
                    else:  # asked too early: ask again once the replay has been sent
                        delay = reports_from - time.monotonic()
                        asyncio.get_running_loop().call_later(delay, call.send, _PROGRESS_REQUEST)
                error = GrpcError(14, "etcd ended the watch")
            except GrpcError as err:
                error = err
            finally:
                call.cancel()
                member.streams.discard(call)
                if self._watches.get(prefix) is call:
                    del self._watches[prefix]
            verdict = classify(error)
            if not verdict.retry:
                raise StoreUnavailable(f"etcd watch: {error.name}: {error.message}") from error
            if verdict.member_failed:
                member.failed(error)
            now = time.monotonic()
            if failing_since:  # failed again at once: not a member's death but a cluster in trouble
                if now - failing_since > FAILOVER_WAIT:
                    raise StoreUnavailable(f"etcd watch: {error.name}: {error.message}") from error
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 0.5)
            else:
                failing_since = now

    def request_progress(self, prefix: str) -> None:
        """Ask the watch on `prefix` (if one is open) for a `Progress`: the way to learn that nothing under it
        changed up to etcd's current revision, which events alone never tell."""
        call = self._watches.get(prefix)
        if call is not None:
            call.send(_PROGRESS_REQUEST)

    def _event(self, event: Any) -> WatchEvent:
        kind: Literal["PUT", "DELETE"] = "DELETE" if event.type == kv_pb2.Event.DELETE else "PUT"
        prev = event.prev_kv.value if event.HasField("prev_kv") else None
        return WatchEvent(kind, self._unkey(event.kv.key), event.kv.value, event.kv.mod_revision, prev)
