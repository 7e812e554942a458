"""An asyncio etcd v3 store over gRPC.

Requests are built directly from etcd's protobuf messages (the generated modules come with `aetcd`) because the
apiserver needs what a convenience layer hides: the header revision of every write (it becomes the object's
resourceVersion), compare-and-swap on mod revisions, and compaction notices on watches. They travel over
`tinykube.store.grpc`, a lean HTTP/2 client, rather than grpcio: see that module for why.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

# The message modules import grpcio (unused here); the netns runtime forks, and gRPC's fork handlers only log.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from aetcd.rpc import kv_pb2, rpc_pb2

from tinykube.store.errors import (
    Compacted,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StoreUnavailable,
)
from tinykube.store.grpc import Call, Channel, GrpcError

_TIMEOUT = 10.0
_PROGRESS_REQUEST = rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest()).SerializeToString()


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


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: Literal["PUT", "DELETE"]
    key: str
    value: bytes  # empty for DELETE
    revision: int
    prev_value: bytes | None


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
        url = urlsplit(endpoints[0] if "//" in endpoints[0] else f"http://{endpoints[0]}")
        self.endpoints = endpoints
        self.prefix = prefix if prefix.endswith("/") else prefix + "/"
        self._channel = Channel(url.hostname or "127.0.0.1", url.port or 2379)
        self._watches: dict[str, Call] = {}  # open watches by prefix, for progress requests

    async def connect(self) -> None:
        """Fail now (StoreUnavailable) rather than at the first request when etcd cannot be reached."""
        await self.revision()

    async def close(self) -> None:
        await self._channel.close()

    def _key(self, key: str) -> bytes:
        return (self.prefix + key).encode()

    def _unkey(self, raw: bytes) -> str:
        return raw.decode()[len(self.prefix) :]

    async def _call(self, method: str, request: Any, reply: Any) -> Any:
        try:
            return reply.FromString(await self._channel.unary(method, request.SerializeToString(), _TIMEOUT))
        except GrpcError as err:
            if err.name == "OUT_OF_RANGE" and "compacted" in err.message:
                raise Compacted(0) from err  # a read at a revision etcd has compacted away
            raise StoreUnavailable(f"etcd: {err.name}: {err.message}") from err

    def _kv(self, kv: Any) -> KeyValue:
        return KeyValue(self._unkey(kv.key), kv.value, kv.mod_revision, kv.create_revision)

    async def _range(self, request: Any) -> Any:
        return await self._call("/etcdserverpb.KV/Range", request, rpc_pb2.RangeResponse)

    async def _txn(self, compare: list[Any], success: list[Any], failure: list[Any] | None = None) -> Any:
        request = rpc_pb2.TxnRequest(compare=compare, success=success, failure=failure or [])
        return await self._call("/etcdserverpb.KV/Txn", request, rpc_pb2.TxnResponse)

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
        return ListResult([self._kv(kv) for kv in response.kvs], response.header.revision, response.more)

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

    def _put(self, key: str, value: bytes) -> Any:
        return rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=self._key(key), value=value))

    def _get_op(self, key: str) -> Any:
        return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=self._key(key)))

    def _claim_ops(self, claims: Claims) -> tuple[list[Any], list[Any]]:
        compares = [self._compare_exists(key, False) for key in claims.take]
        ops = [self._put(key, value) for key, value in claims.take.items()]
        ops += [self._delete_op(key) for key in claims.release]
        return compares, ops

    def _delete_op(self, key: str, prev_kv: bool = False) -> Any:
        return rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=self._key(key), prev_kv=prev_kv))

    async def create(self, key: str, value: bytes, claims: Claims = NO_CLAIMS) -> int:
        """Write `key` (and `claims`) only if it and every claimed key are absent; returns the new revision."""
        compares, ops = self._claim_ops(claims)
        response = await self._txn(
            [self._compare_exists(key, False), *compares],
            [self._put(key, value), *ops],
            [self._get_op(k) for k in (key, *claims.take)],
        )
        if not response.succeeded:
            for k, result in zip((key, *claims.take), response.responses, strict=True):
                if result.response_range.kvs:
                    raise KeyExists(k)
            raise KeyExists(key)  # it was there at compare time and went away since
        return int(response.header.revision)

    async def update(self, key: str, value: bytes, *, expected_revision: int | None, claims: Claims = NO_CLAIMS) -> int:
        """Overwrite an existing key, only at `expected_revision` when given; returns the new revision."""
        compares, ops = self._claim_ops(claims)
        response = await self._txn(
            [self._guard(key, expected_revision), *compares],
            [self._put(key, value), *ops],
            [self._get_op(k) for k in (key, *claims.take)],
        )
        if not response.succeeded:
            self._raise_failed(key, expected_revision, claims, response)
        return int(response.header.revision)

    async def delete(
        self, key: str, *, expected_revision: int | None = None, claims: Claims = NO_CLAIMS
    ) -> tuple[bytes, int]:
        """Delete a key (only at `expected_revision` when given), releasing `claims.release` in the same
        transaction; returns its last value and the new revision."""
        _, ops = self._claim_ops(Claims(release=claims.release))
        response = await self._txn(
            [self._guard(key, expected_revision)], [self._delete_op(key, prev_kv=True), *ops], [self._get_op(key)]
        )
        if not response.succeeded:
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

    async def compact(self, revision: int) -> None:
        await self._call(
            "/etcdserverpb.KV/Compact", rpc_pb2.CompactionRequest(revision=revision), rpc_pb2.CompactionResponse
        )

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[WatchEvent] | Progress]:
        """Batches of events under `prefix` from `start_revision` (inclusive), one batch per etcd response, and a
        `Progress` after each `request_progress(prefix)`."""
        full = self._key(prefix)
        create = rpc_pb2.WatchCreateRequest(
            key=full, range_end=prefix_end(full), start_revision=start_revision, prev_kv=True
        )
        request = rpc_pb2.WatchRequest(create_request=create).SerializeToString()
        parse = rpc_pb2.WatchResponse.FromString
        call: Call | None = None
        try:
            call = await self._channel.stream("/etcdserverpb.Watch/Watch", request)
            self._watches[prefix] = call
            async for message in call:
                response = parse(message)
                if response.compact_revision:
                    raise Compacted(response.compact_revision)
                if response.canceled:
                    raise StoreUnavailable(f"etcd cancelled the watch: {response.cancel_reason}")
                if response.events:
                    yield [self._event(e) for e in response.events]
                elif not response.created:
                    yield Progress(int(response.header.revision))
        except GrpcError as err:
            raise StoreUnavailable(f"etcd watch: {err.name}: {err.message}") from err
        finally:
            if call is not None and self._watches.get(prefix) is call:
                del self._watches[prefix]
        raise StoreUnavailable("etcd ended the watch")

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
