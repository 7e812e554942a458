"""Event core/v1 (stored) <-> events.k8s.io/v1, as upstream converts them (pkg/apis/events/v1/conversion.go).

Both versions are views of one internal Event, so the conversion is a renaming of fields: involvedObject <->
regarding, message <-> note, source <-> deprecatedSource, firstTimestamp/lastTimestamp/count <->
deprecatedFirstTimestamp/deprecatedLastTimestamp/deprecatedCount, reportingComponent <-> reportingController; the
rest (eventTime, series, related, action, reason, type, reportingInstance, metadata) is shared.

The result is what Go's encoder writes for the target version: a field the Go type marks `omitempty` is left out
when empty, structs and times are always written (an unset time as null), and fields neither version knows are
dropped. That makes the conversion a bijection on what either version can serve, so a round trip is the identity.
The result shares `metadata` with its input (the registry converts copies).
"""

from __future__ import annotations

from typing import Any

from tinykube.api.jsonshape import as_dict, as_int, as_str

_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_SOURCE_FIELDS = ("component", "host")
_SHARED_STRINGS = ("action", "reason", "type")  # omitempty in both versions


def _nonempty(obj: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The string fields of a struct whose JSON tags are all `omitempty`."""
    return {name: obj[name] for name in fields if as_str(obj.get(name))}


def _reference(value: Any) -> dict[str, Any]:
    return _nonempty(as_dict(value), _REFERENCE_FIELDS)


def _time(value: Any) -> str | None:
    """metav1.Time and MicroTime: a zero time is written as null."""
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int:
    return as_int(value) or 0


def _series(value: Any) -> dict[str, Any]:
    series = as_dict(value)
    out: dict[str, Any] = {}
    if _count(series.get("count")):
        out["count"] = series["count"]
    out["lastObservedTime"] = _time(series.get("lastObservedTime"))
    return out


def _shared(obj: dict[str, Any], out: dict[str, Any]) -> None:
    """The fields both versions carry under the same name, written as Go writes them."""
    out["metadata"] = obj.get("metadata", {})
    out["eventTime"] = _time(obj.get("eventTime"))
    if isinstance(obj.get("series"), dict):
        out["series"] = _series(obj["series"])
    if isinstance(obj.get("related"), dict):
        out["related"] = _reference(obj["related"])
    for name in _SHARED_STRINGS:
        if as_str(obj.get(name)):
            out[name] = obj[name]


def core_to_events(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 serves it."""
    out: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    _shared(obj, out)
    if as_str(obj.get("reportingComponent")):
        out["reportingController"] = obj["reportingComponent"]
    if as_str(obj.get("reportingInstance")):
        out["reportingInstance"] = obj["reportingInstance"]
    out["regarding"] = _reference(obj.get("involvedObject"))
    if as_str(obj.get("message")):
        out["note"] = obj["message"]
    out["deprecatedSource"] = _nonempty(as_dict(obj.get("source")), _SOURCE_FIELDS)
    out["deprecatedFirstTimestamp"] = _time(obj.get("firstTimestamp"))
    out["deprecatedLastTimestamp"] = _time(obj.get("lastTimestamp"))
    if _count(obj.get("count")):
        out["deprecatedCount"] = obj["count"]
    return out


def events_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event in the core/v1 form it is stored in."""
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    _shared(obj, out)
    out["involvedObject"] = _reference(obj.get("regarding"))
    if as_str(obj.get("note")):
        out["message"] = obj["note"]
    out["source"] = _nonempty(as_dict(obj.get("deprecatedSource")), _SOURCE_FIELDS)
    out["firstTimestamp"] = _time(obj.get("deprecatedFirstTimestamp"))
    out["lastTimestamp"] = _time(obj.get("deprecatedLastTimestamp"))
    if _count(obj.get("deprecatedCount")):
        out["count"] = obj["deprecatedCount"]
    # core/v1 writes these two even when empty (no omitempty on their JSON tags)
    out["reportingComponent"] = as_str(obj.get("reportingController"))
    out["reportingInstance"] = as_str(obj.get("reportingInstance"))
    return out
