"""A static look at a CEL rule against its schema: what cel-go's type checker would refuse, and what a rule reads.

The `cel` package parses and evaluates CEL but does not type-check against a declared type, so this scanner
walks the rule's tokens and, for every `self`/`oldSelf` field chain (`self.spec.replicas`, `self.items[0].name`,
`has(self.a.z)`, and macro variables such as the `i` in `self.items.all(i, i.name != '')`), follows the schema as
cel-go's declared type would: a missing property is `undefined field 'z'`, a root (or embedded resource)
`metadata` has only `name` and `generateName`, an additionalProperties map takes any key. Identifiers and
functions nobody declared are `undeclared reference to 'x' (in container '')`. Issues print as cel-go prints them
(`ERROR: <input>:1:12: ...` and a caret line).

It also reports what evaluation needs: whether the rule uses `oldSelf`, which top-level fields of `self` it reads
(so only those are handed to the evaluator, the expensive part of a call) and the functions it calls. The cost
estimate is `celcost.py`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tinykube.api.golang import parse_go_duration, time_parse_error
from tinykube.apiextensions import formats
from tinykube.apiextensions.node import Node

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>(?:[rR][bB]?|[bB][rR]?)?
        (?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)[uU]?)
  | (?P<id>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\.\?|==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)
MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
_UNSUPPORTED_MACROS = frozenset(("transformList", "transformMap", "transformMapEntry", "sortBy"))
_KEYWORDS = frozenset(("true", "false", "null", "in"))
_TYPE_NAMES = frozenset(("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"))
NAMESPACES = frozenset(("optional", "sets", "lists", "strings", "math", "base64", "cel", "format", "ip"))
GLOBAL_FUNCTIONS = frozenset(
    (
        "size",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "timestamp",
        "duration",
        "dyn",
        "type",
        "has",
        "matches",
        "url",
        "isURL",
        "quantity",
        "isQuantity",
        "ip",
        "isIP",
        "cidr",
        "isCIDR",
        "ip.isCanonical",
        "optional.of",
        "optional.none",
        "optional.ofNonZeroValue",
        "sets.contains",
        "sets.equivalent",
        "sets.intersects",
        "lists.range",
        "strings.quote",
        "format.dns1123Label",
        "format.dns1123Subdomain",
        "format.dns1035Label",
        "format.qualifiedName",
        "format.dns1123LabelPrefix",
        "format.dns1123SubdomainPrefix",
        "format.dns1035LabelPrefix",
        "format.labelValue",
        "format.uri",
        "format.uuid",
        "format.byte",
        "format.date",
        "format.datetime",
        "format.named",
    )
)
METHODS = frozenset(
    (
        *MACROS,
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
        "hasValue",
        "value",
        "orValue",
        "or",
        # Kubernetes lists library
        "isSorted",
        "sum",
        "min",
        "max",
        "indexOf",
        "lastIndexOf",
        # Kubernetes regex library
        "find",
        "findAll",
        # cel-go strings extension
        "charAt",
        "lowerAscii",
        "upperAscii",
        "replace",
        "split",
        "substring",
        "trim",
        "join",
        "reverse",
        # cel-go lists extension
        "distinct",
        "flatten",
        "slice",
        "sort",
        "first",
        "last",
        # URLs
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
        "getQuery",
        # Quantity
        "isInteger",
        "asInteger",
        "asApproximateFloat",
        "sign",
        "add",
        "sub",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        # IP / CIDR
        "family",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
        "containsIP",
        "containsCIDR",
        "prefixLength",
        "masked",
        "ip",
        # format library, strings.format
        "validate",
        "format",
    )
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "str", "num", "id", "op"
    text: str
    pos: int  # offset in the source


@dataclass(slots=True)
class Issue:
    pos: int
    message: str


@dataclass(slots=True)
class Analysis:
    """What a rule needs and what is wrong with it."""

    issues: list[Issue] = field(default_factory=list)
    uses_old_self: bool = False
    self_fields: set[str] | None = field(default_factory=set)  # escaped names; None: the whole of `self`
    old_self_fields: set[str] | None = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    renames: list[int] = field(default_factory=list)  # source offsets of `.if` style selections of `__if__` fields
    uses_size: bool = False


def tokenize(src: str) -> list[Token]:
    out: list[Token] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            out.append(Token("op", src[pos], pos))  # let the real parser report it
            pos += 1
            continue
        kind = m.lastgroup or "op"
        if kind != "ws":
            out.append(Token(kind, m.group(), pos))
        pos = m.end()
    return out


def render(src: str, issues: list[Issue]) -> str:
    """cel-go's `Issues.String()`: one `ERROR: <input>:line:col: msg` block per issue, with the source line."""
    blocks = []
    for issue in sorted(issues, key=lambda i: i.pos):
        line_no = src.count("\n", 0, issue.pos) + 1
        start = src.rfind("\n", 0, issue.pos) + 1
        end = src.find("\n", issue.pos)
        line = src[start : end if end >= 0 else len(src)]
        col = issue.pos - start
        blocks.append(f"ERROR: <input>:{line_no}:{col + 1}: {issue.message}\n | {line}\n | {'.' * col}^")
    return "\n".join(blocks)


# ---- CEL identifiers for schema properties (upstream's cel.Escape) -------------------------------------------------

_RESERVED = frozenset(
    (
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    )
)
_ESCAPE = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape(name: str) -> str | None:
    """The CEL field name of property `name`, or None if it cannot be one (then CEL does not see the field)."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if re.fullmatch(r"[a-zA-Z0-9_./-]*", name) is None:
        return None
    return re.sub(r"__|[./-]", lambda m: _ESCAPE[m.group()], name)


# ---- types as the checker sees them --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _T:
    """A declared type: a schema node (`resource`: root or embedded, so TypeMeta and restricted metadata), the
    restricted `metadata`, or unknown (anything goes: a plain string, too, has no fields the scan follows)."""

    node: Node | None = None
    resource: bool = False
    meta: bool = False


_UNKNOWN = _T()
_META = _T(meta=True)


def node_type(node: Node, *, resource: bool) -> _T:
    return _T(node=node, resource=resource)


def fields_of(node: Node) -> dict[str, tuple[str, Node]]:
    """Escaped CEL field name → (property name, schema), for the properties CEL can see."""
    out: dict[str, tuple[str, Node]] = {}
    for name, child in (node.properties or {}).items():
        escaped = escape(name)
        if escaped is not None and (child.type or child.int_or_string):
            out[escaped] = (name, child)
    return out


KEYWORD_FIELDS = _RESERVED - _KEYWORDS  # `x.if` selects the field CEL calls `__if__`


def declares_type_meta(node: Node) -> bool:
    """The schema spells out kind, apiVersion and metadata.name/generateName (then upstream uses it as it is)."""
    props = node.properties or {}
    meta = props.get("metadata")
    return (
        all(k in props and props[k].type == "string" for k in ("kind", "apiVersion"))
        and meta is not None
        and meta.type == "object"
        and all(k in (meta.properties or {}) and meta.properties[k].type == "string" for k in ("name", "generateName"))  # type: ignore[index]
    )


def field_name(name: str) -> str:
    """The declared CEL field a selection `.name` refers to."""
    return f"__{name}__" if name in KEYWORD_FIELDS else name


def _select(t: _T, name: str) -> tuple[_T, str | None]:
    """The type of `t.name`, and an issue message if the checker refuses the selection."""
    if t.meta:
        return (_UNKNOWN, None) if name in ("name", "generateName") else (_UNKNOWN, f"undefined field '{name}'")
    node = t.node
    if node is None or node.int_or_string or node.type != "object":
        return _UNKNOWN, None
    resource = t.resource and not declares_type_meta(node)
    if resource and name in ("apiVersion", "kind"):
        return _UNKNOWN, None
    if resource and name == "metadata":
        return _META, None
    if node.properties is not None or resource:
        found = fields_of(node).get(field_name(name))
        if found is None:
            return _UNKNOWN, f"undefined field '{name}'"
        return node_type(found[1], resource=found[1].embedded), None
    if node.additional is not None:
        return node_type(node.additional, resource=node.additional.embedded), None
    return _UNKNOWN, f"undefined field '{name}'"


def _element(t: _T) -> _T:
    node = t.node
    if node is None:
        return _UNKNOWN
    if node.type == "array" and node.items is not None:
        return node_type(node.items, resource=node.items.embedded)
    if node.type == "object" and node.additional is not None and node.properties is None:
        return node_type(node.additional, resource=node.additional.embedded)
    return _UNKNOWN


def _map_key_type(t: _T) -> _T:
    """A macro over a map ranges over its keys (strings)."""
    node = t.node
    if node is not None and node.type == "object":
        return _UNKNOWN
    return _element(t)


# ---- the scan -----------------------------------------------------------------------------------------------------


class _Scanner:
    def __init__(self, src: str, tokens: list[Token], root: _T, *, optional_old_self: bool) -> None:
        self.src = src
        self.tokens = tokens
        self.root = root
        self.optional_old_self = optional_old_self
        self.result = Analysis()
        self.match = _matching(tokens)

    def issue(self, at: int, message: str) -> None:
        self.result.issues.append(Issue(self.tokens[at].pos, message))

    def scan(self, lo: int, hi: int, scope: dict[str, _T]) -> None:
        """Scan tokens[lo:hi]."""
        toks = self.tokens
        i = lo
        while i < hi:
            tok = toks[i]
            if tok.kind == "op" and tok.text in (".", ".?") and i + 1 < hi and toks[i + 1].kind == "id":
                if tok.text == ".?":
                    self.issue(i, "optional field selection ('.?') is not supported by this server")
                i = self.member(i, hi, _UNKNOWN, scope)
                continue
            if tok.kind != "id":
                i += 1
                continue
            i = self.identifier(i, hi, scope)

    def identifier(self, i: int, hi: int, scope: dict[str, _T]) -> int:
        """The identifier at token i, checked; the index after what it took."""
        toks = self.tokens
        name = toks[i].text
        calls = i + 1 < hi and toks[i + 1].text == "("
        if name in _KEYWORDS:
            return i + 1
        if calls:
            self.result.functions.add(name)
            if name == "size":
                self.result.uses_size = True
            if name not in GLOBAL_FUNCTIONS:
                self.issue(i, f"undeclared reference to '{name}' (in container '')")
            elif name in ("duration", "timestamp"):
                self.literal_argument(i + 1, hi, name)
            return i + 1
        if name == "google" and i + 4 < hi and toks[i + 2].text == "protobuf":
            self.issue(i, "google.protobuf type names are not supported by this server")
            return i + 5
        if name in NAMESPACES and i + 3 < hi and toks[i + 1].text == "." and toks[i + 3].text == "(":
            full = f"{name}.{toks[i + 2].text}"
            self.result.functions.add(full)
            if full == "cel.bind":
                self.issue(i, "cel.bind is not supported by this server")
                return self.match.get(i + 3, hi - 1) + 1
            if full not in GLOBAL_FUNCTIONS:
                self.issue(i, f"undeclared reference to '{full}' (in container '')")
            return i + 3
        if name in ("self", "oldSelf") and name not in scope:
            if name == "oldSelf":
                self.result.uses_old_self = True
            t = self.root if not (name == "oldSelf" and self.optional_old_self) else _UNKNOWN
            return self.chain(i, hi, t, scope, top=name)
        if name in scope:
            return self.chain(i, hi, scope[name], scope, top=None)
        if name in _TYPE_NAMES:
            return i + 1
        self.issue(i, f"undeclared reference to '{name}' (in container '')")
        return i + 1

    def chain(self, i: int, hi: int, t: _T, scope: dict[str, _T], *, top: str | None) -> int:
        """Follow `var.a.b[...]...` from token i; returns the next index."""
        toks = self.tokens
        j = i + 1
        first = True
        while j < hi:
            tok = toks[j]
            if tok.text == "." and j + 1 < hi and toks[j + 1].kind == "id":
                if j + 2 < hi and toks[j + 2].text == "(":
                    if first and top is not None:
                        self.whole(top)
                    return self.call(j, hi, t, scope)
                name = toks[j + 1].text
                if first and top is not None:
                    self.field_used(top, name)
                if name in KEYWORD_FIELDS and t.node is not None and t.node.properties is not None:
                    self.result.renames.append(toks[j + 1].pos)
                t, problem = _select(t, name)
                if problem is not None:
                    self.issue(j, problem)
                first = False
                j += 2
                continue
            if tok.text == "[":
                if first and top is not None:
                    self.whole(top)
                close = self.match.get(j, hi - 1)
                self.scan(j + 1, close, scope)
                t = _element(t)
                first = False
                j = close + 1
                continue
            break
        if first and top is not None:
            self.whole(top)
        return j

    def member(self, j: int, hi: int, t: _T, scope: dict[str, _T]) -> int:
        """`.name` on something the scanner does not type (a call result, a literal ...)."""
        toks = self.tokens
        if j + 2 < hi and toks[j + 2].text == "(":
            return self.call(j, hi, t, scope)
        return j + 2

    def call(self, j: int, hi: int, t: _T, scope: dict[str, _T]) -> int:
        """`.name(args)` at token j (the dot): macros bind variables; other methods are checked by name."""
        toks = self.tokens
        name = toks[j + 1].text
        open_ = j + 2
        close = self.match.get(open_, hi - 1)
        self.result.functions.add(name)
        if name == "size":
            self.result.uses_size = True
        if name in MACROS:
            self.macro(j, open_, close, t, scope)
            return close + 1
        if name == "matches":
            self.literal_argument(open_, close + 1, name)
        if name in _UNSUPPORTED_MACROS:
            self.issue(j + 1, f"the {name} macro is not supported by this server")
        elif name not in METHODS:
            self.issue(j + 1, f"undeclared reference to '{name}' (in container '')")
        self.scan(open_ + 1, close, scope)
        return close + 1

    def literal_argument(self, open_: int, hi: int, function: str) -> None:
        """cel-go's literal validators: a constant argument of duration(), timestamp() or matches() must be valid."""
        toks = self.tokens
        at = open_ + 1
        negative = at < hi and toks[at].text == "-"
        at += negative
        if at + 1 >= hi or toks[at + 1].text != ")" or toks[at].kind not in ("str", "num"):
            return
        arg = toks[at] if not negative else Token("num", "-" + toks[at].text, toks[open_ + 1].pos)
        if function == "duration":
            ok = arg.kind == "str" and parse_go_duration(string_literal(arg.text)) is not None
            problem = "invalid duration argument"
        elif function == "timestamp":
            ok = _valid_timestamp(arg)
            problem = "invalid timestamp"
        else:
            ok = arg.kind == "str" and _valid_regex(string_literal(arg.text))
            problem = "invalid matches argument"
        if not ok:
            self.issue(open_ + 1, problem)

    def macro(self, j: int, open_: int, close: int, t: _T, scope: dict[str, _T]) -> None:
        toks = self.tokens
        args = _split_args(toks, open_ + 1, close, self.match)
        if len(args) == 3 and all(toks[a].kind == "id" and b == a + 1 for a, b in args[:2]):
            self.issue(j + 1, f"the two-variable form of {toks[j + 1].text} is not supported by this server")
            return
        three = len(args) == 3 and toks[j + 1].text == "map"  # map(x, filter, transform)
        if not (len(args) == 2 or three) or toks[args[0][0]].kind != "id" or args[0][1] != args[0][0] + 1:
            self.scan(open_ + 1, close, scope)
            return
        var = toks[args[0][0]].text
        inner = {**scope, var: _map_key_type(t) if t.node is not None and t.node.type == "object" else _element(t)}
        for lo, hi in args[1:]:
            self.scan(lo, hi, inner)

    def field_used(self, top: str, name: str) -> None:
        attr = "self_fields" if top == "self" else "old_self_fields"
        used = getattr(self.result, attr)
        if used is not None:
            used.add(field_name(name))

    def whole(self, top: str) -> None:
        setattr(self.result, "self_fields" if top == "self" else "old_self_fields", None)


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_STRING_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2}))"
)


def string_literal(text: str) -> str:
    """The value of a CEL string literal token."""
    raw = False
    while text and text[0] in "rRbB":
        raw = raw or text[0] in "rR"
        text = text[1:]
    quote = text[:3] if text[:3] in ("'''", '"""') else text[:1]
    body = text[len(quote) : len(text) - len(quote)]
    if raw:
        return body

    def unescape(m: re.Match[str]) -> str:
        if m.group(1):
            return _ESCAPES.get(m.group(1), m.group(1))
        code = m.group(2) or m.group(3) or m.group(4)
        return chr(int(code, 16)) if code else chr(int(m.group(5), 8))

    return _STRING_ESCAPE.sub(unescape, body)


def _valid_regex(pattern: str) -> bool:
    try:
        formats.compile_re2(pattern)
    except re.error:
        return False
    return True


_MIN_UNIX, _MAX_UNIX = -62135596800, 253402300799


def _valid_timestamp(arg: Token) -> bool:
    if arg.kind == "num":
        try:
            return _MIN_UNIX <= int(arg.text.rstrip("uU"), 0) <= _MAX_UNIX
        except ValueError:
            return False
    text = string_literal(arg.text)
    return time_parse_error(text) is None and not text.startswith("0000")


def _matching(tokens: list[Token]) -> dict[int, int]:
    """Index of each opening bracket → index of its closing one."""
    out: dict[int, int] = {}
    stack: list[int] = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for i, tok in enumerate(tokens):
        if tok.kind != "op":
            continue
        if tok.text in "([{":
            stack.append(i)
        elif tok.text in pairs and stack and tokens[stack[-1]].text == pairs[tok.text]:
            out[stack.pop()] = i
    return out


def _split_args(tokens: list[Token], lo: int, hi: int, match: dict[int, int]) -> list[tuple[int, int]]:
    """Top-level comma-separated ranges of tokens[lo:hi]."""
    out: list[tuple[int, int]] = []
    start = i = lo
    while i < hi:
        text = tokens[i].text
        if tokens[i].kind == "op" and text in "([{" and i in match:
            i = match[i] + 1
            continue
        if text == ",":
            out.append((start, i))
            start = i + 1
        i += 1
    if start < hi:
        out.append((start, hi))
    return out


def analyze(src: str, node: Node, *, resource: bool, optional_old_self: bool = False) -> Analysis:
    """Statically check rule (or messageExpression) `src` written at schema `node`."""
    tokens = tokenize(src)
    scanner = _Scanner(src, tokens, node_type(node, resource=resource), optional_old_self=optional_old_self)
    scanner.scan(0, len(tokens), {})
    return scanner.result
