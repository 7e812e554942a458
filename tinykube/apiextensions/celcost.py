"""cel-go's static cost estimate of a CRD rule, with the sizes apiextensions gives the schema's values.

Upstream refuses a rule whose worst-case cost, times the number of times it can run, is over 10^7 (schema.py
applies the limits). The worst case is cel-go's `checker.Cost`: the rule is parsed into cel-go's AST (macros
expanded into comprehensions as cel-go expands them), every node is given a type, and costs add up as cel-go's
coster adds them — an identifier or a field selection 1, a constant 0, `has()` 0 (Kubernetes turns presence-test
cost off), a function call 1 plus its arguments, string equality and comparison a tenth of the shorter operand's
length bound, `matches` the string's tenth times a quarter of the pattern's length, a comprehension its range's
size times the cost of one step — and Kubernetes' own functions cost as `k8s.io/apiserver/pkg/cel/library`
estimates them.

Sizes follow upstream's `SchemaDeclType`: a list without `maxItems` holds as many of its smallest elements as fit
in a 3 MiB request, a map without `maxProperties` likewise (6 bytes per entry besides the value), a string without
`maxLength` 3 MiB - 2 bytes (`maxLength` counts runes, so bytes are 4 times that), an enum its longest value.
Sizes are looked up as upstream's sizeEstimator does: by the field path of a value from `self` (`@items`, `@keys`,
`@values` for elements); values without a path (call results) have only what the function reports.

Only the maximum of cel-go's (min, max) estimates decides, so costs are maxima; sizes keep both ends, as a few
Kubernetes estimates (replace, join) use the minimum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tinykube.apiextensions import celscan
from tinykube.apiextensions.node import UNSET, Node

MAX_REQUEST_BYTES = 3 * 1024 * 1024
U64 = 2**64 - 1
STRING_FACTOR = 0.1  # common.StringTraversalCostFactor
REGEX_FACTOR = 0.25  # common.RegexStringLengthCostFactor
LIST_CREATE, MAP_CREATE, STRUCT_CREATE = 10, 30, 40
MAX_NAME_FORMAT_REGEX_SIZE = 128
MAX_FORMAT_SIZE = 64
ACCUMULATOR = "__result__"


# ---- saturating arithmetic as cel-go's ----------------------------------------------------------------------------


def _add(x: int, y: int) -> int:
    return min(x + y, U64)


def _mul(x: int, y: int) -> int:
    return min(x * y, U64)


def _factor(x: int, y: float) -> int:
    """multiplyByCostFactor: x*y rounded up, in float64 as cel-go computes it."""
    product = math.ceil(float(x) * y)
    return U64 if product >= 2.0**64 else int(product)


@dataclass(frozen=True, slots=True)
class Size:
    lo: int
    hi: int

    def add(self, other: Size) -> Size:
        return Size(_add(self.lo, other.lo), _add(self.hi, other.hi))

    def mul(self, other: Size) -> Size:
        return Size(_mul(self.lo, other.lo), _mul(self.hi, other.hi))

    def union(self, other: Size) -> Size:
        return Size(min(self.lo, other.lo), max(self.hi, other.hi))

    def cost(self, factor: float) -> int:
        return _factor(self.hi, factor)


UNKNOWN_SIZE = Size(0, U64)
ONE = Size(1, 1)


# ---- the AST (cel-go's, macros expanded) --------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Expr:
    kind: str  # "lit", "ident", "select", "call", "list", "map", "struct", "comp"
    value: object = None  # literal value; identifier or field or function name
    lit_kind: str = ""  # for literals: "string", "bytes", "int", "uint", "double", "bool", "null"
    operand: Expr | None = None  # select operand, call target
    args: list[Expr] = field(default_factory=list)  # call args, list elements, map keys and values alternating
    test_only: bool = False
    # comprehensions
    var: str = ""
    range_: Expr | None = None
    init: Expr | None = None
    cond: Expr | None = None
    step: Expr | None = None
    result: Expr | None = None


def _lit(kind: str, value: object) -> Expr:
    return Expr("lit", value, kind)


def _call(name: str, *args: Expr, target: Expr | None = None) -> Expr:
    return Expr("call", name, operand=target, args=list(args))


def _accu() -> Expr:
    return Expr("ident", ACCUMULATOR)


class ParseError(Exception):
    pass


_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}


class _Parser:
    """CEL's grammar over celscan's tokens; only rules the real parser accepted get here."""

    def __init__(self, tokens: list[celscan.Token]) -> None:
        self.toks = tokens
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j].text if j < len(self.toks) else ""

    def take(self, text: str | None = None) -> celscan.Token:
        if self.i >= len(self.toks) or (text is not None and self.toks[self.i].text != text):
            raise ParseError(text or "token")
        self.i += 1
        return self.toks[self.i - 1]

    def parse(self) -> Expr:
        e = self.expr()
        if self.i != len(self.toks):
            raise ParseError("trailing tokens")
        return e

    def expr(self) -> Expr:
        cond = self.binary_chain(self.and_chain, {"||": "_||_"})
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.binary_chain(self.and_chain, {"||": "_||_"})
        self.take(":")
        return _call("_?_:_", cond, yes, self.expr())

    def and_chain(self) -> Expr:
        return self.binary_chain(self.relation, {"&&": "_&&_"})

    def relation(self) -> Expr:
        return self.binary_chain(self.additive, _RELATIONS)

    def additive(self) -> Expr:
        return self.binary_chain(self.multiplicative, _ADDITIVE)

    def multiplicative(self) -> Expr:
        return self.binary_chain(self.unary, _MULTIPLICATIVE)

    def binary_chain(self, operand: object, ops: dict[str, str]) -> Expr:
        parse = operand  # a bound method
        left: Expr = parse()  # type: ignore[operator]
        while self.i < len(self.toks) and self.toks[self.i].kind in ("op", "id") and self.peek() in ops:
            name = ops[self.take().text]
            left = _call(name, left, parse())  # type: ignore[operator]
        return left

    def unary(self) -> Expr:
        if self.peek() == "-" and self.i + 1 < len(self.toks) and self.toks[self.i + 1].kind == "num":
            self.take("-")
            return self.member(negative=True)
        for op, name in (("!", "!_"), ("-", "-_")):
            if self.peek() == op:
                count = 0
                while self.peek() == op:
                    self.take()
                    count += 1
                operand = self.member()
                return operand if count % 2 == 0 else _call(name, operand)
        return self.member()

    def member(self, *, negative: bool = False) -> Expr:
        e = self.primary(negative=negative)
        while True:
            text = self.peek()
            if text in (".", ".?"):
                self.take()
                name = self.take().text
                e = self.member_call(name, e) if self.peek() == "(" else Expr("select", name, operand=e)
            elif text == "[":
                self.take("[")
                index = self.expr()
                self.take("]")
                e = _call("_[_]", e, index)
            elif text == "{" and e.kind in ("ident", "select"):
                e = self.struct()
            else:
                return e

    def arguments(self, close: str) -> list[Expr]:
        args: list[Expr] = []
        while self.peek() != close:
            args.append(self.expr())
            if self.peek() == ",":
                self.take(",")
        self.take(close)
        return args

    def member_call(self, name: str, target: Expr) -> Expr:
        self.take("(")
        args = self.arguments(")")
        qualified = _qualified(target)
        if qualified is not None and qualified in celscan.NAMESPACES:
            return _call(f"{qualified}.{name}", *args)
        if name in celscan.MACROS and args and args[0].kind == "ident" and len(args) in (2, 3):
            return _expand(name, target, args)
        return _call(name, *args, target=target)

    def struct(self) -> Expr:
        self.take("{")
        values: list[Expr] = []
        while self.peek() != "}":
            self.take()
            self.take(":")
            values.append(self.expr())
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return Expr("struct", args=values)

    def primary(self, *, negative: bool = False) -> Expr:
        tok = self.take()
        if tok.kind == "num":
            return _number(tok.text, negative=negative)
        if tok.kind == "str":
            return _string(tok.text)
        if tok.text == "(":
            e = self.expr()
            self.take(")")
            return e
        if tok.text == "[":
            return Expr("list", args=self.arguments("]"))
        if tok.text == "{":
            entries: list[Expr] = []
            while self.peek() != "}":
                entries.append(self.expr())
                self.take(":")
                entries.append(self.expr())
                if self.peek() == ",":
                    self.take(",")
            self.take("}")
            return Expr("map", args=entries)
        if tok.text == ".":
            tok = self.take()
        if tok.kind != "id":
            raise ParseError(tok.text)
        if tok.text in ("true", "false"):
            return _lit("bool", tok.text == "true")
        if tok.text == "null":
            return _lit("null", None)
        if self.peek() == "(":
            self.take("(")
            args = self.arguments(")")
            if tok.text == "has" and len(args) == 1 and args[0].kind == "select":
                return Expr("select", args[0].value, operand=args[0].operand, test_only=True)
            return _call(tok.text, *args)
        return Expr("ident", tok.text)


def _qualified(e: Expr) -> str | None:
    if e.kind == "ident":
        return str(e.value)
    return None


def _number(text: str, *, negative: bool) -> Expr:
    sign = "-" if negative else ""
    if text[-1] in "uU":
        return _lit("uint", int(text[:-1], 0))
    if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
        return _lit("double", float(sign + text))
    return _lit("int", int(sign + text, 0))


def _string(text: str) -> Expr:
    prefix = text[: len(text) - len(text.lstrip("rRbB"))]
    value = celscan.string_literal(text)
    if "b" in prefix.lower():
        return _lit("bytes", value.encode("utf-8", "surrogatepass"))
    return _lit("string", value)


def _expand(name: str, target: Expr, args: list[Expr]) -> Expr:
    """cel-go's macro expansions (parser/macro.go) as comprehensions."""
    var = str(args[0].value)
    if name == "all":
        init, cond = _lit("bool", True), _call("@not_strictly_false", _accu())
        step, result = _call("_&&_", _accu(), args[1]), _accu()
    elif name == "exists":
        init, cond = _lit("bool", False), _call("@not_strictly_false", _call("!_", _accu()))
        step, result = _call("_||_", _accu(), args[1]), _accu()
    elif name == "exists_one":
        init, cond = _lit("int", 0), _lit("bool", True)
        step = _call("_?_:_", args[1], _call("_+_", _accu(), _lit("int", 1)), _accu())
        result = _call("_==_", _accu(), _lit("int", 1))
    elif name == "map":
        init, cond = Expr("list"), _lit("bool", True)
        step = _call("_+_", _accu(), Expr("list", args=[args[-1]]))
        if len(args) == 3:
            step = _call("_?_:_", args[1], step, _accu())
        result = _accu()
    else:  # filter
        init, cond = Expr("list"), _lit("bool", True)
        step = _call("_?_:_", args[1], _call("_+_", _accu(), Expr("list", args=[args[0]])), _accu())
        result = _accu()
    return Expr("comp", var=var, range_=target, init=init, cond=cond, step=step, result=result)


def parse(src: str) -> Expr:
    return _Parser(celscan.tokenize(src)).parse()


# ---- types: upstream's DeclType of a schema, and what expressions yield ---------------------------------------------


@dataclass(frozen=True, slots=True)
class T:
    """A CEL type as far as the estimate needs it. `node` ties it to a schema position (for sizes and fields);
    `fixed` is the size bound of a value no schema spells out (the restricted metadata's strings, map keys)."""

    kind: str  # string bytes int uint double bool duration timestamp null type list map struct dyn optional opaque
    node: Node | None = None
    resource: bool = False
    meta: bool = False
    name: str = ""  # opaque and library struct types: url ip cidr quantity format semver
    elem: T | None = None  # list element, map value, optional value
    fixed: int | None = None


DYN = T("dyn")
BOOL, INT, UINT, DOUBLE = T("bool"), T("int"), T("uint"), T("double")
STRING, BYTES = T("string"), T("bytes")
DURATION, TIMESTAMP = T("duration"), T("timestamp")
_META_STRING = T("string", fixed=MAX_REQUEST_BYTES - 2)
_KEY = T("string", fixed=0)
_SCALARS = frozenset(("bool", "double", "duration", "int", "timestamp", "uint"))


def _opaque(name: str) -> T:
    return T("struct" if name in ("quantity", "url", "format", "semver") else "opaque", name=name)


def list_of(elem: T) -> T:
    return T("list", elem=elem)


def schema_type(node: Node, *, resource: bool) -> T | None:
    """SchemaDeclType: the CEL type of a schema's values, or None where CEL has none (then it is not a field)."""
    if node.int_or_string:
        return T("dyn", node)
    kind = node.type
    if kind == "string":
        by_format = {"byte": "bytes", "duration": "duration", "date": "timestamp", "date-time": "timestamp"}
        return T(by_format.get(node.format, "string"), node)
    if kind in ("boolean", "integer", "number"):
        return T({"boolean": "bool", "integer": "int", "number": "double"}[kind], node)
    if kind == "array":
        if node.items is None or schema_type(node.items, resource=node.items.embedded) is None:
            return None
        return T("list", node)
    if kind == "object":
        if node.additional is not None:
            if schema_type(node.additional, resource=node.additional.embedded) is None:
                return None
            return T("map", node)
        return T("struct", node, resource=resource)
    return None


def min_size(node: Node) -> int:
    """DeclType.MinSerializedSize: the fewest bytes a value of the schema takes in JSON."""
    if node.int_or_string:
        return 1
    if node.type == "string":
        return {"duration": 3, "date": 12, "date-time": 21}.get(node.format, 2)
    if node.type == "boolean":
        return 4
    if node.type == "object" and node.additional is None:
        total = 2
        for name in node.required:
            child = (node.properties or {}).get(name)
            if child is not None and child.default is UNSET and schema_type(child, resource=child.embedded):
                total += len(name) + min_size(child) + 4
        return total
    return {"integer": 1, "number": 1}.get(node.type, 2)


def max_cardinality(node: Node) -> int:
    """How many times a value of the schema can occur in one request (upstream's maxCardinality)."""
    return MAX_REQUEST_BYTES // (min_size(node) + 1)


def max_elements(t: T) -> int:
    """DeclType.MaxElements: the length bound of a string or bytes, the item bound of a list or map."""
    if t.fixed is not None:
        return t.fixed
    node = t.node
    if node is None:
        return 0
    if t.kind == "dyn":
        return MAX_REQUEST_BYTES - 2
    if t.kind == "list":
        if node.max_items is not None:
            return max(node.max_items, 0)
        return (MAX_REQUEST_BYTES - 2) // (min_size(node.items) + 1)  # type: ignore[arg-type]
    if t.kind == "map":
        if node.max_props is not None:
            return max(node.max_props, 0)
        return (MAX_REQUEST_BYTES - 2) // (min_size(node.additional) + 6)  # type: ignore[arg-type]
    if t.kind == "string":
        if node.max_length is not None:
            return max(node.max_length, 0) * 4
        if node.enum:
            return max((len(e.encode()) for e in node.enum if isinstance(e, str)), default=0)
        return MAX_REQUEST_BYTES - 2
    if t.kind == "bytes":
        return max(node.max_length, 0) if node.max_length is not None else MAX_REQUEST_BYTES - 2
    if t.kind == "duration":
        return 32
    if t.kind == "timestamp":
        return 12 if node.format == "date" else 32
    return 0


def field_type(t: T, name: str) -> T | None:
    """The type of field `name` (its CEL name) of a struct or map type."""
    if t.meta:
        return _META_STRING if name in ("name", "generateName") else None
    node = t.node
    if node is None:
        return t.elem if t.kind == "map" else None
    if t.kind == "map":
        return element_type(t)
    if t.kind != "struct":
        return None
    resource = t.resource and not celscan.declares_type_meta(node)
    if resource and name in ("apiVersion", "kind"):
        return _META_STRING
    if resource and name == "metadata":
        return T("struct", meta=True)
    found = celscan.fields_of(node).get(name)
    if found is None:
        return None
    return schema_type(found[1], resource=found[1].embedded)


def element_type(t: T) -> T | None:
    """A list's element or a map's value type."""
    if t.node is None:
        return t.elem
    if t.kind == "list" and t.node.items is not None:
        return schema_type(t.node.items, resource=t.node.items.embedded)
    if t.kind == "map" and t.node.additional is not None:
        return schema_type(t.node.additional, resource=t.node.additional.embedded)
    return None


# ---- the coster (cel-go checker/cost.go with Kubernetes' library estimates) ---------------------------------------

_RESULT_KINDS = {
    "size": INT, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING, "bytes": BYTES, "bool": BOOL,
    "duration": DURATION, "timestamp": TIMESTAMP, "type": T("type"), "matches": BOOL, "contains": BOOL,
    "startsWith": BOOL, "endsWith": BOOL, "lowerAscii": STRING, "upperAscii": STRING, "replace": STRING,
    "substring": STRING, "trim": STRING, "charAt": STRING, "join": STRING, "format": STRING, "reverse": STRING,
    "strings.quote": STRING, "split": list_of(STRING), "indexOf": INT, "lastIndexOf": INT, "find": STRING,
    "findAll": list_of(STRING), "url": _opaque("url"), "isURL": BOOL, "getScheme": STRING, "getHost": STRING,
    "getHostname": STRING, "getPort": STRING, "getEscapedPath": STRING, "getQuery": T("map", elem=list_of(STRING)),
    "quantity": _opaque("quantity"), "isQuantity": BOOL, "sign": INT, "asInteger": INT, "isInteger": BOOL,
    "asApproximateFloat": DOUBLE, "add": _opaque("quantity"), "sub": _opaque("quantity"), "isGreaterThan": BOOL,
    "isLessThan": BOOL, "compareTo": INT, "ip": _opaque("ip"), "cidr": _opaque("cidr"), "isIP": BOOL,
    "isCIDR": BOOL, "family": INT, "prefixLength": INT, "masked": _opaque("cidr"), "containsIP": BOOL,
    "containsCIDR": BOOL, "isUnspecified": BOOL, "isLoopback": BOOL, "isLinkLocalMulticast": BOOL,
    "isLinkLocalUnicast": BOOL, "isGlobalUnicast": BOOL, "ip.isCanonical": BOOL, "isSorted": BOOL,
    "lists.range": list_of(INT), "sets.contains": BOOL, "sets.equivalent": BOOL, "sets.intersects": BOOL,
    "hasValue": BOOL, "validate": T("optional", elem=list_of(STRING)), "format.named": T("optional"),
    "getFullYear": INT, "getMonth": INT, "getDayOfYear": INT, "getDayOfMonth": INT, "getDate": INT,
    "getDayOfWeek": INT, "getHours": INT, "getMinutes": INT, "getSeconds": INT, "getMilliseconds": INT,
    "!_": BOOL, "_&&_": BOOL, "_||_": BOOL, "_==_": BOOL, "_!=_": BOOL, "_<_": BOOL, "_<=_": BOOL, "_>_": BOOL,
    "_>=_": BOOL, "@in": BOOL, "@not_strictly_false": BOOL, "optional.none": T("optional"),
}  # fmt: skip
_SAME_AS_TARGET = frozenset(("distinct", "sort", "slice", "flatten", "or"))
_ELEMENT_OF_TARGET = frozenset(("sum", "min", "max"))
_ORDERINGS = frozenset(("_<_", "_<=_", "_>_", "_>=_"))
_NOMINAL = frozenset(
    (
        "format.named", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
        "compareTo", "add", "sub", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery",
        "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
        "isLinkLocalUnicast", "isGlobalUnicast",
    )
)  # fmt: skip


def _either(t: T, *kinds: str) -> bool:
    return t.kind in kinds or t.kind == "dyn"


class _Coster:
    def __init__(self, root: T) -> None:
        self.root = root
        self.types: dict[int, T] = {}
        self.paths: dict[int, list[str]] = {}
        self.computed: dict[int, Size] = {}
        self.scope: list[tuple[str, T, Expr | None]] = []  # (variable, type, its iteration range)

    # -- types, paths, sizes --

    def type_of(self, e: Expr) -> T:
        return self.types.get(id(e), DYN)

    def path_size(self, e: Expr) -> Size | None:
        """The sizeEstimator: the MaxElements of the declared type at the expression's field path."""
        path = self.paths.get(id(e))
        if not path or path[0] == ACCUMULATOR:
            return None
        t: T | None = self.root
        for name in path[1:]:
            if t is None:
                return None
            if name in ("@items", "@values"):
                t = element_type(t)
            elif name == "@keys":
                t = _KEY if t.kind == "map" else None
            else:  # a map's entries are no fields to upstream's size estimator
                t = field_type(t, name) if t.kind == "struct" else None
        return None if t is None else Size(0, max_elements(t))

    def computed_size(self, e: Expr) -> Size | None:
        if id(e) in self.computed:
            return self.computed[id(e)]
        if e.kind == "lit":
            if e.lit_kind == "string":
                return Size(len(str(e.value)), len(str(e.value)))
            if e.lit_kind == "bytes":
                return Size(len(e.value), len(e.value))  # type: ignore[arg-type]
            return ONE
        if e.kind == "list":
            return Size(len(e.args), len(e.args))
        if e.kind == "map":
            return Size(len(e.args) // 2, len(e.args) // 2)
        return None

    def size(self, e: Expr) -> Size:
        """cel-go's sizeEstimate: computed, else by path, else 1 for scalars, else unbounded."""
        found = self.computed_size(e) or self.path_size(e)
        if found is not None:
            return found
        return ONE if self.type_of(e).kind in _SCALARS else UNKNOWN_SIZE

    def library_size(self, e: Expr) -> Size:
        """The Kubernetes library's sizeEstimate (no scalar rule)."""
        return self.computed_size(e) or self.path_size(e) or UNKNOWN_SIZE

    def element_size(self, target: Expr) -> Size | None:
        """The size of a list's elements, by the list's path plus `@items` (listElementNode), or None."""
        t = self.type_of(target)
        if t.kind != "list":
            return None
        path = self.paths.get(id(target))
        if path and path[0] != ACCUMULATOR:
            probe = Expr("ident")
            self.paths[id(probe)] = [*path, "@items"]
            return self.path_size(probe) or UNKNOWN_SIZE
        return UNKNOWN_SIZE

    # -- the walk --

    def cost(self, e: Expr) -> int:
        if e.kind == "lit":
            self.types[id(e)] = T(e.lit_kind)
            return 0
        if e.kind == "ident":
            return self.ident(e)
        if e.kind == "select":
            return self.select(e)
        if e.kind == "call":
            return self.call(e)
        if e.kind in ("list", "map", "struct"):
            total = sum(self.cost(a) for a in e.args)
            elem = self.type_of(e.args[1 if e.kind == "map" else 0]) if e.args else DYN
            self.types[id(e)] = T(e.kind, elem=elem) if e.kind != "struct" else DYN
            return _add(total, {"list": LIST_CREATE, "map": MAP_CREATE, "struct": STRUCT_CREATE}[e.kind])
        return self.comprehension(e)

    def ident(self, e: Expr) -> int:
        name = str(e.value)
        for var, t, range_ in reversed(self.scope):
            if var == name:
                self.types[id(e)] = t
                if range_ is not None:
                    kind = self.type_of(range_).kind
                    step = {"list": "@items", "map": "@keys"}.get(kind)
                    if step is not None:
                        self.paths[id(e)] = [*self.paths.get(id(range_), []), step]
                else:
                    self.paths[id(e)] = [name]
                return 1
        self.types[id(e)] = self.root if name in ("self", "oldSelf") else T("type")
        self.paths[id(e)] = [name]
        return 1

    def select(self, e: Expr) -> int:
        operand = e.operand
        assert operand is not None
        total = self.cost(operand)
        t = self.type_of(operand)
        name = celscan.field_name(str(e.value))
        if e.test_only:
            self.types[id(e)] = BOOL
            return total  # has(): presence tests cost nothing in Kubernetes
        if t.kind in ("map", "struct"):
            total = _add(total, 1)
        self.types[id(e)] = field_type(t, name) or DYN
        self.paths[id(e)] = [*self.paths.get(id(operand), []), name]
        return total

    def comprehension(self, e: Expr) -> int:
        assert e.range_ and e.init and e.cond and e.step and e.result
        total = _add(self.cost(e.range_), self.cost(e.init))
        range_type = self.type_of(e.range_)
        var_type = _KEY if range_type.kind == "map" else (element_type(range_type) or DYN)
        self.scope.append((ACCUMULATOR, self.type_of(e.init), None))
        self.scope.append((e.var, var_type, e.range_))
        loop = _add(self.cost(e.cond), self.cost(e.step))
        self.scope.pop()
        total = _add(total, self.cost(e.result))
        self.scope.pop()
        count = self.size(e.range_)
        self.computed[id(e)] = count
        result = self.type_of(e.result)
        if result.kind == "list":
            step_list = e.step.args[1] if e.step.value == "_?_:_" else e.step
            added = step_list.args[1] if step_list.kind == "call" and len(step_list.args) > 1 else None
            result = list_of(self.type_of(added.args[0]) if added is not None and added.args else DYN)
        self.types[id(e)] = result
        return _add(total, _mul(count.hi, loop))

    def call(self, e: Expr) -> int:
        arg_costs = [self.cost(a) for a in e.args]
        total = self.cost(e.operand) if e.operand is not None else 0
        name = str(e.value)
        self.types[id(e)] = self.result_type(name, e)
        cost, size = self.function_cost(name, e, sum(arg_costs), arg_costs)
        if size is not None:
            self.computed[id(e)] = size
        if name == "_[_]" and e.args:
            step = {"list": "@items", "map": "@values"}.get(self.type_of(e.args[0]).kind)
            if step is not None:
                self.paths[id(e)] = [*self.paths.get(id(e.args[0]), []), step]
        return _add(total, cost)

    def result_type(self, name: str, e: Expr) -> T:
        target = self.type_of(e.operand) if e.operand is not None else None
        args = [self.type_of(a) for a in e.args]
        if name in _RESULT_KINDS and not (name == "ip" and target is not None):
            return _RESULT_KINDS[name]
        if name == "ip":
            return _opaque("ip")
        if target is not None and name in _SAME_AS_TARGET:
            return target
        if target is not None and name in _ELEMENT_OF_TARGET:
            return element_type(target) or DYN
        if name in ("first", "last", "optional.of", "optional.ofNonZeroValue"):
            return T("optional", elem=element_type(target) if target is not None else (args[0] if args else DYN))
        if name in ("value", "orValue") and target is not None:
            return target.elem or DYN
        if name == "_[_]" and args:
            return element_type(args[0]) or DYN
        if name == "_?_:_" and len(args) == 3:
            return args[1] if args[1].kind != "dyn" else args[2]
        if name in ("_+_", "_-_", "_*_", "_/_", "_%_", "-_") and args:
            if name == "_-_" and args[0].kind == "timestamp" and len(args) > 1 and args[1].kind == "timestamp":
                return DURATION
            return args[0] if args[0].kind != "dyn" or len(args) == 1 else args[1]
        return DYN

    def function_cost(self, name: str, e: Expr, arg_sum: int, arg_costs: list[int]) -> tuple[int, Size | None]:
        found = self.library_cost(name, e)
        if found is not None:
            return _add(found[0], arg_sum), found[1]
        return self.builtin_cost(name, e, arg_sum, arg_costs)

    def library_cost(self, name: str, e: Expr) -> tuple[int, Size | None] | None:
        """Kubernetes' CostEstimator.EstimateCallCost and cel-go's sets estimators; None: not theirs."""
        target, args = e.operand, e.args
        if name in ("sets.contains", "sets.intersects", "sets.equivalent") and len(args) == 2:
            factor = 2 if name == "sets.equivalent" else 1
            both = self.library_size(args[0]).mul(self.library_size(args[1]))
            return _add(_factor(both.hi, factor), 1), None
        if name in _NOMINAL or (name == "ip" and target is not None):
            return 1, None
        if name in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target is not None:
            element = self.element_size(target)
            if element is None:
                return self.library_size(target).cost(STRING_FACTOR), None
            each = 1
            if (element_type(self.type_of(target)) or DYN).kind in ("string", "bytes"):
                each = _add(each, element.cost(STRING_FACTOR))
            return _mul(self.library_size(target).hi, each), None
        if name == "url" and len(args) == 1:
            sz = self.library_size(args[0])
            return sz.cost(STRING_FACTOR), sz
        if name in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            sz = self.library_size(target)
            return sz.cost(STRING_FACTOR), sz
        if name == "replace" and target is not None and len(args) >= 2:
            return self.replace_cost(target, args)
        if name == "split" and target is not None:
            sz = self.library_size(target)
            limit = sz.hi
            if len(args) > 1 and args[1].kind == "lit" and args[1].lit_kind == "int":
                limit = int(args[1].value) % 2**64  # type: ignore[call-overload]
            return sz.cost(2 * STRING_FACTOR), Size(0, limit)
        if name == "join" and target is not None:
            return self.join_cost(target, args)
        if name in ("find", "findAll") and target is not None and args:
            sz = self.library_size(target)
            string_cost = sz.add(ONE).cost(STRING_FACTOR)
            return _mul(string_cost, self.library_size(args[0]).cost(REGEX_FACTOR)), Size(0, sz.hi)
        if name in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity") and args:
            return self.library_size(args[0]).cost(STRING_FACTOR), None
        if name == "ip" and args:
            return self.library_size(args[0]).cost(STRING_FACTOR), None
        if name == "ip.isCanonical" and args:
            return self.library_size(args[0]).cost(2 * STRING_FACTOR), None
        if name in ("containsIP", "containsCIDR") and target is not None and args:
            cost = Size(8, 32).cost(STRING_FACTOR)
            if name == "containsCIDR":
                cost = _add(_add(cost, Size(4, 16).cost(STRING_FACTOR)), 1)
            if self.type_of(args[0]).kind == "string":
                cost = _add(cost, self.library_size(args[0]).cost(STRING_FACTOR))
            return cost, None
        if name == "validate" and target is not None and args:
            per_char = self.library_size(args[0]).cost(STRING_FACTOR)
            return _factor(per_char, MAX_NAME_FORMAT_REGEX_SIZE * REGEX_FACTOR), None
        if name == "_==_" and len(args) == 2:
            lhs, rhs = self.type_of(args[0]), self.type_of(args[1])
            if lhs.kind == rhs.kind and lhs.name == rhs.name and lhs.name:
                if lhs.name in ("ip", "cidr", "quantity", "semver"):
                    return 1, None
                if lhs.name == "format":
                    return Size(1, MAX_FORMAT_SIZE).cost(STRING_FACTOR), None
                if lhs.name == "url":
                    size = ONE
                    rhs_size = self.computed_size(args[1])
                    if rhs_size is not None:
                        size = rhs_size.union(rhs_size)
                    return size.cost(STRING_FACTOR), None
        return None

    def replace_cost(self, target: Expr, args: list[Expr]) -> tuple[int, Size | None]:
        sz = self.library_size(target)
        old, new = self.library_size(args[0]), self.library_size(args[1])
        if old.lo == 0:
            count_hi, kept_hi = (sz.hi + 1 if sz.hi < U64 else sz.hi), sz.hi
        elif new.hi <= old.lo:
            count_hi, kept_hi = 0, sz.hi
        else:
            count_hi, kept_hi = math.ceil(sz.hi / old.lo), 0
        if old.hi == 0:
            count_lo, kept_lo = (sz.lo + 1 if sz.lo < U64 else sz.lo), sz.lo
        elif old.hi <= new.lo:
            count_lo, kept_lo = 0, sz.lo
        else:
            count_lo, kept_lo = math.ceil(sz.lo / old.hi), 0
        size = Size(count_lo, count_hi).mul(new).add(Size(kept_lo, kept_hi))
        return sz.cost(2 * STRING_FACTOR), size

    def join_cost(self, target: Expr, args: list[Expr]) -> tuple[int, Size | None]:
        count = self.library_size(target)
        element = self.element_size(target)
        size = count.mul(element) if element is not None else Size(0, 0)
        if args:
            separators = Size(max(count.lo - 1, 0), max(count.hi - 1, 0))
            size = size.add(self.library_size(args[0]).mul(separators))
        return size.cost(STRING_FACTOR), size

    def builtin_cost(self, name: str, e: Expr, arg_sum: int, arg_costs: list[int]) -> tuple[int, Size | None]:
        """cel-go's functionCost for the overloads that the argument types allow (the most expensive wins)."""
        target, args = e.operand, e.args
        kinds = [self.type_of(a) for a in args]
        if name in ("_&&_", "_||_"):
            return _add(arg_costs[0], arg_costs[1]), None
        if name == "_?_:_":
            size = self.size(args[1]).union(self.size(args[2]))
            return _add(arg_costs[0], max(arg_costs[1], arg_costs[2])), size
        if name == "format" and target is not None:
            return _add(self.size(target).cost(STRING_FACTOR), arg_sum), None
        if name in ("bytes", "string", "strings.quote") and len(args) == 1:
            source = "string" if name != "string" else "bytes"
            if kinds[0].kind == source or (kinds[0].kind == "dyn" and name != "strings.quote"):
                sz = self.size(args[0])
                result = {"bytes": Size(sz.lo, _mul(sz.hi, 4)), "string": Size(sz.lo // 4, sz.hi)}.get(
                    name, Size(_add(sz.lo, 2), _add(_mul(sz.hi, 2), 2))
                )
                return _add(sz.cost(STRING_FACTOR), arg_sum), result
        if name in ("startsWith", "endsWith") and len(args) == 1:
            return _add(self.size(args[0]).cost(STRING_FACTOR), arg_sum), None
        if name == "@in" and len(args) == 2 and _either(kinds[1], "list"):
            return _add(self.size(args[1]).hi, arg_sum), None
        if name == "matches" and target is not None and len(args) == 1:
            string_cost = self.size(target).add(ONE).cost(STRING_FACTOR)
            return _add(_mul(string_cost, self.size(args[0]).cost(REGEX_FACTOR)), arg_sum), None
        if name == "contains" and target is not None and len(args) == 1:
            both = _mul(self.size(target).cost(STRING_FACTOR), self.size(args[0]).cost(STRING_FACTOR))
            return _add(both, arg_sum), None
        if name == "_+_" and len(args) == 2:
            best = 1
            size_: Size | None = None
            if _either(kinds[0], "string", "bytes") and _either(kinds[1], "string", "bytes"):
                size_ = self.size(args[0]).add(self.size(args[1]))
                best = max(best, size_.cost(STRING_FACTOR))
            if _either(kinds[0], "list") and _either(kinds[1], "list"):
                listed = self.size(args[0]).add(self.size(args[1]))
                size_ = listed if size_ is None else size_.union(listed)
            return _add(best, arg_sum), size_
        equality = name in ("_==_", "_!=_")
        ordering = name in _ORDERINGS and all(_either(k, "string", "bytes") for k in kinds)
        if (equality or ordering) and len(args) == 2:
            smallest = min(self.size(args[0]).hi, self.size(args[1]).hi)
            return _add(_factor(smallest, STRING_FACTOR), arg_sum), None
        return _add(1, arg_sum), None


def estimate(src: str, node: Node, *, resource: bool) -> int:
    """The maximum of cel-go's cost estimate for rule `src` written at schema `node` (that compiled)."""
    root = schema_type(node, resource=resource) or DYN
    try:
        tree = parse(src)
    except (ParseError, IndexError, ValueError):
        return 0
    return _Coster(root).cost(tree)
