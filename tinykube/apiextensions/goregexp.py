r"""Go's regexp syntax (RE2) as `regexp/syntax.Parse` reads it with `syntax.Perl`: whether a pattern is valid,
`regexp.Compile`'s error in Go's words (`error parsing regexp: <code>: `<text>``), and a Python pattern that
matches what Go's does.

The apiserver refuses a CRD schema whose `pattern` Go cannot compile and a CEL `matches()` whose literal pattern
Go cannot compile, so the parse follows Go's parser step for step: the same operand stack (so `^*` is a repeat of
`^` and `(*` or `|*` a repeat of nothing), the same repeat rules (no stacked repeats, counts up to 1000, nested
counts whose product passes 1000 refused), the same escapes, flag groups, named groups, classes (`*+` in a
bracket is two literal characters), POSIX and Unicode classes (the names Go 1.23 knows: Kubernetes 1.32's).

The Python translation wraps every atom in the flags in force (`(?i:a)`), so Go's `(?i)` in the middle of a
pattern keeps its meaning: it holds up to the end of the enclosing group, across `|`. `$` without `(?m)` is the
end of the text (`\Z`), a `{` that is no repeat is literal, `(?U)` swaps greediness. Unicode classes other than
letters and digits are approximated (by any character).
"""

from __future__ import annotations

from dataclasses import dataclass, field

_UNICODE_NAMES_TEXT = (
    "Adlam Ahom Anatolian_Hieroglyphs Any Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali "
    "Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid C Canadian_Aboriginal Carian Caucasian_Albanian Cc Cf "
    "Chakma Cham Cherokee Chorasmian Cn Co Common Coptic Cs Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret "
    "Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic "
    "Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew "
    "Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada "
    "Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi L LC Lao Latin Lepcha Limbu "
    "Linear_A Linear_B Lisu Ll Lm Lo Lt Lu Lycian Lydian M Mahajani Makasar Malayalam Mandaic Manichaean Marchen "
    "Masaram_Gondi Mc Me Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Mn "
    "Modi Mongolian Mro Multani Myanmar N Nabataean Nag_Mundari Nandinagari Nd New_Tai_Lue Newa Nko Nl No Nushu "
    "Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian "
    "Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage Osmanya P Pahawh_Hmong Palmyrene Pau_Cin_Hau "
    "Pc Pd Pe Pf Phags_Pa Phoenician Pi Po Ps Psalter_Pahlavi Rejang Runic S Samaritan Saurashtra Sc Sharada "
    "Shavian Siddham SignWriting Sinhala Sk Sm So Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac "
    "Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan Tifinagh "
    "Tirhuta Toto Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Z Zanabazar_Square Zl Zp Zs "
)
_UNICODE_NAMES = frozenset(_UNICODE_NAMES_TEXT.split())
_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}  # fmt: skip
_UNICODE_APPROX = {  # Python's re has no Unicode classes: letters and digits exact, a few scripts by their blocks
    "L": "L",
    "N": "\\d",
    "Nd": "\\d",
    "Z": " \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000",
    "Zs": " \\xa0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000",
    "Greek": "\\u0370-\\u03ff\\u1f00-\\u1fff",
    "Cyrillic": "\\u0400-\\u052f",
    "Latin": "A-Za-z\\xaa\\xba\\xc0-\\xd6\\xd8-\\xf6\\xf8-\\u02b8\\u1e00-\\u1eff",
    "Han": "\\u2e80-\\u2fdf\\u3005\\u3007\\u3021-\\u3029\\u3038-\\u303b\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff",
}
_PERL = {"d": "0-9", "s": "\\t\\n\\f\\r ", "w": "0-9A-Za-z_"}
_C_ESCAPES = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_MAX_RUNE = 0x10FFFF
_MAX_HEIGHT = 1000


class GoRegexpError(Exception):
    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


@dataclass(slots=True)
class _Node:
    """An operand on Go's parse stack: `(` and `|` are markers; repeats keep their bounds for the count check."""

    op: str  # "(" "|" "atom" "repeat" "group"
    py: str = ""
    low: int = 0
    high: int = 0
    subs: list[_Node] = field(default_factory=list)
    flags: frozenset[str] = frozenset()  # a "(" marker: the flags to restore at its ")"
    open_: str = ""  # a "(" marker: its Python opening


def _repeat_ok(node: _Node, n: int) -> bool:
    """Go's repeatIsValid: nested counted repeats multiply to at most n."""
    if node.op == "repeat" and node.high != -2:
        m = node.high if node.high >= 0 else node.low
        if m == 0:
            return True
        if m > n:
            return False
        n //= m
    return all(_repeat_ok(s, n) for s in node.subs)


def _hex(c: str) -> int:
    return int(c, 16) if c and c in "0123456789abcdefABCDEF" else -1


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.whole = pattern
        self.stack: list[_Node] = []
        self.flags: frozenset[str] = frozenset()
        self.depth = 0
        self.unicode = False

    # -- the stack --

    def push(self, py: str, *, kind: str = "atom") -> None:
        self.stack.append(_Node(kind, py))

    def atom(self, py: str, *flags: str) -> str:
        """`py` under the flags in force that change what it matches."""
        on = "".join(f for f in flags if f in self.flags)
        return f"(?{on}:{py})" if on else py

    def literal(self, c: str) -> None:
        text = _escape(c)
        self.push(self.atom(text, "i") if c.lower() != c.upper() else text)

    def concat(self) -> None:
        i = len(self.stack)
        while i > 0 and self.stack[i - 1].op not in ("(", "|"):
            i -= 1
        parts = self.stack[i:]
        del self.stack[i:]
        self.stack.append(_Node("group", "".join(p.py for p in parts), subs=parts))

    def alternate(self) -> None:
        i = len(self.stack)
        while i > 0 and self.stack[i - 1].op != "(":
            i -= 1
        alts = [n for n in self.stack[i:] if n.op != "|"]
        del self.stack[i:]
        self.stack.append(_Node("group", "|".join(a.py for a in alts), subs=alts))

    def vertical_bar(self) -> None:
        self.concat()
        self.stack.append(_Node("|"))

    def right_paren(self) -> None:
        self.concat()
        self.alternate()
        if len(self.stack) < 2 or self.stack[-2].op != "(":
            raise GoRegexpError("unexpected )", self.whole)
        body, marker = self.stack.pop(), self.stack.pop()
        self.flags = marker.flags
        self.depth -= 1
        self.stack.append(_Node("group", f"{marker.open_}{body.py})", subs=[body]))

    def left_paren(self, open_: str) -> None:
        self.depth += 1
        if self.depth > _MAX_HEIGHT:
            raise GoRegexpError("expression nests too deeply", self.whole)
        self.stack.append(_Node("(", flags=self.flags, open_=open_))

    def repeat(self, op: str, low: int, high: int, before: str, after: str, last_repeat: str) -> str:
        lazy = False
        if after.startswith("?"):
            after, lazy = after[1:], True
        if last_repeat:
            raise GoRegexpError("invalid nested repetition operator", last_repeat[: len(last_repeat) - len(after)])
        spelled = before[: len(before) - len(after)]
        if not self.stack or self.stack[-1].op in ("(", "|"):
            raise GoRegexpError("missing argument to repetition operator", spelled)
        sub = self.stack.pop()
        if "U" in self.flags:
            lazy = not lazy
        node = _Node("repeat", f"(?:{sub.py}){op}{'?' if lazy else ''}", low, high, [sub])
        if op.startswith("{") and (low >= 2 or high >= 2) and not _repeat_ok(node, 1000):
            raise GoRegexpError("invalid repeat count", spelled)
        self.stack.append(node)
        return after

    # -- the pieces --

    def parse(self) -> str:
        t, last_repeat = self.whole, ""
        while t:
            repeat = ""
            c = t[0]
            if c == "(":
                t = self.perl_flags(t) if t.startswith("(?") else self.capture(t)
            elif c == "|":
                self.vertical_bar()
                t = t[1:]
            elif c == ")":
                self.right_paren()
                t = t[1:]
            elif c == "^":
                self.push(self.atom("^", "m") if "m" in self.flags else "\\A")
                t = t[1:]
            elif c == "$":
                self.push("(?m:$)" if "m" in self.flags else "\\Z")
                t = t[1:]
            elif c == ".":
                self.push(self.atom(".", "s"))
                t = t[1:]
            elif c == "[":
                t = self.char_class(t)
            elif c in "*+?":
                repeat, t = t, self.repeat(c, 0, 0, t, t[1:], last_repeat)
            elif c == "{":
                parsed = _parse_repeat(t)
                if parsed is None:
                    self.push("\\{")
                    t = t[1:]
                else:
                    low, high, after = parsed
                    spelled = t[: len(t) - len(after)]
                    if low < 0 or low > 1000 or high > 1000 or (high >= 0 and low > high):
                        raise GoRegexpError("invalid repeat count", spelled)
                    op = f"{{{low}}}" if high == low else (f"{{{low},}}" if high < 0 else f"{{{low},{high}}}")
                    repeat, t = t, self.repeat(op, low, high, t, after, last_repeat)
            elif c == "\\":
                t = self.backslash(t)
            else:
                self.literal(c)
                t = t[1:]
            last_repeat = repeat
        self.concat()
        self.alternate()
        if len(self.stack) != 1:
            raise GoRegexpError("missing closing )", self.whole)
        return self.stack[0].py

    def capture(self, t: str) -> str:
        self.left_paren("(")
        return t[1:]

    def perl_flags(self, s: str) -> str:
        if (len(s) > 4 and s[2] == "P" and s[3] == "<") or (len(s) > 3 and s[2] == "<"):
            start = 4 if s[2] == "P" else 3
            end = s.find(">")
            if end < 0:
                raise GoRegexpError("invalid named capture", s)
            name = s[start:end]
            if not name or any(not (ch == "_" or (ch.isascii() and ch.isalnum())) for ch in name):
                raise GoRegexpError("invalid named capture", s[: end + 1])
            self.left_paren("(")  # names may repeat in Go; Python's groups stay unnamed
            return s[end + 1 :]
        flags, negated, saw = set(self.flags), False, False
        t = s[2:]
        while t:
            c, t = t[0], t[1:]
            if c in "imsU":
                (flags.discard if negated else flags.add)(c)
                saw = True
            elif c == "-":
                if negated:
                    break
                negated, saw = True, False
            elif c in ":)":
                if negated and not saw:
                    break
                if c == ":":
                    self.left_paren("(?:")
                self.flags = frozenset(flags)
                return t
            else:
                break
        raise GoRegexpError("invalid or unsupported Perl syntax", s[: len(s) - len(t)])

    def backslash(self, t: str) -> str:
        if len(t) >= 2:
            e = t[1]
            if e in "Abz":
                self.push({"A": "\\A", "b": "\\b", "z": "\\Z"}[e])
                return t[2:]
            if e == "B":
                self.push("\\B")
                return t[2:]
            if e == "C":
                raise GoRegexpError("invalid escape sequence", t[:2])
            if e == "Q":
                body, _, rest = t[2:].partition("\\E")
                for c in body:
                    self.literal(c)
                return rest
            if e in "pP":
                cls, rest = self.unicode_class(t)
                self.push(cls)
                return rest
            if e in "dDsSwW":
                body = _PERL[e.lower()]
                self.push(f"[{'^' if e.isupper() else ''}{body}]")
                return t[2:]
        c, rest = _parse_escape(t)
        self.literal(c)
        return rest

    def unicode_class(self, s: str) -> tuple[str, str]:
        """`\\pL`, `\\p{Greek}`, `\\P{^Han}` → a Python class (letters and digits exact, the rest approximated)."""
        negated = s[1] == "P"
        t = s[2:]
        if t.startswith("{"):
            end = s.find("}")
            if end < 0:
                raise GoRegexpError("invalid character class range", s)
            seq, rest, name = s[: end + 1], s[end + 1 :], s[3:end]
        else:
            seq, rest = s[: 3 if t else 2], t[1:]
            name = seq[2:]
        if name.startswith("^"):
            negated, name = not negated, name[1:]
        if name not in _UNICODE_NAMES:
            raise GoRegexpError("invalid character class range", seq)
        self.unicode = True
        body = _UNICODE_APPROX.get(name, "\\s\\S")
        if body == "L":
            return ("[\\W\\d_]" if negated else "[^\\W\\d_]"), rest
        return (f"[^{body}]" if negated else f"[{body}]"), rest

    def char_class(self, s: str) -> str:
        """A bracket expression: plain members become one Python class, classes Python cannot nest (negated POSIX
        and Unicode classes) are alternatives beside it."""
        t = s[1:]
        negated = t.startswith("^")
        if negated:
            t = t[1:]
        parts: list[str] = []
        others: list[str] = []
        first = True
        while not t or t[0] != "]" or first:
            first = False
            if len(t) > 2 and t[0] == "[" and t[1] == ":":
                end = t.find(":]", 2)
                if end >= 0:
                    name = t[2:end]
                    body = _POSIX.get(name.removeprefix("^"))
                    if body is None:
                        raise GoRegexpError("invalid character class range", t[: end + 2])
                    if name.startswith("^"):
                        others.append(f"[^{body}]")
                    else:
                        parts.append(body)
                    t = t[end + 2 :]
                    continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in "pP":
                cls, t = self.unicode_class(t)
                others.append(cls)
                continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in "dDsSwW":
                body = _PERL[t[1].lower()]
                (others.append(f"[^{body}]") if t[1].isupper() else parts.append(body))
                t = t[2:]
                continue
            whole_range = t
            low, t = _class_char(t, s)
            high = low
            if len(t) >= 2 and t[0] == "-" and t[1] != "]":
                high, t = _class_char(t[1:], s)
                if high < low:
                    raise GoRegexpError("invalid character class range", whole_range[: len(whole_range) - len(t)])
            pair = _escape(low) if low == high else f"{_escape(low)}-{_escape(high)}"
            parts.append(pair)
        self.push(_class(parts, others, negated=negated, fold="i" in self.flags))
        return t[1:]


def _class(parts: list[str], others: list[str], *, negated: bool, fold: bool) -> str:
    alternatives = ([f"[{''.join(parts)}]"] if parts else []) + others
    if not alternatives:
        return "[\\s\\S]" if negated else "[^\\s\\S]"
    one = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
    if fold:
        one = f"(?i:{one})"
    return f"(?!{one})[\\s\\S]" if negated else one


def _escape(c: str) -> str:
    return "\\" + c if c in "\\.^$|?*+()[]{}-#&~ \t\n\r\v\f" else c


def _class_char(t: str, whole: str) -> tuple[str, str]:
    if not t:
        raise GoRegexpError("missing closing ]", whole)
    if t[0] == "\\":
        return _parse_escape(t)
    return t[0], t[1:]


def _parse_escape(s: str) -> tuple[str, str]:
    """Go's parseEscape: the character an escape stands for, and the rest."""
    t = s[1:]
    if not t:
        raise GoRegexpError("trailing backslash at end of expression", "")
    c, t = t[0], t[1:]
    if c in _C_ESCAPES:
        return _C_ESCAPES[c], t
    if c.isascii() and not c.isalnum():
        return c, t
    if c in "01234567" and (c == "0" or (t and t[0] in "01234567")):
        value = int(c)
        for _ in range(2):
            if not t or t[0] not in "01234567":
                break
            value, t = value * 8 + int(t[0]), t[1:]
        return chr(value), t
    if c == "x" and t:
        c, t = t[0], t[1:]
        if c == "{":
            value, digits = 0, 0
            while t:
                c, t = t[0], t[1:]
                if c == "}":
                    if digits:
                        return chr(value), t
                    break
                v = _hex(c)
                if v < 0:
                    break
                value = value * 16 + v
                if value > _MAX_RUNE:
                    break
                digits += 1
        else:
            x = _hex(c)
            y, t = (_hex(t[0]), t[1:]) if t else (-1, t)
            if x >= 0 and y >= 0:
                return chr(x * 16 + y), t
    raise GoRegexpError("invalid escape sequence", s[: len(s) - len(t)])


def _parse_int(s: str) -> tuple[int, str] | None:
    if not s or not s[0].isdigit() or not s[0].isascii():
        return None
    if len(s) >= 2 and s[0] == "0" and s[1].isdigit():
        return None
    i = 0
    while i < len(s) and s[i] in "0123456789":
        i += 1
    value = 0
    for d in s[:i]:
        if value >= 10**8:
            value = -1
            break
        value = value * 10 + int(d)
    return value, s[i:]


def _parse_repeat(s: str) -> tuple[int, int, str] | None:
    """`{n}`, `{n,}`, `{n,m}` at the start of s: (low, high or -1, rest), or None if it is no repeat."""
    first = _parse_int(s[1:])
    if first is None:
        return None
    low, t = first
    if not t:
        return None
    if t[0] != ",":
        high = low
    else:
        t = t[1:]
        if not t:
            return None
        if t[0] == "}":
            high = -1
        else:
            second = _parse_int(t)
            if second is None:
                return None
            high, t = second
            if high < 0:
                low = -1
    if not t or t[0] != "}":
        return None
    return low, high, t[1:]


def go_regexp_error(pattern: str) -> str | None:
    """`regexp.Compile`'s error for `pattern`, or None when Go accepts it."""
    try:
        _Parser(pattern).parse()
    except GoRegexpError as err:
        return str(err)
    return None


def to_python(pattern: str) -> tuple[str, bool]:
    """The Python pattern matching what Go's `pattern` matches, and whether it uses Unicode classes (else RE2's
    `\\d \\s \\w \\b` are ASCII). Raises GoRegexpError for a pattern Go refuses."""
    parser = _Parser(pattern)
    return parser.parse(), parser.unicode
