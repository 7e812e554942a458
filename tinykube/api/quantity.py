"""A small port of apimachinery's `resource.Quantity`: parsing (with upstream's messages), the canonical string,
Go's `%#v` of a parsed quantity, exact arithmetic and comparison.

Values are whole numbers of nano units (upstream rounds up to nano precision at parse time), so sums and comparisons
(quota usage, LimitRange min/max) are exact and cheap integer arithmetic. Formats follow upstream: a sum keeps the
format of its first non-zero term ("64Mi" + "64Mi" is "128Mi"; "500m" + "1" is "1500m").
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from tinykube.api.errors import go_value

QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

# parseQuantityString's grammar: sign, digits, an optional fraction, then suffix letters, a sign and digits.
_QUANTITY_PARTS = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_MAX_DIGITS = 1000  # Go's big decimals take any size; Python's int parsing stops at 4300 digits
INT64_MAX = 2**63 - 1
MAX_MILLI_VALUE = INT64_MAX // 1000  # resource.MaxMilliValue: beyond it, MilliValue() would overflow
_NANO = 10**9


class QuantityError(ValueError):
    """A quantity that does not parse; the message is apimachinery's."""


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """A `resource.Quantity`: its value in nano units, its format, and Go's `%#v` of the parsed struct (the value
    field errors show; empty for a computed quantity). Equality and order are by value, as `Cmp`."""

    nanos: int
    format: str = "DecimalSI"  # "DecimalSI", "BinarySI" or "DecimalExponent"
    go: str = ""

    @classmethod
    def of(cls, value: Fraction | int, fmt: str = "DecimalSI") -> Quantity:
        """A computed quantity (rounded up to nano units, as upstream rounds)."""
        return cls(math.ceil(value * _NANO), fmt)

    @property
    def value(self) -> Fraction:
        """The exact value."""
        return Fraction(self.nanos, _NANO)

    def __str__(self) -> str:
        """The canonical form upstream serializes (`Quantity.String`)."""
        if self.nanos == 0:
            return "0"
        if self.format == "BinarySI" and abs(self.nanos) >= 1024 * _NANO and self.nanos % _NANO == 0:
            return _base1024(self.nanos // _NANO)
        return _base10(self.nanos, "DecimalExponent" if self.format == "DecimalExponent" else "DecimalSI")

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def whole(self) -> int:
        """`Value()`: rounded up, away from zero."""
        return _round_up(self.nanos, _NANO)

    def milli(self) -> int:
        """`MilliValue()`: thousandths, rounded up, away from zero."""
        return _round_up(self.nanos, _NANO // 1000)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos + other.nanos, self.format if self.nanos else other.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos, self.format if self.nanos else other.format)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.nanos == other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos


ZERO = Quantity(0)


def count(number: int) -> Quantity:
    """`resource.NewQuantity(n, DecimalSI)`: an object count."""
    return Quantity(number * _NANO)


def _round_up(nanos: int, unit: int) -> int:
    """`nanos` in `unit`s, rounded away from zero."""
    return -(-nanos // unit) if nanos >= 0 else nanos // unit


def _base10(nanos: int, fmt: str) -> str:
    """Mantissa and a power of ten that is a multiple of three, with the SI suffix (or `e<n>`) for the power."""
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if fmt == "DecimalSI" and exponent in _DECIMAL_BY_EXPONENT:
        return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def _base1024(number: int) -> str:
    power = 0
    while number % 1024 == 0 and power < len(_BINARY_BY_POWER) - 1:
        number, power = number // 1024, power + 1
    return f"{number}{_BINARY_BY_POWER[power]}"


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as apimachinery's suffixer reads it."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        return 10, int(suffix[1:]), "DecimalExponent"
    raise QuantityError(SUFFIX)


def _quantity_text(raw: Any) -> str:
    """The text `Quantity.UnmarshalJSON` parses: a JSON string's content or a number's literal, trimmed."""
    if raw is None:
        return "0"  # a null quantity is the zero quantity
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise QuantityError(FORMAT_WRONG)
    try:
        return str(raw).strip()
    except ValueError:  # an integer beyond Python's conversion limit
        raise QuantityError(NUMERIC) from None


def parse_quantity(raw: Any) -> Quantity:
    """apimachinery's `ParseQuantity` (after `UnmarshalJSON`); raises `QuantityError` with upstream's message.

    Quantities are immutable and the same few values recur (every pod's "100m", "64Mi"), so parses are cached: on a
    pod create, LimitRange, quota and validation each read the same quantities."""
    if isinstance(raw, str | int | float):
        return _parse_cached(raw)
    return _parse(raw)


def _parse(raw: Any) -> Quantity:
    text = _quantity_text(raw)
    if text == "0":
        return Quantity(0, "DecimalSI", _go_quantity(0, 0, '"0"', "DecimalSI"))
    match = _QUANTITY_PARTS.fullmatch(text)
    if not text or match is None:
        raise QuantityError(FORMAT_WRONG)
    sign, digits, denom, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    base, exponent, fmt = _interpret(suffix)
    num = digits.lstrip("0") or "0"
    if len(num) + len(denom) > _MAX_DIGITS or abs(exponent) > _MAX_DIGITS:
        raise QuantityError(NUMERIC)
    magnitude = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** exponent
    if fmt == "BinarySI":
        magnitude = min(magnitude, Fraction(INT64_MAX))  # upstream caps binary quantities
    nanos = math.ceil(magnitude * _NANO) * (-1 if sign == "-" else 1)
    return Quantity(nanos, fmt, _go_parsed(text, sign != "-", num, denom, exponent, fmt))


_parse_cached = functools.lru_cache(maxsize=1024, typed=True)(_parse)  # typed: True is no 1


def _go_parsed(text: str, positive: bool, num: str, denom: str, exponent: int, fmt: str) -> str:
    """Go's `%#v` of what `ParseQuantity` returns: its int64 fast path (value, scale, and the input kept as the
    cached string when it is already canonical), else a big decimal behind a pointer."""
    if fmt == "BinarySI":
        fast = exponent >= 0 and not denom and 15 - len(num) - exponent * 3 // 10 - 1 >= 0
        scale, digits, factor = 0, num, 1 << max(exponent, 0)
    else:
        scale, digits, factor = exponent - len(denom), num + denom, 1
        fast = 18 - len(num) - len(denom) >= 0 and scale >= -9
    amount = int(digits) * factor if fast else 0
    if not fast or amount > INT64_MAX:
        return _go_quantity(0, 0, '""', fmt, big=True)
    if fmt == "BinarySI":
        canonical = exponent % 10 == 0 and int(digits) & 0x07 != 0
    else:
        canonical = scale % 3 == 0 and not digits.endswith("000") and not digits.startswith("0")
    return _go_quantity(amount if positive else -amount, scale, go_value(text if canonical else ""), fmt)


def _go_quantity(amount: int, scale: int, cached: str, fmt: str, *, big: bool = False) -> str:
    pointer = "0xc000000000" if big else "nil"  # Go prints a big decimal's address
    return (
        f"resource.Quantity{{i:resource.int64Amount{{value:{amount}, scale:{scale}}}, "
        f"d:resource.infDecAmount{{Dec:(*inf.Dec)({pointer})}}, s:{cached}, Format:{go_value(fmt)}}}"
    )


# ---- ResourceList ---------------------------------------------------------------------------------------------------

ResourceList = dict[str, Quantity]


def resource_list(raw: Any) -> ResourceList:
    """A stored `ResourceList` parsed; entries that do not parse are left out (validation refused them on write,
    so only a hand-edited etcd has them)."""
    parsed: ResourceList = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            try:
                parsed[str(name)] = parse_quantity(value)
            except QuantityError:
                continue
    return parsed


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """`quota.Add`: every resource of either, summed where both have it."""
    result = dict(a)
    for name, quantity in b.items():
        result[name] = result[name] + quantity if name in result else quantity
    return result


def maximum(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """`quota.Max`: every resource of either, the larger where both have it."""
    result = dict(a)
    for name, quantity in b.items():
        if name not in result or quantity > result[name]:
            result[name] = quantity
    return result


def rendered(quantities: Mapping[str, Quantity]) -> dict[str, str]:
    """A `ResourceList` as JSON stores it: canonical strings."""
    return {name: str(quantity) for name, quantity in quantities.items()}
