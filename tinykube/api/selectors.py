"""Label and field selectors, parsed and matched as upstream apimachinery does.

Clients (kubectl, informers, controllers) send ``labelSelector=`` and ``fieldSelector=`` on list and
watch requests, and the error text they get back for a bad selector is what users recognise from a
real cluster.  So this module ports the *behaviour* of ``labels.Parse`` (a small lexer plus a
recursive-descent parser with upstream's exact error strings and label-key/value validation) and
``fields.ParseSelector`` (split on unescaped commas, ``\\``-escapes, three operators), rather than
inventing a friendlier grammar.

Field selectors are also checked against the field labels a resource supports, which upstream keeps
in two places: the scheme's field-label conversion functions (which names are *accepted*, and the
error message for the rest) and each registry's ``ToSelectableFields`` (how a name maps to a value
of the object).  Both live here as small tables: :func:`supported_fields` and ``_FIELD_GETTERS``.

Everything here is pure: parsed selectors are immutable values, and matching never mutates input.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tinykube.api.errors import BadRequest, FieldError, invalid
from tinykube.api.meta import label_value, qualified_name

# --------------------------------------------------------------------------------------------------
# Label selectors
# --------------------------------------------------------------------------------------------------

IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")
_NIL_PATH: Final = "<nil>"  # how Go prints the nil *field.Path that labels.Parse validates against


class SelectorError(Exception):
    """A selector could not be built; the message is upstream's.  Public callers see ``BadRequest``."""


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: no whitespace, no underscores, int64 range."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key op values`` term; values are kept sorted, as upstream's ``sets.String.List()``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return _MATCHERS[self.operator](self, labels)

    def __str__(self) -> str:
        if self.operator in (EXISTS, DOES_NOT_EXIST):
            return ("!" if self.operator == DOES_NOT_EXIST else "") + self.key
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0]}"


def _match_in(r: Requirement, labels: Mapping[str, str]) -> bool:
    return r.key in labels and labels[r.key] in r.values


def _match_not_in(r: Requirement, labels: Mapping[str, str]) -> bool:
    return r.key not in labels or labels[r.key] not in r.values


def _match_compare(r: Requirement, labels: Mapping[str, str]) -> bool:
    have = _parse_int64(labels[r.key]) if r.key in labels else None
    want = _parse_int64(r.values[0]) if len(r.values) == 1 else None
    if have is None or want is None:
        return False
    return have > want if r.operator == GREATER_THAN else have < want


_MATCHERS: Final[dict[str, Callable[[Requirement, Mapping[str, str]], bool]]] = {
    IN: _match_in,
    EQUALS: _match_in,
    DOUBLE_EQUALS: _match_in,
    NOT_IN: _match_not_in,
    NOT_EQUALS: _match_not_in,
    EXISTS: lambda r, labels: r.key in labels,
    DOES_NOT_EXIST: lambda r, labels: r.key not in labels,
    GREATER_THAN: _match_compare,
    LESS_THAN: _match_compare,
}


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements.  ``nothing`` is upstream's ``labels.Nothing()`` (a nil metav1 selector)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        present = labels or {}
        return all(r.matches(present) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (upstream ``Selector.Empty``)."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING: Final = LabelSelector()
NOTHING: Final = LabelSelector(nothing=True)


def _aggregate(errors: list[FieldError]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one error bare, several de-duplicated in brackets."""
    messages = list(dict.fromkeys(str(err) for err in errors))
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def _key_error(key: str) -> FieldError | None:
    errs = qualified_name(key)
    return invalid(_NIL_PATH, key, "; ".join(errs)) if errs else None


def _values_arity_error(operator: str, values: tuple[str, ...]) -> FieldError | None:
    if operator in (IN, NOT_IN) and not values:
        return invalid("values", list(values), "for 'in', 'notin' operators, values set can't be empty")
    if operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        return invalid("values", list(values), "exact-match compatibility requires one single value")
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        return invalid("values", list(values), "values set must be empty for exists and does not exist")
    if operator in (GREATER_THAN, LESS_THAN) and len(values) != 1:
        return invalid("values", list(values), "for 'Gt', 'Lt' operators, exactly one value is required")
    return None


def _integer_errors(operator: str, values: tuple[str, ...]) -> list[FieldError]:
    if operator not in (GREATER_THAN, LESS_THAN):
        return []
    detail = "for 'Gt', 'Lt' operators, the value must be an integer"
    return [invalid(f"values[{i}]", v, detail) for i, v in enumerate(values) if _parse_int64(v) is None]


def _value_errors(key: str, values: tuple[str, ...]) -> list[FieldError]:
    found: list[FieldError] = []
    for i, value in enumerate(values):
        errs = label_value(value)
        if errs:
            found.append(invalid(f"values[{i}][{key}]", value, "; ".join(errs)))
    return found


def new_requirement(key: str, operator: str, values: Collection[str] = ()) -> Requirement:
    """``labels.NewRequirement``: validate and build one requirement, or raise :class:`SelectorError`."""
    ordered = tuple(values)
    errors = [err for err in (_key_error(key), _values_arity_error(operator, ordered)) if err is not None]
    errors += _integer_errors(operator, ordered) + _value_errors(key, ordered)
    if errors:
        raise SelectorError(_aggregate(errors))
    return Requirement(key, operator, ordered)


# --- lexer ----------------------------------------------------------------------------------------


class _Tok(enum.Enum):
    ERROR = enum.auto()
    EOS = enum.auto()
    CLOSED_PAR = enum.auto()
    COMMA = enum.auto()
    DOES_NOT_EXIST = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    EQUALS = enum.auto()
    GREATER_THAN = enum.auto()
    IDENTIFIER = enum.auto()
    IN = enum.auto()
    LESS_THAN = enum.auto()
    NOT_EQUALS = enum.auto()
    NOT_IN = enum.auto()
    OPEN_PAR = enum.auto()


_STRING_TO_TOKEN: Final = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.DOES_NOT_EXIST,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GREATER_THAN,
    "in": _Tok.IN,
    "<": _Tok.LESS_THAN,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_Item = tuple[_Tok, str]


def _scan_word(text: str, pos: int) -> tuple[_Item, int]:
    end = pos
    while end < len(text) and text[end] not in _SPECIAL and text[end] not in _WHITESPACE:
        end += 1
    word = text[pos:end]
    return (_STRING_TO_TOKEN.get(word, _Tok.IDENTIFIER), word), end


def _scan_special(text: str, pos: int) -> tuple[_Item, int]:
    """Longest run of special symbols that still forms a token (``!=`` but ``=`` + ``(``)."""
    best: _Item | None = None
    end = pos
    while end < len(text) and text[end] in _SPECIAL:
        token = _STRING_TO_TOKEN.get(text[pos : end + 1])
        if token is None and best is not None:
            break
        best = (token, text[pos : end + 1]) if token is not None else best
        end += 1
    if best is None:
        return (_Tok.ERROR, f"error expected: keyword found '{text[pos:end]}'"), end
    return best, pos + len(best[1])


def _lex(text: str) -> list[_Item]:
    items: list[_Item] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= len(text):
            items.append((_Tok.EOS, ""))
            return items
        scan = _scan_special if text[pos] in _SPECIAL else _scan_word
        item, pos = scan(text, pos)
        items.append(item)


# --- parser ---------------------------------------------------------------------------------------

_OPERATOR_TOKENS: Final = {
    _Tok.IN: IN,
    _Tok.EQUALS: EQUALS,
    _Tok.DOUBLE_EQUALS: DOUBLE_EQUALS,
    _Tok.GREATER_THAN: GREATER_THAN,
    _Tok.LESS_THAN: LESS_THAN,
    _Tok.NOT_IN: NOT_IN,
    _Tok.NOT_EQUALS: NOT_EQUALS,
}
_KEY_START: Final = (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST)


class _Parser:
    """A port of upstream's ``labels.Parser``: same states, same error strings."""

    def __init__(self, text: str) -> None:
        self._items = _lex(text)
        self._pos = 0

    def _lookahead(self, values: bool = True) -> _Item:
        tok, lit = self._items[self._pos]
        # In a value context the keywords 'in'/'notin' are plain identifiers ('x in (in)').
        if values and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENTIFIER
        return tok, lit

    def _consume(self, values: bool = True) -> _Item:
        item = self._lookahead(values)
        self._pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._lookahead()
            if tok == _Tok.EOS:
                return requirements
            if tok not in _KEY_START:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            requirements.append(self._requirement())
            if self._after_requirement():
                return requirements

    def _requirement(self) -> Requirement:
        try:
            return self._parse_requirement()
        except SelectorError as err:
            raise SelectorError(f"unable to parse requirement: {err}") from None

    def _after_requirement(self) -> bool:
        """Consume the separator after a requirement; True at the end of the input."""
        tok, lit = self._consume()
        if tok == _Tok.EOS:
            return True
        if tok != _Tok.COMMA:
            raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
        next_tok, next_lit = self._lookahead()
        if next_tok not in _KEY_START:
            raise SelectorError(f"found '{next_lit}', expected: identifier after ','")
        return False

    def _parse_requirement(self) -> Requirement:
        key, operator = self._key_and_inferred_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, operator)
        operator = self._operator()
        values = self._set_values() if operator in (IN, NOT_IN) else self._exact_value()
        return new_requirement(key, operator, sorted(values))

    def _key_and_inferred_operator(self) -> tuple[str, str]:
        operator = ""
        tok, literal = self._consume()
        if tok == _Tok.DOES_NOT_EXIST:
            operator = DOES_NOT_EXIST
            tok, literal = self._consume()
        if tok != _Tok.IDENTIFIER:
            raise SelectorError(f"found '{literal}', expected: identifier")
        key_error = _key_error(literal)
        if key_error is not None:
            raise SelectorError(str(key_error))
        if self._lookahead()[0] in (_Tok.EOS, _Tok.COMMA) and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return literal, operator

    def _operator(self) -> str:
        tok, lit = self._consume(values=False)
        if tok not in _OPERATOR_TOKENS:
            raise SelectorError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return _OPERATOR_TOKENS[tok]

    def _set_values(self) -> set[str]:
        tok, lit = self._consume()
        if tok != _Tok.OPEN_PAR:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._lookahead()
        if tok == _Tok.CLOSED_PAR:  # "()" is the set holding the empty string
            self._consume()
            return {""}
        if tok not in (_Tok.IDENTIFIER, _Tok.COMMA):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self._identifiers()
        if self._consume()[0] != _Tok.CLOSED_PAR:
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def _identifiers(self) -> set[str]:
        """A comma list inside parentheses where empty members (``(a,,b)``, ``(,a)``) mean ""."""
        values: set[str] = set()
        while True:
            tok, lit = self._consume()
            if tok == _Tok.IDENTIFIER:
                values.add(lit)
                if self._identifier_list_ends():
                    return values
            elif tok == _Tok.COMMA:
                if self._comma_in_list(values):
                    return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _identifier_list_ends(self) -> bool:
        tok, lit = self._lookahead()
        if tok == _Tok.CLOSED_PAR:
            return True
        if tok != _Tok.COMMA:
            raise SelectorError(f"found '{lit}', expected: ',' or ')'")
        return False

    def _comma_in_list(self, values: set[str]) -> bool:
        next_tok = self._lookahead()[0]
        if not values or next_tok in (_Tok.CLOSED_PAR, _Tok.COMMA):
            values.add("")
        return next_tok == _Tok.CLOSED_PAR

    def _exact_value(self) -> set[str]:
        if self._lookahead()[0] in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self._consume()
        if tok != _Tok.IDENTIFIER:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}


def _sorted_selector(requirements: list[Requirement]) -> LabelSelector:
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def parse_label_selector(text: str) -> LabelSelector:
    """``labels.Parse``; a syntax or validation error raises ``BadRequest`` with upstream's message."""
    try:
        return _sorted_selector(_Parser(text).parse())
    except SelectorError as err:
        raise BadRequest(str(err)) from None


_METAV1_OPERATORS: Final = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def _expression_requirement(expr: Any) -> Requirement:
    if not isinstance(expr, Mapping):
        raise SelectorError(f"a label selector requirement must be an object, not {expr!r}")
    operator = _METAV1_OPERATORS.get(str(expr.get("operator", "")))
    if operator is None:
        raise SelectorError(f'"{expr.get("operator", "")}" is not a valid label selector operator')
    values = expr.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SelectorError(f"label selector values must be a list of strings, not {values!r}")
    return new_requirement(str(expr.get("key", "")), operator, values)


def selector_from_label_selector(obj: Mapping[str, Any] | None) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, ``{}`` selects everything.

    Invalid content raises ``BadRequest`` (upstream returns a plain error that callers wrap).
    """
    if obj is None:
        return NOTHING
    if not isinstance(obj, Mapping):
        raise BadRequest(f"a label selector must be an object, not {obj!r}")
    match_labels: Any = obj.get("matchLabels") or {}
    expressions: Any = obj.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not all(isinstance(v, str) for v in match_labels.values()):
        raise BadRequest(f"matchLabels must be a map of strings, not {match_labels!r}")
    if not isinstance(expressions, list):
        raise BadRequest(f"matchExpressions must be a list, not {expressions!r}")
    try:
        requirements = [new_requirement(str(k), EQUALS, [v]) for k, v in match_labels.items()]
        requirements += [_expression_requirement(expr) for expr in expressions]
    except SelectorError as err:
        raise BadRequest(str(err)) from None
    return _sorted_selector(requirements)


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """``labels.SelectorFromValidatedSet``: equality on every pair; empty (or nil) selects everything.

    A Service with no ``spec.selector`` must select *nothing*; callers check for that themselves.
    """
    return LabelSelector(tuple(Requirement(k, EQUALS, (v,)) for k, v in sorted((labels or {}).items())))


# --------------------------------------------------------------------------------------------------
# Field selectors
# --------------------------------------------------------------------------------------------------

DEFAULT_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})

# The scheme's field-label conversion functions (pkg/apis/core/v1/conversion.go).  Note that nodes
# and namespaces do not accept metadata.namespace upstream.  Resources not listed use the default.
_SUPPORTED_FIELDS: Final[dict[str, frozenset[str]]] = {
    "pods": DEFAULT_FIELDS
    | {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    },
    "events": DEFAULT_FIELDS
    | {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    },
    "namespaces": frozenset({"metadata.name", "status.phase"}),
    "nodes": frozenset({"metadata.name", "spec.unschedulable"}),
    "services": DEFAULT_FIELDS | {"spec.clusterIP", "spec.type"},
    "secrets": DEFAULT_FIELDS | {"type"},
    "replicationcontrollers": DEFAULT_FIELDS | {"status.replicas"},
    "certificatesigningrequests": DEFAULT_FIELDS | {"spec.signerName"},
}

# Old v1 clients send spec.host; the pod conversion function renames it.
_FIELD_ALIASES: Final = {"spec.host": "spec.nodeName"}


# A version whose field labels are not the stored kind's: label -> the stored kind's field (upstream's field label
# conversion for events.k8s.io/v1, served from the core Events).
_RENAMED_FIELDS: Final[dict[tuple[str, str], dict[str, str]]] = {
    ("events.k8s.io", "events"): {
        "reason": "reason",
        **{
            f"regarding.{name}": f"involvedObject.{name}"
            for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        },
        "reportingController": "reportingComponent",
        "type": "type",
        "metadata.namespace": "metadata.namespace",
        "metadata.name": "metadata.name",
    },
}


def renamed_fields(group: str, plural: str) -> Mapping[str, str] | None:
    """The field labels of a version that renames them (label -> stored field), or None."""
    return _RENAMED_FIELDS.get((group, plural))


def supported_fields(plural: str) -> frozenset[str]:
    """The field labels a resource accepts in ``fieldSelector`` (upstream's conversion functions)."""
    return _SUPPORTED_FIELDS.get(plural, DEFAULT_FIELDS)


def _unsupported(field: str, supported: Collection[str]) -> BadRequest:
    # Kinds without their own conversion function fall back to DefaultMetaV1FieldSelectorConversion,
    # whose message differs; exactly those kinds support nothing beyond the two metadata fields.
    if frozenset(supported) == DEFAULT_FIELDS:
        only = '"metadata.name", "metadata.namespace"'
        return BadRequest(f'"{field}" is not a known field selector: only {only}')
    return BadRequest(f"field label not supported: {field}")


def _lookup(obj: Mapping[str, Any], path: str) -> Any:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def _go_string(value: Any) -> str:
    """A field value as the registries' string field sets hold it (bools via FormatBool)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool_field(path: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda obj: _go_string(bool(_lookup(obj, path)))


def _pod_ip(obj: Mapping[str, Any]) -> str:
    pod_ips = _lookup(obj, "status.podIPs")
    if isinstance(pod_ips, list) and pod_ips and isinstance(pod_ips[0], Mapping):
        return _go_string(pod_ips[0].get("ip"))
    return _go_string(_lookup(obj, "status.podIP"))


def _reporting_component(obj: Mapping[str, Any]) -> str:
    """core/v1 names the reporting controller `reportingComponent` (events.k8s.io/v1: `reportingController`)."""
    return _go_string(obj.get("reportingComponent") or obj.get("reportingController"))


def _event_source(obj: Mapping[str, Any]) -> str:
    """The source component, or for an Event written through events.k8s.io/v1 its reporting controller."""
    return _go_string(_lookup(obj, "source.component")) or _reporting_component(obj)


# Registry ToSelectableFields entries that are not a plain dotted path into the object.
_FIELD_GETTERS: Final[dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "spec.hostNetwork": _bool_field("spec.hostNetwork"),
    "spec.unschedulable": _bool_field("spec.unschedulable"),
    "status.podIP": _pod_ip,
    "source": _event_source,
    "reportingComponent": _reporting_component,
}


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string a field label reads as on ``obj``; a missing field reads as ``""``."""
    getter = _FIELD_GETTERS.get(field)
    return getter(obj) if getter is not None else _go_string(_lookup(obj, field))


@dataclass(frozen=True, slots=True)
class FieldTerm:
    field: str
    value: str
    negated: bool = False

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (field_value(obj, self.field) == self.value) != self.negated

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{'!=' if self.negated else '='}{escaped}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of ``field=value`` / ``field!=value`` terms."""

    terms: tuple[FieldTerm, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(term.matches(obj) for term in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal for a match, if the selector pins it (upstream helper)."""
        return next((t.value for t in self.terms if t.field == field and not t.negated), None)

    def __str__(self) -> str:
        return ",".join(str(term) for term in self.terms)


def _split_terms(text: str) -> list[str]:
    """Split on commas not escaped by a backslash."""
    terms: list[str] = []
    start, escaped = 0, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator occurrence wins; at one position ``!=`` and ``==`` beat ``=``."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    out: list[str] = []
    escaped = False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise BadRequest(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise BadRequest(f"invalid field selector: unescaped character in value: {ord(char)}")
        else:
            out.append(char)
    if escaped:
        raise BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _parse_term(text: str, part: str) -> FieldTerm:
    split = _split_term(part)
    if split is None:
        raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
    field, op, value = split
    return FieldTerm(field, _unescape(value), negated=op == "!=")


def _supported_term(term: FieldTerm, supported: Collection[str]) -> FieldTerm:
    if isinstance(supported, Mapping):  # a renaming version's labels
        if term.field not in supported:
            raise _unsupported(term.field, supported)
        return FieldTerm(supported[term.field], term.value, term.negated)
    alias = _FIELD_ALIASES.get(term.field)
    if alias is not None and alias in supported:
        return FieldTerm(alias, term.value, term.negated)
    if term.field not in supported:
        raise _unsupported(term.field, supported)
    return term


def parse_field_selector(text: str, supported: Collection[str] = DEFAULT_FIELDS) -> FieldSelector:
    """``fields.ParseSelector`` followed by the scheme's field-label conversion.

    Terms are processed in sorted order like upstream, so with several bad terms the same one is
    reported.  Syntax errors win over unsupported fields (upstream parses before converting).
    """
    parts = sorted(part for part in _split_terms(text) if part)
    terms = [_parse_term(text, part) for part in parts]
    return FieldSelector(tuple(_supported_term(term, supported) for term in terms))
