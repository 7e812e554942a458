"""String formats a CRD schema may declare, checked as kube-openapi's `strfmt.Default` registry checks them.

Names are matched after dropping dashes (`date-time` is `datetime`), as go-openapi normalises them. Where upstream
leans on a Go parser (`net.ParseIP`, `net.ParseMAC`, `url.ParseRequestURI`, `mail.ParseAddress`,
`time.ParseDuration`) this is a small port of what that parser accepts; `email` and `uri` are approximations
(see the README "differs" section).

`compile_re2` turns a Go (RE2) regular expression into a Python one for `pattern` and the CEL regex functions
(`goregexp.py` parses it as Go does).
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import re
import unicodedata
from collections.abc import Callable
from datetime import date

from tinykube.api.golang import parse_go_duration
from tinykube.apiextensions import goregexp

# ---- Go regular expressions ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def compile_re2(pattern: str) -> re.Pattern[str]:
    """A Python regex that matches what Go's `regexp.Compile(pattern)` matches (`goregexp.to_python`).

    Raises `re.error` for a pattern Go does not accept, with Go's message."""
    try:
        translated, uses_unicode = goregexp.to_python(pattern)
    except goregexp.GoRegexpError as err:
        raise re.error(str(err)) from None
    return re.compile(translated, 0 if uses_unicode else re.ASCII)


def go_match(pattern: str, value: str) -> bool:
    """Go's `regexp.MatchString`: an unanchored search."""
    return compile_re2(pattern).search(value) is not None


# ---- the formats --------------------------------------------------------------------------------------------------

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$", re.ASCII)
_DATETIME_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$", re.DOTALL)
_SHORT_NAME = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SHORT_NAME_RE = re.compile(f"^{_SHORT_NAME}$")
_LONG_NAME_RE = re.compile(f"^{_SHORT_NAME}(\\.{_SHORT_NAME})*$")
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)$", re.ASCII)
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", re.ASCII)
_CREDITCARD = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
    r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    re.ASCII,
)
_ISBN10 = re.compile(r"^(?:[0-9]{9}X|[0-9]{10})$")
_ISBN13 = re.compile(r"^(?:[0-9]{13})$")
_MAC = re.compile(
    r"^(?:[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5,19}|[0-9A-Fa-f]{2}(?:-[0-9A-Fa-f]{2}){5,19}|"
    r"[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2,9})$"
)
_BSON = re.compile(r"^[0-9a-fA-F]{24}$")
_DURATION_PART = re.compile(r"(([0-9]+)\s*([A-Za-zµ]+))")
_DURATION_UNITS = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_EMAIL_ADDR = re.compile(
    r"^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|\"(?:[^\"\\]|\\.)*\")"
    r"@(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|\[[^\[\]\\]*\])$"
)
_EMAIL_NAMED = re.compile(r"^[^<>]*<([^<>]*)>\s*$")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def is_date(value: str) -> bool:
    """`time.Parse("2006-01-02", value)` succeeds."""
    m = _DATE.match(value)
    if m is None:
        return False
    try:
        date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def is_datetime(value: str) -> bool:
    """strfmt's IsDateTime: a date, a `t`, then hh:mm:ss[.frac](z|±hh:mm), compared as strings as upstream does."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _DATETIME_TIME.match(parts[1])
    if m is None:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def parse_duration(value: str) -> float | None:
    """strfmt's ParseDuration (Go's syntax, else `<n> <unit>` words such as `3 days`), in seconds, or None."""
    go = parse_go_duration(value)
    if go is not None:
        return go
    seconds = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
    total, ok = 0.0, False
    for _, number, unit in _DURATION_PART.findall(value):
        unit = unit.strip().lower()
        for variants in _DURATION_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or variant.lower() == unit:
                    ok = True
                    total += int(number) * seconds[variants[0]]
    return total if ok else None


def _sloppy_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`netutils.ParseIPSloppy`: Go's `net.ParseIP`, but IPv4 octets may have leading zeros (read as decimal)."""
    if "%" in value or not value:
        return None
    text = value
    if ":" not in value and "." in value:
        octets = value.split(".")
        if len(octets) != 4 or not all(o.isascii() and o.isdigit() and len(o) <= 3 for o in octets):
            return None
        text = ".".join(str(int(o)) for o in octets)
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_ipv4(value: str) -> bool:
    return _sloppy_ip(value) is not None and "." in value


def is_ipv6(value: str) -> bool:
    return ":" in value and _sloppy_ip(value) is not None


def is_cidr(value: str) -> bool:
    ip, sep, bits = value.partition("/")
    if not sep or not bits.isascii() or not bits.isdigit() or len(bits) > 3:
        return False
    parsed = _sloppy_ip(ip)
    if parsed is None:
        return False
    return int(bits) <= (32 if parsed.version == 4 and ":" not in ip else 128)


def _isbn10(value: str) -> bool:
    s = re.sub(r"[\s-]+", "", value)
    if not _ISBN10.match(s):
        return False
    total = sum((i + 1) * int(s[i]) for i in range(9)) + (100 if s[9] == "X" else 10 * int(s[9]))
    return total % 11 == 0


def _isbn13(value: str) -> bool:
    s = re.sub(r"[\s-]+", "", value)
    if not _ISBN13.match(s):
        return False
    total = sum(int(s[i]) * (1, 3)[i % 2] for i in range(12))
    return (10 - total % 10) % 10 == int(s[12])


def _creditcard(value: str) -> bool:
    s = re.sub(r"[^0-9]+", "", value)
    if not _CREDITCARD.match(s):
        return False
    total, double = 0, False
    for ch in reversed(s):
        n = int(ch) * (2 if double else 1)
        total += n - 9 if n >= 10 else n
        double = not double
    return total % 10 == 0


@functools.lru_cache(maxsize=1)
def _hostname_re() -> re.Pattern[str]:
    symbols = "".join(re.escape(chr(c)) for c in range(0x80, 0x10000) if unicodedata.category(chr(c)).startswith("S"))
    ch = f"a-zA-Z0-9\\$\\+<=>\\^`\\|~{symbols}"
    letter = "[^\\W\\d_]"
    c1 = f"(?:[{ch}]|{letter})"
    c2 = f"(?:[{ch}\\-]|{letter})"
    tld = f"(?:[a-zA-Z]|{letter})"
    pattern = f"^(?:{c1}(?:(?:-?{c1}{{0,62}})?)|(?:{c1}(?:(?:{c2}{{0,61}}{c1})?)(?:\\.)){{1,}}(?:{tld}){{2,63}})$"
    return re.compile(pattern)


def is_hostname(value: str) -> bool:
    if _hostname_re().match(value) is None or len(value.encode()) > 255:
        return False
    return all(len(part.encode()) <= 63 for part in value.split("."))


def is_email(value: str) -> bool:
    """An approximation of Go's `mail.ParseAddress`: `local@domain`, optionally as `Name <local@domain>`."""
    named = _EMAIL_NAMED.match(value)
    addr = named.group(1) if named else value.strip()
    return _EMAIL_ADDR.match(addr) is not None


def is_request_uri(value: str) -> bool:
    """An approximation of Go's `url.ParseRequestURI`: an absolute URI or an absolute path."""
    if not value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value) or _BAD_ESCAPE.search(value):
        return False
    if value.startswith("/"):
        return True
    if _URI_SCHEME.match(value) is None:
        return False
    rest = value.split(":", 1)[1]
    if not rest.startswith("//"):
        return True  # opaque ("mailto:x") or absolute path after the scheme
    authority = rest[2:].split("/", 1)[0].split("?", 1)[0]
    host = authority.rsplit("@", 1)[-1]
    if host.startswith("["):
        end = host.find("]")
        if end < 0 or (host[end + 1 :] and not re.fullmatch(r":[0-9]*", host[end + 1 :])):
            return False
        return _sloppy_ip(host[1:end]) is not None
    if host.count(":") > 1:
        return False
    if ":" in host and not re.fullmatch(r"[0-9]*", host.split(":", 1)[1]):
        return False
    return " " not in host


def _byte(value: str) -> bool:
    if _BASE64.match(value) is None:
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: _BSON.match(s) is not None,
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": lambda s: _MAC.match(s) is not None,
    "uuid": lambda s: _UUID.match(s) is not None,
    "uuid3": lambda s: _UUID3.match(s) is not None,
    "uuid4": lambda s: _UUID4.match(s) is not None,
    "uuid5": lambda s: _UUID5.match(s) is not None,
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": lambda s: len(s) == 11 and _SSN.match(s) is not None,
    "hexcolor": lambda s: _HEXCOLOR.match(s) is not None,
    "rgbcolor": lambda s: _RGBCOLOR.match(s) is not None,
    "byte": _byte,
    "password": lambda s: True,
    "date": is_date,
    "duration": lambda s: parse_duration(s) is not None,
    "datetime": is_datetime,
    "k8sshortname": lambda s: len(s) <= 63 and _SHORT_NAME_RE.match(s) is not None,
    "k8slongname": lambda s: len(s) <= 253 and _LONG_NAME_RE.match(s) is not None,
}


def normalize(fmt: str) -> str:
    return fmt.replace("-", "")


def is_known(fmt: str) -> bool:
    """A string format the apiserver validates (others are ignored, as upstream strips them)."""
    return normalize(fmt) in _CHECKS


def checker(fmt: str) -> Callable[[str], bool]:
    return _CHECKS[normalize(fmt)]
