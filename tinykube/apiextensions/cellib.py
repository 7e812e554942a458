"""The Kubernetes CEL libraries a CRD rule may call, for the `cel` package (which evaluates CEL in Rust and calls
back into Python for functions it lacks).

Covered: the lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regex (`find`,
`findAll`), URLs (`url`, `isURL`, `getScheme` ...), quantities (`quantity`, `isQuantity`, `isGreaterThan`,
`add` ...), IP and CIDR (`ip`, `isIP`, `cidr`, `containsIP` ...), the `format` library (`format.dns1123Label()
.validate(s)` ...), and cel-go's strings, lists and sets extensions (from `cel.stdlib`, with `indexOf`/`reverse`
dispatching between strings and lists). `size` is replaced because the package counts a string's bytes where CEL
counts code points.

Values the package cannot carry (URL, Quantity, IP, CIDR, a format) travel as one-key maps (`{"__quantity__":
"1500000000"}`): equality and method calls work; `type(x)` says `map` (see the README "differs" section).
"""

from __future__ import annotations

import ipaddress
import itertools
import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import cel
from cel import stdlib

from tinykube.api import meta
from tinykube.api.golang import format_float
from tinykube.api.quantity import Quantity, QuantityError, parse_quantity
from tinykube.apiextensions import formats

_Q, _URL, _IP, _CIDR, _FMT = "__quantity__", "__url__", "__ip__", "__cidr__", "__format__"
_NANO = 10**9


class CelError(Exception):
    """An evaluation error with cel-go's words."""


def _tagged(value: Any, tag: str) -> Any:
    if isinstance(value, dict) and len(value) == 1 and tag in value:
        return value[tag]
    return None


def cel_equal(a: Any, b: Any) -> bool:
    """CEL equality on values as Python sees them: numbers compare across types, bools are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(cel_equal(v, b[k]) for k, v in a.items())
    return bool(a == b)


# ---- size ---------------------------------------------------------------------------------------------------------


def size(value: Any) -> int:
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    raise CelError("no such overload")


def string(value: Any) -> str:
    """CEL's string() conversion, with cel-go's texts for doubles, durations and timestamps."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(value, timedelta):
        return _seconds_text(value) + "s"
    if isinstance(value, datetime):
        return rfc3339_nano(value)
    raise CelError("no such overload")


def _seconds_text(value: timedelta) -> str:
    micros = value // timedelta(microseconds=1)
    text = format(Decimal(micros) / Decimal(10**6), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def rfc3339_nano(value: datetime) -> str:
    """Go's `time.RFC3339Nano`: fractional seconds without trailing zeros, `Z` for UTC."""
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


# ---- timestamps in a time zone ------------------------------------------------------------------------------------


def _zoned(value: datetime, zone: str) -> datetime:
    if re.fullmatch(r"[+-]?[0-9]{2}:[0-9]{2}", zone):
        sign = -1 if zone.startswith("-") else 1
        hours, minutes = zone.lstrip("+-").split(":")
        return value.astimezone(timezone(sign * timedelta(hours=int(hours), minutes=int(minutes))))
    try:
        return value.astimezone(ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {zone}") from None


def _getter(part: Callable[[datetime], int]) -> Callable[[datetime, str], int]:
    def get(value: datetime, zone: str) -> int:
        if not isinstance(value, datetime):
            raise CelError("no such overload")
        return part(_zoned(value, zone))

    return get


TIME_GETTERS: dict[str, Callable[[datetime], int]] = {
    "getFullYear": lambda t: t.year,
    "getMonth": lambda t: t.month - 1,
    "getDate": lambda t: t.day,
    "getDayOfMonth": lambda t: t.day - 1,
    "getDayOfYear": lambda t: t.timetuple().tm_yday - 1,
    "getDayOfWeek": lambda t: (t.weekday() + 1) % 7,
    "getHours": lambda t: t.hour,
    "getMinutes": lambda t: t.minute,
    "getSeconds": lambda t: t.second,
    "getMilliseconds": lambda t: t.microsecond // 1000,
}


# ---- strings.format -----------------------------------------------------------------------------------------------

_VERB = re.compile(r"%(?:\.([0-9]+))?([sdfeboxX%])")


def format_(template: str, args: list[Any]) -> str:
    """cel-go's `string.format(list)` for the verbs %s %d %f %e %b %o %x %X (and %%)."""
    values = iter(args)

    def one(m: re.Match[str]) -> str:
        verb = m.group(2)
        if verb == "%":
            return "%"
        try:
            value = next(values)
        except StopIteration:
            raise CelError(f"index {len(args)} out of range") from None
        precision = int(m.group(1)) if m.group(1) is not None else 6
        if verb == "s":
            return string(value) if not isinstance(value, list | dict) else _format_compound(value)
        if verb == "d":
            return str(int(value))
        if verb == "f":
            return f"{float(value):.{precision}f}"
        if verb == "e":
            mantissa, exponent = f"{float(value):.{precision}e}".split("e")
            digits = str(abs(int(exponent))).zfill(2).translate(_SUPERSCRIPT)
            sign = _MINUS if int(exponent) < 0 else ""
            return f"{mantissa}{_TIMES_TEN}{sign}{digits}"
        if isinstance(value, str | bytes) and verb in "xX":
            raw = value.encode() if isinstance(value, str) else value
            return raw.hex() if verb == "x" else raw.hex().upper()
        number = int(value)
        return {"b": f"{number:b}", "o": f"{number:o}", "x": f"{number:x}", "X": f"{number:X}"}[verb]

    return _VERB.sub(one, template)


_TIMES_TEN, _MINUS = "\u00d710", "\u207b"
_SUPERSCRIPT = str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _format_compound(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_format_compound(v) if isinstance(v, list | dict) else string(v) for v in value) + "]"
    return "{" + ", ".join(f"{string(k)}: {string(v)}" for k, v in value.items()) + "}"


# ---- lists --------------------------------------------------------------------------------------------------------


def is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(items))


def sum_(items: list[Any]) -> Any:
    if not items:
        return 0
    if all(isinstance(x, timedelta) for x in items):
        return sum(items, timedelta())
    total = items[0]
    for x in items[1:]:
        if type(x) is not type(total):
            raise CelError("no such overload")
        total = total + x
    return total


def min_(items: list[Any]) -> Any:
    if not items:
        raise CelError("min called on empty list")
    return min(items)


def max_(items: list[Any]) -> Any:
    if not items:
        raise CelError("max called on empty list")
    return max(items)


def index_of(target: Any, item: Any, *offset: int) -> int:
    if isinstance(target, str):
        return int(stdlib.index_of(target, item, *offset))
    for i, x in enumerate(target):
        if cel_equal(x, item):
            return i
    return -1


def last_index_of(target: Any, item: Any, *offset: int) -> int:
    if isinstance(target, str):
        return int(stdlib.last_index_of(target, item, *offset))
    for i in range(len(target) - 1, -1, -1):
        if cel_equal(target[i], item):
            return i
    return -1


# ---- regex --------------------------------------------------------------------------------------------------------


def find(value: str, pattern: str) -> str:
    m = formats.compile_re2(pattern).search(value)
    return m.group() if m else ""


def find_all(value: str, pattern: str, limit: int = -1) -> list[str]:
    out = [m.group() for m in formats.compile_re2(pattern).finditer(value) if m.group()]
    return out if limit < 0 else out[:limit]


# ---- URLs ---------------------------------------------------------------------------------------------------------


def _url(value: Any) -> str:
    text = _tagged(value, _URL)
    if text is None:
        raise CelError("no such overload")
    return str(text)


def url(value: str) -> dict[str, str]:
    if not formats.is_request_uri(value):
        raise CelError(f"URL parse error during conversion from string: parse {value!r}: invalid URI for request")
    return {_URL: value}


def is_url(value: str) -> bool:
    return formats.is_request_uri(value)


def get_scheme(value: Any) -> str:
    return urlsplit(_url(value)).scheme


def get_host(value: Any) -> str:
    return urlsplit(_url(value)).netloc.rsplit("@", 1)[-1]


def get_hostname(value: Any) -> str:
    host = get_host(value)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def get_port(value: Any) -> str:
    host = get_host(value)
    tail = host[host.find("]") + 1 :] if host.startswith("[") else host
    return tail.rsplit(":", 1)[1] if ":" in tail else ""


def get_escaped_path(value: Any) -> str:
    return quote(urlsplit(_url(value)).path, safe="/%:@!$&'()*+,;=-._~")


def get_query(value: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, item in parse_qsl(urlsplit(_url(value)).query, keep_blank_values=True):
        out.setdefault(key, []).append(item)
    return out


# ---- quantities ---------------------------------------------------------------------------------------------------


def _quantity(value: Any) -> Quantity:
    nanos = _tagged(value, _Q)
    if nanos is None:
        raise CelError("no such overload")
    return Quantity(int(nanos))


def _wrap(q: Quantity) -> dict[str, str]:
    return {_Q: str(q.nanos)}


def quantity(value: str) -> dict[str, str]:
    try:
        return _wrap(parse_quantity(value))
    except QuantityError as e:
        raise CelError(str(e)) from None


def is_quantity(value: str) -> bool:
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


def _other(value: Any) -> Quantity:
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity(value * _NANO)
    return _quantity(value)


def q_sign(value: Any) -> int:
    nanos = _quantity(value).nanos
    return (nanos > 0) - (nanos < 0)


def q_is_integer(value: Any) -> bool:
    nanos = _quantity(value).nanos
    return nanos % _NANO == 0 and -(2**63) <= nanos // _NANO < 2**63


def q_as_integer(value: Any) -> int:
    if not q_is_integer(value):
        raise CelError("cannot convert value to integer")
    return _quantity(value).nanos // _NANO


def q_as_float(value: Any) -> float:
    try:
        return _quantity(value).nanos / _NANO
    except OverflowError:
        return math.inf if _quantity(value).nanos > 0 else -math.inf


def q_add(value: Any, other: Any) -> dict[str, str]:
    return _wrap(Quantity(_quantity(value).nanos + _other(other).nanos))


def q_sub(value: Any, other: Any) -> dict[str, str]:
    return _wrap(Quantity(_quantity(value).nanos - _other(other).nanos))


def q_compare(value: Any, other: Any) -> int:
    a, b = _quantity(value).nanos, _quantity(other).nanos
    return (a > b) - (a < b)


# ---- IP and CIDR --------------------------------------------------------------------------------------------------


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if "%" in text or any(len(o) > 1 and o.startswith("0") for o in text.split(".") if ":" not in text):
        raise CelError(f"IP Address {text!r} parse error during conversion from string: ParseAddr({text!r}): invalid")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise CelError(f"IP Address {text!r} parse error during conversion from string") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CelError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return addr


def ip(value: Any) -> dict[str, str]:
    cidr_text = _tagged(value, _CIDR)
    if cidr_text is not None:
        return {_IP: str(cidr_text).split("/")[0]}
    if not isinstance(value, str):
        raise CelError("no such overload")
    return {_IP: str(_parse_ip(value))}


def is_ip(value: str) -> bool:
    try:
        _parse_ip(value)
    except CelError:
        return False
    return True


def _ip(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    text = _tagged(value, _IP)
    if text is None:
        if isinstance(value, str):
            return _parse_ip(value)
        raise CelError("no such overload")
    return ipaddress.ip_address(text)


def ip_is_canonical(value: str) -> bool:
    return str(_parse_ip(value)) == value


def cidr(value: str) -> dict[str, str]:
    address, sep, bits = value.partition("/")
    if not sep or not bits.isdigit():
        raise CelError(f"network address {value!r} parse error during conversion from string")
    _parse_ip(address)
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise CelError(f"network address {value!r} parse error during conversion from string") from None
    return {_CIDR: value}


def is_cidr(value: str) -> bool:
    try:
        cidr(value)
    except CelError:
        return False
    return True


def _net(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    text = _tagged(value, _CIDR)
    if text is None:
        raise CelError("no such overload")
    return ipaddress.ip_network(str(text), strict=False)


def _link_local_multicast(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's net.IP.IsLinkLocalMulticast: 224.0.0.0/24, ff02::/16."""
    raw = addr.packed
    if addr.version == 4:
        return raw[:3] == b"\xe0\x00\x00"
    return raw[0] == 0xFF and raw[1] & 0x0F == 0x02


def _link_local_unicast(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's net.IP.IsLinkLocalUnicast: 169.254.0.0/16, fe80::/10."""
    raw = addr.packed
    if addr.version == 4:
        return raw[:2] == b"\xa9\xfe"
    return raw[0] == 0xFE and raw[1] & 0xC0 == 0x80


def _global_unicast(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's net.IP.IsGlobalUnicast: none of unspecified, loopback, multicast, link-local unicast, broadcast."""
    if addr.is_unspecified or addr.is_loopback or addr.is_multicast or _link_local_unicast(addr):
        return False
    return str(addr) != "255.255.255.255"


def family(value: Any) -> int:
    return _ip(value).version


def contains_ip(value: Any, other: Any) -> bool:
    return _ip(other) in _net(value)


def contains_cidr(value: Any, other: Any) -> bool:
    inner = _net(cidr(other) if isinstance(other, str) else other)
    outer = _net(value)
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def prefix_length(value: Any) -> int:
    return _net(value).prefixlen


def masked(value: Any) -> dict[str, str]:
    return {_CIDR: str(_net(value))}


# ---- the format library -------------------------------------------------------------------------------------------

_NAMED: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": meta.dns1123_label,
    "dns1123Subdomain": meta.dns1123_subdomain,
    "dns1035Label": meta.dns1035_label,
    "qualifiedName": meta.qualified_name,
    "labelValue": meta.label_value,
    "dns1123LabelPrefix": lambda s: meta.dns1123_label(s.rstrip("-") or "a"),
    "dns1123SubdomainPrefix": lambda s: meta.dns1123_subdomain(s.rstrip("-") or "a"),
    "dns1035LabelPrefix": lambda s: meta.dns1035_label(s.rstrip("-") or "a"),
    "uri": lambda s: [] if formats.is_request_uri(s) else ["invalid URI"],
    "uuid": lambda s: [] if formats.checker("uuid")(s) else ["does not match the UUID format"],
    "byte": lambda s: [] if formats.checker("byte")(s) else ["invalid base64"],
    "date": lambda s: [] if formats.is_date(s) else ["invalid date"],
    "datetime": lambda s: [] if formats.is_datetime(s) else ["invalid datetime"],
}


def _named_format(name: str) -> Callable[[], dict[str, str]]:
    return lambda: {_FMT: name}


def format_named(name: str) -> Any:
    return cel.OptionalValue.of({_FMT: name}) if name in _NAMED else cel.OptionalValue.none()


def format_validate(fmt: Any, value: str) -> Any:
    name = _tagged(fmt, _FMT)
    if name is None:
        raise CelError("no such overload")
    problems = _NAMED[str(name)](value)
    return cel.OptionalValue.of(problems) if problems else cel.OptionalValue.none()


# ---- strings ------------------------------------------------------------------------------------------------------


def reverse(value: Any) -> Any:
    return stdlib.reverse(value)


def join(items: list[Any], sep: str = "") -> str:
    if not all(isinstance(x, str) for x in items):
        raise CelError("no such overload")
    return sep.join(items)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    **stdlib.EXTENSIONS["strings"],
    **stdlib.EXTENSIONS["sets"],
    **{k: v for k, v in stdlib.EXTENSIONS["lists"].items() if k != "contains"},
    "__k8s_size": size,
    "__k8s_string": string,
    "format": format_,
    **{f"__k8s_{name}": _getter(part) for name, part in TIME_GETTERS.items()},
    "isSorted": is_sorted,
    "sum": sum_,
    "min": min_,
    "max": max_,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "reverse": reverse,
    "join": join,
    "find": find,
    "findAll": find_all,
    "url": url,
    "isURL": is_url,
    "getScheme": get_scheme,
    "getHost": get_host,
    "getHostname": get_hostname,
    "getPort": get_port,
    "getEscapedPath": get_escaped_path,
    "getQuery": get_query,
    "quantity": quantity,
    "isQuantity": is_quantity,
    "sign": q_sign,
    "isInteger": q_is_integer,
    "asInteger": q_as_integer,
    "asApproximateFloat": q_as_float,
    "add": q_add,
    "sub": q_sub,
    "isGreaterThan": lambda a, b: q_compare(a, b) > 0,
    "isLessThan": lambda a, b: q_compare(a, b) < 0,
    "compareTo": q_compare,
    "ip": ip,
    "isIP": is_ip,
    "ip.isCanonical": ip_is_canonical,
    "cidr": cidr,
    "isCIDR": is_cidr,
    "family": family,
    "isUnspecified": lambda v: _ip(v).is_unspecified,
    "isLoopback": lambda v: _ip(v).is_loopback,
    "isLinkLocalMulticast": lambda v: _link_local_multicast(_ip(v)),
    "isLinkLocalUnicast": lambda v: _link_local_unicast(_ip(v)),
    "isGlobalUnicast": lambda v: _global_unicast(_ip(v)),
    "containsIP": contains_ip,
    "containsCIDR": contains_cidr,
    "prefixLength": prefix_length,
    "masked": masked,
    "format.named": format_named,
    "validate": format_validate,
    **{f"format.{name}": _named_format(name) for name in _NAMED},
}

_WRAPPED = re.compile(
    r"^Function '[^']*' error: (?:Python function call failed: )?(?:\w+: )?(.*?)(?:\. Check function .*)?$", re.S
)


def error_text(exc: BaseException) -> str:
    """cel-go's words for an evaluation error raised by the `cel` package."""
    text = str(exc)
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else text}"
    if isinstance(exc, ZeroDivisionError):
        return "modulus by zero" if "modulo" in text or "remainder" in text else "division by zero"
    if isinstance(exc, OverflowError):
        return "integer overflow"
    if isinstance(exc, IndexError):
        return text
    if isinstance(exc, TypeError) or "no such overload" in text.lower():
        return "no such overload"
    m = _WRAPPED.match(text)
    if m:
        inner = m.group(1)
        return "no such overload" if inner == "no such overload" else inner
    return text
