"""The background event recorder: the kubelet's rate (a token bucket), a bounded queue that drops, and events that
reach a real apiserver in the order they were recorded."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tinykube.api.resources import by_path
from tinykube.client.eventrecorder import COMBINED, Correlated, Correlator, EventRecorder, TokenBucket
from tinykube.client.rest import RestClient

pytestmark = pytest.mark.anyio
EVENTS = by_path("", "v1", "events")


def test_the_bucket_gives_the_burst_at_once_then_one_token_per_interval() -> None:
    bucket = TokenBucket(qps=50.0, burst=100, now=0.0)
    assert [bucket.delay(0.0) for _ in range(100)] == [0.0] * 100
    waits = [bucket.delay(0.0) for _ in range(3)]
    assert waits == pytest.approx([0.02, 0.04, 0.06])
    assert bucket.delay(10.0) == 0.0  # refilled meanwhile, never beyond the burst
    assert bucket.tokens == pytest.approx(99.0)


def test_no_rate_means_no_wait() -> None:
    bucket = TokenBucket(qps=0.0, burst=0, now=0.0)
    assert all(bucket.delay(0.0) == 0.0 for _ in range(1000))


async def test_a_full_queue_drops_further_events(client: RestClient) -> None:
    recorder = EventRecorder(client, "test", capacity=2)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    for reason in ("A", "B", "C", "D"):
        recorder.record(pod, "Normal", reason, "m")
    assert [entry[2] for entry in recorder.pending] == ["A", "B"] and recorder.dropped == 2


async def test_recorded_events_are_written_in_order(client: RestClient) -> None:
    recorder = EventRecorder(client, "recorder-test", host="node-x", qps=0.0)
    uid = "8d2f4c3e-0000-4000-8000-000000000001"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rec", "namespace": "default", "uid": uid}}
    for reason in ("Pulled", "Created", "Started"):
        recorder.record(pod, "Normal", reason, f"{reason} it")
    task = asyncio.create_task(recorder.run())
    try:
        assert EVENTS is not None
        for _ in range(500):
            found = (await client.list(EVENTS, "default", fieldSelector=f"involvedObject.uid={uid}"))["items"]
            if len(found) == 3:
                break
            await asyncio.sleep(0.01)
        found.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        assert [e["reason"] for e in found] == ["Pulled", "Created", "Started"]
        assert {e["source"]["component"] for e in found} == {"recorder-test"}
        assert {e["source"]["host"] for e in found} == {"node-x"}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}


def test_ten_messages_then_the_rest_are_combined_into_one_event() -> None:
    correlator = Correlator(Clock())
    results = [correlator.correlate("kubelet|n1", POD, "Warning", "Failed", f"try {i}") for i in range(12)]
    assert [r.message for r in results if r is not None][:10] == [f"try {i}" for i in range(10)]
    assert all(r is not None and r.series is None for r in results[:10])
    assert results[10] == Correlated("(combined from similar events): try 10", series=COMBINED)
    assert results[11] == Correlated("(combined from similar events): try 11", series=COMBINED)


def test_aggregation_starts_again_after_ten_quiet_minutes() -> None:
    clock = Clock()
    correlator = Correlator(clock)
    for i in range(11):
        correlator.correlate("c", POD, "Normal", "R", f"m{i}")
    clock.now += 601
    assert correlator.correlate("c", POD, "Normal", "R", "fresh") == Correlated("fresh")


def test_a_source_gets_25_events_per_object_then_one_per_five_minutes() -> None:
    clock = Clock()
    correlator = Correlator(clock)
    kept = [correlator.correlate("replicaset-controller|", POD, "Normal", "SuccessfulCreate", f"Created pod: p{i}")
            for i in range(40)]  # fmt: skip
    assert sum(r is not None for r in kept) == 25
    other = {**POD, "metadata": {**POD["metadata"], "name": "q", "uid": "u2"}}
    assert correlator.correlate("replicaset-controller|", other, "Normal", "SuccessfulCreate", "x") is not None
    clock.now += 300
    assert correlator.correlate("replicaset-controller|", POD, "Normal", "SuccessfulCreate", "later") is not None
    assert correlator.correlate("replicaset-controller|", POD, "Normal", "SuccessfulCreate", "again") is None
