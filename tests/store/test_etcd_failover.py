"""The etcd client against a real 3-member etcd cluster (three etcd processes on 127.0.0.1): it uses every member,
fails over when one dies, rides out a leader's death without etcd's request timeout, resumes watches on another
member without losing or repeating an event, and reports the cluster's health rather than one member's. Then the
retry policy where an answer is lost after the request reached etcd: a guarded write is applied once and reported
as done, and what cannot be told is reported as unknown.

Set-up waits are generous (the machine is shared); the assertions on behaviour are tight: etcd's own request
timeout here is 5 s + 2 election timeouts (6 s), and the old client, connected to the first member only, failed
every call while that member was down.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tinykube.store.errors import StoreError, StoreUnavailable
from tinykube.store.etcd import EtcdStore, WatchEvent
from tinykube.store.grpc import GrpcError
from tinykube.store.launcher import EtcdCluster, EtcdMember, find_etcd
from tinykube.store.members import PROBE_TIMEOUT, classify

FAILOVER_BOUND = 3.0  # seconds: a dead member's replacement, an election of 0.5-1 s and the client's retries


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EtcdCluster]:
    etcd = EtcdCluster(find_etcd(), tmp_path / "etcd", 3)
    try:
        etcd.start(timeout=60)
        yield etcd
    finally:
        etcd.stop()


def kill(member: EtcdMember) -> None:
    assert member.proc is not None
    member.proc.kill()
    member.proc.wait()


def prefix() -> str:
    return f"/test-{secrets.token_hex(4)}/"


def test_writes_go_on_when_the_first_member_dies(cluster: EtcdCluster) -> None:
    async def scenario() -> None:
        store = EtcdStore(cluster.urls, prefix())
        try:
            await store.create("a", b"1")
            kill(cluster.members[0])
            began = time.monotonic()
            await store.create("b", b"2")
            assert time.monotonic() - began < FAILOVER_BOUND
            for i in range(20):  # and the ones after it, with no error
                await store.create(f"c{i}", b"3")
            assert [kv.key for kv in (await store.scan("")).items][:2] == ["a", "b"]
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_leader_death_costs_no_request_timeout(cluster: EtcdCluster) -> None:
    """Pinned to a follower, whose writes the leader commits: when the leader dies, the writes it had been
    forwarded are lost, and etcd would answer them only after its request timeout."""
    leader = cluster.leader()
    assert leader is not None
    followers = [m for m in cluster.members if m is not leader]

    async def scenario() -> tuple[float, float, list[str], int]:
        store = EtcdStore([followers[0].url, leader.url, followers[1].url], prefix())
        done: list[float] = []
        errors: list[str] = []
        slowest = 0.0
        stop = asyncio.Event()

        async def writer(w: int) -> None:
            nonlocal slowest
            i = 0
            while not stop.is_set():
                i += 1
                sent = time.monotonic()
                try:
                    await store.create(f"w{w}/{i}", b"x")
                    done.append(time.monotonic())
                except StoreError as err:
                    errors.append(str(err))
                slowest = max(slowest, time.monotonic() - sent)

        try:
            await store.connect()
            writers = [asyncio.create_task(writer(w)) for w in range(8)]
            await asyncio.sleep(1)
            await asyncio.to_thread(kill, leader)
            killed = time.monotonic()
            await asyncio.sleep(4)
            stop.set()
            await asyncio.gather(*writers)
            times = [*sorted(done), time.monotonic()]
            gap = max(b - max(a, killed) for a, b in itertools.pairwise(times) if b > killed)
            return gap, slowest, errors, len((await store.scan("")).items) - len(done)
        finally:
            await store.close()

    gap, slowest, errors, unacknowledged = asyncio.run(scenario())
    assert errors == []
    assert unacknowledged == 0  # every key in etcd was acknowledged, each once
    assert gap < FAILOVER_BOUND, f"writes stopped for {gap:.2f} s"
    assert slowest < FAILOVER_BOUND, f"a write took {slowest:.2f} s"


def test_a_watch_resumes_on_another_member_without_losing_or_repeating_events(cluster: EtcdCluster) -> None:
    count = 200
    keys = prefix()

    async def scenario() -> list[WatchEvent]:
        watching = EtcdStore(cluster.urls, keys)  # its watch is on the first member
        writing = EtcdStore(cluster.urls[1:], keys)  # writes that never depend on the first member
        seen: list[WatchEvent] = []
        try:
            start = await writing.revision()

            async def watch() -> None:
                async for batch in watching.watch("w/", start + 1):
                    if not isinstance(batch, list):
                        continue
                    seen.extend(batch)
                    if len(seen) >= count:
                        return

            watcher = asyncio.create_task(watch())
            for i in range(count):
                if i == count // 2:
                    kill(cluster.members[0])
                await writing.create(f"w/{i:04d}", str(i).encode())
            await asyncio.wait_for(watcher, 30)
            assert watching._members.pinned != 0  # the watch moved
            return seen
        finally:
            await watching.close()
            await writing.close()

    seen = asyncio.run(scenario())
    assert [e.key for e in seen] == [f"w/{i:04d}" for i in range(count)]
    revisions = [e.revision for e in seen]
    assert revisions == sorted(set(revisions))


def test_a_member_that_stops_answering_is_left_and_so_are_its_watches(cluster: EtcdCluster) -> None:
    """SIGSTOP: no refused or broken connection, just silence. The stalled call's check of its member times out
    (PROBE_TIMEOUT), the call goes elsewhere, and the watch on that member moves too."""
    stopped = cluster.members[0]
    assert stopped.proc is not None

    async def scenario() -> float:
        store = EtcdStore(cluster.urls, prefix())
        try:
            start = await store.create("before", b"1")
            watch = store.watch("", start)
            first = await anext(watch)
            assert isinstance(first, list) and [e.key for e in first] == ["before"]  # on the first member
            os.kill(stopped.proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
            began = time.monotonic()
            await store.create("after", b"2")
            took = time.monotonic() - began
            batch = await asyncio.wait_for(anext(watch), 10)
            assert isinstance(batch, list) and [e.key for e in batch] == ["after"]
            await watch.aclose()
            return took
        finally:
            os.kill(stopped.proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
            await store.close()

    took = asyncio.run(scenario())
    assert took < PROBE_TIMEOUT + FAILOVER_BOUND


def test_health_is_the_cluster_s_not_the_first_member_s(cluster: EtcdCluster) -> None:
    async def scenario() -> None:
        store = EtcdStore(cluster.urls, prefix())
        try:
            assert await store.healthy(10)
            kill(cluster.members[0])
            assert await store.healthy(10)  # two of three: a quorum
            kill(cluster.members[1])
            began = time.monotonic()
            assert not await store.healthy(2)  # one of three: none
            assert time.monotonic() - began < 4
            with pytest.raises(StoreUnavailable):
                await store.create("x", b"1")
        finally:
            await store.close()

    asyncio.run(scenario())


# ---- answers lost after the request reached etcd (one member is enough) -------------------------------------


def lose_the_next_answer(store: EtcdStore) -> None:
    """The connection breaks when the next call's answer arrives: the request was applied, the client cannot know."""
    protocol = store._members.members[0].channel._protocol
    assert protocol is not None and protocol.transport is not None
    frame_received = protocol._frame_received

    def dropped(kind: int, flags: int, stream: int, payload: bytes) -> None:
        if stream == 0:
            frame_received(kind, flags, stream, payload)
            return
        assert protocol.transport is not None
        protocol.transport.abort()
        protocol._frame_received = lambda *_: None  # type: ignore[method-assign]

    protocol._frame_received = dropped  # type: ignore[method-assign,assignment]


def run(etcd: str, scenario: object) -> None:
    async def main() -> None:
        store = EtcdStore([etcd], prefix())
        try:
            await store.connect()
            await scenario(store)  # type: ignore[operator]
        finally:
            await store.close()

    asyncio.run(main())


def test_a_create_whose_answer_is_lost_is_applied_once_and_reported_done(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        before = await store.revision()
        lose_the_next_answer(store)
        revision = await store.create("lost", b"value")  # not KeyExists: the key holds exactly what was written
        kv = await store.get("lost")
        assert kv is not None and kv.value == b"value" and kv.mod_revision == revision == before + 1
        assert await store.revision() == before + 1  # applied once

    run(etcd, scenario)


def test_an_update_whose_answer_is_lost_is_applied_once_and_reported_done(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        first = await store.create("updated", b"1")
        lose_the_next_answer(store)
        revision = await store.update("updated", b"2", expected_revision=first)  # not a conflict with itself
        kv = await store.get("updated")
        assert kv is not None and kv.value == b"2" and kv.mod_revision == revision == first + 1
        assert await store.revision() == first + 1

    run(etcd, scenario)


def test_a_create_applied_then_deleted_by_someone_else_is_not_made_again(etcd: str) -> None:
    """The case a compare alone cannot tell: the lost attempt created the key, someone deleted it, and the key is
    absent again when the create would be sent again. etcd's history says it was applied: no second creation."""

    async def scenario(store: EtcdStore) -> None:
        other = EtcdStore([etcd], store.prefix)
        find_change = store._find_change

        async def deleted_first(*args: Any) -> Any:
            await other.delete("doomed")  # before the history is read, as a quick controller might
            return await find_change(*args)

        store._find_change = deleted_first  # type: ignore[method-assign]
        try:
            before = await store.revision()
            lose_the_next_answer(store)
            assert await store.create("doomed", b"1") == before + 1
            assert await store.get("doomed") is None  # not created again
            assert await store.revision() == before + 2  # the create and the delete, nothing else
        finally:
            await other.close()

    run(etcd, scenario)


def test_a_delete_and_an_unconditional_update_whose_answers_are_lost_are_applied_once(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        first = await store.create("gone", b"last")
        lose_the_next_answer(store)
        assert await store.delete("gone", expected_revision=first) == (b"last", first + 1)  # its value, as told
        assert await store.get("gone") is None
        second = await store.create("overwritten", b"1")
        lose_the_next_answer(store)
        assert await store.update("overwritten", b"2", expected_revision=None) == second + 1
        assert await store.revision() == second + 1  # written once

    run(etcd, scenario)


def test_a_write_whose_history_is_gone_is_reported_unknown(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        await store.create("old", b"1")
        await store.compact(await store.revision())
        store._members.revision = 1  # as if no answer had shown a revision since: its history is compacted away
        lose_the_next_answer(store)
        with pytest.raises(StoreUnavailable, match="outcome of writing new is unknown"):
            await store.create("new", b"1")

    run(etcd, scenario)


@pytest.mark.parametrize(
    ("error", "retry", "maybe_applied", "member_failed"),
    [
        pytest.param(GrpcError(14, "cannot connect", unsent=True), True, False, True, id="unsent"),
        pytest.param(GrpcError(14, "etcdserver: no leader"), True, False, True, id="no-leader"),
        pytest.param(GrpcError(14, "etcdserver: leader changed"), True, True, False, id="leader-changed"),
        pytest.param(GrpcError(14, "connection to etcd lost: reset"), True, True, True, id="connection-lost"),
        pytest.param(GrpcError(14, "etcdserver: request timed out"), True, True, True, id="timed-out"),
        pytest.param(GrpcError(8, "etcdserver: too many requests"), True, False, False, id="too-many"),
        pytest.param(GrpcError(8, "etcdserver: mvcc: database space exceeded"), False, False, False, id="no-space"),
        pytest.param(GrpcError(11, "etcdserver: mvcc: required revision has been compacted"), False, False, False),
        pytest.param(GrpcError(3, "etcdserver: too many operations in txn request"), False, False, False),
    ],
)
def test_what_is_retried(error: GrpcError, retry: bool, maybe_applied: bool, member_failed: bool) -> None:
    verdict = classify(error)
    assert (verdict.retry, verdict.maybe_applied, verdict.member_failed) == (retry, maybe_applied, member_failed)
