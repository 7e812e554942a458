"""`x-kubernetes-validations` rules: compiled once per schema, evaluated per object as upstream's cel.Validator.

Binding follows upstream's `UnstructuredToVal`: `self` is the value at the rule's schema node; objects are maps
whose fields are the properties under their CEL names (`foo-bar` is `foo__dash__bar`, `namespace` is
`__namespace__`); `number` fields are doubles even when written `3`; `date`/`date-time` strings are timestamps,
`duration` strings durations, `byte` strings bytes; int-or-string values stay as they are; at the root and in
embedded resources `apiVersion` and `kind` are strings and `metadata` has only `name` and `generateName`.

Only the top-level fields a rule reads are converted and handed over (the `cel` package converts a Python dict
at about a microsecond per key, so `self.replicas <= self.maxReplicas` on a 30-field object binds two).

Evaluation walks the object like upstream: rules run on non-null values only; transition rules (those that use
`oldSelf`) run only when the old object has a value at the same place (same property, same map key, same
`x-kubernetes-list-type: map` element by its keys) unless `optionalOldSelf` is set; errors of other rules are
ratcheted away on update where the value is unchanged. Messages, `messageExpression`, `reason` and `fieldPath`
work as upstream's, and so do the texts of evaluation errors (`no such key: x evaluating rule: ...`).
"""

from __future__ import annotations

import base64
import binascii
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import cel

from tinykube.api.errors import ErrorType, FieldError
from tinykube.apiextensions import celcost, cellib, celscan, formats
from tinykube.apiextensions.node import Node
from tinykube.apiextensions.openapi import MISSING, map_key, map_list_index, ratchet_equal

MAX_MESSAGE_BYTES = 5 * 1024
RUNTIME_BUDGET_SECONDS = 1.0  # wall-clock stand-in for upstream's runtime cost budget (10^7 units) per call
_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_NO_SUCH_OVERLOAD = "call arguments did not match a supported operator, function or macro signature for rule"
_CORRELATABLE_MAPS = ("", "granular", "atomic")

Convert = Callable[[Any], Any]


class _Sink:
    """Where the `cel` package's report of a failing Python function goes (it writes to sys.stderr)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_SINK = _Sink()


# ---- values as CEL sees them ---------------------------------------------------------------------------------------


def _duration(value: Any) -> Any:
    seconds = formats.parse_duration(value) if isinstance(value, str) else None
    return value if seconds is None else timedelta(seconds=seconds)


def _date(value: Any) -> Any:
    if isinstance(value, str) and formats.is_date(value):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value


def _datetime(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.replace("z", "Z").replace("t", "T")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _bytes(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return base64.urlsafe_b64decode(value)
    except (binascii.Error, ValueError):
        try:
            return base64.b64decode(value)
        except (binascii.Error, ValueError):
            return value


def _number(value: Any) -> Any:
    return float(value) if type(value) is int else value


_STRING_FORMATS: dict[str, Convert] = {
    "duration": _duration,
    "date": _date,
    "date-time": _datetime,
    "datetime": _datetime,
    "byte": _bytes,
}


def converter(node: Node, *, resource: bool) -> Convert | None:
    """How a value of `node` becomes a CEL value (None: as it is)."""
    if node.int_or_string:
        return None
    if node.type == "number":
        return _number
    if node.type == "string":
        return _STRING_FORMATS.get(node.format)
    if node.type == "array" and node.items is not None:
        item = converter(node.items, resource=node.items.embedded)
        if item is None:
            return None
        return lambda v: [item(x) if x is not None else None for x in v] if type(v) is list else v
    if node.type == "object":
        if node.properties is not None or resource:
            return _object_converter(node, resource=resource)
        if node.additional is not None:
            value_conv = converter(node.additional, resource=node.additional.embedded)
            if value_conv is None:
                return None
            return lambda v: (
                {k: value_conv(x) if x is not None else None for k, x in v.items()} if type(v) is dict else v
            )
    return None


def restricted_metadata(meta: Any) -> Any:
    if type(meta) is not dict:
        return meta
    return {k: meta[k] for k in ("name", "generateName") if k in meta}


def _field_converters(node: Node, *, resource: bool) -> dict[str, tuple[str, Convert | None]]:
    """CEL field name → (property name, converter), TypeMeta and restricted metadata included for resources."""
    out: dict[str, tuple[str, Convert | None]] = {}
    for escaped, (name, child) in celscan.fields_of(node).items():
        out[escaped] = (name, converter(child, resource=child.embedded))
    if resource and not celscan.declares_type_meta(node):
        out.setdefault("apiVersion", ("apiVersion", None))
        out.setdefault("kind", ("kind", None))
        out["metadata"] = ("metadata", restricted_metadata)
    return out


def _object_converter(node: Node, *, resource: bool) -> Convert | None:
    """Objects become maps of their fields under CEL names; a null field is absent (upstream treats them alike).
    Fields CEL cannot select (unknown or typeless ones) stay, as upstream compares them in equality."""
    fields = _field_converters(node, resource=resource)
    nullable = any(child.nullable for child in (node.properties or {}).values())
    if not resource and not nullable and all(e == n and c is None for e, (n, c) in fields.items()):
        return None
    by_name = {name: (escaped, conv) for escaped, (name, conv) in fields.items()}

    def convert(value: Any) -> Any:
        if type(value) is not dict:
            return value
        out = {}
        for name, item in value.items():
            entry = by_name.get(name)
            if entry is None:
                out[name] = item
            elif item is not None:
                escaped, conv = entry
                out[escaped] = conv(item) if conv is not None else item
        return out

    return convert


def binder(node: Node, *, resource: bool, fields: set[str] | None) -> Convert:
    """How to bind `self` (or `oldSelf`) for a rule that reads `fields` of it (None: all of it)."""
    if fields is None or node.type != "object" or (node.properties is None and not resource):
        whole = converter(node, resource=resource)
        return whole if whole is not None else _identity
    known = _field_converters(node, resource=resource)
    plan = tuple((e, *known[e]) for e in sorted(fields) if e in known)

    def project(value: Any) -> Any:
        if type(value) is not dict:
            return value
        out = {}
        for escaped, name, conv in plan:
            item = value.get(name)
            if item is not None:
                out[escaped] = conv(item) if conv is not None else item
        return out

    return project


def _identity(value: Any) -> Any:
    return value


# ---- compiling ----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Compiled:
    """One rule, ready to run (or with the reason it cannot)."""

    rule: dict[str, Any]
    source: str
    program: Any = None
    error: str | None = None  # "compilation failed: ..." as upstream's CompilationResult.Error.Detail
    message_program: Any = None
    message_error: str | None = None
    uses_old_self: bool = False
    message_uses_old_self: bool = False
    optional_old_self: bool = False
    cost: int = 0
    message_cost: int = 0
    field_path: str = ""
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    bind_self: Convert = _identity
    bind_old: Convert = _identity
    message_bind_self: Convert = _identity
    message_bind_old: Convert = _identity
    local: threading.local = field(default_factory=threading.local)

    @property
    def message(self) -> str:
        return str(self.rule.get("message") or "").strip()

    def describe(self) -> str:
        """upstream's ruleErrorString: the message, else the rule."""
        return self.message or self.source.strip()

    def context(self) -> cel.Context:
        ctx = getattr(self.local, "ctx", None)
        if ctx is None:
            ctx = self.local.ctx = cel.Context(functions=self.functions)
        return ctx


def _parse_error(src: str) -> str | None:
    """The `cel` package's syntax error in cel-go's layout (` | ` before the source and caret lines)."""
    try:
        cel.compile(src)
    except ValueError as e:
        text = str(e)
        at = text.find("ERROR: ")
        text = text[at:] if at >= 0 else text
        return text.replace("\n| ", "\n | ")
    return None


_REPLACED = frozenset(("size", "string"))  # the package counts a string's bytes; has no string(bool) ...
_TIME_ZONED = frozenset(cellib.TIME_GETTERS)  # the package's getters take no time zone argument


def rewrite(src: str, tokens: list[celscan.Token], renames: list[int]) -> str:
    """Route calls the `cel` package gets wrong to this server's versions (`size(x)` → `__k8s_size(x)` ...), and
    select keyword-named fields by their CEL names (`self.spec.if` → `self.spec.__if__`)."""
    out, last = [], 0
    renamed = set(renames)
    for i, tok in enumerate(tokens):
        if tok.kind != "id":
            continue
        method = i > 0 and tokens[i - 1].text == "."
        if tok.pos in renamed:
            out += [src[last : tok.pos], f"__{tok.text}__"]
            last = tok.pos + len(tok.text)
            continue
        if i + 1 >= len(tokens) or tokens[i + 1].text != "(":
            continue
        zoned = method and tok.text in _TIME_ZONED and i + 2 < len(tokens) and tokens[i + 2].text != ")"
        if tok.text in _REPLACED or zoned:
            out += [src[last : tok.pos], "__k8s_", tok.text]
            last = tok.pos + len(tok.text)
    return "".join(out) + src[last:]


def _compile_expression(
    src: str, node: Node, *, resource: bool, optional_old_self: bool
) -> tuple[Any, str | None, celscan.Analysis]:
    analysis = celscan.analyze(src, node, resource=resource, optional_old_self=optional_old_self)
    syntax = _parse_error(src)
    if syntax is not None:
        return None, syntax, analysis
    if analysis.issues:
        return None, celscan.render(src, analysis.issues), analysis
    tokens = celscan.tokenize(src)
    runnable = rewrite(src, tokens, analysis.renames)
    analysis.functions |= {f"__k8s_{t.text}" for t in tokens if f"__k8s_{t.text}" in cellib.FUNCTIONS}
    return cel.compile(runnable), None, analysis


def compile_rule(rule: dict[str, Any], node: Node, *, resource: bool) -> Compiled:
    source = str(rule.get("rule") or "")
    optional = rule.get("optionalOldSelf") is True
    compiled = Compiled(rule=rule, source=source, optional_old_self=optional)
    if not source.strip():
        return compiled
    program, issues, analysis = _compile_expression(source, node, resource=resource, optional_old_self=optional)
    if issues is not None:
        compiled.error = "compilation failed: " + issues
        compiled.uses_old_self = analysis.uses_old_self
        return compiled
    compiled.program, compiled.cost = program, celcost.estimate(source, node, resource=resource)
    compiled.uses_old_self = analysis.uses_old_self
    compiled.bind_self = binder(node, resource=resource, fields=analysis.self_fields)
    compiled.bind_old = binder(node, resource=resource, fields=analysis.old_self_fields)
    names = set(analysis.functions)
    message_expression = str(rule.get("messageExpression") or "")
    if message_expression.strip():
        mprog, missues, manalysis = _compile_expression(
            message_expression, node, resource=resource, optional_old_self=False
        )
        if missues is not None:
            compiled.message_error = "messageExpression compilation failed: " + missues
        else:
            compiled.message_program = mprog
            compiled.message_cost = celcost.estimate(message_expression, node, resource=resource)
            compiled.message_bind_self = binder(node, resource=resource, fields=manalysis.self_fields)
            compiled.message_bind_old = binder(node, resource=resource, fields=manalysis.old_self_fields)
            names |= manalysis.functions
            compiled.message_uses_old_self = manalysis.uses_old_self
    compiled.functions = {n: cellib.FUNCTIONS[n] for n in names if n in cellib.FUNCTIONS}
    compiled.field_path = _normalized_field_path(str(rule.get("fieldPath") or ""), node)
    return compiled


def _normalized_field_path(path: str, node: Node) -> str:
    """upstream's ValidFieldPath(...).String(), or "" if the path is not valid for the schema."""
    steps = parse_field_path(path, node)
    if steps is None:
        return ""
    out = ""
    for name, is_key in steps:
        out = f"{out}[{name}]" if is_key else (f"{out}.{name}" if out else name)
    return out


def parse_field_path(path: str, node: Node) -> list[tuple[str, bool]] | None:
    """A rule's `fieldPath` (`.spec.x`, `.m['key']`) as (name, is-map-key) steps, or None if invalid."""
    steps: list[tuple[str, bool]] = []
    i, current = 0, node
    while i < len(path):
        if path[i] == ".":
            j = i + 1
            while j < len(path) and path[j] not in ".[":
                j += 1
            name, i = path[i + 1 : j], j
            if not name:
                return None
        elif path[i] == "[" and path[i + 1 : i + 2] == "'":
            j = i + 2
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            if path[j + 1 : j + 2] != "]":
                return None
            name, i = path[i + 2 : j].replace("\\'", "'").replace("\\\\", "\\"), j + 2
        else:
            return None
        if current.properties is not None:
            child = current.properties.get(name)
            if child is None:
                return None
            steps.append((name, False))
        elif current.additional is not None:
            child = current.additional
            steps.append((name, True))
        else:
            return None
        current = child
    return steps


@dataclass(slots=True)
class RuleTree:
    """upstream's cel.Validator: the rules at one schema position and the positions below that have rules."""

    node: Node
    resource: bool
    rules: list[Compiled]
    properties: list[tuple[str, RuleTree]]
    additional: RuleTree | None
    items: RuleTree | None
    all_of: list[RuleTree]
    correlatable_map: bool


def build(validation: Node, node: Node, *, resource: bool) -> RuleTree | None:
    """The rule tree for `validation`'s rules typed by schema `node` (they differ only inside allOf)."""
    rules = [compile_rule(r, node, resource=resource) for r in validation.rules]
    props: list[tuple[str, RuleTree]] = []
    for key, vchild in (validation.properties or {}).items():
        schema_child = (node.properties or {}).get(key)
        if schema_child is None or not (schema_child.type or schema_child.int_or_string):
            continue
        if celscan.escape(key) is None and not schema_child.type:
            continue
        built = build(vchild, schema_child, resource=schema_child.embedded)
        if built is not None:
            props.append((key, built))
    additional = None
    if validation.additional is not None and node.additional is not None:
        additional = build(validation.additional, node.additional, resource=node.additional.embedded)
    items = None
    if validation.items is not None and node.items is not None:
        items = build(validation.items, node.items, resource=node.items.embedded)
    all_of = [t for t in (build(m, node, resource=resource) for m in validation.all_of) if t is not None]
    if not (rules or props or additional or items or all_of):
        return None
    return RuleTree(node, resource, rules, props, additional, items, all_of, node.map_type in _CORRELATABLE_MAPS)


def compiled_rules(tree: RuleTree | None) -> list[Compiled]:
    if tree is None:
        return []
    out = list(tree.rules)
    for _, prop in tree.properties:
        out += compiled_rules(prop)
    for other in (tree.additional, tree.items, *tree.all_of):
        out += compiled_rules(other)
    return out


# ---- ratcheting ---------------------------------------------------------------------------------------------------


class Correlation:
    """upstream's CorrelatedObject: a new value, the old value it corresponds to, and their schema."""

    __slots__ = ("_equal", "new", "node", "old")

    def __init__(self, new: Any, old: Any, node: Node) -> None:
        self.new, self.old, self.node = new, old, node
        self._equal: bool | None = None

    def equal(self) -> bool:
        if self._equal is None:
            self._equal = ratchet_equal(self.node, self.new, self.old)
        return self._equal

    def key(self, name: str) -> Correlation | None:
        if type(self.new) is not dict or type(self.old) is not dict or name not in self.new or name not in self.old:
            return None
        child = self.node.child(name)
        return None if child is None else Correlation(self.new[name], self.old[name], child)

    def index(self, i: int) -> Correlation | None:
        node = self.node
        if node.list_type != "map" or node.items is None or type(self.old) is not list or type(self.new) is not list:
            return None
        prior = map_list_index(node, self.old).get(map_key(node, self.new[i]), MISSING)
        return None if prior is MISSING else Correlation(self.new[i], prior, node.items)


@dataclass(frozen=True, slots=True)
class Ratchet:
    current: Correlation | None = None
    parent: Correlation | None = None

    def should_ratchet(self) -> bool:
        if self.current is not None:
            return self.current.equal()
        return self.parent is not None and self.parent.equal()

    def key(self, name: str) -> Ratchet:
        if self.current is None:
            return self
        if self.parent is None and name in ("apiVersion", "kind"):
            return _NO_RATCHET
        return Ratchet(self.current.key(name), self.current)

    def index(self, i: int) -> Ratchet:
        if self.current is None:
            return self
        return Ratchet(self.current.index(i), self.current)


_NO_RATCHET = Ratchet()


# ---- evaluating ---------------------------------------------------------------------------------------------------


class Budget:
    """What is left of one call's evaluation time; upstream counts cost units, we count seconds."""

    __slots__ = ("deadline", "spent")

    def __init__(self, seconds: float = RUNTIME_BUDGET_SECONDS) -> None:
        self.deadline = time.perf_counter() + seconds
        self.spent = False


def _child(path: str | None, name: str) -> str:
    return f"{path}.{name}" if path else name


def _run(compiled: Compiled, program: Any, self_value: Any, old_value: Any, uses_old: bool) -> Any:
    ctx = compiled.context()
    ctx.add_variable("self", self_value)
    if uses_old:
        ctx.add_variable("oldSelf", old_value)
    if not compiled.functions:
        return program.execute(ctx)
    stderr, sys.stderr = sys.stderr, _SINK
    try:
        return program.execute(ctx)
    finally:
        sys.stderr = stderr


def _type_value(node: Node) -> str:
    return node.type


def evaluate(
    tree: RuleTree, value: Any, old: Any, path: str | None, ratchet: Ratchet, budget: Budget, errs: list[FieldError]
) -> bool:
    """Run the rules of `tree` and below on `value`; False once the budget is spent (stop everything)."""
    if value is None:
        return True
    if tree.rules and not _expressions(tree, value, old, path, ratchet, budget, errs):
        return False
    for member in tree.all_of:
        if not evaluate(member, value, old, path, Ratchet(None, ratchet.parent), budget, errs):
            return False
    if type(value) is dict:
        old_map = old if type(old) is dict and tree.correlatable_map else None
        if tree.additional is not None:
            for key, item in value.items():
                prior = old_map.get(key) if old_map is not None else None
                sub_path = f"{path or ''}[{key}]"
                if not evaluate(tree.additional, item, prior, sub_path, ratchet.key(key), budget, errs):
                    return False
        for key, sub in tree.properties:
            if key in value:
                prior = old_map.get(key) if old_map is not None else None
                if not evaluate(sub, value[key], prior, _child(path, key), ratchet.key(key), budget, errs):
                    return False
    elif type(value) is list and tree.items is not None:
        node = tree.node
        index = map_list_index(node, old) if node.list_type == "map" and type(old) is list else None
        for i, item in enumerate(value):
            prior = index.get(map_key(node, item)) if index is not None else None
            if not evaluate(tree.items, item, prior, f"{path or ''}[{i}]", ratchet.index(i), budget, errs):
                return False
    return True


def _expressions(
    tree: RuleTree, value: Any, old: Any, path: str | None, ratchet: Ratchet, budget: Budget, errs: list[FieldError]
) -> bool:
    type_value = _type_value(tree.node)
    here = path or "<nil>"
    for compiled in tree.rules:
        if compiled.error is not None:
            errs.append(FieldError(ErrorType.INVALID, here, type_value, f"rule compile error: {compiled.error}"))
            continue
        if compiled.program is None:
            continue
        uses_old, optional = compiled.uses_old_self, compiled.optional_old_self
        if uses_old and old is None and not optional:
            continue  # transition rules need a correlatable old value
        if time.perf_counter() > budget.deadline:
            errs.append(FieldError(ErrorType.INVALID, here, type_value, _BUDGET))
            return False
        self_value = compiled.bind_self(value)
        old_value: Any = None
        if optional:
            old_value = cel.OptionalValue.of(compiled.bind_old(old)) if old is not None else cel.OptionalValue.none()
        elif uses_old:
            old_value = compiled.bind_old(old)
        try:
            result = _run(compiled, compiled.program, self_value, old_value, uses_old)
        except Exception as e:
            text = cellib.error_text(e)
            if text == "no such overload":
                detail = f"'{text}': {_NO_SUCH_OVERLOAD}: {compiled.describe()}"
            else:
                detail = f"{text} evaluating rule: {compiled.describe()}"
            errs.append(FieldError(ErrorType.INVALID, here, type_value, detail))
            continue
        if result is True:
            continue
        err_path = _child(path, compiled.field_path) if compiled.field_path else here
        error = _rule_error(compiled, tree.node, value, old, err_path)
        if not uses_old and ratchet.should_ratchet():
            continue  # upstream turns it into a warning
        errs.append(error)
    return True


def _message(compiled: Compiled, value: Any, old: Any) -> str | None:
    """The evaluated messageExpression, or None (then the message is used, as upstream does)."""
    if compiled.message_program is None:
        return None
    uses_old = compiled.message_uses_old_self
    if uses_old and old is None:
        return None  # upstream: oldSelf is not defined, the evaluation fails and the message is used
    try:
        result = _run(
            compiled,
            compiled.message_program,
            compiled.message_bind_self(value),
            compiled.message_bind_old(old) if uses_old else None,
            uses_old,
        )
    except Exception:
        return None
    if not isinstance(result, str):
        return None
    text = result.strip()
    if not text or len(text.encode()) > MAX_MESSAGE_BYTES or "\n" in text:
        return None
    return text


def _rule_error(compiled: Compiled, node: Node, value: Any, old: Any, path: str) -> FieldError:
    detail = _message(compiled, value, old)
    if detail is None:
        detail = compiled.message or f"failed rule: {compiled.describe()}"
    omit = node.type in ("object", "array")
    reason = compiled.rule.get("reason")
    if reason == "FieldValueForbidden":
        return FieldError(ErrorType.FORBIDDEN, path, detail=detail)
    if reason == "FieldValueRequired":
        return FieldError(ErrorType.REQUIRED, path, detail=detail)
    if reason == "FieldValueDuplicate":
        return FieldError(ErrorType.DUPLICATE, path) if omit else FieldError(ErrorType.DUPLICATE, path, value)
    if omit:
        return FieldError(ErrorType.INVALID, path, detail=detail)
    return FieldError(ErrorType.INVALID, path, value, detail)
