"""The etcd store against a real etcd: CAS semantics, revisions, watches and compaction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tinykube.store.errors import Compacted, KeyExists, KeyNotFound, RevisionConflict, StoreUnavailable
from tinykube.store.etcd import Claims, EtcdStore, Progress, prefix_end
from tinykube.store.launcher import find_etcd, free_port


def run(etcd: str, scenario: object) -> None:
    async def main() -> None:
        store = EtcdStore([etcd], prefix="/test-" + str(id(scenario)) + "/")
        try:
            await scenario(store)  # type: ignore[operator]
        finally:
            await store.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        pytest.param(b"/a/", b"/a0", id="slash"),
        pytest.param(b"a\xff", b"b", id="carry"),
        pytest.param(b"\xff", b"\0", id="all-ones"),
    ],
)
def test_prefix_end(prefix: bytes, end: bytes) -> None:
    assert prefix_end(prefix) == end


def test_create_is_conditioned_on_absence(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        revision = await store.create("things/a", b"1")
        with pytest.raises(KeyExists):
            await store.create("things/a", b"2")
        kv = await store.get("things/a")
        assert kv is not None and kv.value == b"1" and kv.mod_revision == revision

    run(etcd, scenario)


def test_update_and_delete_are_conditioned_on_mod_revision(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        first = await store.create("things/b", b"1")
        second = await store.update("things/b", b"2", expected_revision=first)
        assert second > first
        with pytest.raises(RevisionConflict):
            await store.update("things/b", b"stale", expected_revision=first)
        with pytest.raises(RevisionConflict):
            await store.delete("things/b", expected_revision=first)
        kv = await store.get("things/b")
        assert kv is not None and kv.value == b"2"
        value, _ = await store.delete("things/b", expected_revision=second)
        assert value == b"2"
        with pytest.raises(KeyNotFound):
            await store.update("things/b", b"3", expected_revision=None)
        with pytest.raises(KeyNotFound):
            await store.delete("things/b")

    run(etcd, scenario)


def test_list_pages_and_reads_the_past(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        for i in range(5):
            await store.create(f"list/{i}", str(i).encode())
        snapshot = await store.revision()
        await store.delete("list/0")
        page = await store.scan("list/", limit=2)
        assert [kv.key for kv in page.items] == ["list/1", "list/2"] and page.more
        past = await store.scan("list/", revision=snapshot)
        assert [kv.value for kv in past.items] == [b"0", b"1", b"2", b"3", b"4"]
        rest = await store.scan("list/", start="list/3")
        assert [kv.key for kv in rest.items] == ["list/3", "list/4"]

    run(etcd, scenario)


def test_values_larger_than_the_http2_windows_go_both_ways(etcd: str) -> None:
    """A restart of a cluster with 100,000 pods reads ~80 MB in one response: more than gRPC's 4 MiB default
    message limit and the client's 16 MiB receive window. Each 1 MB write is larger than etcd's 64 KiB stream
    window, so the client must wait for its window updates."""

    async def scenario(store: EtcdStore) -> None:
        values = [bytes([65 + i % 26]) * 1_000_000 for i in range(20)]  # 20 MB in all
        await asyncio.gather(*(store.create(f"big/{i:03d}", value) for i, value in enumerate(values)))
        found = await store.scan("big/")
        assert [kv.value for kv in found.items] == values

    run(etcd, scenario)


def test_an_unreachable_etcd_is_unavailable_not_a_hang() -> None:
    async def scenario(store: EtcdStore) -> None:
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            await store.connect()

    run(f"http://127.0.0.1:{free_port()}", scenario)


def test_a_dropped_connection_resumes_the_watch_and_the_next_call_reconnects(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        start = await store.create("drop/a", b"1")
        watch = store.watch("drop/", start)
        assert [e.value for e in await anext(watch)] == [b"1"]
        protocol = store._members.members[0].channel._protocol
        assert protocol is not None and protocol.transport is not None
        protocol.transport.abort()  # as when etcd goes away
        await store.create("drop/b", b"2")  # over a new connection
        assert [kv.value for kv in (await store.scan("drop/")).items] == [b"1", b"2"]
        # The watch went on from the revision after its last event: the next one, once.
        assert [e.value for e in await asyncio.wait_for(anext(watch), 10)] == [b"2"]
        await watch.aclose()

    run(etcd, scenario)


def test_watch_streams_changes_with_previous_values(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        start = await store.revision()
        revision = await store.create("watched/x", b"1")
        await store.update("watched/x", b"2", expected_revision=revision)
        await store.delete("watched/x")
        seen = []
        async for batch in store.watch("watched/", start + 1):
            seen += [(e.type, e.value, e.prev_value) for e in batch]
            if len(seen) == 3:
                break
        assert seen == [("PUT", b"1", None), ("PUT", b"2", b"1"), ("DELETE", b"", b"2")]

    run(etcd, scenario)


def test_compacted_revisions_are_reported(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        old = await store.create("compact/a", b"1")
        await store.update("compact/a", b"2", expected_revision=old)
        current = await store.revision()
        await store.compact(current)
        with pytest.raises(Compacted):
            await store.scan("compact/", revision=old)
        with pytest.raises(Compacted):
            async for _batch in store.watch("compact/", old):
                pass

    run(etcd, scenario)


def test_launcher_prefers_a_native_system_etcd() -> None:
    binary = find_etcd()
    assert binary.path and binary.version
    if Path("/usr/bin/etcd").exists():
        assert binary.source == "system" and binary.path == "/usr/bin/etcd"


def test_claims_commit_with_the_object_or_not_at_all(etcd: str) -> None:
    async def scenario(store: EtcdStore) -> None:
        await store.create("claims/b", b"held")
        with pytest.raises(KeyExists) as caught:
            await store.create("objects/x", b"x", Claims({"claims/a": b"x", "claims/b": b"x"}))
        assert caught.value.key == "claims/b"  # says which claim someone else holds
        assert await store.get("objects/x") is None and await store.get("claims/a") is None
        revision = await store.create("objects/x", b"x", Claims({"claims/a": b"x"}))
        claimed = await store.get("claims/a")
        assert claimed is not None and claimed.mod_revision == revision

        with pytest.raises(KeyExists) as caught:
            await store.update("objects/x", b"y", expected_revision=revision, claims=Claims({"claims/b": b"x"}))
        assert caught.value.key == "claims/b"
        with pytest.raises(RevisionConflict):
            await store.update("objects/x", b"y", expected_revision=revision - 1, claims=Claims({"claims/c": b"x"}))
        assert await store.get("claims/c") is None
        revision = await store.update(
            "objects/x", b"y", expected_revision=revision, claims=Claims({"claims/c": b"x"}, release=("claims/a",))
        )
        assert await store.get("claims/a") is None and await store.get("claims/c") is not None

        await store.delete("objects/x", expected_revision=revision, claims=Claims(release=("claims/c", "claims/zz")))
        assert await store.get("claims/c") is None and await store.get("objects/x") is None

    run(etcd, scenario)


def test_a_progress_request_reports_the_current_revision_on_a_quiet_prefix(etcd: str) -> None:
    """Nothing changes under `quiet/`; a write elsewhere moves etcd on, and only a progress report says so."""

    async def scenario(store: EtcdStore) -> None:
        start = await store.revision()
        watch = store.watch("quiet/", start + 1)
        first = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0.1)  # the watch is open
        elsewhere = await store.create("busy/x", b"1")
        store.request_progress("quiet/")
        progress = await asyncio.wait_for(first, 5)
        assert isinstance(progress, Progress) and progress.revision >= elsewhere
        await watch.aclose()

    run(etcd, scenario)


def test_a_connection_out_of_stream_ids_is_replaced_and_its_watch_goes_on(etcd: str) -> None:
    """HTTP/2 stream ids are 31 bits: after ~1e9 calls new ones go over a fresh connection, while calls still open
    on the old one (a watch) keep it."""

    async def scenario(store: EtcdStore) -> None:
        start = await store.revision()
        watch = store.watch("ids/", start + 1)
        first = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0.1)  # the watch is open
        old = store._members.members[0].channel._protocol
        assert old is not None
        old.next_id = (1 << 31) - 1  # as if a billion calls had been made
        await store.create("ids/a", b"1")  # over a new connection
        assert store._members.members[0].channel._protocol is not old and old.closed is None
        batch = await asyncio.wait_for(first, 5)
        assert [e.value for e in batch] == [b"1"]  # the watch on the old connection saw it
        await watch.aclose()

    run(etcd, scenario)
