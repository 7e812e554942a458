"""Event core/v1 <-> events.k8s.io/v1: the field renaming of upstream's conversion, the JSON shape Go writes for
each version, and round trips in both directions over generated Events."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tinykube.api.conversion import CONVERSIONS
from tinykube.api.conversion.events import core_to_events, events_to_core

REFERENCE = {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u-1", "apiVersion": "v1"}
META = {"name": "web-0.17c", "namespace": "default", "resourceVersion": "42"}

CORE = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": META,
    "involvedObject": {**REFERENCE, "fieldPath": "spec.containers{app}"},
    "reason": "Pulled",
    "message": "Container image pulled",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2024-05-01T12:00:00Z",
    "lastTimestamp": "2024-05-01T12:05:00Z",
    "count": 3,
    "type": "Normal",
    "eventTime": None,
    "reportingComponent": "kubelet",
    "reportingInstance": "node-1",
}

EVENTS = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": META,
    "eventTime": None,
    "reason": "Pulled",
    "type": "Normal",
    "reportingController": "kubelet",
    "reportingInstance": "node-1",
    "regarding": {**REFERENCE, "fieldPath": "spec.containers{app}"},
    "note": "Container image pulled",
    "deprecatedSource": {"component": "kubelet", "host": "node-1"},
    "deprecatedFirstTimestamp": "2024-05-01T12:00:00Z",
    "deprecatedLastTimestamp": "2024-05-01T12:05:00Z",
    "deprecatedCount": 3,
}


def test_core_event_as_events_k8s_io() -> None:
    assert core_to_events(CORE) == EVENTS


def test_events_k8s_io_event_as_stored() -> None:
    assert events_to_core(EVENTS) == CORE


def test_new_style_event_with_series_and_related() -> None:
    series = {"count": 2, "lastObservedTime": "2024-05-01T12:05:00.123456Z"}
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": META,
        "eventTime": "2024-05-01T12:00:00.000001Z",
        "series": series,
        "reportingController": "example.com/scheduler",
        "reportingInstance": "scheduler-1",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": REFERENCE,
        "related": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
        "note": "assigned",
        "type": "Normal",
    }
    core = events_to_core(event)
    assert (core["eventTime"], core["series"], core["action"]) == (event["eventTime"], series, "Binding")
    assert (core["reportingComponent"], core["related"]) == ("example.com/scheduler", event["related"])
    assert (core["source"], core["firstTimestamp"], core["lastTimestamp"]) == ({}, None, None)
    assert "count" not in core
    assert core_to_events(core) == {
        **event,
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def test_empty_values_written_as_go_writes_them() -> None:
    """omitempty strings and counts are left out; structs and times are always there."""
    bare = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "", "count": 0, "extra": 1}
    assert core_to_events(bare) == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "eventTime": None,
        "regarding": {},
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }
    assert events_to_core({"metadata": {"name": "e"}, "regarding": {"kind": "", "name": "p"}}) == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "eventTime": None,
        "involvedObject": {"name": "p"},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }


def test_registered_as_the_events_k8s_io_view() -> None:
    view = CONVERSIONS[("events.k8s.io/v1", "Event")]
    assert (view.to_view, view.to_storage) == (core_to_events, events_to_core)


# ---- round trips over generated Events ---------------------------------------------------------------------------

TEXT = st.text(min_size=1, max_size=12)
TIMES = st.none() | st.sampled_from(["2024-05-01T12:00:00Z", "2030-01-02T03:04:05Z"])
MICRO_TIMES = st.none() | st.sampled_from(["2024-05-01T12:00:00.000001Z", "2024-05-01T12:00:00.500000Z"])
COUNTS = st.integers(min_value=1, max_value=2**31 - 1)


def _optional(keys: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of some of `keys`: what Go writes for a struct whose fields are all omitempty."""
    return st.fixed_dictionaries({}, optional=dict.fromkeys(keys, values))


REFERENCES = _optional(["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"], TEXT)
SOURCES = _optional(["component", "host"], TEXT)
SERIES = st.fixed_dictionaries({"lastObservedTime": MICRO_TIMES}, optional={"count": COUNTS})
SHARED_OPTIONAL = {"series": SERIES, "related": REFERENCES, "action": TEXT, "reason": TEXT, "type": TEXT}


@st.composite
def core_events(draw: st.DrawFn) -> dict[str, Any]:
    """core/v1 Events as Go serializes them."""
    required = {
        "apiVersion": st.just("v1"),
        "kind": st.just("Event"),
        "metadata": st.just(META),
        "involvedObject": REFERENCES,
        "source": SOURCES,
        "firstTimestamp": TIMES,
        "lastTimestamp": TIMES,
        "eventTime": MICRO_TIMES,
        "reportingComponent": st.text(max_size=8),
        "reportingInstance": st.text(max_size=8),
    }
    optional = {**SHARED_OPTIONAL, "message": TEXT, "count": COUNTS}
    event: dict[str, Any] = draw(st.fixed_dictionaries(required, optional=optional))
    return event


@st.composite
def events_events(draw: st.DrawFn) -> dict[str, Any]:
    """events.k8s.io/v1 Events as Go serializes them."""
    required = {
        "apiVersion": st.just("events.k8s.io/v1"),
        "kind": st.just("Event"),
        "metadata": st.just(META),
        "eventTime": MICRO_TIMES,
        "regarding": REFERENCES,
        "deprecatedSource": SOURCES,
        "deprecatedFirstTimestamp": TIMES,
        "deprecatedLastTimestamp": TIMES,
    }
    optional = {
        **SHARED_OPTIONAL,
        "reportingController": TEXT,
        "reportingInstance": TEXT,
        "note": TEXT,
        "deprecatedCount": COUNTS,
    }
    event: dict[str, Any] = draw(st.fixed_dictionaries(required, optional=optional))
    return event


@given(core_events())
def test_round_trip_from_storage(event: dict[str, Any]) -> None:
    assert events_to_core(core_to_events(event)) == event


@given(events_events())
def test_round_trip_from_events_k8s_io(event: dict[str, Any]) -> None:
    assert core_to_events(events_to_core(event)) == event


@given(core_events())
def test_every_stored_field_has_its_events_k8s_io_name(event: dict[str, Any]) -> None:
    view = core_to_events(event)
    assert view["regarding"] == event["involvedObject"]
    assert view.get("note") == event.get("message")
    assert view["deprecatedSource"] == event["source"]
    assert view.get("deprecatedCount") == event.get("count")
    assert view.get("reportingController") == (event["reportingComponent"] or None)
