"""What Go's standard library says about a value, where upstream's messages quote it.

kube-apiserver decodes a body with Go's `encoding/json` (through sigs.k8s.io/json), parses times with `time.Parse`
and bytes with `encoding/base64`, and prints values with `fmt`'s `%v`; its messages are made of their words. These
are small ports of the parts that reach a client: the JSON type names and number literals of `UnmarshalTypeError`,
`%v` of a decoded JSON value, `strconv`'s shortest float formats, the offset `base64.CorruptInputError` reports, and
`time.Parse`'s `ParseError` for the RFC 3339 layouts metav1's `Time` and `MicroTime` use. Pure functions, no I/O.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

# ---- encoding/json ------------------------------------------------------------------------------------------------


def json_type(value: Any) -> str:
    """The JSON type name `encoding/json` uses in "cannot unmarshal X into ..." errors."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "null"


def _digits(x: float) -> tuple[str, int]:
    """The shortest decimal digits that round-trip `x` (> 0), and where the decimal point goes (`strconv`'s `dp`)."""
    _, digits, exponent = decimal.Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    return text, len(text) + exponent


def _format_e(digits: str, dp: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp = dp - 1
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _format_f(digits: str, dp: int) -> str:
    if dp <= 0:
        return "0." + "0" * -dp + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _special(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return "0" if x == 0 else None


def format_float(x: float) -> str:
    """`fmt`'s `%v` of a float64: `strconv.FormatFloat(x, 'g', -1, 64)`, exponent form past 1e+06 or below 1e-04."""
    special = _special(x)
    if special is not None:
        return special
    digits, dp = _digits(abs(x))
    sign = "-" if x < 0 else ""
    return sign + (_format_e(digits, dp) if not -4 <= dp - 1 < 6 else _format_f(digits, dp))


def json_float(x: float) -> str:
    """How `encoding/json` writes a float64: shortest digits, exponent form below 1e-6 or from 1e21 (`e-7`, `e+21`)."""
    special = _special(x)
    if special is not None:
        return special
    digits, dp = _digits(abs(x))
    sign = "-" if x < 0 else ""
    if abs(x) < 1e-6 or abs(x) >= 1e21:
        text = _format_e(digits, dp)
        return sign + (text[:-2] + text[-1] if text[-4:-1] == "e-0" else text)
    return sign + _format_f(digits, dp)


def format_value(value: Any) -> str:
    """`fmt`'s `%v` (and `%+v`) of a decoded JSON value: `map[k:v ...]` with sorted keys, `[a b]`, `<nil>`."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{format_value(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(format_value(item) for item in value) + "]"
    return str(value)


# ---- encoding/base64 ----------------------------------------------------------------------------------------------

_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")


def base64_error(text: str) -> int | None:
    """Where Go's `base64.StdEncoding` (which JSON `[]byte` uses) finds `text` corrupt: the offset its
    `CorruptInputError` reports, or None when it decodes. Newlines are skipped, padding is required."""
    src = text.encode("utf-8", "surrogatepass")
    at, end = 0, len(src)
    while at < end:
        at, error = _base64_quantum(src, at)
        if error is not None:
            return error
    return None


def _base64_quantum(src: bytes, at: int) -> tuple[int, int | None]:
    """One four-character quantum of Go's `decodeQuantum`: (where the next one starts, error offset or None). Valid
    padding ends the input."""
    count = 0
    while count < 4:
        if at == len(src):
            return at, None if count == 0 else at - count
        byte = src[at]
        at += 1
        if byte == ord("="):
            return len(src), _padding_error(src, at, count)
        if byte in _BASE64:
            count += 1
        elif byte not in _NEWLINES:
            return at, at - 1
    return at, None


def _padding_error(src: bytes, at: int, count: int) -> int | None:
    """After a '=' that ends a quantum of `count` characters: one more '=' (after two) and newlines may follow."""
    if count < 2:
        return at - 1
    if count == 2:
        at = _skip_newlines(src, at)
        if at == len(src):
            return at
        if src[at] != ord("="):
            return at - 1
        at += 1
    at = _skip_newlines(src, at)
    return at if at < len(src) else None


def _skip_newlines(src: bytes, at: int) -> int:
    while at < len(src) and src[at] in _NEWLINES:
        at += 1
    return at


# ---- time.Parse ---------------------------------------------------------------------------------------------------

RFC3339 = "2006-01-02T15:04:05Z07:00"  # metav1.Time
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"  # metav1.MicroTime

# The layouts as `nextStdChunk` splits them: (literal prefix, element). "" ends the layout.
_CHUNKS = {
    RFC3339: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00")),
    RFC3339_MICRO: (
        ("", "2006"),
        ("-", "01"),
        ("-", "02"),
        ("T", "15"),
        (":", "04"),
        (":", "05"),
        ("", ".000000"),
        ("", "Z07:00"),
    ),
}


def _quote(text: bytes) -> str:
    """The time package's `quote`: non-ASCII and control bytes as `\\xNN`, `"` and `\\` escaped."""
    out = ['"']
    for byte in text:
        if byte >= 0x80 or byte < 0x20:
            out.append(f"\\x{byte:02x}")
        else:
            out.append(("\\" if byte in b'"\\' else "") + chr(byte))
    return "".join(out) + '"'


class _Bad(Exception):
    """`errBad`: the element does not parse where it stands."""


class _OutOfRange(Exception):
    """A `rangeErrString`: the element parsed but its value is out of range."""


def _getnum(value: bytes, fixed: bool) -> tuple[int, bytes]:
    if not value[:1].isdigit():
        raise _Bad
    if not value[1:2].isdigit():
        if fixed:
            raise _Bad
        return value[0] - 48, value[1:]
    return (value[0] - 48) * 10 + value[1] - 48, value[2:]


def _skip(value: bytes, prefix: str) -> bytes:
    for char in prefix.encode():
        if not value or value[0] != char:
            raise _Bad(value)
        value = value[1:]
    return value


@dataclass(slots=True)
class _Clock:
    year: int = 0
    month: int = 0
    day: int = 0


def _fraction(value: bytes, width: int) -> bytes:
    """`parseNanoseconds`: a period or comma, then digits (the whole `width`, sign-free)."""
    if value[:1] not in (b".", b","):
        raise _Bad
    digits = value[1:width]
    if not digits or not digits.isdigit():
        raise _Bad
    return value[width:]


def _zone(value: bytes) -> bytes:
    """`Z`, or `±hh:mm` (a range error is reported before a malformed sign, as Go checks them in that order)."""
    if value[:1] == b"Z":
        return value[1:]
    if len(value) < 6 or value[3:4] != b":":
        raise _Bad
    try:
        hours, _ = _getnum(value[1:3], True)
        minutes, _ = _getnum(value[4:6], True)
    except _Bad:
        hours = minutes = -1
    if hours > 24:
        raise _OutOfRange("time zone offset hour")
    if minutes > 60:
        raise _OutOfRange("time zone offset minute")
    if hours < 0 or value[:1] not in (b"+", b"-"):
        raise _Bad
    return value[6:]


def _unnamed_fraction(rest: bytes, layout_rest: tuple[tuple[str, str], ...]) -> bool:
    """Seconds followed by a fraction the layout does not name: Go takes it all the same."""
    named = bool(layout_rest) and layout_rest[0][1].startswith(".0")
    return not named and rest[:1] in (b".", b",") and rest[1:2].isdigit()


def _element(element: str, value: bytes, clock: _Clock, layout_rest: tuple[tuple[str, str], ...]) -> bytes:
    """Parse one layout element off the front of `value`; what is left."""
    if element == "2006":
        if len(value) < 4 or not value[:1].isdigit() or not value[:4].isdigit():
            raise _Bad
        clock.year = int(value[:4])
        return value[4:]
    if element in ("01", "02", "15", "04", "05"):
        number, rest = _getnum(value, element != "15")
        bounds = {"01": (1, 12, "month"), "02": (0, 99, ""), "15": (0, 23, "hour"), "04": (0, 59, "minute")}
        low, high, name = bounds.get(element, (0, 59, "second"))
        if not low <= number <= high:
            raise _OutOfRange(name, rest)
        if element == "01":
            clock.month = number
        elif element == "02":
            clock.day = number
        elif element == "05" and _unnamed_fraction(rest, layout_rest):
            width = 2
            while rest[width : width + 1].isdigit():
                width += 1
            return _fraction(rest, width)
        return rest
    if element == ".000000":
        if len(value) < 7:
            raise _Bad
        return _fraction(value, 7)
    return _zone(value)


def time_parse_error(value: str, layout: str = RFC3339) -> str | None:
    """What Go's `time.Parse(layout, value)` says about `value`, or None when it parses."""
    raw = value.encode("utf-8", "surrogatepass")
    head, quoted_layout = f"parsing time {_quote(raw)}", _quote(layout.encode())
    chunks, clock = _CHUNKS[layout], _Clock()
    rest = raw
    for index, (prefix, element) in enumerate(chunks):
        try:
            rest = _skip(rest, prefix)
        except _Bad as bad:
            return f"{head} as {quoted_layout}: cannot parse {_quote(bad.args[0])} as {_quote(prefix.encode())}"
        hold = rest
        try:
            rest = _element(element, rest, clock, chunks[index + 1 :])
        except _Bad:
            return f"{head} as {quoted_layout}: cannot parse {_quote(hold)} as {_quote(element.encode())}"
        except _OutOfRange as out:
            return f"{head}: {out.args[0]} out of range"
    if rest:
        return f"{head}: extra text: {_quote(rest)}"
    if clock.day < 1 or clock.day > _days_in(clock.month, clock.year):
        return f"{head}: day out of range"
    return None


def _days_in(month: int, year: int) -> int:
    """Go's `daysIn` (year 0 included, which Python's calendar does not know)."""
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


_GO_DURATION = re.compile(r"^[-+]?(?:[0-9]*(?:\.[0-9]*)?(?:ns|us|µs|μs|ms|s|m|h))+$")


def parse_go_duration(value: str) -> float | None:
    """Go's `time.ParseDuration` in seconds, or None."""
    if value in ("0", "+0", "-0"):
        return 0.0
    if not value or _GO_DURATION.match(value) is None:
        return None
    sign = -1.0 if value.startswith("-") else 1.0
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    total = 0.0
    for number, unit in re.findall(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)", value.lstrip("+-")):
        if number in ("", "."):
            return None
        total += float(number) * scale[unit]
    return sign * total
