"""Formatting helpers the printers share: upstream's ages (``duration.HumanDuration``), label maps and selectors,
quantities, and the reading of an object's metadata.

Objects are plain JSON dicts in their v1 wire form; a field that holds something else reads as its empty value, as
a count that is not an integer reads as 0 (``int_or_zero``): a printer prints what is there and never fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tinykube.api.errors import ApiError
from tinykube.api.jsonshape import as_dict, as_list, as_str
from tinykube.api.meta import parse_time
from tinykube.api.quantity import QuantityError, parse_quantity
from tinykube.api.selectors import selector_from_label_selector

# ---------------------------------------------------------------------------------------------
# Durations and timestamps
# ---------------------------------------------------------------------------------------------

_NS_PER_SECOND = 1_000_000_000
_NS_PER_MINUTE = 60 * _NS_PER_SECOND
_NS_PER_HOUR = 60 * _NS_PER_MINUTE


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: a succinct duration with ~2-3 significant figures.

    Up to 2 seconds in the future counts as "now" ("0s", tolerating clock skew); further in
    the future is ``<invalid>``. Then: seconds below 2 minutes, ``XmYs`` below 10 minutes,
    minutes below 3 hours, ``XhYm`` below 8 hours, hours below 2 days, ``XdYh`` below 8 days,
    days below 2 years, ``XyYd`` below 8 years, then years. Zero remainders are dropped.
    """
    ns = round(seconds * _NS_PER_SECOND)
    whole_seconds = int(ns / _NS_PER_SECOND)  # Go's int(d.Seconds()) truncates toward zero
    if whole_seconds < -1:
        return "<invalid>"
    if whole_seconds < 0:
        return "0s"
    if whole_seconds < 60 * 2:
        return f"{whole_seconds}s"
    minutes = ns // _NS_PER_MINUTE
    if minutes < 10:
        s = (ns // _NS_PER_SECOND) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // _NS_PER_HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for an unset time, else its human age."""
    when = parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


# ---------------------------------------------------------------------------------------------
# Reading objects
# ---------------------------------------------------------------------------------------------


def int_or_zero(value: Any) -> int:
    """An integer field, 0 when unset or not an integer (a bool is not one), as Go's zero value prints."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def meta_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return as_dict(obj.get("metadata"))


def name_of(obj: Mapping[str, Any]) -> str:
    return as_str(meta_of(obj).get("name"))


def age(obj: Mapping[str, Any], now: datetime) -> str:
    return since(meta_of(obj).get("creationTimestamp"), now)


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, or ``<none>``."""
    pairs = as_dict(labels)
    if not pairs:
        return "<none>"
    return ",".join(f"{key}={pairs[key]}" for key in sorted(pairs))


def join_host_port(host: str, port: int) -> str:
    """``net.JoinHostPort``: brackets around hosts containing a colon (IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# Upstream's formatters (formatEndpoints, formatDiscoveryPorts ...) list at most three items, then "+ N more...".
MAX_LISTED = 3


def list_with_more(items: list[str], count: int, limit: int, empty: str) -> str:
    text = ",".join(items)
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or empty


def label_selector_text(selector: Any) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()`` (set values sorted, as upstream prints them), or
    ``<invalid>`` when it does not parse."""
    if not isinstance(selector, dict):
        return ""  # a nil selector selects nothing and prints as nothing
    exprs = [
        {**e, "values": sorted(e.get("values") or [])} if isinstance(e, dict) else e
        for e in as_list(selector.get("matchExpressions"))
    ]
    try:
        return str(selector_from_label_selector({**selector, "matchExpressions": exprs}))
    except ApiError:
        return "<invalid>"


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: the selector's text, ``<none>`` when it is empty or nil, ``<error>`` when it
    does not parse."""
    text = label_selector_text(selector)
    return "<error>" if text == "<invalid>" else text or "<none>"


def quantity_text(raw: Any) -> str:
    """`Quantity.String()` of a stored quantity: the zero quantity ("0") when there is none."""
    try:
        return str(parse_quantity(raw))
    except QuantityError:
        return str(raw)
