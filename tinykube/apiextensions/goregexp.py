"""Go's regexp syntax (RE2), as far as a pattern's validity goes: `regexp.Compile`'s error for a CRD schema's
`pattern`, in Go's words, since the apiserver refuses a schema whose pattern Go cannot compile.

Validity only: matching a pattern against a value is `formats.compile_re2`'s job.
"""

from __future__ import annotations

import re
import warnings

_GO_ESCAPES = frozenset("afntrvdDsSwWpPx01234567")  # inside and outside a class; outside also A b B z Q
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"
_POSIX_CLASSES = frozenset(
    {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper"}
    | {"word", "xdigit"}
)
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


class _RegexpError(Exception):
    def __init__(self, code: str, fragment: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{fragment}`")


def go_regexp_error(pattern: str) -> str | None:
    """`regexp.Compile`'s error for `pattern` (`error parsing regexp: <code>: `<text>``), or None when Go accepts it.

    RE2's own syntax (escapes, flag and named groups, POSIX classes, repeat counts, no look-around, no
    back-references, no possessive repeats) is checked in one pass that also translates the pattern into Python's
    syntax; Python's `re` then finds the errors both share (unbalanced parentheses and brackets, a repeat of
    nothing, a backwards range), which are reported with RE2's code for the same mistake."""
    try:
        translated = _Re2Scan(pattern).translate()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python's "possible nested set" FutureWarning
            re.compile(translated)
    except _RegexpError as err:
        return str(err)
    except re.error as err:
        return _go_error_for(pattern, err)
    except (RecursionError, OverflowError, ValueError):
        return f"error parsing regexp: expression too large: `{pattern}`"
    return None


class _Re2Scan:
    def __init__(self, pattern: str) -> None:
        self.p, self.i, self.last_repeat = pattern, 0, 0
        self.out: list[str] = []

    def translate(self) -> str:
        in_class, repeated = False, False
        while self.i < len(self.p):
            c = self.p[self.i]
            if c == "\\":
                self._escape(in_class)
                repeated = False
            elif in_class:
                in_class = self._class_char()
            elif c == "[":
                self._open_class()
                in_class, repeated = True, False
            elif c == "(" and self.p.startswith("(?", self.i):
                self._group()
                repeated = False
            elif c in "*+?" or (c == "{" and _REPEAT.match(self.p, self.i)):
                repeated = self._repeat(repeated)
            else:
                self.out.append(c)
                self.i += 1
                repeated = False
        return "".join(self.out)

    def _escape(self, in_class: bool) -> None:
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise _RegexpError("trailing backslash at end of expression", "")
        e = p[i + 1]
        if not e.isalnum() and e.isascii():
            self.out.append(p[i : i + 2])
            self.i += 2
        elif not in_class and e == "Q":
            end = p.find("\\E", i + 2)
            literal = p[i + 2 :] if end < 0 else p[i + 2 : end]
            self.out.append(re.escape(literal))
            self.i = len(p) if end < 0 else end + 2
        elif e in "123456789" and not (e in _OCTAL and i + 2 < len(p) and p[i + 2] in _OCTAL):
            raise _RegexpError("invalid escape sequence", p[i : i + 2])
        elif e in _OCTAL:
            j = i + 2
            while j < len(p) and j < i + 4 and p[j] in _OCTAL:
                j += 1
            self.out.append(f"\\u{int(p[i + 1 : j], 8):04x}")
            self.i = j
        elif e == "x":
            self._hex_escape()
        elif e in "pP":
            self._unicode_class()
        elif e in _GO_ESCAPES or (not in_class and e in "AbBz"):
            self.out.append("\\Z" if e == "z" else p[i : i + 2])
            self.i += 2
        else:
            raise _RegexpError("invalid escape sequence", p[i : i + 2])

    def _hex_escape(self) -> None:
        p, i = self.p, self.i
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            digits = p[i + 3 : end] if end > 0 else ""
            if end < 0 or not digits or any(d not in _HEX for d in digits) or int(digits, 16) > 0x10FFFF:
                raise _RegexpError("invalid escape sequence", p[i : end + 1 if end > 0 else len(p)])
            self.out.append(f"\\U{int(digits, 16):08x}")
            self.i = end + 1
            return
        digits = p[i + 2 : i + 4]
        if len(digits) < 2 or any(d not in _HEX for d in digits):
            raise _RegexpError("invalid escape sequence", p[i : i + 2 + len(digits)])
        self.out.append(p[i : i + 4])
        self.i += 4

    def _unicode_class(self) -> None:
        p, i = self.p, self.i
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            if end < 0:
                raise _RegexpError("invalid character class range", p[i:])
            self.i = end + 1
        elif i + 2 < len(p):
            self.i = i + 3
        else:
            raise _RegexpError("invalid character class range", p[i:])
        self.out.append("x")  # any letter stands in for the class: only validity is asked

    def _open_class(self) -> None:
        j, head = self.i + 1, "["
        if self.p.startswith("^", j):
            j, head = j + 1, "[^"
        if self.p.startswith("]", j):  # a ] first in a class is literal
            j, head = j + 1, head + "\\]"
        self.out.append(head)
        self.i = j

    def _class_char(self) -> bool:
        p, i = self.p, self.i
        if p.startswith("[:", i):
            end = p.find(":]", i + 2)
            if end > 0:
                name = p[i + 2 : end].removeprefix("^")
                if name not in _POSIX_CLASSES:
                    raise _RegexpError("invalid character class range", p[i : end + 2])
                self.out.append("a")
                self.i = end + 2
                return True
        if p[i] == "[":
            self.out.append("\\[")
            self.i += 1
            return True
        self.out.append(p[i])
        self.i += 1
        return p[i] != "]"

    def _group(self) -> None:
        p, i = self.p, self.i
        if p.startswith(("(?P<", "(?<"), i):
            start = i + (4 if p.startswith("(?P<", i) else 3)
            end = p.find(">", start)
            if end < 0:
                raise _RegexpError("invalid named capture", p[i:])
            name = p[start:end]
            if not name or any(not (ch == "_" or (ch.isascii() and ch.isalnum())) for ch in name):
                raise _RegexpError("invalid named capture", p[i : end + 1])
            self.out.append("(")
            self.i = end + 1
            return
        j, sign, saw_flag = i + 2, False, False
        while j < len(p) and p[j] in "imsU-":
            if p[j] == "-":
                if sign:
                    break
                sign, saw_flag = True, False
            else:
                saw_flag = True
            j += 1
        if j < len(p) and p[j] in ":)" and not (sign and not saw_flag):
            self.out.append("(?:" if p[j] == ":" else "")
            self.i = j + 1
            return
        raise _RegexpError("invalid or unsupported Perl syntax", p[i : min(j + 1, len(p))])

    def _repeat(self, repeated: bool) -> bool:
        p, i = self.p, self.i
        m = _REPEAT.match(p, i) if p[i] == "{" else None
        end = m.end() if m else i + 1
        lazy = end < len(p) and p[end] == "?"
        if repeated:  # RE2 stacks no repeats: `a**`, `a*+` (possessive) and `a*??` are all errors
            raise _RegexpError("invalid nested repetition operator", p[self.last_repeat : end + (1 if lazy else 0)])
        if m is not None:
            low, high = int(m.group(1)), m.group(3)
            if low > 1000 or (high and (int(high) > 1000 or int(high) < low)):
                raise _RegexpError("invalid repeat count", m.group(0))
        self.last_repeat = i
        self.out.append(p[i : end + (1 if lazy else 0)])
        self.i = end + (1 if lazy else 0)
        return True


def _go_error_for(pattern: str, err: re.error) -> str:
    message, at = err.msg, err.pos if err.pos is not None else 0

    def go(code: str, fragment: str) -> str:
        return f"error parsing regexp: {code}: `{fragment}`"

    if message.startswith("missing ), unterminated subpattern"):
        return go("missing closing )", pattern)
    if message.startswith("unbalanced parenthesis"):
        return go("unexpected )", pattern)
    if message.startswith("unterminated character set"):
        return go("missing closing ]", pattern[pattern.rfind("[") :])
    if message.startswith("nothing to repeat"):
        repeat = _REPEAT.match(pattern, at)
        return go("missing argument to repetition operator", repeat.group(0) if repeat else pattern[at : at + 1])
    if message.startswith("multiple repeat"):
        return go("invalid nested repetition operator", pattern[max(at - 1, 0) : at + 1])
    if message.startswith("bad character range"):
        return go("invalid character class range", message.removeprefix("bad character range "))
    return go("invalid regular expression", pattern)
