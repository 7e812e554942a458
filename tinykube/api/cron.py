"""Cron schedules as upstream's parser (robfig/cron v3) reads them: what it refuses, with its messages, and the
expression the CronJob controller evaluates. Both the apiserver (validation) and the controller need it."""

from __future__ import annotations

import re
import zoneinfo


class _Bounds:
    """One cron field as robfig/cron parses it: its range and the names it accepts."""

    def __init__(self, low: int, high: int, names: tuple[str, ...] = ()) -> None:
        self.low, self.high = low, high
        self.names = {name: i + (1 if low == 1 else 0) for i, name in enumerate(names)}


_FIELDS = (
    _Bounds(0, 59),
    _Bounds(0, 23),
    _Bounds(1, 31),
    _Bounds(1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    _Bounds(0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
# robfig's descriptors and the schedules they stand for (the CronJob controller evaluates these)
DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_GO_DURATION = re.compile(r"(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_INT64_MAX = 2**63 - 1


class ScheduleError(ValueError):
    """A schedule robfig/cron (upstream's parser) refuses; the message is robfig's."""


def _atoi(text: str) -> int:
    """strconv.Atoi, with robfig's wording around its errors."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if abs(number) > _GO_INT64_MAX:
        raise ScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, bounds: _Bounds) -> int:
    return bounds.names[text.lower()] if text.lower() in bounds.names else _atoi(text)


def _check_range(expr: str, bounds: _Bounds) -> str:
    """robfig's getRange for one comma-separated part; returns the part as croniter spells it."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    if low_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_high[0], bounds)
        if len(low_high) > 2:
            raise ScheduleError(f"too many hyphens: {expr}")
        end = _int_or_name(low_high[1], bounds) if len(low_high) == 2 else start
    step = 1
    if len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return f"{start}-{end}/{step}"


def _check_descriptor(spec: str) -> None:
    if spec in DESCRIPTORS:
        return
    if spec.startswith("@every "):
        _check_go_duration(spec, spec[len("@every ") :])
        return
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def _check_go_duration(spec: str, text: str) -> None:
    """time.ParseDuration's acceptance (a robfig `@every` interval)."""
    if text in ("0", "+0", "-0"):
        return
    body = text.lstrip("+-")
    if not body:
        raise ScheduleError(f'failed to parse duration {spec}: time: invalid duration "{text}"')
    position = 0
    while position < len(body):
        match = _GO_DURATION.match(body, position)
        if match is None:
            unit = re.match(r"[-+]?(\d+(\.\d*)?|\.\d+)([^\d.]*)", body[position:])
            if unit and unit.group(3):
                reason = f'unknown unit "{unit.group(3)}" in duration "{text}"'
            elif unit:
                reason = f'missing unit in duration "{text}"'
            else:
                reason = f'invalid duration "{text}"'
            raise ScheduleError(f"failed to parse duration {spec}: time: {reason}")
        position = match.end()


def check_schedule(schedule: str) -> tuple[str, str]:
    """Refuse what upstream's cron parser (robfig/cron v3, standard five fields plus descriptors and a leading
    `TZ=`/`CRON_TZ=`) refuses, with its messages; then have croniter parse the fields. Returns the schedule's
    location ("" when none) and its expression as the CronJob controller evaluates it: five fields as croniter
    spells them, or a descriptor (`@daily`, `@every 1h30m`).

    croniter is the well-kept parser, but it accepts more than robfig (a day-of-week 7, `L`, `W`, `#`, six or seven
    fields, reversed ranges), so robfig's rules are checked first, field by field, and croniter is given the
    normalized ranges."""
    spec, location = schedule, ""
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        end = space if space >= 0 else len(spec)
        location = spec[spec.index("=") + 1 : end]
        if load_location_error(location):
            raise ScheduleError(f"provided bad location {location}: {load_location_error(location)}")
        spec = spec[end:].strip()
    if spec.startswith("@"):
        _check_descriptor(spec)
        return location, spec
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    # robfig splits a field on commas and drops empty parts
    normalized = [",".join(_check_range(p, b) for p in f.split(",") if p) for f, b in zip(fields, _FIELDS, strict=True)]
    try:
        from croniter import croniter  # type: ignore[import-untyped]  # no stubs; imported on use: less at start-up

        croniter.expand(" ".join(normalized))
    except (ValueError, KeyError) as err:
        raise ScheduleError(str(err)) from None
    return location, " ".join(normalized)


def load_location_error(name: str) -> str:
    """time.LoadLocation's error for a zone name, or "" when the tz database knows it."""
    if name in ("", "UTC"):
        return ""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
    return ""
